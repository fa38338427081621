"""``localagent serve`` with the real openai client, against the server on the scripted fake
model: streaming and not, every tool_choice, bad requests, a client gone mid-stream, two at once."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx2 as httpx  # what the openai client itself uses
import jsonschema
import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("fastapi")
import uvicorn  # noqa: E402

from localagent.backends.base import Generation, GenerateOptions  # noqa: E402
from localagent.backends.fake import FakeBackend, call_text  # noqa: E402
from localagent.messages import Message  # noqa: E402
from localagent.serving.openai_api import ProseFilter  # noqa: E402
from localagent.serving.serve import create_app  # noqa: E402

READ = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}
LIST = {"type": "function", "function": {"name": "list_dir", "parameters": {"type": "object", "properties": {}}}}
ASK = [{"role": "user", "content": "What is in notes.txt?"}]


class SlowFake(FakeBackend):
    """The fake, streaming its reply word by word, ``delay`` seconds apart; it counts the
    generations under way at once and the pieces it streamed."""

    delay: float = 0.0
    active = most = pieces = 0

    def generate(self, messages: list[Message], tools: list[dict[str, Any]], options: GenerateOptions) -> Generation:
        self.active += 1
        self.most = max(self.most, self.active)
        try:
            reply = self.replies.popleft() if self.replies else "(no more replies)"
            text = reply(messages) if callable(reply) else reply
            assert isinstance(text, str)
            for word in re.split(r"(?<= )", text):
                if options.on_text:
                    options.on_text(word)
                self.pieces += 1
                time.sleep(self.delay)
            self.replies.appendleft(text)
            return super().generate(messages, tools, replace(options, on_text=None))
        finally:
            self.active -= 1


class Served:
    def __init__(self, fake: SlowFake, url: str) -> None:
        self.fake, self.url = fake, url
        self.client = openai.OpenAI(base_url=url + "/v1", api_key="secret", max_retries=0, timeout=20)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(app: Any) -> tuple[uvicorn.Server, threading.Thread, str]:
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def running() -> Iterator[Served]:
    fake = SlowFake()
    server, thread, url = _start(create_app(fake, api_key="secret"))
    yield Served(fake, url)
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def served(running: Served) -> Served:
    running.fake.replies.clear()
    running.fake.options.clear()
    running.fake.requests.clear()
    running.fake.delay = 0.0
    return running


def test_models_and_a_plain_answer_with_usage(served: Served) -> None:
    assert [m.id for m in served.client.models.list()] == ["fake"]
    served.fake.enqueue("It says PURPLE-42.")
    r = served.client.chat.completions.create(model="anything", messages=ASK)
    assert r.choices[0].message.content == "It says PURPLE-42." and r.choices[0].finish_reason == "stop"
    assert r.usage is not None and r.usage.completion_tokens == 3 and r.usage.total_tokens > 3
    assert served.fake.options[0].grammar is None  # no tools: free text


def test_a_call_has_arguments_that_parse_and_fit(served: Served) -> None:
    served.fake.enqueue(call_text("read_file", path="notes.txt"))
    r = served.client.chat.completions.create(model="m", messages=ASK, tools=[READ, LIST])
    [call] = r.choices[0].message.tool_calls or []
    assert r.choices[0].finish_reason == "tool_calls" and r.choices[0].message.content is None
    assert call.function.name == "read_file" and call.id.startswith("call_")
    jsonschema.validate(json.loads(call.function.arguments), READ["function"]["parameters"])
    options = served.fake.options[0]
    assert options.grammar is not None and options.call_threshold == 0.5 and options.tool_choice == "auto"
    assert options.call_heads  # jump-forward, as in the agent loop


@pytest.mark.parametrize(
    ("tool_choice", "sent", "threshold"),
    [
        ("required", "required", None),
        ("none", "none", None),
        ({"type": "function", "function": {"name": "list_dir"}}, "list_dir", None),
    ],
)
def test_every_tool_choice_reaches_the_decoder(served: Served, tool_choice: Any, sent: str, threshold: Any) -> None:
    served.fake.enqueue(call_text("list_dir"))
    r = served.client.chat.completions.create(model="m", messages=ASK, tools=[READ, LIST], tool_choice=tool_choice)
    options = served.fake.options[0]
    assert options.tool_choice == sent and options.call_threshold == threshold and options.grammar is not None
    calls = r.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ([] if sent == "none" else ["list_dir"])


def test_parallel_tool_calls_off_returns_one_call(served: Served) -> None:
    two = call_text("read_file", path="a") + "\n" + call_text("read_file", path="b")
    served.fake.enqueue(two, two)
    r = served.client.chat.completions.create(model="m", messages=ASK, tools=[READ], parallel_tool_calls=False)
    assert len(r.choices[0].message.tool_calls or []) == 1 and served.fake.options[0].parallel is False
    r = served.client.chat.completions.create(model="m", messages=ASK, tools=[READ])
    assert len(r.choices[0].message.tool_calls or []) == 2 and served.fake.options[1].parallel is True


def test_list_content_and_the_kv_cache_kept_across_a_conversation(served: Served) -> None:
    served.fake.enqueue(call_text("read_file", path="notes.txt"), "PURPLE-42.")
    messages: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "What is in notes.txt?"}]}]
    first = served.client.chat.completions.create(model="m", messages=messages, tools=[READ])
    call = (first.choices[0].message.tool_calls or [])[0]
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "PURPLE-42"},
    ]
    second = served.client.chat.completions.create(model="m", messages=messages, tools=[READ])
    assert second.choices[0].message.content == "PURPLE-42."
    assert served.fake.requests[1][1].raw == call_text("read_file", path="notes.txt")  # the exact text, not a re-rendering
    assert second.usage is not None and second.usage.prompt_tokens_details is not None
    assert second.usage.prompt_tokens_details.cached_tokens > 0


def test_streamed_prose_arrives_in_pieces_and_ends_with_usage(served: Served) -> None:
    served.fake.enqueue("The launch code is PURPLE-42.")
    stream = served.client.chat.completions.create(
        model="m", messages=ASK, tools=[READ], stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(text) > 1 and "".join(text) == "The launch code is PURPLE-42."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5


def test_a_streamed_call_comes_as_tool_call_deltas(served: Served) -> None:
    served.fake.enqueue(call_text("read_file", path="notes.txt"))
    chunks = list(served.client.chat.completions.create(model="m", messages=ASK, tools=[READ], stream=True))
    deltas = [d for c in chunks for d in (c.choices[0].delta.tool_calls or [])]
    assert not any(c.choices[0].delta.content for c in chunks)  # the envelope is never shown as text
    assert [(d.index, d.function.name) for d in deltas] == [(0, "read_file")]
    assert json.loads(deltas[0].function.arguments or "") == {"path": "notes.txt"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "the body is not JSON"),
        (b'{"model": "m"}', "messages: Field required"),
        (b'{"messages": []}', "messages: List should have at least 1 item"),
        (b'{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}', "only text content parts are supported"),
        (b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "read_file"}}], '
         b'"tool_choice": {"type": "function", "function": {"name": "rm"}}}', "tool_choice: no tool named 'rm' in tools"),
        (b'{"messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes"}', "tool_choice: 'sometimes' is none of"),
        (b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "a b"}}]}', "tools[0]: tool name 'a b'"),
        (b'{"messages": [{"role": "user", "content": "x"}], "temperature": 5}', "temperature: Input should be less than or equal to 2"),
    ],
)
def test_a_malformed_request_is_a_clear_400(served: Served, body: bytes, message: str) -> None:
    r = httpx.post(served.url + "/v1/chat/completions", content=body, headers={"Authorization": "Bearer secret"})
    assert r.status_code == 400 and message in r.json()["error"]["message"], r.text
    assert r.json()["error"]["type"] == "invalid_request_error" and not served.fake.options


def test_top_p_reaches_the_decoder() -> None:
    from localagent.serving.openai_api import parse_request

    ask = [{"role": "user", "content": "x"}]
    assert parse_request({"messages": ask, "top_p": 0.5, "temperature": 0.7}).config.top_p == 0.5
    assert parse_request({"messages": ask}).config.top_p == 0.95  # not given: the sampler's default


def test_the_openai_client_sees_a_bad_request_error(served: Served) -> None:
    with pytest.raises(openai.BadRequestError, match="tool_choice"):
        served.client.chat.completions.create(model="m", messages=ASK, tool_choice="required")


def test_the_key_is_checked(served: Served) -> None:
    wrong = openai.OpenAI(base_url=served.url + "/v1", api_key="guess", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    assert httpx.get(served.url + "/v1/models").status_code == 401


def test_a_client_gone_mid_stream_stops_its_generation(served: Served) -> None:
    served.fake.delay = 0.05
    served.fake.enqueue(" ".join(f"w{i}" for i in range(100)), "Still here.")
    body = {"model": "m", "messages": ASK, "stream": True}
    with httpx.stream("POST", served.url + "/v1/chat/completions", json=body, headers={"Authorization": "Bearer secret"}) as r:
        lines = r.iter_lines()
        while "w1" not in next(lines):
            pass
    before = served.fake.pieces
    time.sleep(0.5)
    assert served.fake.pieces - before < 5  # stopped, not run to the end (another 4.5 s)
    served.fake.delay = 0.0
    r2 = served.client.chat.completions.create(model="m", messages=ASK)
    assert r2.choices[0].message.content == "Still here."


def test_two_clients_at_once_are_queued_and_neither_is_corrupted(served: Served) -> None:
    served.fake.delay = 0.02
    served.fake.most = 0
    echo = lambda messages: f"answer to {messages[-1].content} " * 5  # noqa: E731
    served.fake.enqueue(echo, echo, echo, echo)
    results: dict[str, str] = {}

    def ask(question: str, stream: bool) -> None:
        messages = [{"role": "user", "content": question}]
        if stream:
            chunks = served.client.chat.completions.create(model="m", messages=messages, stream=True)
            results[question] = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            results[question] = served.client.chat.completions.create(model="m", messages=messages).choices[0].message.content or ""

    threads = [threading.Thread(target=ask, args=(q, q in ("b", "d"))) for q in "abcd"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert served.fake.most == 1  # one generation at a time
    assert results == {q: ("answer to " + q + " ") * 4 + "answer to " + q for q in "abcd"}


@pytest.mark.parametrize(
    ("pieces", "shown"),
    [
        (["  Hel", "lo ", "there"], ["Hel", "lo", " there"]),
        (["Look.", "\n<to", "ol_call>{...}"], ["Look.", "", ""]),
        (["<tool_", "call>", "{}"], ["", "", ""]),
        (["a <", "b"], ["a", " <b"]),
    ],
)
def test_prose_filter_shows_only_what_is_surely_prose(pieces: list[str], shown: list[str]) -> None:
    f = ProseFilter()
    assert [f.feed(p) for p in pieces] == shown
    assert f.rest("".join(shown) + "!") == "!"


def test_the_serve_command_on_the_fake_model(tmp_path: Any) -> None:
    import signal
    import subprocess

    from fake_cli import FAKE_CLI, fake_env

    port = _free_port()
    proc = subprocess.Popen(
        [*FAKE_CLI, "serve", "--port", str(port), "--api-key", "k"],
        env=fake_env(tmp_path, ["Hello from the fake."]), stderr=subprocess.PIPE, text=True,
    )
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=5)
        deadline = time.monotonic() + 20
        while True:
            try:
                models = client.models.list()
                break
            except openai.APIConnectionError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        assert [m.id for m in models] == ["fake"]
        r = client.chat.completions.create(model="fake", messages=ASK)
        assert r.choices[0].message.content == "Hello from the fake."
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert f"localagent serve: fake at http://127.0.0.1:{port}/v1" in err and "Traceback" not in err


@pytest.mark.filterwarnings("ignore:Function 'read_file' has decorators")  # defined inside the test
def test_smolagents_drives_a_file_task_through_the_server(served: Served, tmp_path: Any) -> None:
    smolagents = pytest.importorskip("smolagents")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "launch.txt").write_text("The launch code is PURPLE-42.\n")

    @smolagents.tool
    def read_file(path: str) -> str:
        """Read a text file of the workspace.

        Args:
            path: The file's path, relative to the workspace.
        """
        return (tmp_path / path).read_text()

    served.fake.enqueue(call_text("read_file", path="notes/launch.txt"), call_text("final_answer", answer="PURPLE-42"))
    model = smolagents.OpenAIServerModel(model_id="local", api_base=served.url + "/v1", api_key="secret")
    agent = smolagents.ToolCallingAgent(tools=[read_file], model=model, max_steps=3, verbosity_level=0)
    assert agent.run("What is the launch code written in the notes folder?") == "PURPLE-42"
    assert [o.tool_choice for o in served.fake.options] == ["required", "required"]  # as smolagents asks
    tool_turn = [m for m in served.fake.requests[1] if "PURPLE-42" in m.content]
    assert tool_turn, "the tool's result reached the model"
