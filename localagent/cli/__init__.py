"""The command line: thin wrappers that parse, call the library and print.

Every command is a typer sub-app in its own module. ``main`` turns the user and
program error family (``LocalAgentError``) into one line and a non-zero exit.
"""

from __future__ import annotations

import atexit
import os
import sys
from contextlib import suppress
from typing import NoReturn

import typer

from .. import config as settings
from ..errors import LocalAgentError
from .options import flag_text


class Interrupted(LocalAgentError):
    """Ctrl-C before a run started (while the model loads): one line, exit 130.
    A run records its own interrupt (trace, partial answer)."""

    exit_code = 130

app = typer.Typer(
    name="localagent",
    help=(
        "Run a tool-using agent on a local GGUF model.\n\n"
        "Every option can also be set as LOCALAGENT_<FLAG> in the environment "
        "(--max-steps: LOCALAGENT_MAX_STEPS) or in the config file "
        "(LOCALAGENT_CONFIG, else ~/.config/localagent/config.toml); "
        "flags win over the environment, the environment over the file. "
        "`localagent config` shows what is set."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    # Imported here so that each front end stays in its own module.
    from . import models as models_cmd
    from . import stats as stats_cmd
    from . import eval as eval_cmd
    from . import bench as bench_cmd
    from . import chat as chat_cmd
    from . import config as config_cmd
    from . import tasks as tasks_cmd
    from . import serve as serve_cmd
    from . import run as run_cmd

    app.add_typer(models_cmd.app, name="models")
    stats_cmd.register(app)
    eval_cmd.register(app)
    bench_cmd.register(app)
    chat_cmd.register(app)
    config_cmd.register(app)
    tasks_cmd.register(app)
    serve_cmd.register(app)
    run_cmd.register(app)


_register()


def usage_line(e: Exception) -> str:
    """A click usage error as one line, with the help to read."""
    message = " ".join(str(getattr(e, "format_message", e.__str__)()).split())
    ctx = getattr(e, "ctx", None)
    return f"{message} (see `{ctx.command_path} --help`)" if ctx is not None else message


def main() -> None:
    """Console-script entry point."""
    try:
        _main()
    except SystemExit as e:
        dispatch = sys.modules.get("localagent.dispatch")
        if dispatch is not None and dispatch.tools_still_running():
            _exit_now(e.code)
        raise


def _exit_now(code: object) -> NoReturn:
    """Exit at once, without finalizing the interpreter, while a tool given up on (Ctrl-C, its
    timeout) is still inside a long C call. A thread that comes back from C++ (RE2's search)
    into a finalizing interpreter is ended by pthread_exit, whose unwinding through C++ frames
    calls std::terminate: an abort, with llama.cpp's gdb backtrace, seconds after the answer.
    The exit handlers still run (MCP servers are stopped) and the output is flushed."""
    status = code if isinstance(code, int) else 0 if code is None else 1
    if not isinstance(code, (int, type(None))):
        print(code, file=sys.stderr)
    with suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with suppress(BaseException):
            stream.flush()
    os._exit(status)


def _main() -> None:
    try:
        # Environment and config-file settings become click's defaults, so flags win.
        command = typer.main.get_command(app)
        found, _ = settings.load(command)
        # Not click's standalone mode: its usage errors are a box of five lines; here they are one.
        code = command.main(prog_name="localagent", default_map=settings.default_map(found), standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except typer.TyperException as e:  # click's usage errors (a bad flag, value, command)
        if type(e).__name__ == "NoArgsIsHelpError":  # no command: the help, as click shows it
            e.show()  # type: ignore[attr-defined]
            sys.exit(2)
        print(f"localagent: error: {usage_line(e)}", file=sys.stderr)
        sys.exit(getattr(e, "exit_code", 2))
    except typer.Abort:
        print("\nlocalagent: aborted", file=sys.stderr)
        sys.exit(1)
    except LocalAgentError as e:
        if os.environ.get("LOCALAGENT_TRACEBACK"):
            raise
        kind = "" if isinstance(e, Interrupted) else "error: "
        print(f"localagent: {kind}{flag_text(str(e))}", file=sys.stderr)
        sys.exit(e.exit_code)
    except Exception as e:
        if os.environ.get("LOCALAGENT_TRACEBACK"):
            raise
        # A bug of ours: one line, and the way to see more.
        print(
            f"localagent: internal error: {type(e).__name__}: {e} (set LOCALAGENT_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
        sys.exit(70)
