"""A real MCP server for the tests, written with the SDK's own server API.

``python tests/mcp_server.py`` serves over stdio; ``python tests/mcp_server.py http PORT``
over streamable HTTP on 127.0.0.1. Its tools cover what a server can do to a client: answer,
fail, hang, die. Garbage on the protocol channel cannot come from here (the SDK diverts a
tool's stdout), so tests/test_mcp_tools.py uses a process that is no MCP server for that.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

server = MCPServer("localagent-test")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def write_note(text: str) -> str:
    """Keep a note (changes the server's state)."""
    return f"noted: {text}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def refuse(why: str) -> str:
    """Always fails, saying why."""
    raise ToolError(f"refused: {why}")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def hang(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "awake"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def die() -> str:
    """End the server's process at once."""
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
