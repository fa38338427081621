"""Approval of irreversible calls by a person, outside the model.

The dispatcher asks an approver before any call to an irreversible tool (a write, a command)
runs; the model has no say in it. An approver is ``(tool, call) -> (approved, reason)``; a
refusal goes back to the model as an ordinary ``denied`` result.

``TerminalApprover`` asks on the controlling terminal (``/dev/tty``), so it works while
stdout and stderr are piped; with no terminal it denies. Whatever it shows is made
printable first, so text from the model cannot move the cursor or hide part of a diff; keys
typed before the question appears are discarded, not taken as the answer. A call whose
preview cannot be made (it fails, or takes too long) is refused: nobody approves blind.
"""

from __future__ import annotations

import json
import os
import select
from collections.abc import Iterable

from .dispatch import Approver, call_with_timeout
from .errors import ConfigError
from .messages import ToolCall
from .sanitize import printable
from .tools import Tool
from .validate import closest_names
from .tools.workspace import WorkspaceError

__all__ = [
    "Approver", "PreviewUnavailable", "TerminalApprover", "allow_all", "allow_list", "choose_approver", "deny_all",
    "describe_call", "printable",
]

NO_TERMINAL = "nobody could be asked (no terminal), so it did not run; do not retry it, answer with what you have"
REFUSED = "do not retry it; answer with what you have, or ask the user"
PREVIEW_SECONDS = 5.0  # a preview runs before anyone has said yes: it must not hang the agent


class PreviewUnavailable(Exception):
    """The change a call would make could not be shown, so it must not be approved."""


def deny_all(t: Tool, call: ToolCall) -> tuple[bool, str]:
    """Refuse every irreversible call (what a run with nobody to ask does)."""
    return False, NO_TERMINAL


def allow_all(t: Tool, call: ToolCall) -> tuple[bool, str]:
    """Approve every irreversible call (``yes=True``)."""
    return True, ""


def allow_list(names: Iterable[str], otherwise: Approver = deny_all) -> Approver:
    """Approve calls to the tools in ``names``; ask ``otherwise`` about the rest."""
    allowed = frozenset(names)

    def approve(t: Tool, call: ToolCall) -> tuple[bool, str]:
        return (True, "") if t.name in allowed else otherwise(t, call)

    return approve


def choose_approver(
    tools: Iterable[Tool], *, yes: bool = False, allow: Iterable[str] = (), ask: Approver | None = None
) -> Approver:
    """The approver for a run: ``yes`` approves all; ``allow`` names tools approved in advance
    (a ``ConfigError`` for names that are no irreversible tool); the rest go to ``ask``."""
    ask = ask or TerminalApprover()
    if yes:
        return allow_all
    irreversible = [t.name for t in tools if t.irreversible]
    allow = list(allow)
    for name in allow:
        if name not in irreversible:
            alts = closest_names(name, irreversible, limit=1)
            hint = f"; did you mean {alts[0]}?" if alts else ""
            known = ", ".join(irreversible) or "none"
            raise ConfigError(f"`allow` {name}: not an irreversible tool of this run (they are: {known}){hint}")
    return allow_list(allow, ask) if allow else ask


def describe_call(t: Tool, call: ToolCall, max_lines: int = 400) -> str:
    """What a person is shown before approving: the exact call, then what it would change.
    ``PreviewUnavailable`` if the preview fails or runs past PREVIEW_SECONDS."""
    args = json.dumps(call.arguments, ensure_ascii=False, indent=None)
    lines = [f"approval needed: {t.name} (irreversible)", f"  call: {t.name}({args})"]
    if (preview := t.preview) is not None:
        try:
            change = call_with_timeout(lambda: preview(call.arguments), PREVIEW_SECONDS)
        except WorkspaceError as e:
            change = f"(this call will fail: {e.info.message})\n"
        except TimeoutError:
            raise PreviewUnavailable(f"its preview took more than {PREVIEW_SECONDS:g} s") from None
        except Exception as e:  # the message may hold host paths: the model is told only the kind
            raise PreviewUnavailable(f"its preview failed ({type(e).__name__})") from e
        body = change.rstrip("\n").split("\n")  # not splitlines: '\r' must stay visible
        if len(body) > max_lines:
            body = body[:max_lines] + [f"[... {len(body) - max_lines} more lines not shown]"]
        lines += body
    return printable("\n".join(lines)) + "\n"


class TerminalApprover:
    """Asks y/N on the controlling terminal; no terminal, or end of input, means no.

    Answers: ``y`` approves; ``a`` approves this tool for the rest of the run; anything
    else refuses, and text other than ``n`` is passed on to the model as the reason.
    """

    def __init__(self, tty: str = "/dev/tty", *, max_lines: int = 400) -> None:
        self.tty = tty
        self.max_lines = max_lines
        self.always: set[str] = set()

    def __call__(self, t: Tool, call: ToolCall) -> tuple[bool, str]:
        if t.name in self.always:
            return True, ""
        try:
            # O_NOCTTY: never make a terminal ours just by asking on it.
            fd = os.open(self.tty, os.O_RDWR | os.O_NOCTTY)
        except OSError:
            return False, NO_TERMINAL
        try:
            if not os.isatty(fd):
                return False, NO_TERMINAL
            try:
                text = describe_call(t, call, self.max_lines)
            except PreviewUnavailable as e:
                return False, f"{e}, so nobody was asked and it did not run; do not retry it"
            _discard_typed_ahead(fd)
            os.write(fd, (_clean_line() + text + "Allow it? [y]es, [N]o, [a]lways for this tool: ").encode("utf-8", "replace"))
            answer = _read_line(fd)
        finally:
            os.close(fd)
        if answer is None:
            return False, NO_TERMINAL
        word = answer.strip()
        if word.lower() in ("y", "yes"):
            return True, ""
        if word.lower() in ("a", "always"):
            self.always.add(t.name)
            return True, ""
        if word.lower() in ("", "n", "no"):
            return False, REFUSED
        return False, f"they said: {printable(word)[:300]}"


def _discard_typed_ahead(fd: int) -> None:
    """Throw away keys typed before the question appears: they are no answer to it."""
    try:
        import termios  # POSIX only
    except ImportError:
        return
    termios.tcflush(fd, termios.TCIFLUSH)


def _clean_line() -> str:
    """Start the question on a line of its own, with colours and attributes reset."""
    reset = "" if os.environ.get("TERM", "dumb") == "dumb" else "\x1b[0m"
    return "\r" + reset + "\n"


def _read_line(fd: int) -> str | None:
    """One line typed on the terminal, or None at end of input (Ctrl-D, a hang-up)."""
    data = b""
    while not data.endswith(b"\n"):
        try:
            # Waits in short slices: a Ctrl-C whose signal the kernel hands to another thread
            # does not interrupt a blocking read here, and Python acts on it only between slices.
            if not select.select([fd], [], [], 0.2)[0]:
                continue
            chunk = os.read(fd, 1024)
        except OSError:  # EIO: the terminal went away
            return None if not data else data.decode("utf-8", "replace")
        if not chunk:
            return None if not data else data.decode("utf-8", "replace")
        data += chunk
    return data.decode("utf-8", "replace")
