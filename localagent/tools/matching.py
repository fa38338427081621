"""The patterns ``search`` matches, run by RE2 in time linear in the text.

Python's ``re`` backtracks: ``(\\w+\\s?)*;`` against one long identifier runs for hours inside a
single C call that holds the interpreter lock, so neither the tool's timeout nor Ctrl-C can
stop it, and the model chooses the pattern. RE2 never backtracks; what it gives up
(backreferences, lookarounds) is refused with a one-line error instead.
"""

from __future__ import annotations

from collections.abc import Callable

import re2

__all__ = ["PatternError", "compile_search"]

MAX_PROGRAM_BYTES = 8 << 20  # RE2's memory for one compiled pattern: 'a{1000}{1000}' is refused


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message says why, in one line."""


def compile_search(pattern: str, *, regex: bool) -> Callable[[str], bool]:
    """A test for one line: does it contain ``pattern`` (a literal, or an RE2 regular expression
    with ``regex``)? Case is ignored unless the pattern has a capital letter."""
    options = re2.Options()
    options.case_sensitive = any(c.isupper() for c in pattern)
    options.literal = not regex
    options.max_mem = MAX_PROGRAM_BYTES
    options.log_errors = False  # RE2 would print its own line on stderr, over the live output
    try:
        rx = re2.compile(pattern, options)
    except re2.error as e:
        why = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise PatternError(
            f"pattern is not a regular expression RE2 can run ({why}); backreferences and "
            "lookarounds are not supported: rewrite it without them, or set regex=false"
        ) from None
    return lambda line: rx.search(line) is not None
