"""`temper runs list|show|audit`: the runs under a folder, one run's episodes, pass rates and
cut attempts, and its sandbox incidents; a run at a URL is read from a local copy of its store."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _cmd_runs(args: argparse.Namespace) -> int:
    from tempering.errors import RunDirError
    from tempering.scheduler.store import STORE_FILE, Store, list_runs
    from tempering.storage import is_remote, run_files_copy

    if args.runs_cmd == "list":
        rows = list_runs(Path(args.root))
        if args.json:
            print(json.dumps(rows, indent=1))
            return 0
        if not rows:
            print(f"no runs with a store under {args.root}/")
        for r in rows:
            reward = "-" if r["reward_mean"] is None else f"{r['reward_mean']:.3f}"
            print(f"{r['dir']:32s} {r.get('algorithm', '-'):12s} {r.get('env', '-'):24s} steps {r['steps']:4d}  "
                  f"episodes {r['episodes']:6d}  pass {r['pass_rate']:.3f}  last reward {reward}")
        return 0
    if is_remote(args.run):  # a run at a URL: read a local copy of its store
        with run_files_copy(args.run) as copy:
            args.run = str(copy)
            return _cmd_runs(args)
    run_dir = Path(args.run)
    if not (run_dir / STORE_FILE).is_file() and (Path(args.root) / args.run / STORE_FILE).is_file():
        run_dir = Path(args.root) / args.run
    if not (run_dir / STORE_FILE).is_file():
        raise RunDirError(f"{args.run!r} has no {STORE_FILE}: pass a run directory (see `temper runs list`)")
    store = Store(run_dir / STORE_FILE)
    try:
        if args.runs_cmd == "audit":
            return _print_audit(store.incidents(), args.json)
        s = store.summary(slowest=args.slowest)
    finally:
        store.close()
    if args.json:
        print(json.dumps(s, indent=1, default=str))
        return 0
    r = s["run"]
    print(f"run {r.get('name')} ({r.get('algorithm')} on {r.get('env')}, model {r.get('model')}): {s['steps']} steps, "
          f"{s['episodes']} episodes, {s['passed']} passed, {s['tokens']} generated tokens")
    print(f"tasks tracked: {s['tasks']}, with mixed outcomes: {s['mixed_tasks']}")
    print("pass rate by domain:")
    for d in s["domains"]:
        print(f"  {d['domain']:16s} {d['pass_rate']:.3f}  reward {d['reward_mean']:.3f}  ({d['episodes']} episodes)")
    if len(s["families"]) > 1:
        print("pass rate by family:")
        for f in s["families"]:
            print(f"  {f['family']:24s} {f['pass_rate']:.3f}  ({f['episodes']} episodes)")
    for a in s["alerts"]:
        print(f"alert at step {a['step']}: {a['kind']}: {a['message']}")
    print("why attempts ended: " + ", ".join(f"{k} {v}" for k, v in s["stop_reasons"].items()))
    print("slowest episodes:")
    for e in s["slowest"]:
        print(f"  step {e['step']} round {e['round']} slot {e['slot']}: {e['wall_s']:.1f} s wall, {e['env_s']:.2f} s env, "
              f"{e['turns']} turns, {e['tokens']} tokens, {e['stop_reason']} ({e['task_id']})")
    return 0


def _print_audit(incidents: list[dict], as_json: bool) -> int:
    """`temper runs audit RUN`: every sandbox run of the run's attempts that hit a limit, was
    killed or failed as a sandbox, with its attempt."""
    if as_json:
        print(json.dumps(incidents, indent=1))
        return 0
    counts: dict[str, int] = {}
    for i in incidents:
        counts[i["status"]] = counts.get(i["status"], 0) + 1
    print(f"{len(incidents)} sandbox incident(s)" + (": " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                                                     if counts else ""))
    for i in incidents:
        print(f"  step {i['step']} round {i['round']} slot {i['slot']} {i['task_id'] or '-'}: {i['status']} "
              f"({i['language']}, {i['wall_s']:.2f} s) {i['detail']}")
    return 0


def add_runs_parser(sub) -> None:
    rn = sub.add_parser("runs", help="list runs, or show one run's episodes, pass rates and cut attempts")
    rns = rn.add_subparsers(dest="runs_cmd", required=True)
    rl = rns.add_parser("list", help="every run directory with a store under --root")
    rl.add_argument("--root", default="runs")
    rl.add_argument("--json", action="store_true")
    rs = rns.add_parser("show", help="per-domain pass rates, slowest episodes, why attempts were cut")
    rs.add_argument("run", help="run directory (or its name under --root), or a run's URL (s3://bucket/run)")
    rs.add_argument("--root", default="runs")
    rs.add_argument("--slowest", type=int, default=5)
    rs.add_argument("--json", action="store_true")
    ra = rns.add_parser("audit", help="the sandbox's audit log: runs that hit a limit, were killed or failed")
    ra.add_argument("run", help="run directory (or its name under --root), or a run's URL (s3://bucket/run)")
    ra.add_argument("--root", default="runs")
    ra.add_argument("--json", action="store_true")
    rn.set_defaults(func=_cmd_runs)
