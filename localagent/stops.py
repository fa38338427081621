"""Stop conditions: every way a run ends, with its reason code and exit code.

The loop consults one ``StopWatch`` after each step; this is the only place
where the conditions live.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum

from .messages import ToolCall, ToolResult


class StopReason(str, Enum):
    """Why a run ended. Only ``ANSWERED`` is a natural end."""

    ANSWERED = "answered"
    MAX_STEPS = "max_steps"
    TOKEN_BUDGET = "token_budget"
    REPEATED_CALL = "no_progress_repeated_call"
    CONSECUTIVE_ERRORS = "no_progress_errors"
    RETRY_LIMIT = "no_progress_retry_limit"
    DEADLINE = "deadline"
    CONTEXT_FULL = "context_full"
    CONSTRAINT_ERROR = "constraint_error"
    BACKEND_ERROR = "backend_error"
    INTERRUPTED = "interrupted"

    @property
    def forced(self) -> bool:
        """True for every stop but the natural end."""
        return self is not StopReason.ANSWERED


EXIT_CODES: dict[StopReason, int] = {
    StopReason.ANSWERED: 0,
    # 2 is a user error (bad flag, missing model): see errors.LocalAgentError.
    StopReason.MAX_STEPS: 3,
    StopReason.TOKEN_BUDGET: 4,
    StopReason.REPEATED_CALL: 5,
    StopReason.CONSECUTIVE_ERRORS: 5,
    StopReason.RETRY_LIMIT: 5,
    StopReason.DEADLINE: 6,
    StopReason.CONTEXT_FULL: 7,
    StopReason.CONSTRAINT_ERROR: 8,
    StopReason.BACKEND_ERROR: 9,
    StopReason.INTERRUPTED: 130,
}


@dataclass
class Limits:
    """The bounds of one run."""

    max_steps: int = 12
    token_budget: int | None = None  # prompt tokens evaluated + completion tokens
    repeat_limit: int = 3  # the same call (name + canonical arguments) k times in a row
    error_limit: int = 3  # k error results in a row
    deadline_s: float | None = None


@dataclass
class Stop:
    """A decision to stop, with a message for people and the forced answer."""

    reason: StopReason
    message: str


@dataclass
class StopWatch:
    """Tracks progress and tells the loop when to stop."""

    limits: Limits
    started: float = field(default_factory=time.monotonic)
    _last_call: str | None = None
    _repeats: int = 0
    _errors: int = 0

    def after_results(self, calls: list[ToolCall], results: list[ToolResult]) -> Stop | None:
        """Update the no-progress counters with one step's calls and results."""
        for call in calls:
            sig = call.canonical()
            self._repeats = self._repeats + 1 if sig == self._last_call else 1
            self._last_call = sig
        for res in results:
            self._errors = self._errors + 1 if res.is_error else 0
        k = self.limits.repeat_limit
        if k and self._repeats >= k:
            return Stop(
                StopReason.REPEATED_CALL,
                f"the same call ({calls[-1].name}) was made {self._repeats} times in a row",
            )
        k = self.limits.error_limit
        if k and self._errors >= k:
            return Stop(StopReason.CONSECUTIVE_ERRORS, f"{self._errors} tool errors in a row")
        return None

    def before_step(self, step: int, tokens_used: int) -> Stop | None:
        """Check the step limit, the token budget and the deadline."""
        lim = self.limits
        if step > lim.max_steps:
            return Stop(StopReason.MAX_STEPS, f"step limit of {lim.max_steps} reached")
        if lim.token_budget is not None and tokens_used >= lim.token_budget:
            return Stop(
                StopReason.TOKEN_BUDGET,
                f"token budget of {lim.token_budget} used up ({tokens_used} tokens)",
            )
        if lim.deadline_s is not None and time.monotonic() - self.started >= lim.deadline_s:
            return Stop(StopReason.DEADLINE, f"deadline of {lim.deadline_s:g} s passed")
        return None
