"""The model-facing error record: one actionable line, and the same data for the trace."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from localagent.cli.options import FLAGS
from localagent.errors import ToolErrorInfo

PACKAGE = Path(__file__).resolve().parents[1] / "localagent"


def test_a_bare_message_is_one_line_with_its_kind() -> None:
    e = ToolErrorInfo("timeout", "'slow' did not finish in 2 s; try a smaller input")
    assert e.render() == "error (timeout): 'slow' did not finish in 2 s; try a smaller input"


def test_alternatives_are_named_once() -> None:
    e = ToolErrorInfo("unknown_value", "unknown key 'fo'", "key", ["foo", "for"])
    assert e.render() == "error (unknown_value): unknown key 'fo'; closest: foo, for"
    said = ToolErrorInfo("not_found", "path 'a.txt' not found; closest: b.txt", "path", ["b.txt"])
    assert said.render().count("closest:") == 1
    listed = ToolErrorInfo("not_a_file", "'docs' is a folder, not a file; files in it: docs/a.md", "path", ["docs/a.md"])
    assert "closest" not in listed.render()


def test_the_corrected_call_is_json_the_model_can_copy() -> None:
    retry = {"name": "read_file", "arguments": {"path": "src/main.py", "note": 'a "quoted" word'}}
    e = ToolErrorInfo("not_found", "path 'src/mian.py' not found; closest: src/main.py", "path", ["src/main.py"], retry=retry)
    line = e.render()
    assert "\n" not in line
    head, _, tail = line.partition("; to retry: ")
    assert head == "error (not_found): path 'src/mian.py' not found; closest: src/main.py"
    assert json.loads(tail) == retry


def test_to_dict_keeps_every_field_for_the_trace() -> None:
    e = ToolErrorInfo("not_found", "m", "path", ["x"], {"printed": "p"}, {"name": "t", "arguments": {"path": "x"}})
    d = e.to_dict()
    assert d == {
        "kind": "not_found", "message": "m", "argument": "path", "alternatives": ["x"],
        "detail": {"printed": "p"}, "retry": {"name": "t", "arguments": {"path": "x"}},
    }
    json.dumps(d)  # serialisable as it is


def _error_texts(tree: ast.AST) -> list[tuple[int, str]]:
    """The string pieces of every error raised or built (``...Error(...)``, ``_Failure(...)``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name.endswith(("Error", "Failure", "NotFound", "Unavailable")):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                        out.append((sub.lineno, sub.value))
    return out


def test_library_errors_name_parameters_not_flags() -> None:
    # The library names a setting by its parameter, in backticks; the CLI shows it as the flag
    # (cli/options.py, FLAGS). A flag in a library message would mean nothing to a library user.
    flagged, unmapped = [], []
    for path in PACKAGE.rglob("*.py"):
        if "cli" in path.relative_to(PACKAGE).parts:
            continue
        for line, text in _error_texts(ast.parse(path.read_text(), str(path))):
            if re.search(r"(?<![\w-])--[a-z]", text):
                flagged.append(f"{path.name}:{line}: {text}")
            unmapped += [f"{path.name}:{line}: {n}" for n in re.findall(r"`(\w+)`", text) if n not in FLAGS]
    assert not flagged and not unmapped, flagged + unmapped
