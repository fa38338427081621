"""Sampling above temperature 0 under the constraint, on the real model: the seed fixes the
output, and the call drawn still parses against the tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.constraint.grammar import ToolChoice, build_constraint
from localagent.decoding import decoding_options
from localagent.formats import parse
from localagent.loop import AgentConfig
from localagent.messages import Message
from localagent.prompt import load_prompt
from localagent.tools import ToolSet
from localagent.tools.builtin import workspace_tools
from localagent.tools.workspace import Workspace

pytestmark = pytest.mark.real


def test_the_seed_fixes_a_sampled_constrained_call(qwen, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    tools = workspace_tools(Workspace(workspace), write=False)
    schemas = ToolSet(tools).schemas()
    choice = ToolChoice("required")
    c = build_constraint(schemas, choice, parallel=False)
    config = AgentConfig(temperature=1.0, seed=11, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.1)
    opts = decoding_options(config, c, threshold=None, choice=choice)
    msgs = [Message("system", load_prompt("system").strip()), Message("user", "What does the file notes.txt say?")]
    first = qwen.generate(msgs, schemas, opts)
    qwen.generate([Message("user", "Say yes.")], [], decoding_options(AgentConfig(), None, threshold=None, choice=None))
    again = qwen.generate(msgs, schemas, opts)  # another KV state in between: the same draw
    assert again.text == first.text and first.finish_reason == "stop"
    calls = parse(first.text).calls
    assert calls, first.text
    params = {s["function"]["name"]: s["function"]["parameters"] for s in schemas}
    for call in calls:  # a tool offered, its required arguments there, no other
        p = params[call.name]
        assert set(p.get("required", [])) <= set(call.arguments) <= set(p["properties"])
