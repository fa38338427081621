"""The one sanitiser for the terminal, and the live printer that uses it on every piece of text
that came from the model or a file."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from localagent.cli.run import LivePrinter
from localagent.errors import ToolErrorInfo
from localagent.messages import ToolCall, ToolResult
from localagent.sanitize import for_terminal, printable

NASTY = "a\x1b[8mb\rc\x07d\x9be\u202ef\u200bg\u2028h"


def test_printable_shows_every_control_and_format_character_visibly() -> None:
    assert printable(NASTY) == "a\\x1b[8mb\\x0dc\\x07d\\x9be\\u202ef\\u200bg\\u2028h"
    assert printable("tab\tnew\nline é ☃") == "tab\tnew\nline é ☃"  # text stays text


def test_for_terminal_is_exact_on_a_pipe() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert for_terminal(NASTY, io.StringIO()) == NASTY
    assert for_terminal(NASTY, Tty()) == printable(NASTY)


def test_the_live_printer_never_writes_a_control_character() -> None:
    out = io.StringIO()
    p = LivePrinter(out)
    call = ToolCall("c", "read_file", {"path": "a\x7f\u202e.txt"})
    p.text("streamed " + NASTY)
    p.call(call)
    p.result(call, ToolResult(call_id="c", name="read_file", content="file says " + NASTY))
    err = ToolErrorInfo(kind="not_found", message="x")
    p.result(call, ToolResult(call_id="c", name="read_file", content="error " + NASTY, error=err))
    p.notice("notice " + NASTY)
    shown = out.getvalue()
    assert not [ch for ch in shown if ch not in "\n" and (ord(ch) < 32 or 0x7f <= ord(ch) < 0xa0)], repr(shown)
    assert "\u202e" not in shown and "\u200b" not in shown and "\u2028" not in shown
    assert "a\\x1b[8mb" in shown and "a\\x7f\\u202e.txt" in shown


def test_trace_show_and_stats_on_a_terminal_show_no_control_character(tmp_path: Path) -> None:
    # A trace holds the model's text, file contents and the tool names the model made up.
    from localagent import Agent
    from localagent.backends.fake import FakeBackend, call_text
    from localagent.tools.builtin import workspace_tools
    from localagent.tools.workspace import Workspace
    from terminal import Terminal

    (tmp_path / "evil.txt").write_text("file " + NASTY + "\n")
    fake = FakeBackend.scripted([
        call_text("read_file", path="evil.txt"), call_text("x\x1b[8my", a=1), "answer " + NASTY,
    ])
    trace = tmp_path / "run.jsonl"
    Agent(fake, workspace_tools(Workspace(tmp_path), write=False), root=tmp_path).run("Task " + NASTY, trace=trace)
    cli = [sys.executable, "-c", "from localagent.cli import main; main()"]
    for command in (["trace", "show", str(trace)], ["stats", str(trace)]):
        term = Terminal(cli + command, dict(os.environ, TERM="dumb"))
        assert term.wait(60) == 0, term.text()
        screen = term.text()
        assert not [ch for ch in screen if ch not in "\n" and (ord(ch) < 32 or 0x7f <= ord(ch) < 0xa0)], repr(screen)
        assert "\u202e" not in screen and "\u2028" not in screen


def test_eval_on_a_terminal_shows_no_control_character(tmp_path: Path) -> None:
    # A case's line quotes what the model called: in free mode, a tool name it made up.
    import json

    from terminal import Terminal

    cases = tmp_path / "cases.jsonl"
    cases.write_text(Path(__file__).parent.parent.joinpath("evals", "cases.jsonl").read_text().splitlines()[0] + "\n")
    env = dict(os.environ, TERM="dumb", FAKE_REPLIES=json.dumps([["x\x1b[8my\u202e", {"city": "Lisbon"}]]))
    fake_cli = str(Path(__file__).with_name("fake_cli.py"))
    term = Terminal([sys.executable, fake_cli, "eval", str(cases), "--mode", "free"], env)
    assert term.wait(60) == 0, term.text()
    screen = term.text()
    assert not [ch for ch in screen if ch not in "\n" and (ord(ch) < 32 or 0x7f <= ord(ch) < 0xa0)], repr(screen)
    assert "\u202e" not in screen and "called 'x\\x1b[8my\\u202e'" in screen
