"""Hostile programs against the sandbox, runaway resources: fork bombs, memory, CPU, sleeps, disk
and inodes (and the harness's own check).
What every test checks: tests/sandbox/hostile.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from hostile import src, last_json


def test_host_check_catches_leftovers(sandbox, host, plant):
    """The harness itself: a stray uid-65534 process and a planted file are noticed."""
    stray = plant(["sleep", "600"])  # outlives the guard's re-reads
    planted = Path("/tmp/hostile-pwned")
    try:
        with pytest.raises(AssertionError, match="uid 65534 processes outside"):
            host.check()
        planted.write_text("x")
        with pytest.raises(AssertionError, match="hostile files appeared"):
            host.check()
    finally:
        planted.unlink(missing_ok=True)
        stray.kill()
        stray.wait()
    host.check()


def test_python_fork_bomb(sandbox, host, tight):
    code = src('''
        import errno, json, os, signal, time
        kids, err = [], None
        for _ in range(200):
            try:
                pid = os.fork()
            except OSError as e:
                err = errno.errorcode[e.errno]
                break
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            kids.append(pid)
        print(json.dumps({"forked": len(kids), "error": err}), flush=True)
        for k in kids:
            os.kill(k, signal.SIGKILL)
            os.waitpid(k, 0)
        while True:  # now every process forks, forever
            try:
                os.fork()
            except OSError:
                pass
    ''')
    lim = tight(sandbox.limits)
    r = sandbox.run(code, limits=lim)
    out = last_json(r)
    assert out["error"] == "EAGAIN" and out["forked"] == sandbox.limits.processes - 1
    assert (r.status, r.exit_code) == ("timeout", -9)
    assert r.detail in (f"wall time passed {lim.wall_s} s", f"cpu time passed {lim.cpu_s} s"), r.detail
    host.check()


def test_bash_fork_bomb(sandbox, host, tight):
    # The classic: pid 1 returns at once and its exit takes the whole bomb with it.
    r = sandbox.run(":(){ :|:& };:", language="bash")
    assert (r.status, r.exit_code) == ("ok", 0)
    # A bomb that lasts: it hits the process limit, then the wall clock.
    lim = tight(sandbox.limits, cpu=False)
    r = sandbox.run(":(){ :|:& };:\nsleep 30", language="bash", limits=lim)
    assert "fork: retry: Resource temporarily unavailable" in r.stderr
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"wall time passed {lim.wall_s} s")
    host.check()


MEMORY_BOMBS = {
    "bytearray": ("python", "b = bytearray(1 << 30)\nprint('allocated 1 GiB', flush=True)"),
    "mmap_touch": ("python", src('''
        import mmap
        m = mmap.mmap(-1, 1 << 30)
        for i in range(0, 1 << 30, 4096):
            m[i] = 1
            if i % (32 << 20) == 0:
                print(i >> 20, flush=True)
        print('touched 1 GiB', flush=True)
    ''')),
    "c_malloc": ("c", src(r'''
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        int main(void) {
            for (size_t mb = 0;; mb++) {
                char *p = malloc(1 << 20);
                if (!p) { printf("malloc failed at %zu\n", mb); return 3; }
                memset(p, 1, 1 << 20);
                if (mb % 32 == 0) { printf("%zu\n", mb); fflush(stdout); }
            }
        }
    ''')),
}


@pytest.mark.parametrize("kind", MEMORY_BOMBS)
def test_memory_bombs(sandbox, host, kind):
    language, code = MEMORY_BOMBS[kind]
    r = sandbox.run(code, language=language)
    limit = sandbox.limits.memory_mb
    assert "allocated" not in r.stdout and "touched" not in r.stdout and "malloc failed" not in r.stdout
    progress = [int(x) for x in r.stdout.split()]
    assert all(mb < limit for mb in progress), progress
    assert (r.status, r.exit_code) == ("memory", -9), r
    assert r.peak_memory_mb <= limit * 1.01
    host.check()


def test_infinite_loop(sandbox, host, tight):
    lim = tight(sandbox.limits, wall=False)
    r = sandbox.run("while True:\n    pass", limits=lim)
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"cpu time passed {lim.cpu_s} s")
    assert lim.cpu_s <= r.cpu_s < lim.cpu_s + 0.5
    host.check()


def test_sigterm_ignoring_loop(sandbox, host, tight):
    code = src('''
        import signal
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGUSR1, signal.SIGALRM):
            signal.signal(s, signal.SIG_IGN)
        print("ignoring", flush=True)
        while True:
            pass
    ''')
    lim = tight(sandbox.limits, wall=False)
    r = sandbox.run(code, limits=lim)
    assert r.stdout == "ignoring\n"
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"cpu time passed {lim.cpu_s} s")
    host.check()


CPU_THREADS = {
    "python_threads": ("python", src('''
        import threading
        go = threading.Event()
        def spin():
            go.wait()  # all start before any spins: 16 spinners fighting for the GIL slow each start
            while True:
                pass
        for _ in range(16):
            threading.Thread(target=spin).start()
        print("16 threads", flush=True)
        go.set()
        spin()
    ''')),
    "c_pthreads": ("c", src(r'''
        #include <pthread.h>
        #include <stdio.h>
        #include <string.h>
        static void *spin(void *a) { volatile unsigned long x = 0; for (;;) x++; return a; }
        int main(void) {
            pthread_t t; int n = 0, err = 0;
            for (int i = 0; i < 100; i++) { if ((err = pthread_create(&t, 0, spin, 0))) break; n++; }
            printf("%d %s\n", n, err ? strerror(err) : "none");
            fflush(stdout);
            spin(0);
        }
    ''')),
}


@pytest.mark.parametrize("kind", CPU_THREADS)
def test_cpu_threads(sandbox, host, kind, tight):
    language, code = CPU_THREADS[kind]
    lim = tight(sandbox.limits, wall=False)
    r = sandbox.run(code, language=language, limits=lim)
    if kind == "c_pthreads":
        # every thread counts against the process limit
        assert r.stdout == f"{lim.processes - 1} Resource temporarily unavailable\n"
    else:
        assert r.stdout == "16 threads\n"
    # all the threads' CPU counts against cpu_s
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"cpu time passed {lim.cpu_s} s")
    assert r.cpu_s < lim.cpu_s + 0.5
    host.check()


def test_long_sleep(sandbox, host, tight):
    lim = tight(sandbox.limits, cpu=False)
    r = sandbox.run("import time\nprint('sleeping', flush=True)\ntime.sleep(3600)", limits=lim)
    assert r.stdout == "sleeping\n"
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"wall time passed {lim.wall_s} s")
    assert lim.wall_s <= r.wall_s and r.cpu_s < 0.5
    r = sandbox.run("sleep infinity", language="bash", limits=lim)
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"wall time passed {lim.wall_s} s")
    host.check()


def test_disk_and_inode_exhaustion(sandbox, host):
    code = src('''
        import errno, json, os
        res = {}
        for d in ("/workspace", "/tmp", "/dev/shm"):
            mb = 0
            try:
                with open(f"{d}/fill", "wb") as f:
                    while mb < 200:
                        f.write(b"x" * (1 << 20))
                        f.flush()
                        mb += 1
                res[d] = ["no error", mb]
            except OSError as e:
                res[d] = [errno.errorcode[e.errno], mb]
            os.remove(f"{d}/fill")
            n = 0
            try:
                while n < 50000:
                    open(f"{d}/i{n}", "w").close()
                    n += 1
                res[d + " inodes"] = ["no error", n]
            except OSError as e:
                res[d + " inodes"] = [errno.errorcode[e.errno], n]
            for i in range(n):
                os.remove(f"{d}/i{i}")
        print(json.dumps(res))
    ''')
    lim = sandbox.limits
    r = sandbox.run(code, limits=lim)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    for d in ("/workspace", "/tmp", "/dev/shm"):
        err, mb = out[d]
        assert err in ("ENOSPC", "EFBIG") and mb <= lim.disk_mb, (d, out[d])
        err, n = out[d + " inodes"]
        assert err == "ENOSPC" and n < 20000, (d, out[d + " inodes"])
    host.check()
