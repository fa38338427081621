"""The agent a person runs, assembled in one place: the workspace tools in a root, the
approver, the default system prompt. ``run``, ``chat`` and the task-suite runner all build
their agent here, so an evaluation measures exactly what ``localagent run`` does."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from .backends.base import Backend
from .loop import Agent, AgentConfig
from .prompt import load_prompt
from .tools import Tool
from .tools.workspace import Workspace


def default_config(**fields: Any) -> AgentConfig:
    """``AgentConfig`` with the default system prompt, and ``fields`` set on it."""
    return replace(AgentConfig(system_prompt=load_prompt("system").strip()), **fields)


@dataclass
class Setup:
    """The tools and the approver of a workspace: checked before any model loads, so a bad
    tools file or ``allow`` name is said at once."""

    workspace: Workspace  # the one the tools work in, and the agent's
    tools: list[Tool]
    approver: Callable[..., tuple[bool, str]] | None


def workspace_setup(
    root: Path | str,
    *,
    tools: Sequence[Tool] = (),
    tools_file: Path | None = None,
    allow_commands: bool = False,
    yes: bool = False,
    allow: Sequence[str] = (),
) -> Setup:
    """The built-in tools in ``root`` (plus ``tools`` and the tools in ``tools_file``), writes
    and commands approved as ``yes`` / ``allow`` say."""
    from .approval import choose_approver
    from .tools.builtin import workspace_tools
    from .tools import load_tools_file

    ws = Workspace(root)
    every = workspace_tools(ws, allow_commands=allow_commands) + list(tools)
    if tools_file is not None:
        every += load_tools_file(tools_file)
    return Setup(ws, every, choose_approver(every, yes=yes, allow=allow))


def assemble(backend: Backend, setup: Setup, config: AgentConfig | None = None) -> Agent:
    """The agent on ``backend`` in ``setup``'s workspace."""
    return Agent(backend, setup.tools, root=setup.workspace, config=config or default_config(), approver=setup.approver)
