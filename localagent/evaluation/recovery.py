"""Recovery from wrong paths: tasks that name a file that is not there, and their measure.

Each task builds a small folder, names a *wrong* path for the file that holds the answer (a
typo, the wrong folder, the wrong case, a folder where a file is needed) and says which
distinctive fact the answer must carry. ``run_recovery`` runs the agent on each task in a
fresh temporary folder and records whether it recovered: answered, with the fact, after a
successful ``read_file`` of the right file (or a ``search`` within it). It also records whether the validator's error
(``not_found`` with ``closest: ...``, or ``not_a_file`` listing the folder's files) was what
the model had to recover from: under state-aware grammars the wrong path usually cannot even
be generated, so that path is exercised far less often.

The task set is data (pure); only ``run_recovery`` touches a model.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..backends.base import Backend
from ..errors import ErrorKind
from ..tools.builtin import workspace_tools
from ..loop import Agent, AgentConfig
from ..prompt import load_prompt
from ..stops import Limits, StopReason
from ..tools.workspace import Workspace

__all__ = ["KINDS", "RecoveryTask", "TASKS", "build", "recovery_outcome", "run_recovery", "summarize"]

Kind = Literal["misspelt", "wrong_folder", "wrong_case", "folder_for_file"]
KINDS: tuple[Kind, ...] = ("misspelt", "wrong_folder", "wrong_case", "folder_for_file")
PATH_ERRORS = frozenset({ErrorKind.NOT_FOUND, ErrorKind.NOT_A_FILE})  # this write-up's own: not not_a_dir

# Present in every task's folder unless the task defines the same path: something to be
# confused with, and more than one choice for the grammar.
BASE_FILES: dict[str, str] = {
    "README.md": "# demo\n\nA small demo project. Nothing to see here.\n",
    "src/util.py": "def add(a, b):\n    return a + b\n",
}


@dataclass(frozen=True)
class RecoveryTask:
    """One task that names ``wrong`` where ``target`` (holding ``expected``) is meant."""

    id: str
    kind: Kind
    files: dict[str, str]  # path -> content, besides BASE_FILES
    wrong: str  # the path the task names; it does not exist as a file
    target: str  # the file that answers the task
    task: str  # the text given to the agent; it names ``wrong``
    expected: str  # a substring the answer must hold (compared ignoring case)
    base: bool = field(default=True)  # add BASE_FILES

    def all_files(self) -> dict[str, str]:
        return {**(BASE_FILES if self.base else {}), **self.files}


def _t(id: str, kind: Kind, files: dict[str, str], wrong: str, target: str, task: str, expected: str) -> RecoveryTask:
    return RecoveryTask(id, kind, files, wrong, target, task, expected)


TASKS: list[RecoveryTask] = [
    # ── misspelt: a typo in the name ────────────────────────────────────────────────────
    _t("misspelt-main", "misspelt", {"src/main.py": "def main():\n    print('hello')\n\nVERSION = '3.2.1'\n"},
       "src/mian.py", "src/main.py", "What is VERSION set to in src/mian.py?", "3.2.1"),
    _t("misspelt-setup", "misspelt", {"docs/setup.md": "# Setup\n\nThe server listens on port 8731.\n"},
       "docs/setpu.md", "docs/setup.md", "Which port does the server listen on, according to docs/setpu.md?", "8731"),
    _t("misspelt-config", "misspelt", {"config.toml": "[server]\nhost = \"0.0.0.0\"\ntimeout_seconds = 47\n"},
       "confg.toml", "config.toml", "How many seconds is timeout_seconds in confg.toml?", "47"),
    _t("misspelt-notes", "misspelt", {"notes.txt": "The launch code is PURPLE-42.\n"},
       "ntoes.txt", "notes.txt", "What is the launch code written in ntoes.txt?", "PURPLE-42"),
    _t("misspelt-utils", "misspelt", {"lib/utils.py": "MAX_RETRIES = 17\n\ndef retry(f):\n    return f\n"},
       "lib/utlis.py", "lib/utils.py", "What is MAX_RETRIES in lib/utlis.py?", "17"),
    _t("misspelt-owners", "misspelt", {"docs/owners.txt": "The database is owned by Marta Kowalski.\n"},
       "docs/ownres.txt", "docs/owners.txt", "Who owns the database, according to docs/ownres.txt?", "Kowalski"),
    # ── wrong_folder: the right name in another folder ──────────────────────────────────
    _t("folder-database", "wrong_folder", {"conf/database.yml": "database:\n  host: db.local\n  port: 6543\n"},
       "src/database.yml", "conf/database.yml", "Which port is set in src/database.yml?", "6543"),
    _t("folder-wifi", "wrong_folder", {"notes.txt": "Wifi password: otter-lamp-77\n", "docs/index.md": "# Docs\n"},
       "docs/notes.txt", "notes.txt", "What is the wifi password written in docs/notes.txt?", "otter-lamp-77"),
    _t("folder-settings", "wrong_folder", {"src/app/settings.py": "THEME = 'solarized'\nLANGUAGE = 'en'\n"},
       "src/settings.py", "src/app/settings.py", "What is THEME set to in src/settings.py?", "solarized"),
    _t("folder-users", "wrong_folder", {"tests/fixtures/users.csv": "id,name\n1,Ada Lovelace\n2,Alan Turing\n"},
       "data/users.csv", "tests/fixtures/users.csv", "What is the name of user 1 in data/users.csv?", "Lovelace"),
    _t("folder-deploy", "wrong_folder", {"scripts/deploy.sh": "#!/bin/sh\nREGION=eu-north-7\necho deploying to $REGION\n"},
       "bin/deploy.sh", "scripts/deploy.sh", "Which REGION does bin/deploy.sh deploy to?", "eu-north-7"),
    _t("folder-limits", "wrong_folder", {"docs/api/limits.md": "# Limits\n\nThe rate limit is 350 requests per minute.\n"},
       "docs/limits.md", "docs/api/limits.md", "What is the rate limit, according to docs/limits.md?", "350"),
    # ── wrong_case: the right path in the wrong case ────────────────────────────────────
    _t("case-room", "wrong_case", {"notes.txt": "The meeting room is Saturn-3.\n"},
       "Notes.txt", "notes.txt", "Which meeting room is named in Notes.txt?", "Saturn-3"),
    _t("case-readme", "wrong_case", {"README.md": "# tool\n\nMaintainer: Ingrid Holm\n"},
       "readme.md", "README.md", "Who is the maintainer, according to readme.md?", "Holm"),
    _t("case-go", "wrong_case", {"src/main.go": "package main\n\nconst Port = 9412\n"},
       "SRC/main.go", "src/main.go", "What is the Port constant in SRC/main.go?", "9412"),
    _t("case-makefile", "wrong_case", {"Makefile": "CC = clang-17\n\nall:\n\t$(CC) main.c\n"},
       "makefile", "Makefile", "Which compiler does CC name in makefile?", "clang-17"),
    _t("case-faq", "wrong_case", {"docs/FAQ.md": "# FAQ\n\nRefunds are accepted within 45 days.\n"},
       "docs/faq.md", "docs/FAQ.md", "Within how many days are refunds accepted, according to docs/faq.md?", "45"),
    _t("case-settings", "wrong_case", {"config/Settings.json": "{\"locale\": \"pt-BR\", \"dark\": true}\n"},
       "config/settings.json", "config/Settings.json", "Which locale is set in config/settings.json?", "pt-BR"),
    # ── folder_for_file: a folder named where a file is needed ──────────────────────────
    _t("dir-docs", "folder_for_file", {"docs/setup.md": "# Setup\n\nThe server listens on port 8731.\n"},
       "docs", "docs/setup.md", "Read the file docs and tell me which port the server listens on.", "8731"),
    _t("dir-license", "folder_for_file", {"license/LICENSE.txt": "Copyright 2019 Brightwater Labs\n"},
       "license", "license/LICENSE.txt", "Who holds the copyright, according to the file license?", "Brightwater"),
    _t("dir-version", "folder_for_file", {"src/version/__init__.py": "__version__ = '7.4.0'\n"},
       "src/version", "src/version/__init__.py", "Which __version__ does the file src/version give?", "7.4.0"),
    _t("dir-todo", "folder_for_file", {"notes/todo.txt": "Next task: rotate the TLS keys.\n"},
       "notes", "notes/todo.txt", "What is the next task, according to the file notes?", "TLS"),
    _t("dir-config", "folder_for_file", {"config/app.env": "API_HOST=api.kestrel.dev\nAPI_PORT=443\n"},
       "config", "config/app.env", "Which API_HOST is set in the file config?", "kestrel"),
    _t("dir-prices", "folder_for_file", {"data/prices.csv": "item,price\nlamp,19.95\nchair,84.00\n"},
       "data", "data/prices.csv", "What is the price of a lamp in the file data?", "19.95"),
]


def build(task: RecoveryTask, root: Path) -> None:
    """Write the task's files under ``root``."""
    for rel, text in task.all_files().items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def recovery_outcome(task: RecoveryTask, records: list[Any], stop_reason: StopReason, answer: str) -> dict[str, Any]:
    """What a finished run shows about ``task`` (pure: from the run's step records)."""
    calls = []
    for rec in records:
        for c, r in zip(rec.calls, rec.results):
            calls.append(
                {
                    "name": c.name,
                    "arguments": c.arguments,
                    "error": r.error.kind if r.error else None,
                    "message": r.error.message if r.error else None,
                }
            )
    first: dict[str, Any] | None = calls[0] if calls else None
    first_failed = first is not None and first["error"] in PATH_ERRORS
    # The right file was looked into: read, or searched on its own (`search` with that path).
    read_target = any(
        c["name"] in ("read_file", "search") and c["error"] is None and c["arguments"].get("path") == task.target
        for c in calls
    )
    fact = task.expected.lower() in answer.lower()
    answered = stop_reason is StopReason.ANSWERED
    return {
        "id": task.id,
        "kind": task.kind,
        "wrong": task.wrong,
        "target": task.target,
        "stop_reason": stop_reason.value,
        "answered": answered,
        "fact_in_answer": fact,
        "read_target": read_target,
        "recovered": answered and fact and read_target,
        "first_call": {"name": first["name"], "arguments": first["arguments"]} if first else None,
        "first_call_failed": first_failed,  # the validator's message was needed
        "first_error": first["message"] if first and first_failed else None,
        "path_errors": sum(1 for c in calls if c["error"] in PATH_ERRORS),
        # read_file on a path that is not a file: under a state-aware grammar this must be 0
        "bad_reads": sum(1 for c in calls if c["name"] == "read_file" and c["error"] in PATH_ERRORS),
        "calls": calls,
        "answer": answer[:300],
    }


def run_recovery(
    backend: Backend,
    tasks: list[RecoveryTask],
    *,
    live_grammar: bool | Literal["after_error"],
    max_steps: int = 6,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run each task in a fresh temporary folder; per-task outcomes and their summary."""
    results = []
    for task in tasks:
        with tempfile.TemporaryDirectory(prefix="recovery-") as tmp:
            root = Path(tmp)
            build(task, root)
            cfg = AgentConfig(
                system_prompt=load_prompt("system").strip(),
                live_grammar=live_grammar,
                limits=Limits(max_steps=max_steps),
            )
            agent = Agent(backend, workspace_tools(Workspace(root), write=False), root=root, config=cfg)
            t0 = time.monotonic()
            r = agent.run(task.task)
            out = recovery_outcome(task, r.records, r.stop_reason, r.answer)
            out["steps"] = r.steps
            out["seconds"] = round(time.monotonic() - t0, 2)
        results.append(out)
        if on_result:
            on_result(out)
    return {
        "model": backend.name,
        "live_grammar": live_grammar,
        "max_steps": max_steps,
        "summary": summarize(results),
        "tasks": results,
    }


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per kind and overall: tasks, recovered, how often the error path was needed."""

    def counts(rs: list[dict[str, Any]]) -> dict[str, Any]:
        n = len(rs)
        rec = sum(r["recovered"] for r in rs)
        failed = [r for r in rs if r["first_call_failed"]]
        return {
            "tasks": n,
            "recovered": rec,
            "recovery_rate": round(100 * rec / n, 1) if n else 0.0,
            "answered": sum(r["answered"] for r in rs),
            "first_call_failed": len(failed),
            "recovered_after_error": sum(r["recovered"] for r in failed),
            "any_path_error": sum(r["path_errors"] > 0 for r in rs),
            "bad_reads": sum(r["bad_reads"] for r in rs),
            "mean_steps": round(sum(r.get("steps", 0) for r in rs) / n, 2) if n else 0.0,
        }

    by_kind = {k: counts([r for r in results if r["kind"] == k]) for k in KINDS}
    return {"overall": counts(results), "by_kind": {k: v for k, v in by_kind.items() if v["tasks"]}}
