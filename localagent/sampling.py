"""The sampler chain above temperature 0, as llama.cpp's default chain has it: the repetition
penalty, then top-k, top-p, min-p, the temperature, and a draw from a seeded generator.

Pure numpy over a row of logits, so the in-process decoder and the tests share it. Under a
constraint the decoder calls it twice at most, as llama.cpp's ``common_sampler_sample`` does:
on the raw row first, and when the constraint refuses the token drawn, again on the row
masked to the tokens the constraint allows (-inf elsewhere), so the token it returns is
always an allowed one. At temperature 0 it is the argmax: greedy decoding is unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Sampler:
    """The chain's settings; a filter at its neutral value (top_k 0, top_p 1, min_p 0,
    repeat_penalty 1) is left out. The defaults are llama.cpp's."""

    temperature: float = 0.0
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    penalty_last_n: int = 64  # the tokens the penalty looks back on (prompt and reply), as llama.cpp

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0

    def penalize(self, logits: np.ndarray, context: list[int]) -> np.ndarray:
        """``logits`` with the repetition penalty applied to the tokens among the last
        ``penalty_last_n`` of ``context``: a positive logit divided by it, a negative one
        multiplied (llama.cpp's rule). The row itself when the penalty is 1."""
        if self.repeat_penalty == 1.0 or self.penalty_last_n <= 0 or not context:
            return logits
        seen = np.unique(np.asarray(context[-self.penalty_last_n :], dtype=np.int64))
        seen = seen[(seen >= 0) & (seen < len(logits))]
        out = logits.astype(np.float32, copy=True)
        vals = out[seen]
        out[seen] = np.where(vals <= 0, vals * self.repeat_penalty, vals / self.repeat_penalty)
        return out

    def candidates(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tokens top-k, top-p and min-p leave (best first) and their logits, before
        the temperature. Tokens at -inf (refused by a constraint) are never among them
        unless nothing else is left."""
        n = len(logits)
        k = self.top_k if 0 < self.top_k < n else n
        ids = np.argpartition(-logits, k - 1)[:k] if k < n else np.arange(n)
        ids = ids[np.argsort(-logits[ids], kind="stable")]
        z = logits[ids].astype(np.float64)
        finite = int(np.isfinite(z).sum())
        keep = max(1, finite)
        if self.top_p < 1.0 and finite:
            p = np.exp(z[:finite] - z[0])
            cum = np.cumsum(p / p.sum())
            keep = min(keep, int(np.searchsorted(cum, self.top_p)) + 1)  # the token that reaches p is kept
        if self.min_p > 0.0 and finite:
            floor = z[0] + math.log(self.min_p)  # p >= min_p * p_max, on the logits
            keep = min(keep, max(1, int((z[:keep] >= floor).sum())))
        return ids[:keep], z[:keep]

    def sample(self, logits: np.ndarray, rng: np.random.Generator) -> int:
        """One token from ``logits``: the argmax at temperature 0, else a draw from ``rng``
        over what the filters leave, at the temperature."""
        if self.greedy:
            return int(np.argmax(logits))
        ids, z = self.candidates(logits)
        if len(ids) == 1:
            return int(ids[0])
        z = z / self.temperature
        p = np.exp(z - z[0])
        p /= p.sum()
        return int(ids[int(rng.choice(len(ids), p=p))])
