"""Workspace paths and the glob patterns `fetch` takes, shared by the caller (which
checks what comes back) and the run (which looks the files up). Standard library only."""

from __future__ import annotations

import fnmatch
import os
import posixpath
import stat

MAX_ENTRIES = 20_000  # a fetch walks at most this many directory entries
TASK_DIRS = ("/app", "/tests")
"""Empty mount points in the root for Terminal-Bench-style tasks, whose files live at fixed
absolute paths: a session run may show its workspace at one of them (`workdir`) and get a
fresh, empty scratch tmpfs at others (`scratch`). Nothing is mounted there otherwise."""


class PathError(ValueError):
    pass


def clean_path(path: str) -> str:
    """A normalised path relative to the workspace; refuses absolute paths and '..'."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise PathError(f"bad file path {path!r}: give a non-empty path relative to the workspace")
    norm = posixpath.normpath(path.removeprefix("/workspace/"))
    if norm.startswith("/") or norm == ".." or norm.startswith("../") or norm == ".":
        raise PathError(f"file path {path!r} leaves the workspace: give a path relative to it")
    return norm


def has_magic(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def glob_match(pattern: str, path: str) -> bool:
    """Shell-style match segment by segment: `*` and `?` stay inside one directory,
    `**` spans any number of them (including none)."""
    return _match(pattern.split("/"), path.split("/"))


def _match(pat: list[str], parts: list[str]) -> bool:
    if not pat:
        return not parts
    if pat[0] == "**":
        return any(_match(pat[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pat[0]) and _match(pat[1:], parts[1:])


def find(pattern: str, root: str = ".") -> list[str]:
    """Regular files (or links to them) under `root` matching `pattern`, without following
    links into directories, so link loops cannot trap the walk."""
    found, seen = [], 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        seen += len(dirnames) + len(filenames)
        if seen > MAX_ENTRIES:
            raise OSError(f"more than {MAX_ENTRIES} entries under the workspace; give a narrower pattern")
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if glob_match(pattern, rel):
                found.append(rel)
    return sorted(found)


def read_files(patterns: list[str], max_bytes: int) -> dict:
    """Read the named files (or glob matches) from the current directory; at most
    `max_bytes` in all. Returns {"files": {path: bytes}, "errors": {path: message}}."""
    files: dict[str, bytes] = {}
    errors: dict[str, str] = {}
    total = 0
    for pattern in patterns:
        try:
            matches = find(pattern) if has_magic(pattern) else [pattern]
        except OSError as e:
            errors[pattern] = str(e)
            continue
        for path in matches:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as f:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise OSError(f"{path} is not a regular file")
                    data = f.read(max_bytes - total + 1)
                if total + len(data) > max_bytes:
                    raise OSError(f"the fetched files pass {max_bytes} bytes in all")
                total += len(data)
                files[path] = data
            except (OSError, ValueError) as e:
                errors[path] = str(e)
    return {"files": files, "errors": errors}


def expected(patterns: list[str], path: str) -> bool:
    """Could a read of `patterns` legitimately return `path`? (What the caller checks.)"""
    try:
        if clean_path(path) != path:
            return False
    except PathError:
        return False
    return any(glob_match(p, path) if has_magic(p) else p == path for p in patterns)


def check_task_dirs(session: str | None, workdir: str | None, scratch) -> None:
    """The only places `workdir` and `scratch` may name (see TASK_DIRS)."""
    scratch = list(scratch or ())
    if workdir is not None and (workdir not in TASK_DIRS or not session):
        raise ValueError(f"workdir {workdir!r}: a session run may show its workspace only at one of {TASK_DIRS}")
    if any(d not in TASK_DIRS or d == workdir for d in scratch) or len(set(scratch)) != len(scratch):
        raise ValueError(f"scratch {scratch!r}: give distinct entries of {TASK_DIRS} other than the workdir")
