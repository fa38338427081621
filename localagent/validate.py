"""Argument validation between the parsed call and its execution, separate from the grammar.

The grammar makes the *shape* right; this layer checks what a grammar cannot: ranges,
required keys in free (unconstrained) output, and meaning (does the file exist, is the id one
seen earlier). Every failure becomes one ``ToolErrorInfo`` with one actionable line.

Types are checked in pydantic's lax mode on purpose. Its lax conversions are all lossless
(``"5"`` -> 5 is accepted, ``"5.5"`` or ``"five"`` -> int and ``5`` -> str are refused), and
under a grammar types already match; in free output, refusing ``"5"`` for an int would only
cost a small model a turn to send what it clearly meant.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from rapidfuzz import fuzz, process

from .errors import ConfigError, ErrorKind, ToolErrorInfo
from .formats import RESULT_CLOSE, RESULT_OPEN
from .tools import Tool, ToolContext
from .tools.workspace import Kind, Workspace, WorkspaceError, is_text, unreadable

__all__ = [
    "ArgCheck", "OneOf", "ToolContext", "WorkspacePath", "closest_names", "live_parameters", "validate_arguments",
]


class ArgCheck:
    """Base of ``Annotated`` markers that check an argument's meaning after its type."""

    def check(self, argument: str, value: Any, ctx: ToolContext) -> ToolErrorInfo | None:
        """None if ``value`` is acceptable, else the error for the model."""
        raise NotImplementedError

    def choices(self, ctx: ToolContext, limit: int) -> list[str] | None:
        """Every valid value, when there are at most ``limit`` (for state-aware
        grammars); None when the set is unknown or too large."""
        return None


@dataclass(frozen=True)
class WorkspacePath(ArgCheck):
    """The argument is a path inside the workspace, of the given kind, text and size."""

    kind: Kind | None = None
    must_exist: bool = True
    text: bool = False  # refuse binary files
    max_bytes: int | None = None
    workspace: Workspace | None = None  # bound workspace; by default ``ctx.workspace``

    def check(self, argument: str, value: Any, ctx: ToolContext) -> ToolErrorInfo | None:
        """Resolve ``value`` in the workspace and check kind, text and size."""
        ws = self.workspace or ctx.workspace
        if ws is None:  # a wiring bug, not the model's fault: stop the run
            raise ConfigError(f"argument {argument!r} is a workspace path but no workspace is set")
        try:
            p = ws.resolve(value, must_exist=self.must_exist, kind=self.kind)
        except WorkspaceError as e:
            e.info.argument = argument
            return e.info
        if not p.is_file():
            return None
        if self.text and not is_text(p):
            if why := unreadable(p):  # is_text says no to what it cannot open, too
                return _unreadable(argument, value, why)
            return ToolErrorInfo(
                kind=ErrorKind.NOT_TEXT,
                message=f"'{value}' is a binary file, not text; it cannot be read as text",
                argument=argument,
            )
        try:
            size = p.stat().st_size
        except OSError as e:  # gone, or its folder changed, since resolve() looked
            return _unreadable(argument, value, (e.strerror or type(e).__name__).lower())
        if self.max_bytes is not None and size > self.max_bytes:
            return ToolErrorInfo(
                kind=ErrorKind.TOO_LARGE,
                message=f"file '{value}' is too large ({size} bytes; limit {self.max_bytes})",
                argument=argument,
            )
        return None


    def choices(self, ctx: ToolContext, limit: int) -> list[str] | None:
        """Existing text files, folders, or both (a path of either kind, as `search`
        takes) under the root, when few enough."""
        ws = self.workspace or ctx.workspace
        if ws is None or not self.must_exist:
            return None
        if self.kind == "file" and not self.text:
            return None  # binary files are valid too; text_files would miss them
        found = [] if self.kind == "file" else ws.folders(limit + 1)
        if self.kind != "dir":
            found += ws.text_files(limit + 1)
        return found if 0 < len(found) <= limit else None


def _unreadable(argument: str, value: str, why: str) -> ToolErrorInfo:
    message = f"'{value}' cannot be read ({why}); choose another file, or ask the user about this one"
    return ToolErrorInfo(kind=ErrorKind.UNREADABLE, message=message, argument=argument)


@dataclass(frozen=True)
class OneOf(ArgCheck):
    """The argument names a live thing: it must be one of ``values`` (a list or ``f(ctx)``)."""

    values: Callable[[ToolContext], Iterable[Any]] | Iterable[Any]
    what: str = "value"  # how the message names it: "unknown key 'fo'"

    def check(self, argument: str, value: Any, ctx: ToolContext) -> ToolErrorInfo | None:
        """Accept ``value`` if it is currently known; else name the closest known ones."""
        known = list(self.values(ctx) if callable(self.values) else self.values)
        if value in known:
            return None
        names = [str(v) for v in known]
        if not names:
            message = f"unknown {self.what} '{value}'; there are none yet"
            return ToolErrorInfo(kind=ErrorKind.UNKNOWN_VALUE, message=message, argument=argument)
        alts = closest_names(str(value), names)
        if alts:
            tail = "closest: " + ", ".join(alts)
        else:
            tail = f"known {self.what}s: " + ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        return ToolErrorInfo(
            kind=ErrorKind.UNKNOWN_VALUE,
            message=f"unknown {self.what} '{value}'; {tail}",
            argument=argument,
            alternatives=alts,
        )


def live_parameters(tool: Tool, ctx: ToolContext, limit: int = 200) -> dict[str, Any]:
    """The tool's argument schema with each checked argument narrowed to the
    values valid right now (an ``enum``), where that set is small enough: the
    grammar then cannot even generate a wrong path. The prompt keeps the plain
    schema, so the KV cache of the prompt is not disturbed."""
    params = json.loads(json.dumps(tool.parameters))
    props = params.get("properties", {})
    for name, field in tool.args_model.model_fields.items():
        if name not in props or props[name].get("type") != "string":
            continue
        for marker in field.metadata:
            if isinstance(marker, ArgCheck):
                values = marker.choices(ctx, limit)
                if values:
                    props[name] = {k: v for k, v in props[name].items() if k in ("description",)}
                    props[name]["enum"] = values
    return params


def closest_names(query: str, names: list[str], limit: int = 3, cutoff: float = 60) -> list[str]:
    """Names most like ``query``, best first; a case-insensitive match always comes first."""
    exact = [n for n in names if n.lower() == query.lower()]
    found = process.extract(query.lower(), [n.lower() for n in names], scorer=fuzz.ratio,
                            score_cutoff=cutoff, limit=limit)
    out = exact + [names[i] for _, _, i in found if names[i] not in exact]
    return out[:limit]


def validate_arguments(tool: Tool, arguments: Any, ctx: ToolContext) -> dict[str, Any] | ToolErrorInfo:
    """The validated keyword arguments for ``tool`` (no context), or the error for the model."""
    if not isinstance(arguments, dict):
        return ToolErrorInfo(
            kind=ErrorKind.INVALID_ARGUMENT,
            message=f"arguments must be a JSON object, got {_json_type(arguments)}",
        )
    if (framed := _framed(arguments)) is not None:
        name, tag = framed
        return ToolErrorInfo(
            kind=ErrorKind.INVALID_ARGUMENT,
            message=f"{name} holds {tag}, the framing of a tool result: give only the text itself",
            argument=name,
        )
    try:
        model = tool.args_model.model_validate(arguments)
    except ValidationError as e:
        return _from_pydantic(tool, e)
    values = dict(model)  # fields as validated objects (nested models stay models)
    for name, info in tool.args_model.model_fields.items():
        if values.get(name) is None:
            continue  # an optional argument left out has nothing to check
        for marker in info.metadata:
            if isinstance(marker, ArgCheck):
                err = marker.check(name, values[name], ctx)
                if err is not None:
                    err.argument = err.argument or name
                    return err
    return values


# A call's own tags may be text a call writes (the fuzz tests send them); a result's framing
# is only ever copied from the prompt.
_FRAMING = (RESULT_OPEN, RESULT_CLOSE)


def _framed(value: Any, name: str = "") -> tuple[str, str] | None:
    """(argument, tag) of the first string argument holding the envelope of a result: the
    1.5B model wrote a settings file as "<tool_response>\nname = ..." (a result copied
    whole), which no file or argument means."""
    if isinstance(value, str):
        tag = next((t for t in _FRAMING if t in value), None)
        return (name or "an argument", tag) if tag else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, v in items:
        if (found := _framed(v, name or str(key))) is not None:
            return found
    return None


def _from_pydantic(tool: Tool, exc: ValidationError) -> ToolErrorInfo:
    """All of pydantic's errors as one line; the first argument named is the one reported."""
    valid = list(tool.args_model.model_fields)
    parts: list[str] = []
    alternatives: list[str] = []
    for err in exc.errors():
        text, alts = _describe(tool, err, valid)
        parts.append(text)
        if alts and not alternatives:
            alternatives = alts
    first = exc.errors()[0]["loc"]
    return ToolErrorInfo(
        kind=ErrorKind.INVALID_ARGUMENT,
        message="; ".join(parts),
        argument=str(first[0]) if first else None,
        alternatives=alternatives,
        detail={"errors": [{"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]},
    )


_TYPE_WORDS = {
    "int": "an integer", "float": "a number", "string": "a string", "bool": "true or false",
    "list": "a list", "tuple": "a list", "set": "a list", "dict": "an object",
    "model": "an object", "model_attributes": "an object", "dataclass": "an object",
}


def _describe(tool: Tool, err: Any, valid: list[str]) -> tuple[str, list[str]]:
    loc = _loc(err["loc"])
    typ: str = err["type"]
    ctx = err.get("ctx") or {}
    got = _show(err.get("input"))
    if typ == "missing":
        return f"argument '{loc}' is required", []
    if typ == "extra_forbidden":
        name = str(err["loc"][-1])
        if len(err["loc"]) > 1:  # an unknown key inside a nested object
            return f"unexpected key '{name}' in '{_loc(err['loc'][:-1])}'", []
        # The closest name leads the list instead of a separate "closest:" clause.
        alts = closest_names(name, valid, limit=1)
        ordered = alts + [v for v in valid if v not in alts]
        shown = ", ".join(ordered) if ordered else "none (call it with {})"
        return f"unexpected argument '{name}'; valid arguments: {shown}", []
    bounds = {"less_than_equal": ("<=", "le"), "greater_than_equal": (">=", "ge"),
              "less_than": ("<", "lt"), "greater_than": (">", "gt")}
    if typ in bounds:
        op, key = bounds[typ]
        return f"argument '{loc}' must be {op} {ctx.get(key)}, got {got}", []
    if typ in ("string_too_long", "string_too_short", "too_long", "too_short"):
        unit = "characters" if typ.startswith("string") else "items"
        limit = ctx.get("max_length") if typ.endswith("long") else ctx.get("min_length")
        most = "at most" if typ.endswith("long") else "at least"
        return f"argument '{loc}' must have {most} {limit} {unit}, got {got}", []
    if typ in ("literal_error", "enum"):
        enum = _enum_at(tool, err["loc"])
        alts = closest_names(str(err.get("input")), [str(v) for v in enum], limit=1) if enum else []
        return f"argument '{loc}' must be {ctx.get('expected', 'one of the allowed values')}, got {got}", alts
    if typ == "int_from_float":
        return f"argument '{loc}' must be a whole number, got {got}", []
    for prefix, words in _TYPE_WORDS.items():
        if typ in (f"{prefix}_type", f"{prefix}_parsing"):
            return f"argument '{loc}' must be {words}, got {got}", []
    msg = str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return f"argument '{loc}': {msg[:1].lower() + msg[1:]}, got {got}", []


def _enum_at(tool: Tool, loc: tuple[Any, ...]) -> list[Any]:
    """The ``enum`` of a top-level argument's schema (nested enums are not looked up)."""
    if len(loc) != 1:
        return []
    prop = tool.parameters.get("properties", {}).get(str(loc[0]), {})
    if "enum" in prop:
        return list(prop["enum"])
    for alt in prop.get("anyOf", []):
        if "enum" in alt:
            return list(alt["enum"])
    return []


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _show(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return type(value).__name__
