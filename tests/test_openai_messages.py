"""History as OpenAI chat messages, both ways; the run and chat options that use them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import localagent.backends as backends
from localagent.assemble import default_config
from localagent.backends.fake import FakeBackend, call_text
from localagent.cli.run import build_agent
from localagent.errors import ConfigError
from localagent.messages import (
    Message, ToolCall, from_openai_messages, history_from_saved, history_to_json, to_openai_messages,
)
from fake_cli import FAKE_CLI, fake_env


HISTORY = [
    Message("system", "Be brief."),
    Message("user", "What is in notes.txt?"),
    Message("assistant", "", [ToolCall("call_1_0", "read_file", {"path": "notes.txt"})], raw="<tool_call>..."),
    Message("tool", "The launch code is PURPLE-42.", tool_call_id="call_1_0", name="read_file"),
    Message("assistant", "I will look.\n<tool_call>{bad"),
    Message("tool", "error (format_error): ...", tool_call_id="call_2_format0", name="(format)"),
    Message("assistant", "PURPLE-42."),
]


def test_a_history_as_openai_messages() -> None:
    out = to_openai_messages(HISTORY)
    assert out[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1_0", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}
        ],
    }
    assert out[3] == {"role": "tool", "tool_call_id": "call_1_0", "content": "The launch code is PURPLE-42."}
    assert out[5] == {"role": "user", "content": "error (format_error): ..."}  # it answers no call
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    json.dumps(out)  # plain data


def test_openai_messages_back_to_a_history() -> None:
    back = from_openai_messages(to_openai_messages(HISTORY[:4]))
    assert [(m.role, m.content, m.tool_calls, m.tool_call_id) for m in back] == [
        (m.role, m.content, m.tool_calls, m.tool_call_id) for m in HISTORY[:4]
    ]
    assert back[3].name == "read_file"  # the result is named after its call


def test_list_content_developer_role_and_dict_arguments() -> None:
    [system, user, assistant] = from_openai_messages([
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": {"n": 1}}}]},
    ])
    assert (system.role, system.content, user.content) == ("system", "Be brief.", "a\nb")
    assert assistant.content == "" and assistant.tool_calls == [ToolCall("x", "f", {"n": 1})]


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ({"role": "user"}, "messages must be a list"),
        ([{"role": "robot", "content": "x"}], "messages[0]: role must be"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], "only text content parts"),
        ([{"role": "user", "content": 5}], "content must be a string"),
        ([{"role": "tool", "content": "x"}], "needs a string 'tool_call_id'"),
        ([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{no"}}]}], "'arguments' is not JSON"),
        ([{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}], "needs a 'function' with a string 'name'"),
    ],
)
def test_malformed_openai_messages_name_the_message(messages: Any, error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("[", r"\[").replace("]", r"\]")):
        from_openai_messages(messages)


def test_a_saved_history_in_either_form() -> None:
    native = history_from_saved(history_to_json(HISTORY))
    assert native[2].raw == "<tool_call>..."  # the exact text is kept in the native form only
    assert history_from_saved(to_openai_messages(HISTORY))[2].tool_calls == HISTORY[2].tool_calls


def test_run_result_gives_openai_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes.txt").write_text("PURPLE-42\n")
    fake = FakeBackend.scripted([call_text("read_file", path="notes.txt"), "It says PURPLE-42."])
    monkeypatch.setattr(backends, "load_llama", lambda *a, **k: fake)
    result = build_agent(tmp_path).run("What is in notes.txt?")
    out = result.openai_messages()
    assert out[-3]["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"path": "notes.txt"}'}
    assert out[-2]["tool_call_id"] == out[-3]["tool_calls"][0]["id"] and "PURPLE-42" in out[-2]["content"]
    assert out[-1] == {"role": "assistant", "content": "It says PURPLE-42."}


@pytest.mark.parametrize("choice", ["none", "required", "list_dir"])
def test_tool_choice_reaches_every_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, choice: str) -> None:
    fake = FakeBackend.scripted(["Fine."])
    monkeypatch.setattr(backends, "load_llama", lambda *a, **k: fake)
    build_agent(tmp_path, config=default_config(tool_choice=choice)).run("Hello")
    assert fake.options[0].tool_choice == choice and fake.options[0].call_threshold is None


def test_an_unknown_tool_choice_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--tool-choice read_fil: give auto, required, none or a tool's name; did you mean read_file"):
        build_agent(tmp_path, config=default_config(tool_choice="read_fil"))


def _cli(tmp_path: Path, replies: list[Any], *argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FAKE_CLI, *argv], env=fake_env(tmp_path, replies), input=stdin, capture_output=True, text=True, timeout=60
    )


def test_chat_saves_openai_messages_and_resumes_from_them(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("PURPLE-42\n")
    saved = tmp_path / "chat.json"
    replies = [["read_file", {"path": "notes.txt"}], "PURPLE-42."]
    p = _cli(tmp_path, replies, "chat", "--root", str(tmp_path), "--save", str(saved), "--save-openai", stdin="code?\n")
    assert p.returncode == 0, p.stderr
    messages = json.loads(saved.read_text())
    assert [m["role"] for m in messages][-4:] == ["user", "assistant", "tool", "assistant"]
    assert messages[-3]["tool_calls"][0]["function"]["name"] == "read_file" and "raw" not in messages[-3]
    p = _cli(tmp_path, ["Still PURPLE-42."], "chat", "--root", str(tmp_path), "--resume", str(saved), "--save", str(saved), stdin="again?\n")
    assert p.returncode == 0, p.stderr
    assert json.loads(saved.read_text())[-1]["content"] == "Still PURPLE-42."  # native form again, grown


def test_run_with_an_unknown_tool_choice_is_one_line(tmp_path: Path) -> None:
    p = _cli(tmp_path, [], "run", "task", "--root", str(tmp_path), "--tool-choice", "nope")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == ["localagent: error: --tool-choice nope: give auto, required, none or a tool's name"]
