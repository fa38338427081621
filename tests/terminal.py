"""A child process on its own pty, driven the way a person at a terminal would drive it."""

from __future__ import annotations

import os
import pty
import select
import signal
import time
import warnings
from typing import Callable


class Terminal:
    """A child process on its own pty (its controlling terminal), driven like a person would."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        with warnings.catch_warnings():  # fork in a threaded process: the child only execs
            warnings.simplefilter("ignore", DeprecationWarning)
            self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            try:
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.screen = b""
        self.status: int | None = None

    def _read(self, timeout: float) -> bool:
        """Read what is shown; False once the child closed the terminal."""
        if not select.select([self.fd], [], [], timeout)[0]:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child is gone
            return False
        self.screen += data
        return bool(data)

    def text(self) -> str:
        return self.screen.decode("utf-8", "replace").replace("\r\n", "\n")

    def rendered(self) -> str:
        """What a person sees: a carriage return goes back to the start of the line, and what
        follows overwrites it (as a progress bar redraws and then clears its line)."""
        lines = []
        for raw in self.text().split("\n"):
            cells: list[str] = []
            col = 0
            for ch in raw:
                if ch == "\r":
                    col = 0
                    continue
                if col < len(cells):
                    cells[col] = ch
                else:
                    cells.append(ch)
                col += 1
            lines.append("".join(cells).rstrip())
        return "\n".join(lines)

    def expect(self, what: str, timeout: float, count: int = 1) -> None:
        """Wait until ``what`` is on the screen (``count`` times)."""
        end = time.monotonic() + timeout
        while self.text().count(what) < count:
            if time.monotonic() > end or not self._read(min(1.0, max(0.0, end - time.monotonic()))):
                if self.text().count(what) >= count:
                    return
                raise AssertionError(f"{what!r} never appeared{f' {count} times' if count > 1 else ''}; the screen:\n{self.text()}")

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def answer_until_exit(self, keys: str, timeout: float) -> int:
        """Type ``keys`` at every further approval prompt until the child exits."""
        end = time.monotonic() + timeout
        answered = self.text().count("Allow it?")
        while time.monotonic() < end and self._read(1.0):
            if self.text().count("Allow it?") > answered:
                answered += 1
                self.type(keys)
        return self.wait(10)

    def exited_within(self, seconds: float) -> bool:
        """Read for up to ``seconds``; True once the child has closed the terminal."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if not self._read(0.2):
                return True
        return False

    def wait(self, timeout: float) -> int:
        """Read until the child exits; its exit code."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and self._read(1.0):
            pass
        deadline = time.monotonic() + 10
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                raise AssertionError(f"the child did not exit; the screen:\n{self.text()}")
            time.sleep(0.1)

    def ctrl_c(self) -> None:
        """Press Ctrl-C: the terminal sends SIGINT to the program in the foreground."""
        self.type("\x03")

    def until(self, condition: Callable[[], bool], timeout: float) -> None:
        """Read until ``condition()`` holds."""
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > end or not self._read(1.0):
                if condition():
                    return
                raise AssertionError(f"the condition never held; the screen:\n{self.text()}")

    def grown(self, chars: int, timeout: float) -> None:
        """Wait until ``chars`` more characters are on the screen."""
        start, end = len(self.text()), time.monotonic() + timeout
        while len(self.text()) < start + chars:
            if time.monotonic() > end or not self._read(1.0):
                raise AssertionError(f"the screen stopped growing; the screen:\n{self.text()}")
