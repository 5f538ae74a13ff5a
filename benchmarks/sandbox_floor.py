"""The floor under any warm-fork sandbox on this machine: how many runs/s a lean Python
process can do when each run is only `fork` + fresh namespaces + mounts + seccomp + a
trivial exec + exit, with no cgroups, no IPC, no output capture and no caller.

    sudo /usr/bin/python3 benchmarks/sandbox_floor.py [--n 300]

Rows: a bare fork+exit; the full per-run isolation of tempering.sandbox (user, mount,
pid, network, IPC, UTS, cgroup namespaces, /proc, three tmpfs, no_new_privs, seccomp);
and a "cell" variant that keeps the user, network, UTS and cgroup namespaces of one
long-lived process across runs. Each is measured with one loop and with one loop per CPU
at once; the aggregate of the parallel loops is the machine's ceiling for that design.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering.sandbox import seccomp, syscalls as sc  # noqa: E402

NOBODY = 65534
ALL_BUT_PID = (sc.CLONE_NEWUSER | sc.CLONE_NEWNS | sc.CLONE_NEWIPC | sc.CLONE_NEWUTS | sc.CLONE_NEWNET
               | sc.CLONE_NEWCGROUP)


def _drop() -> None:
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)
    sc.prctl(sc.PR_SET_DUMPABLE, 1)


def _map() -> None:
    for name, text in (("uid_map", "1000 65534 1\n"), ("setgroups", "deny"), ("gid_map", "1000 65534 1\n")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _finish_run(filt: seccomp.Filter) -> None:
    for target in ("/tmp", "/mnt", "/dev/shm"):
        sc.mount("run", target, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, "size=16m")
    sc.set_no_new_privs()
    filt.install()
    exec(compile("x = sum(range(10))", "<run>", "exec"), {})
    os._exit(0)


def loop(design: str, n: int, out) -> None:
    filt = seccomp.Filter(seccomp.compiled())
    own = None
    if design == "cell":  # become pid 1 of a namespace owned by our own user namespace
        sc.unshare(sc.CLONE_NEWNS)
        sc.mount("none", "/", None, sc.MS_REC | sc.MS_PRIVATE)
        _drop()
        sc.unshare(sc.CLONE_NEWUSER | sc.CLONE_NEWNET | sc.CLONE_NEWUTS | sc.CLONE_NEWCGROUP | sc.CLONE_NEWPID
                   | sc.CLONE_NEWNS)
        _map()
        if os.fork():
            os.wait()
            return
        sc.mount("proc", "/proc", "proc", 0)
        own = os.open("/proc/self/ns/pid", os.O_RDONLY)
    elif design == "full":
        own = os.open("/proc/self/ns/pid", os.O_RDONLY)
    t = time.perf_counter()
    for _ in range(n):
        if design != "bare":
            sc.setns(own, sc.CLONE_NEWPID)
            sc.unshare(sc.CLONE_NEWPID)
        pid = os.fork()
        if pid == 0:
            if design == "bare":
                os._exit(0)
            if design == "full":
                sc.unshare(sc.CLONE_NEWNS)
                sc.mount("none", "/", None, sc.MS_REC | sc.MS_PRIVATE)
                sc.mount("proc", "/proc", "proc", 0)
                _drop()
                sc.unshare(ALL_BUT_PID)
                _map()
            else:
                sc.unshare(sc.CLONE_NEWNS | sc.CLONE_NEWIPC)
                sc.mount("proc", "/proc", "proc", 0)
            _finish_run(filt)
        os.waitpid(pid, 0)
    rate = n / (time.perf_counter() - t)
    if own is not None:
        sc.setns(own, sc.CLONE_NEWPID)  # threads (the queue's) need our own namespace back
    out.put(rate)


def measure(design: str, n: int, parallel: int) -> float:
    q = mp.Queue()
    procs = [mp.Process(target=loop, args=(design, n, q)) for _ in range(parallel)]
    for p in procs:
        p.start()
    rates = [q.get() for _ in procs]
    for p in procs:
        p.join()
    return sum(rates)


def main() -> None:
    ap = parser(__doc__, n=300)
    args = ap.parse_args()
    mp.set_start_method("fork")
    cpus = os.cpu_count() or 1
    print(f"| design | runs/s, 1 loop | runs/s, {cpus} loops at once |")
    print("|---|---|---|")
    for design in ("bare", "full", "cell"):
        print(f"| {design} | {measure(design, args.n, 1):.0f} | {measure(design, args.n, cpus):.0f} |")


if __name__ == "__main__":
    main()
