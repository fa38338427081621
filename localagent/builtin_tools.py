"""Built-in workspace tools: read a text file, list a folder. Both are bounded.

Their docstrings are the descriptions the model reads, so they say what the tool does, when
not to use it, an example, and what comes back on failure.
"""

# No `from __future__ import annotations`: the tools below are closures whose annotations
# name `ws`, and they must be evaluated where `ws` is in scope.
import itertools
import os
from typing import Annotated

from pydantic import Field

from .errors import ToolErrorInfo
from .tools import Tool, tool
from .validate import WorkspacePath
from .workspace import Workspace, WorkspaceError

__all__ = ["MAX_FILE_BYTES", "workspace_tools"]

MAX_FILE_BYTES = 20_000_000  # past this even paging through lines is the wrong approach


def workspace_tools(ws: Workspace) -> list[Tool]:
    """``read_file`` and ``list_dir`` working inside ``ws``."""

    @tool(timeout=10.0)
    def read_file(
        path: Annotated[
            str,
            WorkspacePath(kind="file", text=True, max_bytes=MAX_FILE_BYTES, workspace=ws),
            Field(description="File path relative to the workspace root, e.g. 'src/main.py'."),
        ],
        offset: Annotated[int, Field(ge=0, description="Lines to skip first; 0 starts at line 1.")] = 0,
        length: Annotated[int, Field(ge=1, le=2000, description="Most lines to return.")] = 200,
    ) -> str:
        """Read lines of a text file in the workspace, as plain text (no line numbers).

        offset and length count lines: offset=0, length=200 returns lines 1-200; to read on,
        call again with the offset the end marker gives. Do not use it on folders (use
        list_dir) or binary files. Example: {"path": "src/main.py", "offset": 0}.
        On failure it returns an error naming the closest existing paths.
        """
        p = ws.resolve(path, kind="file")
        with open(p, encoding="utf-8", errors="replace", newline="") as f:
            lines = list(itertools.islice(f, offset, offset + length + 1))  # +1: is there more?
        if not lines and offset > 0:
            with open(p, "rb") as fb:
                total = sum(1 for _ in fb)
            raise WorkspaceError(
                ToolErrorInfo(
                    kind="invalid_argument",
                    argument="offset",
                    message=f"offset {offset} is past the end of '{path}' ({total} line{'s' * (total != 1)})",
                )
            )
        more = len(lines) > length
        text = "".join(lines[:length])
        if more:
            nxt = offset + length
            text += ("" if text.endswith("\n") else "\n") + (
                f"[... more lines follow; call read_file with offset={nxt} to read more]"
            )
        return text

    @tool(timeout=10.0)
    def list_dir(
        path: Annotated[
            str,
            WorkspacePath(kind="dir", workspace=ws),
            Field(description="Folder relative to the workspace root; '.' is the root."),
        ] = ".",
        max_entries: Annotated[int, Field(ge=1, le=1000, description="Most entries to return.")] = 200,
    ) -> str:
        """List a folder of the workspace: one name per line, folders first, ending in '/'.

        Only the folder itself, not its subfolders: call again on a subfolder to go deeper.
        Do not use it to read a file (use read_file). Example: {"path": "src"}.
        On failure it returns an error naming the closest existing folders.
        """
        p = ws.resolve(path, kind="dir")
        dirs, files = [], []
        with os.scandir(p) as it:
            for e in it:
                try:
                    (dirs if e.is_dir() else files).append(e.name)
                except OSError:
                    files.append(e.name)
        names = [d + "/" for d in sorted(dirs)] + sorted(files)
        if not names:
            return "(empty folder)"
        shown = names[:max_entries]
        text = "\n".join(shown)
        if len(names) > len(shown):
            text += (
                f"\n[... {len(names) - len(shown)} more entries not shown; "
                f"call list_dir with a larger max_entries or on a subfolder]"
            )
        return text

    return [read_file, list_dir]
