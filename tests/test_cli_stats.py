"""``localagent stats`` and ``localagent trace show`` on traces of scripted runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from localagent.backends.base import Generation
from localagent.backends.fake import FakeBackend, call_text
from localagent.loop import Agent, AgentConfig
from localagent.stops import Limits
from localagent.tools import tool


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    if key == "bad":
        raise KeyError(key)
    return f"value of {key} " + "x " * 2000


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from localagent.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("traces")
    runs = [
        ["Looking it up.\n" + call_text("lookup", key="a"), "The value is a."],
        [call_text("lookup", key="bad"), "<tool_call>{oops}</tool_call>", "Gave up."],
        [call_text("lookup", key=str(i)) for i in range(3)] + ["partial"],
        [call_text("lookup", key="z"), Generation(text="", finish_reason="error", error="boom")],
    ]
    paths = []
    for i, replies in enumerate(runs):
        cfg = AgentConfig(limits=Limits(max_steps=2), max_result_tokens=100)
        Agent(FakeBackend.scripted(replies), [lookup], config=cfg).run(f"task {i}", trace=d / f"{i}.jsonl")
        paths.append(d / f"{i}.jsonl")
    return paths


def test_stats_json(traces: list[Path]) -> None:
    p = cli("stats", "--json", *map(str, traces))
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["runs"] == 4
    assert d["stop_reasons"] == {"answered": 1, "max_steps": 2, "backend_error": 1}
    assert d["stop_reason_pct"]["max_steps"] == 50.0
    assert d["tool_failures"] == {"lookup": 1, "(format)": 1}


def test_stats_readable(traces: list[Path]) -> None:
    p = cli("stats", *map(str, traces))
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("runs: 4\n")
    assert "stop reasons (3 of 4 runs cut off):" in out
    assert "max_steps" in out and "50.0%" in out and "backend_error" in out
    assert any(line.split()[:2] == ["lookup", "5"] for line in out.splitlines())
    assert "from the KV cache" in out


def test_trace_show_replays_a_run(traces: list[Path]) -> None:
    p = cli("trace", "show", str(traces[0]))
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("task: task 0\n")
    assert "── step 1" in out and "── step 2" in out
    assert "Looking it up." in out
    assert '→ lookup({"key": "a"})' in out
    assert "← value of a" in out and "tokens truncated]" in out
    assert "stop: answered (the model answered) · 2 steps" in out
    assert out.rstrip().endswith("The value is a.")


def test_trace_show_errors_and_forced_stops(traces: list[Path]) -> None:
    out = cli("trace", "show", str(traces[1])).stdout
    assert "✗ lookup: error (tool_exception): 'lookup' raised KeyError" in out
    assert "✗ (format): error (format_error)" in out
    assert "stop: max_steps" in out and "[stopped: max_steps]" in out
    out = cli("trace", "show", str(traces[3])).stdout
    assert "✗ model error: boom" in out and "stop: backend_error (boom)" in out


def test_trace_show_a_run_cut_short(tmp_path: Path, traces: list[Path]) -> None:
    lines = traces[0].read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines[:2]) + "\n" + lines[2][:15])
    p = cli("trace", "show", str(torn))
    assert p.returncode == 0, p.stderr
    assert "── step 1" in p.stdout and "── step 2" not in p.stdout
    assert "stop: none recorded (the run was cut short)" in p.stdout


def test_missing_and_empty_files_give_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    for args in (("trace", "show", str(missing)), ("stats", str(missing))):
        p = cli(*args)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr == f"localagent: error: cannot read trace {missing}: No such file or directory\n"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    p = cli("trace", "show", str(empty))
    assert p.returncode == 2 and p.stderr == f"localagent: error: {empty} holds no trace records\n"


def test_lost_kv_reuse_is_counted_and_shown(tmp_path: Path) -> None:
    class Counting(FakeBackend):
        """Numbers the messages at the top: every turn re-renders the earlier ones."""

        def _render(self, messages, tools):  # type: ignore[no-untyped-def]
            return [f"[{len(messages)}]"] + super()._render(messages, tools)

    fake = Counting.scripted([call_text("lookup", key="a"), call_text("lookup", key="b"), "done"])
    fake.reuses_kv_cache = True  # type: ignore[attr-defined]
    path = tmp_path / "t.jsonl"
    Agent(fake, [lookup], config=AgentConfig(max_result_tokens=50)).run("task", trace=path)
    d = json.loads(cli("stats", "--json", str(path)).stdout)
    assert d["kv_reuse_lost_steps"] == 2 and d["kv_reuse_lost_tokens"] > 0
    assert "KV reuse lost in 2 steps" in cli("stats", str(path)).stdout
    assert "tokens of earlier turns evaluated again" in cli("trace", "show", str(path)).stdout
