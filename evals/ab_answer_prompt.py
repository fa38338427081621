"""The answer prompt as it is and asking for every item where the question asks for several,
over dev questions, one process, one run each:

    python evals/ab_answer_prompt.py now,all dev evals/results/tasks-devx.jsonl \
        evals/results/tasks-devp.jsonl evals/results/tasks-devq.jsonl --kinds=code,combine > out.json

Only questions (tasks that change nothing) are run: the prompt writes their answers."""
import sys

from ab import run_variants, tasks_from_argv

from localagent import policy
from localagent.assemble import default_config

names, tasks = tasks_from_argv(sys.argv[1:])
tasks = [t for t in tasks if not t.kind.startswith("edit_")]
NOW = policy.answers.load_prompt("answer")
ALL = NOW.replace(
    "Answer the question above in one short sentence, using the exact names, numbers or paths found.",
    "Answer the question above in one short sentence, using the exact names, numbers or paths found; where it asks for several, give every one.",
)
assert ALL != NOW
real = policy.answers.load_prompt  # answer_prompt's own, patched where it is used


def setup(name):
    text = NOW if name == "now" else ALL
    policy.answers.load_prompt = lambda n: text if n == "answer" else real(n)
    return default_config()


run_variants(names, tasks, setup)
