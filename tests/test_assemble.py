"""The agent a person runs, built in one place: ``Agent.local`` in one line, and the README's
library example run as written, on the scripted fake model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import localagent.backends as backends
from localagent import Agent
from localagent.assemble import assemble, workspace_setup
from localagent.backends.fake import FakeBackend, call_text
from localagent.errors import ConfigError
from localagent.prompt import load_prompt

README = Path(__file__).resolve().parent.parent / "README.md"


def test_one_line_gives_the_agent_run_builds(tmp_path: Path) -> None:
    fake = FakeBackend.scripted([call_text("read_file", path="notes.txt"), "It says hi."])
    agent = Agent.local(tmp_path, backend=fake)
    assert agent.config.system_prompt == load_prompt("system").strip()
    assert agent.workspace is not None and agent.workspace.root == tmp_path.resolve()
    assert {"read_file", "list_dir", "write_file", "edit_file"} <= {t.name for t in agent.tools}
    assert "run_command" not in {t.name for t in agent.tools} and agent.approver is not None
    (tmp_path / "notes.txt").write_text("hi\n")
    result = agent.run("What does notes.txt say?")
    assert result.answer == "It says hi." and result.records[0].results[0].content.startswith("hi")


def test_the_tools_and_the_agent_share_one_workspace(tmp_path: Path) -> None:
    setup = workspace_setup(tmp_path)
    assert assemble(FakeBackend.scripted([]), setup).workspace is setup.workspace


def test_a_bad_root_is_said_before_the_model_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "load_llama", lambda *a, **k: pytest.fail("loaded a model"))
    with pytest.raises(ConfigError, match="is not an existing folder"):
        Agent.local(tmp_path / "nowhere")


def test_the_readme_library_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    [example] = [b for b in blocks if "Agent.local(" in b and "word_count" in b]
    fake = FakeBackend.scripted([
        call_text("read_file", path="notes.txt"),
        call_text("word_count", text="one two three"),
        "There are 3 words in notes.txt.",
    ])
    loaded: list[object] = []
    monkeypatch.setattr(backends, "load_llama", lambda *a, **k: loaded.append((a, k)) or fake)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.txt").write_text("one two three\n")
    scope: dict[str, object] = {}
    exec(compile(example, "README.md", "exec"), scope)
    result = scope["result"]
    assert loaded == [((None,), {})]  # the default model
    assert result.answer == "There are 3 words in notes.txt." and result.steps == 3  # type: ignore[attr-defined]
    assert [r.content for r in result.records[1].results] == ["3"]  # type: ignore[attr-defined]
    assert (tmp_path / "run.jsonl").exists()
