"""Parsing calls out of the model's text, and rendering them back."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from localagent.formats import CALL_CLOSE, CALL_OPEN, RESULT_OPEN, generic_system_prompt, parse, render_call, shown_schemas


def test_prose_only() -> None:
    r = parse("  The answer is 4.  ")
    assert r.content == "The answer is 4." and r.calls == [] and r.errors == []


def test_one_call_with_prose_around() -> None:
    r = parse("Let me add.\n" + render_call("add", {"a": 1, "b": 2}) + "\nDone.")
    assert [(c.name, c.arguments) for c in r.calls] == [("add", {"a": 1, "b": 2})]
    assert r.content == "Let me add.\n\nDone."
    assert r.errors == []


def test_several_calls_in_order() -> None:
    text = "\n".join(render_call("f", {"i": i}) for i in range(3))
    r = parse(text)
    assert [c.arguments["i"] for c in r.calls] == [0, 1, 2]
    assert r.content == ""


def test_missing_arguments_mean_none() -> None:
    r = parse(f'{CALL_OPEN}\n{{"name": "list_dir"}}\n{CALL_CLOSE}')
    assert r.calls[0].arguments == {}


def test_double_encoded_arguments_are_decoded() -> None:
    body = json.dumps({"name": "f", "arguments": json.dumps({"x": 1})})
    r = parse(f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}")
    assert r.calls[0].arguments == {"x": 1} and r.errors == []


def test_unclosed_block_is_an_error_not_a_call() -> None:
    r = parse('Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}')
    assert r.calls == []
    assert len(r.errors) == 1 and "not closed" in r.errors[0]
    assert r.content == "Sure."


def test_invalid_json() -> None:
    r = parse(f"{CALL_OPEN}\n{{name: add}}\n{CALL_CLOSE}")
    assert r.calls == []
    assert r.errors[0].startswith("tool call is not valid JSON") and "{name: add}" in r.errors[0]


def test_wrong_shapes() -> None:
    for body in ('["add"]', '{"arguments": {}}', '{"name": 3}'):
        r = parse(f"{CALL_OPEN}{body}{CALL_CLOSE}")
        assert r.calls == [] and r.errors == ['tool call must be {"name": "...", "arguments": {...}}'], body
    r = parse(f'{CALL_OPEN}{{"name": "f", "arguments": [1]}}{CALL_CLOSE}')
    assert r.errors == ["arguments of 'f' must be a JSON object"]


def test_good_and_bad_blocks_in_one_turn() -> None:
    text = render_call("a", {}) + f"\n{CALL_OPEN}nope{CALL_CLOSE}\n" + render_call("b", {"k": "v"})
    r = parse(text)
    assert [c.name for c in r.calls] == ["a", "b"]
    assert len(r.errors) == 1


def test_deep_nesting_never_raises() -> None:
    body = '{"name": "f", "arguments": ' + "[" * 100_000 + "]" * 100_000 + "}"
    r = parse(f"{CALL_OPEN}{body}{CALL_CLOSE}")
    assert r.calls == [] and len(r.errors) == 1


def test_render_call_is_the_grammar_envelope() -> None:
    text = render_call("read_file", {"path": "é.txt"})
    assert text == '<tool_call>\n{"name": "read_file", "arguments": {"path": "é.txt"}}\n</tool_call>'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True),
    args=st.dictionaries(st.text(max_size=10), json_values, max_size=4),
)
def test_render_then_parse_round_trips(name: str, args: dict) -> None:
    r = parse(render_call(name, args))
    assert r.errors == [] and r.content == ""
    assert [(c.name, c.arguments) for c in r.calls] == [(name, args)]


@given(st.text(max_size=200))
def test_parse_never_raises(text: str) -> None:
    parse(text)
    parse(CALL_OPEN + text)
    parse(CALL_OPEN + text + CALL_CLOSE)


def test_generic_system_prompt_lists_every_tool() -> None:
    schemas = [
        {"type": "function", "function": {"name": n, "description": "d", "parameters": {"type": "object"}}}
        for n in ("read_file", "list_dir")
    ]
    text = generic_system_prompt(schemas)
    assert '"name": "read_file"' in text and '"name": "list_dir"' in text
    assert CALL_OPEN in text and '{"name": "TOOL_NAME"' in text  # the braces survived .format
    assert CALL_CLOSE in text and RESULT_OPEN in text  # the envelope filled in from the constants


def test_the_prompt_shows_a_schema_without_what_decoding_enforces() -> None:
    nested = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}}, "additionalProperties": False}
    params = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "minimum": {"type": "string", "minLength": 1, "maxLength": 5, "description": "a property named like a bound"},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "items": {"type": "array", "items": nested, "maxItems": 3},
        },
        "required": ["minimum"],
    }
    schema = {"type": "function", "function": {"name": "t", "description": "d", "parameters": params}}
    (shown,) = shown_schemas([schema])
    p = shown["function"]["parameters"]
    assert p == {
        "properties": {
            "minimum": {"type": "string", "description": "a property named like a bound"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        },
        "required": ["minimum"],
    }
    assert schema["function"]["parameters"] is params and params["additionalProperties"] is False  # not changed in place
    assert shown["function"]["name"] == "t" and shown["type"] == "function"
