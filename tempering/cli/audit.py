"""`temper audit data FILE [--env ID]`: duplicates, held-out overlap, balance, length outliers, coverage."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def held_out_prompts(env_ids: list[str], n: int) -> dict[str, str]:
    """Held-out task id -> user prompt, for the first n tasks of each env's test and unseen splits."""
    from tempering import envs
    from tempering.envs.protocols import FixedSize

    out: dict[str, str] = {}
    for env_id in env_ids:
        env = envs.make(env_id)
        for split in [s for s in getattr(env, "splits", ("train", "test")) if s != "train"]:
            count = min(n, env.size(split)) if isinstance(env, FixedSize) else n
            for task in env.tasks(split, count):
                out[task.id] = "\n".join(m.content for m in task.prompt if m.role == "user")
    return out


def _cmd_audit_data(args: argparse.Namespace) -> int:
    from tempering.safety.data_audit import audit_rows, read_rows

    rows = read_rows(Path(args.file))
    env_ids = args.env or sorted({r["env"] for r in rows if isinstance(r.get("env"), str)})
    report = audit_rows(rows, held_out_prompts(env_ids, args.n))
    d = report.as_dict()
    failed = d["overlap_rows"] > 0 or d["duplicate_share"] > args.max_duplicate_share
    if args.json:
        print(json.dumps(d | {"envs_checked": env_ids, "ok": not failed}, indent=1))
        return 1 if failed else 0
    print(f"{args.file}: {d['rows']} rows")
    print(f"  exact duplicates: {d['duplicate_rows']} rows ({d['duplicate_share']:.1%}) in {len(report.duplicates)} groups"
          + (f", e.g. rows {report.duplicates[0]}" if report.duplicates else ""))
    print(f"  near-duplicates (word 5-gram Jaccard >= 0.9): {d['near_duplicate_pairs']} pairs"
          + (f", e.g. rows {d['near_duplicates'][0][:2]}" if d["near_duplicates"] else ""))
    print(f"  held-out overlap: {d['overlap_rows']} rows against {d['held_out_checked']} held-out prompts of "
          f"{', '.join(env_ids) or 'no env (pass --env)'}"
          + (f", e.g. row {d['overlap'][0]['row']} = {d['overlap'][0]['held_out']}" if d["overlap"] else ""))
    if "chosen_longer_share" in d["balance"]:
        print(f"  pairs: the chosen reply is the longer one in {d['balance']['chosen_longer_share']:.1%} of "
              f"{d['balance']['pairs']} (near 100% teaches a reward model length)")
    for key in ("reward", "passed", "label"):
        if key in d["balance"]:
            print(f"  {key}: {d['balance'][key]}")
    length = d["length"]
    print(f"  length: median {length['chars_median']:.0f} chars, {length.get('outlier_rows', 0)} outside Tukey's "
          f"3 x IQR fences")
    for key, counts in d["coverage"].items():
        print(f"  per {key}: " + ", ".join(f"{k} {v}" for k, v in list(counts.items())[:12])
              + (f", ... ({len(counts)} in all)" if len(counts) > 12 else ""))
    print("FAILED: " + ("held-out prompts are in the data" if d["overlap_rows"] else
                        f"duplicates above {args.max_duplicate_share:.0%}") if failed else "ok")
    return 1 if failed else 0


def add_audit_parser(sub) -> None:
    p = sub.add_parser("audit", help="audit training data (and, later, reward models) before they train a model")
    ps = p.add_subparsers(dest="audit_cmd", required=True)
    d = ps.add_parser("data", help="duplicates, near-duplicates, held-out overlap, pair balance, outliers, coverage")
    d.add_argument("file", help="JSONL of SFT rows or preference pairs (temper data sft / pairs)")
    d.add_argument("--env", action="append", help="check overlap with this env's held-out splits (repeatable; "
                                                   "default: the envs the rows name)")
    d.add_argument("--n", type=int, default=500, help="held-out tasks per split to check against")
    d.add_argument("--max-duplicate-share", type=float, default=0.05, help="exit 1 above this share of duplicate rows")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=_cmd_audit_data)
