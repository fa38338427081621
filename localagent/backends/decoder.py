"""The decoder of the in-process backend: call or prose at the first token, the constrained
path, jump-forward, prompt lookup and fail closed, over ``LogitsModel``, the little it needs
of a model. ``LlamaBackend`` is that model for llama.cpp; the tests drive a scripted one.

It samples a token from the raw logits, checks only that token against the constraint, and
falls back to the full-vocabulary mask only when the token is rejected. The model's KV cache
is kept between calls, so a step evaluates only the tokens that are new since the previous one.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
import time
from collections.abc import Set
from typing import Callable, Protocol

import numpy as np

from ..constraint.jump import forced_text
from ..constraint import Matcher
from ..formats import CALL_OPEN, ParsedCall, parse
from ..messages import canonical
from .. import policy
from ..policy import STRUCTURED_STARTS
from ..sampling import Sampler
from .base import Decision, FinishReason, Generation, GenerateOptions, MoreCalls, StepInfo

# The draft model of greedy prose under ``prompt_lookup``: the context's ids -> drafted ids.
Drafter = Callable[[np.ndarray], np.ndarray]


class LogitsModel(Protocol):
    """What the decoder needs of a model. The model keeps a KV cache: each evaluation
    continues after the tokens evaluated so far."""

    @property
    def n_vocab(self) -> int: ...

    @property
    def eog_ids(self) -> Set[int]:
        """The end-of-generation tokens."""
        ...

    def token_bytes(self, token: int) -> bytes:
        """The bytes of ``token``, a special token's as its text."""
        ...

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text``, template markers parsed as special tokens."""
        ...

    def prefill(self, prompt: list[int]) -> int:
        """Evaluate ``prompt`` (what the cache already holds is reused, its last token is
        always evaluated, for fresh logits); returns the tokens evaluated."""
        ...

    def logits(self) -> np.ndarray:
        """The logits after the last token evaluated."""
        ...

    def eval(self, tokens: list[int]) -> None:
        """Evaluate ``tokens`` after those in the cache."""
        ...

    def eval_rows(self, tokens: list[int]) -> list[np.ndarray]:
        """Evaluate ``tokens`` in one batch; the logits after each."""
        ...

    def rewind(self, n: int) -> None:
        """Forget the last ``n`` tokens evaluated (the next evaluation overwrites them)."""
        ...


class MaskStore(Protocol):
    """Masks over one model's vocabulary, by name, kept beyond the process."""

    def get(self, name: str, n: int) -> np.ndarray | None:
        """The mask saved as ``name``, if there is one of ``n`` entries."""
        ...

    def put(self, name: str, mask: np.ndarray) -> None:
        """Keep ``mask`` as ``name`` (best effort: a mask not kept is worked out again)."""
        ...


# The name says what the mask holds: a change of its definition makes a new one.
STRUCTURED_MASK = "structured-" + hashlib.sha256(repr((STRUCTURED_STARTS, "blank or starts, trigger")).encode()).hexdigest()[:12]


class Decoder:
    """Decodes the replies of one model; keeps what it learns of its vocabulary."""

    def __init__(self, model: LogitsModel, drafter: Callable[[], Drafter], masks: MaskStore | None = None) -> None:
        self.model = model
        self.drafter = drafter  # a fresh draft model for each reply under prompt lookup
        self.masks = masks  # where masks over the vocabulary outlive the process
        self.trigger = model.tokenize(CALL_OPEN)  # the call's opening tag, as the model writes it
        self.next_call = model.tokenize("\n" + CALL_OPEN)  # another call after one
        self._structured: np.ndarray | None = None
        self.last_tokens: list[int] = []  # the last reply's token ids (the benchmark replays them)
        self._by_text: dict[str, list[int]] | None = None  # token ids by their text, built when first needed

    def _piece(self, token: int) -> str:
        return self.model.token_bytes(token).decode("utf-8", errors="replace")

    def structured_mask(self) -> np.ndarray:
        """Tokens that start structured output: a call's envelope or a call in
        disguise (brace, bracket, fence, tag) or bare white space. Working it out reads
        every token (0.4 s of a 3 s task on the 0.5B model), so it is kept in ``masks``."""
        if self._structured is None:
            mask = self.masks.get(STRUCTURED_MASK, self.model.n_vocab) if self.masks else None
            if mask is None:
                mask = np.zeros(self.model.n_vocab, dtype=bool)
                for i in range(self.model.n_vocab):
                    piece = self._piece(i)
                    mask[i] = piece.strip() == "" or piece.lstrip().startswith(STRUCTURED_STARTS)
                mask[self.trigger[0]] = True
                if self.masks:
                    self.masks.put(STRUCTURED_MASK, mask)
            self._structured = mask
        return self._structured

    def _decide(self, logits: np.ndarray, threshold: float, matcher: Matcher) -> tuple[list[int], np.ndarray, float]:
        """Call or prose at the first token. Returns the tokens to force (the
        trigger, for a call), the logits to sample from, and the call mass."""
        mask = self.structured_mask()
        z = logits.astype(np.float64)
        p = np.exp(z - z.max())
        mass = float(p[mask].sum() / p.sum())
        if mass >= threshold and all(matcher.allows(t) for t in self.trigger[:1]):
            return list(self.trigger), logits, mass
        prose = logits.copy()
        prose[mask] = -np.inf
        return [], prose, mass

    def decode(
        self,
        prompt: list[int],
        room: int,
        matcher: Matcher | None,
        options: GenerateOptions,
        t0: float,
    ) -> Generation:
        """The reply to ``prompt``, at most ``room`` tokens (what the context has left), under
        ``matcher`` when there is one; ``t0`` is when the step began (for its timings)."""
        model = self.model
        evaluated = model.prefill(prompt)
        rng = np.random.default_rng(options.seed)
        r = _Reply(model.token_bytes, matcher, options, min(options.max_tokens, room), prompt, self.drafter)
        self.last_tokens = r.tokens
        next_logits: np.ndarray | None = None
        while r.n < r.limit:
            logits = next_logits if next_logits is not None else model.logits()
            next_logits = None
            trigger, tok = self._next_token(logits, r, rng)
            if tok is None:
                return Generation(
                    "".join(r.out), "error", len(prompt), evaluated, r.n, time.monotonic() - t0, r.first,
                    error="the grammar allows no token here; the step is stopped (fail closed)",
                    constraint_error=True,
                )
            if r.first is None:
                r.first = time.monotonic() - t0
            if tok in model.eog_ids:
                r.finish = "stop"
                break
            r.emit(tok)
            draft = list(trigger[1:])  # the rest of the trigger: part of the decision
            n_trigger = len(draft)
            if n_trigger == 0 and (rest := self._closing(r)):
                ended, next_logits = self._close_call(tok, rest, r)
                if ended:
                    break
                continue
            if matcher is not None and options.call_heads:
                fixed, ends = self._forced(r)
                draft += fixed
                if ends and n_trigger == 0 and r.n + len(draft) < r.limit:
                    if self._tail(tok, draft, r):
                        break
                    continue
            lookup = not draft and r.lookup is not None and r.decision != "call"
            if lookup:
                draft = self._lookup(r)
            if not draft:
                model.eval([tok])
                continue
            next_logits = self._jump(tok, draft, n_trigger, r, rng, lookup=lookup)
        return r.generation(len(prompt), evaluated, room, t0)

    def _next_token(self, logits: np.ndarray, r: _Reply, rng: np.random.Generator) -> tuple[list[int], int | None]:
        """The trigger to force (a call decided at the first token, else none) and the next
        token: the model's choice, or the constrained path's where the constraint refuses it;
        None when the constraint allows no token at all."""
        if r.closing:  # the rest of a list ended at a repeat (_list_end)
            return [], r.closing.pop(0)
        trigger: list[int] = []
        m, o = r.matcher, r.options
        logits = self._exclude(r.penalized(logits), r)
        if r.n == 0 and m is not None and o.call_threshold is not None:
            trigger, logits, mass = self._decide(logits, o.call_threshold, m)
            r.decision = "call" if trigger else "prose"
            r.call_mass = round(mass, 4)
        tok = trigger[0] if trigger else r.sampler.sample(logits, rng)
        if m is not None and not m.allows(tok):
            r.rejected += 1
            choice = _allowed_choice(logits, m, r.sampler, rng)
            return trigger, (self._list_end(choice, r) if choice is not None else None)
        return trigger, self._list_end(tok, r)

    def _list_end(self, tok: int, r: _Reply) -> int:
        """``tok``, or where it would go on to another item of a call's list after an item
        repeated more often than the request writes it (``policy.repeats_given``), the end of
        the list instead: the tags "work", "home", "work", ... had run to the token limit. The
        repeat is left out of the reply's text (already streamed, if streaming)."""
        piece = self._piece(tok)
        if r.matcher is None or "," not in piece or not r.out:
            return tok
        text = "".join(r.out)
        start = text.rfind(CALL_OPEN)
        if start < 0:
            return tok
        start += len(CALL_OPEN)
        head = piece[: piece.index(",")]  # what closes the item, before its comma
        body = text[start:] + head
        items = _open_items(body)
        if items is None or len(items) < 2:
            return tok
        try:
            values = [json.loads(body[a:b]) for a, b in items]
        except ValueError:
            return tok
        if values.count(values[-1]) <= policy.repeats_given(values[-1], r.options.request):
            return tok
        end = self.model.tokenize(head + "]")
        if not end or not r.matcher.allows(end[0]):
            return tok
        r.closing = end[1:]
        r.left_out.append((start + items[-2][1], start + items[-1][1]))
        return end[0]

    def _exclude(self, logits: np.ndarray, r: _Reply) -> np.ndarray:
        """``logits`` without the tokens that would start a value ``policy.excluded`` rules
        out, where a call's string value starts here in a turn that may hold several."""
        mc = r.options.more_calls
        if mc is None or r.matcher is None or not r.out or not r.out[-1].endswith('"'):
            return logits
        text = "".join(r.out)
        start = text.rfind(CALL_OPEN)
        head = _VALUE_START.match(text, start + len(CALL_OPEN)) if start >= 0 else None
        if head is None:
            return logits
        prior = parse(text[:start]).calls
        values = policy.excluded(mc.plan, _naming(mc, prior, r.options.request), [c.name for c in prior], head.group(1), head.group(2))
        ids = [i for v in values for i in self._starting(v)]
        if not ids:
            return logits
        out = logits.copy()
        out[ids] = -np.inf
        return out

    def _starting(self, value: str) -> list[int]:
        """The tokens whose text starts ``value`` (its prefixes, one character or more), with
        a space before or not: kept out without the space, the model wrote " Nintendo Switch"."""
        if self._by_text is None:
            self._by_text = {}
            for i in range(self.model.n_vocab):
                self._by_text.setdefault(self._piece(i), []).append(i)
        return [i for n in range(1, len(value) + 1) for lead in ("", " ") for i in self._by_text.get(lead + value[:n], ())]

    def _closing(self, r: _Reply) -> str:
        """Under ``MoreCalls``, with room left: the rest of the closing tag when a call's
        arguments just ended; else ""."""
        o = r.options
        if r.matcher is None or o.more_calls is None or r.n + 8 >= r.limit or not r.out or "}" not in r.out[-1]:
            return ""
        return forced_text("".join(r.out), (), parallel=True)[0]  # with no heads: only a close is forced

    @staticmethod
    def _short(mc: MoreCalls, args: list[dict[str, object]], called: list[str]) -> bool:
        """Whether the turn's calls (their naming arguments ``args``, their tools ``called``)
        are fewer than the request implies, and (where its parts are known) a part that no
        call names yet."""
        if len(args) >= mc.plan.implied:
            return False
        return not mc.plan.parts or policy.parts_left(mc.plan.parts, args, mc.plan.tools, called) > 0

    @staticmethod
    def _names_nothing_new(mc: MoreCalls, args: list[dict[str, object]], called: list[str]) -> bool:
        """Whether the turn's last call (the last of ``args``), after the first, names no part
        of the request that the calls before it left unnamed: a fourth room where three were
        named, Oslo again in Fahrenheit."""
        if not (len(args) > 1 and mc.plan.parts):
            return False
        return policy.parts_left(mc.plan.parts, args[:-1], mc.plan.tools, called) == policy.parts_left(mc.plan.parts, args, mc.plan.tools, called)

    def _close_call(self, tok: int, rest: str, r: _Reply) -> tuple[bool, np.ndarray | None]:
        """A call's arguments just ended (``tok`` was their last token) in a turn that may hold
        several: emit the rest of its closing tag, then go on to another call or end the turn,
        from the model's probability of another after the tag (``MoreCalls``). A call that
        repeats one before it in the turn is cut (already streamed, if streaming) and ends it.
        A call naming no part the calls before it left unnamed is cut the same way.
        Returns whether the turn ended, and the logits to go on from (None: the model's own)."""
        assert r.matcher is not None and r.options.more_calls is not None
        close = self.model.tokenize(rest)
        rows = self.model.eval_rows([tok] + close)
        done = _emit_tail(close, r.matcher, r.emit)
        r.forced += done
        if done < len(close):  # not the tag the grammar expects after all: the model goes on
            self.model.rewind(len(close) - done)
            return False, rows[done]
        text = "".join(r.out)
        start = text.rfind(CALL_OPEN)
        prior = parse(text[:start]).calls
        before = [canonical(c.name, c.arguments) for c in prior]
        last = parse(text[start:]).calls
        mc = r.options.more_calls
        args = _naming(mc, prior + last, r.options.request)  # what each call names, as it will be sent
        called = [c.name for c in prior + last]
        repeat = last and canonical(last[0].name, last[0].arguments) in before
        if last and (repeat or self._names_nothing_new(mc, args, called)):
            r.cut_at, r.repeats_cut, r.finish = len(text[:start].rstrip()), r.repeats_cut + 1, "stop"
            return True, None
        z = rows[-1].astype(np.float64)
        p = np.exp(z - z.max())
        more = 1.0 - float(sum(p[t] for t in self.model.eog_ids if t < len(p)) / p.sum())
        r.more_masses.append(round(more, 4))
        go = more >= (mc.below if self._short(mc, args, called) else mc.beyond)
        # Room for one more call as long as the ones so far: a call cut off at the limit is lost.
        room = r.n + r.n // (len(before) + 1) + len(self.next_call) < r.limit
        if not (go and room and r.matcher.allows(self.next_call[0])):
            r.finish = "stop"
            return True, None
        head = self.model.tokenize(_head(r.options.call_heads, policy.next_tool(mc.plan.parts, mc.plan.tools, args, called))) if mc.plan.tools else []
        tokens = self.next_call + head
        done = _emit_tail(tokens, r.matcher, r.emit)
        r.forced += max(0, done - len(self.next_call))
        self.model.eval(list(tokens[:done]))
        return False, None

    def _lookup(self, r: _Reply) -> list[int]:
        """Draft tokens for greedy prose: what followed the last tokens where they occur
        earlier in the prompt or the reply (prompt lookup), up to the first end-of-generation
        token (the plain path ends there without emitting it) and within the reply's limit."""
        assert r.lookup is not None
        found = r.lookup(np.asarray(r.prompt + r.tokens, dtype=np.intc))
        draft: list[int] = []
        for t in found[: max(0, r.limit - r.n)].tolist():
            if t in self.model.eog_ids:
                break
            draft.append(int(t))
        return draft

    def _forced(self, r: _Reply) -> tuple[list[int], bool]:
        """The tokens of the text the constraint fixes next, and whether that text ends the turn."""
        o = r.options
        if r.matcher is not None and (engine_says := r.matcher.jump()) is not None:
            return engine_says  # the engine's own forced tokens, where it knows them
        forced, ends = forced_text("".join(r.out), o.call_heads, parallel=o.parallel, keys=o.call_keys)
        if not forced:
            return [], ends
        fixed = self.model.tokenize(forced)
        if not ends and len(fixed) > 1 and not self._piece(fixed[-1]).strip():
            # A lone space last ('"path": ') is seldom the model's own split: it writes ' "'
            # or ' 0' next. Leave it to the model instead of evaluating a row that the check
            # in _jump would throw away.
            fixed.pop()
        return fixed, ends

    def _tail(self, tok: int, draft: list[int], r: _Reply) -> bool:
        """The rest of the turn is fixed ("\\n</tool_call>", then the end): no choice is left
        whose logits these tokens could change, and the next prompt re-tokenizes the turn from
        its text. Emit them unevaluated; the next step's prefill evaluates them with the tool's
        result. True when the turn ended; else what was emitted is evaluated, to go on from."""
        assert r.matcher is not None
        done = _emit_tail(draft, r.matcher, r.emit)
        r.forced += done
        if done == len(draft) and any(r.matcher.allows(e) for e in self.model.eog_ids):
            r.finish = "stop"
            return True
        self.model.eval([tok] + draft[:done])  # not the end after all: go on from here
        return False

    def _jump(
        self, tok: int, draft: list[int], n_trigger: int, r: _Reply, rng: np.random.Generator, *, lookup: bool = False
    ) -> np.ndarray:
        """Jump-forward: evaluate ``tok`` and the fixed tokens in one batch, then keep each one
        only if the plain path would have produced it (under greedy decoding, the argmax, among
        the allowed tokens under a constraint). The first that differs, a different split of the
        same text, say, is dropped with all after it, so the output is the plain path's, token
        for token. The first ``n_trigger`` tokens (the call's trigger) are the decision's, kept
        as they are. A ``lookup`` draft (greedy only) is checked the same way and counted apart.
        Returns the logits after the last token kept."""
        rows = self.model.eval_rows([tok] + draft)
        kept = 0
        for j, ft in enumerate(draft):
            if r.n >= r.limit or (r.matcher is not None and not r.matcher.allows(ft)):
                break
            if j >= n_trigger and r.sampler.greedy and _greedy_choice(rows[j], r, rng) != ft:
                break
            r.emit(ft)
            kept += 1
            if j >= n_trigger and not lookup:
                r.forced += 1
        if lookup:
            r.drafted += len(draft)
            r.draft_kept += kept
        elif kept < len(draft):
            r.dropped += len(draft) - kept
        if kept < len(draft):
            self.model.rewind(len(draft) - kept)  # the KV cells past here are dropped on the next eval
        return rows[kept]


class _Reply:
    """One reply while it is decoded: its tokens and text so far, and what the decoder counted."""

    def __init__(
        self,
        token_bytes: Callable[[int], bytes],
        matcher: Matcher | None,
        options: GenerateOptions,
        limit: int,
        prompt: list[int],
        drafter: Callable[[], Drafter],
    ) -> None:
        self.token_bytes, self.matcher, self.options = token_bytes, matcher, options
        self.limit, self.prompt = limit, prompt
        o = options
        self.sampler = Sampler(o.temperature, o.top_k, o.top_p, o.min_p, o.repeat_penalty)
        greedy_lookup = o.prompt_lookup and self.sampler.greedy
        self.lookup = drafter() if greedy_lookup else None
        self.drafted = self.draft_kept = 0  # prompt-lookup tokens drafted, and kept
        self.text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.out: list[str] = []  # the text, piece by piece
        self.tokens: list[int] = []
        self.rejected = self.forced = self.dropped = 0  # refused by the grammar; jumped; jumped in vain
        self.first: float | None = None  # seconds to the first token
        self.finish: FinishReason = "length"
        self.decision: Decision | None = None  # call or prose, at the first token
        self.call_mass: float | None = None
        self.more_masses: list[float] = []  # the probability of another call, after each call
        self.cut_at: int | None = None  # the text ends here: what follows repeated a call
        self.repeats_cut = 0
        self.closing: list[int] = []  # the tokens left of a list's end, forced (Decoder._list_end)
        self.left_out: list[tuple[int, int]] = []  # spans of the text left out: items that repeated


    @property
    def n(self) -> int:
        """Tokens emitted so far."""
        return len(self.tokens)

    def penalized(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` after the repetition penalty over the last tokens of prompt and reply."""
        s = self.sampler
        if s.repeat_penalty == 1.0:
            return logits
        return s.penalize(logits, (self.prompt[-s.penalty_last_n :] + self.tokens)[-s.penalty_last_n :])

    def emit(self, tok: int) -> None:
        """Append ``tok`` to the reply: the grammar advances, its text is streamed."""
        if self.matcher is not None:
            self.matcher.accept(tok)
        piece = self.text_decoder.decode(self.token_bytes(tok))
        self.tokens.append(tok)
        if piece:
            self.out.append(piece)
            if self.options.on_text:
                self.options.on_text(piece)

    def generation(self, prompt_tokens: int, evaluated: int, room: int, t0: float) -> Generation:
        """The finished reply; ``room`` is what the context had left for it."""
        tail = self.text_decoder.decode(b"", final=True)
        if tail:
            self.out.append(tail)
        if self.finish == "length" and self.n >= room:
            self.finish = "context"
        counted = self.matcher is not None  # the counts of a constrained reply: None without one
        looked = StepInfo(lookup_drafted=self.drafted, lookup_kept=self.draft_kept) if self.drafted else StepInfo()
        text = "".join(self.out)[: self.cut_at]
        for a, b in reversed(self.left_out):
            if b <= len(text):
                text = text[:a] + text[b:]
        return Generation(
            text, self.finish, prompt_tokens, evaluated, self.n, time.monotonic() - t0, self.first,
            error="the context window filled up during the reply" if self.finish == "context" else None,
            decision=self.decision, call_mass=self.call_mass,
            grammar_rejections=self.rejected if counted else None,
            forced_tokens=self.forced if counted else None,
            forced_dropped=self.dropped if counted else None,  # inserted in vain: the plain path chose otherwise
            more_masses=self.more_masses or None, repeats_cut=self.repeats_cut or None,
            details=looked,
        )


def _allowed_choice(logits: np.ndarray, matcher: Matcher, sampler: Sampler, rng: np.random.Generator) -> int | None:
    """The token the constrained path picks from ``logits``: the sampler's choice among
    the tokens the constraint allows; None if none is allowed."""
    if sampler.greedy:
        best = int(np.argmax(logits))
        if matcher.allows(best):
            return best
        alt = _best_allowed(logits, matcher)
        if alt is not None:
            return alt
    masked = matcher.mask(logits)
    if not np.isfinite(masked).any():
        return None
    return sampler.sample(masked, rng)


def _greedy_choice(logits: np.ndarray, r: _Reply, rng: np.random.Generator) -> int | None:
    """The token the plain path would pick from ``logits`` under greedy decoding (the
    decision at the first token aside): the argmax, the best allowed one under a constraint."""
    logits = r.penalized(logits)
    if r.matcher is None:
        return int(np.argmax(logits))
    return _allowed_choice(logits, r.matcher, r.sampler, rng)


# A call's start up to the opening quote of a string value of its arguments (top level, after
# the others): '\n{"name": "get_forecast", "arguments": {"city": "'.
_VALUE_START = re.compile(r'\s*\{"name":\s*"([^"]+)",\s*"arguments":\s*\{(?:.*,\s*)?"([^"]+)":\s*"$', re.DOTALL)


def _open_items(body: str) -> list[tuple[int, int]] | None:
    """The spans of the items of the innermost container open at the end of ``body`` (a
    call's JSON so far, its last item complete), where that container is an array; None where
    it is an object, none is open or ``body`` ends inside a string."""
    frames: list[list[tuple[int, int]] | None] = []  # each open container's items (None: an object)
    begun: list[int | None] = []  # where each open array's current item began
    last = -1  # the last character outside white space
    in_str = escaped = False
    for i, ch in enumerate(body):
        if in_str:
            escaped, in_str = (False, True) if escaped else (ch == "\\", ch != '"')
            last = i
            continue
        if ch.isspace():
            continue
        items = frames[-1] if frames else None
        if items is not None and ch not in ",]" and begun[-1] is None:
            begun[-1] = i
        if ch in "[{":
            frames.append([] if ch == "[" else None)
            begun.append(None)
        elif ch in "]}" and frames:
            frames.pop()
            begun.pop()
        elif ch == "," and items is not None and begun[-1] is not None:
            items.append((begun[-1], last + 1))
            begun[-1] = None
        in_str = ch == '"'
        last = i
    if in_str or not frames or frames[-1] is None:
        return None
    items, at = frames[-1], begun[-1]
    return items + [(at, last + 1)] if at is not None else items


def _naming(mc: MoreCalls, calls: list[ParsedCall], request: str = "") -> list[dict[str, object]]:
    """The arguments of ``calls`` that may name a part of ``request`` (``policy.naming``), each
    value as it will be sent (``policy.copied``: "/docs/install.md" names "docs/install.md";
    ``policy.past_quote``: an SMS text run past its quote names no part after it)."""
    words = policy.request_words(" ".join(mc.plan.parts))
    named = policy.naming([(c.name, c.arguments) for c in calls], mc.plan.optional)
    return [policy.copied_values({k: policy.past_quote(v, request) for k, v in a.items()}, words) for a in named]


def _head(heads: tuple[str, ...], name: str) -> str:
    """The start of a call of ``name`` after its opening tag, up to the end of the name
    (``grammar.call_heads``); "" when no head is that tool's (jump-forward off, or no such
    tool). What follows the name is left to jump-forward, which keeps only the model's own
    split of it: forced as one string, '"city": ' ended in a lone space the model never
    writes, and the values after it were garbage ("io", "Tooronto")."""
    key = '"name": ' + json.dumps(name, ensure_ascii=False)  # as call_heads writes it
    head = next((h[len(CALL_OPEN) :] for h in heads if key in h), "") if name else ""
    return head[: head.index(key) + len(key) - 1] if head else ""


def _emit_tail(tokens: list[int], matcher: Matcher, emit: Callable[[int], None]) -> int:
    """Emit ``tokens`` while the grammar allows them; returns how many were emitted."""
    for i, t in enumerate(tokens):
        if not matcher.allows(t):
            return i
        emit(t)
    return len(tokens)


def _best_allowed(logits: np.ndarray, matcher: Matcher, k: int = 48) -> int | None:
    """Under greedy decoding, the best token the grammar allows among the top
    ``k``: the same token the full mask would give, at a fraction of its cost."""
    top = np.argpartition(logits, -k)[-k:]
    for tok in top[np.argsort(-logits[top])]:
        if matcher.allows(int(tok)):
            return int(tok)
    return None

