"""``localagent chat``: a multi-turn session with the model loaded and its KV cache warm."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ..errors import ConfigError
from ..sanitize import for_terminal
from ..messages import Message, history_from_saved, history_to_json, to_openai_messages
from ..stops import Limits
from ..trace import new_trace_path
from .options import (
    ALLOW, ALLOW_COMMANDS, API_KEY, BASE_URL, CTX, DEADLINE, MAX_STEPS, MCP, MODEL, N_GPU_LAYERS, ROOT, SERVER_DIALECT,
    SERVER_TIMEOUT, TOKEN_BUDGET, TOOL_CHOICE, TOOLS, VERBOSE, YES,
)
from .run import LivePrinter, ModelSpec, ToolSpec, _sigterm, build_agent, interrupt_means, shown_answer, summary

if TYPE_CHECKING:
    from ..loop import Agent, Events


def _load(path: Path) -> list[Message]:
    try:
        return history_from_saved(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot resume from {path}: {e}") from None


def _line_editing() -> Path | None:
    """Line editing and the lines of earlier chats at ``you>`` (readline), on a terminal that
    can edit (not ``TERM=dumb``); the history file, in the state folder, or None."""
    if not sys.stdin.isatty() or os.environ.get("TERM") == "dumb":
        return None
    try:
        import readline
    except ImportError:  # no readline (Windows): plain input
        return None
    from ..paths import folder

    path = folder("state", "chat_history")
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(1000)
    return path


def _save_history(path: Path | None) -> None:
    """Write the history after each line, so that a chat killed later keeps it."""
    if path is None:
        return
    import readline

    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        readline.write_history_file(path)


def chat(
    root: Path = ROOT,
    model: Optional[str] = MODEL,
    max_steps: int = MAX_STEPS,
    token_budget: Optional[int] = TOKEN_BUDGET,
    deadline: Optional[float] = DEADLINE,
    tools_file: Optional[Path] = TOOLS,
    save: Optional[Path] = typer.Option(None, "--save", help="Write the history here after every turn."),
    save_openai: bool = typer.Option(False, "--save-openai", help="Save the history as OpenAI chat messages (tool_calls, tool_call_id) instead of localagent's own form."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Start from a history saved with --save (either form)."),
    n_ctx: int = CTX,
    n_gpu_layers: int = N_GPU_LAYERS,
    yes: bool = YES,
    allow: Optional[list[str]] = ALLOW,
    allow_commands: bool = ALLOW_COMMANDS,
    verbose: bool = VERBOSE,
    base_url: Optional[str] = BASE_URL,
    api_key: Optional[str] = API_KEY,
    server_dialect: str = SERVER_DIALECT,
    server_timeout: float = SERVER_TIMEOUT,
    tool_choice: str = TOOL_CHOICE,
    mcp: Optional[list[str]] = MCP,
) -> None:
    """Talk with the agent, turn after turn; an empty line, `exit` or Ctrl-D ends it.

    The model stays loaded and its KV cache warm between turns. Ctrl-C stops the turn under way
    (its partial answer is kept); at the prompt it ends the chat. Limits apply to each turn.
    """
    from ..assemble import default_config
    from ..loop import Events

    history = _load(resume) if resume else []
    with interrupt_means("before the chat started"):
        limits = Limits(max_steps=max_steps, token_budget=token_budget, deadline_s=deadline)
        config = default_config(limits=limits, tool_choice=tool_choice)
        model_spec = ModelSpec(
            model, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, verbose=verbose,
            base_url=base_url, api_key=api_key, server_dialect=server_dialect, server_timeout=server_timeout,
        )
        tool_spec = ToolSpec(tools_file, allow_commands=allow_commands, yes=yes, allow=tuple(allow or ()), mcp=tuple(mcp or ()))
        agent = build_agent(root, model=model_spec, tools=tool_spec, config=config)
        agent.check_budget("")  # a budget that cannot cover a turn's first prompt: say so before the first turn
    p = LivePrinter()
    events = Events(on_text=p.text, on_step_start=p.step, on_call=p.call, on_result=p.result, on_notice=p.notice)
    signal.signal(signal.SIGTERM, _sigterm)
    trace = new_trace_path()
    print(f"localagent chat: {agent.backend.name} in {root}; trace {trace}", file=sys.stderr)
    _turns(agent, events, trace, history, save=save, save_openai=save_openai)


def _turns(
    agent: Agent, events: Events, trace: Path, history: list[Message], *, save: Path | None, save_openai: bool
) -> None:
    """Turn after turn at ``you>``, until an empty line, `exit`, Ctrl-D or Ctrl-C there."""
    history_file = _line_editing()
    while True:
        try:
            line = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            break
        if line in ("", "exit", "quit"):
            break
        _save_history(history_file)
        result = agent.run(line, trace=trace, events=events, history=history)
        history = result.history
        print("\n", file=sys.stderr)
        print(for_terminal(shown_answer(result), sys.stdout), flush=True)
        print(summary(result), file=sys.stderr)
        if save:
            saved = to_openai_messages(history) if save_openai else history_to_json(history)
            save.write_text(json.dumps(saved, ensure_ascii=False), encoding="utf-8")

def register(app: typer.Typer) -> None:
    """Add ``chat`` to the top-level app."""
    app.command("chat")(chat)
