"""`temper audit data FILE [--env ID]`: duplicates, held-out overlap, balance, length outliers, coverage.
`temper audit rm MODEL --env ID`: a reward model against the env's verifier (safety/rm_audit.py)."""

from __future__ import annotations

import argparse
import json


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
    from tempering.safety.data_audit import audit_rows, check_rows
    from tempering.trainer.data import read_rows

    rows = read_rows(args.file)  # a path or a URL (s3://...)
    check_rows(rows)
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


def rm_items(env_id: str, n: int):
    """Held-out replies with the verifier's verdict: per test task, the reference and up to two
    realistic wrong attempts (or the env's broken variant). Returns (items, task by id)."""
    import random

    from tempering import envs
    from tempering.safety.rm_audit import Item

    env = envs.make(env_id)
    items, tasks = [], {}
    for task in env.tasks("test", n):
        tasks[task.id] = task
        replies = [env.reference_response(task)]
        if hasattr(env, "wrong_attempts"):
            replies += env.wrong_attempts(task, random.Random(task.id))[:2]
        elif hasattr(env, "broken_response"):
            replies.append(env.broken_response(task))
        family = str(task.metadata.get("family", "-"))
        for reply in replies:
            items.append(Item(task.id, family, task.prompt[-1].content, reply, env.verify(task, reply).passed))
    return items, tasks


def _cmd_audit_rm(args: argparse.Namespace) -> int:
    import torch

    from tempering.models import load
    from tempering.rollout.hf import chat_prompt_ids
    from tempering.safety.rm_audit import audit_reward_model
    from tempering.trainer.offline import reward_scores

    items, tasks = rm_items(args.env, args.n)
    by_prompt = {t.prompt[-1].content: t for t in tasks.values()}
    rm = load(args.model, kind="reward")
    pad = rm.tokenizer.pad_token_id or 0

    @torch.no_grad()
    def score(prompt: str, reply: str) -> float:
        ids = tuple(chat_prompt_ids(rm.tokenizer, by_prompt[prompt].prompt))
        return float(reward_scores(rm.model, [(ids, tuple(rm.tokenizer.encode(reply, add_special_tokens=False)))],
                                   pad)[0])

    report = audit_reward_model(items, score) | {"model": args.model, "env": args.env}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        agree = "-" if report["agreement"] is None else f"{report['agreement']:.1%}"
        print(f"{args.model} on {args.env}: {report['replies']} held-out replies, {report['pairs']} pass/fail pairs")
        print(f"  agreement with the verifier: {agree}; by family: " +
              ", ".join(f"{f} {v:.0%}" for f, v in report["agreement_by_family"].items()))
        print(f"  score vs length: Pearson r {report['length_r']:+.2f} (length alone would agree on "
              f"{report['longer_is_passing'] or 0:.0%} of pairs)")
        print(f"  calibration error (ECE): {report['calibration_ece']:.3f}")
        for name, e in report["surface_edits"].items():
            print(f"  edit {name}: mean shift {e['mean_shift_spreads']:+.2f} spreads, pair order flips "
                  f"{e['pair_flips']:.0%}")
        print("FLAGGED: " + "; ".join(report["flags"]) if report["flags"] else "no flags")
    return 1 if report["flags"] else 0


def add_audit_parser(sub) -> None:
    p = sub.add_parser("audit", help="audit training data (and, later, reward models) before they train a model")
    ps = p.add_subparsers(dest="audit_cmd", required=True)
    d = ps.add_parser("data", help="duplicates, near-duplicates, held-out overlap, pair balance, outliers, coverage")
    d.add_argument("file", help="JSONL or Parquet of SFT rows or preference pairs (temper data sft / pairs)")
    d.add_argument("--env", action="append", help="check overlap with this env's held-out splits (repeatable; "
                                                   "default: the envs the rows name)")
    d.add_argument("--n", type=int, default=500, help="held-out tasks per split to check against")
    d.add_argument("--max-duplicate-share", type=float, default=0.05, help="exit 1 above this share of duplicate rows")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=_cmd_audit_data)
    r = ps.add_parser("rm", help="a reward model against the verifier: agreement, length bias, calibration, "
                                 "sensitivity to edits that keep correctness")
    r.add_argument("model", help="reward-model directory (algorithm.name reward_model), or a preset")
    r.add_argument("--env", required=True, help="env whose held-out tasks supply the replies")
    r.add_argument("--n", type=int, default=50, help="held-out tasks")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=_cmd_audit_rm)
