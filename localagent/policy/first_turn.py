"""A run's first turn, decided before the model's first token where the request tells: prose
where the request holds its own answer or no offered tool fits it, a call where one clearly
does. Elsewhere the model's own first token decides."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from typing import Any, Literal

from .answers import worked_out
from .arguments import _enums
from .calls import _stems, _values, names, no_tool_fits, tool_match
from .looks import _PATH_LIKE
from .wording import _QUOTE, quoted, unwrapped, wants_change

FirstTurn = Literal["prose", "call"]

# A question sentence: what it asks is what follows its last quote.
_SENTENCE = re.compile(r"[^.?!]*\?")
_WH = re.compile(r"\b(what|when|where|which|who|whom|whose|why|how)\b", re.IGNORECASE)
_ASKING = frozenset({"when", "wher", "who", "whom", "whos", "why"})  # stems _stems keeps
_BACK = re.compile(r"\b(it|that|this|they|them)\b", re.IGNORECASE)


def first_turn(
    request: str, tools: list[dict[str, Any]], relevance: list[float], floor: tuple[float, float], ceiling: float | None
) -> FirstTurn | None:
    """The first turn's kind where the request decides it: "prose" where it answers itself
    (``answers_itself``) or no tool fits (``no_tool_fits``, under ``floor``); "call" where the
    best tool's fit reaches ``ceiling``; None: the model's first token decides. Shown get_time
    for "what the clocks read in Seoul and Sydney", the model wrote the calls as prose."""
    if answers_itself(request, tools) or no_tool_fits(request, tools, relevance, floor):
        return "prose"
    if ceiling is not None and max(relevance, default=float("-inf")) >= ceiling:
        return "call"
    return None


def answers_itself(request: str, tools: list[dict[str, Any]]) -> bool:
    """Whether a request holds its own answer: it works something out over its own numbers
    or quoted text (``worked_out``: "Write "pyramid" backwards") and, outside its quotes,
    shares no word with an offered tool ("text +44... "Running late", plus start a 30 minute
    timer" is no sum), or it asks about the text it quotes (``asks_about_quote``). With
    translate_text offered, the 0.5B model translated "Thank you very much" into English
    when asked for it in capital letters."""
    request = unwrapped(request)
    if asks_about_quote(request):
        return True
    return worked_out(request) is not None and tool_match(_QUOTE.sub(" ", request), tools) == 0


def asks_about_quote(request: str) -> bool:
    """Whether a request's question is about the text it quotes: a question in a sentence of
    its own after the quote, holding none, that names a word of it or points back to it
    ("My note says: "The yoga class moved to 16:45." What time is the yoga class now?",
    "... When is it?"), or of four words at most naming a word of it ("... dentist time?").
    A quoted path is a file to read, not text given. Asked so, with calendar tools offered,
    the model created an event with attendees it made up."""
    quotes = [q for q in quoted(request) if not _PATH_LIKE.fullmatch(q.strip())]
    if not quotes or wants_change(request):
        return False
    end = max(_QUOTE.finditer(request), key=lambda m: m.end())
    tail = request[end.end() :]
    if not (re.search(r"[.!?]\W?$", end.group()) or re.match(r"\s*[.!?]|\s+[-–—]\s", tail)):  # a spaced dash ends it too
        return False  # the quote's own sentence goes on: "an order for 2 "Notebook" and have it go to ..."
    told = set().union(*(_stems(q) for q in quotes))
    for question in _SENTENCE.findall(tail):
        if _QUOTE.search(question):
            continue
        names_told = bool((_stems(question) - _ASKING) & told)
        if not _WH.search(question):  # "Can you fix it?" asks for a change, not about the text;
            if names_told and len(question.split()) <= 4 and not _BACK.search(question):
                return True  # ... a few words naming the quote's ask about it: "dentist time?"
            continue
        if names_told or _BACK.search(question):
            return True
    return False


# A name as a value: words in capitals, letters only ("Dublin", "New Delhi").
_NAME = re.compile(r"[A-Z][a-z]{2,}(?: [A-Z][a-z]+)*")


def answer_in_call(
    request: str, calls: list[tuple[str, dict[str, Any]]], tools: list[dict[str, Any]], exists: Callable[[str], bool] | None = None
) -> bool:
    """Whether a first turn's calls answer another question than the request's: a call's
    names all name nothing the request says (``names``) and no path ``exists`` knows, or
    every call's names are asked about for something its tool knows nothing of
    (``asked_about``). Asked for "the capital city of Ireland" with get_weather offered, the
    0.5B model called it for Dublin (it knew the answer), and for "Hungary's capital", with
    Hungary as the city. A name beside one the request says is inferred, not an answer
    ("California" beside "San Francisco")."""
    request = unwrapped(request)
    by_name = {str(t.get("function", t).get("name")): t for t in tools}
    choices = {str(v) for t in tools for v in _enums(t)}  # a value the tool offers is no answer ("Comedy")
    for _, args in calls:
        found = _names_in(args, choices)
        if found and not any(names(v, request) or (exists and exists(v)) for v in found):
            return True
    return bool(calls) and all(_asks_other(request, args, by_name.get(name)) for name, args in calls)


def _names_in(args: dict[str, Any], choices: Collection[str] = ()) -> list[str]:
    """The values of ``args`` that are names (``_NAME``), other than ``choices``."""
    return [v for v in _values(args) if v not in choices and _NAME.fullmatch(v)]


def _asks_other(request: str, args: dict[str, Any], tool: dict[str, Any] | None) -> bool:
    """Whether a call's values include a name and each name is ``asked_about`` for something
    ``tool`` knows nothing of."""
    found = _names_in(args)
    if tool is None or not found:
        return False
    known = _stems(" ".join(re.findall(r'"((?:[^"\\]|\\.)*)"', json.dumps(tool))))  # every word of its schema
    return all((asked := asked_about(request, v)) and not any(_stems(w) & known for w in asked) for v in found)


# What a name owns where it stands: "the capital (city) of X", "X's capital", "X: capital?".
_OWNED_OF = re.compile(r"\b([A-Za-z]+\s+)?([A-Za-z]+)(?:\s+city)?\s+of\s+(?:the\s+)?$")
_OWNED_S = re.compile(r"['’]s\s+([A-Za-z]+)(?:\s+city)?")
_OWNED_AFTER = re.compile(r"\s*[:\-–—=]?\s*([A-Za-z]+)(?:\s+city)?\s*(?:[?=]|\bis\b|$)")
_NO_THING = frozenset("each all any some one both most many none few every either neither lot lots kind kinds type types sort sorts number couple bunch".split())
_WHEN = frozenset("now today tomorrow tonight rn atm currently right next week weekend morning evening afternoon pls plz too also".split())


def asked_about(request: str, name: str) -> list[str]:
    """The words of what ``request`` asks of ``name`` where every mention of it is an owner's,
    of a thing ("the capital of Hungary", "Hungary's capital", "Hungary capital = ?");
    [] where a mention is not ("weather in Hungary", "in each of Oslo, ...")."""
    words: list[str] = []
    for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", request, re.IGNORECASE):
        if not m.group()[0].isupper():
            return []  # a name the request writes as a plain word ("the kitchen speaker")
        before, after = request[: m.start()], request[m.end() :]
        if o := _OWNED_OF.search(before):
            owned = [w.strip() for w in o.groups() if w]
        elif o := _OWNED_S.match(after) or _OWNED_AFTER.match(after):
            owned = [w.strip() for w in o.groups() if w]
        else:
            return []
        thing = owned[-1] if o.re is _OWNED_OF else owned[0]
        if thing.lower() in _NO_THING or thing.lower() in _WHEN or not _stems(thing):
            return []
        words += owned
    return words


def call_in_prose(text: str, tools: list[str]) -> bool:
    """Whether a first turn's prose writes out a call of an offered tool ("Below is a JSON
    object ... {name: "get_stock_price", arguments: ...}", "you can use the `list_dir`
    function"): the call the model meant, asked again as one. A name counts where it cannot
    be a plain word: quoted, called, or holding "_" ("add" in "I can't add that" does not)."""
    for name in tools:
        plain = re.escape(name)
        if "_" in name or any(c.isupper() for c in name[1:]):
            if re.search(rf"(?<![\w]){plain}(?![\w])", text):
                return True
        elif re.search(rf"[`\"']{plain}[`\"']|(?<![\w]){plain}\(", text):
            return True
    return False
