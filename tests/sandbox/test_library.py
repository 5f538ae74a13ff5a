"""The sandbox library: a host directory of Python packages every run imports from,
read-only at /opt/pylib, wherever it lives on the host (even under /tmp, which the fork
server covers with its own tmpfs), and absent when there is none."""

from __future__ import annotations

import json

from tempering.sandbox.client import sandbox_library

PROBE = ("import json, os, subprocess, sys\n"
         "import libprobe\n"
         "try:\n    open('/opt/pylib/libprobe.py', 'a').close()\n    write = 'WROTE'\n"
         "except OSError as e:\n    write = e.strerror\n"
         "child = subprocess.run(['python3', '-c', 'import libprobe; print(libprobe.VALUE)'], capture_output=True, "
         "text=True).stdout.strip()\n"
         "print(json.dumps({'value': libprobe.VALUE, 'write': write, 'child': child, 'opt': os.listdir('/opt')}))\n")


def test_a_library_under_tmp_is_importable_read_only_and_on_pythonpath(make_sandbox, tmp_path, monkeypatch):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libprobe.py").write_text("VALUE = 42\n")
    lib.chmod(0o777)  # writable to anyone on the host: only the read-only bind stops the run
    (lib / "libprobe.py").chmod(0o666)
    monkeypatch.setenv("TEMPERING_SANDBOX_LIB", str(lib))
    assert sandbox_library() == str(lib.resolve())
    r = make_sandbox().run(PROBE)
    assert r.status == "ok", r.stderr
    assert json.loads(r.stdout) == {"value": 42, "write": "Read-only file system", "child": "42", "opt": ["pylib"]}


def test_without_a_library_there_is_no_opt(make_sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("TEMPERING_SANDBOX_LIB", str(tmp_path / "missing"))
    assert sandbox_library() is None
    r = make_sandbox().run("import os\nprint(os.path.exists('/opt'))")
    assert (r.status, r.stdout) == ("ok", "False\n")
