"""Trace files: written line by line, read back, summarised over many runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localagent.backends.fake import FakeBackend, call_text
from localagent.errors import ConfigError
from localagent.loop import Agent, AgentConfig
from localagent.stops import Limits
from localagent.tools import tool
from localagent.trace import (
    RunEnd,
    RunStart,
    TraceStep,
    TraceWriter,
    default_trace_dir,
    new_trace_path,
    parse_record,
    read_lines,
    read_trace,
    summarize,
)


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    if key == "bad":
        raise KeyError(key)
    return f"value of {key}"


def test_writer_flushes_each_record(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "t.jsonl"
    w = TraceWriter(path)
    w.write({"type": "a", "n": 1})
    # Readable before close: a killed run keeps its finished steps.
    assert [r["n"] for r in read_lines(path)] == [1]
    w.write({"type": "b", "obj": Path("x")})  # non-JSON values become strings
    w.close()
    w.write({"type": "dropped"})
    recs = read_lines(path)
    assert [r["type"] for r in recs] == ["a", "b"] and recs[1]["obj"] == "x"
    assert all(isinstance(r["t"], float) for r in recs)


def test_writer_without_a_path_writes_nothing() -> None:
    w = TraceWriter(None)
    w.write({"type": "a"})
    w.close()
    assert w.path is None


def test_unwritable_and_unreadable_traces_are_config_errors(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="cannot write trace"):
        TraceWriter(tmp_path / "file" / "t.jsonl")
    with pytest.raises(ConfigError, match="cannot read trace"):
        read_lines(tmp_path / "missing.jsonl")


def test_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"type": "run_start"}\n\n{"type": "step", "st')
    assert read_lines(path) == [{"type": "run_start"}]


def test_default_trace_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOCALAGENT_TRACES", str(tmp_path))
    assert default_trace_dir() == tmp_path
    p = new_trace_path()
    assert p.parent == tmp_path and p.name.startswith("run-") and p.suffix == ".jsonl"


def _run(path: Path, replies: list[str], max_steps: int = 12) -> None:
    agent = Agent(FakeBackend.scripted(replies), [lookup], config=AgentConfig(limits=Limits(max_steps=max_steps)))
    agent.run("task", trace=path)


def test_the_loop_writes_through_the_record_types_the_readers_parse(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _run(path, [call_text("lookup", key="bad"), call_text("lookup", key="x"), "answer"])
    records = read_lines(path)
    kinds = {"run_start": RunStart, "step": TraceStep, "run_end": RunEnd}
    assert [r["type"] for r in records] == ["run_start", "step", "step", "step", "run_end"]
    for raw in records:
        typed = parse_record(raw)
        assert type(typed) is kinds[raw["type"]]
        # Every field written is a field of the type, in its order, and nothing else.
        assert typed is not None and list(raw) == ["t", *typed.to_json()] and {"t": raw["t"], **typed.to_json()} == raw


def test_read_trace_gives_the_loop_records_typed_and_skips_other_types(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _run(path, ["answer"])
    w = TraceWriter(path)
    w.write({"type": "note", "n": 1})  # a type the loop does not write: a line, not a record
    w.close()
    assert [r["type"] for r in read_lines(path)] == ["run_start", "step", "run_end", "note"]
    records = read_trace(path)
    assert [type(r) for r in records] == [RunStart, TraceStep, RunEnd]
    assert isinstance(records[1], TraceStep) and records[1].text == "answer"
    assert isinstance(records[2], RunEnd) and records[2].stop_reason == "answered"


def test_a_steps_info_reads_typed_and_writes_back_as_it_was() -> None:
    # As a server step wrote it before StepInfo: the key order, a null and an unknown key kept.
    info = {"decision": "call", "call_mass": 0.61, "server": None, "dialect": "llama.cpp", "attempts": 1,
            "usage": "server", "constraint": None, "kv_reuse_lost": 3, "an_older_key": [1]}
    step = parse_record({"type": "step", "info": info})
    assert isinstance(step, TraceStep) and step.info.kv_reuse_lost == 3 and step.info.decision == "call"
    assert json.dumps(step.to_json()["info"]) == json.dumps(info)
    assert TraceStep().to_json()["info"] == {}
    with pytest.raises(ValueError):  # a known key of the wrong type fails its line
        parse_record({"type": "step", "info": {"repeat_guard": "read_file{}"}})


def test_summarize_over_several_traces(tmp_path: Path) -> None:
    a, b, c, torn = (tmp_path / f"{n}.jsonl" for n in "abcd")
    _run(a, [call_text("lookup", key="x"), "answer"])  # 2 steps, answered
    _run(b, [call_text("lookup", key="bad"), call_text("lookup", key="y"), "answer"])  # 3 steps
    _run(c, [call_text("lookup", key=str(i)) for i in range(5)] + ["forced"], max_steps=2)
    # A killed run: its start and first step made it to disk, then a torn line.
    _run(torn, [call_text("lookup", key="bad"), "answer"])
    lines = torn.read_text().splitlines()
    torn.write_text("\n".join(lines[:2]) + "\n" + lines[2][:20])
    (tmp_path / "empty.jsonl").write_text("")

    st = summarize([a, b, c, torn, tmp_path / "empty.jsonl"])
    d = st.to_dict()
    assert d["runs"] == 4 and d["unfinished_traces"] == 1
    assert sorted(st.steps) == [2, 2, 3]
    assert d["steps_median"] == 2 and d["steps_mean"] == pytest.approx(7 / 3, abs=0.01)
    assert d["stop_reasons"] == {"answered": 2, "max_steps": 1, "unfinished": 1}
    assert d["stop_reason_pct"] == {"answered": 50.0, "max_steps": 25.0, "unfinished": 25.0}
    assert d["cut_off_runs"] == 2
    assert d["tool_calls"] == {"lookup": 6}
    assert d["tool_failures"] == {"lookup": 2}
    assert d["prompt_tokens_evaluated"] < d["prompt_tokens_sent"]
    json.dumps(d)


def test_summarize_of_nothing() -> None:
    d = summarize([]).to_dict()
    assert d["runs"] == 0 and d["steps_mean"] is None and d["stop_reason_pct"] == {}


# -- damaged traces: read back without a crash, whatever is in them ---------------------------


def test_damaged_lines_are_skipped_and_the_whole_records_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _run(path, [call_text("lookup", key="x"), "answer"])
    good = path.read_bytes()
    damaged = [
        b"\xff\xfe\x00 not text at all",
        b"[1, 2]",
        b'"a string"',
        b"null",
        b'{"type": 5}',
        b'{"type": "step", "calls": "x", "results": 3}',
        b'{"type": "step", "results": [{"name": 1}]}',
        b'{"type": "run_end", "stop_reason": null, "usage": "x"}',
        b'{"type": "run_start", "task": 3, "tools": [1]}',
        b'{"type": "step", "prompt_tokens": "12"}',
        b"[" * 100_000,
    ]
    path.write_bytes(b"\n".join(damaged[:5]) + b"\n" + good + b"\n".join(damaged[5:]) + b"\n")
    records = read_lines(path)
    assert [r["type"] for r in records] == ["run_start", "step", "step", "run_end"]
    assert [type(r) for r in read_trace(path)] == [RunStart, TraceStep, TraceStep, RunEnd]
    # A stray invalid byte inside a string does not cost the record.
    path.write_bytes(b'{"type": "run_start", "task": "caf\xe9"}\n')
    assert read_lines(path) == [{"type": "run_start", "task": "caf\ufffd"}]


SCALAR = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6)
KEYS = st.sampled_from(["id", "name", "call_id", "content", "error", "arguments", "repeat_guard", "total_tokens"])
JSON = SCALAR | st.lists(SCALAR, max_size=3) | st.dictionaries(KEYS, SCALAR, max_size=3)
FIELDS = ["task", "tools", "model", "step", "text", "calls", "results", "info", "prompt_tokens",
          "finish_reason", "error", "stop_reason", "usage", "steps", "answer", "message", "seconds"]
RECORD = st.fixed_dictionaries(
    {"type": st.sampled_from(["run_start", "step", "run_end", "other"])},
    optional={k: JSON | st.lists(st.dictionaries(KEYS, JSON, max_size=3), max_size=2) for k in FIELDS},
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(RECORD | JSON, max_size=6), st.binary(max_size=40))
def test_any_json_lines_and_bytes_read_back_and_summarise_without_a_crash(lines: list[object], junk: bytes) -> None:
    import tempfile

    from localagent.cli.stats import format_stats, format_trace

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        path.write_bytes("\n".join(json.dumps(x) for x in lines).encode() + b"\n" + junk)
        read_lines(path)
        format_trace(read_trace(path))
        format_stats(summarize([path]).to_dict())
