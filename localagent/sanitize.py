"""One sanitiser for everything the model or a file puts on the terminal.

Text from the model, from files and from commands is shown to a person who decides on it, so
it must not drive the terminal: an escape sequence could conceal the diff that follows
(``ESC[8m``), move the cursor and draw a fake one, or a carriage return could overwrite a line.
Control and format characters are shown as visible escapes instead.
"""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = ["for_terminal", "printable"]

# Cc: C0/C1 controls (ESC, CR, BEL, CSI); Cf: format (bidi overrides, zero-width); Cs, Co:
# surrogates, private use; Zl, Zp: line and paragraph separators, which some terminals break on.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})


def printable(text: str) -> str:
    """``text`` with control and format characters (escapes, carriage returns, bidi overrides)
    shown as ``\\xNN`` / ``\\uNNNN``; newlines and tabs are kept."""
    out = []
    for ch in text:
        if ch in "\n\t" or unicodedata.category(ch) not in _HIDDEN:
            out.append(ch)
        else:
            n = ord(ch)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return "".join(out)


def for_terminal(text: str, stream: Any) -> str:
    """``text`` made printable if ``stream`` is a terminal; exact if it is a pipe or a file."""
    isatty = getattr(stream, "isatty", None)
    return printable(text) if callable(isatty) and isatty() else text
