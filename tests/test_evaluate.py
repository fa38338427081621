"""The tool-call scorer on hand-made right and wrong turns, the case loader, and the suite itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from localagent.backends.base import Generation
from localagent.backends.fake import FakeBackend
from localagent.errors import ConfigError
from localagent.evaluate import (
    Case,
    ErrorClass,
    ExpectedCall,
    check_call,
    format_report,
    load_cases,
    match_calls,
    normalize,
    run_eval,
    sample,
    score_turn,
    values_equal,
)
from localagent.formats import ParsedCall, render_call

SUITE = Path(__file__).parent.parent / "evals" / "cases.jsonl"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["city"],
        },
    },
}
FORECAST = {
    "type": "function",
    "function": {
        "name": "get_forecast",
        "description": "Forecast.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def case(expected: list[ExpectedCall], tools: list[dict[str, Any]] | None = None) -> Case:
    return Case("c1", "cat", [{"role": "user", "content": "q"}], tools or [WEATHER, FORECAST], expected)


PARIS = ExpectedCall("get_weather", {"city": ["Paris", "Paris, France"], "unit": ["", "celsius"]})
BERLIN = ExpectedCall("get_weather", {"city": ["Berlin"], "unit": ["", "celsius"]})


def judged(text: str, expected: list[ExpectedCall], **gen: Any) -> tuple[bool, ErrorClass | None]:
    r = score_turn(case(expected), Generation(text, **gen))
    return r.right, r.error


# --- normalising ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "actual, acceptable",
    [
        ("  PARIS ", "paris"),
        ("New   York", "new york"),
        ("Hello, world!", "hello, world"),
        ('"quoted"', "quoted"),
        ("./src/main.py", "src/main.py"),
        (3, 3.0),
        (2.50, 2.5),
        ([1, 2.0, "A "], [1.0, 2, "a"]),
        ({"theme": "Dark", "size": 14}, {"size": 14.0, "theme": "dark"}),
        ([{"p": "Mug", "q": 2}], [{"q": 2, "p": "mug."}]),
        (True, True),
    ],
)
def test_equal_after_normalising(actual: Any, acceptable: Any) -> None:
    assert values_equal(actual, acceptable)


@pytest.mark.parametrize(
    "actual, acceptable",
    [
        ("Paris", "Pari"),
        ("NewYork", "new york"),  # white space is collapsed, not removed
        ("3", 3),  # a number in a string is not a number
        (True, 1),  # a boolean is not an integer
        (0, False),
        (3.1, 3),
        ([1, 2], [2, 1]),  # lists compare in order
        ([1, 2], [1, 2, 3]),
        ({"a": 1}, {"a": 1, "b": 2}),  # a nested object needs the same keys
        ({"a": 1, "b": 2}, {"a": 1}),
        (None, ""),
    ],
)
def test_not_equal(actual: Any, acceptable: Any) -> None:
    assert not values_equal(actual, acceptable)


def test_normalize_keeps_inner_punctuation() -> None:
    assert normalize(" Rue de Rivoli 10, Paris. ") == "rue de rivoli 10, paris"


# --- every error class, on calls ----------------------------------------------------------


def test_right_call_and_optional_argument_absent() -> None:
    assert check_call(ParsedCall("get_weather", {"city": "paris"}), PARIS) is None
    assert check_call(ParsedCall("get_weather", {"city": "Paris, France", "unit": "Celsius"}), PARIS) is None


def test_wrong_tool() -> None:
    err = check_call(ParsedCall("get_forecast", {"city": "Paris"}), PARIS)
    assert err and err[0] is ErrorClass.WRONG_TOOL and "get_forecast" in err[1]


def test_missing_argument() -> None:
    err = check_call(ParsedCall("get_weather", {"unit": "celsius"}), PARIS)
    assert err and err[0] is ErrorClass.MISSING_ARGUMENT and "'city'" in err[1]


def test_unexpected_argument() -> None:
    err = check_call(ParsedCall("get_weather", {"city": "Paris", "days": 3}), PARIS)
    assert err and err[0] is ErrorClass.UNEXPECTED_ARGUMENT and "'days'" in err[1]


def test_wrong_value() -> None:
    err = check_call(ParsedCall("get_weather", {"city": "Lyon"}), PARIS)
    assert err and err[0] is ErrorClass.WRONG_VALUE and '"Lyon"' in err[1]
    err = check_call(ParsedCall("get_weather", {"city": "Paris", "unit": "fahrenheit"}), PARIS)
    assert err and err[0] is ErrorClass.WRONG_VALUE


def test_missing_comes_before_unexpected_and_wrong_value() -> None:
    err = check_call(ParsedCall("get_weather", {"unit": "kelvin", "days": 1}), PARIS)
    assert err and err[0] is ErrorClass.MISSING_ARGUMENT


def test_calls_match_in_any_order() -> None:
    calls = [ParsedCall("get_weather", {"city": "Berlin"}), ParsedCall("get_weather", {"city": "Paris"})]
    assert match_calls(calls, [PARIS, BERLIN]) is None
    assert match_calls(list(reversed(calls)), [PARIS, BERLIN]) is None


def test_the_same_call_twice_does_not_match_two_expected() -> None:
    calls = [ParsedCall("get_weather", {"city": "Paris"})] * 2
    err = match_calls(calls, [PARIS, BERLIN])
    assert err and err[0] is ErrorClass.WRONG_VALUE and "Berlin" in err[1]


def test_the_best_pairing_is_judged() -> None:
    # Berlin is right; the error reported is the Paris call's, not a wrong pairing's.
    calls = [ParsedCall("get_weather", {"city": "Berlin"}), ParsedCall("get_weather", {"city": "Pariss"})]
    err = match_calls(calls, [PARIS, BERLIN])
    assert err and err[0] is ErrorClass.WRONG_VALUE and '"Pariss"' in err[1]


def test_wrong_number_of_calls() -> None:
    one = [ParsedCall("get_weather", {"city": "Paris"})]
    err = match_calls(one, [PARIS, BERLIN])
    assert err and err[0] is ErrorClass.WRONG_COUNT and "1 call(s), expected 2" in err[1]
    err = match_calls([], [PARIS])
    assert err and err[0] is ErrorClass.WRONG_COUNT


def test_called_when_it_should_not_have() -> None:
    err = match_calls([ParsedCall("get_weather", {"city": "Paris"})], [])
    assert err and err[0] is ErrorClass.UNNEEDED_CALL
    assert match_calls([], []) is None


# --- whole turns, format failures included ----------------------------------------------------


def test_turns_right_and_wrong() -> None:
    paris = render_call("get_weather", {"city": "Paris"})
    berlin = render_call("get_weather", {"city": "Berlin"})
    assert judged(paris, [PARIS]) == (True, None)
    assert judged(f"Let me check.\n{berlin}\n{paris}", [PARIS, BERLIN]) == (True, None)
    assert judged("It is probably sunny.", []) == (True, None)
    assert judged("It is probably sunny.", [PARIS]) == (False, ErrorClass.WRONG_COUNT)
    assert judged(paris, []) == (False, ErrorClass.UNNEEDED_CALL)
    assert judged(render_call("get_forecast", {"city": "Paris"}), [PARIS]) == (False, ErrorClass.WRONG_TOOL)


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}\n</tool_call>',  # bad JSON
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par',  # cut off
        '<tool_call>\n{"tool": "get_weather"}\n</tool_call>',  # no name
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',  # outside the envelope
        '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        '{"get_weather": {"city": "Paris"}}',
        "```python\nget_weather(city='Paris')\n```",
    ],
)
def test_format_failures(text: str) -> None:
    assert judged(text, [PARIS]) == (False, ErrorClass.FORMAT_FAILURE)


def test_a_bad_block_next_to_a_good_call_is_a_format_failure() -> None:
    text = render_call("get_weather", {"city": "Paris"}) + "\n<tool_call>\nnot json\n</tool_call>"
    assert judged(text, [PARIS]) == (False, ErrorClass.FORMAT_FAILURE)


def test_prose_that_only_names_a_tool_is_not_a_call() -> None:
    assert judged("I could use get_weather for that, but you asked for a joke.", []) == (True, None)


def test_a_failed_generation_is_a_format_failure() -> None:
    r = score_turn(case([PARIS]), Generation("", "error", error="the grammar allows no token here"))
    assert not r.right and r.error is ErrorClass.FORMAT_FAILURE and "no token" in r.detail


def test_calls_are_kept_exactly_as_produced_and_checked_against_the_schema() -> None:
    text = render_call("get_weather", {"city": "  PARIS ", "days": "3"}) + "\n" + render_call("nope", {})
    r = score_turn(case([PARIS]), Generation(text))
    d = r.to_dict()
    assert d["calls"] == [{"name": "get_weather", "arguments": {"city": "  PARIS ", "days": "3"}}, {"name": "nope", "arguments": {}}]
    assert d["schema_valid"] is False
    assert any("days" in e and "integer" in e for e in d["schema_errors"])
    assert any("'nope' is not one of the tools" in e for e in d["schema_errors"])


def test_backend_parsed_calls_are_scored() -> None:
    from localagent.messages import ToolCall

    gen = Generation("", tool_calls=[ToolCall("x", "get_weather", {"city": "Paris"})])
    assert score_turn(case([PARIS]), gen).right


# --- loading case files -----------------------------------------------------------------


def _line(**over: Any) -> str:
    d: dict[str, Any] = {
        "id": "w1",
        "category": "one_tool",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER],
        "expected": [{"name": "get_weather", "arguments": {"city": ["Paris"]}}],
    }
    d.update(over)
    return json.dumps(d)


def test_load_a_good_file(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text(_line() + "\n\n" + _line(id="w2", expected=[]) + "\n")
    cases = load_cases(p)
    assert [c.id for c in cases] == ["w1", "w2"]
    assert cases[0].expected == [ExpectedCall("get_weather", {"city": ["Paris"]})]
    assert cases[0].history()[0].content == "Weather in Paris?"


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "line 1: not valid JSON"),
        (_line(id=""), "line 1: id:"),
        (json.dumps({"id": "x"}), "line 1: category: Field required"),
        (_line(expected=[{"name": "get_time", "arguments": {}}]), "expected call 'get_time' is not one of the tools"),
        (_line(expected=[{"name": "get_weather", "arguments": {"city": "Paris"}}]), "expected.0.arguments.city: Input should be a valid list"),
        (_line(expected=[{"name": "get_weather", "arguments": {"city": []}}]), "argument 'city' lists no acceptable values"),
        (_line(expected=[{"name": "get_weather", "arguments": {"city": ["Paris"], "town": ["Paris"]}}]), "'get_weather' has no parameter 'town'"),
        (_line(expected=[{"name": "get_weather", "arguments": {"city": ["Paris"], "unit": ["kelvin"]}}]), "acceptable value \"kelvin\" of 'unit' breaks its schema"),
        (_line(expected=[{"name": "get_weather", "arguments": {"city": ["", "Paris"]}}]), "'get_weather' requires 'city'"),
        (_line(expected=[{"name": "get_weather", "arguments": {}}]), "'get_weather' requires 'city'"),
        (_line(tools=[{"type": "function", "function": {"name": "x", "parameters": {"type": "objekt"}}}], expected=[]), "not a valid JSON schema"),
        (_line(messages=[{"role": "robot", "content": "hi"}]), "messages.0.role"),
        (_line(surprise=1), "surprise: Extra inputs are not permitted"),
    ],
)
def test_a_bad_case_file_gives_one_clear_error(tmp_path: Path, line: str, message: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(ConfigError) as e:
        load_cases(p)
    text = str(e.value)
    assert message in text and "\n" not in text and str(p) in text


def test_duplicate_ids_missing_and_empty_files(tmp_path: Path) -> None:
    p = tmp_path / "dup.jsonl"
    p.write_text(_line() + "\n" + _line() + "\n")
    with pytest.raises(ConfigError, match="line 2: case id 'w1' is already used on line 1"):
        load_cases(p)
    with pytest.raises(ConfigError, match="cannot read case file"):
        load_cases(tmp_path / "none.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ConfigError, match="holds no cases"):
        load_cases(tmp_path / "empty.jsonl")


def test_sample_takes_each_category_in_turn() -> None:
    cases = [case([]) for _ in range(7)]
    for i, (c, cat) in enumerate(zip(cases, "aaaabbc")):
        c.id, c.category = f"{cat}{i}", cat
    assert [c.id for c in sample(cases, 4)] == ["a0", "a1", "b4", "c6"]
    assert len(sample(cases, None)) == 7 and len(sample(cases, 99)) == 7


# --- running, on the scripted fake ----------------------------------------------------------


def test_run_eval_report_shape() -> None:
    cases = [case([PARIS]), case([]), case([PARIS, BERLIN])]
    for i, c in enumerate(cases):
        c.id, c.category = f"c{i}", ["weather", "none", "weather"][i]
    fake = FakeBackend.scripted([render_call("get_weather", {"city": "Paris"}), "Sure.", render_call("get_weather", {"city": "Paris"})])
    seen: list[str] = []
    d = run_eval(fake, cases, "constrained", on_result=lambda i, r: seen.append(r.id)).to_dict()
    assert seen == ["c0", "c1", "c2"]
    assert (d["cases"], d["right"], d["accuracy"], d["format_failures"]) == (3, 2, 66.7, 0)
    assert d["by_category"] == {"weather": 50.0, "none": 100.0}
    assert d["errors"] == {"wrong_number_of_calls": 1}
    assert [r["right"] for r in d["results"]] == [True, True, False]
    assert d["results"][0]["calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert d["parallel_calls"] is True and d["schema_invalid_calls"] == 0
    json.dumps(d)  # serialisable as it stands
    table = format_report(d)
    assert "overall" in table and "66.7%" in table and "format failures: 0" in table


def test_constrained_mode_sends_the_tools_grammar_and_free_mode_none() -> None:
    from localagent.evaluate import generate_options

    c = case([PARIS])
    o = generate_options(c, "constrained")
    assert o.grammar and "get_forecast" in o.grammar and "calls-many" in o.grammar and o.call_threshold == 0.5
    assert "calls-one" in (generate_options(c, "constrained", parallel=False).grammar or "")
    free = generate_options(c, "free")
    assert free.grammar is None and free.call_threshold is None and free.temperature == 0


def test_required_tool_choice_leaves_no_prose_branch_and_no_first_token_decision() -> None:
    from localagent.evaluate import generate_options

    c = case([PARIS])
    auto = generate_options(c, "constrained")
    req = generate_options(c, "constrained", tool_choice="required")
    assert req.call_threshold is None and req.grammar and req.grammar != auto.grammar
    assert 'prose' in (auto.grammar or "") and "prose" not in req.grammar.split("root ::=")[1].split("\n")[0]


def test_cli_reports_a_bad_case_file_in_one_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text("{oops\n")
    r = subprocess.run([sys.executable, "-c", "from localagent.cli import main; main()", "eval", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "line 1: not valid JSON" in r.stderr
    r = subprocess.run([sys.executable, "-c", "from localagent.cli import main; main()", "eval", str(SUITE), "--mode", "loose"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--mode must be constrained or free" in r.stderr


# --- the project's own suite ------------------------------------------------------------------


def _perfect(c: Case) -> str:
    """The turn a perfect model would give: the first acceptable value of each argument."""
    calls = []
    for e in c.expected:
        args = {k: next(v for v in vs if v != "") for k, vs in e.arguments.items() if any(v != "" for v in vs)}
        calls.append(render_call(e.name, args))
    return "\n".join(calls) if calls else "Here is my answer."


def test_the_suite_covers_every_category() -> None:
    cases = load_cases(SUITE)
    assert len(cases) >= 150
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.category] = counts.get(c.category, 0) + 1
    assert set(counts) == {"one_tool", "choose_tool", "multiple_calls", "no_tool", "nested_args", "enums", "number_words"}
    assert min(counts.values()) >= 20
    assert all(len(c.tools) >= 2 for c in cases if c.category == "choose_tool")
    assert all(len(c.expected) >= 2 for c in cases if c.category == "multiple_calls")
    assert all(not c.expected for c in cases if c.category == "no_tool")


def test_a_perfect_answer_to_every_suite_case_is_right_and_valid() -> None:
    for c in load_cases(SUITE):
        r = score_turn(c, Generation(_perfect(c)))
        assert r.right, (c.id, r.detail)
        assert not r.schema_errors, (c.id, r.schema_errors)


# --- validity with the constraint on and off, and the call-or-prose decision ------------------


def test_lenient_reading_finds_calls_outside_the_envelope() -> None:
    from localagent.evaluate import lenient_calls

    text = (
        'Sure:\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\n'
        'or {"name": "get_forecast", "parameters": "{\\"city\\": \\"Rome\\"}"} and {"not": "a call"} {broken'
    )
    calls = lenient_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Paris"}), ("get_forecast", {"city": "Rome"})]
    assert lenient_calls(render_call("get_weather", {"city": "Oslo"}))[0].arguments == {"city": "Oslo"}
    assert lenient_calls("no JSON here { at all") == []


@pytest.mark.parametrize(
    "text, attempts",
    [
        ("The answer is 4.", 0),
        (render_call("get_weather", {"city": "Paris"}), 1),
        (render_call("get_weather", {"city": "Paris"}) + "\n" + render_call("get_forecast", {"city": "Rome"}), 2),
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": ', 1),  # cut off: tried, not made
        ('```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```', 1),  # outside the envelope
        ("get_weather(city='Paris')", 1),  # a call in disguise, no JSON
    ],
)
def test_call_attempts(text: str, attempts: int) -> None:
    assert score_turn(case([PARIS]), Generation(text)).attempts == attempts


def test_validity_counts_what_the_agent_would_run_and_what_a_lenient_reader_would() -> None:
    from localagent.evaluate import validity

    turns = [
        render_call("get_weather", {"city": "Paris"}),  # valid
        render_call("get_weather", {"city": 3}),  # parses, breaks its schema
        '```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```',  # valid JSON, outside the envelope
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Ro',  # cut off
        "Plain prose.",
    ]
    d = validity([score_turn(case([PARIS]), Generation(t)) for t in turns])
    assert (d["call_attempts"], d["valid_calls"], d["valid_call_rate"]) == (4, 1, 25.0)
    assert (d["lenient_calls"], d["lenient_valid_calls"]) == (3, 2)


def test_string_formats_count_in_the_schema_check() -> None:
    tool = {"type": "function", "function": {"name": "book", "parameters": {
        "type": "object", "properties": {"day": {"type": "string", "format": "date"}}, "required": ["day"]}}}
    c = Case("b", "cat", [{"role": "user", "content": "q"}], [tool], [ExpectedCall("book", {"day": ["2024-05-01"]})])
    assert not score_turn(c, Generation(render_call("book", {"day": "2024-05-01"}))).schema_errors
    assert score_turn(c, Generation(render_call("book", {"day": "next Friday"}))).schema_errors


def test_decision_rates_prefer_the_decoders_own_decision() -> None:
    from localagent.evaluate import decision_rates

    need, none = case([PARIS]), case([])
    call = render_call("get_weather", {"city": "Paris"})
    rs = [
        score_turn(need, Generation(call, info={"decision": "call"})),
        score_turn(need, Generation("get_weather(Paris) is what I would do.", info={"decision": "prose"})),  # prose, by decision
        score_turn(need, Generation(call)),  # no decision recorded: the call tried counts
        score_turn(none, Generation("It is sunny.", info={"decision": "prose"})),
    ]
    for r, i in zip(rs, ["a", "b", "c", "d"]):
        r.id = i
    d = decision_rates(rs, {"a": True, "b": True, "c": True, "d": False})
    assert (d["called_when_needed"], d["call_needed"], d["no_call_when_not_needed"], d["no_call_needed"]) == (2, 3, 1, 1)


def test_a_saved_report_rescores_to_the_same_verdicts(tmp_path: Path) -> None:
    from localagent.evaluate import rescore

    cases = [case([PARIS]), case([])]
    cases[1].id = "c2"
    fake = FakeBackend.scripted([render_call("get_weather", {"city": "Paris"}), "Sure."])
    d = run_eval(fake, cases, "constrained").to_dict()
    again = rescore(json.loads(json.dumps(d)), cases).to_dict()
    for key in ("accuracy", "calls", "call_attempts", "valid_calls", "lenient_calls", "decision", "errors", "completion_tokens_per_case"):
        assert again[key] == d[key], key
    with pytest.raises(ConfigError, match="not in the case file"):
        rescore(d, cases[:1])


def test_the_validity_script_prints_a_table(tmp_path: Path) -> None:
    cases = load_cases(SUITE)[:3]
    fake = FakeBackend.scripted(["Prose."] * 3)
    p = tmp_path / "r.json"
    p.write_text(json.dumps(run_eval(fake, cases, "free").to_dict()))
    script = Path(__file__).parent.parent / "evals" / "validity.py"
    out = subprocess.run([sys.executable, str(script), str(p)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "constraint off" in lines[0] and any(line.startswith("| calls tried") for line in lines)
