"""The history that fits: older tool results fold into stubs, nothing else is dropped.

The system prompt and the task are never touched; the most recent tool results
stay whole. Folding is pure: it returns a new list.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Callable

from .messages import Message


def stub(msg: Message, calls_by_id: dict[str, str]) -> str:
    """The short line a folded tool result becomes."""
    what = calls_by_id.get(msg.tool_call_id or "", msg.name or "a tool")
    status = "failed" if msg.content.startswith("error") else "returned"
    return f"[folded to save context: {what} {status} {len(msg.content)} characters; call it again to see them]"


def fold(
    history: list[Message],
    fits: Callable[[list[Message]], bool],
    *,
    keep_recent: int = 2,
) -> list[Message]:
    """Fold the oldest tool results, one at a time, until ``fits`` says yes.

    Returns the folded history (possibly still too long: the caller decides
    what to do when even folding everything foldable is not enough).
    """
    if fits(history):
        return history
    calls_by_id = {
        c.id: f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)[:80]})"
        for m in history
        for c in m.tool_calls
    }
    tool_idx = [i for i, m in enumerate(history) if m.role == "tool" and not m.folded]
    foldable = tool_idx[: max(0, len(tool_idx) - keep_recent)]
    out = list(history)
    for i in foldable:
        out[i] = replace(out[i], content=stub(out[i], calls_by_id), folded=True)
        if fits(out):
            break
    return out
