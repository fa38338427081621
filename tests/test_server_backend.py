"""The server backend against a stub OpenAI-compatible server in this process:
requests per dialect, streaming and usage, retries, and every way a server fails."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import pytest

from localagent import Agent, AgentConfig, StopReason
from localagent.backends.base import GenerateOptions
from localagent.constraint.grammar import Constraint
from localagent.backends.server import Retries, ServerBackend, openai_messages, text_messages
from localagent.tools.builtin import workspace_tools
from localagent.errors import ConfigError
from localagent.formats import render_call, shown_schemas
from localagent.messages import Message, ToolCall
from localagent.trace import read_lines
from localagent.tools.workspace import Workspace

Reply = Callable[[BaseHTTPRequestHandler], None]
FAST = Retries(attempts=3, backoff_s=0.01, max_wait_s=1.0)


class Stub:
    """A chat-completion server whose answers come from a queue; records every request."""

    def __init__(self, protocol: str = "HTTP/1.0") -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        # First-token requests (logprobs) are answered from their own queue, else without
        # log-probabilities: the backend then leaves call or prose to the grammar.
        self.firsts: deque[Reply] = deque()
        self.probes: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.ports: list[int] = []  # the client's port of every request: one port, one connection
        self.owner = "llamacpp"
        self.model_card: dict[str, Any] = {}
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = protocol  # HTTP/1.1 keeps the connection open after a reply with a length

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                stub.ports.append(self.client_address[1])
                if self.path == "/v1/models":
                    card = {"id": "stub-model", "object": "model", "owned_by": stub.owner, **stub.model_card}
                    _send(self, 200, {"object": "list", "data": [card]})
                else:
                    _send(self, 404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                stub.ports.append(self.client_address[1])
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path in ("/tokenize", "/extras/tokenize"):
                    text = body.get("content") or body.get("input") or ""
                    _send(self, 200, {"tokens": list(range(len(text.split())))})
                    return
                if body.get("logprobs"):
                    stub.probes.append(body)
                    (stub.firsts.popleft() if stub.firsts else sse("x"))(self)
                    return
                stub.requests.append({"path": self.path, **body})
                stub.headers.append(dict(self.headers))
                reply = stub.replies.popleft() if stub.replies else sse("(no more replies)")
                reply(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def backend(self, **kw: Any) -> ServerBackend:
        kw.setdefault("retries", FAST)
        kw.setdefault("timeout", 5.0)
        return ServerBackend(self.url, **kw)


def _send(h: BaseHTTPRequestHandler, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    h.send_response(code)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def chunk(content: str | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    delta = {"content": content} if content is not None else {}
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def sse(*pieces: str | dict[str, Any], done: bool = True, finish: str = "stop", cut: bool = False) -> Reply:
    """A streamed answer: each piece a content delta (or a raw event), then the finish
    event and [DONE]; ``cut`` closes the connection after the pieces instead."""

    def reply(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()  # no length: the body ends when the connection closes
        h.wfile.write(b": ping\n\n")
        for p in pieces:
            event = p if isinstance(p, dict) else chunk(p)
            h.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
            h.wfile.flush()
        if cut:
            return
        h.wfile.write(b"data: " + json.dumps(chunk(finish=finish)).encode() + b"\n\n")
        if done:
            h.wfile.write(b"data: [DONE]\n\n")

    return reply


def status(code: int, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    return lambda h: _send(h, code, body if body is not None else {"error": {"message": f"status {code}"}}, headers)


def raw(data: bytes) -> Reply:
    def reply(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()
        h.wfile.write(data)

    return reply


def slow(seconds: float, then: Reply) -> Reply:
    def reply(h: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        try:
            then(h)
        except OSError:
            pass  # the client has gone

    return reply


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stub is on this machine: a proxy set in the environment must not be used for it."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.lower(), raising=False)


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.server.shutdown()
    s.server.server_close()


@pytest.fixture
def stub11() -> Iterator[Stub]:
    s = Stub("HTTP/1.1")
    yield s
    s.server.shutdown()
    s.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
MSGS = [Message("system", "Be brief."), Message("user", "What does notes.txt say?")]


def gbnf(text: str) -> Constraint:
    return Constraint("gbnf", text)


def _agent(backend: ServerBackend, root: Path, config: AgentConfig | None = None) -> Agent:
    return Agent(backend, workspace_tools(Workspace(root)), root=root, config=config or AgentConfig())


# -- requests and replies ---------------------------------------------------------------


def test_streams_the_text_and_reads_the_servers_usage(stub: Stub) -> None:
    stub.enqueue(sse("Hel", "lo", chunk(usage={"prompt_tokens": 50, "completion_tokens": 2}, timings={"prompt_n": 10}) | {"choices": []}))
    pieces: list[str] = []
    gen = stub.backend().generate(MSGS, [], GenerateOptions(on_text=pieces.append))
    assert (gen.text, gen.finish_reason, pieces) == ("Hello", "stop", ["Hel", "lo"])
    assert (gen.prompt_tokens, gen.prompt_tokens_evaluated, gen.completion_tokens) == (50, 10, 2)
    assert gen.info["usage"] == "server" and gen.first_token_seconds is not None
    req = stub.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["stream"] and req["stream_options"] == {"include_usage": True}
    assert req["model"] == "stub-model"  # asked from /v1/models


def test_cached_tokens_count_as_not_evaluated(stub: Stub) -> None:
    usage = {"prompt_tokens": 40, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 30}}
    stub.enqueue(sse("ok", chunk(usage=usage) | {"choices": []}))
    gen = stub.backend().generate(MSGS, [], GenerateOptions())
    assert (gen.prompt_tokens, gen.prompt_tokens_evaluated) == (40, 10)


def test_without_usage_the_tokens_are_counted_by_the_servers_tokenizer(stub: Stub) -> None:
    stub.enqueue(sse("one two ", "three"))
    b = stub.backend()
    gen = b.generate(MSGS, [], GenerateOptions())
    assert gen.completion_tokens == 3  # the stub's /tokenize counts words
    assert gen.prompt_tokens == b.prompt_tokens(MSGS, []) > 0
    assert gen.prompt_tokens_evaluated == gen.prompt_tokens  # no word about a cache: all of it
    assert gen.info["usage"] == "estimated"


def test_llama_cpp_dialect_sends_the_grammar_and_our_tool_prompt(stub: Stub) -> None:
    stub.enqueue(sse("x"))
    history = MSGS + [
        Message("assistant", "", [ToolCall("call_1_0", "read_file", {"path": "notes.txt"})], raw=render_call("read_file", {"path": "notes.txt"})),
        Message("tool", "PURPLE-42", tool_call_id="call_1_0", name="read_file"),
    ]
    stub.backend().generate(history, TOOLS, GenerateOptions(constraint=gbnf('root ::= "x"'), max_tokens=7, seed=3))
    req = stub.requests[0]
    assert req["grammar"] == 'root ::= "x"' and req["max_tokens"] == 7 and req["seed"] == 3
    assert "tools" not in req  # the tools are in our own prompt, so any template will do
    msgs = req["messages"]
    assert msgs[0]["role"] == "system" and "read_file" in msgs[0]["content"] and msgs[0]["content"].startswith("Be brief.")
    assert msgs[2] == {"role": "assistant", "content": render_call("read_file", {"path": "notes.txt"})}
    assert msgs[3] == {"role": "user", "content": "<tool_response>\nPURPLE-42\n</tool_response>"}


@pytest.mark.parametrize(
    ("dialect", "sent"),
    [
        ("llama.cpp", {"top_k": 5, "top_p": 0.8, "min_p": 0.1, "repeat_penalty": 1.2}),
        ("vllm", {"top_k": 5, "top_p": 0.8, "min_p": 0.1, "repetition_penalty": 1.2}),
        ("openai", {"top_p": 0.8}),
    ],
)
def test_the_sampler_chain_is_sent_as_each_dialect_names_it(stub: Stub, dialect: str, sent: dict[str, Any]) -> None:
    stub.enqueue(sse("x"))
    opts = GenerateOptions(temperature=0.7, top_k=5, top_p=0.8, min_p=0.1, repeat_penalty=1.2)
    stub.backend(dialect=dialect).generate(MSGS, TOOLS, opts)
    req = stub.requests[0]
    names = ("top_k", "top_p", "min_p", "repeat_penalty", "repetition_penalty")
    assert {k: req[k] for k in names if k in req} == sent and req["temperature"] == 0.7


@pytest.mark.parametrize(
    ("dialect", "key", "value"),
    [
        ("vllm", "structured_outputs", {"grammar": 'root ::= "x"'}),
        ("vllm-legacy", "guided_grammar", 'root ::= "x"'),
    ],
)
def test_vllm_dialects_carry_the_grammar(stub: Stub, dialect: str, key: str, value: Any) -> None:
    stub.enqueue(sse("x"))
    stub.backend(dialect=dialect).generate(MSGS, TOOLS, GenerateOptions(constraint=gbnf('root ::= "x"')))
    assert stub.requests[0][key] == value and "grammar" not in stub.requests[0]


@pytest.mark.parametrize("dialect", ["llama.cpp", "vllm", "vllm-legacy"])  # openai: the server's own tools
def test_no_grammar_dialect_takes_an_llguidance_grammar(stub: Stub, dialect: str) -> None:
    gen = stub.backend(dialect=dialect).generate(MSGS, TOOLS, GenerateOptions(constraint=Constraint("llguidance", 'start: "x"')))
    assert gen.finish_reason == "error" and gen.info["constraint_error"] and "llguidance" in (gen.error or "")
    assert stub.requests == []  # failed closed, nothing sent


def test_openai_dialect_sends_tools_and_tool_choice(stub: Stub) -> None:
    stub.enqueue(sse("x"), sse("y"))
    b = stub.backend(dialect="openai")
    b.generate(MSGS, TOOLS, GenerateOptions(constraint=gbnf('root ::= "x"'), tool_choice="required", parallel=False))
    b.generate(MSGS, TOOLS, GenerateOptions(tool_choice="read_file"))
    first, second = stub.requests
    assert first["tools"] == TOOLS and first["tool_choice"] == "required" and first["parallel_tool_calls"] is False
    assert "grammar" not in first
    assert second["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert b.native_tools


def test_openai_messages_pair_calls_with_results() -> None:
    history = MSGS + [
        Message("assistant", "", [ToolCall("call_1_0", "read_file", {"path": "a"})], raw="<tool_call>..."),
        Message("tool", "A", tool_call_id="call_1_0", name="read_file"),
        Message("tool", "error (format_error): ...", tool_call_id="call_1_format0", name="(format)"),
    ]
    out = openai_messages(history)
    assert out[2]["tool_calls"][0] == {"id": "call_1_0", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    assert out[3] == {"role": "tool", "tool_call_id": "call_1_0", "content": "A"}
    assert out[4]["role"] == "user"  # answers no call the server saw
    assert text_messages(MSGS, [])[0] == {"role": "system", "content": "Be brief."}


@pytest.mark.parametrize(("owner", "dialect", "tokenize"), [("vllm", "vllm", "/tokenize"), ("me", "llama.cpp", "/extras/tokenize"), ("someone", "openai", None)])
def test_auto_dialect_from_the_models_owner(stub: Stub, owner: str, dialect: str, tokenize: str | None) -> None:
    stub.owner = owner
    stub.model_card = {"max_model_len": 4096}
    b = stub.backend(n_ctx=8192)
    assert b.probe() and b._dialect() == dialect and b.model == "stub-model" and b.context_size == 4096
    assert b.count_tokens("a b c") == (3 if tokenize else 2)  # the estimate: four characters a token


def test_model_name_and_api_key_are_sent(stub: Stub) -> None:
    stub.enqueue(sse("x"))
    stub.backend(model="served-name", api_key="sekrit").generate(MSGS, [], GenerateOptions())
    assert stub.requests[0]["model"] == "served-name"
    assert stub.headers[0]["Authorization"] == "Bearer sekrit"


def test_base_url_with_or_without_v1(stub: Stub) -> None:
    stub.enqueue(sse("x"))
    gen = ServerBackend(stub.url + "/v1/", retries=FAST).generate(MSGS, [], GenerateOptions())
    assert gen.text == "x" and stub.requests[0]["path"] == "/v1/chat/completions"
    with pytest.raises(ConfigError, match="^`base_url` 'ftp://example.org' is not an http"):
        ServerBackend("ftp://example.org")
    with pytest.raises(ConfigError, match="unknown server dialect"):
        ServerBackend(stub.url, dialect="tgi")


def test_non_streaming_reply(stub: Stub) -> None:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 1}}
    stub.enqueue(status(200, body))
    gen = stub.backend(stream=False).generate(MSGS, [], GenerateOptions())
    assert (gen.text, gen.finish_reason, gen.prompt_tokens) == ("done", "length", 9)
    assert stub.requests[0]["stream"] is False


def test_one_connection_is_kept_alive_across_the_steps(stub11: Stub) -> None:
    body = {"choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}
    stub11.enqueue(*[status(200, body)] * 3)
    b = stub11.backend(stream=False)
    for _ in range(3):
        assert b.generate(MSGS, [], GenerateOptions()).text == "ok"
    assert len(stub11.ports) == 1 + 3 + 3  # /v1/models, then a reply and a count of its tokens each step
    assert len(set(stub11.ports)) == 1
    b.close()


def test_the_proxy_from_the_environment_is_used(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", stub.url)  # the stub answers as the proxy: it sees absolute URLs
    stub.enqueue(sse("via the proxy"))
    gen = ServerBackend("http://model.invalid:8080", retries=FAST).generate(MSGS, [], GenerateOptions())
    assert gen.text == "via the proxy"
    assert stub.requests[0]["path"] == "http://model.invalid:8080/v1/chat/completions"
    monkeypatch.setenv("NO_PROXY", "model.invalid")
    gen = ServerBackend("http://model.invalid:8080", retries=FAST).generate(MSGS, [], GenerateOptions())
    assert gen.finish_reason == "error" and "cannot resolve the host name" in (gen.error or "")


def test_a_json_reply_to_a_streamed_request_is_read_as_one_body(stub: Stub) -> None:
    stub.enqueue(status(200, {"choices": [{"index": 0, "message": {"content": "whole"}, "finish_reason": "stop"}]}))
    gen = stub.backend().generate(MSGS, [], GenerateOptions())
    assert (gen.text, gen.finish_reason) == ("whole", "stop")


# -- the loop validates whatever the server returns --------------------------------------


def test_a_server_that_ignores_the_grammar_cannot_slip_a_bad_call_through(stub: Stub, workspace: Path, tmp_path: Path) -> None:
    stub.enqueue(
        sse('<tool_call>\n{"name": "read_file", "arguments": {"path": 5}}\n</tool_call>'),  # wrong type
        sse('<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"\n</tool_call>'),  # not JSON
        sse('<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'),
        sse("The code is PURPLE-42."),
    )
    r = _agent(stub.backend(), workspace).run("What is the launch code?", trace=tmp_path / "t.jsonl")
    assert r.stop_reason is StopReason.ANSWERED and "PURPLE-42" in r.answer
    results = [res for rec in r.records for res in rec.results]
    assert [res.error.kind if res.error else "ok" for res in results] == ["invalid_argument", "format_error", "ok"]
    assert "PURPLE-42" in results[2].content


def test_openai_tool_calls_go_through_the_same_parser(stub: Stub, workspace: Path) -> None:
    def call(args: str, index: int = 0) -> dict[str, Any]:
        tc = {"index": index, "id": "x", "type": "function", "function": {"name": "read_file", "arguments": args}}
        return {"choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]}

    stub.owner = "openai"
    stub.enqueue(
        sse(call('{"path": "notes'), finish="tool_calls"),  # arguments cut short
        sse(call('{"path": '), call('"notes.txt"}'), finish="tool_calls"),  # streamed in two deltas
        sse("PURPLE-42"),
    )
    r = _agent(stub.backend(), workspace).run("What is the launch code?")
    assert r.stop_reason is StopReason.ANSWERED
    first, second = r.records[0], r.records[1]
    assert not first.calls and first.results[0].error and first.results[0].error.kind == "format_error"
    assert second.calls[0].arguments == {"path": "notes.txt"} and "PURPLE-42" in second.results[0].content
    sent = stub.requests[2]["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_2_0", "content": second.results[0].content}


def test_by_default_only_the_first_server_call_runs(stub: Stub, workspace: Path) -> None:
    def call(index: int, path: str) -> dict[str, Any]:
        tc = {"index": index, "id": f"x{index}", "type": "function",
              "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}
        return {"choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]}

    stub.owner = "openai"
    stub.enqueue(sse(call(0, "notes.txt"), call(1, "missing.txt"), finish="tool_calls"), sse("PURPLE-42"))
    agent = _agent(stub.backend(), workspace)
    assert agent.config.parallel_calls is False  # the default through a server: it samples the whole turn
    r = agent.run("What is the launch code?")
    assert r.stop_reason is StopReason.ANSWERED
    first = r.records[0]
    assert [c.arguments for c in first.calls] == [{"path": "notes.txt"}]  # the second never ran
    kinds = [res.error.kind if res.error else "ok" for res in first.results]
    assert kinds == ["ok", "format_error"] and "one call a turn; call read_file again next turn" in first.results[1].content
    [assistant] = [m for m in stub.requests[1]["messages"] if m["role"] == "assistant"]
    assert len(assistant["tool_calls"]) == 1  # the server is told of the one that ran


def test_with_parallel_calls_on_every_server_call_runs(stub: Stub) -> None:
    tcs = [{"index": i, "function": {"name": "read_file", "arguments": '{"path": "a"}'}} for i in (0, 1)]
    stub.owner = "openai"
    stub.enqueue(sse({"choices": [{"index": 0, "delta": {"tool_calls": tcs}, "finish_reason": None}]}, finish="tool_calls"))
    gen = stub.backend().generate(MSGS, TOOLS, GenerateOptions(parallel=True))
    assert gen.text.count('"name": "read_file"') == 2 and gen.info["server_tool_calls"] == 2


# -- failures ------------------------------------------------------------------------


def test_5xx_is_retried(stub: Stub) -> None:
    stub.enqueue(status(503), status(500), sse("fine"))
    gen = stub.backend().generate(MSGS, [], GenerateOptions())
    assert gen.text == "fine" and gen.info["attempts"] == 3
    assert gen.info["failures"][0].startswith("server error 503")


def test_429_waits_for_retry_after(stub: Stub) -> None:
    stub.enqueue(status(429, headers={"Retry-After": "0.4"}), sse("fine"))
    t0 = time.monotonic()
    gen = stub.backend().generate(MSGS, [], GenerateOptions())
    assert gen.text == "fine" and time.monotonic() - t0 >= 0.4  # not the 0.01 s backoff


def test_retries_run_out_into_a_backend_error_stop(stub: Stub, workspace: Path, tmp_path: Path) -> None:
    stub.enqueue(*[status(500, {"error": "overloaded"})] * 3)
    r = _agent(stub.backend(), workspace).run("Hello?", trace=tmp_path / "t.jsonl")
    assert r.stop_reason is StopReason.BACKEND_ERROR and r.steps == 1
    assert "server error 500: overloaded" in r.message and "after 3 tries" in r.message
    recs = read_lines(tmp_path / "t.jsonl")
    assert [x["type"] for x in recs] == ["run_start", "step", "run_end"]
    assert recs[1]["info"]["attempts"] == 3 and recs[-1]["stop_reason"] == "backend_error"


def test_client_errors_are_not_retried(stub: Stub) -> None:
    stub.enqueue(status(401, {"detail": "Invalid API key"}))
    gen = stub.backend().generate(MSGS, [], GenerateOptions())
    assert gen.finish_reason == "error" and "check `api_key`" in (gen.error or "") and len(stub.requests) == 1
    stub.enqueue(status(400, {"error": {"message": "This model's maximum context length is 2048 tokens"}}))
    gen = stub.backend().generate(MSGS, [], GenerateOptions())
    assert gen.finish_reason == "context"
    stub.enqueue(status(400, {"error": {"message": "failed to parse grammar"}}))
    gen = stub.backend().generate(MSGS, [], GenerateOptions())
    assert gen.info.get("constraint_error") and "`dialect` openai" in (gen.error or "")


@pytest.mark.parametrize("bad", [b"data: {not json\n\n", b"data: [1, 2]\n\n", b'data: {"choices": "x"}\n\n'])
def test_malformed_replies_are_retried_then_reported(stub: Stub, bad: bytes) -> None:
    stub.enqueue(raw(bad), raw(bad), raw(bad))
    gen = stub.backend().generate(MSGS, [], GenerateOptions())
    assert gen.finish_reason == "error" and "malformed reply" in (gen.error or "") and len(stub.requests) == 3


def test_a_cut_off_stream_is_retried_without_showing_text_twice(stub: Stub) -> None:
    stub.enqueue(sse("The code ", "is", cut=True), sse("The code ", "is ", "PURPLE-42."))
    pieces: list[str] = []
    gen = stub.backend().generate(MSGS, [], GenerateOptions(on_text=pieces.append))
    assert gen.text == "The code is PURPLE-42."
    assert "".join(pieces) == gen.text and "stream_diverged" not in gen.info
    assert "cut off" in gen.info["failures"][0]


def test_a_stream_cut_every_time_keeps_the_partial_answer(stub: Stub, workspace: Path, tmp_path: Path) -> None:
    stub.enqueue(*[sse("The code is PUR", cut=True)] * 3)
    r = _agent(stub.backend(), workspace).run("Hello?", trace=tmp_path / "t.jsonl")
    assert r.stop_reason is StopReason.BACKEND_ERROR
    assert r.answer.endswith("The code is PUR")  # after the forced-stop note
    step = read_lines(tmp_path / "t.jsonl")[1]
    assert step["text"] == "The code is PUR" and "cut off" in step["error"]


def test_a_slow_answer_past_the_timeout(stub: Stub) -> None:
    stub.enqueue(*[slow(1.5, sse("late"))] * 3)
    t0 = time.monotonic()
    gen = stub.backend(timeout=0.3).generate(MSGS, [], GenerateOptions())
    took = time.monotonic() - t0
    assert gen.finish_reason == "error" and "no answer within 0.3 s" in (gen.error or "")
    assert gen.info["attempts"] == 3 and took < 3 * 0.3 + 1.0


def test_connecting_has_its_own_timeout() -> None:
    with socket.socket() as full:  # a listener that never accepts, its queue filled: a connect hangs
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        fillers = [socket.socket() for _ in range(3)]
        for f in fillers:
            f.setblocking(False)
            f.connect_ex(full.getsockname())
        b = ServerBackend(f"http://127.0.0.1:{full.getsockname()[1]}", timeout=30, connect_timeout=0.2, retries=FAST)
        t0 = time.monotonic()
        gen = b.generate(MSGS, [], GenerateOptions())
        for f in fillers:
            f.close()
    assert gen.finish_reason == "error" and "no connection within 0.2 s" in (gen.error or "")
    assert time.monotonic() - t0 < 5  # the 30 s for the reply never started


def test_a_port_with_nothing_listening() -> None:
    b = ServerBackend(f"http://127.0.0.1:{free_port()}", retries=FAST)
    assert not b.probe()
    t0 = time.monotonic()
    gen = b.generate(MSGS, [], GenerateOptions())
    assert gen.finish_reason == "error" and "connection refused" in (gen.error or "")
    assert gen.info["attempts"] == 3 and time.monotonic() - t0 < 2
    assert b.count_tokens("abcd efgh") == 3  # the estimate, when the tokenizer is out of reach


def test_cli_against_nothing_listening_stops_with_exit_9(workspace: Path, tmp_path: Path) -> None:
    trace = tmp_path / "cli.jsonl"
    p = subprocess.run(
        [sys.executable, "-c", "from localagent.cli import main; main()", "run", "Hello?", "--root", str(workspace),
         "--base-url", f"http://127.0.0.1:{free_port()}", "--json", "--trace", str(trace)],
        capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 9, p.stderr
    out = json.loads(p.stdout)
    assert out["stop_reason"] == "backend_error" and "connection refused" in out["message"]
    assert [r["type"] for r in read_lines(trace)] == ["run_start", "step", "run_end"]
    assert "Traceback" not in p.stderr


# -- call or prose at the first token -----------------------------------------------------


def first(*top: tuple[str, float]) -> Reply:
    """The answer to the first-token request: one token and its top log-probabilities."""
    logprobs = {"content": [{"token": top[0][0], "logprob": top[0][1],
                             "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top]}]}
    event = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": top[0][0]}, "logprobs": logprobs, "finish_reason": "length"}]}
    return sse(event, done=True, finish="length")


def _auto_grammar() -> str:
    from localagent.constraint.grammar import ToolChoice, build_grammar

    return build_grammar(TOOLS, ToolChoice("auto"), parallel=False)


def test_a_call_is_decided_at_the_first_token_then_the_call_grammar_sent(stub: Stub) -> None:
    import math

    stub.firsts.append(first(("<tool_call>", math.log(0.6)), ("The", math.log(0.3)), ("{", math.log(0.05))))
    stub.enqueue(sse(render_call("read_file", {"path": "notes.txt"})))
    opts = GenerateOptions(constraint=gbnf(_auto_grammar()), call_threshold=0.5, parallel=False, temperature=0.7, max_tokens=50)
    gen = stub.backend().generate(MSGS, TOOLS, opts)
    (probe,), (step,) = stub.probes, stub.requests
    assert probe["max_tokens"] == 1 and probe["logprobs"] is True and probe["top_logprobs"] == 20
    assert probe["stream"] is True and "grammar" not in probe and probe["temperature"] == 0.0
    assert probe["messages"] == step["messages"]  # the same prompt: the server's cache holds it for the step
    assert step["grammar"].startswith("root ::= calls-one\n") and step["max_tokens"] == 50 and step["temperature"] == 0.7
    assert gen.decision == "call" and gen.call_mass == round(0.65 / 0.95, 4)
    assert gen.text == render_call("read_file", {"path": "notes.txt"}) and gen.info["decision"] == "call"


def test_prose_is_decided_below_the_threshold_then_the_prose_grammar_sent(stub: Stub) -> None:
    import math

    stub.firsts.append(first(("1", math.log(0.5)), ("<tool_call>", math.log(0.3)), (" ", math.log(0.1))))
    stub.enqueue(sse("The code is 1."))
    gen = stub.backend().generate(MSGS, TOOLS, GenerateOptions(constraint=gbnf(_auto_grammar()), call_threshold=0.5, parallel=False))
    assert stub.requests[0]["grammar"].startswith("root ::= prose\n")
    assert gen.decision == "prose" and gen.call_mass == round(0.4 / 0.9, 4) and gen.text == "The code is 1."


@pytest.mark.parametrize("answer", [status(500, {"error": {"message": "logprobs is not supported"}}), sse("x")])
def test_without_log_probabilities_the_grammar_alone_decides(stub: Stub, answer: Reply) -> None:
    """A server that refuses the first-token request, or answers it without log-probabilities:
    the step is sent with its call-or-prose grammar, and the first-token request is not tried again."""
    grammar = _auto_grammar()
    stub.firsts.append(answer)
    stub.enqueue(sse("hello"), sse("again"))
    b = stub.backend()
    opts = GenerateOptions(constraint=gbnf(grammar), call_threshold=0.5, parallel=False)
    gen = b.generate(MSGS, TOOLS, opts)
    assert gen.text == "hello" and gen.decision is None and "no_decision" in gen.info
    assert stub.requests[0]["grammar"] == grammar
    assert b.generate(MSGS, TOOLS, opts).text == "again" and len(stub.probes) == 1


def test_no_first_token_request_without_a_threshold_or_for_the_openai_dialect(stub: Stub) -> None:
    grammar = _auto_grammar()
    stub.enqueue(sse("a"), sse("b"), sse("c"))
    stub.backend().generate(MSGS, TOOLS, GenerateOptions(constraint=gbnf(grammar), parallel=False))  # the loop gave no threshold
    stub.backend(dialect="openai").generate(MSGS, TOOLS, GenerateOptions(call_threshold=0.5))
    stub.backend(first_token=False).generate(MSGS, TOOLS, GenerateOptions(constraint=gbnf(grammar), call_threshold=0.5, parallel=False))
    assert len(stub.requests) == 3 and not stub.probes


def test_the_call_mass_counts_structured_starts_among_the_alternatives() -> None:
    import math

    from localagent.backends.server import call_mass

    top = [("<tool_call>", math.log(0.2)), ("{", math.log(0.1)), (" ", math.log(0.1)), ("```", math.log(0.1)),
           ("Hello", math.log(0.4)), (" The", math.log(0.1))]
    assert call_mass(top) == pytest.approx(0.5)
    assert call_mass([]) is None and call_mass([("x", float("-inf"))]) is None


# -- a server template that lists the tools ----------------------------------------------------


def _usage(n: int) -> Reply:
    return status(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "length"}],
                        "usage": {"prompt_tokens": n, "completion_tokens": 1}})


def test_a_template_that_lists_tools_gets_them_and_the_history_in_its_shape(stub: Stub) -> None:
    """llama-cpp-python renders `tools` with the model's own template: asked once (a tool list
    costs prompt tokens), the step is sent as in-process renders it for such a template."""
    stub.owner = "me"
    stub.enqueue(_usage(120), _usage(20), sse("x"))
    history = MSGS + [
        Message("assistant", "", [ToolCall("call_1_0", "read_file", {"path": "notes.txt"})], raw=render_call("read_file", {"path": "notes.txt"})),
        Message("tool", "PURPLE-42", tool_call_id="call_1_0", name="read_file"),
    ]
    b = stub.backend()
    b.generate(history, TOOLS, GenerateOptions(constraint=gbnf('root ::= "x"')))
    asked, bare, step = stub.requests
    assert asked["tools"] and "tools" not in bare and asked["max_tokens"] == bare["max_tokens"] == 1
    assert b.template_tools and b.native_tools
    assert step["tools"] == shown_schemas(TOOLS) and step["grammar"] == 'root ::= "x"' and "tool_choice" not in step
    assert step["messages"][0] == {"role": "system", "content": "Be brief."}  # no tool text of ours
    assert step["messages"][2:] == [{"role": "assistant", "content": render_call("read_file", {"path": "notes.txt"})},
                                    {"role": "tool", "content": "PURPLE-42", "tool_call_id": "call_1_0"}]


def test_a_template_without_tools_gets_our_tool_prompt(stub: Stub) -> None:
    stub.owner = "me"
    stub.enqueue(_usage(20), _usage(20), sse("x"))
    b = stub.backend()
    b.generate(MSGS, TOOLS, GenerateOptions(constraint=gbnf('root ::= "x"')))
    step = stub.requests[2]
    assert b.template_tools is False and "tools" not in step and "read_file" in step["messages"][0]["content"]


def test_eval_tasks_runs_the_suite_through_the_server(stub: Stub) -> None:
    """``eval-tasks --base-url``: the same suite, each task's steps asked of the server."""
    from typer.testing import CliRunner

    from localagent.cli import app

    r = CliRunner().invoke(app, ["eval-tasks", "--kind", "fact_in_subfolder", "--per-kind", "1", "--max-steps", "2",
                                 "--base-url", stub.url, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["model"] == f"stub-model at {stub.url}" and out["summary"]["tasks"] == 1
    assert stub.requests and all(q["path"] == "/v1/chat/completions" for q in stub.requests)
