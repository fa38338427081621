"""The agent's decisions about the model's next turn, in one place: when the first step
must call a tool, what a repeated call means, when and how an answer is written from the
evidence gathered. Each was chosen on the dev split of the task suite (see the README);
the loop asks, this module decides."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Collection
from enum import Enum

from rapidfuzz import fuzz

from .errors import ErrorKind
from .messages import Message, ToolCall, ToolResult
from .prompt import load_prompt
from .tools.base import Tool
from .tools.builtin import CONFIG_SUFFIXES, SETTING
from .tools.workspace import PATH_SHAPED, Workspace, path_words

# Errors that say a path argument named nothing usable (see Workspace.resolve).
PATH_ERRORS = frozenset({ErrorKind.NOT_FOUND, ErrorKind.NOT_A_FILE, ErrorKind.NOT_A_DIR})

# Tokens that start structured output: a call's envelope, or a call in disguise.
STRUCTURED_STARTS = ("{", "[", "`", "<")

# A task that asks for a change: one of these verbs leads a sentence or a clause ("and
# change", "then fix") or follows "please", "can you", "I need you to" ("write out the
# names" and "add up" ask to be told).
_CHANGE_VERBS = (
    r"create|write(?!\s+out\b)|make(?!\s+(?:me\s+|us\s+)?a\s+list\b)|add(?!\s+up\b)|append|put(?!\s+together\b)|fix|"
    r"correct|rename|replace|change|set(?!\s+me\b)|update|edit|modify|delete|remove|copy|save(?!\s+me\b)|insert|move|"
    r"take(?!\s+(?:a\s+)?(?:quick\s+)?(?:look|peek|glance|gander)\b)|store|record|place|paste|enter|adjust|alter|amend|repair|"
    r"swap|switch|rewrite|overwrite|erase|clear|drop|bump|increase|decrease|stick|tack|jot|stash|duplicate|"
    r"turn(?!\s+up\b)|toggle|flip|raise|lower|reduce|restore|tweak|patch|revise|reword|retitle"
)  # not the idioms that ask to be told: "take a look", "put together a list", "save me"
_CHANGE = re.compile(
    r"(?:^|[.!?:;]\s+|\bplease\s+|,\s*|\b(?:can|could|would|will)\s+you\s+(?:please\s+)?|\byou\s+to\s+|\bif\s+you\s+(?:could|can|would)\s+(?:please\s+)?"
    rf"|\b(?:and|then|let'?s|let\s+us|help\s+me)\s+)({_CHANGE_VERBS})\b(?![./]\w)",  # not 'store.txt'
    re.IGNORECASE,
)
# The same verbs after "would you mind", "try": "Would you mind changing the port in F to 80?"
_GERUND = re.compile(
    r"\b(?:mind|try|trying|start|consider|about)\s+(creating|writing|making|adding|appending|putting|fixing|correcting|"
    r"renaming|replacing|changing|setting|updating|editing|modifying|deleting|removing|copying|saving|inserting|moving|"
    r"storing|bumping|increasing|decreasing|switching|turning|sticking|tacking)\b",
    re.IGNORECASE,
)
# A state the task says a file must reach, with no verb to do it: "There is a typo in X:
# 'a' must become 'b'." (a held-out split's wording, read as a question and left undone).
_MUST_BE = re.compile(
    r"\b(must|should|needs? to|has to|have to|ought to)\s+(now\s+)?(be|become|read|say|equal|contain|hold|have|get)\b"
    r"|\btypos?\b|\bmisspel|\bspell\w* (it |\S+ )?wrong|\bspelling (mistake|error)"
    r"|(?<![=!<>\w])[A-Za-z_][\w.-]*\s*=\s*[\w\"'.-]+",  # "port=9090 in config.toml": a setting's new state
    re.IGNORECASE,
)
# A file asked for, or a state wished for: "I need a file X with ...", "I want the port in X
# to be 80", "I'd like calc called compute instead" (asked to be told by their first words).
_WISH = re.compile(
    r"\b(new|fresh|empty)\s+file\b|\b(needs?|wants?|like)\s+(a|an)\s+file\b"
    r"|\b(wants?|like|needs?)\s+(?!to\b)(?:\S+\s+){1,8}?to\s+(be|become|read|say)\b|\bcalled\s+\S+\s+instead\b",
    re.IGNORECASE,
)
# A change wished for in the passive, question or not: "F needs its workers changed to 7 -
# can you do that?", "I want '- milk' added to F as the final line." (a held-out split's).
_DONE_TO = re.compile(
    r"\b(needs?|wants?|wanted|like)\s+(?!been\b)(?:[^\s?!;]+\s+){1,8}?(?:"
    r"(changed|set|updated|bumped|increased|decreased|switched|renamed|fixed|corrected|edited|modified|replaced|made)\s+(to|into|with|from)"
    r"|(added|appended|inserted|written|copied|put|saved|stored|moved)\s+(to|into|onto|at|as)"  # not "the port stored in F"
    r"|(removed|deleted)\s+from|created\s+(with|at|containing|holding))\b",
    re.IGNORECASE,
)
# A request put as a question is still a request: "Can you add X to the end of F?", "F
# needs X - can you do that?"
_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:can|could|would|will)\s+you\b"
    r"|\b(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:do|handle|sort(?:\s+out)?|take\s+care\s+of)\s+(?:that|it|this)\b",
    re.IGNORECASE,
)
_WH_START = re.compile(r"\s*(what|which|who|where|when|why|how)\b", re.IGNORECASE)
_QUESTION = re.compile(r"\?\s*$|^\s*(what|which|who|where|when|why|how|is|are|does|do)\b", re.IGNORECASE)
# A question about the folder itself, with no path named: look before answering.
_ABOUT_WORKSPACE = re.compile(
    r"\b(this|the|our|my)\s+(project|folder|repo|repository|directory|workspace|codebase|package|service|app|application|"
    r"program|software|code\s*base)\b|^(?!.*/)[^?]*\b(version|dependenc\w+)\b|\bin here\b|\bhere\b\s*\?|\b(the|this|our|my)\s+\w+\s+here\b|\bwe('re)?\b",
    re.IGNORECASE,
)


def wants_change(task: str) -> bool:
    """Whether the task asks for a change to the workspace (not only for an answer): a
    change verb, a file wished for, or a state a file must reach (unless it is a question
    or asks to be told), and a file to change ("Write a long story" asks for prose)."""
    request = _REQUEST.search(task)  # "Can you ...?" asks for something done
    question, told = (rx.search(task) and not request for rx in (_QUESTION, _ASKS))
    stated = not question and (_WISH.search(task) or ((_MUST_BE.search(task) or _APPEND.search(task)) and not told))
    stated = stated or (_DONE_TO.search(task) and not _WH_START.match(task))
    if not _CHANGE.search(task.strip()) and not _GERUND.search(task) and not stated:
        return False
    return bool(re.search(r"\b(file|folder)\b", task, re.IGNORECASE)) or any(PATH_SHAPED.fullmatch(w) for w in path_words(task))


_CHANGE_WORD = re.compile(rf"\b({_CHANGE_VERBS})\b(?![./]\w)", re.IGNORECASE)
# A question, or a request for something to be told, not done: "I need the port from X."
_ASKS = re.compile(
    r"(?:^|[.!?;:,]\s+)\s*(?:please\s+|(?:can|could|would)\s+you\s+)?(what|which|who|where|when|why|how|is|are|does|do|list|tell|say|name|"
    r"read|find|show|count|tally|give|get|report|look|check|open|according|print|write\s+out|identify|locate|determine|"
    r"fetch|grab|pull|dig|peek|figure|work\s+out|confirm|remind|let\s+me\s+know|fill\s+me\s+in|recall|spell|compute|"
    r"calculate|enumerate|summari[sz]e|display|search|scan|go\s+through|look\s+through|"
    r"need|i\s+(?:need|want|would\s+like|wonder)|i'd\s+like|i'm\s+curious)\b|\band\s+(?:then\s+)?(?:tell|say|name|show|give|report|list|let\s+me\s+know|fill\s+me\s+in)\b|\?\s*$",
    re.IGNORECASE,
)


# What joins the parts of a request that each need a call: "Seoul, Madrid and Dublin",
# "convert 5 USD to CAD; also, what is Intel at?". Quoted text is taken out first.
_PARTS = re.compile(r"[,;](?=\s)|&|\b(?:and|plus|also|then|as well as)\b|[?.!](?=\s)", re.IGNORECASE)
_QUOTE = re.compile(r"\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d|(?<!\w)'[^'\n]*'(?!\w)")
MAX_CALLS = 8  # the calls one turn may hold (the grammar's bound)


def calls_implied(request: str) -> int:
    """The calls a request implies, counted from its parts: a list of three cities, two
    jobs joined by "and". An upper bound, often high ("size medium, whole milk" is one
    order): the decoder goes on only while the model's own probability of another call
    is high enough (``MoreCalls``)."""
    return max(1, min(MAX_CALLS, len(request_parts(request))))


def request_parts(request: str) -> list[str]:
    """The parts of a request that may each need a call (see ``calls_implied``). Split only
    outside quotes, and a part that is only a quote is none; a part keeps its quoted text,
    which may be what a call names ("Open a ticket: \"Disk full\"")."""
    masked = _QUOTE.sub(lambda m: " " * len(m.group()), request)
    cuts = [0, *(i for m in _PARTS.finditer(masked) for i in (m.start(), m.end())), len(request)]
    spans = list(zip(cuts[::2], cuts[1::2]))
    return [request[a:b].strip() for a, b in spans if any(ch.isalpha() for ch in masked[a:b])]


def parts_left(parts: Collection[str], arguments: list[dict[str, Any]]) -> int:
    """The parts that no call's argument values name yet: "a flat white, size medium,
    whole milk" is one call naming all three; "Seoul, Madrid and Dublin" after a call
    for Seoul has two left. A value counts where a word starts with it ("cool": "cooling"),
    or where it holds the whole part ("Hello, world!" names "world!"); "_" and "-" count as
    spaces ("living_room": "living room")."""
    values = [_plain(v) for a in arguments for v in _values(a) if len(v) >= 2 or v.isdigit()]

    def named(part: str) -> bool:
        p = _plain(part)
        whole = re.compile(r"(?<!\w)" + re.escape(p) + r"(?!\w)")
        return any(re.search(r"(?<!\w)" + re.escape(v), p) or whole.search(v) for v in values)

    return sum(not named(p) for p in parts)


def _plain(text: str) -> str:
    return re.sub(r"[_\-\s]+", " ", text).lower()


def _values(node: Any) -> list[str]:
    """The strings and numbers of an argument value, at any depth."""
    if isinstance(node, dict):
        return [v for x in node.values() for v in _values(x)]
    if isinstance(node, list):
        return [v for x in node for v in _values(x)]
    if isinstance(node, bool) or node is None:
        return []
    if isinstance(node, float) and node.is_integer():
        node = int(node)
    return [str(node)]


_WORD = re.compile(r"[A-Za-z]{3,}")
_COMMON = frozenset(
    "the and for with from that this what which how are was you your can get set give tell show "
    "please now today current one all any some its into out about".split()
)


def _stems(text: str) -> set[str]:
    """Content words, cut to four letters (weather/weathers, light/lights)."""
    return {w.lower()[:4] for w in _WORD.findall(text.replace("_", " ")) if w.lower() not in _COMMON}


def tool_match(request: str, tools: list[dict[str, Any]]) -> int:
    """How well ``request`` matches the offered tools: the most content words it shares with
    one tool's name, description and parameter names. 0: it shares none with any."""
    asked = _stems(request)
    return max((len(asked & _tool_stems(t)) for t in tools), default=0)


def _tool_stems(tool: dict[str, Any]) -> set[str]:
    f = tool.get("function", tool)
    params = " ".join((f.get("parameters") or {}).get("properties", {}))
    return _stems(f"{f.get('name', '')} {f.get('description', '')} {params}")


def calls_implied_now(request: str, msgs: list[Message]) -> int:
    """The calls the next turn should hold: what ``request`` implies when the turn answers
    it (the conversation ends with the user's turn); one after a tool result."""
    return calls_implied(request) if msgs and msgs[-1].role == "user" else 1


@dataclass(frozen=True)
class CallPlan:
    """What a turn that may hold several calls is told of the request: how many calls it
    implies, its parts, and the tool each part's words point to ("" where none does)."""

    implied: int = 1
    parts: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()


def call_plan(request: str, msgs: list[Message], tools: list[dict[str, Any]]) -> CallPlan:
    """The plan of the next turn (``calls_implied_now``); parts only where it implies several."""
    implied = calls_implied_now(request, msgs)
    if implied < 2:
        return CallPlan(implied)
    parts = tuple(request_parts(request))
    return CallPlan(implied, parts, tuple(part_tool(p, tools) for p in parts))


def part_tool(part: str, tools: list[dict[str, Any]]) -> str:
    """The one tool sharing the most content words with ``part`` ("the local time in Oslo":
    get_time), or "" where none or several do: "and docs/install.md" names no tool of its own."""
    scores = [(len(_stems(part) & _tool_stems(t)), t.get("function", t).get("name", "")) for t in tools]
    best = max((n for n, _ in scores), default=0)
    names = [name for n, name in scores if n == best]
    return names[0] if best and len(names) == 1 else ""


def next_tool(plan_tools: tuple[str, ...], called: list[str]) -> str:
    """The tool of the turn's next call: the one its part points to (the k-th call serves the
    k-th part), else the one called last (a list goes on: "Read a.md and b.md")."""
    k = len(called)
    if k < len(plan_tools) and plan_tools[k]:
        return plan_tools[k]
    return called[-1] if called else ""


def asks_only(task: str) -> bool:
    """Whether the task is only a question (a question word or mark, or a request to be
    told) that asks for no change: then no file is written. Having read
    notes/server.txt to answer "what port...?", the 1.5B model appended its answer to the
    file; asked "I need the port from notes/sever.txt.", it rewrote the file."""
    return bool(_ASKS.search(task)) and not wants_change(task)


def writes_files(t: Tool) -> bool:
    """A tool that changes a file it names (write_file, edit_file), not a command."""
    return t.irreversible and "path" in t.parameters.get("properties", {})


# Words of a question that name nothing to search for.
_NOT_TERMS = frozenset(
    "what which who whom whose where when why how does did done is are was were the this that these those our my your "
    "its project folder repo repository directory workspace codebase package here there with from into for and not any "
    "all about declare declares declared number value say tell give show find list name configured configure set run "
    "runs running use used uses can could should would will file files one under mention mentions mentioned talk "
    "talks refer refers referred contain contains containing says report find out look check know want need please "
    "get".split()
)
# A question after the file that holds a word: "which file in docs mentions X?"
_WHICH_FILE = re.compile(
    r"\b(which|where|what|find|point me|show me|name|identify|locate)\b"
    r"|\bthe (file|document) (that|which|with|where|containing|mentioning)\b",
    re.IGNORECASE,
)
_MENTIONS = re.compile(
    r"\b(mention\w*|refer\w*|talks? about|contain\w*|says?|appear\w*|includ\w*|(has|with) \S+ in it|brings? up|names"
    r"|(is|are) written|speaks? (of|about)|discuss\w*|cites?|quot\w*|words?|terms?|(comes?|shows?|pops?|turns?|crops?) up|occur\w*"
    r"|uses?|used|features?)\b",
    re.IGNORECASE,
)


def task_words(task: str) -> list[str]:
    """The words of a task a search can look for, in order: no question words, no words
    naming the folder itself."""
    words = (w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_]{2,}", task))
    return list(dict.fromkeys(w for w in words if w not in _NOT_TERMS))


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


_COUNTS = re.compile(r"\bhow many\b|\bcount\b|\bnumber of\b|\btally\b", re.IGNORECASE)
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


def asks_which_file(task: str) -> bool:
    """Whether a question asks which file holds a word ("Which file in notes mentions
    X?"): offered list_dir, the 0.5B model listed the folder and named a file at random."""
    return bool(_WHICH_FILE.search(task) and _MENTIONS.search(task) and re.search(r"\b(files?|documents?)\b", task, re.IGNORECASE))


def search_words(task: str, workspace: Workspace | None, tried: Collection[str] = ()) -> list[str]:
    """The task's words a search may look for: not the folders or files it names (searched
    for 'docs', nothing is found in docs/), not a pattern already searched for."""
    named = {part for p in (workspace.mentioned(task) if workspace else []) for part in re.split(r"[/.]", p.lower())}
    return [w for w in task_words(task) if w not in named and w not in tried]


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


def with_found_files(answer: str, task: str, history: list[Message]) -> str:
    """A which-file answer that names none of the files the search found, with them added:
    shown "data/juniper.txt:2: The volcano ...", the 0.5B model wrote "The document in data
    talks about volcano." """
    hits = search_hits(history) if asks_which_file(task) else []
    if not hits or any(h in answer or posixpath.basename(h) in answer for h in hits):
        return answer
    return f"{answer} (found in {', '.join(hits)})" if answer else ", ".join(hits)


_NEGATIVE = re.compile(r"^(?:no files named like|no matches for) ")
_DENIES = re.compile(r"\b(not|no|none|nothing|never|missing|cannot|unable|absent)\b|n't\b", re.IGNORECASE)


def finished_answer(answer: str, task: str, history: list[Message]) -> str:
    """The answer a question's run ends with: what it leaves out of the evidence added (a
    calculated value, the files a search found, the one value read for the thing asked),
    or, when every look found nothing and the answer denies nothing, that finding."""
    found = evidence(history)
    answer = with_found_files(with_calculation(answer, found), task, history)
    if not asks_only(task) or not found:
        return answer
    misses = [e.result.content.split(": ", 1)[-1] if e.result.content.startswith("error (") else e.result.content.splitlines()[0]
              for e in found if e.result.content.startswith(f"error ({ErrorKind.NOT_FOUND})") or _NEGATIVE.match(e.result.content)]
    if len(misses) == len(found) and not _DENIES.search(answer):
        # Shown only "no files named like 'roadmap.md'", the 0.5B model answered "docs/roadmap.md".
        return "Not found: " + "; ".join(misses)
    return with_return_read(with_value_read(answer, task, found), task, found)


_KEYED = re.compile(r"^\s*([A-Za-z][\w .-]{1,40}?)\s*[:=]\s*(\S.{0,80}?)\s*$")


def with_value_read(answer: str, task: str, found: list[Evidence]) -> str:
    """An answer that leaves out the one value the reads hold for what the question names
    ("Launch code: 1605" for "the launch code"), with that line added: asked to "dig out"
    the launch code, the 0.5B model wrote "The launch code was found in ops/launch.txt."."""
    if computes(task) or asks_which_file(task):
        return answer
    words = set(re.findall(r"[a-z0-9]+", task.lower()))
    lines: dict[str, str] = {}
    for e in (e for e in found if e.call.name == "read_file" and not e.result.content.startswith("error (")):
        for line in e.result.content.splitlines():
            m = _KEYED.match(line)
            key = re.findall(r"[a-z0-9]+", m.group(1).lower().replace("_", " ")) if m else []
            if m and key and all(k in words for k in key):
                lines.setdefault(m.group(2).strip().strip("\"'").lower(), line.strip())
    if len(lines) != 1 or next(iter(lines)) in answer.lower():
        return answer
    return f"{answer} ({next(iter(lines.values()))})" if answer else next(iter(lines.values()))


_RETURNS = re.compile(r"\breturn\w*|\bgives? back\b|\bcomes? back\b|\bhands? back\b|\boutputs?\b", re.IGNORECASE)


def returned(source: str, name: str) -> list[str]:
    """The values the function ``name`` returns in a source text (``def name(...):`` and its
    indented body's ``return X`` lines), each once."""
    m = re.search(rf"^([ \t]*)def\s+{re.escape(name)}\s*\(.*$", source, re.MULTILINE)
    if m is None:
        return []
    out: list[str] = []
    for line in source[m.end():].splitlines()[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= len(m.group(1)):
            break  # the body ends where the indentation does
        if r := re.match(r"\s+return\s+(.+?)\s*$", line):
            out += [r.group(1)] if r.group(1) not in out else []
    return out


def with_return_read(answer: str, task: str, found: list[Evidence]) -> str:
    """An answer to what a function returns that leaves out the one value its code read
    returns, replaced by that value: asked what merge_maps returns, the 0.5B model gave
    the return value of the function after it."""
    if not _RETURNS.search(task):
        return answer
    values = {
        (name, v, str(e.call.arguments.get("path", "")))
        for e in found if e.call.name == "read_file" and not e.result.content.startswith("error (")
        for name in re.findall(r"[A-Za-z_]\w*", task) for v in returned(e.result.content, name)
    }
    if len(values) != 1:
        return answer
    name, value, path = values.pop()
    if value.strip("\"'") in answer:
        return answer
    return f"{name} in {path} returns {value}."


def hits_to_read(task: str, history: list[Message], read: Collection[str], most: int = 3) -> list[str]:
    """The files a search found for a question that asks what they hold (not which file it
    is), while none of them is read and they are few: the next call reads one. Shown
    "settings.ini:1: [server]", the 0.5B model answered "port 8080" without reading line 2."""
    if not asks_only(task) or asks_which_file(task):
        return []
    hits = search_hits(history)
    return hits if 0 < len(hits) <= most and not any(h in read for h in hits) else []


def computes(task: str) -> bool:
    """Whether a question asks for something worked out (arithmetic, the larger of numbers,
    a word reversed): then, once what it names is read, the next call is ``calculate``.
    Asked for the total of 40 and 56 the 0.5B model wrote 92; 'stone' backwards, 'stone'.
    "At least"/"at most" ask for nothing: shown calculate for "Write a story, at least
    five paragraphs", the model called it with a runaway number."""
    return any(rx.search(task) for rx in _OPERATIONS.values()) and not wants_change(task)


def expressions(task: str, history: list[Message], limit: int = 6) -> list[str]:
    """The expressions ``calculate`` is offered for a question that asks for something
    worked out: over the numbers the task gives, or those on the lines of the results that
    name the task's words, and over the text the task quotes. Empty: none to offer (the
    expression is free). Free, the 0.5B model wrote 'tickets + bottles' after reading
    'tickets: 40' and 'tickets: 56', and "stone == 'stone'" for 'stone' backwards."""
    words = [w for w in task_words(task) if not any(rx.fullmatch(w) for rx in _OPERATIONS.values())]
    rx = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE) if words else None
    nums = re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", task)
    for m in (m for m in history if m.role == "tool" and not m.content.startswith("error (")):
        for line in m.content.splitlines():
            if rx is not None and rx.search(line) and not line.startswith("[end of"):
                nums += re.findall(r"(?<![\w.-])\d+(?:\.\d+)?(?![\w.-])", line)
    ops: dict[str, list[str]] = {}
    if 2 <= len(nums) <= limit:
        ops["sum"], ops["max"], ops["min"] = [" + ".join(nums)], [f"max({', '.join(nums)})"], [f"min({', '.join(nums)})"]
        if len(nums) == 2:
            ops["difference"], ops["product"] = [f"{nums[0]} - {nums[1]}"], [f"{nums[0]} * {nums[1]}"]
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(task)]
    if quoted:
        ops["reverse"], ops["length"] = [f"{q!r}[::-1]" for q in quoted], [f"len({q!r})" for q in quoted]
    # The operation the question names, when it names exactly one: given the choice, the
    # 0.5B model summed for "which is larger" and took the length for "backwards".
    named = [op for op, rx in _OPERATIONS.items() if op in ops and rx.search(task)]
    return ops[named[0]] if len(named) == 1 else [e for es in ops.values() for e in es]


_OPERATIONS = {
    "sum": re.compile(
        r"\b(total|sum|add up|adds up|plus|altogether|combined|in all|all told|across both)\b|\bhow (many|much)\b[^?]*\b(both|across)\b|\b(how (many|much)|add)\b[^?]*\btogether\b|\d\s*\+\s*\d"
        r"|\badd(?:ing)?\s+-?\d[\d.]*\s+(?:and|to)\s+-?\d|\b(?:what|how much)(?:'s|\s+is|\s+are|\s+do|\s+does)?\s+-?\d[\d.]*\s+and\s+-?\d"
        r"|\d\s+and\s+-?\d[\d.]*\s+(?:make|makes|come to|comes to|equal|equals|give|gives)\b", re.IGNORECASE
    ),
    "max": re.compile(r"\b(larger|largest|bigger|biggest|greater|greatest|(?:has|have|holds?) more|(?<!at )most|higher|highest|maximum)\b", re.IGNORECASE),
    "min": re.compile(r"\b(smaller|smallest|fewer|fewest|(?<!at )least|lower|lowest|minimum)\b", re.IGNORECASE),
    "difference": re.compile(r"\b(difference|minus|subtract\w*)\b|\d\s*-\s*\d", re.IGNORECASE),
    "product": re.compile(r"\b(times|multiplied|product)\b|\d\s*[*\u00d7]\s*\d", re.IGNORECASE),
    "reverse": re.compile(
        r"\b(backwards?|reversed?|reverse|mirrored|inverted)\b|\bfrom the last letter\b|\blast (letter|character) (to|first)\b"
        r"|\bright to left\b|\bback to front\b|\bend to (start|beginning)\b", re.IGNORECASE
    ),
    "length": re.compile(r"\bhow many (letters|characters)\b|\blength\b", re.IGNORECASE),
}


_TOLD = re.compile(r"\b(what|which|who|where|when|why|how|tell|say|report|show|let me know|explain|confirm|list)\b", re.IGNORECASE)


def change_report(task: str, history: list[Message]) -> str | None:
    """What a change task's changes did, in the tools' own words (with the text written),
    as its answer; None when the task also asks to be told something, or nothing changed."""
    if not wants_change(task) or _TOLD.search(_QUOTE.sub("", task)):
        return None
    lines = []
    for c, r in call_results(history):
        if c.name not in ("write_file", "edit_file") or r.startswith("error ("):
            continue
        a = c.arguments
        what = f"{a.get('old')!r} -> {a.get('new')!r}" if c.name == "edit_file" else repr(a.get("content", ""))
        lines.append(f"{r.splitlines()[0]}: {what}" if len(what) <= 200 else r.splitlines()[0])
    return "Done: " + "; ".join(lines) if lines else None


def change_done(task: str, changed: set[str], to_create: list[str]) -> bool:
    """Whether a change task's change is made: one change succeeded and every file it asks
    to create exists. Then the run answers: left to go on, the 0.5B model appended the same
    line until the step limit, or undid a right edit with a second one."""
    return wants_change(task) and bool(changed) and all(p in changed for p in to_create)


def must_look(task: str, workspace: Workspace | None) -> bool:
    """Whether the first step must call a tool: the task names a file or folder (there or
    not), asks about the folder itself ("this project"), or asks for a change."""
    if workspace is None:
        return False
    return workspace.names_a_path(task) or bool(_ABOUT_WORKSPACE.search(task)) or wants_change(task)


def look_before_change(task: str, workspace: Workspace | None) -> bool:
    """Whether the first step of a change task must read rather than write: the task names
    a file that exists (a file to edit, or a source to copy from), so its contents matter."""
    return workspace is not None and wants_change(task) and bool(workspace.mentioned(task))


def ready_to_append(task: str, workspace: Workspace | None, read: set[str]) -> bool:
    """Whether an append task has read every existing file it names: the next call is the
    append. Only appends: forced to change right after the read, the 0.5B model answered
    "set port to 9090" with an appending write_file in 13 of 56 dev edits (55/56 -> 42/56)."""
    return appends(task) and look_before_change(task, workspace) and not unread_named(task, workspace, read)


def write_targets(task: str, workspace: Workspace | None, limit: int = 200) -> list[str] | None:
    """The paths a write may name when the task names files: those it names, and the
    existing file each one may misspell. None: no narrowing. Told "create hello.txt" in a
    folder holding docs/, the 0.5B model wrote docs/hello.txt (and, offered every file,
    docs/setup.md)."""
    if workspace is None or not wants_change(task):
        return None
    from .validate import closest_names
    named = sorted(w for w in path_words(task) if PATH_SHAPED.fullmatch(w))
    existing = workspace.text_files(limit)
    if not named or len(existing) >= limit:
        return None
    out: list[str] = []
    for w in named:
        near = [] if w in existing else closest_names(w, existing, limit=1, cutoff=80)
        out += [p for p in [w, *near] if p not in out]  # a misspelling, or a new name: both
    return out


def to_create(task: str, workspace: Workspace | None, limit: int = 200, targets: list[str] | None = None) -> list[str]:
    """The files a change task names that do not exist and misspell no existing file: files
    to create. Told to copy a value "into a new file" the 0.5B model edited the source.
    ``targets``: ``write_targets`` already computed (it walks the tree)."""
    targets = targets if targets is not None else write_targets(task, workspace, limit)
    if not targets or workspace is None:
        return []
    existing = workspace.text_files(limit)
    return [t for t in targets if not any(_may_mean(t, e) for e in existing)]


def _may_mean(named: str, path: str) -> bool:
    """Whether a path named in a task may mean an existing ``path``: the same path in
    another case, the same name in another folder, or a close name in the same folder
    (whole paths compare too kindly: records/code.txt is 88 % records/door.txt)."""
    a, b = named.lower(), path.lower()
    (da, na), (db, nb) = posixpath.split(a), posixpath.split(b)
    return a == b or na == nb or (da == db and fuzz.ratio(na, nb) >= 80)


_APPEND = re.compile(
    r"\bappend|\b(at|to|on|onto) the (very )?(end|bottom|foot)\b|\b(new|last|final|closing) line\b"
    r"|\b(one more|another|an extra|extra|a new|new) (line|entry|item|bullet|task|row)\b|\bonto\b|\bafter the last line\b",
    re.IGNORECASE,
)


def appends(task: str) -> bool:
    """Whether the change asked for is lines added at a file's end: then the write appends
    (asked to append, the 0.5B model edited the first line instead)."""
    return wants_change(task) and bool(_APPEND.search(task))


# An argument whose value must be text copied from the file another argument names.
COPIED_TEXT = {"edit_file": ("old", "path")}


def spans(text: str, limit: int = 300, path: str = "") -> list[str] | None:
    """The pieces of a file an edit may replace: its lines (as they are, and stripped) and
    its words, in order of first appearance; None past ``limit`` (no narrowing then).
    Free to write old, the 0.5B model wrote 'old text', 'hi' or the file's path. In a
    settings file a setting's name alone is not offered: told "set workers to 10", the
    model replaced the name 'workers' with '26' or 'workers=10'."""
    names = {m.group(1).strip() for ln in text.splitlines() if (m := SETTING.match(ln))} if path.endswith(CONFIG_SUFFIXES) else set()
    out: dict[str, None] = {}
    for line in text.splitlines():
        for piece in (line, line.strip(), *re.findall(r"\S+", line), *re.findall(r"[\w.-]+", line)):
            if piece.strip() and piece not in names:
                out.setdefault(piece)
    return list(out) if len(out) <= limit else None


# Where an edit task's new text starts: "rename a to b", "replace a with b", "it should be b".
_NEW_TEXT = re.compile(r"\s(?:to|into|with|(?:should|must|needs? to)\s+(?:now\s+)?(?:be|become|read)|->|=>|\u2192)\s", re.IGNORECASE)


def named_spans(task: str, pieces: list[str]) -> list[str]:
    """The pieces an edit may replace that hold a word the task names before its new text
    (all of them when none does). Offered every piece of the file, the 0.5B model renamed
    'hi' for 'rename fetch_items', and set 'debug = true' for 'change the log_level to debug'."""
    parts = _NEW_TEXT.split(task)
    head = " ".join(parts[:-1]) if len(parts) > 1 else task
    words = [w for w in task_words(head) if not _CHANGE_WORD.fullmatch(w) and not PATH_SHAPED.fullmatch(w)]
    named = {p.lower() for w in path_words(head) if PATH_SHAPED.fullmatch(w) for p in re.split(r"[/.]", w)}
    words = [w for w in words if w not in named]
    exact = [p for p in pieces if p.lower() in words]
    if exact:
        return exact  # the word itself ('fetch_items'): offered its lines, the model rewrote one
    rx = [re.compile(rf"(?<![\w-]){re.escape(w)}(?![\w-])", re.IGNORECASE) for w in words]
    kept = [p for p in pieces if any(r.search(p) for r in rx)]
    return kept or pieces


_RENAME = re.compile(r"\brenam", re.IGNORECASE)
_ONE_WORD = re.compile(r"[\w][\w.-]*")


def new_word(task: str) -> str | None:
    """The one word an edit task gives as its new text: quoted after 'to', 'with' or 'should
    be' ("it should be 'receive'"), or, for a rename, the word after 'to'. Then the edit
    replaces a word of the file with it. Free, the 0.5B model wrote 'compute everywhere'
    for "rename calc to compute everywhere in app/worker.py"."""
    if not wants_change(task) or len(parts := _NEW_TEXT.split(task)) < 2:
        return None
    tail = parts[-1]
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(tail)]
    if quoted:
        return quoted[0] if len(quoted) == 1 and _ONE_WORD.fullmatch(quoted[0]) else None
    word = re.match(r"\s*([A-Za-z_]\w*)", tail) if _RENAME.search(task) else None
    return word.group(1) if word else None


def replaces_words(task: str) -> bool:
    """Whether a change replaces words inside a file (a rename, a word given as new text):
    then it is an edit, not a write. Offered write_file for "rename emit to publish", the
    0.5B model appended 'This is a test file.'."""
    return (edits_every(task) or new_word(task) is not None) and not appends(task)


def word_spans(pieces: list[str]) -> list[str]:
    """The pieces of a file that are one word (what a word given as new text replaces)."""
    return [p for p in pieces if _ONE_WORD.fullmatch(p)] or pieces


_EVERY = re.compile(r"\b(rename|every|everywhere|throughout|all occurrences|each occurrence|all uses)\b", re.IGNORECASE)


def edits_every(task: str) -> bool:
    """Whether an edit replaces every occurrence (edit_file's all=true): told to rename
    'load' everywhere, the 0.5B model sent the one-occurrence edit three times after its
    not_unique error."""
    return wants_change(task) and bool(_EVERY.search(task))


_QUOTED = re.compile(r"(?<!\w)'([^'\n]+)'(?!\w)|\"([^\"\n]+)\"|\u201c([^\u201d\n]+)\u201d")
_AFTER_COLON = re.compile(r":\s+(\S.*?)\s*$")
# Verbs that move a value from one file into another.
_COPY = re.compile(r"\b(copy|copies|take|save|write|holding|holds|store|put|record|keep|place|paste|transfer)\b", re.IGNORECASE)


def content_choices(task: str, sources: list[str], creates: bool = False) -> list[str] | None:
    """What a write's content may be, when the task says: a line or value of the file it
    copies from (``sources``: the texts of the files it names that were read); for an
    append, or a file it ``creates`` from nothing, the one text it quotes or gives after a
    colon. None: free. Left free, the 0.5B model wrote the task sentence itself into the
    file, and kept the quotes of "a file that just contains 'Welcome.'"."""
    append = appends(task)
    if sources and _COPY.search(task) and not append:
        return list(dict.fromkeys(p for text in sources for p in copy_pieces(text))) or None
    if not (append or (creates and not sources)):
        return None
    quoted = [q for m in _QUOTED.finditer(task) if not PATH_SHAPED.fullmatch(q := next(g for g in m.groups() if g))]
    if len(quoted) == 1:
        return [quoted[0]]
    if not quoted and (m := _AFTER_COLON.search(task)) and not PATH_SHAPED.fullmatch(m.group(1)):
        return [m.group(1)]
    return None


def copy_pieces(text: str) -> list[str]:
    """A file's lines, stripped, and the value of each 'name: value' or 'name = value' line."""
    out = []
    for line in (ln.strip() for ln in text.splitlines()):
        if line:
            out.append(line)
            if m := re.match(r"[^:=]{1,60}[:=]\s*(\S.*)$", line):
                out.append(m.group(1).strip().strip('"'))
    return out


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


@dataclass
class Evidence:
    """A successful call and what it returned."""

    call: ToolCall
    result: ToolResult

    def render(self, limit: int) -> str:
        text = self.result.content
        if len(text) > limit:
            text = text[:limit] + "\n[... cut]"
        if text.startswith("error ("):  # 'error (not_found): path ...' -> what it means
            return f"{_heading(self.call)} none: {text.split(': ', 1)[-1]}"
        return f"{_heading(self.call)}\n{text}"


def _heading(call: ToolCall) -> str:
    """What a result is, in words (not as a call, which a small model copies back)."""
    a = call.arguments
    if call.name == "read_file":
        return f"Contents of {a.get('path')}:"
    if call.name == "list_dir":
        return f"Entries of the folder {a.get('path', '.')}:"
    if call.name == "search":
        return f"Lines holding {a.get('pattern')!r} under {a.get('path', '.')}:"
    if call.name == "find_files":
        return f"Files named like {a.get('pattern')!r} under {a.get('path', '.')}:"
    if call.name == "calculate":
        return "Calculated:"
    return f"Result of {call.name}:"


def echoes_task(answer: str, task: str) -> bool:
    """Whether an answer only writes the task back (a 0.5B model's way of not answering)."""
    a, t = " ".join(answer.lower().split()), " ".join(task.lower().split())
    # or the task whole inside it: "The folder you work in holds: ...\n\n<the task>"
    return bool(a) and fuzz.ratio(a, t) >= 80 or (len(a) > 12 and a in t) or (len(t) > 12 and t in a)


_NUMBER = re.compile(r"\d+(?:[.:/-]\d+)*")


def unsupported(answer: str, task: str, history: list[Message]) -> list[str]:
    """Numbers in an answer that neither the task nor any tool result holds: a sign it was
    made up ("version 1.0.0" after reading only the README). A sum is such a number too,
    so the check asks for one more look, not for silence."""
    seen = task + "\n" + "\n".join(m.content for m in history if m.role == "tool")
    return [n for n in _NUMBER.findall(answer) if n not in seen]


def call_results(history: list[Message]) -> list[tuple[ToolCall, str]]:
    """Each result of ``history`` with the call it answers, in order (a result whose call is
    not there left out)."""
    calls = {c.id: c for m in history if m.role == "assistant" for c in m.tool_calls}
    return [(calls[m.tool_call_id], m.content) for m in history if m.role == "tool" and m.tool_call_id in calls]


def answered(history: list[Message]) -> set[str]:
    """The calls of ``history`` (canonical) whose results it holds, errors aside."""
    return {c.canonical() for c, r in call_results(history) if not r.startswith("error (")}


def evidence(history: list[Message]) -> list[Evidence]:
    """Every successful call of the history with its result, each distinct result once, and
    the calls that failed with nothing to correct (a file that is not there is a finding)."""
    out: list[Evidence] = []
    seen: set[str] = set()
    for c, r in call_results(history):
        if "to retry:" in r or r in seen:
            continue
        seen.add(r)
        out.append(Evidence(c, ToolResult(c.id, c.name, r)))
    return out


def answer_prompt(task: str, history: list[Message], *, forced: str | None = None, limit: int = 6000) -> str:
    """The user turn an answer is written from: the question and the evidence alone, not
    the whole conversation with its errors and repeated calls. ``forced``: why the run
    stopped early, so that the answer says what was found and what was not done."""
    found = evidence(history)
    per = max(400, limit // max(1, len(found)))
    body = "\n\n".join(e.render(per) for e in found) or "(no tool call succeeded)"
    value = calculated(found)
    if value is not None and not forced:
        # Shown only the calculation, the 0.5B model wrote "the lamps in south.txt are larger", no number.
        return load_prompt("answer_calculated").strip().format(task=task, evidence=body, value=value)
    name = "answer_forced" if forced else "answer"
    return load_prompt(name).strip().format(task=task, evidence=body, reason=forced or "")


def what_was_found(history: list[Message], limit: int = 1500) -> str:
    """The evidence itself as the answer, for a model that twice wrote the task back instead
    of answering ("can you give me a list of all the functions in src/tools.py?")."""
    found = evidence(history)
    per = max(200, limit // max(1, len(found)))
    return "What was found:\n\n" + ("\n\n".join(e.render(per) for e in found) or "nothing")


def with_calculation(answer: str, found: list[Evidence]) -> str:
    """An answer that leaves out the value its calculation gave, with the calculation added:
    asked "which is larger? Give the number" and shown max(63, 48) = 63, the 0.5B model
    wrote "the lamps in south.txt are larger" with no number, however the prompt asked."""
    value = calculated(found)
    if value is None or value in answer:
        return answer
    line = next(e.result.content for e in reversed(found) if e.call.name == "calculate" and " = " in e.result.content)
    return f"{answer} ({line})" if answer else line


def calculated(found: list[Evidence]) -> str | None:
    """The value of the last calculation that succeeded, if any."""
    for e in reversed(found):
        if e.call.name == "calculate" and " = " in e.result.content:
            return e.result.content.rsplit(" = ", 1)[1].strip()
    return None
