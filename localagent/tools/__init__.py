"""Tools: the tool model (``base``: ``@tool``, ``Tool``, ``ToolSet``, loading tools
files), tools from JSON schemas (``schema``) and MCP servers (``mcp``), the built-in tools
(``builtin``) and what they stand on: the sandbox (``workspace``), how an approved command
runs (``commands``) and search's patterns (``matching``)."""

from .base import Tool, ToolContext, ToolSet, clean_schema, load_tools_file, make_tool, split_docstring, tool

__all__ = ["Tool", "ToolContext", "ToolSet", "clean_schema", "load_tools_file", "make_tool", "split_docstring", "tool"]
