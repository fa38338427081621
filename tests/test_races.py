"""Check, then use: a folder swapped for a link to the outside while the tools run, in a loop,
as fast as a thread can. The tools open every path from the root one name at a time without
following links, so a swap makes a call fail, never leave the root."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from localagent.messages import ToolCall
from localagent.tools.workspace import Workspace
from toolcalls import dispatcher

SECRET = "SECRET-OUTSIDE-5150"
ROUNDS = 300


# In a separate process, so that it races the tools for real instead of taking turns with
# them for the interpreter lock.
SWAPPER = """
import os, shutil, sys
folder, link, real = sys.argv[1:4]
while not os.path.exists(sys.argv[4]):
    os.rename(folder, real)
    try:
        os.rename(link, folder)  # now a link out
        os.rename(folder, link)
    except OSError:  # write_file made the folder anew in the gap: inside, and harmless
        shutil.rmtree(folder, ignore_errors=True)
    while True:
        try:
            os.rename(real, folder)  # the real folder again
            break
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
"""


@contextmanager
def swapping(folder: Path, target: Path) -> Iterator[None]:
    """Swap ``folder`` for a link to ``target`` and back, over and over, until the block ends."""
    link, real = folder.with_name(folder.name + ".link"), folder.with_name(folder.name + ".real")
    stop = folder.with_name("stop-swapping")
    link.symlink_to(target, target_is_directory=True)
    p = subprocess.Popen([sys.executable, "-c", SWAPPER, str(folder), str(link), str(real), str(stop)])
    try:
        yield
    finally:
        stop.touch()
        assert p.wait(10) == 0


def _setup(tmp_path: Path) -> tuple[Workspace, Path]:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "x.txt").write_text("inside\n")
    (outside / "x.txt").write_text(SECRET + "\n")
    return Workspace(root), outside


def test_writes_never_land_outside_while_a_folder_is_swapped(tmp_path: Path) -> None:
    ws, outside = _setup(tmp_path)
    d = dispatcher(ws, commands=False)
    calls = [
        ToolCall("w", "write_file", {"path": "sub/x.txt", "content": "inside\npwned\n"}),  # keeps its line: no not_read
        ToolCall("n", "write_file", {"path": "sub/new/deep.txt", "content": "pwned\n"}),
        ToolCall("e", "edit_file", {"path": "sub/x.txt", "old": SECRET, "new": "pwned"}),
    ]
    written = 0
    with swapping(ws.root / "sub", outside):
        for _ in range(ROUNDS):
            for r in d.run(calls):
                assert "\n" not in r.content, r.content  # a refusal or an OS error, in one line
                written += r.error is None
            d.reset_retries()
    assert written > 0  # the race was run against writes that do happen
    assert sorted(p.name for p in outside.rglob("*")) == ["x.txt"], "a write left the root"
    assert (outside / "x.txt").read_text() == SECRET + "\n"


def test_reads_never_show_what_is_outside_while_a_folder_is_swapped(tmp_path: Path) -> None:
    ws, outside = _setup(tmp_path)
    d = dispatcher(ws, commands=False)
    calls = [
        ToolCall("s", "search", {"pattern": "SECRET"}),
        ToolCall("t", "search", {"pattern": "SECRET", "path": "sub/x.txt"}),
        ToolCall("p", "write_file", {"path": "sub/x.txt", "content": "x\n"}),  # its preview reads
    ]
    previews = d.tools.get("write_file")
    assert previews is not None and previews.preview is not None
    with swapping(ws.root / "sub", outside):
        for _ in range(ROUNDS):
            for r in d.run(calls[:2]):
                assert SECRET not in r.content, r.content
            try:
                assert SECRET not in previews.preview(calls[2].arguments)
            except Exception:  # refused or failed: either way nothing was shown
                pass
            d.reset_retries()


def test_read_file_and_list_dir_never_show_what_is_outside_while_a_folder_is_swapped(tmp_path: Path) -> None:
    ws, outside = _setup(tmp_path)
    (outside / f"{SECRET}.txt").write_text("a name only the outside folder has\n")
    d = dispatcher(ws, commands=False)
    calls = [
        ToolCall("r", "read_file", {"path": "sub/x.txt"}),
        ToolCall("l", "list_dir", {"path": "sub"}),
    ]
    answered = 0
    with swapping(ws.root / "sub", outside):
        for _ in range(ROUNDS):
            for r in d.run(calls):
                assert SECRET not in r.content, r.content
                answered += r.error is None
            d.reset_retries()
    assert answered > 0  # the race was run against reads that do happen


def test_a_folder_swapped_for_a_link_right_after_every_check_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The worst moment, every time: each check sees the real folder, each use that follows it
    # finds a link to the outside in its place. Opening by name would follow it out.
    ws, outside = _setup(tmp_path)
    (outside / f"{SECRET}.txt").write_text("a name only the outside folder has\n")
    folder, real = ws.root / "sub", ws.root / "sub.real"
    check = Workspace.resolve

    def checked_then_swapped(self: Workspace, path: str, **kw: Any) -> Path:
        if folder.is_symlink():
            folder.unlink()
            real.rename(folder)
        p = check(self, path, **kw)
        folder.rename(real)
        folder.symlink_to(outside, target_is_directory=True)
        return p

    d = dispatcher(ws, commands=False)
    calls = [
        ToolCall("w", "write_file", {"path": "sub/x.txt", "content": "inside\npwned\n"}),
        ToolCall("n", "write_file", {"path": "sub/new/deep.txt", "content": "pwned\n"}),
        ToolCall("e", "edit_file", {"path": "sub/x.txt", "old": "inside", "new": "pwned"}),
        ToolCall("r", "read_file", {"path": "sub/x.txt"}),
        ToolCall("l", "list_dir", {"path": "sub"}),
        ToolCall("s", "search", {"pattern": "SECRET", "path": "sub"}),
        ToolCall("t", "search", {"pattern": "SECRET", "path": "sub/x.txt"}),
        ToolCall("f", "find_files", {"pattern": "*.txt", "path": "sub"}),
    ]
    write = d.tools.get("write_file")
    assert write is not None and write.preview is not None
    monkeypatch.setattr(Workspace, "resolve", checked_then_swapped)
    results = d.run(calls)
    try:
        preview = write.preview(calls[0].arguments)
    except Exception as e:  # refused: nothing shown
        preview = str(e)
    monkeypatch.undo()
    for r in results:
        assert SECRET not in r.content, r.content
        # Each met the link and was refused; a walk of the folder found nothing it could open.
        assert r.error is not None or r.content.startswith(("no matches", "no files")), (r.name, r.content)
    assert SECRET not in preview
    assert sorted(p.name for p in outside.rglob("*")) == sorted(["x.txt", f"{SECRET}.txt"]), "a write left the root"
    assert (outside / "x.txt").read_text() == SECRET + "\n"


def test_a_file_swapped_for_a_link_before_a_write_is_not_left_writable_by_all(tmp_path: Path) -> None:
    # The mode is copied from the file replaced; a link's own mode is 0o777.
    from localagent.tools.builtin import _write_atomic

    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("x\n")
    (root / "notes.txt").symlink_to(tmp_path / "outside.txt")
    _write_atomic(Workspace(root), root / "notes.txt", "new\n")
    assert not (root / "notes.txt").is_symlink() and (root / "notes.txt").read_text() == "new\n"
    assert (root / "notes.txt").stat().st_mode & 0o002 == 0
    assert (tmp_path / "outside.txt").read_text() == "x\n"
