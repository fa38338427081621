"""The wordings of the test6 split, kept apart from generate.py (which merges them into
``WORDINGS[kind]["test6"]``) so that they can stay unread by whoever tunes the agent.

Written blind: from the kinds, their placeholders and their checks only, without looking at
how the agent reads wordings or where it failed. The kinds that pick their question by index
(combine, code, count, declared, no_tool) hold exactly two entries, each a list of
alternatives for that question."""

from __future__ import annotations

from typing import Any

WORDINGS_TEST6: dict[str, list[Any]] = {
    "fact_in_subfolder": [
        "Open {path} and read me the {topic}, please.",
        "Do you know the {topic}? You'll find it in {path}.",
        "I'm looking for the {topic}, which should be in {path}.",
    ],
    "misspelt_path": [
        "I've lost track of the {topic}. Can you check {path}?",
        "Hi! Could you look up the {topic} for me in {path}?",
        "There's a {topic} written in {path} - mind telling me what it says?",
    ],
    "wrong_case": [
        "Please read {path}; I need its {topic}.",
        "What does {path} have as the {topic}?",
        "Looking for the {topic}. Should be in {path}.",
    ],
    "wrong_folder": [
        "Fetch the {topic} from {path}, would you?",
        "My {topic} is noted in {path}. Remind me what it is?",
        "Please tell me the {topic}; {path} should have it.",
    ],
    "folder_for_file": [
        "The {topic} is written down in a file in {folder}, I just don't remember which. What is it?",
        "Go through the files under {folder} and find me the {topic}.",
        "what {topic} did we put in {folder}?",
    ],
    "combine": [
        ["How many {item} do {a} and {b} have between them?",
         "Please total up the {item} across {a} and {b}."],
        ["Look at the {item} counts in {a} and {b} and tell me the larger one.",
         "I want whichever {item} figure is higher, the one in {a} or the one in {b}."],
    ],
    "code": [
        ["Open up {path} and list out all its function names for me.",
         "I'd like a rundown of every function defined in {path}, just the names."],
        ["If I call {fn} from {path}, what comes back?",
         "Please look up the {fn} function in {path} and tell me its return value."],
    ],
    "count": [
        ["{folder} - how many of the files in there end in {ext}?",
         "Give me a count of the {ext} files sitting in {folder}, please."],
        ["{path}: what's its line count?",
         "Could you check how many lines there are in {path}?"],
    ],
    "declared": [
        ["I'm writing release notes and need the version number this project declares. Can you find it?",
         "Version of this project, please."],
        ["I'm trying to connect to this project's server. Which port should I use, according to its config?",
         "Can you dig the server's port number out of this project's config?"],
    ],
    "missing_file": [
        "What's written in {path}? Let me know if the file isn't there.",
        "I'm not sure {path} is even in this folder. If it is, show me its contents; if not, tell me.",
        "Could you read {path} for me? It might have been deleted, in which case just say so.",
    ],
    "search_many": [
        "I need the name of the file in {folder} that contains {word}.",
        "Can you figure out which file under {folder} has {word} written in it?",
        "Is there a file in {folder} that mentions {word}? Tell me its name.",
    ],
    "no_tool": [
        ["If I have {a} and add {b} to it, what's the total?",
         "sum of {a} and {b}?"],
        ["What does '{word}' look like written back to front?",
         "Take the word '{word}' and give it to me with the letters reversed."],
    ],
    "edit_create": [
        "Please add a file named {path} with exactly this text: {line}",
        "I need {path} created, and its one line should be '{line}'.",
        "Start a new file {path} and put '{line}' in it, nothing else.",
    ],
    "edit_typo": [
        "'{bad}' in {path} is a typo for '{good}'. Please correct it.",
        "Can you go into {path} and change '{bad}' to the right spelling, '{good}'?",
    ],
    "edit_rename": [
        "Please rename the function {old} in {path} to {new}, and update all the places that call it.",
        "Refactor {path}: {old} becomes {new}, including every call.",
        "In {path}, could you change the function name from {old} to {new}? All uses too.",
    ],
    "edit_setting": [
        "I'd like {key} set to {value}. The setting lives in {path}.",
        "Edit the {key} value in {path} - it needs to be {value}.",
        "Can you update {path}? I need the {key} to read {value}.",
    ],
    "edit_append": [
        "Add '{line}' to my list in {path}, after everything that's already there.",
        "Could you append one line to the end of {path}? It's: {line}",
    ],
    "edit_copy": [
        "Please write the {topic} from {src} to a file called {dst}; that file doesn't exist yet.",
        "{src} has the {topic}. Put just that into a new file, {dst}.",
    ],
    "edit_misspelt": [
        "Open {path} and set its {key} to {value}, please.",
        "In {path}, {key} has to be changed to {value}.",
        "hi, could you make the {key} in {path} {value} instead of what it is now?",
    ],
}
