"""`temper sandbox run|bench` and `temper verify code`: untrusted code through the sandbox,
from the command line. The defaults are the sandbox's own (`Limits()`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tempering.errors import ConfigError
from tempering.sandbox.limits import Limits  # standard library only, cheap

_LIMITS = Limits()

_EXTENSIONS = {".py": "python", ".sh": "bash", ".bash": "bash", ".c": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp"}


def cmd_sandbox(args: argparse.Namespace) -> int:
    from tempering.sandbox import LANGUAGES, Sandbox

    if args.sandbox_cmd == "serve":
        from tempering.server.serve import serve

        return serve(args.host, args.port, args.workers, args.token_file, args.no_token, args.name, args.per_token,
                     args.queue, args.max_request_mb, args.log_level, args.ready_file)
    if args.sandbox_cmd == "bench":
        from tempering.sandbox.bench import report

        print(report(n=args.n, runs=args.runs, compare=not args.no_compare))
        return 0
    if args.file == "-":
        code = sys.stdin.read()
        language = args.language or "python"
    else:
        path = Path(args.file)
        if not path.is_file():
            raise ConfigError(f"no such file: {args.file} (give a program file, or - to read it from stdin)")
        code = path.read_text()
        language = args.language or _EXTENSIONS.get(path.suffix, "python")
    if language not in LANGUAGES:
        raise ConfigError(f"unknown language {language!r}: choose one of {', '.join(LANGUAGES)}")
    stdin = ""
    if args.stdin:
        if not Path(args.stdin).is_file():
            raise ConfigError(f"no such file: {args.stdin} (--stdin takes a file whose bytes become the program's stdin)")
        stdin = Path(args.stdin).read_bytes()
    try:
        limits = Limits(wall_s=args.timeout, cpu_s=args.timeout, memory_mb=args.memory_mb,
                        compile_wall_s=args.compile_timeout, compile_cpu_s=args.compile_timeout)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    with Sandbox(limits=limits, pool_size=1) as sb:
        result = sb.run(code, language=language, stdin=stdin)
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        sys.stdout.flush()
        note = f" ({result.detail})" if result.detail else ""
        print(f"[sandbox] status={result.status} exit={result.exit_code} wall={result.wall_s:.3f}s "
              f"cpu={result.cpu_s:.3f}s peak_memory={result.peak_memory_mb:.1f}MB{note}", file=sys.stderr)
    return 1 if result.status == "sandbox_error" else 0


_TASK_FORMATS = ("{id, entry_point, prompt, test | cases}, or a HumanEval record "
                 "{task_id, prompt, entry_point, test} (one line of HumanEval.jsonl)")


def _read_code_task(path: Path) -> dict:
    """One task record from --task: a JSON object, or a file of one JSON line."""
    text = path.read_text()
    try:
        obj = json.loads(text)
    except ValueError as e:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1 and lines[0].lstrip().startswith("{") and lines[0].rstrip().endswith("}"):
            raise ConfigError(f"{path} holds {len(lines)} JSON lines; --task takes one task, e.g. one line of it: "
                              f"sed -n 1p {path} > task.json") from None
        raise ConfigError(f"{path} is not JSON ({e}); a task is {_TASK_FORMATS}") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{path} must hold one JSON object: {_TASK_FORMATS}")
    return obj


def cmd_verify(args: argparse.Namespace) -> int:
    from tempering.envs.code.verify import CodeTask, verify_code
    from tempering.sandbox import Sandbox

    task_path, sol_path = Path(args.task), Path(args.solution)
    for path, what in ((task_path, "--task"), (sol_path, "--solution")):
        if not path.is_file():
            raise ConfigError(f"no such file: {path} ({what} takes a file)")
    task = CodeTask.from_json(_read_code_task(task_path))
    with Sandbox(pool_size=1) as sb:
        score = verify_code(task, task.module(sol_path.read_text()), sb)
    out = {"passed": score.passed, "reward": score.value, "status": score.status, "details": score.details}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{task.id}: {out['status']} (reward {score.value:g}, "
              f"{score.details['checks_passed']}/{score.details['checks_total']} checks)")
        for f in score.details["failures"]:
            print(f"  {f.get('where', '')} {f.get('error', '')}".rstrip())
    return 0


def add_sandbox_parsers(sub) -> None:
    """The `sandbox` and `verify` subcommands."""
    sb = sub.add_parser("sandbox", help="run untrusted code in the sandbox, or benchmark it")
    sbs = sb.add_subparsers(dest="sandbox_cmd", required=True)
    r = sbs.add_parser("run", help="run one program in full isolation")
    r.add_argument("file", help="program file, or - for stdin")
    r.add_argument("--language", help="python, bash, c or cpp (default: from the file extension, else python)")
    r.add_argument("--timeout", type=float, default=_LIMITS.wall_s,
                   help=f"wall and CPU seconds of the whole run, a C/C++ compile step included unless "
                        f"--compile-timeout is given (default {_LIMITS.wall_s:g})")
    r.add_argument("--compile-timeout", type=float, default=_LIMITS.compile_wall_s,
                   help="C/C++: wall and CPU seconds of the compile step on its own; --timeout then starts "
                        "when it ends (default: the compile step spends --timeout)")
    r.add_argument("--memory-mb", type=int, default=_LIMITS.memory_mb,
                   help=f"memory limit of the whole run (default {_LIMITS.memory_mb})")
    r.add_argument("--stdin", help="file whose bytes become the program's stdin")
    r.add_argument("--json", action="store_true", help="print exactly one JSON object with the result")
    bn = sbs.add_parser("bench", help="latency vs python3 -c and bwrap; throughput at several concurrencies")
    bn.add_argument("--n", type=int, default=100, help="latency samples per path")
    bn.add_argument("--runs", type=int, default=500, help="runs per throughput level")
    bn.add_argument("--no-compare", action="store_true", help="measure only the Tempering sandbox")
    sv = sbs.add_parser("serve", help="the sandbox as an HTTP service: SandboxFusion's /run_code + the native API")
    sv.add_argument("--host", default="127.0.0.1", help="interface to listen on (default loopback)")
    sv.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    sv.add_argument("--workers", type=int, default=4, help="runs at once: the fork server's warm slots (default 4)")
    sv.add_argument("--token-file", help="tokens that may call it, one per line or `name token` "
                                         "(or set TEMPERING_SANDBOX_TOKEN)")
    sv.add_argument("--no-token", action="store_true", help="serve without authentication (loopback only)")
    sv.add_argument("--name", help="this replica's name in responses and metrics (default host:port)")
    sv.add_argument("--per-token", type=int, default=0, help="runs at once per token (default: --workers)")
    sv.add_argument("--queue", type=int, default=256, help="requests per token that may wait; past it 429")
    sv.add_argument("--max-request-mb", type=float, default=16.0, help="largest request body (default 16 MB)")
    sv.add_argument("--log-level", default="warning", help="uvicorn's log level (default warning)")
    sv.add_argument("--ready-file", help="write the bound port to this file once serving (for supervisors)")
    sb.set_defaults(func=cmd_sandbox)

    vf = sub.add_parser("verify", help="check a solution against a task's tests in the sandbox")
    vfs = vf.add_subparsers(dest="verify_cmd", required=True)
    vc = vfs.add_parser("code", help="a Python solution against a code task")
    vc.add_argument("--task", required=True, help="task JSON: {id, entry_point, prompt, test | cases}, or HumanEval's "
                                                  "{task_id, prompt, entry_point, test} (a line of HumanEval.jsonl)")
    vc.add_argument("--solution", required=True,
                    help="the Python file to check: the whole module, or the function's body (a HumanEval completion)")
    vc.add_argument("--json", action="store_true", help="print one JSON object: passed, reward, status, details")
    vf.set_defaults(func=cmd_verify)
