"""A warm start across runs: the KV state of the prompt prefix, kept on disk.

The system prompt and the tool definitions are the same from one run to the
next, so the state after evaluating them is saved once (keyed by the model
file, the chat template and the prefix tokens) and loaded instead of being
evaluated again. An entry is written to a temporary name and renamed into
place with a sha256 beside it; one that fails its checksum, or whose stored
tokens are not the prefix, is deleted and rebuilt, never used. A run killed
while saving leaves only a temporary file, never read, and removed by the next
save.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from ..paths import folder


def default_dir() -> Path:
    """``LOCALAGENT_PREFIX_CACHE``, else the user cache folder's ``prefix`` (``~/.cache/localagent/prefix`` on Linux)."""
    return folder("cache", "prefix", env="LOCALAGENT_PREFIX_CACHE")


def cache_key(model_path: Path, template: str, tokens: list[int], n_ctx: int) -> str:
    """Model identity (path, size, mtime), template, context size and prefix tokens."""
    st = model_path.stat()
    h = hashlib.sha256()
    h.update(f"{model_path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{n_ctx}|".encode())
    h.update(template.encode())
    h.update(b"|" + ",".join(map(str, tokens)).encode())
    return h.hexdigest()[:32]


def model_key(model_path: Path) -> str:
    """The model file's identity: path, size, mtime."""
    st = model_path.stat()
    return hashlib.sha256(f"{model_path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:32]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


class PrefixCache:
    """Save and load the KV state of a prompt prefix for one llama context."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder or default_dir()

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.folder / f"{key}.state", self.folder / f"{key}.sha256"

    def load(self, ctx: Any, key: str, tokens: list[int]) -> bool:
        """Load the state for ``key`` into ``ctx``; False (and the entry gone) if it is
        missing, corrupt or not for these tokens."""
        state, digest = self._paths(key)
        if not state.exists():
            return False
        try:
            ok = digest.read_text().strip() == _sha256(state)
        except OSError:
            ok = False
        if ok:
            out = (llama_cpp.llama_token * (len(tokens) + 1))()
            n = ctypes.c_size_t(0)
            ok = bool(llama_cpp.llama_state_load_file(ctx, str(state).encode(), out, len(tokens) + 1, ctypes.byref(n)))
            ok = ok and n.value == len(tokens) and list(out[: n.value]) == tokens
        if not ok:
            self.drop(key)
        return ok

    def save(self, ctx: Any, key: str, tokens: list[int]) -> bool:
        """Save the state of ``ctx`` (which holds exactly ``tokens``) under ``key``.

        Both files are written under temporary names and renamed into place, the checksum
        after the state: a run killed at any point leaves no entry, the old one, or a state
        whose checksum fails (deleted and rebuilt on load). Temporary files of runs that
        died are removed."""
        state, digest = self._paths(key)
        tmp = state.with_name(f"{state.name}.{os.getpid()}.partial")
        tmp_digest = digest.with_name(f"{digest.name}.{os.getpid()}.partial")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._remove_leftovers()
            arr = (llama_cpp.llama_token * len(tokens))(*tokens)
            if not llama_cpp.llama_state_save_file(ctx, str(tmp).encode(), arr, len(tokens)):
                return False
            tmp_digest.write_text(_sha256(tmp) + "\n")
            os.replace(tmp, state)
            os.replace(tmp_digest, digest)
            return True
        except OSError:
            return False
        finally:  # also on an interrupt: nothing half-written stays behind
            tmp.unlink(missing_ok=True)
            tmp_digest.unlink(missing_ok=True)

    def _remove_leftovers(self) -> None:
        """Delete the temporary files of saves whose process is gone (killed mid-write)."""
        for p in self.folder.glob("*.partial"):
            pid = p.suffixes[-2].lstrip(".") if len(p.suffixes) >= 2 else ""
            if pid.isdigit() and not _alive(int(pid)):
                try:
                    p.unlink(missing_ok=True)
                except OSError:  # not ours to delete: it is never read either way
                    pass

    def masks(self, model_path: Path) -> VocabMasks:
        """Where the masks over ``model_path``'s vocabulary are kept, beside its states."""
        return VocabMasks(self.folder, model_path)

    def drop(self, key: str) -> None:
        """Delete an entry (a stale or corrupt one)."""
        for p in self._paths(key):
            p.unlink(missing_ok=True)


class VocabMasks:
    """Boolean masks over one model's vocabulary, in files holding their length and a
    sha256 of it and the packed bits: one that fails either check is not used."""

    def __init__(self, folder: Path, model_path: Path):
        self.folder, self.model = folder, model_key(model_path)

    def _path(self, name: str) -> Path:
        return self.folder / f"{self.model}.{name}.mask"

    def get(self, name: str, n: int) -> np.ndarray | None:
        try:
            data = self._path(name).read_bytes()
        except OSError:
            return None
        digest, body = data[:32], data[32:]
        if hashlib.sha256(body).digest() != digest or int.from_bytes(body[:8], "little") != n:
            return None
        bits = np.frombuffer(body[8:], dtype=np.uint8)
        return np.unpackbits(bits, count=n).astype(bool) if len(bits) == (n + 7) // 8 else None

    def put(self, name: str, mask: np.ndarray) -> None:
        body = len(mask).to_bytes(8, "little") + np.packbits(mask.astype(bool)).tobytes()
        path = self._path(name)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")  # renamed into place whole
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(hashlib.sha256(body).digest() + body)
            os.replace(tmp, path)
        except OSError:
            pass  # not kept: worked out again next time
        finally:
            tmp.unlink(missing_ok=True)
