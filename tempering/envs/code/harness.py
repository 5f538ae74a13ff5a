"""The test harness that runs inside the sandbox. It is the sandboxed program's source:
`HARNESS` is sent as the run's code; the candidate solution comes as the file
`solution.py`; the tests and a fresh random token come on stdin, never as a file.

    checker (pid 1; non-dumpable, so its memory and /proc entries are closed to the candidate)
      └─ candidate   forked *before* the checker reads the tests and the token; its stdin,
                     stdout and stderr point elsewhere; it loads solution.py into its own
                     globals and answers calls over a pipe that carries plain data only

The checker runs the tests in its own globals with a proxy in place of the candidate's
function. Return values cross as tagged JSON (None, bool, int, float, str, bytes, list,
tuple, dict, set); anything else (an object that lies about equality, a subclass with a
patched __eq__) is refused, so every comparison happens between honest built-in values.
A pass is the line `<token> PASS`, printed by the checker after the last check; nothing
the candidate prints, and no exit code, can produce it.
"""

HARNESS = r'''
import ctypes, json, linecache, os, select, sys, traceback

ctypes.CDLL("libc.so.6", use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
# Imports the tests make must come from the system library, never from the workspace the
# candidate can write to.
sys.path[:] = [p for p in sys.path if p.startswith("/usr/lib/python3")]

PLAIN = (type(None), bool, int, float, str)


def enc(v, depth=0):
    if depth > 200:
        raise TypeError("value nested more than 200 levels deep")
    t = type(v)
    if t in PLAIN:
        return v
    if t is list:
        return [enc(x, depth + 1) for x in v]
    if t is tuple:
        return {"$t": [enc(x, depth + 1) for x in v]}
    if t is dict:
        return {"$d": [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in v.items()]}
    if t in (set, frozenset):
        return {"$s": [enc(x, depth + 1) for x in v], "frozen": t is frozenset}
    if t is bytes:
        return {"$b": v.hex()}
    raise TypeError(f"returned a {t.__name__}; only plain data (None, bool, int, float, str, bytes, "
                    "list, tuple, dict, set) can cross to the tests")


def dec(v):
    if isinstance(v, list):
        return [dec(x) for x in v]
    if isinstance(v, dict):
        if "$t" in v:
            return tuple(dec(x) for x in v["$t"])
        if "$d" in v:
            return {_key(dec(k)): dec(x) for k, x in v["$d"]}
        if "$s" in v:
            items = [_key(dec(x)) for x in v["$s"]]
            return frozenset(items) if v.get("frozen") else set(items)
        if "$b" in v:
            return bytes.fromhex(v["$b"])
        raise ValueError("malformed value")
    return v


def _key(k):
    return tuple(_key(x) for x in k) if isinstance(k, (list, tuple)) else k


def send(fd, obj):
    raw = json.dumps(obj).encode()
    data = len(raw).to_bytes(4, "big") + raw
    while data:
        data = data[os.write(fd, data):]


def recv(fd):
    head = _read(fd, 4)
    return json.loads(_read(fd, int.from_bytes(head, "big")))


def _read(fd, n):
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise EOFError("the candidate's process ended")
        out += chunk
    return out


def candidate_main(req_r, resp_w):
    """Load the solution into this process's own globals and answer calls."""
    try:
        with open("/workspace/solution.py") as f:
            source = f.read()
        ns = {"__name__": "solution", "__builtins__": __builtins__}
        exec(compile(source, "solution.py", "exec"), ns)
        load_error = None
    except BaseException as e:
        tb = e.__traceback__.tb_next if e.__traceback__ else None  # drop the harness's frame
        ns, load_error = {}, "".join(traceback.format_exception(type(e), e, tb))[-3000:]
        sys.stderr.write(load_error)
    while True:
        try:
            req = recv(req_r)
        except EOFError:
            os._exit(0)
        if load_error is not None:
            send(resp_w, {"error": "the solution did not load:\n" + load_error})
            continue
        fn = ns.get(req["call"])
        if not callable(fn):
            send(resp_w, {"error": f"the solution defines no function {req['call']!r}"})
            continue
        try:
            value = fn(*dec(req["args"]))
            reply = {"ok": enc(value)}
        except BaseException as e:
            reply = {"error": "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]}
            tb = e.__traceback__.tb_next if e.__traceback__ else None
            sys.stderr.write("".join(traceback.format_exception(type(e), e, tb))[-3000:])
        send(resp_w, reply)


req_r, req_w = os.pipe()
resp_r, resp_w = os.pipe()
err_r, err_w = os.pipe()
pid = os.fork()
if pid == 0:
    # The candidate: before anything else, let go of stdin (the tests arrive there) and
    # of the run's stdout (only the checker speaks there).
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.dup2(err_w, 2)
    for fd in (req_w, resp_r, err_r, err_w, devnull):
        os.close(fd)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False, buffering=1)
    try:
        candidate_main(req_r, resp_w)
    finally:
        os._exit(0)

for fd in (req_r, resp_w, err_w):
    os.close(fd)
spec = json.loads(sys.stdin.read())
os.close(0)
token = spec.pop("token")
per_call_s = float(spec.get("per_call_s", 10))
stderr_tail = bytearray()


class Candidate:
    """Stands in for the solution's function in the tests' globals."""

    def __init__(self, name):
        self.name = name
        self.__name__ = name

    def __call__(self, *args):
        send(req_w, {"call": self.name, "args": enc(list(args))})
        while True:
            ready, _, _ = select.select([resp_r, err_r], [], [], per_call_s)
            if not ready:
                raise TimeoutError(f"{self.name} gave no answer within {per_call_s:g} s")
            if err_r in ready:
                chunk = os.read(err_r, 65536)
                stderr_tail.extend(chunk)
                del stderr_tail[:-4000]
            if resp_r in ready:
                reply = recv(resp_r)
                if "error" in reply:
                    raise CandidateError(reply["error"])
                return dec(reply["ok"])


class CandidateError(Exception):
    pass


def failure(e):
    """The failing check's line and what went wrong, without the harness's own frames."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == "<tests>"]
    where = f"line {frames[-1].lineno}: {frames[-1].line}" if frames else ""
    what = "".join(traceback.format_exception_only(type(e), e)).strip()
    return {"where": where, "error": what[:2000]}


report = {"passed": 0, "total": 0, "failures": []}
entry = spec["entry_point"]
candidate = Candidate(entry)
cases = spec.get("cases")
try:
    ns = {"__name__": "__tests__"}
    if spec.get("prompt"):
        exec(compile(spec["prompt"], "<prompt>", "exec"), ns)
    ns[entry] = candidate
    if cases is None:
        report["total"] = 1
        linecache.cache["<tests>"] = (len(spec["test"]), None, spec["test"].splitlines(True), "<tests>")
        exec(compile(spec["test"], "<tests>", "exec"), ns)
        ns["check"](candidate)
        report["passed"] = 1
    else:
        report["total"] = len(cases)
        for i, case in enumerate(cases):
            try:
                got = candidate(*dec(case["args"]))
                expected = dec(case["expected"])
                if type(got) is float or type(expected) is float:
                    ok = abs(got - expected) <= 1e-6 * max(1.0, abs(expected))
                else:
                    ok = got == expected
                if not ok:
                    raise AssertionError(f"case {i}: expected {expected!r}, got {got!r}")
                report["passed"] += 1
            except BaseException as e:
                report["failures"].append({"case": i, **failure(e)})
except BaseException as e:
    report["failures"].append(failure(e))
report["candidate_stderr"] = stderr_tail.decode("utf-8", "replace")[-2000:]
print(json.dumps({"report": report}), flush=True)
if report["total"] > 0 and report["passed"] == report["total"] and not report["failures"]:
    print(f"{token} PASS", flush=True)
os.close(req_w)
os._exit(0)
'''
