"""The README's module list names every module of the package, and only modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tree_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How a step works", 1)[1].split("\n## ", 1)[0]
    [block] = [b for b in section.split("```") if b.lstrip("\n").startswith("localagent/")]
    return block


def test_the_readme_module_list_matches_the_tree() -> None:
    block = _tree_block()
    named = set(re.findall(r"[\w/]*\w+\.py\b", block))
    package = ROOT / "localagent"
    # The command modules are named by their commands (cli/: run, chat, ...).
    modules = {p for p in package.rglob("*.py") if p.name != "__init__.py" and p.parent.name != "cli"}
    missing = sorted(str(p.relative_to(package)) for p in modules if p.name not in named)
    assert missing == [], f"not in the README's module list: {missing}"
    names = {p.name for p in package.rglob("*.py")}
    unknown = sorted(n for n in named if ("/" in n and not (ROOT / n).exists()) or ("/" not in n and n not in names))
    assert unknown == [], f"named in the README's module list, not in the tree: {unknown}"
    folders = set(re.findall(r"^ {2}(\w+)/", block, re.M))
    assert folders == {p.name for p in package.iterdir() if p.is_dir() and not p.name.startswith("__")}
