"""Model and context faults on the scripted fake model: a reply cut by max_tokens at every
point of a call, the context window filling, a model that answers with the same call for
ever; and the exit codes the command line gives for them. (The same on real models, and
corrupt or truncated model files: test_real_faults.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from localagent.backends.base import Generation
from localagent.backends.fake import FakeBackend, call_text
from localagent.loop import Agent, AgentConfig, RunResult
from localagent.messages import Message
from localagent.stops import EXIT_CODES, Limits, StopReason
from localagent.tools import tool
from localagent.trace import read_lines
from fake_cli import FAKE_CLI, fake_env
from runs import Trace, fake_run

ran: list[dict[str, Any]] = []


@tool
def save_note(title: str, body: str) -> str:
    """Save a note."""
    ran.append({"title": title, "body": body})
    return "saved"


CALL = call_text("save_note", title="groceries", body="eggs, milk, \"flour\" and <tool_call> tags")


def _run(tmp_path: Path, replies: list[Any], **config: Any) -> tuple[RunResult, Trace]:
    ran.clear()
    result, trace, _ = fake_run(tmp_path, replies, [save_note], task="save it", **config)
    return result, trace


@pytest.mark.parametrize("constrained", [True, False], ids=["constrained", "free"])
def test_max_tokens_reached_at_any_point_of_a_call_never_runs_it(tmp_path: Path, constrained: bool) -> None:
    # Every cut of the call, from just after its opening tag to just before its last character.
    for cut in range(len("<tool_call>"), len(CALL)):
        cut_off = Generation(CALL[:cut], finish_reason="length")
        result, trace = _run(tmp_path, [cut_off, "I will keep it shorter."], constrained=constrained)
        assert ran == [], cut
        [step1, step2] = [r for r in trace if r["type"] == "step"]
        [error] = step1["results"]
        assert error["content"].startswith("error (format_error): the reply hit the token limit inside a tool call")
        assert step2["text"] == "I will keep it shorter."
        assert result.stop_reason is StopReason.ANSWERED


def test_a_whole_call_cut_after_its_closing_tag_still_runs(tmp_path: Path) -> None:
    result, _ = _run(tmp_path, [Generation(CALL + "\nand then", finish_reason="length"), "done"])
    assert len(ran) == 1 and result.stop_reason is StopReason.ANSWERED


def test_the_context_window_filling_during_a_reply_stops_the_run(tmp_path: Path) -> None:
    full = Generation(CALL[:30], finish_reason="context", error="the context window filled up during the reply")
    result, trace = _run(tmp_path, [full, "never asked"])
    assert ran == [] and result.stop_reason is StopReason.CONTEXT_FULL
    assert result.answer.startswith("[stopped: context_full]")
    assert [r["type"] for r in trace] == ["run_start", "step", "run_end"]


def test_the_context_window_filling_with_results_stops_before_the_model_overflows(tmp_path: Path) -> None:
    big = call_text("save_note", title="t", body="word " * 400)
    ran.clear()
    fake = FakeBackend.scripted([big] * 10, context_size=1500)
    config = AgentConfig(limits=Limits(max_steps=10, repeat_limit=0), max_tokens=100, keep_recent_results=5)
    result = Agent(fake, [save_note], config=config).run("fill it", trace=tmp_path / "t.jsonl")
    assert result.stop_reason is StopReason.CONTEXT_FULL and 0 < result.steps < 10
    schemas = Agent(fake, [save_note]).tools.schemas()
    assert all(fake.prompt_tokens(r, schemas) + 100 <= 1500 for r in fake.requests), "every prompt fit"


def _same_call_for_ever(messages: list[Message]) -> str:
    return call_text("save_note", title="again", body="same")


@pytest.mark.parametrize("constrained", [True, False], ids=["constrained", "free"])
def test_a_model_that_repeats_the_same_call_for_ever_ends_in_the_no_progress_stop(
    tmp_path: Path, constrained: bool
) -> None:
    result, trace = _run(tmp_path, [_same_call_for_ever] * 50, constrained=constrained)
    assert result.stop_reason is StopReason.REPEATED_CALL
    assert result.steps == 3 and len(ran) <= 3
    assert "save_note" in result.message and "3 times in a row" in result.message
    steps = [r for r in trace if r["type"] == "step"]
    assert all([c["id"] for c in s["calls"]] == [r["call_id"] for r in s["results"]] for s in steps)


# -- the exit codes, through the command line ---------------------------------------------

LIST = call_text("list_dir", path=".")

EXITS: list[tuple[str, list[Any], StopReason]] = [
    ("cut inside a call, then an answer", [{"text": LIST[:25], "finish": "length"}, "Done."], StopReason.ANSWERED),
    ("context window full", [{"text": "The folder has", "finish": "context"}], StopReason.CONTEXT_FULL),
    ("the same call for ever", [{"text": LIST, "forever": True}], StopReason.REPEATED_CALL),
    ("a call every step", [{"text": call_text("list_dir", path="sub"), "forever": True}], StopReason.MAX_STEPS),
]


@pytest.mark.parametrize(("case", "replies", "stop"), EXITS, ids=[e[0] for e in EXITS])
def test_the_command_line_exits_with_the_stop_reasons_code(
    tmp_path: Path, case: str, replies: list[Any], stop: StopReason
) -> None:
    (tmp_path / "root" / "sub").mkdir(parents=True)
    env = fake_env(tmp_path, replies)
    argv = [*FAKE_CLI, "run", "List the folder", "--root", str(tmp_path / "root"), "--json"]
    argv += ["--trace", str(tmp_path / "t.jsonl"), "--max-steps", "2" if stop is StopReason.MAX_STEPS else "6"]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == EXIT_CODES[stop], p.stderr
    assert json.loads(p.stdout)["stop_reason"] == stop.value
    assert read_lines(tmp_path / "t.jsonl")[-1]["type"] == "run_end"
