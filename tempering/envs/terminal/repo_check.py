"""The generator's check of its mutants (repo_gen.py), run in the sandbox: every test call
against the original module and each mutant, a fresh process per source and a fresh import
per call, each call capped in CPU time and memory. Nothing here is copied into a task."""

from __future__ import annotations

import json

from tempering.errors import TaskError

from .repo_call import RUN_CASE

CALL_LIMIT_S, CALL_MEMORY_MB = 2.0, 384
"""A call past this CPU time (not wall time: a loaded machine discards the same mutants) or this
address space hangs, and its mutant is discarded; a runaway allocation never trips the sandbox's limit."""
EVALUATE = r'''
import json, subprocess, sys
cfg = json.load(open("cfg.json"))
out = {}
for name in cfg["packages"]:
    try:
        p = subprocess.run([sys.executable, "-I", "-c", cfg["child"], "pkgs/" + name, cfg["package"], "cfg.json",
                            "1" if name == "original" else "0"], capture_output=True, text=True, errors="replace",
                           stdin=subprocess.DEVNULL, timeout=cfg["timeout"])
        out[name] = json.loads(p.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        out[name] = None
print(json.dumps(out))
'''
CHILD = RUN_CASE + r'''
import json, resource, signal, sys
real, sys.stdout = sys.stdout, sys.stderr
root, package, every = sys.argv[1], sys.argv[2], sys.argv[4] == "1"
cfg = json.load(open(sys.argv[3]))
sys.path.insert(0, root)
resource.setrlimit(resource.RLIMIT_AS, (cfg["memory"], cfg["memory"]))
class Hang(BaseException):
    pass
def alarm(*_):
    raise Hang()
signal.signal(signal.SIGPROF, alarm)
def run(code):
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]
    return run_case(package, code)
results = []
for code in cfg["cases"]:
    signal.setitimer(signal.ITIMER_PROF, cfg["limit"])
    try:
        results.append({"value": repr(run(code))})
    except (Hang, MemoryError):
        results.append({"hang": True})
    except BaseException as e:
        results.append({"raised": type(e).__name__, "message": str(e)[:300]})
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    if "hang" in results[-1] and not every:
        break
real.write(json.dumps(results))
'''


def evaluate(package: str, sources: dict[str, str], cases: list[str], sandbox) -> dict:
    """Run every case against each source (name -> module text) in one sandbox run:
    name -> one result per case ({value: repr} | {raised, message} | {hang}), or None
    when its process failed. Mutants stop at their first hanging call."""
    from tempering.sandbox import Limits

    files = {f"pkgs/{name}/{package}/__init__.py": text for name, text in sources.items()}
    files["cfg.json"] = json.dumps({"packages": list(sources), "package": package, "cases": cases,
                                    "limit": CALL_LIMIT_S, "memory": CALL_MEMORY_MB << 20,
                                    "child": CHILD, "timeout": 30})
    limits = Limits(wall_s=300, cpu_s=300, memory_mb=1024, processes=32, output_bytes=8 << 20)
    r = sandbox.run(EVALUATE, language="python", files=files, limits=limits)
    if r.status != "ok":
        raise TaskError(f"evaluating {package} cases in the sandbox failed ({r.status}): {r.stderr[-300:]}")
    return json.loads(r.stdout)
