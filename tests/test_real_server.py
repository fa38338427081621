"""The agent through a real OpenAI-compatible server on loopback: llama-cpp-python's
own server (its `server` extra) serving the tiny model, started and stopped here."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from localagent import Agent, AgentConfig, StopReason
from localagent.backends.server import Retries, ServerBackend
from localagent.evaluation.llama_server import LlamaServer, llama_cpp_server
from localagent.tools.builtin import workspace_tools
from localagent.loop import Events
from localagent.prompt import load_prompt
from localagent.trace import read_lines
from localagent.tools.workspace import Workspace

pytestmark = pytest.mark.real

N_CTX = 2048
TINY = "smollm2-135m"


class Served(LlamaServer):
    """The running server, and the backend the tests talk to it with."""

    def backend(self, **kw: object) -> ServerBackend:
        return ServerBackend(self.url, n_ctx=N_CTX, timeout=60.0, **kw)  # type: ignore[arg-type]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    """llama-cpp-python's server on the tiny model, on a free port; always stopped."""
    with ExitStack() as stack:
        try:
            s = stack.enter_context(llama_cpp_server(TINY, n_ctx=N_CTX, log=tmp_path / "server.log", start_s=120))
        except RuntimeError as e:
            pytest.fail(str(e))
        yield Served(s.url, s.proc, s.log)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """One file to read: the tiny model finds it when nothing else is there."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("The launch code is PURPLE-42.\n")
    return root


def _agent(backend: ServerBackend, root: Path) -> Agent:
    # read_file alone: offered all six tools, the 135M model writes files instead; and
    # the path narrowed by the grammar from the first step: left free, it reads src/main.py.
    tools = [t for t in workspace_tools(Workspace(root)) if t.name == "read_file"]
    # The 135M model answers from the whole conversation, not from the evidence prompt (with
    # it: "The launch code ... is a new note."): this test is of the server path, not the policy.
    cfg = AgentConfig(system_prompt=load_prompt("system").strip(), max_tokens=96, live_grammar=True, answer_from_evidence=False)
    return Agent(backend, tools, root=root, config=cfg)


def test_a_real_task_through_llama_cpp_pythons_server(server: Served, notes: Path, tmp_path: Path) -> None:
    b = server.backend()
    assert b.probe() and b.server == "llama-cpp-python" and b._dialect() == "llama.cpp"
    pieces: list[str] = []
    t0 = time.monotonic()
    r = _agent(b, notes).run("What is the launch code written in notes.txt?", trace=tmp_path / "t.jsonl",
                             events=Events(on_text=pieces.append))
    took = time.monotonic() - t0
    assert r.stop_reason is StopReason.ANSWERED, r.answer
    assert "PURPLE-42" in r.answer
    calls = [c for rec in r.records for c in rec.calls]
    assert calls and calls[0].name == "read_file" and calls[0].arguments["path"] == "notes.txt"
    assert "".join(pieces)  # streamed as it was generated
    recs = read_lines(tmp_path / "t.jsonl")
    assert recs[0]["type"] == "run_start" and server.url in recs[0]["model"]
    steps = [x for x in recs if x["type"] == "step"]
    assert steps[0]["info"]["constraint"] == "grammar" and steps[0]["info"]["dialect"] == "llama.cpp"
    assert all(x["prompt_tokens"] > 0 and x["completion_tokens"] > 0 for x in steps)
    assert recs[-1]["stop_reason"] == "answered"
    assert b._tokenize_ok  # counted by the server's own tokenizer
    print(f"\nreal run through the server: {r.steps} steps, {took:.1f} s, usage {r.usage.to_dict()}")


def test_server_killed_mid_run(server: Served, notes: Path, tmp_path: Path) -> None:
    """The server dies while streaming step 2: the tries run out, the run stops as a
    backend error, and step 1 (its call and result) and the partial step 2 are on record."""
    step = 0

    def on_step(n: int) -> None:
        nonlocal step
        step = n

    def on_text(piece: str) -> None:
        if step == 2:
            server.kill()

    b = server.backend(retries=Retries(attempts=3, backoff_s=0.1))
    t0 = time.monotonic()
    r = _agent(b, notes).run("What is the launch code written in notes.txt?", trace=tmp_path / "t.jsonl",
                             events=Events(on_text=on_text, on_step_start=on_step))
    assert time.monotonic() - t0 < 120
    assert r.stop_reason is StopReason.BACKEND_ERROR, r.answer
    assert "connection refused" in r.message and "after 3 tries" in r.message
    recs = read_lines(tmp_path / "t.jsonl")
    assert [x["type"] for x in recs] == ["run_start", "step", "step", "run_end"]
    first, second = recs[1], recs[2]
    assert first["calls"][0]["name"] == "read_file" and "PURPLE-42" in first["results"][0]["content"]
    assert second["finish_reason"] == "error" and second["text"]  # what had streamed before the kill
    assert second["info"]["attempts"] == 3
    assert recs[-1]["stop_reason"] == "backend_error" and json.dumps(recs[-1])
    assert any(m.role == "tool" and "PURPLE-42" in m.content for m in r.history)
    assert r.answer.startswith("[stopped: backend_error]") and "<" not in r.answer  # no half call as an answer


class _SlowServerBackend(ServerBackend):
    """Asks the server for a long answer it cannot end early: every end-of-generation
    token is banned (``logit_bias``), so it must write ``max_tokens`` tokens."""

    ban: dict[str, float] = {}

    def request_body(self, messages: Any, tools: Any, options: Any) -> dict[str, Any]:
        body = super().request_body(messages, tools, options)
        body["logit_bias"] = self.ban
        return body


def _end_tokens() -> dict[str, float]:
    import llama_cpp
    from llama_cpp import Llama

    from localagent.provision import resolve_model

    v = Llama(str(resolve_model(TINY, progress=False)), vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(v.model)
    return {str(i): -100.0 for i in range(v.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, i)}


def test_a_slow_answer_past_the_timeout(server: Served, notes: Path, tmp_path: Path) -> None:
    """The real server, made slow: 1,500 tokens it cannot stop before (several seconds
    on any CPU), asked for in one reply (not streamed) with 1 s to answer. Each try times out, and the run stops as a
    backend error in about the time the tries allow, not the time the answer takes."""
    ban = _end_tokens()
    assert ban
    b = _SlowServerBackend(server.url, n_ctx=N_CTX, timeout=1.0, stream=False, retries=Retries(attempts=2, backoff_s=0.1))
    b.ban = ban
    cfg = AgentConfig(constrained=False, max_tokens=1500)
    t0 = time.monotonic()
    r = Agent(b, [], config=cfg).run("Tell me a long story about the sea.", trace=tmp_path / "t.jsonl")
    took = time.monotonic() - t0
    server.kill()  # it would go on writing the 1,500 tokens
    assert r.stop_reason is StopReason.BACKEND_ERROR, r.answer
    assert "no answer within 1 s" in r.message and "after 2 tries" in r.message, r.message
    assert took < 10, took  # 2 tries of 1 s and the waits, plus the first request's setup
    recs = read_lines(tmp_path / "t.jsonl")
    assert [x["type"] for x in recs] == ["run_start", "step", "run_end"]
    assert recs[1]["finish_reason"] == "error" and recs[1]["info"]["attempts"] == 2
    assert recs[-1]["stop_reason"] == "backend_error"


def test_the_same_request_answers_with_room(server: Served) -> None:
    """The control for the test above: with time enough, the same server answers the same
    kind of request (not streamed, so its usage comes in the reply)."""
    from localagent.backends.base import GenerateOptions
    from localagent.messages import Message

    b = _SlowServerBackend(server.url, n_ctx=N_CTX, timeout=60.0, stream=False)
    b.ban = _end_tokens()
    gen = b.generate([Message("user", "Tell me a long story about the sea.")], [], GenerateOptions(max_tokens=24))
    assert gen.finish_reason == "length" and gen.completion_tokens == 24, (gen.finish_reason, gen.error)
    assert gen.info["usage"] == "server" and gen.prompt_tokens > 0


def test_a_port_with_nothing_listening(server: Served, notes: Path, tmp_path: Path) -> None:
    """The real server's own port once it is gone: every try is refused at once, and the
    run stops as a backend error naming the server."""
    b = server.backend(retries=Retries(attempts=3, backoff_s=0.05))
    assert b.probe()
    server.kill()
    t0 = time.monotonic()
    r = _agent(b, notes).run("What is the launch code written in notes.txt?", trace=tmp_path / "t.jsonl")
    assert time.monotonic() - t0 < 5
    assert r.stop_reason is StopReason.BACKEND_ERROR
    assert server.url in r.message and "connection refused" in r.message and "after 3 tries" in r.message
    recs = read_lines(tmp_path / "t.jsonl")
    assert [x["type"] for x in recs] == ["run_start", "step", "run_end"] and recs[-1]["stop_reason"] == "backend_error"


# -- the agent as good through the server as in-process ------------------------------------------


def _first_step(root: Path) -> tuple[list[Any], list[dict[str, Any]], Any]:
    """The messages, tools and options of the first step of a question, as the loop asks it."""
    from localagent.backends.base import GenerateOptions
    from localagent.constraint.grammar import ToolChoice, build_constraint
    from localagent.messages import Message
    from localagent.tools import ToolSet

    schemas = ToolSet(workspace_tools(Workspace(root))).schemas()
    constraint = build_constraint(schemas, ToolChoice("auto"), parallel=False)
    msgs = [Message("system", load_prompt("system").strip()), Message("user", "What is the launch code written in notes.txt?")]
    return msgs, schemas, GenerateOptions(max_tokens=48, constraint=constraint, call_threshold=0.5, parallel=False)


def test_the_first_token_decision_through_the_server_matches_in_process(server: Served, notes: Path) -> None:
    """The same first step, in-process and through the server on the same model: the same
    decision, the call mass within 0.05 (the server's is over its top 20 alternatives)."""
    from localagent.backends import load_llama

    msgs, schemas, options = _first_step(notes)
    through = server.backend().generate(msgs, schemas, options)
    local = load_llama(TINY, n_ctx=N_CTX, progress=False).generate(msgs, schemas, options)
    assert through.decision is not None and "no_decision" not in through.info, through.info
    assert through.decision == local.decision, (through.call_mass, local.call_mass)
    assert abs((through.call_mass or 0) - (local.call_mass or 0)) <= 0.05, (through.call_mass, local.call_mass)
    print(f"\ncall mass in-process {local.call_mass}, through the server {through.call_mass}: {local.decision}")


@pytest.fixture
def default_server(tmp_path: Path) -> Iterator[Served]:
    """llama-cpp-python's server on the default model."""
    from localagent.provision import default_model_id

    with ExitStack() as stack:
        try:
            s = stack.enter_context(llama_cpp_server(default_model_id(), n_ctx=4096, log=tmp_path / "server.log", start_s=180))
        except RuntimeError as e:
            pytest.fail(str(e))
        yield Served(s.url, s.proc, s.log)


def test_the_issues_question_through_the_server_on_the_default_model(default_server: Served, tmp_path: Path) -> None:
    """The question that went wrong through --base-url (a read of the folder, then the answer
    "1"): asked as `run` asks it, the agent reads the file and answers with the code."""
    from localagent.assemble import assemble, default_config, workspace_setup

    root = tmp_path / "ws"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "launch.txt").write_text("The launch code is PURPLE-42.\n")
    b = ServerBackend(default_server.url, n_ctx=4096, timeout=120.0)
    assert b.probe() and b.template_tools  # Qwen's template lists the tools, as in-process
    r = assemble(b, workspace_setup(root, yes=True), default_config()).run(
        "What is the launch code written in the notes folder?", trace=tmp_path / "t.jsonl")
    assert r.stop_reason is StopReason.ANSWERED and "PURPLE-42" in r.answer, r.answer
    steps = [x for x in read_lines(tmp_path / "t.jsonl") if x["type"] == "step"]
    assert any(c["name"] == "read_file" for x in steps for c in x["calls"])
    print(f"\n{r.steps} steps: {[x['info'].get('decision') for x in steps]}; answer {r.answer!r}")
