"""The in-process backend: a GGUF model through llama-cpp-python.

``LlamaBackend`` loads the model, shapes the prompt, keeps the KV cache warm (between
calls, and on disk for the system turn) and builds the constraint's matcher; it is the
``LogitsModel`` that ``decoder.Decoder``, our own decoding loop, runs over.

It uses ``Llama`` and llama.cpp's C API (through the bindings), and goes past them in two
ways: it sets ``Llama``'s token bookkeeping (``input_ids``, ``n_tokens``) where it rewinds,
loads a saved state or decodes a batch itself, and it patches the bindings'
``llama_model_default_params`` while a model loads (``model_defaults``). Elsewhere
``llama_cpp`` is used by ``prefix_cache`` (state files), ``constraint.llama_grammar`` (the
grammar sampler), ``constraint.grammar`` (the schema converter), ``evaluation.llama_server``
(llama-cpp-python's own server), and the bench, which runs the stock grammar path to compare,
wraps ``llama_decode`` to time it and empties a backend's cache by setting its ``llm.n_tokens``.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
import time
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from tqdm import tqdm

import llama_cpp
from llama_cpp import Llama
from llama_cpp import llama_cpp as lib  # the C API; llama.cpp's own decode goes through it too
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

from ..errors import BackendError, ConstraintError
from ..formats import shown_schemas, text_messages
from ..messages import Message
from ..prompt import render, template_supports_tools
from .base import Generation, GenerateOptions
from ..constraint.llama_grammar import GrammarMatcher
from ..constraint.llguidance_engine import SPECIAL, LLGuidanceMatcher, start_matcher, tokenizer
from ..constraint import FailClosed
from .decoder import Decoder, Drafter, LogitsModel
from .prefix_cache import PrefixCache, cache_key


def template_messages(
    messages: list[Message], schemas: list[dict[str, Any]], native_tools: bool
) -> list[dict[str, Any]]:
    """History as template dicts. Assistant turns are rendered from the exact
    text generated (so the prompt re-renders what is in the KV cache); a template
    without native tool support gets the history in our envelope (``formats.text_messages``)."""
    if not native_tools:
        return text_messages(messages, schemas)
    return [
        {"role": "assistant", "content": m.raw} if m.role == "assistant" and m.raw is not None else m.to_template()
        for m in messages
    ]


def amx_unsafe() -> bool:
    """True on CPUs with AMX, where llama.cpp's AMX kernels can segfault at the first
    decode (ggml-org/llama.cpp#20824; seen here on Q4_K_M and Q4_1). There the weights
    stay in plain CPU buffers: slower, but correct. LOCALAGENT_EXTRA_BUFTS=1 keeps them."""
    if os.environ.get("LOCALAGENT_EXTRA_BUFTS") == "1":
        return False
    return "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode(errors="replace")


@contextmanager
def model_defaults(**fields: Any) -> Iterator[None]:
    """Give the model parameters ``Llama`` starts from these ``fields`` for the length of
    this block (``Llama`` takes neither a load callback nor ``use_extra_bufts``)."""
    bindings = llama_cpp.llama_cpp
    original = bindings.llama_model_default_params

    def patched() -> Any:
        params = original()
        for name, value in fields.items():
            setattr(params, name, value)
        return params

    bindings.llama_model_default_params = patched
    try:
        yield
    finally:
        bindings.llama_model_default_params = original


def safe_defaults() -> dict[str, Any]:
    """The model-parameter fields this machine needs (see ``amx_unsafe``)."""
    return {"use_extra_bufts": False} if amx_unsafe() else {}


@contextmanager
def _load_progress(label: str, *, enabled: bool) -> Iterator[Any]:
    """A progress bar fed by llama.cpp's own load callback (on a terminal only); yields
    the callback for ``progress_callback``, or None."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    # Llama silences fd 2 while it loads, so the bar writes to a copy of it.
    out = os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8", errors="replace")
    bar_format = "{desc} {bar} {percentage:3.0f}%"
    interrupted = False
    with out, tqdm(total=100, desc=label, unit="%", file=out, leave=False, bar_format=bar_format) as bar:

        def report(fraction: float, _: Any) -> bool:
            # Ctrl-C lands in this callback, where ctypes would swallow it: cancel the load instead.
            nonlocal interrupted
            try:
                bar.update(max(0, round(fraction * 100) - bar.n))
            except KeyboardInterrupt:
                interrupted = True
            return not interrupted

        try:
            yield llama_cpp.llama_cpp.llama_progress_callback(report)
        except (ValueError, RuntimeError, OSError):
            if interrupted:  # the load failed because it was cancelled
                raise KeyboardInterrupt from None
            raise
        if interrupted:
            raise KeyboardInterrupt


# Prompt lookup's settings: llama-cpp-python's defaults (the last 2 tokens, then 1, matched;
# up to 10 tokens drafted).
LOOKUP = {"max_ngram_size": 2, "num_pred_tokens": 10}


def make_drafter() -> Drafter:
    """The draft model of greedy prose under ``prompt_lookup``: the context's ids -> drafted ids."""
    return LlamaPromptLookupDecoding(**LOOKUP)


# A prompt evaluation of at least this many tokens shows a progress bar (on a terminal).
PREFILL_BAR_TOKENS = 256

# How a tool's fit to a request is scored (tool_relevance): the tool's line after this lead,
# with this system turn, against the same after a request that asks for nothing.
RELEVANCE_SYSTEM = "You choose the function that does what the user asks."
RELEVANCE_LEAD = "The function that does this is"
RELEVANCE_NEUTRAL = "Hello."


def tool_line(tool: dict[str, Any]) -> str:
    f = tool.get("function", tool)
    return f" {f['name']}: {f.get('description', '')}"


class LlamaBackend:
    """A loaded GGUF model with its chat template and a warm KV cache."""

    reuses_kv_cache = True  # prompt_tokens_evaluated counts only what the cache did not hold
    decides_each_call = True  # the decoder (MoreCalls)

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        n_batch: int = 512,
        verbose: bool = False,
        warm_start: bool = True,
        prefix_cache: PrefixCache | None = None,
        progress: bool = False,
    ):
        self.model_path = Path(model_path)
        self.progress = progress  # bars on a terminal: loading, and long prompt evaluations
        self.prefix_cache = (prefix_cache or PrefixCache()) if warm_start else None
        try:
            fields = safe_defaults()
            with _load_progress(f"load {self.model_path.name}", enabled=progress and not verbose) as callback:
                if callback is not None:
                    fields["progress_callback"] = callback
                with model_defaults(**fields):
                    self.llm = Llama(
                        model_path=str(self.model_path),
                        n_ctx=n_ctx,
                        n_threads=n_threads or os.cpu_count() or 2,
                        n_gpu_layers=n_gpu_layers,
                        n_batch=n_batch,
                        verbose=verbose,
                    )
        except (ValueError, RuntimeError, OSError) as e:
            raise BackendError(f"cannot load model {self.model_path}: {e}") from None
        self.name = self.model_path.name
        self.context_size = self.llm.n_ctx()
        self.n_vocab = self.llm.n_vocab()
        self._vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self._piece_buf = ctypes.create_string_buffer(64)
        md = self.llm.metadata
        self.template = md.get("tokenizer.chat_template") or _CHATML
        self.native_tools = template_supports_tools(self.template)
        self._add_bos = md.get("tokenizer.ggml.add_bos_token", "false") == "true"
        self._bos = self._piece(self.llm.token_bos()) if self._add_bos else ""
        self._eos = self._piece(self.llm.token_eos())
        self._llg: Any = None  # the llguidance tokenizer, built at its first use
        self._llg_starts: dict[str, Any] = {}  # Lark grammar -> an llguidance matcher at its start
        self._relevance_base: dict[tuple[int, ...], float] = {}  # a tool line's log-probability after RELEVANCE_NEUTRAL
        self.eog_ids = {i for i in range(self.n_vocab) if llama_cpp.llama_vocab_is_eog(self._vocab, i)}
        model: LogitsModel = self  # the backend is the decoder's model (mypy checks it here)
        # A proxy, so that backend and decoder make no cycle: the model is freed with the backend.
        masks = self.prefix_cache.masks(self.model_path) if self.prefix_cache else None
        self.decoder = Decoder(weakref.proxy(model), make_drafter, masks)

    # -- tokens ---------------------------------------------------------------

    def _piece(self, token: int) -> str:
        return self.token_bytes(token).decode("utf-8", errors="replace")

    def token_bytes(self, token: int) -> bytes:
        """The bytes of ``token``, a special token's as its text."""
        return token_piece(self._vocab, token, self._piece_buf)

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        """Token ids of ``text`` (template markers parsed as special tokens)."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text``, special markers read as plain text."""
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def render(
        self, messages: list[Message], schemas: list[dict[str, Any]], *, add_generation_prompt: bool = True
    ) -> str:
        """The prompt for the next assistant turn."""
        dicts = template_messages(messages, schemas, self.native_tools)
        return render(
            self.template,
            dicts,
            tools=shown_schemas(schemas) if self.native_tools else None,
            add_generation_prompt=add_generation_prompt,
            bos_token=self._bos,
            eos_token=self._eos,
        )

    def _prefix_ids(self, messages: list[Message], schemas: list[dict[str, Any]], prompt: list[int]) -> list[int]:
        """The tokens of the system turn (tools included) when the prompt starts with them."""
        if not messages or messages[0].role != "system":
            return []
        ids = self.tokenize(self.render(messages[:1], schemas, add_generation_prompt=False))
        if self._add_bos:
            ids = [self.llm.token_bos()] + ids
        return ids if len(ids) < len(prompt) and prompt[: len(ids)] == ids else []

    def prompt_tokens(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        return len(self.prompt_ids(messages, tools))

    def prefix_tokens(self, messages: list[Message], schemas: list[dict[str, Any]]) -> int:
        """Tokens of the prefix a warm start caches (the system turn, tools included); 0 when none."""
        return len(self._prefix_ids(messages, schemas, self.prompt_ids(messages, schemas)))

    def prompt_ids(self, messages: list[Message], schemas: list[dict[str, Any]]) -> list[int]:
        """The tokens of the prompt for the next assistant turn, as ``generate`` evaluates them."""
        ids = self.tokenize(self.render(messages, schemas))
        if self._add_bos:
            ids = [self.llm.token_bos()] + ids
        return ids

    # -- KV cache ---------------------------------------------------------------

    def _warm_start(self, prefix: list[int]) -> tuple[int, str | None]:
        """When the KV cache does not hold the prefix (empty, or another prompt's: an answer
        written without the tool list), load the prefix state from disk, or evaluate and save
        it; returns the tokens evaluated here and what was done ("loaded", "saved", "not saved")."""
        if self.prefix_cache is None or not prefix:
            return 0, None
        prefix = prefix[:-1]  # the last token is left for prefill, which needs its logits
        held = self.llm.input_ids[: min(self.llm.n_tokens, len(prefix))]
        diff = np.nonzero(held != np.asarray(prefix[: len(held)]))[0]
        if len(held) and (diff[0] if diff.size else len(held)) >= len(prefix) // 2:
            return 0, None  # the cache holds most of it: prefill reuses that
        key = cache_key(self.model_path, self.template, prefix, self.context_size)
        if self.prefix_cache.load(self.llm.ctx, key, prefix):
            self.llm.input_ids[: len(prefix)] = prefix
            self.llm.n_tokens = len(prefix)
            return 0, "loaded"
        self._eval_prompt(prefix)
        return len(prefix), "saved" if self.prefix_cache.save(self.llm.ctx, key, prefix) else "not saved"

    def prefill(self, prompt: list[int]) -> int:
        """Evaluate ``prompt``, reusing the cached prefix; returns tokens evaluated."""
        cached = self.llm.input_ids[: self.llm.n_tokens]
        n = min(len(cached), len(prompt) - 1)  # always evaluate >= 1 token for fresh logits
        common = 0
        if n > 0:
            diff = np.nonzero(cached[:n] != np.asarray(prompt[:n]))[0]
            common = int(diff[0]) if diff.size else n
        self.llm.n_tokens = common  # eval() drops the KV cells past this point
        self._eval_prompt(prompt[common:])
        return len(prompt) - common

    def _eval_prompt(self, tokens: list[int]) -> None:
        """``Llama.eval`` of ``tokens``, with a progress bar on a terminal when they are many.
        The chunks are ``Llama.eval``'s own (n_batch tokens each), so the KV cache and the
        logits are the same with or without the bar."""
        if not self.progress or len(tokens) < PREFILL_BAR_TOKENS or not sys.stderr.isatty():
            self.llm.eval(tokens)
            return
        step = self.llm.n_batch
        # Each chunk takes a while: every update is drawn. leave=False clears the line for the text.
        # The size is given: tqdm draws nothing on a terminal that reports 0 rows (some ptys).
        size = shutil.get_terminal_size()
        bar = tqdm(
            total=len(tokens), desc="prompt", file=sys.stderr, leave=False, mininterval=0, miniters=1,
            ncols=min(size.columns, 100), nrows=size.lines, bar_format="{desc} {bar} {n_fmt}/{total_fmt} tokens",
        )
        with bar:
            for i in range(0, len(tokens), step):
                chunk = tokens[i : i + step]
                self.llm.eval(chunk)
                bar.update(len(chunk))

    def eval(self, tokens: list[int]) -> None:
        """Evaluate ``tokens`` after those in the cache (no bar: the decoder's few at a time)."""
        self.llm.eval(tokens)

    def rewind(self, n: int) -> None:
        """Forget the last ``n`` tokens evaluated: their KV cells are dropped on the next eval."""
        self.llm.n_tokens -= n

    def eval_rows(self, tokens: list[int]) -> list[np.ndarray]:
        """Evaluate ``tokens`` in one batch and return the logits after each, through
        llama.cpp's own C API (``Llama.eval`` keeps only the last row's logits)."""
        llm, n = self.llm, len(tokens)
        n_past = llm.n_tokens
        lib.llama_memory_seq_rm(lib.llama_get_memory(llm.ctx), 0, n_past, -1)  # cells past n_past
        batch = lib.llama_batch_init(n, 0, 1)
        try:
            batch.n_tokens = n
            for i, tok in enumerate(tokens):
                batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = tok, n_past + i, 1, True
                batch.seq_id[i][0] = 0
            if (rc := lib.llama_decode(llm.ctx, batch)) != 0:
                raise BackendError(f"llama_decode returned {rc} for {n} forced tokens")
            rows = [np.ctypeslib.as_array(lib.llama_get_logits_ith(llm.ctx, i), shape=(self.n_vocab,)).copy() for i in range(n)]
        finally:
            lib.llama_batch_free(batch)
        llm.input_ids[n_past : n_past + n] = tokens
        llm.n_tokens = n_past + n
        return rows

    def logits(self) -> np.ndarray:
        """The logits after the last token evaluated (a view: valid until the next eval)."""
        ptr = llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    # -- relevance ---------------------------------------------------------------

    def tool_relevance(self, request: str, tools: list[dict[str, Any]]) -> list[float]:
        """For each tool, how much more likely the model finds its "name: description" after
        ``request`` than after a request that asks for nothing: pointwise mutual information,
        summed over the tool's tokens (``evals/relevance_probe.py``). Low for every tool: no
        offered tool does what is asked. The KV cache is left holding the scoring prompt."""
        asked, neutral = self._relevance_prompt(request), None
        out = []
        for t in tools:
            tail = self.tokenize(tool_line(t))
            base = self._relevance_base.get(tuple(tail))
            if base is None:
                neutral = neutral or self._relevance_prompt(RELEVANCE_NEUTRAL)
                base = self._relevance_base[tuple(tail)] = self._continuation_logprob(neutral, tail)
            out.append(self._continuation_logprob(asked, tail) - base)
        return out

    def _relevance_prompt(self, request: str) -> list[int]:
        """The tokens of the scoring prompt for ``request``, up to where a tool's line follows."""
        head = [Message("system", RELEVANCE_SYSTEM), Message("user", request)]
        prompt = self.tokenize(self.render(head, []) + RELEVANCE_LEAD)
        return [self.llm.token_bos()] + prompt if self._add_bos else prompt

    def _continuation_logprob(self, prompt: list[int], tail: list[int]) -> float:
        """log P(``tail`` | ``prompt``), under the model."""
        self.prefill(prompt)
        rows = [self.logits().astype(np.float64)] + [r.astype(np.float64) for r in self.eval_rows(tail[:-1])]
        self.rewind(len(tail) - 1)  # the next tool reuses the prompt
        return float(sum(row[t] - np.logaddexp.reduce(row) for row, t in zip(rows, tail)))

    # -- generation -------------------------------------------------------------

    def generate(
        self, messages: list[Message], tools: list[dict[str, Any]], options: GenerateOptions
    ) -> Generation:
        schemas = tools
        t0 = time.monotonic()
        prompt = self.prompt_ids(messages, schemas)
        room = self.context_size - len(prompt)
        if room < 1:
            return Generation(
                "", "context", prompt_tokens=len(prompt),
                error=f"the prompt has {len(prompt)} tokens; the context window is {self.context_size}",
            )
        try:
            matcher = self._matcher(options)
        except ConstraintError as e:
            return Generation("", "error", prompt_tokens=len(prompt), error=str(e), constraint_error=True)
        try:
            warm, warm_start = self._warm_start(self._prefix_ids(messages, schemas, prompt))
            gen = self.decoder.decode(prompt, room, matcher, options, t0)
            if matcher is not None and matcher.error is not None:
                # The engine failed during the reply and allowed nothing after: fail closed, and say why.
                gen.finish_reason, gen.error = "error", matcher.error
                gen.constraint_error = True
        finally:
            if matcher is not None:
                matcher.close()
        gen.warm_start = warm_start
        gen.prompt_tokens_evaluated += warm  # evaluated before the decoder counted
        return gen

    def _matcher(self, options: GenerateOptions) -> FailClosed | None:
        c = options.constraint
        if c is None:
            return None
        if c.engine == "gbnf":
            return FailClosed(GrammarMatcher(self._vocab, self.n_vocab, c.text))
        if self._llg is None:
            pieces, _ = token_pieces(self.llm)
            self._llg = tokenizer(pieces, self.llm.token_eos(), lambda b: self.llm.tokenize(b, add_bos=False, special=True))
        start = self._llg_starts.get(c.text)
        if start is None:
            start = start_matcher(self._llg, c.text)
            if len(self._llg_starts) >= 16:
                self._llg_starts.pop(next(iter(self._llg_starts)))
            self._llg_starts[c.text] = start
        return FailClosed(LLGuidanceMatcher(start, self.eog_ids, self.n_vocab))


def token_piece(vocab: Any, token: int, buf: Any) -> bytes:
    """The bytes of ``token`` (a special token's as its text), written into ``buf``, or into
    a buffer of their own when longer. ``Llama.detokenize`` gives b"" for a piece over 32
    bytes (240 tokens of the 0.5B model, runs of spaces or dashes) and is twice as slow."""
    n = lib.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
    if n < 0:  # -n is the piece's length
        buf = ctypes.create_string_buffer(-n)
        n = lib.llama_token_to_piece(vocab, token, buf, -n, 0, True)
    return bytes(buf.raw[:n])


def token_pieces(llm: Llama) -> tuple[list[bytes], list[int]]:
    """Each token's bytes, control tokens marked ``SPECIAL`` (llguidance's reading of a
    vocabulary), and the end-of-generation tokens. A user-defined token (``<tool_call>``)
    stays text, as llama.cpp's grammar reads it."""
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    pieces, eog, buf = [], [], ctypes.create_string_buffer(64)
    for i in range(llm.n_vocab()):
        piece = token_piece(vocab, i, buf)
        control = llama_cpp.llama_vocab_get_attr(vocab, i) & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
        pieces.append(SPECIAL + piece if control else piece)
        if llama_cpp.llama_vocab_is_eog(vocab, i):
            eog.append(i)
    return pieces, eog


_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
