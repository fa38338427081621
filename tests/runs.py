"""A run on the scripted fake model, its trace read back, and what every run must satisfy
whatever its end. Shared by the loop and fault tests (fixtures over these: conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from localagent.backends.fake import FakeBackend
from localagent.loop import Agent, AgentConfig, Events, RunResult
from localagent.stops import StopReason
from localagent.tools import Tool
from localagent.trace import read_lines

Trace = list[dict[str, Any]]
Traced = Callable[..., tuple[RunResult, Trace]]  # the conftest fixture ``traced``


def traced_run(agent: Agent, task: str, path: Path, events: Events | None = None) -> tuple[RunResult, Trace]:
    """Run ``task`` into a fresh trace at ``path``; the result and the trace, invariants checked."""
    path.unlink(missing_ok=True)  # the writer appends
    result = agent.run(task, trace=path, events=events)
    trace = read_lines(path)
    assert_run_invariants(result, trace)
    return result, trace


def fake_run(
    folder: Path,
    replies: list[Any],
    tools: list[Tool],
    *,
    task: str = "the task",
    backend: dict[str, Any] | None = None,
    **config: Any,
) -> tuple[RunResult, Trace, FakeBackend]:
    """An agent on the fake scripted with ``replies`` (``backend``: more of its settings), run
    to its stop with the trace in ``folder``."""
    fake = FakeBackend.scripted(replies, **(backend or {}))
    result, trace = traced_run(Agent(fake, tools, config=AgentConfig(**config)), task, folder / "trace.jsonl")
    return result, trace, fake


def assert_run_invariants(result: RunResult, trace: Trace) -> None:
    """One start and one end carrying the stop; steps numbered 1..n as the result counts them;
    every call answered by exactly one result; the steps account for the tokens used."""
    assert [r["type"] for r in trace if r["type"] != "step"] == ["run_start", "run_end"], trace
    assert trace[0]["type"] == "run_start" and trace[-1]["type"] == "run_end"
    end, steps = trace[-1], [r for r in trace if r["type"] == "step"]
    assert end["stop_reason"] == result.stop_reason.value and end["steps"] == result.steps
    assert end["answer"] == result.answer and end["usage"] == result.usage.to_dict()
    assert [s["step"] for s in steps] == list(range(1, result.steps + 1))
    assert [r.step for r in result.records] == [s["step"] for s in steps]
    for s, rec in zip(steps, result.records):
        ids = [c["id"] for c in s["calls"]]
        assert ids == [c.id for c in rec.calls] and len(set(ids)) == len(ids)
        assert [r["call_id"] for r in s["results"]][: len(ids)] == ids
        assert len(s["results"]) == len(ids) + len(s["parse_errors"])
    called = [c.id for m in result.history if m.role == "assistant" for c in m.tool_calls]
    answered = [m.tool_call_id for m in result.history if m.role == "tool"]
    assert len(answered) == len(set(answered)) and len(called) == len(set(called))
    # An interrupt can cut the turn off before its results join the history (the record has them).
    assert set(called) <= set(answered) or result.stop_reason is StopReason.INTERRUPTED
    u = result.usage
    used = [
        (u.prompt_tokens_sent, sum(s["prompt_tokens"] for s in steps)),
        (u.prompt_tokens_evaluated, sum(s["prompt_tokens_evaluated"] for s in steps)),
        (u.completion_tokens, sum(s["completion_tokens"] for s in steps)),
    ]
    # The answer written after a forced stop is generated outside any step.
    assert all(total >= stepped for total, stepped in used) if result.forced else all(a == b for a, b in used), used
