"""Tools from OpenAI-style JSON-schema definitions: built, validated like typed tools, run."""

from typing import Any

import pytest

from localagent.dispatch import Dispatcher
from localagent.errors import ConfigError, ToolErrorInfo
from localagent.constraint.grammar import ToolChoice, build_constraint
from localagent.messages import ToolCall
from localagent.tools.schema import tool_from_schema
from localagent.tools import ToolContext, ToolSet
from localagent.validate import validate_arguments

DEFINITION = {
    "type": "function",
    "function": {
        "name": "book",
        "description": "Book a table.",
        "parameters": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "people": {"type": "integer", "minimum": 1, "maximum": 12},
                "time": {"type": "string", "enum": ["lunch", "dinner"]},
                "notes": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "vip": {"type": "boolean", "default": False},
            },
            "required": ["name", "people"],
            "additionalProperties": False,
        },
    },
}


def book(name: str, people: int, time: str = "dinner", notes: Any = None, vip: bool = False) -> str:
    return f"{name} x{people} at {time}{' (vip)' if vip else ''}"


BOOK = tool_from_schema(DEFINITION, book)


def check(arguments: Any) -> dict[str, Any] | ToolErrorInfo:
    return validate_arguments(BOOK, arguments, ToolContext())


def test_the_definition_is_taken_as_given() -> None:
    assert BOOK.name == "book" and BOOK.description == "Book a table."
    assert BOOK.openai_schema() == DEFINITION
    assert not BOOK.irreversible and not BOOK.irreversible_stated


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"people": 2}, "argument 'name' is required"),
        ({"name": "Ada", "people": 0}, "argument 'people' must be >= 1, got 0"),
        ({"name": "Ada", "people": 13}, "argument 'people' must be <= 12, got 13"),
        ({"name": "Ada", "people": "2"}, "argument 'people' must be an integer, got \"2\""),
        ({"name": "", "people": 2}, "argument 'name' must have at least 1 characters"),
        ({"name": "Ada", "people": 2, "time": "brunch"}, "argument 'time' must be 'lunch' or 'dinner', got \"brunch\""),
        ({"name": "Ada", "people": 2, "notes": ["a", "b", "c"]}, "argument 'notes' must have at most 2 items"),
        ({"name": "Ada", "people": 2, "notes": [1]}, "argument 'notes[0]' must be a string, got 1"),
        ({"name": "Ada", "people": 2, "tabel": 4}, "unexpected argument 'tabel'; valid arguments: name,"),
        ([1], "arguments must be a JSON object"),
    ],
)
def test_schema_errors_read_like_typed_tool_errors(arguments: Any, message: str) -> None:
    err = check(arguments)
    assert isinstance(err, ToolErrorInfo) and err.kind == "invalid_argument"
    assert message in err.message, err.message


def test_an_enum_error_offers_the_closest_value() -> None:
    err = check({"name": "Ada", "people": 2, "time": "diner"})
    assert isinstance(err, ToolErrorInfo) and err.alternatives == ["dinner"]


def test_valid_arguments_run_and_omitted_ones_keep_the_function_default() -> None:
    calls = [ToolCall("c1", "book", {"name": "Ada", "people": 2}), ToolCall("c2", "book", {"name": "Bo", "people": 1, "vip": True})]
    r1, r2 = Dispatcher(ToolSet([BOOK]), ToolContext()).run(calls)
    assert r1.error is None and r1.content == "Ada x2 at dinner"  # 'time' left out: the function's default
    assert r2.content == "Bo x1 at dinner (vip)"


def test_a_bare_definition_async_callable_and_a_property_that_is_no_identifier() -> None:
    async def get(**kwargs: Any) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(kwargs.items()))

    t = tool_from_schema(
        {"name": "get", "parameters": {"type": "object", "properties": {"user-id": {"type": "integer"}, "class": {}}}},
        get,
    )
    checked = validate_arguments(t, {"user-id": 3, "class": "x"}, ToolContext())
    assert isinstance(checked, dict) and t.fn(**checked) == "class=x,user-id=3"
    assert isinstance(validate_arguments(t, {"user-id": "3"}, ToolContext()), ToolErrorInfo)


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ({"description": "x"}, "a tool definition is an object with a string 'name'"),
        ({"name": "bad name"}, "must be an identifier"),
        ({"name": "f", "parameters": {"type": "string"}}, "'parameters' must be a JSON schema of type object"),
        ({"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "nope"}}}}, "is not a valid JSON schema"),
        ({"name": "f", "parameters": {"type": "object", "properties": {"zz": {}}}}, "cannot take the schema's arguments"),
    ],
)
def test_bad_definitions_are_one_line_config_errors(definition: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        tool_from_schema(definition, lambda a=1: a)
    assert "\n" not in str(e.value)


def test_the_grammar_is_built_from_the_schema() -> None:
    c = build_constraint(ToolSet([BOOK]).schemas(), ToolChoice("required"))
    assert '\\"book\\"' in c.text or '"book"' in c.text
