"""Prompt rendering with the chat template embedded in the GGUF: pure, no model.

We render the template ourselves (jinja2, sandboxed, as transformers and
llama-cpp-python do) rather than through llama-cpp-python's formatter because
the prompt must re-render earlier turns byte for byte (KV-cache reuse) and
``tojson`` must match transformers' (no HTML escaping of ``<``), which Qwen's
template relies on for tool schemas.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .errors import ConfigError


def _raise(message: str) -> None:
    raise ConfigError(f"chat template error: {message}")


def _tojson(value: Any, indent: int | None = None, **_: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


@lru_cache(maxsize=16)
def _compile(template: str) -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    try:
        return env.from_string(template)
    except jinja2.TemplateError as e:
        raise ConfigError(f"chat template does not compile: {e}") from None


def render(
    template: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
) -> str:
    """Render ``messages`` (OpenAI-style dicts) and ``tools`` with ``template``."""
    try:
        return _compile(template).render(
            messages=messages,
            tools=tools or None,
            add_generation_prompt=add_generation_prompt,
            bos_token=bos_token,
            eos_token=eos_token,
        )
    except jinja2.TemplateError as e:
        raise ConfigError(f"chat template failed to render: {e}") from None


def template_supports_tools(template: str) -> bool:
    """Whether the template renders a tool list (it mentions ``tools``)."""
    return "tools" in template


def load_prompt(name: str) -> str:
    """A prompt text kept as a data file under ``localagent/prompts``."""
    return (resources.files("localagent") / "prompts" / f"{name}.txt").read_text(encoding="utf-8")
