"""JSONL traces: one record per step, flushed as it happens; and their summary.

A trace is written line by line and flushed after each record, so a run cut
short (Ctrl-C, SIGTERM, a crash) leaves every finished step on disk.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import ConfigError
from .paths import folder


def default_trace_dir() -> Path:
    """``LOCALAGENT_TRACES``, else the user state folder's ``traces`` (``~/.local/state/localagent/traces`` on Linux)."""
    return folder("state", "traces", env="LOCALAGENT_TRACES")


def new_trace_path() -> Path:
    """A fresh, time-stamped trace file name in the default folder."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return default_trace_dir() / f"run-{stamp}-{os.getpid()}.jsonl"


class TraceWriter:
    """Appends JSON records to a file, one per line, flushing each."""

    def __init__(self, path: Path | str | None):
        self.path = Path(path) if path is not None else None
        self._fh: IO[str] | None = None
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # A lone surrogate (a broken \u escape in a reply) is written as its JSON
                # escape, so the record stays valid JSON instead of failing the run.
                self._fh = open(self.path, "a", encoding="utf-8", errors="backslashreplace")
                if self._fh.tell() and not _ends_with_newline(self.path):
                    self._fh.write("\n")  # a killed run's torn last line stays a line of its own
            except OSError as e:
                why = e.strerror
                if isinstance(e, (FileExistsError, NotADirectoryError)):  # a file where a folder must be
                    why = f"{next(p for p in self.path.parents if p.exists())} is not a folder"
                raise ConfigError(f"cannot write trace {self.path}: {why}") from None

    def write(self, record: dict[str, Any]) -> None:
        """Write one record and flush it to the OS."""
        if self._fh is None:
            return
        record = {"t": round(time.time(), 3), **record}
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()

    def close(self) -> None:
        """Close the file; further writes are dropped."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


class _Lenient(BaseModel):
    # Every field may be missing (old traces, other record types), but one that is there
    # has the type the readers rely on; strict, so "3" is not taken for 3.
    model_config = ConfigDict(extra="allow", strict=True)


class _Call(_Lenient):
    id: str | None = None
    name: str | None = None


class _Result(_Lenient):
    call_id: str | None = None
    name: str | None = None
    content: str = ""
    error: dict[str, Any] | None = None
    truncated_tokens: int = 0


class _Info(_Lenient):
    repeat_guard: list[str] = []


class _Record(_Lenient):
    """The shape of what ``TraceWriter`` writes from the loop, as far as readers use it."""

    type: str | None = None
    task: str = ""
    model: str | None = None
    tools: list[str] = []
    step: int | None = None
    text: str = ""
    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    error: str | None = None
    calls: list[_Call] = []
    results: list[_Result] = []
    info: _Info = _Info()
    stop_reason: str = "unknown"
    message: str = ""
    steps: int = 0
    answer: str = ""
    usage: dict[str, int] = {}
    seconds: float = 0.0


def read_trace(path: Path | str) -> list[dict[str, Any]]:
    """The records of one trace. A line that is not a whole record of the right shape (a
    torn last line of a killed run, a damaged or foreign line) is skipped."""
    records = []
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read trace {path}: {e.strerror}") from None
    for raw in data.split(b"\n"):  # not splitlines(): U+2028 and friends occur inside strings
        line = raw.decode("utf-8", errors="replace")
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            _Record.model_validate(record)
        except (json.JSONDecodeError, ValidationError, RecursionError):
            continue
        records.append(record)
    return records


@dataclass
class Stats:
    """A summary over many runs."""

    runs: int = 0
    finished: int = 0
    steps: list[int] = field(default_factory=list)
    stop_reasons: Counter[str] = field(default_factory=Counter)
    tool_calls: Counter[str] = field(default_factory=Counter)
    tool_failures: Counter[str] = field(default_factory=Counter)
    tokens_sent: int = 0
    tokens_evaluated: int = 0
    kv_reuse_lost_steps: int = 0  # steps whose template re-rendered earlier turns
    kv_reuse_lost_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        steps = sorted(self.steps)
        share = {k: round(100 * v / self.runs, 1) for k, v in self.stop_reasons.items()} if self.runs else {}
        return {
            "runs": self.runs,
            "unfinished_traces": self.runs - self.finished,
            "steps_mean": round(sum(steps) / len(steps), 2) if steps else None,
            "steps_median": steps[len(steps) // 2] if steps else None,
            "stop_reasons": dict(self.stop_reasons),
            "stop_reason_pct": share,
            "cut_off_runs": sum(v for k, v in self.stop_reasons.items() if k != "answered"),
            "tool_calls": dict(self.tool_calls),
            "tool_failures": dict(self.tool_failures),
            "prompt_tokens_sent": self.tokens_sent,
            "prompt_tokens_evaluated": self.tokens_evaluated,
            "kv_reuse_lost_steps": self.kv_reuse_lost_steps,
            "kv_reuse_lost_tokens": self.kv_reuse_lost_tokens,
        }


def summarize(paths: list[Path | str]) -> Stats:
    """Steps to finish, failures per tool and share of each stop reason."""
    st = Stats()
    for p in paths:
        recs = read_trace(p)
        starts = [r for r in recs if r.get("type") == "run_start"]
        if not starts:
            continue
        st.runs += len(starts)
        for r in recs:
            if r.get("type") == "step":
                st.tokens_sent += r.get("prompt_tokens", 0)
                st.tokens_evaluated += r.get("prompt_tokens_evaluated", 0)
                lost = (r.get("info") or {}).get("kv_reuse_lost")
                if isinstance(lost, int) and lost > 0:
                    st.kv_reuse_lost_steps += 1
                    st.kv_reuse_lost_tokens += lost
                for res in r.get("results", []):
                    name = res.get("name") or "(unnamed)"
                    st.tool_calls[name] += 1
                    if res.get("error"):
                        st.tool_failures[name] += 1
            elif r.get("type") == "run_end":
                st.finished += 1
                st.steps.append(r.get("steps", 0))
                st.stop_reasons[r.get("stop_reason", "unknown")] += 1
        unfinished = len(starts) - sum(1 for r in recs if r.get("type") == "run_end")
        if unfinished > 0:
            st.stop_reasons["unfinished"] += unfinished
    return st
