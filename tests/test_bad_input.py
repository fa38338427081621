"""Bad input on the command line: each one is one line on stderr, exit code 2, nothing on
stdout, no traceback, and no model run.

``run`` and ``chat`` go through tests/fake_cli.py (the model loader replaced by a scripted
fake, so nothing is loaded even when the input is wrongly accepted); the ``--model`` cases
go through the real loader, which must refuse the file before or while llama.cpp reads it.
The count of cases is the README's "bad inputs tried".
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from fake_cli import FAKE_CLI

REAL = "real"  # argv[0] marker: the installed CLI, real model loader


class Case(NamedTuple):
    id: str
    argv: tuple[str, ...]  # run in a folder that holds the files of FILES
    env: tuple[tuple[str, str], ...] = ()


FILES: dict[str, bytes] = {
    "a-file": b"x\n",
    "syntax.py": b"def f(:\n",
    "raises.py": b"raise RuntimeError('boom at import')\n",
    "no_tools.py": b"x = 1\n",
    "exits.py": b"import sys\nsys.exit(3)\n",
    "tools.txt": b"hello\n",
    "bad.toml": b"max_steps = \n",
    "unknown.toml": b"[run]\nmax_stpes = 3\n",
    "bad-value.toml": b'[run]\nmax_steps = "many"\n',
    "zero.toml": b"max_steps = 0\n",
    "random.gguf": bytes(range(256)) * 20,
    "empty.gguf": b"",
    "magic.gguf": b"GGUF\x03\x00\x00\x00" + b"\xff" * 64,  # a GGUF header, then garbage
    "empty.jsonl": b"",
    "garbage.jsonl": bytes(range(256)) * 8,
    "torn.jsonl": b'{"type": "run_start", "ta',
    "wrong-shape.jsonl": b'[1, 2]\n"x"\n{"type": 5}\n{"type": "step", "calls": "x", "results": 3}\n',
    "case-bad-json.jsonl": b"not json\n",
    "case-bad-field.jsonl": b'{"id": 1}\n',
}

RUN = ("run", "What is in notes.txt?", "--root", "root")
CASES = [
    # -- the root
    Case("root missing", ("run", "task", "--root", "no-such-folder")),
    Case("root is a file", ("run", "task", "--root", "a-file")),
    Case("root is a dangling link", ("run", "task", "--root", "dangling")),
    # -- flag values
    Case("max-steps 0", RUN + ("--max-steps", "0")),
    Case("max-steps not a number", RUN + ("--max-steps", "abc")),
    Case("temperature out of range", RUN + ("--temperature", "5")),
    Case("ctx too small", RUN + ("--ctx", "10")),
    Case("token-budget 0", RUN + ("--token-budget", "0")),
    Case("token-budget below the first prompt", RUN + ("--token-budget", "5")),
    Case("deadline not a number", RUN + ("--deadline", "abc")),
    Case("deadline negative", RUN + ("--deadline", "-1")),
    Case("unknown flag", RUN + ("--bogus",)),
    Case("task missing", ("run", "--root", "root")),
    Case("unknown command", ("bogus",)),
    Case("server dialect unknown", RUN + ("--base-url", "http://127.0.0.1:9", "--server-dialect", "bogus")),
    # -- the tools file and approvals
    Case("tools file missing", RUN + ("--tools", "missing.py")),
    Case("tools file with a syntax error", RUN + ("--tools", "syntax.py")),
    Case("tools file raising on import", RUN + ("--tools", "raises.py")),
    Case("tools file defining no tools", RUN + ("--tools", "no_tools.py")),
    Case("tools file calling sys.exit", RUN + ("--tools", "exits.py")),
    Case("tools file not Python", RUN + ("--tools", "tools.txt")),
    Case("tools file a folder", RUN + ("--tools", "root")),
    Case("allow a tool that needs no approval", RUN + ("--allow", "read_file")),
    Case("allow an unknown tool", RUN + ("--allow", "delete_everything")),
    # -- the trace file
    Case("trace is a folder", RUN + ("--trace", "root")),
    Case("trace under a file", RUN + ("--trace", "a-file/t.jsonl")),
    # -- settings from the config file and the environment
    Case("config not TOML", RUN, env=(("LOCALAGENT_CONFIG", "bad.toml"),)),
    Case("config unknown key", RUN, env=(("LOCALAGENT_CONFIG", "unknown.toml"),)),
    Case("config value of the wrong type", RUN, env=(("LOCALAGENT_CONFIG", "bad-value.toml"),)),
    Case("config value out of range", RUN, env=(("LOCALAGENT_CONFIG", "zero.toml"),)),
    Case("config file missing", RUN, env=(("LOCALAGENT_CONFIG", "missing.toml"),)),
    Case("config file a folder", RUN, env=(("LOCALAGENT_CONFIG", "root"),)),
    Case("env value not a number", RUN, env=(("LOCALAGENT_MAX_STEPS", "abc"),)),
    Case("env value out of range", RUN, env=(("LOCALAGENT_TEMPERATURE", "-1"),)),
    # -- the model (the real loader)
    Case("model id unknown", (REAL, *RUN, "--model", "no-such-model")),
    Case("model file missing", (REAL, *RUN, "--model", "missing.gguf")),
    Case("model file not GGUF", (REAL, *RUN, "--model", "random.gguf")),
    Case("model file empty", (REAL, *RUN, "--model", "empty.gguf")),
    Case("model path a folder", (REAL, *RUN, "--model", "root")),
    Case("model file a GGUF header then garbage", (REAL, *RUN, "--model", "magic.gguf")),
    Case("models path of an unknown id", (REAL, "models", "path", "no-such-model")),
    # -- reading traces back
    Case("trace show of a missing file", ("trace", "show", "missing.jsonl")),
    Case("trace show of a folder", ("trace", "show", "root")),
    Case("trace show of an empty file", ("trace", "show", "empty.jsonl")),
    Case("trace show of binary garbage", ("trace", "show", "garbage.jsonl")),
    Case("trace show of lines of the wrong shape", ("trace", "show", "wrong-shape.jsonl")),
    Case("trace show of one torn line", ("trace", "show", "torn.jsonl")),
    Case("stats of a missing file", ("stats", "missing.jsonl")),
    # -- eval cases and chat transcripts
    Case("eval case file missing", ("eval", "missing.jsonl")),
    Case("eval case file not JSON", ("eval", "case-bad-json.jsonl")),
    Case("eval case of the wrong shape", ("eval", "case-bad-field.jsonl")),
    Case("eval relevance floor not two numbers", ("eval", "case-bad-field.jsonl", "--relevance-floor", "4;-2")),
    Case("eval relevance ceiling not a number", ("eval", "case-bad-field.jsonl", "--relevance-ceiling", "high")),
    Case("chat resume from a missing file", ("chat", "--root", "root", "--resume", "missing.json")),
    Case("chat resume from binary garbage", ("chat", "--root", "root", "--resume", "garbage.jsonl")),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("bad-input")
    for name, data in FILES.items():
        (where / name).write_bytes(data)
    (where / "root").mkdir()
    (where / "root" / "notes.txt").write_text("The launch code is PURPLE-42.\n")
    (where / "dangling").symlink_to(where / "nowhere")
    return where


@functools.cache
def _outcome(case: Case, folder: Path) -> subprocess.CompletedProcess[str]:
    argv = list(case.argv)
    cli = [sys.executable, "-m", "localagent"] if argv[0] == REAL else FAKE_CLI
    argv = argv[1:] if argv[0] == REAL else argv
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALAGENT_")}
    traces = folder / "traces" / case.id.replace(" ", "-")
    env.update(LOCALAGENT_TRACES=str(traces), LOCALAGENT_CACHE=str(folder / "cache"), HF_HUB_OFFLINE="1")
    env.update(dict(case.env))
    return subprocess.run(cli + argv, cwd=folder, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_fails_without_a_traceback(case: Case, folder: Path) -> None:
    p = _outcome(case, folder)
    assert p.returncode != 0, (p.stdout, p.stderr)
    assert p.stderr.strip() and "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    assert not (folder / "traces" / case.id.replace(" ", "-")).exists(), "no run started"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_exit_code_2(case: Case, folder: Path) -> None:
    p = _outcome(case, folder)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("localagent: error: "), p.stderr
    assert p.returncode == 2 and p.stdout == ""
