"""Failing closed, without a model: a constraint that cannot be built, or an engine
that fails while a reply is generated, ends the step with a constraint error, and
nothing the constraint did not allow is ever run.

The matchers are checked with a tokenizer only (the tiny model loaded ``vocab_only``),
the loop with the scripted fake. The same failures on a real model, through the
real decoder: tests/test_real_fail_closed.py.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from localagent.backends.base import Generation
from localagent.backends.fake import FakeBackend, call_text
from localagent.constraint.llama_grammar import GrammarMatcher
from localagent.constraint import FailClosed
from localagent.constraint.grammar import ToolChoice, build_constraint
from localagent.stops import EXIT_CODES, Limits, StopReason
from localagent.tools import tool
from runs import Trace, fake_run

ran: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    ran.append(f"add({a},{b})")
    return a + b


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    ran.append(f"lookup({key})")
    return f"value of {key}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


# -- the matchers: an engine error is recorded, and nothing is allowed after it ----------

TOOLS = [add.openai_schema(), lookup.openai_schema()]
CALL = call_text("add", a=1, b=2)


@pytest.fixture(scope="module")
def vocab() -> Any:
    from llama_cpp import Llama

    from localagent.provision import resolve_model

    return Llama(str(resolve_model("smollm2-135m", progress=False)), vocab_only=True, verbose=False)


def _gbnf(vocab: Any) -> GrammarMatcher:
    import llama_cpp

    c = build_constraint(TOOLS, ToolChoice("required"))
    return GrammarMatcher(llama_cpp.llama_model_get_vocab(vocab.model), vocab.n_vocab(), c.text)


def _tokens(vocab: Any, text: str) -> list[int]:
    return list(vocab.tokenize(text.encode(), add_bos=False, special=True))


def _is_dead(m: Any, vocab: Any) -> None:
    """Nothing allowed any more, by either check, and the reason on record."""
    assert m.error and "fail closed" in m.error
    assert not any(m.allows(t) for t in range(0, vocab.n_vocab(), 97))
    assert not m.allows(vocab.token_eos())
    assert np.isneginf(m.mask(np.zeros(vocab.n_vocab(), dtype=np.float32))).all()


def test_accepting_a_token_the_grammar_rejects_does_not_abort_the_process(vocab: Any, tmp_path: Path) -> None:
    # llama.cpp answers it with a C++ exception, which ends the process (std::terminate)
    # with no trace and no stop reason; the matcher refuses the token itself. Run in a
    # child process so that a regression shows as a failure, not as a dead test run.
    script = """
import llama_cpp, sys
from llama_cpp import Llama
from localagent.constraint.llama_grammar import GrammarMatcher
from localagent.constraint.grammar import ToolChoice, build_constraint
from localagent.provision import resolve_model
v = Llama(str(resolve_model("smollm2-135m", progress=False)), vocab_only=True, verbose=False)
schema = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
m = GrammarMatcher(llama_cpp.llama_model_get_vocab(v.model), v.n_vocab(), build_constraint([schema], ToolChoice("required")).text)
tok = v.tokenize(b"hello", add_bos=False)[0]
assert not m.allows(tok)
m.accept(tok)
print("alive;", m.error)
"""
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "alive;" in p.stdout and "does not allow it" in p.stdout and "fail closed" in p.stdout


@pytest.mark.parametrize("native", ["llama_sampler_apply", "llama_sampler_accept"])
def test_a_gbnf_engine_error_mid_reply_leaves_nothing_allowed(vocab: Any, native: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp

    m = _gbnf(vocab)
    toks = _tokens(vocab, CALL)
    for t in toks[:3]:  # a few tokens through the working engine
        assert m.allows(t)
        m.accept(t)
    assert m.error is None

    def broken(*args: Any) -> None:
        raise RuntimeError("engine state corrupted")

    monkeypatch.setattr(llama_cpp, native, broken)
    if native == "llama_sampler_apply":
        assert not m.allows(toks[3])
    else:
        m.accept(toks[3])  # no exception into the decoder
    monkeypatch.undo()  # the engine works again; the matcher stays failed
    assert "RuntimeError: engine state corrupted" in (m.error or "")
    _is_dead(m, vocab)
    m.close()


class _Raising:
    """A matcher whose every operation raises from its ``n``-th call on."""

    def __init__(self, inner: Any, n: int):
        self.inner, self.n, self.calls = inner, n, 0

    @property
    def error(self) -> str | None:
        return self.inner.error

    def jump(self) -> None:
        self._tick()

    def _tick(self) -> None:
        self.calls += 1
        if self.calls >= self.n:
            raise KeyError("bug in a constraint engine")

    def allows(self, token: int) -> bool:
        self._tick()
        return bool(self.inner.allows(token))

    def accept(self, token: int) -> None:
        self._tick()
        self.inner.accept(token)

    def mask(self, logits: np.ndarray) -> np.ndarray:
        self._tick()
        return np.asarray(self.inner.mask(logits))

    def close(self) -> None:
        raise RuntimeError("close fails too")


@pytest.mark.parametrize("n", [1, 2, 5])
def test_fail_closed_turns_any_matcher_exception_into_the_failed_state(vocab: Any, n: int) -> None:
    m = FailClosed(_Raising(_gbnf(vocab), n))
    toks = _tokens(vocab, CALL)
    for t in toks[:3]:
        if m.allows(t):
            m.accept(t)
    assert "KeyError" in (m.error or "") and "bug in a constraint engine" in (m.error or "")
    _is_dead(m, vocab)
    m.close()  # does not raise


def test_fail_closed_passes_a_working_matcher_through(vocab: Any) -> None:
    plain, wrapped = _gbnf(vocab), FailClosed(_gbnf(vocab))
    for t in _tokens(vocab, CALL):
        assert plain.allows(t) and wrapped.allows(t)
        plain.accept(t)
        wrapped.accept(t)
    logits = np.random.default_rng(0).normal(size=vocab.n_vocab()).astype(np.float32)
    assert np.array_equal(plain.mask(logits), wrapped.mask(logits))
    assert wrapped.allows(vocab.token_eos()) and wrapped.error is None


def test_fail_closed_says_none_for_an_engine_that_cannot_tell_its_forced_tokens(vocab: Any) -> None:
    # llama.cpp's grammar knows no forced tokens: None, failed or not, and the decoder reads
    # them off the text (a forcing engine gives ([], False) once failed: test_llguidance_engine).
    m = FailClosed(_gbnf(vocab))
    assert m.jump() is None
    m.accept(_tokens(vocab, "hello")[0])  # refused by the grammar: the matcher fails
    _is_dead(m, vocab)
    assert m.jump() is None


# -- the loop: a constraint error is a clean stop, and nothing unconstrained runs ------------


def run(tmp_path: Path, replies: list[Any], tools: list[Any] | None = None, **config: Any) -> tuple[Any, Trace, FakeBackend]:
    return fake_run(tmp_path, replies, tools or [add, lookup], **config)


def _ends_cleanly(result: Any, trace: Trace) -> None:
    # The start, the end and its stop reason in the trace: assert_run_invariants (in fake_run).
    assert result.stop_reason is StopReason.CONSTRAINT_ERROR and EXIT_CODES[result.stop_reason] == 8
    assert ran == []


def test_a_named_tool_that_does_not_exist_stops_before_the_model_runs(tmp_path: Path) -> None:
    result, trace, fake = run(tmp_path, [CALL, "ok"], tool_choice="nope")
    _ends_cleanly(result, trace)
    assert "'nope'" in result.message and "add, lookup" in result.message
    assert fake.requests == []


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize(
    "engine",
    ["gbnf", pytest.param("llguidance", marks=pytest.mark.skipif(not _has("llguidance"), reason="llguidance is an extra"))],
)
def test_a_schema_no_grammar_can_be_built_for_stops_the_step(tmp_path: Path, engine: str) -> None:
    broken = dataclasses.replace(lookup, parameters={"type": "object", "properties": {"key": {"type": "frobnicate"}}})
    result, trace, fake = run(tmp_path, [call_text("lookup", key="k"), "ok"], tools=[add, broken], engine=engine)
    _ends_cleanly(result, trace)
    assert "cannot build" in result.message and fake.requests == []


def test_the_llguidance_engine_without_its_package_stops_with_the_install_line(tmp_path: Path, monkeypatch: Any) -> None:
    from localagent.constraint import llguidance_engine

    monkeypatch.setitem(sys.modules, "llguidance", None)  # import llguidance now raises ImportError
    monkeypatch.setitem(sys.modules, "llguidance.gbnf_to_lark", None)
    llguidance_engine._prose_lark.cache_clear()
    llguidance_engine._lark_cached.cache_clear()
    try:
        result, trace, fake = run(tmp_path, [CALL, "ok"], engine="llguidance")
    finally:
        llguidance_engine._prose_lark.cache_clear()
        llguidance_engine._lark_cached.cache_clear()
    _ends_cleanly(result, trace)
    assert "pip install 'localagent[llguidance]'" in result.message and fake.requests == []


def test_a_backend_that_reports_a_constraint_failure_runs_nothing(tmp_path: Path) -> None:
    # The reply holds a complete, valid call; the backend says the constraint failed while
    # it was generated, so it cannot be trusted: not parsed, not run.
    failed = Generation(CALL, "error", error="the constraint engine failed: ... (fail closed)", constraint_error=True)
    result, trace, fake = run(tmp_path, [failed, "never asked"])
    _ends_cleanly(result, trace)
    steps = [r for r in trace if r["type"] == "step"]
    assert len(steps) == 1 and steps[0]["calls"] == [] and steps[0]["error"].startswith("the constraint engine failed")
    assert len(fake.requests) == 1 and "<tool_call>" not in result.answer


# -- tool_choice reaches the grammar, not the prompt ----------------------------------------


@pytest.mark.parametrize("choice", ["auto", "required", "none", "lookup"])
def test_tool_choice_is_the_grammar_the_backend_gets(tmp_path: Path, choice: str) -> None:
    reply = "fine" if choice == "none" else call_text("lookup", key="k")
    result, _, fake = run(tmp_path, [reply, "done"], tool_choice=choice, live_grammar=False, limits=Limits(max_steps=2))
    expected = build_constraint([add.openai_schema(), lookup.openai_schema()], ToolChoice.parse(choice), parallel=True)  # the fake decides after each call, as llama does
    assert fake.options[0].grammar == expected.text
    assert fake.options[0].tool_choice == choice
    # A choice is made by the grammar alone: the prompt is the same whatever it is.
    plain, _, plain_fake = run(tmp_path, [reply, "done"], live_grammar=False, limits=Limits(max_steps=2))
    assert [m.content for m in fake.requests[0]] == [m.content for m in plain_fake.requests[0]]
    assert json.dumps(fake.options[0].call_heads) == json.dumps(expected.heads)


def test_the_grammars_for_each_choice_differ(tmp_path: Path) -> None:
    texts = {}
    for choice in ("auto", "required", "none", "lookup"):
        _, _, fake = run(tmp_path, ["fine"], tool_choice=choice, live_grammar=False, limits=Limits(max_steps=1))
        texts[choice] = fake.options[0].grammar
    assert len(set(texts.values())) == 4
    assert texts["none"] is not None and "call0" not in texts["none"]
    assert '\\"lookup\\"' in texts["lookup"] and '\\"add\\"' not in texts["lookup"]


# -- a call cut short ----------------------------------------------------------------------


def test_a_call_cut_by_the_context_end_never_runs(tmp_path: Path) -> None:
    # The reply ran into the end of the context window inside a call: there is no room to
    # answer the model, so the run stops as context_full, and the half call is not run.
    cut = Generation('<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2', "context", error="the context window filled up during the reply")
    result, trace, _ = run(tmp_path, [cut, "never asked"])
    assert result.stop_reason is StopReason.CONTEXT_FULL and ran == []
    steps = [r for r in trace if r["type"] == "step"]
    assert len(steps) == 1 and steps[0]["calls"] == [] and trace[-1]["stop_reason"] == "context_full"


def test_a_call_cut_by_the_token_limit_goes_back_as_a_structured_error(tmp_path: Path) -> None:
    cut = Generation('<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2', "length")
    result, trace, fake = run(tmp_path, [cut, "3"])
    assert result.stop_reason is StopReason.ANSWERED and ran == []
    tool = [m for m in result.history if m.role == "tool"][0]
    assert tool.content.startswith("error (format_error): the reply hit the token limit inside a tool call")
    assert len(fake.requests) == 2 and fake.requests[1][-1].content == tool.content  # the model was told
