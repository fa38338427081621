"""Model backends behind one narrow interface (see ``base.Backend``)."""

from __future__ import annotations

from .base import Backend, Generation, GenerateOptions

__all__ = ["Backend", "Generation", "GenerateOptions", "load_llama"]


def load_llama(
    model: str | None = None,
    *,
    n_ctx: int = 8192,
    n_gpu_layers: int = 0,
    n_threads: int | None = None,
    verbose: bool = False,
    progress: bool = True,
) -> Backend:
    """Resolve ``model`` (an id, a .gguf path, or the default) and load it in-process."""
    from ..provision import default_model_id, resolve_model
    from .llama import LlamaBackend

    path = resolve_model(model or default_model_id(), progress=progress)
    return LlamaBackend(
        path, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, n_threads=n_threads, verbose=verbose, progress=progress
    )
