"""The workspace tools, called the way the loop calls them: through the dispatcher."""

import os
import sys
from pathlib import Path

import pytest

from localagent.tools.builtin import workspace_tools
from localagent.dispatch import Dispatcher
from localagent.messages import ToolCall, ToolResult
from localagent.tools import ToolContext, ToolSet
from localagent.tools.workspace import Workspace, WorkspaceError


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


_SETS: dict[int, ToolSet] = {}


def call(ws: Workspace, name: str, **arguments: object) -> ToolResult:
    # One tool set per workspace, as in a run: a read is remembered by the writes after it.
    tools = _SETS.get(id(ws)) or _SETS.setdefault(id(ws), ToolSet(workspace_tools(ws, write=True, allow_commands=True)))
    d = Dispatcher(tools, ToolContext(ws), max_result_tokens=100_000, approver=lambda t, c: (True, ""))
    return d.run([ToolCall("c", name, dict(arguments))])[0]


def test_descriptions_are_written_for_the_model(ws: Workspace) -> None:
    # Short, and without example values: the 0.5B model copied them ('VERSION') into its calls.
    for t in workspace_tools(ws, write=True, allow_commands=True):
        assert len(t.description) <= 240 and "Example:" not in t.description, t.name
        assert all("description" in p for p in t.parameters["properties"].values())
    read = workspace_tools(ws)[0]
    assert "line count" in read.description and read.parameters["required"] == ["path"]


def test_read_file_whole_small_file(ws: Workspace) -> None:
    assert call(ws, "read_file", path="README.md").content == "# title\nbody\n[end of README.md: 2 lines]"


def test_read_file_pages_by_lines(ws: Workspace) -> None:
    r = call(ws, "read_file", path="src/main.py")
    lines = r.content.splitlines()
    assert lines[0] == "line 1" and lines[199] == "line 200"
    assert lines[-1] == "[... more lines follow; call read_file with offset=200 to read more]"
    r = call(ws, "read_file", path="src/main.py", offset=200, length=50)
    assert r.content.splitlines()[0] == "line 201"
    r = call(ws, "read_file", path="src/main.py", offset=290)
    assert r.content.splitlines() == [f"line {i}" for i in range(291, 301)] + ["[end of src/main.py: 300 lines]"]


def test_read_file_offset_past_the_end(ws: Workspace) -> None:
    r = call(ws, "read_file", path="src/main.py", offset=1000)
    assert r.error is not None and r.error.argument == "offset"
    assert r.error.message == "offset 1000 is past the end of 'src/main.py' (300 lines)"


def test_read_file_refusals(ws: Workspace) -> None:
    assert call(ws, "read_file", path="src/mian.py").content == (
        "error (not_found): path 'src/mian.py' not found; closest: src/main.py; "
        'to retry: {"name": "read_file", "arguments": {"path": "src/main.py"}}'
    )
    assert call(ws, "read_file", path="src").content == (
        "error (not_a_file): 'src' is a folder, not a file; files in it: src/b.py, src/main.py; "
        'to retry: {"name": "read_file", "arguments": {"path": "src/b.py"}}'
    )
    assert call(ws, "read_file", path="logo.png").error.kind == "not_text"  # type: ignore[union-attr]
    assert call(ws, "read_file", path="../etc/passwd").error.kind == "outside_workspace"  # type: ignore[union-attr]
    # A bound past the most is taken as the most: the 0.5B model sent length=200000 three times.
    assert call(ws, "read_file", path="README.md", length=200_000).content.endswith("[end of README.md: 2 lines]")


def test_list_dir_root_sorted_folders_first(ws: Workspace) -> None:
    r = call(ws, "list_dir")
    assert r.content.splitlines() == ["empty/", "many/", "src/", "README.md", "logo.png", "[3 folders, 2 files]"]
    assert call(ws, "list_dir", path="src").content == "b.py\nmain.py\n[0 folders, 2 files]"
    assert call(ws, "list_dir", path="empty").content == "(empty folder)"


def test_list_dir_is_bounded(ws: Workspace) -> None:
    lines = call(ws, "list_dir", path="many", max_entries=10).content.splitlines()
    assert lines[:10] == [f"f{i:02}.txt" for i in range(10)]
    assert lines[10] == (
        "[... 20 more entries not shown; call list_dir with a larger max_entries or on a subfolder]"
    )


def test_list_dir_refusals(ws: Workspace) -> None:
    r = call(ws, "list_dir", path="scr")
    assert r.content == (
        "error (not_found): path 'scr' not found; closest: src/; "
        'to retry: {"name": "list_dir", "arguments": {"path": "src"}}'
    )
    assert call(ws, "list_dir", path="README.md").error.kind == "not_a_dir"  # type: ignore[union-attr]


def test_tool_sets_are_small_and_declare_irreversibility(ws: Workspace) -> None:
    names = lambda **kw: [t.name for t in workspace_tools(ws, **kw)]  # noqa: E731
    assert names(write=False) == ["read_file", "list_dir", "search", "find_files", "calculate"]
    assert names() == ["read_file", "list_dir", "search", "find_files", "calculate", "write_file", "edit_file"]
    assert names(write=True, allow_commands=True)[-1] == "run_command"
    for t in workspace_tools(ws, write=True, allow_commands=True):
        assert t.irreversible == (t.name in ("write_file", "edit_file", "run_command")), t.name
        assert (t.preview is not None) == t.irreversible


# ── search ──


@pytest.fixture
def code(tmp_path: Path) -> Workspace:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("VERSION = '1.0'\ndef main():\n    return version()\n")
    (tmp_path / "src" / "b.py").write_text("x = 1\n" + "y = 'version " + "z" * 500 + "'\n")
    (tmp_path / "README.md").write_text("See the Version notes.\n")
    (tmp_path / "blob.bin").write_bytes(b"version\x00\x01")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("version = 9\n")
    return Workspace(tmp_path)


def test_search_is_case_insensitive_unless_the_pattern_has_capitals(code: Workspace) -> None:
    lines = call(code, "search", pattern="version").content.splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["README.md", "src/a.py", "src/a.py", "src/b.py", "[4 matches in 3 files]"]
    assert lines[1] == "src/a.py:1: VERSION = '1.0'"
    assert call(code, "search", pattern="VERSION").content == "src/a.py:1: VERSION = '1.0'\n[1 match in 1 file]"


def test_search_skips_binary_files_and_vcs_folders_and_bounds_lines(code: Workspace) -> None:
    text = call(code, "search", pattern="version").content
    assert "blob.bin" not in text and ".git" not in text
    long_hit = [ln for ln in text.splitlines() if ln.startswith("src/b.py")][0]
    assert len(long_hit) <= len("src/b.py:2: ") + 200 and long_hit.endswith("…")


def test_search_in_a_folder_or_a_file_and_with_a_regex(code: Workspace) -> None:
    assert call(code, "search", pattern="main", path="src").content == "src/a.py:2: def main():\n[1 match in 1 file]"
    assert call(code, "search", pattern="x", path="src/b.py").content.startswith("src/b.py:1: x = 1")
    r = call(code, "search", pattern=r"def \w+\(", regex=True)
    assert r.content == "src/a.py:2: def main():\n[1 match in 1 file]"
    assert call(code, "search", pattern="def \\w+\\(").content.startswith("no matches")  # literal by default


def test_search_is_bounded(code: Workspace) -> None:
    lines = call(code, "search", pattern="version", max_results=2).content.splitlines()
    assert len(lines) == 3
    assert lines[-1] == "[... more matches not shown; narrow the pattern or path, or raise max_results]"


def test_search_failures(code: Workspace) -> None:
    assert call(code, "search", pattern="nothing here").content == (
        "no matches for 'nothing here' in '.' (3 text files searched)"
    )
    r = call(code, "search", pattern="(", regex=True)
    assert r.error is not None and r.error.kind == "invalid_argument" and r.error.argument == "pattern"
    assert call(code, "search", pattern="x", path="../").error.kind == "outside_workspace"  # type: ignore[union-attr]
    assert call(code, "search", pattern="x", path="sr").content.endswith(
        'closest: src/; to retry: {"name": "search", "arguments": {"pattern": "x", "path": "src"}}'
    )


def test_search_never_reads_through_a_link_out(code: Workspace, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("version SECRET\n")
    (code.root / "link.txt").symlink_to(outside / "secret.txt")
    (code.root / "linkdir").symlink_to(outside)
    assert "SECRET" not in call(code, "search", pattern="version").content


# ── write_file ──


def test_write_file_creates_with_folders_and_replaces(ws: Workspace) -> None:
    r = call(ws, "write_file", path="notes/todo.md", content="- tests\n")
    assert r.content == "created 'notes/todo.md' (1 line now)"
    assert (ws.root / "notes" / "todo.md").read_text() == "- tests\n"
    (ws.root / "README.md").chmod(0o640)
    call(ws, "read_file", path="README.md")  # replacing a file needs it read first
    assert call(ws, "write_file", path="README.md", content="new").content == "replaced 'README.md' (1 line now)"
    assert (ws.root / "README.md").read_text() == "new"
    assert (ws.root / "README.md").stat().st_mode & 0o777 == 0o640  # mode kept
    assert not [p for p in ws.root.iterdir() if p.name.endswith(".tmp")]


def test_write_file_replaces_a_hard_link_instead_of_writing_through_it(
    ws: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "victim.txt"
    outside.write_text("keep me\n")
    os.link(outside, ws.root / "hard.txt")
    call(ws, "read_file", path="hard.txt")
    assert call(ws, "write_file", path="hard.txt", content="x").error is None
    assert outside.read_text() == "keep me\n" and (ws.root / "hard.txt").read_text() == "x"


def test_write_file_refusals(ws: Workspace) -> None:
    def kind(**a: object) -> str | None:
        r = call(ws, "write_file", **a)
        return r.error.kind if r.error else None

    assert kind(path="src", content="x") == "not_a_file"
    assert kind(path="logo.png", content="x") == "not_text"
    assert kind(path="README.md/x", content="x") == "not_a_dir"
    assert kind(path=".git/hooks/pre-commit", content="x") == "invalid_path"
    assert kind(path="../x.txt", content="x") == "outside_workspace"
    assert kind(path="big.txt", content="x" * 200_001) == "invalid_argument"
    assert not (ws.root / ".git").exists() and not (ws.root / "big.txt").exists()


def test_write_file_without_approval_writes_nothing(ws: Workspace) -> None:
    d = Dispatcher(ToolSet(workspace_tools(ws)), ToolContext(ws))  # no approver
    r = d.run([ToolCall("c", "write_file", {"path": "x.txt", "content": "x"})])[0]
    assert r.error is not None and r.error.kind == "denied"
    assert not (ws.root / "x.txt").exists()


def test_write_preview_is_the_diff_that_will_be_written(ws: Workspace) -> None:
    t = ToolSet(workspace_tools(ws, write=True)).get("write_file")
    assert t is not None and t.preview is not None
    assert t.preview({"path": "README.md", "content": "# title\nbody\nmore\n"}) == (
        "--- a/README.md\n+++ b/README.md\n@@ -1,2 +1,3 @@\n # title\n-body\n"
        "\\ No newline at end of file\n+body\n+more\n"
    )
    assert t.preview({"path": "new.txt", "content": "a\n"}) == "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+a\n"
    with pytest.raises(WorkspaceError):
        t.preview({"path": "../x", "content": ""})


# ── edit_file ──


def test_edit_file_replaces_a_unique_span(ws: Workspace) -> None:
    r = call(ws, "edit_file", path="src/main.py", old="line 7\n", new="seven\n")
    assert r.content == "edited 'src/main.py' at line 7"
    text = (ws.root / "src" / "main.py").read_text()
    assert "seven\nline 8\n" in text and "line 7\n" not in text
    assert call(ws, "edit_file", path="src/b.py", old="b\n", new="").content == "edited 'src/b.py' at line 1"
    assert (ws.root / "src" / "b.py").read_text() == ""


def test_edit_file_says_how_to_fix_the_call(ws: Workspace) -> None:
    def err(**a: object) -> str:
        r = call(ws, "edit_file", **a)
        assert r.error is not None
        return r.content

    assert err(path="src/main.py", old="line 1", new="x") == (
        "error (not_unique): old text occurs 111 times (lines 1, 10, 11, 12, 13, ...); "
        "include neighbouring lines to make it unique"
    )
    assert err(path="src/main.py", old="lime 42\n", new="x") == (
        "error (not_found): old text not found; closest line 42: 'line 42'; read the file and copy the text exactly"
    )
    assert err(path="README.md", old="body", new="body").startswith("error (no_change): old and new are the same text")
    assert err(path="nope.txt", old="a", new="b").startswith("error (not_found): path 'nope.txt' not found")
    assert (ws.root / "README.md").read_text() == "# title\nbody"  # untouched


def test_edit_file_finds_old_text_whatever_its_spacing(ws: Workspace) -> None:
    # A small model writes 'port=8080' for 'port = 8080': the change it means is made, the
    # file's own spacing kept around it.
    (ws.root / "app.ini").write_text('name = "x"\nport = 8080\ndebug = false\n')
    assert call(ws, "edit_file", path="app.ini", old="port=8080", new="port=9090").content == "edited 'app.ini' at line 2"
    assert (ws.root / "app.ini").read_text() == 'name = "x"\nport = 9090\ndebug = false\n'
    assert call(ws, "edit_file", path="src/main.py", old="line  3\nline 4", new="line 3\nfour").error is None
    assert "line 3\nfour\nline 5" in (ws.root / "src" / "main.py").read_text()


def test_edit_file_matches_lf_text_in_a_crlf_file(ws: Workspace) -> None:
    (ws.root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    assert call(ws, "edit_file", path="win.txt", old="one\ntwo", new="1\n2").error is None
    assert (ws.root / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_preview_shows_the_change_or_why_it_will_fail(ws: Workspace) -> None:
    t = ToolSet(workspace_tools(ws, write=True)).get("edit_file")
    assert t is not None and t.preview is not None
    diff = t.preview({"path": "README.md", "old": "body", "new": "BODY"})
    assert "-body\n" in diff and "+BODY\n" in diff and diff.startswith("--- a/README.md\n+++ b/README.md\n")
    with pytest.raises(WorkspaceError) as e:
        t.preview({"path": "README.md", "old": "nope", "new": "x"})
    assert e.value.info.kind == "not_found"


# ── run_command ──


def test_run_command_is_off_unless_enabled(ws: Workspace) -> None:
    assert "run_command" not in [t.name for t in workspace_tools(ws, write=True)]


def test_run_command_runs_in_the_root_without_a_shell(ws: Workspace) -> None:
    r = call(ws, "run_command", command=f"{sys.executable} -c 'import os; print(os.getcwd())'")
    assert r.content == f"exit code 0\n{ws.root}\n"
    r = call(ws, "run_command", command="echo a | wc > out.txt && ls *")
    assert r.content == "exit code 0\na | wc > out.txt && ls *\n"  # all plain words
    assert not (ws.root / "out.txt").exists()
    r = call(ws, "run_command", command=f"{sys.executable} -c 'import sys; sys.exit(3)'")
    assert r.error is None and r.content == "exit code 3 (no output)"


def test_run_command_has_no_input_and_no_terminal(ws: Workspace) -> None:
    r = call(ws, "run_command", command=f"{sys.executable} -c 'import sys; print(repr(sys.stdin.read()))'")
    assert r.content == "exit code 0\n''\n"
    r = call(ws, "run_command", command=f"{sys.executable} -c 'open(\"/dev/tty\")'")
    assert r.content.startswith("exit code 1\n") and "/dev/tty" in r.content


def test_run_command_output_is_bounded(ws: Workspace) -> None:
    script = "import sys; sys.stdout.write('H' * 10000 + 'M' * 1000000 + 'T' * 10000)"
    r = call(ws, "run_command", command=f"{sys.executable} -c \"{script}\"")
    body = r.content.removeprefix("exit code 0\n")
    head, marker, tail = body.split("\n")
    assert head == "H" * 8000 and tail.endswith("T" * 8000) and len(tail) == 8000
    assert marker == f"[... {1020000 - 16000} bytes of output not shown ...]"


def test_run_command_failures(ws: Workspace) -> None:
    r = call(ws, "run_command", command="no-such-program-here --x")
    assert r.content == "error (not_found): program 'no-such-program-here' not found; give a program on PATH or a path to one"
    assert call(ws, "run_command", command="echo 'open").error.kind == "invalid_argument"  # type: ignore[union-attr]
    r = call(ws, "run_command", command=f"{sys.executable} -c 'import time; time.sleep(30)'", timeout=1)
    assert r.error is not None and r.error.kind == "timeout" and r.seconds < 10


def test_run_command_preview_is_the_exact_command(ws: Workspace) -> None:
    t = ToolSet(workspace_tools(ws, allow_commands=True)).get("run_command")
    assert t is not None and t.preview is not None
    first, plain = t.preview({"command": "rm -rf 'my dir'", "timeout": 5}).splitlines()
    assert first == "rm -rf 'my dir'  (timeout 5 s)"
    assert f"runs with your rights and is NOT confined to {ws.root}" in plain  # no "in the root"


def test_the_corrected_call_is_offered_only_for_a_wrong_value(ws: Workspace) -> None:
    wrong_value = call(ws, "read_file", path="src/mian.py", offset=2)
    assert wrong_value.error is not None
    # The other arguments are kept: the model can send the call back as it is.
    assert wrong_value.error.retry == {"name": "read_file", "arguments": {"path": "src/main.py", "offset": 2}}
    wrong_name = call(ws, "read_file", pth="src/main.py")
    assert wrong_name.error is not None and wrong_name.error.kind == "invalid_argument"
    assert wrong_name.error.retry is None and "to retry" not in wrong_name.content
    nothing_close = call(ws, "read_file", path="zzzzzzzz.qqq")
    assert nothing_close.error is not None and nothing_close.error.retry is None
