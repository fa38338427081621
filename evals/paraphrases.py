"""More dev tasks in new wordings, for the kinds where the suite's test split fell short:
the suite's own dev wordings are few, so a rule can fit them and miss the next phrasing.
These are dev tasks (for choosing); the test split's wordings are not among them.

    python evals/paraphrases.py evals/results/tasks-devp.jsonl [--per-kind 12] [--seed 4821]
    python evals/paraphrases.py evals/results/tasks-devq.jsonl --set q --per-kind 8 --seed 6607
    localagent eval-tasks evals/results/tasks-devp.jsonl --json

Set q (2026-12-06) words questions as commands or requests ("List ...", "I want to know
...") and settings in more ways: the first test split missed list questions and settings.
Set r (the same day) words changes with no change verb, which-file questions as
statements, appends, copies, reversals and project questions as requests: the second test
split (test2) missed those.

    python evals/paraphrases.py evals/results/tasks-devr.jsonl --set r --per-kind 6 --seed 7717
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from localagent.evaluation.tasks import generate as g
from localagent.evaluation.tasks.suite import save_tasks

PARAPHRASES: dict[str, list] = {
    "code": [
        ["Which function names appear in {path}?", "Give me the names of the functions in {path}.",
         "{path}: what functions does it have?", "Show me the functions that {path} declares.",
         "What are all the functions written in {path}?", "Enumerate the functions of {path}."],
        ["Which string does {fn} in {path} return?", "If I call {fn} from {path}, what do I get back?",
         "What is returned by {fn} in {path}?", "Look at {fn} in {path}: what does it return?",
         "{fn} is defined in {path}. What is its result?", "What does calling {fn} (see {path}) produce?"],
    ],
    "search_many": [
        "Which file under {folder}/ contains '{word}'?", "Search {folder} for {word} and tell me which file it is in.",
        "Somewhere in {folder} the word {word} appears. In which file?", "What is the name of the file in {folder} that mentions {word}?",
        "Tell me which file of {folder} contains {word}.", "Look through {folder} and find the file that says {word}.",
        "The word {word} is in one file of {folder}. Which file?", "Which document in {folder} talks about {word}?",
    ],
    "declared": [
        ["What version is this project?", "Which version is declared in this folder?", "What's the project's version number?",
         "Tell me what version the project here is."],
        ["What port does the server here use?", "Find the port this project's service listens on.",
         "Which port number is the app here set to?", "Tell me the server port configured in this project."],
    ],
    "edit_setting": ["Please set the {key} in {path} to {value}.", "Make {key} equal {value} in {path}.",
                     "Edit {path}: the {key} should now be {value}.", "Change {path} so its {key} reads {value}."],
}
PARAPHRASES["edit_misspelt"] = PARAPHRASES["edit_setting"]

PARAPHRASES_Q: dict[str, list] = {
    "code": [
        ["List every function in {path}.", "List the function names that {path} contains.",
         "Write out the names of the functions in {path}.", "Print the names of the functions found in {path}."],
        ["Tell me the return value of {fn} in {path}.", "I want to know what {fn} in {path} returns.",
         "Get me the string {fn} returns in {path}.", "Show what {fn} from {path} hands back."],
    ],
    "misspelt_path": ["I want to know the {topic} in {path}.", "Get me the {topic} out of {path}.",
                      "Look up the {topic} in {path}.", "Please find the {topic} given in {path}."],
    "fact_in_subfolder": ["I want to know the {topic} in {path}.", "Get me the {topic} out of {path}.",
                          "Look up the {topic} in {path}.", "Please find the {topic} given in {path}."],
    "edit_setting": ["In {path}, the {key} has to be {value}. Change it.", "Modify {path} so the {key} becomes {value}.",
                     "Set the {key} of {path} to {value}, please.", "Update the {key} in {path} to {value}."],
}
PARAPHRASES_Q["edit_misspelt"] = PARAPHRASES_Q["edit_setting"]

PARAPHRASES_R: dict[str, list] = {
    "edit_typo": ["{path} spells '{good}' wrong: it says '{bad}'.", "In {path} the word '{bad}' ought to be '{good}'.",
                  "'{bad}' in {path} needs to read '{good}'.", "There's a spelling mistake in {path}, '{bad}' for '{good}'."],
    "edit_append": ["Stick '{line}' on the end of {path}.", "{path} should get a last line: {line}",
                    "Tack the line '{line}' onto {path}.", "Finish {path} with one more line, '{line}'."],
    "edit_copy": ["Record the {topic} from {src} in a new file {dst}.", "Keep a copy of the {topic} in {src} as a new file {dst}.",
                  "{dst} should be a new file holding the {topic} that {src} gives.", "Place the {topic} of {src} into a new file {dst}."],
    "search_many": ["{word} is mentioned in a file somewhere in {folder}. Which one?", "Identify the file in {folder} that contains {word}.",
                    "One file in {folder} has the word {word}. Name it.", "Go through {folder} and tell me the file with {word} in it."],
    "no_tool": [["Find {a} plus {b}.", "Add {a} and {b} together and tell me the result."],
                ["Write '{word}' right to left.", "What is '{word}' with its letters reversed?"]],
    "declared": [["Report this project's version.", "Find out the version this project declares."],
                 ["Check which port the server in this project listens on.", "Get me the port this project's server uses."]],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--per-kind", type=int, default=12)
    ap.add_argument("--seed", type=int, default=4821)
    ap.add_argument("--set", choices=("p", "q", "r"), default="p")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    tasks = []
    for kind, wordings in {"p": PARAPHRASES, "q": PARAPHRASES_Q, "r": PARAPHRASES_R}[args.set].items():
        g.WORDINGS[kind]["dev"] = wordings
        for i in range(args.per_kind):
            t = g.BUILDERS[kind](rng, "dev")
            t.id = f"dev{args.set}-{kind}-{i:02d}"
            tasks.append(t)
    save_tasks(tasks, args.out)
    print(f"{len(tasks)} tasks -> {args.out}")


if __name__ == "__main__":
    main()
