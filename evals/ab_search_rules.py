"""The search rules and the reworded change reminder, on and off, over the dev tasks (the dev
split, tasks-devx.jsonl, tasks-devp.jsonl), one process, one run each:

    python evals/ab_search_rules.py new,old dev evals/results/tasks-devx.jsonl evals/results/tasks-devp.jsonl > out.json

"old" turns off answer_after_find and read_search_hits and puts back the earlier
_ABOUT_WORKSPACE pattern and change reminder."""
import re
import sys
from dataclasses import replace

from ab import run_variants, tasks_from_argv

from localagent import policy
from localagent.assemble import default_config

names, tasks = tasks_from_argv(sys.argv[1:])
NEW_ABOUT = policy.looks._ABOUT_WORKSPACE  # patched where it is used
OLD_ABOUT = re.compile(r"\b(this|the|our|my)\s+(project|folder|repo|repository|directory|workspace|codebase|package|service|app)\b|\bin here\b|\bhere\b\s*\?", re.IGNORECASE)
OLD_NUDGE = "You already have the result of that call above. Now make the change the task asks for (edit_file replaces exact text, with all=true every occurrence; write_file creates a file, or with append=true adds lines at its end): {task}"
import localagent.loop as loopmod
real_load = loopmod.load_prompt
def variant(name):
    cfg = default_config()
    policy.looks._ABOUT_WORKSPACE = NEW_ABOUT
    loopmod.load_prompt = real_load
    if name == "old":
        cfg = replace(cfg, answer_after_find=False, read_search_hits=False)
        policy.looks._ABOUT_WORKSPACE = OLD_ABOUT
        loopmod.load_prompt = lambda n: OLD_NUDGE if n == "repeat_change" else real_load(n)
    return cfg


run_variants(names, tasks, variant)
