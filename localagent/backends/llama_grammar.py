"""A GBNF matcher over llama.cpp's native grammar sampler, failing closed.

Two uses of one primitive: ``allows(token)`` checks a single candidate (the
cheap check the fast path makes on the token it sampled), ``mask(logits)``
checks the whole vocabulary (what llama-cpp-python's stock path does on every
token). Nothing here raises inside a sampler callback, so no error can be
swallowed by ctypes and let generation go on unconstrained.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

import llama_cpp

from ..errors import ConstraintError

_NEG_INF = float("-inf")


class GrammarMatcher:
    """The state of one grammar while one reply is generated."""

    def __init__(self, vocab: Any, n_vocab: int, gbnf: str, root: str = "root"):
        self._smpl = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), root.encode("utf-8"))
        if not self._smpl:
            raise ConstraintError("llama.cpp could not parse the grammar (see --verbose for its log)")
        self.n_vocab = n_vocab
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_arr = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._one, llama_cpp.llama_token_data_p), size=1, selected=-1, sorted=False
        )
        self._full: Any = None
        self._full_np: np.ndarray | None = None

    def allows(self, token: int) -> bool:
        """Whether ``token`` may come next (one-candidate check, microseconds)."""
        self._one[0].id = token  # type: ignore[assignment]  # ctypes converts the int
        self._one[0].logit = 0.0
        self._one[0].p = 0.0
        self._one_arr.size = 1
        self._one_arr.selected = -1
        llama_cpp.llama_sampler_apply(self._smpl, ctypes.byref(self._one_arr))
        return bool(self._one[0].logit != _NEG_INF)

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the grammar forbids set to -inf."""
        if self._full is None:
            self._full = (llama_cpp.llama_token_data * self.n_vocab)()
            dtype = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)
            self._full_np = np.ctypeslib.as_array(self._full).view(dtype)
        assert self._full_np is not None
        self._full_np["id"] = np.arange(self.n_vocab, dtype=np.int32)
        self._full_np["logit"] = logits[: self.n_vocab]
        arr = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._full, llama_cpp.llama_token_data_p),
            size=self.n_vocab,
            selected=-1,
            sorted=False,
        )
        llama_cpp.llama_sampler_apply(self._smpl, ctypes.byref(arr))
        if arr.size != self.n_vocab:
            raise ConstraintError("the grammar sampler changed the candidate list; cannot trust the mask")
        out = np.full(self.n_vocab, _NEG_INF, dtype=np.float32)
        out[self._full_np["id"]] = self._full_np["logit"]
        return out

    def accept(self, token: int) -> None:
        """Advance the grammar past ``token`` (which must be allowed)."""
        llama_cpp.llama_sampler_accept(self._smpl, token)

    def close(self) -> None:
        """Free the native sampler."""
        if self._smpl:
            llama_cpp.llama_sampler_free(self._smpl)
            self._smpl = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass
