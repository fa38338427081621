"""Model, context and process faults on the real tiny model (SmolLM2-135M): a reply cut by
max_tokens inside a call, the context window filled by tool results, truncated and corrupt
model files given to ``--model``, and ``localagent run`` stopped by SIGINT or SIGTERM while
the model writes. (The same faults on the scripted fake: test_model_faults.py and
test_process_faults.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from localagent.backends.llama import LlamaBackend
from localagent.backends.prefix_cache import PrefixCache
from localagent.loop import Agent, AgentConfig
from localagent.provision import resolve_model
from localagent.stops import Limits, StopReason
from localagent.tools import tool
from localagent.trace import read_lines

pytestmark = pytest.mark.real

TINY = "smollm2-135m"
ran: list[str] = []


@tool
def save_note(title: str, body: str) -> str:
    """Save a note with a title and a body."""
    ran.append(title)
    return "saved"


@tool
def read_page() -> str:
    """Read the next page of the book."""
    ran.append("page")
    return " ".join(f"word{i}" for i in range(700))


def test_max_tokens_inside_a_call_never_runs_it(smol: Any, tmp_path: Path) -> None:
    ran.clear()
    config = AgentConfig(tool_choice="required", max_tokens=12, limits=Limits(max_steps=2, error_limit=0))
    result = Agent(smol, [save_note], config=config).run("Save a note about the weather.", trace=tmp_path / "t.jsonl")
    steps = [r for r in read_lines(tmp_path / "t.jsonl") if r["type"] == "step"]
    assert len(steps) == 2 and ran == []
    for step in steps:
        assert step["finish_reason"] == "length" and step["text"].startswith("<tool_call>"), step["text"]
        assert step["calls"] == []
        [error] = step["results"]
        assert "the reply hit the token limit inside a tool call" in error["content"]
    assert result.stop_reason is StopReason.MAX_STEPS


def test_the_context_window_filled_by_results_stops_before_llama_overflows(tmp_path: Path) -> None:
    ran.clear()
    n_ctx, max_tokens = 1024, 48
    backend = LlamaBackend(resolve_model(TINY, progress=False), n_ctx=n_ctx, prefix_cache=PrefixCache(tmp_path / "p"))
    config = AgentConfig(
        tool_choice="required", max_tokens=max_tokens, max_result_tokens=5000,
        limits=Limits(max_steps=6, repeat_limit=0, error_limit=0),
    )  # fmt: skip
    result = Agent(backend, [read_page], config=config).run("Read the book.", trace=tmp_path / "t.jsonl")
    trace = read_lines(tmp_path / "t.jsonl")
    assert result.stop_reason is StopReason.CONTEXT_FULL, result.message
    assert "even with old tool results folded" in result.message
    steps = [r for r in trace if r["type"] == "step"]
    assert steps and ran == ["page"] * len(steps)
    assert all(s["prompt_tokens"] + max_tokens <= n_ctx and s["error"] is None for s in steps)
    assert trace[-1]["type"] == "run_end" and trace[-1]["stop_reason"] == "context_full"


# -- model files that are not whole ---------------------------------------------------------


def _damaged(src: Path, folder: Path, kind: str) -> Path:
    data = src.read_bytes()
    out = folder / f"{kind}.gguf"
    if kind == "first-megabyte":
        out.write_bytes(data[: 1 << 20])
    elif kind == "half":
        out.write_bytes(data[: len(data) // 2])
    elif kind == "all-but-the-last-byte":
        out.write_bytes(data[:-1])
    elif kind == "header-scrambled":
        out.write_bytes(data[:8] + bytes(b ^ 0x5A for b in data[8:4096]) + data[4096:])
    return out


@pytest.mark.parametrize("kind", ["first-megabyte", "half", "all-but-the-last-byte", "header-scrambled"])
def test_a_truncated_or_corrupt_model_file_is_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    model = _damaged(resolve_model(TINY, progress=False), tmp_path, kind)
    (tmp_path / "root").mkdir()
    env = dict(os.environ, LOCALAGENT_TRACES=str(tmp_path / "traces"))
    argv = [sys.executable, "-m", "localagent", "run", "Say hi.", "--root", str(tmp_path / "root"), "--model", str(model)]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert p.returncode == 2 and len(lines) == 1, p.stderr[-2000:]
    assert lines[0].startswith(f"localagent: error: cannot load model {model}")
    assert p.stdout == "" and not (tmp_path / "traces").exists()


def test_a_model_with_corrupt_weights_still_ends_its_run_cleanly(tmp_path: Path) -> None:
    # The header is whole, so llama.cpp loads it; a third of the weights are 0xFF (NaN scales).
    data = bytearray(resolve_model(TINY, progress=False).read_bytes())
    third = len(data) // 3
    data[third : 2 * third] = b"\xff" * third
    model = tmp_path / "nan-weights.gguf"
    model.write_bytes(bytes(data))
    (tmp_path / "root").mkdir()
    trace = tmp_path / "t.jsonl"
    argv = [sys.executable, "-m", "localagent", "run", "Say hi.", "--root", str(tmp_path / "root"), "--model",
            str(model), "--max-steps", "1", "--trace", str(trace), "--json"]  # fmt: skip
    env = dict(os.environ, LOCALAGENT_PREFIX_CACHE=str(tmp_path / "prefix"))
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert "Traceback" not in p.stderr and p.returncode in (0, 3, 5), p.stderr[-2000:]
    assert json.loads(p.stdout)["stop_reason"] == read_lines(trace)[-1]["stop_reason"]


# -- signals while the real model writes ----------------------------------------------------


class _Run:
    """``localagent run`` on the tiny model, its stderr read as it comes."""

    def __init__(self, tmp_path: Path, task: str) -> None:
        (tmp_path / "root").mkdir(exist_ok=True)
        self.trace = tmp_path / "t.jsonl"
        env = dict(os.environ, LOCALAGENT_PREFIX_CACHE=str(tmp_path.parent / "prefix"), TERM="dumb")
        argv = [sys.executable, "-m", "localagent", "run", task, "--root", str(tmp_path / "root"), "--model", TINY,
                "--trace", str(self.trace)]  # fmt: skip
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)  # fmt: skip
        self.err = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        while piece := self.proc.stderr.read(1):
            self.err += piece

    def wait_for_text(self, chars: int, timeout: float = 120) -> None:
        end = time.monotonic() + timeout
        while len(self.err.partition("── step 1\n")[2].strip()) < chars:
            assert self.proc.poll() is None, self.err
            assert time.monotonic() < end, self.err
            time.sleep(0.01)

    def finish(self) -> tuple[int, str]:
        out = self.proc.stdout.read() if self.proc.stdout else ""
        code = self.proc.wait(60)
        self._reader.join(10)
        return code, out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_real_model_writes(tmp_path: Path, sig: signal.Signals) -> None:
    run = _Run(tmp_path, "Write a long poem about the sea, with many verses.")
    run.wait_for_text(40)
    run.proc.send_signal(sig)
    code, out = run.finish()
    assert code == 130, run.err[-2000:]
    assert "Traceback" not in run.err
    first, _, partial = out.partition("\n")
    assert first.startswith("[stopped: interrupted]") and len(partial.strip()) >= 40
    shown = run.err.partition("── step 1\n")[2]
    assert shown.strip().startswith(partial.strip()[:40])  # what was streamed is what is kept
    records = read_lines(run.trace)
    lines = [x for x in run.trace.read_text(encoding="utf-8").split("\n") if x]
    assert len(records) == len(lines)
    assert [r["type"] for r in records] == ["run_start", "step", "run_end"]
    assert records[1]["error"] == "interrupted while generating" and records[1]["text"].strip() == partial.strip()
    assert records[2]["stop_reason"] == "interrupted"
