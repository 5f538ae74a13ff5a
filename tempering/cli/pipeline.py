"""`temper pipeline CONFIG`: the whole post-training pipeline in one run directory."""

from __future__ import annotations

import argparse


def _cmd_pipeline(args: argparse.Namespace) -> int:
    from tempering.pipeline.remote import run_pipeline_at
    from tempering.pipeline.table import report_lines

    state = run_pipeline_at(args.config, args.run_dir, args.set, args.control, args.stage or None, args.source)
    print("\n".join(report_lines(state)))
    print(f"wrote {state.get('url') or state['run_dir']}/pipeline.json and report.md")
    return 0


def add_pipeline_parser(sub) -> None:
    p = sub.add_parser("pipeline", help="baseline eval, verified demonstrations, SFT, RL, eval: one resumable run")
    p.add_argument("config", help="pipeline YAML, e.g. configs/tiny-pipeline.yaml")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key, e.g. sft.train.max_minutes=5 or eval.envs.sql/sqlite-v1.n=50 (repeatable)")
    p.add_argument("--run-dir", help="where the run lives (default runs/<name>), or a URL such as s3://bucket/run "
                                     "(docs/storage.md); run the same command again to continue after a crash")
    p.add_argument("--control", default="none", choices=["none", "shuffled"],
                   help="shuffled: also run the RL stage with each group's rewards permuted, and evaluate it")
    p.add_argument("--from", dest="source", metavar="RUN_DIR",
                   help="start a new run from this finished run's stages (a directory or URL) wherever this "
                        "config would compute the same thing (e.g. keep base eval, demos and SFT, rerun RL with "
                        "--set rl.optim.lr=...)")
    p.add_argument("--stage", action="append", metavar="STAGE",
                   help="run only this stage (repeatable): eval-base, demos, sft, eval-sft, rl, eval-rl, "
                        "rl-shuffled, eval-rl-shuffled")
    p.set_defaults(func=_cmd_pipeline)
