"""A task: a prompt, the files of its workspace, and what must hold afterwards."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError


@dataclass
class Task:
    """One task. ``answer`` holds regexes the answer must all match (case-insensitive);
    ``files`` the workspace before; ``expect_files`` what named files must hold after
    (``{"exact": text}`` or ``{"contains": [regex, ...]}``); every other file must be
    unchanged and no other file created. ``evidence``: strings of which at least one
    appears in a successful tool result when the right thing was read."""

    id: str
    kind: str
    split: str
    prompt: str
    files: dict[str, str]
    answer: list[str] = field(default_factory=list)
    expect_files: dict[str, dict[str, Any]] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    needs_tool: bool = True

    @property
    def is_edit(self) -> bool:
        return bool(self.expect_files)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def materialize(self, root: Path) -> None:
        """Write the workspace under ``root``."""
        for rel, text in self.files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")


def load_tasks(path: Path) -> list[Task]:
    """Tasks from a JSONL file; a bad line is one ConfigError naming it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ConfigError(f"cannot read task file {path}: {e.strerror or e}") from None
    tasks = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            tasks.append(Task(**json.loads(line)))
        except (ValueError, TypeError) as e:
            raise ConfigError(f"{path}:{n}: not a task record ({e})") from None
    return tasks


def save_tasks(tasks: list[Task], path: Path) -> None:
    path.write_text("".join(json.dumps(t.to_dict(), ensure_ascii=False) + "\n" for t in tasks), encoding="utf-8")
