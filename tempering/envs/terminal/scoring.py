"""Scoring a terminal task: pytest's JUnit XML, carried out on a channel the agent cannot reach.

After the agent is done (and every process it started is dead: each sandbox run's process
tree dies with it), one sandbox run executes `HARNESS` as the run's pid 1:

1. It makes itself non-dumpable, so no other process of the same uid can read its
   memory or its file descriptors under /proc, and drops the workspace from its imports.
2. It copies the task's tests into a fresh /tests (a tmpfs made for this run) and the
   host's pytest into /tmp; none of it existed while the agent ran.
3. It runs `python3 -I` (no cwd, user site-packages or PYTHON* variables on the path; the
   read-only sandbox library at /opt/pylib is appended)
   with pytest, a fixed empty ini file (`-c`), `--rootdir=/tests --confcutdir=/tests`
   (no conftest.py, pytest.ini or pyproject.toml of the workspace is read),
   `-p no:cacheprovider`, plugin autoloading off and a fresh HOME. The JUnit XML goes to
   a pipe whose write end only the pytest process holds (non-inheritable, and that
   process is non-dumpable too); pytest's own output goes to a log.
4. When pytest ends it kills every other process in the run, then writes one JSON object
   (exit code, XML, log tail) to the run's stdout, which no other process holds.

`judge` passes a task only when pytest exited 0 and the XML lists at least one test case,
every case passed (skipped, failed or errored cases fail the task), the suite counts agree,
and every test function found in the test files (by `task.expected_test_names`) is among
the passed cases. Printed text ("5 passed") and files in the workspace are never read.

Not covered: code a test imports into the pytest process (a test doing `import attack`
from /app) runs inside pytest and could patch it or write the result itself. Programs the
tests start as separate processes cannot reach the pipe and die before the report.
Upstream Terminal-Bench has the same exposure.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from tempering.errors import ConfigError

VENDORED = ("pytest", "pluggy", "iniconfig", "packaging")
"""Distributions copied from this process's environment into the sandbox (pure Python);
pygments is left out: `--color=no --code-highlight=no` keeps pytest from importing it."""
MAX_XML_BYTES = 8 << 20

HARNESS = r'''
import sys
sys.path[:] = [p for p in sys.path if p.startswith("/usr/lib/python3")]
import ctypes, json, os, select, shutil, signal, subprocess, time
ctypes.CDLL("libc.so.6", use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
CFG = json.loads(__CFG__)
stage = CFG["stage"]
shutil.copytree(stage + "/tests", "/tests", dirs_exist_ok=True)
shutil.copytree(stage + "/site", "/tmp/tb-site")
shutil.rmtree(stage)
os.makedirs("/tmp/tb-home")
os.makedirs("/tmp/.tb-bin")
os.symlink("/usr/bin/python3", "/tmp/.tb-bin/python")
for name, text in CFG["bin_files"].items():
    with open("/tmp/.tb-bin/" + name, "w") as f:
        f.write(text)
with open("/tmp/tb-pytest.ini", "w") as f:
    f.write("[pytest]\n")
BOOT = ("import ctypes, os, sys; ctypes.CDLL('libc.so.6').prctl(4, 0, 0, 0, 0); "
        "os.set_inheritable(int(sys.argv[1]), False); sys.path.insert(0, sys.argv[2]); "
        "os.path.isdir('/opt/pylib') and sys.path.append('/opt/pylib'); "  # the sandbox library, read-only
        "import pytest; sys.exit(pytest.main(sys.argv[3:]))")
r, w = os.pipe()
argv = ["/usr/bin/python3", "-I", "-c", BOOT, str(w), "/tmp/tb-site", "-p", "no:cacheprovider",
        "-c", "/tmp/tb-pytest.ini", "--rootdir=/tests", "--confcutdir=/tests", "--color=no",
        "--code-highlight=no", "-o", "junit_family=xunit2", "-o", "junit_logging=no",
        "--junitxml=/proc/self/fd/%d" % w, "-rA"] + ["/tests/" + t for t in CFG["targets"]]
env = dict(CFG["env"], HOME="/tmp/tb-home", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
           PATH="/tmp/.tb-bin:" + CFG["env"].get("PATH", "/usr/bin:/bin"))
log = open("/tmp/tb-pytest.log", "wb")
p = subprocess.Popen(argv, pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                     cwd=CFG["workdir"], env=env)
os.close(w)
os.set_blocking(r, False)
deadline = time.monotonic() + CFG["timeout"]
xml, timed_out, size = [], False, 0
while True:
    left = deadline - time.monotonic()
    if left <= 0:
        timed_out = True
        break
    ready, _, _ = select.select([r], [], [], min(left, 0.25))
    if ready:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        size += len(chunk)
        if size <= CFG["max_xml"]:
            xml.append(chunk)
    elif p.poll() is not None:
        try:  # pytest is gone; a process it forked may still hold the pipe open
            while True:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                xml.append(chunk)
        except BlockingIOError:
            pass
        break
if p.poll() is None:
    p.kill()
p.wait()
try:
    os.kill(-1, signal.SIGKILL)  # every other process in this run: nothing may act after pytest
except ProcessLookupError:
    pass
log.close()
with open("/tmp/tb-pytest.log", "rb") as f:
    f.seek(max(0, os.path.getsize("/tmp/tb-pytest.log") - 20000))
    tail = f.read().decode("utf-8", "replace")
sys.stdout.write(json.dumps({"exit_code": p.returncode, "timed_out": timed_out, "xml_bytes": size,
                             "junit": b"".join(xml).decode("utf-8", "replace"), "log": tail}))
'''


@functools.lru_cache(maxsize=1)
def pytest_files() -> dict[str, bytes]:
    """The pure-Python files of pytest and its dependencies from this environment, by
    import path, for the sandbox's python3 (which has no pytest of its own)."""
    files: dict[str, bytes] = {}
    for name in VENDORED:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise ConfigError(f"the terminal task runner ships this environment's {name} into the sandbox to run "
                              f"task tests, but {name} is not installed: pip install pytest") from None
        for f in dist.files or ():
            meta = f.parts[0].endswith(".dist-info") and f.name == "METADATA"  # for importlib.metadata.version
            if (f.suffix == ".py" or meta) and not f.parts[0].startswith(".."):
                files[f.as_posix()] = f.locate().read_bytes()
    return files


def harness_code(stage: str, targets: tuple[str, ...], env: dict[str, str], workdir: str, timeout: float,
                 bin_files: dict[str, str]) -> str:
    """The harness for one test run; `bin_files` are written to /tmp/.tb-bin (base-image stand-ins)."""
    cfg = {"stage": stage, "targets": list(targets), "env": env, "workdir": workdir, "timeout": timeout,
           "max_xml": MAX_XML_BYTES, "bin_files": bin_files}
    return HARNESS.replace("__CFG__", repr(json.dumps(cfg)))


@dataclass(frozen=True)
class TestOutcome:
    """The verdict on one test run."""

    passed: bool
    reason: str
    """Why it failed, or "all N tests passed"."""
    tests: dict[str, str] = field(default_factory=dict)
    """Each test case's outcome: passed | failed | error | skipped."""
    exit_code: int | None = None
    log: str = ""
    counts: dict[str, list[int]] = field(default_factory=dict)
    """Repository tasks: [passed, total] for "fail_to_pass" and "pass_to_pass"."""
    sandbox_status: str = "ok"
    """The sandbox's status of the test run; sandbox_error: the sandbox failed, not the tests (envs/infra.py)."""


def _case_id(case: ET.Element) -> str:
    name = (case.get("name") or "").split("[", 1)[0]
    cls = (case.get("classname") or "").rsplit(".", 1)[-1]
    return f"{cls}.{name}" if cls.startswith("Test") else name


def _outcome(case: ET.Element) -> str:
    tags = {child.tag for child in case}
    for tag, outcome in (("error", "error"), ("failure", "failed"), ("skipped", "skipped")):
        if tag in tags:
            return outcome
    return "passed"


def judge(report: dict, expected: tuple[str, ...]) -> TestOutcome:
    """Pass only on a clean, complete JUnit result from the harness (see the module docstring)."""
    code, log = report.get("exit_code"), str(report.get("log", ""))
    fail = lambda reason, tests=None: TestOutcome(False, reason, tests or {}, code, log)  # noqa: E731
    if report.get("timed_out"):
        return fail("the tests ran past max_test_timeout_sec")
    junit = report.get("junit")
    if not isinstance(junit, str) or not junit.strip():
        return fail(f"no JUnit result (pytest exit code {code})")
    if report.get("xml_bytes", 0) > MAX_XML_BYTES or "<!DOCTYPE" in junit or "<!ENTITY" in junit:
        return fail("the JUnit result is not plain pytest output")
    try:
        root = ET.fromstring(junit)
    except ET.ParseError as e:
        return fail(f"the JUnit result is not well-formed XML ({e})")
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    cases = list(root.iter("testcase"))
    tests = {}
    for case in cases:
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        tests[key] = _outcome(case)
    if not cases:
        return fail("the JUnit result holds no test cases")
    bad = [k for k, v in tests.items() if v != "passed"]
    if bad:
        return fail(f"{len(bad)} of {len(tests)} tests did not pass: {', '.join(bad[:5])}", tests)
    counts = {k: sum(int(s.get(k, 0) or 0) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    if counts["tests"] != len(cases) or counts["failures"] or counts["errors"] or counts["skipped"]:
        return fail(f"the JUnit suite counts {counts} disagree with its {len(cases)} passed cases", tests)
    passed_ids = {_case_id(c) for c in cases}
    missing = [n for n in expected if n not in passed_ids]
    if missing:
        return fail(f"tests missing from the result: {', '.join(missing[:5])}", tests)
    if code != 0:
        return fail(f"pytest exited {code} although every listed test passed", tests)
    return TestOutcome(True, f"all {len(cases)} tests passed", tests, code, log)
