"""One task in one sandbox session: build the image's files, let an agent work, score it.

The session's workspace shows at /app (the TB WORKDIR) in every run, so task files,
solutions and tests keep their absolute paths. Each run is a fresh process tree, so an
agent's shell is emulated: after each command the working directory and exported
variables are carried to the next one (functions, aliases and background jobs are not).
Every run gets `python` as an alias of python3 (as TB's python images have it),
PATH=/usr/bin:/bin (the host programs the sandbox shows) and OPENSSL_CONF pointing at a
minimal config (the sandbox shows no /etc/ssl): the stand-ins for TB's base images.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from dataclasses import dataclass

from tempering.sandbox import Limits

from .dockerfile import ROOT
from .repo import counted
from .scoring import TestOutcome, harness_code, judge, pytest_files
from .task import TerminalTask

OPENSSL_CNF = ("openssl_conf = openssl_init\n[openssl_init]\n[req]\ndistinguished_name = req_dn\n"
               "x509_extensions = v3_ca\n[req_dn]\n[v3_ca]\nbasicConstraints = critical,CA:true\n"
               "subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid:always,issuer\n")
"""A minimal OpenSSL config: the sandbox shows no /etc/ssl, and `openssl req` needs one."""
BIN_FILES = {"openssl.cnf": OPENSSL_CNF}
SHIM = ("mkdir -p /tmp/.tb-bin && ln -sf /usr/bin/python3 /tmp/.tb-bin/python\n"
        + "".join(f"printf %s {shlex.quote(text)} > /tmp/.tb-bin/{name}\n" for name, text in BIN_FILES.items()))
BASE_ENV = {"OPENSSL_CONF": "/tmp/.tb-bin/openssl.cnf"}
"""Set in every run (task ENV lines override it), for the stand-ins in BIN_FILES."""
PATH_SHIM = 'case ":$PATH:" in *:/tmp/.tb-bin:*) ;; *) export PATH="/tmp/.tb-bin:$PATH" ;; esac\n'
BUILD_STEP_S = 300.0
TEST_GRACE_S = 30.0
"""Sandbox wall time beyond max_test_timeout_sec for copying tests in and reporting."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHELL_ONLY = re.compile(r"^declare -x (PWD|OLDPWD|SHLVL|_)(=.*)?$")
FILTERED_TEST_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")
"""Task ENV values that would change how the harness runs pytest; dropped for the tests."""


@dataclass(frozen=True)
class CommandResult:
    output: str
    """stdout and stderr interleaved."""
    exit_code: int | None
    status: str
    """The sandbox's status: ok, error, timeout, memory, output_limit, killed, sandbox_error."""
    wall_s: float


def exports(env: dict[str, str] | tuple) -> str:
    items = {"PATH": "/usr/bin:/bin", **BASE_ENV, **dict(env)}
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in items.items() if _NAME.fullmatch(k))


class TaskSession:
    """A task's sandbox session. `build()` first; then `run` (agent commands, shell state
    carried over) or `run_script` (a whole script, e.g. the reference solution); `test()` last."""

    def __init__(self, task: TerminalTask, sandbox=None, memory_mb: int = 1024, disk_mb: int = 512) -> None:
        if sandbox is None:
            from tempering.sandbox import shared_sandbox

            sandbox = shared_sandbox()
        self.task, self.sandbox = task, sandbox
        self.limits = Limits(wall_s=60, cpu_s=60, memory_mb=memory_mb, processes=128, disk_mb=disk_mb)
        self.session = sandbox.session("bash", self.limits)
        self.cwd = task.workdir
        self.state = exports(task.build.env)

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "TaskSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _limits(self, seconds: float) -> Limits:
        return self.limits.with_(wall_s=max(1.0, seconds), cpu_s=max(1.0, seconds))

    def build(self) -> str | None:
        """Recreate the image's files; the reason it failed, or None."""
        for step in self.task.build.steps:
            q = shlex.quote(step.workdir)
            script = SHIM + exports(step.env) + PATH_SHIM + f"mkdir -p -- {q} && cd -- {q} || exit 1\n" + step.script
            r = self.session.run(script, files=step.files, limits=self._limits(BUILD_STEP_S), workdir=ROOT)
            if r.status != "ok":
                tail = (r.stderr or r.stdout or r.detail).strip()[-300:]
                return f"build step failed: {step.what} ({r.status}, exit {r.exit_code}): {tail}"
        return None

    def run(self, command: str, timeout_s: float) -> CommandResult:
        """One agent command, in the directory and with the exports the previous one left."""
        nonce = f"__tb_state_{secrets.token_hex(8)}"
        script = (SHIM + self.state + PATH_SHIM
                  + f"cd -- {shlex.quote(self.cwd)} 2>/dev/null || cd -- {shlex.quote(self.task.workdir)}\n"
                  + "exec 9>&1 2>&1\n"
                  + f"trap '__tb_rc=$?; {{ printf \"\\n%s %s\\n\" {nonce} \"$__tb_rc\"; pwd; export -p; }} >&9' EXIT\n"
                  + command + "\n")
        r = self.session.run(script, limits=self._limits(timeout_s), workdir=ROOT)
        out = r.stdout
        cut = out.rfind(f"\n{nonce} ")
        if cut >= 0:
            head, _, rest = out[cut + 1:].partition("\n")
            cwd, _, exported = rest.partition("\n")
            if cwd.startswith("/"):
                self.cwd = cwd
            self.state = "".join(line + "\n" for line in exported.splitlines() if not _SHELL_ONLY.match(line))
            out = out[:cut]
        return CommandResult(out + r.stderr, r.exit_code, r.status, r.wall_s)

    def run_script(self, script: str, timeout_s: float) -> CommandResult:
        """`bash script` from a fresh shell in WORKDIR (the script itself is kept out of /app)."""
        end = f"TB_EOF_{secrets.token_hex(8)}"
        body = script if script.endswith("\n") else script + "\n"
        code = (SHIM + self.state + PATH_SHIM + f"cd -- {shlex.quote(self.task.workdir)} || exit 1\n"
                + f"cat > /tmp/.tb-script.sh <<'{end}'\n{body}{end}\nexec bash /tmp/.tb-script.sh 2>&1\n")
        r = self.session.run(code, limits=self._limits(timeout_s), workdir=ROOT)
        return CommandResult(r.stdout + r.stderr, r.exit_code, r.status, r.wall_s)

    def test(self) -> TestOutcome:
        """Copy the tests in, run them from a clean shell, judge the JUnit result."""
        task = self.task
        stage = f".tb-test-{secrets.token_hex(8)}"
        files = {f"{stage}/tests/{k}": v for k, v in task.tests.items()}
        files.update({f"{stage}/site/{k}": v for k, v in pytest_files().items()})
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp", "USER": "sandbox",
               **BASE_ENV, **{k: v for k, v in task.build.env if k not in FILTERED_TEST_ENV}, "TEST_DIR": "/tests"}
        code = harness_code(f"{ROOT}/{stage}", task.test_targets, env, task.workdir, task.max_test_timeout_sec,
                            BIN_FILES)
        r = self.session.run(code, language="python", files=files, workdir=ROOT, scratch=("/tests",),
                             limits=self._limits(task.max_test_timeout_sec + TEST_GRACE_S))
        try:
            report = json.loads(r.stdout) if r.status == "ok" else None
        except ValueError:
            report = None
        if not isinstance(report, dict):
            detail = (r.detail or r.stderr or r.stdout).strip()[-300:]
            outcome = TestOutcome(False, f"the test run ended with status {r.status}: {detail}", exit_code=r.exit_code,
                                  sandbox_status=r.status)
            return counted(outcome, task.repo) if task.repo else outcome
        outcome = judge(report, task.expected_tests)
        return counted(outcome, task.repo) if task.repo else outcome
