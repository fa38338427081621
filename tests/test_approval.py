"""Approval of irreversible calls: the approvers, what a person is shown, and the prompt driven
through a real terminal (a pty), both in-process and as ``localagent run`` end to end."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from localagent import approval
from localagent.approval import (
    NO_TERMINAL,
    PreviewUnavailable,
    TerminalApprover,
    allow_all,
    allow_list,
    choose_approver,
    deny_all,
    describe_call,
    printable,
)
from localagent.tools.builtin import workspace_tools
from localagent.errors import ConfigError
from localagent.messages import ToolCall
from localagent.stops import EXIT_CODES, StopReason
from localagent.tools import Tool, ToolSet, tool
from localagent.tools.workspace import Workspace
from fake_cli import FAKE_CLI, fake_env
from terminal import Terminal


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    return Workspace(tmp_path)


@pytest.fixture
def tools(ws: Workspace) -> ToolSet:
    return ToolSet(workspace_tools(ws, write=True, allow_commands=True))


def tool_of(tools: ToolSet, name: str) -> Tool:
    t = tools.get(name)
    assert t is not None
    return t


WRITE = ToolCall("c1", "write_file", {"path": "hello.txt", "content": "hi\n"})
EDIT = ToolCall("c2", "edit_file", {"path": "notes.txt", "old": "two", "new": "TWO"})


# ── approvers ──


def test_deny_all_and_allow_all(tools: ToolSet) -> None:
    t = tool_of(tools, "write_file")
    assert deny_all(t, WRITE) == (False, NO_TERMINAL)
    assert allow_all(t, WRITE) == (True, "")


def test_allow_list_approves_only_the_named_tools(tools: ToolSet) -> None:
    approve = allow_list(["write_file"])
    assert approve(tool_of(tools, "write_file"), WRITE) == (True, "")
    assert approve(tool_of(tools, "edit_file"), EDIT) == (False, NO_TERMINAL)
    asked: list[str] = []
    ask = lambda t, c: (asked.append(t.name), (False, "no"))[1]  # noqa: E731
    assert allow_list(["write_file"], ask)(tool_of(tools, "edit_file"), EDIT) == (False, "no")
    assert asked == ["edit_file"]


def test_choose_approver(tools: ToolSet) -> None:
    ask = lambda t, c: (False, "asked")  # noqa: E731
    assert choose_approver(tools, yes=True, ask=ask) is allow_all
    assert choose_approver(tools, ask=ask) is ask
    mixed = choose_approver(tools, allow=["edit_file"], ask=ask)
    assert mixed(tool_of(tools, "edit_file"), EDIT) == (True, "")
    assert mixed(tool_of(tools, "write_file"), WRITE) == (False, "asked")
    with pytest.raises(ConfigError, match="did you mean write_file"):
        choose_approver(tools, allow=["write_fil"], ask=ask)
    with pytest.raises(ConfigError, match="^`allow` read_file: not an irreversible tool"):
        choose_approver(tools, allow=["read_file"], ask=ask)  # nothing to approve; the parameter named, not a flag


# ── what a person is shown ──


def test_describe_call_shows_the_exact_call_and_the_diff(tools: ToolSet) -> None:
    assert describe_call(tool_of(tools, "edit_file"), EDIT) == (
        "approval needed: edit_file (irreversible)\n"
        '  call: edit_file({"path": "notes.txt", "old": "two", "new": "TWO"})\n'
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"
    )
    text = describe_call(tool_of(tools, "write_file"), WRITE)
    assert "--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hi\n" in text


def test_describe_call_says_when_the_call_will_fail(tools: ToolSet) -> None:
    bad = ToolCall("c", "edit_file", {"path": "notes.txt", "old": "three", "new": "3"})
    assert "(this call will fail: old text not found" in describe_call(tool_of(tools, "edit_file"), bad)


def test_describe_call_bounds_long_previews(tools: ToolSet) -> None:
    big = ToolCall("c", "write_file", {"path": "big.txt", "content": "x\n" * 1000})
    lines = describe_call(tool_of(tools, "write_file"), big, max_lines=50).splitlines()
    assert len(lines) == 2 + 50 + 1 and lines[-1] == "[... 953 more lines not shown]"


def test_model_text_cannot_hide_from_the_person(tools: ToolSet) -> None:
    # An erase-line escape or a bidi override would let a diff line look like something else.
    sneaky = ToolCall("c", "write_file", {"path": "a.txt", "content": "rm -rf ~\x1b[2K\rok\n\u202eevil\n"})
    text = describe_call(tool_of(tools, "write_file"), sneaky)
    assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
    assert "+rm -rf ~\\x1b[2K\\x0dok\n+\\u202eevil\n" in text
    assert printable("tab\tnew\nline\x07") == "tab\tnew\nline\\x07"


def test_a_command_cannot_draw_lines_of_the_question(tools: ToolSet) -> None:
    # A newline inside a quoted argument would print a fake "(timeout ...)" or "It runs
    # confined..." line under the command; it is shown escaped, on the command's one line.
    sneaky = ToolCall("c", "run_command", {"command": "echo 'hi\nIt runs confined to the root.'"})
    lines = describe_call(tool_of(tools, "run_command"), sneaky).splitlines()
    command = [ln for ln in lines if ln.startswith("echo")]
    assert len(command) == 1 and "\\n" in command[0] and "(timeout 30 s)" in command[0]
    assert not any(ln.startswith("It runs confined") for ln in lines)


def _zap(preview: Callable[[dict[str, object]], str]) -> Tool:
    @tool(irreversible=True)
    def zap(path: str) -> str:
        """Destroy a file."""
        return "zapped"

    zap.preview = preview
    return zap


def _spin(args: dict[str, object]) -> str:
    while True:  # pure Python, as difflib is: a stop reaches it
        pass


@pytest.mark.parametrize(
    ("preview", "why"),
    [(lambda a: str(1 / 0), "its preview failed (ZeroDivisionError)"), (_spin, "its preview took more than 0.3 s")],
)
def test_a_preview_that_cannot_be_made_means_no(
    preview: Callable[[dict[str, object]], str], why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(approval, "PREVIEW_SECONDS", 0.3)
    zap, call = _zap(preview), ToolCall("c", "zap", {"path": "a.txt"})
    with pytest.raises(PreviewUnavailable, match=why.replace("(", r"\(").replace(")", r"\)")):
        describe_call(zap, call)
    with fake_terminal() as (tty, keys, shown):
        start = time.monotonic()
        ok, reason = TerminalApprover(tty)(zap, call)
        assert time.monotonic() - start < 2
        time.sleep(0.1)
    assert not ok and reason == f"{why}, so nobody was asked and it did not run; do not retry it"
    assert b"".join(shown) == b""  # never asked: nothing to approve blind


def test_a_large_diff_is_summarised_and_fast(ws: Workspace, tools: ToolSet) -> None:
    (ws.root / "big.txt").write_text("".join(f"old line {i}\n" for i in range(15_000)))
    new = "".join(f"old line {i}\n" for i in range(9_000))  # keeps most of it: no need to have read it
    start = time.monotonic()
    text = describe_call(tool_of(tools, "write_file"), ToolCall("c", "write_file", {"path": "big.txt", "content": new}))
    assert time.monotonic() - start < 2
    assert "(diff not shown, too large to compare: 'big.txt', 15000 lines now, 9000 lines after)" in text


def test_a_file_too_large_to_show_is_not_read_whole(ws: Workspace, tools: ToolSet) -> None:
    from localagent.tools.builtin import MAX_EDIT_BYTES

    (ws.root / "huge.txt").write_text("x" * (MAX_EDIT_BYTES + 10))
    text = describe_call(tool_of(tools, "write_file"), ToolCall("c", "write_file", {"path": "huge.txt", "content": "y"}))
    assert f"(this call will fail: 'huge.txt' is over {MAX_EDIT_BYTES} bytes" in text


# ── the terminal approver, in-process on a pty ──


@contextmanager
def fake_terminal() -> Iterator[tuple[str, int, list[bytes]]]:
    """A pty: (the terminal's path, the keyboard end, what the terminal showed)."""
    master, slave = os.openpty()
    shown: list[bytes] = []
    stop = threading.Event()

    def drain() -> None:  # read what is shown, so a long prompt never blocks on a full pty
        while not stop.is_set():
            if select.select([master], [], [], 0.05)[0]:
                try:
                    shown.append(os.read(master, 65536))
                except OSError:
                    return

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    try:
        yield os.ttyname(slave), master, shown
    finally:
        stop.set()
        t.join()
        os.close(master)
        os.close(slave)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        (b"y\n", (True, "")),
        (b"YES\n", (True, "")),
        (b"\n", (False, "do not retry it; answer with what you have, or ask the user")),
        (b"n\n", (False, "do not retry it; answer with what you have, or ask the user")),
        (b"no, write to notes.md instead\n", (False, "they said: no, write to notes.md instead")),
        (b"\x04", (False, NO_TERMINAL)),  # Ctrl-D: end of input
    ],
)
def test_terminal_approver_answers(tools: ToolSet, typed: bytes, expected: tuple[bool, str]) -> None:
    with fake_terminal() as (tty, keys, shown), answering(keys, shown, [typed]):
        assert TerminalApprover(tty)(tool_of(tools, "write_file"), WRITE) == expected
        time.sleep(0.1)
    screen = b"".join(shown).decode()
    assert "approval needed: write_file" in screen and "+hi" in screen
    assert "Allow it? [y]es, [N]o, [a]lways for this tool: " in screen


def test_terminal_approver_always_for_one_tool(tools: ToolSet) -> None:
    with fake_terminal() as (tty, keys, shown), answering(keys, shown, [b"a\n", b"n\n"]):
        approver = TerminalApprover(tty)
        assert approver(tool_of(tools, "write_file"), WRITE) == (True, "")
        assert approver(tool_of(tools, "write_file"), WRITE) == (True, "")  # not asked again
        assert approver(tool_of(tools, "edit_file"), EDIT)[0] is False  # other tools still asked


def test_keys_typed_before_the_question_are_no_answer(tools: ToolSet) -> None:
    with fake_terminal() as (tty, keys, shown), answering(keys, shown, [b"n\n"]):
        os.write(keys, b"y\n")  # typed ahead, before the prompt was shown
        assert TerminalApprover(tty)(tool_of(tools, "write_file"), WRITE)[0] is False


def test_the_question_starts_on_a_clean_line_with_attributes_reset(tools: ToolSet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    with fake_terminal() as (tty, keys, shown), answering(keys, shown, [b"n\n"]):
        TerminalApprover(tty)(tool_of(tools, "write_file"), WRITE)
        time.sleep(0.1)
    assert b"".join(shown).startswith(b"\r\x1b[0m\r\napproval needed: write_file")  # the pty adds a \r to \n


@contextmanager
def answering(keys: int, shown: list[bytes], answers: list[bytes]) -> Iterator[None]:
    """Type each of ``answers`` once its question is on the screen, as a person would."""
    stop = threading.Event()

    def answer() -> None:
        for i, typed in enumerate(answers, 1):
            while b"".join(shown).count(b"Allow it?") < i:
                if stop.wait(0.02):
                    return
            os.write(keys, typed)

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


def test_no_terminal_means_deny(tools: ToolSet, tmp_path: Path) -> None:
    assert TerminalApprover(str(tmp_path / "no-such-tty"))(tool_of(tools, "write_file"), WRITE) == (False, NO_TERMINAL)
    plain = tmp_path / "not-a-tty"
    plain.write_text("y\n")  # a file that says yes is not a person
    assert TerminalApprover(str(plain))(tool_of(tools, "write_file"), WRITE) == (False, NO_TERMINAL)


# ── `localagent run` through a real terminal, on a scripted model ──

def _fake_run(root: Path, *flags: str) -> list[str]:
    return [*FAKE_CLI, "run", "Write hi to hello.txt", "--root", str(root), *flags]


WRITE_THEN_ANSWER: list[object] = [["write_file", {"path": "hello.txt", "content": "hi\n"}], "Done."]


def _trace_results(tmp_path: Path) -> list[dict[str, object]]:
    files = list((tmp_path / "traces").glob("*.jsonl"))
    assert len(files) == 1
    recs = [json.loads(line) for line in files[0].read_text().splitlines()]
    return [r for rec in recs if rec["type"] == "step" for r in rec["results"]]


def test_cli_asks_on_the_terminal_and_approve_writes(ws: Workspace, tmp_path: Path) -> None:
    term = Terminal(_fake_run(ws.root), fake_env(tmp_path, WRITE_THEN_ANSWER))
    term.expect("Allow it? [y]es, [N]o, [a]lways for this tool: ", timeout=60)
    shown = term.text()
    assert 'call: write_file({"path": "hello.txt", "content": "hi\\n"})' in shown
    assert "--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hi\n" in shown
    assert not (ws.root / "hello.txt").exists()  # nothing happens before the answer
    term.type("y\r")
    assert term.wait(60) == 0, term.text()
    assert (ws.root / "hello.txt").read_text() == "hi\n"
    assert "created 'hello.txt'" in term.text()
    assert [r["content"] for r in _trace_results(tmp_path)] == ["created 'hello.txt' (1 line now)"]


def test_cli_asks_on_the_terminal_and_deny_is_a_result(ws: Workspace, tmp_path: Path) -> None:
    term = Terminal(_fake_run(ws.root), fake_env(tmp_path, WRITE_THEN_ANSWER))
    term.expect("Allow it?", timeout=60)
    term.type("n\r")
    assert term.wait(60) == 0, term.text()  # the run goes on and ends with an answer
    assert not (ws.root / "hello.txt").exists()
    assert "denied: the user refused 'write_file'" in term.text() and "Done." in term.text()
    [result] = _trace_results(tmp_path)
    assert result["error"]["kind"] == "denied"  # type: ignore[index]


def test_cli_escape_codes_and_keys_typed_ahead_do_not_work(ws: Workspace, tmp_path: Path) -> None:
    # A file and the model's own text try to conceal the diff and draw a fake one; a 'y' typed
    # before the question (by a person, or sent by a program) tries to answer it.
    (ws.root / "evil.txt").write_text("ok\x1b[2J\x1b[8mhidden\r+fake line\n")
    replies: list[object] = [
        ["read_file", {"path": "evil.txt"}],
        ["write_file", {"path": "hello.txt", "content": "\x1b[8mrm -rf ~\x1b[0m\r+hi\n"}],
        "Done.\x1b[8m",
    ]
    term = Terminal(_fake_run(ws.root), fake_env(tmp_path, replies))
    term.type("y\r")
    term.expect("Allow it?", timeout=60)
    time.sleep(0.5)  # had the early 'y' been taken, the write would be done by now
    assert not (ws.root / "hello.txt").exists()
    term.type("n\r")
    assert term.wait(60) == 0, term.text()
    assert not (ws.root / "hello.txt").exists()
    screen = term.text()
    assert "\x1b" not in screen, screen  # no escape from the file, the call or the answer reached the terminal
    assert "← ok\\x1b[2J\\x1b[8mhidden +fake line" in screen  # the result preview, visibly (on one line)
    assert "+\\x1b[8mrm -rf ~\\x1b[0m\\x0d+hi" in screen  # the diff, visibly
    assert "Done.\\x1b[8m" in screen  # the answer


def test_cli_passes_a_typed_reason_to_the_model(ws: Workspace, tmp_path: Path) -> None:
    term = Terminal(_fake_run(ws.root), fake_env(tmp_path, WRITE_THEN_ANSWER))
    term.expect("Allow it?", timeout=60)
    term.type("use notes.txt instead\r")
    assert term.wait(60) == 0, term.text()
    [result] = _trace_results(tmp_path)
    assert result["content"] == "error (denied): denied: the user refused 'write_file': they said: use notes.txt instead"


def test_cli_ctrl_d_at_the_prompt_denies(ws: Workspace, tmp_path: Path) -> None:
    term = Terminal(_fake_run(ws.root), fake_env(tmp_path, WRITE_THEN_ANSWER))
    term.expect("Allow it?", timeout=60)
    term.type("\x04")
    assert term.wait(60) == 0, term.text()
    assert not (ws.root / "hello.txt").exists()


def _no_terminal(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # A new session has no controlling terminal: /dev/tty cannot be opened, as under cron or CI.
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          start_new_session=True)


def test_cli_without_a_terminal_denies_and_tells_the_model(ws: Workspace, tmp_path: Path) -> None:
    p = _no_terminal(_fake_run(ws.root, "--json"), fake_env(tmp_path, WRITE_THEN_ANSWER))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["answer"] == "Done."
    assert not (ws.root / "hello.txt").exists()
    [result] = _trace_results(tmp_path)
    assert result["content"] == f"error (denied): denied: the user refused 'write_file': {NO_TERMINAL}"


def test_cli_yes_and_allow_approve_in_advance(ws: Workspace, tmp_path: Path) -> None:
    p = _no_terminal(_fake_run(ws.root, "--yes"), fake_env(tmp_path / "a", WRITE_THEN_ANSWER))
    assert p.returncode == 0, p.stderr
    assert (ws.root / "hello.txt").read_text() == "hi\n"
    (ws.root / "hello.txt").unlink()

    replies: list[object] = [  # the edit first: once a change is made, the run answers
        ["edit_file", {"path": "notes.txt", "old": "two", "new": "2"}],
        ["write_file", {"path": "hello.txt", "content": "hi\n"}],
        "Done.",
    ]
    p = _no_terminal(_fake_run(ws.root, "--allow", "write_file"), fake_env(tmp_path / "b", replies))
    assert p.returncode == 0, p.stderr
    assert (ws.root / "hello.txt").read_text() == "hi\n"  # allowed
    assert (ws.root / "notes.txt").read_text() == "one\ntwo\n"  # not allowed, nobody to ask
    assert [r["error"] and r["error"]["kind"] for r in _trace_results(tmp_path / "b")] == ["denied", None]  # type: ignore[index]


def test_cli_run_command_needs_the_flag_and_approval(ws: Workspace, tmp_path: Path) -> None:
    replies: list[object] = [["run_command", {"command": "touch made-by-command"}], "Done."]
    p = _no_terminal(_fake_run(ws.root), fake_env(tmp_path / "a", replies))
    assert p.returncode == 0, p.stderr
    [r] = _trace_results(tmp_path / "a")
    assert r["error"]["kind"] == "unknown_tool"  # type: ignore[index]
    p = _no_terminal(_fake_run(ws.root, "--allow-commands"), fake_env(tmp_path / "b", replies))
    [r] = _trace_results(tmp_path / "b")
    assert r["error"]["kind"] == "denied"  # type: ignore[index]
    assert not (ws.root / "made-by-command").exists()
    p = _no_terminal(_fake_run(ws.root, "--allow-commands", "--allow", "run_command"), fake_env(tmp_path / "c", replies))
    assert (ws.root / "made-by-command").exists()


TOOLS_FILE = '''
from pathlib import Path
from localagent import tool

@tool
def stamp(where: str) -> str:
    """Make a file (says nothing of being irreversible)."""
    Path(where).write_text("stamped")
    return "stamped"

@tool(irreversible=False)
def shout(text: str) -> str:
    """Upper-case a text (says it is harmless)."""
    return text.upper()
'''


def test_cli_a_tools_file_tool_that_says_nothing_is_approved_like_a_write(ws: Workspace, tmp_path: Path) -> None:
    tools = tmp_path / "mytools.py"
    tools.write_text(TOOLS_FILE)
    target = str(tmp_path / "stamped.txt")
    replies: list[object] = [["stamp", {"where": target}], ["shout", {"text": "hi"}], "Done."]
    p = _no_terminal(_fake_run(ws.root, "--tools", str(tools)), fake_env(tmp_path / "a", replies))
    assert p.returncode == 0, p.stderr
    assert not Path(target).exists()  # nobody to ask: it never ran
    stamp, shout = _trace_results(tmp_path / "a")
    assert stamp["error"]["kind"] == "denied" and shout["content"] == "HI"  # type: ignore[index]
    p = _no_terminal(_fake_run(ws.root, "--tools", str(tools), "--allow", "stamp"), fake_env(tmp_path / "b", replies))
    assert p.returncode == 0, p.stderr
    assert Path(target).read_text() == "stamped"  # the user allowed it
    p = _no_terminal(_fake_run(ws.root, "--tools", str(tools), "--allow", "shout"), fake_env(tmp_path / "c", replies))
    assert p.returncode == 2 and "not an irreversible tool" in p.stderr


def test_cli_allow_of_an_unknown_tool_is_a_user_error(ws: Workspace, tmp_path: Path) -> None:
    p = _no_terminal(_fake_run(ws.root, "--allow", "run_command"), fake_env(tmp_path, WRITE_THEN_ANSWER))
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1].startswith("localagent: error: --allow run_command: not an irreversible tool")
    assert "Traceback" not in p.stderr


# ── the real model, through a real terminal ──


@pytest.mark.real
def test_real_model_write_is_asked_on_the_terminal_and_approved(workspace: Path, tmp_path: Path) -> None:
    task = "Create a new file named hello.txt whose content is the word hi."
    argv = [sys.executable, "-c", "from localagent.cli import main; main()", "run", task, "--root", str(workspace)]
    term = Terminal(argv, fake_env(tmp_path))
    term.expect("Allow it? [y]es, [N]o, [a]lways for this tool: ", timeout=600)
    assert "approval needed: write_file" in term.text() and "+++ b/hello.txt" in term.text()
    assert not (workspace / "hello.txt").exists()
    term.type("y\r")
    term.answer_until_exit("n\r", timeout=600)  # any later call is refused
    assert "hi" in (workspace / "hello.txt").read_text().lower(), term.text()


@pytest.mark.real
def test_real_model_write_is_asked_on_the_terminal_and_denied(workspace: Path, tmp_path: Path) -> None:
    def files() -> dict[Path, bytes]:  # the workspace, less the traces the run writes into it
        return {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file() and "traces" not in p.parts}

    before = files()
    task = "Create a new file named hello.txt whose content is the word hi."
    argv = [sys.executable, "-c", "from localagent.cli import main; main()", "run", task, "--root", str(workspace),
            "--max-steps", "4"]
    term = Terminal(argv, fake_env(tmp_path))
    term.expect("Allow it? [y]es, [N]o, [a]lways for this tool: ", timeout=600)
    assert "approval needed: write_file" in term.text() and "+++ b/hello.txt" in term.text()
    term.type("n\r")
    # The refusal is shown as the call's result, live, before the model's next turn.
    term.expect("✗ error (denied): denied: the user refused 'write_file'", timeout=60)
    code = term.answer_until_exit("n\r", timeout=600)  # a retry is refused too
    screen = term.text()
    assert "Traceback" not in screen
    assert not (workspace / "hello.txt").exists()
    assert files() == before  # nothing changed
    # The run ends with an answer, or stops for a stated reason; the summary line says which.
    files = list((tmp_path / "traces").glob("*.jsonl"))
    records = [json.loads(line) for line in files[0].read_text().splitlines()]
    end = records[-1]
    assert end["type"] == "run_end" and code == EXIT_CODES[StopReason(end["stop_reason"])], screen
    assert end["stop_reason"] == "answered" or end["stop_reason"] == "max_steps" or end["stop_reason"].startswith("no_progress")
    assert f"· {end['stop_reason']}] trace:" in screen.strip().splitlines()[-1]
    # The model was told: the refusal is the call's result, and the model had a turn after it.
    steps = [r for r in records if r["type"] == "step"]
    first = steps[0]["results"][0]
    assert first["error"]["kind"] == "denied"
    assert first["content"].startswith("error (denied): denied: the user refused 'write_file'")
    assert len(steps) >= 2


# Main thread blocks SIGINT, so the kernel hands Ctrl-C to the other thread: a blocking read in
# the main thread would never see it; the question's read must still end with KeyboardInterrupt.
_ASK_WITH_A_THREAD = """
import os, signal, sys, threading, time
from localagent.approval import _read_line
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
fd = os.open("/dev/tty", os.O_RDWR)
try:  # "asking" inside the try: a Ctrl-C that comes before the read is caught the same way
    print("asking", flush=True)
    _read_line(fd)
except KeyboardInterrupt:
    sys.exit(130)
sys.exit(1)
"""


def test_ctrl_c_reaches_the_question_when_another_thread_takes_the_signal() -> None:
    term = Terminal([sys.executable, "-c", _ASK_WITH_A_THREAD], dict(os.environ))
    term.expect("asking", timeout=30)
    term.ctrl_c()
    assert term.wait(10) == 130, term.text()
