"""The default model and wrong paths: does it recover through the validator's suggestion?

With plain validation (no state-aware grammar), the first read of `src/mian.py` (made for the
model: left to itself it now often fixes the spelling) fails with
"closest: src/main.py; to retry: {...}"; the 0.5B model sends the corrected call on its
next turn, or sends the wrong one again, which the loop then runs corrected. (Before the error carried the corrected call, it repeated the failed
call word for word until the no-progress stop; see evals/README.md, "Recovery from wrong paths".)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from localagent import Agent, AgentConfig, Limits, RunResult, StopReason
from localagent.backends.base import Generation
from localagent.tools.builtin import workspace_tools
from localagent.prompt import load_prompt
from localagent.evaluation.recovery import KINDS, TASKS, build, run_recovery
from localagent.tools.workspace import Workspace
from localagent.backends.fake import call_text

pytestmark = pytest.mark.real

MAX_STEPS = 6
# Tuned wording: "What is VERSION set to in src/mian.py?" is answered from nothing, without
# a call (the path does not exist, so the first step is not forced to call a tool).
MIAN_TASK = "Read src/mian.py and tell me what VERSION is set to."


def _mian(qwen, **config) -> RunResult:  # type: ignore[no-untyped-def]
    task = next(t for t in TASKS if t.id == "misspelt-main")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(task, root)
        assert (root / "src" / "main.py").is_file() and not (root / "src" / "mian.py").exists()
        cfg = AgentConfig(
            system_prompt=load_prompt("system").strip(), live_grammar=False, limits=Limits(max_steps=MAX_STEPS), **config
        )
        agent = Agent(qwen, workspace_tools(Workspace(root), write=False), root=root, config=cfg)
        return agent.run(MIAN_TASK)


class _FirstReadAsTyped:
    """The real model, but its first turn is the read of the path as the task typed it: the
    model now often fixes 'mian' itself, and what is tested is what follows the error."""

    def __init__(self, inner, path: str):  # type: ignore[no-untyped-def]
        self.inner, self.first = inner, call_text("read_file", path=path)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)

    def generate(self, messages, tools, options):  # type: ignore[no-untyped-def]
        if self.first is None:
            return self.inner.generate(messages, tools, options)
        text, self.first = self.first, None
        return Generation(text=text)


@pytest.fixture(scope="module")
def mian_run(qwen) -> RunResult:  # type: ignore[no-untyped-def]
    # Without the policy's reading of the file a wrong path means: the error path alone.
    return _mian(_FirstReadAsTyped(qwen, "src/mian.py"), read_named_files=False)


def test_a_misspelt_path_is_read_as_the_file_it_means(qwen) -> None:  # type: ignore[no-untyped-def]
    r = _mian(qwen)
    calls = _calls(r)
    assert calls and calls[0][0].arguments == {**calls[0][0].arguments, "path": "src/main.py"} and not calls[0][1].is_error
    assert r.stop_reason is StopReason.ANSWERED and "3.2.1" in r.answer, r.answer


def _calls(r: RunResult):  # type: ignore[no-untyped-def]
    return [(c, res) for rec in r.records for c, res in zip(rec.calls, rec.results)]


def test_first_read_of_a_misspelt_file_fails_with_the_suggestion(mian_run: RunResult) -> None:
    calls = _calls(mian_run)
    assert calls, f"no call was made; answer: {mian_run.answer!r}"
    call, result = calls[0]
    assert call.name == "read_file" and call.arguments["path"] == "src/mian.py"
    assert result.error is not None and result.error.kind == "not_found"
    assert "closest: src/main.py" in result.content


def test_recovers_through_the_suggestion_within_the_step_limit(mian_run: RunResult) -> None:
    calls = _calls(mian_run)
    assert calls and calls[0][1].error is not None and "closest: src/main.py" in calls[0][1].content
    assert any(c.name == "read_file" and c.arguments["path"] == "src/main.py" and not r.is_error for c, r in calls[1:]), [
        (c.name, c.arguments) for c, _ in calls
    ]
    assert mian_run.stop_reason is StopReason.ANSWERED, mian_run.answer
    assert mian_run.steps <= MAX_STEPS
    assert "3.2.1" in mian_run.answer


SAMPLE = [next(t for t in TASKS if t.kind == k) for k in KINDS]


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_sample_of_recovery_tasks(qwen, live: bool) -> None:  # type: ignore[no-untyped-def]
    out = run_recovery(qwen, SAMPLE, live_grammar=live, max_steps=MAX_STEPS)
    assert out["live_grammar"] is live and out["max_steps"] == MAX_STEPS
    assert [t["id"] for t in out["tasks"]] == [t.id for t in SAMPLE]
    s = out["summary"]
    assert s["overall"]["tasks"] == 4 and set(s["by_kind"]) == set(KINDS)
    assert all(v["tasks"] == 1 for v in s["by_kind"].values())
    # Over the 24 tasks, 14 (plain) and 13 (live) recover: a sample of four should see two, and one.
    assert s["overall"]["recovered"] >= (1 if live else 2), out["tasks"]
    for task, r in zip(SAMPLE, out["tasks"]):
        assert {"stop_reason", "answered", "recovered", "steps", "first_call_failed", "first_error", "calls"} <= r.keys()
        assert 1 <= r["steps"] <= MAX_STEPS
        if r["recovered"]:
            assert r["answered"] and r["read_target"] and task.expected.lower() in r["answer"].lower()
        if r["first_call_failed"]:
            assert r["first_error"]
        if live:  # the grammar offers only existing text files: a wrong path cannot be read
            assert r["bad_reads"] == 0 and not r["first_call_failed"]
            files = task.all_files()
            for c in r["calls"]:
                if c["name"] == "read_file":
                    assert c["arguments"]["path"] in files and c["error"] is None, c
