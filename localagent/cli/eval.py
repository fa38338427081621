"""``localagent eval``: tool-call accuracy of a model on a file of cases."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, List, Optional

import typer
from tqdm import tqdm

from ..errors import ConfigError
from ..constraint.grammar import ENGINES
from ..sanitize import for_terminal
from .options import ENGINE, LOCAL_MODEL, N_GPU_LAYERS, json_option


def eval_cmd(
    cases_file: Annotated[Path, typer.Argument(metavar="CASES.jsonl", help="One case per line (see evals/cases.jsonl).")],
    model: Optional[str] = LOCAL_MODEL,
    mode: Annotated[str, typer.Option("--mode", help="constrained (the tools' grammar) or free.")] = "constrained",
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Run N cases, taken in turn from each category.")] = None,
    category: Annotated[Optional[List[str]], typer.Option("--category", help="Run only this category (repeat, or comma-separated, for several).")] = None,
    as_json: bool = json_option("the summary and every result"),
    one_call: Annotated[bool, typer.Option("--one-call", help="Constrained: allow one call per turn, not up to eight (`run` allows up to eight in-process; one through a server, or for a task that asks for a change).")] = False,
    engine: str = ENGINE,
    reason: Annotated[bool, typer.Option("--reason", help="Constrained: one short sentence of why before each call.")] = False,
    tool_choice: Annotated[str, typer.Option("--tool-choice", help="Constrained: auto (call or prose at the first token) or required (every reply a call).")] = "auto",
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=16, help="Token limit of each reply.")] = 256,
    call_threshold: Annotated[Optional[float], typer.Option("--call-threshold", min=0.0, max=1.0, help="Constrained, tool choice auto: call when the first token's call mass is at least this (default: the agent's).")] = None,
    more_calls: Annotated[Optional[str], typer.Option("--more-calls", help="Several calls a turn: BELOW,BEYOND, the probabilities of another call at which to go on under and past the count the request implies, or 'greedy' (default: the agent's).")] = None,
    relevance_floor: Annotated[Optional[str], typer.Option("--relevance-floor", help="Constrained, tool choice auto, first turn: answer in prose when the best tool's fit is below A and the request shares no word with any tool, or below B: 'A,B', or 'off' (default: the agent's).")] = None,
    relevance_ceiling: Annotated[Optional[str], typer.Option("--relevance-ceiling", help="Constrained, tool choice auto, first turn: call when the best tool's fit is at least this (a number), or 'off' (default: the agent's).")] = None,
    n_gpu_layers: int = N_GPU_LAYERS,
) -> None:
    """Score how often the model calls the right tool with the right arguments."""
    from ..backends import load_llama
    from ..evaluation.evaluate import CaseResult, format_report, in_categories, load_cases, run_eval, sample
    from ..loop import AgentConfig

    _check_words(engine, mode, tool_choice)
    more = _more_calls(more_calls, AgentConfig.more_calls)
    floor = _relevance_floor(relevance_floor, AgentConfig.relevance_floor)
    ceiling = _relevance_ceiling(relevance_ceiling, AgentConfig.relevance_ceiling)
    cases = sample(in_categories(load_cases(cases_file), [c for arg in category or [] for c in arg.split(",") if c]), limit)
    backend = load_llama(model, n_ctx=4096, n_gpu_layers=n_gpu_layers, progress=not as_json)

    # A bar over the cases on a terminal; each case's line scrolls above it (and alone in a log).
    bar = tqdm(total=len(cases), desc="eval", unit="case", file=sys.stderr, disable=as_json or None)
    right = 0

    def progress(i: int, r: CaseResult) -> None:
        nonlocal right
        right += r.right
        mark = "ok" if r.right else f"{r.error.value if r.error else '?'}: {r.detail}"
        # The mark quotes the model (a tool name it made up, a value): printable on a terminal.
        line = for_terminal(f"[{i + 1}/{len(cases)}] {r.id} {r.seconds:.1f}s {mark}", sys.stderr)
        if bar.disable:
            print(line, file=sys.stderr, flush=True)
        else:
            bar.write(line, file=sys.stderr)
            bar.set_postfix_str(f"{right}/{i + 1} right", refresh=False)
            bar.update(1)

    with bar:
        report = run_eval(
            backend, cases, "free" if mode == "free" else "constrained", max_tokens=max_tokens,
            parallel=not one_call, reason=reason, engine=ENGINES[engine],
            tool_choice=tool_choice, call_threshold=AgentConfig.call_threshold if call_threshold is None else call_threshold, more_calls=more, relevance_floor=floor,
            relevance_ceiling=ceiling,
            on_result=None if as_json else progress,
        )
    d = report.to_dict()
    typer.echo(json.dumps(d, ensure_ascii=False) if as_json else format_report(d))


def _check_words(engine: str, mode: str, tool_choice: str) -> None:
    """The flags that take one of a few words: one line naming the flag where one does not."""
    if engine not in ENGINES:
        raise ConfigError(f"--engine must be gbnf or llguidance, not {engine!r}")
    if mode not in ("constrained", "free"):
        raise ConfigError(f"--mode must be constrained or free, not {mode!r}")
    if tool_choice not in ("auto", "required"):
        raise ConfigError(f"--tool-choice must be auto or required, not {tool_choice!r}")


def _pair(arg: str | None, default: tuple[float, float] | None, flag: str, off: str, what: str) -> tuple[float, float] | None:
    """A flag that takes ``off`` (None) or two numbers 'A,B' (``what`` names them); None: ``default``."""
    if arg is None:
        return default
    if arg == off:
        return None
    try:
        a, b = (float(x) for x in arg.split(","))
    except ValueError:
        raise ConfigError(f"{flag} must be '{off}' or {what}, not {arg!r}") from None
    return a, b


def _more_calls(arg: str | None, default: tuple[float, float] | None) -> tuple[float, float] | None:
    """``--more-calls``: 'greedy', or two probabilities 'BELOW,BEYOND'."""
    pair = _pair(arg, default, "--more-calls", "greedy", "two probabilities BELOW,BEYOND")
    if arg is not None and pair is not None and not all(0.0 <= p <= 1.0 for p in pair):
        raise ConfigError(f"--more-calls probabilities must lie in 0..1, not {arg!r}")
    return pair


def _relevance_floor(arg: str | None, default: tuple[float, float] | None) -> tuple[float, float] | None:
    """``--relevance-floor``: 'off', or two fits 'A,B' (pointwise mutual information, in nats)."""
    return _pair(arg, default, "--relevance-floor", "off", "two numbers A,B")


def _relevance_ceiling(arg: str | None, default: float | None) -> float | None:
    """``--relevance-ceiling``: 'off', or one fit (pointwise mutual information, in nats)."""
    if arg is None:
        return default
    if arg == "off":
        return None
    try:
        return float(arg)
    except ValueError:
        raise ConfigError(f"--relevance-ceiling must be 'off' or a number, not {arg!r}") from None


def register(app: typer.Typer) -> None:
    """Add ``eval`` to the top-level app."""
    app.command("eval")(eval_cmd)
