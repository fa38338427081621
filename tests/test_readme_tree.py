"""The README's module list names every module of the package where it is, and only modules
that exist; and no function of the package is longer than one can read at once."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "localagent"
MAX_FUNCTION_LINES = 60


def _tree_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How a step works", 1)[1].split("\n## ", 1)[0]
    [block] = [b for b in section.split("```") if b.lstrip("\n").startswith("localagent/")]
    return block


def _entries(block: str) -> list[str]:
    """The package's entries (``name  what it is``), each with its continuation lines."""
    lines = block.strip("\n").splitlines()
    entries: list[str] = []
    for line in lines[1:]:
        if not line.startswith(" "):
            break  # past the package: grammars/, models/, ...
        if line.startswith("  ") and not line.startswith("   "):
            entries.append(line.strip())
        else:
            entries[-1] += " " + line.strip()
    return entries


def _named(block: str) -> tuple[set[str], set[str]]:
    """The modules the list names, as paths in the package (``tools/base.py``; a folder's own
    are in its entry, a subfolder's in ``sub/ (...)``), and the other paths it names."""
    modules: set[str] = set()
    others: set[str] = set()
    for entry in _entries(block):
        head, _, text = entry.partition(" ")
        if not head.endswith("/"):
            modules.add(head)
            continue
        folders, opened, depth = [head], [], 0
        for m in re.finditer(r"(\w+/) \(|([\w/]+\.py)\b|[()]", text):
            if m[1]:
                depth += 1
                folders.append(m[1])
                opened.append(depth)
            elif m[2]:
                if "/" in m[2]:
                    others.add(m[2])
                else:
                    modules.add("".join(folders) + m[2])
            elif m[0] == "(":
                depth += 1
            else:
                if opened and opened[-1] == depth:
                    folders.pop()
                    opened.pop()
                depth -= 1
    return modules, others


def test_the_readme_module_list_matches_the_tree() -> None:
    block = _tree_block()
    named, others = _named(block)
    modules = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    assert sorted(modules - named) == [], "not in the README's module list (or not in its folder's entry)"
    assert sorted(named - modules) == [], "named in the README's module list, not in the tree"
    assert sorted(p for p in others if not (ROOT / p).exists()) == []
    folders = set(re.findall(r"^ {2}(\w+)/", block, re.M))
    assert folders == {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")}


def test_no_function_is_longer_than_60_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if (lines := (node.end_lineno or start) - start + 1) > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines} lines")
    assert long == []
