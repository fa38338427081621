"""A third constraint engine: llguidance (the Rust engine llama.cpp can also be built with).

It offers the same three operations as ``llama_grammar.GrammarMatcher`` and
``outlines_engine.OutlinesMatcher`` (``allows``, ``accept``, ``mask``), so the decoder
does not know which engine it drives, and it fails closed the same way: llguidance never
raises for a bad grammar or a refused token, it enters an error state, which the matcher
records in ``error``; from then on nothing is allowed. It reads our GBNF as it is (through
its GBNF-to-Lark converter), computes a whole mask without walking the vocabulary in
Python, and knows the tokens the grammar forces next (``forced``, for jump-forward).

llguidance is an optional dependency (``pip install localagent[llguidance]``), imported
here only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ConstraintError

SPECIAL = b"\xff"  # llguidance's mark on a special token's bytes: text can never spell it


def _llguidance() -> Any:
    try:
        import llguidance
    except ImportError:
        raise ConstraintError("the llguidance engine needs the llguidance package: pip install 'localagent[llguidance]'") from None
    return llguidance


class _Vocabulary:
    """What ``llguidance.TokenizerWrapper`` reads: the tokens' bytes, the end token, an encoder."""

    def __init__(self, pieces: Sequence[bytes], eos: int, encode: Callable[[bytes], list[int]]):
        self.tokens, self.eos_token_id, self.bos_token_id = list(pieces), eos, None
        self.special_token_ids = [i for i, p in enumerate(self.tokens) if p.startswith(SPECIAL)]
        self._encode = encode

    def __call__(self, text: bytes) -> list[int]:
        return self._encode(text)


def tokenizer(pieces: Sequence[bytes], eos: int | list[int], encode: Callable[[bytes], list[int]]) -> Any:
    """An ``LLTokenizer`` from the vocabulary (token id -> its bytes, special tokens prefixed
    with ``SPECIAL``) and the model's encoder. About a second for 150k tokens: keep it."""
    llg = _llguidance()
    first = eos[0] if isinstance(eos, list) else eos
    return llg.LLTokenizer(llg.TokenizerWrapper(_Vocabulary(pieces, first, encode)), eos_token=eos)


def tokenizer_from_llama(vocab: Any, n_vocab: int | None = None) -> Any:
    """The ``LLTokenizer`` of a loaded llama.cpp model (its ``llama_vocab_p``)."""
    _llguidance()
    from llguidance.llamacpp import lltokenizer_from_vocab

    return lltokenizer_from_vocab(vocab, n_vocab)


def compile_grammar(gbnf: str, tok: Any) -> str:
    """Our GBNF as an llguidance grammar, checked against ``tok``; ``ConstraintError`` if it is not one."""
    llg = _llguidance()
    try:
        grammar = llg.grammar_from("gbnf", gbnf)
    except ValueError as e:
        raise ConstraintError(f"llguidance could not read the grammar: {e}") from None
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar, tok)
    if is_error:
        raise ConstraintError(f"llguidance refused the grammar: {messages[0] if messages else 'no reason given'}")
    return str(grammar)


class LLGuidanceMatcher:
    """The state of one llguidance grammar while one reply is generated."""

    def __init__(self, tok: Any, grammar: str, eog: set[int]):
        self._matcher = _llguidance().LLMatcher(tok, grammar, log_level=0)
        self._n_vocab = int(tok.vocab_size)
        self._eog = eog
        self.error: str | None = None  # set once the engine failed; nothing is allowed after
        if self._matcher.is_error():
            raise ConstraintError(f"llguidance could not start the constraint: {self._matcher.get_error()}")

    def _failed(self, what: str) -> bool:
        """True (and ``error`` set) when the engine is in its error state after ``what``."""
        if self.error is None and self._matcher.is_error():
            self.error = f"the llguidance engine failed {what}: {self._matcher.get_error()}; the step is stopped (fail closed)"
        return self.error is not None

    def allows(self, token: int) -> bool:
        """Whether ``token`` may come next; an end-of-generation token only where the grammar may end."""
        if self._failed("earlier"):
            return False
        if token in self._eog:
            return bool(self._matcher.is_accepting())
        return 0 <= token < self._n_vocab and self._matcher.validate_tokens([token]) == 1

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the grammar forbids set to -inf (all of them once the engine
        failed). Where the grammar fixes the next bytes, only their canonical token is kept (the
        whole ``<tool_call>``, not ``<``), so the mask is within what ``allows`` takes."""
        out = np.full(logits.shape[0], -np.inf, dtype=np.float32)
        if self._failed("earlier"):
            return out
        bits = np.unpackbits(np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")
        if self._failed("computing the mask"):
            return out
        allowed = np.zeros(logits.shape[0], dtype=bool)
        n = min(logits.shape[0], self._n_vocab, bits.shape[0])
        allowed[:n] = bits[:n].astype(bool)
        ends = [t for t in self._eog if t < logits.shape[0]]
        allowed[ends] = bool(self._matcher.is_accepting())  # ours, whatever llguidance counts as an end
        out[allowed] = logits[allowed]
        return out

    def accept(self, token: int) -> None:
        """Advance past ``token``. A token the grammar does not allow ends the matcher."""
        if self.error is not None or token in self._eog:
            return
        if not self._matcher.consume_token(token) and not self._failed(f"at token {token}"):
            self.error = f"token {token} was accepted though the grammar does not allow it; the step is stopped (fail closed)"

    def forced(self) -> list[int]:
        """The tokens the grammar allows no alternative to from here (none once failed)."""
        if self.error is not None:
            return []
        tokens = list(self._matcher.compute_ff_tokens())
        return [] if self._failed("computing forced tokens") else tokens

    def close(self) -> None:
        """Nothing to free: the matcher goes with its last reference."""
