"""Validation messages for the model, and each semantic check."""

from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from localagent.errors import ConfigError, ToolErrorInfo
from localagent.tools import ToolContext, tool
from localagent.validate import OneOf, WorkspacePath, closest_names, validate_arguments
from localagent.tools.workspace import Workspace


class Range(BaseModel):
    start: int
    end: int


@tool
def fetch(
    path: str,
    count: Annotated[int, Field(ge=1, le=100)] = 10,
    mode: Literal["head", "tail"] = "head",
    tags: Annotated[list[str], Field(max_length=2)] = [],
    span: Range | None = None,
    name: Annotated[str, Field(max_length=5)] = "x",
) -> str:
    """Fetch."""
    return path


def error(arguments: object, t=fetch, ctx: ToolContext | None = None) -> ToolErrorInfo:  # type: ignore[no-untyped-def]
    out = validate_arguments(t, arguments, ctx or ToolContext())
    assert isinstance(out, ToolErrorInfo), out
    assert out.kind in ("invalid_argument", "unknown_value") or out.kind
    return out


def test_valid_arguments_come_back_typed_with_defaults() -> None:
    out = validate_arguments(fetch, {"path": "a", "span": {"start": 1, "end": 2}}, ToolContext())
    assert isinstance(out, dict)
    assert out["count"] == 10 and out["mode"] == "head"
    assert out["span"] == Range(start=1, end=2)


def test_lax_mode_accepts_lossless_conversions_only() -> None:
    out = validate_arguments(fetch, {"path": "a", "count": "7"}, ToolContext())
    assert isinstance(out, dict) and out["count"] == 7
    assert error({"path": "a", "count": "7.5"}).message == "argument 'count' must be an integer, got \"7.5\""
    assert error({"path": 5}).message == "argument 'path' must be a string, got 5"


def test_bound_violation() -> None:
    e = error({"path": "a", "count": 500})
    assert (e.kind, e.argument) == ("invalid_argument", "count")
    assert e.message == "argument 'count' must be <= 100, got 500"
    assert error({"path": "a", "count": 0}).message == "argument 'count' must be >= 1, got 0"


def test_missing_required() -> None:
    e = error({})
    assert (e.message, e.argument) == ("argument 'path' is required", "path")


def test_unexpected_argument_lists_valid_ones_closest_first() -> None:
    e = error({"path": "a", "cuont": 3})
    assert e.message == "unexpected argument 'cuont'; valid arguments: count, path, mode, tags, span, name"
    assert e.argument == "cuont"


def test_several_errors_share_one_line() -> None:
    e = error({"pth": "a"})
    assert e.message == (
        "argument 'path' is required; unexpected argument 'pth'; "
        "valid arguments: path, count, mode, tags, span, name"
    )
    assert len(e.detail["errors"]) == 2


def test_literal_error_names_the_choices_and_the_closest() -> None:
    e = error({"path": "a", "mode": "tial"})
    assert e.message == "argument 'mode' must be 'head' or 'tail', got \"tial\""
    assert e.alternatives == ["tail"]
    assert e.render().endswith("; closest: tail")


def test_lengths_and_nested_locations() -> None:
    assert error({"path": "a", "tags": ["a", "b", "c"]}).message == (
        "argument 'tags' must have at most 2 items, got [\"a\", \"b\", \"c\"]"
    )
    assert "at most 5 characters" in error({"path": "a", "name": "toolong"}).message
    e = error({"path": "a", "span": {"start": "x"}})
    assert "argument 'span.start' must be an integer" in e.message
    assert "argument 'span.end' is required" in e.message
    assert error({"path": "a", "tags": ["ok", 3]}).message.startswith("argument 'tags[1]' must be a string")


def test_arguments_must_be_an_object() -> None:
    assert error(["a"]).message == "arguments must be a JSON object, got a list"


def test_custom_validator_message_is_kept() -> None:
    from pydantic import AfterValidator

    def even(v: int) -> int:
        if v % 2:
            raise ValueError("must be even")
        return v

    @tool
    def pair(n: Annotated[int, AfterValidator(even)]) -> int:
        """Pair."""
        return n

    assert error({"n": 3}, pair).message == "argument 'n': must be even, got 3"


# --- semantic checks -------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("x\n" * 50)
    (tmp_path / "img.png").write_bytes(b"\x89PNG\x00\x00")
    return Workspace(tmp_path)


@tool
def read(
    path: Annotated[str, WorkspacePath(kind="file", text=True, max_bytes=150)],
    into: Annotated[str | None, WorkspacePath(kind="dir")] = None,
) -> str:
    """Read."""
    return path


def test_workspace_path_accepts_a_good_file(ws: Workspace) -> None:
    out = validate_arguments(read, {"path": "src/main.py"}, ToolContext(ws))
    assert out == {"path": "src/main.py", "into": None}


def test_workspace_path_not_found_names_argument_and_closest(ws: Workspace) -> None:
    e = error({"path": "src/mian.py"}, read, ToolContext(ws))
    assert (e.kind, e.argument) == ("not_found", "path")
    assert e.message == "path 'src/mian.py' not found; closest: src/main.py"


def test_workspace_path_kind_text_and_size(ws: Workspace) -> None:
    ctx = ToolContext(ws)
    assert error({"path": "src"}, read, ctx).kind == "not_a_file"
    assert error({"path": "src/main.py", "into": "src/main.py"}, read, ctx).argument == "into"
    e = error({"path": "img.png"}, read, ctx)
    assert (e.kind, e.message) == ("not_text", "'img.png' is a binary file, not text; it cannot be read as text")
    (ws.root / "big.txt").write_text("y" * 200)
    assert error({"path": "big.txt"}, read, ctx).message == "file 'big.txt' is too large (200 bytes; limit 150)"
    assert error({"path": "../x"}, read, ctx).kind == "outside_workspace"


def test_workspace_path_without_a_workspace_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        validate_arguments(read, {"path": "a"}, ToolContext())


def test_workspace_path_bound_workspace_wins(ws: Workspace) -> None:
    @tool
    def r(path: Annotated[str, WorkspacePath(kind="file", workspace=ws)]) -> str:
        """R."""
        return path

    assert validate_arguments(r, {"path": "src/main.py"}, ToolContext()) == {"path": "src/main.py"}


@tool
def get_key(key: Annotated[str, OneOf(lambda ctx: ctx.state.get("keys", []), what="key")]) -> str:
    """Get."""
    return key


def test_one_of_live_values() -> None:
    ctx = ToolContext(state={"keys": ["alpha", "beta", "gamma"]})
    assert validate_arguments(get_key, {"key": "beta"}, ctx) == {"key": "beta"}
    e = error({"key": "alpah"}, get_key, ctx)
    assert (e.kind, e.argument) == ("unknown_value", "key")
    assert e.message == "unknown key 'alpah'; closest: alpha"
    e = error({"key": "zzz"}, get_key, ctx)
    assert e.message == "unknown key 'zzz'; known keys: alpha, beta, gamma"
    ctx.state["keys"].append("zzz")  # live: the check sees the new value
    assert validate_arguments(get_key, {"key": "zzz"}, ctx) == {"key": "zzz"}
    assert error({"key": "a"}, get_key, ToolContext()).message == "unknown key 'a'; there are none yet"


def test_one_of_static_values() -> None:
    @tool
    def pick(n: Annotated[int, OneOf([1, 2, 3], what="id")]) -> int:
        """Pick."""
        return n

    assert error({"n": 4}, pick).message == "unknown id '4'; known ids: 1, 2, 3"


def test_closest_names() -> None:
    assert closest_names("READ_FILE", ["list_dir", "read_file"]) == ["read_file"]
    assert closest_names("qqq", ["list_dir", "read_file"]) == []


def test_live_parameters_narrow_paths_to_what_exists(tmp_path: Path) -> None:
    from localagent.tools.builtin import workspace_tools
    from localagent.tools import ToolSet
    from localagent.validate import live_parameters

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\x00\x00\x01")
    ws = Workspace(tmp_path)
    tools = ToolSet(workspace_tools(ws, write=False))
    ctx = ToolContext(workspace=ws)

    def enum(tool: str, arg: str = "path") -> list[str] | None:
        t = tools.get(tool)
        assert t is not None
        return live_parameters(t, ctx)["properties"][arg].get("enum")

    assert enum("read_file") == ["notes.txt", "src/main.py"]  # text files only
    assert enum("list_dir") == [".", "src"]  # folders only
    assert enum("search") == [".", "src", "notes.txt", "src/main.py"]  # either kind
    assert enum("search", "pattern") is None  # not a path: left as it is
    # Too many to list: the argument keeps its plain schema and the validator checks it.
    for i in range(201):
        (tmp_path / f"f{i}.txt").write_text("x\n")
    assert enum("read_file") is None and enum("search") is None


def test_an_argument_holding_a_result_envelope_is_refused(tmp_path: Path) -> None:
    # The 1.5B model wrote a settings file as the read's result, framing included.
    from localagent.tools.builtin import workspace_tools
    from localagent.tools.workspace import Workspace

    write = next(t for t in workspace_tools(Workspace(tmp_path)) if t.name == "write_file")
    err = validate_arguments(write, {"path": "a.toml", "content": "<tool_response>\nport = 1\n"}, ToolContext(workspace=Workspace(tmp_path), state={}))
    assert isinstance(err, ToolErrorInfo) and err.argument == "content" and "<tool_response>" in err.render()
    ok = validate_arguments(write, {"path": "a.toml", "content": "port = 1\n"}, ToolContext(workspace=Workspace(tmp_path), state={}))
    assert not isinstance(ok, ToolErrorInfo)
