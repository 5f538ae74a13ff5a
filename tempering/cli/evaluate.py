"""`temper eval`: an env's held-out split scored greedily, as pass@k, or as multi-turn episodes."""

from __future__ import annotations

import argparse
from pathlib import Path

from tempering.errors import ConfigError


def run_eval(args: argparse.Namespace) -> int:
    """`temper eval`: greedy accuracy, pass@k (--samples/--k), or multi-turn episodes (--max-turns)."""
    if args.env == "terminal" or args.env.startswith("terminal/"):
        from tempering.cli.terminal import eval_terminal

        return eval_terminal(args)
    if not args.model:
        raise ConfigError("temper eval needs --model: a preset (smollm2-135m-instruct, tiny-random) or an HF model dir")
    from tempering import envs
    from tempering.eval import evaluate
    from tempering.models import load

    envs.import_envs(args.imports)
    options = env_options(args.options)
    env = envs.make(args.env, **options)  # fail on a bad env id or option before loading a model
    if args.n < 1:
        raise ConfigError(f"--n must be at least 1, got {args.n}")
    if args.samples > 1 or args.k:
        from tempering.eval.passk import evaluate_pass_at_k

        try:
            ks = [int(k) for k in (args.k or "1").split(",")]
        except ValueError:
            raise ConfigError(f"--k takes comma-separated integers like 1,10, got {args.k!r}") from None
        if args.samples < max(ks):
            raise ConfigError(f"--k {max(ks)} needs at least that many --samples (got {args.samples})")
        loaded = load(args.model)
        per_chunk = max(1, args.batch_size // args.samples)
        result = evaluate_pass_at_k(_client(args, loaded, per_chunk * args.samples), env,
                                    args.split, args.n, args.samples, ks, args.temperature, args.max_new_tokens,
                                    batch_size=per_chunk, seed=args.seed,
                                    progress=Path(args.progress) if args.progress else None)
        return _report(result, result.summary(), args, "-pass@k")
    if args.max_turns is not None:
        from tempering.eval import evaluate_episodes

        if not isinstance(env, envs.MultiTurn):
            raise ConfigError(f"--max-turns is for multi-turn envs (finance/*, sql/*, cad/*, code/repair-v1, "
                              f"code/docstring-v1, code/steps-v1, code/handwritten-v1, "
                              f"code/humaneval-v1); {args.env} is single-turn: drop --max-turns")
        if args.max_turns < 1:
            raise ConfigError(f"--max-turns must be at least 1, got {args.max_turns}")
        loaded = load(args.model)
        result = evaluate_episodes(_client(args, loaded), args.env, args.split, args.n,
                                   args.max_turns, args.max_new_tokens, options)
        return _report(result, result.summary() + f" within {args.max_turns} replies", args, f"-turns{args.max_turns}")
    loaded = load(args.model)
    result = evaluate(_client(args, loaded), env, split=args.split, n=args.n,
                      max_new_tokens=args.max_new_tokens, batch_size=args.batch_size)
    return _report(result, result.summary(), args, "")


def _client(args: argparse.Namespace, loaded, max_batch: int = 64):
    """The generating client --engine names (hf by default)."""
    from tempering.rollout.engines import make_client

    return make_client(getattr(args, "engine", "hf"), loaded.model, loaded.tokenizer, loaded.path, max_batch=max_batch,
                       seed=getattr(args, "seed", 0) or 0)


def env_options(items: list[str]) -> dict:
    """["difficulty=3", "max_turns=1"] as constructor options (values parsed as YAML scalars)."""
    from tempering.config.load import scalar

    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.isidentifier():
            raise ConfigError(f"malformed --option {item!r}: write --option name=value, e.g. --option difficulty=3")
        out[key] = scalar(raw)
    return out


def _report(result, summary: str, args: argparse.Namespace, suffix: str) -> int:
    """Print the summary and write the result (to --out, else runs/eval/ENV-SPLIT{suffix}.json)."""
    print(summary)
    out = Path(args.out or f"runs/eval/{args.env.replace('/', '_')}-{args.split}{suffix}.json")
    result.write_json(out)
    print(f"wrote {out}")
    return 0
