"""``localagent bench``: the speed figures, measured side by side in one run."""

from __future__ import annotations

import json
from typing import Optional

import typer

from .options import LOCAL_MODEL, json_option


def bench(
    model: Optional[str] = LOCAL_MODEL,
    as_json: bool = json_option("every figure"),
    n_ctx: int = typer.Option(4096, "--ctx", min=512, help="Context window."),
) -> None:
    """Measure decoding speed, grammar cost, KV reuse, loop overhead and warm start."""
    from ..evaluation.bench import run_bench, to_json

    result = run_bench(model, n_ctx=n_ctx)
    if as_json:
        print(to_json(result))
        return
    for k, v in result.items():
        if k in ("kv_steps", "left_free_text", "constrained_text"):
            continue
        print(f"{k:40s} {json.dumps(v, ensure_ascii=False)}")


def register(app: typer.Typer) -> None:
    """Add ``bench`` to the top-level app."""
    app.command("bench")(bench)
