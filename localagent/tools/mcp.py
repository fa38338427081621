"""MCP tools: the tools of a Model Context Protocol server, as localagent tools.

A server is named by a URL (streamable HTTP) or by a command line (stdio, the server started
as a child process). Its tools are listed once; each JSON schema becomes a schema tool, so the
grammar and the validator apply as to any tool, and each call is forwarded to the server.

The connection lives in an event loop of its own, in a daemon thread, so tools are called from
the dispatcher's worker threads like any other. A server is contained like any tool: every
call has a timeout, a server that died or answers garbage gives a one-line error result, and
a server that cannot be reached at the start is one ``ConfigError``. Tools whose annotations
do not say ``readOnlyHint`` are irreversible: a person approves each call.

Needs the optional ``mcp`` package: ``pip install "localagent[mcp]"``.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import copy
import json
import logging
import re
import shlex
import tempfile
import threading
from collections.abc import Iterable
from typing import Any

from ..errors import ConfigError, ErrorKind, ToolErrorInfo
from .schema import tool_from_schema
from .base import Tool, clean_schema
from .workspace import WorkspaceError

__all__ = ["McpServer", "connect_all"]


class McpServer:
    """One MCP server, connected: ``tools()`` are its tools; ``close()`` ends the connection
    (and a stdio server's process). Use as a context manager, or let the process exit."""

    def __init__(self, spec: str, *, timeout: float = 30.0, connect_timeout: float = 30.0, prefix: str = "") -> None:
        try:
            import mcp  # noqa: F401
        except ImportError:
            raise ConfigError('MCP needs the mcp package: pip install "localagent[mcp]"') from None
        if not spec.strip():
            raise ConfigError(f"MCP server {spec!r} is empty: give a URL or a command line")
        if not logging.getLogger("mcp").handlers:
            # The SDK logs a server's garbage with a traceback; the error result says enough.
            logging.getLogger("mcp").addHandler(logging.NullHandler())
        self.spec, self.timeout, self.prefix = spec, timeout, prefix
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # a stdio server's stderr
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{spec[:30]}", daemon=True)
        self._thread.start()
        self._client: Any = None
        self._closing: asyncio.Event | None = None
        self._stopped: str | None = None  # why the connection ended, once it has
        self._ended = threading.Event()  # the connection is closed (a stdio server's process ended)
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self._owner = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
        try:
            self._listed = ready.result(connect_timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise ConfigError(f"MCP server {spec!r} did not answer within {connect_timeout:g} s") from None
        except Exception as e:
            self.close()
            raise ConfigError(f"MCP server {spec!r} cannot be used: {self._reason(e)}") from None
        atexit.register(self.close)

    def _transport(self) -> Any:
        if re.match(r"https?://", self.spec):
            return self.spec  # the SDK's streamable HTTP client
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        try:
            argv = shlex.split(self.spec)
        except ValueError as e:
            raise ConfigError(f"MCP server {self.spec!r}: {e}") from None
        return stdio_client(StdioServerParameters(command=argv[0], args=argv[1:]), errlog=self._errlog)

    async def _hold(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        """Open the connection, list the tools, and keep it open until ``close()``: the SDK's
        task groups must be entered and left by this one task."""
        from mcp import Client

        self._closing = asyncio.Event()
        try:
            async with Client(self._transport()) as client:  # each wait is timed here instead
                listed = await asyncio.wait_for(client.list_tools(), self.timeout)
                self._client = client
                ready.set_result(list(listed.tools))
                await self._closing.wait()
        except BaseException as e:  # the server died, or the connection broke
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else RuntimeError(type(e).__name__))
            self._stopped = self._reason(e)
        finally:
            self._stopped = self._stopped or "the connection was closed"
            self._ended.set()

    def _reason(self, e: BaseException, stderr: bool = True) -> str:
        """The innermost reason of ``e`` (the SDK wraps errors in exception groups), with the
        last line the server wrote on stderr."""
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        text = " ".join(str(e).split()) or type(e).__name__
        last = self._stderr_tail() if stderr else ""
        return f"{text} (its stderr: {last})" if last else text

    def _stderr_tail(self) -> str:
        try:
            self._errlog.seek(0)
            lines = [ln.strip() for ln in self._errlog.read()[-4000:].splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return lines[-1][:200] if lines else ""

    def tools(self) -> list[Tool]:
        """The server's tools as localagent tools (names made valid, prefixed by ``prefix``)."""
        return [self._tool(t) for t in self._listed]

    def _tool(self, t: Any) -> Tool:
        name = (self.prefix + re.sub(r"[^A-Za-z0-9_\-]", "_", t.name))[:64]
        read_only = bool(getattr(t.annotations, "read_only_hint", None))
        definition = {
            "name": name,
            "description": t.description or t.title or "",
            "parameters": clean_schema(copy.deepcopy(dict(t.input_schema or {"type": "object"}))),
        }

        def forward(**arguments: Any) -> str:
            return self.call(t.name, arguments)

        try:
            # Our own wait ends first, so the dispatcher's timeout is only the last resort.
            return tool_from_schema(definition, forward, irreversible=not read_only, timeout=self.timeout + 5)
        except ConfigError as e:
            raise ConfigError(f"MCP server {self.spec!r}: {e}") from None

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Call the server's tool ``name``; its text, or a ``WorkspaceError`` (which the
        dispatcher shows as it is) for a failure of the tool or the server."""
        from mcp_types import CONNECTION_CLOSED

        if self._stopped or self._client is None:
            raise _error(f"the MCP server has stopped ({self._stopped}); its tools cannot be used now")
        future = asyncio.run_coroutine_threadsafe(self._client.call_tool(name, arguments), self._loop)
        try:
            result = future.result(self.timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise _error(f"the MCP server did not answer '{name}' within {self.timeout:g} s") from None
        except Exception as e:
            if getattr(e, "code", None) == CONNECTION_CLOSED:
                self._stopped = self._reason(e)
                raise _error(f"the MCP server has stopped ({self._stopped}); its tools cannot be used now") from None
            raise _error(f"the MCP server failed on '{name}': {self._reason(e, stderr=False)}") from None
        text = result_text(result)
        if getattr(result, "is_error", False):
            raise _error(f"'{name}' failed on the MCP server: {text or 'no reason given'}")
        return text

    def close(self) -> None:
        """End the connection (a stdio server is stopped) and the loop's thread."""
        if self._loop.is_closed():
            return
        if self._client is not None and self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)  # a clean goodbye
        else:
            self._owner.cancel()  # still connecting: give up on it
        if not self._ended.wait(5):
            self._owner.cancel()
            self._ended.wait(2)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()
        self._errlog.close()

    def __enter__(self) -> McpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _error(message: str) -> WorkspaceError:
    return WorkspaceError(ToolErrorInfo(kind=ErrorKind.MCP_ERROR, message=message))


def result_text(result: Any) -> str:
    """A ``CallToolResult`` as text: its text parts, other parts named, or its structured content."""
    parts = []
    for c in getattr(result, "content", None) or []:
        kind = getattr(c, "type", "")
        if kind == "text":
            parts.append(str(c.text))
        elif kind == "resource" and hasattr(c.resource, "text"):
            parts.append(str(c.resource.text))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {getattr(c, 'mime_type', '?')}]")
        else:
            parts.append(f"[{kind or type(c).__name__}: {getattr(c, 'uri', '') or ''}]".replace(": ]", "]"))
    if not parts and getattr(result, "structured_content", None) is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def connect_all(specs: Iterable[str], *, timeout: float = 30.0) -> tuple[list[McpServer], list[Tool]]:
    """Connect to every server in ``specs``: the servers (to close) and all their tools; a
    server that cannot be used closes the ones already open and raises ``ConfigError``."""
    servers: list[McpServer] = []
    try:
        for spec in specs:
            servers.append(McpServer(spec, timeout=timeout, connect_timeout=timeout))
    except BaseException:
        for s in servers:
            s.close()
        raise
    return servers, [t for s in servers for t in s.tools()]
