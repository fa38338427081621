"""The second constraint engine: outlines-core's regex index over the model's vocabulary.

It offers the same three operations as ``llama_grammar.GrammarMatcher``
(``allows``, ``accept``, ``mask``), so the decoder does not know which engine
it drives, and fails closed the same way: an error of the index is recorded in
``error`` and from then on nothing is allowed. Building an index walks the
whole vocabulary once per regex (about a second for the 0.5B model's 151,936
tokens); the backend caches them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConstraintError


def build_index(regex: str, token_bytes: dict[bytes, list[int]], eos: int) -> Any:
    """An outlines-core ``Index`` for ``regex``; ``ConstraintError`` if it cannot be built."""
    from outlines_core import Index, Vocabulary

    try:
        return Index(regex, Vocabulary(eos, token_bytes))
    except Exception as e:  # outlines-core raises its own error types
        raise ConstraintError(f"outlines could not build an index for the constraint: {e}") from None


class OutlinesMatcher:
    """The state of one regex index while one reply is generated."""

    def __init__(self, index: Any, eog: set[int]):
        self._index = index
        self._eog = eog
        self.error: str | None = None  # set once the index failed; nothing is allowed after
        try:
            self._state = index.get_initial_state()
        except Exception as e:
            raise ConstraintError(f"outlines could not start the constraint: {type(e).__name__}: {e}") from None

    def _fail(self, what: str) -> None:
        if self.error is None:
            self.error = f"the outlines index failed: {what}; the step is stopped (fail closed)"

    def allows(self, token: int) -> bool:
        """Whether ``token`` may come next; end of sequence only in a final state."""
        if self.error is not None:
            return False
        try:
            if token in self._eog:
                return bool(self._index.is_final_state(self._state))
            return self._index.get_next_state(self._state, token) is not None
        except Exception as e:
            self._fail(f"checking token {token} raised {type(e).__name__}: {e}")
            return False

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the regex forbids set to -inf (all of them
        once the index has failed)."""
        out = np.full(logits.shape[0], -np.inf, dtype=np.float32)
        if self.error is not None:
            return out
        try:
            final = bool(self._index.is_final_state(self._state))
            allowed = [t for t in (self._index.get_allowed_tokens(self._state) or []) if t < logits.shape[0] and t not in self._eog]
        except Exception as e:
            self._fail(f"masking the vocabulary raised {type(e).__name__}: {e}")
            return out
        if final:
            allowed += [t for t in self._eog if t < logits.shape[0]]
        if allowed:
            idx = np.asarray(allowed, dtype=np.int64)
            out[idx] = logits[idx]
        return out

    def accept(self, token: int) -> None:
        """Advance past ``token``. A token the regex does not allow ends the matcher."""
        if self.error is not None or token in self._eog:
            return
        try:
            nxt = self._index.get_next_state(self._state, token)
        except Exception as e:
            self._fail(f"accepting token {token} raised {type(e).__name__}: {e}")
            return
        if nxt is None:
            self._fail(f"token {token} was accepted though the regex does not allow it")
            return
        self._state = nxt

    def close(self) -> None:
        """Nothing to free: the index is shared and cached."""
