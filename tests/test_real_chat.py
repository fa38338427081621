"""`localagent chat` on the real model: two turns, one process, history saved and resumed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.real

CLI = [sys.executable, "-c", "from localagent.cli import main; main()"]


def test_two_turns_then_resume(workspace: Path, tmp_path: Path) -> None:
    saved = tmp_path / "chat.json"
    p = subprocess.run(
        CLI + ["chat", "--root", str(workspace), "--save", str(saved)],
        input="What is the launch code written in notes.txt?\nRead docs/setup.md and tell me the port.\nexit\n",
        capture_output=True, text=True, timeout=600,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "PURPLE-42" in p.stdout and "8731" in p.stdout
    assert p.stderr.count("answered") >= 2  # two summary lines
    history = json.loads(saved.read_text())
    users = [m["content"] for m in history if m["role"] == "user"]
    assert users[0].startswith("What is the launch code")
    assert any(u.startswith("Read docs/setup.md") for u in users)
    # Resumed, the history is there before the new turn.
    p2 = subprocess.run(
        CLI + ["chat", "--root", str(workspace), "--resume", str(saved), "--save", str(saved)],
        input="Say the launch code again.\n", capture_output=True, text=True, timeout=600,
    )
    assert p2.returncode == 0, p2.stderr[-2000:]
    assert len(json.loads(saved.read_text())) > len(history)


def test_resume_from_a_bad_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    p = subprocess.run(CLI + ["chat", "--resume", str(bad)], input="", capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "cannot resume" in p.stderr and "Traceback" not in p.stderr
