"""The calculate tool: exact values, and no expression that can take the agent's time or memory."""

from __future__ import annotations

import time

import pytest

from localagent.tools.calculate import calculate, calculate_tool
from localagent.tools.workspace import WorkspaceError


@pytest.mark.parametrize(
    "expression, shown",
    [
        ("40 + 56", "40 + 56 = 96"),
        ("max(63, 48)", "max(63, 48) = 63"),
        ("'stone'[::-1]", "'stone'[::-1] = enots"),
        ("''.join(reversed('river'))", "''.join(reversed('river')) = revir"),
        ("sum([1.5, 2]) / 2", "sum([1.5, 2]) / 2 = 1.75"),
        ("len('hello'.upper())", "len('hello'.upper()) = 5"),
    ],
)
def test_an_expression_is_worked_out_exactly(expression: str, shown: str) -> None:
    assert calculate(expression) == shown


# Each would take seconds, gigabytes or the host: refused in milliseconds with one line.
ATTACKS = [
    "9**9**9",
    "'a' * 10**9",
    "[1] * 10**8",
    "'x'.ljust(10**9)",
    "'-'.join('a' * 10000)",
    "10**299 * 10**299",
    "2 << 10**9",
    "[x for x in 'a' * 10000 for y in 'a' * 10000]",
    "().__class__.__bases__",
    "open('/etc/passwd').read()",
    "__import__('os').system('id')",
    "x + 1",
    "int('9' * 9999)",
    "1 / 0",
]


@pytest.mark.parametrize("expression", ATTACKS)
def test_a_costly_or_unsafe_expression_is_refused_at_once(expression: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(WorkspaceError) as e:
        calculate(expression)
    assert time.monotonic() - t0 < 0.5
    assert e.value.info.argument == "expression" and "\n" not in e.value.info.message


def test_calculate_is_reversible_and_read_only() -> None:
    t = calculate_tool()
    assert t.name == "calculate" and not t.irreversible
