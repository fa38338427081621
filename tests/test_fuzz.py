"""Model output fuzzing: random and adversarial turns through the parser and the loop.

Every turn is built from segments whose fate is known in advance (a valid call, a call
that fails validation, a malformed block, prose), so the parser's answer is checked
exactly, and the loop is checked with tools that record what really ran: only calls that
validated, every call id answered, every run ended for a stated reason with a complete
trace. A second strategy throws unstructured text with tag and JSON fragments at both and
checks the same invariants without an exact expectation.

CI runs the ``ci`` hypothesis profile (fixed seed, bounded examples); ``HYPOTHESIS_PROFILE=big``
runs ten times as many. With ``LOCALAGENT_FUZZ_STATS=FILE`` the number of examples and model
outputs actually run is written to FILE (the README's figures come from there).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localagent.backends.base import FinishReason, Generation
from localagent.backends.fake import FakeBackend
from localagent.formats import CALL_CLOSE, CALL_OPEN, parse
from localagent.loop import Agent, AgentConfig, RunResult
from localagent.stops import Limits, StopReason
from localagent.tools import tool
from localagent.trace import read_lines
from runs import traced_run

PROFILE = settings.get_current_profile_name()
SCALE = 10 if PROFILE == "big" else 1
# Per-test example counts in the ci profile; outputs per loop example are 1-4 turns.
EXAMPLES = {"parse_exact": 2000, "parse_random": 5500, "loop_exact": 1000, "loop_random": 600}
FUZZ = settings(deadline=None, derandomize=PROFILE != "big", suppress_health_check=list(HealthCheck))

STATS: Counter[str] = Counter()
executed: list[tuple[str, dict[str, Any]]] = []  # what the tools really ran


@pytest.fixture(scope="module", autouse=True)
def _write_stats() -> Iterator[None]:
    yield
    path = os.environ.get("LOCALAGENT_FUZZ_STATS")
    if path:
        Path(path).write_text(json.dumps({"profile": PROFILE, **STATS}, indent=1, sort_keys=True) + "\n")


@tool
def note(text: str) -> str:
    """Keep a note."""
    executed.append(("note", {"text": text}))
    return f"noted {len(text)} characters"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    executed.append(("add", {"a": a, "b": b}))
    return a + b


@tool
def tags(items: list[str], flag: bool = False) -> str:
    """Tag things."""
    executed.append(("tags", {"items": items, "flag": flag}))
    return ",".join(items)


TOOLS = [note, add, tags]

# -- segments ---------------------------------------------------------------------------

ALPHABET = st.characters(codec="utf-8")  # any scalar value, surrogates excluded
TRICKY = st.sampled_from(
    [CALL_OPEN, CALL_CLOSE, "<tool_", "</tool_call", "<|im_end|>", "<|endoftext|>", '{"name": "add"}',
     '"', "\\", "{", "}", "[", "]", "\n", "```json", "\u2028", "\x00", "é", "🦙"]
)
TEXT = st.lists(st.one_of(st.text(ALPHABET, max_size=12), TRICKY), max_size=8).map("".join)
# Strings without any tag: for blocks that are cut or broken, whose ends must not move.
PLAIN = st.text(st.characters(codec="utf-8", exclude_characters="<>"), max_size=30)


@dataclass
class Segment:
    """A piece of a turn and what the parser must make of it."""

    text: str
    call: tuple[str, dict[str, Any]] | None = None  # a well-formed block: this call
    valid: bool = False  # ... and it passes validation
    errors: int = 0  # malformed blocks: format errors
    last: bool = False  # must end the turn (a block never closed)


def _block(obj: Any, style: int) -> str:
    if style == 0:
        return f"{CALL_OPEN}\n{json.dumps(obj, ensure_ascii=False)}\n{CALL_CLOSE}"
    if style == 1:
        return f"{CALL_OPEN}{json.dumps(obj)}{CALL_CLOSE}"
    return f"{CALL_OPEN}\n{json.dumps(obj, indent=2, ensure_ascii=False)}\n  {CALL_CLOSE}"


INTS = st.integers(-(10**6), 10**6)
VALID_ARGS = st.one_of(
    st.tuples(st.just("note"), st.fixed_dictionaries({"text": TEXT})),
    st.tuples(st.just("note"), st.integers(50_000, 300_000).map(lambda n: {"text": "x" * n})),  # huge
    st.tuples(st.just("add"), st.fixed_dictionaries({"a": INTS, "b": INTS})),
    st.tuples(
        st.just("tags"),
        st.fixed_dictionaries({"items": st.lists(TEXT, max_size=4), "flag": st.booleans()}),
    ),
)
NOT_INT = st.one_of(st.lists(INTS, max_size=2), st.dictionaries(PLAIN, INTS, max_size=2), st.none(),
                    st.text("abcxyz", min_size=1, max_size=5), st.just(3.5))
NOT_STR = st.one_of(st.lists(PLAIN, max_size=2), st.dictionaries(PLAIN, PLAIN, max_size=2), st.none(), INTS)
INVALID_ARGS = st.one_of(
    st.tuples(st.just("add"), st.fixed_dictionaries({"a": NOT_INT, "b": INTS})),
    st.tuples(st.just("add"), st.fixed_dictionaries({"a": INTS})),  # missing
    st.tuples(st.just("add"), st.fixed_dictionaries({"a": INTS, "b": INTS, "c": INTS})),  # extra
    st.tuples(st.just("note"), st.fixed_dictionaries({"text": NOT_STR})),
    st.tuples(st.just("tags"), st.fixed_dictionaries({"items": st.lists(NOT_STR, min_size=1, max_size=2)})),
    st.tuples(st.sampled_from(["nope", "Note", "add ", "", "read_file", "ádd"]), st.just({})),  # unknown tool
    st.tuples(TEXT, st.dictionaries(PLAIN, INTS, max_size=2)),  # any name at all
)


@st.composite
def well_formed(draw: st.DrawFn) -> Segment:
    valid = draw(st.booleans())
    name, args = draw(VALID_ARGS if valid else INVALID_ARGS)
    style = draw(st.integers(0, 2))
    if draw(st.integers(0, 9)) == 0:  # some models double-encode the arguments
        return Segment(_block({"name": name, "arguments": json.dumps(args)}, style), (name, args), valid)
    return Segment(_block({"name": name, "arguments": args}, style), (name, args), valid)


@st.composite
def malformed(draw: st.DrawFn) -> Segment:
    name, args = draw(st.tuples(st.sampled_from(["note", "add"]), st.dictionaries(PLAIN, PLAIN, max_size=3)))
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    kind = draw(st.integers(0, 8))
    if kind == 0:  # truncated JSON, then the closing tag
        cut = draw(st.integers(0, len(body) - 1))
        return Segment(f"{CALL_OPEN}\n{body[:cut]}\n{CALL_CLOSE}", errors=1)
    if kind == 1:  # wrong nesting
        wrong = draw(st.sampled_from([
            f'[{body}]', f'{{"function": {body}}}', body[:-1], body + "}", f'{{"name": {body}}}',
            f'{{"name": "{name}"}}, "arguments": {{}}}}', '{"name": "add", "arguments": {"a": [1}}',
            f'{{"name": "{name}", "arguments": [1, 2]}}', '{"name": "note", "arguments": "text"}', '"add"', "",
        ]))
        return Segment(f"{CALL_OPEN}\n{wrong}\n{CALL_CLOSE}", errors=1)
    if kind == 2:  # an end of sequence in the middle of the call: never closed
        whole = f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"
        cut = draw(st.integers(len(CALL_OPEN), len(whole) - 1))
        eos = draw(st.sampled_from(["", "<|im_end|>", "<|endoftext|>"]))
        return Segment(whole[:cut] + eos, errors=1, last=True)
    if kind == 3:  # a lone surrogate, raw or escaped: not text anyone can use
        sur = chr(draw(st.integers(0xD800, 0xDFFF)))
        obj = {"name": "note", "arguments": {"text": "a" + sur}}
        return Segment(_block(obj, draw(st.integers(0, 2))), errors=1)
    if kind == 4:  # nesting deep enough to break a recursive encoder
        depth = draw(st.integers(200, 5000))
        return Segment(f'{CALL_OPEN}\n{{"name": "tags", "arguments": {{"items": {"[" * depth}{"]" * depth}}}}}\n{CALL_CLOSE}', errors=1)
    if kind == 5:  # not JSON at all
        junk = draw(PLAIN)
        return Segment(f"{CALL_OPEN}\n{{name: {junk}}}\n{CALL_CLOSE}", errors=1)
    if kind == 6:  # JSON, then more before the closing tag
        return Segment(f"{CALL_OPEN}\n{body} {body}\n{CALL_CLOSE}", errors=1)
    if kind == 7:  # a name that is not a string
        bad = draw(st.sampled_from(["1", "null", "[]", '{"a": 1}', "true"]))
        return Segment(f'{CALL_OPEN}\n{{"name": {bad}, "arguments": {{}}}}\n{CALL_CLOSE}', errors=1)
    # an unclosed block cut right after the opening tag
    return Segment(CALL_OPEN, errors=1, last=True)


PROSE = TEXT.map(lambda s: Segment(s.replace(CALL_OPEN, "<tool call>")))


@st.composite
def turns(draw: st.DrawFn) -> list[Segment]:
    segs = draw(st.lists(st.one_of(PROSE, well_formed(), malformed()), max_size=5))
    # A block that is never closed swallows the rest of the turn, so it can only come last.
    body = [s for s in segs if not s.last]
    return body + [s for s in segs if s.last][:1]


def join(segs: list[Segment]) -> str:
    # A newline between segments: two pieces of prose must not make a tag between them.
    return "\n".join(s.text for s in segs)


def expected_calls(segs: list[Segment]) -> list[tuple[str, dict[str, Any]]]:
    return [s.call for s in segs if s.call is not None]


# -- the parser ---------------------------------------------------------------------------


@settings(FUZZ, max_examples=EXAMPLES["parse_exact"] * SCALE)
@given(turns())
def test_the_parser_finds_exactly_the_well_formed_calls(segs: list[Segment]) -> None:
    STATS["parse_exact_examples"] += 1
    STATS["outputs"] += 1
    got = parse(join(segs))
    STATS["parsed_calls"] += len(got.calls)
    STATS["parsed_format_errors"] += len(got.errors)
    assert [(c.name, c.arguments) for c in got.calls] == expected_calls(segs)
    assert len(got.errors) == sum(s.errors for s in segs), got.errors
    assert all(len(e) < 400 and "\n" not in e for e in got.errors)  # one line each
    for e in got.errors:
        e.encode("utf-8")  # the line goes to the model's tokenizer and the trace


RANDOM = st.lists(
    st.one_of(TRICKY, st.text(ALPHABET, max_size=20), st.sampled_from(['"name"', '"arguments"', ":", ",",
              '"note"', '"add"', '"text"', "1", "[[[[[[", "]]]]", "\\ud800", "\\u0000"])),
    max_size=30,
).map("".join)


@settings(FUZZ, max_examples=EXAMPLES["parse_random"] * SCALE)
@given(RANDOM)
def test_the_parser_never_raises_and_returns_only_objects(text: str) -> None:
    STATS["parse_random_examples"] += 1
    STATS["outputs"] += 1
    got = parse(text)
    STATS["parsed_calls"] += len(got.calls)
    STATS["parsed_format_errors"] += len(got.errors)
    assert isinstance(got.content, str)
    for c in got.calls:
        assert isinstance(c.name, str) and isinstance(c.arguments, dict)
        json.dumps(c.arguments).encode("utf-8")
    assert len(got.calls) + len(got.errors) <= text.count(CALL_OPEN)


# -- the loop ---------------------------------------------------------------------------


def check_run(agent: Agent, folder: Path) -> RunResult:
    """Run the agent once and check the loop's invariants (every call answered exactly
    once, in the history and the records: assert_run_invariants)."""
    path = folder / "trace.jsonl"
    result, trace = traced_run(agent, "fuzz", path)
    assert isinstance(result.stop_reason, StopReason)
    lines = [x for x in path.read_text(encoding="utf-8").split("\n") if x]
    assert len(trace) == len(lines), "every trace line is whole JSON"
    # What ran is exactly the calls that validated, in order.
    ran = [
        (c.name, c.arguments)
        for rec in result.records
        for c, r in zip(rec.calls, rec.results)
        if not r.is_error
    ]
    assert executed == ran
    for name, args in executed:
        assert next(t for t in TOOLS if t.name == name).args_model.model_validate(args)
    STATS["runs"] += 1
    STATS["steps"] += result.steps
    STATS["calls_run"] += len(executed)
    STATS["calls_refused"] += sum(r.is_error for rec in result.records for r in rec.results)
    STATS[f"stop_{result.stop_reason.value}"] += 1
    return result


FINISH: st.SearchStrategy[FinishReason] = st.sampled_from(["stop", "stop", "stop", "length", "context", "error"])


@settings(FUZZ, max_examples=EXAMPLES["loop_exact"] * SCALE)
@given(st.lists(st.tuples(turns(), FINISH), min_size=1, max_size=4), st.booleans(), st.booleans())
def test_the_loop_runs_only_calls_that_validated(
    tmp_path: Path, script: list[tuple[list[Segment], FinishReason]], constrained: bool, parallel: bool
) -> None:
    STATS["loop_exact_examples"] += 1
    executed.clear()
    gens = [Generation(join(segs), finish, error="fuzzed" if finish == "error" else None) for segs, finish in script]
    expect = {id(g): [c for s in segs if s.valid and (c := s.call)] for g, (segs, _) in zip(gens, script)}
    fake = FakeBackend.scripted(gens)
    config = AgentConfig(limits=Limits(max_steps=5), constrained=constrained, parallel_calls=parallel)
    result = check_run(Agent(fake, TOOLS, config=config), tmp_path)
    STATS["outputs"] += len(fake.requests)
    # Per step: the calls that ran are the valid ones of that turn, unless the turn failed.
    for rec in result.records:
        want = expect.get(id(rec.generation), [])
        if rec.generation.finish_reason in ("context", "error"):
            want = []
        ran = [(c.name, c.arguments) for c, r in zip(rec.calls, rec.results) if not r.is_error]
        assert ran == want


@settings(FUZZ, max_examples=EXAMPLES["loop_random"] * SCALE)
@given(st.lists(st.tuples(st.one_of(RANDOM, turns().map(join)), FINISH), min_size=1, max_size=4))
def test_the_loop_survives_random_output(tmp_path: Path, script: list[tuple[str, FinishReason]]) -> None:
    STATS["loop_random_examples"] += 1
    executed.clear()
    gens = [Generation(text, finish, error="fuzzed" if finish == "error" else None) for text, finish in script]
    fake = FakeBackend.scripted(gens)
    check_run(Agent(fake, TOOLS, config=AgentConfig(limits=Limits(max_steps=5))), tmp_path)
    STATS["outputs"] += len(fake.requests)


# -- what the fuzzer found, pinned ----------------------------------------------------------


def test_a_closing_tag_inside_a_string_argument_belongs_to_the_argument() -> None:
    text = f'{CALL_OPEN}\n{{"name": "note", "arguments": {{"text": "a {CALL_CLOSE} b"}}}}\n{CALL_CLOSE} done'
    got = parse(text)
    assert [(c.name, c.arguments) for c in got.calls] == [("note", {"text": f"a {CALL_CLOSE} b"})]
    assert got.errors == [] and got.content == "done"


def test_lone_surrogates_and_deep_nesting_are_format_errors_not_calls() -> None:
    escaped = f'{CALL_OPEN}{{"name": "note", "arguments": {{"text": "\\ud800"}}}}{CALL_CLOSE}'
    deep = f'{CALL_OPEN}{{"name": "tags", "arguments": {{"items": {"[" * 900}{"]" * 900}}}}}{CALL_CLOSE}'
    double = f'{CALL_OPEN}{{"name": "tags", "arguments": {json.dumps("[" * 5000 + "]" * 5000)}}}{CALL_CLOSE}'
    got = parse("\n".join([escaped, deep, double]))
    assert got.calls == [] and len(got.errors) == 3
    assert "lone surrogate" in got.errors[0] and "deeper than 32" in got.errors[1]


def test_a_trace_keeps_records_with_surrogates_and_line_separators(tmp_path: Path) -> None:
    executed.clear()  # the last example of the property test above may leave its calls here
    text = "odd \ud800 and \u2028 here"
    fake = FakeBackend.scripted([Generation(text)])
    result = check_run(Agent(fake, TOOLS, config=AgentConfig()), tmp_path)
    assert result.answer == text
    assert read_lines(tmp_path / "trace.jsonl")[1]["text"] == text
