"""The lowest versions pyproject.toml allows: each dependency pinned to its floor, one
requirement a line, for ``pip install -r``; then the test runner's own (pytest, hypothesis).

Every requirement must have a floor (``>=`` or ``==``): one without is an error, since a
lower bound that nothing tests is a guess. The other test requirements (an MCP SDK, an
OpenAI client, llama-cpp-python's server) serve the tests of optional extras, which the
floors run leaves out; mcp, for one, needs a newer pydantic than the core's floor.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

TEST_RUNNER = {"pytest", "hypothesis"}


def floors(pyproject: Path) -> list[str]:
    """``name==floor`` for every dependency and for the test runner, in file order, each once."""
    project = tomllib.loads(pyproject.read_text("utf-8"))["project"]
    tests = [r for r in project.get("optional-dependencies", {}).get("test", []) if Requirement(r).name in TEST_RUNNER]
    out: dict[str, str] = {}
    for line in project["dependencies"] + tests:
        req = Requirement(line)
        low = [s.version for s in req.specifier if s.operator in (">=", "==", "~=")]
        if not low:
            raise SystemExit(f"lowest.py: {line!r} has no lower bound; give it one (>=) that the tests pass on")
        marker = f"; {req.marker}" if req.marker else ""
        out.setdefault(req.name.lower(), f"{req.name}=={low[0]}{marker}")
    return list(out.values())


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    print("\n".join(floors(root / "pyproject.toml")))
