"""Messages, tool calls and tool results: the history is the model's only memory."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import ToolErrorInfo

Role = Literal["system", "user", "assistant", "tool"]


def canonical(name: str, arguments: dict[str, Any]) -> str:
    """Name plus arguments with sorted keys: equal calls give equal strings."""
    return name + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


@dataclass
class ToolCall:
    """One call the model made; ``id`` is unique within the run."""

    id: str
    name: str
    arguments: dict[str, Any]

    def canonical(self) -> str:
        return canonical(self.name, self.arguments)

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


def last_user_text(history: list[Message]) -> str:
    """The text of the last user turn ("" when there is none): the request a turn answers."""
    return next((m.content for m in reversed(history) if m.role == "user"), "")


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


def to_openai_messages(history: list[Message]) -> list[dict[str, Any]]:
    """A history as OpenAI chat messages: calls as ``tool_calls`` (arguments as JSON text),
    results as ``tool`` messages with their ``tool_call_id``. A result that answers no call
    (a malformed call's format error) becomes a user message, since the API allows a tool
    message only after the call it answers."""
    out: list[dict[str, Any]] = []
    called: set[str] = set()
    for m in history:
        if m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.content or (None if m.tool_calls else "")}
            if m.tool_calls:
                d["tool_calls"] = [_openai_call(c) for c in m.tool_calls]
                called.update(c.id for c in m.tool_calls)
            out.append(d)
        elif m.role == "tool" and m.tool_call_id in called:
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            out.append({"role": "user" if m.role == "tool" else m.role, "content": m.content})
    return out


def _openai_call(c: ToolCall) -> dict[str, Any]:
    arguments = json.dumps(c.arguments, ensure_ascii=False)
    return {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}}


def from_openai_messages(data: Any) -> list[Message]:
    """OpenAI chat messages as a history (the inverse of ``to_openai_messages``); content may
    be a string or a list of text parts. Raises ValueError naming the first bad message."""
    if not isinstance(data, list):
        raise ValueError("messages must be a list")
    out: list[Message] = []
    names: dict[str, str] = {}  # call id -> tool name, for the results
    for i, d in enumerate(data):
        try:
            out.append(_from_openai(d, names))
        except ValueError as e:
            raise ValueError(f"messages[{i}]: {e}") from None
    return out


def _from_openai(d: Any, names: dict[str, str]) -> Message:
    if not isinstance(d, dict):
        raise ValueError("a message is an object with a 'role'")
    role: Role = "system" if d.get("role") == "developer" else d.get("role")  # type: ignore[assignment]
    if role not in ("system", "user", "assistant", "tool"):
        raise ValueError(f"role must be system, developer, user, assistant or tool, got {d.get('role')!r}")
    content = openai_text(d.get("content"))
    if role == "tool":
        call_id = d.get("tool_call_id")
        if not isinstance(call_id, str):
            raise ValueError("a tool message needs a string 'tool_call_id'")
        return Message("tool", content, tool_call_id=call_id, name=names.get(call_id) or d.get("name"))
    calls = [_from_openai_call(c, j) for j, c in enumerate(d.get("tool_calls") or [])] if role == "assistant" else []
    names.update((c.id, c.name) for c in calls)
    return Message(role, content, tool_calls=calls)


def openai_text(content: Any) -> str:
    """A message's ``content`` as text: a string, null, or a list of ``text`` parts."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") not in ("text", "input_text"):
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise ValueError(f"only text content parts are supported, got {kind!r}")
            if not isinstance(part.get("text"), str):
                raise ValueError("a text content part needs a string 'text'")
            parts.append(part["text"])
        return "\n".join(parts)
    raise ValueError("content must be a string, null or a list of text parts")


def _from_openai_call(c: Any, j: int) -> ToolCall:
    fn = c.get("function") if isinstance(c, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise ValueError(f"tool_calls[{j}] needs a 'function' with a string 'name'")
    arguments = fn.get("arguments") or "{}"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            raise ValueError(f"tool_calls[{j}]: 'arguments' is not JSON") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"tool_calls[{j}]: 'arguments' must be a JSON object")
    return ToolCall(str(c.get("id") or f"call_{j}"), fn["name"], arguments)


def history_from_saved(data: Any) -> list[Message]:
    """A history saved in either form (``history_to_json``'s, which marks every message with
    ``folded``, or OpenAI messages); raises ValueError on a malformed one."""
    if isinstance(data, list) and data and all(isinstance(d, dict) and "folded" in d for d in data):
        return history_from_json(data)
    return from_openai_messages(data)
