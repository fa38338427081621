"""Tasks generated from templates with varied names, contents, folder shapes, distractor
files and wordings, from a seed. The dev and test splits use different seeds and different
wordings (``WORDINGS[kind][split]``), so that no choice made on dev is tuned to a test
sentence. Pure: the same seed gives the same tasks."""

from __future__ import annotations

import random
import re
from typing import Any, Callable

from .suite import Task
from .wordings_test6 import WORDINGS_TEST6
from .wordings_test7 import WORDINGS_TEST7
from .wordings_test8 import WORDINGS_TEST8
from .wordings_test9 import WORDINGS_TEST9
from .wordings_test10 import WORDINGS_TEST10
from .wordings_test11 import WORDINGS_TEST11

# test2: a second held-out split (new seed and wordings, written 2026-12-06 before any run
# on it), made once the first test split had been used to find failures.
# test6 .. test11: their wordings live in wordings_testN.py, each written blind and kept out
# of this file (merged into WORDINGS below).
SEEDS = {"dev": 1701, "test": 9203, "test2": 5519, "test3": 8191, "test4": 3313, "test5": 2719, "test6": 4441, "test7": 6607, "test8": 7919, "test9": 8647, "test10": 9377, "test11": 6151}
PER_KIND = {"dev": 8, "test": 11, "test2": 11, "test3": 11, "test4": 11, "test5": 11, "test6": 11, "test7": 11, "test8": 11, "test9": 11, "test10": 11, "test11": 11}

# ── content pools ────────────────────────────────────────────────────────────────────────

FIRST = ["Marta", "Jonas", "Aiko", "Ravi", "Elena", "Tomas", "Noor", "Liam", "Sofia", "Kwame", "Ines", "Yuki"]
LAST = ["Okafor", "Lindqvist", "Tanaka", "Moreau", "Novak", "Haddad", "Silva", "Brennan", "Kowalski", "Osei"]
WORDS = ["amber", "falcon", "cedar", "quartz", "harbor", "meadow", "cobalt", "juniper", "orbit", "willow", "basalt", "lantern"]
FOLDERS = ["notes", "docs", "config", "data", "info", "records", "ops", "admin"]
OTHER_FOLDERS = ["src", "lib", "scripts", "assets", "tests", "misc", "archive", "tmp"]
PROJECTS = ["skyline", "tidepool", "ironbark", "moonshot", "pebble", "quasar", "bramble", "nimbus"]

# A fact: its topic in a question, the file stem, the line that states it, its value.
FACTS: list[tuple[str, str, str, Callable[[random.Random], str]]] = [
    ("launch code", "launch", "Launch code: {v}", lambda r: str(r.randint(1000, 9999))),
    ("door code", "door", "The door code is {v}.", lambda r: str(r.randint(1000, 9999))),
    ("server port", "server", "port = {v}", lambda r: str(r.randint(2000, 9899))),
    ("owner", "owner", "Owner: {v}", lambda r: f"{r.choice(FIRST)} {r.choice(LAST)}"),
    ("deadline", "deadline", "Deadline: {v}", lambda r: f"2027-{r.randint(1, 12):02d}-{r.randint(10, 28)}"),
    ("backup host", "backup", "backup_host = {v}", lambda r: f"{r.choice(WORDS)}-{r.randint(10, 99)}.internal"),
    ("meeting room", "meeting", "Meeting room: {v}", lambda r: f"{r.choice(WORDS).title()} {r.randint(100, 499)}"),
]

FILLER = [
    "Keep this file up to date.",
    "Last reviewed by the ops team.",
    "Questions go to the team channel.",
    "See the README for the overview.",
    "Do not share outside the team.",
    "Updated after the spring review.",
]

NOT_FOUND = (
    r"(does not|doesn't|did not|didn't|do not|don't|is not|isn't|cannot|can't|could not|couldn't|unable to|no such|not)"
    r"[^.]{0,40}(exist|found|find|locate|present|there|available|in (this|the|your) (folder|directory|workspace|project|repo))|\bno (such )?(files?|changelog|license|\w+ file)\b|\bthere is no\b|\bno \S+ (was )?found\b|\bno [\w/-]+\.\w+\b|missing"
)


def _filler(rng: random.Random, n: int) -> list[str]:
    return rng.sample(FILLER, n)


def _fact_file(rng: random.Random, line: str) -> str:
    lines = _filler(rng, 2)
    lines.insert(rng.randint(0, 2), line)
    return "\n".join(lines) + "\n"


def _distractors(rng: random.Random, taken: set[str], n: int | None = None) -> dict[str, str]:
    """A few unrelated files (README, source, notes) in a varied folder shape."""
    proj = rng.choice(PROJECTS)
    pool = {
        "README.md": f"# {proj}\n\nA small {rng.choice(['tool', 'service', 'library', 'app'])} for {rng.choice(WORDS)} data.\n",
        f"{rng.choice(OTHER_FOLDERS)}/{rng.choice(WORDS)}.py": f"def {rng.choice(WORDS)}_step(x):\n    return x + {rng.randint(2, 9)}\n",
        f"{rng.choice(OTHER_FOLDERS)}/{rng.choice(WORDS)}.md": f"# {rng.choice(WORDS).title()}\n\n{rng.choice(FILLER)}\n",
        "notes.txt": f"Remember the {rng.choice(WORDS)} review on Friday.\n",
        f"{rng.choice(OTHER_FOLDERS)}/readme.txt": f"{rng.choice(FILLER)}\n",
    }
    used = {t.split("/")[0] for t in taken}  # never into a folder a task counts or searches
    keys = [k for k in pool if k not in taken and k.split("/")[0] not in used]
    picked = rng.sample(keys, min(len(keys), n if n is not None else rng.randint(2, 4)))
    return {k: pool[k] for k in picked}


def _value_re(v: str) -> str:
    return r"(?<![\w-])" + re.escape(v) + r"(?![\w-])"


def _misspell(rng: random.Random, stem: str) -> str:
    i = rng.randrange(1, len(stem) - 1)
    if rng.random() < 0.5:
        return stem[:i] + stem[i + 1] + stem[i] + stem[i + 2 :]  # swap two letters
    return stem[:i] + stem[i + 1 :]  # drop one


# ── wordings: [dev, test] lists per kind ─────────────────────────────────────────────────

# An entry that is a list holds alternatives for one question (the kinds that pick the
# question by index); only dev and test6 have them, so the test split is generated as before.
WORDINGS: dict[str, dict[str, list[Any]]] = {
    "fact_in_subfolder": {
        "dev": ["What is the {topic} in {path}?", "Tell me the {topic} written in {path}.",
                "{path} has a {topic} in it. What is it?", "Can you check {path} for the {topic}?"],
        "test": ["Look in {path} and tell me the {topic}.", "Which {topic} does {path} give?"],
        "test2": ["Could you find out the {topic} from {path}?", "{path}: what {topic} is written there?"],
        "test3": ["Show me the {topic} that {path} records.", "What {topic} is noted in {path}?"],
        "test4": ["hey, what's the {topic} in {path}?", "I need to know the {topic}. It's written down in {path}."],
        "test5": ["hey, could you peek at {path} and let me know the {topic}?",
                  "need the {topic} - it's written down in {path}"],
    },
    "misspelt_path": {
        "dev": ["What is the {topic} in {path}?", "Read {path} and tell me the {topic}."],
        "test": ["Open {path}: what {topic} does it give?", "I need the {topic} from {path}."],
        "test2": ["Please get me the {topic} stored in {path}.", "According to {path}, what is the {topic}?"],
        "test3": ["Find the {topic} in {path} for me.", "Tell me which {topic} {path} lists."],
        "test4": ["Can you pull up {path} and tell me what the {topic} is? Thanks!", "get {topic} from {path}"],
        "test5": ["What {topic} is recorded in {path}? Thanks!", "pls grab the {topic} out of {path} for me"],
    },
    "wrong_case": {
        "dev": ["What is the {topic} in {path}?", "Read {path} and tell me the {topic}."],
        "test": ["Open {path}: what {topic} does it give?", "I need the {topic} from {path}."],
        "test2": ["Please get me the {topic} stored in {path}.", "According to {path}, what is the {topic}?"],
        "test3": ["Find the {topic} in {path} for me.", "Tell me which {topic} {path} lists."],
        "test4": ["Quick one: which {topic} is in {path}?", "i think the {topic} is saved in {path}, can you tell me what it is"],
        "test5": ["I'm trying to remember the {topic}; I think it's in {path}. Can you tell me?",
                  "{topic} from {path}, please."],
    },
    "wrong_folder": {
        "dev": ["What is the {topic} in {path}?", "Read {path} and tell me the {topic}."],
        "test": ["Open {path}: what {topic} does it give?", "I need the {topic} from {path}."],
        "test2": ["Please get me the {topic} stored in {path}.", "According to {path}, what is the {topic}?"],
        "test3": ["Find the {topic} in {path} for me.", "Tell me which {topic} {path} lists."],
        "test4": ["Would you mind reading me the {topic} from {path}?", "Need the {topic}; it's in {path}, I believe."],
        "test5": ["can you tell me what {topic} is noted in {path}",
                  "I saved the {topic} in {path} a while back - what does it say?"],
    },
    "folder_for_file": {
        "dev": ["What is the {topic} written in the {folder} folder?", "Read {folder} and tell me the {topic}.",
                "The {topic} is in a file under {folder}. What is it?", "Look through {folder} for the {topic}."],
        "test": ["Somewhere in {folder}/ there is a {topic}. What is it?", "Find the {topic} in the {folder} folder."],
        "test2": ["The {folder} directory has the {topic} somewhere. Tell me what it is.", "Check the files in {folder} and report the {topic}."],
        "test3": ["One of the files in {folder} holds the {topic}. What does it say?", "Dig through {folder} and tell me the {topic}."],
        "test4": ["i put the {topic} somewhere in my {folder} folder, what was it again?", "Please look inside {folder} and let me know what the {topic} is."],
        "test5": ["I stuck the {topic} in some file inside {folder}, can you dig it out for me?",
                  "what's the {topic}? it's in one of the files in {folder}"],
    },
    "combine": {
        "dev": [
            ["What is the total of {item} in {a} and {b}?", "How many {item} are there in {a} and {b} together?",
             "What do the {item} in {a} and {b} add up to?"],
            ["Which is larger, the {item} in {a} or in {b}? Give the number.",
             "Which of {a} and {b} has more {item}, and how many?", "What is the highest count of {item}, {a} or {b}?"],
        ],
        "test": ["Add up the {item} listed in {a} and {b}.", "Between {a} and {b}, what is the biggest number of {item}?"],
        "test2": ["Sum the {item} from {a} and {b}.", "Compare the {item} in {a} with the {item} in {b} and give the higher count."],
        "test3": ["If you add the {item} in {a} to those in {b}, how many are there?", "Which file lists more {item}, {a} or {b}? Tell me that number."],
        "test4": ["{a} and {b} each list some {item}. What's the combined total?", "I only care about the bigger of the two {item} counts in {a} and {b}. What number is it?"],
        "test5": ["{a} has some {item} and so does {b}; what's the combined total of {item}?",
                  "compare the {item} in {a} with the {item} in {b} and tell me the bigger number"],
    },
    "code": {
        "dev": [
            ["Which functions does {path} define?", "What functions are in {path}?", "Name every function in {path}."],
            ["What does the function {fn} in {path} return?", "Tell me what {fn} in {path} gives back.",
             "What value comes back from {fn} in {path}?"],
        ],
        "test": ["List the functions defined in {path}.", "In {path}, what is the return value of {fn}?"],
        "test2": ["Which functions live in {path}? I want every name.", "Report what {fn} in {path} returns."],
        "test3": ["Give me the names of all functions in {path}.", "{fn} in {path}: what does it return?"],
        "test4": ["Could you list every function that's defined in {path}, please?", "I'm curious what {fn} returns. It's defined in {path}."],
        "test5": ["can you give me a list of all the functions in {path}?",
                  "I'm curious what {fn} returns - it's in {path}."],
    },
    "count": {
        "dev": [
            ["How many {ext} files are in the {folder} folder?", "How many files ending in {ext} does {folder} hold?",
             "Tell me how many {ext} files {folder}/ has."],
            ["How many lines does {path} have?", "How long is {path}, in lines?", "Give the line count of {path}."],
        ],
        "test": ["Count the {ext} files in {folder}/.", "What is the number of lines in {path}?"],
        "test2": ["I want to know how many {ext} files {folder}/ contains.", "Report how long {path} is in lines."],
        "test3": ["How many files with the {ext} extension sit in {folder}?", "Count the lines of {path} for me."],
        "test4": ["how many {ext} files have i got in {folder}?", "Please tell me the total number of lines in {path}."],
        "test5": ["Could you tell me how many {ext} files live in the {folder} directory?",
                  "how many lines long is {path}?"],
    },
    "declared": {
        "dev": [
            ["What version does this project declare?", "What is the version of this project?", "Tell me this project's version."],
            ["Which port does this project's server listen on?", "What port is configured for the server here?",
             "Which port does the app in this folder use?"],
        ],
        "test": ["Which version number is this project at?", "On what port is the service in this folder configured to run?"],
        "test2": ["Report the release version of this project.", "Find out which port the server of this project uses."],
        "test3": ["Tell me the version number this codebase declares.", "What port will this project's server listen on?"],
        "test4": ["what version number does this project declare? i need it for a bug report", "Could you tell me which port this project's server is set up to use?"],
        "test5": ["hey, which version is this project declared as?",
                  "I need to know the port number the server for this project is set to use."],
    },
    "missing_file": {
        "dev": ["What does {path} say? If there is no such file, say so.", "Read {path} and summarise it, or tell me it does not exist.",
                "Is {path} here? Tell me what it says if it is.", "Print the contents of {path}, or say it is missing.",
                "Does {path} exist? If yes, what does it contain?", "Give me the text of {path} (tell me if there is no such file)."],
        "test": ["Show me what {path} contains; say so if the file is missing.", "Is there a {path}? If so, what is in it?"],
        "test2": ["Open {path} and tell me its content, or that it does not exist.", "I would like to see {path}; if it is not there, just say so."],
        "test3": ["Show me {path}, or tell me if it is not there.", "What is inside {path}? It may not exist."],
        "test4": ["Can you open {path} for me? If it doesn't exist, just let me know.", "read {path}, and tell me if there's no such file"],
        "test5": ["can you show me {path}? if it isn't there just tell me",
                  "I'd like to see the contents of {path}, assuming that file actually exists - let me know if it doesn't."],
    },
    "search_many": {
        "dev": ["Which file in {folder} mentions {word}?", "Find the file under {folder} that talks about {word}.",
                "Which of the files under {folder} contains the word {word}?", "In {folder}, which file has {word} in it?",
                "I am looking for the file in {folder} that says {word}. Which is it?", "Name the file in {folder} where {word} appears."],
        "test": ["One of the files in {folder} refers to {word}. Which one?", "Where in {folder} is {word} mentioned? Name the file."],
        "test2": ["The word {word} appears in one file in {folder}. Tell me which file.", "Look through {folder} and name the file that mentions {word}."],
        "test3": ["Somewhere in {folder} a file mentions {word}. Which file is it?", "Search {folder} for {word} and tell me the file."],
        "test4": ["I remember writing about {word} in one of the files in {folder}. Which file was that?", "which {folder} file talks about {word}?"],
        "test5": ["there's a file somewhere in {folder} with {word} in it - which file is that?",
                  "Could you tell me which file inside {folder} has the word {word}?"],
    },
    "no_tool": {
        "dev": [["What is {a} plus {b}?", "What is {a} added to {b}?"], ["Spell the word '{word}' backwards.", "Reverse the letters of '{word}'."]],
        "test": ["Compute {a} + {b}.", "Write '{word}' in reverse letter order."],
        "test2": ["Work out {a} + {b}.", "Give me '{word}' spelled from the last letter to the first."],
        "test3": ["{a} + {b} = ?", "Say '{word}' backwards, letter by letter."],
        "test4": ["quick sanity check: what do {a} and {b} add up to?", "What do you get if you reverse '{word}' letter by letter?"],
        "test5": ["quick one - what do you get when you add {a} and {b}?",
                  "can you write out '{word}' with its letters in reverse order?"],
    },
    "edit_create": {
        "dev": ["Create a file {path} containing the line '{line}'.", "Make a new file {path} with this one line: {line}",
                "Save '{line}' in a new file named {path}."],
        "test": ["Write a file called {path} whose only line is: {line}", "Add a new file {path} that says '{line}'."],
        "test2": ["Create {path} with the single line: {line}", "Please make {path}, containing just '{line}'."],
        "test3": ["Write a new file {path} that contains: {line}", "I need a file {path} with the line '{line}' in it."],
        "test4": ["Please create a file at {path}. It should contain exactly one line: {line}", "new file {path}, content: {line}"],
        "test5": ["can you make me a file at {path} that just contains '{line}'?",
                  "I need a new file, {path}, with a single line in it: {line}"],
    },
    "edit_typo": {
        "dev": ["Fix the typo '{bad}' in {path}: it should be '{good}'.", "In {path}, '{bad}' is misspelt; correct it to '{good}'."],
        "test": ["Correct the spelling of '{bad}' to '{good}' in {path}.", "{path} has the misspelling '{bad}'. Change it to '{good}'."],
        "test2": ["There is a typo in {path}: '{bad}' must become '{good}'.", "Please fix {path}, where '{bad}' should read '{good}'."],
        "test3": ["Correct '{bad}' to '{good}' in {path}.", "{path} misspells '{good}' as '{bad}'; please repair it."],
        "test4": ["I spelled '{good}' wrong in {path}; it says '{bad}'. Can you fix it?", "fix '{bad}' -> '{good}' in {path}"],
        "test5": ["oops, I wrote '{bad}' in {path} - could you fix it to '{good}'?",
                  "Please replace the misspelt '{bad}' in {path} with the correct '{good}'."],
    },
    "edit_rename": {
        "dev": ["Rename the function {old} to {new} everywhere in {path}.", "In {path}, rename {old} to {new} (the definition and every use)."],
        "test": ["Change the name of {old} to {new} throughout {path}.", "Replace every {old} in {path} with {new}."],
        "test2": ["In {path}, change every {old} to {new}.", "Rename {old} as {new} in all of {path}."],
        "test3": ["Swap the name {old} for {new} everywhere in {path}.", "{path}: rename {old} to {new}."],
        "test4": ["Could you rename {old} to {new} in {path}? Please update every place it's used.", "I'd like {old} called {new} instead, all through {path}."],
        "test5": ["can you rename {old} to {new} in {path}? make sure every use gets updated too",
                  "I'd like {old} in {path} to be called {new} from now on, definition and all calls."],
    },
    "edit_setting": {
        "dev": ["Change the {key} in {path} to {value}.", "Set {key} to {value} in {path}."],
        "test": ["Update {path} so that {key} is {value}.", "In {path}, make the {key} {value}."],
        "test2": ["In the file {path}, {key} must now be {value}. Please edit it.", "{path} should have {key} set to {value}; update it."],
        "test3": ["Change {path} so that {key} equals {value}.", "I want the {key} in {path} to be {value}."],
        "test4": ["Please open {path} and change the {key} setting to {value}.", "the {key} in {path} needs to be {value} now, can you update it?"],
        "test5": ["please set the {key} in {path} to {value}, thanks",
                  "{path} needs its {key} changed to {value} - can you do that?"],
    },
    "edit_append": {
        "dev": ["Append the line '{line}' to {path}.", "Add '{line}' at the end of {path}.",
                "At the bottom of {path}, add the line '{line}'."],
        "test": ["Put '{line}' as a new last line of {path}.", "Add one more line to {path}: {line}"],
        "test2": ["Please add '{line}' as the final line of {path}.", "Append to {path}: {line}"],
        "test3": ["Add the line '{line}' to the end of {path}.", "{path} needs one more line at the bottom: {line}"],
        "test4": ["Can you tack '{line}' onto the end of {path}?", "please add this as a new line at the very end of {path}: {line}"],
        "test5": ["can you stick the line '{line}' onto the end of {path}?",
                  "I want '{line}' added to {path} as the final line."],
    },
    "edit_copy": {
        "dev": ["Copy the {topic} from {src} into a new file {dst}.", "Write the {topic} found in {src} to a new file {dst}."],
        "test": ["Create {dst} holding the {topic} that {src} gives.", "Take the {topic} from {src} and save it in a new file {dst}."],
        "test2": ["Store the {topic} of {src} in a new file {dst}.", "Make a new file {dst} that holds the {topic} given in {src}."],
        "test3": ["Put the {topic} from {src} into a new file called {dst}.", "Read the {topic} in {src} and write it to a new file {dst}."],
        "test4": ["I need a new file {dst} with the {topic} that's written in {src}.", "grab the {topic} out of {src} and put it in a fresh file {dst}"],
        "test5": ["grab the {topic} out of {src} and write it into a new file called {dst}",
                  "Could you make a new file {dst} containing the {topic} that's in {src}?"],
    },
    "edit_misspelt": {
        "dev": ["Change the {key} in {path} to {value}.", "Set {key} to {value} in {path}."],
        "test": ["Update {path} so that {key} is {value}.", "In {path}, make the {key} {value}."],
        "test2": ["In the file {path}, {key} must now be {value}. Please edit it.", "{path} should have {key} set to {value}; update it."],
        "test3": ["Change {path} so that {key} equals {value}.", "I want the {key} in {path} to be {value}."],
        "test4": ["{key} should be {value} in my {path}, can you fix that?", "Please edit {path}: {key} needs to become {value}."],
        "test5": ["can you switch {key} to {value} in {path}?",
                  "The {key} in {path} should now be {value}; please update it."],
    },
}

_BLIND = {"test6": WORDINGS_TEST6, "test7": WORDINGS_TEST7, "test8": WORDINGS_TEST8,
          "test9": WORDINGS_TEST9, "test10": WORDINGS_TEST10, "test11": WORDINGS_TEST11}
for _split, _wordings in _BLIND.items():
    for _kind, _options in _wordings.items():
        WORDINGS[_kind][_split] = _options


def _wording(rng: random.Random, kind: str, split: str, choice: int | None = None) -> str:
    options = WORDINGS[kind][split]
    picked = options[choice % len(options)] if choice is not None else rng.choice(options)
    return rng.choice(picked) if isinstance(picked, list) else picked


# ── the kinds ─────────────────────────────────────────────────────────────────────────────


def _fact(rng: random.Random) -> tuple[str, str, str, str]:
    """(topic, stem, line, value) of a random fact."""
    topic, stem, line, gen = rng.choice(FACTS)
    v = gen(rng)
    return topic, stem, line.format(v=v), v


def _fact_task(rng: random.Random, kind: str, split: str) -> Task:
    """A fact in a file of a subfolder; the task names the path right or wrong."""
    topic, stem, line, v = _fact(rng)
    folder = rng.choice(FOLDERS)
    real = f"{folder}/{stem}.txt"
    files = {real: _fact_file(rng, line)}
    named = real
    if kind == "misspelt_path":
        named = f"{folder}/{_misspell(rng, stem)}.txt"
    elif kind == "wrong_case":
        named = rng.choice([f"{folder.title()}/{stem}.txt", f"{folder}/{stem.title()}.txt", f"{folder}/{stem.upper()}.TXT"])
    elif kind == "wrong_folder":
        other = rng.choice([f for f in FOLDERS if f != folder])
        files[f"{other}/{rng.choice(WORDS)}.txt"] = _fact_file(rng, rng.choice(FILLER))
        named = f"{other}/{stem}.txt"
    files.update(_distractors(rng, set(files)))
    prompt = _wording(rng, kind, split).format(topic=topic, path=named)
    return Task("", kind, split, prompt, files, answer=[_value_re(v)], evidence=[v])


def _folder_for_file(rng: random.Random, split: str) -> Task:
    topic, stem, line, v = _fact(rng)
    folder = rng.choice(FOLDERS)
    files = {f"{folder}/{stem}.txt": _fact_file(rng, line)}
    files.update(_distractors(rng, set(files)))
    prompt = _wording(rng, "folder_for_file", split).format(topic=topic, folder=folder)
    return Task("", "folder_for_file", split, prompt, files, answer=[_value_re(v)], evidence=[v])


ITEMS = ["apples", "chairs", "laptops", "boxes", "tickets", "lamps", "crates", "bottles"]


def _combine(rng: random.Random, split: str) -> Task:
    item = rng.choice(ITEMS)
    a_name, b_name = rng.sample(["north", "south", "east", "west", "depot", "store", "annex"], 2)
    folder = rng.choice(["", "stock/", "inventory/", "data/"])
    a, b = f"{folder}{a_name}.txt", f"{folder}{b_name}.txt"
    x, y = rng.sample(range(4, 96), 2)
    other = rng.choice([i for i in ITEMS if i != item])
    files = {
        a: f"{item}: {x}\n{other}: {rng.randint(1, 99)}\n",
        b: f"{other}: {rng.randint(1, 99)}\n{item}: {y}\n",
    }
    files.update(_distractors(rng, set(files)))
    choice = rng.randrange(2)
    prompt = _wording(rng, "combine", split, choice).format(item=item, a=a, b=b)
    want = x + y if choice == 0 else max(x, y)
    return Task("", "combine", split, prompt, files, answer=[_value_re(str(want))], evidence=[f"{item}: {x}", f"{item}: {y}"])


def _code(rng: random.Random, split: str) -> Task:
    names = rng.sample(["parse_row", "compute_checksum", "load_config", "gcd", "lcm", "slugify", "merge_maps", "clamp", "to_snake"], 3)
    rets = [f'"{rng.choice(WORDS)}-{rng.randint(1, 99)}"' for _ in names]
    body = "".join(f"def {n}(value):\n    return {r}\n\n\n" for n, r in zip(names, rets))
    path = f"{rng.choice(['src', 'pkg', 'lib', 'app'])}/{rng.choice(['utils', 'helpers', 'core', 'tools'])}.py"
    files = {path: "import os\n\n\n" + body.rstrip() + "\n"}
    files.update(_distractors(rng, set(files)))
    choice = rng.randrange(2)
    fn = rng.choice(names)
    prompt = _wording(rng, "code", split, choice).format(path=path, fn=fn)
    if choice == 0:
        return Task("", "code", split, prompt, files, answer=[_value_re(n) for n in names], evidence=names[:1])
    ret = rets[names.index(fn)].strip('"')
    return Task("", "code", split, prompt, files, answer=[_value_re(ret)], evidence=[ret])


NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]


def _count_re(n: int) -> str:
    return rf"(?<![\w.-])({n}|{NUMBER_WORDS[n]})(?![\w-])" if n < len(NUMBER_WORDS) else _value_re(str(n))


def _count(rng: random.Random, split: str) -> Task:
    choice = rng.randrange(2)
    folder = rng.choice(["images", "assets", "photos", "media", "pics"])
    if choice == 0:
        ext = rng.choice([".png", ".jpg", ".csv", ".json"])
        n = rng.randint(2, 6)
        files = {f"{folder}/{i + 1}{ext}": "x\n" for i in range(n)}
        for other in rng.sample([".txt", ".md", ".gif", ".log"], rng.randint(1, 2)):
            files[f"{folder}/{rng.choice(WORDS)}{other}"] = "y\n"
        files.update(_distractors(rng, set(files)))
        prompt = _wording(rng, "count", split, 0).format(ext=ext, folder=folder)
        return Task("", "count", split, prompt, files, answer=[_count_re(n)], evidence=[f"1{ext}"])
    n = rng.randint(3, 9)
    path = f"{rng.choice(FOLDERS)}/{rng.choice(['list', 'items', 'names', 'guests'])}.txt"
    lines = rng.sample([f"{a} {b}" for a in FIRST for b in LAST], n)
    files = {path: "\n".join(lines) + "\n"}
    files.update(_distractors(rng, set(files)))
    prompt = _wording(rng, "count", split, 1).format(path=path)
    return Task("", "count", split, prompt, files, answer=[_count_re(n)], evidence=[lines[-1]])


def _declared(rng: random.Random, split: str) -> Task:
    choice = rng.randrange(2)
    proj = rng.choice(PROJECTS)
    if choice == 0:
        v = f"{rng.randint(0, 4)}.{rng.randint(0, 19)}.{rng.randint(0, 9)}"
        where, text = rng.choice([
            ("pyproject.toml", f'[project]\nname = "{proj}"\nversion = "{v}"\n'),
            ("package.json", f'{{\n  "name": "{proj}",\n  "version": "{v}"\n}}\n'),
            ("setup.cfg", f"[metadata]\nname = {proj}\nversion = {v}\n"),
        ])
    else:
        v = str(rng.randint(2000, 9899))
        where, text = rng.choice([
            ("config/server.toml", f'host = "0.0.0.0"\nport = {v}\n'),
            ("settings.ini", f"[server]\nlisten_port = {v}\n"),
            ("deploy/app.yaml", f"name: {proj}\nport: {v}\n"),
        ])
    files = {where: text}
    files.update(_distractors(rng, set(files)))
    prompt = _wording(rng, "declared", split, choice)
    return Task("", "declared", split, prompt, files, answer=[_value_re(v)], evidence=[v])


def _missing_file(rng: random.Random, split: str) -> Task:
    path = rng.choice(["CHANGELOG.md", "LICENSE", "docs/roadmap.md", "notes/plan.txt", "TODO.md", "config/secrets.env"])
    files = _distractors(rng, {path}, n=rng.randint(3, 4))
    prompt = _wording(rng, "missing_file", split).format(path=path)
    return Task("", "missing_file", split, prompt, files, answer=[NOT_FOUND], evidence=[])


def _search_many(rng: random.Random, split: str) -> Task:
    folder = rng.choice(FOLDERS)
    word = rng.choice(["zeppelin", "marmalade", "tangerine", "glacier", "saxophone", "origami", "volcano"])
    stems = rng.sample(WORDS, rng.randint(5, 8))
    target = rng.choice(stems)
    files = {f"{folder}/{s}.txt": f"{rng.choice(FILLER)}\n{rng.choice(FILLER)}\n" for s in stems}
    files[f"{folder}/{target}.txt"] = f"{rng.choice(FILLER)}\nThe {word} arrives on Monday.\n"
    files.update(_distractors(rng, set(files)))
    prompt = _wording(rng, "search_many", split).format(folder=folder, word=word)
    return Task("", "search_many", split, prompt, files, answer=[_value_re(target)], evidence=[f"{target}.txt"])


def _no_tool(rng: random.Random, split: str) -> Task:
    files = _distractors(rng, set())
    if rng.randrange(2) == 0:
        a, b = rng.randint(11, 89), rng.randint(11, 89)
        prompt = _wording(rng, "no_tool", split, 0).format(a=a, b=b)
        return Task("", "no_tool", split, prompt, files, answer=[_value_re(str(a + b))], needs_tool=False)
    word = rng.choice(["lamp", "river", "stone", "cloud", "tiger", "maple"])
    prompt = _wording(rng, "no_tool", split, 1).format(word=word)
    return Task("", "no_tool", split, prompt, files, answer=[_value_re(word[::-1])], needs_tool=False)


# ── edits ─────────────────────────────────────────────────────────────────────────────────


def _edit_create(rng: random.Random, split: str) -> Task:
    path = rng.choice(["hello.txt", "notes/greeting.txt", "motd.txt", "docs/welcome.md", "status.txt"])
    line = rng.choice(["Hello, world!", f"Welcome to {rng.choice(PROJECTS)}.", f"Status: {rng.choice(WORDS)} ok", "All systems go."])
    files = _distractors(rng, {path})
    prompt = _wording(rng, "edit_create", split).format(path=path, line=line)
    return Task("", "edit_create", split, prompt, files, expect_files={path: {"exact": line + "\n"}})


TYPOS = [("recieve", "receive"), ("seperate", "separate"), ("definately", "definitely"), ("enviroment", "environment"),
         ("occured", "occurred"), ("adress", "address"), ("untill", "until"), ("wich", "which")]


def _edit_typo(rng: random.Random, split: str) -> Task:
    bad, good = rng.choice(TYPOS)
    path = f"{rng.choice(['docs', 'notes', 'guide'])}/{rng.choice(['setup', 'intro', 'usage', 'faq'])}.md"
    lines = [f"# {rng.choice(WORDS).title()}", "", f"You will {bad} a message when it is ready." if bad == "recieve"
             else f"This line has the word {bad} in it.", rng.choice(FILLER)]
    before = "\n".join(lines) + "\n"
    files = {path: before}
    files.update(_distractors(rng, set(files)))
    prompt = _wording(rng, "edit_typo", split).format(path=path, bad=bad, good=good)
    return Task("", "edit_typo", split, prompt, files, expect_files={path: {"exact": before.replace(bad, good)}})


def _edit_rename(rng: random.Random, split: str) -> Task:
    old, new = rng.choice([("parse_row", "parse_line"), ("load", "load_config"), ("calc", "compute"),
                           ("fetch_items", "get_items"), ("tidy", "clean_up"), ("emit", "publish")])
    path = f"{rng.choice(['src', 'app', 'lib'])}/{rng.choice(['reader', 'main', 'jobs', 'worker'])}.py"
    before = (f"def {old}(text):\n    return text.strip()\n\n\n"
              f"def run(lines):\n    return [{old}(x) for x in lines]\n")
    if rng.random() < 0.5:
        before += f"\n\nif __name__ == \"__main__\":\n    print({old}(\"  hi  \"))\n"
    files = {path: before}
    files.update(_distractors(rng, set(files)))
    prompt = _wording(rng, "edit_rename", split).format(path=path, old=old, new=new)
    return Task("", "edit_rename", split, prompt, files, expect_files={path: {"exact": before.replace(old, new)}})


def _settings(rng: random.Random) -> tuple[str, str, str, str, str]:
    """(path stem, key, old line, new line, new value) of a settings file."""
    key, old, new = rng.choice([("port", "8080", str(rng.randint(3000, 9899))), ("timeout", "30", str(rng.randint(40, 300))),
                                ("workers", "4", str(rng.randint(5, 32))), ("log_level", '"info"', '"debug"')])
    return "config", key, f"{key} = {old}", f"{key} = {new}", new.strip('"')


def _edit_setting(rng: random.Random, split: str, kind: str = "edit_setting") -> Task:
    stem, key, old_line, new_line, value = _settings(rng)
    ext = rng.choice([".toml", ".ini", ".cfg"])
    path = rng.choice(["", "conf/", "etc/"]) + rng.choice([stem, "settings", "app"]) + ext
    others = [f'name = "{rng.choice(PROJECTS)}"', "debug = false", f"retries = {rng.randint(1, 5)}"]
    lines = others[:1] + [old_line] + others[1:]
    before = "\n".join(lines) + "\n"
    files = {path: before}
    files.update(_distractors(rng, set(files)))
    named = path
    if kind == "edit_misspelt":
        name = path.rsplit("/", 1)[-1].split(".")[0]
        named = path.replace(name + ".", _misspell(rng, name) + ".")
    prompt = _wording(rng, kind, split).format(path=named, key=key, value=value)
    return Task("", kind, split, prompt, files, expect_files={path: {"exact": before.replace(old_line, new_line)}})


def _edit_append(rng: random.Random, split: str) -> Task:
    path = rng.choice(["todo.md", "notes/todo.md", "shopping.txt", "docs/tasks.md"])
    items = rng.sample(["- water the plants", "- call the bank", "- book the train", "- fix the bike", "- pay the rent"], 2)
    line = rng.choice(["- buy milk", "- renew the passport", "- send the invoice", "- clean the oven"])
    before = "\n".join(items) + "\n"
    files = {path: before}
    files.update(_distractors(rng, set(files)))
    prompt = _wording(rng, "edit_append", split).format(path=path, line=line)
    return Task("", "edit_append", split, prompt, files, expect_files={path: {"exact": before + line + "\n"}})


def _edit_copy(rng: random.Random, split: str) -> Task:
    topic, stem, line, v = _fact(rng)
    src = f"{rng.choice(FOLDERS)}/{stem}.txt"
    dst = rng.choice(["copy.txt", f"{stem}_copy.txt", "out/value.txt", "answer.txt"])
    files = {src: _fact_file(rng, line)}
    files.update(_distractors(rng, set(files) | {dst}))
    prompt = _wording(rng, "edit_copy", split).format(topic=topic, src=src, dst=dst)
    # The value alone or the stating line, nothing much else.
    return Task("", "edit_copy", split, prompt, files, expect_files={dst: {"contains": [_value_re(v)], "max_chars": 120}},
                evidence=[v])


BUILDERS: dict[str, Callable[[random.Random, str], Task]] = {
    "fact_in_subfolder": lambda r, s: _fact_task(r, "fact_in_subfolder", s),
    "misspelt_path": lambda r, s: _fact_task(r, "misspelt_path", s),
    "wrong_case": lambda r, s: _fact_task(r, "wrong_case", s),
    "wrong_folder": lambda r, s: _fact_task(r, "wrong_folder", s),
    "folder_for_file": _folder_for_file,
    "combine": _combine,
    "code": _code,
    "count": _count,
    "declared": _declared,
    "missing_file": _missing_file,
    "search_many": _search_many,
    "no_tool": _no_tool,
    "edit_create": _edit_create,
    "edit_typo": _edit_typo,
    "edit_rename": _edit_rename,
    "edit_setting": _edit_setting,
    "edit_append": _edit_append,
    "edit_copy": _edit_copy,
    "edit_misspelt": lambda r, s: _edit_setting(r, s, "edit_misspelt"),
}
KINDS = list(BUILDERS)


def generate(split: str, per_kind: int | None = None, seed: int | None = None) -> list[Task]:
    """``per_kind`` tasks of every kind for ``split`` ("dev" or "test"), from its seed."""
    rng = random.Random(SEEDS[split] if seed is None else seed)
    n = PER_KIND[split] if per_kind is None else per_kind
    tasks = []
    for kind in KINDS:
        for i in range(n):
            t = BUILDERS[kind](rng, split)
            t.id = f"{split}-{kind}-{i:02d}"
            tasks.append(t)
    return tasks
