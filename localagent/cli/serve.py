"""``localagent serve``: the model as an OpenAI-compatible API, calls from the constrained decoder."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from .options import CTX, LOCAL_MODEL, N_GPU_LAYERS, VERBOSE
from .run import ModelSpec, interrupt_means

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve(
    model: Optional[str] = LOCAL_MODEL,
    host: str = typer.Option("127.0.0.1", "--host", help="The address to listen on; only this machine by default."),
    port: int = typer.Option(8080, "--port", min=1, max=65535, help="The port to listen on."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Refuse requests without 'Authorization: Bearer KEY' (better: LOCALAGENT_API_KEY)."),
    n_ctx: int = CTX,
    n_gpu_layers: int = N_GPU_LAYERS,
    verbose: bool = VERBOSE,
) -> None:
    """Serve the model at /v1/chat/completions and /v1/models (OpenAI's API), with tools,
    tool_choice and streaming; tool calls come from the grammar, so their arguments parse.
    Requests are answered one at a time."""
    from ..serving.serve import create_app, serve as run_server

    with interrupt_means("before serving started"):
        backend = ModelSpec(model, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, verbose=verbose).load()
        create_app(backend)  # fastapi missing: say so before announcing anything
    if host not in LOOPBACK and not api_key:
        print(f"localagent serve: warning: listening on {host} with no --api-key: anyone who can reach it can use it", file=sys.stderr)
    print(f"localagent serve: {backend.name} at http://{host}:{port}/v1 (Ctrl-C stops)", file=sys.stderr)
    run_server(backend, host=host, port=port, api_key=api_key)


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the top-level app."""
    app.command("serve")(serve)
