"""``localagent stats`` and ``localagent trace show``: read trace files back.

``stats`` summarises many runs (steps, stop reasons, failures per tool);
``trace show`` replays one run step by step.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import ConfigError
from ..formats import parse
from ..sanitize import for_terminal
from ..trace import RunEnd, RunStart, TraceRecord, TraceResult, TraceStep, read_trace, summarize
from .options import json_option

trace_app = typer.Typer(help="Read trace files.", no_args_is_help=True, add_completion=False)


def _preview(text: str, width: int = 100) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def format_stats(d: dict[str, Any]) -> str:
    """The summary of ``trace.Stats.to_dict()`` as a few aligned lines."""
    lines = [f"runs: {d['runs']}" + (f" ({d['unfinished_traces']} unfinished)" if d["unfinished_traces"] else "")]
    if d["steps_mean"] is not None:
        lines.append(f"steps: mean {d['steps_mean']}, median {d['steps_median']}")
    if d["stop_reasons"]:
        lines.append(f"stop reasons ({d['cut_off_runs']} of {d['runs']} runs cut off):")
        width = max(len(k) for k in d["stop_reasons"])
        for reason, n in sorted(d["stop_reasons"].items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {reason:<{width}}  {n:>5}  {d['stop_reason_pct'][reason]:>5.1f}%")
    if d["tool_calls"]:
        lines.append("tool calls:")
        width = max(len(k) for k in d["tool_calls"])
        for name, n in sorted(d["tool_calls"].items(), key=lambda kv: (-kv[1], kv[0])):
            failed = d["tool_failures"].get(name, 0)
            lines.append(f"  {name:<{width}}  {n:>5}  {failed:>5} failed ({_pct(failed, n)})")
    sent, evaluated = d["prompt_tokens_sent"], d["prompt_tokens_evaluated"]
    lines.append(
        f"prompt tokens: {sent} sent, {evaluated} evaluated ({_pct(sent - evaluated, sent)} from the KV cache)"
    )
    if d.get("kv_reuse_lost_steps"):
        lines.append(
            f"KV reuse lost in {d['kv_reuse_lost_steps']} steps ({d['kv_reuse_lost_tokens']} tokens evaluated again): "
            "the chat template rendered earlier turns differently"
        )
    return "\n".join(lines)


def format_trace(records: list[TraceRecord]) -> str:
    """A readable replay of the runs in one trace: task, steps, calls, results, stop."""
    out: list[str] = []
    for rec in records:
        if isinstance(rec, RunStart):
            if out:
                out.append("")
            out.append(f"task: {rec.task}")
            worst = "?" if rec.worst_case_tokens is None else rec.worst_case_tokens
            out.append(f"model: {rec.model or '?'} · tools: {', '.join(rec.tools) or '(none)'} · worst case {worst} tokens")
        elif isinstance(rec, TraceStep):
            out += _format_step(rec)
        else:
            out.append("")
            out.append(
                f"stop: {rec.stop_reason} ({rec.message}) · {rec.steps} steps"
                f" · {rec.usage.get('total_tokens', '?')} tokens · {rec.seconds} s"
            )
            out.append("answer:")
            out += ["  " + line for line in rec.answer.splitlines()]
    if records and not isinstance(records[-1], RunEnd):
        out.append("")
        out.append("stop: none recorded (the run was cut short)")
    return "\n".join(out)


def _format_step(rec: TraceStep) -> list[str]:
    head = (
        f"── step {rec.step}  ({rec.prompt_tokens} prompt tokens, {rec.prompt_tokens_evaluated} evaluated,"
        f" {rec.completion_tokens} generated · {rec.step_seconds} s)"
    )
    lines = ["", head]
    if guarded := rec.info.repeat_guard:
        lines.append(f"  (repeat guard: {', '.join(guarded)} already answered; asked for prose)")
    if lost := rec.info.kv_reuse_lost:
        lines.append(f"  (KV cache: {lost} tokens of earlier turns evaluated again; the template rendered them differently)")
    prose = parse(rec.text).content
    lines += ["  " + line for line in prose.splitlines() if line.strip()]
    results = {r.call_id: r for r in rec.results}
    for call in rec.calls:
        args = json.dumps(call.arguments, ensure_ascii=False)
        lines.append(f"  → {call.name}({_preview(args, 80)})")
        res = results.pop(call.id, None)
        if res is not None:
            lines.append(_format_result(res))
    lines += [_format_result(r) for r in results.values()]  # format errors have no call
    if rec.finish_reason not in (None, "stop"):
        lines.append(f"  finish: {rec.finish_reason}")
    if rec.error:
        lines.append(f"  ✗ model error: {rec.error}")
    return lines


def _format_result(res: TraceResult) -> str:
    mark = "✗" if res.error else "←"
    cut = f"  [{res.truncated_tokens} tokens truncated]" if res.truncated_tokens else ""
    who = f"{res.name}: " if res.error else ""
    return f"    {mark} {who}{_preview(res.content)}{cut}"


def stats(
    traces: Annotated[list[Path], typer.Argument(metavar="TRACE...", help="Trace files (JSONL).")],
    as_json: bool = json_option("the summary"),
) -> None:
    """Summarise runs: steps to finish, share of each stop reason, failures per tool."""
    d = summarize(list(traces)).to_dict()
    # Made printable on a terminal: tool names and errors in a trace are the model's text.
    typer.echo(json.dumps(d, ensure_ascii=False) if as_json else for_terminal(format_stats(d), sys.stdout))


@trace_app.command("show")
def show(trace: Annotated[Path, typer.Argument(metavar="FILE", help="A trace file (JSONL).")]) -> None:
    """Replay one trace: the task, each step's text, calls, results and tokens, and the stop."""
    records = read_trace(trace)
    if not records:
        raise ConfigError(f"{trace} holds no trace records")
    typer.echo(for_terminal(format_trace(records), sys.stdout))  # the model's text and files' contents


def register(app: typer.Typer) -> None:
    """Add ``stats`` and ``trace show`` to the top-level app."""
    app.command("stats")(stats)
    app.add_typer(trace_app, name="trace")
