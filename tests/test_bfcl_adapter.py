"""evals/bfcl.py without BFCL's wheel: its types as JSON Schema, names, and disjoint splits."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import jsonschema

from localagent.constraint.grammar import ToolChoice, build_constraint

_spec = importlib.util.spec_from_file_location("bfcl", Path(__file__).parent.parent / "evals" / "bfcl.py")
assert _spec and _spec.loader
bfcl: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bfcl)

FUNCTION = {
    "name": "spotify.play",
    "description": "Play tracks.",
    "parameters": {"type": "dict", "required": ["artist"], "properties": {
        "artist": {"type": "string", "description": "The artist."},
        "duration": {"type": "float", "description": "Minutes."},
        "window": {"type": "tuple", "items": {"type": "integer"}},
        "data": {"type": "any", "description": "Anything."},
        "options": {"type": "dict", "properties": {"loop": {"type": "boolean"}}},
    }},
}


def test_bfcl_types_become_json_schema_and_dots_underscores() -> None:
    t = bfcl.tool(FUNCTION)["function"]
    assert t["name"] == "spotify_play"
    props = t["parameters"]["properties"]
    assert t["parameters"]["type"] == "object" and props["duration"]["type"] == "number"
    assert props["window"] == {"type": "array", "items": {"type": "integer"}}
    assert props["data"] == {"description": "Anything."} and props["options"]["type"] == "object"
    jsonschema.validators.validator_for(t["parameters"]).check_schema(t["parameters"])
    build_constraint([bfcl.tool(FUNCTION)], ToolChoice("auto"))  # the grammar takes it, the typeless value too


def test_the_dev_and_test_samples_never_share_a_case() -> None:
    rows = list(range(101))
    dev, test = bfcl.pick(rows, "dev", 100), bfcl.pick(rows, "test", 100)
    assert not set(dev) & set(test) and len(dev) + len(test) == 101
    assert bfcl.pick(rows, "dev", 10) == bfcl.pick(rows, "dev", 10) and len(bfcl.pick(rows, "dev", 10)) == 10
