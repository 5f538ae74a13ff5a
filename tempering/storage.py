"""Paths and URLs: the one module that opens remote files (fsspec; s3fs for `s3://`).

A run at a URL is worked on in a local mirror and published here, a checkpoint at a time:

    <run>/config.yaml, metrics.jsonl, store.sqlite, ...   top-level files, each written whole
    <run>/checkpoints/step-N/...                          the checkpoint's files
    <run>/checkpoints/step-N.manifest.json                written LAST: {step, files: [{path, size, sha256}]}

A checkpoint is visible only once its manifest is; `latest_complete` takes the newest manifest
whose files are all there with their sizes. A `step-N/` without a manifest is a cut upload: it
is ignored, and the next `publish_checkpoint` deletes it.

Credentials come from the usual AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_PROFILE); the endpoint of an S3-compatible store from `configure(endpoint_url)`
(the config's storage.endpoint_url), else TEMPERING_S3_ENDPOINT or AWS_ENDPOINT_URL.

Uploads here are synchronous and tried once (beyond botocore's own retries); the trainer
publishes in a background thread and retries (trainer/remote.py). Only s3 is tested.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Iterator

import fsspec

from tempering.errors import ModelNotFoundError, StorageError

_ENDPOINT: str | None = None
_MANIFEST = re.compile(r"^step-(\d+)\.manifest\.json$")
_STEP_DIR = re.compile(r"^step-(\d+)$")
_SKIPPED = ("-wal", "-shm", "-journal", ".tmp")  # never published: SQLite side files, half-written files
_CHUNK = 1 << 20


def configure(endpoint_url: str | None) -> None:
    """Set the S3 endpoint (storage.endpoint_url); None or "" falls back to the environment."""
    global _ENDPOINT
    _ENDPOINT = endpoint_url or None


def endpoint_url() -> str | None:
    return _ENDPOINT or os.environ.get("TEMPERING_S3_ENDPOINT") or os.environ.get("AWS_ENDPOINT_URL") or None


def is_remote(url: str | os.PathLike) -> bool:
    """True for `proto://...` other than file:// (which is a local path)."""
    proto, sep, _ = str(url).partition("://")
    return bool(sep) and proto not in ("file", "local")


def join(url: str, *parts: str) -> str:
    return "/".join([str(url).rstrip("/"), *parts])


def filesystem(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec filesystem of `url` and the path inside it (listing caches off: other machines write too)."""
    fs, path = fsspec.core.url_to_fs(str(url), **_options(url))
    return fs, path.rstrip("/")


def _options(url: str) -> dict:
    """s3fs options: the endpoint, bounded retries, and the environment's keys passed explicitly
    (fsspec caches filesystems by their options: new keys must make a new one)."""
    if not str(url).startswith(("s3://", "s3a://")):
        return {}
    env = {"key": "AWS_ACCESS_KEY_ID", "secret": "AWS_SECRET_ACCESS_KEY", "token": "AWS_SESSION_TOKEN"}
    return {"endpoint_url": endpoint_url(), "use_listings_cache": False,
            "config_kwargs": {"connect_timeout": 5, "read_timeout": 60, "retries": {"max_attempts": 2}},
            **{k: os.environ[v] for k, v in env.items() if os.environ.get(v)}}


@contextlib.contextmanager
def _errors(what: str) -> Iterator[None]:
    """Turn an I/O failure of the store into one StorageError line; bugs keep their traceback."""
    try:
        yield
    except StorageError:
        raise
    except Exception as e:  # noqa: BLE001 - s3fs raises OSError, botocore and aiohttp errors alike
        if not (isinstance(e, OSError) or type(e).__module__.split(".")[0] in ("botocore", "aiobotocore", "aiohttp")):
            raise
        reason = " ".join(str(e).split()) or type(e).__name__
        raise StorageError(f"{what}: {type(e).__name__}: {reason}") from e


def exists(url: str) -> bool:
    with _errors(f"checking {url}"):
        fs, path = filesystem(url)
        return fs.exists(path)


def ls(url: str) -> list[str]:
    """Names directly under `url` (files and folders), sorted; [] where there is nothing."""
    with _errors(f"listing {url}"):
        fs, path = filesystem(url)
        if not fs.exists(path):
            return []
        return _names(fs, path)


def _names(fs, path: str) -> list[str]:
    """Names under a folder; some stores (SeaweedFS) list an empty folder as itself."""
    return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False) if p.rstrip("/") != path)


def open(url: str, mode: str = "rb"):  # noqa: A001 - the fsspec name
    """An open file at a URL or local path (read streaming; a write lands when it is closed)."""
    with _errors(f"opening {url}"):
        return fsspec.open(str(url), mode, **_options(url)).open()


def read_bytes(url: str) -> bytes:
    """A whole file's bytes, in one StorageError where the store fails."""
    with _errors(f"reading {url}"):
        fs, path = filesystem(url)
        return fs.cat_file(path)


def put(local: Path, url: str) -> None:
    """Upload one file whole: to `url.tmp`, then moved to `url`, so a reader never sees half of it."""
    with _errors(f"uploading {local} to {url}"):
        fs, path = filesystem(url)
        if not is_remote(url):
            fs.makedirs(fs._parent(path), exist_ok=True)  # object stores have no folders to make
        fs.put_file(str(local), path + ".tmp")
        fs.mv(path + ".tmp", path)


def get(url: str, local: Path) -> None:
    """Download one file whole: to `local.tmp`, then renamed."""
    with _errors(f"downloading {url}"):
        fs, path = filesystem(url)
        local.parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(path, str(local) + ".tmp")
        os.replace(str(local) + ".tmp", local)


def rm(url: str, recursive: bool = False) -> None:
    with _errors(f"deleting {url}"):
        fs, path = filesystem(url)
        if fs.exists(path):
            fs.rm(path, recursive=recursive)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def _entries(ckpt: Path) -> list[dict]:
    """The manifest's file list: every file under the checkpoint, relative, with size and sha256."""
    files = sorted(p for p in ckpt.rglob("*") if p.is_file())
    return [{"path": p.relative_to(ckpt).as_posix(), "size": p.stat().st_size, "sha256": _sha256(p)} for p in files]


def _steps(fs, root: str) -> tuple[list[int], list[int]]:
    """(steps with a manifest, steps with files in a step-N folder), each sorted. Folders are
    found by their files: some stores (SeaweedFS) keep a folder emptied by a delete."""
    ckpts = f"{root}/checkpoints"
    rel = [p[len(ckpts) + 1:] for p in fs.find(ckpts)] if fs.exists(ckpts) else []
    manifests = sorted(int(m.group(1)) for n in rel if (m := _MANIFEST.match(n)))
    folders = sorted({int(m.group(1)) for n in rel if "/" in n and (m := _STEP_DIR.match(n.split("/")[0]))})
    return manifests, folders


def publish_checkpoint(ckpt: Path, run_url: str, step: int, keep: int = 0) -> None:
    """Upload checkpoint folder `ckpt` as step-N, then its manifest (last); delete cut uploads
    first and, with keep > 0, all but the newest `keep` complete checkpoints after."""
    with _errors(f"could not publish checkpoint step-{step} to {run_url}"):
        fs, root = filesystem(run_url)
        manifests, folders = _steps(fs, root)
        if step in manifests:  # republished (a resumed run redoing a step): invisible until rewritten
            fs.rm(f"{root}/checkpoints/step-{step}.manifest.json")
        for cut in set(folders) - set(manifests) - {step}:
            fs.rm(f"{root}/checkpoints/step-{cut}", recursive=True)
        entries = _entries(ckpt)
        for e in entries:
            _upload(fs, ckpt / e["path"], f"{root}/checkpoints/step-{step}/{e['path']}")
        manifest = json.dumps({"step": step, "files": entries}, indent=1).encode()
        fs.pipe_file(f"{root}/checkpoints/step-{step}.manifest.json", manifest)
        if keep > 0:
            _prune(fs, root, keep)


def _upload(fs, local: Path, path: str) -> None:
    """One file of a checkpoint, straight to its place (its manifest, written last, makes it count)."""
    fs.put_file(str(local), path)


def _prune(fs, root: str, keep: int) -> None:
    """Delete old checkpoints: the manifest first (the checkpoint vanishes at once), then its files."""
    manifests, _ = _steps(fs, root)
    for old in manifests[:-keep]:
        fs.rm(f"{root}/checkpoints/step-{old}.manifest.json")
        if fs.find(f"{root}/checkpoints/step-{old}"):
            fs.rm(f"{root}/checkpoints/step-{old}", recursive=True)


def _manifest(fs, root: str, step: int) -> dict:
    return json.loads(fs.cat_file(f"{root}/checkpoints/step-{step}.manifest.json"))


def latest_complete(run_url: str) -> int | None:
    """The newest step whose manifest exists and whose listed files all exist with their sizes."""
    with _errors(f"reading the checkpoints of {run_url}"):
        fs, root = filesystem(run_url)
        manifests, _ = _steps(fs, root)
        for step in reversed(manifests):
            folder = f"{root}/checkpoints/step-{step}"
            sizes = {p: info["size"] for p, info in fs.find(folder, detail=True).items()} if fs.exists(folder) else {}
            if all(sizes.get(f"{folder}/{e['path']}") == e["size"] for e in _manifest(fs, root, step)["files"]):
                return step
        return None


def fetch_checkpoint(run_url: str, step: int, run_dir: Path) -> Path:
    """Download complete checkpoint step-N into run_dir/checkpoints/step-N, each file checked
    against the manifest's sha256; written to step-N.tmp and renamed, as a local save is."""
    final = run_dir / "checkpoints" / f"step-{step}"
    tmp = final.with_name(final.name + ".tmp")
    with _errors(f"could not download checkpoint step-{step} of {run_url}"):
        fs, root = filesystem(run_url)
        shutil.rmtree(tmp, ignore_errors=True)
        for e in _manifest(fs, root, step)["files"]:
            local = tmp / e["path"]
            local.parent.mkdir(parents=True, exist_ok=True)
            fs.get_file(f"{root}/checkpoints/step-{step}/{e['path']}", str(local))
            if _sha256(local) != e["sha256"]:
                raise StorageError(f"checkpoint step-{step} of {run_url}: {e['path']} does not match its manifest's "
                                   "sha256; the store changed under the run: resume from another checkpoint")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final


def sync_run_files(run_dir: Path, run_url: str) -> None:
    """Upload every top-level file of the run (config, metrics, store, report), each whole, from
    a snapshot taken now (snapshot_run_files)."""
    with _errors(f"could not sync the run files of {run_dir} to {run_url}"):
        with tempfile.TemporaryDirectory() as tmp:
            snapshot_run_files(run_dir, Path(tmp))
            put_run_files(Path(tmp), run_url)


def snapshot_run_files(run_dir: Path, dest: Path) -> list[Path]:
    """Copy every top-level file of the run into `dest` as it is now: a SQLite file through
    SQLite's backup API (a consistent copy while the trainer writes), the others byte for byte
    (metrics.jsonl is appended to in place: a link would grow under the upload). Returns the copies."""
    dest.mkdir(parents=True, exist_ok=True)
    copies = []
    for path in sorted(p for p in run_dir.iterdir() if p.is_file() and not p.name.endswith(_SKIPPED)):
        copies.append(dest / path.name)
        if path.suffix == ".sqlite":
            _sqlite_copy(path, copies[-1])
        else:
            shutil.copyfile(path, copies[-1])
    return copies


def put_run_files(snapshot: Path, run_url: str) -> None:
    """Upload the files of a snapshot (snapshot_run_files) as the run's top-level files, each whole."""
    with _errors(f"could not sync the run files to {run_url}"):
        for path in sorted(p for p in snapshot.iterdir() if p.is_file()):
            put(path, join(run_url, path.name))


def _sqlite_copy(src: Path, dst: Path) -> None:
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


@contextlib.contextmanager
def run_files_copy(run_url: str) -> Iterator[Path]:
    """A temporary local folder holding the run's top-level files (store, metrics, config), for
    commands that read a run (`temper report`, `temper runs show`); deleted afterwards."""
    with tempfile.TemporaryDirectory(prefix="tempering-run-") as tmp:
        fetch_run_files(run_url, Path(tmp))
        yield Path(tmp)


def fetch_run_files(run_url: str, run_dir: Path) -> list[str]:
    """Download every top-level file of the run into run_dir (stale SQLite side files removed). Returns the names."""
    with _errors(f"could not download the run files of {run_url}"):
        fs, root = filesystem(run_url)
        if not fs.exists(root):
            return []
        names = [i["name"].rsplit("/", 1)[-1] for i in fs.ls(root, detail=True)
                 if i["type"] == "file" and i["name"].rstrip("/") != root]
        names = [n for n in names if not n.endswith(_SKIPPED)]
        for name in names:
            for side in ("-wal", "-shm"):
                (run_dir / (name + side)).unlink(missing_ok=True)
            get(join(run_url, name), run_dir / name)
        return names


def files(url: str) -> dict[str, int]:
    """Every file under `url`, at any depth, by its path relative to `url`, with its size; {} where
    there is nothing. Half-written files (`.tmp`) are left out."""
    with _errors(f"listing {url}"):
        fs, root = filesystem(url)
        if not fs.exists(root):
            return {}
        found = fs.find(root, detail=True)
        return {p[len(root) + 1:]: info["size"] for p, info in sorted(found.items())
                if p.startswith(root + "/") and not p.endswith(".tmp")}


def open_stream(url: str, block_size: int):
    """A file at a URL for reading front to back, fetched `block_size` bytes at a time: a corpus's
    first rows arrive before the rest of it is downloaded."""
    with _errors(f"opening {url}"):
        fs, path = filesystem(url)
        return fs.open(path, "rb", block_size=block_size, cache_type="readahead")


_NOT_MODEL = ("optimizer.pt", "trainer_state.json", "critic/")  # a checkpoint's trainer state: not the model


def fetch_model(url: str, cache: Path) -> Path:
    """A model at a URL as a local Hugging Face directory under `cache`, downloaded once:

        s3://b/run/checkpoints/step-N    a published checkpoint (manifest-checked, sha256 per file)
        s3://b/run                       the run's newest complete checkpoint
        s3://b/models/my-model           any folder holding config.json, downloaded whole

    A checkpoint's optimizer and trainer state are left out. The copy is keyed by the checkpoint's
    manifest (a republished step-N is fetched again), a plain folder by its file names and sizes."""
    url = str(url).rstrip("/")
    run_url, _, tail = url.rpartition("/checkpoints/")
    step = int(m.group(1)) if run_url and (m := _STEP_DIR.match(tail)) else None
    if step is None or not exists(join(run_url, "checkpoints", f"step-{step}.manifest.json")):
        run_url, step = url, latest_complete(url)
    with _errors(f"could not download the model at {url}"):
        fs, root = filesystem(run_url)
        if step is not None:
            folder = f"{root}/checkpoints/step-{step}"
            listing = fs.cat_file(f"{root}/checkpoints/step-{step}.manifest.json")
            entries = [e for e in json.loads(listing)["files"] if not e["path"].startswith(_NOT_MODEL)]
        else:
            folder = root
            entries = [{"path": p, "size": n, "sha256": None} for p, n in files(url).items()]
            listing = json.dumps(entries).encode()
            if not any(e["path"] == "config.json" for e in entries):
                raise ModelNotFoundError(f"model {url!r} not found: it is neither a published checkpoint, nor a run "
                                         "with one, nor a folder holding a Hugging Face model (config.json)")
        source = f"{run_url}/checkpoints/step-{step}" if step is not None else url  # one copy, however it is named
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", source.split("://", 1)[-1]).strip("_")[-60:]
        final = cache / f"{slug}-{hashlib.sha256(source.encode() + listing).hexdigest()[:12]}"
        if (final / "config.json").is_file():
            return final
        tmp = final.with_name(final.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        for e in entries:
            local = tmp / e["path"]
            local.parent.mkdir(parents=True, exist_ok=True)
            fs.get_file(f"{folder}/{e['path']}", str(local))
            if e["sha256"] is not None and _sha256(local) != e["sha256"]:
                raise StorageError(f"model {url}: {e['path']} does not match its manifest's sha256; the store "
                                   "changed under the checkpoint")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final
