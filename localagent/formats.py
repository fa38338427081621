"""Tool-call formats: how calls look in the model's output, and how to parse them.

Qwen (and Hermes) templates describe tools themselves and expect
``<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>``. Models whose
template has no tool support (the tiny model) get the same envelope, described
by our own system prompt (``prompts/generic_tools.txt``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .messages import Message
from .prompt import load_prompt

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
RESULT_OPEN = "<tool_response>"  # a result, for templates that know no tool role
RESULT_CLOSE = "</tool_response>"


@dataclass
class ParsedCall:
    """A call as parsed from text, before it gets an id and is validated."""

    name: str
    arguments: dict[str, Any]


@dataclass
class ParseResult:
    """What one assistant turn said: prose, calls, and what could not be parsed."""

    content: str
    calls: list[ParsedCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def parse(text: str) -> ParseResult:
    """Parse ``<tool_call>`` blocks out of ``text``; never raises.

    A block that is not a JSON object with a string ``name`` and an object
    ``arguments`` becomes an error line, never a call. A block ends at the first
    closing tag after its JSON, so a tag inside a string argument (a file that
    mentions ``</tool_call>``) belongs to the argument.
    """
    calls: list[ParsedCall] = []
    errors: list[str] = []
    prose_parts: list[str] = []
    pos = 0
    while (start := text.find(CALL_OPEN, pos)) >= 0:
        prose_parts.append(text[pos:start])
        body_at = start + len(CALL_OPEN)
        obj, end = _json_then_close(text, body_at)
        if end is not None:
            pos = end
            if (error := _check(obj)) is not None:
                errors.append(error)
            else:
                calls.append(ParsedCall(obj["name"], obj["arguments"]))
            continue
        # Not a JSON value followed by the closing tag: the block ends at the first
        # closing tag, as written, and nothing in it runs.
        close = text.find(CALL_CLOSE, body_at)
        if close < 0:
            errors.append(f"tool call not closed with {CALL_CLOSE} (output was cut short?)")
            pos = len(text)
            break
        body = text[body_at:close].strip()
        pos = close + len(CALL_CLOSE)
        try:
            json.loads(body)
            msg = "text after the JSON"
        except (json.JSONDecodeError, RecursionError) as e:
            msg = getattr(e, "msg", "nested too deeply")
        errors.append(f"tool call is not valid JSON ({msg}): {body[:80]!r}")
    prose_parts.append(text[pos:])
    content = "".join(prose_parts).strip()
    return ParseResult(content=content, calls=calls, errors=errors)


MAX_DEPTH = 32  # nesting of arguments; deeper breaks recursive encoders and is no tool's schema
_DECODER = json.JSONDecoder()
_CLOSE_AFTER = re.compile(r"\s*" + re.escape(CALL_CLOSE))


def _json_then_close(text: str, at: int) -> tuple[Any, int | None]:
    """The JSON value at ``at`` and the end of the closing tag right after it, or (None, None)."""
    while at < len(text) and text[at].isspace():
        at += 1
    try:
        obj, end = _DECODER.raw_decode(text, at)
    except (json.JSONDecodeError, RecursionError):
        return None, None
    m = _CLOSE_AFTER.match(text, end)
    return (obj, m.end()) if m else (None, None)


def _check(obj: Any) -> str | None:
    """Why a parsed block is no call (normalising double-encoded arguments), or None."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return 'tool call must be {"name": "...", "arguments": {...}}'
    args = obj.setdefault("arguments", {})
    if isinstance(args, str):  # some models double-encode
        try:
            args = obj["arguments"] = json.loads(args)
        except (json.JSONDecodeError, RecursionError):
            pass
    if not isinstance(args, dict):
        return f"arguments of {_safe(obj['name'])!r} must be a JSON object"
    if _too_deep(args):
        return f"arguments of {_safe(obj['name'])!r} are nested deeper than {MAX_DEPTH} levels"
    if _has_surrogate(obj["name"]) or _has_surrogate(args):
        return f"arguments of {_safe(obj['name'])!r} hold a lone surrogate (\\ud800-\\udfff); send real characters"
    return None


def _walk(value: Any) -> Iterator[tuple[Any, int]]:
    """Every value nested in ``value`` (keys included) with its depth, without recursion."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        yield v, depth
        if isinstance(v, dict):
            stack += [(k, depth + 1) for k in v] + [(x, depth + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, depth + 1) for x in v]


def _too_deep(value: Any) -> bool:
    return any(d > MAX_DEPTH for _, d in _walk(value))


def _has_surrogate(value: Any) -> bool:
    return any(isinstance(v, str) and _SURROGATE.search(v) for v, _ in _walk(value))


_SURROGATE = re.compile(r"[\ud800-\udfff]")  # only a broken \u escape makes one


def _safe(name: str) -> str:
    """A name as it can be shown: lone surrogates escaped."""
    return name.encode("utf-8", "backslashreplace").decode("utf-8")


def render_call(name: str, arguments: dict[str, Any]) -> str:
    """One call in the envelope, exactly as the grammar produces it."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"


def render_result(content: str) -> str:
    """One result in the envelope, as a user turn carries it."""
    return f"{RESULT_OPEN}\n{content}\n{RESULT_CLOSE}"


# Keys the decoder enforces (grammar) or the validator checks: the model need not read them,
# and they were a fifth of the tools' prompt tokens. Enums, patterns and defaults stay.
_ENFORCED = frozenset(
    {"additionalProperties", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
     "minLength", "maxLength", "minItems", "maxItems", "default"}
)


def shown_schemas(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool definitions as the prompt shows them: without what decoding enforces, and
    without the parameters' root ``"type": "object"`` (always so)."""
    out = []
    for s in schemas:
        fn = dict(s["function"])
        if isinstance(params := fn.get("parameters"), dict):
            lean = _lean(params)
            if lean.get("type") == "object":
                del lean["type"]
            fn["parameters"] = lean
        out.append({**s, "function": fn})
    return out


def _lean(node: Any) -> Any:
    """A schema without the enforced keys, at every depth (a property's name is kept whatever it is)."""
    if isinstance(node, list):
        return [_lean(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in ("properties", "$defs", "definitions") and isinstance(v, dict):
            out[k] = {name: _lean(sub) for name, sub in v.items()}
        elif k in ("enum", "const", "examples"):
            out[k] = v
        elif k not in _ENFORCED:
            out[k] = _lean(v)
    return out


def generic_system_prompt(tool_schemas: list[dict[str, Any]]) -> str:
    """The tool instructions for models whose template cannot list tools."""
    listing = "\n".join(json.dumps(s["function"], ensure_ascii=False) for s in shown_schemas(tool_schemas))
    envelope = {"call_open": CALL_OPEN, "call_close": CALL_CLOSE, "result_open": RESULT_OPEN}
    return load_prompt("generic_tools").format(tools=listing, **envelope)


def text_messages(messages: list[Message], schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history for a chat template that knows no tools (the tiny model's, or any behind
    a server given a grammar): the tools described in the system message, assistant turns
    as generated (calls in the envelope), results as user turns."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            calls = [render_call(c.name, c.arguments) for c in m.tool_calls]
            text = m.raw if m.raw is not None else "\n".join([m.content] * bool(m.content) + calls)
            out.append({"role": "assistant", "content": text})
        elif m.role == "tool":
            out.append({"role": "user", "content": render_result(m.content)})
        else:
            out.append({"role": m.role, "content": m.content})
    if schemas:
        tools_text = generic_system_prompt(schemas)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + tools_text}
        else:
            out.insert(0, {"role": "system", "content": tools_text})
    return out
