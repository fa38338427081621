"""Generated constraints against strings they must and must not accept, on both engines.

The strings are checked by the engines themselves (llama.cpp's grammar sampler,
outlines-core's index), token by token, with only the tokenizer of the default
model loaded (``vocab_only``: no weights, no inference), so what passes here is
exactly what the decoder will allow. outlines is checked with the tiny model's
vocabulary (49,152 tokens): its index takes seconds to build over the default
model's 151,936, which is measured by the benchmark, not here.

outlines-core 0.2.14 loses transitions for a token that spans into an optional
group after a repetition, so under that engine prose cannot contain '<', '`'
or '{' and a turn holds one call; the tests say so where the engines differ.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest

from localagent.errors import ConstraintError
from localagent.grammar import Constraint, ToolChoice, build_constraint

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
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return "<tool_call>\n" + body + "\n</tool_call>"


def _load_vocab(model_id: str) -> Any:
    from llama_cpp import Llama

    from localagent.provision import resolve_model

    return Llama(str(resolve_model(model_id, progress=False)), vocab_only=True, verbose=False)


@pytest.fixture(scope="session")
def qwen_vocab() -> Any:
    return _load_vocab("qwen2.5-coder-0.5b")


@pytest.fixture(scope="session")
def smol_vocab() -> Any:
    return _load_vocab("smollm2-135m")


def _token_bytes(vocab: Any) -> dict[bytes, list[int]]:
    import llama_cpp

    v = llama_cpp.llama_model_get_vocab(vocab.model)
    out: dict[bytes, list[int]] = {}
    for i in range(vocab.n_vocab()):
        if not llama_cpp.llama_vocab_is_eog(v, i) and (b := vocab.detokenize([i], special=True)):
            out.setdefault(b, []).append(i)
    return out


_BYTES: dict[int, dict[bytes, list[int]]] = {}


@pytest.fixture
def vocab(engine: str, request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("qwen_vocab" if engine == "gbnf" else "smol_vocab")


@pytest.fixture
def token_bytes(vocab: Any, engine: str) -> dict[bytes, list[int]] | None:
    if engine == "gbnf":
        return None
    if id(vocab) not in _BYTES:
        _BYTES[id(vocab)] = _token_bytes(vocab)
    return _BYTES[id(vocab)]


_INDEXES: dict[str, Any] = {}


@pytest.fixture(params=["gbnf", "outlines"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def build(engine: str, tools: list[dict[str, Any]], choice: ToolChoice = ToolChoice(), **kw: Any) -> Constraint:
    return build_constraint(tools, choice, engine=engine, **kw)  # type: ignore[arg-type]


def accepts(vocab: Any, c: Constraint, text: str, token_bytes: dict[bytes, list[int]] | None = None) -> bool:
    """Whether the constraint accepts ``text`` in full, then allows end of sequence."""
    import llama_cpp

    from localagent.backends.llama_grammar import GrammarMatcher
    from localagent.backends.outlines_engine import OutlinesMatcher, build_index

    v = llama_cpp.llama_model_get_vocab(vocab.model)
    if c.engine == "gbnf":
        m: Any = GrammarMatcher(v, vocab.n_vocab(), c.text)
    else:
        assert token_bytes is not None
        if c.text not in _INDEXES:
            _INDEXES[c.text] = build_index(c.text, token_bytes, vocab.token_eos())
        m = OutlinesMatcher(_INDEXES[c.text], {vocab.token_eos()})
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
PROSE = ["The answer is 4.", "Paris.", "It is 4 lines long, and it says: hello, world."]
PROSE_GBNF_ONLY = ["It says: hello <b>world</b>.", "Use `ls` to list files.", "A dict like {1: 2}."]
BAD_PROSE = [
    "Sure! <tool_call>\n" + call("read_file", {"path": "a"}),
    "Here it is: ```json\n{}\n```",
    'Call {"name": "read_file"} now',
    'It is ``\n{\n  "name": "read_file"\n}',  # a call across lines, seen in the eval
    "\nHello",
]


@pytest.mark.parametrize("text", GOOD_CALLS)
def test_auto_accepts_well_formed_calls(vocab: Any, token_bytes: Any, engine: str, text: str) -> None:
    assert accepts(vocab, build(engine, TOOLS), text, token_bytes)


@pytest.mark.parametrize("text", BAD_CALLS)
def test_auto_rejects_malformed_calls(vocab: Any, token_bytes: Any, engine: str, text: str) -> None:
    assert not accepts(vocab, build(engine, TOOLS), text, token_bytes)


@pytest.mark.parametrize("text", PROSE)
def test_auto_accepts_prose(vocab: Any, token_bytes: Any, engine: str, text: str) -> None:
    assert accepts(vocab, build(engine, TOOLS), text, token_bytes)


@pytest.mark.parametrize("text", PROSE_GBNF_ONLY)
def test_prose_with_tags_and_backticks(vocab: Any, token_bytes: Any, engine: str, text: str) -> None:
    assert accepts(vocab, build(engine, TOOLS), text, token_bytes) == (engine == "gbnf")


@pytest.mark.parametrize("text", BAD_PROSE)
def test_prose_cannot_open_a_call_in_disguise(vocab: Any, token_bytes: Any, engine: str, text: str) -> None:
    assert not accepts(vocab, build(engine, TOOLS), text, token_bytes)


def test_tool_choice_is_enforced(vocab: Any, token_bytes: Any, engine: str) -> None:
    a_call, prose = GOOD_CALLS[0], PROSE[0]
    required = build(engine, TOOLS, ToolChoice("required"))
    assert accepts(vocab, required, a_call, token_bytes) and not accepts(vocab, required, prose, token_bytes)
    none = build(engine, TOOLS, ToolChoice("none"))
    assert accepts(vocab, none, prose, token_bytes) and not accepts(vocab, none, a_call, token_bytes)
    named = build(engine, TOOLS, ToolChoice.parse("convert"))
    assert accepts(vocab, named, GOOD_CALLS[3], token_bytes) and not accepts(vocab, named, a_call, token_bytes)
    assert not accepts(vocab, named, prose, token_bytes)


def test_parallel_calls_can_be_switched_off(vocab: Any, token_bytes: Any, engine: str) -> None:
    two = GOOD_CALLS[0] + "\n" + GOOD_CALLS[3]
    # outlines: one call a turn whatever the setting (see the module docstring).
    assert accepts(vocab, build(engine, TOOLS, parallel=True), two, token_bytes) == (engine == "gbnf")
    assert not accepts(vocab, build(engine, TOOLS, parallel=False), two, token_bytes)
    assert accepts(vocab, build(engine, TOOLS, parallel=False), GOOD_CALLS[0], token_bytes)
    five = "\n".join([GOOD_CALLS[0]] * 5)
    assert not accepts(vocab, build(engine, TOOLS, parallel=True), five, token_bytes), "at most four calls a turn"


def test_reason_option_puts_one_sentence_before_the_call(vocab: Any, token_bytes: Any, engine: str) -> None:
    g = build(engine, TOOLS, ToolChoice("required"), reason=True)
    assert accepts(vocab, g, "I need the file first.\n" + GOOD_CALLS[0], token_bytes)
    assert not accepts(vocab, g, GOOD_CALLS[0], token_bytes)
    assert not accepts(vocab, g, "One.\nTwo.\n" + GOOD_CALLS[0], token_bytes)


def test_enum_narrowed_paths(vocab: Any, token_bytes: Any, engine: str) -> None:
    live = json.loads(json.dumps(READ))
    live["function"]["parameters"]["properties"]["path"] = {"enum": ["src/main.py", "notes.txt"]}
    g = build(engine, [live])
    assert accepts(vocab, g, call("read_file", {"path": "notes.txt"}), token_bytes)
    assert not accepts(vocab, g, call("read_file", {"path": "src/mian.py"}), token_bytes)


@pytest.mark.parametrize("engine", ["gbnf", "outlines"])
def test_unknown_named_tool_fails_closed(engine: str) -> None:
    with pytest.raises(ConstraintError, match="not a tool"):
        build(engine, TOOLS, ToolChoice.parse("nope"))
    with pytest.raises(ConstraintError, match="no tools"):
        build(engine, [], ToolChoice("required"))


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
    g1 = build("gbnf", tools).text
    first_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    g2 = build("gbnf", tools).text
    cached_ms = (time.perf_counter() - t0) * 1000
    assert g1 == g2 and cached_ms < first_ms
    assert first_ms < 200  # generous for a loaded CI machine; the bench reports the real figure
    for i in range(10):
        assert f'\\"tool_{i}\\"' in g1


def test_large_bounds_are_left_to_the_validator(vocab: Any, token_bytes: Any, engine: str) -> None:
    # A maxLength of 500 once crashed llama.cpp's grammar parser (stack overflow).
    big = {
        "type": "function",
        "function": {
            "name": "note",
            "description": "Write a note.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 500}, "tag": {"type": "string", "maxLength": 3}},
                "required": ["text", "tag"],
                "additionalProperties": False,
            },
        },
    }
    c = build(engine, [big], ToolChoice("required"))
    assert accepts(vocab, c, call("note", {"text": "x" * 80, "tag": "abc"}), token_bytes)
    assert not accepts(vocab, c, call("note", {"text": "x", "tag": "abcd"}), token_bytes)
