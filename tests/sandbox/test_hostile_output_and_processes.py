"""Hostile programs against the sandbox, output floods and exact capture; processes that try to
outlive the run.
What every test checks: tests/sandbox/hostile.py."""

from __future__ import annotations

import hashlib
import time

import pytest

from hostile import src


def test_output_floods(sandbox, host):
    cap = 65536
    lim = sandbox.limits.with_(output_bytes=cap)
    r = sandbox.run("yes", language="bash", limits=lim)
    assert (r.status, r.exit_code, r.truncated) == ("output_limit", -9, True)
    assert r.stdout_bytes == b"y\n" * (cap // 2) and r.stdout == "y\n" * (cap // 2)
    r = sandbox.run("yes err >&2", language="bash", limits=lim)
    assert (r.status, r.truncated) == ("output_limit", True)
    assert r.stderr == "err\n" * (cap // 4) and r.stdout_bytes == b""
    r = sandbox.run("import os\nwhile True:\n    os.write(1, b'\\xff' * 4096)", limits=lim)
    assert (r.status, r.truncated) == ("output_limit", True) and r.stdout_bytes == b"\xff" * cap
    host.check()


def test_invalid_utf8_on_stderr(sandbox, host):
    raw = b"\xff\xfe bad \xc3\x28 \xed\xa0\x80 end\n"
    r = sandbox.run(f"import os, sys\nos.write(2, {raw!r})\nos.write(1, {raw!r})\nsys.exit(3)")
    assert (r.status, r.exit_code) == ("error", 3)
    assert r.stderr == raw.decode("utf-8", "replace") and "\ufffd" in r.stderr
    assert r.stdout_bytes == raw and r.stdout == raw.decode("utf-8", "replace")
    r = sandbox.run(r"printf '\377\376\000x\n' >&2", language="bash")
    assert (r.status, r.stderr) == ("ok", b"\xff\xfe\x00x\n".decode("utf-8", "replace"))
    host.check()


def test_stdout_and_stderr_captured_exactly(sandbox, host):
    gen = "b''.join(hashlib.sha256(i.to_bytes(4, 'big')).digest() for i in range(25000))"  # 800 kB
    expected = b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(25000))
    code = src(f'''
        import hashlib, os, sys
        data = {gen}
        sys.stdout.buffer.write(data[:1000])
        sys.stdout.flush()
        os.write(1, data[1000:])
        sys.stderr.write("text é\\n")
        sys.stderr.flush()
        os.write(2, bytes(range(256)))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.truncated) == ("ok", False)
    assert r.stdout_bytes == expected and r.stdout == expected.decode("utf-8", "replace")
    assert r.stderr == "text é\n" + bytes(range(256)).decode("utf-8", "replace")
    c = '#include <stdio.h>\nint main(void){ fwrite("a\\0b\\xff\\n", 1, 5, stdout); fputs("e\\0", stderr); return 0; }'
    r = sandbox.run(c, language="c")
    assert (r.status, r.stdout_bytes, r.stderr) == ("ok", b"a\x00b\xff\n", "e")
    host.check()


@pytest.mark.parametrize("language", ["python", "bash"])
def test_child_holding_stdout_does_not_delay_the_result(sandbox, host, language):
    code = {
        "python": "import os, time\nif os.fork() == 0:\n    time.sleep(3600)\n    os._exit(0)\nprint('parent done')",
        "bash": "sleep 3600 &\n(sleep 3600; echo late) &\necho parent done",
    }[language]
    r = sandbox.run(code, language=language)
    # had the result waited for the child that holds stdout, the wall limit would have ended
    # the run as a timeout: "ok" is the proof, whatever the machine's speed
    assert (r.status, r.exit_code, r.stdout, r.detail) == ("ok", 0, "parent done\n", "")
    host.check()


# -- processes that try to outlive the run


@pytest.mark.parametrize("language", ["python", "bash"])
def test_double_forked_daemon_dies_with_the_run(sandbox, host, language):
    code = {
        "python": src('''
            import os, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    for fd in (0, 1, 2):
                        os.close(fd)
                    while True:
                        with open("/workspace/hb", "a") as f:
                            f.write("%f\\n" % time.monotonic())
                        time.sleep(0.02)
                os._exit(0)
            while not os.path.exists("/workspace/hb") or len(open("/workspace/hb").read().split()) < 5:
                time.sleep(0.02)
            print("daemon running", os.path.getsize("/workspace/hb") > 0)
        '''),
        "bash": src('''
            ( setsid bash -c 'exec 0<&- 1>&- 2>&-; trap "" HUP TERM INT
                              while :; do date +%s%N >> /workspace/hb; sleep 0.02; done' & )
            until [ -s /workspace/hb ] && [ "$(wc -l < /workspace/hb)" -ge 5 ]; do sleep 0.02; done
            echo daemon running True
        '''),
    }[language]
    with sandbox.session(language) as s:
        r = s.run(code)
        assert (r.status, r.stdout) == ("ok", "daemon running True\n"), r
        time.sleep(0.3)
        first = s.read_file("hb")
        time.sleep(0.6)
        assert s.read_file("hb") == first, "a process of a finished run is still writing to the workspace"
        assert len(first.split()) >= 5
    host.check()


def test_zombies(sandbox, host):
    code = src('''
        import os, time
        def states():
            return [open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0]
                    for p in os.listdir("/proc") if p.isdigit() and p != "1"]
        for _ in range(20):
            if os.fork() == 0:
                os._exit(0)
        while states().count("Z") < 20:  # each child is a zombie once it has exited
            time.sleep(0.02)
        print(states().count("Z"), len(states()))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code, r.stdout) == ("ok", 0, "20 20\n")
    host.check()
