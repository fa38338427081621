"""Tools from JSON-schema definitions: an OpenAI-style function definition plus a callable.

The schema is taken as given (the grammar is built from it, as for any tool). The arguments
are checked against it with ``jsonschema``, inside the tool's ``args_model``, and each schema
error is reported as the pydantic error of the same meaning, so that ``validate_arguments``
phrases it exactly as for a typed tool (``argument 'n' must be >= 1, got 0``).
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import jsonschema
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..errors import ConfigError
from .base import _UNSET, Tool, _check_name, _runner

__all__ = ["definition_of", "tool_from_schema"]


def definition_of(definition: Any) -> tuple[str, str, dict[str, Any]]:
    """(name, description, parameters) of ``{"name", "description", "parameters"}``, bare or
    inside ``{"type": "function", "function": ...}``; a ``ConfigError`` when it is not one."""
    if isinstance(definition, Mapping) and isinstance(definition.get("function"), Mapping):
        definition = definition["function"]
    if not isinstance(definition, Mapping) or not isinstance(definition.get("name"), str):
        raise ConfigError("a tool definition is an object with a string 'name' (and 'description', 'parameters')")
    name = _check_name(definition["name"])
    description = definition.get("description") or ""
    params = definition.get("parameters")
    params = {"type": "object", "properties": {}} if params is None else params
    if not isinstance(description, str):
        raise ConfigError(f"tool {name!r}: 'description' must be a string")
    if not isinstance(params, Mapping) or params.get("type", "object") != "object":
        raise ConfigError(f"tool {name!r}: 'parameters' must be a JSON schema of type object")
    try:
        jsonschema.validators.validator_for(params).check_schema(params)
    except jsonschema.SchemaError as e:
        raise ConfigError(f"tool {name!r}: 'parameters' is not a valid JSON schema: {e.message}") from None
    return name, description, dict(params)


def tool_from_schema(
    definition: Mapping[str, Any],
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    irreversible: bool | None = None,
    timeout: float | None = 30.0,
    max_retries: int = 3,
) -> Tool:
    """A ``Tool`` that runs ``fn(**arguments)`` (sync or async) once the arguments fit the
    definition's ``parameters``; ``name`` overrides the definition's."""
    given, description, params = definition_of(definition)
    tool_name = _check_name(name or given)
    _check_callable(tool_name, fn, params)
    return Tool(
        name=tool_name,
        description=description,
        parameters=params,
        fn=_runner(fn, ()),
        args_model=_schema_model(tool_name, params),
        irreversible=bool(irreversible),
        timeout=timeout,
        max_retries=max_retries,
        irreversible_stated=irreversible is not None,
        original=fn,
    )


def _check_callable(name: str, fn: Callable[..., Any], params: dict[str, Any]) -> None:
    """A ``ConfigError`` when ``fn`` cannot take the arguments the schema declares."""
    if not callable(fn):
        raise ConfigError(f"tool {name!r}: {fn!r} is not callable")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: trust it
        return
    try:
        sig.bind_partial(**dict.fromkeys(params.get("properties") or {}))
    except TypeError as e:
        raise ConfigError(f"tool {name!r}: the function cannot take the schema's arguments: {e}") from None


class _SchemaArguments(BaseModel):
    """Arguments checked against a JSON schema; the fields (all ``Any``) only carry names."""

    model_config = ConfigDict(extra="allow")
    json_validator: ClassVar[Any]

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Check ``obj`` against the schema first; its errors raised as pydantic's."""
        errors = [line for e in cls.json_validator.iter_errors(obj) for line in _line_errors(e)]
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return super().model_validate(obj, **kwargs)


def _schema_model(name: str, params: dict[str, Any]) -> type[BaseModel]:
    """The ``args_model`` of a schema tool: one ``Any`` field per property whose name can be a
    field (others pass as extras), defaulting to the schema's default or to "left out"."""
    fields: dict[str, Any] = {}
    for prop, sub in (params.get("properties") or {}).items():
        if prop.isidentifier() and not keyword.iskeyword(prop) and not prop.startswith(("_", "model_")):
            default = sub.get("default", _UNSET) if isinstance(sub, Mapping) else _UNSET
            fields[prop] = (Any, ... if prop in (params.get("required") or []) else default)
    model = create_model(f"{name}_arguments", __base__=_SchemaArguments, **fields)
    model.json_validator = jsonschema.validators.validator_for(params)(params)
    return model


_TYPES = {
    "integer": "int_type", "number": "float_type", "string": "string_type", "boolean": "bool_type",
    "array": "list_type", "object": "dict_type",
}
_BOUNDS = {
    "minimum": ("greater_than_equal", "ge"), "maximum": ("less_than_equal", "le"),
    "exclusiveMinimum": ("greater_than", "gt"), "exclusiveMaximum": ("less_than", "lt"),
    "minLength": ("string_too_short", "min_length"), "maxLength": ("string_too_long", "max_length"),
}


def _line_errors(e: jsonschema.ValidationError) -> list[InitErrorDetails]:
    """One jsonschema error as the pydantic line errors of the same meaning."""
    loc = tuple(e.absolute_path)
    kw, value, inst = e.validator, e.validator_value, e.instance
    if kw == "required" and isinstance(inst, dict):
        return [{"type": "missing", "loc": (*loc, r), "input": inst} for r in value if r not in inst]
    if kw == "additionalProperties" and value is False and isinstance(inst, dict):
        known = e.schema.get("properties") or {}
        return [{"type": "extra_forbidden", "loc": (*loc, k), "input": inst[k]} for k in inst if k not in known]
    if kw == "type" and isinstance(value, str) and value in _TYPES:
        return [{"type": _TYPES[value], "loc": loc, "input": inst}]  # type: ignore[typeddict-item]
    if kw in _BOUNDS and not isinstance(value, bool):
        kind, key = _BOUNDS[kw]
        return [{"type": kind, "loc": loc, "input": inst, "ctx": {key: value}}]  # type: ignore[typeddict-item]
    if kw in ("minItems", "maxItems") and isinstance(inst, list):
        kind, key = ("too_short", "min_length") if kw == "minItems" else ("too_long", "max_length")
        ctx = {"field_type": "List", key: value, "actual_length": len(inst)}
        return [{"type": kind, "loc": loc, "input": inst, "ctx": ctx}]  # type: ignore[typeddict-item]
    if kw == "enum" and isinstance(value, list):
        expected = " or ".join(repr(v) for v in value) if len(value) < 3 else (
            ", ".join(repr(v) for v in value[:-1]) + f" or {value[-1]!r}"
        )
        return [{"type": "enum", "loc": loc, "input": inst, "ctx": {"expected": expected}}]
    error = PydanticCustomError("json_schema", "{reason}", {"reason": e.message})
    return [{"type": error, "loc": loc, "input": inst}]
