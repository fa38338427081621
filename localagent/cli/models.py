"""``localagent models``: list, pull and locate model files.

stdout carries only the answer (a table or a path), so ``$(localagent models path X)``
works; progress bars go to stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .. import provision

app = typer.Typer(
    help="List, pull and locate the GGUF models the agent runs on.",
    no_args_is_help=True,
    add_completion=False,
)

Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]


@app.command("list")
def list_cmd() -> None:
    """Show the known models, their size, and whether they are in the cache."""
    rows = provision.list_models()
    width = max(len("ID"), *(len(r["id"]) for r in rows))
    typer.echo(f"{'ID':<{width}}  {'SIZE':>8}  {'CACHED':<6}  DEFAULT")
    for r in rows:
        size = f"{r['size'] / 1_000_000:.0f} MB"
        cached = "yes" if r["cached"] else "no"
        default = "*" if r["default"] else ""
        typer.echo(f"{r['id']:<{width}}  {size:>8}  {cached:<6}  {default}".rstrip())
    typer.echo(f"cache: {provision.cache_dir()}")


@app.command("pull")
def pull_cmd(
    model_id: Annotated[str, typer.Argument(help="A model id from `localagent models list`.")],
    quiet: Quiet = False,
) -> None:
    """Download and verify a model into the cache; print its path."""
    typer.echo(provision.pull(model_id, progress=not quiet))


@app.command("path")
def path_cmd(
    spec: Annotated[str, typer.Argument(metavar="ID_OR_PATH", help="A model id, or the path of a .gguf file.")],
    no_pull: Annotated[bool, typer.Option("--no-pull", help="Fail rather than download.")] = False,
    quiet: Quiet = False,
) -> None:
    """Print the local path of a model (pulling it first if needed)."""
    typer.echo(provision.resolve_model(spec, pull=not no_pull, progress=not quiet))
