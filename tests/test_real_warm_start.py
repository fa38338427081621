"""The warm start: the prefix state on disk is loaded, and a bad entry is rebuilt, never used."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from llama_cpp import llama_cpp as lib

from localagent.backends.base import GenerateOptions
from localagent.backends.llama import LlamaBackend
from localagent.backends.prefix_cache import PrefixCache
from localagent.messages import Message
from localagent.provision import resolve_model

pytestmark = pytest.mark.real

MSGS = [Message("system", "You are a terse assistant. " * 20), Message("user", "Name one colour.")]


def _backend(cache: Path) -> LlamaBackend:
    return LlamaBackend(resolve_model("smollm2-135m", progress=False), n_ctx=2048, prefix_cache=PrefixCache(cache))


def test_prefix_state_is_saved_then_loaded(tmp_path: Path) -> None:
    cold = _backend(tmp_path).generate(MSGS, [], GenerateOptions(max_tokens=6))
    assert cold.info["warm_start"] == "saved"
    assert list(tmp_path.glob("*.state")) and list(tmp_path.glob("*.sha256"))
    warm = _backend(tmp_path).generate(MSGS, [], GenerateOptions(max_tokens=6))
    assert warm.info["warm_start"] == "loaded"
    assert warm.prompt_tokens_evaluated < cold.prompt_tokens_evaluated / 4
    assert warm.text == cold.text  # the loaded state is the evaluated one


@pytest.mark.parametrize("damage", ["flip", "truncate", "digest"])
def test_a_corrupt_entry_is_rebuilt_not_used(tmp_path: Path, damage: str) -> None:
    cold = _backend(tmp_path).generate(MSGS, [], GenerateOptions(max_tokens=6))
    state = next(tmp_path.glob("*.state"))
    data = state.read_bytes()
    if damage == "flip":
        state.write_bytes(data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:])
    elif damage == "truncate":
        state.write_bytes(data[: len(data) // 2])
    else:
        next(tmp_path.glob("*.sha256")).write_text("0" * 64 + "\n")
    again = _backend(tmp_path).generate(MSGS, [], GenerateOptions(max_tokens=6))
    assert again.info["warm_start"] == "saved", "the damaged entry must be rebuilt"
    assert again.text == cold.text
    assert _backend(tmp_path).generate(MSGS, [], GenerateOptions(max_tokens=6)).info["warm_start"] == "loaded"


def test_the_prefix_of_the_default_agent_is_lean(qwen: LlamaBackend, tmp_path: Path) -> None:
    """Instructions and the six built-in tools within 800 tokens on the default model (issue 18);
    calculate, the seventh, within 60 more."""
    from localagent.assemble import default_config, workspace_setup

    tools = [t.openai_schema() for t in workspace_setup(tmp_path).tools]
    six = [s for s in tools if s["function"]["name"] != "calculate"]
    system = [Message("system", default_config().system_prompt or "")]
    size = lambda schemas: len(qwen.tokenize(qwen.render(system, schemas, add_generation_prompt=False)))  # noqa: E731
    assert len(six) == 6 and size(six) <= 800
    assert size(tools) - size(six) <= 60


def test_the_vocabulary_mask_is_kept_and_read_back_the_same(qwen: LlamaBackend, tmp_path: Path) -> None:
    # token_bytes gives each token's whole piece, as llama.cpp's own detokenizer does for a
    # one-token text (Llama.detokenize gives b"" for pieces over 32 bytes).
    buf = ctypes.create_string_buffer(512)
    for i in range(qwen.n_vocab):
        n = lib.llama_detokenize(qwen._vocab, (lib.llama_token * 1)(i), 1, buf, 512, False, True)
        assert qwen.token_bytes(i) == buf.raw[:n], i
    first = _backend(tmp_path)
    worked = first.decoder.structured_mask().copy()
    assert list(tmp_path.glob("*.mask")) and worked.sum() > 100
    again = _backend(tmp_path)
    again.token_bytes = None  # type: ignore[method-assign,assignment]  # read from disk, no token read
    assert (again.decoder.structured_mask() == worked).all()
