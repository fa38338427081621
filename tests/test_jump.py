"""Jump-forward's forced text, without a model."""

from __future__ import annotations

from localagent.constraint.grammar import ToolChoice, call_heads
from localagent.constraint.jump import forced_text, object_end

TOOLS = [
    {"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}}, "required": ["path"]}}},
    {"type": "function", "function": {"name": "read_dir", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}},
]
HEADS = call_heads(TOOLS)


def test_heads() -> None:
    assert HEADS[0] == '<tool_call>\n{"name": "read_file", "arguments": {"path": '
    assert HEADS[1] == '<tool_call>\n{"name": "read_dir", "arguments": {'
    assert HEADS[2] == '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>'
    assert call_heads(TOOLS, ToolChoice.parse("now")) == (HEADS[2],)


def test_envelope_is_forced_after_the_trigger() -> None:
    assert forced_text("<tool_call>", HEADS, parallel=False) == ('\n{"name": "', False)


def test_name_is_forced_once_unique() -> None:
    assert forced_text('<tool_call>\n{"name": "read', HEADS, parallel=False) == ("_", False)
    assert forced_text('<tool_call>\n{"name": "read_f', HEADS, parallel=False) == ('ile", "arguments": {"path": ', False)
    assert forced_text('<tool_call>\n{"name": "n', HEADS, parallel=False) == ('ow", "arguments": {}}\n</tool_call>', False)


def test_values_are_the_models_choice() -> None:
    assert forced_text('<tool_call>\n{"name": "read_file", "arguments": {"path": "a', HEADS, parallel=False) == ("", False)
    assert forced_text("no call here", HEADS, parallel=False) == ("", False)


def test_closing_is_forced_and_ends_the_turn_without_parallel_calls() -> None:
    text = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a}b\\"{"}'
    assert forced_text(text, HEADS, parallel=False) == ("}\n</tool_call>", True)
    assert forced_text(text, HEADS, parallel=True) == ("}\n</tool_call>", False)
    assert forced_text(text + "}\n", HEADS, parallel=False) == ("</tool_call>", True)
    assert forced_text(text + "}\n</tool_call>", HEADS, parallel=False) == ("", False)


def test_object_end() -> None:
    assert object_end('{"a": [1, {"b": "}"}]} tail') == len('{"a": [1, {"b": "}"}]}')
    assert object_end('{"a": "x') is None
    assert object_end("x") is None


KEYS = ("path", "offset", "length")


def test_keys_are_completed_once_unique() -> None:
    from localagent.constraint.jump import forced_key

    assert forced_key('{"path": "a.txt",', KEYS) == ' "'  # offset or length: the model picks
    assert forced_key('{"path": "a.txt", "', KEYS) == ""
    assert forced_key('{"path": "a.txt", "o', KEYS) == 'ffset": '
    assert forced_key('{"path": "a.txt", "offset": 0, "', KEYS) == 'length": '  # only one key left
    assert forced_key('{"path": "a.txt", "offset": 0,', KEYS) == ' "length": '
    assert forced_key('{"path": "a, b', KEYS) == ""  # inside a value
    assert forced_key('{"path": "a.txt", "offset": 1', KEYS) == ""
    assert forced_key('{"', ("path",)) == 'path": '


def test_forced_text_completes_keys_with_the_tool_known() -> None:
    keys = {"read_file": ("path", "offset")}
    text = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a", "o'
    assert forced_text(text, HEADS, parallel=False, keys=keys) == ('ffset": ', False)
    assert forced_text(text, HEADS, parallel=False) == ("", False)
