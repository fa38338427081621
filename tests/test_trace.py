"""Trace files: written line by line, read back, summarised over many runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localagent.backends.fake import FakeBackend, call_text
from localagent.errors import ConfigError
from localagent.loop import Agent, AgentConfig
from localagent.stops import Limits
from localagent.tools import tool
from localagent.trace import TraceWriter, default_trace_dir, new_trace_path, read_trace, summarize


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
    assert [r["n"] for r in read_trace(path)] == [1]
    w.write({"type": "b", "obj": Path("x")})  # non-JSON values become strings
    w.close()
    w.write({"type": "dropped"})
    recs = read_trace(path)
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
        read_trace(tmp_path / "missing.jsonl")


def test_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"type": "run_start"}\n\n{"type": "step", "st')
    assert read_trace(path) == [{"type": "run_start"}]


def test_default_trace_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOCALAGENT_TRACES", str(tmp_path))
    assert default_trace_dir() == tmp_path
    p = new_trace_path()
    assert p.parent == tmp_path and p.name.startswith("run-") and p.suffix == ".jsonl"


def _run(path: Path, replies: list[str], max_steps: int = 12) -> None:
    agent = Agent(FakeBackend.scripted(replies), [lookup], config=AgentConfig(limits=Limits(max_steps=max_steps)))
    agent.run("task", trace=path)


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
