"""Calling the workspace tools the way the loop does, through the dispatcher, every
irreversible call approved: only the sandbox stands in the way."""

from __future__ import annotations

from localagent.tools.builtin import workspace_tools
from localagent.dispatch import Dispatcher
from localagent.messages import ToolCall, ToolResult
from localagent.tools import ToolContext, ToolSet
from localagent.tools.workspace import Workspace


def dispatcher(ws: Workspace, *, commands: bool = True) -> Dispatcher:
    """A dispatcher over every built-in tool of ``ws``, approving everything."""
    tools = ToolSet(workspace_tools(ws, write=True, allow_commands=commands))
    return Dispatcher(tools, ToolContext(ws), max_result_tokens=100_000, approver=lambda t, c: (True, ""))


def call(ws: Workspace, name: str, **arguments: object) -> ToolResult:
    """One call to the tool ``name`` with ``arguments``, approved."""
    return dispatcher(ws).run([ToolCall("c", name, dict(arguments))])[0]
