"""The wordings of the test7 split, kept apart from generate.py (which merges them into
``WORDINGS[kind]["test7"]``) so that they can stay unread by whoever tunes the agent.

Written blind: from the kinds, their placeholders and their checks only, without looking at
how the agent reads wordings or where it failed. The kinds that pick their question by index
(combine, code, count, declared, no_tool) hold exactly two entries, each a list of
alternatives for that question."""

from __future__ import annotations

from typing import Any

WORDINGS_TEST7: dict[str, list[Any]] = {
    "fact_in_subfolder": [
        "Before my next call I need the {topic}. Can you read it off {path} for me?",
        "{topic}? should be in {path}",
        "Would you be able to tell me what {path} says the {topic} is?",
    ],
    "misspelt_path": [
        "Please report back the {topic} from the file {path}.",
        "what's {path} got for the {topic}",
        "I wrote the {topic} into {path} last week and now I can't remember it. What was it?",
    ],
    "wrong_case": [
        "Can you find out from {path} what our {topic} is?",
        "I'm filling in a form and need the {topic}, which is kept in {path}. What is it?",
        "Look up {path} and give me the {topic} only.",
    ],
    "wrong_folder": [
        "Hello, can you tell me our {topic}? It should be recorded in {path}.",
        "read {path}, i want the {topic}",
        "From {path}, please tell me what the {topic} is set to.",
    ],
    "folder_for_file": [
        "Somebody saved the {topic} in the {folder} folder. Could you track it down and tell me?",
        "Can you find what the {topic} is? Check inside {folder}.",
        "{folder} has the {topic} in one of its files - I need that value.",
    ],
    "combine": [
        ["I need the total number of {item} across the files {a} and {b}.",
         "Count up all the {item} - some are in {a}, the rest in {b}. What's the grand total?"],
        ["{a} vs {b}: whichever has more {item}, what's its count?",
         "Out of {a} and {b}, give me the largest {item} count."],
    ],
    "code": [
        ["Give me an overview of {path}: what functions does it have?",
         "functions in {path}? names please"],
        ["What's the return value when {fn} in {path} runs?",
         "Check {path} - what does {fn} hand back?"],
    ],
    "count": [
        ["Before I upload the {folder} folder, tell me how many {ext} files it holds.",
         "number of {ext} files in {folder}?"],
        ["Tell me how many lines {path} runs to.",
         "Does {path} have many lines? Give me the exact count."],
    ],
    "declared": [
        ["What release is this project on right now?",
         "quick q: project version?"],
        ["If I start this project's server, which port will it be on?",
         "I need the port this project's server is configured with."],
    ],
    "missing_file": [
        "Can you print out {path}? Tell me if there isn't one.",
        "Please summarise {path} for me. If you can't find it, say that it doesn't exist.",
        "what's in {path}? (it might not be there)",
    ],
    "search_many": [
        "Find me whichever file in {folder} says {word} and give me its name.",
        "{word} - which file in {folder} is that in?",
        "Could you check the files in {folder} and let me know which one mentions {word}?",
    ],
    "no_tool": [
        ["Add {a} and {b} for me.",
         "{a} plus {b} - what's that?"],
        ["Can you reverse the word '{word}' for me?",
         "What's '{word}' backwards?"],
    ],
    "edit_create": [
        "Could you create {path}? The only thing in it should be: {line}",
        "{path} doesn't exist yet. Create it with one line that says '{line}'.",
        "I want a new file at {path} containing '{line}' and nothing more.",
    ],
    "edit_typo": [
        "There's a spelling mistake in {path}: it says '{bad}' where it should say '{good}'. Fix it please.",
        "'{bad}' should be '{good}' - please correct that in {path}.",
        "Can you clean up {path}? '{bad}' is spelled wrong, it's meant to be '{good}'.",
    ],
    "edit_rename": [
        "The function {old} in {path} should be called {new}. Update the definition and all its call sites.",
        "{old} -> {new} in {path}, everywhere please",
        "I've decided {new} is a better name than {old}. Please rename it throughout {path}.",
    ],
    "edit_setting": [
        "Could you go into {path} and put {key} at {value}?",
        "{key} ought to be {value}, not what's in {path} right now. Please change it.",
        "Config change for {path}: {key} should be {value} from now on.",
    ],
    "edit_append": [
        "Keep everything in {path} as it is and add '{line}' after the last line.",
        "Could you add {line} as the last item in {path}?",
        "{path} - new line at the end please: {line}",
    ],
    "edit_copy": [
        "Make me {dst} with the {topic} in it, taken from {src}.",
        "Can you look up the {topic} in {src} and save it to a new file, {dst}?",
        "I want the {topic} that's in {src} copied over into {dst} (a new file).",
    ],
    "edit_misspelt": [
        "Could you change {key} to {value} over in {path}?",
        "{path} has the wrong {key}; it should be {value}. Please fix it.",
        "Hey, {key} needs updating in {path}: make it {value}.",
    ],
}
