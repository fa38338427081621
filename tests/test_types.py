"""Every public signature is typed and checked: mypy over the package, as part of the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_mypy_passes() -> None:
    root = Path(__file__).resolve().parents[1]
    p = subprocess.run(
        [sys.executable, "-m", "mypy", "localagent"], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
