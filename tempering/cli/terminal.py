"""`temper eval --env terminal --tasks DIR --agent oracle|noop|model [--model M]`, and
`temper data repo-tasks --n N --out DIR`.

eval runs every task of DIR (`--samples` trials each) with the agent, shows progress, prints
the summary and writes a JSON report plus a Markdown one beside it. Tasks this host
cannot run are reported as skipped with their reason.

data repo-tasks writes N generated repository tasks (repo_gen.py) to DIR and, unless
--no-verify, runs each through the real runner: the oracle must pass and the noop agent must
fail exactly the FAIL_TO_PASS tests; a task that does not is removed and the next index tried.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tempering.envs.terminal.agents import AGENTS, TrialResult, run_trial, skip_reason
from tempering.envs.terminal.env import TerminalEnv, default_tasks_dir
from tempering.envs.terminal.report import TerminalReport
from tempering.envs.terminal.task import load_tasks
from tempering.errors import ConfigError

AGENT_NAMES = (*AGENTS, "model")


def eval_terminal(args: argparse.Namespace) -> int:
    agent_name = args.agent or ("model" if args.model else None)
    if agent_name not in AGENT_NAMES:
        raise ConfigError(f"--env terminal needs --agent, one of {', '.join(AGENT_NAMES)} (got {agent_name!r})")
    if agent_name == "model" and not args.model:
        raise ConfigError("--agent model needs --model (a preset such as smollm2-135m-instruct, or an HF model dir)")
    if args.samples < 1:
        raise ConfigError(f"--samples must be at least 1, got {args.samples}")
    try:
        ks = tuple(sorted({int(k) for k in (args.k or "1").split(",")}))
    except ValueError:
        raise ConfigError(f"--k takes comma-separated integers like 1,5, got {args.k!r}") from None
    if max(ks) > args.samples or min(ks) < 1:
        raise ConfigError(f"--k values must be between 1 and --samples ({args.samples}), got {args.k}")
    tasks_dir = Path(args.tasks) if args.tasks else default_tasks_dir()
    tasks = load_tasks(tasks_dir, tuple(args.task or ()))
    from tempering.sandbox import shared_sandbox

    sandbox = shared_sandbox()
    report = TerminalReport(agent_name, str(tasks_dir), ks=ks)
    jobs = [(t, i) for t in tasks for i in range(args.samples)]
    with _progress() as bar:
        todo = bar.add_task("terminal tasks", total=len(jobs))

        def done(r: TrialResult) -> None:
            report.results.append(r)
            bar.update(todo, advance=1, description=f"{r.task_id}: {r.status}")

        if agent_name == "model":
            _model_trials(args, tasks_dir, tasks, sandbox, done)
        else:
            agent = AGENTS[agent_name]()
            with ThreadPoolExecutor(max(1, args.workers)) as pool:
                for r in pool.map(lambda job: run_trial(job[0], agent, sandbox, job[1]), jobs):
                    done(r)
    print(report.summary())
    out = Path(args.out or f"runs/eval/terminal-{agent_name}.json")
    json_path, md_path = report.write(out)
    print(f"wrote {json_path} and {md_path}")
    return 0


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())


def _model_trials(args, tasks_dir: Path, tasks, sandbox, done) -> None:
    """The model agent: the rollout loop drives `terminal/tb-v1` episodes. Episodes the
    rollout budget cuts short (tokens, context) end without tests and score 0."""
    from tempering.models import load
    from tempering.rollout import Budget, HFClient, run_episodes
    from tempering.types import SamplingParams

    only = tuple(t.id for t in tasks)
    make_env = lambda: TerminalEnv(tasks_dir, max_turns=args.max_turns or 20, sandbox=sandbox, only=only)  # noqa: E731
    runnable, episodes = [], []
    for t in tasks:
        reason = skip_reason(t, sandbox)
        for i in range(args.samples):
            if reason:
                done(TrialResult(t.id, t.category, t.difficulty, "model", "skipped", reason, i))
            else:
                runnable.append((t, i))
    if not runnable:
        return
    env = make_env()
    episodes = [env.as_task(t) for t, _ in runnable]
    loaded = load(args.model)
    params = SamplingParams(temperature=args.temperature if args.samples > 1 else 0.0,
                            max_new_tokens=args.max_new_tokens, seed=args.seed)
    longest = max(t.max_agent_timeout_sec + t.max_test_timeout_sec for t, _ in runnable)
    budget = Budget(max_turns=args.max_turns or 20, max_new_tokens=(args.max_turns or 20) * args.max_new_tokens,
                    env_step_s=longest + 120)

    def on_done(index: int, traj) -> None:
        t, trial = runnable[index]
        reason, tests = TerminalEnv.verdict(traj.turns[-1] if traj.turns else None)
        status = "passed" if traj.reward >= 1.0 else "failed"
        reason = reason or f"episode ended by the rollout budget ({traj.stop_reason}) before the tests"
        done(TrialResult(t.id, t.category, t.difficulty, "model", status, reason, trial,
                         tests=tests, agent_note=f"{len(traj.turns)} turns", wall_s=traj.wall_s))

    run_episodes(make_env, episodes, HFClient(loaded.model, loaded.tokenizer), params, budget,
                 env_workers=max(1, args.workers), on_done=on_done)


def data_repo_tasks(args: argparse.Namespace) -> int:
    from tempering.envs.terminal.repo_gen import generate
    from tempering.envs.terminal.repo_seeds import SEEDS
    from tempering.envs.terminal.task import load_task

    if args.n < 1:
        raise ConfigError(f"--n must be at least 1, got {args.n}")
    modules = tuple(m.strip() for m in args.modules.split(",") if m.strip()) if args.modules else None
    unknown = sorted(set(modules or ()) - set(SEEDS))
    if unknown:
        raise ConfigError(f"--modules: no seed module {', '.join(unknown)}; choose from {', '.join(SEEDS)}")
    from tempering.sandbox import shared_sandbox

    sandbox = shared_sandbox()
    out = Path(args.out)
    rows, discarded, index = [], [], 0
    with _progress() as bar:
        todo = bar.add_task("repo tasks", total=args.n)
        while len(rows) < args.n and index < 3 * args.n:
            t0 = time.monotonic()
            spec = generate(args.split, index, args.seed, modules, sandbox)
            index += 1
            try:
                path = spec.write(out)
            except FileExistsError:
                raise ConfigError(f"{out / spec.id} already exists: write to an empty --out directory") from None
            row = {"id": spec.id, "module": spec.module, "mutation": spec.mutation,
                   "fail_to_pass": len(spec.fail_to_pass), "pass_to_pass": len(spec.pass_to_pass),
                   "generate_s": round(time.monotonic() - t0, 2)}
            if not args.no_verify:
                problem = _verify_repo_task(load_task(path), sandbox, row)
                if problem:
                    shutil.rmtree(path)
                    discarded.append({**row, "problem": problem})
                    continue
            rows.append(row)
            bar.update(todo, advance=1, description=f"{spec.id}: {spec.module}")
    (out / "repo-tasks.json").write_text(json.dumps({"split": args.split, "seed": args.seed, "tasks": rows,
                                                     "discarded": discarded}, indent=1))
    by_module = {m: sum(r["module"] == m for r in rows) for m in sorted({r["module"] for r in rows})}
    print(f"wrote {len(rows)} repo tasks ({args.split}, seed {args.seed}) to {out}: "
          + ", ".join(f"{m} {k}" for m, k in by_module.items()))
    if not args.no_verify:
        print(f"verified: oracle passed {sum(r['oracle'] == 'passed' for r in rows)}/{len(rows)}, noop passed "
              f"{sum(r['noop'] == 'passed' for r in rows)}/{len(rows)}; {len(discarded)} discarded")
    if len(rows) < args.n:
        raise ConfigError(f"only {len(rows)} of {args.n} tasks verified in {index} tries; see {out / 'repo-tasks.json'}")
    return 0


def _verify_repo_task(task, sandbox, row: dict) -> str | None:
    """Run the oracle and the noop agent on a written task: what is wrong, or None."""
    oracle, noop = run_trial(task, AGENTS["oracle"](), sandbox), run_trial(task, AGENTS["noop"](), sandbox)
    row.update(oracle=oracle.status, noop=noop.status, oracle_s=round(oracle.wall_s, 2), noop_s=round(noop.wall_s, 2))
    f2p, p2p = len(task.repo.fail_to_pass), len(task.repo.pass_to_pass)
    if oracle.status != "passed":
        return f"the oracle did not pass: {oracle.reason}"
    if noop.counts != {"fail_to_pass": [0, f2p], "pass_to_pass": [p2p, p2p]}:
        return f"the unfixed repository does not fail exactly FAIL_TO_PASS: {noop.reason}"
    return None
