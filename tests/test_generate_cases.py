"""The generated dev and test splits: reproducible, disjoint, loadable, and of the shape issue 23 asks."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from localagent.backends.base import Generation
from localagent.evaluation.evaluate import Case, ErrorClass, load_cases, reference_turn, score_turn
from localagent.formats import render_call

EVALS = Path(__file__).parent.parent / "evals"
sys.path.insert(0, str(EVALS))
import case_families  # noqa: E402
import generate_cases  # noqa: E402

SPLITS = {s: load_cases(generate_cases.path(s)) for s in generate_cases.SPLITS}


def questions(cases: list[Case]) -> set[str]:
    return {m["content"] for c in cases for m in c.messages if m["role"] == "user"}


@pytest.mark.parametrize("split", list(generate_cases.SPLITS))
def test_regenerating_gives_the_same_file_byte_for_byte(split: str) -> None:
    text = generate_cases.render(generate_cases.generate(split))
    assert text == generate_cases.path(split).read_text(encoding="utf-8")
    assert text == generate_cases.render(generate_cases.generate(split))  # no state kept between runs


def test_the_check_flag_passes_on_the_committed_files() -> None:
    out = subprocess.run([sys.executable, str(EVALS / "generate_cases.py"), "--check"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_no_question_is_in_two_splits_nor_twice_in_one() -> None:
    names = list(SPLITS)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not questions(SPLITS[a]) & questions(SPLITS[b]), (a, b)
    for cases in SPLITS.values():
        users = [m["content"] for c in cases for m in c.messages if m["role"] == "user"]
        assert len(users) == len(set(users))


def test_dev_and_test_use_different_wordings_and_seeds() -> None:
    wordings = generate_cases.load_wordings()
    assert set(wordings) == {f.name for f in case_families.FAMILIES}  # none missing, none unused
    for name, w in wordings.items():
        splits = list(generate_cases.SPLITS)
        assert all(w[s] for s in splits), name
        for i, a in enumerate(splits):
            assert not set(w[a]) & {x for b in splits[i + 1 :] for x in w[b]}, (name, a)
    assert len(set(generate_cases.SPLITS.values())) == len(generate_cases.SPLITS)


def test_the_suite_is_large_enough_and_has_the_kinds_issue_23_measures() -> None:
    assert sum(len(c) for c in SPLITS.values()) >= 300
    for split, cases in SPLITS.items():
        counts = Counter(c.category for c in cases)
        assert counts == Counter(generate_cases.COUNTS), split
        assert counts["multiple_calls"] >= 40 and counts["no_tool"] >= 40
        assert {c.category for c in cases} == {c.category for c in load_cases(EVALS / "cases.jsonl")}


def test_several_calls_cases_ask_two_to_five_distinct_calls_some_of_several_functions() -> None:
    multi = [c for c in SPLITS["test"] if c.category == "multiple_calls"]
    for c in multi:
        assert 2 <= len(c.expected) <= 5, c.id
        calls = [(e.name, sorted((k, str(v)) for k, v in e.arguments.items())) for e in c.expected]
        assert len(set(map(str, calls))) == len(calls), c.id  # distinct values
    several = [c for c in multi if len({e.name for e in c.expected}) > 1]
    assert len(several) >= 10 and len(multi) - len(several) >= 10
    assert {len(c.expected) for c in multi} == {2, 3, 4, 5}


def test_no_call_cases_cover_the_three_kinds_with_answers_to_match() -> None:
    none = [c for c in SPLITS["test"] if c.category == "no_tool"]
    assert all(not c.expected for c in none)
    after_result = [c for c in none if c.messages[-1]["role"] == "tool"]
    assert len(after_result) >= 10 and all(c.expected_answer for c in after_result)
    assert sum(bool(c.expected_answer) for c in none) >= 30
    assert any(not c.expected_answer for c in none)  # no offered tool fits: any prose is right


@pytest.mark.parametrize("split", list(generate_cases.SPLITS))
def test_a_perfect_call_is_right_and_valid_and_a_stripped_path_is_not(split: str) -> None:
    for c in SPLITS[split]:
        if c.expected:
            r = score_turn(c, Generation(reference_turn(c)))
            assert r.right and not r.schema_errors, (c.id, r.detail, r.schema_errors)
    c = next((c for c in SPLITS[split] if c.id.startswith(f"{split}-read_file-") and "../" in c.expected[0].arguments["path"][0]), None)
    if c is None:  # its draws gave no such path (test2)
        assert split not in ("dev", "test")
        return
    stripped = c.expected[0].arguments["path"][0].removeprefix("../")
    assert score_turn(c, Generation(render_call("read_file", {"path": stripped}))).error is ErrorClass.WRONG_VALUE


def test_answer_patterns_accept_the_answer_and_reject_other_prose() -> None:
    rng = generate_cases.random.Random(0)
    for fam in case_families.FAMILIES:
        d = fam.draw(rng)
        for p in d.answer:
            assert re.search(p, d.example), (fam.name, p)
            assert not re.search(p, "I am not sure; could you tell me more?"), (fam.name, p)
    reverse = next(c for c in SPLITS["test"] if c.id.startswith("test-none_reverse-"))
    word = re.search(r'"(\w+)"|(\w+)\.$', reverse.messages[0]["content"])
    assert word and score_turn(reverse, Generation(f"It is {word.group(1) or word.group(2)}.")).error is ErrorClass.WRONG_ANSWER


@pytest.mark.parametrize("n, text", [(7, "seven"), (25, "twenty-five"), (40, "forty"), (300, "three hundred"),
                                     (1500, "one thousand five hundred"), (2000, "two thousand"), (120, "one hundred and twenty")])
def test_numbers_in_words(n: int, text: str) -> None:
    assert case_families.words(n) == text
