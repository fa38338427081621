"""Messages, tool calls and tool results: the history is the model's only memory."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import ToolErrorInfo

Role = Literal["system", "user", "assistant", "tool"]


@dataclass
class ToolCall:
    """One call the model made; ``id`` is unique within the run."""

    id: str
    name: str
    arguments: dict[str, Any]

    def canonical(self) -> str:
        """Name plus arguments with sorted keys: equal calls give equal strings."""
        return self.name + json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass
class ToolResult:
    """The one answer to one call, matched by ``call_id``."""

    call_id: str
    name: str
    content: str
    error: ToolErrorInfo | None = None
    truncated_tokens: int = 0  # how many tokens the truncation removed
    seconds: float = 0.0

    @property
    def is_error(self) -> bool:
        return self.error is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "name": self.name,
            "content": self.content,
            "error": self.error.to_dict() if self.error else None,
            "truncated_tokens": self.truncated_tokens,
            "seconds": round(self.seconds, 4),
        }


@dataclass
class Message:
    """One turn of the history, in the shape chat templates expect."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # For assistant turns: the exact text the model generated, so that the prompt
    # re-renders byte for byte what is already in the KV cache.
    raw: str | None = None
    folded: bool = False

    def to_template(self) -> dict[str, Any]:
        """The OpenAI-style dict a chat template renders."""
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        return d


def history_to_json(history: list[Message]) -> list[dict[str, Any]]:
    """A history as plain data (for saving a chat)."""
    return [
        {
            "role": m.role,
            "content": m.content,
            "tool_calls": [c.to_dict() for c in m.tool_calls],
            "tool_call_id": m.tool_call_id,
            "name": m.name,
            "raw": m.raw,
            "folded": m.folded,
        }
        for m in history
    ]


def history_from_json(data: Any) -> list[Message]:
    """The inverse of ``history_to_json``; raises ValueError on a malformed record."""
    if not isinstance(data, list):
        raise ValueError("a saved history is a list of messages")
    out = []
    for i, d in enumerate(data):
        if not isinstance(d, dict) or d.get("role") not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"message {i} has no valid role")
        calls = [ToolCall(str(c["id"]), str(c["name"]), dict(c["arguments"])) for c in d.get("tool_calls") or []]
        out.append(
            Message(
                d["role"], str(d.get("content", "")), calls, d.get("tool_call_id"), d.get("name"),
                d.get("raw"), bool(d.get("folded", False)),
            )
        )
    return out
