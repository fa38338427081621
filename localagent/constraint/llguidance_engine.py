"""A constraint engine: llguidance (the Rust engine llama.cpp can also be built with).

It implements ``Matcher`` (the package's protocol) as ``llama_grammar.GrammarMatcher`` does (``allows``,
``accept``, ``mask``), so the decoder does not know which engine it drives, and it fails closed the
same way: llguidance never raises for a bad grammar or a refused token, it enters an error
state, which the matcher records in ``error``; from then on nothing is allowed. It also knows the tokens the grammar
forces next (``jump``), so the decoder inserts those instead of reading them off the text.

The constraint is a Lark grammar (``build_lark``): the envelope of ``grammars/calls.gbnf``,
the prose of ``grammars/prose.gbnf`` converted, and each tool's arguments as llguidance's own
JSON-schema rule over the schema as written. llguidance matches a pattern against the
decoded string and writes it JSON-quoted, takes any bound, and enforces the common string
formats, so none of ``grammar.engine_safe``'s rewriting is needed; only what it cannot
compile (a lookaround, ``\\b``) is left to the validator.

llguidance is an optional dependency (``pip install localagent[llguidance]``), imported
here only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import ConstraintError
from ..formats import CALL_CLOSE, CALL_OPEN
from . import MAX_CALLS
from .grammar import _SCHEMA_MAPS, _VERBATIM, ToolChoice, _literal, _tools_for, load_grammar_file

SPECIAL = b"\xff"  # llguidance's mark on a special token's bytes: text can never spell it
# The canonical spacing of grammar.canonical_spacing, one layout of the punctuation:
# {"a": 1, "b": [2, 3]}. Lenient: a keyword llguidance does not implement is left to the validator.
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": ", "lenient": True}
# grammars/calls.gbnf in Lark: there a call's rules must be Lark rules (lower case), since
# each tool's arguments are llguidance's JSON-schema rule (%json), which GBNF cannot hold.
CALLS = (
    f"call_block: {json.dumps(CALL_OPEN + chr(10))} call {json.dumps(chr(10) + CALL_CLOSE)}\n"
    f'calls_many: call_block ("\\n" call_block){{0,{MAX_CALLS - 1}}}\n'
    "calls_one: call_block"
)


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


def tokenizer(pieces: Sequence[bytes], eos: int, encode: Callable[[bytes], list[int]]) -> Any:
    """An ``LLTokenizer`` from the vocabulary (token id -> its bytes, special tokens prefixed
    with ``SPECIAL``) and the model's encoder. About half a second for 150k tokens: keep it.

    Which tokens are special is the caller's to say: llama.cpp's grammar reads a user-defined
    token such as Qwen's ``<tool_call>`` as its text, and so must this engine (llguidance's own
    ``lltokenizer_from_vocab`` marks it special, and then no call can be opened with it)."""
    llg = _llguidance()
    # One end token is enough: the matcher itself allows every end-of-generation token where the
    # grammar may end, and the others are special, so never text.
    return llg.LLTokenizer(llg.TokenizerWrapper(_Vocabulary(pieces, eos, encode)), eos_token=eos)


# -- the constraint, as a Lark grammar ------------------------------------------------


def build_lark(
    tools: list[dict[str, Any]],
    choice: ToolChoice = ToolChoice(),
    *,
    parallel: bool = True,
    reason: bool = False,
) -> str:
    """The language of ``grammar.build_grammar`` as an llguidance Lark grammar, each tool's
    arguments checked by llguidance's JSON-schema rule."""
    key = tuple(json.dumps(t) for t in tools)
    return _lark_cached(key, choice, parallel, reason)


@lru_cache(maxsize=64)
def _lark_cached(tools_key: tuple[str, ...], choice: ToolChoice, parallel: bool, reason: bool) -> str:
    tools, choice = _tools_for(tools_key, choice)
    calls = ("THOUGHT " if reason else "") + ("calls_many" if parallel else "calls_one")
    root = {"auto": f"PROSE | {calls}", "required": calls, "none": "PROSE"}[choice.mode]
    parts = [f"start: {root}", _prose_lark()]
    if choice.mode != "none":
        parts.append(CALLS)
        parts.append("call: " + " | ".join(f"call{i}" for i in range(len(tools))))
        for i, t in enumerate(tools):
            schema = t.get("parameters") or {"type": "object", "properties": {}}
            head = '{"name": ' + _literal(t["name"]) + ', "arguments": '
            parts.append(f"call{i}: {json.dumps(head)} args{i} \"}}\"")
            args = json.dumps({**engine_ready(schema), "x-guidance": JSON_OPTIONS}, ensure_ascii=False)
            if why := _refused(args):  # said here, as under gbnf, not first by the backend
                raise ConstraintError(f"cannot build a grammar for the schema of '{t['name']}': {why}")
            parts.append(f"args{i}: %json {args}")
    return "\n".join(parts) + "\n"


@lru_cache(maxsize=256)
def _refused(schema: str) -> str | None:
    """Why llguidance cannot compile the JSON schema ``schema``, or None when it can."""
    llg = _llguidance()
    grammar = llg.LLMatcher.grammar_from_json_schema(schema)
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar)
    return _first_line(messages[0] if messages else "") if is_error else None


@lru_cache(maxsize=1)
def _prose_lark() -> str:
    """``grammars/prose.gbnf`` (PROSE, THOUGHT) in Lark, through llguidance's own converter."""
    _llguidance()  # without the package: the one-line install hint, not a ModuleNotFoundError
    from llguidance.gbnf_to_lark import gbnf_to_lark

    lark = gbnf_to_lark("root ::= prose thought\n" + load_grammar_file("prose"))
    return re.sub(r"\A%llguidance \{\}\s*start:[^\n]*\n", "", lark)  # the converter's header and our stand-in root


def engine_ready(schema: Any) -> Any:
    """``schema`` as llguidance should enforce it: an object with ``properties`` and no word
    on others closed (``additionalProperties: false``, as the other two engines read it),
    and a ``pattern`` llguidance cannot compile (a lookaround, ``\\b``, a back reference)
    dropped, for the validator to check. Everything else is taken as written."""
    if isinstance(schema, list):
        return [engine_ready(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            out[k] = {name: engine_ready(sub) for name, sub in v.items()}  # keys are names here
        elif k in _VERBATIM:
            out[k] = v
        elif k == "pattern" and isinstance(v, str):
            if _compiles(v):
                out[k] = v
        else:
            out[k] = engine_ready(v)
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


@lru_cache(maxsize=256)
def _compiles(pattern: str) -> bool:
    """Whether llguidance can compile ``pattern`` as a JSON Schema pattern."""
    llg = _llguidance()
    grammar = llg.LLMatcher.grammar_from_json_schema({"type": "string", "pattern": pattern})
    return not llg.LLMatcher.validate_grammar_with_warnings(grammar)[0]


def start_matcher(tok: Any, text: str) -> Any:
    """An llguidance matcher at the start of ``text``, a Lark grammar (``build_lark``) or a GBNF
    one, over ``tok``; ``ConstraintError`` if llguidance cannot use it. Keep it: each reply's
    ``LLGuidanceMatcher`` starts from a copy, which costs less than compiling again."""
    llg = _llguidance()
    try:
        grammar = llg.grammar_from("gbnf", text)  # Lark as it is, GBNF through the converter
    except ValueError as e:
        raise ConstraintError(f"llguidance could not read the grammar: {e}") from None
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar, tok)
    if is_error:
        raise ConstraintError(f"llguidance refused the grammar: {_first_line(messages[0] if messages else '')}")
    start = llg.LLMatcher(tok, grammar, log_level=0)
    if start.is_error():
        raise ConstraintError(f"llguidance could not start the constraint: {_first_line(start.get_error())}")
    return start


def _first_line(message: str) -> str:
    """llguidance's message without the grammar and parser state it appends."""
    return message.strip().splitlines()[0] if message.strip() else "no reason given"


class LLGuidanceMatcher:
    """The state of one llguidance grammar while one reply is generated, from a copy of ``start``
    (``start_matcher``)."""

    def __init__(self, start: Any, eog: set[int], n_vocab: int):
        self._matcher = start.deep_copy()
        self._n_vocab = n_vocab
        self._eog = eog
        self.error: str | None = None  # set once the engine failed; nothing is allowed after

    def _failed(self, what: str) -> bool:
        """True (and ``error`` set) when the engine is in its error state after ``what``."""
        if self.error is None and self._matcher.is_error():
            self.error = f"the llguidance engine failed {what}: {_first_line(self._matcher.get_error())}; the step is stopped (fail closed)"
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
        """The tokens the grammar allows no alternative to from here (none once failed). A last
        token that could still grow into a longer one (``": "`` before ``"``) is left out."""
        if self.error is not None:
            return []
        tokens = list(self._matcher.compute_ff_tokens())
        return [] if self._failed("computing forced tokens") else tokens

    def jump(self) -> tuple[list[int], bool]:
        """``forced()``, and whether nothing but the end of the reply may follow those tokens."""
        tokens = self.forced()
        if not tokens:
            return [], False
        probe = self._matcher.deep_copy()
        ends = bool(probe.consume_tokens(tokens)) and bool(probe.is_stopped()) and not probe.is_error()
        return tokens, ends

    def close(self) -> None:
        """Nothing to free: the matcher goes with its last reference."""
