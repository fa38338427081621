"""The two error families.

``LocalAgentError`` and its subclasses are errors of the user or the program
(missing model, bad config): they stop with one clear line and no traceback.

``ToolErrorInfo`` is data, not an exception: an error the *model* caused (bad
arguments, unknown tool, a tool that raised). It goes back to the model as a
tool result and the loop goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class LocalAgentError(Exception):
    """A user or program error: printed as one line, exit code ``exit_code``."""

    exit_code = 2


class ModelNotFound(LocalAgentError):
    """An unknown model id, or a path that does not exist or is not GGUF."""


class ProvisionError(LocalAgentError):
    """A model file could not be had from any source, or failed its checksum."""


class ConfigError(LocalAgentError):
    """Bad settings, flags, or a tools file that cannot be loaded."""


class ConstraintError(LocalAgentError):
    """A constraint (grammar) could not be built or applied: the step fails closed."""


class BackendError(LocalAgentError):
    """The model backend failed (load error, server unreachable after retries)."""


class ErrorKind(StrEnum):
    """What was wrong with a call, as the model reads it (``error (not_found): ...``) and the
    trace records it. Members are strings: ``ErrorKind.NOT_FOUND == "not_found"``."""

    # the call itself
    FORMAT_ERROR = "format_error"  # the reply held a call that could not be parsed
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENT = "invalid_argument"  # wrong type, range, shape or missing argument
    UNKNOWN_VALUE = "unknown_value"  # not one of the values known now (``OneOf``)
    # paths (the sandbox)
    INVALID_PATH = "invalid_path"  # not a usable path at all (NUL, control character, too long, a device)
    OUTSIDE_WORKSPACE = "outside_workspace"
    NOT_FOUND = "not_found"
    NOT_A_FILE = "not_a_file"
    NOT_A_DIR = "not_a_dir"
    NOT_TEXT = "not_text"
    UNREADABLE = "unreadable"
    TOO_LARGE = "too_large"
    # edits
    NOT_UNIQUE = "not_unique"  # edit_file's old text occurs more than once
    NOT_READ = "not_read"  # a write would erase a file that was not read
    NO_CHANGE = "no_change"  # an edit whose old and new are the same text
    # running it
    DENIED = "denied"  # a person (or the lack of one) refused an irreversible call
    TIMEOUT = "timeout"
    TOOL_EXCEPTION = "tool_exception"
    MCP_ERROR = "mcp_error"
    INTERRUPTED = "interrupted"  # the run was stopped before the call finished


@dataclass
class ToolErrorInfo:
    """A structured, model-facing error: what was wrong and what would be right."""

    kind: ErrorKind  # a plain string from a tool of someone else's is read the same
    message: str  # one actionable line, no stack trace
    argument: str | None = None
    alternatives: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    # The call corrected with the closest alternative, {"name": ..., "arguments": ...}: small
    # models copy a call they are shown far more reliably than they apply a suggestion.
    retry: dict[str, Any] | None = None

    def render(self) -> str:
        """The single line the model reads."""
        line = f"error ({self.kind}): {self.message}"
        if self.alternatives and not ("closest:" in self.message or " in it: " in self.message):
            line += "; closest: " + ", ".join(self.alternatives)
        if self.retry is not None:
            line += "; to retry: " + json.dumps(self.retry, ensure_ascii=False)
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "argument": self.argument,
            "alternatives": list(self.alternatives),
            "detail": dict(self.detail),
            "retry": self.retry,
        }
