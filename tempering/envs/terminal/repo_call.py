"""Test helpers for a generated repository (copied into it as tests/helpers.py).

Every test runs its snippet of code against the package in a separate `python3 -I`
process, so the code under test never runs inside the test runner: it can return a value,
raise, print or misbehave, but it cannot reach pytest or its report. Whatever the process
leaves behind is killed after each call (this process is their subreaper).

    expect("wrapkit.wrap('a b c', width=3)", ['a b', 'c'])

Also runs as a script without pytest: `python tests/test_PACKAGE.py`.
"""

import ast
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback

PACKAGE = "package"
REPO = "/app"
TIMEOUT_S = 5
RUN_CASE = r'''
import ast
def run_case(package, code):
    """Import `package`, run the snippet `code`, return the value of its last expression."""
    tree = ast.parse(code)
    last = tree.body.pop()
    ns = {"__name__": "__case__"}
    exec("import " + package, ns)
    exec(compile(tree, "<case>", "exec"), ns)
    return eval(compile(ast.Expression(last.value), "<case>", "eval"), ns)
'''
"""The one way a test snippet runs, here and in the generator's check of its mutants (repo_gen.py)."""
CHILD = RUN_CASE + r'''
import json, sys
out, sys.stdout = sys.stdout, sys.stderr
sys.path.insert(0, sys.argv[1])
try:
    result = {"value": repr(run_case(sys.argv[2], sys.argv[3]))}
except BaseException as e:
    result = {"raised": type(e).__name__, "message": str(e)[:300]}
out.write(json.dumps(result))
out.flush()
'''


class Raised:
    """The call raised `name` (compared by exception type name only)."""

    def __init__(self, name, message=""):
        self.name, self.message = name, message

    def __eq__(self, other):
        return isinstance(other, Raised) and other.name == self.name

    def __repr__(self):
        return f"raised {self.name}" + (f": {self.message}" if self.message else "")


class Odd:
    """Anything else: a value that is not a plain literal, a crash, a timeout. Equals nothing."""

    def __init__(self, what):
        self.what = what

    def __eq__(self, other):
        return False

    def __repr__(self):
        return self.what


def _reap():
    """Kill every process the call left behind (they were re-parented to us)."""
    me = os.getpid()
    for _ in range(100):
        kids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                        kids.append(int(pid))
            except (OSError, IndexError, ValueError):
                continue
        if not kids:
            return
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def run(code):
    """What `code` gives with the package: a literal value, a Raised, or an Odd."""
    try:
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come to us
    except (OSError, AttributeError):
        pass
    # Files, not pipes: a process the call leaves holding them open must not keep us waiting.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # -B and a cache prefix that cannot exist: the package is compiled from its source every call, never
        # read from a .pyc (stale after a same-size edit within the second, or planted)
        p = subprocess.Popen([sys.executable, "-I", "-B", "-X", "pycache_prefix=/dev/null/no-pycache", "-c", CHILD,
                              REPO, PACKAGE, code], stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err)
        try:
            p.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Odd(f"no result within {TIMEOUT_S} s")
        finally:
            p.kill()
            p.wait()
            _reap()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    try:
        result = json.loads(stdout)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        return Odd(f"no result (exit code {p.returncode}): {stderr.strip()[-500:]}")
    if "raised" in result:
        return Raised(result["raised"], result.get("message", ""))
    try:
        return ast.literal_eval(result["value"])
    except (ValueError, SyntaxError, TypeError, KeyError, RecursionError, MemoryError):
        return Odd(f"the value {str(result.get('value'))[:200]}")


def expect(code, expected):
    actual = run(code)
    assert actual == expected, f"{code}\nreturned {actual!r}\nexpected {expected!r}"


def main(namespace):
    """Run every test_* function of `namespace`; exit 1 if any failed."""
    failed = 0
    tests = [(k, v) for k, v in namespace.items() if k.startswith("test") and callable(v)]
    for name, test in tests:
        try:
            test()
            print(f"PASSED {name}")
        except Exception:  # noqa: BLE001
            failed += 1
            print(f"FAILED {name}\n{traceback.format_exc(limit=0)}")
    print(f"{len(tests) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
