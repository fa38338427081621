"""Model backends behind one narrow interface (see ``base.Backend``)."""

from __future__ import annotations

from .base import Backend, Generation, GenerateOptions

__all__ = ["Backend", "Generation", "GenerateOptions", "load_llama", "load_server"]


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


def load_server(
    base_url: str,
    *,
    model: str | None = None,
    api_key: str | None = None,
    dialect: str = "auto",
    n_ctx: int = 8192,
    timeout: float = 120.0,
    connect_timeout: float = 10.0,
) -> Backend:
    """A model behind an OpenAI-compatible server at ``base_url``. The server is asked
    once who it is (for the dialect, the model name and its context size); when it
    cannot be reached yet, it is asked again at the first request. ``timeout`` is how
    long a reply may keep silent, ``connect_timeout`` how long connecting may take."""
    from .server import ServerBackend

    backend = ServerBackend(
        base_url, model=model, api_key=api_key, dialect=dialect, n_ctx=n_ctx, timeout=timeout,
        connect_timeout=connect_timeout,
    )
    backend.probe()
    return backend
