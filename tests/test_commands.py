"""run_command once approved: a scrubbed environment, HOME in a scratch folder, and every
process it started killed when it ends, even one that left its process group."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from localagent.tools.commands import command_env
from localagent.tools.workspace import Workspace
from toolcalls import call

PLANTED = {
    "LOCALAGENT_API_KEY": "sk-planted-1",
    "HF_TOKEN": "hf_planted_2",
    "AWS_ACCESS_KEY_ID": "AKIAPLANTED3",
    "AWS_SECRET_ACCESS_KEY": "planted-4",
    "AWS_SESSION_TOKEN": "planted-5",
    "GITHUB_TOKEN": "ghp_planted6",
    "OPENAI_API_KEY": "sk-planted-7",
    "DATABASE_PASSWORD": "planted-8",
    "MY_SERVICE_SECRET": "planted-9",
    "GOOGLE_APPLICATION_CREDENTIALS": "/planted/10.json",
    "SSH_AUTH_SOCK": "/planted/11.sock",
    "LC_SECRET_THING": "planted-12",  # a kept prefix does not let a secret's name through
    "PYTHONSTARTUP": "/planted/13.py",  # nor anything else not on the allow-list
}


def test_an_approved_command_sees_none_of_the_planted_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in PLANTED.items():
        monkeypatch.setenv(k, v)
    r = call(Workspace(tmp_path), "run_command", command=f"{sys.executable} -c 'import os, json; print(json.dumps(dict(os.environ)))'")
    assert r.error is None, r.content
    env = json.loads(r.content.split("\n", 1)[1])
    assert not set(PLANTED) & set(env)
    assert not [v for v in PLANTED.values() if v in r.content]
    assert env["PATH"] == os.environ["PATH"]  # what it needs to find programs is kept
    assert Path(env["HOME"]).name.startswith("localagent-home-") and env["HOME"] != os.environ.get("HOME")
    assert not Path(env["HOME"]).exists()  # the scratch HOME is gone with the command


AGENT = """
import ctypes, sys
from pathlib import Path
from localagent.tools.commands import run
peek = "import os; print(open(f'/proc/{os.getppid()}/environ', 'rb').read())"
print(run(Path(sys.argv[1]), [sys.executable, "-c", peek], 20))
print("dumpable", ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE
"""


@pytest.mark.skipif(sys.platform != "linux", reason="/proc and prctl are Linux's")
def test_a_command_cannot_read_the_agents_environment_through_its_parent(tmp_path: Path) -> None:
    # The agent started with a token in its environment; an approved command reads the
    # agent's /proc/<pid>/environ, which scrubbing the command's own environment leaves open.
    import subprocess

    env = {**os.environ, "HF_TOKEN": "hf_planted_at_start"}
    out = subprocess.run([sys.executable, "-c", AGENT, str(tmp_path)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "dumpable 0" in out.stdout, out.stdout  # readable by root only
    if os.geteuid() != 0:  # root reads any process's /proc entry; anyone else is refused now
        assert "hf_planted_at_start" not in out.stdout and "Permission denied" in out.stdout, out.stdout


def test_the_allow_list() -> None:
    source = {"PATH": "/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC", "USER": "u", **PLANTED}
    env = command_env("/scratch", "m", source)
    assert {k: env[k] for k in ("PATH", "LANG", "LC_ALL", "TZ")} == {"PATH": "/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC"}
    assert env["HOME"] == env["TMPDIR"] == "/scratch" and "USER" not in env
    assert not set(PLANTED) & set(env)


# A child that leaves the command's process group and session, then lives on.
ESCAPER = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(60)
    os._exit(0)
time.sleep(float(sys.argv[2]))
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finding processes that left the group needs /proc")
@pytest.mark.parametrize(("wait", "timeout"), [(0.0, 10), (30.0, 1)])  # it returns; it times out
def test_a_child_that_calls_setsid_does_not_outlive_the_command(tmp_path: Path, wait: float, timeout: int) -> None:
    pidfile = tmp_path / "pid"
    script = tmp_path / "escaper.py"
    script.write_text(ESCAPER)
    r = call(Workspace(tmp_path), "run_command", command=f"{sys.executable} {script} {pidfile} {wait}", timeout=timeout)
    assert (r.error is not None and r.error.kind == "timeout") == (wait > timeout), r.content
    for _ in range(50):  # the grandchild writes its pid just after the fork
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 3
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the setsid grandchild outlived the command"
