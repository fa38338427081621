"""`localagent run` on the real default model, driven through a pty as a person would:
watch the live output, read the answer and the summary, press Ctrl-C in the middle."""

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
    env = dict(os.environ, LOCALAGENT_TRACES=str(tmp_path / "traces"), TERM="dumb")
    env.pop("LOCALAGENT_CONFIG", None)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")  # no config file of the person running the tests
    # No warm start on disk: the first prompt (instructions and tools) is evaluated in full.
    env["LOCALAGENT_PREFIX_CACHE"] = str(tmp_path / "prefix")
    return env


def _trace(tmp_path: Path) -> list[dict[str, object]]:
    files = list((tmp_path / "traces").glob("*.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines()]


def test_live_output_answer_and_summary(workspace: Path, tmp_path: Path) -> None:
    term = Terminal([*CLI, "run", "What is the launch code in notes.txt?", "--root", str(workspace)], _env(tmp_path))
    term.expect("── step 1", timeout=300)
    assert "load qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" in term.text()  # the loading bar, on a terminal
    term.expect('→ read_file({"path": "notes.txt"', timeout=300)  # the call, shown as it is made
    # The first prompt, with no warm start, is long: its evaluation had a bar of its own.
    step1 = term.text().split("── step 1", 1)[1]
    assert re.search(r"\rprompt .*\d+/\d{3,} tokens", step1), step1
    term.expect("← The launch code is PURPLE-42.", timeout=60)  # a one-line preview of its result
    code = term.wait(300)
    screen = term.text()
    assert code == 0, screen
    summary = screen.strip().splitlines()[-1]
    assert summary.startswith("[") and "tokens evaluated of" in summary and "· answered] trace:" in summary
    answer = screen[screen.index("← The launch code") :].split("\n[")[0]
    assert "PURPLE-42" in answer, screen
    assert _trace(tmp_path)[-1]["stop_reason"] == "answered"
    # What a person sees once each bar has cleared its line: no bar left, the streamed text intact.
    seen = term.rendered()
    assert "load qwen" not in seen and not re.search(r"\d+/\d+ tokens", seen), seen
    lines = seen.split("── step 1", 1)[1].splitlines()
    assert lines[1].startswith("<tool_call>") or lines[1].startswith("→ read_file"), seen


def test_quiet_on_a_terminal_shows_the_answer_alone(workspace: Path, tmp_path: Path) -> None:
    argv = [*CLI, "run", "What is the launch code in notes.txt?", "--root", str(workspace), "--quiet"]
    term = Terminal(argv, _env(tmp_path))
    code = term.wait(300)
    screen = term.text()
    assert code == 0, screen
    assert "PURPLE-42" in screen
    # No load bar, no prompt bar (the first prompt was long), no live steps, no summary.
    assert "\r" not in screen and "load " not in screen and "── step" not in screen and "trace:" not in screen, screen
    assert _trace(tmp_path)[-1]["stop_reason"] == "answered"  # the trace is written all the same


def test_verbose_shows_llama_cpp_and_a_budget_too_small_is_one_line(workspace: Path, tmp_path: Path) -> None:
    argv = [*CLI, "run", "What is the launch code in notes.txt?", "--root", str(workspace), "--token-budget", "50"]
    quiet = subprocess.run(argv, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 2 and quiet.stdout == ""
    # Silent: llama.cpp says nothing; the budget error is the one line.
    assert quiet.stderr.startswith("localagent: error: token budget 50 cannot cover even the first prompt ("), quiet.stderr
    assert quiet.stderr.count("\n") == 1 and "give at least" in quiet.stderr
    loud = subprocess.run([*argv, "--verbose"], env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert loud.returncode == 2
    assert "llama_model_loader: " in loud.stderr and "llama_context" in loud.stderr  # llama.cpp's own log
    # The same one line among them (llama.cpp logs again as the model is freed, after it).
    assert quiet.stderr.strip() in loud.stderr.splitlines() and "Traceback" not in loud.stderr


def test_ctrl_c_while_the_model_loads(workspace: Path, tmp_path: Path) -> None:
    term = Terminal([*CLI, "run", "What is in notes.txt?", "--root", str(workspace)], _env(tmp_path))
    term.expect("load qwen2.5-coder", timeout=300)  # the bar: loading has begun
    term.ctrl_c()
    code = term.wait(120)
    screen = term.text()
    assert code == 130, screen
    assert "Traceback" not in screen and "── step" not in screen, screen
    assert screen.strip().splitlines()[-1] == "localagent: interrupted before the run started", screen


def test_ctrl_c_mid_run_keeps_the_partial_answer_and_the_trace(tmp_path: Path) -> None:
    task = "Write a long story, at least five paragraphs, about a lighthouse keeper."
    term = Terminal([*CLI, "run", task, "--root", str(tmp_path)], _env(tmp_path))
    term.expect("── step 1", timeout=300)

    def story() -> str:  # what is shown after "── step 1", less the prompt's bar while it is drawn
        lines = term.rendered().split("── step 1", 1)[1].splitlines()
        return "\n".join(line for line in lines if not re.fullmatch(r"prompt .* \d+/\d+ tokens", line)).strip()

    term.until(lambda: len(story()) >= 80, timeout=300)  # the story is streaming
    term.ctrl_c()
    code = term.wait(120)
    screen = term.text()
    assert code == 130, screen
    assert "Traceback" not in screen
    summary = screen.strip().splitlines()[-1]
    assert "· interrupted] trace:" in summary, screen
    assert "[stopped: interrupted]" in screen  # the partial answer, marked as cut off
    streamed = screen.split("── step 1", 1)[1].split("[stopped: interrupted]")[0].strip()
    kept = screen.split("[stopped: interrupted]", 1)[1].split("\n[")[0].split("\n", 1)[1].strip()
    assert len(kept) >= 40 and kept[:40] in streamed, screen  # the story so far, not lost
    trace = _trace(tmp_path)
    assert [r["type"] for r in trace][0] == "run_start" and trace[-1]["type"] == "run_end"
    assert trace[-1]["stop_reason"] == "interrupted"
    step = [r for r in trace if r["type"] == "step"][-1]
    assert step["error"] == "interrupted while generating" and len(str(step["text"])) >= 40
