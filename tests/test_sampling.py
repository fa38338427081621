"""The sampler chain (``localagent.sampling``) on rows of logits, no model: each filter's
effect, llama.cpp's order, a refused token never drawn, the seed, and greedy unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from localagent.sampling import Sampler

# Probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1; then 6 tokens far below.
PROBS = [0.5, 0.3, 0.15, 0.05]
ROW = np.array([math.log(p) for p in PROBS] + [-30.0] * 6, dtype=np.float32)
OFF = dict(top_k=0, top_p=1.0, min_p=0.0)  # every filter at its neutral value


def drawn(sampler: Sampler, row: np.ndarray = ROW, n: int = 400, seed: int = 0) -> set[int]:
    rng = np.random.default_rng(seed)
    return {sampler.sample(row, rng) for _ in range(n)}


def test_without_filters_every_likely_token_can_be_drawn() -> None:
    assert drawn(Sampler(temperature=1.0, **OFF)) == {0, 1, 2, 3}


def test_top_k_keeps_the_k_best() -> None:
    assert drawn(Sampler(temperature=1.0, **{**OFF, "top_k": 2})) == {0, 1}
    assert drawn(Sampler(temperature=1.0, **{**OFF, "top_k": 1})) == {0}


def test_top_p_keeps_the_smallest_set_that_reaches_p() -> None:
    assert drawn(Sampler(temperature=1.0, **{**OFF, "top_p": 0.75})) == {0, 1}
    assert drawn(Sampler(temperature=1.0, **{**OFF, "top_p": 0.9})) == {0, 1, 2}


def test_min_p_drops_tokens_below_a_share_of_the_best() -> None:
    assert drawn(Sampler(temperature=1.0, **{**OFF, "min_p": 0.2})) == {0, 1, 2}  # 0.05 < 0.2 * 0.5
    assert drawn(Sampler(temperature=1.0, **{**OFF, "min_p": 0.5})) == {0, 1}


def test_the_filters_come_before_the_temperature() -> None:
    # llama.cpp's order: the filters see the probabilities at temperature 1, so a high
    # temperature flattens what they kept and lets nothing else back in.
    s = Sampler(temperature=50.0, **{**OFF, "top_p": 0.75})
    assert s.candidates(ROW)[0].tolist() == [0, 1]
    assert drawn(s) == {0, 1}


def test_top_k_comes_before_top_p() -> None:
    # After top-k 2 the two left are renormalised (0.625, 0.375): top-p 0.6 keeps one.
    s = Sampler(temperature=1.0, **{**OFF, "top_k": 2, "top_p": 0.6})
    assert s.candidates(ROW)[0].tolist() == [0]


def test_the_repetition_penalty_is_llama_cpps() -> None:
    row = np.array([2.0, -2.0, 2.0, 1.0], dtype=np.float32)
    s = Sampler(repeat_penalty=2.0, penalty_last_n=2)
    out = s.penalize(row, [3, 0, 1, 1])  # only the last 2 (1, 1) count: token 1 once
    assert out.tolist() == [2.0, -4.0, 2.0, 1.0]
    out = s.penalize(row, [1, 0])
    assert out.tolist() == [1.0, -4.0, 2.0, 1.0]  # positive divided, negative multiplied
    assert row.tolist() == [2.0, -2.0, 2.0, 1.0]  # the row itself is not changed
    assert Sampler().penalize(row, [0, 1]) is row  # penalty 1: nothing to do


def test_the_penalty_changes_the_choice() -> None:
    row = np.array([3.0, 2.0, 0.0], dtype=np.float32)
    s = Sampler(temperature=0.0, repeat_penalty=2.0)
    assert s.sample(s.penalize(row, [0]), np.random.default_rng(0)) == 1
    assert s.sample(row, np.random.default_rng(0)) == 0


def test_a_refused_token_is_never_drawn() -> None:
    masked = ROW.copy()
    masked[[0, 1]] = -np.inf  # the constraint refuses the two best
    assert drawn(Sampler(temperature=1.0), masked) <= {2, 3}
    only = np.full(10, -np.inf, dtype=np.float32)
    only[7] = -50.0
    assert drawn(Sampler(temperature=1.0), only, n=20) == {7}


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_seed_fixes_the_draws(seed: int) -> None:
    s = Sampler(temperature=1.2, **OFF)

    def draws(seed: int) -> list[int]:
        rng = np.random.default_rng(seed)
        return [s.sample(ROW, rng) for _ in range(50)]

    assert draws(seed) == draws(seed)
    assert draws(seed) != draws(seed + 100)


def test_greedy_is_the_argmax_whatever_the_filters() -> None:
    rng = np.random.default_rng(0)
    for kw in (OFF, {"top_k": 1}, {"top_p": 0.1, "min_p": 0.9}, {}):
        assert Sampler(temperature=0.0, **kw).sample(ROW, rng) == 0
    row = np.random.default_rng(3).normal(size=1000).astype(np.float32)
    assert Sampler().sample(row, rng) == int(np.argmax(row))
