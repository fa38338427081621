"""The README's architecture section lists the package tree exactly as it is, one line per
file (``__init__.py`` included) and per folder, indented two spaces a level; and no function
of the package is longer than one can read at once."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "localagent"
MAX_FUNCTION_LINES = 60


def _tree_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How a step works", 1)[1].split("\n## ", 1)[0]
    [block] = [b for b in section.split("```") if b.lstrip("\n").startswith("localagent/")]
    return block


def _listed(block: str) -> tuple[set[str], set[str], set[str]]:
    """The package's files and folders the tree names, as paths in the package
    (``tools/base.py``, ``evaluation/tasks``), and the entries after the package
    (``grammars/``, ``tests/``)."""
    lines = block.strip("\n").splitlines()
    files: set[str] = set()
    folders: set[str] = set()
    outside: set[str] = set()
    stack: list[str] = []
    for line in lines[1:]:
        name = line.split()[0]
        if not line.startswith(" "):
            outside.add(name)
            continue
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0 and indent // 2 <= len(stack) + 1, f"misindented: {line!r}"
        del stack[indent // 2 - 1:]
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
            folders.add("/".join(stack))
        else:
            files.add("/".join(stack + [name]))
    return files, folders, outside


def test_the_readme_tree_matches_the_package() -> None:
    files, folders, outside = _listed(_tree_block())
    on_disk = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")}
    assert sorted(on_disk - files) == [], "not in the README's tree (or not under its folder)"
    assert sorted(files - on_disk) == [], "in the README's tree, not in the package"
    dirs = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*") if p.is_dir() and "__pycache__" not in p.parts}
    assert folders == dirs
    assert sorted(p for p in outside if not (ROOT / p).exists()) == []


def test_no_function_is_longer_than_60_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if (lines := (node.end_lineno or start) - start + 1) > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines} lines")
    assert long == []
