"""`temper report RUN [--out FILE]`: the run's self-contained HTML report, for a running or finished run."""

from __future__ import annotations

import argparse
from pathlib import Path


def _cmd_report(args: argparse.Namespace) -> int:
    from tempering.errors import RunDirError
    from tempering.eval.report import write_report
    from tempering.scheduler.store import STORE_FILE
    from tempering.storage import is_remote, run_files_copy

    if is_remote(args.run):  # a run at a URL: read from a local copy of its files; the report lands here
        with run_files_copy(args.run) as copy:
            if not (copy / STORE_FILE).is_file():
                raise RunDirError(f"{args.run!r} has no {STORE_FILE}: pass the URL of a run (docs/storage.md)")
            out = write_report(copy, Path(args.out or "report.html"))
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): open it in a browser, it needs no network")
        return 0
    run_dir = Path(args.run)
    if not (run_dir / STORE_FILE).is_file() and (Path(args.root) / args.run / STORE_FILE).is_file():
        run_dir = Path(args.root) / args.run
    if not (run_dir / STORE_FILE).is_file():
        raise RunDirError(f"{args.run!r} has no {STORE_FILE}: pass a run directory (see `temper runs list`)")
    out = write_report(run_dir, Path(args.out) if args.out else None)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): open it in a browser, it needs no network")
    return 0


def add_report_parser(sub) -> None:
    p = sub.add_parser("report", help="one HTML file: curves, evaluation, rollout viewer, sandbox statistics")
    p.add_argument("run", help="run directory (or its name under --root), or a run's URL (s3://bucket/run)")
    p.add_argument("--root", default="runs")
    p.add_argument("--out", help="where to write it (default RUN/report.html; ./report.html for a URL)")
    p.set_defaults(func=_cmd_report)
