"""The llguidance engine: the known-good and known-bad strings of tests/test_grammar.py run
through it token by token on the default model's own tokenizer (``vocab_only``: no weights, no
inference), what it enforces that the other two engines leave to the validator, its mask
against its one-token check, the tokens it forces, and failing closed. A small vocabulary of
our own checks the same without a model file."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

pytest.importorskip("llguidance")

from localagent.constraint import FailClosed  # noqa: E402
from localagent.constraint.llguidance_engine import LLGuidanceMatcher, engine_ready, start_matcher, tokenizer  # noqa: E402
from localagent.errors import ConstraintError  # noqa: E402
from localagent.formats import CALL_OPEN  # noqa: E402
from localagent.constraint.grammar import ToolChoice, build_constraint, call_heads  # noqa: E402
from test_grammar import BAD_CALLS, BAD_PROSE, GOOD_CALLS, PROSE, TOOLS, _arg, _one, call  # noqa: E402

# -- on the default model's tokenizer ------------------------------------------------------


class Vocab:
    """The default model's tokenizer as llguidance reads it, with the model's own encoder."""

    def __init__(self) -> None:
        from llama_cpp import Llama

        from localagent.backends.llama import token_pieces
        from localagent.provision import resolve_model

        self.llm = Llama(str(resolve_model("qwen2.5-coder-0.5b", progress=False)), vocab_only=True, verbose=False)
        self.pieces, eog = token_pieces(self.llm)
        self.eog = set(eog)
        self.eos = self.llm.token_eos()
        self.tok = tokenizer(self.pieces, self.eos, self.encode)

    def encode(self, text: bytes) -> list[int]:
        return list(self.llm.tokenize(text, add_bos=False, special=True))

    def matcher(self, tools: list[dict[str, Any]], choice: ToolChoice = ToolChoice(), **kw: Any) -> LLGuidanceMatcher:
        c = build_constraint(tools, choice, engine="llguidance", **kw)
        return LLGuidanceMatcher(start_matcher(self.tok, c.text), self.eog, len(self.pieces))

    def text(self, tokens: list[int]) -> str:
        return b"".join(self.pieces[t] for t in tokens).decode()


@pytest.fixture(scope="module")
def qwen() -> Vocab:
    return Vocab()


def feed(v: Vocab, m: Any, text: str) -> bool:
    """Whether ``m`` takes ``text`` token by token, as the decoder checks it."""
    for t in v.encode(text.encode()):
        if not m.allows(t):
            return False
        m.accept(t)
    return True


def accepts(v: Vocab, tools: list[dict[str, Any]], text: str, choice: ToolChoice = ToolChoice(), **kw: Any) -> bool:
    """Whether the constraint takes ``text`` in full, then allows the end of the reply."""
    m = v.matcher(tools, choice, **kw)
    return feed(v, m, text) and m.allows(v.eos)


@pytest.mark.parametrize("text", GOOD_CALLS)
def test_well_formed_calls_are_accepted(qwen: Vocab, text: str) -> None:
    assert accepts(qwen, TOOLS, text)


@pytest.mark.parametrize("text", BAD_CALLS)
def test_malformed_calls_are_rejected(qwen: Vocab, text: str) -> None:
    assert not accepts(qwen, TOOLS, text)


@pytest.mark.parametrize("text", PROSE)
def test_prose_is_accepted_with_tags_and_backticks_as_under_gbnf(qwen: Vocab, text: str) -> None:
    assert accepts(qwen, TOOLS, text)


@pytest.mark.parametrize("text", BAD_PROSE)
def test_prose_cannot_open_a_call_in_disguise(qwen: Vocab, text: str) -> None:
    assert not accepts(qwen, TOOLS, text)


def test_the_call_tag_is_one_token_and_text_to_the_grammar(qwen: Vocab) -> None:
    # Qwen's <tool_call> is a user-defined token: llguidance's own lltokenizer_from_vocab marks
    # it special, and then no call could ever be opened with the token the model writes.
    tag = qwen.encode(CALL_OPEN.encode())
    assert len(tag) == 1 and qwen.matcher(TOOLS).allows(tag[0])
    control = qwen.encode(b"<|im_start|>")  # a control token is never text
    assert not qwen.matcher(TOOLS).allows(control[0])


def test_tool_choice_parallel_calls_and_the_reason_sentence(qwen: Vocab) -> None:
    a_call, prose = GOOD_CALLS[0], PROSE[0]
    assert accepts(qwen, TOOLS, a_call, ToolChoice("required")) and not accepts(qwen, TOOLS, prose, ToolChoice("required"))
    assert accepts(qwen, TOOLS, prose, ToolChoice("none")) and not accepts(qwen, TOOLS, a_call, ToolChoice("none"))
    assert not accepts(qwen, TOOLS, a_call, ToolChoice.parse("convert"))
    two = GOOD_CALLS[0] + "\n" + GOOD_CALLS[3]
    assert accepts(qwen, TOOLS, two, parallel=True) and not accepts(qwen, TOOLS, two, parallel=False)
    assert not accepts(qwen, TOOLS, "\n".join([a_call] * 9), parallel=True), "at most eight calls a turn"
    assert accepts(qwen, TOOLS, "I need the file first.\n" + a_call, ToolChoice("required"), reason=True)
    assert not accepts(qwen, TOOLS, a_call, ToolChoice("required"), reason=True)


def test_a_tool_choice_naming_no_tool_fails_closed() -> None:
    with pytest.raises(ConstraintError, match="not a tool"):
        build_constraint(TOOLS, ToolChoice.parse("nope"), engine="llguidance")


# -- what llguidance enforces that the gbnf engine leaves to the validator ------------------


def test_large_bounds_are_enforced(qwen: Vocab) -> None:
    # The gbnf engine drops a bound over 64 (it crashed llama.cpp's parser).
    text = _one({"type": "string", "maxLength": 500})
    assert accepts(qwen, text, _arg("x" * 80), ToolChoice("required"))
    assert not accepts(qwen, text, _arg("x" * 501), ToolChoice("required"))
    many = _one({"type": "array", "items": {"type": "integer"}, "minItems": 70})
    assert not accepts(qwen, many, call("f", {"x": [1] * 69}), ToolChoice("required"))
    assert accepts(qwen, many, call("f", {"x": [1] * 70}), ToolChoice("required"))


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date", "2024-02-29", "2024-13-01"),
        ("time", "10:30:00Z", "24:00:00Z"),
        ("date-time", "2024-02-29T10:30:00Z", "now"),
        ("uuid", "123e4567-e89b-42d3-a456-426614174000", "not-a-uuid"),
        ("email", "ann@example.com", "not an address"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
    ],
)
def test_string_formats_are_enforced(qwen: Vocab, fmt: str, good: str, bad: str) -> None:
    tools = _one({"type": "string", "format": fmt})
    assert accepts(qwen, tools, _arg(good), ToolChoice("required"))
    assert not accepts(qwen, tools, _arg(bad), ToolChoice("required"))


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        ("^[A-Z]{3}-[0-9]+$", ["ABC-12"], ["AB-12", "abc-12", "xABC-12"]),
        ("[0-9]", ["room 101"], ["no digits"]),  # unanchored: a search, as JSON Schema means it
        ("^a.c$", ["abc", 'a\\"c'], ['a"c', "ac"]),  # the decoded value matches; raw text stays JSON
        ('^say "hi"$', ['say \\"hi\\"'], ['say "hi"', "say hi"]),  # a quote the rewrite could not take
        ("^[a-z]{1,500}$", ["abc"], ["ABC", ""]),
    ],
)
def test_patterns_are_matched_against_the_decoded_string(qwen: Vocab, pattern: str, good: list[str], bad: list[str]) -> None:
    tools = _one({"type": "string", "pattern": pattern})
    for x in good:
        assert accepts(qwen, tools, _arg(x), ToolChoice("required")), x
    for x in bad:
        assert not accepts(qwen, tools, _arg(x), ToolChoice("required")), x


@pytest.mark.parametrize("pattern", ["^(?=a)\\w+$", "\\bword\\b", "^(a)\\1$"])
def test_a_pattern_llguidance_cannot_compile_is_left_to_the_validator(qwen: Vocab, pattern: str) -> None:
    assert "pattern" not in engine_ready({"type": "string", "pattern": pattern})
    tools = _one({"type": "string", "pattern": pattern})
    assert accepts(qwen, tools, _arg("anything"), ToolChoice("required"))
    assert not accepts(qwen, tools, _arg('a"b'), ToolChoice("required"))


@pytest.mark.parametrize("schema", [{"type": "string"}, {"type": "string", "maxLength": 20}, {"type": "object"}])
def test_strings_cannot_hold_raw_control_characters(qwen: Vocab, schema: dict[str, Any]) -> None:
    tools = _one(schema)
    x = {"k": "line one\nline two"} if schema["type"] == "object" else "line one\nline two"
    escaped = call("f", {"x": x})
    assert accepts(qwen, tools, escaped, ToolChoice("required"))
    assert not accepts(qwen, tools, escaped.replace("\\n", "\n"), ToolChoice("required"))


def test_an_object_says_nothing_of_other_keys_is_closed_as_under_the_other_engines(qwen: Vocab) -> None:
    tools = _one({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert accepts(qwen, tools, call("f", {"x": {"a": 1}}), ToolChoice("required"))
    assert not accepts(qwen, tools, call("f", {"x": {"a": 1, "b": 2}}), ToolChoice("required"))
    free = _one({"type": "object"})  # no properties: any object, as llama.cpp's converter reads it
    assert accepts(qwen, free, call("f", {"x": {"b": 2}}), ToolChoice("required"))


# -- the mask and the forced tokens ---------------------------------------------------------


def allowed_by_mask(m: Any, n: int) -> set[int]:
    return set(np.flatnonzero(np.isfinite(m.mask(np.zeros(n, dtype=np.float32)))).tolist())


def test_the_mask_holds_each_token_of_a_call_and_only_tokens_allows_takes(qwen: Vocab) -> None:
    m = qwen.matcher(TOOLS, ToolChoice("required"), parallel=False)
    n = len(qwen.pieces)
    for t in qwen.encode(GOOD_CALLS[4].encode()):
        masked = allowed_by_mask(m, n)
        assert t in masked and qwen.eos not in masked
        assert all(m.allows(u) for u in list(masked)[:200])
        m.accept(t)
    assert allowed_by_mask(m, n) == {t for t in qwen.eog}


def test_the_forced_tokens_are_the_call_head_then_the_closing_tags(qwen: Vocab) -> None:
    read = [TOOLS[0]]
    head = call_heads(read, ToolChoice("required"))[0]  # what jump.py inserts
    m = qwen.matcher(read, ToolChoice("required"), parallel=False)
    forced = qwen.text(m.forced())
    # The head without its last space: '": ' then '"' is written as one token, ' "'.
    assert head.startswith(forced) and head[len(forced):] == " "
    assert feed(qwen, m, head + '"notes.txt"') and m.jump() == ([], False)  # ',' or '}': the model's choice
    assert feed(qwen, m, "}")
    tail, ends = m.jump()
    assert qwen.text(tail) == "}\n</tool_call>" and ends  # nothing but the end may follow
    several = qwen.matcher(read, ToolChoice("required"), parallel=True)
    assert feed(qwen, several, head + '"notes.txt"}')
    tail, ends = several.jump()
    # Another call may follow: not the end; llguidance then keeps the closing tag back too
    # (measured, not documented), so only "}\n" is forced.
    assert qwen.text(tail) == "}\n" and not ends


# -- failing closed ---------------------------------------------------------------------------


def test_a_grammar_llguidance_cannot_read_is_a_constraint_error(qwen: Vocab) -> None:
    for bad in ["root ::= missing-rule", 'start: "a" args\nargs: %json {"type": "nonsense"}']:
        with pytest.raises(ConstraintError, match="llguidance"):
            start_matcher(qwen.tok, bad)


def test_a_refused_token_fails_closed(qwen: Vocab) -> None:
    m = FailClosed(qwen.matcher(TOOLS, ToolChoice("required")))
    m.accept(qwen.encode(b"Hello")[0])  # the decoder checks first; a token accepted anyway ends the matcher
    assert m.error is not None and "fail closed" in m.error
    assert not any(m.allows(t) for t in qwen.encode(GOOD_CALLS[0].encode()) + [qwen.eos])
    assert allowed_by_mask(m, len(qwen.pieces)) == set() and m.jump() == ([], False)


def test_an_engine_that_raises_fails_closed_and_forces_nothing(qwen: Vocab) -> None:
    m = FailClosed(qwen.matcher(TOOLS, ToolChoice("required")))

    def broken() -> Any:
        raise RuntimeError("engine state corrupted")

    m._inner.jump = broken  # type: ignore[attr-defined]
    assert m.jump() == ([], False) and "RuntimeError" in (m.error or "")
    assert not m.allows(qwen.encode(CALL_OPEN.encode())[0])


# -- without a model file: a vocabulary of our own ---------------------------------------------

WORDS = [b"<tool_call>", b"\n</tool_call>", b'{"name": "', b"read_file", b'", "arguments": ', b'{"path": ', b"notes", b'"}}']
PIECES = [bytes([i]) for i in range(256)] + WORDS + [b"\xff<|end|>"]
EOS = len(PIECES) - 1
READ = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'


def encode(text: bytes) -> list[int]:
    """Longest match first, as a BPE vocabulary of these pieces would split it."""
    out, i = [], 0
    while i < len(text):
        best = max((t for t, p in enumerate(PIECES[:EOS]) if text.startswith(p, i)), key=lambda t: len(PIECES[t]))
        out.append(best)
        i += len(PIECES[best])
    return out


@pytest.fixture(scope="module")
def small() -> Any:
    return tokenizer(PIECES, EOS, encode)


def small_matcher(tok: Any, choice: str = "required") -> LLGuidanceMatcher:
    c = build_constraint(READ, ToolChoice(choice), engine="llguidance", parallel=False)
    return LLGuidanceMatcher(start_matcher(tok, c.text), {EOS}, len(PIECES))


def run(m: Any, text: str) -> int | None:
    """Feed ``text``; the index of the first token refused, or None when all were allowed."""
    for i, t in enumerate(encode(text.encode())):
        if not m.allows(t):
            return i
        m.accept(t)
    return None


def test_small_vocabulary_a_call_passes_and_the_mask_is_within_allows(small: Any) -> None:
    m = small_matcher(small)
    for t in encode(CALL.encode()):
        allowed = {u for u in range(len(PIECES)) if m.allows(u)}
        # Where the grammar fixes the next bytes, the mask keeps only their canonical token
        # (b"<tool_call>", not b"<"); ``allows`` takes any token the grammar permits.
        assert t in allowed_by_mask(m, len(PIECES)) <= allowed
        assert not m.allows(EOS)  # a call cut short may not end the reply
        m.accept(t)
    assert m.allows(EOS) and allowed_by_mask(m, len(PIECES)) == {EOS} and m.error is None


@pytest.mark.parametrize(
    ("text", "refused_at"),
    [
        ('<tool_call>\n{"name": "write_file"', 3),  # no such tool: refused where the name starts
        ('<tool_call>\n{"name": "read_file", "arguments": {"path": 5}}', 6),  # a number for a string
        ("Hello", 0),  # required: no prose
    ],
)
def test_small_vocabulary_known_bad_output_is_refused_where_it_goes_wrong(small: Any, text: str, refused_at: int) -> None:
    assert run(small_matcher(small), text) == refused_at


def test_small_vocabulary_prose_never_opens_a_call_mid_sentence(small: Any) -> None:
    m = small_matcher(small, "auto")
    assert run(m, "The file says hi.") is None and m.allows(EOS)
    assert run(small_matcher(small, "auto"), "Use <tool_call>") == len(encode(b"Use "))


def test_small_vocabulary_the_forced_tokens_are_the_call_head(small: Any) -> None:
    m = small_matcher(small)
    head = call_heads(READ, ToolChoice("required"))[0]
    assert b"".join(PIECES[t] for t in m.forced()).decode() == head
    run(m, head)
    assert m.forced() == []  # the path is the model's to choose


def test_the_lark_grammar_holds_each_schema_as_written() -> None:
    c = build_constraint(_one({"type": "string", "maxLength": 500, "pattern": '^say "hi"$'}), engine="llguidance")
    args = json.loads(c.text.split("args0: %json ", 1)[1].splitlines()[0])
    assert args["properties"]["x"] == {"type": "string", "maxLength": 500, "pattern": '^say "hi"$'}


def test_a_value_described_but_not_typed_takes_any_json_value(qwen: Vocab) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"description": "The training data."}}, "required": ["x"]}}}]
    for x in ('"rows.csv"', "[1, 2]", '{"k": null}', "3.5"):
        assert accepts(qwen, tools, '<tool_call>\n{"name": "f", "arguments": {"x": ' + x + '}}\n</tool_call>'), x
    assert not accepts(qwen, tools, '<tool_call>\n{"name": "f", "arguments": {"x": rows}}\n</tool_call>')
