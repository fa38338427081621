"""The recovery task set is well formed, and the workspace's errors alone point to the right
file for every task: this proves the suggestions without a model."""

from __future__ import annotations

import posixpath
from collections import Counter
from pathlib import Path

import pytest

from localagent.errors import ToolErrorInfo
from localagent.messages import ToolCall, ToolResult
from localagent.evaluation.recovery import KINDS, TASKS, RecoveryTask, build, recovery_outcome, summarize
from localagent.stops import StopReason
from localagent.tools.workspace import Workspace, WorkspaceError


def test_at_least_twenty_tasks_and_five_per_kind() -> None:
    assert len(TASKS) >= 20
    per_kind = Counter(t.kind for t in TASKS)
    assert set(per_kind) == set(KINDS)
    assert all(n >= 5 for n in per_kind.values()), per_kind
    assert len({t.id for t in TASKS}) == len(TASKS)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_task_is_well_formed(task: RecoveryTask) -> None:
    files = task.all_files()
    assert task.target in files
    assert task.wrong in task.task, "the task must name the wrong path"
    assert task.expected.lower() in files[task.target].lower()
    others = [text for path, text in files.items() if path != task.target]
    assert not any(task.expected.lower() in t.lower() for t in others), "the fact must be in the target only"
    if task.kind == "wrong_case":
        assert task.wrong != task.target and task.wrong.lower() == task.target.lower()
    if task.kind == "wrong_folder":
        assert posixpath.basename(task.wrong) == posixpath.basename(task.target)
        assert posixpath.dirname(task.wrong) != posixpath.dirname(task.target)
    if task.kind == "misspelt":
        assert posixpath.dirname(task.wrong) == posixpath.dirname(task.target)
        assert task.wrong.lower() != task.target.lower()
    if task.kind == "folder_for_file":
        assert posixpath.dirname(task.target) == task.wrong


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_the_error_for_the_wrong_path_points_to_the_right_file(task: RecoveryTask, tmp_path: Path) -> None:
    build(task, tmp_path)
    ws = Workspace(tmp_path)
    assert ws.resolve(task.target, kind="file").is_file()
    # The task does not name the right file (as the loop sees names); only a folder may be named.
    assert task.target not in ws.mentioned(task.task)
    assert ws.mentioned(task.task) == ([task.wrong] if task.kind == "folder_for_file" else [])
    with pytest.raises(WorkspaceError) as e:
        ws.resolve(task.wrong, kind="file")
    info = e.value.info
    if task.kind == "folder_for_file":
        assert (tmp_path / task.wrong).is_dir()
        assert info.kind == "not_a_file"
        # The folder's files are listed from the root, as a model would copy them.
        assert f"files in it: {task.target}" in info.message
        assert info.alternatives[0] == task.target
    else:
        assert not (tmp_path / task.wrong).exists()
        assert info.kind == "not_found"
        assert info.alternatives[0] == task.target, info.message
        assert f"closest: {task.target}" in info.message


def _rec(calls: list[tuple[str, dict, ToolErrorInfo | None]]):  # type: ignore[no-untyped-def]
    class R:  # the two fields of a StepRecord that recovery_outcome reads
        def __init__(self, c: ToolCall, r: ToolResult) -> None:
            self.calls, self.results = [c], [r]

    out = []
    for i, (name, args, err) in enumerate(calls):
        c = ToolCall(f"c{i}", name, args)
        out.append(R(c, ToolResult(c.id, name, err.render() if err else "ok", error=err)))
    return out


def test_outcome_after_a_suggestion() -> None:
    task = TASKS[0]
    miss = ToolErrorInfo("not_found", "path 'src/mian.py' not found; closest: src/main.py", "path", ["src/main.py"])
    recs = _rec([("read_file", {"path": "src/mian.py"}, miss), ("read_file", {"path": "src/main.py"}, None)])
    out = recovery_outcome(task, recs, StopReason.ANSWERED, "VERSION is '3.2.1'.")
    assert out["recovered"] and out["first_call_failed"] and out["read_target"]
    assert out["first_error"] == miss.message
    assert out["path_errors"] == 1 and out["bad_reads"] == 1


def test_outcome_needs_the_read_the_fact_and_an_answer() -> None:
    task = TASKS[0]
    read = _rec([("read_file", {"path": "src/main.py"}, None)])
    assert not recovery_outcome(task, [], StopReason.ANSWERED, "3.2.1")["recovered"]  # a guess
    assert not recovery_outcome(task, read, StopReason.ANSWERED, "1.0")["recovered"]
    assert not recovery_outcome(task, read, StopReason.MAX_STEPS, "3.2.1")["recovered"]
    ok = recovery_outcome(task, read, StopReason.ANSWERED, "It is 3.2.1")
    assert ok["recovered"] and not ok["first_call_failed"] and ok["first_error"] is None
    # A search within the right file looks into it too; a search elsewhere does not.
    searched = _rec([("search", {"pattern": "VERSION", "path": "src/main.py"}, None)])
    assert recovery_outcome(task, searched, StopReason.ANSWERED, "3.2.1")["read_target"]
    elsewhere = _rec([("search", {"pattern": "VERSION", "path": "src"}, None)])
    assert not recovery_outcome(task, elsewhere, StopReason.ANSWERED, "3.2.1")["read_target"]


def test_summary_counts() -> None:
    rs = [
        {"kind": "misspelt", "recovered": True, "answered": True, "first_call_failed": True, "path_errors": 1, "bad_reads": 1, "steps": 3},
        {"kind": "misspelt", "recovered": False, "answered": False, "first_call_failed": False, "path_errors": 0, "bad_reads": 0, "steps": 1},
    ]
    s = summarize(rs)
    assert s["overall"]["tasks"] == 2 and s["overall"]["recovered"] == 1 and s["overall"]["recovery_rate"] == 50.0
    assert s["overall"]["recovered_after_error"] == 1 and s["by_kind"]["misspelt"]["mean_steps"] == 2.0
    assert list(s["by_kind"]) == ["misspelt"]
