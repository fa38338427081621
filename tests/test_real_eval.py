"""The tool-call suite on the default model: a sample over every category, in both modes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from localagent.backends.base import Generation
from localagent.evaluation.evaluate import ErrorClass, load_cases, run_eval, sample, score_turn

pytestmark = pytest.mark.real

SUITE = Path(__file__).parent.parent / "evals" / "cases.jsonl"
CASES = sample(load_cases(SUITE), 14)  # two of each of the seven categories


@pytest.fixture(scope="module")
def reports(qwen: Any) -> dict[str, dict[str, Any]]:
    return {mode: run_eval(qwen, CASES, mode).to_dict() for mode in ("constrained", "free")}  # type: ignore[arg-type]


def test_constrained_beats_free(reports: dict[str, dict[str, Any]]) -> None:
    # On the full suite constrained is right in about two thirds of the cases and free in
    # under a tenth (free replies are mostly calls outside the envelope): a wide margin.
    c, f = reports["constrained"]["accuracy"], reports["free"]["accuracy"]
    assert c >= 40 and c >= f + 20, (c, f)


@pytest.mark.parametrize("mode", ["constrained", "free"])
def test_report_shape(reports: dict[str, dict[str, Any]], mode: str) -> None:
    d = reports[mode]
    assert d["mode"] == mode and d["cases"] == len(CASES) == 14
    assert set(d["by_category"]) == {c.category for c in CASES}
    assert [r["id"] for r in d["results"]] == [c.id for c in CASES]
    for r in d["results"]:
        assert isinstance(r["right"], bool)
        assert all(set(c) == {"name", "arguments"} for c in r["calls"])
    assert d["completion_tokens_per_case"] > 0 and d["seconds_per_case"] > 0
    json.dumps(d)


@pytest.mark.parametrize("mode", ["constrained", "free"])
def test_results_rescore_from_what_was_recorded(reports: dict[str, dict[str, Any]], mode: str) -> None:
    # The recorded text is the whole evidence: judging it again gives the same verdicts.
    for c, r in zip(CASES, reports[mode]["results"]):
        again = score_turn(c, Generation(r["text"], r["finish_reason"]))
        assert again.right == r["right"], c.id
        assert [x.arguments for x in again.calls] == [x["arguments"] for x in r["calls"]]


def test_constrained_calls_always_parse_and_fit_their_schema(reports: dict[str, dict[str, Any]]) -> None:
    d = reports["constrained"]
    assert d["format_failures"] == 0, [r["text"] for r in d["results"] if r["error"] == ErrorClass.FORMAT_FAILURE.value]
    assert d["calls"] > 0
    bad = {r["id"]: r["schema_errors"] for r in d["results"] if not r["schema_valid"]}
    assert not bad
    names = {c.id: {t["function"]["name"] for t in c.tools} for c in CASES}
    assert all(call["name"] in names[r["id"]] for r in d["results"] for call in r["calls"])


def test_cli_eval_json(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-c", "from localagent.cli import main; main()", "eval", str(SUITE), "--limit", "3", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["cases"] == 3 and d["mode"] == "constrained" and len(d["results"]) == 3
    assert {"accuracy", "format_failures", "by_category", "results"} <= set(d)


def test_constrained_first_token_decisions_are_recorded(reports: dict[str, dict[str, Any]]) -> None:
    d = reports["constrained"]
    assert all(r["decision"] in ("call", "prose") for r in d["results"])
    dec = d["decision"]
    assert dec["call_needed"] + dec["no_call_needed"] == len(CASES)
    assert d["valid_calls"] == d["calls"] and d["call_attempts"] >= d["calls"]
    assert reports["free"]["decision"]["call_needed"] == dec["call_needed"]


# The tiny model never starts a call by itself (see the README), so its validity is
# checked with a call required: one case of each category, on each engine.
TINY_CASES = sample(load_cases(SUITE), 7)


@pytest.mark.parametrize("engine,n", [("gbnf", 7), ("llguidance", 7)])
def test_tiny_model_calls_under_the_constraint_parse_and_fit_their_schema(smol: Any, engine: str, n: int) -> None:
    d = run_eval(smol, TINY_CASES[:n], "constrained", engine=engine, tool_choice="required", max_tokens=128).to_dict()  # type: ignore[arg-type]
    assert d["calls"] > 0
    assert d["schema_invalid_calls"] == 0, [r["schema_errors"] for r in d["results"]]
    for r in d["results"]:
        # Every reply is calls and nothing else; only a reply cut by the token limit may hold a block that is not one.
        if r["finish_reason"] != "length":
            assert r["error"] != ErrorClass.FORMAT_FAILURE.value and r["attempts"] == len(r["calls"]) > 0, r["text"]


DEV = Path(__file__).parent.parent / "evals" / "cases-dev.jsonl"


def test_the_first_turn_gate_tells_no_call_cases_from_call_cases(qwen: Any) -> None:
    # Generated dev cases of the first turn that need no call (an unfit tool, a question its
    # own text answers), against as many that need one: on the whole dev split the gate
    # answered 13 of 28 such no-call cases in prose, among them four of these six, and took
    # the call from none of the 150 call cases; the bounds leave room for one case more.
    dev = {c.id: c for c in load_cases(DEV) if c.history()[-1].role == "user"}
    quiet = [dev[f"dev-none_{f}"] for f in ("sum-01", "unfit-01", "count-02", "reverse-02", "capital-01", "upper-01")]
    calls = sample([c for c in dev.values() if c.expected], 6)
    d = run_eval(qwen, quiet + calls).to_dict()
    gated = [r for r in d["results"] if r["relevance"] is not None and r["decision"] == "prose"]
    assert all(r["relevance"] is not None for r in d["results"])  # every first turn was scored
    assert sum(r["id"] in {c.id for c in quiet} for r in gated) >= 3, [(r["id"], r["relevance"]) for r in d["results"]]
    assert sum(r["id"] in {c.id for c in calls} for r in gated) <= 1, [(r["id"], r["relevance"]) for r in gated]
    prose = [r for r in d["results"] if r["id"] in {c.id for c in quiet} and r["decision"] == "prose"]
    assert sum(r["right"] for r in prose) >= len(prose) - 1, [(r["id"], r["text"]) for r in prose]  # and answered right


def test_a_request_that_answers_itself_is_answered_in_prose_and_right(qwen: Any) -> None:
    # Dev cases whose own text holds the answer (a note's new time, a phrase in capitals, a
    # word backwards), all called before this rule on the dev split, against dev call cases
    # that quote text too (an SMS, a translation): the first are prose and right, the second
    # still calls. On the whole dev split all 12 such cases were right, no call case lost.
    dev = {c.id: c for c in load_cases(DEV) if c.history()[-1].role == "user"}
    own = [dev[f"dev-none_{f}"] for f in ("note-01", "note-02", "note-03", "upper-01", "upper-03", "reverse-04")]
    quoting = [c for c in dev.values() if c.expected and '"' in c.history()[-1].content][:4]
    d = run_eval(qwen, own + quoting).to_dict()
    by_id = {r["id"]: r for r in d["results"]}
    assert sum(by_id[c.id]["decision"] == "prose" and by_id[c.id]["right"] for c in own) >= 5, [(c.id, by_id[c.id]["text"]) for c in own]
    assert len(quoting) == 4 and all(by_id[c.id]["decision"] == "call" for c in quoting), [(c.id, by_id[c.id]["text"]) for c in quoting]


TEST4 = Path(__file__).parent.parent / "evals" / "cases-test4.jsonl"


def test_several_calls_stop_where_the_request_does_and_timers_go_unlabelled(qwen: Any) -> None:
    # The four families of test4 (a dev set since test5) whose misses were extra calls or
    # labels nobody asked for: a fourth room after the three named, Oslo again in
    # Fahrenheit, a timer labelled with the SMS sent beside it. Before the cut and the
    # optional-text rule 4 of these 20 were right, 6 had a call too many and 10 a made-up
    # label; with them 19 were right, none had an extra call, one timer kept a label (the
    # SMS text, where the SMS was never sent).
    fams = ("lights_many", "weather_many", "sms_and_timer", "timer_words")
    cases = [c for c in load_cases(TEST4) if c.id.rsplit("-", 1)[0].removeprefix("test4-") in fams]
    d = run_eval(qwen, cases).to_dict()
    expected = {c.id: len(c.expected) for c in cases}
    extra = [r["id"] for r in d["results"] if len(r["calls"]) > expected[r["id"]]]
    labelled = [r["id"] for r in d["results"] for c in r["calls"] if c["name"] == "set_timer" and "label" in c["arguments"]]
    assert len(cases) == 20 and len(extra) <= 1, extra
    assert len(labelled) <= 2, labelled
    assert d["right"] >= 16, [(r["id"], r["error"], r["detail"]) for r in d["results"] if not r["right"]]


TEST6 = Path(__file__).parent.parent / "evals" / "cases-test6.jsonl"


def test_each_next_call_serves_the_part_left_and_values_are_sent_as_the_request_gives_them(qwen: Any) -> None:
    # Four families of test6 (a dev set since test7): three tools after a lead-in ("I'd like
    # three bits of info, please: ...") or with "AQI"; files and folders whose paths the model
    # copied with a "/" or another path's folder; emails with an empty cc list. Before the next
    # call's tool and the values held to the request 4 of these 19 were right; with them 19.
    fams = ("three_tools", "read_many", "list_dir", "email")
    cases = [c for c in load_cases(TEST6) if c.id.rsplit("-", 1)[0].removeprefix("test6-") in fams]
    d = run_eval(qwen, cases).to_dict()
    sent = [a for r in d["results"] for c in r["calls"] for a in c["arguments"].values()]
    assert len(cases) == 19 and not [a for a in sent if a == []], sent  # no empty optional list sent
    assert d["right"] >= 15, [(r["id"], r["error"], r["detail"]) for r in d["results"] if not r["right"]]


def _fn(name: str, desc: str, **params: str) -> dict[str, Any]:
    props = {p: {"type": "string" if t == "s" else "integer", "description": p.replace("_", " ")} for p, t in params.items()}
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": props, "required": list(params)}}}


RATE = _fn("get_exchange_rate", "Get the exchange rate between two currencies.", base_currency="s", target_currency="s")
DISTANCE = _fn("get_distance", "Get the driving distance between two places.", origin="s", destination="s")
WEATHER = _fn("get_weather", "Get the current weather in a city.", city="s")
TIME = _fn("get_time", "Get the local time in a city.", city="s")
GROWTH = _fn("sales_growth", "Calculate a company's sales growth rate over some years.", company="s", years="i")
COVERAGE = _fn("interest_coverage", "Calculate a company's interest coverage ratio over some years.", company="s", years="i")


def _several_calls_cases() -> list[dict[str, Any]]:
    """Requests of BFCL's shapes, with other values: parts sharing a value, a request wholly in
    quotes, a second tool whose part gives no value of its own."""
    out = []

    def add(request: str, tools: list[dict[str, Any]], *calls: tuple[str, dict[str, Any]]) -> None:
        expected = [{"name": n, "arguments": {k: [v] for k, v in a.items()}, "loose": [k for k, v in a.items() if isinstance(v, str)]} for n, a in calls]
        out.append({"id": f"shape-{len(out)}", "category": "multiple_calls", "messages": [{"role": "user", "content": request}], "tools": tools, "expected": expected})

    for a, b, c in (("USD", "AUD", "CAD"), ("EUR", "JPY", "GBP"), ("CHF", "USD", "SEK")):
        add(f"Get me the exchange rates of {a} to {b} and {a} to {c}.", [RATE],
            ("get_exchange_rate", {"base_currency": a, "target_currency": b}), ("get_exchange_rate", {"base_currency": a, "target_currency": c}))
    for x, y, z in (("Boston", "Chicago", "Denver"), ("Paris", "Lyon", "Nice"), ("Berlin", "Munich", "Vienna")):
        add(f"What is the driving distance from {x} to {y}, and then from {y} to {z}?", [DISTANCE],
            ("get_distance", {"origin": x, "destination": y}), ("get_distance", {"origin": y, "destination": z}))
    for p, q in (("Oslo", "Rome"), ("Lima", "Cairo"), ("Tokyo", "Seoul")):
        add(f'"Could you help me with two things? First, the current weather in {p}. Second, the local time in {q}."', [WEATHER, TIME],
            ("get_weather", {"city": p}), ("get_time", {"city": q}))
    for co, n in (("Acme", 3), ("Globex", 5), ("Initech", 2)):
        add(f"Find the sales growth rate of {co} over the last {n} years and also the interest coverage ratio for the same period.",
            [GROWTH, COVERAGE], ("sales_growth", {"company": co, "years": n}), ("interest_coverage", {"company": co, "years": n}))
    return out


def test_each_part_gets_its_call_where_parts_share_values_or_the_request_is_quoted(qwen: Any, tmp_path: Path) -> None:
    # BFCL's shapes that ended a turn after one call: a value shared by two parts (USD, a leg's
    # city) named both, a request wholly in quotes was one part, and a second tool's call
    # whose part gives no value named nothing new. The code before got 0 of 12 (one call
    # each), the current 12.
    path = tmp_path / "shapes.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in _several_calls_cases()), encoding="utf-8")
    d = run_eval(qwen, load_cases(path)).to_dict()
    one = [r["id"] for r in d["results"] if len(r["calls"]) < 2]
    assert d["cases"] == 12 and len(one) <= 2, one
    assert d["right"] >= 9, [(r["id"], r["error"], r["detail"]) for r in d["results"] if not r["right"]]


FORECAST = _fn("get_forecast", "Get the weather forecast for a city.", city="s", days="i")
CONVERT = _fn("convert_currency", "Convert an amount between currencies.", amount="i", from_currency="s", to_currency="s")
STOCK = _fn("get_stock_price", "Get the latest price of a stock by its ticker symbol.", symbol="s")
STOCK["function"]["parameters"]["properties"]["symbol"]["description"] = "Ticker symbol, e.g. 'AAPL'."
AIR = _fn("get_air_quality", "Get the current air quality index of a city.", city="s")


def _case(
    id_: str, request: str, tools: list[dict[str, Any]], calls: list[tuple[str, dict[str, Any]]], answer: str = "", loose: bool = False
) -> dict[str, Any]:
    """A case of one request: the calls it expects (a text's case and spacing aside where
    ``loose``), or none and the ``answer`` its prose must hold."""
    expected = [{"name": n, "arguments": {k: [v] for k, v in a.items()}, **({"loose": [k for k, v in a.items() if isinstance(v, str)]} if loose else {})}
                for n, a in calls]
    case = {"id": id_, "category": "multiple_calls" if len(calls) > 1 else "nested_args" if calls else "no_tool",
            "messages": [{"role": "user", "content": request}], "tools": tools, "expected": expected}
    return {**case, "expected_answer": [rf"\b{answer}\b"]} if answer else case


def _values_of_their_parts_cases() -> list[dict[str, Any]]:
    """Requests whose later calls the model gave a value of another part (the first call's
    city), and questions whose calls held the answer (a capital as the city)."""
    out: list[dict[str, Any]] = []

    def add(request: str, tools: list[dict[str, Any]], calls: list[tuple[str, dict[str, Any]]], answer: str = "") -> None:
        out.append(_case(f"part-{len(out)}", request, tools, calls, answer, loose=True))

    for a, b, n in (("Oslo", "Vienna", 3), ("Dublin", "Prague", 5), ("Cairo", "Nairobi", 2), ("Quito", "Bogota", 4)):
        add(f"{a} weather rn, {b} forecast {n} days", [WEATHER, FORECAST], [("get_weather", {"city": a}), ("get_forecast", {"city": b, "days": n})])
    for a, b, c in (("Helsinki", "Athens", "Manila"), ("Toronto", "Zurich", "Jakarta"), ("Denver", "Hanoi", "Warsaw")):
        add(f"weather {a}? air {b}? time {c}?", [WEATHER, AIR, TIME], [("get_weather", {"city": a}), ("get_air_quality", {"city": b}), ("get_time", {"city": c})])
    for amount, x, y, company, ticker in ((200, "JPY", "CHF", "Netflix", "NFLX"), (80, "EUR", "SEK", "Microsoft", "MSFT"), (45, "GBP", "USD", "Amazon", "AMZN")):
        add(f"Could you tell me how much {amount} {x} comes to in {y}, and also look up the current share price of {company}?", [CONVERT, STOCK],
            [("convert_currency", {"amount": amount, "from_currency": x, "to_currency": y}), ("get_stock_price", {"symbol": ticker})])
    for country, capital in (("Norway", "Oslo"), ("Japan", "Tokyo"), ("Egypt", "Cairo"), ("Kenya", "Nairobi"), ("France", "Paris")):
        add(f"Quick quiz question: which city is the capital of {country}?", [WEATHER, TIME], [], capital)
    return out


def test_a_later_call_takes_its_own_parts_value_and_a_known_answer_is_not_called_for(qwen: Any, tmp_path: Path) -> None:
    # A value of another part or a code's example ruled out at the start of a later call's
    # value (policy.excluded), and a first call holding a name the request does not say asked
    # again as prose (policy.answer_in_call). The last stop's code: 8 of 15 right, all five
    # capitals called; the current: 12, two called (the country written as the city).
    path = tmp_path / "parts.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in _values_of_their_parts_cases()), encoding="utf-8")
    d = run_eval(qwen, load_cases(path)).to_dict()
    wrong = [(r["id"], r["error"], r["detail"]) for r in d["results"] if not r["right"]]
    called = [r["id"] for r in d["results"] if r["category"] == "no_tool" and r["calls"]]
    assert d["cases"] == 15 and len(called) <= 2, called
    assert d["right"] >= 11, wrong



SMS = _fn("send_sms", "Send an SMS text message to a phone number.", phone_number="s", message="s")
TIMER = _fn("set_timer", "Start a countdown timer.", minutes="i")
CONTACT = {"type": "function", "function": {"name": "create_contact", "description": "Add a person to the address book.", "parameters": {
    "type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "description": "Full name."},
        "phones": {"type": "array", "description": "Phone numbers.", "items": {"type": "object", "required": ["label", "number"], "properties": {
            "label": {"type": "string", "enum": ["mobile", "home", "work"]}, "number": {"type": "string"}}}},
        "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags for grouping contacts."}}}}}


def _asked_of_a_name_cases() -> list[dict[str, Any]]:
    """Questions asking of a name what no offered tool knows (a country's capital, with weather
    and time tools), texts sent in quotes with more after the quote, and contacts with tags."""
    out: list[dict[str, Any]] = []

    def add(request: str, tools: list[dict[str, Any]], calls: list[tuple[str, dict[str, Any]]], answer: str = "") -> None:
        out.append(_case(f"asked-{len(out)}", request, tools, calls, answer))

    for wording, (country, capital) in zip(("{c} capital?", "What's {c}'s capital city?", "capital of {c} = ?", "{c}: capital city?"),
                                           (("Norway", "Oslo"), ("Japan", "Tokyo"), ("Egypt", "Cairo"), ("Italy", "Rome"))):
        add(wording.format(c=country), [WEATHER, TIME], [], capital)
    for phone, text, n in (("+15551234567", "Running late", 10), ("+447700900123", "Call me back", 25), ("+33612345678", "On my way", 5)):
        add(f'sms {phone} "{text}"; timer {n} min', [SMS, TIMER], [("send_sms", {"phone_number": phone, "message": text}), ("set_timer", {"minutes": n})])
    for name, phone, tag in (("Hana Sato", "+14155550142", "book club"), ("Omar Haddad", "+4915112345678", "gym"), ("Lea Roux", "+33612345678", "school")):
        add(f"{name} -> contacts (work {phone}), tag {tag}", [CONTACT],
            [("create_contact", {"name": name, "phones": [{"label": "work", "number": phone}], "tags": [tag]})])
    return out


def test_a_question_of_a_name_no_tool_knows_is_answered_and_calls_end_where_their_values_do(qwen: Any, tmp_path: Path) -> None:
    # A call for a name the request asks something else of (its capital) asked again as prose
    # (policy.asked_about), a text run past its quote cut to it, so the part after it still
    # gets its call (policy.past_quote), a number copied without the ")" after it, and a list
    # ended at an item it repeats (the decoder). The last stop's code: 1 of 10 right, three
    # capitals called; the current: 8, none called.
    path = tmp_path / "asked.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in _asked_of_a_name_cases()), encoding="utf-8")
    d = run_eval(qwen, load_cases(path)).to_dict()
    wrong = [(r["id"], r["error"], r["detail"]) for r in d["results"] if not r["right"]]
    called = [r["id"] for r in d["results"] if r["category"] == "no_tool" and r["calls"]]
    assert d["cases"] == 10 and d["format_failures"] == 0 and len(called) <= 1, (called, wrong)
    assert d["right"] >= 7, wrong
