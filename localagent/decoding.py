"""How one step is asked of the model: the ``GenerateOptions`` an ``AgentConfig`` implies.

One path for the agent loop and the evaluation, so that ``eval`` measures the
decoding ``run`` does (jump-forward, the call threshold, the parallel setting).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from . import policy
from .backends.base import Backend, Generation, GenerateOptions, MoreCalls
from .constraint.grammar import Constraint, ToolChoice
from .formats import parse, render_call
from .messages import Message
from .policy import CallPlan

if TYPE_CHECKING:  # loop.py imports this module: a runtime import would be a cycle
    from .loop import AgentConfig


def decoding_options(
    config: AgentConfig,
    constraint: Constraint | None,
    *,
    threshold: float | None,
    choice: ToolChoice | None,
    on_text: Callable[[str], None] | None = None,
    plan: CallPlan = CallPlan(),
    request: str = "",
) -> GenerateOptions:
    """The options of one step under ``constraint`` (None: free text); ``threshold``
    is the first-token call-or-prose threshold, ``choice`` what the constraint enforces,
    ``plan`` what ``request`` implies for a turn of several calls (policy.call_plan)."""
    parallel = several_calls(config) and (constraint is None or constraint.parallel)
    more = None
    if constraint is not None and parallel and config.more_calls is not None:
        named = plan if config.parts_named else replace(plan, parts=(), names=())
        more = MoreCalls(named if config.part_tools else replace(named, tools=()), *config.more_calls)
    return GenerateOptions(
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        seed=config.seed,
        top_k=config.top_k,
        top_p=config.top_p,
        min_p=config.min_p,
        repeat_penalty=config.repeat_penalty,
        prompt_lookup=config.prompt_lookup,
        on_text=on_text,
        constraint=constraint,
        jump_forward=config.jump_forward,
        call_threshold=threshold,
        parallel=parallel,
        more_calls=more,
        request=request,
        tool_choice=(choice.name or choice.mode) if choice else "auto",
    )


def several_calls(config: AgentConfig) -> bool:
    """Whether a turn may hold several calls; None is the in-process default (an Agent
    resolves it for its backend: one through a server)."""
    return config.parallel_calls is not False


def first_token_threshold(config: AgentConfig, choice: ToolChoice, first: str | None = None) -> float | None:
    """The call-or-prose threshold a step uses: the config's, when the constraint is on,
    the choice is auto and no reason sentence comes first (then the choice is made later);
    at a run's first turn (``first``: its request) that implies several calls
    (``policy.calls_implied``), ``AgentConfig.several_threshold`` where lower."""
    if not (config.constrained and choice.mode == "auto" and not config.reason):
        return None
    t, several = config.call_threshold, config.several_threshold
    if t is not None and several is not None and first and policy.calls_implied(policy.unwrapped(first)) >= 2:
        return min(t, several)
    return t


def first_turn(backend: Backend, request: str, tools: list[dict[str, Any]], config: AgentConfig) -> tuple[policy.FirstTurn | None, float | None]:
    """At a first turn whose call or prose is the model's to decide: the kind the request
    decides (``policy.first_turn`` under ``AgentConfig.relevance_floor`` and
    ``relevance_ceiling``; None: the model's first token does), and the best tool's fit.
    (None, None) where the gate is off; where the backend cannot score text (a server), only
    a request that answers itself decides."""
    if config.relevance_floor is None or not tools:
        return None, None
    scores = backend.tool_relevance(request, tools)
    if not scores:
        return ("prose" if policy.answers_itself(request, tools) else None), None
    return policy.first_turn(request, tools, scores, config.relevance_floor, config.relevance_ceiling), round(max(scores), 3)


def ask(
    backend: Backend,
    msgs: list[Message],
    schemas: list[dict[str, Any]],
    options: GenerateOptions,
    request: str,
    config: AgentConfig,
    exists: Callable[[str], bool] | None = None,
) -> Generation:
    """One turn of the model under ``options``; under the constraint, its calls held to the
    request: without the optional texts it does not give (``policy.unasked``;
    ``AgentConfig.drop_unasked``), its values as it gives them (``policy.as_given``;
    ``AgentConfig.as_given``; a value ``exists`` says is a path of the folder is kept)."""
    gen = backend.generate(msgs, schemas, options)
    if not ((config.drop_unasked or config.as_given) and config.constrained and schemas and request):
        return gen
    parsed = parse(gen.text)
    if not parsed.calls or parsed.errors or parsed.content.strip():
        return gen
    calls = [(c.name, c.arguments) for c in parsed.calls]
    if config.drop_unasked:
        calls = list(zip([n for n, _ in calls], policy.unasked(request, calls, schemas)))
    if config.as_given and msgs and msgs[-1].role == "user":  # after a result, a value may be the result's
        calls = list(zip([n for n, _ in calls], policy.as_given(request, calls, schemas, exists)))
    if [a for _, a in calls] != [c.arguments for c in parsed.calls]:
        gen.text = "\n".join(render_call(name, args) for name, args in calls)
    return gen
