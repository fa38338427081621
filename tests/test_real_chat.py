"""`localagent chat` on the real default model, driven through a pty as a person would: two
turns in one process (a tool call shown live in each, the KV cache warm for the second), then
exit; the history saved and resumed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from terminal import Terminal

pytestmark = pytest.mark.real

CLI = [sys.executable, "-c", "from localagent.cli import main; main()"]


def _env(tmp_path: Path) -> dict[str, str]:
    # Traces and settings beside the workspace (tmp_path), not in it: the model is told what the folder holds.
    beside = tmp_path.with_name(tmp_path.name + "-cli")
    env = dict(os.environ, LOCALAGENT_TRACES=str(beside / "traces"), TERM="dumb", XDG_CONFIG_HOME=str(beside / "xdg"))
    env.pop("LOCALAGENT_CONFIG", None)
    return env


def _usage(summary: str) -> tuple[int, int]:
    """Tokens evaluated and sent, from a summary line."""
    m = re.search(r"(\d+) tokens evaluated of (\d+) sent", summary)
    assert m, summary
    return int(m[1]), int(m[2])


def test_two_turns_on_a_terminal_then_resume(workspace: Path, tmp_path: Path) -> None:
    saved = tmp_path / "chat.json"
    term = Terminal([*CLI, "chat", "--root", str(workspace), "--save", str(saved)], _env(tmp_path))
    term.expect("you> ", timeout=300)
    assert f"localagent chat: qwen2.5-coder-0.5b-instruct-q4_k_m.gguf in {workspace}" in term.text()

    term.type("What is the launch code written in notes.txt?\r")
    term.expect('→ read_file({"path": "notes.txt"', timeout=300)  # the call, live
    term.expect("← The launch code is PURPLE-42.", timeout=60)
    term.expect("you> ", timeout=300, count=2)  # the answer, the summary, and the prompt again
    first = term.text().split("you> ")[1]
    assert "· answered] trace:" in first

    term.type("Read docs/setup.md and tell me the port.\r")
    term.expect('→ read_file({"path": "docs/setup.md"', timeout=300)
    term.expect("you> ", timeout=300, count=3)
    second = term.text().split("you> ")[2]
    assert "· answered] trace:" in second
    # The model stayed loaded and its KV cache warm: the first turn is not evaluated again.
    evaluated, sent = _usage(second)
    assert evaluated < sent / 2, second

    term.type("exit\r")
    assert term.wait(60) == 0, term.text()
    assert "Traceback" not in term.text()
    history = json.loads(saved.read_text())
    users = [m["content"] for m in history if m["role"] == "user"]
    assert users[0].endswith("What is the launch code written in notes.txt?")  # after the folder's overview
    assert any(u.startswith("Read docs/setup.md") for u in users)
    second_question = next(i for i, m in enumerate(history) if m["content"].startswith("Read docs/setup.md"))
    answers = [m["content"] for m in history if m["role"] == "assistant" and m["content"]]
    before = [m["content"] for m in history[:second_question] if m["role"] == "assistant" and m["content"]]
    assert before[-1] in first and answers[-1] in second  # the answers, as they were shown
    assert any(m["role"] == "tool" and "port 8731" in m["content"] for m in history[second_question:])
    # Each turn answered from the file it read.
    assert "PURPLE-42" in before[-1]
    assert "8731" in answers[-1], f"the second turn's answer: {answers[-1]!r}"

    # Resumed, the history is there before the new turn.
    p2 = subprocess.run(
        CLI + ["chat", "--root", str(workspace), "--resume", str(saved), "--save", str(saved)],
        input="Say the launch code again.\n", capture_output=True, text=True, timeout=600, env=_env(tmp_path),
    )
    assert p2.returncode == 0, p2.stderr[-2000:]
    resumed = json.loads(saved.read_text())
    assert resumed[: len(history)] == history and len(resumed) > len(history)


def test_resume_from_a_bad_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    p = subprocess.run(CLI + ["chat", "--resume", str(bad)], input="", capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "cannot resume" in p.stderr and "Traceback" not in p.stderr
