"""Schema derivation, the decorator's options, ToolSet and tools files."""

import asyncio
import functools
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from enum import Enum
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from localagent.dispatch import Dispatcher
from localagent.errors import ConfigError
from localagent.messages import ToolCall
from localagent.tools import Tool, ToolContext, ToolSet, load_tools_file, make_tool, split_docstring, tool


class Point(BaseModel):
    x: int
    y: int = 0


class Node(BaseModel):
    name: str
    children: list["Node"] = []


class Color(Enum):
    RED = "red"
    BLUE = "blue"


@tool
def search(
    query: Annotated[str, Field(description="What to look for.")],
    limit: int = 10,
    mode: Literal["fast", "exact"] = "fast",
) -> str:
    """Search the index.

    Use it before reading files.

    Args:
        query: ignored, the Field description wins.
        limit: How many hits to return
            at most.

    Returns:
        Matching lines.
    """
    return f"{query}:{limit}:{mode}"


def test_bare_decorator_builds_a_tool_that_is_still_callable() -> None:
    assert isinstance(search, Tool)
    assert search.name == "search"
    assert search("q", limit=2) == "q:2:fast"
    assert search.irreversible is False and search.timeout == 30.0 and search.max_retries == 3


def test_description_keeps_summary_body_and_other_sections_but_not_args() -> None:
    assert search.description.startswith("Search the index.\n\nUse it before reading files.")
    assert "Returns:" in search.description
    assert "Args" not in search.description and "at most" not in search.description


def test_schema_descriptions_defaults_required_enums_and_no_titles() -> None:
    p = search.parameters
    assert p["type"] == "object" and p["additionalProperties"] is False
    assert p["required"] == ["query"]
    assert p["properties"]["query"]["description"] == "What to look for."  # Field beats Args
    assert p["properties"]["limit"] == {
        "type": "integer",
        "default": 10,
        "description": "How many hits to return at most.",
    }
    assert p["properties"]["mode"]["enum"] == ["fast", "exact"]
    assert "title" not in repr(p)


def test_options_and_openai_schema() -> None:
    @tool(name="rm", irreversible=True, timeout=None, max_retries=0)
    def remove(path: str) -> str:
        """Delete a file."""
        return path

    assert (remove.name, remove.irreversible, remove.timeout, remove.max_retries) == ("rm", True, None, 0)
    s = remove.openai_schema()
    assert s["type"] == "function"
    assert s["function"]["name"] == "rm"
    assert s["function"]["description"] == "Delete a file."
    assert s["function"]["parameters"]["properties"] == {"path": {"type": "string"}}


def test_nested_models_lists_and_enums_are_inlined() -> None:
    @tool
    def plot(points: list[Point], color: Color = Color.RED, origin: Point | None = None) -> str:
        """Plot points."""
        return ""

    props = plot.parameters["properties"]
    item = props["points"]["items"]
    assert item["type"] == "object" and item["required"] == ["x"]
    assert item["properties"]["y"] == {"type": "integer", "default": 0}
    assert props["color"]["enum"] == ["red", "blue"]
    assert props["origin"]["anyOf"][0]["properties"]["x"] == {"type": "integer"}
    assert "$defs" not in plot.parameters and "title" not in repr(plot.parameters)


def test_recursive_models_keep_their_definitions() -> None:
    @tool
    def tree(root: Node) -> str:
        """Walk a tree."""
        return ""

    p = tree.parameters
    assert p["properties"]["root"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "Node" in p["$defs"]


def test_a_property_called_title_survives_cleaning() -> None:
    @tool
    def note(title: str, body: str = "") -> str:
        """Write a note."""
        return title

    assert set(note.parameters["properties"]) == {"title", "body"}


def test_context_parameter_is_not_in_the_schema() -> None:
    @tool
    def who(name: str, ctx: ToolContext) -> str:
        """Greet."""
        return name

    assert who.context_param == "ctx"
    assert list(who.parameters["properties"]) == ["name"]
    assert "ctx" not in who.args_model.model_fields


def test_a_context_without_a_workspace_says_so_to_a_tool_that_needs_one(tmp_path: Path) -> None:
    from localagent.tools.workspace import Workspace

    assert ToolContext(Workspace(tmp_path)).ws.root == Workspace(tmp_path).root
    with pytest.raises(ConfigError, match="has none"):
        ToolContext().ws


def test_args_model_validates_and_forbids_extras() -> None:
    assert search.args_model.model_validate({"query": "a"}).limit == 10
    with pytest.raises(Exception):
        search.args_model.model_validate({"query": "a", "nope": 1})


def test_split_docstring_handles_typed_entries_and_continuations() -> None:
    doc = textwrap.dedent(
        """\
        Do it.

        Arguments:
            path (str): Where.
            n (int, optional): How many,
                more text.
        Raises:
            ValueError: never.
        """
    )
    summary, args = split_docstring(doc)
    assert args == {"path": "Where.", "n": "How many, more text."}
    assert summary == "Do it.\n\nRaises:\n    ValueError: never."


def test_what_can_run_is_accepted_unannotated_variadic_and_positional_only() -> None:
    t = tool(name="f")(lambda x: x)
    assert t.parameters["properties"] == {"x": {}} and t.fn(x=[1]) == [1]  # any JSON value

    @tool
    def f(a: int, /, b: int = 2, *args: int, **kwargs: int) -> int:
        """Add."""
        return a + b

    assert list(f.parameters["properties"]) == ["a", "b"]  # *args, **kwargs: nothing to name
    assert f.fn(a=1, b=5) == 6 and f.fn(a=1) == 3


def test_async_tools_and_awaitables_are_awaited_generators_collected() -> None:
    @tool
    async def fetch(n: int) -> str:
        """Fetch."""
        await asyncio.sleep(0)
        return f"got {n}"

    @tool
    def numbers(n: int) -> Iterator[int]:
        """Count."""
        yield from range(n)

    @tool
    async def stream(n: int) -> AsyncIterator[int]:
        """Count, asynchronously."""
        for i in range(n):
            yield i

    assert fetch.fn(n=3) == "got 3" and numbers.fn(n=3) == [0, 1, 2] and stream.fn(n=2) == [0, 1]
    assert asyncio.run(fetch(4)) == "got 4"  # called directly it is still the coroutine function

    async def later(x: int) -> int:
        return x * 2

    part = tool(functools.partial(later))
    assert part.name == "later" and part.fn(x=2) == 4


def test_an_async_tool_runs_through_the_dispatcher() -> None:
    @tool
    async def slow_echo(text: str) -> dict[str, str]:
        """Echo."""
        await asyncio.sleep(0.01)
        return {"echo": text}

    [r] = Dispatcher(ToolSet([slow_echo]), ToolContext()).run([ToolCall("c1", "slow_echo", {"text": "hi"})])
    assert r.error is None and r.content == '{"echo": "hi"}'


def test_an_async_tool_past_its_timeout_is_abandoned_like_any_tool() -> None:
    @tool(timeout=0.3)
    async def stuck(seconds: float) -> str:
        """Sleep."""
        await asyncio.sleep(seconds)
        return "woke"

    started = time.monotonic()
    [r] = Dispatcher(ToolSet([stuck]), ToolContext()).run([ToolCall("c1", "stuck", {"seconds": 5})])
    assert time.monotonic() - started < 2
    assert r.error is not None and r.error.kind == "timeout"


def test_a_callable_object_is_a_tool_named_after_its_class() -> None:
    class Counter:
        """Count calls."""

        def __call__(self, step: int = 1) -> int:
            return step

    t = tool(Counter())
    assert t.name == "Counter" and t.parameters["properties"]["step"]["type"] == "integer"
    with pytest.raises(ConfigError, match="has no name"):
        make_tool(lambda: 1)


def test_irreversible_not_stated_is_remembered() -> None:
    @tool
    def plain(x: int) -> int:
        """X."""
        return x

    @tool(irreversible=False)
    def harmless(x: int) -> int:
        """X."""
        return x

    assert (plain.irreversible, plain.irreversible_stated) == (False, False)
    assert (harmless.irreversible, harmless.irreversible_stated) == (False, True)


def test_toolset_is_ordered_and_rejects_duplicates() -> None:
    @tool(name="search")
    def other(q: str) -> str:
        """Other."""
        return q

    @tool
    def b(q: str) -> str:
        """B."""
        return q

    ts = ToolSet([search, b])
    assert ts.names() == ["search", "b"]
    assert ts.get("b") is b and ts.get("zzz") is None
    assert "search" in ts and len(ts) == 2
    assert [s["function"]["name"] for s in ts.schemas()] == ["search", "b"]
    with pytest.raises(ConfigError, match="two tools are named 'search'"):
        ts.add(other)


def test_load_tools_file(tmp_path: Path) -> None:
    f = tmp_path / "mytools.py"
    f.write_text(
        textwrap.dedent(
            """\
            from __future__ import annotations
            from localagent.tools import tool

            @tool
            def shout(text: str) -> str:
                '''Upper-case text.'''
                return text.upper()

            @tool(irreversible=True)
            def launch(target: str) -> str:
                '''Launch.'''
                return target

            helper = 3
            """
        )
    )
    tools = load_tools_file(f)
    assert [t.name for t in tools] == ["shout", "launch"]
    assert tools[0]("a") == "A" and tools[1].irreversible
    assert tools[0].irreversible  # from a file and silent about it: approval asked


def test_tools_file_with_definitions_and_reversible_tools(tmp_path: Path) -> None:
    f = tmp_path / "defs.py"
    f.write_text(
        textwrap.dedent(
            """\
            from localagent.tools import tool

            WEATHER = {"type": "function", "function": {"name": "weather", "description": "Weather in a city.",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                      "required": ["city"]}}}

            @tool(schema={"name": "add", "parameters": {"type": "object",
                          "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}},
                  irreversible=False)
            def add(a, b=0):
                return a + b

            async def weather(city):
                return city + ": sunny"

            TOOLS = [(WEATHER, weather), add]
            """
        )
    )
    add, weather = load_tools_file(f)
    assert add.name == "add" and not add.irreversible  # stated reversible, counted once
    assert weather.irreversible and weather.description == "Weather in a city."
    assert weather.fn(city="Oslo") == "Oslo: sunny"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(:\n", "line 1: syntax error"),
        ("import no_such_module_xyz\n", "ModuleNotFoundError: No module named 'no_such_module_xyz'"),
        ("x = 1\n", "defines no tools"),
        ("TOOLS = [({'name': 'f'}, 3)]\n", "TOOLS[0]: tool 'f': 3 is not callable"),
        ("TOOLS = [1]\n", "TOOLS[0] is neither a tool nor"),
        ("raise RuntimeError('boom\\nsecond line')\n", "RuntimeError: boom"),
    ],
)
def test_bad_tools_file_is_one_line_config_error(tmp_path: Path, source: str, message: str) -> None:
    f = tmp_path / "bad.py"
    f.write_text(source)
    with pytest.raises(ConfigError) as e:
        load_tools_file(f)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_missing_tools_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_tools_file(tmp_path / "nope.py")


def test_a_folder_given_as_tools_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder; give a .py file"):
        load_tools_file(tmp_path)
