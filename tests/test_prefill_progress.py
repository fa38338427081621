"""The progress bar of a long prompt evaluation: shown on a terminal only, in Llama.eval's own
chunks, with the KV cache and the logits exactly as without it."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from localagent.backends import llama as llama_module
from localagent.backends.llama import PREFILL_BAR_TOKENS, LlamaBackend


class Screen(io.StringIO):
    """A stderr that says it is a terminal (or not)."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class RecordingLlama:
    """What prefill needs of ``Llama``: the evaluated tokens, and each eval() call's size."""

    def __init__(self, n_batch: int = 100) -> None:
        self.n_batch = n_batch
        self.input_ids = np.zeros(4096, dtype=np.intc)
        self.n_tokens = 0
        self.calls: list[int] = []

    def eval(self, tokens: list[int]) -> None:
        self.calls.append(len(tokens))
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)


def backend(progress: bool) -> Any:
    b: Any = LlamaBackend.__new__(LlamaBackend)  # no model: only prefill and its bar are used
    b.llm = RecordingLlama()
    b.progress = progress
    return b


@pytest.mark.parametrize(("tty", "progress", "shown"), [(True, True, True), (False, True, False), (True, False, False)])
def test_a_long_prefill_shows_a_bar_on_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch, tty: bool, progress: bool, shown: bool
) -> None:
    screen = Screen(tty)
    monkeypatch.setattr(llama_module.sys, "stderr", screen)
    b = backend(progress)
    prompt = list(range(1, 451))
    assert b.prefill(prompt) == 450
    assert b.llm.input_ids[:450].tolist() == prompt
    if shown:
        assert b.llm.calls == [100, 100, 100, 100, 50]  # Llama.eval's own n_batch chunks
        assert "prompt" in screen.getvalue() and "450/450 tokens" in screen.getvalue()
    else:
        assert b.llm.calls == [450] and screen.getvalue() == ""


def test_only_the_tokens_after_the_common_prefix_are_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Screen(True)
    monkeypatch.setattr(llama_module.sys, "stderr", screen)
    b = backend(True)
    first = list(range(1, 301))
    b.prefill(first)
    b.llm.calls.clear()
    screen.seek(0)
    screen.truncate()
    # The next step: the same 300 tokens, then 20 new ones. Only the 20 are evaluated, no bar.
    assert b.prefill(first + list(range(1000, 1020))) == 20
    assert b.llm.calls == [20] and screen.getvalue() == ""
    # A prompt that differs at token 50 keeps the first 50 and evaluates the rest, with a bar.
    changed = first[:50] + list(range(2000, 2400))
    assert b.prefill(changed) == 400
    assert b.llm.calls[1:] == [100, 100, 100, 100] and "400/400 tokens" in screen.getvalue()
    assert b.llm.input_ids[: b.llm.n_tokens].tolist() == changed


def test_a_short_prefill_shows_no_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Screen(True)
    monkeypatch.setattr(llama_module.sys, "stderr", screen)
    b = backend(True)
    b.prefill(list(range(1, PREFILL_BAR_TOKENS)))
    assert b.llm.calls == [PREFILL_BAR_TOKENS - 1] and screen.getvalue() == ""


@pytest.mark.real
def test_real_model_logits_are_the_same_with_the_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    from localagent.provision import resolve_model

    path = resolve_model("qwen2.5-coder-0.5b", progress=False)
    b = LlamaBackend(path, n_ctx=2048, n_batch=128, warm_start=False, progress=True)
    prompt = b.tokenize("The quick brown fox jumps over the lazy dog. " * 60)[:600]

    def logits_after(tty: bool) -> tuple[np.ndarray, str]:
        screen = Screen(tty)
        monkeypatch.setattr(llama_module.sys, "stderr", screen)
        b.llm.n_tokens = 0  # an empty cache: everything is evaluated
        assert b.prefill(prompt) == len(prompt)
        return b.logits().copy(), screen.getvalue()

    plain, nothing = logits_after(False)
    barred, bar = logits_after(True)
    assert nothing == "" and f"{len(prompt)}/{len(prompt)} tokens" in bar
    assert np.array_equal(plain, barred)
    # Reuse is unchanged: the same prompt again evaluates one token (for fresh logits).
    assert b.prefill(prompt) == 1
