"""The calls of a turn: what starts one, how many a request implies, the tool each part
points to; and the calls the history holds with their results."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ..constraint import MAX_CALLS
from ..constraint.grammar import code_examples as grammar_codes
from ..messages import Message, ToolCall
from .wording import _QUOTE, unwrapped


# Tokens that start structured output: a call's envelope, or a call in disguise.
STRUCTURED_STARTS = ("{", "[", "`", "<")


# What joins the parts of a request that each need a call: "Seoul, Madrid and Dublin",
# "convert 5 USD to CAD; also, what is Intel at?", "weather in Rome + Oslo forecast" (not a
# phone number's "+"), "Toronto weather / Paris time" (not a path's "/"). Quoted text is
# taken out first.
_PARTS = re.compile(r"[,;](?=\s)|&|(?<=\s)[+/](?=\s)|\b(?:and|plus|also|then|as well as)\b|[?.!](?=\s)", re.IGNORECASE)

# "between 50 and 150", "between Paris and Rome": one range, one part.
_RANGE = re.compile(r"\bbetween\s+[^\s,;]+(?:\s+[^\s,;]+)?\s+and\b", re.IGNORECASE)


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
    masked = _RANGE.sub(lambda m: m.group()[:-3] + "   ", masked)
    cuts = [0, *(i for m in _PARTS.finditer(masked) for i in (m.start(), m.end())), len(request)]
    spans = list(zip(cuts[::2], cuts[1::2]))
    return [request[a:b].strip() for a, b in spans if any(ch.isalpha() for ch in masked[a:b])]


def parts_left(parts: Collection[str], arguments: list[dict[str, Any]], serving: Sequence[str] = (), called: Sequence[str] = ()) -> int:
    """The parts that no call names yet (``named``): "a flat white, size medium, whole milk"
    is one call naming all three; "Seoul, Madrid and Dublin" after a call for Seoul has two left."""
    return sum(not n for n in named(parts, arguments, serving, called))


def named(parts: Collection[str], arguments: list[dict[str, Any]], serving: Sequence[str] = (), called: Sequence[str] = ()) -> list[bool]:
    """For each part, whether a call names it. By its values, a call names the parts most
    of them name (``names``) and any one of them alone names: a call for USD to AUD names
    "USD to AUD", not "USD to CAD" too; one coffee order names "a flat white", "size
    medium" and "whole milk"; an email its "body 'See you'" too. A call of a tool new to
    the turn naming no new part by its values, all of them the request's, names the first
    part left that its tool serves, where the tool serving each part is known
    (``serving_tools``; ``called``: each call's tool): "the interest coverage ratio for the
    same period" by a call of that tool; not "I'm not looking to convert any amount" by a
    conversion of an amount made up."""
    parts = list(parts)
    done = [False] * len(parts)
    for k, args in enumerate(arguments):
        tool = called[k] if k < len(called) and serving else None
        values = [v for v in _values(args) if len(v) >= 2 or v.isdigit()]
        hits = [[names(v, p) for p in parts] for v in values]
        score = [sum(h[i] for h in hits) for i in range(len(parts))]
        new = False
        for i, n in enumerate(score):
            alone = any(h[i] and (sum(h) == 1 or _holds(v, parts[i])) for v, h in zip(values, hits))
            if n > 0 and (n == max(score) or alone):
                new, done[i] = new or not done[i], True
        given = all(any(h) for h in hits)  # every value the request's: none made up
        if not new and tool and tool not in called[:k] and given:
            left = [i for i in range(len(parts)) if not done[i] and serving[i] == tool]
            if left:
                done[left[0]] = True
    return done


def _holds(value: str, part: str) -> bool:
    """Whether ``value`` holds the whole of ``part`` ("Hello, world!" holds "world!")."""
    return re.search(r"(?<!\w)" + re.escape(_plain(part)) + r"(?!\w)", _plain(value)) is not None


def names(value: str, part: str) -> bool:
    """Whether an argument value names a part of the request: a word of the part starts with
    it ("cool": "cooling"), it holds the whole part ("Hello, world!" names "world!"), one of
    its words starts a word of the part where it has up to three ("Oslo, Norway": "in Oslo"),
    it is another spelling of one of its words ("Lisboa": "Lisbon"), its initials start a
    code of the part ("New York": "NYC"), or it is a code abbreviating a word of the part
    ("NFLX": "Netflix"). "_" and "-" count
    as spaces ("living_room")."""
    v, p = _plain(value), _plain(part)
    if re.search(r"(?<!\w)" + re.escape(v), p) or _holds(value, part) or _spelled(v, p) or _initials_of(v, part):
        return True
    if len(v.split()) <= 3 and any(re.search(r"(?<!\w)" + re.escape(w), p) for w in _content_words(v)):
        return True  # a name with more to it; not a sentence, whose "start" names "start a timer"
    if not _CODE.fullmatch(value):
        return False
    return any(_abbreviates(value.lower(), w) for w in re.findall(r"[a-z]{3,}", p) if w not in _COMMON)


_CODE = re.compile(r"[A-Z]{3,5}")  # a ticker, a currency, an airport


def _spelled(value: str, part: str) -> bool:
    """Whether ``value``, one word, is another spelling of a word of ``part``: as long within
    a letter, and the same but for its last two letters, four at least ("lisboa": "lisbon")."""
    if " " in value or len(value) < 5:
        return False
    def same_start(w: str) -> bool:
        return len(os.path.commonprefix([w, value])) >= max(4, min(len(w), len(value)) - 2)

    return any(abs(len(w) - len(value)) <= 1 and same_start(w) for w in re.findall(r"\w{5,}", part))


def _initials_of(value: str, part: str) -> bool:
    """Whether the initials of ``value``'s words (two or more) start a code of ``part``:
    "New York" for "NYC"."""
    words = value.split()
    return len(words) >= 2 and any(c.lower().startswith("".join(w[0] for w in words)) for c in re.findall(r"\b[A-Z]{2,5}\b", part))


def _content_words(text: str) -> list[str]:
    """The words of ``text`` set apart by spaces, three letters or more, not the most common
    ("notes.txt" is one word: its "txt" names no other file)."""
    words = (w.strip(".,;:!?\"'()") for w in text.split())
    return [w for w in words if len(w) >= 3 and any(c.isalpha() for c in w) and w not in _COMMON]


def _abbreviates(code: str, word: str) -> bool:
    """Whether ``code`` abbreviates ``word``: the same first letter, and its other letters in
    the word's rest, in order, one missing from a code of four or five ("intc": "intel",
    "aapl": "apple")."""
    if code[0] != word[0]:
        return False
    rest, letters = word[1:], code[1:]
    # The longest common subsequence of the two rests, row by row.
    row = [0] * (len(rest) + 1)
    for ch in letters:
        prev = row[:]
        for j, w in enumerate(rest, 1):
            row[j] = prev[j - 1] + 1 if ch == w else max(prev[j], row[j - 1])
    return row[-1] >= len(letters) - len(code) // 4


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


def no_tool_fits(request: str, tools: list[dict[str, Any]], relevance: list[float], floor: tuple[float, float]) -> bool:
    """Whether no offered tool does what ``request`` asks, so the first turn answers in prose:
    the best tool's fit (``Backend.tool_relevance``) is below ``floor[0]`` and the request
    shares no content word with any tool (``tool_match``), or below ``floor[1]`` whatever it
    shares. The call mass could not tell ("the capital of Austria" with get_time: 0.9)."""
    best = max(relevance, default=float("-inf"))
    return best < floor[1] or (best < floor[0] and tool_match(request, tools) == 0)


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
    implies, its parts, the tool of the call serving each part (``serving_tools``), and the
    optional texts of its tools (``optional_texts``), which name no part."""

    implied: int = 1
    parts: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    optional: frozenset[tuple[str, str]] = frozenset()
    names: tuple[tuple[str, ...], ...] = ()  # the names each part holds (``part_names``)
    examples: frozenset[tuple[str, str, str]] = frozenset()  # (tool, parameter, example) of codes (``code_examples``)


def call_plan(request: str, msgs: list[Message], tools: list[dict[str, Any]]) -> CallPlan:
    """The plan of the next turn (``calls_implied_now``); parts only where it implies several."""
    request = unwrapped(request)
    implied = calls_implied_now(request, msgs)
    if implied < 2:
        return CallPlan(implied)
    parts = tuple(request_parts(request))
    names = part_names(request, parts)
    return CallPlan(implied, parts, serving_tools(request, parts, tools), optional_texts(tools), names, code_examples(tools))


def part_names(request: str, parts: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The names each part of ``request`` holds: its words in capitals, a first word only
    where the part does not open a sentence ("Lisbon" in "..., Lisbon forecast 7 days"; not
    "Could"), none of the most common or ``_MARKERS``."""
    out = []
    for p, opens in zip(parts, sentence_starts(request, parts)):
        words = re.findall(r"(?<![\w'])[A-Z][A-Za-z]+", p)[1 if opens and re.match(r"\W*[A-Z]", p) else 0 :]
        out.append(tuple(w for w in words if w.lower() not in _COMMON | _MARKERS))
    return tuple(out)


def sentence_starts(request: str, parts: Sequence[str]) -> list[bool]:
    """For each part of ``request``, whether it opens a sentence (the request's start, or
    after ".", "?" or "!")."""
    out, at = [], 0
    for p in parts:
        start = request.find(p, at)
        at = start + len(p)
        out.append(start <= 0 or request[:start].rstrip()[-1:] in ".?!")
    return out


def code_examples(tools: list[dict[str, Any]]) -> frozenset[tuple[str, str, str]]:
    """Each (tool, parameter, example) where the parameter takes a code and its description
    gives examples (``grammar.code_examples``): "Ticker symbol, e.g. 'AAPL'"."""
    return frozenset((_name(t), k, e) for t in tools for k, spec in (_params(t).get("properties") or {}).items() for e in grammar_codes(spec))


def optional_texts(tools: list[dict[str, Any]]) -> frozenset[tuple[str, str]]:
    """Each (tool, parameter) that a call may leave out and that takes free text: a string
    with no enum and no default (a timer's label). Where the schema gives a default (a
    workspace tool's folder, "."), the model's value may come from what it was shown, not
    from the request."""
    out = set()
    for t in tools:
        params = _params(t)
        required = set(params.get("required") or ())
        for name, spec in (params.get("properties") or {}).items():
            free = isinstance(spec, dict) and spec.get("type") == "string" and not {"enum", "default"} & set(spec)
            if free and name not in required:
                out.add((_name(t), name))
    return frozenset(out)


def naming(calls: list[tuple[str, dict[str, Any]]], optional: frozenset[tuple[str, str]]) -> list[dict[str, Any]]:
    """The arguments of ``calls`` that may name a part of the request: not an optional text
    (the 0.5B model gave a timer the SMS text of the same request as its label)."""
    return [{k: v for k, v in args.items() if (name, k) not in optional} for name, args in calls]


def _name(tool: dict[str, Any]) -> str:
    return str(tool.get("function", tool).get("name", ""))


def _params(tool: dict[str, Any]) -> dict[str, Any]:
    return tool.get("function", tool).get("parameters") or {}


def part_tool(part: str, tools: list[dict[str, Any]]) -> str:
    """The one tool sharing the most content words with ``part`` ("the local time in Oslo":
    get_time), or "" where none or several do: "and docs/install.md" names no tool of its own.
    A word of the tool's name counts twice ("weather in Zurich": get_weather, not the weather
    forecast), and a code in capitals counts where it is the initials of the tool's words
    ("AQI": air quality index)."""
    asked, codes = _stems(part), {c.lower() for c in re.findall(r"\b[A-Z]{2,5}\b", part)}
    scores = [(len(asked & _tool_stems(t)) + len(asked & _stems(_name(t))) + len(codes & _initials(t)), _name(t)) for t in tools]
    best = max((n for n, _ in scores), default=0)
    names = [name for n, name in scores if n == best]
    return names[0] if best and len(names) == 1 else ""


def _initials(tool: dict[str, Any]) -> set[str]:
    """The initials of each run of two to five words of the tool's description ("aqi")."""
    words = re.findall(r"[A-Za-z]+", str(tool.get("function", tool).get("description", "")))
    return {"".join(w[0] for w in words[i : i + n]).lower() for n in range(2, 6) for i in range(len(words) - n + 1)}


# What the call serving a part is (``serving_tools``), where not a tool named by the part:
# the last call's tool (a list goes on: "Read a.md and b.md"), the model's own choice (a
# clause naming no tool: "look up what Microsoft shares are trading at"), or no call of
# its own (a part that gives no value: "give me the weather" in "For Oslo, give me the weather").
LAST, ANY, NONE = "", "*", "-"


def serving_tools(request: str, parts: tuple[str, ...], tools: list[dict[str, Any]]) -> tuple[str, ...]:
    """The tool of the call serving each part of ``request``: the tool its words point to
    (``part_tool``); for a part naming none, the next part's where that gives no value of its
    own ("for Lima, the air quality"); else ANY for a longer part or a new sentence holding
    something specific ("Also, what is Intel at?"), LAST for any other; NONE for a part that
    gives no value (no number nor word the tools do not use, or only ``_MARKERS``)."""
    known = set().union(*(_tool_stems(t) for t in tools)) if tools else set()
    values = [_gives_value(p, known) for p in parts]
    out = []
    for i, (p, opens) in enumerate(zip(parts, sentence_starts(request, parts))):
        tool = part_tool(p, tools)
        if not values[i]:
            out.append(NONE)
        elif tool:
            out.append(tool)
        elif i + 1 < len(parts) and not values[i + 1] and (after := part_tool(parts[i + 1], tools)):
            out.append(after)
        else:
            out.append(ANY if _SPECIFIC.search(p) and (opens or len(p.split()) > 3) else LAST)
    return tuple(out)


def _gives_value(part: str, known: set[str]) -> bool:
    """Whether ``part`` gives a value a call would copy: a number, or a word the tools (their
    stems ``known``) do not use; not where it holds only ``_MARKERS``."""
    if _MARKERS.issuperset(re.findall(r"\w+", part.lower())):
        return False
    return bool(re.search(r"\d", part)) or any(w.lower()[:4] not in known for w in _content_words(part))


# Words that order or close a request and give no value: "First, ...? Second, ...?", "thx",
# "..., all of them", "..., each".
_MARKERS = frozenset(
    "first second third then next finally lastly also after that afterwards and plus thx thanks pls please "
    "all of them each both every one".split()
)
# What a clause of its own must hold to be a request of its own: a number, a quote, a path or
# address, a code, or a name in capitals past its first word ("what is Amazon trading at?";
# not "Can you display each one?", which goes on with the files before it).
_SPECIFIC = re.compile(r"\d|[\"\u201c/@]|\b[A-Z]{2,}\b|(?<=\s)[A-Z]")


# Words pointing back to a value given before: "the same platform", "there", "its price".
_SAME = re.compile(r"\b(same|those|there|its|these|them|their)\b", re.IGNORECASE)


def next_tool(parts: tuple[str, ...], tools: tuple[str, ...], arguments: list[dict[str, Any]], called: list[str]) -> str:
    """The tool of the turn's next call ("": the model's choice): the one serving the part
    ``next_part`` gives; with none left, the last call's."""
    i = next_part(parts, tools, arguments, called)
    tool = tools[i] if i is not None else LAST
    if tool == ANY:
        return ""
    return (called[-1] if called else "") if tool in (LAST, NONE) else tool


def next_part(parts: tuple[str, ...], tools: tuple[str, ...], arguments: list[dict[str, Any]], called: list[str]) -> int | None:
    """The part the turn's next call serves: the first part after the first part named that
    no call names yet and that a call serves (``serving_tools``; a lead-in before it is served
    by no call: "I'd like three bits of info, please: ..."). Where no part is named yet, the
    k-th part after the first parts that name no tool of their own (a lead-in: "I'm juggling
    plans in a few places today, so ..."). None: no part is left."""
    done = named(parts, arguments, tools, called)
    if any(done):
        first = done.index(True) + 1
        return next((i for i in range(first, len(parts)) if not done[i] and tools[i] != NONE), None)
    lead = next((i for i, t in enumerate(tools) if t not in (LAST, NONE)), 0)
    i = lead + len(called)
    return i if i < len(parts) else None


def excluded(plan: CallPlan, arguments: list[dict[str, Any]], called: list[str], tool: str, key: str) -> list[str]:
    """The values the turn's next call, of ``tool``, is not to start ``key`` with, after the
    calls before it (their naming ``arguments``, their tools ``called``):

    - an example of a code parameter's description (``CallPlan.examples``) that no part of
      the request names: asked for Netflix's share price after a conversion, the 0.5B model
      wrote the description's "AAPL";
    - where ``tool`` is new to the turn and the one the part the call serves (``next_part``)
      points to, and that part holds a name no value so far gives (``CallPlan.names``) and
      points back to nothing (``_SAME``): a value of ``key`` in an earlier call that names a
      part of the request but not that one, and a name another part holds that does not
      name it. Given "Madrid weather rn, Lisbon forecast 7 days", the model
      asked for Madrid's forecast; given "Toronto weather / Athens air quality / Paris time",
      for Paris's air."""
    out = [e for t, k, e in plan.examples if (t, k) == (tool, key) and not any(names(e, p) for p in plan.parts)]
    i = next_part(plan.parts, plan.tools, arguments, called) if plan.tools else None
    if i is None or tool in called or plan.tools[i] != tool:  # not the tool that part points to: which part it serves is not known
        return out
    given = [v for args in arguments for v in _values(args)]
    held = plan.names[i] if i < len(plan.names) else ()
    if not any(not any(names(v, n) for v in given) for n in held) or _SAME.search(plan.parts[i]):
        return out  # no name of its own, or one it shares: "on the same platform"
    for args in arguments:
        v = args.get(key)
        if isinstance(v, str) and not names(v, plan.parts[i]) and any(names(v, p) for p in plan.parts):
            out.append(v)
    others = [n for j, held_j in enumerate(plan.names) if j != i and arguments for n in held_j]  # a later call's
    return out + [n for n in others if not names(n, plan.parts[i]) and n not in out]


def call_results(history: list[Message]) -> list[tuple[ToolCall, str]]:
    """Each result of ``history`` with the call it answers, in order (a result whose call is
    not there left out)."""
    calls = {c.id: c for m in history if m.role == "assistant" for c in m.tool_calls}
    return [(calls[m.tool_call_id], m.content) for m in history if m.role == "tool" and m.tool_call_id in calls]


def answered(history: list[Message]) -> set[str]:
    """The calls of ``history`` (canonical) whose results it holds, errors aside."""
    return {c.canonical() for c, r in call_results(history) if not r.startswith("error (")}
