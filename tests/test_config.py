"""Settings: flags over LOCALAGENT_* environment variables over the config file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from localagent import config
from localagent.cli import app
from localagent.errors import ConfigError
from fake_cli import FAKE_CLI, fake_env

ROOT = typer.main.get_command(app)


def _values(settings: list[config.Setting]) -> dict[tuple[str, str], object]:
    return {(" ".join(s.command), s.option): s.value for s in settings}


def test_environment_beats_file_and_file_sections_beat_top_level() -> None:
    data = {"max-steps": 5, "model": "smollm2-135m", "run": {"model": "qwen2.5-coder-0.5b"}}
    got = _values(config.resolve(ROOT, {"LOCALAGENT_MAX_STEPS": "7"}, data, "cfg.toml"))
    assert got[("run", "max-steps")] == 7  # env over file, converted to the option's type
    assert got[("run", "model")] == "qwen2.5-coder-0.5b"  # [run] over the top level
    assert got[("chat", "model")] == "smollm2-135m"  # the top level for every command that has it
    assert ("models list", "model") not in got  # only commands that have the option


def test_sources_are_named() -> None:
    settings = config.resolve(ROOT, {"LOCALAGENT_CTX": "4096"}, {"run": {"yes": True}}, "cfg.toml")
    where = {(" ".join(s.command), s.option): s.source for s in settings}
    assert where[("run", "ctx")] == "env LOCALAGENT_CTX"
    assert where[("run", "yes")] == "cfg.toml [run] yes"
    dm = config.default_map(settings)
    assert dm["run"]["n_ctx"] == 4096 and dm["run"]["yes"] is True  # keyed by click's parameter name


def test_flags_and_lists_from_the_environment() -> None:
    env = {"LOCALAGENT_YES": "true", "LOCALAGENT_ALLOW": "edit_file, write_file", "LOCALAGENT_FREE": "0"}
    got = _values(config.resolve(ROOT, env, {}))
    assert got[("run", "yes")] is True and got[("run", "free")] is False
    assert got[("run", "allow")] == ["edit_file", "write_file"]


@pytest.mark.parametrize(
    ("env", "data", "message"),
    [
        ({"LOCALAGENT_MAX_STEPS": "many"}, {}, "LOCALAGENT_MAX_STEPS: 'many': "),
        ({"LOCALAGENT_YES": "perhaps"}, {}, "LOCALAGENT_YES: expected true or false"),
        ({}, {"run": {"max_steps": 0}}, "cfg.toml [run] max-steps: 0: "),
        ({}, {"max_stpes": 3}, "cfg.toml: unknown setting 'max_stpes'"),
        ({}, {"run": {"colour": "red"}}, "cfg.toml: unknown setting [run] 'colour'"),
    ],
)
def test_bad_settings_are_one_line_naming_their_source(env: dict[str, str], data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        config.resolve(ROOT, env, data, "cfg.toml")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_config_file_location_and_read_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):  # elsewhere platformdirs has the platform's own folder
        assert config.config_path({}) == tmp_path / "localagent" / "config.toml"
    assert config.config_path({"LOCALAGENT_CONFIG": str(tmp_path / "x.toml")}) == tmp_path / "x.toml"
    assert config.read_file(tmp_path / "none.toml") == {}
    with pytest.raises(ConfigError, match="does not exist"):
        config.read_file(tmp_path / "none.toml", required=True)
    bad = tmp_path / "bad.toml"
    bad.write_text("max_steps = = 3\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        config.read_file(bad)


def test_no_option_collides_with_the_other_environment_variables() -> None:
    names = {config.env_name(flag) for _, cmd in config._commands(ROOT) for flag, _ in config._options(cmd)}
    assert not names & {config.ENV_PREFIX + r for r in config.RESERVED_ENV}


# ── end to end: the installed CLI on a scripted model ──

LIST_FOREVER = [["list_dir", {"path": ".", "max_entries": n}] for n in range(1, 40)] + ["done"]


def _run(tmp_path: Path, flags: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [*FAKE_CLI, "run", "list", "--root", str(tmp_path), "--json", *flags]
    return subprocess.run(argv, env=fake_env(tmp_path, LIST_FOREVER, **env), capture_output=True, text=True, timeout=120)


def test_precedence_end_to_end(tmp_path: Path) -> None:
    cfg = tmp_path / "xdg" / "localagent" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[run]\nmax-steps = 1\n")

    def steps(flags: list[str], env: dict[str, str]) -> int:
        p = _run(tmp_path, flags, env)
        assert p.returncode == 3, p.stderr  # the step limit
        return int(json.loads(p.stdout)["steps"])

    from_file = steps([], {})
    from_env = steps([], {"LOCALAGENT_MAX_STEPS": "2"})
    from_flag = steps(["--max-steps", "3"], {"LOCALAGENT_MAX_STEPS": "2"})
    assert (from_file, from_env, from_flag) == (1, 2, 3)


def test_bad_config_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "xdg" / "localagent" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[run]\nmax-step = 1\n")
    p = _run(tmp_path, [], {})
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "unknown setting [run] 'max-step'" in p.stderr


def test_config_command_shows_sources(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("model = 'smollm2-135m'\n")
    env = dict(os.environ, LOCALAGENT_CONFIG=str(cfg), LOCALAGENT_MAX_STEPS="4")
    p = subprocess.run([sys.executable, "-m", "localagent", "config"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert f"config file: {cfg} (found)" in p.stdout
    assert "run --max-steps = 4  (env LOCALAGENT_MAX_STEPS)" in p.stdout
    assert f"run --model = 'smollm2-135m'  ({cfg} model)" in p.stdout
