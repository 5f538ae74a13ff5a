"""How each language runs inside a sandboxed process (the run's last step, after every
restriction is in place). Python runs in the already-warm interpreter the run was forked
from; the others are exec'd, C and C++ after a compile step (see Limits.compile_wall_s)."""

from __future__ import annotations

import atexit
import linecache
import os
import resource
import select
import signal
import sys
import threading
import time
import traceback
import types

from .limits import Limits

LANGUAGES = ("python", "bash", "c", "cpp")
COMPILED = {
    "c": ("/usr/bin/gcc", "main.c", ["-O1", "-std=gnu17", "-pipe"], ["-lm"]),
    "cpp": ("/usr/bin/g++", "main.cpp", ["-O1", "-std=gnu++17", "-pipe"], ["-lm"]),
}
BUILD_DIR = "/tmp/.build"


def run_python(code: str, done_fd: int) -> None:
    """exec the program in a fresh __main__ and exit like `python main.py` would; then
    close the output and say the exit code on `done_fd`, so the run's result need not
    wait for the kernel to tear this process down."""
    filename = "/workspace/main.py"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    main = types.ModuleType("__main__")
    main.__file__ = filename
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    sys.argv = [filename]
    exit_code = 0
    try:
        exec(compile(code, filename, "exec"), main.__dict__)
    except SystemExit as e:
        exit_code = _exit_code(e.code)
    except BaseException as e:  # noqa: BLE001 - report it exactly as the interpreter would
        traceback.print_exception(type(e), e, e.__traceback__.tb_next if e.__traceback__ else None)
        exit_code = 1
    try:
        for t in threading.enumerate():
            if t is not threading.main_thread() and not t.daemon:
                t.join()
        atexit._run_exitfuncs()
    except SystemExit as e:
        exit_code = _exit_code(e.code)
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken pipe must not change the exit code
            pass
    for fd in (0, 1, 2):
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        os.write(done_fd, b"%d\n" % exit_code)
    except OSError:
        pass
    os._exit(exit_code)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:  # noqa: BLE001
        pass
    return 1


def exec_bash(code: str, env: dict[str, str]) -> None:
    fd = os.memfd_create("main.sh", 0)
    os.write(fd, code.encode())
    os.lseek(fd, 0, os.SEEK_SET)
    os.execve("/bin/bash", ["bash", f"/proc/self/fd/{fd}"], env)


def compile_and_exec(language: str, code: str, env: dict[str, str], limits: Limits, report) -> None:
    """Compile within the compile limits (Limits.compile_wall/compile_cpu), report how it
    went, then become the program. A compiler killed for CPU time is a compile timeout."""
    compiler, src_name, flags, libs = COMPILED[language]
    os.makedirs(BUILD_DIR, exist_ok=True)
    src, exe = f"{BUILD_DIR}/{src_name}", f"{BUILD_DIR}/main"
    with open(src, "w") as f:
        f.write(code)
    t0 = time.monotonic()
    cpu_limit = limits.compile_cpu()
    pid = os.fork()
    if pid == 0:
        cpu = max(1, int(cpu_limit + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        try:
            os.execve(compiler, [os.path.basename(compiler), *flags, "-o", exe, src, *libs], env)
        finally:
            os._exit(127)
    status = _wait_with_deadline(pid, limits.compile_wall())
    elapsed = time.monotonic() - t0
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    # 0.8, not 0.9: a g++ whose cc1plus its 3 s RLIMIT_CPU killed was once classed "compile
    # failed" in CI, with 2.67 s of CPU counted for the run: the counts run short of the limit
    if status is None or (status != 0 and used.ru_utime + used.ru_stime >= 0.8 * cpu_limit):
        report({"compile": "timeout", "compile_s": elapsed})
        os._exit(124)
    code_ = os.waitstatus_to_exitcode(status)
    if code_ != 0:
        report({"compile": "failed", "compile_s": elapsed, "exit_code": code_})
        os._exit(code_ if code_ > 0 else 1)
    report({"compile": "ok", "compile_s": elapsed})
    cpu = max(1, int(float(limits.cpu_s) + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    os.execve(exe, [exe], env)


def _wait_with_deadline(pid: int, seconds: float):
    """waitpid with a deadline; kills the child and returns None when it passes."""
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], seconds)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        return os.waitpid(pid, 0)[1]
    finally:
        os.close(pidfd)
