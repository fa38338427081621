"""Grammars for one step: built from the tools' JSON schemas, pure and cached.

The fixed pieces live in ``grammars/calls.gbnf`` and ``grammars/prose.gbnf``; the per-tool argument
rules come from llama-cpp-python's port of llama.cpp's JSON-schema converter.
A grammar that cannot be built raises ``ConstraintError``: the step fails
closed, it never falls back to unconstrained output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from ..errors import ConstraintError
from ..formats import CALL_CLOSE, CALL_OPEN

ToolChoiceMode = Literal["auto", "required", "none"]
Engine = Literal["gbnf", "llguidance"]
ENGINES: dict[str, Engine] = {"gbnf": "gbnf", "llguidance": "llguidance"}  # by name, for the CLI


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
    """What the decoder must follow for one step: a GBNF grammar or a Lark grammar
    (llguidance), and the call heads it fixes (for jump-forward)."""

    engine: Engine
    text: str
    heads: tuple[str, ...] = ()
    keys: tuple[tuple[str, tuple[str, ...]], ...] = ()  # per tool, its argument keys in grammar order
    parallel: bool = True  # a turn may hold several calls


def build_constraint(
    tools: list[dict[str, Any]],
    choice: ToolChoice = ToolChoice(),
    *,
    engine: Engine = "gbnf",
    parallel: bool = True,
    reason: bool = False,
) -> Constraint:
    """The constraint for one step with the chosen engine."""
    tools = [as_codes(t) for t in tools]
    if engine == "llguidance":
        from .llguidance_engine import build_lark as build
    else:
        build = build_grammar
    text = build(tools, choice, parallel=parallel, reason=reason)
    calls = tools and choice.mode != "none"
    heads = call_heads(tools, choice) if calls else ()
    return Constraint(engine, text, heads, argument_keys(tools) if calls else (), parallel)


# A string whose description gives only codes in capitals for examples ("Ticker symbol, e.g.
# 'AAPL'"; "ISO 4217 code, e.g. 'USD'") takes a code in capitals: the 0.5B model wrote
# "Netflix" and "Tesla" for their tickers.
CODE_PATTERN = "^[A-Z][A-Z0-9.-]{0,9}$"
_EXAMPLES = re.compile(r"\be\.g\.,?\s*(.*)", re.IGNORECASE | re.DOTALL)


def as_codes(tool: dict[str, Any]) -> dict[str, Any]:
    """``tool`` with ``CODE_PATTERN`` set on each string parameter, at any depth, whose
    description's examples are all codes in capitals, and that has no enum, pattern or format."""
    def visit(node: Any) -> Any:
        if isinstance(node, list):
            return [visit(x) for x in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in _SCHEMA_MAPS and isinstance(v, dict):
                out[k] = {name: visit(sub) for name, sub in v.items()}
            else:
                out[k] = visit(v) if k in ("items", "anyOf", "oneOf", "allOf", "additionalProperties") else v
        if node.get("type") == "string" and not {"enum", "const", "pattern", "format"} & set(node) and _codes_only(node.get("description")):
            out["pattern"] = CODE_PATTERN
        return out

    f = tool.get("function", tool)
    if "parameters" not in f:
        return tool
    f = {**f, "parameters": visit(f["parameters"])}
    return {**tool, "function": f} if "function" in tool else f


def _codes_only(description: Any) -> bool:
    examples = _examples(description)
    return bool(examples) and all(re.fullmatch(r"[A-Z]{2,5}", e) for e in examples)


def _examples(description: Any) -> list[str]:
    """The quoted examples after a description's "e.g."."""
    m = _EXAMPLES.search(description) if isinstance(description, str) else None
    return re.findall(r"['\"]([^'\"]+)['\"]", m.group(1)) if m else []


def code_examples(spec: Any) -> list[str]:
    """The examples of a string parameter that takes a code in capitals (``as_codes``)."""
    free = isinstance(spec, dict) and spec.get("type") == "string" and not {"enum", "const", "pattern", "format"} & set(spec)
    return _examples(spec.get("description")) if free and _codes_only(spec.get("description")) else []


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
    class Converter(SchemaConverter):  # type: ignore[misc]
        def _format_literal(self, literal: str) -> str:
            # llama-cpp-python's escapes quotes and line breaks but not backslashes, so an
            # enum value holding a quote ('name = "x"', JSON '\\"x\\"') ended its literal early.
            return '"' + re.sub(r'[\\\r\n"]', lambda m: _GBNF_ESCAPES[m.group(0)], literal) + '"'

    conv = Converter(prop_order=order, allow_fetch=False, dotall=False, raw_pattern=False)
    names = []
    for i, text in enumerate(schemas):
        schema = engine_safe(json.loads(text))
        schema = conv.resolve_refs(schema, f"tool{i}")
        names.append(conv.visit(schema, f"args{i}"))
    return names, json_strict(conv.format_grammar())


_GBNF_ESCAPES = {"\\": "\\\\", "\r": "\\r", "\n": "\\n", '"': '\\"'}

# The converter writes a bound as nested optionals ("x (x (x ...)?)?"), and
# llama.cpp's recursive grammar parser overflows its stack (a segfault no
# Python code can catch) on a few hundred of them. Larger bounds are left to
# the validator, which checks every call after it is generated.
MAX_GRAMMAR_BOUND = 64

# String formats the GBNF converter turns into a JSON-safe rule. Others (email, uri,
# hostname, ...) become a plain string in the grammar and are left to the validator:
# llama.cpp's converter has no rule for them.
GRAMMAR_FORMATS = frozenset({"date", "time", "date-time", "uuid"})


_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_VERBATIM = ("enum", "const", "default", "examples", "required", "title", "description")
_ANY = ["object", "array", "string", "number", "boolean", "null"]
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"})


def engine_safe(schema: Any) -> Any:
    """``schema`` as the GBNF converter can enforce it exactly: bounds above
    ``MAX_GRAMMAR_BOUND``, formats it has no safe rule for and patterns
    that ``json_safe_pattern`` cannot rewrite are dropped (the validator checks
    them), and the other patterns are rewritten by it."""
    if isinstance(schema, list):
        return [engine_safe(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            out[k] = {name: engine_safe(sub) for name, sub in v.items()}  # keys are names here
        elif k in _VERBATIM:
            out[k] = v
        elif k in ("maxLength", "maxItems", "maxProperties", "minLength", "minItems") and isinstance(v, int) and v > MAX_GRAMMAR_BOUND:
            continue
        elif k == "format" and isinstance(v, str):
            if v in GRAMMAR_FORMATS:
                out[k] = v
        elif k == "pattern" and isinstance(v, str):
            if (safe := json_safe_pattern(v)) is not None:
                out[k] = safe
        else:
            out[k] = engine_safe(v)
    if out and set(out) <= _ANNOTATIONS:
        return {"type": _ANY}  # words only: any value (the converter refuses it, or reads {} as an object)
    return out


# -- patterns, rewritten so that what they match needs no escaping in JSON ------------

# llama.cpp's grammar matches a pattern against the raw text between the quotes, so a
# pattern that can match a quote, a backslash or a control character lets the
# model write a string that is not JSON (`"a"b"` under `^a.b$`). The rewrite
# takes those characters out of every character set (`.`, `[^x]`, `\S`, ...):
# what it matches is then written unescaped, raw text and value are the same,
# and every string the grammar allows matches the original pattern.

_UNSAFE = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C))  # need escaping in a JSON string
_MAX_CP = 0x10FFFF
_CLASS_ESCAPES = {
    "d": ((0x30, 0x39),),
    "w": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "s": ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
          (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)),
}  # as in JSON Schema's regexes (ECMA-262): \d and \w are ASCII, \s is Unicode white space
_CHAR_ESCAPES = {"n": 0x0A, "t": 0x09, "r": 0x0D, "f": 0x0C, "v": 0x0B, "0": 0x00}
_RAW_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-@:/,;!%&'=<>~#`")


class _Unsupported(ValueError):
    """A pattern construct the rewrite does not handle: the pattern is left to the validator."""


Ranges = list[tuple[int, int]]


def _normalise(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _complement(ranges: Ranges) -> Ranges:
    out, at = [], 0
    for lo, hi in _normalise(ranges):
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= _MAX_CP:
        out.append((at, _MAX_CP))
    return out


def _safe_only(ranges: Ranges) -> Ranges:
    """``ranges`` without the characters JSON would have to escape."""
    unsafe = _normalise(list(_UNSAFE))
    return _normalise([(max(lo, a), min(hi, b)) for lo, hi in ranges for a, b in _complement(unsafe) if max(lo, a) <= min(hi, b)])


def _class_text(ranges: Ranges) -> str:
    """A character class as llama.cpp's GBNF reads it."""
    def one(cp: int) -> str:
        c = chr(cp)
        if c.isascii() and c.isalnum():
            return c
        if cp <= 0xFF:
            return f"\\x{cp:02X}"
        return f"\\u{cp:04X}" if cp <= 0xFFFF else f"\\U{cp:08X}"

    parts = [one(lo) if lo == hi else f"{one(lo)}-{one(hi)}" for lo, hi in ranges]
    return "[" + "".join(parts) + "]"


def _escape(pattern: str, i: int) -> tuple[Ranges, bool, int]:
    """The escape at ``pattern[i]`` (just after the backslash): its ranges, whether
    it is negated (\\D, \\W, \\S), and the index after it."""
    if i >= len(pattern):
        raise _Unsupported("a trailing backslash")
    c = pattern[i]
    if c.lower() in _CLASS_ESCAPES:
        return list(_CLASS_ESCAPES[c.lower()]), c.isupper(), i + 1
    if c in _CHAR_ESCAPES:
        return [(_CHAR_ESCAPES[c], _CHAR_ESCAPES[c])], False, i + 1
    if c in "xu":
        n = 2 if c == "x" else 4
        digits = pattern[i + 1 : i + 1 + n]
        if len(digits) != n or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise _Unsupported(f"the escape \\{c}{digits}")
        cp = int(digits, 16)
        return [(cp, cp)], False, i + 1 + n
    if c.isalnum():  # \b, \B, back references, \p{...}, \c...
        raise _Unsupported(f"the escape \\{c}")
    return [(ord(c), ord(c))], False, i + 1


def _class(pattern: str, i: int) -> tuple[Ranges, bool, int]:
    """The class opening at ``pattern[i] == '['``: its ranges, negated or not, and the index after it."""
    i += 1
    negated = i < len(pattern) and pattern[i] == "^"
    i += negated
    ranges: Ranges = []
    first = True
    while i < len(pattern) and (pattern[i] != "]" or first):
        first = False
        if pattern[i] == "\\":
            rs, neg, i = _escape(pattern, i + 1)
            if neg:
                raise _Unsupported("a negated escape inside a class")
        elif pattern[i] == "[":
            raise _Unsupported("a nested class")
        else:
            rs, i = [(ord(pattern[i]), ord(pattern[i]))], i + 1
        if i + 1 < len(pattern) and pattern[i] == "-" and pattern[i + 1] != "]" and len(rs) == 1 and rs[0][0] == rs[0][1]:
            if pattern[i + 1] == "\\":
                hi_rs, neg, j = _escape(pattern, i + 2)
                if neg or len(hi_rs) != 1 or hi_rs[0][0] != hi_rs[0][1]:
                    raise _Unsupported("a range that ends in a class escape")
            else:
                hi_rs, j = [(ord(pattern[i + 1]), ord(pattern[i + 1]))], i + 2
            if hi_rs[0][0] < rs[0][0]:
                raise _Unsupported("a range out of order")
            rs, i = [(rs[0][0], hi_rs[0][0])], j
        ranges += rs
    if i >= len(pattern):
        raise _Unsupported("an unclosed class")
    return ranges, negated, i + 1


def _quantifier(pattern: str, i: int) -> tuple[str, int]:
    """The quantifier at ``pattern[i]``, capped at ``MAX_GRAMMAR_BOUND`` (a larger
    bound becomes ``*`` or ``+``: looser, and the validator checks the rest)."""
    c = pattern[i]
    if c in "*+?":
        q, i = c, i + 1
    else:
        m = re.match(r"\{(\d+)(,(\d*))?\}", pattern[i:])
        if m is None:
            raise _Unsupported("a '{' that is not a bound")
        lo = int(m.group(1))
        hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
        if hi is not None and hi < lo:
            raise _Unsupported("a bound out of order")
        if lo > MAX_GRAMMAR_BOUND:
            q = "+" if lo else "*"
        elif hi is not None and hi > MAX_GRAMMAR_BOUND:
            q = f"{{{lo},}}"
        else:
            q = m.group(0)
        i += m.end()
    if i < len(pattern) and pattern[i] == "?":  # lazy: the same strings
        i += 1
    return q, i


def json_safe_pattern(pattern: str) -> str | None:
    """``pattern`` (JSON Schema: a search, anchored only by ``^`` and ``$``) as an
    anchored pattern for the GBNF converter that matches only strings needing no JSON
    escape, each of which matches ``pattern``; None when it uses what this does
    not handle (lookarounds, back references, ``\\b``, anchors inside), or needs a
    quote, backslash or control character: then the validator alone checks it."""
    try:
        alts = _alternatives(pattern)
        free = _class_text(_safe_only([(0, _MAX_CP)])) + "*"
        out = []
        for alt in alts:
            start = alt.startswith("^")
            end = alt.endswith("$") and not _escaped_at(alt, len(alt) - 1)
            body = alt[1 if start else 0 : len(alt) - 1 if end else len(alt)]
            out.append(("" if start else free) + _rewrite(body) + ("" if end else free))
    except _Unsupported:
        return None
    return "^" + (out[0] if len(out) == 1 else "(" + "|".join(out) + ")") + "$"


def _escaped_at(s: str, i: int) -> bool:
    n = 0
    while i - 1 - n >= 0 and s[i - 1 - n] == "\\":
        n += 1
    return n % 2 == 1


def _alternatives(pattern: str) -> list[str]:
    """``pattern`` split at its top-level ``|``."""
    out, depth, i, start = [], 0, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            _, _, i = _class(pattern, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    return out + [pattern[start:]]


def _rewrite(body: str) -> str:
    """One alternative's body with every character set made JSON-safe."""
    out: list[str] = []
    i, depth, atom = 0, 0, False  # atom: something a quantifier may follow
    while i < len(body):
        c = body[i]
        if c in "*+?{":
            if not atom:
                raise _Unsupported(f"a quantifier with nothing before it at {i}")
            q, i = _quantifier(body, i)
            out.append(q)
            atom = False
            continue
        if c == "(":
            if body.startswith("(?:", i):
                i += 3
            elif body.startswith("(?", i):
                raise _Unsupported("a lookaround or named group")
            else:
                i += 1
            depth += 1
            out.append("(")
            atom = False
            continue
        if c == ")":
            depth -= 1
            if depth < 0:
                raise _Unsupported("an unbalanced ')'")
            out.append(")")
            i, atom = i + 1, True
            continue
        if c == "|":
            out.append("|")
            i, atom = i + 1, False
            continue
        if c in "^$":
            raise _Unsupported("an anchor inside the pattern")
        if c == ".":
            ranges, negated, i = [(0x0A, 0x0A), (0x0D, 0x0D)], True, i + 1
        elif c == "[":
            ranges, negated, i = _class(body, i)
        elif c == "\\":
            ranges, negated, i = _escape(body, i + 1)
        else:
            ranges, negated, i = [(ord(c), ord(c))], False, i + 1
        safe = _safe_only(_complement(ranges) if negated else ranges)
        if not safe:
            raise _Unsupported("a character JSON must escape")
        if len(safe) == 1 and safe[0][0] == safe[0][1] and chr(safe[0][0]) in _RAW_OK:
            out.append(chr(safe[0][0]))
        else:
            out.append(_class_text(safe))
        atom = True
    if depth != 0:
        raise _Unsupported("an unbalanced '('")
    return "".join(out)


# llama-cpp-python's converter lets a string hold raw control characters ([^"\\]),
# which JSON forbids (a raw newline in an argument fails the parser): llama.cpp's
# own converter excludes them, and so does this rule.
_JSON_CHAR = r'char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'


def json_strict(rules: str) -> str:
    """The converter's rules with its string characters limited to what JSON allows unescaped."""
    return re.sub(r"^char ::= .*$", lambda _: _JSON_CHAR, rules, flags=re.M)


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
        head = CALL_OPEN + "\n" + '{"name": ' + json.dumps(t["name"], ensure_ascii=False) + ', "arguments": {'
        if required:
            head += json.dumps(required[0], ensure_ascii=False) + ": "
        elif not props:
            head += "}}\n" + CALL_CLOSE
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


def clear_grammar_cache() -> None:
    """Forget the grammars built so far, so that the next ``build_grammar`` builds cold."""
    _build_cached.cache_clear()


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


_AUTO_ROOT = re.compile(r"root ::= prose \| (calls-one|calls-many)")


def decided_grammar(grammar: str, decision: Literal["call", "prose"]) -> str | None:
    """An auto step's GBNF with call or prose chosen (its root made the calls alone, or the
    prose alone): how a server, which cannot decide at the first token, is given the
    decision. None when ``grammar`` is not an auto step's (built here without ``reason``)."""
    head, sep, rest = grammar.partition("\n")
    m = _AUTO_ROOT.fullmatch(head)
    if m is None:
        return None
    return f"root ::= {m[1] if decision == 'call' else 'prose'}{sep}{rest}"


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
