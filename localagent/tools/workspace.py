"""The workspace: the one folder tools may touch, and the model-facing errors for paths.

Every path the model names goes through ``Workspace.resolve``. A refusal is a
``WorkspaceError`` carrying a ``ToolErrorInfo`` that says what would be right, e.g.
``path 'src/mian.py' not found; closest: src/main.py``.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import posixpath
import stat
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO, Literal, NoReturn

from rapidfuzz import fuzz, process

from ..errors import ConfigError, ErrorKind, ToolErrorInfo

__all__ = [
    "PATH_SHAPED", "Kind", "Workspace", "WorkspaceError", "fold_name", "is_text", "looks_text", "path_words", "unreadable",
]

Kind = Literal["file", "dir"]

MAX_PATH_BYTES = 4096  # Linux PATH_MAX
MAX_NAME_BYTES = 255  # Linux NAME_MAX
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules"})
WALK_LIMIT = 5000  # entries looked at when searching for suggestions: errors must stay fast
TEXT_PROBE_BYTES = 8192
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class WorkspaceError(Exception):
    """A path was refused or failed; ``info`` is what the model is shown."""

    def __init__(self, info: ToolErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info


def is_text(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a regular file whose first 8 KB hold no NUL byte and decode as UTF-8."""
    if not os.path.isfile(path):
        return False
    try:
        with _probe(path) as f:
            return f is not None and looks_text(f.read(TEXT_PROBE_BYTES + 1))
    except OSError:
        return False


@contextmanager
def _probe(path: str | os.PathLike[str]) -> Iterator[BinaryIO | None]:
    """``path`` open for reading, or None if it is no regular file. O_NONBLOCK: a fifo swapped in
    after a check by name would block the open (these probes run before approval, on the agent's
    thread); opened so, it is seen by fstat and refused."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as f:
        yield f if stat.S_ISREG(os.fstat(fd).st_mode) else None


def looks_text(chunk: bytes) -> bool:
    """Whether the first bytes of a file (up to 8 KB, and one more) read as text: no NUL, UTF-8."""
    if b"\0" in chunk[:TEXT_PROBE_BYTES]:
        return False
    final = len(chunk) <= TEXT_PROBE_BYTES
    # An incremental decoder tolerates a multi-byte character cut at the probe boundary.
    try:
        codecs.getincrementaldecoder("utf-8")().decode(chunk[:TEXT_PROBE_BYTES], final=final)
    except UnicodeDecodeError:
        return False
    return True


def unreadable(path: str | os.PathLike[str]) -> str | None:
    """Why the file ``path`` cannot be read ('permission denied'), or None if it can: a file
    that is_text refuses for this reason is unreadable, not binary."""
    try:
        with _probe(path) as f:
            if f is None:
                return "not a regular file"
            f.read(1)
    except OSError as e:
        return (e.strerror or type(e).__name__).lower()
    return None


# Default_Ignorable_Code_Point (zero-width, joiners, bidi marks, variation selectors): a
# normalising filesystem may drop them from a name, so '.g\u200cit' can be '.git'.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def fold_name(name: str) -> str:
    """``name`` as a case-insensitive, Unicode-normalising filesystem may store it: NFKC,
    case folded, default-ignorable characters removed ('.GIT', '.g\u200cit' -> '.git')."""
    return _IGNORABLE.sub("", unicodedata.normalize("NFKC", _IGNORABLE.sub("", name)).casefold())


class Workspace:
    """A sandbox rooted at ``root``: paths resolve inside it or are refused."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        r = Path(root)
        if not r.is_dir():
            raise ConfigError(f"workspace {str(r)!r} is not an existing folder")
        self.root = r.resolve()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def relative(self, p: Path) -> str:
        """``p`` (inside the root) as a POSIX path relative to it; the root itself is '.'."""
        rel = p.relative_to(self.root).as_posix()
        return rel or "."

    def open_dir(self, folder: Path, *, create: bool = False) -> int:
        """A descriptor of ``folder`` (inside the root), opened from the root one name at a time
        with O_NOFOLLOW, each missing one made on the way with ``create``. A folder swapped for
        a link after ``resolve`` checked it makes this fail; opening by name would follow it out."""
        parts = folder.relative_to(self.root).parts if folder.is_absolute() else folder.parts
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for part in parts:
                if create:
                    with suppress(FileExistsError):
                        os.mkdir(part, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError as e:
            os.close(fd)
            self._changed(folder, e)
        return fd

    def open(self, p: Path, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
        """A descriptor of the regular file ``p`` (as ``resolve`` gave it): its folders opened
        as ``open_dir`` does, the file itself with O_NOFOLLOW, and O_NONBLOCK so that a fifo
        swapped in is refused instead of blocking."""
        dfd = self.open_dir(p.parent)
        try:
            fd = os.open(p.name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dfd)
        except OSError as e:
            self._changed(p, e)
        finally:
            os.close(dfd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            _fail(ErrorKind.INVALID_PATH, f"path '{self.relative(p)}' is not a regular file")
        return fd

    def _changed(self, p: Path, e: OSError) -> NoReturn:
        """Re-raise ``e`` from ``open_dir``/``open``; a link met on the way (ELOOP, or ENOTDIR
        from O_DIRECTORY) means the path changed since it was checked, and is refused."""
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            rel = self.relative(p) if p.is_absolute() else p.as_posix()
            _fail(ErrorKind.OUTSIDE_WORKSPACE, f"path '{rel}' changed while in use (a folder or file on it is now a link); refused")
        raise e

    def resolve(self, path: str, *, must_exist: bool = True, kind: Kind | None = None) -> Path:
        """The absolute, symlink-free path of ``path`` inside the root, or a ``WorkspaceError``."""
        if not isinstance(path, str):
            _fail(ErrorKind.INVALID_PATH, f"path must be a string, got {type(path).__name__}")
        if "\0" in path:
            _fail(ErrorKind.INVALID_PATH, "path contains a NUL byte")
        if bad := next((c for c in path if ord(c) < 32 or ord(c) == 127), None):
            # Such a name could not be shown in one line of an error, or safely on a terminal.
            _fail(ErrorKind.INVALID_PATH, f"path contains a control character ({bad!r}); use a plain file name")
        try:  # a lone surrogate ('\\ud800' in JSON) is no text: os calls, traces and prompts would fail on it
            size = len(path.encode("utf-8"))
        except UnicodeEncodeError:
            _fail(ErrorKind.INVALID_PATH, "path contains an invalid character (a lone surrogate)")
        if size > MAX_PATH_BYTES:
            _fail(ErrorKind.INVALID_PATH, f"path is too long ({size} bytes; limit {MAX_PATH_BYTES})")
        for part in path.replace("\\", "/").split("/"):
            size = len(part.encode("utf-8", "surrogateescape"))
            if size > MAX_NAME_BYTES:
                _fail(
                    ErrorKind.INVALID_PATH,
                    f"path component '{part[:40]}...' is too long ({size} bytes; limit {MAX_NAME_BYTES})",
                )
        given = path
        # Models write '' for the root often enough that refusing it would only waste a turn.
        candidate = self.root / (path or ".")
        try:
            resolved = candidate.resolve()  # follows every symlink, including dangling ones
        except (OSError, RuntimeError):
            _fail(ErrorKind.INVALID_PATH, f"path '{given}' cannot be resolved (symlink loop?)")
        if not resolved.is_relative_to(self.root):
            lexical = Path(os.path.normpath(candidate))
            if lexical.is_relative_to(self.root):
                _fail(ErrorKind.OUTSIDE_WORKSPACE, f"path '{given}' is a symlink that points outside the workspace")
            _fail(ErrorKind.OUTSIDE_WORKSPACE, f"path '{given}' is outside the workspace; use a path relative to it")

        try:
            st = resolved.stat()
        except FileNotFoundError:
            st = None
        except NotADirectoryError:  # 'README.md/x': a file used as a folder
            st = None
        except OSError as e:
            _fail(ErrorKind.INVALID_PATH, f"path '{given}' cannot be accessed: {e.strerror or type(e).__name__}")
        if st is None:
            if must_exist:
                alts = self.closest(given, kind)
                tail = f"closest: {', '.join(alts)}" if alts else "no similar path in the workspace"
                _fail(ErrorKind.NOT_FOUND, f"path '{given}' not found; {tail}", alts)
            return resolved
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            _fail(ErrorKind.INVALID_PATH, f"path '{given}' is a device, fifo or socket, not a regular file")
        if kind == "file" and stat.S_ISDIR(st.st_mode):
            summary, inside = self._folder_summary(resolved)
            _fail(ErrorKind.NOT_A_FILE, f"'{given}' is a folder, not a file; {summary}", inside)
        if kind == "dir" and not stat.S_ISDIR(st.st_mode):
            parent = self.relative(resolved.parent)
            _fail(ErrorKind.NOT_A_DIR, f"'{given}' is a file, not a folder; it is in '{parent}'", [parent])
        return resolved

    def _folder_summary(self, folder: Path, limit: int = 10) -> tuple[str, list[str]]:
        """What is in ``folder``, as text and as the files to suggest. Paths are given from
        the root ('docs/setup.md', not 'setup.md'): a model copies them as they are."""
        entries = self._listing(folder)  # through a descriptor, as walk lists
        if entries is None:
            return "it cannot be listed", []
        rel = lambda name: self.relative(folder / name)  # noqa: E731
        files = [rel(name) for name, is_dir in entries if not is_dir]
        dirs = [rel(name) + "/" for name, is_dir in entries if is_dir]
        names, what = (files, "files") if files else (dirs, "folders")
        if not names:
            return "it is empty", []
        more = ", ..." if len(names) > limit else ""
        return f"{what} in it: {', '.join(names[:limit])}{more}", files[:3]

    def walk(self, limit: int = WALK_LIMIT, start: Path | None = None) -> Iterator[tuple[str, bool]]:
        """(relative path, is_dir) for entries under ``start`` (the root by default),
        sorted, bounded, skipping SKIP_DIRS, never following a link into a folder."""
        seen = 0
        stack = [start or self.root]
        while stack:
            folder = stack.pop()
            subdirs = []
            for name, is_dir in self._listing(folder) or []:
                if is_dir and name in SKIP_DIRS:
                    continue
                seen += 1
                if seen > limit:
                    return
                path = folder / name
                yield self.relative(path), is_dir
                if is_dir:
                    subdirs.append(path)
            stack.extend(reversed(subdirs))  # depth-first, in name order

    def _listing(self, folder: Path) -> list[tuple[str, bool]] | None:
        """(name, is_dir) of the entries of ``folder``, sorted; read through a descriptor opened
        as ``open_dir`` does, so a folder swapped for a link since it was listed is not read
        (by name, its listing would be the outside's names). None if it cannot be listed."""
        try:
            fd = self.open_dir(folder)
        except (OSError, WorkspaceError):
            return None
        out = []
        try:
            with os.scandir(fd) as it:  # scandir works on a copy of fd
                for e in it:
                    with suppress(OSError):
                        out.append((e.name, e.is_dir(follow_symlinks=False)))
        except OSError:
            return None
        finally:
            os.close(fd)
        return sorted(out)

    def closest(self, path: str, kind: Kind | None = None, limit: int = 3) -> list[str]:
        """Existing paths most like ``path``: same name in any case, same file name elsewhere, fuzzy."""
        query = path.replace("\\", "/").strip("/")
        if os.path.isabs(path) and Path(path).is_relative_to(self.root):
            query = Path(path).relative_to(self.root).as_posix()
        query = posixpath.normpath(query) if query else "."
        entries = [(p, d) for p, d in self.walk() if kind is None or (kind == "dir") == d]
        if not entries:
            return []
        shown = {p: p + "/" if d else p for p, d in entries}
        paths = [p for p, _ in entries]
        q_low = query.lower()
        q_base = posixpath.basename(q_low)

        found: list[str] = []
        found += [p for p in paths if p.lower() == q_low]
        found += [p for p in paths if posixpath.basename(p) == posixpath.basename(query)]
        found += [p for p in paths if posixpath.basename(p).lower() == q_base]
        # Fuzzy on the whole path catches typos; on the file name, typos in another folder.
        scores: dict[str, float] = {}
        for choice, score, idx in process.extract(
            q_low, [p.lower() for p in paths], scorer=fuzz.ratio, score_cutoff=60, limit=limit * 3
        ):
            scores[paths[idx]] = max(scores.get(paths[idx], 0.0), score)
        bases = [posixpath.basename(p).lower() for p in paths]
        for choice, score, idx in process.extract(
            q_base, bases, scorer=fuzz.ratio, score_cutoff=75, limit=limit * 3
        ):
            scores[paths[idx]] = max(scores.get(paths[idx], 0.0), score * 0.95)
        # Only near-best fuzzy hits: 'src/util.py' is no help once 'src/main.py' scores 91.
        best = max(scores.values(), default=0.0)
        fuzzy = [p for p in scores if scores[p] >= best - 10]
        found += sorted(fuzzy, key=lambda p: (-scores[p], len(p), p))

        out: list[str] = []
        for p in found:
            if shown[p] not in out:
                out.append(shown[p])
        return out[:limit]

    def text_files(self, limit: int = 200) -> list[str]:
        """Relative paths of text files under the root, sorted; past ``limit``, shallow ones win."""
        out = []
        for rel, is_dir in self.walk():
            if is_dir:
                continue
            real = (self.root / rel).resolve()
            if real.is_relative_to(self.root) and is_text(real):  # never read through a link out
                out.append(rel)
                if len(out) >= limit:
                    break
        return sorted(out)

    def mentioned(self, text: str, limit: int = 2000) -> list[str]:
        """Existing paths that ``text`` names: a relative path, a file name with
        its extension, or a folder name ("the docs folder")."""
        words = path_words(text)
        found = []
        for rel, is_dir in self.walk(limit):
            base = posixpath.basename(rel)
            if rel in words or (("." in base or is_dir) and base in words and len(base) > 2):
                found.append(rel)
        return found

    def names_a_path(self, text: str, limit: int = 2000) -> bool:
        """Whether ``text`` names a file or folder, there or not: an existing path, an
        existing file's name in another case ('makefile'), or a word shaped like a path
        ('src/mian.py', 'confg.toml'). A task that does is answered by looking first."""
        words = path_words(text)
        if any(PATH_SHAPED.fullmatch(w) for w in words) or self.mentioned(text, limit):
            return True
        lowered = {w.lower() for w in words if len(w) > 3}
        heads = {w.lower().split("/")[0] for w in words if "/" in w}
        for rel, is_dir in self.walk(limit):
            low = rel.lower()
            if (not is_dir and posixpath.basename(low) in lowered) or ("/" not in low and low in heads):
                return True
        return False

    def folders(self, limit: int = 200) -> list[str]:
        """Relative paths of folders under the root ('.' first), sorted, bounded."""
        out = ["."]
        for rel, is_dir in self.walk():
            if is_dir:
                out.append(rel)
                if len(out) >= limit:
                    break
        return sorted(out)


# 'src/main.py', 'notes.txt': a name with an extension that starts with a letter (so '3.2.1',
# '10.5m' and 'e.g' are not paths), in folders or not. 'and/or' is no path; 'src/app' is one
# when 'src' is there, which names_a_path checks.
PATH_SHAPED = re.compile(r"(?:[\w.-]+/)*[\w-]{2,}\.[a-zA-Z]\w{0,5}")


def path_words(text: str) -> set[str]:
    """The path-like words of a text: runs of word characters, dots, slashes and dashes,
    their surrounding punctuation and a trailing slash taken off."""
    words = {w.strip(".,;:!?'\"()`").rstrip("/") for w in re.findall(r"[\w./\\-]+", text)}
    words.discard("")
    return words


def _fail(kind: ErrorKind, message: str, alternatives: list[str] | None = None) -> NoReturn:
    raise WorkspaceError(ToolErrorInfo(kind=kind, message=message, alternatives=alternatives or []))

