"""The warm-start cache on disk, with llama.cpp's state functions replaced by a stand-in:
a save that is killed or interrupted at any point leaves nothing that a later load uses,
and nothing half-written that stays. (The real state files: test_real_warm_start.py.)"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from localagent.backends import prefix_cache
from localagent.backends.prefix_cache import PrefixCache

TOKENS = [11, 22, 33, 44]
KEY = "k" * 32


def _save_file(ctx: Any, path: bytes, tokens: Any, n: int) -> bool:
    Path(path.decode()).write_bytes(json.dumps(list(tokens[:n])).encode() + b"\n" + b"kv" * 50_000)
    return True


def _load_file(ctx: Any, path: bytes, out: Any, capacity: int, n_out: Any) -> bool:
    head = Path(path.decode()).read_bytes().split(b"\n", 1)[0]
    try:
        tokens = json.loads(head)
    except ValueError:
        return False
    if len(tokens) > capacity:
        return False
    for i, t in enumerate(tokens):
        out[i] = t
    n_out._obj.value = len(tokens)
    return True


FAKE = SimpleNamespace(llama_token=ctypes.c_int32, llama_state_save_file=_save_file, llama_state_load_file=_load_file)


@pytest.fixture(autouse=True)
def _fake_llama(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prefix_cache, "llama_cpp", FAKE)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


def test_saved_then_loaded(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path)
    assert not cache.load(None, KEY, TOKENS)
    assert cache.save(None, KEY, TOKENS)
    assert cache.load(None, KEY, TOKENS)
    assert not cache.load(None, KEY, TOKENS + [55])  # not for these tokens: dropped
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["state write", "checksum", "state rename", "checksum rename"])
def test_an_interrupt_at_any_point_of_a_save_leaves_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    cache = PrefixCache(tmp_path)
    replaced: list[str] = []

    def save_half(ctx: Any, path: bytes, tokens: Any, n: int) -> bool:
        Path(path.decode()).write_bytes(b"[11, 2")
        raise KeyboardInterrupt

    def sha_then_stop(path: Path) -> str:
        raise KeyboardInterrupt

    def replace(src: Any, dst: Any) -> None:
        replaced.append(str(dst))
        if (where == "state rename") or (where == "checksum rename" and len(replaced) == 2):
            raise KeyboardInterrupt
        os.rename(src, dst)

    if where == "state write":
        monkeypatch.setattr(FAKE, "llama_state_save_file", save_half)
    elif where == "checksum":
        monkeypatch.setattr(prefix_cache, "_sha256", sha_then_stop)
    else:
        monkeypatch.setattr(prefix_cache.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        cache.save(None, KEY, TOKENS)
    monkeypatch.undo()
    monkeypatch.setattr(prefix_cache, "llama_cpp", FAKE)
    assert _leftovers(tmp_path) == []
    # The state went into place but its checksum did not: never used, dropped, rebuilt.
    assert not cache.load(None, KEY, TOKENS)
    assert list(tmp_path.iterdir()) == []
    assert cache.save(None, KEY, TOKENS) and cache.load(None, KEY, TOKENS)


@pytest.mark.parametrize("damage", ["no checksum", "torn checksum", "old checksum", "torn state"])
def test_an_entry_a_kill_could_leave_is_never_loaded(tmp_path: Path, damage: str) -> None:
    cache = PrefixCache(tmp_path)
    assert cache.save(None, KEY, TOKENS)
    state, digest = tmp_path / f"{KEY}.state", tmp_path / f"{KEY}.sha256"
    if damage == "no checksum":
        digest.unlink()
    elif damage == "torn checksum":
        digest.write_text(digest.read_text()[:20])
    elif damage == "old checksum":
        state.write_bytes(state.read_bytes().replace(b"kv", b"vk", 1))  # a newer state, an older checksum
    else:
        state.write_bytes(state.read_bytes()[:1000])
    assert not cache.load(None, KEY, TOKENS)
    assert not state.exists() and not digest.exists()


KILLED_SAVE = """
import ctypes, os, sys, time
from pathlib import Path
from types import SimpleNamespace
from localagent.backends import prefix_cache

def save_slowly(ctx, path, tokens, n):
    with open(path, "wb") as f:
        f.write(b"[11, 22, 33, 44]\\n" + b"kv" * 1000)
        f.flush()
        Path(sys.argv[2]).touch()
        time.sleep(60)  # killed here
    return True

prefix_cache.llama_cpp = SimpleNamespace(llama_token=ctypes.c_int32, llama_state_save_file=save_slowly)
prefix_cache.PrefixCache(Path(sys.argv[1])).save(None, "k" * 32, [11, 22, 33, 44])
"""


def test_a_save_killed_mid_write_is_never_loaded_and_its_file_is_removed(tmp_path: Path) -> None:
    folder, started = tmp_path / "prefix", tmp_path / "started"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_SAVE, str(folder), str(started)])
    end = time.monotonic() + 30
    while not started.exists():
        assert proc.poll() is None and time.monotonic() < end
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    [left] = _leftovers(folder)  # the killed save's temporary file, and nothing else
    assert left == f"{KEY}.state.{proc.pid}.partial"
    cache = PrefixCache(folder)
    assert not cache.load(None, KEY, TOKENS)  # no entry: the half-written file is not one
    assert cache.save(None, KEY, TOKENS)  # the next save removes the dead run's file
    assert _leftovers(folder) == [] and cache.load(None, KEY, TOKENS)


def test_a_live_save_of_another_process_is_left_alone(tmp_path: Path) -> None:
    other = tmp_path / f"{KEY}.state.{os.getppid()}.partial"  # a process that is alive
    other.write_bytes(b"being written")
    assert PrefixCache(tmp_path).save(None, KEY, TOKENS)
    assert other.exists()


def test_vocabulary_masks_come_back_as_saved_or_not_at_all(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"weights")
    masks = PrefixCache(tmp_path / "cache").masks(model)
    mask = np.random.default_rng(0).random(1001) < 0.3
    assert masks.get("structured", 1001) is None  # nothing saved yet
    masks.put("structured", mask)
    assert (masks.get("structured", 1001) == mask).all()
    assert masks.get("structured", 1000) is None  # another vocabulary's length
    assert masks.get("other", 1001) is None
    assert not list((tmp_path / "cache").glob("*.partial"))
    path = next((tmp_path / "cache").glob("*.mask"))
    for damage in (lambda b: b[:-1], lambda b: b[:40] + bytes([b[40] ^ 1]) + b[41:], lambda b: b""):
        path.write_bytes(damage(path.read_bytes()))
        assert masks.get("structured", 1001) is None
        masks.put("structured", mask)
    model.write_bytes(b"other weights")  # the file changed: its masks are not its own
    assert PrefixCache(tmp_path / "cache").masks(model).get("structured", 1001) is None
