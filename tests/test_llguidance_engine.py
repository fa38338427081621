"""The llguidance engine over a small vocabulary of our own, without a model: the same
known-good and known-bad calls as the other engines, its mask against its one-token check,
its forced tokens, and failing closed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("llguidance")

from localagent.constraint.llama_grammar import FailClosed  # noqa: E402
from localagent.constraint.llguidance_engine import LLGuidanceMatcher, compile_grammar, tokenizer  # noqa: E402
from localagent.errors import ConstraintError  # noqa: E402
from localagent.constraint.grammar import ToolChoice, build_constraint  # noqa: E402

WORDS = [b"<tool_call>", b"\n</tool_call>", b'{"name": "', b"read_file", b'", "arguments": ', b'{"path": ', b"notes", b'"}}']
PIECES = [bytes([i]) for i in range(256)] + WORDS + [b"\xff<|end|>"]
EOS = len(PIECES) - 1
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": {
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
def tok() -> Any:
    return tokenizer(PIECES, EOS, encode)


def matcher(tok: Any, choice: str = "required") -> LLGuidanceMatcher:
    c = build_constraint(TOOLS, ToolChoice(choice), parallel=False)
    return LLGuidanceMatcher(tok, compile_grammar(c.text, tok), {EOS})


def allowed_by_mask(m: Any) -> set[int]:
    return set(np.flatnonzero(np.isfinite(m.mask(np.zeros(len(PIECES), dtype=np.float32)))).tolist())


def run(m: Any, text: str) -> int | None:
    """Feed ``text``; the index of the first token refused, or None when all were allowed."""
    for i, t in enumerate(encode(text.encode())):
        if not m.allows(t):
            return i
        m.accept(t)
    return None


def test_a_valid_call_passes_token_by_token_and_the_mask_is_within_allows(tok: Any) -> None:
    m = matcher(tok)
    for t in encode(CALL.encode()):
        allowed = {u for u in range(len(PIECES)) if m.allows(u)}
        # Where the grammar fixes the next bytes, the mask keeps only their canonical token
        # (b"<tool_call>", not b"<"); ``allows`` takes any token the grammar permits.
        assert t in allowed_by_mask(m) <= allowed
        assert not m.allows(EOS)  # a call cut short may not end the reply
        m.accept(t)
    assert m.allows(EOS) and allowed_by_mask(m) == {EOS} and m.error is None


def test_a_token_the_mask_leaves_out_but_the_grammar_permits_is_accepted(tok: Any) -> None:
    m = matcher(tok)
    assert run(m, "<") is None  # one byte, where the mask offers the whole tag
    assert run(m, 'tool_call>\n{"name": "read_file", "arguments": {"path": "x"}}\n</tool_call>') is None
    assert m.allows(EOS) and m.error is None


@pytest.mark.parametrize(
    ("text", "refused_at"),
    [
        ('<tool_call>\n{"name": "write_file"', 3),  # no such tool: refused where the name starts
        ('<tool_call>\n{"name": "read_file", "arguments": {"path": 5}}', 6),  # a number for a string
        ("Hello", 0),  # required: no prose
    ],
)
def test_known_bad_output_is_refused_where_it_goes_wrong(tok: Any, text: str, refused_at: int) -> None:
    assert run(matcher(tok), text) == refused_at


def test_with_auto_prose_may_answer_but_never_open_a_call_mid_sentence(tok: Any) -> None:
    m = matcher(tok, "auto")
    assert run(m, "The file says hi.") is None and m.allows(EOS)
    assert run(matcher(tok, "auto"), "Use <tool_call>") == len(encode(b"Use "))


def test_the_forced_tokens_are_the_call_head(tok: Any) -> None:
    m = matcher(tok)
    head = build_constraint(TOOLS, ToolChoice("required"), parallel=False).heads[0]
    assert b"".join(PIECES[t] for t in m.forced()).decode() == head
    run(m, head)
    assert m.forced() == []  # the path is the model's to choose


def test_a_refused_token_fails_closed(tok: Any) -> None:
    m = FailClosed(matcher(tok))
    m.accept(encode(b"H")[0])  # the decoder checks first; a token accepted anyway ends the matcher
    assert m.error is not None and "fail closed" in m.error
    assert not any(m.allows(t) for t in range(len(PIECES))) and allowed_by_mask(m) == set()
    assert m._inner.forced() == []


def test_a_grammar_llguidance_cannot_use_is_a_constraint_error(tok: Any) -> None:
    with pytest.raises(ConstraintError, match="llguidance"):
        compile_grammar("root ::= missing-rule", tok)
