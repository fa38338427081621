"""The second constraint engine: outlines-core's regex index over the model's vocabulary.

It offers the same three operations as ``llama_grammar.GrammarMatcher``
(``allows``, ``accept``, ``mask``), so the decoder does not know which engine
it drives. Building an index walks the whole vocabulary once per regex (about
a second for the 0.5B model's 151,936 tokens); the backend caches them.
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
        self._state = index.get_initial_state()

    def allows(self, token: int) -> bool:
        """Whether ``token`` may come next; end of sequence only in a final state."""
        if token in self._eog:
            return bool(self._index.is_final_state(self._state))
        return self._index.get_next_state(self._state, token) is not None

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the regex forbids set to -inf."""
        out = np.full(logits.shape[0], -np.inf, dtype=np.float32)
        allowed = list(self._index.get_allowed_tokens(self._state) or [])
        allowed = [t for t in allowed if t < logits.shape[0] and (t not in self._eog or self._index.is_final_state(self._state))]
        if self._index.is_final_state(self._state):
            allowed += [t for t in self._eog if t < logits.shape[0]]
        if allowed:
            idx = np.asarray(allowed, dtype=np.int64)
            out[idx] = logits[idx]
        return out

    def accept(self, token: int) -> None:
        """Advance past ``token`` (which must be allowed)."""
        if token in self._eog:
            return
        nxt = self._index.get_next_state(self._state, token)
        if nxt is None:
            raise ConstraintError(f"token {token} is not allowed here")
        self._state = nxt

    def close(self) -> None:
        """Nothing to free: the index is shared and cached."""
