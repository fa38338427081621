"""The task suite in-process and through llama-cpp-python's server, same model, same
tasks, side by side in one run: the agent should be as good through a server.

    flock /tmp/model.lock python evals/server_parity.py --model qwen2.5-coder-0.5b --split dev --per-kind 2

The server is started on the model (localagent/evaluation/llama_server.py), the suite run through it as
``eval-tasks --base-url`` runs it (with ``--before``, a second time as the server path
was before: call or prose left to the grammar, the tools described in our own prompt),
the server stopped, then the suite run in-process.
The record (both reports, the tasks where they differ) goes to
evals/results/server-parity-SPLIT-MODEL.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from localagent.assemble import default_config
from localagent.backends import load_llama
from localagent.backends.server import ServerBackend
from localagent.cli.tasks import select
from localagent.evaluation.llama_server import llama_cpp_server
from localagent.evaluation.tasks.generate import generate
from localagent.evaluation.tasks.runner import TaskRun, report, run_tasks
from localagent.stops import Limits

RESULTS = Path(__file__).resolve().parent / "results"


def _log(label: str) -> Any:
    def done(r: TaskRun) -> None:
        mark = "ok" if r.success else f"{r.failure}: {' '.join(r.answer.split())[:70]!r}"
        print(f"[{label}] {r.id} {r.steps} steps {r.seconds:.1f}s {mark}", file=sys.stderr, flush=True)

    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--per-kind", type=int, default=2)
    ap.add_argument("--kind", action="append")
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--max-steps", type=int, default=12)
    ap.add_argument("--before", action="store_true", help="also through the server without the first-token decision and the template's tools")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    tasks = select(generate(a.split), a.kind, a.per_kind)
    config = default_config(limits=Limits(max_steps=a.max_steps))
    meta = {"split": a.split, "per_kind": a.per_kind, "max_steps": a.max_steps}
    plain: dict[str, Any] | None = None
    with llama_cpp_server(a.model, n_ctx=a.ctx) as server:
        url = server.url
        backend = ServerBackend(url, n_ctx=a.ctx, timeout=300.0)
        served = report(run_tasks(backend, tasks, config, on_done=_log("server")), {**meta, "model": backend.name})
        if a.before:
            backend = ServerBackend(url, n_ctx=a.ctx, timeout=300.0, first_token=False, template_tools=False)
            plain = report(run_tasks(backend, tasks, config, on_done=_log("server before")), {**meta, "model": backend.name})
    local_backend = load_llama(a.model, n_ctx=a.ctx, progress=False)
    local = report(run_tasks(local_backend, tasks, config, on_done=_log("local")), {**meta, "model": local_backend.name})
    ok = {r["id"]: r["success"] for r in local["runs"]}
    differ = [{"id": r["id"], "in_process": ok[r["id"]], "server": r["success"]} for r in served["runs"] if ok[r["id"]] != r["success"]]
    gap = round(100 * (local["summary"]["success_rate"] - served["summary"]["success_rate"]), 1)
    out = {"model": a.model, **meta, "tasks": len(tasks), "gap_points": gap, "differ": differ, "in_process": local, "server": served}
    if plain is not None:
        out["server_before"] = plain
    path = a.out or RESULTS / f"server-parity-{a.split}-{a.model}.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    arms = [("in-process", local), ("llama-cpp-python server", served)] + [("server, as before", plain)] * (plain is not None)
    for label, rep in arms:
        assert rep is not None
        s = rep["summary"]
        print(f"{label:<26} {s['success']}/{s['tasks']} ({s['success_rate']:.1%}), {s['mean_steps']} steps, {s['mean_seconds']} s a task")
    print(f"gap {gap} points; {len(differ)} tasks differ; written to {path}")


if __name__ == "__main__":
    main()
