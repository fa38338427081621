"""``localagent config``: the settings the environment and the config file give, and from where."""

from __future__ import annotations

import typer

from .. import config


def show(ctx: typer.Context) -> None:
    """Show each setting taken from the environment or the config file, and its source."""
    root = ctx.find_root().command
    settings, path = config.load(root)
    state = "found" if path.is_file() else "none there"
    typer.echo(f"config file: {path} ({state})")
    if not settings:
        typer.echo("no settings from the environment or the file; every option has its default")
    for s in settings:
        typer.echo(f"{' '.join(s.command)} --{s.option} = {s.value!r}  ({s.source})")


def register(app: typer.Typer) -> None:
    """Add ``config`` to the top-level app."""
    app.command("config")(show)
