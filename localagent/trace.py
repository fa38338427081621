"""JSONL traces: one record per step, flushed as it happens; and their summary.

A trace is written line by line and flushed after each record, so a run cut
short (Ctrl-C, SIGTERM, a crash) leaves every finished step on disk. The records
(``RunStart``, ``TraceStep``, ``RunEnd``) are defined here once: the loop writes
through them and the readers parse each line back into them.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .backends.base import StepInfo
from .errors import ConfigError
from .paths import folder

if TYPE_CHECKING:
    from .loop import StepRecord


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

    def write(self, record: TraceRecord | dict[str, Any]) -> None:
        """Write one record and flush it to the OS."""
        if self._fh is None:
            return
        fields = record.to_json() if isinstance(record, _Line) else record
        line = {"t": round(time.time(), 3), **fields}
        self._fh.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
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


class _Line(BaseModel):
    # One definition for the writer and the readers. Every field has a default, so that an
    # old trace missing a newer field still reads; a field that is there has the type the
    # readers rely on (strict: "3" is not taken for 3); unknown fields are kept.
    model_config = ConfigDict(extra="allow", strict=True)

    def to_json(self) -> dict[str, Any]:
        """The record as written: its declared fields in order, nested records as dicts."""
        return {k: _plain(getattr(self, k)) for k in type(self).model_fields}


def _plain(value: Any) -> Any:
    if isinstance(value, StepInfo):
        return value.to_json()
    if isinstance(value, list):
        return [v.to_json() if isinstance(v, _Line) else v for v in value]
    return value


class TraceCall(_Line):
    """A tool call as a step record holds it."""

    id: str | None = None
    name: str | None = None
    arguments: dict[str, Any] = {}


class TraceResult(_Line):
    """A call's result as a step record holds it (``error`` is ``ToolErrorInfo.to_dict()``)."""

    call_id: str | None = None
    name: str | None = None
    content: str = ""
    error: dict[str, Any] | None = None
    truncated_tokens: int = 0
    seconds: float = 0.0


class RunStart(_Line):
    """The first record of a run: the task, the model, the tools and the whole config."""

    type: Literal["run_start"] = "run_start"
    task: str = ""
    model: str | None = None
    tools: list[str] = []
    config: dict[str, Any] = {}
    worst_case_tokens: int | None = None


class TraceStep(_Line):
    """One step: the tokens it cost, the model's text, its calls and their results."""

    type: Literal["step"] = "step"
    step: int = 0
    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    prompt_tokens_reused: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    model_seconds: float = 0.0
    first_token_seconds: float | None = None
    step_seconds: float = 0.0
    text: str = ""
    calls: list[TraceCall] = []
    results: list[TraceResult] = []
    parse_errors: list[str] = []
    error: str | None = None
    info: StepInfo = Field(default_factory=StepInfo)  # Generation.step_info: what the decoder, backend and loop noted

    @classmethod
    def of(cls, rec: StepRecord) -> TraceStep:
        """The record of what the loop's step did."""
        gen = rec.generation
        return cls(
            step=rec.step,
            prompt_tokens=gen.prompt_tokens,
            prompt_tokens_evaluated=gen.prompt_tokens_evaluated,
            prompt_tokens_reused=gen.prompt_tokens_reused,
            completion_tokens=gen.completion_tokens,
            finish_reason=gen.finish_reason,
            model_seconds=round(gen.seconds, 4),
            first_token_seconds=gen.first_token_seconds,
            step_seconds=round(rec.seconds, 4),
            text=gen.text,
            calls=[TraceCall(**c.to_dict()) for c in rec.calls],
            results=[TraceResult(**r.to_dict()) for r in rec.results],
            parse_errors=rec.parse_errors,
            error=gen.error,
            info=gen.step_info,
        )


class RunEnd(_Line):
    """The last record of a finished run: ``RunResult.to_dict()``."""

    type: Literal["run_end"] = "run_end"
    answer: str = ""
    stop_reason: str = "unknown"
    message: str = ""
    steps: int = 0
    usage: dict[str, int] = {}
    trace: str | None = None
    seconds: float = 0.0


TraceRecord = RunStart | TraceStep | RunEnd
_TYPES: dict[str, type[TraceRecord]] = {"run_start": RunStart, "step": TraceStep, "run_end": RunEnd}


def read_trace(path: Path | str) -> list[TraceRecord]:
    """The records of one trace, as the types the loop wrote them with. A line that is not a
    whole record of the right shape (a torn last line of a killed run, a damaged or foreign
    line) is skipped, and so is a record of a type the loop does not write."""
    return [typed for _, typed in _read(path) if typed is not None]


def read_lines(path: Path | str) -> list[dict[str, Any]]:
    """The records of one trace as written (``t`` included), a record of any type kept: for
    a reader that checks the lines themselves. Lines that are no whole record are skipped."""
    return [raw for raw, _ in _read(path)]


def _read(path: Path | str) -> list[tuple[dict[str, Any], TraceRecord | None]]:
    """Each record as written, and as its type (None for a type the loop does not write)."""
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
            typed = parse_record(record)
        except (ValueError, RecursionError):  # ValidationError and JSONDecodeError are ValueErrors
            continue
        records.append((record, typed))
    return records


def parse_record(record: Any) -> TraceRecord | None:
    """One decoded line as the type the loop wrote it with (None for a type it does not
    write). Raises ValueError when it is no record or a field has the wrong type."""
    kind = record.get("type") if isinstance(record, dict) else 0
    if kind is not None and not isinstance(kind, str):
        raise ValueError("not a trace record")
    model = _TYPES.get(kind) if kind is not None else None
    return model.model_validate(record) if model is not None else None


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
        starts = sum(isinstance(r, RunStart) for r in recs)
        if not starts:
            continue
        st.runs += starts
        for r in recs:
            if isinstance(r, TraceStep):
                _add_step(st, r)
            elif isinstance(r, RunEnd):
                st.finished += 1
                st.steps.append(r.steps)
                st.stop_reasons[r.stop_reason] += 1
        unfinished = starts - sum(isinstance(r, RunEnd) for r in recs)
        if unfinished > 0:
            st.stop_reasons["unfinished"] += unfinished
    return st


def _add_step(st: Stats, r: TraceStep) -> None:
    st.tokens_sent += r.prompt_tokens
    st.tokens_evaluated += r.prompt_tokens_evaluated
    lost = r.info.kv_reuse_lost
    if lost is not None and lost > 0:
        st.kv_reuse_lost_steps += 1
        st.kv_reuse_lost_tokens += lost
    for res in r.results:
        name = res.name or "(unnamed)"
        st.tool_calls[name] += 1
        if res.error:
            st.tool_failures[name] += 1
