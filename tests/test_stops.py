"""Stop conditions: limits before a step, no-progress counters after it."""

from __future__ import annotations

import time

from localagent.errors import ToolErrorInfo
from localagent.messages import ToolCall, ToolResult
from localagent.stops import EXIT_CODES, Limits, StopReason, StopWatch


def call(name: str = "f", **args: object) -> ToolCall:
    return ToolCall("id", name, dict(args))


def ok() -> ToolResult:
    return ToolResult("id", "f", "fine")


def err() -> ToolResult:
    return ToolResult("id", "f", "error", error=ToolErrorInfo(kind="x", message="bad"))


def test_every_reason_has_an_exit_code() -> None:
    assert set(EXIT_CODES) == set(StopReason)
    assert EXIT_CODES[StopReason.ANSWERED] == 0
    assert all(code != 0 for r, code in EXIT_CODES.items() if r is not StopReason.ANSWERED)
    assert 2 not in EXIT_CODES.values()  # reserved for user errors
    assert [r for r in StopReason if not r.forced] == [StopReason.ANSWERED]


def test_step_limit() -> None:
    w = StopWatch(Limits(max_steps=2))
    assert w.before_step(1, 0) is None and w.before_step(2, 0) is None
    stop = w.before_step(3, 0)
    assert stop is not None and stop.reason is StopReason.MAX_STEPS and "2" in stop.message


def test_token_budget() -> None:
    w = StopWatch(Limits(token_budget=100))
    assert w.before_step(1, 99) is None
    stop = w.before_step(1, 100)
    assert stop is not None and stop.reason is StopReason.TOKEN_BUDGET and "100" in stop.message
    assert StopWatch(Limits()).before_step(1, 10**9) is None


def test_deadline() -> None:
    w = StopWatch(Limits(deadline_s=0.05))
    assert w.before_step(1, 0) is None
    time.sleep(0.06)
    stop = w.before_step(1, 0)
    assert stop is not None and stop.reason is StopReason.DEADLINE


def test_repeated_call_counts_equal_calls_in_a_row() -> None:
    w = StopWatch(Limits(repeat_limit=3, error_limit=0))
    assert w.after_results([call(a=1, b=2)], [ok()]) is None
    assert w.after_results([call(b=2, a=1)], [ok()]) is None  # key order does not matter
    stop = w.after_results([call(a=1, b=2)], [ok()])
    assert stop is not None and stop.reason is StopReason.REPEATED_CALL and "3 times" in stop.message


def test_a_different_call_resets_the_repeat_count() -> None:
    w = StopWatch(Limits(repeat_limit=2, error_limit=0))
    assert w.after_results([call(a=1)], [ok()]) is None
    assert w.after_results([call(a=2)], [ok()]) is None
    assert w.after_results([call(a=1)], [ok()]) is None


def test_consecutive_errors() -> None:
    w = StopWatch(Limits(repeat_limit=0, error_limit=3))
    assert w.after_results([call(a=1), call(a=2)], [err(), err()]) is None
    assert w.after_results([call(a=3)], [ok()]) is None  # a success resets
    assert w.after_results([call(a=4), call(a=5)], [err(), err()]) is None
    stop = w.after_results([call(a=6)], [err()])
    assert stop is not None and stop.reason is StopReason.CONSECUTIVE_ERRORS


def test_zero_turns_a_counter_off() -> None:
    w = StopWatch(Limits(repeat_limit=0, error_limit=0))
    for _ in range(10):
        assert w.after_results([call()], [err()]) is None
