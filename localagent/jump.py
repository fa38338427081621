"""Jump-forward: the text a constraint fixes next, inserted without sampling.

Where the grammar allows one continuation only (the envelope of a call, the
tool's name once its first letters are chosen, the first required key, the
closing brackets), the decoder appends these tokens and evaluates them in one
batch instead of generating them one by one. Pure functions, no model.
"""

from __future__ import annotations

import os

from .formats import CALL_CLOSE, CALL_OPEN

_ARGS = '"arguments": '
_CLOSE = "}\n" + CALL_CLOSE


def object_end(text: str) -> int | None:
    """Index just past the JSON object that ``text`` starts with, or None if open."""
    if not text.startswith("{"):
        return None
    depth = 0
    in_str = esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def forced_text(text: str, heads: tuple[str, ...], *, parallel: bool) -> tuple[str, bool]:
    """What must come next after ``text`` inside a call: (forced text, ends the turn).

    ``heads`` are the starts every call must have (``grammar.call_heads``).
    Returns ("", False) when the model has a choice to make.
    """
    start = text.rfind(CALL_OPEN)
    if start < 0:
        return "", False
    call = text[start:]
    rests = [h[len(call) :] for h in heads if len(h) > len(call) and h.startswith(call)]
    if rests:
        return os.path.commonprefix(rests), False
    at = call.find(_ARGS)
    if at < 0:
        return "", False
    tail = call[at + len(_ARGS) :]
    end = object_end(tail)
    if end is None:
        return "", False
    after = tail[end:]
    if len(after) < len(_CLOSE) and _CLOSE.startswith(after):
        return _CLOSE[len(after) :], not parallel
    return "", False
