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
from localagent import policy
from localagent.errors import ConfigError
from localagent.loop import AgentConfig
from localagent.evaluation.evaluate import (
    Case,
    ErrorClass,
    ExpectedCall,
    check_call,
    format_report,
    load_cases,
    match_calls,
    normalize,
    reference_turn,
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
    return Case("c1", "cat", [{"role": "user", "content": "Weather in Paris or Berlin?"}], tools or [WEATHER, FORECAST], expected)


PARIS = ExpectedCall("get_weather", {"city": ["Paris", "Paris, France"], "unit": ["", "celsius"]}, frozenset({"city"}))
BERLIN = ExpectedCall("get_weather", {"city": ["Berlin"], "unit": ["", "celsius"]})


def judged(text: str, expected: list[ExpectedCall], **gen: Any) -> tuple[bool, ErrorClass | None]:
    r = score_turn(case(expected), Generation(text, **gen))
    return r.right, r.error


# --- normalising: values as the tool would receive them -------------------------------------


@pytest.mark.parametrize(
    "actual, acceptable",
    [
        ("Paris", "Paris"),
        ("../tests", "../tests"),
        (3, 3.0),
        (2.50, 2.5),
        ([1, 2.0, "A"], [1.0, 2, "A"]),
        ({"theme": "Dark", "size": 14}, {"size": 14.0, "theme": "Dark"}),
        (True, True),
    ],
)
def test_equal(actual: Any, acceptable: Any) -> None:
    assert values_equal(actual, acceptable)


@pytest.mark.parametrize(
    "actual, acceptable",
    [
        # The surrounding punctuation a tool would receive is part of the value.
        ("../tests", "tests"),
        ("tests", "../tests"),
        ("/config/settings.yaml", "config/settings.yaml"),
        ("447700900123", "+447700900123"),
        ("./src/main.py", "src/main.py"),
        ('"quoted"', "quoted"),
        ("Hello, world!", "Hello, world"),
        # Case and white space count unless the case says otherwise.
        ("paris", "Paris"),
        ("  Paris ", "Paris"),
        ("New  York", "New York"),
        ("Paris", "Pari"),
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


@pytest.mark.parametrize(
    "actual, acceptable, equal",
    [
        ("  PARIS ", "paris", True),
        ("New   York", "new york", True),
        ([{"p": "Blue  Mug", "q": 2}], [{"q": 2, "p": "blue mug"}], True),  # nested strings too
        ("NewYork", "new york", False),  # white space is collapsed, not removed
        ("Paris.", "paris", False),  # loose is case and white space, nothing else
        ("../tests", "tests", False),
        ("+447700900123", "447700900123", False),
    ],
)
def test_loose_ignores_case_and_white_space_only(actual: Any, acceptable: Any, equal: bool) -> None:
    assert values_equal(actual, acceptable, loose=True) is equal


def test_normalize_keeps_punctuation() -> None:
    assert normalize(" Rue de Rivoli 10, Paris. ", loose=True) == "rue de rivoli 10, paris."
    assert normalize(" Rue de Rivoli 10, Paris. ") == " Rue de Rivoli 10, Paris. "


def test_only_the_arguments_the_case_names_are_loose() -> None:
    exp = ExpectedCall("move", {"city": ["Paris"], "path": ["../tests"]}, frozenset({"city"}))
    assert check_call(ParsedCall("move", {"city": " PARIS", "path": "../tests"}), exp) is None
    err = check_call(ParsedCall("move", {"city": "Paris", "path": "../Tests"}), exp)
    assert err and err[0] is ErrorClass.WRONG_VALUE and "'path'" in err[1]


# --- every error class, on calls ----------------------------------------------------------


def test_right_call_and_optional_argument_absent() -> None:
    assert check_call(ParsedCall("get_weather", {"city": "paris"}), PARIS) is None
    assert check_call(ParsedCall("get_weather", {"city": "Paris, France", "unit": "celsius"}), PARIS) is None
    err = check_call(ParsedCall("get_weather", {"city": "Paris", "unit": "Celsius"}), PARIS)  # not loose: the enum is exact
    assert err and err[0] is ErrorClass.WRONG_VALUE


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


def answer_case(*patterns: str) -> Case:
    c = case([])
    c.expected_answer = list(patterns)
    return c


def test_a_no_call_answer_must_match_the_expected_answer() -> None:
    c = answer_case(r"(?i)\byrassecen\b")
    r = score_turn(c, Generation("Backwards it is necessary."))  # prose, but wrong
    assert not r.right and r.error is ErrorClass.WRONG_ANSWER and "yrassecen" in r.detail
    assert score_turn(c, Generation('"necessary" backwards is "yrassecen".')).right
    assert score_turn(c, Generation(render_call("get_weather", {"city": "Paris"}))).error is ErrorClass.UNNEEDED_CALL


def test_every_answer_pattern_must_match_and_none_means_any_prose() -> None:
    c = answer_case(r"(?<![\d.])17(?![\d])", r"(?i)rain")
    assert score_turn(c, Generation("It is 17 °C with light rain.")).right
    assert score_turn(c, Generation("It is 17 °C and sunny.")).error is ErrorClass.WRONG_ANSWER
    assert score_turn(c, Generation("It is 171 °C, rain.")).error is ErrorClass.WRONG_ANSWER
    assert score_turn(case([]), Generation("Anything at all.")).right


def test_expected_answer_is_loaded(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text(_line(expected=[], expected_answer=[r"\bRome\b"]) + "\n")
    (c,) = load_cases(p)
    assert c.expected_answer == [r"\bRome\b"]
    assert not score_turn(c, Generation("Romeo.")).right and score_turn(c, Generation("Rome.")).right


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
        (_line(expected=[], expected_answer=["(unclosed"]), "expected_answer: Value error, pattern '(unclosed' is not a valid regex"),
        (_line(expected_answer=["Paris"]), "expected_answer is for a case that expects no call"),
        (_line(expected=[{"name": "get_weather", "arguments": {"city": ["Paris"]}, "loose": ["unit"]}]), "loose argument 'unit' is not among the expected"),
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
    assert d["category_errors"] == {"weather": {"wrong_number_of_calls": 1}, "none": {}}
    assert (d["decision"]["no_call_when_needed_rate"], d["decision"]["called_when_not_needed_rate"]) == (0.0, 0.0)
    assert d["call_threshold"] == 0.5
    assert [r["right"] for r in d["results"]] == [True, True, False]
    assert d["results"][0]["calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert d["parallel_calls"] is True and d["schema_invalid_calls"] == 0
    json.dumps(d)  # serialisable as it stands
    table = format_report(d)
    assert "overall" in table and "66.7%" in table and "format failures: 0" in table


def test_an_optional_text_the_request_does_not_give_is_left_out_before_scoring() -> None:
    timer = {"type": "function", "function": {"name": "set_timer", "parameters": {"type": "object", "properties": {
        "minutes": {"type": "integer"}, "label": {"type": "string"}}, "required": ["minutes"]}}}
    c = Case("t", "timer", [{"role": "user", "content": "Set a timer for twelve minutes."}], [timer],
             [ExpectedCall("set_timer", {"minutes": [12], "label": [""]})])
    made_up = render_call("set_timer", {"minutes": 12, "label": "Twelve minute timer"})
    d = run_eval(FakeBackend.scripted([made_up]), [c], "constrained", relevance_floor=None).to_dict()
    assert d["results"][0]["calls"] == [{"name": "set_timer", "arguments": {"minutes": 12}}] and d["right"] == 1
    # Asked for in the request's own words, the label stays.
    c.messages[0]["content"] = 'Set a timer for twelve minutes called "tea".'
    kept = render_call("set_timer", {"minutes": 12, "label": "tea"})
    d = run_eval(FakeBackend.scripted([kept]), [c], "constrained", relevance_floor=None).to_dict()
    assert d["results"][0]["calls"][0]["arguments"]["label"] == "tea"


def test_a_value_the_request_gives_is_scored_as_it_gives_it_and_a_result_s_value_as_written() -> None:
    from dataclasses import replace

    from localagent.decoding import ask
    from localagent.evaluation.evaluate import eval_config, generate_options
    from localagent.messages import Message

    lister = {"type": "function", "function": {"name": "list_dir", "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}}, "required": ["path"]}}}
    c = Case("l", "one_tool", [{"role": "user", "content": "List the folder data/raw."}], [lister],
             [ExpectedCall("list_dir", {"path": ["data/raw"]})])
    d = run_eval(FakeBackend.scripted([render_call("list_dir", {"path": "/data/raw"})]), [c], "constrained", relevance_floor=None).to_dict()
    assert d["results"][0]["calls"] == [{"name": "list_dir", "arguments": {"path": "data/raw"}}] and d["right"] == 1
    wrote = render_call("list_dir", {"path": "/data/raw"})
    asked = [Message("user", "List the folder data/raw.")]
    options, config = generate_options(c, eval_config()), eval_config()
    assert ask(FakeBackend.scripted([wrote]), asked, [lister], options, "List the folder data/raw.", config).text != wrote
    off = replace(config, as_given=False)
    assert ask(FakeBackend.scripted([wrote]), asked, [lister], options, "List the folder data/raw.", off).text == wrote
    # After a tool result the value may be the result's: left as the model wrote it.
    after = [*asked, Message("tool", "found /data/raw")]
    assert ask(FakeBackend.scripted([wrote]), after, [lister], options, "List the folder data/raw.", config).text == wrote


def test_constrained_mode_sends_the_tools_grammar_and_free_mode_none() -> None:
    from localagent.evaluation.evaluate import eval_config, generate_options

    c = case([PARIS])
    o = generate_options(c, eval_config())
    assert o.grammar and "get_forecast" in o.grammar and "calls-many" in o.grammar and o.call_threshold == 0.5
    assert o.temperature == 0 and o.seed == 0 and o.max_tokens == 256 and o.parallel
    assert "calls-one" in (generate_options(c, eval_config(parallel=False)).grammar or "")
    assert generate_options(c, eval_config(call_threshold=0.3)).call_threshold == 0.3
    free = generate_options(c, eval_config("free"))
    assert free.grammar is None and free.call_threshold is None and free.temperature == 0 and not free.call_heads


def test_eval_asks_as_the_agent_loop_does_jump_forward_included() -> None:
    # One options path: what decoding_options gives the loop for the same config and constraint.
    from localagent.decoding import decoding_options
    from localagent.evaluation.evaluate import eval_config, generate_options
    from localagent.constraint.grammar import ToolChoice, build_constraint

    c, config = case([PARIS]), eval_config(max_tokens=99)
    o = generate_options(c, config)
    assert o.call_heads and o.call_keys and "get_weather" in o.call_keys
    want = decoding_options(config, build_constraint(c.tools, ToolChoice(), parallel=True), threshold=0.5, choice=ToolChoice(), request=c.messages[-1]["content"])
    assert o == want and o.max_tokens == 99 and o.request


def test_required_tool_choice_leaves_no_prose_branch_and_no_first_token_decision() -> None:
    from localagent.evaluation.evaluate import eval_config, generate_options

    c = case([PARIS])
    auto = generate_options(c, eval_config())
    req = generate_options(c, eval_config(tool_choice="required"))
    assert req.call_threshold is None and req.grammar and req.grammar != auto.grammar and req.tool_choice == "required"
    assert 'prose' in (auto.grammar or "") and "prose" not in req.grammar.split("root ::=")[1].split("\n")[0]
    assert generate_options(c, eval_config(reason=True)).call_threshold is None  # decided after the sentence of why


def test_cli_reports_a_bad_case_file_in_one_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text("{oops\n")
    r = subprocess.run([sys.executable, "-c", "from localagent.cli import main; main()", "eval", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "line 1: not valid JSON" in r.stderr
    r = subprocess.run([sys.executable, "-c", "from localagent.cli import main; main()", "eval", str(SUITE), "--mode", "loose"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--mode must be constrained or free" in r.stderr
    r = subprocess.run([sys.executable, "-c", "from localagent.cli import main; main()", "eval", str(SUITE), "--category", "enums,parallel"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert "no category 'parallel' in the case file; its categories: one_tool, choose_tool" in r.stderr
    r = subprocess.run([sys.executable, "-c", "from localagent.cli import main; main()", "eval", str(SUITE), "--call-threshold", "1.5"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--call-threshold" in r.stderr and r.stderr.strip().count("\n") == 0


def test_categories_are_selected_by_name() -> None:
    from localagent.evaluation.evaluate import in_categories

    cases = load_cases(SUITE)
    picked = in_categories(cases, ["enums", "no_tool"])
    assert {c.category for c in picked} == {"enums", "no_tool"} and len(picked) == sum(c.category in ("enums", "no_tool") for c in cases)
    assert in_categories(cases, []) == cases
    with pytest.raises(ConfigError, match="no category 'enum'"):
        in_categories(cases, ["enum"])


# --- the project's own suite ------------------------------------------------------------------


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
        r = score_turn(c, Generation(reference_turn(c) or "Here is my answer."))
        assert r.right, (c.id, r.detail)
        assert not r.schema_errors, (c.id, r.schema_errors)


# --- validity with the constraint on and off, and the call-or-prose decision ------------------


def test_lenient_reading_finds_calls_outside_the_envelope() -> None:
    from localagent.evaluation.evaluate import lenient_calls

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
    from localagent.evaluation.evaluate import validity

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
    from localagent.evaluation.evaluate import decision_rates

    need, none = case([PARIS]), case([])
    call = render_call("get_weather", {"city": "Paris"})
    rs = [
        score_turn(need, Generation(call, decision="call")),
        score_turn(need, Generation("get_weather(Paris) is what I would do.", decision="prose")),  # prose, by decision
        score_turn(need, Generation(call)),  # no decision recorded: the call tried counts
        score_turn(none, Generation("It is sunny.", decision="prose")),
    ]
    for r, i in zip(rs, ["a", "b", "c", "d"]):
        r.id = i
    d = decision_rates(rs, {"a": True, "b": True, "c": True, "d": False})
    assert (d["called_when_needed"], d["call_needed"], d["no_call_when_not_needed"], d["no_call_needed"]) == (2, 3, 1, 1)
    assert (d["no_call_when_needed_rate"], d["called_when_not_needed_rate"]) == (33.3, 0.0)


def test_threshold_curve_gives_both_error_rates_at_each_threshold() -> None:
    from localagent.evaluation.evaluate import THRESHOLDS, pick_threshold, threshold_curve

    assert THRESHOLDS[0] == 0.05 and THRESHOLDS[-1] == 0.95 and len(THRESHOLDS) == 19
    masses = [0.9, 0.6, 0.3, 0.2, 0.45, 0.05]
    needs = [True, True, True, False, False, False]
    curve = {p["threshold"]: p for p in threshold_curve(masses, needs)}
    assert curve[0.05] == {"threshold": 0.05, "called_when_not_needed_rate": 100.0, "no_call_when_needed_rate": 0.0}  # 0.05 >= 0.05 calls
    assert curve[0.5] == {"threshold": 0.5, "called_when_not_needed_rate": 0.0, "no_call_when_needed_rate": 33.3}
    assert curve[0.3]["called_when_not_needed_rate"] == 33.3 and curve[0.3]["no_call_when_needed_rate"] == 0.0
    assert curve[0.95] == {"threshold": 0.95, "called_when_not_needed_rate": 0.0, "no_call_when_needed_rate": 100.0}
    assert pick_threshold(list(curve.values())) == 0.5  # 0.3 and 0.5 both err on one case of three; 0.5 is nearer the middle
    assert pick_threshold(threshold_curve([0.8, 0.1], [True, False], grid=[0.5, 0.9])) == 0.5
    with pytest.raises(ValueError, match="2 masses but 1 labels"):
        threshold_curve([0.1, 0.2], [True])
    with pytest.raises(ValueError, match="no call masses"):
        pick_threshold([])


def test_call_mass_is_recorded_curved_and_kept_on_rescoring() -> None:
    from localagent.evaluation.evaluate import rescore

    need, none = case([PARIS]), case([])
    none.id = "c2"
    call = render_call("get_weather", {"city": "Paris"})
    plain = run_eval(FakeBackend.scripted([call, "Sure."]), [need, none]).to_dict()
    assert [r["call_mass"] for r in plain["results"]] == [None, None] and plain["threshold_curve"] == []
    fake = FakeBackend.scripted([Generation(call, decision="call", call_mass=0.3), Generation("Sure.", decision="prose", call_mass=0.1)])
    d = run_eval(fake, [need, none]).to_dict()
    assert [r["call_mass"] for r in d["results"]] == [0.3, 0.1]
    curve = {p["threshold"]: p for p in d["threshold_curve"]}
    assert curve[0.5]["no_call_when_needed_rate"] == 100.0 and curve[0.1]["called_when_not_needed_rate"] == 100.0
    assert curve[0.2] == {"threshold": 0.2, "called_when_not_needed_rate": 0.0, "no_call_when_needed_rate": 0.0}
    assert "fewest decision errors on these cases: 0.3" in format_report(d)  # of 0.15 .. 0.3, the nearest 0.5
    again = rescore(json.loads(json.dumps(d)), [need, none]).to_dict()
    assert [r["call_mass"] for r in again["results"]] == [0.3, 0.1] and again["threshold_curve"] == d["threshold_curve"]


def test_a_saved_report_rescores_to_the_same_verdicts(tmp_path: Path) -> None:
    from localagent.evaluation.evaluate import rescore

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


def test_the_curve_script_prints_the_curve_and_marks_the_choice(tmp_path: Path) -> None:
    suite = load_cases(SUITE)
    cases = [c for c in suite if c.category == "one_tool"][:2] + [c for c in suite if c.category == "no_tool"][:2]
    masses = {c.id: (0.6 if c.expected else 0.2) for c in cases}
    fake = FakeBackend.scripted([Generation("Prose.", decision="prose", call_mass=masses[c.id]) for c in cases])
    p = tmp_path / "r.json"
    p.write_text(json.dumps(run_eval(fake, cases).to_dict()))
    script = Path(__file__).parent.parent / "evals" / "threshold_curve.py"
    out = subprocess.run([sys.executable, str(script), str(p), "--cases", str(SUITE)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = out.stdout.split("\n\n")[0].splitlines()  # the table of all cases; then one per group
    assert len(rows) == 2 + 19 and rows[0].startswith("| threshold |")
    assert "\nfirst turn (4 cases):" in out.stdout and "\nafter a result: 0 cases" in out.stdout
    assert "| **0.50** | 0.0 % | 0.0 % |" in rows  # of 0.25 .. 0.6, all without error, the nearest 0.5
    assert "| 0.65 | 0.0 % | 100.0 % |" in rows and "| 0.20 | 100.0 % | 0.0 % |" in rows
    p.write_text(json.dumps(run_eval(FakeBackend.scripted(["Prose."] * 4), cases).to_dict()))
    out = subprocess.run([sys.executable, str(script), str(p), "--cases", str(SUITE)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "records no call masses" in out.stderr and out.stderr.count("\n") == 1


def test_the_curve_script_prints_the_ceilings_two_errors(tmp_path: Path) -> None:
    suite = load_cases(SUITE)
    calls = [c for c in suite if c.category == "one_tool"][:2]
    quiet = [c for c in suite if c.category == "no_tool" and c.history()[-1].role == "user" and not policy.answers_itself(c.history()[-1].content, c.tools)][:1]
    results = [
        {"id": calls[0].id, "relevance": 9.5, "decision": "prose"},  # prose below 10 and up
        {"id": calls[1].id, "relevance": 12.0, "decision": "call"},  # called: no error at any ceiling
        {"id": quiet[0].id, "relevance": 7.5, "decision": "prose"},  # called at a ceiling of 7 or below
    ]
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"results": [{**r, "text": "x", "call_mass": 0.4} for r in results]}))
    script = Path(__file__).parent.parent / "evals" / "threshold_curve.py"
    out = subprocess.run([sys.executable, str(script), str(p), "--cases", str(SUITE)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "| no-call cases at or above it (of 1) | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 |" in out.stdout
    assert "| call cases the model wrote as prose, below it (of 1) | 0 | 0 | 0 | 0 | 1 | 1 | 1 | 1 |" in out.stdout


def _after_result(expected_answer: list[str], question: str = "What's the weather in Paris?") -> Case:
    """A no-call case: the weather of Paris was asked and its result is in."""
    msgs = [
        {"role": "user", "content": question},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"role": "tool", "name": "get_weather", "content": '{"city": "Paris", "temperature": 17}'},
    ]
    return Case("r1", "no_tool", msgs, [WEATHER, FORECAST], [], expected_answer=expected_answer)


def test_a_result_without_an_id_answers_the_earliest_open_call() -> None:
    h = _after_result([]).history()
    assert h[2].tool_call_id == h[1].tool_calls[0].id


def test_a_turn_that_repeats_an_answered_call_is_asked_again_as_prose_as_run_does() -> None:
    again = render_call("get_weather", {"city": "Paris"})
    fake = FakeBackend.scripted([again, "It is 17 degrees in Paris."])
    # A question no call's value names (else the result answers it before any turn: below).
    d = run_eval(fake, [_after_result([r"\b17\b"], "Do I need a coat there?")], "constrained").to_dict()
    assert d["right"] == 1 and d["repeats_answered_again"] == 1 and d["results"][0]["repeated"]
    # The second request: the question and the evidence alone, no tool offered, no call possible.
    assert fake.tools_seen[1] == [] and fake.options[1].call_threshold is None
    assert "17" in fake.requests[1][-1].content and fake.options[1].grammar and "calls-" not in fake.options[1].grammar.split("\n")[0]


def test_a_new_call_after_a_result_is_scored_as_it_stands() -> None:
    fake = FakeBackend.scripted([render_call("get_forecast", {"city": "Paris"})])
    d = run_eval(fake, [_after_result([], "Do I need a coat there?")], "constrained").to_dict()
    assert d["right"] == 0 and d["repeats_answered_again"] == 0 and len(fake.requests) == 1


def test_the_count_a_request_implies_reaches_the_options() -> None:
    from localagent.evaluation.evaluate import eval_config, generate_options

    c = Case("m", "multiple_calls", [{"role": "user", "content": "Weather in Paris, Rome and Oslo?"}], [WEATHER], [PARIS])
    o = generate_options(c, eval_config())
    assert o.more_calls is not None and o.more_calls.plan.implied == 3
    assert generate_options(c, eval_config(more_calls=None)).more_calls is None
    assert generate_options(c, eval_config(parallel=False)).more_calls is None
    assert generate_options(_after_result([]), eval_config()).more_calls.plan.implied == 1  # type: ignore[union-attr]


def test_a_first_turn_no_tool_fits_is_asked_as_prose_and_its_fit_recorded() -> None:
    need, none = case([PARIS]), case([])
    none.id = "c2"
    need.messages = none.messages = [{"role": "user", "content": "Paris?"}]  # no word of a tool's
    fake = FakeBackend.scripted(["It is the capital.", "Sure."], relevance=[-3.0, 0.5])
    d = run_eval(fake, [need, none]).to_dict()
    assert [o.tool_choice for o in fake.options] == ["none", "none"] and d["relevance_floor"] == [4.0, -2.0]
    assert fake.tools_seen == [[], []]  # as run writes it: no tool list
    assert [r["decision"] for r in d["results"]] == ["prose", "prose"] and [r["relevance"] for r in d["results"]] == [0.5, 0.5]
    assert d["decision"]["no_call_when_needed_rate"] == 100.0 and d["decision"]["called_when_not_needed_rate"] == 0.0
    fake = FakeBackend.scripted([render_call("get_weather", {"city": "Paris"})], relevance=[-3.0])
    d = run_eval(fake, [need], relevance_floor=None).to_dict()
    assert d["right"] == 1 and d["results"][0]["relevance"] is None and d["relevance_floor"] is None
    # A tool that clearly fits: a call, unless the first token all but rules one out.
    fake = FakeBackend.scripted([render_call("get_weather", {"city": "Paris"})], relevance=[12.0])
    d = run_eval(fake, [need]).to_dict()
    assert fake.options[0].call_threshold == AgentConfig.ceiling_threshold == 0.02
    assert d["results"][0]["decision"] == "call" and d["relevance_ceiling"] == 11.0
    fake = FakeBackend.scripted([render_call("get_weather", {"city": "Paris"})], relevance=[12.0])
    run_eval(fake, [need], relevance_ceiling=None)
    assert fake.options[0].call_threshold == 0.5
    # A first turn implying several calls: the lower threshold; after a result, the one threshold.
    two = case([PARIS])
    two.messages = [{"role": "user", "content": "What's the weather in Paris and in Rome?"}]
    fake = FakeBackend.scripted([render_call("get_weather", {"city": "Paris"})] * 2, relevance=[9.0])
    run_eval(fake, [two, _after_result([], "And in Rome and Oslo?")])
    assert [o.call_threshold for o in fake.options[:2]] == [AgentConfig.several_threshold, 0.5] == [0.1, 0.5]
    # Prose that writes out a call of an offered tool: asked again, as a call.
    fake = FakeBackend.scripted([Generation("Use `get_weather` for Paris.", decision="prose"), render_call("get_weather", {"city": "Paris"})], relevance=[5.0])
    d = run_eval(fake, [need]).to_dict()
    assert [o.call_threshold for o in fake.options] == [0.5, 0.0] and d["right"] == 1 and d["results"][0]["decision"] == "call"
    # After a result the gate is not asked: that turn is the repeat rule's and the covered rule's.
    fake = FakeBackend.scripted([render_call("get_forecast", {"city": "Paris"})], relevance=[-3.0])
    assert run_eval(fake, [_after_result([], "Do I need a coat there?")]).to_dict()["results"][0]["relevance"] is None


def test_a_first_turn_call_holding_the_answer_is_asked_again_as_prose_as_run_does() -> None:
    c = Case("n", "no_tool", [{"role": "user", "content": "What is the capital of Ireland?"}], [WEATHER], [], expected_answer=[r"\bDublin\b"])
    fake = FakeBackend.scripted([Generation(render_call("get_weather", {"city": "Dublin"}), decision="call", call_mass=0.6), "Dublin."], relevance=[5.0])
    d = run_eval(fake, [c]).to_dict()
    assert d["right"] == 1 and [o.tool_choice for o in fake.options] == ["auto", "none"]
    assert d["results"][0]["decision"] == "prose" and d["results"][0]["call_mass"] == 0.6


def test_a_question_the_result_answers_is_answered_from_the_evidence_as_run_does() -> None:
    fake = FakeBackend.scripted(["It is 17 degrees in Paris."])
    d = run_eval(fake, [_after_result([r"\b17\b"])], "constrained").to_dict()
    assert d["right"] == 1 and d["results"][0]["decision"] == "prose" and len(fake.requests) == 1
    assert fake.tools_seen[0] == [] and "17" in fake.requests[0][-1].content


def test_a_no_tool_case_that_works_something_out_is_given_its_value_as_run_does() -> None:
    c = Case("n", "no_tool", [{"role": "user", "content": "What is 36 plus 79?"}], [WEATHER], [], expected_answer=[r"\b115\b"])
    fake = FakeBackend.scripted(["It is 105."], relevance=[-3.0])
    d = run_eval(fake, [c]).to_dict()
    assert "36 + 79 = 115" in fake.requests[0][-1].content and d["results"][0]["text"] == "115"  # in place of a wrong answer
    # The model's own prose (no gate) is completed the same way, as run completes any answer.
    assert run_eval(FakeBackend.scripted(["It is 105."]), [c]).to_dict()["results"][0]["text"] == "115"


def test_an_answer_from_the_evidence_is_completed_as_run_completes_it() -> None:
    fake = FakeBackend.scripted(["It is sunny in Paris."])
    d = run_eval(fake, [_after_result([r"\b17\b"])]).to_dict()
    assert d["right"] == 1 and d["results"][0]["text"] == "It is sunny in Paris. (temperature: 17)"
