"""Tools: a typed Python function plus the metadata the model and the dispatcher need.

``@tool`` reads the signature once and builds both the JSON schema the model sees and the
pydantic model that validates what it sends, so the two cannot drift apart. A tool can also
come from an OpenAI-style JSON-schema definition (``tool_from_schema``, ``@tool(schema=...)``):
its arguments are then checked against that schema, with errors phrased as for typed tools.
Async functions, awaitables and generators are run to completion in the worker thread.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import importlib.util
import inspect
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from ..errors import ConfigError

if TYPE_CHECKING:
    from .workspace import Workspace

__all__ = ["Tool", "ToolContext", "ToolSet", "clean_schema", "load_tools_file", "make_tool", "split_docstring", "tool"]


@dataclass
class ToolContext:
    """What a tool may see at run time: declare a parameter annotated ``ToolContext`` to get it.
    The built-in tools are bound to one of their own instead (``builtin.workspace_tools``)."""

    workspace: Workspace | None = None
    state: dict[str, Any] = field(default_factory=dict)  # live values (ids, keys) tools share
    seen: set[Path] = field(default_factory=set)  # files read whole so far: a write may replace those

    @property
    def ws(self) -> Workspace:
        """The workspace, for a tool that cannot work without one."""
        if self.workspace is None:
            raise ConfigError("this tool works in a workspace, and its context has none")
        return self.workspace


@dataclass(eq=False)
class Tool:
    """A callable tool: the function, its model-facing schema and its run-time policy."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments, as the model sees it
    fn: Callable[..., Any]
    args_model: type[BaseModel]  # validates the model's arguments; built once
    irreversible: bool = False  # needs a person's approval before it runs
    timeout: float | None = 30.0  # seconds; None waits for ever
    max_retries: int = 3  # consecutive failed calls the model may make before the loop stops
    context_param: str | None = None  # name of the ToolContext parameter, if the tool takes one
    # What a call would change (e.g. a diff), from its (already validated) arguments: shown to the person
    # asked to approve an irreversible call. Raises WorkspaceError when the call would fail.
    preview: Callable[[dict[str, Any]], str] | None = None
    # False when the decorator said nothing about reversibility: a tool loaded from a
    # tools file is then treated as irreversible (see load_tools_file).
    irreversible_stated: bool = True
    original: Callable[..., Any] | None = None  # the function as written, when ``fn`` wraps it

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as if it were not decorated."""
        return (self.original or self.fn)(*args, **kwargs)

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI-style ``{"type": "function", ...}`` entry chat templates render."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(self.parameters),
            },
        }


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    irreversible: bool | None = None,
    timeout: float | None = 30.0,
    max_retries: int = 3,
    schema: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    irreversible: bool | None = None,
    timeout: float | None = 30.0,
    max_retries: int = 3,
    schema: Mapping[str, Any] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a ``Tool``; use bare (``@tool``) or with options. With ``schema``
    (an OpenAI-style function definition) the schema is taken as given, not derived."""

    def build(f: Callable[..., Any]) -> Tool:
        options: dict[str, Any] = dict(irreversible=irreversible, timeout=timeout, max_retries=max_retries)
        if schema is not None:
            from .schema import tool_from_schema  # it builds on this module

            return tool_from_schema(schema, f, name=name, **options)
        return make_tool(f, name=name, **options)

    return build(fn) if fn is not None else build


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    irreversible: bool | None = None,
    timeout: float | None = 30.0,
    max_retries: int = 3,
) -> Tool:
    """Build a ``Tool`` from a function (what ``@tool`` does); raises ``ConfigError`` if unusable.

    Unannotated parameters take any JSON value; ``*args`` and ``**kwargs`` are not offered to
    the model; ``irreversible=None`` means not stated (False, except from a tools file)."""
    tool_name = _check_name(name or _callable_name(fn))
    summary, arg_docs = split_docstring(inspect.getdoc(fn) or "")
    target = _hints_target(fn)
    try:
        hints = get_type_hints(target, localns=_closure_vars(target), include_extras=True)
        params = list(inspect.signature(fn).parameters.values())
    except Exception as e:  # unresolvable forward references, a callable without a signature
        raise ConfigError(f"tool {tool_name!r}: cannot read its signature: {e}") from None
    fields, context_param, positional = _fields(params, hints, arg_docs)
    try:
        with warnings.catch_warnings():
            # A parameter called e.g. ``schema`` shadows a BaseModel attribute; harmless here
            # because values are read with dict(model), never by attribute.
            warnings.simplefilter("ignore")
            args_model = create_model(
                f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
            )
            schema = clean_schema(args_model.model_json_schema())
    except Exception as e:
        raise ConfigError(f"tool {tool_name!r}: cannot build its schema: {e}") from None

    return Tool(
        name=tool_name,
        description=summary,
        parameters=schema,
        fn=_runner(fn, positional),
        args_model=args_model,
        irreversible=bool(irreversible),
        timeout=timeout,
        max_retries=max_retries,
        context_param=context_param,
        irreversible_stated=irreversible is not None,
        original=fn,
    )


def _fields(
    params: list[inspect.Parameter], hints: dict[str, Any], arg_docs: dict[str, str]
) -> tuple[dict[str, Any], str | None, tuple[str, ...]]:
    """The model-facing fields of a signature, its ToolContext parameter, and its positional-only names."""
    fields: dict[str, Any] = {}
    context_param = None
    positional: list[str] = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue  # nothing the model could name
        if p.kind is p.POSITIONAL_ONLY:
            positional.append(p.name)
        ann = hints.get(p.name, Any)
        if ann is ToolContext:
            context_param = p.name  # supplied by the dispatcher, never by the model
            continue
        if p.name in arg_docs and not _has_description(ann):
            ann = Annotated[ann, Field(description=arg_docs[p.name])]
        fields[p.name] = (ann, ... if p.default is p.empty else p.default)
    return fields, context_param, tuple(positional)


def _check_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}", name):
        raise ConfigError(f"tool name {name!r} must be an identifier of at most 64 characters")
    return name


def _callable_name(fn: Callable[..., Any]) -> str:
    """A function's name; a partial's or a callable object's when it has none of its own."""
    owner = None if inspect.isroutine(fn) else type(fn)  # a lambda is no "function" tool
    for candidate in (fn, getattr(fn, "func", None), owner):
        name = getattr(candidate, "__name__", None)
        if isinstance(name, str) and name != "<lambda>":
            return name
    raise ConfigError(f"tool {fn!r} has no name; give one with name=...")


def _hints_target(fn: Callable[..., Any]) -> Any:
    """What holds the annotations: the function itself, a partial's function, or ``__call__``."""
    if isinstance(fn, functools.partial):
        return _hints_target(fn.func)
    if inspect.isroutine(fn) or isinstance(fn, type):
        return fn
    return getattr(fn, "__call__", fn)


_UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "<unset>"})()  # an optional argument left out


def _runner(fn: Callable[..., Any], positional: tuple[str, ...]) -> Callable[..., Any]:
    """``fn`` as the dispatcher calls it: keywords only, its result complete (awaited, collected)."""

    def run(**kwargs: Any) -> Any:
        kwargs = {k: v for k, v in kwargs.items() if v is not _UNSET}
        args = []
        for p in positional:  # positional-only parameters, in order, up to the first left out
            if p not in kwargs:
                break
            args.append(kwargs.pop(p))
        return _complete(fn(*args, **kwargs))

    return run


def _complete(value: Any) -> Any:
    """An awaitable awaited, a generator collected: the value a tool really produced.
    Runs in the dispatcher's worker thread, which has no event loop of its own."""
    if inspect.isawaitable(value):
        value = asyncio.run(_await(value))
    if inspect.isasyncgen(value):
        value = asyncio.run(_collect(value))
    elif inspect.isgenerator(value):
        value = list(value)
    return value


async def _await(awaitable: Any) -> Any:
    return await awaitable


async def _collect(agen: Any) -> list[Any]:
    return [item async for item in agen]


def _closure_vars(fn: Callable[..., Any]) -> dict[str, Any]:
    """Variables a nested function closes over: string annotations may name them."""
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    out: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars if code else (), cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return out


def _has_description(ann: Any) -> bool:
    if get_origin(ann) is not Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in get_args(ann)[1:])


_SECTION = re.compile(r"^(\w[\w ]*):\s*$")
_ARG_SECTIONS = {"args", "arguments", "parameters", "params"}
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a cleaned docstring into (description without the Args section, {arg: text})."""
    kept: list[str] = []
    args: dict[str, str] = {}
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _SECTION.match(line.strip())
        if not (m and m.group(1).lower() in _ARG_SECTIONS):
            kept.append(line)
            i += 1
            continue
        indent = len(line) - len(line.lstrip())
        i += 1
        current: str | None = None
        current_indent = 0
        # The section lasts while lines are indented deeper than its header (or blank).
        while i < len(lines) and (
            not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
        ):
            text = lines[i].strip()
            am = _ARG_LINE.match(text)
            entry_indent = len(lines[i]) - len(lines[i].lstrip())
            if am and (current is None or entry_indent <= current_indent):
                current = am.group(1).lstrip("*")
                current_indent = entry_indent
                args[current] = am.group(2).strip()
            elif text and current is not None:
                args[current] = (args[current] + " " + text).strip()
            i += 1
    description = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return description, args


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's ``title`` noise and inline non-recursive ``$ref``s, for small models."""
    defs = schema.pop("$defs", {})

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(n, stack) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            key = ref.removeprefix("#/$defs/")
            if key in defs and key not in stack:
                inlined = walk(copy.deepcopy(defs[key]), (*stack, key))
                extra = {k: walk(v, stack) for k, v in node.items() if k != "$ref"}
                return {**inlined, **extra}
            used_defs.add(key)
            return dict(node)  # recursive: keep the reference
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k == "title" and isinstance(v, str):
                continue
            if k in ("properties", "$defs") and isinstance(v, dict):
                out[k] = {name: walk(sub, stack) for name, sub in v.items()}  # keys are names
            else:
                out[k] = walk(v, stack)
        return out

    used_defs: set[str] = set()
    cleaned: dict[str, Any] = walk(schema, ())
    if used_defs:  # only recursive models still need definitions
        cleaned["$defs"] = {k: walk(defs[k], (k,)) for k in sorted(used_defs)}
    return cleaned


class ToolSet:
    """An ordered set of tools, keyed by name; duplicate names are a ``ConfigError``."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        """Add one tool; its name must be new."""
        if not isinstance(t, Tool):
            raise ConfigError(f"{t!r} is not a tool; decorate it with @tool")
        if t.name in self._tools:
            raise ConfigError(f"two tools are named {t.name!r}; tool names must be unique")
        self._tools[t.name] = t

    def names(self) -> list[str]:
        """Tool names, in the order they were added."""
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style schemas of all tools, in order."""
        return [t.openai_schema() for t in self._tools.values()]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


def load_tools_file(path: str | Path) -> list[Tool]:
    """Import a Python file and return its tools: module-level ``Tool`` objects in definition
    order, then the entries of a module-level list ``TOOLS`` (tools, or pairs of an OpenAI-style
    definition and its callable). A tool that does not state ``irreversible`` is taken as
    irreversible: code from a file is not trusted to be harmless unless it says so."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"tools file {str(p)!r} is a folder; give a .py file")
    if not p.is_file():
        raise ConfigError(f"tools file {str(p)!r} does not exist")
    # A unique module name per file, so that two tools files never replace each other.
    mod_name = "localagent_user_tools_" + re.sub(r"\W", "_", str(p.resolve()))
    spec = importlib.util.spec_from_file_location(mod_name, p)
    if spec is None or spec.loader is None:
        raise ConfigError(f"tools file {str(p)!r} cannot be imported (is it a .py file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # pydantic and dataclasses look models up by module
    try:
        spec.loader.exec_module(module)
    except ConfigError as e:
        sys.modules.pop(mod_name, None)
        raise ConfigError(f"tools file {str(p)!r}: {e}") from None
    except SyntaxError as e:
        sys.modules.pop(mod_name, None)
        raise ConfigError(f"tools file {str(p)!r}, line {e.lineno}: syntax error: {e.msg}") from None
    except (Exception, SystemExit) as e:
        sys.modules.pop(mod_name, None)
        first = (str(e).strip().splitlines() or [""])[0]
        raise ConfigError(f"tools file {str(p)!r} failed to load: {type(e).__name__}: {first}") from None
    tools = [v for v in vars(module).values() if isinstance(v, Tool)]
    try:
        tools += [t for t in _listed_tools(getattr(module, "TOOLS", [])) if t not in tools]
    except ConfigError as e:
        raise ConfigError(f"tools file {str(p)!r}: {e}") from None
    if not tools:
        raise ConfigError(f"tools file {str(p)!r} defines no tools; decorate functions with @tool or list them in TOOLS")
    return [t if t.irreversible_stated else replace(t, irreversible=True) for t in tools]


def _listed_tools(entries: Any) -> list[Tool]:
    """The tools of a ``TOOLS`` list: ``Tool`` objects, or (definition, callable) pairs."""
    from .schema import tool_from_schema  # it builds on this module

    if not isinstance(entries, (list, tuple)):
        raise ConfigError("TOOLS must be a list of tools or of (definition, callable) pairs")
    out = []
    for i, entry in enumerate(entries):
        if isinstance(entry, Tool):
            out.append(entry)
        elif isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[0], Mapping):
            try:
                out.append(tool_from_schema(entry[0], entry[1]))
            except ConfigError as e:
                raise ConfigError(f"TOOLS[{i}]: {e}") from None
        else:
            raise ConfigError(f"TOOLS[{i}] is neither a tool nor a (definition, callable) pair")
    return out
