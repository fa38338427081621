"""Jump-forward: the text a constraint fixes next, inserted without sampling.

Where the grammar allows one continuation only (the envelope of a call, the
tool's name once its first letters are chosen, the first required key, the
closing brackets), the decoder appends these tokens and evaluates them in one
batch instead of generating them one by one. Pure functions, no model.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ..formats import CALL_CLOSE, CALL_OPEN

_ARGS = '"arguments": '
_CLOSE = "}\n" + CALL_CLOSE


def _syntax(text: str) -> Iterator[tuple[int, str]]:
    """(index, character) for every character outside JSON strings (quotes excluded)."""
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
        else:
            yield i, ch


def object_end(text: str) -> int | None:
    """Index just past the JSON object that ``text`` starts with, or None if open."""
    if not text.startswith("{"):
        return None
    depth = 0
    for i, ch in _syntax(text):
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _open_key(args: str) -> tuple[str, str, list[str]] | None:
    """Inside an open arguments object, at its top level, right where a key is
    being written: what of the key is written, the text that must lead it
    (``"`` or `` "`` after a comma), and the keys already given."""
    depth = 0
    seg_start = 0
    used: list[str] = []
    for i, ch in _syntax(args):
        if ch in "{[":
            depth += 1
            if depth == 1:
                seg_start = i + 1
        elif ch in "}]":
            depth -= 1
        elif ch == "," and depth == 1:
            seg_start = i + 1
        elif ch == ":" and depth == 1:
            key = args[seg_start:i].strip()
            if key.startswith('"') and key.endswith('"'):
                used.append(key[1:-1])
    raw = args[seg_start:]
    if depth != 1 or ":" in raw:
        return None
    lead = ' "' if seg_start > 0 and args[seg_start - 1] == "," else '"'
    return raw, lead, used


def forced_key(args: str, keys: tuple[str, ...]) -> str:
    """The rest of the key being written, and ``": "``, when only one key fits; or
    the opening quote and the letters all remaining keys share."""
    found = _open_key(args)
    if found is None:
        return ""
    raw, lead, used = found
    later = keys[keys.index(used[-1]) + 1 :] if used and used[-1] in keys else keys
    left = [k for k in later if k not in used]
    if len(raw) < len(lead):
        if not lead.startswith(raw):
            return ""
        head, partial = lead[len(raw) :], ""
    elif raw.startswith(lead) and '"' not in raw[len(lead) :]:
        head, partial = "", raw[len(lead) :]
    else:
        return ""
    fits = [k for k in left if k.startswith(partial)]
    if not fits:
        return ""
    if len(fits) == 1:
        return head + fits[0][len(partial) :] + '": '
    return head + os.path.commonprefix([k[len(partial) :] for k in fits])


def forced_text(
    text: str, heads: tuple[str, ...], *, parallel: bool, keys: dict[str, tuple[str, ...]] | None = None
) -> tuple[str, bool]:
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
        name = call[len(CALL_OPEN) :].split('"name": "', 1)[-1].split('"', 1)[0]
        if keys and name in keys:
            return forced_key(tail, keys[name]), False
        return "", False
    after = tail[end:]
    if len(after) < len(_CLOSE) and _CLOSE.startswith(after):
        return _CLOSE[len(after) :], not parallel
    return "", False
