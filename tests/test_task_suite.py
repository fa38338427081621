"""The everyday task suite without a model: its size and splits, and the checker on answers
and workspaces written by hand."""

from __future__ import annotations

import re

import pytest

from localagent.evaluation.tasks.check import check
from localagent.evaluation.tasks.generate import SEEDS, generate

DEV, TEST = generate("dev"), generate("test")
HELD_OUT = [generate(split) for split in SEEDS if split not in ("dev", "test")]  # test2, test3, ...


def test_the_suite_is_large_varied_and_split() -> None:
    kinds = {t.kind for t in TEST}
    assert len(TEST) >= 200 and len(kinds) >= 12 and {t.kind for t in DEV} == kinds
    assert len({t.id for t in DEV + TEST}) == len(DEV) + len(TEST)
    # Different wordings: no prompt of one split is a prompt of another.
    prompts = [{t.prompt for t in split} for split in (DEV, TEST, *HELD_OUT)]
    assert len(prompts) >= 4 and not any(a & b for i, a in enumerate(prompts) for b in prompts[i + 1 :])
    assert all({t.kind for t in s} == kinds and len(s) == len(TEST) for s in HELD_OUT)
    for kind in kinds:  # varied content within a kind
        assert len({repr(sorted(t.files.items())) for t in TEST if t.kind == kind}) >= 10, kind


def test_the_same_seed_gives_the_same_tasks() -> None:
    assert [t.to_dict() for t in generate("test")] == [t.to_dict() for t in TEST]
    assert [t.to_dict() for t in generate("test", seed=1)] != [t.to_dict() for t in TEST]


@pytest.mark.parametrize(
    "answer, ok",
    [
        ("There is no TODO.md in this folder.", True),
        ("No files named like 'TODO.md' under '.'", True),
        ("TODO.md does not exist.", True),
        ("The file is missing.", True),
        ("No notes/plan.txt found.", True),
        ("No secrets.env file found.", True),  # test2 answers the checker refused
        ("No notes/plan.txt under .", True),
        ("CHANGELOG.md is not in this folder.", True),  # test6's, refused
        ("TODO.md is in this folder: buy milk.", False),
        ("Yes, there is a TODO.md. It says: buy milk.", False),
        ("TODO.md says: buy milk.", False),
    ],
)
def test_a_missing_file_is_done_only_when_the_answer_says_so(answer: str, ok: bool) -> None:
    task = next(t for t in TEST if t.kind == "missing_file")
    out = check(task, answer, True, [(False, "no files")], dict(), dict())
    assert out.success is ok


def test_an_edit_is_done_when_the_file_holds_the_change_and_nothing_else_changed() -> None:
    task = next(t for t in TEST if t.kind == "edit_typo")
    (path, want), = task.expect_files.items()
    before = {p: s.encode() for p, s in task.files.items()}
    bad = re.escape(task.prompt.split("'")[1])
    good = task.prompt.split("'")[3]
    fixed = re.sub(bad, good, task.files[path])
    after = {**before, path: fixed.encode()}
    assert check(task, "Fixed.", True, [], before, after).success
    assert check(task, "Fixed.", True, [], before, before).failure == "wrong_edit"
    extra = {**after, "notes/new.txt": b"x"}
    assert check(task, "Fixed.", True, [], before, extra).failure == "extra_change"
    assert check(task, "Fixed.", False, [], before, after).failure == "forced_stop"
