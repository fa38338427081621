"""localagent: a dependable tool-using agent loop on a local GGUF model."""

from .loop import Agent, AgentConfig, Events, RunResult, Usage
from .messages import Message, ToolCall, ToolResult
from .stops import Limits, StopReason
from .tools import Tool, ToolSet, tool

__all__ = [
    "Agent",
    "AgentConfig",
    "Events",
    "Limits",
    "Message",
    "RunResult",
    "StopReason",
    "Tool",
    "ToolCall",
    "ToolResult",
    "ToolSet",
    "Usage",
    "tool",
]
__version__ = "0.1.0"
