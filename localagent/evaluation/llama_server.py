"""llama-cpp-python's own server (``python -m llama_cpp.server``), or ``localagent serve``, on
a cached model, started and stopped around a measurement or a test: the servers the
side-by-side figures are taken against. The launcher applies the in-process backend's model parameters, without which
the stock server segfaults at the first decode on CPUs with AMX (see backends/llama.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

LAUNCH = """
import runpy, sys
from localagent.backends.llama import model_defaults, safe_defaults
with model_defaults(**safe_defaults()):
    sys.argv[0] = "llama_cpp.server"
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


@dataclass
class LlamaServer:
    """A running server: its URL, its process and its log."""

    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """Stop it at once (a test's dying server)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llama_cpp_server(
    model: str, *, n_ctx: int = 8192, threads: int = 2, log: Path | None = None, start_s: float = 180,
    extra: Sequence[str] = (),
) -> Iterator[LlamaServer]:
    """llama-cpp-python's server on ``model`` (an id or a .gguf path) on a free loopback port,
    once it answers ``/v1/models``; stopped on the way out. ``extra``: more of its options.
    RuntimeError (with the log's end) when it does not start within ``start_s``."""
    from ..provision import resolve_model

    port = free_port()
    cmd = [sys.executable, "-c", LAUNCH, "--model", str(resolve_model(model, progress=False)),
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
           "--verbose", "False", *extra]
    with serving(cmd, port, log=log, start_s=start_s) as server:
        yield server


@contextmanager
def localagent_server(model: str, *, n_ctx: int = 8192, log: Path | None = None, start_s: float = 180) -> Iterator[LlamaServer]:
    """``localagent serve`` on ``model``, as llama_cpp_server starts llama-cpp-python's."""
    port = free_port()
    cmd = [sys.executable, "-m", "localagent", "serve", "--model", model, "--port", str(port), "--ctx", str(n_ctx)]
    with serving(cmd, port, log=log, start_s=start_s) as server:
        yield server


@contextmanager
def serving(cmd: list[str], port: int, *, log: Path | None = None, start_s: float = 180) -> Iterator[LlamaServer]:
    """The server ``cmd`` starts on loopback ``port``, once it answers ``/v1/models``."""
    from ..backends.server import ServerBackend

    with tempfile.TemporaryDirectory(prefix="server-") as tmp:
        path = log or Path(tmp) / "server.log"
        with path.open("wb") as out:
            server = LlamaServer(f"http://127.0.0.1:{port}", subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT), path)
        try:
            probe, deadline = ServerBackend(server.url, timeout=2.0, template_tools=False), time.monotonic() + start_s
            while not probe.probe():
                if server.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start (exit {server.proc.poll()}): {path.read_text()[-2000:]}")
                time.sleep(0.2)
            yield server
        finally:
            server.stop()
