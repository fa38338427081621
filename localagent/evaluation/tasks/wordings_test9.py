"""The wordings of the test9 split, kept apart from generate.py (which merges them into
``WORDINGS[kind]["test9"]``) so that they can stay unread by whoever tunes the agent.

Written blind: from the kinds, their placeholders and their checks only, without looking at
how the agent reads wordings or where it failed. The kinds that pick their question by index
(combine, code, count, declared, no_tool) hold exactly two entries, each a list of
alternatives for that question."""

from __future__ import annotations

from typing import Any

WORDINGS_TEST9: dict[str, list[Any]] = {
    "fact_in_subfolder": [
        "Hi! Would it be possible to tell me the {topic}? It should be in {path}.",
        "what does {path} say the {topic} is",
        "I've got a form to fill in and it asks for the {topic}. Can you get it from {path}?",
        "Can I get the {topic} that's written in {path}, please?",
        "My colleague said the {topic} is in {path}. What is it?",
    ],
    "misspelt_path": [
        "Could you take a look at {path} and tell me what the {topic} is?",
        "{topic}? should be in {path}",
        "I need the {topic} for a message I'm writing. It's in {path}, I think.",
        "Would you be able to read {path} and give me the {topic}?",
        "What's the {topic} according to {path}? Just the value is fine.",
    ],
    "wrong_case": [
        "Could you check {path} and tell me which {topic} it mentions?",
        "whats the {topic} in {path}",
        "I wrote the {topic} down in {path} last week but can't remember it. What does it say?",
        "Can I get the {topic} from {path}? Thanks a lot.",
        "Before I head out, I need the {topic}. Would you look it up in {path}?",
    ],
    "wrong_folder": [
        "Can you tell me the {topic}? I'm fairly sure it's in {path}.",
        "{path} - what's the {topic} in there?",
        "Would it be possible to find the {topic} for me? It was saved in {path}.",
        "I need the {topic} written in {path}. What is it?",
        "Someone asked me for the {topic} and I kept it in {path}. Could you tell me what it is?",
    ],
    "folder_for_file": [
        "The {topic} is written down in one of the files in {folder}, but I don't remember which. What is it?",
        "can you find the {topic} somewhere in {folder} and tell me",
        "I need the {topic}. It should be in the {folder} folder somewhere.",
        "Would you mind looking through {folder} and telling me the {topic}?",
        "Where did I put it... the {topic} is in some file under {folder}. What does it say?",
    ],
    "combine": [
        [
            "I need the total number of {item} across {a} and {b}. What is it?",
            "how many {item} do {a} and {b} have between them",
            "Could you add together the {item} from {a} and {b} and tell me the result?",
            "We're doing a stock count. {a} and {b} both list {item}; how many is that altogether?",
        ],
        [
            "Which has more {item}, {a} or {b}? Please tell me the larger number.",
            "{a} vs {b}: which one has the most {item}, and what's the count?",
            "I'd like to know which is higher, the number of {item} in {a} or in {b}. What's that number?",
            "Could you look at the {item} in {a} and in {b} and tell me which count is bigger? I need that number.",
        ],
    ],
    "code": [
        [
            "What are the names of the functions defined in {path}?",
            "can you list the functions in {path}",
            "I'm new to this codebase. Which functions does {path} contain? Please name all of them.",
            "Would you give me every function name that appears in {path}?",
        ],
        [
            "What does {fn} in {path} return?",
            "what's the return value of {fn} ({path})",
            "I'm debugging something and need to know what {fn} returns. It's in {path}.",
            "Could you check {path} and tell me what {fn} gives back?",
        ],
    ],
    "count": [
        [
            "How many {ext} files are there in {folder}?",
            "number of {ext} files in {folder}?",
            "I'm tidying up {folder}. Could you tell me how many {ext} files it has?",
            "Can I get a count of the {ext} files inside the {folder} folder?",
        ],
        [
            "How many lines are in {path}?",
            "line count for {path}?",
            "Could you tell me how many lines {path} has? I want to check nothing is missing.",
            "I need to know how many lines there are in {path}, please.",
        ],
    ],
    "declared": [
        [
            "What's the version number of this project?",
            "which version is this project on",
            "I'm writing release notes and need the current version of this project. What is it?",
            "Could you look up the version this project declares?",
        ],
        [
            "What port is the server for this project configured to listen on?",
            "which port does the server here use",
            "I'm trying to connect to this project's server locally. Which port is it set to?",
            "Would you check which port this project's server runs on?",
        ],
    ],
    "missing_file": [
        "Could you show me what's in {path}? If there's no such file, please tell me.",
        "what's in {path}? might not exist",
        "I think there used to be a {path} here. Does it exist, and if so, what does it say?",
        "Can I see the contents of {path}? Let me know if it's missing.",
        "Please read {path} for me, or tell me if it isn't there.",
    ],
    "search_many": [
        "Which file in {folder} has the word {word} in it?",
        "{word} is mentioned somewhere in {folder}, which file",
        "I need to find the file in {folder} that mentions {word}. Could you tell me which one it is?",
        "Would you search {folder} and tell me which file talks about {word}?",
        "One of my notes in {folder} says something about {word}. Which file is it?",
    ],
    "no_tool": [
        [
            "What's {a} plus {b}?",
            "{a} + {b}?",
            "I'm doing some quick maths in my head and want to double check: what is {a} plus {b}?",
            "Could you add {a} and {b} for me?",
        ],
        [
            "How do you spell '{word}' backwards?",
            "'{word}' reversed?",
            "Just for fun, what is '{word}' when you write it backwards?",
            "Can you reverse the letters in '{word}' for me?",
        ],
    ],
    "edit_create": [
        "Could you create {path} with just one line in it: {line}",
        "make {path} containing '{line}'",
        "I need a new file at {path}. The only line in it should be: {line}",
        "Would it be possible to add a file {path} that says exactly '{line}'?",
        "Please create a new file, {path}, and put this single line in it: {line}",
    ],
    "edit_typo": [
        "There's a spelling mistake in {path}: '{bad}' should be '{good}'. Could you fix it?",
        "{path} says '{bad}', should be '{good}'. pls fix",
        "I just noticed '{bad}' in {path}. It should be spelled '{good}'; can you correct it?",
        "Would you change '{bad}' to '{good}' in {path}? It's a typo.",
        "The word '{bad}' in {path} is misspelled - please make it '{good}'.",
    ],
    "edit_rename": [
        "Could you rename {old} to {new} in {path}, including everywhere it's called?",
        "rename {old} -> {new} in {path}, all occurrences",
        "I think {new} is a better name than {old}. Can you rename it throughout {path}?",
        "Would it be possible to change the function name {old} to {new} in {path}? The calls need to change too.",
        "{old} in {path} should be called {new} now. Please update the definition and every use.",
    ],
    "edit_setting": [
        "Could you set {key} to {value} in {path}?",
        "{key} in {path} -> {value}",
        "The {key} in {path} should be {value} now.",
        "I need the {key} in {path} changed to {value}, please.",
        "Would it be possible to update {path} so {key} is {value}? Leave everything else as is.",
    ],
    "edit_append": [
        "Could you add '{line}' to the end of {path}?",
        "add this to the bottom of {path}: {line}",
        "I just remembered something. Please append this line to {path}: {line}",
        "Can I get '{line}' added as a new last line in {path}?",
        "Would you put one more line at the end of {path}? It's: {line}",
    ],
    "edit_copy": [
        "Could you copy the {topic} from {src} into a new file called {dst}?",
        "put the {topic} from {src} in {dst} (new file)",
        "I need the {topic} on its own in a new file, {dst}. You'll find it in {src}.",
        "Would it be possible to create {dst} with the {topic} that {src} has?",
        "Please save the {topic} written in {src} to a new file {dst}, nothing else.",
    ],
    "edit_misspelt": [
        "Could you change the {key} in {path} to {value}?",
        "set {key} = {value} in {path}",
        "The {key} in {path} should be {value} now.",
        "I need {key} set to {value} in {path}. Can you do that?",
        "Would you mind updating {path} so that the {key} is {value}? Thanks!",
    ],
}
