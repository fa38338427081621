"""How an approved ``run_command`` runs: no shell, a scrubbed environment, bounded output, and
every process it started killed when it ends.

A command is not confined to the workspace: once approved it runs with the user's rights and
can read or change anything they can. What this module takes away is what it need not have:
the agent's secrets (API keys, tokens, cloud credentials in the environment) and its HOME.

On Linux each process it starts carries a marker in its environment, so those that left its
process group (``setsid``, a double fork) are still found in /proc and killed. What remains
possible: a process that clears its environment and leaves the group, or runs under another
user, outlives the command; so does anything it asked another service to start (cron, systemd,
a container daemon).
"""

from __future__ import annotations

import ctypes
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from ..errors import ErrorKind, ToolErrorInfo
from .workspace import WorkspaceError

__all__ = ["COMMAND_OUTPUT_BYTES", "MAX_COMMAND_SECONDS", "command_env", "hide_own_environment", "run"]

MAX_COMMAND_SECONDS = 120
COMMAND_OUTPUT_BYTES = 8_000  # kept from the head and from the tail of a command's output
KEPT_NAMES = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "VIRTUAL_ENV"})  # and LC_*
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|CRED|AUTH|SESSION|COOKIE|PRIVATE", re.IGNORECASE)
MARKER = "LOCALAGENT_COMMAND_ID"


def command_env(home: str, marker: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """A command's environment: an allow-list of ours (PATH, the locale, VIRTUAL_ENV), never a
    name like a key, token or password; HOME and TMPDIR in ``home``; our ``marker``."""
    source = os.environ if environ is None else environ
    env = {
        k: v for k, v in source.items()
        if (k in KEPT_NAMES or k.startswith("LC_")) and not SECRET_NAME.search(k)
    }
    env.update(HOME=home, TMPDIR=home, TERM="dumb", **{MARKER: marker})
    return env


def hide_own_environment() -> bool:
    """Make this process not dumpable (Linux), so that /proc/<pid>/environ and /mem are readable
    by root only: scrubbing the command's environment does not stop it reading ours through its
    parent's /proc entry (os.environ changes leave that copy as it was at start). False where
    it cannot be done. It also stops core dumps and a same-user debugger from attaching."""
    if sys.platform != "linux":
        return False
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


_PR_SET_DUMPABLE = 4


def _fail(kind: ErrorKind, message: str) -> NoReturn:
    raise WorkspaceError(ToolErrorInfo(kind=kind, message=message, argument="command"))


def run(root: Path, argv: list[str], timeout: int) -> str:
    """Run ``argv`` in ``root``; 'exit code N' and its output, kept bounded however much it prints."""
    marker = secrets.token_hex(8)
    hide_own_environment()
    with tempfile.TemporaryDirectory(prefix="localagent-home-", ignore_cleanup_errors=True) as home:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=root,
                env=command_env(home, marker),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, to kill it all; no controlling tty
            )
        except FileNotFoundError:
            _fail(ErrorKind.NOT_FOUND, f"program '{argv[0]}' not found; give a program on PATH or a path to one")
        except PermissionError:
            _fail(ErrorKind.INVALID_ARGUMENT, f"'{argv[0]}' is not executable")
        kill = lambda: _kill_tree(proc.pid, marker)  # noqa: E731
        try:
            code, out = _wait(proc, timeout, kill)
        finally:
            kill()  # whatever it left running, in its group or not
    if code is None:
        _fail(
            ErrorKind.TIMEOUT,
            f"command did not finish within {timeout} s and was killed; "
            f"raise timeout (at most {MAX_COMMAND_SECONDS}) or run something shorter",
        )
    return f"exit code {code}\n{out}" if out else f"exit code {code} (no output)"


def _wait(proc: subprocess.Popen[bytes], timeout: int, kill: Callable[[], None]) -> tuple[int | None, str]:
    """(exit code, or None on timeout; its output with the middle cut past the limits)."""
    head, tail, total = bytearray(), bytearray(), 0

    def drain() -> None:  # read everything, keep the head and a rolling tail
        nonlocal total
        assert proc.stdout is not None
        while chunk := proc.stdout.read1(65536):  # type: ignore[attr-defined]  # a BufferedReader
            total += len(chunk)
            room = COMMAND_OUTPUT_BYTES - len(head)
            head.extend(chunk[:room])
            tail.extend(chunk[room:] if room > 0 else chunk)
            del tail[: max(0, len(tail) - COMMAND_OUTPUT_BYTES)]

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    # Tools run in a worker thread: an interrupt of the agent never lands here, and the
    # command still ends by its own timeout.
    try:
        code: int | None = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        code = None
        kill()  # before reaping it: its pid still names the group
        proc.wait()
    reader.join(2)
    if reader.is_alive():  # something it started in the background still holds the output
        kill()
        reader.join(2)
    kept_head, kept_tail = bytes(head), bytes(tail)
    out = kept_head.decode("utf-8", "replace")
    if kept_tail:
        cut = total - len(kept_head) - len(kept_tail)
        if cut > 0:
            out += f"\n[... {cut} bytes of output not shown ...]\n"
        out += kept_tail.decode("utf-8", "replace")
    return code, out


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_tree(pgid: int, marker: str) -> None:
    """Kill the command's process group, then every process still carrying its marker (one
    that called setsid or double-forked), until none is found."""
    _kill_group(pgid)
    for _ in range(10):  # a process may fork while we look; a few rounds catch its children
        found = _marked(marker)
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)  # a killed process is gone from /proc only once it is reaped


def _marked(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (Linux /proc; elsewhere none are found)."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):  # a zombie's reads as empty: it is dead already
                    found.append(pid)
        except OSError:
            continue
    return found
