"""Generated grammars against strings they must and must not accept.

The strings are checked by llama.cpp's own grammar engine, token by token, with
only the tokenizer of the default model loaded (``vocab_only``: no weights, no
inference), so what passes here is exactly what the decoder will allow.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest

from localagent.errors import ConstraintError
from localagent.grammar import ToolChoice, build_grammar

READ = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    },
}
UNITS = {
    "type": "function",
    "function": {
        "name": "convert",
        "description": "Convert units.",
        "parameters": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "unit": {"type": "string", "enum": ["km", "mi"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opts": {
                    "type": "object",
                    "properties": {"round": {"type": "boolean"}},
                    "required": ["round"],
                    "additionalProperties": False,
                },
            },
            "required": ["value", "unit"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [READ, UNITS]


def call(name: str, args: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


@pytest.fixture(scope="session")
def vocab() -> Iterator[Any]:
    from llama_cpp import Llama

    from localagent.provision import resolve_model

    llm = Llama(str(resolve_model("qwen2.5-coder-0.5b", progress=False)), vocab_only=True, verbose=False)
    yield llm


def accepts(vocab: Any, gbnf: str, text: str) -> bool:
    """Whether the grammar accepts ``text`` in full, then allows end of sequence."""
    import llama_cpp

    from localagent.backends.llama_grammar import GrammarMatcher

    m = GrammarMatcher(llama_cpp.llama_model_get_vocab(vocab.model), vocab.n_vocab(), gbnf)
    try:
        for tok in vocab.tokenize(text.encode(), add_bos=False, special=True):
            if not m.allows(tok):
                return False
            m.accept(tok)
        return m.allows(vocab.token_eos())
    finally:
        m.close()


GOOD_CALLS = [
    call("read_file", {"path": "src/main.py"}),
    call("read_file", {"path": "a b.txt", "offset": 10}),
    call("read_file", {"path": "caf\u00e9/\u00fcber.md"}),
    call("convert", {"value": 3.5, "unit": "km"}),
    call("convert", {"value": -2, "unit": "mi", "tags": ["x", "y"], "opts": {"round": True}}),
    call("convert", {"value": 1e3, "unit": "km", "tags": []}),
]
BAD_CALLS = [
    call("read_fil", {"path": "a"}),  # unknown tool
    call("read_file", {}),  # missing required argument
    call("read_file", {"path": 3}),  # wrong type
    call("read_file", {"path": "a", "extra": 1}),  # unexpected argument
    call("convert", {"value": "3", "unit": "km"}),  # number as string
    call("convert", {"value": 3, "unit": "miles"}),  # not in the enum
    call("convert", {"value": 3, "unit": "km", "opts": {}}),  # nested required missing
    call("convert", {"value": 3, "unit": "km", "tags": [1]}),  # wrong item type
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}\n</tool_call>',  # malformed JSON
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}',  # not closed
    '{"name": "read_file", "arguments": {"path": "a"}}',  # bare JSON: a call in disguise
    '```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```',  # fenced JSON
    ' <tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>',  # leading space
    "",  # nothing at all
]
PROSE = ["The answer is 4.", "Paris.", "It says: hello <b>world</b>.", "Use `ls` to list files."]
BAD_PROSE = [
    "Sure! <tool_call>\n" + call("read_file", {"path": "a"}),
    "Here it is: ```json\n{}\n```",
    'Call {"name": "read_file"} now',
    "\nHello",
]


@pytest.mark.parametrize("text", GOOD_CALLS)
def test_auto_accepts_well_formed_calls(vocab: Any, text: str) -> None:
    assert accepts(vocab, build_grammar(TOOLS), text)


@pytest.mark.parametrize("text", BAD_CALLS)
def test_auto_rejects_malformed_calls(vocab: Any, text: str) -> None:
    assert not accepts(vocab, build_grammar(TOOLS), text)


@pytest.mark.parametrize("text", PROSE)
def test_auto_accepts_prose(vocab: Any, text: str) -> None:
    assert accepts(vocab, build_grammar(TOOLS), text)


@pytest.mark.parametrize("text", BAD_PROSE)
def test_prose_cannot_open_a_call_in_disguise(vocab: Any, text: str) -> None:
    assert not accepts(vocab, build_grammar(TOOLS), text)


def test_tool_choice_is_enforced(vocab: Any) -> None:
    a_call, prose = GOOD_CALLS[0], PROSE[0]
    required = build_grammar(TOOLS, ToolChoice("required"))
    assert accepts(vocab, required, a_call) and not accepts(vocab, required, prose)
    none = build_grammar(TOOLS, ToolChoice("none"))
    assert accepts(vocab, none, prose) and not accepts(vocab, none, a_call)
    named = build_grammar(TOOLS, ToolChoice.parse("convert"))
    assert accepts(vocab, named, GOOD_CALLS[3]) and not accepts(vocab, named, a_call)
    assert not accepts(vocab, named, prose)


def test_parallel_calls_can_be_switched_off(vocab: Any) -> None:
    two = GOOD_CALLS[0] + "\n" + GOOD_CALLS[3]
    assert accepts(vocab, build_grammar(TOOLS, parallel=True), two)
    assert not accepts(vocab, build_grammar(TOOLS, parallel=False), two)
    assert accepts(vocab, build_grammar(TOOLS, parallel=False), GOOD_CALLS[0])
    five = "\n".join([GOOD_CALLS[0]] * 5)
    assert not accepts(vocab, build_grammar(TOOLS, parallel=True), five), "at most four calls a turn"


def test_reason_option_puts_one_sentence_before_the_call(vocab: Any) -> None:
    g = build_grammar(TOOLS, ToolChoice("required"), reason=True)
    assert accepts(vocab, g, "I need the file first.\n" + GOOD_CALLS[0])
    assert not accepts(vocab, g, GOOD_CALLS[0])
    assert not accepts(vocab, g, "One.\nTwo.\n" + GOOD_CALLS[0])


def test_enum_narrowed_paths(vocab: Any) -> None:
    live = json.loads(json.dumps(READ))
    live["function"]["parameters"]["properties"]["path"] = {"enum": ["src/main.py", "notes.txt"]}
    g = build_grammar([live])
    assert accepts(vocab, g, call("read_file", {"path": "notes.txt"}))
    assert not accepts(vocab, g, call("read_file", {"path": "src/mian.py"}))


def test_unknown_named_tool_fails_closed() -> None:
    with pytest.raises(ConstraintError, match="not a tool"):
        build_grammar(TOOLS, ToolChoice.parse("nope"))
    with pytest.raises(ConstraintError, match="no tools"):
        build_grammar([], ToolChoice("required"))


def test_unparseable_grammar_fails_closed(vocab: Any) -> None:
    import llama_cpp

    from localagent.backends.llama_grammar import GrammarMatcher

    with pytest.raises(ConstraintError):
        GrammarMatcher(llama_cpp.llama_model_get_vocab(vocab.model), vocab.n_vocab(), "root ::= undefined-rule")


def test_grammar_is_built_once_and_fast() -> None:
    tools = []
    for i in range(10):
        t = json.loads(json.dumps(UNITS))
        t["function"]["name"] = f"tool_{i}"
        tools.append(t)
    t0 = time.perf_counter()
    g1 = build_grammar(tools)
    first_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    g2 = build_grammar(tools)
    cached_ms = (time.perf_counter() - t0) * 1000
    assert g1 == g2 and cached_ms < first_ms
    assert first_ms < 200  # generous for a loaded CI machine; the bench reports the real figure
    for i in range(10):
        assert f'\\"tool_{i}\\"' in g1
