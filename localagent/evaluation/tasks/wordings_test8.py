"""The wordings of the test8 split, kept apart from generate.py (which merges them into
``WORDINGS[kind]["test8"]``) so that they can stay unread by whoever tunes the agent.

Written blind: from the kinds, their placeholders and their checks only, without looking at
how the agent reads wordings or where it failed. The kinds that pick their question by index
(combine, code, count, declared, no_tool) hold exactly two entries, each a list of
alternatives for that question."""

from __future__ import annotations

from typing import Any

WORDINGS_TEST8: dict[str, list[Any]] = {
    "fact_in_subfolder": [
        "Sorry to bother you - what {topic} is listed in {path}?",
        "The {topic} is somewhere in {path}. Could you read it out to me?",
        "need {topic} asap, the file is {path}",
    ],
    "misspelt_path": [
        "Could you look in {path} and tell me what it has down as the {topic}?",
        "{path} - the {topic} in there, what is it?",
        "I'd be grateful if you could find the {topic} for me. I keep it in {path}.",
    ],
    "wrong_case": [
        "My colleague asked for the {topic}. It's in {path} if I remember right. What does it say?",
        "Go to {path} and find the {topic} for me.",
        "{topic} in {path} - what's the value?",
    ],
    "wrong_folder": [
        "So the {topic} is supposed to be in {path}. Can you tell me what it is?",
        "I'm pretty sure {path} has our {topic} in it. What is it?",
        "Quick favour: check {path} and tell me our {topic}.",
    ],
    "folder_for_file": [
        "I know the {topic} is saved in a file somewhere under {folder}/. What's the value?",
        "Search the {folder} folder and tell me what the {topic} is.",
        "which {topic} is in {folder}? not sure what file",
    ],
    "combine": [
        ["What's the sum of the {item} in {a} plus the {item} in {b}?",
         "Tell me how many {item} we have in total, counting both {a} and {b}."],
        ["Which is the higher {item} count, {a}'s or {b}'s? I just need the number.",
         "Check {a} and {b} and tell me the greater of their two {item} numbers."],
    ],
    "code": [
        ["Please tell me what functions {path} contains.",
         "Which functions are declared in {path}? Give me all of them."],
        ["Could you tell me the value that {fn} returns? You'll find it in {path}.",
         "{path} defines {fn}; what does it return?"],
    ],
    "count": [
        ["What's the count of {ext} files within {folder}?",
         "Tally up the {ext} files in {folder} for me."],
        ["Could you find out how many lines of text {path} has?",
         "{path} - how many lines does it contain?"],
    ],
    "declared": [
        ["Which version of this project is this, according to its metadata?",
         "Can you check what version this project is set to?"],
        ["What's the server port in this project's configuration?",
         "The server in this project - what port does it run on?"],
    ],
    "missing_file": [
        "Please check whether {path} exists, and if it does, tell me what's in it.",
        "{path}: contents please, or let me know it's not there.",
        "I'm looking for {path}. What does it say, if it exists at all?",
    ],
    "search_many": [
        "I'm trying to find where {word} comes up in {folder}. What's the file called?",
        "grep {folder} for {word} and tell me which file has it",
        "Would you mind searching the {folder} folder for the file that contains {word} and telling me its name?",
    ],
    "no_tool": [
        ["What does {a} + {b} come to?",
         "I need {a} and {b} added together."],
        ["How is '{word}' spelled in reverse?",
         "Flip the letters of '{word}' around so it reads backwards."],
    ],
    "edit_create": [
        "Set up a new file, {path}, and write '{line}' as its only line.",
        "Can you write '{line}' into a brand new file called {path}?",
        "Create the file {path} for me; it should just say {line}",
    ],
    "edit_typo": [
        "Spotted a typo in {path} - '{bad}' ought to be '{good}'. Could you sort it out?",
        "{path} contains '{bad}', which is wrong; the correct spelling is '{good}'. Please fix the file.",
        "spelling fix needed in {path}: change '{bad}' to '{good}'",
    ],
    "edit_rename": [
        "Please give the function {old} in {path} the new name {new}, and fix up every call to it as well.",
        "rename {old} => {new} across {path} (def + all callers)",
        "We're renaming {old} to {new}. Can you make that change everywhere it appears in {path}?",
    ],
    "edit_setting": [
        "Could {key} in {path} be changed to {value}? Thanks in advance.",
        "{path}: {key} = {value} please",
        "Our {key} has to be {value} going forward. Please adjust it in {path}.",
    ],
    "edit_append": [
        "Add '{line}' to {path}, below the existing lines.",
        "Can you put {line} at the end of {path}? Don't touch the rest.",
        "I need one more entry in {path}, added after the others: '{line}'",
    ],
    "edit_copy": [
        "I'd like the {topic} out of {src} saved on its own in a new file at {dst}.",
        "{dst} should be a new file holding just the {topic}; you'll find it in {src}.",
        "{src} -> {dst}: copy over just the {topic}, new file please",
    ],
    "edit_misspelt": [
        "Would you update the {key} in {path}? It should be {value}.",
        "please put {value} as the {key} in {path}",
        "The {key} setting in {path} is out of date; it should say {value}.",
    ],
}
