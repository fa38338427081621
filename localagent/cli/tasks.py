"""``localagent eval-tasks``: the task suite, run through the code path of ``run``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from tqdm import tqdm

from ..errors import ConfigError
from ..constraint.grammar import ENGINES
from .options import API_KEY, BASE_URL, CTX, ENGINE, MAX_STEPS, MODEL, N_GPU_LAYERS, SERVER_DIALECT, SERVER_TIMEOUT, json_option


def eval_tasks(
    suite: Annotated[Optional[Path], typer.Argument(metavar="[SUITE.jsonl]", help="A task file; default: the generated suite of --split.")] = None,
    split: Annotated[str, typer.Option("--split", help="dev (for choosing anything), or test, test2 ... test11 (for reporting only; each newer one held out from every choice made before it; test11 is the latest).")] = "dev",
    model: Optional[str] = MODEL,
    kind: Annotated[Optional[list[str]], typer.Option("--kind", help="Only tasks of this kind (repeatable).")] = None,
    per_kind: Annotated[Optional[int], typer.Option("--per-kind", min=1, help="The first N tasks of each kind (a stratified sample).")] = None,
    as_json: bool = json_option("the summary and every task's run"),
    max_steps: int = MAX_STEPS,
    n_ctx: int = CTX,
    n_gpu_layers: int = N_GPU_LAYERS,
    engine: str = ENGINE,
    parallel: Annotated[Optional[bool], typer.Option("--parallel-calls/--one-call", help="Several calls a turn, or one (default: the agent's).")] = None,
    base_url: Optional[str] = BASE_URL,
    api_key: Optional[str] = API_KEY,
    server_dialect: str = SERVER_DIALECT,
    server_timeout: float = SERVER_TIMEOUT,
) -> None:
    """Run everyday tasks in generated workspaces and report success per kind."""
    from ..assemble import default_config
    from ..loop import AgentConfig
    from ..backends import load_llama, load_server
    from ..stops import Limits
    from ..evaluation.tasks.generate import KINDS, SEEDS, generate
    from ..evaluation.tasks.runner import TaskRun, report, run_tasks
    from ..evaluation.tasks.suite import load_tasks

    if engine not in ENGINES:
        raise ConfigError(f"--engine must be gbnf or llguidance, not {engine!r}")
    if split not in SEEDS:
        raise ConfigError(f"--split must be one of {', '.join(SEEDS)}, not {split!r}")
    unknown = sorted(set(kind or ()) - set(KINDS))
    if unknown:
        raise ConfigError(f"--kind {unknown[0]!r} is not a task kind; kinds: {', '.join(KINDS)}")
    tasks = load_tasks(suite) if suite is not None else generate(split)
    tasks = select(tasks, kind, per_kind)
    if base_url:  # the same suite through a server, as `run --base-url` would run it
        backend = load_server(base_url, model=model, api_key=api_key, dialect=server_dialect, n_ctx=n_ctx, timeout=server_timeout)
    else:
        backend = load_llama(model, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, progress=not as_json)
    bar = tqdm(total=len(tasks), desc="tasks", unit="task", file=sys.stderr, disable=as_json or None)

    def done(r: TaskRun) -> None:
        mark = "ok" if r.success else f"{r.failure}: {' '.join(r.answer.split())[:80]!r}"
        (bar.write if not bar.disable else lambda s, file: print(s, file=file, flush=True))(
            f"{r.id} {r.steps} steps {r.seconds:.1f}s {mark}", file=sys.stderr
        )
        bar.update(1)

    with bar:
        runs = run_tasks(backend, tasks, default_config(limits=Limits(max_steps=max_steps), engine=ENGINES[engine], **_parallel(parallel)), on_done=done)
    meta = {"model": backend.name, "split": split if suite is None else str(suite), "max_steps": max_steps, "engine": engine}
    out = report(runs, meta | {"parallel_calls": backend.decides_each_call if parallel is None else parallel})
    typer.echo(json.dumps(out, ensure_ascii=False) if as_json else format_summary(out["summary"]))


def _parallel(parallel: bool | None) -> dict[str, bool]:
    return {} if parallel is None else {"parallel_calls": parallel}


def select(tasks: list, kinds: list[str] | None, per_kind: int | None) -> list:
    """The tasks of ``kinds`` (all when None), the first ``per_kind`` of each."""
    seen: dict[str, int] = {}
    out = []
    for t in tasks:
        if kinds and t.kind not in kinds:
            continue
        seen[t.kind] = seen.get(t.kind, 0) + 1
        if per_kind is None or seen[t.kind] <= per_kind:
            out.append(t)
    return out


def format_summary(s: dict) -> str:
    """The summary as a table a person reads."""
    lines = [f"{'kind':<20} {'tasks':>5} {'right':>5} {'rate':>7}"]
    for k, v in s["per_kind"].items():
        lines.append(f"{k:<20} {v['tasks']:>5} {v['success']:>5} {v['rate']:>7.1%}")
    lines.append(f"{'overall':<20} {s['tasks']:>5} {s['success']:>5} {s['success_rate']:>7.1%}")
    lines.append(f"mean steps {s['mean_steps']}, tokens {s['mean_tokens']}, seconds {s['mean_seconds']}")
    lines.append("stop reasons: " + ", ".join(f"{k} {v}" for k, v in s["stop_reasons"].items()))
    lines.append("failures: " + (", ".join(f"{k} {v}" for k, v in s["failures"].items()) or "none"))
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    """Add ``eval-tasks`` to the top-level app."""
    app.command("eval-tasks")(eval_tasks)
