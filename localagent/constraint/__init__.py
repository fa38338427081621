"""The constraint on the model's output: the grammar built from the tools' schemas
(``grammar``), the engines that enforce it token by token behind one ``Matcher`` protocol
(``llama_grammar``: GBNF through llama.cpp; ``llguidance_engine``), ``FailClosed``, which wraps
any of them (both here, so that the decoder knows no engine), and jump-forward, the text the
constraint fixes next (``jump``)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

_NEG_INF = float("-inf")
MAX_CALLS = 8  # the calls one turn may hold: the bound both engines' grammars write


class Matcher(Protocol):
    """The state of one constraint while one reply is generated. An engine never raises for a
    failure of its own: it records it in ``error``, and from then on allows nothing."""

    @property
    def error(self) -> str | None:
        """Why the constraint failed; None while it holds."""
        ...

    def allows(self, token: int) -> bool:
        """Whether ``token`` may come next (the cheap check on the token sampled)."""
        ...

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the constraint forbids set to -inf."""
        ...

    def accept(self, token: int) -> None:
        """Advance past ``token``; one not allowed ends the matcher (``error`` set)."""
        ...

    def jump(self) -> tuple[list[int], bool] | None:
        """The tokens the constraint forces next and whether the reply ends after them; None
        from an engine that cannot say (the decoder then reads them off the text, ``jump.py``)."""
        ...

    def close(self) -> None:
        """Free what the engine holds."""
        ...


class FailClosed:
    """Any matcher, with whatever it raises turned into the failed state: the
    error is kept in ``error`` and nothing is allowed after it. The decoder wraps
    every matcher in one, so no exception from a constraint engine can escape
    the step or let it go on unconstrained."""

    def __init__(self, inner: Matcher):
        self._inner = inner
        self._error: str | None = None

    @property
    def error(self) -> str | None:
        """Why the constraint failed, from the engine or from here; None while it holds."""
        return self._error or self._inner.error

    def _fail(self, what: str, e: Exception) -> None:
        if self._error is None:
            self._error = f"the constraint engine failed: {what} raised {type(e).__name__}: {e}; the step is stopped (fail closed)"

    def allows(self, token: int) -> bool:
        """The inner ``allows``; False once anything failed."""
        if self.error is not None:
            return False
        try:
            return bool(self._inner.allows(token))
        except Exception as e:
            self._fail(f"checking token {token}", e)
            return False

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """The inner ``mask``; every token at -inf once anything failed."""
        blocked = np.full(logits.shape[0], _NEG_INF, dtype=np.float32)
        if self.error is not None:
            return blocked
        try:
            out = self._inner.mask(logits)
        except Exception as e:
            self._fail("masking the vocabulary", e)
            return blocked
        return blocked if self.error is not None else out

    def accept(self, token: int) -> None:
        """The inner ``accept``, unless something already failed."""
        if self.error is not None:
            return
        try:
            self._inner.accept(token)
        except Exception as e:
            self._fail(f"accepting token {token}", e)

    def jump(self) -> tuple[list[int], bool] | None:
        """The inner engine's forced tokens and whether they end the reply, or None from an
        engine that does not know them. Nothing is forced once anything failed."""
        try:
            forced = self._inner.jump()  # asked even after a failure: None still means "cannot say"
        except Exception as e:
            self._fail("computing the forced tokens", e)
            return [], False
        if forced is None:
            return None
        return ([], False) if self.error is not None else (list(forced[0]), bool(forced[1]))

    def close(self) -> None:
        """The inner ``close``; an error there cannot matter any more."""
        try:
            self._inner.close()
        except Exception:
            pass
