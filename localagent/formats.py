"""Tool-call formats: how calls look in the model's output, and how to parse them.

Qwen (and Hermes) templates describe tools themselves and expect
``<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>``. Models whose
template has no tool support (the tiny model) get the same envelope, described
by our own system prompt (``prompts/generic_tools.txt``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .prompt import load_prompt

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
_BLOCK = re.compile(re.escape(CALL_OPEN) + r"(.*?)(" + re.escape(CALL_CLOSE) + r"|\Z)", re.S)


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
    ``arguments`` becomes an error line, never a call.
    """
    calls: list[ParsedCall] = []
    errors: list[str] = []
    prose_parts: list[str] = []
    pos = 0
    for m in _BLOCK.finditer(text):
        prose_parts.append(text[pos : m.start()])
        pos = m.end()
        body = m.group(1).strip()
        if not m.group(2):
            errors.append(f"tool call not closed with {CALL_CLOSE} (output was cut short?)")
            continue
        try:
            obj = json.loads(body)
        except (json.JSONDecodeError, RecursionError) as e:
            msg = getattr(e, "msg", type(e).__name__)
            errors.append(f"tool call is not valid JSON ({msg}): {body[:80]!r}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            errors.append('tool call must be {"name": "...", "arguments": {...}}')
            continue
        args = obj.get("arguments", {})
        if isinstance(args, str):  # some models double-encode
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        if not isinstance(args, dict):
            errors.append(f"arguments of '{obj['name']}' must be a JSON object")
            continue
        calls.append(ParsedCall(obj["name"], args))
    prose_parts.append(text[pos:])
    content = "".join(prose_parts).strip()
    return ParseResult(content=content, calls=calls, errors=errors)


def render_call(name: str, arguments: dict[str, Any]) -> str:
    """One call in the envelope, exactly as the grammar produces it."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"


def generic_system_prompt(tool_schemas: list[dict[str, Any]]) -> str:
    """The tool instructions for models whose template cannot list tools."""
    listing = "\n".join(json.dumps(s["function"], ensure_ascii=False) for s in tool_schemas)
    return load_prompt("generic_tools").format(tools=listing)
