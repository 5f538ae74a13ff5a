"""Preference learning from a verifier, with SmolLM2-135M-Instruct on math/arith-v1:

1. pairs: sample 8 replies per task at T = 0.7; a reply the verifier passes is preferred
   over one it fails on the same prompt (train split for training, test split held out)
2. reward model: Bradley-Terry on the train pairs; held-out pair accuracy before and after
3. DPO on the train pairs against the frozen start; held-out greedy accuracy before and after

    .venv/bin/python benchmarks/preference.py [--train-tasks 240] [--test-tasks 120] [--steps 30]
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering import envs  # noqa: E402
from tempering.config import load_config  # noqa: E402
from tempering.eval import evaluate  # noqa: E402
from tempering.models import load  # noqa: E402
from tempering.rollout import HFClient  # noqa: E402
from tempering.trainer import prepare_run, train  # noqa: E402
from tempering.trainer.data import load_pairs  # noqa: E402
from tempering.trainer.make_data import preference_rows, write_jsonl  # noqa: E402
from tempering.trainer.offline import pair_accuracy  # noqa: E402
from tempering.types import SamplingParams  # noqa: E402


def main() -> None:
    ap = parser(__doc__, n=(200, "held-out tasks for greedy accuracy"), out="runs/bench-preference")
    ap.add_argument("--train-tasks", type=int, default=240)
    ap.add_argument("--test-tasks", type=int, default=120)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = envs.make("math/arith-v1")
    base = load("smollm2-135m-instruct")
    client = HFClient(base.model, base.tokenizer, max_batch=64)
    params = SamplingParams(temperature=0.7, max_new_tokens=64, seed=0)
    res: dict = {}
    t0 = time.perf_counter()
    for split, n in (("train", args.train_tasks), ("test", args.test_tasks)):
        rows, counts = preference_rows(env, client, split, n, 8, params, pairs_per_task=2)
        write_jsonl(rows, out / f"pairs-{split}.jsonl")
        res[f"pairs_{split}"] = counts
        print(split, counts, flush=True)
    res["pairs_minutes"] = (time.perf_counter() - t0) / 60

    held_out = load_pairs(out / "pairs-test.jsonl", base.tokenizer, 512, end_token=False)
    fresh = load("smollm2-135m-instruct", kind="reward")
    res["rm_heldout_accuracy_before"] = pair_accuracy(fresh.model, held_out, fresh.tokenizer.pad_token_id)
    common = [f"data.path={out / 'pairs-train.jsonl'}", "data.batch_size=8", "data.max_len=512", "algorithm.beta=0",
              "optim.warmup_steps=2", "optim.schedule=cosine", f"train.save_every={args.steps}"]
    rm_cfg = load_config("configs/smollm2-arith-grpo.yaml", ["algorithm.name=reward_model", "optim.lr=1e-5",
                                                              "name=bench-rm", *common])
    t = time.perf_counter()
    prepare_run(rm_cfg, out / "rm")
    rm_metrics = train(rm_cfg, out / "rm", steps=args.steps, progress=False)
    rm = load(str(out / "rm" / "checkpoints" / f"step-{args.steps}"), kind="reward")
    res["rm"] = {"steps": args.steps, "minutes": (time.perf_counter() - t) / 60,
                 "train_accuracy_last": rm_metrics[-1]["accuracy"],
                 "heldout_accuracy": pair_accuracy(rm.model, held_out, rm.tokenizer.pad_token_id),
                 "heldout_pairs": len(held_out)}
    print("rm", res["rm"], "before", res["rm_heldout_accuracy_before"], flush=True)

    before = evaluate(client, env, "test", args.n, 64, 64, progress=False)
    for loss in ("dpo", "ipo"):
        cfg = load_config("configs/smollm2-arith-grpo.yaml", ["algorithm.name=dpo", f"preference.loss={loss}",
                                                               "preference.beta=0.1", "optim.lr=2e-6",
                                                               f"name=bench-{loss}", *common])
        t = time.perf_counter()
        prepare_run(cfg, out / loss)
        metrics = train(cfg, out / loss, steps=args.steps, progress=False)
        policy = load(str(out / loss / "checkpoints" / f"step-{args.steps}"))
        after = evaluate(HFClient(policy.model, policy.tokenizer), env, "test", args.n, 64, 64, progress=False)
        res[loss] = {"steps": args.steps, "minutes": (time.perf_counter() - t) / 60,
                     "train_pair_accuracy_last": metrics[-1]["accuracy"], "margin_last": metrics[-1]["margin"],
                     "accuracy_before": before.accuracy, "accuracy_after": after.accuracy,
                     "correct": [before.correct, after.correct], "n": args.n,
                     "format_rate": [before.format_rate, after.format_rate],
                     "tokens": [before.mean_response_tokens, after.mean_response_tokens]}
        print(loss, res[loss], flush=True)
        (out / "results.json").write_text(json.dumps(res, indent=1))
    (out / "results.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
