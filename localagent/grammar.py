"""Grammars for one step: built from the tools' JSON schemas, pure and cached.

The fixed pieces live in ``grammars/calls.gbnf`` and ``grammars/prose.gbnf``; the per-tool argument
rules come from llama-cpp-python's port of llama.cpp's JSON-schema converter.
A grammar that cannot be built raises ``ConstraintError``: the step fails
closed, it never falls back to unconstrained output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from .errors import ConstraintError

ToolChoiceMode = Literal["auto", "required", "none"]
Engine = Literal["gbnf", "outlines"]


@dataclass(frozen=True)
class ToolChoice:
    """auto, required, none, or one named tool (``name`` set, mode required)."""

    mode: ToolChoiceMode = "auto"
    name: str | None = None

    @staticmethod
    def parse(value: str) -> "ToolChoice":
        """``auto``, ``required``, ``none``, or a tool name."""
        if value in ("auto", "required", "none"):
            return ToolChoice(value)  # type: ignore[arg-type]
        return ToolChoice("required", value)


@dataclass(frozen=True)
class Constraint:
    """What the decoder must follow for one step: a GBNF grammar or a regex, and
    the call heads it fixes (for jump-forward)."""

    engine: Engine
    text: str
    heads: tuple[str, ...] = ()
    keys: tuple[tuple[str, tuple[str, ...]], ...] = ()  # per tool, its argument keys in grammar order


def build_constraint(
    tools: list[dict[str, Any]],
    choice: ToolChoice = ToolChoice(),
    *,
    engine: Engine = "gbnf",
    parallel: bool = True,
    reason: bool = False,
) -> Constraint:
    """The constraint for one step with the chosen engine."""
    build = build_grammar if engine == "gbnf" else build_regex
    text = build(tools, choice, parallel=parallel, reason=reason)
    calls = tools and choice.mode != "none"
    heads = call_heads(tools, choice) if calls else ()
    return Constraint(engine, text, heads, argument_keys(tools) if calls else ())


def argument_keys(tools: list[dict[str, Any]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each tool's argument keys in the order the grammar allows them: the
    required ones as declared, then the optional ones as declared."""
    out = []
    for t in tools:
        params = t["function"].get("parameters") or {}
        props = list((params.get("properties") or {}).keys())
        req = set(params.get("required") or [])
        out.append((t["function"]["name"], tuple([p for p in props if p in req] + [p for p in props if p not in req])))
    return tuple(out)


@lru_cache(maxsize=None)
def load_grammar_file(name: str) -> str:
    """A grammar piece from ``grammars/NAME.gbnf``, comments kept."""
    return (resources.files("localagent.grammars") / f"{name}.gbnf").read_text(encoding="utf-8")


def _args_rules(schemas: tuple[str, ...]) -> tuple[list[str], str]:
    # Imported here: the converter lives in llama_cpp, which loads the native library.
    from llama_cpp.llama_grammar import SchemaConverter

    # Keys in the order the schema declares them (the converter would sort them
    # by name otherwise): that is the order the model reads in the prompt.
    order: dict[str, int] = {}
    for text in schemas:
        for name in _property_names(json.loads(text)):
            order.setdefault(name, len(order))
    conv = SchemaConverter(prop_order=order, allow_fetch=False, dotall=False, raw_pattern=False)
    names = []
    for i, text in enumerate(schemas):
        schema = engine_safe(json.loads(text))
        schema = conv.resolve_refs(schema, f"tool{i}")
        names.append(conv.visit(schema, f"args{i}"))
    return names, conv.format_grammar()


# The converter writes a bound as nested optionals ("x (x (x ...)?)?"), and
# llama.cpp's recursive grammar parser overflows its stack (a segfault no
# Python code can catch) on a few hundred of them. Larger bounds are left to
# the validator, which checks every call after it is generated.
MAX_GRAMMAR_BOUND = 64


def engine_safe(schema: Any) -> Any:
    """``schema`` without length and count bounds above ``MAX_GRAMMAR_BOUND``."""
    if isinstance(schema, list):
        return [engine_safe(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k in ("maxLength", "maxItems", "maxProperties") and isinstance(v, int) and v > MAX_GRAMMAR_BOUND:
            continue
        if k in ("minLength", "minItems") and isinstance(v, int) and v > MAX_GRAMMAR_BOUND:
            continue
        out[k] = v if k in ("enum", "const", "default", "examples") else engine_safe(v)
    return out


def canonical_spacing(rules: str) -> str:
    """Fix the converter's optional spaces to one layout: ``{"a": 1, "b": [2, 3]}``.

    That is how the chat template re-renders a call (``tojson``), how the model
    writes JSON by habit, and it leaves the grammar one way to write the
    punctuation, which the decoder then inserts without sampling (jump-forward).
    """
    out = rules.replace('space ":" space', '":" " "').replace('":" space', '":" " "')
    out = out.replace('"," space', '", "').replace('"{" space', '"{"').replace('"[" space', '"["')
    return out.replace('space ::= " "?', 'space ::= ""')


def call_heads(tools: list[dict[str, Any]], choice: ToolChoice = ToolChoice()) -> tuple[str, ...]:
    """The text every call to each tool must start with, up to its first value:
    ``<tool_call>\n{"name": "read_file", "arguments": {"path": `` (with the
    canonical spacing). The decoder inserts what these fix without sampling."""
    heads = []
    for t in _select([t["function"] for t in tools], choice):
        params = t.get("parameters") or {}
        props = list((params.get("properties") or {}).keys())
        required = [p for p in props if p in set(params.get("required") or [])]
        head = "<tool_call>\n" + '{"name": ' + json.dumps(t["name"], ensure_ascii=False) + ', "arguments": {'
        if required:
            head += json.dumps(required[0], ensure_ascii=False) + ": "
        elif not props:
            head += "}}\n</tool_call>"
        heads.append(head)
    return tuple(heads)


def _property_names(schema: Any) -> list[str]:
    """Property names in declaration order, nested objects included."""
    out: list[str] = []
    if isinstance(schema, dict):
        for name, sub in (schema.get("properties") or {}).items():
            out.append(name)
            out += _property_names(sub)
        for key in ("items", "additionalProperties"):
            out += _property_names(schema.get(key))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for sub in schema.get(key) or []:
                out += _property_names(sub)
        for sub in (schema.get("$defs") or {}).values():
            out += _property_names(sub)
    return out


def _literal(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def build_grammar(
    tools: list[dict[str, Any]],
    choice: ToolChoice = ToolChoice(),
    *,
    parallel: bool = True,
    reason: bool = False,
) -> str:
    """The GBNF for one step over ``tools`` (OpenAI-style function schemas)."""
    key = tuple(json.dumps(t) for t in tools)  # key order matters: it is the order of the call's keys
    return _build_cached(key, choice, parallel, reason)


@lru_cache(maxsize=64)
def _build_cached(tools_key: tuple[str, ...], choice: ToolChoice, parallel: bool, reason: bool) -> str:
    tools, choice = _tools_for(tools_key, choice)

    calls = "calls-many" if parallel else "calls-one"
    prefix = "thought " if reason else ""
    root = {
        "auto": f"prose | {prefix}{calls}",
        "required": f"{prefix}{calls}",
        "none": "prose",
    }[choice.mode]
    parts = [f"root ::= {root}", load_grammar_file("prose")]
    if choice.mode != "none":
        parts.append(load_grammar_file("calls"))
        schemas = tuple(
            json.dumps(t.get("parameters") or {"type": "object", "properties": {}})
            for t in tools
        )
        try:
            arg_rules, rules = _args_rules(schemas)
        except Exception as e:  # the converter raises bare exceptions on bad schemas
            raise ConstraintError(f"cannot build a grammar for these tool schemas: {e}") from None
        alts = []
        for i, (t, arg_rule) in enumerate(zip(tools, arg_rules)):
            head = '{"name": ' + _literal(t["name"]) + ', "arguments": '
            alts.append(f"call{i}")
            parts.append(f"call{i} ::= {_literal(head)} {arg_rule} \"}}\"")
        parts.append("call ::= " + " | ".join(alts))
        parts.append(canonical_spacing(rules))
    return "\n".join(parts) + "\n"


# -- the same language as a regular expression, for the outlines engine ----------

# outlines-core (0.2.14) loses transitions for a token that spans into an
# optional or alternated group that follows a repetition (``[a-z ]*(<b)?``
# rejects " <" in "hello <b"), so these are written without such groups. The
# price: prose under this engine cannot contain '<', '`' or '{' at all, and a
# turn holds one call (``parallel`` is ignored).
_PROSE_RX = r"[^<\{\[`\x20\t\n\r][^<`\{]*"
_THOUGHT_RX = r"[^<\{\[`\x20\t\n\r][^<`\n]*\n"


def build_regex(
    tools: list[dict[str, Any]],
    choice: ToolChoice = ToolChoice(),
    *,
    parallel: bool = True,
    reason: bool = False,
) -> str:
    """The language of ``build_grammar`` as a regex (outlines-core's JSON-schema
    machinery for the arguments; the envelope written to match grammars/*.gbnf)."""
    key = tuple(json.dumps(t) for t in tools)
    return _regex_cached(key, choice, parallel, reason)


@lru_cache(maxsize=64)
def _regex_cached(tools_key: tuple[str, ...], choice: ToolChoice, parallel: bool, reason: bool) -> str:
    import re

    from outlines_core.json_schema import build_regex_from_schema

    tools, choice = _tools_for(tools_key, choice)
    if choice.mode == "none":
        return _PROSE_RX
    alts = []
    for t in tools:
        schema = t.get("parameters") or {"type": "object", "properties": {}}
        try:
            args = build_regex_from_schema(json.dumps(engine_safe(schema)), r"[ ]?")
        except Exception as e:  # outlines-core raises its own error types
            raise ConstraintError(f"cannot build a regex for the schema of '{t['name']}': {e}") from None
        head = re.escape('{"name": ' + json.dumps(t["name"], ensure_ascii=False) + ', "arguments": ')
        alts.append(f"{head}({args})[ ]?" + re.escape("}"))
    block = re.escape("<tool_call>\n") + "(" + "|".join(alts) + ")" + re.escape("\n</tool_call>")
    # Several calls in one turn would need a repeated group, which hits the
    # outlines-core bug above: under this engine a turn holds one call.
    calls = block
    if reason:
        calls = _THOUGHT_RX + calls
    return calls if choice.mode == "required" else f"({calls})|({_PROSE_RX})"


def _tools_for(tools_key: tuple[str, ...], choice: ToolChoice) -> tuple[list[dict[str, Any]], ToolChoice]:
    """The tools a step may call under ``choice``, and the choice itself: auto
    with nothing to call is prose; required with nothing to call fails closed."""
    tools = _select([json.loads(t)["function"] for t in tools_key], choice)
    if not tools:
        if choice.mode == "required":
            raise ConstraintError("tool_choice requires a call but no tools are registered")
        choice = ToolChoice("none")
    return tools, choice


def _select(tools: list[dict[str, Any]], choice: ToolChoice) -> list[dict[str, Any]]:
    if choice.name is None:
        return tools
    names = [t["name"] for t in tools]
    if choice.name not in names:
        raise ConstraintError(f"tool_choice names '{choice.name}', which is not a tool; tools: {', '.join(names)}")
    return [t for t in tools if t["name"] == choice.name]
