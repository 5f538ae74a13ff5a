"""`temper`: train, eval, data, settings, envs, runs, sandbox, verify, demo, pipeline.

Every user mistake ends in one line naming the problem and the fix, and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tempering.errors import ConfigError, TemperingError  # noqa: E402
from tempering.cli.pipeline import add_pipeline_parser
from tempering.cli.report import add_report_parser
from tempering.cli.runs import add_runs_parser
from tempering.cli.audit import add_audit_parser
from tempering.cli.plan import add_plan_parser  # noqa: E402
from tempering.cli.sandbox import add_sandbox_parsers  # noqa: E402
from tempering.config import EvalConfig, RolloutConfig  # noqa: E402 - no torch: cheap


def _cmd_train(args: argparse.Namespace) -> int:
    from tempering.config import load_config
    from tempering.storage import is_remote
    from tempering.trainer import prepare_run, read_run_config, train

    if args.resume and (args.config or args.set):
        raise ConfigError("--resume continues a run with its saved config: drop CONFIG and --set")
    if is_remote(args.resume or args.run_dir or ""):  # a run at a URL, trained in a local mirror
        from tempering.trainer.remote import train_remote

        if not args.resume and not args.config:
            raise ConfigError("temper train needs a CONFIG file (e.g. configs/tiny-cpu.yaml) or --resume RUN_DIR")
        run_dir = args.resume or args.run_dir
        metrics = train_remote(run_dir, None if args.resume else load_config(args.config, args.set), steps=args.steps)
    elif args.resume:
        run_dir = Path(args.resume)
        cfg = read_run_config(run_dir)
        metrics = train(cfg, run_dir, steps=args.steps, resume=True)
    else:
        if not args.config:
            raise ConfigError("temper train needs a CONFIG file (e.g. configs/tiny-cpu.yaml) or --resume RUN_DIR")
        cfg = load_config(args.config, args.set)
        run_dir = Path(args.run_dir or f"runs/{cfg.name}")
        prepare_run(cfg, run_dir)
        metrics = train(cfg, run_dir, steps=args.steps)
    last = metrics[-1] if metrics else {}
    shown = ", ".join(f"{k} {last[k]:.3f}" for k in ("reward_mean", "pass_rate", "loss", "accuracy") if k in last)
    print(f"run {run_dir}: {len(metrics)} step(s) this session, last step {last.get('step', '-')}"
          + (f", {shown}" if shown else ""))
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from tempering.cli.evaluate import run_eval

    return run_eval(args)


def _cmd_data(args: argparse.Namespace) -> int:
    if args.kind == "repo-tasks":
        from tempering.cli.terminal import data_repo_tasks

        return data_repo_tasks(args)
    if not args.env:
        raise ConfigError(f"temper data {args.kind} needs --env: an env id from `temper envs list`")
    from tempering import envs
    from tempering.trainer.make_data import preference_rows, write_jsonl

    env = envs.make(args.env)
    if args.n < 1:
        raise ConfigError(f"--n must be at least 1, got {args.n}")
    out = args.out  # a path or a URL (s3://bucket/sft.jsonl): write_jsonl uploads it whole
    if args.kind == "sft":
        return _write_demos(args, out)
    from tempering.models import load
    from tempering.rollout import HFClient
    from tempering.types import SamplingParams

    loaded = load(args.model)
    rows, counts = preference_rows(env, HFClient(loaded.model, loaded.tokenizer), args.split, args.n, args.samples,
                                   SamplingParams(temperature=args.temperature, max_new_tokens=args.max_new_tokens,
                                                  seed=args.seed), args.pairs_per_task)
    write_jsonl(rows, out)
    print(f"wrote {counts['pairs']} pairs to {out} ({counts['tasks_with_pairs']}/{counts['tasks']} tasks had a passing "
          f"and a failing sample; sample pass rate {counts['pass_rate']:.3f})")
    return 0


def _write_demos(args: argparse.Namespace, out: str) -> int:
    """Verified demonstrations of one env (tempering.trainer.demos), from train tasks only."""
    from transformers import AutoTokenizer

    from tempering.models import resolve_path
    from tempering.trainer.demos import KINDS, chat_token_counter, env_demonstrations
    from tempering.trainer.make_data import write_jsonl

    if args.split != "train":
        raise ConfigError("sft demonstrations come from train tasks only: drop --split (held-out tasks never reach training)")
    kinds = {}
    for part in args.kinds.split(","):
        name, _, weight = part.partition("=")
        if name not in KINDS:
            raise ConfigError(f"--kinds: unknown kind {name!r}: use {', '.join(KINDS)}, e.g. --kinds single=1,repair=1")
        kinds[name] = float(weight or 1)
    tok = AutoTokenizer.from_pretrained(resolve_path(args.model))
    demos = env_demonstrations(args.env, chat_token_counter(tok), args.tokens or 1 << 62, kinds, seed=args.seed,
                               max_tasks=args.n)
    write_jsonl(demos.rows, out)
    s = demos.summary()
    dropped = ", ".join(f"{k} x{v}" for k, v in s["dropped"].items()) or "none"
    print(f"wrote {s['kept']} verified demonstrations ({s['tokens']} tokens; {s['kinds']}) from {s['tasks_tried']} "
          f"train tasks to {out}; dropped: {dropped}")
    return 0


def _print_section(prefix: str, cls, value, fallbacks, field_docs) -> None:
    """One line per key of a config section, nested sections (train.budget) included."""
    import dataclasses
    import typing

    hints, docs = typing.get_type_hints(cls), field_docs(cls)
    for g in dataclasses.fields(cls):
        v = getattr(value, g.name)
        if dataclasses.is_dataclass(hints[g.name]):
            _print_section(f"{prefix}.{g.name}", hints[g.name], v, fallbacks, field_docs)
            continue
        shown = repr(v)
        if v is None:
            shown = "(algorithm's default)" if prefix == "algorithm" and g.name in fallbacks else "(unset)"
        print(f"{prefix}.{g.name} = {shown}  # {docs.get(g.name, '')}")


def _cmd_settings(args: argparse.Namespace) -> int:
    """Every config key with its default and its one-line docstring (from the dataclasses)."""
    import dataclasses
    import typing

    from tempering.config import FALLBACK_DEFAULTS, RECIPES, Config, field_docs

    hints = typing.get_type_hints(Config)
    default = Config()
    for f in dataclasses.fields(Config):
        cls = hints[f.name]
        if not dataclasses.is_dataclass(cls):
            print(f"{f.name} = {getattr(default, f.name)!r}  # {field_docs(Config).get(f.name, '')}")
            continue
        if args.section and f.name != args.section:
            continue
        _print_section(f.name, cls, getattr(default, f.name), FALLBACK_DEFAULTS, field_docs)
    if args.section in (None, "algorithm"):
        print("\nalgorithms (config.RECIPES), with their defaults where a setting is left unset:")
        for name, recipe in RECIPES.items():
            preset = ", ".join(f"{k}={v}" for k, v in recipe.defaults.items())
            print(f"  {name}: {preset or '-'}  # {recipe.kind}: {recipe.summary}")
    return 0


def _cmd_envs(args: argparse.Namespace) -> int:
    from tempering import envs

    envs.import_envs(args.imports)
    if args.envs_cmd == "list":
        for env_id in envs.list_envs():
            print(env_id)
        return 0
    report = envs.check_env(args.env_id, n=args.n)
    for problem in report.problems:
        print(f"FAIL {problem}")
    print(f"{report.env_id}: {'ok' if report.ok else 'FAILED'} ({report.checked} tasks checked)")
    return 0 if report.ok else 1


def _cmd_demo(args: argparse.Namespace) -> int:
    from tempering.cli.demo import run_demo

    summary = run_demo(config_path=Path(args.config), minutes=args.minutes, n_eval=args.n_eval,
                       run_dir=Path(args.run_dir) if args.run_dir else None, overrides=args.set)
    print(json.dumps({k: summary[k] for k in ("run_dir", "engine", "before", "after")}, indent=1))
    return 0


_EVAL, _ROLLOUT = EvalConfig(), RolloutConfig()  # the CLI's defaults are the config's


def _add_train(sub) -> None:

    t = sub.add_parser("train", help="train from a config (RL, sft, dpo or reward_model), or continue a run")
    t.add_argument("config", nargs="?", help="YAML config, e.g. configs/tiny-cpu.yaml")
    t.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key (repeatable)")
    t.add_argument("--steps", type=int, help="total policy updates (overrides train.steps)")
    t.add_argument("--run-dir", help="where to write the run (default runs/<name>), or a URL such as s3://bucket/run "
                                      "(docs/storage.md)")
    t.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its latest checkpoint (a directory or URL)")
    t.set_defaults(func=_cmd_train)


def _add_eval(sub) -> None:
    e = sub.add_parser("eval", help="greedy accuracy on an env's held-out split")
    e.add_argument("--model", help="preset (smollm2-135m-instruct, tiny-random), HF model dir, or a checkpoint URL")
    e.add_argument("--env", required=True, help="env id from `temper envs list`, or terminal (Terminal-Bench tasks)")
    e.add_argument("--split", default="test", choices=["train", "test", "unseen"],
                   help="test: new instances; unseen: held-out schemas, families or layouts (envs that have it)")
    e.add_argument("--n", type=int, default=_EVAL.n, help=f"held-out tasks (default {_EVAL.n}, eval.n)")
    e.add_argument("--max-new-tokens", type=int, default=_EVAL.max_new_tokens,
                   help=f"new tokens per reply (default {_EVAL.max_new_tokens}, eval.max_new_tokens)")
    e.add_argument("--engine", default="hf", choices=("hf", "vllm", "auto"), help="what generates (docs/engines.md)")
    e.add_argument("--batch-size", type=int, default=_EVAL.batch_size,
                   help=f"prompts decoded at once (default {_EVAL.batch_size}, eval.batch_size)")
    e.add_argument("--samples", type=int, default=1, help="samples per problem for pass@k (default 1: greedy accuracy)")
    e.add_argument("--k", help="pass@k values to report, e.g. 1,10 (needs --samples >= max k)")
    e.add_argument("--temperature", type=float, default=0.8, help="sampling temperature for pass@k (default 0.8)")
    e.add_argument("--seed", type=int, default=0, help="sampling seed for pass@k")
    e.add_argument("--progress", help="pass@k: JSONL file of scored problems; an interrupted run given the same "
                                      "file continues where it stopped")
    e.add_argument("--out", help="JSON file for the full result")
    e.add_argument("--tasks", help="terminal: a task directory or a directory of them (Terminal-Bench or native)")
    e.add_argument("--agent", choices=["oracle", "noop", "model"], help="terminal: who works the tasks")
    e.add_argument("--task", action="append", help="terminal: only this task id (repeatable)")
    e.add_argument("--workers", type=int, default=1, help="terminal: tasks run at once (default 1)")
    e.add_argument("--max-turns", type=int, help="replies per episode: multi-turn envs (finance, sql, cad, code/repair, "
                                              "code/docstring, code/handwritten, code/humaneval) play greedy episodes "
                                              "with feedback; terminal --agent model (default 20)")
    e.add_argument("--option", dest="options", action="append", default=[], metavar="KEY=VALUE",
                   help="an env constructor option, as a pipeline's `options` gives it, e.g. difficulty=3 "
                        "(repeatable)")
    e.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import a module that registers envs of your own first (repeatable)")
    e.set_defaults(func=_cmd_eval)


def _add_data(sub) -> None:
    dt = sub.add_parser("data", help="write sft examples or preference pairs from an env, for sft/dpo/reward_model; "
                                     "or repository tasks for the terminal runner")
    dt.add_argument("kind", choices=["sft", "pairs", "repo-tasks"],
                    help="sft: prompts with reference replies; pairs: sampled replies, a passing one preferred over "
                         "a failing one; repo-tasks: generated bug-fix repository tasks, one directory each")
    dt.add_argument("--env", help="sft, pairs: env id from `temper envs list`")
    dt.add_argument("--out", required=True, help="JSONL file or URL (s3://...) to write (repo-tasks: a directory)")
    dt.add_argument("--split", default="train", choices=["train", "test"])
    dt.add_argument("--n", type=int, default=200, help="tasks to draw")
    dt.add_argument("--tokens", type=int, default=0, help="sft: stop at this many tokens of demonstrations (0: --n tasks)")
    dt.add_argument("--kinds", default="single=1,repair=1,tool=1",
                    help="sft: demonstration kinds and weights: single (prompt, reference), repair (a wrong try, the "
                         "env's real feedback, the fix), tool (tool calls with real outputs, then the answer)")
    dt.add_argument("--model", default="smollm2-135m-instruct", help="pairs: the model to sample; sft: its tokenizer counts tokens")
    dt.add_argument("--samples", type=int, default=8, help="pairs: samples per task")
    dt.add_argument("--pairs-per-task", type=int, default=1, help="pairs: most pairs kept per task")
    dt.add_argument("--temperature", type=float, default=_ROLLOUT.temperature,
                    help=f"pairs: sampling temperature (default {_ROLLOUT.temperature:g}, rollout.temperature)")
    dt.add_argument("--max-new-tokens", type=int, default=_ROLLOUT.max_new_tokens,
                    help=f"pairs: new tokens per sample (default {_ROLLOUT.max_new_tokens}, rollout.max_new_tokens)")
    dt.add_argument("--seed", type=int, default=0)
    dt.add_argument("--modules", help="repo-tasks: only these seed modules, comma-separated (default: all)")
    dt.add_argument("--no-verify", action="store_true",
                    help="repo-tasks: skip running the oracle and noop agents on each written task")
    dt.set_defaults(func=_cmd_data)


def _add_settings(sub) -> None:
    st = sub.add_parser("settings", help="every config key with its default and what it does")
    st.add_argument("section", nargs="?", help="only this section, e.g. algorithm")
    st.set_defaults(func=_cmd_settings)


def _add_envs(sub) -> None:
    v = sub.add_parser("envs", help="list or check environments")
    vs = v.add_subparsers(dest="envs_cmd", required=True)
    vl = vs.add_parser("list", help="every registered env id")
    c = vs.add_parser("check", help="prove an env's verifier on reference and empty answers")
    c.add_argument("env_id")
    c.add_argument("--n", type=int, default=5, help="tasks per split")
    for parser in (vl, c):
        parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                            help="import a module that registers envs of your own first (repeatable)")
    v.set_defaults(func=_cmd_envs)


def _add_demo(sub) -> None:
    d = sub.add_parser("demo", help="evaluate SmolLM2, train it with GRPO, evaluate again")
    d.add_argument("--config", default="configs/smollm2-arith-grpo.yaml")
    d.add_argument("--minutes", type=float, default=None, help="training time budget (default: the config's)")
    d.add_argument("--n-eval", type=int, default=None, help="held-out tasks per evaluation (default: the config's)")
    d.add_argument("--run-dir")
    d.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (repeatable), e.g. rollout.engine=vllm")
    d.set_defaults(func=_cmd_demo)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="temper", description="RL post-training on executed feedback.")
    sub = p.add_subparsers(dest="cmd", required=True)
    _add_train(sub)
    _add_eval(sub)
    _add_data(sub)
    _add_settings(sub)
    _add_envs(sub)
    add_sandbox_parsers(sub)
    add_runs_parser(sub)
    _add_demo(sub)
    add_pipeline_parser(sub)
    add_report_parser(sub)
    add_audit_parser(sub)
    add_plan_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TemperingError as e:
        print(f"temper: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("temper: interrupted; the last checkpoint is intact (resume with temper train --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
