"""A run's first turn, decided before the model's first token where the request tells: prose
where the request holds its own answer or no offered tool fits it, a call where one clearly
does. Elsewhere the model's own first token decides."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from .answers import worked_out
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
    if not (re.search(r"[.!?]\W?$", end.group()) or re.match(r"\s*[.!?]", tail)):
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


def answer_in_call(request: str, arguments: list[dict[str, Any]], exists: Callable[[str], bool] | None = None) -> bool:
    """Whether a first turn's calls hold the answer to the request's question: a value is a
    name that names nothing the request says (``names``) and no path ``exists`` knows. Asked
    for "the capital city of Ireland" with get_weather offered, the 0.5B model called it for
    Dublin: it knew the answer. On the seen splits, 15 of 36 such questions were called so,
    and no call case whose calls were right held such a name."""
    request = unwrapped(request)
    values = [v for args in arguments for v in _values(args)]
    return any(_NAME.fullmatch(v) and not names(v, request) and not (exists and exists(v)) for v in values)


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
