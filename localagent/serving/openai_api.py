"""The OpenAI chat-completions API, translated for the constrained decoder.

A request becomes a history, tool schemas, a ``ToolChoice`` and the step's ``GenerateOptions``
(the same decoding path as the agent loop: the grammar, the call-or-prose decision at the first
token, jump-forward); a generation becomes the response, or the chunks of a stream. Pure
functions and small classes, without the web stack, so they are tested without a server.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..backends.base import Generation, GenerateOptions
from ..decoding import decoding_options, first_token_threshold
from ..errors import ConfigError, ConstraintError
from ..formats import CALL_OPEN, parse
from ..constraint.grammar import Constraint, ToolChoice, build_constraint
from .. import policy
from ..loop import AgentConfig
from ..messages import Message, ToolCall, from_openai_messages, last_user_text
from ..tools.schema import definition_of

__all__ = [
    "ApiError", "ChatRequest", "ProseFilter", "RawMemory", "Reply", "call_json", "chunk_json", "completion_json",
    "constraint_for", "options_for", "parse_request", "reply_of", "usage_json",
]


class ApiError(Exception):
    """A request the API refuses (4xx) or cannot serve (5xx), as OpenAI's error object."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param

    def to_json(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": None}}


class _Body(BaseModel):
    """The fields of a chat-completions request this server reads; others are ignored."""

    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    messages: list[Any] = Field(min_length=1)
    tools: list[Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = None
    n: int | None = Field(None, ge=1, le=1)


@dataclass
class ChatRequest:
    """A chat-completions request, checked and translated."""

    messages: list[Message]
    tools: list[dict[str, Any]]  # OpenAI-style function schemas
    choice: ToolChoice
    parallel: bool
    config: AgentConfig  # max_tokens, temperature, seed, parallel calls: as the loop reads them
    stream: bool = False
    include_usage: bool = False
    model: str | None = None


def parse_request(body: Any, *, default_max_tokens: int = 512) -> ChatRequest:
    """A request body checked and translated; an ``ApiError`` (400) names what is wrong."""
    try:
        b = _Body.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "body"
        raise ApiError(400, f"{where}: {err['msg']}", param=where) from None
    try:
        messages = from_openai_messages(b.messages)
    except ValueError as e:
        raise ApiError(400, str(e), param="messages") from None
    tools = [_tool_schema(t, i) for i, t in enumerate(b.tools or [])]
    choice = _choice(b.tool_choice, [t["function"]["name"] for t in tools])
    parallel = b.parallel_tool_calls is not False  # OpenAI's default: allowed
    config = AgentConfig(
        max_tokens=b.max_completion_tokens or b.max_tokens or default_max_tokens,
        temperature=b.temperature or 0.0,
        seed=b.seed if b.seed is not None else 0,
        parallel_calls=parallel,
    )
    if b.top_p is not None:
        config.top_p = b.top_p
    include_usage = bool((b.stream_options or {}).get("include_usage"))
    return ChatRequest(messages, tools, choice, parallel, config, b.stream, include_usage, b.model)


def _tool_schema(t: Any, i: int) -> dict[str, Any]:
    if not isinstance(t, dict) or t.get("type", "function") != "function":
        raise ApiError(400, f"tools[{i}]: only tools of type 'function' are supported", param=f"tools[{i}]")
    try:
        name, description, parameters = definition_of(t)
    except ConfigError as e:
        raise ApiError(400, f"tools[{i}]: {e}", param=f"tools[{i}]") from None
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _choice(value: str | dict[str, Any] | None, names: list[str]) -> ToolChoice:
    """OpenAI's ``tool_choice`` (a mode, or ``{"type": "function", "function": {"name": ...}}``)."""
    if value is None:
        return ToolChoice("auto" if names else "none")
    if isinstance(value, dict):
        name = (value.get("function") or {}).get("name") if isinstance(value.get("function"), dict) else None
        if value.get("type") != "function" or not isinstance(name, str):
            raise ApiError(400, 'tool_choice: give "auto", "required", "none" or {"type": "function", "function": {"name": ...}}', "tool_choice")
        if name not in names:
            raise ApiError(400, f"tool_choice: no tool named {name!r} in tools", "tool_choice")
        return ToolChoice("required", name)
    if value not in ("auto", "required", "none"):
        raise ApiError(400, f'tool_choice: {value!r} is none of "auto", "required", "none"', "tool_choice")
    if value == "required" and not names:
        raise ApiError(400, 'tool_choice: "required" needs tools', "tool_choice")
    return ToolChoice(value if names else "none")  # type: ignore[arg-type]


def constraint_for(req: ChatRequest) -> Constraint | None:
    """The step's grammar; None (free text) for a request without tools."""
    if not req.tools:
        return None
    try:
        return build_constraint(req.tools, req.choice, parallel=req.parallel)
    except ConstraintError as e:
        raise ApiError(400, f"tools: no grammar can be built for these schemas: {e}", "tools") from None


def options_for(req: ChatRequest, constraint: Constraint | None, on_text: Callable[[str], None] | None) -> GenerateOptions:
    """The decoding options of the request, as the agent loop sets them."""
    threshold = first_token_threshold(req.config, req.choice) if constraint is not None else None
    request = last_user_text(req.messages)
    plan = policy.call_plan(request, req.messages, req.tools)
    return decoding_options(req.config, constraint, threshold=threshold, choice=req.choice, on_text=on_text, plan=plan, request=request)


@dataclass
class Reply:
    """What a generation said, for the response."""

    content: str
    calls: list[ToolCall]
    finish_reason: str
    usage: dict[str, Any] = field(default_factory=dict)


def reply_of(gen: Generation, req: ChatRequest) -> Reply:
    """The reply in a generation; an ``ApiError`` (500) when the model failed."""
    if gen.finish_reason == "error":
        raise ApiError(500, f"the model failed: {gen.error or 'no reason given'}")
    parsed = parse(gen.text)
    content, found = parsed.content, [(c.name, c.arguments) for c in parsed.calls]
    if not req.tools or req.choice.mode == "none":
        found = []  # under the grammar none could be made; a backend without one is held to it too
    calls = [ToolCall(f"call_{uuid.uuid4().hex[:24]}", n, a) for n, a in found[: None if req.parallel else 1]]
    cut = gen.finish_reason in ("length", "context")
    finish = "tool_calls" if calls else ("length" if cut else "stop")
    return Reply(content, calls, finish, usage_json(gen))


def usage_json(gen: Generation) -> dict[str, Any]:
    """OpenAI's usage object; the tokens the KV cache served as ``cached_tokens``."""
    return {
        "prompt_tokens": gen.prompt_tokens,
        "completion_tokens": gen.completion_tokens,
        "total_tokens": gen.prompt_tokens + gen.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": gen.prompt_tokens_reused},
    }


def call_json(c: ToolCall, index: int | None = None) -> dict[str, Any]:
    """A call as OpenAI's ``tool_calls`` entry (with ``index`` in a stream's delta)."""
    d: dict[str, Any] = {} if index is None else {"index": index}
    d.update(id=c.id, type="function", function={"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)})
    return d


def completion_json(reply: Reply, model: str, cid: str, created: int | None = None) -> dict[str, Any]:
    """The ``chat.completion`` object of a reply."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or (None if reply.calls else "")}
    if reply.calls:
        message["tool_calls"] = [call_json(c) for c in reply.calls]
    return {
        "id": cid, "object": "chat.completion", "created": created or int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
        "usage": reply.usage,
    }


def chunk_json(cid: str, model: str, created: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One ``chat.completion.chunk`` of a stream."""
    return {
        "id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


class ProseFilter:
    """The prose of a reply while it streams: text before any call envelope, with the tail
    that could still begin one (``<tool_`` ...) and blanks at either end held back, so that
    what is streamed is a prefix of the final (stripped) ``content``."""

    def __init__(self) -> None:
        self.text, self.shown, self.closed = "", "", False

    def feed(self, piece: str) -> str:
        """Add a piece of the reply; the prose that can be shown now."""
        self.text += piece
        if self.closed:
            return ""
        at = self.text.find(CALL_OPEN)
        if at >= 0:
            self.closed, visible = True, self.text[:at]
        else:
            visible = self.text
            for k in range(min(len(CALL_OPEN) - 1, len(visible)), 0, -1):
                if CALL_OPEN.startswith(visible[-k:]):
                    visible = visible[:-k]
                    break
        visible = visible.strip()
        out = visible[len(self.shown):] if visible.startswith(self.shown) else ""
        self.shown += out
        return out

    def rest(self, content: str) -> str:
        """What of the final ``content`` has not been streamed yet."""
        return content[len(self.shown):] if content.startswith(self.shown) else ""


class RawMemory:
    """The exact text of replies this server generated, by what the client sends back
    (content and calls), so that a conversation re-renders byte for byte what the KV cache
    holds: a client returns calls as JSON objects, not as the text the model wrote."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._raw: OrderedDict[str, str] = OrderedDict()

    @staticmethod
    def _key(content: str, calls: list[ToolCall]) -> str:
        return json.dumps([content, [c.canonical() for c in calls]], ensure_ascii=False)

    def remember(self, reply: Reply, raw: str) -> None:
        """Keep ``raw``, the text of ``reply``."""
        key = self._key(reply.content, reply.calls)
        self._raw[key] = raw
        self._raw.move_to_end(key)
        while len(self._raw) > self.size:
            self._raw.popitem(last=False)

    def restore(self, messages: list[Message]) -> list[Message]:
        """``messages`` with the raw text of the assistant turns that this server wrote."""
        for m in messages:
            if m.role == "assistant" and m.raw is None:
                m.raw = self._raw.get(self._key(m.content, m.tool_calls))
        return messages
