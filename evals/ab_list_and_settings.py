"""The 2026-12-06 rules on and off over dev tasks, one process, one run each:

    python evals/ab_list_and_settings.py new,old dev evals/results/tasks-devx.jsonl \
        evals/results/tasks-devp.jsonl evals/results/tasks-devq.jsonl \
        --kinds code,edit_setting,edit_misspelt,misspelt_path,fact_in_subfolder > out.json

"old" puts back three things: a listing of a file already read whole is not a repeat
(policy.rereads), only question words and marks make a question (policy.wording._ASKS), and a
settings edit with its '=' dropped or its name slipped is written as given (setting_new)."""
import re
import sys

from ab import run_variants, tasks_from_argv

from localagent import policy
from localagent.assemble import default_config
from localagent.tools import builtin

names, tasks = tasks_from_argv(sys.argv[1:])

NEW = (policy.rereads, policy.wording._ASKS, builtin.setting_new)


def old_rereads(call, whole):
    return call.name == "read_file" and call.arguments.get("path") in whole


OLD_ASKS = re.compile(r"^\s*(what|which|who|where|when|why|how|is|are|does|do|list|tell|say|name|read|find|show|count|give)\b|\?\s*$", re.IGNORECASE)


def old_setting_new(old, new):
    m = builtin.SETTING.match(old)
    if m is None or "\n" in old.strip() or not new.strip() or "\n" in new.strip():
        return new
    key, sep, _ = m.groups()
    n = builtin.SETTING.match(new)
    if n is None:
        return f"{key}{sep}{new.strip()}"
    return f"{key}{sep}{n.group(3)}" if n.group(1).strip() == key.strip() else new


def setup(name):
    # Each name where it is looked up: the loop calls policy.rereads, wording uses its own _ASKS.
    policy.rereads, policy.wording._ASKS, builtin.setting_new = NEW if name == "new" else (old_rereads, OLD_ASKS, old_setting_new)
    return default_config()


run_variants(names, tasks, setup)
