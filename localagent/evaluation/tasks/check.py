"""Whether a task was done, and if not, which kind of miss it was. Pure: it reads the run's
answer, stop reason and tool results, and the workspace before and after."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .suite import Task

# The failure classes, in the order they are assigned.
FAILURES = (
    "answered_without_call",  # a task that needs a look, answered with no tool call at all
    "right_file_never_read",  # no successful result held the evidence
    "wrong_answer_after_read",  # the evidence was read, the answer is still wrong
    "wrong_edit",  # the file to change does not hold what was asked
    "extra_change",  # a file changed or was created that the task did not ask for
    "forced_stop",  # right in substance, but the run ended on a limit, not an answer
)


@dataclass
class Outcome:
    """The check of one run."""

    success: bool
    failure: str | None
    answer_ok: bool
    files_ok: bool
    extra: list[str]  # files changed or created that were not asked for


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _file_ok(want: dict[str, Any], got: bytes | None) -> bool:
    if got is None:
        return False
    text = got.decode("utf-8", "replace")
    if "exact" in want:
        return text.rstrip("\n") == str(want["exact"]).rstrip("\n")
    if len(text) > int(want.get("max_chars", 10**9)):
        return False
    return all(re.search(rx, text, re.IGNORECASE) for rx in want.get("contains", []))


def check(
    task: Task,
    answer: str,
    answered: bool,
    results: list[tuple[bool, str]],
    before: dict[str, bytes],
    after: dict[str, bytes],
) -> Outcome:
    """``answered``: the run ended with an answer, not a forced stop; ``results``: (ok,
    content) of every tool result, in order."""
    answer_ok = all(re.search(rx, answer, re.IGNORECASE) for rx in task.answer)
    files_ok = all(_file_ok(w, after.get(p)) for p, w in task.expect_files.items())
    extra = sorted(p for p in set(before) | set(after) if p not in task.expect_files and before.get(p) != after.get(p))
    success = answer_ok and files_ok and not extra and answered
    return Outcome(success, None if success else _failure(task, answer_ok, files_ok, extra, results), answer_ok, files_ok, extra)


def _failure(task: Task, answer_ok: bool, files_ok: bool, extra: list[str], results: list[tuple[bool, str]]) -> str:
    if task.is_edit:
        if not files_ok:
            return "wrong_edit"
        if extra:
            return "extra_change"
        return "wrong_answer_after_read" if not answer_ok else "forced_stop"
    if extra:
        return "extra_change"
    if answer_ok:
        return "forced_stop"
    if task.needs_tool and not results:
        return "answered_without_call"
    seen = not task.evidence or any(ok and any(e in c for e in task.evidence) for ok, c in results)
    return "wrong_answer_after_read" if seen else "right_file_never_read"
