"""Smoke tests on both real models: load, tokenize, generate, count tokens."""

from __future__ import annotations

import pytest

from localagent.backends.base import GenerateOptions
from localagent.messages import Message

pytestmark = pytest.mark.real


@pytest.mark.parametrize("fixture", ["qwen", "smol"])
def test_load_tokenize_generate_count(fixture: str, request: pytest.FixtureRequest) -> None:
    b = request.getfixturevalue(fixture)
    assert b.context_size == 4096
    ids = b.tokenize("Hello, world!", special=False)
    assert ids and all(isinstance(i, int) for i in ids)
    assert b.count_tokens("Hello, world!") == len(ids)
    assert b.count_tokens("one two three four five six") > b.count_tokens("one")
    msgs = [Message("user", "Say the word yes.")]
    gen = b.generate(msgs, [], GenerateOptions(max_tokens=8))
    assert gen.finish_reason in ("stop", "length")
    assert gen.completion_tokens > 0 and gen.text.strip()
    assert gen.prompt_tokens == b.prompt_tokens(msgs, [])
    # The second identical request reuses the KV cache of the prompt.
    again = b.generate(msgs, [], GenerateOptions(max_tokens=8))
    assert again.prompt_tokens_evaluated < again.prompt_tokens
    assert again.text == gen.text  # greedy decoding is deterministic


def test_templates_are_detected(qwen, smol) -> None:  # type: ignore[no-untyped-def]
    assert qwen.native_tools, "Qwen's template lists tools itself"
    assert not smol.native_tools, "SmolLM2's template has no tool support"
