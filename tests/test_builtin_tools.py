"""read_file and list_dir, called the way the loop calls them: through the dispatcher."""

from pathlib import Path

import pytest

from localagent.builtin_tools import workspace_tools
from localagent.dispatch import Dispatcher
from localagent.messages import ToolCall, ToolResult
from localagent.tools import ToolContext, ToolSet
from localagent.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("".join(f"line {i}\n" for i in range(1, 301)))
    (tmp_path / "src" / "b.py").write_text("b\n")
    (tmp_path / "README.md").write_text("# title\nbody")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tmp_path / "empty").mkdir()
    (tmp_path / "many").mkdir()
    for i in range(30):
        (tmp_path / "many" / f"f{i:02}.txt").write_text("")
    return Workspace(tmp_path)


def call(ws: Workspace, name: str, **arguments: object) -> ToolResult:
    d = Dispatcher(ToolSet(workspace_tools(ws)), ToolContext(ws), max_result_tokens=100_000)
    return d.run([ToolCall("c", name, dict(arguments))])[0]


def test_descriptions_are_written_for_the_model(ws: Workspace) -> None:
    for t in workspace_tools(ws):
        assert "Do not use" in t.description and "Example:" in t.description
        assert "On failure" in t.description
        assert all("description" in p for p in t.parameters["properties"].values())
    read = workspace_tools(ws)[0]
    assert "count lines" in read.description and read.parameters["required"] == ["path"]


def test_read_file_whole_small_file(ws: Workspace) -> None:
    assert call(ws, "read_file", path="README.md").content == "# title\nbody"


def test_read_file_pages_by_lines(ws: Workspace) -> None:
    r = call(ws, "read_file", path="src/main.py")
    lines = r.content.splitlines()
    assert lines[0] == "line 1" and lines[199] == "line 200"
    assert lines[-1] == "[... more lines follow; call read_file with offset=200 to read more]"
    r = call(ws, "read_file", path="src/main.py", offset=200, length=50)
    assert r.content.splitlines()[0] == "line 201"
    r = call(ws, "read_file", path="src/main.py", offset=290)
    assert r.content.splitlines() == [f"line {i}" for i in range(291, 301)]  # no marker at the end


def test_read_file_offset_past_the_end(ws: Workspace) -> None:
    r = call(ws, "read_file", path="src/main.py", offset=1000)
    assert r.error is not None and r.error.argument == "offset"
    assert r.error.message == "offset 1000 is past the end of 'src/main.py' (300 lines)"


def test_read_file_refusals(ws: Workspace) -> None:
    assert call(ws, "read_file", path="src/mian.py").content == (
        "error (not_found): path 'src/mian.py' not found; closest: src/main.py"
    )
    assert call(ws, "read_file", path="src").content == (
        "error (not_a_file): 'src' is a folder, not a file; files in it: b.py, main.py"
    )
    assert call(ws, "read_file", path="logo.png").error.kind == "not_text"  # type: ignore[union-attr]
    assert call(ws, "read_file", path="../etc/passwd").error.kind == "outside_workspace"  # type: ignore[union-attr]
    assert call(ws, "read_file", path="README.md", length=5000).error.kind == "invalid_argument"  # type: ignore[union-attr]


def test_list_dir_root_sorted_folders_first(ws: Workspace) -> None:
    r = call(ws, "list_dir")
    assert r.content.splitlines() == ["empty/", "many/", "src/", "README.md", "logo.png"]
    assert call(ws, "list_dir", path="src").content == "b.py\nmain.py"
    assert call(ws, "list_dir", path="empty").content == "(empty folder)"


def test_list_dir_is_bounded(ws: Workspace) -> None:
    lines = call(ws, "list_dir", path="many", max_entries=10).content.splitlines()
    assert lines[:10] == [f"f{i:02}.txt" for i in range(10)]
    assert lines[10] == (
        "[... 20 more entries not shown; call list_dir with a larger max_entries or on a subfolder]"
    )


def test_list_dir_refusals(ws: Workspace) -> None:
    r = call(ws, "list_dir", path="scr")
    assert r.content == "error (not_found): path 'scr' not found; closest: src/"
    assert call(ws, "list_dir", path="README.md").error.kind == "not_a_dir"  # type: ignore[union-attr]
