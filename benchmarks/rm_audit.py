"""The reward-model audit (safety/rm_audit.py) on two real reward models, SmolLM2-135M-Instruct
on math/arith-v1:

1. replies: 8 samples per task at T = 0.7 (train tasks to train on, test tasks held out),
   each labelled by the verifier, as benchmarks/preference.py samples them
2. the verifier's reward model: Bradley-Terry on (passing, failing) pairs of one train task,
   trained as benchmarks/preference.py trains it
3. a planted length bias: the same recipe on pairs of the same replies where the longer one
   is always chosen, whatever the verifier says
4. the audit of each on held-out replies (up to 4 per test task, passing and failing ones):
   agreement with the verifier, per family, score-length r, calibration, surface edits

    .venv/bin/python benchmarks/rm_audit.py [--train-tasks 160] [--test-tasks 40] [--steps 16]
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering import envs  # noqa: E402
from tempering.config import load_config  # noqa: E402
from tempering.models import load  # noqa: E402
from tempering.rollout import HFClient  # noqa: E402
from tempering.rollout.hf import chat_prompt_ids  # noqa: E402
from tempering.safety.rm_audit import EDITS, Item, audit_reward_model  # noqa: E402
from tempering.trainer import prepare_run, train  # noqa: E402
from tempering.trainer.make_data import write_jsonl  # noqa: E402
from tempering.trainer.offline import reward_scores  # noqa: E402
from tempering.types import SamplingParams  # noqa: E402


def sampled(env, client, split: str, n: int, params: SamplingParams) -> list[tuple]:
    """(task, reply, passed) for 8 samples of each of the first n tasks of `split`."""
    tasks = env.tasks(split, n)
    comps = client.generate([t.prompt for t in tasks], params)
    k = params.n
    return [(t, c.text, env.verify(t, c.text).passed) for i, t in enumerate(tasks) for c in comps[i * k:(i + 1) * k]]


def pair_rows(replies: list[tuple], by_length: bool, per_task: int = 2) -> list[dict]:
    """Verifier pairs (a passing reply over a failing one), or with `by_length` pairs of
    replies whose lengths differ by 10+ characters with the longer one chosen."""
    by_task: dict[str, list[tuple]] = {}
    for t, reply, ok in replies:
        by_task.setdefault(t.id, []).append((t, reply, ok))
    rows = []
    for group in by_task.values():
        t = group[0][0]
        if by_length:
            ordered = sorted({r for _, r, _ in group}, key=len, reverse=True)
            pairs = [(a, b) for a, b in zip(ordered, reversed(ordered)) if len(a) >= len(b) + 10]
        else:
            pairs = list(zip([r for _, r, ok in group if ok], [r for _, r, ok in group if not ok]))
        for chosen, rejected in pairs[:per_task]:
            rows.append({"prompt": [m.as_dict() for m in t.prompt], "chosen": chosen, "rejected": rejected,
                         "task_id": t.id})
    return rows


def audit_items(replies: list[tuple], per_task: int = 4) -> tuple[list[Item], dict]:
    """Up to `per_task` distinct held-out replies per task, passing ones first."""
    items, tasks, by_task = [], {}, {}
    for t, reply, ok in replies:
        by_task.setdefault(t.id, {}).setdefault(reply, (t, ok))
    for group in by_task.values():
        chosen = sorted(group.items(), key=lambda kv: not kv[1][1])
        good = [kv for kv in chosen if kv[1][1]][:per_task // 2]
        picked = good + [kv for kv in chosen if not kv[1][1]][:per_task - len(good)]
        for reply, (t, ok) in picked:
            tasks[t.prompt[-1].content] = t
            items.append(Item(t.id, str(t.metadata.get("family", "-")), t.prompt[-1].content, reply, ok))
    return items, tasks


def batched_scorer(path: str, items: list[Item], tasks: dict):
    """score(prompt, reply) for the audit, every (item, edit) scored up front in batches."""
    rm = load(path, kind="reward")
    pad = rm.tokenizer.pad_token_id or 0
    wanted = [(it.prompt, edit(it.reply)) for it in items for edit in [lambda r: r, *EDITS.values()]]
    seqs = [(tuple(chat_prompt_ids(rm.tokenizer, tasks[p].prompt)),
             tuple(rm.tokenizer.encode(r, add_special_tokens=False))) for p, r in wanted]
    import torch

    with torch.no_grad():
        scores = [float(s) for i in range(0, len(seqs), 32) for s in reward_scores(rm.model, seqs[i:i + 32], pad)]
    table = dict(zip(wanted, scores))
    return lambda prompt, reply: table[(prompt, reply)]


def main() -> None:
    ap = parser(__doc__, model="smollm2-135m-instruct", out="runs/bench-rm-audit")
    ap.add_argument("--train-tasks", type=int, default=160)
    ap.add_argument("--test-tasks", type=int, default=40)
    ap.add_argument("--steps", type=int, default=16)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = envs.make("math/arith-v1")
    base = load(args.model)
    client = HFClient(base.model, base.tokenizer, max_batch=64)
    params = SamplingParams(temperature=0.7, max_new_tokens=64, n=8, seed=0)
    t0 = time.perf_counter()
    train_replies = sampled(env, client, "train", args.train_tasks, params)
    test_replies = sampled(env, client, "test", args.test_tasks, params)
    res: dict = {"sampling_minutes": (time.perf_counter() - t0) / 60,
                 "train_pass_rate": sum(ok for *_, ok in train_replies) / len(train_replies)}
    items, tasks = audit_items(test_replies)
    res["audit_replies"] = len(items)
    for name, by_length in (("verifier_rm", False), ("length_rm", True)):
        rows = pair_rows(train_replies, by_length)
        if not rows:
            res[name] = {"pairs": 0, "skipped": "no train task gave a pair"}
            continue
        write_jsonl(rows, out / f"{name}-pairs.jsonl")
        if by_length:  # how often "longer" agrees with the verifier in these pairs
            res["length_pairs_agree_with_verifier"] = sum(
                env.verify(next(t for t, r, _ in train_replies if t.id == row["task_id"]), row["chosen"]).passed
                for row in rows) / max(1, len(rows))
        cfg = load_config("configs/smollm2-arith-grpo.yaml", [
            "algorithm.name=reward_model", "optim.lr=1e-5", f"model.name={args.model}", f"name=bench-{name}", f"data.path={out / name}-pairs.jsonl",
            "data.batch_size=8", "data.max_len=512", "algorithm.beta=0", "optim.warmup_steps=2", "optim.schedule=cosine",
            f"train.save_every={args.steps}"])
        t = time.perf_counter()
        prepare_run(cfg, out / name)
        metrics = train(cfg, out / name, steps=args.steps, progress=False)
        path = str(out / name / "checkpoints" / f"step-{args.steps}")
        report = audit_reward_model(items, batched_scorer(path, items, tasks))
        res[name] = {"pairs": len(rows), "steps": args.steps, "minutes": (time.perf_counter() - t) / 60,
                     "train_accuracy_last": metrics[-1]["accuracy"], "audit": report}
        print(name, json.dumps(res[name], indent=1), flush=True)
        (out / "results.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
