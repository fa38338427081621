"""The arguments of a turn's calls, held to what the request gives: an optional text it does
not give is left out (``unasked``), a value copied from it wrong is copied again, and an item
it does not give is taken out of a list (``as_given``). The 0.5B model labels timers nobody
asked to label, writes "/data/raw" for "data/raw" and adds "home: 1234567890" to a contact."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from rapidfuzz.distance import Levenshtein

from .calls import _name, _params, _plain, _values, optional_texts
from .wording import _QUOTED

def unasked(request: str, calls: list[tuple[str, dict[str, Any]]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The arguments of each call, with the optional texts the request does not give left
    out. A text is given where it stands in the request word for word, names no other
    parameter of its tool ("Twenty-five minutes" as a timer's label) and is no other argument
    of the turn (the SMS text as the label). The 0.5B model labelled 28 of 30 dev and test
    timers, none asked for a label: "Key Timer", "12 minutes", the SMS sent beside it."""
    optional = optional_texts(tools)
    params = {_name(t): list((_params(t).get("properties") or {})) for t in tools}
    said = _plain(request)
    out = []
    for i, (name, args) in enumerate(calls):
        kept = {}
        for k, v in args.items():
            if (name, k) not in optional or not isinstance(v, str):
                kept[k] = v
                continue
            # Every other argument value of the turn: of the other calls, and this call's others.
            others = {_bare(str(x)) for j, (_, a) in enumerate(calls) for key, x in a.items() if (j, key) != (i, k)}
            siblings = [p for p in params.get(name, []) if p != k]
            if _given(v, said, siblings, others):
                kept[k] = v
        out.append(kept)
    return out


def _given(value: str, said: str, siblings: list[str], others: set[str]) -> bool:
    """Whether the request (``said``, plain) gives ``value`` for an optional text (``unasked``)."""
    v = _bare(value)
    if not v or v in others or not re.search(r"(?<!\w)" + re.escape(v) + r"(?!\w)", said):
        return False
    stems = {w[:4] for p in siblings for w in _plain(p).split() if len(w) >= 3}
    return not any(w[:4] in stems for w in re.findall(r"[a-z]{3,}", v))


def _bare(text: str) -> str:
    return _plain(text).strip(" .!?")


def as_given(
    request: str, calls: list[tuple[str, dict[str, Any]]], tools: list[dict[str, Any]], exists: Callable[[str], bool] | None = None
) -> list[dict[str, Any]]:
    """The arguments of each call held to the request: a path, number or address that the
    request holds nearly but not as written is the one it holds (``copied``); a choice of an
    enum is the one the request names (``named_enum``); an item of a list whose values the
    request gives none of is dropped where another item's it gives (``made_up``); and an
    optional list left empty, with no default, is left out. A value ``exists`` says is a path
    of the folder stays: the model may have corrected the user's ("docs/launch.txt" for
    "docs/luanch.txt")."""
    words = request_words(request)
    schema = {_name(t): _params(t) for t in tools}
    out = []
    for name, args in calls:
        params = schema.get(name, {})
        props, required = params.get("properties") or {}, set(params.get("required") or ())
        kept: dict[str, Any] = {}
        for k, v in args.items():
            v = named_enum(copied_values(past_quote(v, request), words, exists), props.get(k), request)
            if isinstance(v, list):
                v = made_up(v, request, (props.get(k) or {}).get("items"))
                if not v and k not in required and "default" not in (props.get(k) or {}):
                    continue
            kept[k] = v
        out.append(kept)
    return out


def past_quote(value: Any, request: str) -> Any:
    """``value``, or the quote of ``request`` it starts with, where what follows the quote in
    ``value`` is the request's own text after it: the SMS of 'sms +33612345678 "Dinner is at
    eight"; timer 10 min' was "Dinner is at eight; timer 10 min", and named the timer too."""
    if not isinstance(value, str):
        return value
    for m in _QUOTED.finditer(request):
        quote = next(g for g in m.groups() if g)
        rest = re.sub(r"^\W+", "", value[len(quote) :]) if value.startswith(quote) else ""
        if rest and re.sub(r"^\W+", "", request[m.end() :]).startswith(rest):
            return quote
    return value


# A value that is copied, not written: it holds a digit, "/", "@" or "+", or a dot in or before a word.
_COPIED = re.compile(r"[\d/@+]|\w\.\w|^\.\w")


def copied(value: str, words: set[str], exists: Callable[[str], bool] | None = None) -> str:
    """``value``, or the word of the request it miscopies: the only nearest of those it
    differs from by a prefix of "/", "." or another path's folder ("../data/users.csv"
    beside "../tests/a.py"), by a folder left out, or by a few characters in seven or more
    ("+161412345678" for "+61412345678"); a number made up, the request's one number of
    its kind (``_number``). A value the request holds as a word stays."""
    if value in words or not _COPIED.search(value) or (exists is not None and exists(value)):
        return value
    near = []
    for w in words:
        if len(w) < len(value) and value.endswith(w) and _added(value[: -len(w)], words):
            near.append((len(value) - len(w), w))
        elif len(w) > len(value) and w.endswith(value) and w[: -len(value)].endswith("/"):
            near.append((len(w) - len(value), w))
        elif len(w) >= 7 and _COPIED.search(w) and (d := Levenshtein.distance(value, w)) <= len(w) // 6:
            near.append((d, w))
    best = min((d for d, _ in near), default=0)
    found = {w for d, w in near if d == best}
    if not found and _number(value):
        found = {w for w in words if _number(w) and w.startswith("+") == value.startswith("+")}
    return found.pop() if len(found) == 1 else value


def _number(text: str) -> bool:
    """Whether ``text`` is a phone number or the like: seven digits or more, with "+",
    dots, dashes or brackets. Where the request holds one such word and a value is another,
    the value was made up: the 0.5B model texted "+15551234567" for "text +33612345678 ..."."""
    return re.fullmatch(r"\+?[\d().-]+", text) is not None and sum(c.isdigit() for c in text) >= 7


def _added(prefix: str, words: set[str]) -> bool:
    """Whether ``prefix`` is one a copy gains by mistake: "/", ".", "./", or the leading
    folder of another path of the request ("../shared/")."""
    if prefix in ("/", ".", "./"):
        return True
    return prefix.endswith("/") and any(w.startswith(prefix) and len(w) > len(prefix) for w in words)


def copied_values(node: Any, words: set[str], exists: Callable[[str], bool] | None = None) -> Any:
    """``node`` with each string in it as ``copied`` gives it, at any depth."""
    if isinstance(node, str):
        return copied(node, words, exists)
    if isinstance(node, list):
        return [copied_values(x, words, exists) for x in node]
    if isinstance(node, dict):
        return {k: copied_values(x, words, exists) for k, x in node.items()}
    return node


def repeats_given(value: Any, request: str) -> int:
    """How often one list may hold ``value``: as often as ``request`` writes it, once at least
    ("add 2, 2 and 3"). The 0.5B model wrote the tags "work", "home", "work", "home", ... until
    the token limit cut the call; the decoder ends a list at an item repeated beyond this."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return 1
    text = value if isinstance(value, str) else json.dumps(value)
    if not text.strip():
        return 1
    return max(1, len(re.findall(r"(?<![\w.])" + re.escape(text) + r"(?![\w])", request, re.IGNORECASE)))


def request_words(request: str) -> set[str]:
    """The request's words as a value would copy them: quotes, brackets and a sentence's
    closing mark stripped."""
    return {_bare_word(w) for w in request.split()} - {""}


def _bare_word(word: str) -> str:
    """``word`` without the quotes, brackets and closing marks around it, however they nest:
    "(work +14155550142)," is "+14155550142" (the phone number had been copied with its ")")."""
    while True:
        bare = word.strip("\"'()[]{}<>“”‘’`").rstrip(",;:!?")
        if bare.endswith(".") and not bare.endswith(".."):
            bare = bare[:-1]
        if bare == word:
            return word
        word = bare


def made_up(items: list[Any], request: str, schema: Any) -> list[Any]:
    """``items`` without those the request gives no value of, where it gives one of another
    item's: "home: 1234567890" beside the work number asked for. Values of an enum tell
    nothing ("home" is a label), and an item with no other value stays."""
    labels = {str(x).lower() for x in _enums(schema)}
    said = set(re.findall(r"[a-z]{3,}|\d+", _plain(request)))

    def given(item: Any) -> bool | None:
        own = [v for v in _values(item) if v.lower() not in labels]
        if not own:
            return None
        return any(w in said for v in own for w in re.findall(r"[a-z]{3,}|\d+", _plain(v)))

    seen = [given(x) for x in items]
    if True not in seen or False not in seen:
        return items
    return [x for x, g in zip(items, seen) if g is not False]


def _enums(schema: Any) -> list[Any]:
    """Every value an ``enum`` of ``schema`` allows, at any depth."""
    if isinstance(schema, dict):
        return [*(schema.get("enum") or ()), *(v for x in schema.values() for v in _enums(x))]
    if isinstance(schema, list):
        return [v for x in schema for v in _enums(x)]
    return []


def named_enum(node: Any, schema: Any, request: str) -> Any:
    """``node`` with each choice of an enum that the request does not name replaced by the
    one value of that enum it names, where it names one only ("home phone": "home", not the
    "mobile" the model wrote first); at any depth, as ``schema`` describes it."""
    if not isinstance(schema, dict):
        return node
    if isinstance(node, dict):
        props = schema.get("properties") or {}
        return {k: named_enum(v, props.get(k), request) for k, v in node.items()}
    if isinstance(node, list):
        return [named_enum(v, schema.get("items"), request) for v in node]
    choices = [e for e in schema.get("enum") or () if isinstance(e, str) and e]
    if not isinstance(node, str) or node not in choices:
        return node
    said = _plain(request)
    named = [e for e in choices if re.search(r"(?<!\w)" + re.escape(_plain(e)) + r"(?!\w)", said)]
    return named[0] if len(named) == 1 and node not in named else node
