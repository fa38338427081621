"""Tool and process faults through the whole loop, on the scripted fake model.

Each faulty tool is called in one run: the loop goes on after each with a structured
error, every call id gets its answer, and the run still ends with the model's answer and
a complete trace. (Dispatch-level checks of the same faults are in test_dispatch.py.)
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from localagent.backends.fake import FakeBackend, call_text
from localagent.loop import Agent, AgentConfig, RunResult
from localagent.stops import Limits, StopReason
from localagent.tools import tool
from localagent.trace import TraceWriter, read_lines
from runs import Trace, fake_run

release = threading.Event()


@pytest.fixture(autouse=True)
def _release() -> Any:
    release.clear()
    yield
    release.set()


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() of this exception fails too")


def _nested(depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(depth):
        out = [out]
    return out


def _circular() -> dict[str, Any]:
    d: dict[str, Any] = {}
    d["self"] = d
    return d


RETURNS: dict[str, Any] = {
    "set": lambda: {1, 2},
    "object": lambda: object(),
    "bytes": lambda: b"\x00\xff" * 10,
    "circular": _circular,
    "deep": lambda: _nested(100_000),
    "huge_int": lambda: {"n": 10**5000},
    "megabytes": lambda: "many words " * 500_000,  # 5.5 MB
    "surrogate": lambda: "half a pair: \ud800",
}


@tool(max_retries=100)
def returns(kind: str) -> Any:
    """Return something awkward."""
    return RETURNS[kind]()


@tool(max_retries=100)
def raises(kind: str) -> str:
    """Raise something."""
    if kind == "value":
        raise ValueError("broken " * 200_000)  # a megabyte of message
    if kind == "bad_str":
        raise BadStr()
    if kind == "interrupt":
        raise KeyboardInterrupt  # inside the tool's thread: the tool's failure, not the user's Ctrl-C
    raise SystemExit(4)


@tool(timeout=0.2)
def hangs() -> str:
    """Never returns in time."""
    release.wait(10)
    print("too late")
    return "late"


@tool
def prints(where: str) -> str:
    """Print, then return."""
    print("out " * 5, file=sys.stdout if where == "out" else sys.stderr)
    return "printed"


@tool
def prints_and_raises() -> str:
    """Print, then raise."""
    print("working on it")
    raise RuntimeError("then failed")


TOOLS = [returns, raises, hangs, prints, prints_and_raises]
CALLS: list[tuple[str, dict[str, Any], str | None]] = [  # (tool, arguments, error kind or None)
    *[("returns", {"kind": k}, "tool_exception") for k in ("set", "object", "bytes", "circular", "deep", "huge_int")],
    ("returns", {"kind": "megabytes"}, None),
    ("returns", {"kind": "surrogate"}, None),
    *[("raises", {"kind": k}, "tool_exception") for k in ("value", "bad_str", "interrupt", "exit")],
    ("hangs", {}, "timeout"),
    ("prints", {"where": "out"}, None),
    ("prints", {"where": "err"}, None),
    ("prints_and_raises", {}, "tool_exception"),
]


def _run(tmp_path: Path, replies: list[Any], **config: Any) -> tuple[RunResult, Trace]:
    limits = Limits(max_steps=len(replies) + 1, error_limit=0, repeat_limit=0)  # no no-progress stop here
    result, trace, _ = fake_run(tmp_path, replies, TOOLS, task="faults", limits=limits, **config)
    return result, trace


def test_every_tool_fault_is_a_structured_result_and_the_loop_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replies = [call_text(name, **args) for name, args, _ in CALLS] + ["All done."]
    start = time.monotonic()
    result, trace = _run(tmp_path, replies, max_result_tokens=500)
    assert time.monotonic() - start < 10
    assert result.stop_reason is StopReason.ANSWERED and result.answer == "All done."
    steps = [r for r in trace if r["type"] == "step"]
    assert len(steps) == len(CALLS) + 1 and trace[-1]["type"] == "run_end"
    for (name, args, kind), step in zip(CALLS, steps):
        [call], [res] = step["calls"], step["results"]
        assert call["name"] == name and res["call_id"] == call["id"], step
        assert (res["error"] or {}).get("kind") == kind, (name, args, res["content"][:200])
        assert len(res["content"]) < 4000, (name, args)  # truncated or one line, never megabytes
        assert "Traceback" not in res["content"]
        if kind:
            assert res["content"].startswith(f"error ({kind}): ")
    by_kind = {(c[0], c[1].get("kind", c[1].get("where"))): s["results"][0] for c, s in zip(CALLS, steps)}
    assert "result is not serialisable: set" in by_kind[("returns", "set")]["content"]
    assert "[... truncated:" in by_kind[("returns", "megabytes")]["content"]
    assert "out out" in by_kind[("prints", "out")]["content"] and "out out" in by_kind[("prints", "err")]["content"]
    assert "working on it" in by_kind[("prints_and_raises", None)]["error"]["detail"]["printed"]
    assert "\ud800" in by_kind[("returns", "surrogate")]["content"]
    # every call id answered, once, in the history the model sees next
    ids = [c.id for m in result.history for c in m.tool_calls]
    answers = [m.tool_call_id for m in result.history if m.role == "tool"]
    assert ids == answers and len(set(ids)) == len(CALLS)
    captured = capsys.readouterr()
    assert "out out" not in captured.out + captured.err  # tools' prints never reach the terminal


def test_several_faulty_calls_in_one_turn_each_get_their_answer(tmp_path: Path) -> None:
    turn = "\n".join(call_text(name, **args) for name, args, _ in CALLS)
    result, trace = _run(tmp_path, [turn, "done"], parallel_calls=True)
    [step] = [r for r in trace if r["type"] == "step" and r["calls"]]
    assert [r["call_id"] for r in step["results"]] == [c["id"] for c in step["calls"]]
    assert [(r["error"] or {}).get("kind") for r in step["results"]] == [k for _, _, k in CALLS]
    assert result.stop_reason is StopReason.ANSWERED


# -- a tool that outlives its timeout ----------------------------------------------------

after_timeout: list[str] = []  # what the late tools did once released


@tool(timeout=0.2)
def late() -> str:
    """Wait past the timeout, then act and print."""
    release.wait(10)
    after_timeout.append("late went on")
    print("late output")
    return "late"


@tool(timeout=0.2)
def stubborn() -> str:
    """Wait past the timeout, swallow the stop, then print anyway."""
    try:
        release.wait(10)
    except BaseException:
        pass
    try:
        after_timeout.append("stubborn went on")
        print("stubborn output")
        print("stubborn error", file=sys.stderr)
    except BaseException:  # the stop fired here instead: the wait returned before it arrived
        pass
    return "stubborn"


def _wait_for_tool_threads() -> None:
    end = time.monotonic() + 5
    while any(t.name.startswith("tool-") for t in threading.enumerate()) and time.monotonic() < end:
        time.sleep(0.01)


def test_a_timed_out_tool_is_stopped_and_its_late_output_stays_captured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    after_timeout.clear()
    limits = Limits(max_steps=4, error_limit=0, repeat_limit=0)
    replies = [call_text("late"), call_text("stubborn"), "done"]
    agent = Agent(FakeBackend.scripted(replies), [late, stubborn], config=AgentConfig(limits=limits))
    result = agent.run("late", trace=tmp_path / "t.jsonl")
    assert [r.results[0].error.kind for r in result.records[:2]] == ["timeout", "timeout"]  # type: ignore[union-attr]
    release.set()
    _wait_for_tool_threads()
    # The plain tool was stopped where it stood: it neither acted nor printed after its
    # timeout. The one that swallowed the stop went on, but its prints stayed captured.
    assert after_timeout == ["stubborn went on"]
    captured = capsys.readouterr()
    assert "output" not in captured.out and "error" not in captured.err, captured


LATE_SCRIPT = '''
import contextlib, io, sys, time
from localagent.backends.fake import FakeBackend, call_text
from localagent.loop import Agent, AgentConfig
from localagent.stops import Limits
from localagent.tools import tool

@tool(timeout=0.3)
def sleeper() -> str:
    """Sleep in C past the timeout, then print."""
    time.sleep(1.0)
    print("LATE-OUT-sleeper")
    print("LATE-ERR-sleeper", file=sys.stderr)
    return "late"

@tool(timeout=0.3)
def spinner() -> str:
    """Spin in Python past the timeout, then print."""
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        pass
    print("LATE-OUT-spinner")
    return "late"

limits = Limits(max_steps=4, error_limit=0, repeat_limit=0)
agent = Agent(FakeBackend.scripted([call_text("sleeper"), call_text("spinner"), "done"]), [sleeper, spinner],
              config=AgentConfig(limits=limits))
with contextlib.redirect_stdout(io.StringIO()):  # a caller's redirection, ended before the late prints
    result = agent.run("late")
print("answer:", result.answer, [str(r.results[0].error.kind) for r in result.records if r.results])  # str: the value, not the member
time.sleep(1.5)  # the tools would print now
print("END")
'''


def test_late_output_of_timed_out_tools_never_reaches_the_terminal(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-c", LATE_SCRIPT], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["answer: done ['timeout', 'timeout']", "END"], p.stdout
    assert "LATE" not in p.stderr and "Traceback" not in p.stderr, p.stderr


# -- a trace file that a killed run left half-written ---------------------------------------


def test_a_run_appending_to_a_torn_trace_keeps_its_own_records_whole(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    TraceWriter(path).write({"type": "run_start", "task": "first"})
    with path.open("a") as f:
        f.write('{"type": "step", "step": 1, "text": "cut off by a SIG')  # killed mid-write
    agent = Agent(FakeBackend.scripted(["The answer."]), TOOLS, config=AgentConfig())
    agent.run("second", trace=path)
    records = read_lines(path)
    assert [r["type"] for r in records] == ["run_start", "run_start", "step", "run_end"]
    assert records[1]["task"] == "second" and records[-1]["stop_reason"] == "answered"
