"""Process faults: ``localagent run`` stopped by SIGINT (Ctrl-C) or SIGTERM mid-run, or
killed outright, on the scripted fake model (tests/fake_cli.py).

A signal while the model writes or while a tool runs ends the run with exit code 130,
the partial answer printed, and a trace whose every line is whole and whose last record
is ``run_end``. A run killed with SIGKILL cannot write its end; the next run on the same
trace file writes its own records whole after the torn line, and the tools that read
traces count the killed run as unfinished. (The real-model version is in
test_real_faults.py; the caches a kill could leave half-written are tested in
test_prefix_cache.py and test_provision.py.)
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from localagent.backends.fake import call_text
from localagent.trace import read_lines
from fake_cli import FAKE_CLI, fake_env

STREAMED = "The answer so far is that the sea is wide and deep and blue and very old indeed"

SLOW_TOOL = '''
import os, time
from pathlib import Path
from localagent import tool

@tool(timeout=60, irreversible=False)  # stated: a tool from a file that says nothing asks for approval
def slow_count(n: int) -> str:
    """Count slowly."""
    Path(os.environ["FAKE_STARTED"]).touch()
    time.sleep(30)
    return str(n)
'''


def _start(tmp_path: Path, replies: list[Any], *flags: str) -> tuple[subprocess.Popen[str], Path]:
    trace = tmp_path / "run.jsonl"
    env = fake_env(tmp_path, replies)
    argv = [*FAKE_CLI, "run", "Count to three", "--root", str(tmp_path / "root"), "--trace", str(trace)]
    (tmp_path / "root").mkdir(exist_ok=True)
    proc = subprocess.Popen(
        argv + list(flags), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return proc, trace


def _when_started(tmp_path: Path, proc: subprocess.Popen[str], then: float) -> None:
    end = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert proc.poll() is None and time.monotonic() < end, proc.communicate()
        time.sleep(0.02)
    time.sleep(then)


def _whole_trace(trace: Path) -> list[dict[str, Any]]:
    lines = [x for x in trace.read_text(encoding="utf-8").split("\n") if x]
    records = read_lines(trace)
    assert len(records) == len(lines), "every line of the trace is a whole record"
    return records


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_model_writes_keeps_the_partial_answer_and_a_complete_trace(
    tmp_path: Path, sig: signal.Signals
) -> None:
    proc, trace = _start(tmp_path, [{"text": STREAMED, "slow": 0.15}])
    _when_started(tmp_path, proc, then=0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    first, partial = out.split("\n", 1)
    assert first.startswith("[stopped: interrupted]")
    assert partial.strip() and STREAMED.startswith(partial.strip()) and partial.strip() != STREAMED
    records = _whole_trace(trace)
    assert [r["type"] for r in records] == ["run_start", "step", "run_end"]
    step, end = records[1], records[2]
    assert step["finish_reason"] == "error" and step["error"] == "interrupted while generating"
    assert step["text"].strip() == partial.strip()
    assert end["stop_reason"] == "interrupted" and end["answer"] == out.strip()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_a_tool_runs_answers_the_call_and_ends_the_trace(tmp_path: Path, sig: signal.Signals) -> None:
    tools = tmp_path / "slow_tools.py"
    tools.write_text(SLOW_TOOL)
    replies = ["Counting.\n" + call_text("slow_count", n=3), "never reached"]
    proc, trace = _start(tmp_path, replies, "--tools", str(tools), "--json")
    _when_started(tmp_path, proc, then=0.2)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)  # the tool sleeps on in a thread that dies with the process
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    result = json.loads(out)
    assert result["stop_reason"] == "interrupted" and result["answer"].endswith("Counting.")
    records = _whole_trace(trace)
    assert [r["type"] for r in records] == ["run_start", "step", "run_end"]
    [call], [answer] = records[1]["calls"], records[1]["results"]
    assert answer["call_id"] == call["id"] and answer["error"]["kind"] == "interrupted"
    assert records[2]["stop_reason"] == "interrupted"


def test_after_a_kill_the_next_run_writes_whole_records_and_the_killed_run_counts_as_unfinished(
    tmp_path: Path,
) -> None:
    proc, trace = _start(tmp_path, [_call("list_dir", path="."), {"text": STREAMED, "slow": 0.15}])
    _when_started(tmp_path, proc, then=0.3)
    proc.kill()  # SIGKILL: nothing can be written any more
    proc.communicate(timeout=30)
    killed = read_lines(trace)
    assert [r["type"] for r in killed] == ["run_start", "step"]  # every finished step is on disk
    with trace.open("a") as f:
        f.write('{"type": "step", "step": 2, "text": "torn by the ki')  # as if killed mid-write

    (tmp_path / "started").unlink()
    proc, _ = _start(tmp_path, ["Done."])
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    records = _whole_trace_after_torn_line(trace)
    assert [r["type"] for r in records] == ["run_start", "step", "run_start", "step", "run_end"]
    assert records[-1]["answer"] == "Done."

    cli = FAKE_CLI
    stats = subprocess.run(cli + ["stats", str(trace), "--json"], capture_output=True, text=True, timeout=60)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["unfinished_traces"] == 1
    shown = subprocess.run(cli + ["trace", "show", str(trace)], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr


def _whole_trace_after_torn_line(trace: Path) -> list[dict[str, Any]]:
    lines = [x for x in trace.read_text(encoding="utf-8").split("\n") if x]
    records = read_lines(trace)
    assert len(lines) == len(records) + 1 and lines[2].startswith('{"type": "step", "step": 2, "text": "torn')
    return records


def _call(name: str, **arguments: Any) -> list[Any]:
    return [name, arguments]
