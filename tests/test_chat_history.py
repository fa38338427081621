"""``chat`` at a terminal: line editing and a history kept across chats (readline)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fake_cli import FAKE_CLI, fake_env
from terminal import Terminal

UP = "\x1b[A"


def _chat(tmp_path: Path, root: Path, saved: Path, term: str = "xterm") -> Terminal:
    env = fake_env(tmp_path, ["First answer.", "Second answer."], TERM=term, XDG_STATE_HOME=str(tmp_path / "state"))
    return Terminal([*FAKE_CLI, "chat", "--root", str(root), "--save", str(saved)], env)


def _users(saved: Path) -> list[str]:
    return [m["content"].split("\n\n")[-1] for m in json.loads(saved.read_text()) if m["role"] == "user"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG state folder is Linux's")
def test_an_earlier_chats_line_comes_back_with_the_up_arrow(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    term = _chat(tmp_path, root, tmp_path / "one.json")
    term.expect("you> ", timeout=60)
    term.type("what is here?\r")
    term.expect("First answer.", timeout=60)
    term.expect("you> ", timeout=60, count=2)
    term.type("\x04")  # Ctrl-D: the chat ends
    assert term.wait(30) == 0, term.text()
    history = tmp_path / "state" / "localagent" / "chat_history"
    assert "what is here?" in history.read_text()

    term = _chat(tmp_path, root, tmp_path / "two.json")
    term.expect("you> ", timeout=60)
    term.type(UP + " again\r")  # the line of the last chat, edited
    term.expect("First answer.", timeout=60)
    term.expect("you> ", timeout=60, count=2)
    term.type("\x04")
    assert term.wait(30) == 0, term.text()
    assert _users(tmp_path / "two.json") == ["what is here? again"]


def test_a_dumb_terminal_gets_plain_input_and_keeps_no_history(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    term = _chat(tmp_path, root, tmp_path / "one.json", term="dumb")
    term.expect("you> ", timeout=60)
    term.type("hello\r")
    term.expect("First answer.", timeout=60)
    term.expect("you> ", timeout=60, count=2)
    term.type("\x04")
    assert term.wait(30) == 0, term.text()
    assert not (tmp_path / "state").exists()
