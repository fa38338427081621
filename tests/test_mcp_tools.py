"""MCP tools against real MCP servers (tests/mcp_server.py, written with the SDK's server API),
over stdio and streamable HTTP, with the scripted fake model driving the agent."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from localagent.approval import allow_list, deny_all  # noqa: E402
from localagent.backends.fake import FakeBackend, call_text  # noqa: E402
from localagent.errors import ConfigError  # noqa: E402
from localagent.loop import Agent  # noqa: E402
from localagent.tools.mcp import McpServer, connect_all  # noqa: E402
from fake_cli import FAKE_CLI, fake_env  # noqa: E402

SERVER = str(Path(__file__).with_name("mcp_server.py"))
STDIO = f"{sys.executable} {SERVER}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, SERVER, "http", str(port)], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.kill()  # its 'hang' tool may still be sleeping
    proc.wait(10)


@pytest.fixture(scope="module", params=["stdio", "http"])
def server(request: pytest.FixtureRequest, http_url: str) -> Iterator[McpServer]:
    with McpServer(STDIO if request.param == "stdio" else http_url, timeout=2) as s:
        yield s


def _run(server: McpServer, replies: list[Any], approver: Any = deny_all) -> Any:
    fake = FakeBackend.scripted(replies)
    return Agent(fake, server.tools(), approver=approver).run("go")


def test_tools_are_listed_with_clean_schemas_and_reversibility(server: McpServer) -> None:
    tools = {t.name: t for t in server.tools()}
    assert set(tools) == {"add", "write_note", "refuse", "hang", "die"}
    assert tools["add"].description == "Add two integers."
    assert tools["add"].parameters["properties"] == {"a": {"type": "integer"}, "b": {"default": 1, "type": "integer"}}
    assert "title" not in json.dumps(tools["add"].parameters)
    assert not tools["add"].irreversible and tools["write_note"].irreversible  # no readOnlyHint: approval


def test_a_call_is_forwarded_and_its_result_comes_back(server: McpServer) -> None:
    result = _run(server, [call_text("add", a=2, b=40), "It is 42."])
    [step, _] = result.records
    assert step.results[0].error is None and step.results[0].content == "42"
    assert result.answer == "It is 42."


def test_bad_arguments_stop_at_our_validator(server: McpServer) -> None:
    result = _run(server, [call_text("add", a="two"), "Sorry."])
    error = result.records[0].results[0].error
    assert error is not None and error.kind == "invalid_argument" and error.message == "argument 'a' must be an integer, got \"two\""


def test_a_tool_error_of_the_server_is_a_structured_result(server: McpServer) -> None:
    result = _run(server, [call_text("refuse", why="no reason"), "Hm."])
    error = result.records[0].results[0].error
    assert error is not None and error.kind == "mcp_error"
    assert "'refuse' failed on the MCP server" in error.message and "refused: no reason" in error.message


def test_a_hang_is_a_timeout_and_the_server_still_answers(server: McpServer) -> None:
    started = time.monotonic()
    result = _run(server, [call_text("hang", seconds=30), call_text("add", a=1), "Done."])
    assert time.monotonic() - started < 10
    hang, add = result.records[0].results[0], result.records[1].results[0]
    assert hang.error is not None and hang.content == "error (mcp_error): the MCP server did not answer 'hang' within 2 s"
    assert add.error is None and add.content == "2"


def test_writes_need_approval(server: McpServer) -> None:
    denied = _run(server, [call_text("write_note", text="hi"), "Could not."])
    assert denied.records[0].results[0].error.kind == "denied"  # type: ignore[union-attr]
    allowed = _run(server, [call_text("write_note", text="hi"), "Done."], approver=allow_list(["write_note"]))
    assert allowed.records[0].results[0].content == "noted: hi"


def test_a_server_that_dies_is_one_line_for_every_later_call() -> None:
    with McpServer(STDIO, timeout=3) as s:
        result = _run(s, [call_text("die"), call_text("add", a=1), "Gone."])
    for step in result.records[:2]:
        r = step.results[0]
        assert r.error is not None and r.error.kind == "mcp_error" and "\n" not in r.content
        assert r.content.startswith("error (mcp_error): the MCP server has stopped (Connection closed")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no-such-command-xyz --flag", "MCP server 'no-such-command-xyz --flag' cannot be used"),
        (f"{sys.executable} -c \"print('garbage'); import time; time.sleep(30)\"", "did not answer within 3 s"),
        (f"{sys.executable} -c \"import sys; sys.exit('cannot start: no config')\"", "cannot start: no config"),
        ("http://127.0.0.1:9/mcp", "cannot be used"),
        ("   ", "MCP server '   ' is empty: give a URL or a command line"),
    ],
)
def test_a_server_that_cannot_be_used_is_one_config_error(spec: str, message: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        connect_all([spec], timeout=3)
    assert "\n" not in str(e.value) and time.monotonic() - started < 15


def test_the_cli_offers_the_tools_of_mcp_servers(tmp_path: Path, http_url: str) -> None:
    replies = [["add", {"a": 20, "b": 22}], ["write_note", {"text": "x"}], "42."]
    env = fake_env(tmp_path, replies)
    argv = [*FAKE_CLI, "run", "sum", "--root", str(tmp_path), "--json", "--mcp", STDIO, "--mcp", http_url,
            "--allow", "write_note"]
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    # The same tool names twice (both servers) are refused before any model loads.
    assert p.returncode == 2 and p.stderr.strip() == "localagent: error: two tools are named 'add'; tool names must be unique"
    argv = argv[: argv.index(http_url) - 1] + argv[argv.index(http_url) + 1 :]
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    trace = [json.loads(line) for line in Path(json.loads(p.stdout)["trace"]).read_text().splitlines()]
    results = [s["results"][0]["content"] for s in trace if s["type"] == "step" and s["results"]]
    assert results == ["42", "noted: x"]  # write_note allowed by --allow
