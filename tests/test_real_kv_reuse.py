"""KV-cache reuse on a real model: each step evaluates only what is new, and a chat
template that renders earlier turns differently is caught and reported, not silent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localagent import Agent, AgentConfig, Limits
from localagent.tools import tool
from localagent.trace import read_lines

pytestmark = pytest.mark.real


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def _steps(smol: Any, tmp_path: Path) -> list[dict[str, Any]]:
    cfg = AgentConfig(tool_choice="required", limits=Limits(max_steps=3), final_answer_on_stop=False, max_tokens=48)
    path = tmp_path / "t.jsonl"
    Agent(smol, [add], config=cfg).run("Add 2 and 3, then add 4 to the result.", trace=path)
    return [r for r in read_lines(path) if r["type"] == "step"]


def test_each_step_evaluates_only_what_is_new(smol: Any, tmp_path: Path) -> None:
    steps = _steps(smol, tmp_path)
    assert len(steps) == 3
    for prev, step in zip(steps, steps[1:]):
        assert step["prompt_tokens_reused"] >= prev["prompt_tokens"], (prev, step)
        assert "kv_reuse_lost" not in step["info"]


def test_a_template_that_re_renders_earlier_turns_is_reported(smol: Any, tmp_path: Path) -> None:
    original = smol.template
    # The number of messages at the very top: every new turn changes the first line.
    smol.template = "{{ messages | length }} messages\n" + original
    try:
        steps = _steps(smol, tmp_path)
    finally:
        smol.template = original
    assert len(steps) == 3
    for prev, step in zip(steps, steps[1:]):
        assert step["info"]["kv_reuse_lost"] >= prev["prompt_tokens"] - 5, step["info"]
