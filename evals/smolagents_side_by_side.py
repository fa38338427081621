"""smolagents' ToolCallingAgent (its OpenAIServerModel) on 12 simple file tasks, against
``localagent serve`` and against llama-cpp-python's own server, same model, same tasks,
side by side in one run.

    flock /tmp/model.lock python evals/smolagents_side_by_side.py --model qwen2.5-coder-0.5b

Each server is started on the model, the 12 tasks run through it in fresh folders, and the
server stopped before the next starts. llama-cpp-python's server runs with the model's own
chat template (its default) and, with ``--functionary``, also with its constrained handler
(``--chat_format chatml-function-calling``). A task succeeds when the final answer matches
what the files hold, or when the files hold the change asked for and nothing else changed.
The record goes to evals/results/smolagents-MODEL.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import warnings
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import smolagents

from localagent.evaluation.llama_server import LlamaServer, llama_cpp_server, localagent_server

RESULTS = Path(__file__).resolve().parent / "results"
warnings.filterwarnings("ignore", message="Function '.*' has decorators")  # the tools are closures over their folder


@dataclass
class FileTask:
    """A prompt, the files before, and what must hold after: the answer matching
    ``answer`` (a regex), or the files in ``after`` holding these texts (``None``: gone)."""

    prompt: str
    files: dict[str, str]
    answer: str | None = None
    after: dict[str, str] = field(default_factory=dict)


TASKS = [
    FileTask("What is the launch code written in the notes folder?", {"notes/launch.txt": "The launch code is PURPLE-42.\n"}, r"PURPLE-42"),
    FileTask("What port does config.ini set?", {"config.ini": "[server]\nhost = 0.0.0.0\nport = 8443\n"}, r"8443"),
    FileTask("Which Python version does pyproject.toml require?",
             {"pyproject.toml": '[project]\nname = "starling"\nrequires-python = ">=3.10"\n'}, r"3\.10"),
    FileTask("What is the project called, according to README.md?", {"README.md": "# Starling\n\nA tiny weather app.\n"}, r"Starling"),
    FileTask("What is Alice's email address? It is in the contacts folder.",
             {"contacts/alice.txt": "Alice Moreau\nalice.moreau@example.org\n", "contacts/bob.txt": "Bob Stone\nbob@example.net\n"},
             r"alice\.moreau@example\.org"),
    FileTask("What version is package.json at?", {"package.json": '{\n  "name": "kite",\n  "version": "1.4.2"\n}\n'}, r"1\.4\.2"),
    FileTask("What does the function add in src/math_utils.py return?",
             {"src/math_utils.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"}, r"a\s*\+\s*b|sum"),
    FileTask("Which file in the docs folder explains how to set the API key?",
             {"docs/setup.md": "# Setup\n\nPut your API key in the KITE_KEY variable.\n", "docs/usage.md": "# Usage\n\nRun kite.\n"}, r"setup\.md"),
    FileTask("Create a file hello.txt containing the text: Hello, world!", {"notes.txt": "nothing here\n"}, after={"hello.txt": "Hello, world!"}),
    FileTask("In config.ini, change the port from 8080 to 9090.", {"config.ini": "[server]\nhost = 0.0.0.0\nport = 8080\n"},
             after={"config.ini": "port = 9090"}),
    FileTask("Add the line 'buy milk' at the end of todo.txt.", {"todo.txt": "call mum\nwater plants\n"},
             after={"todo.txt": "call mum\nwater plants\nbuy milk"}),
    FileTask("Write the word 'done' into status.txt, replacing what it says now.", {"status.txt": "pending\n"}, after={"status.txt": "done"}),
]


def file_tools(root: Path) -> list[Any]:
    """read_file, list_files and write_file in ``root``, as smolagents tools."""

    @smolagents.tool
    def read_file(path: str) -> str:
        """Read a text file.

        Args:
            path: The file's path, relative to the workspace.
        """
        return (root / path).read_text()

    @smolagents.tool
    def list_files(path: str = ".") -> str:
        """List the files and folders in a folder.

        Args:
            path: The folder's path, relative to the workspace ("." for the workspace itself).
        """
        return "\n".join(sorted(p.name + "/" * p.is_dir() for p in (root / path).iterdir()))

    @smolagents.tool
    def write_file(path: str, content: str) -> str:
        """Write a text file, replacing what it held.

        Args:
            path: The file's path, relative to the workspace.
            content: The whole new text of the file.
        """
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content)
        return f"wrote {path}"

    return [read_file, list_files, write_file]


def succeeded(task: FileTask, answer: str, root: Path) -> bool:
    if task.answer is not None:
        unchanged = all((root / p).is_file() and (root / p).read_text() == t for p, t in task.files.items())
        return bool(re.search(task.answer, answer, re.I)) and unchanged
    for rel, want in task.after.items():
        p = root / rel
        if not p.is_file() or want not in p.read_text().strip():
            return False
    return all((root / p).read_text() == t for p, t in task.files.items() if p not in task.after)


def run_task(url: str, task: FileTask, max_steps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="smol-") as tmp:
        root = Path(tmp)
        for rel, text in task.files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        model = smolagents.OpenAIServerModel(model_id="local", api_base=url + "/v1", api_key="none")
        agent = smolagents.ToolCallingAgent(tools=file_tools(root), model=model, max_steps=max_steps, verbosity_level=0)
        t0 = time.monotonic()
        try:
            answer, error = str(agent.run(task.prompt)), None
        except Exception as e:  # a framework error is a failed task, recorded
            answer, error = "", f"{type(e).__name__}: {e}"[:300]
        ok = succeeded(task, answer, root)
        steps = sum(isinstance(s, smolagents.ActionStep) for s in agent.memory.steps)
    return {"prompt": task.prompt, "success": ok, "answer": answer[:300], "error": error, "steps": steps, "seconds": round(time.monotonic() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--max-steps", type=int, default=6)
    ap.add_argument("--functionary", action="store_true", help="also llama-cpp-python's chatml-function-calling handler")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    arms: list[tuple[str, Callable[[], AbstractContextManager[LlamaServer]]]] = [
        ("localagent serve", lambda: localagent_server(a.model, n_ctx=a.ctx)),
        ("llama-cpp-python server, the model's template", lambda: llama_cpp_server(a.model, n_ctx=a.ctx)),
    ]
    if a.functionary:
        arms.append(("llama-cpp-python server, chatml-function-calling",
                     lambda: llama_cpp_server(a.model, n_ctx=a.ctx, extra=("--chat_format", "chatml-function-calling"))))
    out: dict[str, Any] = {"model": a.model, "max_steps": a.max_steps, "smolagents": smolagents.__version__, "tasks": len(TASKS), "arms": {}}
    for label, start in arms:
        with start() as server:
            runs = []
            for task in TASKS:
                runs.append(run_task(server.url, task, a.max_steps))
                print(f"[{label}] {'ok' if runs[-1]['success'] else 'FAIL'} {task.prompt[:50]!r} -> {runs[-1]['answer'][:60]!r}",
                      file=sys.stderr, flush=True)
        out["arms"][label] = {"success": sum(r["success"] for r in runs), "runs": runs,
                              "mean_steps": round(sum(r["steps"] for r in runs) / len(runs), 2),
                              "mean_seconds": round(sum(r["seconds"] for r in runs) / len(runs), 1)}
    path = a.out or RESULTS / f"smolagents-{a.model}.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for label, arm in out["arms"].items():
        print(f"{label:<52} {arm['success']}/{len(TASKS)}, {arm['mean_steps']} steps, {arm['mean_seconds']} s a task")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
