"""The default model, as a user runs it: find a file, read it, answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from localagent import Agent, AgentConfig, StopReason
from localagent.tools.builtin import workspace_tools
from localagent.prompt import load_prompt
from localagent.trace import read_lines
from localagent.tools.workspace import Workspace

pytestmark = pytest.mark.real


def _agent(backend, root: Path) -> Agent:  # type: ignore[no-untyped-def]
    cfg = AgentConfig(system_prompt=load_prompt("system").strip())
    return Agent(backend, workspace_tools(Workspace(root)), root=root, config=cfg)


def test_reads_the_named_file_and_answers(qwen, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "t.jsonl"
    r = _agent(qwen, workspace).run("What is the launch code written in notes.txt?", trace=trace)
    assert r.stop_reason is StopReason.ANSWERED, r.answer
    assert "PURPLE-42" in r.answer
    calls = [c for rec in r.records for c in rec.calls]
    assert any(c.name == "read_file" and c.arguments["path"] == "notes.txt" for c in calls)
    recs = read_lines(trace)
    assert recs[0]["type"] == "run_start" and recs[-1]["type"] == "run_end"
    assert recs[-1]["stop_reason"] == "answered"


def test_finds_the_file_in_a_folder(qwen, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    r = _agent(qwen, workspace).run("Which port does the server listen on? The setup notes are somewhere in the docs folder.")
    assert r.stop_reason is StopReason.ANSWERED, r.answer
    assert "8731" in r.answer
    paths = [c.arguments.get("path", "") for rec in r.records for c in rec.calls if c.name == "read_file"]
    assert "docs/setup.md" in paths


def test_kv_cache_is_reused_across_steps(qwen, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    agent = _agent(qwen, workspace)
    agent.config.answer_when_covered = False  # else the answer is written from a new prompt, the evidence
    r = agent.run("What is the launch code written in notes.txt?")
    assert r.steps >= 2
    later = r.records[1:]
    for rec in later:
        g = rec.generation
        assert g.prompt_tokens_evaluated < g.prompt_tokens / 2, "a later step re-evaluated the history"
    assert r.usage.prompt_tokens_evaluated < r.usage.prompt_tokens_sent


def test_cli_run_json(workspace: Path, tmp_path: Path) -> None:
    trace = tmp_path / "cli.jsonl"
    p = subprocess.run(
        [sys.executable, "-c", "from localagent.cli import main; main()", "run",
         "What is the launch code written in notes.txt?", "--root", str(workspace),
         "--json", "--trace", str(trace)],
        capture_output=True, text=True, timeout=600,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert {"answer", "stop_reason", "steps", "usage", "trace"} <= out.keys()
    assert "PURPLE-42" in out["answer"]
    assert out["trace"] == str(trace) and trace.exists()
    assert "Traceback" not in p.stderr
