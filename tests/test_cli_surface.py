"""The command line as a person meets it, without a model: --help on every command, quiet and
--json output for scripts, and each failure a person can cause as one line, a non-zero exit and
no traceback (unless LOCALAGENT_TRACEBACK asks for one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer
from typer.testing import CliRunner

from localagent.cli import app
from localagent.cli.options import flag_text
from localagent.cli.run import ModelSpec, ToolSpec, check_root
from localagent.errors import ConfigError
from fake_cli import FAKE_CLI, fake_env
from terminal import Terminal

CLI = [sys.executable, "-c", "from localagent.cli import main; main()"]

READ_THEN_ANSWER: list[object] = [["read_file", {"path": "notes.txt"}], "The note says one, two."]


def _env(tmp_path: Path, replies: list[object] = READ_THEN_ANSWER, **extra: str) -> dict[str, str]:
    return fake_env(tmp_path, replies, **extra)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "root"
    d.mkdir()
    (d / "notes.txt").write_text("one\ntwo\n")
    return d


def fake_run(root: Path, tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [*FAKE_CLI, "run", "What does notes.txt say?", "--root", str(root), *flags]
    return subprocess.run(argv, env=env or _env(tmp_path), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def one_line_error(p: subprocess.CompletedProcess[str], code: int, *expected: str) -> str:
    """The single stderr line of a failure, checked: exit ``code``, nothing on stdout, no traceback."""
    assert p.returncode == code, p.stderr
    assert p.stdout == "" and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("localagent: "), p.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


# ── --help on every command ──


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in (getattr(cmd, "commands", None) or {}).items():
        yield from _commands(sub, path + (name,))


COMMANDS = list(_commands(typer.main.get_command(app)))


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"", "run", "chat", "config", "stats", "trace", "trace show", "models", "models list",
            "models pull", "models path", "eval", "bench"} <= names


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "localagent")
def test_help_on_every_command(path: tuple[str, ...]) -> None:
    cmd = dict(COMMANDS)[path]
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="localagent", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = result.output
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert f"Usage: {' '.join(('localagent', *path))} " in usage, text
    assert (cmd.help or "").strip(), f"{' '.join(path)} has no help text"
    assert cmd.help.strip().split("\n")[0][:30] in " ".join(text.split())  # its description is shown
    for param in cmd.params:
        for opt in getattr(param, "opts", []):
            if opt.startswith("--") and not getattr(param, "hidden", False):
                assert opt in text, f"{opt} missing from `{' '.join(path)} --help`"


def test_help_through_the_installed_entry_point() -> None:
    p = subprocess.run(CLI + ["run", "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "--quiet" in p.stdout and "--json" in p.stdout and "--verbose" in p.stdout
    p = subprocess.run(CLI, capture_output=True, text=True, timeout=60)  # no command: the help, not a traceback
    assert "Usage:" in p.stdout + p.stderr and "Traceback" not in p.stderr


# ── quiet and --json, for scripts ──


def test_live_output_by_default(root: Path, tmp_path: Path) -> None:
    p = fake_run(root, tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "The note says one, two.\n"
    assert "── step 1" in p.stderr and '→ read_file({"path": "notes.txt"' in p.stderr and "← one two" in p.stderr
    assert p.stderr.strip().splitlines()[-1].endswith(f"· answered] trace: {next((tmp_path / 'traces').glob('*.jsonl'))}")
    assert json.loads((tmp_path / "loaded.json").read_text())["progress"] is True


def test_quiet_prints_the_answer_and_nothing_else(root: Path, tmp_path: Path) -> None:
    p = fake_run(root, tmp_path, "--quiet")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "The note says one, two.\n" and p.stderr == ""
    assert json.loads((tmp_path / "loaded.json").read_text())["progress"] is False  # no bars either


def test_json_prints_one_object_and_nothing_else(root: Path, tmp_path: Path) -> None:
    p = fake_run(root, tmp_path, "--json")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    out = json.loads(p.stdout)
    assert out["answer"] == "The note says one, two." and out["stop_reason"] == "answered" and out["steps"] == 2
    assert Path(out["trace"]).is_file()
    assert json.loads((tmp_path / "loaded.json").read_text())["progress"] is False


def test_a_forced_stop_in_json_mode_has_its_exit_code(root: Path, tmp_path: Path) -> None:
    replies: list[object] = [["read_file", {"path": "notes.txt"}], ["list_dir", {"path": "."}], "late"]
    p = fake_run(root, tmp_path, "--json", "--max-steps", "1", env=_env(tmp_path, replies))
    assert p.returncode == 3 and json.loads(p.stdout)["stop_reason"] == "max_steps"


# ── failures a person understands ──


def test_a_missing_model(root: Path, tmp_path: Path) -> None:
    p = subprocess.run(CLI + ["run", "hi", "--root", str(root), "--model", str(tmp_path / "gone.gguf")],
                       env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    one_line_error(p, 2, "model file", "gone.gguf", "does not exist")
    p = subprocess.run(CLI + ["run", "hi", "--root", str(root), "--model", "qwen-9000"],
                       env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    one_line_error(p, 2, "unknown model 'qwen-9000'; known ids: ")


def test_a_file_that_is_not_a_model(root: Path, tmp_path: Path) -> None:
    bad = tmp_path / "notes.gguf"
    bad.write_text("not a model\n" * 100)
    p = subprocess.run(CLI + ["run", "hi", "--root", str(root), "--model", str(bad)],
                       env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    one_line_error(p, 2, "is not a GGUF file")


def test_a_corrupt_model_file(root: Path, tmp_path: Path) -> None:
    # A GGUF header and then garbage, as a download cut short or damaged on disk: llama.cpp
    # refuses it; its reason is in its own log, which --verbose shows.
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(range(256)) * 40)
    argv = CLI + ["run", "hi", "--root", str(root), "--model", str(bad)]
    p = subprocess.run(argv, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    one_line_error(p, 2, f"cannot load model {bad}", "run again with --verbose")
    p = subprocess.run(argv + ["--verbose"], env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "gguf" in p.stderr.lower() and len(p.stderr.strip().splitlines()) > 1  # llama.cpp's own log
    assert p.stderr.strip().splitlines()[-1].startswith(f"localagent: error: cannot load model {bad}")


def test_library_errors_name_parameters_and_the_cli_shows_their_flags() -> None:
    assert flag_text("`base_url` 'ftp://x' is not an http(s) URL; check `api_key`") == (
        "--base-url 'ftp://x' is not an http(s) URL; check --api-key"
    )
    assert flag_text("`dialect` openai; `no_such_parameter` stays") == "--server-dialect openai; `no_such_parameter` stays"


def test_a_bad_base_url_names_the_flag(root: Path, tmp_path: Path) -> None:
    p = subprocess.run(CLI + ["run", "hi", "--root", str(root), "--base-url", "ftp://example.org"],
                       env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    one_line_error(p, 2, "localagent: error: --base-url 'ftp://example.org' is not an http(s) URL")


def test_a_stop_note_names_the_flag(root: Path, tmp_path: Path) -> None:
    failed = {"text": "", "finish": "error", "error": "the server refused the request (401): no; check `api_key`"}
    env = _env(tmp_path, [failed])
    argv = [*FAKE_CLI, "run", "What does notes.txt say?", "--root", str(root)]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode != 0 and "[stopped: backend_error]" in p.stdout and "check --api-key" in p.stdout, p.stdout
    p = subprocess.run(argv + ["--json"], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    shown = json.loads(p.stdout)
    assert shown["message"].endswith("check --api-key") and "check --api-key" in shown["answer"]


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_root_that_is_not_a_folder(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "nowhere"
    if kind == "file":
        target.write_text("x")
    p = fake_run(target, tmp_path)
    one_line_error(p, 2, f"--root {target}", "does not exist" if kind == "missing" else "is not a folder")
    assert not (tmp_path / "loaded.json").exists()  # said before any model is loaded


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_root(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        one_line_error(fake_run(locked, tmp_path), 2, f"--root {locked} cannot be read: Permission denied")
    finally:
        locked.chmod(0o755)


def test_check_root_reports_a_folder_that_cannot_be_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "scandir", refuse)  # as a folder without read permission does (not as root)
    with pytest.raises(ConfigError, match=r"--root .* cannot be read: Permission denied$"):
        check_root(tmp_path)


@pytest.mark.parametrize("command", ["run", "chat"])
def test_the_agent_groups_default_to_the_flags_defaults(command: str) -> None:
    # build_agent(root) is the agent of a command given no flags: a default changed in one
    # place only would make the library and the command line differ.
    params = {p.name: p.default for p in typer.main.get_command(app).commands[command].params}  # type: ignore[attr-defined]
    for group in (ModelSpec(), ToolSpec()):
        for name, value in vars(group).items():
            if name in params:
                flag_default = tuple(params[name] or ()) if isinstance(value, tuple) else params[name]
                assert value == flag_default, (command, name)


def test_a_budget_too_small_to_do_anything(root: Path, tmp_path: Path) -> None:
    p = fake_run(root, tmp_path, "--token-budget", "10")
    line = one_line_error(p, 2, "token budget 10 cannot cover even the first prompt", "give at least")
    assert not (tmp_path / "traces").exists() or not list((tmp_path / "traces").glob("*.jsonl")), line  # no run


def test_chat_refuses_a_budget_too_small_before_the_first_turn(root: Path, tmp_path: Path) -> None:
    argv = [*FAKE_CLI, "chat", "--root", str(root), "--token-budget", "10"]
    p = subprocess.run(argv, env=_env(tmp_path), input="hello\n", capture_output=True, text=True, timeout=60)
    one_line_error(p, 2, "token budget 10 cannot cover even the first prompt")


def test_a_traceback_only_when_asked_for(tmp_path: Path) -> None:
    env = _env(tmp_path, LOCALAGENT_TRACEBACK="1")
    p = subprocess.run(CLI + ["run", "hi", "--root", str(tmp_path / "nowhere")], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "Traceback" in p.stderr and "does not exist" in p.stderr


# ── Ctrl-C where no run is under way yet, and at an approval prompt ──


def test_ctrl_c_while_the_model_loads(root: Path, tmp_path: Path) -> None:
    argv = [*FAKE_CLI, "run", "What does notes.txt say?", "--root", str(root)]
    term = Terminal(argv, _env(tmp_path, FAKE_SLEEP="30"))
    loaded = tmp_path / "loaded.json"
    end = time.monotonic() + 60
    while not loaded.exists() and time.monotonic() < end:  # the loader has started
        time.sleep(0.1)
    term.ctrl_c()
    assert term.wait(20) == 130, term.text()
    assert "Traceback" not in term.text()
    assert term.text().strip().splitlines()[-1] == "localagent: interrupted before the run started", term.text()


def test_ctrl_c_at_the_approval_prompt_stops_the_run(root: Path, tmp_path: Path) -> None:
    replies: list[object] = [["write_file", {"path": "hello.txt", "content": "hi\n"}], "Done."]
    argv = [*FAKE_CLI, "run", "Write hi to hello.txt", "--root", str(root)]
    term = Terminal(argv, _env(tmp_path, replies))
    term.expect("Allow it? [y]es, [N]o, [a]lways for this tool: ", timeout=60)
    term.ctrl_c()
    assert term.wait(30) == 130, term.text()
    screen = term.text()
    assert "Traceback" not in screen and "· interrupted] trace:" in screen.strip().splitlines()[-1]
    assert not (root / "hello.txt").exists()
    [trace] = list((tmp_path / "traces").glob("*.jsonl"))
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert records[-1]["type"] == "run_end" and records[-1]["stop_reason"] == "interrupted"
    [step] = [r for r in records if r["type"] == "step"]
    assert [r["error"]["kind"] for r in step["results"]] == ["interrupted"]  # the call is answered


# ── chat on a scripted model: Ctrl-C ends the turn, not the chat; save and resume ──

# A reply that takes a while (streamed word by word), so that Ctrl-C lands in the middle of it.
STORY = {"text": "Once upon a time, a keeper kept a light. " * 100, "slow": 0.05}


def test_chat_ctrl_c_stops_the_turn_not_the_chat(root: Path, tmp_path: Path) -> None:
    saved = tmp_path / "chat.json"
    argv = [*FAKE_CLI, "chat", "--root", str(root), "--save", str(saved)]
    term = Terminal(argv, _env(tmp_path, ["Hello there.", STORY, "Still here."]))
    term.expect("you> ", timeout=60)
    term.type("hi\r")
    term.expect("Hello there.", timeout=60)
    term.expect("you> ", timeout=60, count=2)
    term.type("tell me a story\r")
    term.expect("Once upon a time, a keeper", timeout=60)
    term.ctrl_c()
    term.expect("· interrupted] trace:", timeout=30)
    term.expect("you> ", timeout=30, count=3)  # the chat goes on
    screen = term.text()
    assert "[stopped: interrupted]" in screen and "Traceback" not in screen
    term.type("are you there?\r")
    term.expect("Still here.", timeout=60)
    term.expect("you> ", timeout=60, count=4)
    # At the prompt, Ctrl-C ends the chat. One that lands as input() starts, before it waits
    # for the keyboard, is only seen at the next key (CPython's input()); a person presses again.
    term.ctrl_c()
    if not term.exited_within(3):
        term.ctrl_c()
    assert term.wait(30) == 0, term.text()
    history = json.loads(saved.read_text())
    users = [m["content"] for m in history if m["role"] == "user"]
    assert users == ["hi", "tell me a story", "are you there?"]  # no overview: not about the folder
    [trace] = list((tmp_path / "traces").glob("*.jsonl"))  # one trace for the chat, a run per turn
    ends = [json.loads(line) for line in trace.read_text().splitlines() if '"run_end"' in line]
    assert [e["stop_reason"] for e in ends] == ["answered", "interrupted", "answered"]
    assert "Once upon a time, a keeper" in ends[1]["answer"]  # the partial answer, kept


def test_chat_history_resumes_exactly(root: Path, tmp_path: Path) -> None:
    saved = tmp_path / "chat.json"
    argv = [*FAKE_CLI, "chat", "--root", str(root), "--save", str(saved)]
    p = subprocess.run(argv, env=_env(tmp_path), input="What does notes.txt say?\n\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("The note says one, two.") == 1
    history = json.loads(saved.read_text())
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "assistant"]
    p = subprocess.run([*argv, "--resume", str(saved)], env=_env(tmp_path, ["Again: one, two."]),
                       input="And again?\nexit\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    resumed = json.loads(saved.read_text())
    assert resumed[: len(history)] == history
    assert [m["content"] for m in resumed[len(history):]] == ["And again?", "Again: one, two."]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "task", "--max-steps", "0"], "Invalid value for '--max-steps': Input should be greater than or equal to 1 (see `localagent run --help`)"),
        (["run", "task", "--deadline", "-1"], "Invalid value for '--deadline'"),
        (["run", "--root", "."], "Missing argument 'task'. (see `localagent run --help`)"),
        (["run", "task", "--bogus"], "No such option: --bogus"),
        (["chat", "--max-steps", "x"], "Invalid value for '--max-steps'"),
        (["bogus"], "No such command 'bogus'. (see `localagent --help`)"),
        (["models", "pull"], "Missing argument 'model_id'. (see `localagent models pull --help`)"),
    ],
)
def test_a_usage_error_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    p = subprocess.run(CLI + args, env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert one_line_error(p, 2, message).startswith("localagent: error: ")
