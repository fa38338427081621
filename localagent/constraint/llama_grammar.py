"""A GBNF matcher over llama.cpp's native grammar sampler, failing closed.

Two uses of one primitive: ``allows(token)`` checks a single candidate (the
cheap check the fast path makes on the token it sampled), ``mask(logits)``
checks the whole vocabulary (what llama-cpp-python's stock path does on every
token).

Failing closed: no Python code runs inside a sampler callback here, so ctypes
cannot swallow an error ("Exception ignored") and let generation go on
unconstrained. An error of the engine itself is never raised into the decoder
either: the matcher records it in ``error`` and from then on allows nothing, so
any decoder that obeys ``allows`` and ``mask`` ends the step with a constraint
error instead of generating. ``accept`` checks the token first: llama.cpp
answers a token its grammar rejects with a C++ exception, which aborts the
whole process.
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
            raise ConstraintError("llama.cpp could not parse the grammar (`verbose` shows its log)")
        self.n_vocab = n_vocab
        self.error: str | None = None  # set once the engine failed; nothing is allowed after
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_arr = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._one, llama_cpp.llama_token_data_p), size=1, selected=-1, sorted=False
        )
        self._full: Any = None
        self._full_np: np.ndarray | None = None

    def _fail(self, what: str) -> None:
        if self.error is None:
            self.error = f"the grammar engine failed: {what}; the step is stopped (fail closed)"

    def allows(self, token: int) -> bool:
        """Whether ``token`` may come next (one-candidate check, microseconds)."""
        if self.error is not None or self._smpl is None:
            return False
        try:
            self._one[0].id = token  # type: ignore[assignment]  # ctypes converts the int
            self._one[0].logit = 0.0
            self._one[0].p = 0.0
            self._one_arr.size = 1
            self._one_arr.selected = -1
            llama_cpp.llama_sampler_apply(self._smpl, ctypes.byref(self._one_arr))
            return bool(self._one[0].logit != _NEG_INF)
        except Exception as e:  # a broken binding or state: allow nothing from here on
            self._fail(f"checking token {token} raised {type(e).__name__}: {e}")
            return False

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the grammar forbids set to -inf (all of them
        once the engine has failed)."""
        out = np.full(self.n_vocab, _NEG_INF, dtype=np.float32)
        if self.error is not None or self._smpl is None:
            return out
        try:
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
                self._fail("the grammar sampler changed the candidate list, so its mask cannot be trusted")
                return out
            out[self._full_np["id"]] = self._full_np["logit"]
            return out
        except Exception as e:
            self._fail(f"masking the vocabulary raised {type(e).__name__}: {e}")
            return np.full(self.n_vocab, _NEG_INF, dtype=np.float32)

    def accept(self, token: int) -> None:
        """Advance the grammar past ``token``. A token the grammar does not allow is
        refused here (llama.cpp would abort the process) and ends the matcher."""
        if self.error is not None:
            return
        if not self.allows(token):
            self._fail(f"token {token} was accepted though the grammar does not allow it")
            return
        try:
            llama_cpp.llama_sampler_accept(self._smpl, token)
        except Exception as e:
            self._fail(f"accepting token {token} raised {type(e).__name__}: {e}")

    def jump(self) -> None:
        """llama.cpp's grammar does not say which tokens it forces: the decoder reads them
        off the text (``jump.py``)."""
        return None

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
