"""What the A/B scripts share: the tasks named on the command line, and each variant run
over all of them in one process, one run each, the results as JSON on stdout.

    python evals/ab_X.py VARIANT,VARIANT dev FILE.jsonl ... [--kinds=KIND,KIND]

"dev" is the generated dev split; any other name is a saved task file."""
import json
import sys
from collections.abc import Callable
from pathlib import Path

from localagent.loop import AgentConfig
from localagent.backends import load_llama
from localagent.evaluation.tasks.generate import generate
from localagent.evaluation.tasks.runner import run_task, summarize
from localagent.evaluation.tasks.suite import Task, load_tasks


def tasks_from_argv(argv: list[str]) -> tuple[list[str], list[Task]]:
    """The variant names and the tasks the arguments name."""
    args = [a for a in argv if not a.startswith("--kinds=")]
    kinds = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--kinds=")), None)
    tasks = [t for f in args[1:] for t in (generate("dev") if f == "dev" else load_tasks(Path(f)))]
    return args[0].split(","), [t for t in tasks if kinds is None or t.kind in kinds]


def run_variants(names: list[str], tasks: list[Task], setup: Callable[[str], AgentConfig]) -> None:
    """Each variant over every task, on the default model loaded once; ``setup`` puts the
    variant in place and returns the config to run it with."""
    backend = load_llama(None)
    out = {}
    for name in names:
        cfg, runs = setup(name), []
        for t in tasks:
            r = run_task(backend, t, cfg)
            runs.append(r)
            status = "ok" if r.success else f"{r.failure}: {r.answer[:80]!r}"
            print(name, r.id, r.steps, f"{r.seconds:.1f}", status, file=sys.stderr, flush=True)
        out[name] = {"summary": summarize(runs), "runs": [r.to_dict() if hasattr(r, "to_dict") else r.__dict__ for r in runs]}
    json.dump(out, sys.stdout, default=str)
