"""What to look at: the first call, the files to read, the searches and finds, the path a
wrong one means, and what a repeated look means."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection
from enum import Enum
from typing import Any

from rapidfuzz import fuzz

from ..errors import ErrorKind
from ..messages import Message, ToolCall
from ..tools.builtin import CONFIG_SUFFIXES
from ..tools.workspace import PATH_SHAPED, Workspace, path_words
from .calls import call_results, part_names, parts_left, request_parts, sentence_starts
from .wording import asks_only, asks_which_file, computes, task_words, wants_change


# Errors that say a path argument named nothing usable (see Workspace.resolve).
PATH_ERRORS = frozenset({ErrorKind.NOT_FOUND, ErrorKind.NOT_A_FILE, ErrorKind.NOT_A_DIR})


# A question about the folder itself, with no path named: look before answering.
_ABOUT_WORKSPACE = re.compile(
    r"\b(this|the|our|my)\s+(project|folder|repo|repository|directory|workspace|codebase|package|service|app|application|"
    r"program|software|code\s*base)\b|^(?!.*/)[^?]*\b(version|dependenc\w+)\b|\bin here\b|\bhere\b\s*\?|\b(the|this|our|my)\s+\w+\s+here\b|\bwe('re)?\b",
    re.IGNORECASE,
)


def must_look(task: str, workspace: Workspace | None) -> bool:
    """Whether the first step must call a tool: the task names a file or folder (there or
    not), asks about the folder itself ("this project"), or asks for a change."""
    if workspace is None:
        return False
    return workspace.names_a_path(task) or bool(_ABOUT_WORKSPACE.search(task)) or wants_change(task)


def searches_first(task: str, workspace: Workspace | None) -> bool:
    """Whether a question about the folder that names no path starts with a search for one
    of its words: asked "What version does this project declare?", the 0.5B model listed
    folders, read whatever it found and answered "version 1.0.0" from nothing."""
    if workspace is None or not asks_only(task) or not search_words(task, workspace):
        return False
    if _ABOUT_WORKSPACE.search(task) and not workspace.names_a_path(task):
        return True
    # Not when it names a file, there or not: "What does config/secrets.env say?" reads it.
    named_file = any(PATH_SHAPED.fullmatch(w) for w in path_words(task)) or any((workspace.root / p).is_file() for p in workspace.mentioned(task))
    return asks_which_file(task) and not named_file


_COUNTS = re.compile(r"\bhow many\b|\bcount\b|\bnumber of\b|\btally\b|#\s*of\b", re.IGNORECASE)
_EXTENSION = re.compile(r"(?<![\w.])\.([A-Za-z0-9]{1,8})\b")


def counted_files(task: str, workspace: Workspace | None) -> tuple[list[str], list[str]] | None:
    """(globs, folders) of a question that counts the files of a type it names by extension
    ("How many .png files are in images?"): the folders it names, or the root."""
    if workspace is None or not asks_only(task) or not _COUNTS.search(task) or not re.search(r"\bfiles?\b", task, re.IGNORECASE):
        return None
    globs = list(dict.fromkeys(f"*.{ext}" for ext in _EXTENSION.findall(task)))
    if not globs:
        return None
    folders = [p for p in workspace.mentioned(task) if (workspace.root / p).is_dir()]
    return globs, folders or ["."]


def finds_first(task: str, workspace: Workspace | None) -> tuple[list[str], list[str]] | None:
    """(globs, folders) the first find_files of a question must take: the files of a type
    it counts, or the files it names that are not there."""
    return counted_files(task, workspace) or missing_named(task, workspace)


# Names a file is given without an extension, by convention.
_BARE_NAMES = re.compile(r"(?:[\w.-]+/)*(LICENSE|README|CHANGELOG|TODO|NOTICE|AUTHORS|CONTRIBUTING|Makefile|Dockerfile)")


def missing_named(task: str, workspace: Workspace | None, limit: int = 200) -> tuple[list[str], list[str]] | None:
    """(names, ["."]) of the files a question names that are not there and that no file
    there may mean (a misspelling, another case or folder): looked for by name first, so
    the answer rests on "no files named like ...". Free, the 0.5B model read another file
    and said the one asked about exists."""
    if workspace is None or wants_change(task):
        return None
    existing = workspace.text_files(limit)
    shaped = [w for w in sorted(path_words(task)) if PATH_SHAPED.fullmatch(w) or _BARE_NAMES.fullmatch(w)]
    missing = [w for w in shaped if not (workspace.root / w).exists() and not any(_may_mean(w, e) for e in existing)]
    if not missing or len(existing) >= limit:
        return None
    return list(dict.fromkeys(posixpath.basename(w) for w in missing)), ["."]


def search_words(task: str, workspace: Workspace | None, tried: Collection[str] = ()) -> list[str]:
    """The task's words a search may look for: not the folders or files it names (searched
    for 'docs', nothing is found in docs/), not a pattern already searched for."""
    named = {part for p in (workspace.mentioned(task) if workspace else []) for part in re.split(r"[/.]", p.lower())}
    return [w for w in task_words(task) if w not in named and w not in tried]


_MANIFESTS = frozenset(
    "pyproject.toml package.json setup.cfg setup.py Cargo.toml go.mod pom.xml build.gradle composer.json Gemfile".split()
)


def manifests_to_read(task: str, workspace: Workspace | None, history: list[Message], read: Collection[str], most: int = 3) -> list[str]:
    """A question about the project whose searches found nothing reads the project's
    manifest and settings files, manifests first: asked "What release is this project on
    right now?", the 0.5B model searched 'release', then 'right', and said nothing was found
    in a folder whose pyproject.toml says version = "2.2.7"."""
    if workspace is None or not searches_first(task, workspace):
        return []
    results = call_results(history)
    if not results or not all(c.name == "search" and r.startswith("no matches for") for c, r in results):
        return []
    tried = {str(c.arguments.get("pattern", "")).lower() for c, _ in results}
    if len(results) < 2 and search_words(task, workspace, tried):
        return []  # another of its words is searched first
    files = [p for p in workspace.text_files(200) if posixpath.basename(p) in _MANIFESTS or p.endswith(CONFIG_SUFFIXES)]
    files.sort(key=lambda p: (posixpath.basename(p) not in _MANIFESTS, p.count("/")))
    return [p for p in files if p not in read][:most]


def search_again(history: list[Message]) -> set[str] | None:
    """The patterns searched for when every result so far is a search that found nothing
    (once): then the next step searches another of the task's words. None otherwise. Told
    "no matches for 'server'", the 0.5B model answered "port 80" from nothing."""
    calls = {c.id: c for m in history if m.role == "assistant" for c in m.tool_calls}
    results = [(calls.get(m.tool_call_id or ""), m.content) for m in history if m.role == "tool"]
    if len(results) != 1 or not all(c is not None and c.name == "search" and r.startswith("no matches for") for c, r in results):
        return None
    return {str(c.arguments.get("pattern", "")).lower() for c, _ in results if c is not None}


_HIT = re.compile(r"^(.+?):\d+: ", re.MULTILINE)


def search_hits(history: list[Message]) -> list[str]:
    """The files the history's searches found ("path:line: text"), in order, each once."""
    found = (h for c, r in call_results(history) if c.name == "search" and not r.startswith("error (") for h in _HIT.findall(r))
    return list(dict.fromkeys(found))


def found_by_search(task: str, history: list[Message]) -> bool:
    """Whether a which-file question has its answer: a search found the word. Left to go on,
    the 0.5B model read one line past the found file's end three times, to the no-progress stop."""
    return asks_which_file(task) and bool(search_hits(history))


def hits_to_read(task: str, history: list[Message], read: Collection[str], most: int = 3) -> list[str]:
    """The files a search found for a question that asks what they hold (not which file it
    is), while none of them is read and they are few: the next call reads one. Shown
    "settings.ini:1: [server]", the 0.5B model answered "port 8080" without reading line 2."""
    if not asks_only(task) or asks_which_file(task):
        return []
    hits = search_hits(history)
    return hits if 0 < len(hits) <= most and not any(h in read for h in hits) else []


def unread_named(task: str, workspace: Workspace | None, read: set[str]) -> list[str]:
    """The files the task names that exist and have not been read yet: read them before
    anything else. The 0.5B model answered "what does lib/utils.py define" from the tool
    list, and "the total in a.txt and b.txt" after reading neither."""
    return [p for p in named_files(task, workspace) if p not in read]


# The tools of tools.builtin.workspace_tools: with no other tool, a file read is all there is to know.
WORKSPACE_TOOLS = frozenset({"read_file", "list_dir", "search", "find_files", "calculate", "write_file", "edit_file", "run_command"})


def answers_once_read(task: str, workspace: Workspace | None, whole: set[str], tools: Collection[str] = WORKSPACE_TOOLS) -> bool:
    """Whether a question is answered now: it names files, each is read whole, nothing is
    to be worked out, and no tool but the workspace's is offered (a tool of the user's may be
    what the question needs next). Left to go on, the 0.5B model listed the file it had just
    read, or named one of its three functions as "the function defined there"."""
    if not set(tools) <= WORKSPACE_TOOLS or not asks_only(task) or computes(task):
        return False
    files = named_files(task, workspace)  # walks the tree: only for a question that may need it
    return bool(files) and all(p in whole for p in files)


# Results that point to what to look at next (hits, names), not the answer itself; a read
# that stopped before the end (the rest may hold the answer).
_POINTERS = frozenset({"search", "find_files", "list_dir"})
_CUT = re.compile(r"\[\.\.\. more lines follow")
_PATH_LIKE = re.compile(r"[\w./-]*\w\.[A-Za-z]\w{0,5}|[\w.-]+/[\w./-]+")  # b.cfg, config/app.ini, src/


def covered(task: str, history: list[Message], tools: Collection[str] = WORKSPACE_TOOLS) -> bool:
    """Whether a question is answered now: every part of it and every path it names is named
    by a call whose result the history holds ("the weather in Budapest" after
    get_weather(Budapest)), none of them a look that points further (a search's hits), and
    nothing is to be worked out; a file read covers only where no tool of the user's is
    offered (it may be what the text needs next: word_count). Left to go on, the 0.5B model
    called the same tool again (12 of 16 such dev cases) or listed the file it had just read."""
    results = [(c, r) for c, r in call_results(history) if not r.startswith("error (") and not _CUT.search(r)]
    done = [c for c, _ in results]
    if not done or not asks_only(task) or computes(task) or any(c.name in _POINTERS for c in done):
        return False
    if any(c.name in WORKSPACE_TOOLS for c in done) and not set(tools) <= WORKSPACE_TOOLS:
        return False
    values = {str(v) for c in done for v in c.arguments.values()}
    paths = [w for w in path_words(task) if _PATH_LIKE.fullmatch(w)]
    parts = request_parts(task)
    named = [not parts_left([p], [c.arguments for c in done]) for p in parts]
    first = named.index(True) if any(named) else 0  # a lead-in comes before a part named
    held, opens = part_names(task, tuple(parts)), sentence_starts(task, parts)
    alone = [i < first or (o and len(p.split()) <= 4) for i, (p, o) in enumerate(zip(parts, opens))]
    texts = [r for _, r in results]
    asked = [n or _asks_field(p, texts) or (not h and a and _asks_nothing(p, tools)) for p, n, h, a in zip(parts, named, held, alone)]
    return all(p in values for p in paths) and all(asked)


def _asks_field(part: str, results: list[str]) -> bool:
    """Whether ``part``, which no call names, asks only for a field a result holds ("let
    me know which version number it sets" after "version = 1.5.3"): it gives no value of its
    own (``_gives_nothing``) and one of its words is a key of a result."""
    keys = {k.lower() for r in results for k in _KEY.findall(r)}
    return _gives_nothing(part) and any(w.lower().strip("?.,!") in keys for w in part.split())


def _asks_nothing(part: str, tools: Collection[str]) -> bool:
    """Whether ``part`` asks for nothing a call would do: it gives no value
    (``_gives_nothing``) and shares no word with an offered tool's name. Asked of a part that
    leads in before the parts the calls name ("I'm preparing release notes; could you read
    setup.cfg ...") or is a short sentence of its own ("Could you check?"), holding no name
    (``part_names``). Left to go on after the read, the 0.5B model listed a folder (8 of 40
    such cases of the seen splits)."""
    tool_words = {w[:4] for t in tools for w in re.findall(r"[a-z]{3,}", t.lower())}
    shares = any(w.lower()[:4] in tool_words for w in re.findall(r"[A-Za-z]{3,}", part))
    return _gives_nothing(part) and not shares


def _gives_nothing(part: str) -> bool:
    """Whether ``part`` gives no value of its own: no name in capitals past its first word,
    no number, no quote (an apostrophe is none: "what's"), no path. "I" is no name ("but I'm
    not convinced")."""
    words = part.split()
    return not (re.search(r"\d|/|\"|(?<!\w)'|'(?!\w)", part) or any(w[:1].isupper() and not _I.fullmatch(w) for w in words[1:]))


_I = re.compile(r"I(?:['’]\w+)?\W*")


# A key of a result: "version = 1.5.3", "version: 1.5.3", '"version": "1.5.3"'.
_KEY = re.compile(r'(?:^[ \t]*"?|")([A-Za-z_][\w-]*)"?[ \t]*[:=]', re.MULTILINE)


def named_files(task: str, workspace: Workspace | None) -> list[str]:
    """The existing files a task names or can only mean (a misspelling), and the one or two
    files of a folder named where a file is meant."""
    if workspace is None:
        return []
    named = workspace.mentioned(task)
    files = [p for p in named if (workspace.root / p).is_file()] + _meant(task, workspace)
    if not re.search(r"\bhow many\b|\bcount\b", task, re.IGNORECASE):
        # A folder named where a file is meant: its one or two files are what to read.
        for folder in (p for p in named if (workspace.root / p).is_dir()):
            inside = [f for f in workspace.text_files() if f.startswith(folder.rstrip("/") + "/") and "/" not in f[len(folder) + 1 :]]
            files += inside if len(inside) <= 2 else []
    return list(dict.fromkeys(files))


def _meant(task: str, workspace: Workspace, limit: int = 200) -> list[str]:
    """The existing file each path the task names but gets wrong (misspelt, in another case
    or folder) can only mean: one candidate, or none. Shown the folder, the 0.5B model
    answered "the deadline in docs/dadline.txt" with a date it made up."""
    existing = workspace.text_files(limit)
    out = []
    for w in (w for w in path_words(task) if PATH_SHAPED.fullmatch(w) and not (workspace.root / w).exists()):
        near = [e for e in existing if _may_mean(w, e)]
        out += near if len(near) == 1 else []
    return out


def means_the_same(kind: str, given: dict, corrected: dict) -> bool:
    """Whether an error's corrected call only puts right what the call got wrong (a path
    misspelt, in another case or folder), so that the next step must make it. Offered the
    nearest file when the one asked for was not there, the 0.5B model read and reported it."""
    if kind != "not_found":
        return True
    changed = [(given.get(k), v) for k, v in corrected.items() if v != given.get(k)]
    return all(isinstance(a, str) and isinstance(b, str) and _may_mean(a.rstrip("/"), b.rstrip("/")) for a, b in changed)


def read_whole(arguments: dict[str, Any], result: str) -> bool:
    """Whether a read_file result holds the file from its first line to its last."""
    return not arguments.get("offset") and _WHOLE.search(result) is not None


_WHOLE = re.compile(r"(?:^|\n)\[end of [^\n]*: \d+ lines?(?:; [^\n]*)?\]\s*$")


def rereads(call: ToolCall, whole: set[str]) -> bool:
    """A read or a listing of a file the history already holds whole, at any offset:
    nothing new to learn. Having read a 3-line file, the 1.5B model read it again from
    offset 3 (past the end), three times; asked for "the functions in" a file it had
    read, the 0.5B model listed the file as a folder, then its folder, and answered
    from the listing (dev: 3 of 34 code questions)."""
    return call.name in ("read_file", "list_dir") and call.arguments.get("path") in whole


class Repeat(str, Enum):
    """What a turn that only repeats earlier calls is taken to mean."""

    NONE = "none"  # not a repeat
    ANSWER = "answer"  # the results are in: write the answer from them
    CHANGE = "change"  # the file is read: now make the change the task asks for


def on_repeat(task: str, changed: bool) -> Repeat:
    """A repeat in a task that asks for a change, before any change succeeded, means the
    model is stuck before the edit; otherwise the evidence is in and the answer is due."""
    return Repeat.CHANGE if wants_change(task) and not changed else Repeat.ANSWER


def _may_mean(named: str, path: str) -> bool:
    """Whether a path named in a task may mean an existing ``path``: the same path in
    another case, the same name in another folder, or a close name in the same folder
    (whole paths compare too kindly: records/code.txt is 88 % records/door.txt)."""
    a, b = named.lower(), path.lower()
    (da, na), (db, nb) = posixpath.split(a), posixpath.split(b)
    return a == b or na == nb or (da == db and fuzz.ratio(na, nb) >= 80)
