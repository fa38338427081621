"""search matches with RE2: linear time whatever the pattern, the tool's rules kept, and a
one-line error for what RE2 cannot run (backreferences, lookarounds)."""

from __future__ import annotations

import json
import random
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localagent.tools.matching import PatternError, compile_search
from localagent.tools.workspace import Workspace
from toolcalls import call

# Each of these backtracks for hours (or for ever) in Python's re on the lines below, inside
# one C call that holds the interpreter lock: no timeout and no Ctrl-C could stop it.
CATASTROPHIC = [
    r"(\w+\s?)*;",
    r"(a+)+$",
    r"(a|a)*b",
    r"(a|aa)+$",
    r"(a*)*b",
    r"(.*a){12}x",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
    r"(x+x+)+y",
    r"(\d+)*\.",
    r"((ab)*|a)*c",
    r"(\w+\d*)+@",
    r"^(a?){30}a{30}$",
    r"([a-zA-Z]+)*[0-9]",
    r"(\s*\w+\s*)*=",
    r"(a|b|ab)*c",
    r"(?:a+){2,}b",
    r"^(\w+\.?)*@",
    r"(.*,){11}P",
]
LINES = ["def " + "a" * 3000 + "():", "a" * 3000 + "!", "1" * 3000 + "x", "x" * 3000, "ab" * 1500,
         " a" * 1500, "a," * 1500]

# The search runs in a child: were it to backtrack, the child is killed at the timeout and the
# tests fail, where in-process they would hang with the interpreter lock held.
CHILD = """
import json, sys, time
from localagent.tools.workspace import Workspace
from toolcalls import call
ws = Workspace(sys.argv[1])
out = {}
for pattern in json.loads(sys.argv[2]):
    start = time.perf_counter()
    r = call(ws, "search", pattern=pattern, regex=True)
    out[pattern] = [time.perf_counter() - start, r.error.kind if r.error else None]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def timings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[object]]:
    root = tmp_path_factory.mktemp("regex")
    (root / "evil.py").write_text("\n".join(LINES) + "\n")
    argv = [sys.executable, "-c", CHILD, str(root), json.dumps(CATASTROPHIC)]
    tests = str(Path(__file__).parent)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": tests})
    except subprocess.TimeoutExpired:
        pytest.fail("the catastrophic patterns did not finish within 60 s: search backtracks")
    assert p.returncode == 0, p.stderr
    result: dict[str, list[object]] = json.loads(p.stdout)
    return result


def test_the_corpus_is_large() -> None:
    assert len(set(CATASTROPHIC)) >= 15


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_a_catastrophic_pattern_finishes_well_under_a_second(timings: dict[str, list[object]], pattern: str) -> None:
    seconds, error = timings[pattern]
    assert error is None, pattern
    assert isinstance(seconds, float) and seconds < 1.0, (pattern, seconds)


def test_case_is_ignored_unless_the_pattern_has_a_capital() -> None:
    assert compile_search("version", regex=False)("VERSION = 1")
    assert not compile_search("Version", regex=False)("VERSION = 1")
    assert compile_search(r"ver\w+", regex=True)("VERSION")
    assert not compile_search(r"VER\w+", regex=True)("version")


def test_a_pattern_is_literal_unless_regex() -> None:
    assert not compile_search("a.b", regex=False)("axb")
    assert compile_search("a.b", regex=False)("a.b")
    assert compile_search("a.b", regex=True)("axb")
    assert compile_search("(", regex=False)("f(x)")  # no error: a literal is never a bad regex


@pytest.mark.parametrize("pattern", [r"(\w+)\1", r"foo(?=bar)", r"(?<!x)y", r"(?P<n>a)(?P=n)", "(", "a{1000}{1000}"])
def test_what_re2_cannot_run_is_one_line_saying_so(pattern: str) -> None:
    with pytest.raises(PatternError) as e:
        compile_search(pattern, regex=True)
    message = str(e.value)
    assert "\n" not in message and "RE2" in message and "regex=false" in message


def test_search_reports_an_unsupported_pattern_as_a_structured_error(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("abab\n")
    r = call(Workspace(tmp_path), "search", pattern=r"(ab)\1", regex=True)
    assert r.error is not None and r.error.kind == "invalid_argument" and r.error.argument == "pattern"
    assert r.content.startswith("error (invalid_argument): pattern is not a regular expression RE2 can run (")


def test_dollar_means_the_end_of_a_line(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\r\ny = 2\nz = 3")
    r = call(Workspace(tmp_path), "search", pattern=r"= \d$", regex=True)
    assert r.content.splitlines()[:3] == ["a.py:1: x = 1", "a.py:2: y = 2", "a.py:3: z = 3"]


def test_a_long_search_is_stopped_at_the_tools_timeout(tmp_path: Path) -> None:
    # Matching line by line gives the interpreter back between lines, so the dispatcher's
    # timeout (and a Ctrl-C in the main thread) is answered; a single backtracking re call is not.
    from localagent.messages import ToolCall
    from toolcalls import dispatcher

    for i in range(8):
        (tmp_path / f"f{i}.txt").write_text(("a" * 60 + "\n") * 25_000)
    d = dispatcher(Workspace(tmp_path))
    search = d.tools.get("search")
    assert search is not None
    search.timeout = 0.2
    start = time.perf_counter()
    r = d.run([ToolCall("c", "search", {"pattern": "(a|aa)+b", "regex": True})])[0]
    assert r.error is not None and r.error.kind == "timeout", r.content
    assert time.perf_counter() - start < 1.0


# The agent runs the search (in its worker thread, as every tool) on a folder whose lines make
# Python's re backtrack for minutes; the child says "go" just before, the test presses Ctrl-C.
INTERRUPTED_CHILD = """
import sys, time
from pathlib import Path
from localagent import Agent
from localagent.backends.fake import FakeBackend, call_text
from localagent.tools.builtin import workspace_tools
from localagent.tools.workspace import Workspace
root = Path(sys.argv[1])
fake = FakeBackend.scripted([call_text("search", pattern=sys.argv[2], regex=True), "Nothing found."])
agent = Agent(fake, workspace_tools(Workspace(root), write=False), root=root)
print("go", flush=True)
r = agent.run("Find it.")
print(r.stop_reason.value, flush=True)
"""


@pytest.fixture(scope="module")
def slow_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~150 MB of lines like 'def aaa...a():' to search (one file, hard-linked: no disk used),
    several seconds of work for RE2 and hours for a backtracking engine on any of them."""
    root = tmp_path_factory.mktemp("slow")
    line = "def " + "a" * 30 + "():\n"
    first = root / "m0.py"
    first.write_text(line * (1_900_000 // len(line)))
    for i in range(1, 80):
        os.link(first, root / f"m{i}.py")
    return root


@pytest.mark.parametrize("pattern", [r"(\w+\s?)*;", r"(a|a)*b", r"(.*a){12}x"])
def test_ctrl_c_is_answered_within_a_second_whatever_the_pattern(slow_folder: Path, pattern: str) -> None:
    argv = [sys.executable, "-c", INTERRUPTED_CHILD, str(slow_folder), pattern]
    code, out, err, answered = _ctrl_c(argv, {**os.environ, "TERM": "dumb"}, "stdout", "go", 0.5)
    assert code == 0 and out.strip() == "interrupted", err[-2000:]
    assert answered < 1.0, f"Ctrl-C answered after {answered:.2f} s"


def _ctrl_c(argv: list[str], env: dict[str, str], stream: str, ready: str, delay: float) -> tuple[int, str, str, float]:
    """Start ``argv``, press Ctrl-C ``delay`` s after a line of ``stream`` starts with ``ready``
    (the search is under way); its exit code, output, errors, and the seconds it took to exit."""
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = getattr(proc, stream)
        while not (line := lines.readline()).startswith(ready):
            assert line, f"{ready!r} never came on {stream}"
        time.sleep(delay)
        assert proc.poll() is None, "the search ended before Ctrl-C: make the files larger"
        pressed = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        return proc.returncode, out, err, time.monotonic() - pressed
    finally:
        proc.kill()


@pytest.fixture(scope="module")
def long_lines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files of one 1.9 MB line of random a and b (hard-linked: no disk used), on which one RE2
    call with RE2_SLOW takes about half a second inside C++, the interpreter lock released."""
    root = tmp_path_factory.mktemp("long")
    first = root / "l0.txt"
    first.write_bytes(bytes(b"ab"[x & 1] for x in random.Random(1).randbytes(1_900_000)) + b"\n")
    for i in range(1, 12):
        os.link(first, root / f"l{i}.txt")
    return root


RE2_SLOW = r"a[ab]{20}c"  # linear, but its DFA outgrows RE2's memory on random text: the slow path
FAKE_CLI = str(Path(__file__).with_name("fake_cli.py"))


@pytest.mark.parametrize("delay", [0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75])  # across one call's length
def test_ctrl_c_while_re2_is_inside_one_long_call_exits_130_at_once(long_lines: Path, tmp_path: Path, delay: float) -> None:
    # The tool's thread is inside one RE2 call when the run ends. Had the interpreter finalized
    # around it, the thread, let go of inside C++, would end in std::terminate: an abort with
    # llama.cpp's gdb backtrace on the screen, seconds after the answer.
    replies = [["search", {"pattern": RE2_SLOW, "regex": True}], "Nothing found."]
    env = dict(os.environ, FAKE_REPLIES=json.dumps(replies), TERM="dumb", LOCALAGENT_TRACES=str(tmp_path))
    argv = [sys.executable, FAKE_CLI, "run", "Find it.", "--root", str(long_lines)]
    code, out, err, answered = _ctrl_c(argv, env, "stderr", "→ search(", delay)  # shown as the tool starts
    assert code == 130, err[-2000:]
    assert out.startswith("[stopped: interrupted]")
    for sign in ("#0 ", "terminate", "Abort", "gdb", "Inferior"):
        assert sign not in out and sign not in err, (out + err)[-3000:]
    assert answered < 1.0, f"exit {answered:.2f} s after Ctrl-C"
