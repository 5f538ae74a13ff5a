"""Hostile programs against the sandbox, privileges: setuid, namespaces, forbidden syscalls and
ABIs, terminals, devices, limits.
What every test checks: tests/sandbox/hostile.py."""

from __future__ import annotations

import signal

import pytest

from hostile import src, last_json, tried, PRELUDE


def test_setuid_cannot_gain_root(sandbox, host):
    code = src('''
        id -u
        python3 - <<'EOF'
        import errno, os
        for name, fn in [("setuid", lambda: os.setuid(0)), ("setgid", lambda: os.setgid(0)),
                         ("setresuid", lambda: os.setresuid(0, 0, 0)), ("setgroups", lambda: os.setgroups([0])),
                         ("seteuid", lambda: os.seteuid(0))]:
            try:
                fn()
                print(name, "OK")
            except OSError as e:
                print(name, errno.errorcode[e.errno])
        EOF
        su -c 'id -u > /workspace/su_ran' root </dev/null; echo "su rc=$?"
        chsh -s /bin/sh root </dev/null; echo "chsh rc=$?"
        gpasswd -a sandbox root </dev/null; echo "gpasswd rc=$?"
        umount /proc; echo "umount rc=$?"
        echo | passwd root; echo "passwd rc=$?"
        mount -t tmpfs none /tmp 2>/dev/null; echo "mount rc=$?"
        [ -e /workspace/su_ran ] && echo "SU RAN: $(cat /workspace/su_ran)"
        grep -E '^(Uid|Gid|CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
        id -u
    ''')
    r = sandbox.run(code, language="bash")  # su fails after 1 s
    assert r.status == "ok", r
    lines = r.stdout.splitlines()
    assert lines[0] == "1000" and lines[-1] == "1000"
    for name in ("setuid", "setgid", "setresuid", "seteuid"):  # uid 0 is not even mapped
        assert f"{name} EINVAL" in lines or f"{name} EPERM" in lines, (name, r.stdout)
    assert "setgroups EPERM" in lines
    for cmd in ("su", "chsh", "gpasswd", "umount", "passwd", "mount"):
        rc = next(int(x.split("rc=")[1]) for x in lines if x.startswith(cmd + " rc="))
        assert rc != 0, (cmd, r.stdout)
    assert "SU RAN" not in r.stdout and "0" not in lines
    status = dict(x.split(":", 1) for x in lines if ":" in x and not x.startswith("su"))
    assert status["Uid"].split() == ["1000"] * 4 and status["Gid"].split() == ["1000"] * 4
    for cap in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(status[cap], 16) == 0, (cap, status)
    assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2"
    host.check()


def test_unshare_and_mount_fail(sandbox, host):
    code = PRELUDE + src(r'''
        import subprocess
        out = {}
        for flags in ("-r", "-U", "-m", "-n", "-p -f", "-i", "-u", "-C", "-T", "-Urm"):
            p = subprocess.run(["unshare", *flags.split(), "true"], capture_output=True, text=True)
            out["unshare " + flags] = [p.returncode, "Operation not permitted" in p.stderr]
        before = open("/proc/self/mountinfo").read()
        m = libc.mount
        m.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
        for name, args in [("tmpfs on /tmp", (b"none", b"/tmp", b"tmpfs", 0, None)),
                           ("proc on /workspace", (b"proc", b"/workspace", b"proc", 0, None)),
                           ("bind / on /workspace", (b"/", b"/workspace", None, 0x1000, None)),
                           ("remount / rw", (b"none", b"/", None, 0x20, None))]:
            out["mount " + name] = "OK" if m(*args) == 0 else errno.errorcode[ctypes.get_errno()]
        for target in (b"/proc", b"/sessions", b"/workspace", b"/usr/bin"):
            ok = libc.umount2(target, 2) == 0
            out["umount " + target.decode()] = "OK" if ok else errno.errorcode[ctypes.get_errno()]
        out["chroot"] = attempt(lambda: os.chroot("/tmp"))
        out["mounts unchanged"] = open("/proc/self/mountinfo").read() == before
        out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    for k, v in out.items():
        if k.startswith("unshare"):
            assert v == [1, True], (k, v)
        elif k.startswith(("mount ", "umount", "chroot")):
            assert v == "EPERM", (k, v)
    assert out["mounts unchanged"] is True and out["pids"] == [1]
    seen = tried(sandbox, r)
    assert seen is None or {"unshare", "chroot", "mount", "umount2"} <= seen, seen
    host.check()


FORBIDDEN = {  # name: (x86_64 number, args); each must fail with EPERM whatever the args
    "ptrace": (101, [0]), "process_vm_readv": (310, [1]), "process_vm_writev": (311, [1]),
    "pidfd_getfd": (438, [0, 0, 0]), "bpf": (321, [0, 0, 0]), "perf_event_open": (298, [0, 0, -1, -1, 0]),
    "userfaultfd": (323, [0]), "io_uring_setup": (425, [1, 0]), "io_uring_enter": (426, [0]),
    "io_uring_register": (427, [0]), "keyctl": (250, [0]), "add_key": (248, [0]), "request_key": (249, [0]),
    "init_module": (175, [0, 0, 0]), "finit_module": (313, [-1, 0, 0]), "delete_module": (176, [0, 0]),
    "kexec_load": (246, [0]), "kexec_file_load": (320, [-1]), "mount": (165, [0, 0, 0, 0, 0]),
    "umount2": (166, [0, 0]), "pivot_root": (155, [0, 0]), "open_tree": (428, [-1, 0, 0]),
    "move_mount": (429, [-1, 0, -1, 0, 0]), "fsopen": (430, [0, 0]), "fsconfig": (431, [-1, 0]),
    "fsmount": (432, [-1, 0, 0]), "fspick": (433, [-1, 0, 0]), "mount_setattr": (442, [-1, 0, 0, 0, 0]),
    "chroot": (161, [0]), "unshare": (272, [0x10000000]), "unshare_net": (272, [0x40000000]),
    "setns": (308, [0, 0]), "reboot": (169, [0, 0, 0, 0]), "swapon": (167, [0, 0]), "swapoff": (168, [0]),
    "acct": (163, [0]), "settimeofday": (164, [0, 0]), "clock_settime": (227, [0, 0]), "adjtimex": (159, [0]),
    "clock_adjtime": (305, [0, 0]), "sethostname": (170, [0, 0]), "setdomainname": (171, [0, 0]),
    "syslog": (103, [3, 0, 0]), "vhangup": (153, []), "quotactl": (179, [0]), "open_by_handle_at": (304, [0]),
    "name_to_handle_at": (303, [0]), "iopl": (172, [3]), "ioperm": (173, [0, 1, 1]),
    "migrate_pages": (256, [0]), "move_pages": (279, [0]), "uselib": (134, [0]),
    "clone_newuser": (56, [0x10000000 | 17, 0, 0, 0, 0]), "clone_newns": (56, [0x00020000 | 17, 0, 0, 0, 0]),
    "clone_newpid": (56, [0x20000000 | 17, 0, 0, 0, 0]), "clone_newnet": (56, [0x40000000 | 17, 0, 0, 0, 0]),
}


def test_forbidden_syscalls_return_eperm(sandbox, host):
    calls = {k: v for k, v in FORBIDDEN.items()}
    code = PRELUDE + src(f'''
        calls = {calls!r}
        out = {{name: sc(nr, *args) for name, (nr, args) in calls.items()}}
        out["clone3"] = sc(435, 0, 0)
        out["getpid (control)"] = sc(39)
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    wrong = {k: v for k, v in out.items() if k in FORBIDDEN and v != "EPERM"}
    assert wrong == {}, f"not refused with EPERM: {wrong}"
    assert out["clone3"] == "ENOSYS" and out["getpid (control)"] == "OK"
    seen = tried(sandbox, r)
    if seen is not None:  # every refused call is in the audit log, named; clone3 and getpid are not
        want = {"clone(namespace flags)" if n.startswith("clone_") else n for n in FORBIDDEN} - {"unshare_net"}
        assert want == seen, f"refused but not in the audit log: {sorted(want - seen)}; extra: {sorted(seen - want)}"
    host.check()


@pytest.mark.parametrize("abi", ["i386", "x32"])
def test_foreign_syscall_abis_kill_the_program(sandbox, host, abi):
    insn = {
        "i386": '__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");',
        "x32": '__asm__ volatile("syscall" : "=a"(r) : "a"(0x40000000L | 39) : "rcx", "r11", "memory");',
    }[abi]
    code = ('#include <stdio.h>\nint main(void) { long r; puts("before"); fflush(stdout);\n'
            f'{insn}\nprintf("after %ld\\n", r); return 0; }}\n')
    r = sandbox.run(code, language="c")
    assert r.stdout == "before\n", r
    assert (r.status, r.exit_code) == ("killed", -int(signal.SIGSYS))
    host.check()


def test_tiocsti_and_terminals(sandbox, host):
    code = PRELUDE + src(r'''
        import fcntl, termios
        out = {}
        for fd in (0, 1, 2):
            out[f"TIOCSTI {fd}"] = attempt(lambda: fcntl.ioctl(fd, termios.TIOCSTI, b"x"))
            out[f"TIOCLINUX {fd}"] = attempt(lambda: fcntl.ioctl(fd, 0x541C, b"\x06"))
        out["/dev/tty"] = attempt(lambda: os.open("/dev/tty", os.O_RDWR))
        out["openpty"] = attempt(os.openpty)
        out["/dev/console"] = attempt(lambda: os.open("/dev/console", os.O_RDWR))
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    for k, v in out.items():
        if k.startswith("TIOC"):
            assert v == "EPERM", (k, v)
    assert out["/dev/tty"] == "ENOENT" and out["/dev/console"] == "ENOENT"
    assert out["openpty"] in ("ENOENT", "FileNotFoundError"), out
    seen = tried(sandbox, r)
    assert seen is None or seen == {"ioctl(TIOCSTI)", "ioctl(TIOCLINUX)"}, seen
    host.check()


def test_device_nodes(sandbox, host):
    code = PRELUDE + src(r'''
        import stat
        out = {"dev": sorted(os.listdir("/dev"))}
        for d in ("/workspace", "/tmp", "/dev/shm"):
            out["mknod chr " + d] = attempt(lambda: os.mknod(d + "/mem", stat.S_IFCHR | 0o666, os.makedev(1, 1)))
            out["mknod blk " + d] = attempt(lambda: os.mknod(d + "/sda", stat.S_IFBLK | 0o666, os.makedev(8, 0)))
        for p in ("/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/nvme0n1",
                  "/dev/kvm", "/dev/fuse", "/dev/net/tun", "/dev/userfaultfd", "/dev/ptmx", "/dev/tty0",
                  "/dev/cpu/0/msr", "/dev/mqueue", "/proc/kcore", "/proc/sysrq-trigger"):
            out[p] = os.path.exists(p)
        out["read /proc/kmsg"] = attempt(lambda: open("/proc/kmsg", "rb").read(1))
        out["write /dev/null"] = attempt(lambda: open("/dev/null", "w").write("x"))
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    assert out["dev"] == ["fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout", "urandom", "zero"]
    for k, v in out.items():
        if k.startswith("mknod"):
            assert v == "EPERM", (k, v)
        elif k.startswith("/"):
            assert v is False, k
    assert out["read /proc/kmsg"] == "EACCES" and out["write /dev/null"] == "OK"
    host.check()


def test_cannot_raise_priority_or_limits(sandbox, host):
    code = PRELUDE + src('''
        import resource
        out = {
            "nice": attempt(lambda: os.nice(-1)),
            "setpriority": attempt(lambda: os.setpriority(os.PRIO_PROCESS, 0, -5)),
            "SCHED_FIFO": attempt(lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))),
            "SCHED_RR": attempt(lambda: os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))),
            "ioprio RT": sc(251, 1, 0, 1 << 13),
        }
        for name in ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_RTPRIO", "RLIMIT_MEMLOCK"):
            res = getattr(resource, name)
            soft, hard = resource.getrlimit(res)
            big = resource.RLIM_INFINITY if hard != resource.RLIM_INFINITY else None
            if big is not None:
                out["raise " + name] = attempt(lambda: resource.setrlimit(res, (big, big)))
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    assert (out["nice"], out["SCHED_FIFO"], out["SCHED_RR"], out["ioprio RT"]) == ("EPERM",) * 4
    assert out["setpriority"] == "EACCES"
    raised = {k: v for k, v in out.items() if k.startswith("raise")}
    assert {"raise RLIMIT_CPU", "raise RLIMIT_FSIZE", "raise RLIMIT_NOFILE"} <= set(raised)
    assert set(raised.values()) <= {"ValueError", "EPERM"}, raised
    host.check()
