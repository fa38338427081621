"""Failing closed on a real model, through the real decoder: a constraint engine that
fails while a reply is generated ends the step as a constraint error, and every token
of the reply up to there was one the constraint allowed.

The engine is made to fail where it really runs: llama.cpp's grammar sampler (its
native accept raising) and llguidance's matcher (entering its error state). The
tiny model keeps this cheap; the decoder is the same for every model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localagent import Agent, AgentConfig, StopReason
from localagent.backends.base import GenerateOptions
from localagent.tools.builtin import workspace_tools
from localagent.constraint.grammar import ToolChoice, build_constraint
from localagent.messages import Message
from localagent.stops import EXIT_CODES, Limits
from localagent.trace import read_lines
from localagent.tools.workspace import Workspace

pytestmark = pytest.mark.real

MESSAGES = [Message("user", "Read the file notes.txt.")]
READ = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a text file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}


class _FailingCalls:
    """Calls ``fn`` for the first ``n`` calls, then raises on every one."""

    def __init__(self, fn: Any, n: int, error: type[Exception] = RuntimeError):
        self.fn, self.n, self.calls, self.error = fn, n, 0, error

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        if self.calls > self.n:
            raise self.error("the engine broke mid-reply")
        return self.fn(*args)


def _allowed_prefix(smol: Any, constraint: Any, text: str) -> bool:
    """Whether every token of ``text`` is one the constraint allows, in order."""
    import llama_cpp

    from localagent.constraint.llama_grammar import GrammarMatcher

    m = GrammarMatcher(llama_cpp.llama_model_get_vocab(smol.llm.model), smol.n_vocab, constraint.text)
    try:
        for tok in smol.tokenize(text):
            if not m.allows(tok):
                return False
            m.accept(tok)
        return True
    finally:
        m.close()


def test_a_grammar_engine_failure_mid_reply_is_a_constraint_error(smol: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp

    c = build_constraint([READ], ToolChoice("required"), parallel=False)
    opts = GenerateOptions(max_tokens=48, constraint=c)
    whole = smol.generate(MESSAGES, [READ], opts)  # the same reply with the engine working
    assert whole.finish_reason in ("stop", "length") and whole.text.startswith("<tool_call>")

    failing = _FailingCalls(llama_cpp.llama_sampler_accept, 6)
    monkeypatch.setattr(llama_cpp, "llama_sampler_accept", failing)
    gen = smol.generate(MESSAGES, [READ], opts)
    monkeypatch.undo()
    assert failing.calls > 6  # it did fail, mid-reply
    assert gen.finish_reason == "error" and gen.info.get("constraint_error"), (gen.finish_reason, gen.text)
    assert "fail closed" in (gen.error or "")
    # What came out before the failure is what the working engine produced, all of it allowed.
    assert whole.text.startswith(gen.text) and len(gen.text) < len(whole.text)
    assert _allowed_prefix(smol, c, gen.text)


def test_an_llguidance_failure_mid_reply_is_a_constraint_error(smol: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import localagent.backends.llama as llama_backend
    from localagent.constraint.llguidance_engine import LLGuidanceMatcher

    class Breaking:
        """llguidance's matcher for its first 10 tokens, then in its error state (it never raises)."""

        def __init__(self, real: Any):
            self.real, self.tokens = real, 0

        def consume_token(self, tok: int) -> bool:
            self.tokens += 1
            return self.tokens <= 10 and bool(self.real.consume_token(tok))

        def is_error(self) -> bool:
            return self.tokens > 10 or bool(self.real.is_error())

        def get_error(self) -> str:
            return "engine state corrupted" if self.tokens > 10 else str(self.real.get_error())

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    class Failing(LLGuidanceMatcher):
        def __init__(self, *args: Any):
            super().__init__(*args)
            self._matcher = Breaking(self._matcher)

    monkeypatch.setattr(llama_backend, "LLGuidanceMatcher", Failing)
    c = build_constraint([READ], ToolChoice("required"), engine="llguidance")
    gen = smol.generate(MESSAGES, [READ], GenerateOptions(max_tokens=48, constraint=c))
    assert gen.finish_reason == "error" and gen.info.get("constraint_error"), (gen.finish_reason, gen.text)
    assert "engine state corrupted" in (gen.error or "") and "fail closed" in (gen.error or "")
    assert gen.text.startswith("<tool_call>") and gen.completion_tokens <= 11  # it failed mid-reply, not before


def test_the_run_stops_as_constraint_error_and_runs_nothing(smol: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp

    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("The launch code is PURPLE-42.\n")
    tools = [t for t in workspace_tools(Workspace(root)) if t.name == "read_file"]
    agent = Agent(smol, tools, root=root, config=AgentConfig(max_tokens=48, tool_choice="required"))
    monkeypatch.setattr(llama_cpp, "llama_sampler_accept", _FailingCalls(llama_cpp.llama_sampler_accept, 8))
    r = agent.run("What is the launch code in notes.txt?", trace=tmp_path / "t.jsonl")
    monkeypatch.undo()
    assert r.stop_reason is StopReason.CONSTRAINT_ERROR and EXIT_CODES[r.stop_reason] == 8, r.message
    recs = read_lines(tmp_path / "t.jsonl")
    assert [x["type"] for x in recs] == ["run_start", "step", "run_end"]
    assert recs[1]["calls"] == [] and recs[1]["results"] == [] and recs[1]["finish_reason"] == "error"
    assert recs[-1]["stop_reason"] == "constraint_error"
    assert "PURPLE" not in r.answer  # the file was never read


def test_a_matcher_that_raises_is_a_constraint_error_not_an_exception(smol: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import localagent.backends.llama as llama_backend
    from localagent.constraint.llama_grammar import GrammarMatcher

    class Raising(GrammarMatcher):
        n = 0

        def accept(self, token: int) -> None:
            Raising.n += 1
            if Raising.n > 5:
                raise KeyError("a bug in the matcher")
            super().accept(token)

    monkeypatch.setattr(llama_backend, "GrammarMatcher", Raising)
    c = build_constraint([READ], ToolChoice("required"), parallel=False)
    gen = smol.generate(MESSAGES, [READ], GenerateOptions(max_tokens=48, constraint=c))
    assert gen.finish_reason == "error" and gen.info.get("constraint_error")
    assert "KeyError" in (gen.error or "") and "fail closed" in (gen.error or "")


def test_a_call_cut_by_the_token_limit_is_never_run(smol: Any, tmp_path: Path) -> None:
    """A real reply cut inside its call (a token limit far too small for it): the step's
    result is a structured error for the model, and the tool does not run."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("The launch code is PURPLE-42.\n")
    tools = [t for t in workspace_tools(Workspace(root)) if t.name == "read_file"]
    cfg = AgentConfig(max_tokens=10, tool_choice="required", limits=Limits(max_steps=1))
    r = Agent(smol, tools, root=root, config=cfg).run("What is in notes.txt?", trace=tmp_path / "t.jsonl")
    recs = read_lines(tmp_path / "t.jsonl")
    step = recs[1]
    assert step["finish_reason"] == "length" and step["text"].startswith("<tool_call>") and step["calls"] == []
    assert step["results"][0]["content"].startswith("error (format_error): the reply hit the token limit inside a tool call")
    assert r.stop_reason is StopReason.MAX_STEPS and "PURPLE" not in json.dumps(recs)
