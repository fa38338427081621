"""``localagent run``: one task, shown live, ending in an answer and a summary line."""

from __future__ import annotations

import json
import os
import signal
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

import typer

from ..errors import BackendError, ConfigError
from ..messages import ToolCall, ToolResult
from ..sanitize import for_terminal, printable
from ..stops import EXIT_CODES, Limits
from ..trace import new_trace_path
from .options import (
    ALLOW, ALLOW_COMMANDS, API_KEY, BASE_URL, CTX, DEADLINE, MAX_STEPS, MCP, MIN_P, MODEL, N_GPU_LAYERS, REPEAT_PENALTY, ROOT,
    SERVER_DIALECT, SERVER_TIMEOUT, TOKEN_BUDGET, TOOL_CHOICE, TOOLS, TOP_K, TOP_P, VERBOSE, YES, flag_text, json_option,
)

if TYPE_CHECKING:
    from ..assemble import Setup
    from ..backends import Backend
    from ..loop import Agent, AgentConfig, RunResult


def _preview(text: str, width: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


class LivePrinter:
    """Shows a run as it happens: streamed text, calls, result previews. What came from the
    model or a file is made printable first: it cannot move the cursor or hide a later diff."""

    def __init__(self, out: Any = sys.stderr):
        self.out = out

    def step(self, n: int) -> None:
        print(f"\n── step {n}", file=self.out, flush=True)

    def text(self, piece: str) -> None:
        self.out.write(printable(piece))
        self.out.flush()

    def call(self, c: ToolCall) -> None:
        args = json.dumps(c.arguments, ensure_ascii=False)
        print(f"\n→ {printable(c.name)}({printable(_preview(args, 80))})", file=self.out, flush=True)

    def notice(self, text: str) -> None:
        print(f"\n  · {printable(text)}", file=self.out, flush=True)

    def result(self, c: ToolCall, r: ToolResult) -> None:
        mark = "✗" if r.is_error else "←"
        print(f"  {mark} {printable(_preview(r.content))}", file=self.out, flush=True)


def summary(result: "RunResult") -> str:
    """The one line after an answer: steps, tokens, time, stop reason, trace."""
    u = result.usage
    return (
        f"[{result.steps} steps · {u.prompt_tokens_evaluated} tokens evaluated of "
        f"{u.prompt_tokens_sent} sent · {u.completion_tokens} generated · "
        f"{result.seconds:.1f} s · {result.stop_reason.value}] trace: {result.trace}"
    )


def shown_answer(result: "RunResult") -> str:
    """The answer as printed: the note of a forced stop names flags, not parameters."""
    if not (result.forced and result.message):
        return result.answer
    return result.answer.replace(result.message, flag_text(result.message), 1)


def check_root(root: Path) -> None:
    """A ConfigError unless ``root`` is a folder whose entries can be listed."""
    if not root.exists():
        raise ConfigError(f"--root {root} does not exist")
    if not root.is_dir():
        raise ConfigError(f"--root {root} is not a folder")
    try:
        with os.scandir(root) as entries:
            next(entries, None)
    except OSError as e:
        raise ConfigError(f"--root {root} cannot be read: {e.strerror or e}") from None


@contextmanager
def interrupt_means(what: str) -> Iterator[None]:
    """Ctrl-C in this block (before a run: a download, the model loading) ends the command
    with one line and exit 130.

    While llama.cpp loads a model, Python code runs only in its callbacks (the log, the
    progress bar), and ctypes swallows a KeyboardInterrupt raised there; so the press is
    also remembered here, and the command stops as soon as the load returns."""
    from . import Interrupted

    pressed = False

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal pressed
        pressed = True
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    except KeyboardInterrupt:
        pressed = True
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        print(file=sys.stderr)  # off the line the ^C or a progress bar is on
        raise Interrupted(f"interrupted {what}")


@dataclass(frozen=True)
class ModelSpec:
    """The model an agent runs on: ``model`` (an id or a .gguf path; None: the default) loaded
    in-process, or, with ``base_url``, the model of that name behind an OpenAI-compatible
    server. The defaults are the flags' (cli/options.py)."""

    model: str | None = None
    n_ctx: int = 8192
    n_gpu_layers: int = 0  # in-process only, as are verbose and progress
    verbose: bool = False
    progress: bool = True
    base_url: str | None = None
    api_key: str | None = None
    server_dialect: str = "auto"
    server_timeout: float = 120.0

    def load(self) -> "Backend":
        """The server's backend, or the model loaded; a file llama.cpp refuses points to --verbose."""
        from ..backends import load_llama, load_server

        if self.base_url:
            return load_server(
                self.base_url, model=self.model, api_key=self.api_key, dialect=self.server_dialect, n_ctx=self.n_ctx,
                timeout=self.server_timeout,
            )
        try:
            return load_llama(
                self.model, n_ctx=self.n_ctx, n_gpu_layers=self.n_gpu_layers, verbose=self.verbose, progress=self.progress
            )
        except BackendError as e:
            if self.verbose:  # llama.cpp's reason is on the screen already
                raise
            # Without --verbose, llama.cpp's log (which says why) is silenced.
            raise BackendError(f"{e} (llama.cpp's reason is in its log: run again with --verbose)") from None


@dataclass(frozen=True)
class ToolSpec:
    """The tools an agent is offered and how their calls are approved: the built-in ones (and
    run_command with ``allow_commands``), ``tools_file``'s and the MCP servers' ``mcp``; ``yes``
    approves every call, ``allow`` the tools it names."""

    tools_file: Path | None = None
    allow_commands: bool = False
    yes: bool = False
    allow: tuple[str, ...] = ()
    mcp: tuple[str, ...] = ()

    def setup(self, root: Path) -> "Setup":
        """The tools in ``root`` and their approver, the MCP servers connected."""
        from ..assemble import workspace_setup

        # With MCP servers the approver is chosen again once their tools are known, so that
        # --allow can name one of them.
        allow = () if self.mcp else self.allow
        setup = workspace_setup(root, tools_file=self.tools_file, allow_commands=self.allow_commands, yes=self.yes, allow=allow)
        return _with_mcp(setup, self.mcp, yes=self.yes, allow=self.allow) if self.mcp else setup


def build_agent(
    root: Path, *, model: ModelSpec = ModelSpec(), tools: ToolSpec = ToolSpec(), config: "AgentConfig | None" = None
) -> "Agent":
    """The agent a front end runs: ``tools`` in ROOT, ``model`` loaded (or, with a base_url, its
    server), ``config`` (default: ``assemble.default_config()``). The root, the tools and the
    tool choice are checked before the model loads."""
    from ..assemble import assemble, default_config

    config = config or default_config()
    check_root(root)
    setup = tools.setup(root)
    check_tool_choice(config.tool_choice, [t.name for t in setup.tools])
    return assemble(model.load(), setup, config)


def _with_mcp(setup: "Setup", specs: "Sequence[str]", *, yes: bool, allow: "Sequence[str]") -> "Setup":
    """``setup`` with the tools of the MCP servers ``specs`` added."""
    from ..approval import choose_approver
    from ..assemble import Setup
    from ..tools.mcp import connect_all

    _, mcp_tools = connect_all(specs)  # closed when the process exits
    tools = setup.tools + mcp_tools
    return Setup(setup.workspace, tools, choose_approver(tools, yes=yes, allow=allow))


def check_tool_choice(choice: str, names: "Sequence[str]") -> None:
    """A ConfigError unless ``choice`` is auto, required, none or one of the tools' names."""
    from ..validate import closest_names

    if choice in ("auto", "required", "none") or choice in names:
        return
    alts = closest_names(choice, list(names), limit=1)
    hint = f"; did you mean {alts[0]}?" if alts else ""
    raise ConfigError(f"--tool-choice {choice}: give auto, required, none or a tool's name{hint}")


def _sigterm(*_: Any) -> None:
    raise KeyboardInterrupt


def run(
    task: str = typer.Argument(..., help="What the agent should do."),
    root: Path = ROOT,
    model: Optional[str] = MODEL,
    max_steps: int = MAX_STEPS,
    token_budget: Optional[int] = TOKEN_BUDGET,
    deadline: Optional[float] = DEADLINE,
    trace: Optional[Path] = typer.Option(None, "--trace", help="Trace file (JSONL); default: a new file under LOCALAGENT_TRACES."),
    tools_file: Optional[Path] = TOOLS,
    as_json: bool = json_option("the answer, the stop reason, steps, tokens and the trace's path"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the answer."),
    free: bool = typer.Option(False, "--free", help="Turn the grammar constraint off (for comparison)."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, max=2.0),
    seed: int = typer.Option(0, "--seed"),
    top_k: int = TOP_K,
    top_p: float = TOP_P,
    min_p: float = MIN_P,
    repeat_penalty: float = REPEAT_PENALTY,
    n_ctx: int = CTX,
    n_gpu_layers: int = N_GPU_LAYERS,
    verbose: bool = VERBOSE,
    yes: bool = YES,
    allow: Optional[list[str]] = ALLOW,
    allow_commands: bool = ALLOW_COMMANDS,
    base_url: Optional[str] = BASE_URL,
    api_key: Optional[str] = API_KEY,
    server_dialect: str = SERVER_DIALECT,
    server_timeout: float = SERVER_TIMEOUT,
    tool_choice: str = TOOL_CHOICE,
    mcp: Optional[list[str]] = MCP,
) -> None:
    """Run TASK with the agent in ROOT and print the answer.

    Writes and commands ask for approval on the terminal; with no terminal they are denied.
    """
    from ..assemble import default_config
    from ..loop import Events

    live = not (as_json or quiet)
    with interrupt_means("before the run started"):
        config = default_config(
            limits=Limits(max_steps=max_steps, token_budget=token_budget, deadline_s=deadline), tool_choice=tool_choice,
            temperature=temperature, seed=seed, constrained=not free,
            top_k=top_k, top_p=top_p, min_p=min_p, repeat_penalty=repeat_penalty,
        )
        model_spec = ModelSpec(
            model, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, verbose=verbose, progress=live,
            base_url=base_url, api_key=api_key, server_dialect=server_dialect, server_timeout=server_timeout,
        )
        tool_spec = ToolSpec(tools_file, allow_commands=allow_commands, yes=yes, allow=tuple(allow or ()), mcp=tuple(mcp or ()))
        agent = build_agent(root, model=model_spec, tools=tool_spec, config=config)
        agent.check_budget(task)
    p = LivePrinter()
    events = Events(on_text=p.text, on_step_start=p.step, on_call=p.call, on_result=p.result, on_notice=p.notice) if live else None
    signal.signal(signal.SIGTERM, _sigterm)
    result = agent.run(task, trace=trace or new_trace_path(), events=events)
    _print_result(result, as_json=as_json, live=live)
    raise typer.Exit(EXIT_CODES[result.stop_reason])


def _print_result(result: "RunResult", *, as_json: bool, live: bool) -> None:
    """The run's one JSON object, or its answer on stdout (and, live, the summary on stderr)."""
    if as_json:
        shown = result.to_dict() | {"answer": shown_answer(result), "message": flag_text(result.message)}
        print(json.dumps(shown, ensure_ascii=False))
        return
    if live:
        print("\n", file=sys.stderr)
    print(for_terminal(shown_answer(result), sys.stdout))
    if live:
        print(summary(result), file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add ``run`` to the top-level app."""
    app.command("run")(run)
