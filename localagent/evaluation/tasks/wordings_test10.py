"""The wordings of the test10 split, kept apart from generate.py (which merges them into
``WORDINGS[kind]["test10"]``) so that they can stay unread by whoever tunes the agent.

Written blind: from the kinds, their placeholders and their checks only, without looking at
how the agent reads wordings or where it failed. The kinds that pick their question by index
(combine, code, count, declared, no_tool) hold exactly two entries, each a list of
alternatives for that question."""

from __future__ import annotations

from typing import Any

WORDINGS_TEST10: dict[str, list[Any]] = {
    "fact_in_subfolder": [
        "{path} -> {topic}?",
        "I am preparing the handover and I need the {topic}. Please, it is written in {path}.",
        "When you have a moment, could you let me know what {topic} is recorded in {path}?",
        "Hmm, I wrote the {topic} down somewhere... I think it was {path}. What does it say?",
        "What's the {topic}? Need it for the ticket I'm filing - it's in {path}.",
    ],
    "misspelt_path": [
        "the {topic} in {path}, what is it",
        "Please, can you say me which {topic} is written in the file {path}?",
        "I'd be grateful if you could read out the {topic} from {path} for me.",
        "Before I call the client I need the {topic}. Could you check {path}?",
        "{path} should have the {topic} - what is it?",
    ],
    "wrong_case": [
        "need {topic}, file is {path}",
        "Kindly tell me the {topic} which is noted inside {path}.",
        "Would you be able to find the {topic} in {path} for me, please?",
        "I keep forgetting the {topic}. Isn't it written in {path}? What is it?",
        "Look up the {topic} in {path} - I have to fill it into a form.",
    ],
    "wrong_folder": [
        "{topic} from {path} pls",
        "I wish to know the {topic}. I have kept it in {path}.",
        "If it's no trouble, could you check {path} and tell me the {topic}?",
        "So I'm setting up the new laptop and I need the {topic}. It's in {path}, right? What is it?",
        "Read me the {topic} out of {path}; the team is waiting on it.",
    ],
    "folder_for_file": [
        "{topic}? somewhere under {folder}/",
        "In my folder {folder} there is a file with the {topic}. Can you tell me what it is?",
        "Could you possibly look through the {folder} folder and let me know the {topic}?",
        "I know the {topic} is in one of the files in {folder}, but I can't remember which. What is it?",
        "Find me the {topic} - it's in a file inside {folder}, and I need it for the onboarding doc.",
    ],
    "combine": [
        [
            "{item} in {a} + {item} in {b} = ? total",
            "Please calculate how many {item} we have in total when taking {a} and {b} together.",
            "Could you add the {item} from {a} to the {item} from {b} and tell me the total?",
            "I need the overall number of {item} for the order, counting both {a} and {b}. How many is that?",
        ],
        [
            "max {item}: {a} vs {b}?",
            "Which one has more {item}, {a} or {b}? Please tell me the bigger number.",
            "Would you mind checking {a} and {b} and telling me the larger of the two {item} counts?",
            "I'm trying to figure out where most of the {item} are. Between {a} and {b}, what is the higher count?",
        ],
    ],
    "code": [
        [
            "fn names in {path}?",
            "Please can you enumerate all the functions which are defined inside {path}?",
            "Could you give me a list of every function defined in {path}? I'm writing the docs.",
            "I'm reviewing {path} and want to see what's in it. Which functions does it define?",
        ],
        [
            "{path}: {fn}() returns what?",
            "What is the value which {fn} gives back, in the file {path}?",
            "Could you check {path} and tell me what {fn} returns?",
            "I'm debugging a test that calls {fn}. What does it return? It's in {path}.",
        ],
    ],
    "count": [
        [
            "# of {ext} files in {folder}/?",
            "How many files of type {ext} are there inside the folder {folder}?",
            "Could you count the {ext} files in {folder} for me, please?",
            "I'm about to upload everything in {folder}. How many {ext} files are in there?",
        ],
        [
            "line count of {path}?",
            "Please tell me how many lines has the file {path}.",
            "Would you mind counting the lines in {path}?",
            "I need to know how many entries we have. How many lines are in {path}?",
        ],
    ],
    "declared": [
        [
            "project version?",
            "Which is the version of this project, please?",
            "Could you tell me what version this project is currently declared as?",
            "I'm writing the release notes and need the version. What version does this project say it is?",
        ],
        [
            "server port for this project?",
            "On which port is the server of this project listening?",
            "Would you be able to tell me which port this project's server is configured for?",
            "I need to open the firewall for this app. What port is its server set to?",
        ],
    ],
    "missing_file": [
        "cat {path} (or tell me it's not there)",
        "Please show me the content of {path}. If this file is not existing, tell me.",
        "Could you let me know what {path} says? It may not exist, in which case just tell me.",
        "I'm not sure we ever made {path}. Does it exist, and if so what's in it?",
        "Show me {path} - I need it for the audit. If there's no such file, say so.",
    ],
    "search_many": [
        "grep {word} in {folder} - which file?",
        "In which file inside {folder} is written the word {word}?",
        "Could you please find out which file in {folder} mentions {word}?",
        "One of my files in {folder} talks about {word}, but I forget which. Which file is it?",
        "Which file in {folder} mentions {word}? I need to update it later, so just tell me the name for now.",
    ],
    "no_tool": [
        [
            "{a}+{b}?",
            "Please, how much is {a} and {b} together?",
            "Could you tell me what {a} plus {b} comes to?",
            "I'm splitting a bill and my head is tired. What's {a} + {b}?",
        ],
        [
            "'{word}' reversed?",
            "How is written '{word}' when you read it from the end?",
            "Could you spell '{word}' backwards for me?",
            "I'm making a little word puzzle. What is '{word}' with the letters in reverse order?",
        ],
    ],
    "edit_create": [
        "mk {path} w/ one line: {line}",
        "Please create the file {path} and put inside only this line: {line}",
        "Could you create a new file {path} containing just the line '{line}'?",
        "The deploy check looks for {path}, so please create it with exactly one line: {line}",
        "I'd like a new file {path} whose only content is '{line}'.",
    ],
    "edit_typo": [
        "{path}: '{bad}' -> '{good}'",
        "In the file {path} I have written '{bad}' but correct is '{good}'. Please correct it.",
        "Would you mind fixing the spelling in {path}? '{bad}' should be '{good}'.",
        "The spell checker flags '{bad}' in {path}; change it to '{good}' before I publish the docs.",
        "I just noticed '{bad}' in {path}. Could you make it '{good}'?",
    ],
    "edit_rename": [
        "{path}: rename {old} -> {new}, all uses",
        "Please change in {path} the name {old} into {new}, in the definition and in all places where it is called.",
        "Could you rename {old} to {new} in {path}, including every call to it?",
        "Our style guide wants clearer names, so in {path} rename {old} to {new} everywhere it appears.",
        "I think {new} is a better name than {old}. Can you rename it throughout {path}?",
    ],
    "edit_setting": [
        "{path}: {key}={value}",
        "Please put the {key} in {path} to {value}.",
        "Could you update the {key} in {path} to {value}, please?",
        "The deploy needs {key} set to {value}, so change it in {path}.",
        "I'd like the {key} in {path} to be {value} from now on.",
    ],
    "edit_append": [
        "append to {path}: {line}",
        "Please add at the end of {path} one more line: {line}",
        "Could you add '{line}' as a new line at the bottom of {path}?",
        "I don't want to forget this, so add '{line}' as the last line of {path}.",
        "{path} is missing one item - please append '{line}' to the end of it.",
    ],
    "edit_copy": [
        "{topic} from {src} -> new file {dst}",
        "Please take the {topic} which is in {src} and write it in a new file {dst}.",
        "Could you create a new file {dst} with the {topic} from {src} in it?",
        "The script reads the {topic} from {dst}, so please copy it there from {src} as a new file.",
        "I'd like the {topic} that's in {src} saved into a new file called {dst}.",
    ],
    "edit_misspelt": [
        "{path}: set {key} to {value}",
        "Please make the {key} in {path} to be {value}.",
        "Would you be so kind as to change {key} to {value} in {path}?",
        "We're load testing tomorrow, so in {path} the {key} has to be {value}. Can you change it?",
        "Change {key} to {value} in {path}, please.",
    ],
}
