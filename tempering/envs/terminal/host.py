"""What this host can stand in for: the packages a task would install in its image.

Without Docker nothing gets installed. A package a task asks for counts as present only
when the sandbox can already use it: an apt package when one of its programs is in
/usr/bin or /bin (the only program directories the sandbox shows), or, for packages
without programs (libraries, headers), when dpkg lists it as installed; a Python
requirement when the sandbox's own python3 can import it. Version pins are not checked:
the host's version stands in for the pinned one.
"""

from __future__ import annotations

import json
import os
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path

VISIBLE_BIN = ("/usr/bin", "/bin")
DPKG_INFO = Path("/var/lib/dpkg/info")
PACKAGE_PROGRAMS = {
    "binutils": ("strings", "objdump", "readelf"),
    "build-essential": ("gcc", "make"),
    "coreutils": ("ls",),
    "findutils": ("find",),
    "procps": ("ps",),
    "iproute2": ("ip",),
    "e2fsprogs": ("mke2fs", "debugfs"),
    "sleuthkit": ("fls", "icat"),
    "python3-pip": ("pip3",),
    "python3-venv": ("python3",),
    "python-is-python3": ("python3",),
    "sqlite3": ("sqlite3",),
    "vim": ("vim", "vi"),
    "xxd": ("xxd",),
    "netcat-openbsd": ("nc",),
    "netcat": ("nc",),
    "dnsutils": ("dig",),
    "openssh-client": ("ssh",),
    "g++": ("g++",),
    "default-jdk": ("java",),
}
"""Packages whose programs are not named after the package."""
IMPORT_NAMES = {
    "pyyaml": "yaml", "scikit-learn": "sklearn", "beautifulsoup4": "bs4", "pillow": "PIL",
    "opencv-python": "cv2", "opencv-python-headless": "cv2", "python-dateutil": "dateutil",
    "pycryptodome": "Crypto", "pyjwt": "jwt", "attrs": "attr", "protobuf": "google.protobuf",
}
SANDBOX_PROVIDED = {"pytest"}
"""Requirements the runner brings itself (it ships the host's pytest in at test time)."""


@dataclass(frozen=True)
class Need:
    """One thing a task asks of the image."""

    kind: str  # "apt" | "python" | "command"
    name: str
    origin: str
    """Where it was asked for, for the skip reason (e.g. "RUN apt-get install -y jq")."""


def _visible_program(name: str) -> bool:
    return any(os.access(f"{d}/{name}", os.X_OK) and os.path.isfile(f"{d}/{name}") for d in VISIBLE_BIN)


def apt_problem(package: str) -> str | None:
    """Why `package` is not usable in the sandbox, or None when it is."""
    if any(_visible_program(p) for p in PACKAGE_PROGRAMS.get(package, (package,))):
        return None
    lists = [DPKG_INFO / f"{package}.list", *DPKG_INFO.glob(f"{package}:*.list")] if DPKG_INFO.is_dir() else []
    listed = next((p for p in lists if p.is_file()), None)
    if listed is None:
        return "which this host lacks"
    programs = [line for line in listed.read_text(errors="replace").splitlines()
                if "/bin/" in line and not line.endswith("/bin")]
    if not programs or any(line.startswith(("/usr/bin/", "/bin/")) for line in programs):
        return None
    return "whose programs are only in sbin, which the sandbox does not show"


_module_cache: dict[str, bool] = {}
_module_lock = threading.Lock()


def importable(modules: list[str], sandbox) -> dict[str, bool]:
    """Which of `modules` the sandbox's python3 can import (asked once per name per process)."""
    with _module_lock:
        todo = sorted({m for m in modules if m not in _module_cache})
    if todo:
        # Ask the python3 tasks run (its site-packages, and the sandbox library on PYTHONPATH),
        # not the sandbox's warm interpreter.
        probe = ("import importlib.util, json\n"
                 "def ok(m):\n    try:\n        return importlib.util.find_spec(m) is not None\n"
                 "    except Exception:\n        return False\n"
                 f"print(json.dumps({{m: ok(m) for m in {todo!r}}}))")
        r = sandbox.run(f"exec /usr/bin/python3 -c {shlex.quote(probe)}", language="bash")
        try:
            found = json.loads(r.stdout)
        except ValueError:
            raise RuntimeError(f"could not ask the sandbox which Python modules it has: {r.status} {r.stderr[-300:]}")
        with _module_lock:
            _module_cache.update({m: bool(found.get(m)) for m in todo})
    return {m: _module_cache[m] for m in modules}


def import_name(requirement: str) -> str:
    return IMPORT_NAMES.get(requirement, requirement.replace("-", "_"))


def unmet(needs: tuple[Need, ...], sandbox) -> list[str]:
    """A reason for each need this host cannot meet; empty when the task can run here."""
    reasons = []
    missing: dict[tuple[str, str], list[str]] = {}  # (origin, problem) -> packages, for one line each
    for need in needs:
        if need.kind == "apt":
            problem = apt_problem(need.name)
            if problem:
                missing.setdefault((need.origin, problem), []).append(need.name)
        elif need.kind == "command" and not _visible_program(need.name):
            reasons.append(f"needs the program {need.name!r} ({need.origin}), not in /usr/bin or /bin here")
    for (origin, problem), names in missing.items():
        listed = ", ".join(repr(n) for n in names)
        reasons.append(f"needs package{'s' if len(names) > 1 else ''} {listed} ({origin}) {problem}")
    python = [n for n in needs if n.kind == "python" and n.name not in SANDBOX_PROVIDED]
    if python:
        have = importable([import_name(n.name) for n in python], sandbox)
        for n in python:
            if not have[import_name(n.name)]:
                reasons.append(f"needs Python package {n.name!r} ({n.origin}), which the sandbox's python3 "
                               f"cannot import")
    return reasons
