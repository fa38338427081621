"""Measure recovery from wrong paths on a real model; prints one JSON object.

    python evals/run_recovery.py --live-grammar never       > evals/results/recovery-plain.json
    python evals/run_recovery.py --live-grammar always      > evals/results/recovery-live.json
    python evals/run_recovery.py --live-grammar after_error > evals/results/recovery-after-error.json

See localagent/evaluation/recovery.py for the tasks and what "recovered" means.
"""

from __future__ import annotations

import argparse
import json
import sys

from localagent.backends import load_llama
from localagent.evaluation.recovery import TASKS, run_recovery


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--live-grammar", choices=["always", "after_error", "never"], default="after_error",
                    help="state-aware grammars on every step, for a tool once a call to it failed on a "
                    "wrong path (the default), or never (plain validation)")
    ap.add_argument("--model", default=None, help="model id or .gguf path (default: the default model)")
    ap.add_argument("--max-steps", type=int, default=6)
    ap.add_argument("--only", default=None, help="comma-separated task ids")
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--n-gpu-layers", type=int, default=0)
    args = ap.parse_args()

    tasks = TASKS
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in TASKS if t.id in wanted]
    backend = load_llama(args.model, n_ctx=args.n_ctx, n_gpu_layers=args.n_gpu_layers, progress=False)

    def show(r: dict) -> None:  # progress on stderr; the JSON object alone on stdout
        mark = "ok " if r["recovered"] else "NO "
        first = "error first" if r["first_call_failed"] else ""
        print(f"{mark}{r['id']:<18} steps={r['steps']} {r['stop_reason']:<10} {first}", file=sys.stderr, flush=True)

    live = {"always": True, "never": False}.get(args.live_grammar, args.live_grammar)
    out = run_recovery(backend, tasks, live_grammar=live, max_steps=args.max_steps, on_result=show)
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
