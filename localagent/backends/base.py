"""The narrow backend interface every model sits behind.

A backend renders a history (with the tool list) into its model's prompt,
generates one assistant turn under an optional grammar, and reports the tokens
it was sent versus the ones it really evaluated (the rest came from its cache).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from ..constraint.grammar import Constraint
from ..messages import Message
from ..policy import CallPlan

FinishReason = Literal["stop", "length", "context", "error"]


Decision = Literal["call", "prose"]


class StepInfo(BaseModel):
    """What the decoder, the backend and the loop noted about one step: the trace's ``info``.
    Every key is optional and only those set are written (a None set stays null), in the
    order below; a trace's unknown key is kept, one of the wrong type fails its line."""

    model_config = ConfigDict(extra="allow", strict=True)

    # The decoder's (Generation's fields of the same names):
    decision: Decision | None = None
    call_mass: float | None = None
    relevance: float | None = None
    grammar_rejections: int | None = None
    forced_tokens: int | None = None
    forced_dropped: int | None = None
    more_masses: list[float] | None = None
    repeats_cut: int | None = None
    constraint_error: bool | None = None
    warm_start: str | None = None
    # A backend's own (Generation.details), that nothing decides on: prompt lookup's drafts,
    # a server's dialect, tries, usage source and which request key carried the constraint.
    lookup_drafted: int | None = None
    lookup_kept: int | None = None
    server: str | None = None
    dialect: str | None = None
    attempts: int | None = None
    usage: str | None = None
    failures: list[str] | None = None
    server_tool_calls: int | None = None
    stream_diverged: bool | None = None
    constraint: str | None = None
    no_decision: str | None = None
    # The loop's (Generation's fields of the same names):
    unsupported_answer: str | None = None
    change_not_made: str | None = None
    repeat_guard: list[str] | None = None  # trace show joins them
    kv_reuse_lost: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The keys set, as the trace writes them."""
        return self.model_dump(exclude_unset=True)


@dataclass
class Generation:
    """One assistant turn as the backend produced it, and what the loop noted about it."""

    text: str
    finish_reason: FinishReason = "stop"
    prompt_tokens: int = 0  # tokens sent: the whole prompt, every step
    prompt_tokens_evaluated: int = 0  # tokens actually evaluated this step
    completion_tokens: int = 0
    seconds: float = 0.0
    first_token_seconds: float | None = None
    error: str | None = None  # why the step failed (finish_reason "error")
    # What the decoder decided and did (read by the loop, eval and bench):
    constraint_error: bool = False  # the constraint could not be built or applied: failed closed
    decision: Decision | None = None  # call or prose, decided at the first token (None: not there)
    call_mass: float | None = None  # the probability of a structured start at that token
    relevance: float | None = None  # the best offered tool's fit to the request (tool_relevance), at a first turn
    grammar_rejections: int | None = None  # sampled tokens the constraint refused (None: no constraint)
    forced_tokens: int | None = None  # tokens jump-forward inserted without sampling
    forced_dropped: int | None = None  # inserted tokens the plain path would not have chosen
    more_masses: list[float] | None = None  # after each call of a turn: the probability of another
    repeats_cut: int | None = None  # calls cut from the turn: the same call again, or one naming no new part
    warm_start: str | None = None  # the prefix state from disk: "loaded", "saved" or "not saved"
    # What the loop noted about the step:
    unsupported_answer: str | None = None  # an answer not taken: numbers nothing found holds
    change_not_made: str | None = None  # an answer not taken: the change asked for was not made
    repeat_guard: list[str] | None = None  # the repeated calls after which the turn was generated again
    kv_reuse_lost: int | None = None  # prompt tokens the KV cache lost though the history only grew
    # A backend's own notes for the trace (StepInfo's middle keys): nothing reads them.
    details: StepInfo = field(default_factory=StepInfo)

    def pay_for(self, discarded: "Generation") -> None:
        """Add a turn generated before this one and discarded: its tokens and time count too."""
        self.prompt_tokens += discarded.prompt_tokens
        self.prompt_tokens_evaluated += discarded.prompt_tokens_evaluated
        self.completion_tokens += discarded.completion_tokens
        self.seconds += discarded.seconds

    @property
    def prompt_tokens_reused(self) -> int:
        """Prompt tokens served from the KV cache."""
        return self.prompt_tokens - self.prompt_tokens_evaluated

    @property
    def step_info(self) -> StepInfo:
        """The step's ``info`` in the trace: each field above of StepInfo's that is set (a
        constraint_error only when true), and the details."""
        noted = {k: v for k in _NOTED if (v := getattr(self, k)) is not None and v is not False}
        return StepInfo.model_construct(**{**self.details.to_json(), **noted})  # our own values: not checked again

    @property
    def info(self) -> dict[str, Any]:
        """``step_info`` as the trace writes it."""
        return self.step_info.to_json()


_NOTED = [f.name for f in fields(Generation) if f.name in StepInfo.model_fields]  # what step_info copies


@dataclass(frozen=True)
class MoreCalls:
    """Another call or the end of the turn, decided after each call of a turn that may hold
    several, from the model's probability of going on (``policy.more_calls``)."""

    # What the request implies (policy.call_plan): the count of calls; where given, its parts
    # ("fewer than implied" also needs a part no call names yet), the tool of each part's
    # call, the optional texts (which name no part), and the names and code examples a value
    # of a later call must not start with (policy.excluded).
    plan: CallPlan
    below: float  # fewer calls than implied: go on when the probability is at least this
    beyond: float  # as many or more: go on only when it is at least this


@dataclass
class GenerateOptions:
    """Sampling, limits and the constraint for one step."""

    max_tokens: int = 512
    temperature: float = 0.0
    seed: int | None = None
    # The sampler chain above temperature 0 (llama.cpp's defaults; see localagent.sampling).
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    # Greedy prose: draft the next tokens from the prompt (llama-cpp-python's prompt lookup)
    # and keep those the model would have chosen, checked in one batch. The output is the same.
    prompt_lookup: bool = False
    on_text: Callable[[str], None] | None = None  # streamed pieces
    constraint: Constraint | None = None  # what the reply must follow; None: free generation
    # Jump-forward: insert the text the constraint fixes (its call heads and argument keys)
    # without sampling. Off unless asked for: the loop asks through decoding_options.
    jump_forward: bool = False
    # Decide call or prose at the first token: when the model's probability of
    # starting structured output (a tag, a brace, a fence) is at least this, the
    # reply becomes a tool call in the model's own envelope; otherwise it is
    # prose that cannot open one. None leaves the choice to the grammar alone.
    call_threshold: float | None = None
    parallel: bool = True  # several calls may follow one another (then the end is not forced)
    more_calls: MoreCalls | None = None  # None: the model's own choice after each call (greedy)
    # The request the reply serves: a call's list ends at an item repeated more often than the
    # request writes it (policy.repeats_given), and the repeat is left out.
    request: str = ""
    # Server-only: what the constraint enforces, as OpenAI's tool_choice ("auto", "required",
    # "none" or a tool name), for a server that takes tools instead of a grammar. Read by no decoder.
    tool_choice: str = "auto"

    @property
    def grammar(self) -> str | None:
        """The constraint's text when it is GBNF (llama.cpp's engine)."""
        return self.constraint.text if self.constraint and self.constraint.engine == "gbnf" else None

    @property
    def lark(self) -> str | None:
        """The constraint's text when it is a Lark grammar (the llguidance engine)."""
        return self.constraint.text if self.constraint and self.constraint.engine == "llguidance" else None

    @property
    def call_heads(self) -> tuple[str, ...]:
        """The starts every call must have (grammar.call_heads); () without jump-forward."""
        return self.constraint.heads if self.constraint and self.jump_forward else ()

    @property
    def call_keys(self) -> dict[str, tuple[str, ...]] | None:
        """Each tool's argument keys in grammar order; None without jump-forward."""
        return dict(self.constraint.keys) if self.constraint and self.jump_forward else None


class Backend(Protocol):
    """What the agent loop needs from a model."""

    name: str
    context_size: int
    native_tools: bool  # True when the chat template lists tools itself
    # True when prompt_tokens_evaluated counts a real KV-cache reuse: the loop then checks
    # that each step reuses the last prompt (and notes kv_reuse_lost when it does not).
    reuses_kv_cache: bool
    # True when generate takes the decision after each call of a turn itself (MoreCalls); a
    # server samples the whole turn, so AgentConfig.parallel_calls=None means one call there.
    decides_each_call: bool

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` under this model's tokenizer."""
        ...

    def prompt_tokens(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        """Tokens the rendered prompt would take (for budgets and folding)."""
        ...

    def generate(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        options: GenerateOptions,
    ) -> Generation:
        """One assistant turn. Never raises for model-side failures: it
        returns ``finish_reason='error'`` with ``error`` set instead."""
        ...

    def tool_relevance(self, request: str, tools: list[dict[str, Any]]) -> list[float] | None:
        """How well each tool fits ``request`` by the model's own scoring (pointwise mutual
        information of the tool's line given the request); None where the backend cannot
        score text (a server): the first-turn gate is then not applied."""
        ...
