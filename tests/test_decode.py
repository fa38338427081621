"""The in-process decoder (``decoder.Decoder``) driven through its ``LogitsModel`` interface by
a scripted model over a small vocabulary, no weights: call or prose at the first token,
jump-forward, a token the constraint refuses, fail closed, and the length and context limits.

The scripted model wants to write one text: at each step the token that continues it
(longest first) gets the highest logit, the end token once it is written. The constraint
is the llguidance engine over the same vocabulary, built from a real tool's schema."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Annotated, Any

import numpy as np
import pytest
from pydantic import Field

from localagent.backends.base import GenerateOptions, Generation, MoreCalls
from localagent.policy import CallPlan
from localagent.backends.decoder import Decoder, LogitsModel
from localagent.backends.llama import make_drafter
from localagent.constraint.grammar import ToolChoice, build_constraint
from localagent.constraint import FailClosed
from localagent.constraint.llguidance_engine import SPECIAL, LLGuidanceMatcher, start_matcher, tokenizer
from localagent.decoding import decoding_options
from localagent.formats import CALL_OPEN
from localagent.loop import AgentConfig
from localagent.tools import tool

EOS = b"<|im_end|>"
WORDS = [
    CALL_OPEN, "</tool_call>", '{"', '": ', '", ', ' "', '"}', "}}", "name", "arguments", "read_file",
    "path", ".txt", "notes", "The", " answer", " is", "\n", "\n</tool_call>",
]
PIECES = [EOS] + [bytes([c]) for c in range(32, 127)] + [w.encode() for w in WORDS]
PROMPT = [PIECES.index(b"P"), PIECES.index(b":")]


@tool
def read_file(path: Annotated[str, Field(description="The file.")]) -> str:
    """Read a file."""
    return path


READ_FILE = read_file.openai_schema()


@tool
def list_dir(path: Annotated[str, Field(description="The folder.")]) -> str:
    """List a folder."""
    return path


LIST_DIR = list_dir.openai_schema()
CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'


class ScriptedModel:
    """A ``LogitsModel`` over ``PIECES`` that wants to write ``target``."""

    def __init__(self, target: str | list[str]) -> None:
        # Several targets: it wants the first that what is written so far begins.
        self.targets = [t.encode() for t in ([target] if isinstance(target, str) else target)]
        self.n_vocab = len(PIECES)
        self.eog_ids = {0}
        self.ids: list[int] = []  # the KV cache: the tokens evaluated
        self.prompt_len = len(PROMPT)  # where the reply starts
        self.evaluated: list[list[int]] = []  # every evaluation, in order

    def token_bytes(self, token: int) -> bytes:
        return PIECES[token]

    def detokenize(self, tokens: list[int]) -> bytes:
        return b"".join(PIECES[t] for t in tokens)

    def encode(self, text: bytes) -> list[int]:
        """Longest piece first, as a BPE vocabulary's merges would mostly have it."""
        out, i = [], 0
        while i < len(text):
            best = max((t for t in range(1, len(PIECES)) if text.startswith(PIECES[t], i)), key=lambda t: len(PIECES[t]))
            out.append(best)
            i += len(PIECES[best])
        return out

    def tokenize(self, text: str) -> list[int]:
        return self.encode(text.encode())

    def prefill(self, prompt: list[int]) -> int:
        assert not self.ids  # each test's model starts empty: the whole prompt is evaluated
        self.eval(prompt)
        return len(prompt)

    def eval(self, tokens: list[int]) -> None:
        self.evaluated.append(list(tokens))
        self.ids += tokens

    def eval_rows(self, tokens: list[int]) -> list[np.ndarray]:
        start = list(self.ids)
        self.eval(tokens)
        return [self.logits_after(start + tokens[: i + 1]) for i in range(len(tokens))]

    def logits(self) -> np.ndarray:
        return self.logits_after(self.ids)

    def rewind(self, n: int) -> None:
        del self.ids[len(self.ids) - n :]

    def logits_after(self, ids: list[int]) -> np.ndarray:
        """Noise (fixed by the context), then the wanted continuation on top."""
        seed = int.from_bytes(hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes()).digest()[:8], "little")
        logits = np.random.default_rng(seed).normal(0.0, 1.0, len(PIECES)).astype(np.float32)
        written = self.detokenize(ids[self.prompt_len :])
        target = next((t for t in self.targets if t.startswith(written)), None)
        if target is None:
            logits[0] = 20.0
            return logits
        rest = target[len(written) :]
        if not rest:
            logits[0] = 20.0
        for t in range(1, len(PIECES)):
            if rest.startswith(PIECES[t]):
                logits[t] = 10.0 + len(PIECES[t])
        return logits


def decoder(target: str | list[str]) -> Any:
    """A ``Decoder`` over ``ScriptedModel``, with llama-cpp-python's prompt lookup."""
    model: LogitsModel = ScriptedModel(target)
    return Decoder(model, make_drafter)


def options(**kw: Any) -> GenerateOptions:
    """The options ``run`` would use for one step with read_file (llguidance engine)."""
    constraint = build_constraint([READ_FILE], ToolChoice(), engine="llguidance")
    return decoding_options(AgentConfig(engine="llguidance", **kw), constraint, threshold=0.5, choice=ToolChoice())


def matcher(b: Any, opts: GenerateOptions) -> FailClosed:
    assert opts.lark is not None
    tok = tokenizer([SPECIAL + PIECES[0]] + PIECES[1:], 0, b.model.encode)
    return FailClosed(LLGuidanceMatcher(start_matcher(tok, opts.lark), b.model.eog_ids, len(PIECES)))


def decode(b: Any, opts: GenerateOptions, m: Any = None, room: int = 1000, prompt: str | None = None) -> Generation:
    ids = list(PROMPT) if prompt is None else b.model.tokenize(prompt)
    b.model.prompt_len = len(ids)
    return b.decode(ids, room, m, opts, 0.0)


def test_free_text_is_the_models_own() -> None:
    b = decoder("The answer is 42.")
    g = decode(b, GenerateOptions())
    assert (g.text, g.finish_reason, g.prompt_tokens, g.prompt_tokens_evaluated) == ("The answer is 42.", "stop", 2, 2)
    assert g.completion_tokens == len(b.last_tokens) == 7 and g.info == {}


def test_prose_at_the_first_token_cannot_open_a_call() -> None:
    b = decoder("The answer is 42.")
    opts = options()
    g = decode(b, opts, matcher(b, opts))
    assert g.text == "The answer is 42." and g.finish_reason == "stop"
    assert g.info["decision"] == "prose" and g.info["call_mass"] < 0.5
    assert g.info["grammar_rejections"] == 0 and g.info["forced_tokens"] == 0


def test_a_call_is_jumped_forward_and_ends_with_its_envelope() -> None:
    b = decoder(CALL)
    opts = options()
    streamed: list[str] = []
    opts.on_text = streamed.append
    g = decode(b, opts, matcher(b, opts))
    assert g.text == CALL and "".join(streamed) == CALL and g.finish_reason == "stop"
    assert g.info["decision"] == "call" and g.info["call_mass"] > 0.99
    assert g.info["forced_tokens"] > 0 and g.info["forced_dropped"] == 0 and g.info["grammar_rejections"] == 0
    assert b.model.detokenize(b.last_tokens).decode() == CALL
    # Fewer evaluations than tokens: the fixed parts went in batches, the tail unevaluated.
    assert len(b.model.evaluated) < g.completion_tokens


def test_without_jump_forward_the_same_call_comes_token_by_token() -> None:
    b = decoder(CALL)
    opts = options(jump_forward=False, parallel_calls=False)  # the close of a turn of several calls is written, not sampled
    g = decode(b, opts, matcher(b, opts))
    assert g.text == CALL and g.info["forced_tokens"] == 0
    assert all(len(e) == 1 for e in b.model.evaluated[1:])


def test_a_refused_token_is_replaced_by_the_best_allowed_one() -> None:
    # The model wants another tool's name: the constraint allows read_file only.
    b = decoder('<tool_call>\n{"name": "write_file", "arguments": {}}')
    opts = options(jump_forward=False)
    g = decode(b, opts, matcher(b, opts))
    assert g.info["grammar_rejections"] >= 1
    assert g.text.startswith('<tool_call>\n{"name": "read_file"')


def test_a_constraint_that_allows_nothing_fails_closed() -> None:
    class Nothing:
        error = None

        def allows(self, token: int) -> bool:
            return False

        def mask(self, logits: np.ndarray) -> np.ndarray:
            return np.full_like(logits, -np.inf)

        def accept(self, token: int) -> None:
            raise AssertionError("nothing may be accepted")

    b = decoder("The answer.")
    g = decode(b, GenerateOptions(), Nothing())
    assert g.finish_reason == "error" and g.info == {"constraint_error": True}
    assert g.text == "" and g.completion_tokens == 0 and "fail closed" in (g.error or "")


def test_limits_end_a_reply_as_length_or_context() -> None:
    b = decoder("The answer is 42.")
    g = decode(b, GenerateOptions(max_tokens=3))
    assert (g.text, g.finish_reason, g.error) == ("The answer is", "length", None)
    b = decoder("The answer is 42.")
    g = decode(b, GenerateOptions(max_tokens=10), room=3)
    assert (g.text, g.finish_reason) == ("The answer is", "context")
    assert g.error == "the context window filled up during the reply"


@pytest.mark.parametrize("seed", [1, 2])
def test_sampling_is_fixed_by_the_seed(seed: int) -> None:
    texts = []
    for _ in range(2):
        b = decoder("The answer is 42.")
        opts = options(temperature=1.0, seed=seed)
        texts.append(decode(b, opts, matcher(b, opts)).text)
    assert texts[0] == texts[1]


def test_the_sampler_chain_applies_under_the_constraint() -> None:
    # top-k 1 leaves the best token only: at any temperature the reply is the greedy one.
    b = decoder("The answer is 42.")
    opts = options(temperature=1.5, seed=3, top_k=1)
    assert (opts.top_k, opts.top_p, opts.min_p, opts.repeat_penalty) == (1, 0.95, 0.05, 1.0)
    assert decode(b, opts, matcher(b, opts)).text == "The answer is 42."
    b = decoder(CALL)
    opts = options(temperature=1.5, seed=3, top_k=1)
    assert decode(b, opts, matcher(b, opts)).text == CALL


@pytest.mark.parametrize("seed", range(6))
def test_sampled_constrained_output_stays_valid(seed: int) -> None:
    # Wide open sampling (no filters, hot): whatever is drawn, the constraint holds.
    b = decoder(CALL)
    opts = options(temperature=2.0, seed=seed, top_k=0, top_p=1.0, min_p=0.0, jump_forward=False)
    g = decode(b, opts, matcher(b, opts), room=40)
    assert g.finish_reason in ("stop", "length", "context") and not g.constraint_error
    replay = matcher(b, opts)  # every token the reply holds, checked again by a fresh matcher
    for t in b.last_tokens:
        assert replay.allows(t)
        replay.accept(t)
    if g.info["decision"] == "call":
        assert g.text.startswith(CALL_OPEN)
    else:
        assert CALL_OPEN not in g.text


def test_the_repetition_penalty_reaches_the_decoder() -> None:
    b = decoder("aaaa")
    assert decode(b, GenerateOptions()).text == "aaaa"
    b = decoder("aaaa")
    text = decode(b, GenerateOptions(repeat_penalty=100.0)).text
    assert text.startswith("a") and not text.startswith("aa")


QUOTED = "P: the launch code is XK-42-QZ, in notes.txt\n"
ANSWER = "The launch code is XK-42-QZ, in notes.txt."


@pytest.mark.parametrize("constrained", [False, True])
def test_prompt_lookup_keeps_the_output_and_saves_evaluations(constrained: bool) -> None:
    runs = []
    for lookup in (False, True):
        b = decoder(ANSWER)
        opts = options(prompt_lookup=lookup) if constrained else GenerateOptions(prompt_lookup=lookup)
        g = decode(b, opts, matcher(b, opts) if constrained else None, prompt=QUOTED)
        runs.append((g, b.last_tokens, len(b.model.evaluated)))
    (plain, plain_tokens, plain_evals), (looked, looked_tokens, looked_evals) = runs
    assert looked.text == plain.text == ANSWER and looked_tokens == plain_tokens
    assert "lookup_drafted" not in plain.info
    assert 0 < looked.info["lookup_kept"] <= looked.info["lookup_drafted"]
    assert looked_evals < plain_evals


def test_prompt_lookup_is_for_greedy_decoding_only() -> None:
    b = decoder(ANSWER)
    g = decode(b, GenerateOptions(prompt_lookup=True, temperature=0.7, seed=1), prompt=QUOTED)
    assert "lookup_drafted" not in g.info


CALL_B = CALL.replace("notes.txt", "a.txt")


def several(implied: int, below: float, beyond: float) -> GenerateOptions:
    """The options of a turn that may hold several calls, ``implied`` by the request."""
    return replace(options(parallel_calls=True), more_calls=MoreCalls(CallPlan(implied), below, beyond))


def test_several_calls_go_on_while_the_model_wants_another() -> None:
    b = decoder(CALL + "\n" + CALL_B)
    opts = several(2, 0.1, 0.9)
    g = decode(b, opts, matcher(b, opts))
    assert g.text == CALL + "\n" + CALL_B and g.finish_reason == "stop"
    # After the first call the model wants another; after the second, the end.
    assert g.more_masses is not None and g.more_masses[0] > 0.99 and g.more_masses[1] < 0.01


def test_past_the_implied_count_another_call_needs_the_higher_probability() -> None:
    b = decoder(CALL + "\n" + CALL_B)
    opts = several(1, 0.1, 1.0)  # nothing is certain: never past one call
    g = decode(b, opts, matcher(b, opts))
    assert g.text == CALL and g.finish_reason == "stop" and g.more_masses and g.more_masses[0] > 0.99


def test_a_call_repeated_in_the_same_turn_is_cut_and_ends_it() -> None:
    b = decoder(CALL + "\n" + CALL + "\n" + CALL_B)
    opts = several(3, 0.1, 0.9)
    g = decode(b, opts, matcher(b, opts))
    assert g.text == CALL and g.repeats_cut == 1 and g.info["repeats_cut"] == 1


def test_without_more_calls_the_choice_after_a_call_is_the_models() -> None:
    b = decoder(CALL + "\n" + CALL + "\n" + CALL_B)
    opts = options(parallel_calls=True, more_calls=None)
    g = decode(b, opts, matcher(b, opts))
    assert g.text == CALL + "\n" + CALL + "\n" + CALL_B and g.more_masses is None


def test_another_call_needs_room_for_one_as_long_as_the_last() -> None:
    b = decoder(CALL + "\n" + CALL_B)
    opts = replace(several(2, 0.0, 1.0), max_tokens=len(b.model.tokenize(CALL)) + 12)
    g = decode(b, opts, matcher(b, opts))
    assert g.text == CALL and g.finish_reason == "stop"  # ended whole, not cut off in a second call


def test_below_the_implied_count_a_part_no_call_names_is_needed_to_go_on() -> None:
    b = decoder(CALL + "\n" + CALL_B)
    opts = replace(options(parallel_calls=True), more_calls=MoreCalls(CallPlan(2, parts=("read notes.txt", "a.txt")), 0.0, 1.0))
    assert decode(b, opts, matcher(b, opts)).text == CALL + "\n" + CALL_B
    b = decoder(CALL + "\n" + CALL_B)
    opts = replace(options(parallel_calls=True), more_calls=MoreCalls(CallPlan(2, parts=("notes.txt", "read notes.txt now")), 0.0, 1.0))
    assert decode(b, opts, matcher(b, opts)).text == CALL  # the one call names both parts


def test_a_call_naming_no_part_the_calls_before_left_is_cut_and_ends_the_turn() -> None:
    call_c = CALL.replace("notes.txt", "b.txt")
    b = decoder(CALL + "\n" + CALL_B + "\n" + call_c)
    parts = ("read notes.txt", "a.txt", "and tell me what they say")
    opts = replace(options(parallel_calls=True), more_calls=MoreCalls(CallPlan(3, parts=parts), 0.0, 1.0))
    g = decode(b, opts, matcher(b, opts))
    assert g.text == CALL + "\n" + CALL_B and g.repeats_cut == 1  # b.txt is in no part


LIST_CALL = CALL_B.replace("read_file", "list_dir")


def test_each_next_call_is_of_the_tool_its_part_points_to() -> None:
    """The model would take the next tool offered (list_dir); the plan says read_file."""
    constraint = build_constraint([READ_FILE, LIST_DIR], ToolChoice(), engine="llguidance")
    config = AgentConfig(engine="llguidance", parallel_calls=True)
    for tools, second in (((), LIST_CALL), (("read_file", ""), CALL_B), (("", "read_file"), CALL_B)):
        b = decoder([CALL + "\n" + LIST_CALL, CALL + "\n" + CALL_B])
        opts = decoding_options(config, constraint, threshold=0.5, choice=ToolChoice())
        opts = replace(opts, more_calls=MoreCalls(CallPlan(2, parts=("read notes.txt", "a.txt"), tools=tools), 0.0, 1.0))
        g = decode(b, opts, matcher(b, opts))
        # With no tool named for the second part, the last call's tool goes on.
        assert g.text == CALL + "\n" + second, tools


class RankedModel(ScriptedModel):
    """A ``ScriptedModel`` that wants each of its targets, the first most: the next token of
    each target that what is written begins gets a logit, lower for each later target."""

    def logits_after(self, ids: list[int]) -> np.ndarray:
        logits = super().logits_after(ids)
        written = self.detokenize(ids[self.prompt_len :])
        for rank, target in enumerate(self.targets[1:], 1):
            rest = target[len(written) :] if target.startswith(written) else b""
            for t in range(1, len(PIECES)):
                if rest and rest.startswith(PIECES[t]):
                    logits[t] = max(logits[t], 10.0 - 3 * rank + len(PIECES[t]))
        return logits


def test_a_next_call_does_not_start_a_value_of_another_part() -> None:
    """Asked to read notes.txt and list Docs, the model would list notes.txt: its value is
    ruled out (``policy.excluded``), and the model's next choice, Docs, is written."""
    constraint = build_constraint([READ_FILE, LIST_DIR], ToolChoice(), engine="llguidance")
    config = AgentConfig(engine="llguidance", parallel_calls=True)
    wrong, right = LIST_CALL.replace("a.txt", "notes.txt"), LIST_CALL.replace("a.txt", "Docs")
    for names, second in ((((), ("Docs",)), right), (((), ()), wrong)):
        b = Decoder(RankedModel([CALL + "\n" + wrong, CALL + "\n" + right]), make_drafter)
        opts = decoding_options(config, constraint, threshold=0.5, choice=ToolChoice())
        plan = MoreCalls(CallPlan(2, parts=("read notes.txt", "list Docs"), tools=("read_file", "list_dir"), names=names), 0.0, 1.0)
        g = decode(b, replace(opts, more_calls=plan), matcher(b, replace(opts, more_calls=plan)))
        assert g.text == CALL + "\n" + second, names


class DictMasks:
    """A ``MaskStore`` in memory."""

    def __init__(self) -> None:
        self.saved: dict[str, np.ndarray] = {}

    def get(self, name: str, n: int) -> np.ndarray | None:
        mask = self.saved.get(name)
        return mask if mask is not None and len(mask) == n else None

    def put(self, name: str, mask: np.ndarray) -> None:
        self.saved[name] = mask.copy()


class CountingModel(ScriptedModel):
    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.pieces_read = 0

    def token_bytes(self, token: int) -> bytes:
        self.pieces_read += 1
        return super().token_bytes(token)


def test_the_structured_mask_is_worked_out_once_and_then_read_from_the_store() -> None:
    masks = DictMasks()
    first = CountingModel(CALL)
    worked = Decoder(first, make_drafter, masks).structured_mask()
    assert first.pieces_read == len(PIECES) and len(masks.saved) == 1
    assert worked[PIECES.index(b"{")] and worked[PIECES.index(CALL_OPEN.encode())] and not worked[PIECES.index(b"The")]
    second = CountingModel(CALL)  # another process: the store kept it
    assert (Decoder(second, make_drafter, masks).structured_mask() == worked).all()
    assert second.pieces_read == 0
    # A stored mask of another length (another vocabulary) is not used.
    masks.saved = {k: v[:-1] for k, v in masks.saved.items()}
    third = CountingModel(CALL)
    assert (Decoder(third, make_drafter, masks).structured_mask() == worked).all() and third.pieces_read == len(PIECES)


def test_a_call_names_a_part_by_its_value_as_it_will_be_sent() -> None:
    from localagent.backends.decoder import _naming
    from localagent.formats import ParsedCall

    mc = MoreCalls(CallPlan(2, parts=("open docs/install.md", "/etc/hosts")), 0.0, 1.0)
    # "/docs/install.md" is sent as "docs/install.md" (policy.as_given), so it names the first part.
    args = _naming(mc, [ParsedCall("read_file", {"path": "/docs/install.md"})])
    assert args == [{"path": "docs/install.md"}]


@tool
def tag(tags: Annotated[list[str], Field(description="Tags.")], sizes: Annotated[list[int], Field(description="Sizes.")]) -> str:
    """Tag a contact."""
    return ""


def tagged(tags: str, sizes: str = "[1]") -> str:
    return CALL_OPEN + '\n{"name": "tag", "arguments": {"tags": ' + tags + ', "sizes": ' + sizes + "}}\n</tool_call>"


@pytest.mark.parametrize(
    "request_, ended, written",
    [
        # "work", "home", "work", ...: the list ends at the repeat, which is left out.
        ("tag it work", '["work", "home", "work"]', '["work", "home"]'),
        # The request writes "work" twice: the list may hold it twice.
        ("tag it work, home, work", '["work", "home", "work", "home"]', '["work", "home", "work"]'),
    ],
)
def test_a_list_ends_at_an_item_repeated_beyond_the_request(request_: str, ended: str, written: str) -> None:
    constraint = build_constraint([tag.openai_schema()], ToolChoice(), engine="llguidance")
    opts = replace(decoding_options(AgentConfig(engine="llguidance"), constraint, threshold=0.5, choice=ToolChoice()), request=request_)
    loop = '["work", "home", "work", "home", "work", "home", "work", "home", "work"]'
    # The model wants the loop; once the list is ended, it writes the rest of the call.
    b = decoder([tagged(loop), tagged(ended)])
    g = decode(b, opts, matcher(b, opts))
    assert g.text == tagged(written) and g.finish_reason == "stop"
    b = decoder(tagged('["work", "home", "note"]'))  # no repeat: the model's own list
    assert decode(b, opts, matcher(b, opts)).text == tagged('["work", "home", "note"]')


def test_a_number_the_request_repeats_may_repeat_in_a_list() -> None:
    constraint = build_constraint([tag.openai_schema()], ToolChoice(), engine="llguidance")
    for request_, written in (("add 2, 2 and 3", "[2, 2, 3]"), ("add them", "[2]")):
        opts = replace(decoding_options(AgentConfig(engine="llguidance"), constraint, threshold=0.5, choice=ToolChoice()), request=request_)
        b = decoder([tagged('["a"]', "[2, 2, 3]"), tagged('["a"]', "[2, 2]")])
        assert decode(b, opts, matcher(b, opts)).text == tagged('["a"]', written), request_


def test_a_text_run_past_its_quote_names_no_part_after_it() -> None:
    from localagent.backends.decoder import _naming
    from localagent.formats import ParsedCall

    request = 'sms +33612345678 "Dinner is at eight"; timer 10 min'
    mc = MoreCalls(CallPlan(2, parts=('sms +33612345678 "Dinner is at eight"', "timer 10 min")), 0.0, 1.0)
    sms = ParsedCall("send_sms", {"phone_number": "+33612345678", "message": "Dinner is at eight; timer 10 min"})
    args = _naming(mc, [sms], request)
    assert args[0]["message"] == "Dinner is at eight"  # as it will be sent (policy.past_quote)
    from localagent import policy
    assert policy.parts_left(mc.plan.parts, args) == 1  # the timer is still to call
