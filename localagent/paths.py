"""Where localagent keeps its files: the platform's own folders (platformdirs), each
one overridden by its ``LOCALAGENT_*`` environment variable.

On Linux these are the XDG folders (``~/.cache/localagent``, ``~/.local/state/localagent``,
``~/.config/localagent``, or wherever ``XDG_*_HOME`` points); on macOS and Windows the
folders those systems expect.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import platformdirs

APP = "localagent"
Kind = Literal["cache", "state", "config"]


def folder(kind: Kind, name: str = "", *, env: str | None = None) -> Path:
    """The ``kind`` folder (joined with ``name``), or ``$env`` when that is set and not empty."""
    if env and (value := os.environ.get(env)):
        return Path(value).expanduser()
    base = {
        "cache": platformdirs.user_cache_path,
        "state": platformdirs.user_state_path,
        "config": platformdirs.user_config_path,
    }[kind](APP, appauthor=False)
    return base / name if name else base
