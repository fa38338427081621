"""The search rules and the reworded change reminder, on and off, over the dev tasks (the dev
split, tasks-devx.jsonl, tasks-devp.jsonl), one process, one run each:

    python evals/ab_search_rules.py new,old dev evals/results/tasks-devx.jsonl evals/results/tasks-devp.jsonl > out.json

"old" turns off answer_after_find and read_search_hits and puts back the earlier
_ABOUT_WORKSPACE pattern and change reminder."""
import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from localagent import policy
from localagent.assemble import default_config
from localagent.backends import load_llama
from localagent.evaluation.tasks.generate import generate
from localagent.evaluation.tasks.suite import load_tasks
from localagent.evaluation.tasks.runner import run_task, summarize

variant_names = sys.argv[1].split(",")
files = sys.argv[2:]
tasks = []
for f in files:
    tasks += generate("dev") if f == "dev" else load_tasks(Path(f))
backend = load_llama(None)
NEW_ABOUT = policy._ABOUT_WORKSPACE
OLD_ABOUT = re.compile(r"\b(this|the|our|my)\s+(project|folder|repo|repository|directory|workspace|codebase|package|service|app)\b|\bin here\b|\bhere\b\s*\?", re.IGNORECASE)
OLD_NUDGE = "You already have the result of that call above. Now make the change the task asks for (edit_file replaces exact text, with all=true every occurrence; write_file creates a file, or with append=true adds lines at its end): {task}"
import localagent.loop as loopmod
real_load = loopmod.load_prompt
def variant(name):
    cfg = default_config()
    policy._ABOUT_WORKSPACE = NEW_ABOUT
    loopmod.load_prompt = real_load
    if name == "old":
        cfg = replace(cfg, answer_after_find=False, read_search_hits=False)
        policy._ABOUT_WORKSPACE = OLD_ABOUT
        loopmod.load_prompt = lambda n: OLD_NUDGE if n == "repeat_change" else real_load(n)
    return cfg
out = {}
for name in variant_names:
    cfg = variant(name)
    runs = []
    for t in tasks:
        r = run_task(backend, t, cfg)
        runs.append(r)
        print(name, r.id, r.steps, f"{r.seconds:.1f}", "ok" if r.success else f"{r.failure}: {r.answer[:80]!r}", file=sys.stderr, flush=True)
    out[name] = {"summary": summarize(runs), "runs": [r.to_dict() if hasattr(r, "to_dict") else r.__dict__ for r in runs]}
json.dump(out, sys.stdout, default=str)
