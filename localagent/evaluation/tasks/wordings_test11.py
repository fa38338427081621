"""The wordings of the test11 split, kept apart from generate.py (which merges them into
``WORDINGS[kind]["test11"]``) so that they can stay unread by whoever tunes the agent.

Written blind: from the kinds, their placeholders and their checks only, without looking at
how the agent reads wordings or where it failed. The kinds that pick their question by index
(combine, code, count, declared, no_tool) hold exactly two entries, each a list of
alternatives for that question."""

from __future__ import annotations

from typing import Any

WORDINGS_TEST11: dict[str, list[Any]] = {
    "fact_in_subfolder": [
        "Quick question before my meeting: what's the {topic}? It's in {path}.",
        "I'm setting things up for the team and need the {topic}. Could you read it off {path} for me?",
        "Would you be able to tell me what {topic} is written in {path}?",
        "{topic} (see {path}) - what is it?",
        "Look up the {topic} for me. The file is {path}",
    ],
    "misspelt_path": [
        "Can you read {path} and tell me the {topic} it lists?",
        "My notes say the {topic} is in {path}. What is it exactly?",
        "I'm filling in a form and need the {topic}; it should be in {path}. What does it say?",
        "Tell me the {topic}, please - it's in {path}",
        "what {topic} does {path} have",
    ],
    "wrong_case": [
        "Sorry if this is a silly one, but what's the {topic} in {path}?",
        "Read me the {topic} out of {path}.",
        "The {topic} should be written in {path}. Mind checking what it is?",
        "{path} - {topic}? need it now",
        "Before I head out: can you tell me which {topic} is recorded in {path}",
    ],
    "wrong_folder": [
        "I'm pretty sure I wrote the {topic} down in {path}. What is it?",
        "Give me the {topic} from the file {path}.",
        "hi! could you tell me the {topic}? I keep it in {path}",
        "We keep the {topic} in {path} at work. What's the current one?",
        "what does {path} list as the {topic}",
    ],
    "folder_for_file": [
        "The {topic} is written in a file somewhere under {folder}/ but I forget which. What is it?",
        "Find me the {topic}: it's in the {folder} directory somewhere.",
        "Could you search the {folder} folder and tell me the {topic}?",
        "{topic}? Should be in one of the files in {folder}.",
        "I'm new on this project. Someone said the {topic} is kept in {folder} - can you tell me what it is?",
    ],
    "combine": [
        [
            "I need the total number of {item} across {a} and {b}.",
            "How many {item} do {a} and {b} have between them?",
            "Stock check: add the {item} in {a} to the {item} in {b} and give me the total.",
            "please total up the {item} from both {a} and {b}",
        ],
        [
            "Which has more {item}, {a} or {b}? I just need the larger number.",
            "Look at the {item} count in {a} and in {b} and tell me the higher of the two.",
            "Of {a} and {b}, whichever has the most {item} - how many is that?",
            "What's the larger {item} figure: the one in {a} or the one in {b}?",
        ],
    ],
    "code": [
        [
            "I'm reviewing {path}. What functions are defined in it?",
            "List every function name in {path}, please.",
            "What are the names of the functions defined in this file: {path}",
            "Which functions does {path} have? All of them, please.",
        ],
        [
            "What gets returned when you call {fn} from {path}?",
            "Tell me the return value of {fn} ({path}).",
            "I'm debugging and need to know what {fn} returns. It lives in {path}.",
            "{fn} in {path} - what's its return value?",
        ],
    ],
    "count": [
        [
            "How many {ext} files are sitting in {folder}/ right now?",
            "Count how many files in {folder} end in {ext}.",
            "I'm cleaning up my {folder} folder. How many {ext} files does it have?",
            "Number of {ext} files in {folder}?",
        ],
        [
            "How many lines are in {path}? Just the number is fine.",
            "I need the exact number of lines in {path} for my report.",
            "Count the lines in this file for me: {path}",
            "how many lines does the file {path} contain",
        ],
    ],
    "declared": [
        [
            "I'm filling in a bug report and it asks for the version. What version is this project at, according to its own metadata?",
            "Which release version is declared for the project in this folder?",
            "What's the current version string of this project? I need it for my notes.",
            "Version of this project, please - what does it say?",
        ],
        [
            "Which port is this project's server set to listen on? I want to open it in my browser.",
            "I need to open a firewall rule for this app. What port does its config say it uses?",
            "What port number is configured for the server in this project?",
            "Port for this project's server - what's it set to?",
        ],
    ],
    "missing_file": [
        "Could you open {path} and show me what's in it? If it isn't there, tell me.",
        "I think a colleague added {path} at some point. Does it exist, and if so what does it say?",
        "Print {path} (and tell me if there's no such file).",
        "Show the contents of {path}. Say so if it doesn't exist.",
        "What's written in {path}? Not sure that file's even there.",
    ],
    "search_many": [
        "Which file under {folder}/ mentions {word}? I just need the file name.",
        "I wrote something about {word} in a file in {folder} but can't remember which. Can you find it?",
        "Search the {folder} folder: which file contains the word {word}?",
        "In which of the {folder} files does {word} come up?",
        "Find {word} in {folder}. Which file is it in?",
    ],
    "no_tool": [
        [
            "What's {a} plus {b}? No need to look at any files.",
            "My calculator's dead. What's {a} + {b}?",
            "Could you add {a} and {b} for me?",
        ],
        [
            "How is '{word}' spelled backwards?",
            "For a word puzzle: what's '{word}' reversed?",
            "Reverse '{word}' for me, letter by letter.",
        ],
    ],
    "edit_create": [
        "Please create {path} with exactly one line in it: {line}",
        "I need a new file called {path}. Put this single line in it: {line}",
        "Make {path} - its whole content is just \"{line}\"",
        "Could you add a file {path} whose only text is '{line}'?",
        "New file please - {path}, with the line '{line}' and nothing else.",
    ],
    "edit_typo": [
        "There's a spelling mistake in {path}: '{bad}' should be '{good}'. Please fix it.",
        "Can you correct '{bad}' to '{good}' in {path}? Thanks.",
        "My editor flagged '{bad}' in {path}. It should say '{good}' - please change it.",
        "typo in {path} - '{bad}' should be '{good}', fix please",
        "I'm proofreading my docs. In {path}, please change '{bad}' to '{good}'.",
    ],
    "edit_rename": [
        "Please rename the function {old} to {new} in {path}, including every call to it.",
        "I'm tidying up {path}: {old} should be called {new}. Update the definition and all the places it's used.",
        "Could you change {old} to {new} everywhere it appears in {path}?",
        "Refactor {path} - {old} becomes {new} (definition and every call).",
        "Rename {old} to {new}, all occurrences, in this file: {path}",
    ],
    "edit_setting": [
        "Please change the {key} setting in {path} to {value} and leave everything else as it is.",
        "I'm tuning our service. Can you set {key} to {value} in {path}?",
        "{path}: {key} should be {value}. Please update it.",
        "Could you update the {key} in {path}? It needs to be {value} now.",
        "Switch {key} to {value} in {path}, please.",
    ],
    "edit_misspelt": [
        "In {path}, please set the {key} to {value}.",
        "We're moving to a new setup, so the {key} in {path} has to be {value}. Can you change that?",
        "{key} -> {value} in {path}, please",
        "Would you mind editing {path} so the {key} reads {value}?",
        "Set the {key} to {value}. The file is {path}",
    ],
    "edit_append": [
        "Add '{line}' to the end of my list in {path}.",
        "Please append this line to {path}: {line}",
        "I just remembered something for {path}. Put '{line}' at the bottom.",
        "Can you add a new last line to {path}? It should read '{line}'.",
        "one more for the list at the end of {path}: {line}",
    ],
    "edit_copy": [
        "Please copy the {topic} from {src} into a new file named {dst}.",
        "I want the {topic} on its own in a new file, {dst}. You'll find it in {src}.",
        "Can you read the {topic} out of {src} and save it to {dst} (a new file)?",
        "Make {dst} - it should contain the {topic} from {src}.",
        "Save the {topic} that's in {src} to a new file: {dst}",
    ],
}
