"""Built-in workspace tools: read, list and search (read-only); write, edit and run (irreversible).

Their docstrings are the descriptions the model reads, so each says what the tool does, when
not to use it, an example, and what comes back on failure. Every path goes through
``Workspace.resolve``; every read and every output is bounded. The irreversible tools declare
``irreversible=True`` and a ``preview`` (a unified diff, or the exact command), so that a
person approves what will really happen; see ``approval``.
"""

# No `from __future__ import annotations`: the tools below are closures whose annotations
# name `ws`, and they must be evaluated where `ws` is in scope.
import difflib
import itertools
import os
import re
import secrets
import shlex
import signal
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, NoReturn

from pydantic import Field

from .errors import ToolErrorInfo
from .tools import Tool, tool
from .validate import WorkspacePath
from .workspace import Workspace, WorkspaceError, is_text

__all__ = ["MAX_FILE_BYTES", "apply_edit", "unified_diff", "workspace_tools"]

MAX_FILE_BYTES = 20_000_000  # past this even paging through lines is the wrong approach
MAX_SEARCH_FILE_BYTES = 2_000_000  # larger files are skipped by search (and counted)
MAX_LINE_CHARS = 200  # a search hit shows at most this much of its line
MAX_WRITE_CHARS = 200_000  # what one write_file or edit_file may carry
MAX_EDIT_BYTES = 2_000_000
MAX_COMMAND_SECONDS = 120
COMMAND_OUTPUT_BYTES = 8_000  # kept from the head and from the tail of a command's output
PROTECTED_DIRS = frozenset({".git", ".hg", ".svn"})  # writing hooks there would run code later


def workspace_tools(ws: Workspace, *, write: bool = True, allow_commands: bool = False) -> list[Tool]:
    """The tools for working in ``ws``: read_file, list_dir, search, and (unless ``write`` is
    False) write_file and edit_file; with ``allow_commands``, run_command. The last three are
    irreversible: each call needs a person's approval (see ``approval``); with no approver
    the dispatcher denies them."""
    tools = _read_tools(ws)
    if write:
        tools += _write_tools(ws)
    if allow_commands:
        tools.append(_command_tool(ws))
    return tools


def _fail(kind: str, message: str, argument: str | None = None) -> NoReturn:
    raise WorkspaceError(ToolErrorInfo(kind=kind, message=message, argument=argument))


def _shown(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (kept by os as surrogates) become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# ── read-only ────────────────────────────────────────────────────────────────────────────


def _read_tools(ws: Workspace) -> list[Tool]:
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
            _fail(
                "invalid_argument",
                f"offset {offset} is past the end of '{path}' ({total} line{'s' * (total != 1)})",
                "offset",
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
        dirs: list[str] = []
        files: list[str] = []
        with os.scandir(p) as it:
            for e in it:
                try:
                    (dirs if e.is_dir() else files).append(e.name)
                except OSError:
                    files.append(e.name)
        names = [_shown(d) + "/" for d in sorted(dirs)] + [_shown(f) for f in sorted(files)]
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

    @tool(timeout=20.0)
    def search(
        pattern: Annotated[
            str,
            Field(min_length=1, max_length=500, description="The text to find, e.g. 'def main' or 'TODO'."),
        ],
        path: Annotated[
            str,
            WorkspacePath(workspace=ws),
            Field(description="Folder or file to search, relative to the root, e.g. 'src'; '.' is everything."),
        ] = ".",
        regex: Annotated[
            bool, Field(description="Read pattern as a Python regular expression, e.g. 'def \\w+_test'.")
        ] = False,
        max_results: Annotated[int, Field(ge=1, le=500, description="Most matching lines to return.")] = 50,
    ) -> str:
        """Find the lines that contain a text in the workspace's text files, like grep.

        Returns one 'path:line: text' per match; case is ignored unless the pattern has a
        capital letter. Do not use it to read a file whose path you know (use read_file).
        Example: {"pattern": "VERSION", "path": "src"}. With no match it says so.
        On failure (a bad path or regex) it returns an error saying what to change.
        """
        flags = 0 if any(c.isupper() for c in pattern) else re.IGNORECASE
        try:
            rx = re.compile(pattern if regex else re.escape(pattern), flags)
        except re.error as e:
            _fail("invalid_argument", f"pattern is not a valid regular expression: {e}; or set regex=false", "pattern")
        start = ws.resolve(path)
        hits: list[str] = []
        searched = skipped = 0
        full = False
        for f in _text_files(ws, start):
            if f.stat().st_size > MAX_SEARCH_FILE_BYTES:
                skipped += 1
                continue
            searched += 1
            with open(f, encoding="utf-8", errors="replace", newline="") as fh:
                for n, line in enumerate(fh, 1):
                    if rx.search(line):
                        if len(hits) == max_results:
                            full = True
                            break
                        text = line.rstrip("\r\n")
                        if len(text) > MAX_LINE_CHARS:
                            text = text[: MAX_LINE_CHARS - 1] + "…"
                        hits.append(f"{_shown(ws.relative(f))}:{n}: {text}")
            if full:
                break
        where = ws.relative(start)
        notes = []
        if skipped:
            notes.append(f"[{skipped} file(s) over {MAX_SEARCH_FILE_BYTES} bytes not searched]")
        if full:
            notes.append("[... more matches not shown; narrow the pattern or path, or raise max_results]")
        if not hits:
            return "\n".join([f"no matches for {pattern!r} in '{where}' ({searched} text files searched)", *notes])
        return "\n".join(hits + notes)

    return [read_file, list_dir, search]


def _text_files(ws: Workspace, start: Path) -> Iterator[Path]:
    """Text files at or under ``start``, sorted, bounded; never through a link that leaves the root."""
    if start.is_file():
        if is_text(start):
            yield start
        return
    for rel, is_dir in ws.walk(start=start):
        if is_dir:
            continue
        path = ws.root / rel
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            continue
        if real.is_relative_to(ws.root) and is_text(real):  # is_text refuses fifos and devices
            yield path


# ── irreversible: writes ─────────────────────────────────────────────────────────────────


def apply_edit(text: str, old: str, new: str) -> tuple[str, int]:
    """``text`` with the one occurrence of ``old`` replaced by ``new``, and its line number;
    a ``WorkspaceError`` that says how to fix the call when ``old`` is absent or not unique."""
    if old == new:
        _fail("invalid_argument", "old and new are the same text; nothing would change", "new")
    if old not in text and "\r\n" in text and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")  # CRLF file, LF call
    count = text.count(old)
    if count == 1:
        at = text.index(old)
        return text[:at] + new + text[at + len(old) :], text.count("\n", 0, at) + 1
    if count > 1:
        lines, at = [], -1
        for _ in range(min(count, 5)):
            at = text.index(old, at + 1)
            lines.append(str(text.count("\n", 0, at) + 1))
        more = ", ..." if count > 5 else ""
        _fail(
            "not_unique",
            f"old text occurs {count} times (lines {', '.join(lines)}{more}); include neighbouring lines to make it unique",
            "old",
        )
    _fail("not_found", _not_found_hint(text, old), "old")


def _not_found_hint(text: str, old: str) -> str:
    squash = lambda s: " ".join(s.split())  # noqa: E731
    if squash(old) and squash(old) in squash(text):
        return "old text not found exactly, but it does with different spaces or line breaks; copy it exactly from read_file"
    first = next((ln.strip() for ln in old.splitlines() if ln.strip()), "")
    lines = text.splitlines()
    best = difflib.get_close_matches(first, [ln.strip() for ln in lines], n=1, cutoff=0.6) if first else []
    if best:
        n = next(i for i, ln in enumerate(lines, 1) if ln.strip() == best[0])
        shown = best[0] if len(best[0]) <= 80 else best[0][:79] + "…"
        return f"old text not found; closest line {n}: {shown!r}; read the file and copy the text exactly"
    return "old text not found in the file; read the file and copy the text to replace exactly"


def unified_diff(rel: str, before: str | None, after: str) -> str:
    """A unified diff of one file; ``before`` None means the file is new."""
    a, b = _lines(before or ""), _lines(after)
    old_name = f"a/{rel}" if before is not None else "/dev/null"
    lines = []
    for line in difflib.unified_diff(a, b, old_name, f"b/{rel}"):
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines) if lines else "(no change: the file already holds exactly this)\n"


def _lines(text: str) -> list[str]:
    """Lines split at '\n' only, ends kept: a stray '\r' stays visible inside its line."""
    parts = [line + "\n" for line in text.split("\n")]
    parts[-1] = parts[-1][:-1]
    return parts if parts[-1] else parts[:-1]


def _check_writable(ws: Workspace, path: str) -> Path:
    """The resolved target of a write: inside the root, not a folder, not binary, not in .git."""
    p = ws.resolve(path, must_exist=False, kind="file")
    rel = p.relative_to(ws.root)
    if PROTECTED_DIRS & {part.lower() for part in rel.parts}:
        _fail("invalid_path", f"'{path}' is inside a version-control folder; writes there are refused", "path")
    for parent in reversed(rel.parents[:-1]):  # every folder between the root and the file
        q = ws.root / parent
        if q.exists() and not q.is_dir():
            _fail("not_a_dir", f"'{parent.as_posix()}' is a file, so '{path}' cannot be created in it", "path")
    if p.exists() and not is_text(p):
        _fail("not_text", f"'{path}' is a binary file; only text files can be written", "path")
    return p


def _read_text(p: Path) -> str | None:
    """The file's text, exactly (line ends kept), or None if it does not exist."""
    try:
        with open(p, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _write_atomic(p: Path, text: str) -> None:
    """Write ``text`` to ``p`` through a new file renamed over it: a reader never sees half a
    file, and a hard link to a file outside the root is replaced, not written through."""
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{secrets.token_hex(4)}.tmp")
    try:
        mode = stat.S_IMODE(p.stat().st_mode)
    except FileNotFoundError:
        mode = None
    # O_EXCL | O_NOFOLLOW: never through a link planted at the temporary name.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_tools(ws: Workspace) -> list[Tool]:
    def planned_write(path: str, content: str) -> tuple[Path, str | None, str]:
        p = _check_writable(ws, path)
        return p, _read_text(p), content

    def planned_edit(path: str, old: str, new: str) -> tuple[Path, str | None, str]:
        p = _check_writable(ws, path)
        before = _read_text(p)
        if before is None:
            _fail("not_found", f"path '{path}' not found; use write_file to create a file", "path")
        return p, before, apply_edit(before, old, new)[0]

    @tool(irreversible=True, timeout=10.0)
    def write_file(
        path: Annotated[
            str,
            WorkspacePath(kind="file", must_exist=False, workspace=ws),
            Field(description="File to create or replace, relative to the root, e.g. 'todo.md'."),
        ],
        content: Annotated[
            str,
            Field(max_length=MAX_WRITE_CHARS, description="The whole new text of the file, e.g. '# Todo\\n- tests\\n'."),
        ],
    ) -> str:
        """Create a text file, or replace everything in an existing one, with content.

        Missing folders are created. A person must approve each call; if they refuse, the
        result says so: do not retry, answer instead. Do not use it to change part of a
        file (use edit_file) or when the task does not ask for a change.
        Example: {"path": "todo.md", "content": "- write tests\\n"}.
        On failure (a folder, a binary file, outside the workspace) it returns an error.
        """
        p, before, after = planned_write(path, content)
        _write_atomic(p, after)
        what = "created" if before is None else "replaced"
        return f"{what} '{ws.relative(p)}' ({len(after.encode('utf-8'))} bytes)"

    @tool(irreversible=True, timeout=10.0)
    def edit_file(
        path: Annotated[
            str,
            WorkspacePath(kind="file", text=True, max_bytes=MAX_EDIT_BYTES, workspace=ws),
            Field(description="Existing text file to change, relative to the root, e.g. 'src/main.py'."),
        ],
        old: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_WRITE_CHARS,
                description="The exact text to replace, copied from the file, e.g. \"VERSION = '1.0'\"; it must occur once.",
            ),
        ],
        new: Annotated[
            str,
            Field(max_length=MAX_WRITE_CHARS, description="The text to put in its place, e.g. \"VERSION = '1.1'\"; '' deletes it."),
        ],
    ) -> str:
        """Replace one exact, unique piece of text in a file, leaving the rest as it is.

        old must appear exactly once: if it appears more often, add neighbouring lines to
        it. A person must approve each call; if they refuse, do not retry, answer instead.
        Do not use it to create a file or rewrite all of one (use write_file).
        Example: {"path": "src/main.py", "old": "VERSION = '1.0'", "new": "VERSION = '1.1'"}.
        On failure (old text missing or not unique) the error says how to fix the call.
        """
        p, before, after = planned_edit(path, old, new)
        assert before is not None
        line = apply_edit(before, old, new)[1]
        _write_atomic(p, after)
        return f"edited '{ws.relative(p)}' at line {line}"

    write_file.preview = lambda a: _diff_preview(ws, *planned_write(a["path"], a["content"]))
    edit_file.preview = lambda a: _diff_preview(ws, *planned_edit(a["path"], a["old"], a["new"]))
    return [write_file, edit_file]


def _diff_preview(ws: Workspace, p: Path, before: str | None, after: str) -> str:
    return unified_diff(ws.relative(p), before, after)


# ── irreversible: commands ───────────────────────────────────────────────────────────────


def _argv(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as e:
        _fail("invalid_argument", f"command cannot be split into words: {e}", "command")
    if not argv:
        _fail("invalid_argument", "command is empty; give a program and its arguments", "command")
    return argv


def _command_tool(ws: Workspace) -> Tool:
    @tool(irreversible=True, timeout=MAX_COMMAND_SECONDS + 10)
    def run_command(
        command: Annotated[
            str,
            Field(
                min_length=1,
                max_length=2000,
                description="A program and its arguments, e.g. 'python -m pytest -q tests'. Not a shell.",
            ),
        ],
        timeout: Annotated[
            int, Field(ge=1, le=MAX_COMMAND_SECONDS, description="Seconds before it is killed, e.g. 30.")
        ] = 30,
    ) -> str:
        """Run a program in the workspace folder and return its exit code and output.

        There is no shell: pipes, redirects, '&&', '*' and '$VAR' are passed as plain words.
        A person must approve each call; if they refuse, do not retry, answer instead.
        Do not use it to read, list or search files (use read_file, list_dir, search).
        Example: {"command": "python -m pytest -q tests/test_main.py", "timeout": 60}.
        Returns 'exit code N' and the output (long output keeps its head and tail).
        On failure (program not found, timeout) it returns an error.
        """
        return _run(ws, _argv(command), timeout)

    run_command.preview = lambda a: f"in {ws.root}: {shlex.join(_argv(a['command']))}  (timeout {a.get('timeout', 30)} s)\n"
    return run_command


def _run(ws: Workspace, argv: list[str], timeout: int) -> str:
    """Run ``argv`` in the root; output is kept bounded however much the program prints."""
    try:
        proc = subprocess.Popen(
            argv,
            cwd=ws.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, to kill it all; no controlling tty
        )
    except FileNotFoundError:
        _fail("not_found", f"program '{argv[0]}' not found; give a program on PATH or a path to one", "command")
    except PermissionError:
        _fail("invalid_argument", f"'{argv[0]}' is not executable", "command")
    head, tail, total = bytearray(), bytearray(), 0

    def drain() -> None:  # read everything, keep the head and a rolling tail
        nonlocal total
        assert proc.stdout is not None
        while chunk := proc.stdout.read1(65536):  # type: ignore[attr-defined]  # a BufferedReader
            total += len(chunk)
            room = COMMAND_OUTPUT_BYTES - len(head)
            head.extend(chunk[:room])
            tail.extend(chunk[room:] if room > 0 else chunk)
            del tail[: max(0, len(tail) - COMMAND_OUTPUT_BYTES)]

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    def kill_group() -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    # Tools run in a worker thread: an interrupt of the agent never lands here, and the
    # command still ends by its own timeout.
    try:
        code: int | None = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        code = None
        kill_group()  # before reaping it: its pid still names the group
        proc.wait()
    reader.join(2)
    if reader.is_alive():  # something it started in the background still holds the output
        kill_group()
        reader.join(2)
    if code is None:
        _fail(
            "timeout",
            f"command did not finish within {timeout} s and was killed; "
            f"raise timeout (at most {MAX_COMMAND_SECONDS}) or run something shorter",
        )
    kept_head, kept_tail = bytes(head), bytes(tail)
    out = kept_head.decode("utf-8", "replace")
    if kept_tail:
        cut = total - len(kept_head) - len(kept_tail)
        if cut > 0:
            out += f"\n[... {cut} bytes of output not shown ...]\n"
        out += kept_tail.decode("utf-8", "replace")
    return f"exit code {code}\n{out}" if out else f"exit code {code} (no output)"
