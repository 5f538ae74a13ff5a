"""Socket families: a run may make AF_UNIX, AF_INET and AF_INET6 sockets (its network
namespace, with no interface up, confines those) and netlink sockets of the route
protocol (glibc's getaddrinfo and if_nameindex read it); every other family gets EPERM
from the seccomp filter (seccomp.SOCKET_FAMILIES, seccomp.NETLINK_PROTOCOLS).

EPERM is the filter's answer: the kernel itself answers EAFNOSUPPORT (or ENODEV, or
success: vsock is loaded on a VM) for these families, so the errno shows which layer refused.
"""

from __future__ import annotations

import socket
import struct

import pytest

from hostile import last_json, src
from tempering.sandbox import seccomp

# name -> (family number, socket type, protocol). Types are ones the family takes, so
# that without the filter the call would reach the family's own code.
DENIED = {
    "AF_AX25": (3, socket.SOCK_SEQPACKET, 0),
    "AF_IPX": (4, socket.SOCK_DGRAM, 0),
    "AF_APPLETALK": (5, socket.SOCK_DGRAM, 0),
    "AF_NETROM": (6, socket.SOCK_SEQPACKET, 0),
    "AF_ATMPVC": (8, socket.SOCK_DGRAM, 0),
    "AF_X25": (9, socket.SOCK_SEQPACKET, 0),
    "AF_ROSE": (11, socket.SOCK_SEQPACKET, 0),
    "AF_KEY": (15, socket.SOCK_RAW, 2),
    "AF_PACKET": (17, socket.SOCK_RAW, 0),
    "AF_RDS": (21, socket.SOCK_SEQPACKET, 0),
    "AF_PPPOX": (24, socket.SOCK_STREAM, 0),
    "AF_LLC": (26, socket.SOCK_DGRAM, 0),
    "AF_CAN": (29, socket.SOCK_RAW, 1),
    "AF_TIPC": (30, socket.SOCK_RDM, 0),
    "AF_BLUETOOTH": (31, socket.SOCK_RAW, 0),
    "AF_RXRPC": (33, socket.SOCK_DGRAM, 2),
    "AF_PHONET": (35, socket.SOCK_DGRAM, 0),
    "AF_IEEE802154": (36, socket.SOCK_RAW, 0),
    "AF_CAIF": (37, socket.SOCK_SEQPACKET, 0),
    "AF_ALG": (38, socket.SOCK_SEQPACKET, 0),
    "AF_NFC": (39, socket.SOCK_SEQPACKET, 0),
    "AF_VSOCK": (40, socket.SOCK_STREAM, 0),
    "AF_KCM": (41, socket.SOCK_DGRAM, 0),
    "AF_QIPCRTR": (42, socket.SOCK_DGRAM, 0),
    "AF_SMC": (43, socket.SOCK_STREAM, 0),
    "AF_XDP": (44, socket.SOCK_RAW, 0),
    "AF_MCTP": (45, socket.SOCK_DGRAM, 0),
    # netlink, but not its route protocol
    "NETLINK_SOCK_DIAG": (16, socket.SOCK_RAW, 4),
    "NETLINK_XFRM": (16, socket.SOCK_RAW, 6),
    "NETLINK_AUDIT": (16, socket.SOCK_RAW, 9),
    "NETLINK_NETFILTER": (16, socket.SOCK_RAW, 12),
    "NETLINK_KOBJECT_UEVENT": (16, socket.SOCK_DGRAM, 15),
    "NETLINK_GENERIC": (16, socket.SOCK_RAW, 16),
    "NETLINK_RDMA": (16, socket.SOCK_RAW, 20),
}
AF_MAX = 46  # families the kernel knows today; the filter refuses any number above too


PROBE = src(r'''
    import errno, json, socket, sys
    def attempt(f):
        try:
            r = f()
            return "ok" if r is None else r
        except socket.gaierror:
            return "gaierror"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
''')


# -- the filter itself, evaluated here on every family


def _bpf(prog, nr: int, args=()) -> int:
    """What the filter returns for syscall `nr` with `args` (x86_64, little endian)."""
    args = (tuple(args) + (0,) * 6)[:6]
    data = struct.pack("=iIQ6Q", nr, seccomp.AUDIT_ARCH_X86_64, 0, *[a % 2**64 for a in args])
    pc = acc = 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == seccomp.RET_K:
            return k
        if code == seccomp.LD_W_ABS:
            acc, pc = struct.unpack_from("=I", data, k)[0], pc + 1
            continue
        hit = {seccomp.JEQ_K: acc == k, seccomp.JGE_K: acc >= k, seccomp.JSET_K: bool(acc & k)}[code]
        pc += 1 + (jt if hit else jf)


def test_filter_allows_exactly_the_listed_families():
    prog = seccomp.build_filter()
    allowed = set(seccomp.SOCKET_FAMILIES.values())
    for nr in (seccomp.SYS_SOCKET, seccomp.SYS_SOCKETPAIR):
        for fam in [*range(AF_MAX + 1), 255, 2**16, 2**31 - 1]:
            want = seccomp.RET_ALLOW if fam in allowed or fam == seccomp.AF_NETLINK else seccomp.RET_EPERM
            assert _bpf(prog, nr, (fam, socket.SOCK_STREAM, 0)) == want, (nr, fam)
        for proto in range(32):
            want = seccomp.RET_ALLOW if proto in seccomp.NETLINK_PROTOCOLS.values() else seccomp.RET_EPERM
            assert _bpf(prog, nr, (seccomp.AF_NETLINK, socket.SOCK_RAW, proto)) == want, (nr, proto)
        # the kernel reads the family as an int: high bits do not change the answer
        assert _bpf(prog, nr, (2**32 + 40, socket.SOCK_STREAM, 0)) == seccomp.RET_EPERM
        assert _bpf(prog, nr, (2**32 + 1, socket.SOCK_STREAM, 0)) == seccomp.RET_ALLOW
    # and the rest of the filter is as it was
    assert _bpf(prog, 101) == seccomp.RET_EPERM  # ptrace
    assert _bpf(prog, 0) == seccomp.RET_ALLOW  # read
    assert _bpf(prog, seccomp.SYS_IOCTL, (1, seccomp.TIOCSTI)) == seccomp.RET_EPERM
    assert _bpf(prog, seccomp.SYS_CLONE3) == seccomp.RET_ENOSYS


# -- runs


@pytest.mark.parametrize("name", DENIED)
def test_denied_family_gets_eperm(sandbox, host, name):
    family, type_, proto = DENIED[name]
    code = PROBE + src(f'''
        out = {{"socket": attempt(lambda: socket.socket({family}, {type_}, {proto}).close()),
               "socketpair": attempt(lambda: [s.close() for s in socket.socketpair({family}, {type_}, {proto})] and None)}}
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    assert last_json(r) == {"socket": "EPERM", "socketpair": "EPERM"}
    host.check()


VSOCK_C = src(r'''
    #include <errno.h>
    #include <stdio.h>
    #include <string.h>
    #include <sys/socket.h>
    #include <sys/syscall.h>
    #include <unistd.h>
    static const char *name(int e) { return e == EPERM ? "EPERM" : strerror(e); }
    int main(void) {
        int fd = socket(AF_VSOCK, SOCK_STREAM, 0);
        int e1 = fd < 0 ? errno : 0;
        /* the raw call, with junk in the upper half of the family argument */
        long fd2 = syscall(SYS_socket, (long)((1UL << 32) | AF_VSOCK), (long)SOCK_DGRAM, 0L);
        int e2 = fd2 < 0 ? errno : 0;
        int sv[2];
        int e3 = socketpair(AF_VSOCK, SOCK_STREAM, 0, sv) < 0 ? errno : 0;
        int e4 = socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 ? errno : 0;
        printf("{\"socket\": \"%s\", \"raw\": \"%s\", \"socketpair\": \"%s\", \"unix_pair\": %d}\n",
               fd < 0 ? name(e1) : "ok", fd2 < 0 ? name(e2) : "ok", e3 ? name(e3) : "ok", e4);
        return 0;
    }
''')


def test_vsock_from_c_gets_eperm(sandbox, host):
    r = sandbox.run(VSOCK_C, language="c")
    assert (r.status, r.exit_code) == ("ok", 0), r
    assert last_json(r) == {"socket": "EPERM", "raw": "EPERM", "socketpair": "EPERM", "unix_pair": 0}
    host.check()


def test_allowed_families_work_as_before(sandbox, host):
    code = PROBE + src(r'''
        import multiprocessing
        out = {}
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        a.sendall(b"ping")
        out["unix_pair"] = b.recv(4).decode()
        for fam, addr in ((socket.AF_INET, ("8.8.8.8", 53)), (socket.AF_INET6, ("2606:4700:4700::1111", 53))):
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.settimeout(1)
            out[fam.name] = attempt(lambda: s.connect(addr))
        out["udp"] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close())
        out["netlink_route"] = attempt(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close())
        out["if_nameindex"] = attempt(lambda: [n for _, n in socket.if_nameindex()])
        out["localhost"] = attempt(lambda: sorted({(i[0].name, i[4][0]) for i in socket.getaddrinfo("localhost", 80)}))
        out["dns"] = attempt(lambda: socket.getaddrinfo("example.com", 80))
        import ssl
        out["ssl"] = ssl.create_default_context().protocol.name
        def square(x):
            return x * x
        with multiprocessing.Pool(2) as pool:
            out["pool"] = pool.map(square, [1, 2, 3])
        import http.server
        srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
        out["http_bound"] = srv.server_address[0]
        c = socket.socket()
        c.settimeout(1)
        out["http_reach"] = attempt(lambda: c.connect(srv.server_address))  # loopback is down
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    assert out["unix_pair"] == "ping"
    assert out["AF_INET"] == "ENETUNREACH"
    assert out["AF_INET6"] in ("ENETUNREACH", "EADDRNOTAVAIL")  # no IPv6 source address at all
    assert (out["udp"], out["netlink_route"]) == ("ok", "ok")
    assert out["if_nameindex"] == ["lo"]
    assert out["localhost"] == [["AF_INET", "127.0.0.1"]]
    assert out["dns"] == "gaierror"
    assert out["ssl"] == "PROTOCOL_TLS_CLIENT"
    assert out["pool"] == [1, 4, 9]
    assert out["http_bound"] == "127.0.0.1" and out["http_reach"] == "ENETUNREACH"
    host.check()
