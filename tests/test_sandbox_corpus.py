"""A corpus of attempts to leave the workspace, run through every path-taking tool with
approval granted, so that only the sandbox stands in the way. Zero may escape: each is refused
with a structured error, or (for names that only look like tricks) stays inside the root;
nothing outside is read or changed.

Version-control folders are a third kind: reading them is allowed, writing is refused (a hook
written there would run later), whatever case, Unicode form or invisible character the name
is given in, since a case-insensitive or normalising filesystem would find the real folder.

run_command is not in the corpus: a command is not confined by the sandbox, which is why it
is off unless enabled and each call needs a person's approval. Races (a folder swapped for a
link while a tool runs) are in tests/test_races.py.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from localagent.tools.builtin import workspace_tools
from localagent.dispatch import Dispatcher
from localagent.messages import ToolCall, ToolResult
from localagent.tools import ToolContext, ToolSet
from localagent.tools.workspace import Workspace, WorkspaceError

SECRET = "SECRET-CONTENT-7731"
REFUSED = "refused"  # outside_workspace or invalid_path: the sandbox said no
LITERAL = "literal"  # a plain (odd) name inside the root: not found, or created inside
PROTECTED = "protected"  # inside the root, in (or folding to) a version-control folder: no write


@dataclass(frozen=True)
class Attempt:
    id: str
    path: str
    expect: str  # REFUSED, LITERAL or PROTECTED


def corpus(base: Path) -> list[Attempt]:
    root, outside, sibling = base / "ws", base / "outside", base / "ws-evil"
    a = [
        # traversal
        Attempt("dotdot", "../outside/secret.txt", REFUSED),
        Attempt("dotdot-deep", "../../../../../../../../etc/passwd", REFUSED),
        Attempt("dotdot-after-folder", "src/../../outside/secret.txt", REFUSED),
        Attempt("dotdot-dot", "./../outside/secret.txt", REFUSED),
        Attempt("dotdot-mixed", "src/./../.././outside/secret.txt", REFUSED),
        Attempt("dotdot-bare", "..", REFUSED),
        Attempt("dotdot-slash", "../", REFUSED),
        Attempt("out-and-back-out", "../ws/../outside/secret.txt", REFUSED),
        Attempt("sibling-prefix", "../ws-evil/secret.txt", REFUSED),
        Attempt("dotdot-trailing-space", "../outside/secret.txt ", REFUSED),
        Attempt("dotdot-new-file", "../outside/new.txt", REFUSED),
        # absolute
        Attempt("abs-etc", "/etc/passwd", REFUSED),
        Attempt("abs-outside", str(outside / "secret.txt"), REFUSED),
        Attempt("abs-double-slash", "//etc/passwd", REFUSED),
        Attempt("abs-slash", "/", REFUSED),
        Attempt("abs-sibling-prefix", str(sibling / "secret.txt"), REFUSED),
        Attempt("abs-root-then-dotdot", str(root) + "/../outside/secret.txt", REFUSED),
        Attempt("abs-proc-root", "/proc/self/root/etc/passwd", REFUSED),
        Attempt("abs-proc-cwd", "/proc/self/cwd", REFUSED),
        Attempt("abs-dev-zero", "/dev/zero", REFUSED),
        Attempt("abs-tmp-new", str(outside / "created.txt"), REFUSED),
        # symlinks
        Attempt("link-dir-file", "link_dir/secret.txt", REFUSED),
        Attempt("link-dir", "link_dir", REFUSED),
        Attempt("link-file", "link_file", REFUSED),
        Attempt("link-chain", "chain", REFUSED),
        Attempt("link-relative", "rel_link", REFUSED),
        Attempt("link-dangling-out", "dangling_out", REFUSED),
        Attempt("link-deep", "src/inner/deep_link/secret.txt", REFUSED),
        Attempt("link-to-parent", "up/outside/secret.txt", REFUSED),
        Attempt("link-dir-dotdot", "link_dir/../outside/secret.txt", REFUSED),
        Attempt("link-loop", "loop", REFUSED),
        Attempt("link-dev-null", "devnull", REFUSED),
        Attempt("link-new-file-through-dir", "link_dir/new.txt", REFUSED),
        # devices and special files
        Attempt("fifo", "fifo", REFUSED),
        Attempt("socket", "sock", REFUSED),
        # NUL, length, invalid text
        Attempt("nul", "notes.txt\x00../../outside/secret.txt", REFUSED),
        Attempt("nul-end", "../outside/secret.txt\x00", REFUSED),
        Attempt("too-long", "a/" * 2100 + "x", REFUSED),
        Attempt("name-too-long", "x" * 300 + ".txt", REFUSED),
        Attempt("lone-surrogate", "\ud800/../../outside/secret.txt", REFUSED),
        Attempt("surrogate-escape", "..\udcff/secret.txt", REFUSED),
        Attempt("newline-dotdot", "src/\n../../outside/secret.txt", REFUSED),
        Attempt("escape-sequence", "\x1b[2K../outside/secret.txt", REFUSED),
        # encoding tricks: none is decoded, so each is a plain name inside the root
        Attempt("percent", "%2e%2e/outside/secret.txt", LITERAL),
        Attempt("percent-slash", "..%2foutside%2fsecret.txt", LITERAL),
        Attempt("percent-double", "%252e%252e%252fsecret.txt", LITERAL),
        Attempt("backslash", "..\\outside\\secret.txt", LITERAL),
        Attempt("fullwidth-dots", "\uff0e\uff0e/outside/secret.txt", LITERAL),
        Attempt("division-slash", "..\u2215outside\u2215secret.txt", LITERAL),
        Attempt("overlong-utf8-text", "\xc0\xae\xc0\xae/secret.txt", LITERAL),
        Attempt("tilde", "~/.bashrc", LITERAL),
        Attempt("env-var", "$HOME/.bashrc", LITERAL),
        Attempt("file-url", "file:///etc/passwd", LITERAL),
        Attempt("windows-drive", "C:\\Windows\\win.ini", LITERAL),
        Attempt("unc", "\\\\server\\share\\secret.txt", LITERAL),
        Attempt("leading-space-dotdot", " ../secret.txt", LITERAL),
        Attempt("dotdot-semicolon", "..;/secret.txt", LITERAL),
        Attempt("three-dots", ".../secret.txt", LITERAL),
        Attempt("bidi-override-dotdot", "\u202e../outside/secret.txt", LITERAL),
        Attempt("c1-next-line", "\x85../outside/secret.txt", LITERAL),
        Attempt("one-dot-leader", "\u2024\u2024/outside/secret.txt", LITERAL),
        Attempt("dot-space-dot", ". ./outside/secret.txt", LITERAL),
        Attempt("percent-nul", "..%00/secret.txt", LITERAL),
        Attempt("tilde-user", "~root/.ssh/authorized_keys", LITERAL),
        # more traversal, links and special files
        Attempt("delete-char", "\x7f../outside/secret.txt", REFUSED),
        Attempt("dotdot-from-deep", "src/inner/../../../outside/secret.txt", REFUSED),
        Attempt("dotdot-many-dots", "src/./././../../outside/secret.txt", REFUSED),
        Attempt("through-a-file", "notes.txt/../../outside/secret.txt", REFUSED),
        Attempt("through-a-fifo", "fifo/../../outside/secret.txt", REFUSED),
        Attempt("trailing-dot", "../outside/secret.txt/.", REFUSED),
        Attempt("link-file-slash", "link_file/", REFUSED),
        Attempt("link-dir-dot", "link_dir/./secret.txt", REFUSED),
        Attempt("abs-proc-environ", "/proc/self/environ", REFUSED),
        Attempt("abs-proc-fd", "/proc/self/fd/0", REFUSED),
        # version-control folders: readable, never writable, however the name is spelt
        Attempt("git-hook", ".git/hooks/pre-commit", PROTECTED),
        Attempt("git-config", ".git/config", PROTECTED),
        Attempt("git-upper", ".GIT/hooks/pre-commit", PROTECTED),
        Attempt("git-mixed-case", ".Git/config", PROTECTED),
        Attempt("git-zero-width-non-joiner", ".g\u200cit/hooks/post-checkout", PROTECTED),
        Attempt("git-zero-width-space", ".g\u200bit/config", PROTECTED),
        Attempt("git-byte-order-mark", "\ufeff.git/config", PROTECTED),
        Attempt("git-soft-hyphen", ".git\u00ad/config", PROTECTED),
        Attempt("git-fullwidth-stop", "\uff0egit/config", PROTECTED),
        Attempt("git-fullwidth-letters", ".\uff47\uff49\uff54/config", PROTECTED),
        Attempt("git-through-dotdot", "src/../.git/hooks/pre-commit", PROTECTED),
        Attempt("git-through-a-link", "gitlink/hooks/pre-commit", PROTECTED),
        Attempt("hg", ".hg/hgrc", PROTECTED),
        Attempt("svn-upper", ".SVN/entries", PROTECTED),
    ]
    return a


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root, outside, sibling = tmp_path / "ws", tmp_path / "outside", tmp_path / "ws-evil"
    for d in (root / "src" / "inner", outside, sibling):
        d.mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET + "\n")
    (sibling / "secret.txt").write_text(SECRET + "\n")
    (root / "notes.txt").write_text("notes\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "link_dir").symlink_to(outside)
    (root / "link_file").symlink_to(outside / "secret.txt")
    (root / "chain").symlink_to(root / "link_file")
    (root / "rel_link").symlink_to("../outside/secret.txt")
    (root / "dangling_out").symlink_to(outside / "does-not-exist.txt")
    (root / "src" / "inner" / "deep_link").symlink_to("../../../outside")
    (root / "up").symlink_to("..")
    (root / "loop").symlink_to("loop")
    (root / "devnull").symlink_to("/dev/null")
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "gitlink").symlink_to(".git")
    os.mkfifo(root / "fifo")
    return tmp_path


@pytest.fixture
def sock(base: Path) -> Iterator[None]:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(base / "ws" / "sock"))
    yield
    s.close()


def snapshot(base: Path) -> dict[str, str]:
    """Every file, folder and link outside the root and in its .git, with a hash of its content or target."""
    out = {}
    for d in (base / "outside", base / "ws-evil", base / "ws" / ".git"):
        for p in sorted(d.rglob("*")):
            if p.is_symlink():
                out[str(p)] = os.readlink(p)
            else:
                out[str(p)] = "folder" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def calls_for(a: Attempt) -> list[tuple[str, dict[str, object]]]:
    return [
        ("read_file", {"path": a.path}),
        ("list_dir", {"path": a.path}),
        ("search", {"pattern": "SECRET", "path": a.path}),
        ("find_files", {"pattern": "*", "path": a.path}),
        ("write_file", {"path": a.path, "content": "pwned\n"}),
        ("edit_file", {"path": a.path, "old": SECRET, "new": "pwned"}),
    ]


def test_the_corpus_is_large_enough(tmp_path: Path) -> None:
    attempts = corpus(tmp_path)
    assert len(attempts) >= 80 and len({a.id for a in attempts}) == len(attempts)
    assert sum(a.expect == REFUSED for a in attempts) >= 50
    assert sum(a.expect == PROTECTED for a in attempts) >= 12


def test_zero_escapes_through_the_tools(base: Path, sock: None) -> None:
    ws = Workspace(base / "ws")
    tools = ToolSet(workspace_tools(ws, write=True))
    # Every irreversible call is approved: only the sandbox can stop these.
    d = Dispatcher(tools, ToolContext(ws), max_result_tokens=100_000, approver=lambda t, c: (True, ""))
    before = snapshot(base)
    escapes: list[str] = []
    for a in corpus(base):
        for name, args in calls_for(a):
            r: ToolResult = d.run([ToolCall("c", name, args)])[0]
            where = f"{a.id} via {name}: {r.content[:120]!r}"
            if SECRET in r.content:
                escapes.append("read " + where)
            if r.error is None:
                if a.expect == PROTECTED:
                    if name in ("write_file", "edit_file"):
                        escapes.append("written " + where)
                elif a.expect == REFUSED or name not in ("write_file", "list_dir", "search", "find_files"):
                    escapes.append("not refused " + where)
                continue
            # A structured error: a kind, one line for the model, no traceback.
            assert r.content == r.error.render() and "\n" not in r.content, where
            assert "Traceback" not in r.content and r.error.kind != "tool_exception", where
            if a.expect == REFUSED:
                assert r.error.kind in ("outside_workspace", "invalid_path"), where
            if a.expect == PROTECTED and name == "write_file":
                assert r.error.kind == "invalid_path" and "version-control folder" in r.content, where
        d.reset_retries()
    assert escapes == []
    assert snapshot(base) == before, "something outside the root changed"
    created = [p for p in (base / "outside").rglob("*") if p.name in ("new.txt", "created.txt", "does-not-exist.txt")]
    assert created == []
    for a in corpus(base):  # what write_file did create went where the name says, inside
        if a.expect == LITERAL:
            p = ws.resolve(a.path, kind="file")
            assert p.is_relative_to(ws.root) and p.read_text() == "pwned\n", a.id


def test_literal_names_stay_inside_the_root(base: Path, sock: None) -> None:
    ws = Workspace(base / "ws")
    for a in corpus(base):
        try:
            p = ws.resolve(a.path, must_exist=False)
        except WorkspaceError as e:
            assert a.expect == REFUSED or e.info.kind == "invalid_path", a.id
            continue
        assert a.expect in (LITERAL, PROTECTED), f"{a.id} resolved to {p}"
        assert p.is_relative_to(ws.root), f"{a.id} escaped to {p}"


def test_every_refusal_is_refused_by_resolve_itself(base: Path, sock: None) -> None:
    ws = Workspace(base / "ws")
    for a in corpus(base):
        if a.expect != REFUSED:
            continue
        for must_exist in (True, False):
            with pytest.raises(WorkspaceError) as e:
                ws.resolve(a.path, must_exist=must_exist)
            assert e.value.info.kind in ("outside_workspace", "invalid_path"), a.id
            assert e.value.info.message and "\n" not in e.value.info.message, a.id


def test_search_and_list_of_the_root_never_show_what_is_outside(base: Path) -> None:
    ws = Workspace(base / "ws")
    d = Dispatcher(ToolSet(workspace_tools(ws, write=False)), ToolContext(ws), max_result_tokens=100_000)
    for args in ({"pattern": "SECRET"}, {"pattern": "secret", "path": "."}, {"pattern": ".", "regex": True}):
        r = d.run([ToolCall("c", "search", args)])[0]
        assert SECRET not in r.content, r.content
    for name, args in (("list_dir", {"path": "."}), ("find_files", {"pattern": "*"})):
        r = d.run([ToolCall("c", name, args)])[0]
        assert SECRET not in r.content and "secret.txt" not in r.content, r.content
