"""Run tasks through exactly the code path of ``localagent run``: the agent from
``assemble`` (the same loop, config, decoder and tools), writes approved as ``yes=True``
approves them, each task in a fresh folder, the model loaded once."""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ...assemble import assemble, default_config, workspace_setup
from ...backends.base import Backend
from ...loop import AgentConfig
from ...policy import PATH_ERRORS
from .check import FAILURES, check, snapshot
from .suite import Task


@dataclass
class TaskRun:
    """One task's run and its check."""

    id: str
    kind: str
    success: bool
    failure: str | None
    stop_reason: str
    steps: int
    tokens: int  # evaluated prompt + generated
    generated: int
    seconds: float
    answer: str
    calls: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    wrong_paths: int = 0  # calls answered with a path error (not found, not a file or folder)


def run_task(backend: Backend, task: Task, config: AgentConfig | None = None) -> TaskRun:
    """Run one task in a fresh workspace and check it."""
    with tempfile.TemporaryDirectory(prefix="localagent-task-") as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        task.materialize(root)
        before = snapshot(root)
        agent = assemble(backend, workspace_setup(root, yes=True), config or default_config())
        t0 = time.monotonic()
        result = agent.run(task.prompt, trace=Path(tmp) / "trace.jsonl")
        seconds = time.monotonic() - t0
        after = snapshot(root)
    results = [(not r.is_error, r.content) for rec in result.records for r in rec.results]
    out = check(task, result.answer, not result.forced, results, before, after)
    calls = [f"{c.name}({_args(c.arguments)})" for rec in result.records for c in rec.calls]
    return TaskRun(
        task.id, task.kind, out.success, out.failure, result.stop_reason.value, result.steps,
        result.usage.total, result.usage.completion_tokens, round(seconds, 2), result.answer[:300], calls, out.extra,
        sum(r.error is not None and r.error.kind in PATH_ERRORS for rec in result.records for r in rec.results),
    )


def _args(arguments: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return text if len(text) <= 120 else text[:119] + "…"


def run_tasks(
    backend: Backend,
    tasks: list[Task],
    config: AgentConfig | None = None,
    on_done: Callable[[TaskRun], None] | None = None,
) -> list[TaskRun]:
    """Every task in order; ``on_done`` after each (a progress bar, a log line)."""
    runs = []
    for t in tasks:
        runs.append(run_task(backend, t, config))
        if on_done:
            on_done(runs[-1])
    return runs


def summarize(runs: list[TaskRun]) -> dict[str, Any]:
    """Success per kind and overall, mean steps, tokens and seconds, stop reasons and
    failure classes."""
    n = len(runs) or 1
    kinds: dict[str, list[TaskRun]] = {}
    for r in runs:
        kinds.setdefault(r.kind, []).append(r)
    return {
        "tasks": len(runs),
        "success": sum(r.success for r in runs),
        "success_rate": round(sum(r.success for r in runs) / n, 4),
        "per_kind": {
            k: {"tasks": len(v), "success": sum(r.success for r in v), "rate": round(sum(r.success for r in v) / len(v), 4)}
            for k, v in kinds.items()
        },
        "mean_steps": round(sum(r.steps for r in runs) / n, 2),
        "mean_tokens": round(sum(r.tokens for r in runs) / n, 1),
        "mean_seconds": round(sum(r.seconds for r in runs) / n, 2),
        "stop_reasons": dict(Counter(r.stop_reason for r in runs)),
        "hit_a_wrong_path": sum(r.wrong_paths > 0 for r in runs),
        "hit_a_wrong_path_and_succeeded": sum(r.wrong_paths > 0 and r.success for r in runs),
        "failures": {f: c for f in FAILURES if (c := sum(r.failure == f for r in runs))},
    }


def report(runs: list[TaskRun], meta: dict[str, Any]) -> dict[str, Any]:
    """The whole record of a suite run: what ran, the summary, every task."""
    return {**meta, "summary": summarize(runs), "runs": [asdict(r) for r in runs]}
