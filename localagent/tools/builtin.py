"""Built-in workspace tools: read, list and search (read-only); write, edit and run (irreversible).

Each tool is a plain function whose first parameter is the ``ToolContext`` it works in
(the workspace, and the files read so far); ``workspace_tools`` binds them to one of their own. Their
docstrings are the descriptions the model reads, so each says what the tool does and when not
to use it. Every path goes through ``Workspace.resolve`` and is then opened from the root by
handle (``Workspace.open``, ``Workspace.open_dir``), never again by name; every read and every
output is bounded. The irreversible tools are declared ``irreversible=True`` with a
``preview`` (a unified diff, or the exact command), so that a person approves what will really
happen; see ``approval``.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import inspect
import io
import itertools
import os
import posixpath
import re
import secrets
import shlex
import stat
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn, get_args, get_origin, get_type_hints

from pydantic import Field
from rapidfuzz.distance import Levenshtein

from ..errors import ErrorKind, ToolErrorInfo
from ..validate import WorkspacePath
from . import commands
from .calculate import calculate_tool
from .base import Tool, ToolContext, make_tool
from .commands import MAX_COMMAND_SECONDS
from .matching import PatternError, compile_search
from .workspace import TEXT_PROBE_BYTES, Workspace, WorkspaceError, fold_name, is_text, looks_text, unreadable

__all__ = ["MAX_FILE_BYTES", "apply_edit", "unified_diff", "workspace_tools"]

MAX_FILE_BYTES = 20_000_000  # past this even paging through lines is the wrong approach
MAX_SEARCH_FILE_BYTES = 2_000_000  # larger files are skipped by search (and counted)
MAX_LINE_CHARS = 200  # a search hit shows at most this much of its line
MAX_FOUND = 200  # paths find_files lists
MAX_WRITE_CHARS = 200_000  # what one write_file or edit_file may carry
MAX_EDIT_BYTES = 2_000_000  # also the most an approval preview reads of an existing file
MAX_DIFF_LINES = 20_000  # lines before and after, beyond which a preview gives counts, not a diff
PROTECTED_DIRS = frozenset({".git", ".hg", ".svn"})  # writing hooks there would run code later


def workspace_tools(ws: Workspace, *, write: bool = True, allow_commands: bool = False) -> list[Tool]:
    """The tools for working in ``ws``: read_file, list_dir, search, find_files, calculate, and (unless ``write`` is
    False) write_file and edit_file; with ``allow_commands``, run_command. The last three are
    irreversible: each call needs a person's approval (see ``approval``); with no approver
    the dispatcher denies them."""
    cx = ToolContext(ws)  # what the tools of this call share: the workspace, the files read
    tools = [
        _bind(read_file, cx, timeout=10.0),
        _bind(list_dir, cx, timeout=10.0),
        _bind(search, cx, timeout=20.0),
        _bind(find_files, cx, timeout=20.0),
        calculate_tool(),
    ]
    if write:
        tools.append(_bind(write_file, cx, _write_preview, irreversible=True, timeout=10.0))
        tools.append(_bind(edit_file, cx, _edit_preview, irreversible=True, timeout=10.0))
    if allow_commands:
        tools.append(_bind(run_command, cx, _command_preview, irreversible=True, timeout=MAX_COMMAND_SECONDS + 10))
    return tools


def _bind(
    fn: Callable[..., str],
    cx: ToolContext,
    preview: Callable[[ToolContext, dict[str, Any]], str] | None = None,
    **options: Any,
) -> Tool:
    """``fn`` as a tool working in ``cx``: its first parameter bound to ``cx``, the others the
    model's arguments (their schema read from the signature, as ``@tool`` reads it), each
    ``WorkspacePath`` checked in ``cx.ws`` whatever workspace the dispatcher's context holds."""
    hints = get_type_hints(fn, include_extras=True)
    params = list(inspect.signature(fn).parameters.values())[1:]
    annotations = {p.name: _in_workspace(hints[p.name], cx.ws) for p in params}

    @functools.wraps(fn)  # the name and the docstring: the tool's name and description
    def bound(*args: Any, **kwargs: Any) -> str:
        return fn(cx, *args, **kwargs)

    bound.__annotations__ = {**annotations, "return": str}
    setattr(bound, "__signature__", inspect.Signature([p.replace(annotation=annotations[p.name]) for p in params]))
    t = make_tool(bound, **options)
    if preview is not None:
        t.preview = functools.partial(preview, cx)
    return t


def _in_workspace(annotation: Any, ws: Workspace) -> Any:
    """``annotation`` with its ``WorkspacePath`` marker, if it has one, bound to ``ws``."""
    if get_origin(annotation) is not Annotated:
        return annotation
    base, *extras = get_args(annotation)
    extras = [replace(m, workspace=ws) if isinstance(m, WorkspacePath) else m for m in extras]
    return Annotated.__class_getitem__((base, *extras))  # type: ignore[attr-defined]


def _fail(kind: ErrorKind, message: str, argument: str | None = None) -> NoReturn:
    raise WorkspaceError(ToolErrorInfo(kind=kind, message=message, argument=argument))


def _shown(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (kept by os as surrogates) become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# ── read-only ────────────────────────────────────────────────────────────────────────────


def read_file(
    cx: ToolContext,
    path: Annotated[
        str,
        WorkspacePath(kind="file", text=True, max_bytes=MAX_FILE_BYTES),
        Field(description="Path from the root, e.g. 'src/main.py'."),
    ],
    offset: Annotated[int, Field(ge=0, description="Lines to skip.")] = 0,
    length: Annotated[int, Field(ge=1, description="Most lines.")] = 200,
) -> str:
    """Read a text file; ends with its line count."""
    length = min(length, 2000)  # a bound, not an error: the 0.5B model asked for 200000 and sent it again
    p = cx.ws.resolve(path, kind="file")
    with open(cx.ws.open(p), "rb") as raw:  # by handle from the root: a folder swapped for a link is refused
        text_file = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
        lines = list(itertools.islice(text_file, offset, offset + length + 1))  # +1: is there more?
        if not lines and offset > 0:
            raw.seek(0)
            total = sum(1 for _ in raw)
            _fail(
                ErrorKind.INVALID_ARGUMENT,
                f"offset {offset} is past the end of '{path}' ({total} line{'s' * (total != 1)})",
                "offset",
            )
    more = len(lines) > length
    text = "".join(lines[:length])
    end = "" if text.endswith("\n") or not text else "\n"
    if more:
        return text + end + f"[... more lines follow; call read_file with offset={offset + length} to read more]"
    if offset == 0:
        cx.seen.add(p)
    n = offset + len(lines)
    rel = cx.ws.relative(p)
    return text + end + f"[end of {rel}: {n} line{'s' * (n != 1)}{_outline(rel, text) if offset == 0 else ''}]"


# Top-level definitions in source files: (suffixes, pattern whose group 1 or 2 is a name).
_DEFINES = (
    ((".py", ".pyi"), re.compile(r"^(?:async\s+)?def\s+(\w+)|^class\s+(\w+)", re.MULTILINE)),
    ((".js", ".mjs", ".ts", ".tsx", ".jsx"), re.compile(r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(\w+)|^(?:export\s+)?class\s+(\w+)", re.MULTILINE)),
    ((".go",), re.compile(r"^func\s+(?:\([^)]*\)\s*)?(\w+)|^type\s+(\w+)\s+struct", re.MULTILINE)),
    ((".rs",), re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)|^(?:pub\s+)?struct\s+(\w+)", re.MULTILINE)),
)


def _outline(rel: str, text: str) -> str:
    """'; defines 3 functions: a, b, c' for a source file read whole: the 0.5B model, asked
    which functions a file defines, named one of three it had just read."""
    for suffixes, pattern in _DEFINES:
        if rel.endswith(suffixes):
            funcs: list[str] = []
            classes: list[str] = []
            for m in pattern.finditer(text):
                (funcs if m.group(1) else classes).append(m.group(1) or m.group(2))
            kinds = (("function", "functions", funcs), ("class", "classes", classes))
            parts = [f"{_count(len(names), one, many)}: {', '.join(names[:30])}" for one, many, names in kinds if names]
            return "; defines " + "; ".join(parts) if parts else ""
    return ""


def list_dir(
    cx: ToolContext,
    path: Annotated[
        str,
        WorkspacePath(kind="dir"),
        Field(description="Folder; '.' is the root."),
    ] = ".",
    max_entries: Annotated[int, Field(ge=1, description="Most entries.")] = 200,
) -> str:
    """List a folder's entries (folders end in '/'), not its subfolders' contents."""
    max_entries = min(max_entries, 1000)
    dirs, files = _entries(cx.ws, cx.ws.resolve(path, kind="dir"))
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
    return text + f"\n[{_count(len(dirs), 'folder')}, {_count(len(files), 'file')}]"


def _entries(ws: Workspace, folder: Path) -> tuple[list[str], list[str]]:
    """The names of the folders and of the other entries in ``folder``, listed through a
    handle opened from the root (``ws.open_dir``), not by name again after the check."""
    dirs: list[str] = []
    files: list[str] = []
    fd = ws.open_dir(folder)
    try:
        with os.scandir(fd) as it:
            for e in it:
                try:
                    (dirs if e.is_dir() else files).append(e.name)
                except OSError:
                    files.append(e.name)
    finally:
        os.close(fd)
    return dirs, files


def search(
    cx: ToolContext,
    pattern: Annotated[
        str,
        Field(min_length=1, max_length=500, description="Text to find."),
    ],
    path: Annotated[
        str,
        WorkspacePath(),
        Field(description="Folder or file; '.' is everything."),
    ] = ".",
    regex: Annotated[
        bool, Field(description="pattern is a regular expression.")
    ] = False,
    max_results: Annotated[int, Field(ge=1, description="Most lines.")] = 50,
) -> str:
    """Find the lines holding a text in files, like grep: 'path:line: text' each."""
    max_results = min(max_results, 500)
    try:
        matches = compile_search(pattern, regex=regex)
    except PatternError as e:
        _fail(ErrorKind.INVALID_ARGUMENT, str(e), "pattern")
    start = cx.ws.resolve(path)
    hits: list[str] = []
    searched, skipped = 0, Counter[str]()
    full = False
    for rel, real in _text_files(cx.ws, start):
        lines = _search_lines(cx.ws, real)
        if isinstance(lines, str):  # why it was not searched
            skipped[lines] += 1
            continue
        searched += 1
        for n, line in enumerate(lines, 1):
            text = line.rstrip("\r\n")  # so that '$' means the end of the line
            if matches(text):
                if len(hits) == max_results:
                    full = True
                    break
                if len(text) > MAX_LINE_CHARS:
                    text = text[: MAX_LINE_CHARS - 1] + "…"
                hits.append(f"{_shown(rel)}:{n}: {text}")
        if full:
            break
    notes = _search_notes(skipped, full)
    if not hits:
        where = cx.ws.relative(start)
        return "\n".join([f"no matches for {pattern!r} in '{where}' ({searched} text files searched)", *notes])
    if not full:
        notes.append(f"[{_count(len(hits), 'match', 'matches')} in {_count(len({h.split(':', 1)[0] for h in hits}), 'file')}]")
    return "\n".join(hits + notes)


def _search_notes(skipped: Counter[str], full: bool) -> list[str]:
    """What a search's result says it left out: files not searched, matches not shown."""
    notes = []
    if skipped["too large"]:
        notes.append(f"[{skipped['too large']} file(s) over {MAX_SEARCH_FILE_BYTES} bytes not searched]")
    if skipped["unreadable"]:
        notes.append(f"[{skipped['unreadable']} file(s) could not be read (permission?) and were not searched]")
    if full:
        notes.append("[... more matches not shown; narrow the pattern or path, or raise max_results]")
    return notes


def find_files(
    cx: ToolContext,
    pattern: Annotated[str, Field(min_length=1, max_length=200, description="File name pattern, e.g. '*.txt'.")],
    path: Annotated[str, WorkspacePath(kind="dir"), Field(description="Folder; '.' is everything.")] = ".",
) -> str:
    """Find files by name under a folder, at any depth; says how many and lists them."""
    start = cx.ws.resolve(path, kind="dir")
    found = sorted(rel for rel, is_dir in cx.ws.walk(start=start) if not is_dir and _glob(pattern, rel))
    where = cx.ws.relative(start)
    if not found:
        return f"no files named like {pattern!r} under '{where}'"
    head = f"{_count(len(found), 'file')} named like {pattern!r} under '{where}':"
    return "\n".join([head, *(_shown(f) for f in found[:MAX_FOUND])] + ([f"[... {len(found) - MAX_FOUND} more]"] * (len(found) > MAX_FOUND)))



def _count(n: int, one: str, many: str | None = None) -> str:
    """'1 file', '3 files': a count a small model copies rather than works out."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _glob(pattern: str, rel: str) -> bool:
    """Whether a relative path matches: the pattern against the file name, or against the
    whole path when it holds a '/'."""
    name = rel if "/" in pattern else posixpath.basename(rel)
    return fnmatch.fnmatchcase(name.lower(), pattern.lower())


def _text_files(ws: Workspace, start: Path) -> Iterator[tuple[str, Path]]:
    """(relative name, resolved path) of the files at or under ``start``, sorted, bounded;
    never through a link that leaves the root. Whether each is text is for the reader."""
    if start.is_file():
        yield ws.relative(start), start
        return
    for rel, is_dir in ws.walk(start=start):
        if is_dir:
            continue
        try:
            real = (ws.root / rel).resolve()
        except (OSError, RuntimeError):
            continue
        if real.is_relative_to(ws.root):
            yield rel, real


def _search_lines(ws: Workspace, real: Path) -> list[str] | Literal["not text", "too large", "unreadable"]:
    """The lines of a text file, as read_file counts them, read once through ``ws.open`` (no
    link followed, no fifo opened); or why it is not searched."""
    try:
        fd = ws.open(real)
    except WorkspaceError:  # a fifo, a device, or a path that changed: not a text file now
        return "not text"
    except OSError:
        return "unreadable"
    with open(fd, "rb") as f:
        head = f.read(TEXT_PROBE_BYTES + 1)
        if not looks_text(head):
            return "not text"
        if os.fstat(fd).st_size > MAX_SEARCH_FILE_BYTES:
            return "too large"
        data = head + f.read(MAX_SEARCH_FILE_BYTES - len(head))
    return list(io.StringIO(data.decode("utf-8", "replace"), newline=""))


# ── irreversible: writes ─────────────────────────────────────────────────────────────────


CONFIG_SUFFIXES = (".toml", ".ini", ".cfg", ".conf", ".env", ".yaml", ".yml", ".properties")
SETTING = re.compile(r"^(\s*[\w.-]+)(\s*[=:]\s*)(.*)$")



def setting_new(old: str, new: str) -> str:
    """``new`` for an edit of one whole setting line, in the line's own style: 'workers=10',
    '10', 'workers 10' or 'worker = 10' for 'workers = 4' becomes 'workers = 10' (a settings
    line with its name gone or misspelt, its '=' dropped or its spacing changed, is what a
    small model writes, not what it means)."""
    m = SETTING.match(old)
    if m is None or "\n" in old.strip() or not new.strip() or "\n" in new.strip():
        return new
    key, sep, _ = m.groups()
    name = key.strip()
    bare = re.match(rf"\s*{re.escape(name)}\s+([^\s=:].*)$", new)
    if bare is not None:
        return f"{key}{sep}{bare.group(1).strip()}"  # the name and value, the '=' left out
    n = SETTING.match(new)
    if n is None:
        return f"{key}{sep}{new.strip()}"  # the value alone
    # The same name, or a slip of one letter in a name of five or more ('worker' for 'workers').
    slip = len(name) >= 5 and Levenshtein.distance(n.group(1).strip(), name) == 1
    return f"{key}{sep}{n.group(3)}" if n.group(1).strip() == name or slip else new


def apply_edit(text: str, old: str, new: str) -> tuple[str, int]:
    """``text`` with the one occurrence of ``old`` replaced by ``new``, and its line number;
    a ``WorkspaceError`` that says how to fix the call when ``old`` is absent or not unique."""
    if old == new:
        # The 0.5B model's commonest wrong edit (it copies old into new): a kind of its own,
        # since the same call can only fail the same way again.
        _fail(ErrorKind.NO_CHANGE, "old and new are the same text, so nothing would change; new is what old must become (to add lines at the end, write_file with append=true)", "new")
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
            ErrorKind.NOT_UNIQUE,
            f"old text occurs {count} times (lines {', '.join(lines)}{more}); include neighbouring lines to make it unique",
            "old",
        )
    if (loose := _spacing_match(text, old, new)) is not None:
        return loose
    _fail(ErrorKind.NOT_FOUND, _not_found_hint(text, old), "old")


def _spacing_match(text: str, old: str, new: str) -> tuple[str, int] | None:
    """``old`` found once when white space is ignored ('port=8080' for 'port = 8080'): the
    change from old to new is made there, the file's own spacing kept around it. A small
    model seldom copies spaces exactly; the change it means is not in doubt."""
    where = [i for i, c in enumerate(text) if not c.isspace()]
    dense, key = "".join(text[i] for i in where), "".join(old.split())
    if not key or dense.count(key) != 1:
        return None
    k = dense.index(key)
    p = len(_common(old, new))
    q = len(_common(old[p:][::-1], new[p:][::-1]))
    a, b = (len("".join(part.split())) for part in (old[:p], old[: len(old) - q]))
    start = where[k + a] if a < len(key) else where[k + len(key) - 1] + 1
    end = where[k + b - 1] + 1 if b > a else start
    return text[:start] + new[p : len(new) - q] + text[end:], text.count("\n", 0, start) + 1


def _common(a: str, b: str) -> str:
    """The longest common prefix of two strings."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


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
    if _in_protected_dir(ws, rel):
        _fail(ErrorKind.INVALID_PATH, f"'{path}' is inside a version-control folder; writes there are refused", "path")
    for parent in reversed(rel.parents[:-1]):  # every folder between the root and the file
        q = ws.root / parent
        if q.exists() and not q.is_dir():
            _fail(ErrorKind.NOT_A_DIR, f"'{parent.as_posix()}' is a file, so '{path}' cannot be created in it", "path")
    if p.exists() and not is_text(p):
        if why := unreadable(p):
            _fail(ErrorKind.UNREADABLE, f"'{path}' cannot be read ({why}), so it cannot be changed; choose another file", "path")
        _fail(ErrorKind.NOT_TEXT, f"'{path}' is a binary file; only text files can be written", "path")
    return p


def _in_protected_dir(ws: Workspace, rel: Path) -> bool:
    """Whether ``rel`` is in a version-control folder: by name after folding (on a case-insensitive
    or normalising filesystem '.GIT' and '.g\u200cit' are '.git'), or by identity with the root's own."""
    if PROTECTED_DIRS & {fold_name(part) for part in rel.parts}:
        return True
    own = [ws.root / d for d in PROTECTED_DIRS if (ws.root / d).is_dir()]
    folders = [ws.root / parent for parent in rel.parents[:-1]]
    return any(q.is_dir() and os.path.samefile(q, d) for q in folders for d in own)


def _read_text(ws: Workspace, p: Path) -> str | None:
    """The file's text, exactly (line ends kept), or None if it does not exist. Read through
    ``ws.open`` and bounded: a preview reads it before anyone has approved anything."""
    try:
        fd = ws.open(p)
    except FileNotFoundError:
        return None
    with open(fd, "rb") as f:
        data = f.read(MAX_EDIT_BYTES + 1)
    rel = ws.relative(p)
    if len(data) > MAX_EDIT_BYTES:
        _fail(ErrorKind.TOO_LARGE, f"'{rel}' is over {MAX_EDIT_BYTES} bytes, too large to change and show the change", "path")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        _fail(ErrorKind.NOT_TEXT, f"'{rel}' is not UTF-8 text throughout; only text files can be written", "path")


def _write_atomic(ws: Workspace, p: Path, text: str) -> None:
    """Write ``text`` to ``p`` through a new file renamed over it, in a folder opened (and
    made) from the root without following links: a reader never sees half a file, a hard link
    to a file outside is replaced, not written through, and a folder swapped for a link
    after the check is refused rather than followed out of the root."""
    dfd = ws.open_dir(p.parent, create=True)
    tmp = f".{p.name}.{secrets.token_hex(4)}.tmp"
    try:
        try:
            st = os.stat(p.name, dir_fd=dfd, follow_symlinks=False)
            # A link's own mode is 0o777: a link swapped in must not make the new file writable by all.
            mode: int | None = None if stat.S_ISLNK(st.st_mode) else stat.S_IMODE(st.st_mode)
        except FileNotFoundError:
            mode = None
        # O_EXCL | O_NOFOLLOW: never through a link planted at the temporary name.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dfd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
                if mode is not None:
                    os.fchmod(f.fileno(), mode)
            os.replace(tmp, p.name, src_dir_fd=dfd, dst_dir_fd=dfd)  # renames a link, never follows it
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)


def write_file(
    cx: ToolContext,
    path: Annotated[
        str,
        WorkspacePath(kind="file", must_exist=False),
        Field(description="Path from the root, e.g. 'docs/a.txt'."),
    ],
    content: Annotated[str, Field(max_length=MAX_WRITE_CHARS, description="The text.")],
    append: Annotated[bool, Field(description="Add content at the end.")] = False,
) -> str:
    """Create or replace a file, or add lines at its end (append). A person approves it."""
    p, before, after = _planned_write(cx, path, content, append)
    _write_atomic(cx.ws, p, after)
    what = "created" if before is None else "appended to" if append else "replaced"
    return f"{what} '{cx.ws.relative(p)}' ({_count(after.count(chr(10)) + (not after.endswith(chr(10))), 'line')} now)"


def edit_file(
    cx: ToolContext,
    path: Annotated[
        str,
        WorkspacePath(kind="file", text=True, max_bytes=MAX_EDIT_BYTES),
        Field(description="Path from the root."),
    ],
    old: Annotated[
        str, Field(min_length=1, max_length=MAX_WRITE_CHARS, description="Exact text in the file.")
    ],
    new: Annotated[str, Field(max_length=MAX_WRITE_CHARS, description="Its replacement.")],
    all: Annotated[bool, Field(description="Replace every occurrence.")] = False,
) -> str:
    """Replace text that occurs once in a file (all: every occurrence). A person approves it."""
    p, before, after = _planned_edit(cx, path, old, new, all)
    assert before is not None
    _write_atomic(cx.ws, p, after)
    if all and before.count(old) > 1:
        return f"edited '{cx.ws.relative(p)}': {before.count(old)} occurrences replaced"
    return f"edited '{cx.ws.relative(p)}' at line {apply_edit(before, old, new)[1]}"


def _planned_write(cx: ToolContext, path: str, content: str, append: bool = False) -> tuple[Path, str | None, str]:
    """(target, text now or None, text after) of a write_file call; refused when it would
    erase a file that was not read."""
    p = _check_writable(cx.ws, path)
    before = _read_text(cx.ws, p)
    if before is not None and append:
        return p, before, before + ("\n" if before and not before.endswith("\n") else "") + content
    if before is not None and p not in cx.seen and _drops_most(before, content):
        # A small model asked to add a line writes the line alone: refuse to erase unread text.
        n = before.count("\n") + (not before.endswith("\n"))
        _fail(
            ErrorKind.NOT_READ,
            f"'{cx.ws.relative(p)}' exists ({_count(n, 'line')}) and was not read; this would erase it. "
            "Read it first, or set append=true to add to its end",
            "content",
        )
    return p, before, content


def _planned_edit(cx: ToolContext, path: str, old: str, new: str, every: bool = False) -> tuple[Path, str | None, str]:
    """(target, text now, text after) of an edit_file call."""
    p = _check_writable(cx.ws, path)
    before = _read_text(cx.ws, p)
    if before is None:
        _fail(ErrorKind.NOT_FOUND, f"path '{path}' not found; use write_file to create a file", "path")
    if path.endswith(CONFIG_SUFFIXES) and any(ln.strip() == old.strip() for ln in before.splitlines()):
        new = setting_new(old, new)  # a whole settings line: written in its own style
    if every and old in before and old != new:
        return p, before, before.replace(old, new)
    return p, before, apply_edit(before, old, new)[0]


def _write_preview(cx: ToolContext, a: dict[str, Any]) -> str:
    return _diff_preview(cx.ws, *_planned_write(cx, a["path"], a["content"], a.get("append", False)))


def _edit_preview(cx: ToolContext, a: dict[str, Any]) -> str:
    return _diff_preview(cx.ws, *_planned_edit(cx, a["path"], a["old"], a["new"], a.get("all", False)))


def _drops_most(before: str, after: str) -> bool:
    """Whether writing ``after`` over ``before`` loses most of its non-blank lines."""
    old = [ln.strip() for ln in before.splitlines() if ln.strip()]
    kept = set(ln.strip() for ln in after.splitlines())
    return bool(old) and sum(ln in kept for ln in old) * 2 < len(old)


def _diff_preview(ws: Workspace, p: Path, before: str | None, after: str) -> str:
    """The diff a person approves; past MAX_DIFF_LINES only the line counts, since difflib's
    time grows with the product of the two sides."""
    old, new = (before or "").count("\n"), after.count("\n")
    if old + new > MAX_DIFF_LINES:
        what = "new file" if before is None else f"{old} lines now"
        return f"(diff not shown, too large to compare: '{ws.relative(p)}', {what}, {new} lines after)\n"
    return unified_diff(ws.relative(p), before, after)


# ── irreversible: commands ───────────────────────────────────────────────────────────────


def _argv(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as e:
        _fail(ErrorKind.INVALID_ARGUMENT, f"command cannot be split into words: {e}", "command")
    if not argv:
        _fail(ErrorKind.INVALID_ARGUMENT, "command is empty; give a program and its arguments", "command")
    return argv


def run_command(
    cx: ToolContext,
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
    """Run a program (no shell: pipes, '*' and '$VAR' are plain words) in the workspace
    folder; returns its exit code and output. A person approves each call."""
    return commands.run(cx.ws.root, _argv(command), timeout)


def _command_preview(cx: ToolContext, a: dict[str, Any]) -> str:
    shown = shlex.join(_argv(a["command"])).replace("\n", "\\n")  # a quoted newline cannot draw a line of ours
    return (
        f"{shown}  (timeout {a.get('timeout', 30)} s)\n"
        f"It runs with your rights and is NOT confined to {cx.ws.root} (it starts there): it can read"
        " your files, credential files included; its environment holds no secrets, HOME is a scratch folder.\n"
    )
