"""Each model's own call format, from the chat template inside its GGUF (read with the
tokenizer only, no weights): Qwen's template lists the tools and asks for
``<tool_call>`` blocks, which is exactly what the grammar produces; the tiny model's
template has no tool support, so our own prompt describes the same envelope."""

from __future__ import annotations

import pytest

from localagent.backends.llama import template_messages
from localagent.formats import generic_system_prompt, parse, render_call
from localagent.constraint.grammar import ToolChoice, build_constraint, call_heads
from localagent.messages import Message, ToolCall
from localagent.prompt import render, template_supports_tools

READ = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a text file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}
HISTORY = [
    Message("system", "You are careful."),
    Message("user", "What does notes.txt say?"),
    Message("assistant", "", [ToolCall("call_1_0", "read_file", {"path": "notes.txt"})]),
    Message("tool", "The launch code is PURPLE-42.", tool_call_id="call_1_0", name="read_file"),
]


def _template(model_id: str) -> str:
    from llama_cpp import Llama

    from localagent.provision import resolve_model

    v = Llama(str(resolve_model(model_id, progress=False)), vocab_only=True, verbose=False)
    return str(v.metadata.get("tokenizer.chat_template", ""))


@pytest.fixture(scope="module")
def qwen_template() -> str:
    return _template("qwen2.5-coder-0.5b")


@pytest.fixture(scope="module")
def smol_template() -> str:
    return _template("smollm2-135m")


def test_qwens_template_lists_the_tools_and_asks_for_our_envelope(qwen_template: str) -> None:
    assert template_supports_tools(qwen_template)
    prompt = render(qwen_template, template_messages(HISTORY[:2], [READ], True), tools=[READ])
    tools_part = prompt.split("<tools>\n")[1].split("</tools>")[0]
    assert '"name": "read_file"' in tools_part and '"required": ["path"]' in tools_part
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_a_call_from_the_grammar_is_the_call_qwens_template_writes(qwen_template: str) -> None:
    # The template renders an earlier call itself (no raw text kept): it is byte for byte
    # what the grammar lets the model write, so the model sees its own format in the history.
    prompt = render(qwen_template, template_messages(HISTORY, [READ], True), tools=[READ])
    ours = render_call("read_file", {"path": "notes.txt"})
    assert "<|im_start|>assistant\n" + ours + "<|im_end|>" in prompt
    assert call_heads([READ])[0] == ours[: len(call_heads([READ])[0])]
    assert "<tool_response>\nThe launch code is PURPLE-42.\n</tool_response>" in prompt
    c = build_constraint([READ], ToolChoice("required"))
    assert '"<tool_call>\\n" call "\\n</tool_call>"' in c.text  # the envelope, from grammars/calls.gbnf
    assert [(x.name, x.arguments) for x in parse(ours).calls] == [("read_file", {"path": "notes.txt"})]


def test_assistant_turns_re_render_as_generated(qwen_template: str) -> None:
    # What the model wrote (raw) is what the next prompt holds, so the KV cache stays valid.
    raw = "Let me look.\n" + render_call("read_file", {"path": "notes.txt"})
    hist = HISTORY[:2] + [Message("assistant", "Let me look.", HISTORY[2].tool_calls, raw=raw)] + HISTORY[3:]
    prompt = render(qwen_template, template_messages(hist, [READ], True), tools=[READ])
    assert "<|im_start|>assistant\n" + raw + "<|im_end|>" in prompt


def test_the_tiny_models_template_has_no_tools_so_our_prompt_describes_them(smol_template: str) -> None:
    assert smol_template and not template_supports_tools(smol_template)
    dicts = template_messages(HISTORY, [READ], False)
    prompt = render(smol_template, dicts)
    assert dicts[0]["content"].startswith("You are careful.\n\n" + generic_system_prompt([READ])[:40])
    assert '"name": "read_file"' in prompt and "<tool_call>" in prompt
    assert all(d["role"] != "tool" for d in dicts)  # results go back as user turns
    assert "<|im_start|>user\n<tool_response>\nThe launch code is PURPLE-42.\n</tool_response><|im_end|>" in prompt


def test_an_earlier_call_without_raw_text_is_shown_to_a_model_without_tool_support(smol_template: str) -> None:
    # In a run the turn is re-rendered from the text generated; a history from elsewhere has
    # only the calls. ChatML ignores tool_calls, so the call must be written out as text,
    # as the server backend's text_messages does.
    prompt = render(smol_template, template_messages(HISTORY, [READ], False))
    assert "<|im_start|>assistant\n" + render_call("read_file", {"path": "notes.txt"}) in prompt


def test_templates_differ_in_what_they_need(qwen_template: str, smol_template: str) -> None:
    # The same history, each model's own rendering: Qwen's tool section against our prompt.
    q = render(qwen_template, template_messages(HISTORY, [READ], True), tools=[READ])
    s = render(smol_template, template_messages(HISTORY, [READ], False))
    assert "# Tools" in q and "# Tools" not in s
    assert generic_system_prompt([READ]).splitlines()[0] in s and generic_system_prompt([READ]).splitlines()[0] not in q
