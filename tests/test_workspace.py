"""Every sandbox refusal, and the suggestions that come with not-found errors."""

import builtins
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from localagent.errors import ConfigError
from localagent.tools.workspace import Workspace, WorkspaceError, fold_name, is_text, unreadable


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print('hi')\n")
    (tmp_path / "src" / "util.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("# readme\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "main.py").write_text("hidden from suggestions")
    return Workspace(tmp_path)


def refusal(ws: Workspace, path: str, **kw: object) -> WorkspaceError:
    with pytest.raises(WorkspaceError) as e:
        ws.resolve(path, **kw)  # type: ignore[arg-type]
    return e.value


def test_resolves_relative_and_absolute_inside(ws: Workspace) -> None:
    assert ws.resolve("src/main.py") == ws.root / "src" / "main.py"
    assert ws.resolve(str(ws.root / "README.md")) == ws.root / "README.md"
    assert ws.resolve("./src/../README.md", kind="file") == ws.root / "README.md"
    assert ws.resolve(".", kind="dir") == ws.root
    assert ws.resolve("", kind="dir") == ws.root
    assert ws.resolve("new.txt", must_exist=False) == ws.root / "new.txt"


def test_root_must_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        Workspace(tmp_path / "nope")


def test_dotdot_traversal_is_refused(ws: Workspace) -> None:
    e = refusal(ws, "../secret.txt")
    assert e.info.kind == "outside_workspace"
    assert e.info.message == "path '../secret.txt' is outside the workspace; use a path relative to it"
    assert refusal(ws, "src/../../x", must_exist=False).info.kind == "outside_workspace"


def test_absolute_path_outside_is_refused(ws: Workspace) -> None:
    assert refusal(ws, "/etc/passwd").info.kind == "outside_workspace"


def test_symlink_pointing_outside_is_refused(ws: Workspace, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("s")
    (ws.root / "link").symlink_to(outside)
    (ws.root / "filelink").symlink_to(outside / "secret.txt")
    for p in ("link/secret.txt", "filelink", "link"):
        e = refusal(ws, p)
        assert e.info.kind == "outside_workspace"
        assert "symlink that points outside" in e.info.message


def test_symlink_inside_is_followed(ws: Workspace) -> None:
    (ws.root / "alias.py").symlink_to(ws.root / "src" / "main.py")
    assert ws.resolve("alias.py", kind="file") == ws.root / "src" / "main.py"


def test_symlink_to_dev_null_is_refused(ws: Workspace) -> None:
    (ws.root / "null").symlink_to("/dev/null")
    assert refusal(ws, "null").info.kind == "outside_workspace"


def test_fifo_and_socket_are_refused(ws: Workspace) -> None:
    os.mkfifo(ws.root / "pipe")
    e = refusal(ws, "pipe")
    assert e.info.kind == "invalid_path" and "not a regular file" in e.info.message
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(ws.root / "sock"))
        assert "fifo or socket" in refusal(ws, "sock").info.message
    finally:
        sock.close()


def test_nul_byte_is_refused(ws: Workspace) -> None:
    e = refusal(ws, "src/main.py\x00.txt")
    assert (e.info.kind, e.info.message) == ("invalid_path", "path contains a NUL byte")


def test_over_long_paths_are_refused(ws: Workspace) -> None:
    assert "limit 4096" in refusal(ws, "a/" * 2100).info.message
    assert "limit 255" in refusal(ws, "x" * 256 + ".txt").info.message


def test_not_found_suggests_misspelt_name(ws: Workspace) -> None:
    e = refusal(ws, "src/mian.py", kind="file")
    assert e.info.kind == "not_found"
    assert e.info.message == "path 'src/mian.py' not found; closest: src/main.py"
    assert e.info.alternatives[0] == "src/main.py"
    assert e.info.render() == "error (not_found): path 'src/mian.py' not found; closest: src/main.py"


def test_not_found_suggests_other_case(ws: Workspace) -> None:
    assert refusal(ws, "README.MD").info.alternatives[0] == "README.md"


def test_not_found_suggests_same_name_in_another_folder(ws: Workspace) -> None:
    e = refusal(ws, "main.py", kind="file")
    assert e.info.alternatives[0] == "src/main.py"
    assert ".git/main.py" not in e.info.alternatives  # .git is never searched


def test_not_found_for_folders_suggests_folders(ws: Workspace) -> None:
    assert refusal(ws, "doc", kind="dir").info.alternatives[0] == "docs/"


def test_not_found_with_nothing_similar(ws: Workspace) -> None:
    e = refusal(ws, "zzzzqqqq.xyz", kind="file")
    assert e.info.message == "path 'zzzzqqqq.xyz' not found; no similar path in the workspace"
    assert e.info.alternatives == []


def test_file_used_as_folder_is_not_found(ws: Workspace) -> None:
    assert refusal(ws, "README.md/x").info.kind == "not_found"


def test_folder_given_for_a_file(ws: Workspace) -> None:
    e = refusal(ws, "src", kind="file")
    assert e.info.kind == "not_a_file"
    assert e.info.message == "'src' is a folder, not a file; files in it: src/main.py, src/util.py"
    assert e.info.alternatives == ["src/main.py", "src/util.py"]
    assert refusal(ws, "empty", kind="file").info.message.endswith("it is empty")


def test_file_given_for_a_folder(ws: Workspace) -> None:
    e = refusal(ws, "src/main.py", kind="dir")
    assert e.info.kind == "not_a_dir" and "it is in 'src'" in e.info.message


def test_is_text_and_text_files(ws: Workspace) -> None:
    assert is_text(ws.root / "README.md")
    assert not is_text(ws.root / "blob.bin")
    (ws.root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    assert not is_text(ws.root / "latin1.txt")
    # A multi-byte character cut by the 8 KB probe is still text.
    (ws.root / "wide.txt").write_text("a" * 8191 + "é" * 10, encoding="utf-8")
    assert is_text(ws.root / "wide.txt")
    os.mkfifo(ws.root / "pipe")
    assert not is_text(ws.root / "pipe")  # must not block
    assert ws.text_files() == ["README.md", "src/main.py", "src/util.py", "wide.txt"]
    assert ws.text_files(limit=1) == ["README.md"]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Read src/mian.py and tell me VERSION.", True),  # not there: still a path
        ("How long is timeout_seconds in confg.toml?", True),
        ("Which compiler does CC name in makefile?", True),  # 'Makefile', in another case
        ("What is in the docs folder?", True),
        ("List SRC/app for me.", True),  # 'src' is there
        ("List lib/app for me.", False),  # no 'lib': a word with a slash, not a path
        ("What is TCP/IP, and/or UDP?", False),
        ("Version 3.2.1 costs 10.5m, e.g. a lot.", False),
        ("Write a haiku about the sea.", False),
    ],
)
def test_names_a_path(ws: Workspace, text: str, named: bool) -> None:
    (ws.root / "Makefile").write_text("CC = cc\n")
    assert ws.names_a_path(text) is named


def test_an_unreadable_file_is_reported_as_unreadable_not_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolcalls import call

    (tmp_path / "secret.txt").write_text("x\n")
    (tmp_path / "plain.txt").write_text("x\n")
    real_open = builtins.open

    def refusing(file: Any, *args: Any, **kwargs: Any) -> Any:  # as chmod 000 would, for a user who is not root
        if str(file).endswith("secret.txt"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    real_os_open = os.open

    def refusing_os(path: Any, *args: Any, **kwargs: Any) -> Any:  # search opens files from the root by fd
        if str(path).endswith("secret.txt"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing)
    monkeypatch.setattr(os, "open", refusing_os)
    ws = Workspace(tmp_path)
    assert unreadable(tmp_path / "secret.txt") == "permission denied" and unreadable(tmp_path / "plain.txt") is None
    for r in (
        call(ws, "read_file", path="secret.txt"),
        call(ws, "write_file", path="secret.txt", content="y\n"),
        call(ws, "edit_file", path="secret.txt", old="x", new="y"),
    ):
        assert r.error is not None and r.error.kind == "unreadable", r.content
        assert "cannot be read (permission denied)" in r.content and "binary" not in r.content
    found = call(ws, "search", pattern="x")
    assert "plain.txt:1: x" in found.content
    assert "[1 file(s) could not be read (permission?) and were not searched]" in found.content, found.content


def test_a_folder_that_is_the_roots_own_git_by_identity_is_protected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolcalls import call

    (tmp_path / ".git").mkdir()
    (tmp_path / "alias").mkdir()  # stands for what a bind mount or a case-folding filesystem makes
    real = os.path.samefile
    monkeypatch.setattr(os.path, "samefile", lambda a, b: Path(a).name == "alias" and Path(b).name == ".git" or real(a, b))
    r = call(Workspace(tmp_path), "write_file", path="alias/hooks/pre-commit", content="rm -rf ~\n")
    assert r.error is not None and "version-control folder" in r.content
    assert not (tmp_path / "alias" / "hooks").exists()


def test_fold_name() -> None:
    assert {fold_name(n) for n in (".GIT", ".g\u200cit", "\ufeff.git", ".\uff47\uff49\uff54", "\uff0egit", ".git\u00ad")} == {".git"}
    assert fold_name(".gitignore") == ".gitignore" and fold_name("Straße") == "strasse"


def test_a_fifo_swapped_in_after_the_check_never_blocks_the_text_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Argument checks run before approval, on the agent's main thread: a file swapped for a fifo
    # between the check that it is a regular file and the open would block it for ever.
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    monkeypatch.setattr(os.path, "isfile", lambda p: True)  # the check saw a file; the open finds the fifo
    found: dict[str, object] = {}
    probe = threading.Thread(target=lambda: found.update(text=is_text(fifo), why=unreadable(fifo)), daemon=True)
    probe.start()
    probe.join(2)
    if probe.is_alive():
        for _ in range(2):  # a writer that comes and goes lets each blocked open return
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            probe.join(1)
        pytest.fail("the text probe blocked on a fifo")
    assert found == {"text": False, "why": "not a regular file"}
