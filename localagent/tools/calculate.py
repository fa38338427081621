"""The calculate tool: an expression worked out exactly, where a small model guesses.

Asked for the total of 40 and 56 the 0.5B model wrote 92, asked which of 63 and 48 is
larger it named no number, asked to spell 'stone' backwards it wrote 'stone'; asked to
write the expression, it writes ``40 + 56`` or ``'stone'[::-1]``. The expression is read by
simpleeval (no names, imports or dunder attributes; a whitelist of functions and of string
methods), and every value it makes is bounded in size, so that no expression can take
more than milliseconds or megabytes (``9**9**9``, ``'a'*10**9``, ``'x'.ljust(10**9)``).
"""

from __future__ import annotations

import ast
import operator
from typing import Annotated, Any

from pydantic import Field
from simpleeval import EvalWithCompoundTypes, InvalidExpression

from ..errors import ErrorKind, ToolErrorInfo
from .base import Tool, make_tool
from .workspace import WorkspaceError  # the error already phrased for the model

MAX_DIGITS = 300  # an integer past this is no everyday answer, and bigger ones cost time
MAX_ITEMS = 10_000  # characters of a string, items of a list
MAX_EXPONENT = 1_000

FUNCTIONS = {f.__name__: f for f in (abs, len, max, min, round, sorted, sum, int, float, str, list, reversed)}
_STR = {"upper", "lower", "title", "capitalize", "swapcase", "strip", "lstrip", "rstrip", "split", "splitlines",
        "count", "startswith", "endswith", "find", "index", "isdigit", "isalpha", "join"}
ALLOWED_ATTRS: dict[type, set[str]] = {str: _STR, list: {"count", "index"}, tuple: {"count", "index"}, int: set(), float: set()}


def _pow(a: Any, b: Any) -> Any:
    if isinstance(b, (int, float)) and abs(b) > MAX_EXPONENT:
        raise ValueError(f"exponent {b} is over {MAX_EXPONENT}")
    return operator.pow(a, b)


def _mul(a: Any, b: Any) -> Any:
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_ITEMS:
            raise ValueError(f"the result would be over {MAX_ITEMS} long")
    return operator.mul(a, b)


def _shift(a: Any, b: Any) -> Any:
    if isinstance(b, int) and b > MAX_DIGITS * 4:
        raise ValueError("the shift is too large")
    return operator.lshift(a, b)


class _Bounded(EvalWithCompoundTypes):  # type: ignore[misc]
    """simpleeval with every intermediate value checked against the size bounds."""

    def _eval(self, node: ast.AST) -> Any:
        value = super()._eval(node)
        _check_size(value)
        return value


def _check_size(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_DIGITS * 3.33:
        raise ValueError(f"a number over {MAX_DIGITS} digits")
    if isinstance(value, (str, list, tuple, dict, set)) and len(value) > MAX_ITEMS:
        raise ValueError(f"a value over {MAX_ITEMS} long")


def evaluate(expression: str) -> Any:
    """The value of ``expression``; WorkspaceError (invalid_argument) when it cannot be worked out."""
    ops = {**_Bounded().operators, ast.Pow: _pow, ast.Mult: _mul, ast.LShift: _shift}
    ev = _Bounded(operators=ops, functions=FUNCTIONS, names={}, allowed_attrs=ALLOWED_ATTRS)
    try:
        value = ev.eval(expression)
        if isinstance(value, reversed):
            value = list(value)
        return value
    except (InvalidExpression, SyntaxError, ValueError, TypeError, ArithmeticError, IndexError, KeyError, AttributeError) as e:
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise WorkspaceError(ToolErrorInfo(ErrorKind.INVALID_ARGUMENT, f"cannot work out {expression!r}: {message}", argument="expression")) from None


def calculate(
    expression: Annotated[str, Field(min_length=1, max_length=300, description="A Python expression.")],
) -> str:
    """Work out arithmetic or a text operation exactly."""
    value = evaluate(expression)
    return f"{expression} = {value!r}" if not isinstance(value, str) else f"{expression} = {value}"


def calculate_tool() -> Tool:
    return make_tool(calculate, timeout=5.0)
