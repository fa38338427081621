"""Dispatch: one result per call, in order, whatever the tools do."""

import _thread
import builtins
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from localagent import dispatch
from localagent.dispatch import Dispatcher, estimate_tokens, truncate
from localagent.errors import ToolErrorInfo
from localagent.messages import ToolCall
from localagent.tools import Tool, ToolContext, ToolSet, tool
from localagent.tools.workspace import Workspace, WorkspaceError

release = threading.Event()  # lets the hanging tool end once its test is over


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


@tool
def boom(text: str) -> str:
    """Raise."""
    raise ValueError(f"bad input\n{text}")


@tool(timeout=0.2)
def hang() -> str:
    """Hang."""
    release.wait(10)
    print("late print, must not reach the terminal")
    return "late"


@tool
def as_dict(n: int) -> dict[str, object]:
    """Structured."""
    return {"n": n, "items": [1, "é"]}


@tool
def unserialisable() -> object:
    """Returns a set."""
    return {1, 2}


@tool
def chatty(n: int) -> str:
    """Prints."""
    print("to stdout", n)
    print("to stderr", file=sys.stderr)
    return "done"


@tool
def nothing() -> None:
    """Returns None."""


@tool
def exits() -> str:
    """Calls sys.exit."""
    sys.exit(3)


@tool
def big(offset: int = 0) -> str:
    """A megabyte of lines."""
    return "".join(f"line {i}\n" for i in range(offset, offset + 120_000))


@tool
def blob() -> str:
    """A megabyte without an offset parameter."""
    return "x" * 1_000_000


@tool
def counted(n: Annotated[int, Field(le=10)], ctx: ToolContext) -> str:
    """Uses the context."""
    ctx.state["seen"] = n
    return f"n={n}"


@tool
def refuses(path: str) -> str:
    """Raises a model-facing workspace error."""
    raise WorkspaceError(ToolErrorInfo(kind="not_found", message=f"path '{path}' not found"))


@tool(irreversible=True)
def delete(path: str) -> str:
    """Delete."""
    return f"deleted {path}"


ALL = ToolSet([echo, boom, hang, as_dict, unserialisable, chatty, nothing, exits, big, blob,
               counted, refuses, delete])


@pytest.fixture(autouse=True)
def _release_hanging() -> Iterator[None]:
    release.clear()
    yield
    release.set()


def one(call: ToolCall, d: Dispatcher | None = None) -> object:
    return (d or Dispatcher(ALL, ToolContext())).run([call])[0]


def test_plain_call() -> None:
    r = Dispatcher(ALL, ToolContext()).run([ToolCall("c1", "echo", {"text": "hi"})])[0]
    assert (r.call_id, r.name, r.content, r.error, r.truncated_tokens) == ("c1", "echo", "hi", None, 0)
    assert r.seconds >= 0


def test_unknown_tool_lists_tools_closest_first() -> None:
    from localagent.tools.builtin import workspace_tools  # real tool names
    from localagent.tools.workspace import Workspace

    ts = ToolSet(workspace_tools(Workspace(".")))
    r = Dispatcher(ts, ToolContext()).run([ToolCall("c", "read_fil", {})])[0]
    assert r.error is not None and r.error.kind == "unknown_tool"
    assert r.error.message == "unknown tool 'read_fil'; available tools: read_file, list_dir, search, find_files, calculate, write_file, edit_file"
    assert r.content == "error (unknown_tool): " + r.error.message
    r = Dispatcher(ts, ToolContext()).run([ToolCall("c", "list_dri", {})])[0]
    assert r.error is not None and r.error.message.endswith("available tools: list_dir, read_file, search, find_files, calculate, write_file, edit_file")


def test_validation_error_becomes_a_result() -> None:
    r = one(ToolCall("c", "counted", {"n": 50}))
    assert r.error.kind == "invalid_argument"  # type: ignore[attr-defined]
    assert r.content == "error (invalid_argument): argument 'n' must be <= 10, got 50"  # type: ignore[attr-defined]


def test_context_is_injected() -> None:
    ctx = ToolContext()
    r = Dispatcher(ALL, ctx).run([ToolCall("c", "counted", {"n": 4})])[0]
    assert r.content == "n=4" and ctx.state["seen"] == 4


def test_raising_tool_gives_type_and_message_not_a_traceback() -> None:
    r = one(ToolCall("c", "boom", {"text": "x"}))
    assert r.error.kind == "tool_exception"  # type: ignore[attr-defined]
    assert r.content == "error (tool_exception): 'boom' raised ValueError: bad input x"  # type: ignore[attr-defined]
    assert "Traceback" not in r.content  # type: ignore[attr-defined]
    assert "Traceback" in r.error.detail["traceback"]  # type: ignore[attr-defined]


def test_tool_raising_workspace_error_shows_its_info() -> None:
    r = one(ToolCall("c", "refuses", {"path": "a.txt"}))
    assert r.content == "error (not_found): path 'a.txt' not found"  # type: ignore[attr-defined]


def test_sys_exit_in_a_tool_does_not_end_the_agent() -> None:
    r = one(ToolCall("c", "exits", {}))
    assert r.error.kind == "tool_exception" and "SystemExit: 3" in r.content  # type: ignore[attr-defined]


def test_hanging_tool_times_out_fast(capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    d = Dispatcher(ALL, ToolContext())
    r = d.run([ToolCall("c", "hang", {}), ToolCall("d", "echo", {"text": "after"})])
    assert time.perf_counter() - start < 1.0
    assert r[0].error is not None and r[0].error.kind == "timeout"
    assert r[0].content == "error (timeout): 'hang' did not finish within 0.2 s and was abandoned"
    assert r[1].content == "after"
    release.set()
    time.sleep(0.05)
    print("main thread still prints")
    out = capsys.readouterr().out
    assert "late print" not in out and "main thread still prints" in out


def test_a_timed_out_tool_is_stopped_and_its_finally_blocks_run() -> None:
    went_on: list[str] = []
    cleaned = threading.Event()

    @tool(timeout=0.2)
    def holds_a_resource() -> str:
        """Wait, holding something it must give back."""
        try:
            release.wait(10)
            went_on.append("after the wait")
        finally:
            cleaned.set()
        return "late"

    r = Dispatcher(ToolSet([holds_a_resource]), ToolContext()).run([ToolCall("c", "holds_a_resource", {})])
    assert r[0].error is not None and r[0].error.kind == "timeout"
    release.set()
    assert cleaned.wait(5) and went_on == []


def test_a_tool_the_user_interrupts_is_stopped_not_left_running() -> None:
    # Ctrl-C while a tool runs: the tool must not go on (writing, say) behind the interrupted run.
    steps: list[int] = []

    @tool(timeout=30)
    def busy() -> str:
        """Work in small steps for a long time."""
        for i in range(3000):
            steps.append(i)
            time.sleep(0.01)
        return "done"

    threading.Timer(0.3, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt):
        Dispatcher(ToolSet([busy]), ToolContext()).run([ToolCall("c", "busy", {})])
    seen = len(steps)
    time.sleep(0.3)
    assert 0 < seen == len(steps) < 3000


def test_tools_that_finish_just_at_their_timeout_leave_no_stray_stop(capfd: pytest.CaptureFixture[str]) -> None:
    # A stress test of the edge (it cannot force the narrow window, only visit it often): a
    # stop sent as the tool returns must never surface in the dispatcher, in a later tool,
    # or in threading's own code (which would print a traceback).
    @tool(timeout=0.01)
    def spins(n: int) -> str:
        """Spin for about the timeout."""
        end = time.perf_counter() + 0.004 + (n % 7) * 0.002
        while time.perf_counter() < end:
            pass
        return "done"

    d = Dispatcher(ToolSet([spins, echo]), ToolContext())
    kinds = set()
    for i in range(150):
        a, b = d.run([ToolCall("a", "spins", {"n": i}), ToolCall("b", "echo", {"text": "next"})])
        kinds.add(a.error.kind if a.error else "ok")
        assert b.content == "next" and b.error is None
    end = time.monotonic() + 5
    while any(t.name.startswith("tool-") for t in threading.enumerate()) and time.monotonic() < end:
        time.sleep(0.01)
    assert "timeout" in kinds
    d.run([ToolCall("c", "echo", {"text": "last"})])  # no tool is left running: the streams go back
    assert not isinstance(sys.stdout, dispatch._Router) and not isinstance(sys.stderr, dispatch._Router)
    out, err = capfd.readouterr()
    assert "Traceback" not in err and "Exception" not in err, err


def test_several_calls_one_failing_keep_ids_and_order() -> None:
    calls = [
        ToolCall("a", "echo", {"text": "1"}),
        ToolCall("b", "boom", {"text": "2"}),
        ToolCall("c", "nope", {}),
        ToolCall("d", "echo", {"text": "4"}),
        ToolCall("e", "echo", {"txt": "5"}),
    ]
    results = Dispatcher(ALL, ToolContext()).run(calls)
    assert [r.call_id for r in results] == ["a", "b", "c", "d", "e"]
    assert [r.is_error for r in results] == [False, True, True, False, True]
    assert [r.content for r in results if not r.is_error] == ["1", "4"]


def test_structured_and_empty_results() -> None:
    r = one(ToolCall("c", "as_dict", {"n": 2}))
    assert json.loads(r.content) == {"n": 2, "items": [1, "é"]}  # type: ignore[attr-defined]
    assert one(ToolCall("c", "nothing", {})).content == "ok"  # type: ignore[attr-defined]


def test_unserialisable_result() -> None:
    r = one(ToolCall("c", "unserialisable", {}))
    assert r.error.kind == "tool_exception"  # type: ignore[attr-defined]
    assert r.error.message == "result is not serialisable: set"  # type: ignore[attr-defined]


def test_printing_tool_is_captured(capsys: pytest.CaptureFixture[str]) -> None:
    before = sys.stdout
    r = one(ToolCall("c", "chatty", {"n": 7}))
    assert r.content == "done\n[printed output]\nto stdout 7\nto stderr\n"  # type: ignore[attr-defined]
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert sys.stdout is before  # streams are put back


def test_megabyte_result_is_truncated_quickly_with_an_offset_hint() -> None:
    d = Dispatcher(ALL, ToolContext(), max_result_tokens=500)
    start = time.perf_counter()
    r = d.run([ToolCall("c", "big", {"offset": 10})])[0]
    assert time.perf_counter() - start < 1.0
    assert estimate_tokens(r.content) <= 500
    body, marker = r.content.rsplit("\n", 1)
    last_line = int(body.splitlines()[-1].split()[1])
    assert marker.startswith("[... truncated: ")
    assert marker.endswith(f"; call big with offset={last_line + 1} to read more]")
    assert r.truncated_tokens > 0 and f"{r.truncated_tokens} of " in marker


def test_truncation_without_offset_is_generic() -> None:
    r = Dispatcher(ALL, ToolContext(), max_result_tokens=100).run([ToolCall("c", "blob", {})])[0]
    assert r.content.endswith(f"[... truncated: {r.truncated_tokens} of 250000 tokens cut]")
    assert estimate_tokens(r.content) <= 100


def test_custom_token_counter() -> None:
    words = lambda s: len(s.split())  # noqa: E731
    r = Dispatcher(ALL, ToolContext(), max_result_tokens=20, count_tokens=words).run(
        [ToolCall("c", "echo", {"text": " ".join(["w"] * 100)})]
    )[0]
    assert words(r.content) <= 20 and r.truncated_tokens > 0


def test_irreversible_tool_denied_without_approver() -> None:
    r = one(ToolCall("c", "delete", {"path": "a"}))
    assert r.error.kind == "denied"  # type: ignore[attr-defined]
    assert "denied: 'delete' requires human approval" in r.content  # type: ignore[attr-defined]


def test_irreversible_tool_with_approver() -> None:
    seen: list[tuple[Tool, ToolCall]] = []

    def approver(t: Tool, call: ToolCall) -> tuple[bool, str]:
        seen.append((t, call))
        return call.arguments["path"] == "ok", "not that one"

    d = Dispatcher(ALL, ToolContext(), approver=approver)
    yes, no = d.run([ToolCall("1", "delete", {"path": "ok"}), ToolCall("2", "delete", {"path": "x"})])
    assert yes.content == "deleted ok"
    assert no.content == "error (denied): denied: the user refused 'delete': not that one"
    assert [c.id for _, c in seen] == ["1", "2"]
    assert d.retry_exhausted == []  # a person's refusal is not the model's failure


def test_invalid_calls_never_reach_the_approver() -> None:
    d = Dispatcher(ALL, ToolContext(), approver=lambda t, c: pytest.fail("asked"))
    assert d.run([ToolCall("1", "delete", {})])[0].error.kind == "invalid_argument"  # type: ignore[union-attr]


def test_retry_accounting() -> None:
    d = Dispatcher(ALL, ToolContext())
    bad = ToolCall("x", "counted", {"n": 99})
    for _ in range(3):  # max_retries=3: three failures are still retried
        assert "retry limit" not in d.run([bad])[0].content
    assert d.retry_exhausted == []
    r = d.run([bad])[0]
    assert r.content.endswith("(retry limit reached for 'counted')")
    assert d.retry_exhausted == ["counted"]
    d.run([ToolCall("y", "counted", {"n": 1})])  # a success resets the count
    assert d.retry_exhausted == [] and d.failures == {}


def test_retry_counts_are_per_tool() -> None:
    d = Dispatcher(ALL, ToolContext())
    for _ in range(4):
        d.run([ToolCall("a", "boom", {"text": ""}), ToolCall("b", "echo", {"text": ""})])
    assert d.retry_exhausted == ["boom"]


# --- the pure truncation function --------------------------------------------------------


def test_truncate_basics() -> None:
    assert truncate("abcd", 10) == ("abcd", 0)
    assert truncate("a" * 40, 5) == ("a" * 20, 5)
    assert truncate("abc", 0) == ("", 1)


def test_truncate_is_fast_on_a_megabyte() -> None:
    text = "word " * 400_000
    start = time.perf_counter()
    head, cut = truncate(text, 1000)
    assert time.perf_counter() - start < 0.1
    assert estimate_tokens(head) == 1000 and cut == estimate_tokens(text) - 1000


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=0, max_value=100))
def test_truncate_keeps_the_longest_fitting_head(text: str, limit: int) -> None:
    words = lambda s: len(s.split())  # noqa: E731
    head, cut = truncate(text, limit, words)
    assert text.startswith(head)
    assert words(head) <= limit
    assert cut == words(text) - words(head)
    if head != text and limit > 0:  # longest: one more character would not fit
        assert words(text[: len(head) + 1]) > limit


# ── no host paths to the model ──


def _refuse(name: str, where: str) -> Callable[..., object]:
    def refuse(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied", where)

    return refuse


@pytest.mark.parametrize("where", ["inside", "outside"])
@pytest.mark.parametrize(
    "function",  # every os call the workspace tools make, and the builtin open (is_text, unreadable)
    ["scandir", "mkdir", "open", "stat", "lstat", "replace", "listdir", "fstat", "fchmod", "unlink", "fdopen",
     "close", "read", "write", "builtins.open"],
)
def test_os_errors_reach_the_model_without_host_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, function: str, where: str
) -> None:
    from toolcalls import dispatcher

    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\n")
    d = dispatcher(Workspace(root))
    path = str(root / "private") if where == "inside" else "/home/u/.ssh/id_rsa"
    calls = [
        ToolCall("1", "list_dir", {"path": "src"}),
        ToolCall("2", "read_file", {"path": "src/a.py"}),
        ToolCall("3", "search", {"pattern": "x"}),
        ToolCall("4", "write_file", {"path": "src/new/b.py", "content": "y\n"}),
        ToolCall("5", "edit_file", {"path": "src/a.py", "old": "1", "new": "2"}),
        ToolCall("6", "run_command", {"command": "true"}),
    ]
    module, name = (builtins, "open") if function == "builtins.open" else (os, function)
    monkeypatch.setattr(module, name, _refuse(function, path))
    results = d.run(calls)
    monkeypatch.undo()
    for r in results:
        assert str(tmp_path) not in r.content and "/home/u" not in r.content, (function, r.content)
    failed = [r.content for r in results if r.error is not None and r.error.kind == "tool_exception"]
    if where == "inside":
        assert all("'private'" in c for c in failed if "Permission denied" in c), failed


def test_absolute_paths_in_other_exceptions_are_made_relative_or_hidden(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()

    @tool
    def leaky(which: str) -> str:
        """Raise with a path in the message."""
        raise ValueError(f"cannot parse {root}/src/cfg.toml near {which}; see https://x.org/a/b")

    d = Dispatcher(ToolSet([leaky]), ToolContext(Workspace(root)))
    r = d.run([ToolCall("c", "leaky", {"which": "/etc/ssl/certs"})])[0]
    assert r.content == (
        "error (tool_exception): 'leaky' raised ValueError: cannot parse src/cfg.toml near "
        "a path outside the workspace; see https://x.org/a/b"
    )


def test_a_root_whose_path_has_spaces_is_hidden_whole(tmp_path: Path) -> None:
    # '/Users/Jane Doe/My Projects/app': the paths of most people's folders on macOS and Windows.
    root = tmp_path / "Jane Doe" / "My Projects"
    root.mkdir(parents=True)

    @tool
    def leaky() -> str:
        """Raise with the root's path in the message."""
        raise ValueError(f"cannot parse {root}/src/my cfg.toml (the project is {root})")

    d = Dispatcher(ToolSet([leaky]), ToolContext(Workspace(root)))
    r = d.run([ToolCall("c", "leaky", {})])[0]
    assert r.content == "error (tool_exception): 'leaky' raised ValueError: cannot parse src/my cfg.toml (the project is .)"
