"""Hostile programs against the sandbox, network egress; host secrets and other runs' data in a
run's memory.
What every test checks: tests/sandbox/hostile.py."""

from __future__ import annotations

import json
import select
import socket
import subprocess
import time
import uuid
from pathlib import Path


from hostile import SANDBOX_ENV, src, last_json, tried, secret_hex, PRELUDE, MEMSCAN, in_thread


def test_network_egress_fails(sandbox, host):
    tag = uuid.uuid4().hex[:12]
    tcp = socket.socket()
    tcp.bind(("0.0.0.0", 0))
    tcp.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", 0))
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0tempering-hostile-{tag}".encode())
    abstract.listen()
    try:
        port, uport = tcp.getsockname()[1], udp.getsockname()[1]
        try:
            host_ips = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
        except OSError:
            host_ips = []
        cfg = {
            "tcp": [["127.0.0.1", port], ["::1", port], *[[ip, port] for ip in host_ips],
                    ["1.1.1.1", 53], ["8.8.8.8", 53], ["169.254.169.254", 80], ["2606:4700:4700::1111", 53]],
            "udp": [["127.0.0.1", uport], *[[ip, uport] for ip in host_ips], ["8.8.8.8", 53]],
            "abstract": f"\0tempering-hostile-{tag}",
        }
        code = PRELUDE + src(r'''
            import fcntl, socket, struct
            cfg = json.loads(sys.stdin.read())
            out = {}
            for h, p in cfg["tcp"]:
                s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET)
                s.settimeout(1)
                out[f"tcp {h}"] = attempt(lambda: s.connect((h, p)))
            for h, p in cfg["udp"]:
                s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET, socket.SOCK_DGRAM)
                out[f"udp {h}"] = attempt(lambda: s.sendto(b"x", (h, p)))
            out["dns"] = attempt(lambda: socket.getaddrinfo("example.com", 80))
            for name, args in [("packet", (socket.AF_PACKET, socket.SOCK_RAW, 0)),
                               ("raw4", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                               ("raw6", (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6))]:
                out[name] = attempt(lambda: socket.socket(*args))
            u = socket.socket(socket.AF_UNIX)
            out["abstract"] = attempt(lambda: u.connect(cfg["abstract"].encode()))
            out["interfaces"] = [n for _, n in socket.if_nameindex()]
            s = socket.socket()
            flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
            out["lo_up"] = bool(flags & 1)
            out["lo_set_up"] = attempt(lambda: fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1)))
            print(json.dumps(out))
        ''')
        r = sandbox.run(code, stdin=json.dumps(cfg))
        assert (r.status, r.exit_code) == ("ok", 0), r
        out = last_json(r)
        for h, _ in cfg["tcp"]:
            assert out[f"tcp {h}"] in ("ENETUNREACH", "EADDRNOTAVAIL", "EHOSTUNREACH"), (h, out)
        assert out["tcp 127.0.0.1"] == "ENETUNREACH"
        for h, _ in cfg["udp"]:
            assert out[f"udp {h}"] in ("ENETUNREACH", "EADDRNOTAVAIL", "EHOSTUNREACH"), (h, out)
        assert out["dns"] == "gaierror"
        assert (out["packet"], out["raw4"], out["raw6"]) == ("EPERM", "EPERM", "EPERM")
        assert out["abstract"] == "ECONNREFUSED"
        assert out["interfaces"] == ["lo"] and out["lo_up"] is False and out["lo_set_up"] == "EPERM"
        denied, network = tried(sandbox, r), tried(sandbox, r, "network")
        if denied is not None:  # the raw sockets and every connect beyond loopback are in the audit log
            assert {"socket(AF_PACKET)"} <= denied, denied
            outside = {f"connect to {h}:{p}" if ":" not in h else f"connect to [{h}]:{p}"
                       for h, p in cfg["tcp"] if h not in ("127.0.0.1", "::1")}
            assert outside <= network, (outside, network)
            assert not any("127.0.0.1" in d or "[::1]" in d for d in network), network
        # and nothing reached the host's sockets
        assert select.select([tcp, udp, abstract], [], [], 0.2)[0] == []
    finally:
        for s in (tcp, udp, abstract):
            s.close()
    host.check()


# -- host secrets and the caller's memory


def test_host_secrets_invisible(sandbox, host, secrets, make_sandbox, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", secrets["value"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secrets["value"])
    fresh = make_sandbox()  # started with the secrets in the caller's environment
    server_env = Path(f"/proc/{fresh._proc.pid}/environ").read_bytes()
    assert b"SECRET_TOKEN" not in server_env and secrets["value"].encode() not in server_env
    code = PRELUDE + MEMSCAN + src(r'''
        import glob, re
        cfg = json.loads(sys.stdin.read())
        pat = re.compile(rb"HOSTILE-SECRET-([0-9a-f]{32})")
        found, env_names, opened, dirs = {}, {}, {}, {}
        def scan(label, data):
            for m in pat.finditer(data):
                found.setdefault(m.group(1).decode(), []).append(label)
        control = "HOSTILE-SECRET-" + "c0" * 16  # positive control: every scan below must find it
        open("/workspace/control", "w").write(control)
        scan("os.environ", repr(dict(os.environ)).encode())
        for p in sorted(set(glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline") +
                            ["/proc/self/environ", "/proc/1/environ", "/proc/cmdline", "/proc/self/mountinfo"])):
            try:
                data = open(p, "rb").read()
            except OSError:
                continue
            scan(p, data)
            if p.endswith("environ"):
                env_names[p] = sorted(x.split(b"=")[0].decode() for x in data.split(b"\0") if x)
        for p in cfg["paths"]:
            for q in (p, "/proc/1/root" + p, "/proc/self/root" + p):
                try:
                    scan(q, open(q, "rb").read())
                    opened[q] = "READ"
                except OSError as e:
                    opened[q] = ename(e)
        for d in ("/home", "/root", "/work", "/work/main", "/usr/local", "/sys", "/var", "/mnt", "/srv",
                  "/proc/1/root/root", "/proc/1/root/work"):
            dirs[d] = os.path.exists(d)
        dirs["/opt holds more than the sandbox library"] = os.path.exists("/opt") and os.listdir("/opt") != ["pylib"]
        for top, subdirs, files in os.walk("/"):
            if top in ("/usr", "/proc", "/sys") or top.startswith(("/usr/", "/proc/")):
                subdirs[:] = []
                continue
            subdirs[:] = [s for s in subdirs if not (top == "/" and s in ("usr", "proc"))]
            for f in files:
                p = os.path.join(top, f)
                try:
                    if os.path.isfile(p) and not os.path.islink(p):
                        scan(p, open(p, "rb").read(1 << 20))
                except OSError:
                    pass
        for h in memscan():
            found.setdefault(h, []).append("memory")
        print(json.dumps({"found": found, "env": env_names, "opened": opened, "dirs": dirs, "control": control}))
    ''')
    r = fresh.run(code, stdin=json.dumps({"paths": secrets["paths"]}),
                  limits=fresh.limits)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    assert set(out["found"]["c0" * 16]) >= {"/workspace/control", "memory"}  # the scans work
    assert secret_hex(secrets) not in out["found"], out["found"]
    assert secrets["value"] not in r.stdout + r.stderr
    assert out["env"], "no environ was readable"
    for p, names in out["env"].items():
        assert "SECRET_TOKEN" not in names and "AWS_SECRET_ACCESS_KEY" not in names, (p, names)
        assert set(names) <= SANDBOX_ENV | {"LANG", "LC_ALL", "PATH", "PYTHONIOENCODING"}, (p, names)
    assert out["opened"] and set(out["opened"].values()) == {"ENOENT"}, out["opened"]
    assert not any(out["dirs"].values()), out["dirs"]
    host.check()


def test_earlier_and_concurrent_runs_data_not_in_a_runs_memory(sandbox, host):
    secret = uuid.uuid4().hex
    value = f"HOSTILE-SECRET-{secret}"
    holder = (f"# {value}\nimport sys, time\ndata = sys.stdin.read() + open('f.txt').read()\n"
              f"keep = [data * 1000]\nprint(len(keep[0]))\ntime.sleep(SLEEP)\n")
    for _ in range(3):  # cycle the pool: every slot served a run that held the secret
        r = sandbox.run(holder.replace("SLEEP", "0"), stdin=value, files={"f.txt": value})
        assert r.status == "ok"
    t, box = in_thread(lambda: sandbox.run(holder.replace("SLEEP", "1.5"), stdin=value, files={"f.txt": value}))
    time.sleep(0.4)
    scan = MEMSCAN + "import json\ncontrol = 'HOSTILE-SECRET-' + 'c1' * 16\nprint(json.dumps(memscan()))\n"
    r = sandbox.run(scan, limits=sandbox.limits)
    t.join()
    assert box["r"].status == "ok"
    assert (r.status, r.exit_code) == ("ok", 0), r
    assert "c1" * 16 in last_json(r)  # the scan finds what is in memory
    assert secret not in last_json(r)
    with sandbox.session("python") as s:  # and a session's read operation neither
        s.write_file("x.txt", "x")
        assert s.read_file("x.txt") == b"x"
        r = s.run(scan, limits=sandbox.limits)
        assert r.status == "ok" and "c1" * 16 in last_json(r) and secret not in last_json(r)
    host.check()
