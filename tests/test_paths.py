"""Where files are kept: the platform's folders, each overridden by its LOCALAGENT_* variable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from localagent.backends import prefix_cache
from localagent.paths import folder
from localagent.trace import default_trace_dir


def test_the_variable_wins_and_an_empty_one_does_not(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOCALAGENT_TRACES", str(tmp_path / "t"))
    assert default_trace_dir() == tmp_path / "t"
    monkeypatch.setenv("LOCALAGENT_TRACES", "")
    assert default_trace_dir() == folder("state", "traces")
    monkeypatch.setenv("LOCALAGENT_PREFIX_CACHE", "~/kv")
    assert prefix_cache.default_dir() == Path.home() / "kv"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG folders are Linux's")
def test_linux_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for kind in ("cache", "state", "config"):
        monkeypatch.setenv(f"XDG_{kind.upper()}_HOME", str(tmp_path / kind))
    monkeypatch.delenv("LOCALAGENT_TRACES", raising=False)
    monkeypatch.delenv("LOCALAGENT_PREFIX_CACHE", raising=False)
    assert default_trace_dir() == tmp_path / "state" / "localagent" / "traces"
    assert prefix_cache.default_dir() == tmp_path / "cache" / "localagent" / "prefix"
    assert folder("config") == tmp_path / "config" / "localagent"
