"""What a run on object storage costs (issue 42), against a local SeaweedFS server (the tests' launcher,
tests/conftest.py's SeaweedS3), with SmolLM2-135M-Instruct:

1. One checkpoint (weights, tokenizer, AdamW state as a trained run holds it): its bytes; the
   time to save it locally (what every run pays), to stage it (what the training thread pays for
   an upload: hard links and a snapshot of the run files), to publish it (sha256 of each file,
   the upload, the manifest last) and to download it (a resume on a fresh machine); medians of
   --repeats.
2. One short GRPO run, the same config three ways, one after the other: a local run directory;
   --run-dir s3:// as `temper train` does it (uploads in a background thread); s3:// with each
   checkpoint published before the next step (how it was before). Steps per minute of training
   (train() from its first step to its return: local saves included, the model loaded before),
   the median step's own time (time_step), and the time until everything is in the store.

    .venv/bin/python benchmarks/storage.py [--repeats 3] [--steps 4]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from _common import REPO, parser  # puts the repository on sys.path
from tempering import storage
from tempering.config import load_config
from tempering.models import load
from tempering.trainer import prepare_run, train
from tempering.trainer.checkpoint import save_checkpoint
from tempering.trainer.remote import Uploader, new_remote_run, stage_checkpoint

sys.path.insert(0, str(REPO / "tests"))
from conftest import SeaweedS3  # noqa: E402 - the tests' SeaweedFS launcher

# configs/smollm2-arith-grpo.yaml cut to a few seconds a step on 2 cores: what is measured is the
# checkpoint's cost beside a step, not learning.
WAYS = ("local", "s3, background uploads", "s3, uploads before the next step")
SHORT = ["rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=16",
         "rollout.max_rounds_per_step=1", "algorithm.drop_zero_variance=false", "train.save_every=2",
         "train.max_minutes=0", "log.report=false"]


def checkpoint_cost(model: str, url: str, tmp: Path, repeats: int) -> dict:
    loaded = load(model)
    optimizer = torch.optim.AdamW(loaded.model.parameters(), lr=1e-5)
    for p in loaded.model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()  # AdamW's two state tensors per weight, as a trained run's checkpoint holds them
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    run = tmp / "ckpt-run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    times: dict[str, list[float]] = {"save": [], "stage": [], "publish": [], "download": []}
    for step in range(1, repeats + 1):
        t = time.perf_counter()
        ckpt = save_checkpoint(run, step, loaded.model, loaded.tokenizer, optimizer, scheduler,
                               {"step": step, "runner": {}}, keep=1)
        times["save"].append(time.perf_counter() - t)
        t = time.perf_counter()
        staged = stage_checkpoint(run, ckpt, step)
        times["stage"].append(time.perf_counter() - t)
        t = time.perf_counter()
        storage.publish_checkpoint(staged / "checkpoint", url, step, keep=1)
        times["publish"].append(time.perf_counter() - t)
        shutil.rmtree(staged)
        t = time.perf_counter()
        storage.fetch_checkpoint(url, step, tmp / "fetched")
        times["download"].append(time.perf_counter() - t)
        shutil.rmtree(tmp / "fetched")
    files = {p.relative_to(ckpt).as_posix(): p.stat().st_size for p in ckpt.rglob("*") if p.is_file()}
    med = {k: statistics.median(v) for k, v in times.items()}
    total = sum(files.values())
    return {"bytes": total, "files": files, "median_s": med, "runs_s": times,
            "publish_MB_per_s": total / 1e6 / med["publish"], "download_MB_per_s": total / 1e6 / med["download"]}


def _publish_now(run_url: str, keep: int):
    """Each checkpoint published in the training thread: the next step waits for it."""
    def publish(run_dir: Path, ckpt: Path, step: int) -> None:
        storage.sync_run_files(run_dir, run_url)
        storage.publish_checkpoint(ckpt, run_url, step, keep)
    return publish


def run_cost(model: str, url: str, tmp: Path, steps: int, rounds: int) -> dict:
    """Each way run `rounds` times, the ways interleaved (A, B, C, A, B, C) so machine noise hits all three."""
    cfg = load_config("configs/smollm2-arith-grpo.yaml", [f"model.name={model}", *SHORT])
    out: dict[str, dict[str, list[float]]] = {w: {"steps_per_min": [], "time_step_s": [], "until_published_s": []}
                                              for w in WAYS}
    for r in range(rounds):
        for way in WAYS:
            loaded = load(model)  # outside the timing; each run starts from the same weights
            run_url = storage.join(url, f"{way.split(',')[-1].strip().replace(' ', '-')}-{r}")
            if way == "local":
                run_dir, publish = tmp / "local-run", None
                shutil.rmtree(run_dir, ignore_errors=True)
                prepare_run(cfg, run_dir)
            else:
                run_dir = new_remote_run(run_url, cfg)
                prepare_run(cfg, run_dir)
                publish = Uploader(run_url, run_dir, cfg.train.keep_checkpoints, cfg.storage.retry_s) \
                    if "background" in way else _publish_now(run_url, cfg.train.keep_checkpoints)
            t = time.perf_counter()
            metrics = train(cfg, run_dir, steps=steps, progress=False, policy=loaded, publish=publish)
            trained = time.perf_counter() - t
            if isinstance(publish, Uploader):
                publish.close()
            if way != "local":
                storage.sync_run_files(run_dir, run_url)
            out[way]["steps_per_min"].append(60 * len(metrics) / trained)
            out[way]["time_step_s"] += [m["time_step"] for m in metrics]
            out[way]["until_published_s"].append(time.perf_counter() - t)
            shutil.rmtree(run_dir, ignore_errors=True)
            print(way, {k: [round(x, 2) for x in v] for k, v in out[way].items()}, flush=True)
    return {w: {"median_" + k: statistics.median(v) for k, v in runs.items()} | {"runs": runs} for w, runs in out.items()}


def machine() -> dict:
    flags = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    simd = sorted({f for f in flags.split() if f in ("avx2", "avx512f", "avx512_bf16", "avx512_vnni")})
    return {"cpus": os.cpu_count(), "simd": simd, "torch": torch.__version__, "threads": torch.get_num_threads(),
            "load_1min": os.getloadavg()[0]}


def main() -> None:
    ap = parser(__doc__, model="smollm2-135m-instruct", repeats=3, out="runs/bench-storage.json")
    ap.add_argument("--steps", type=int, default=4, help="GRPO steps of each run (a checkpoint every 2)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each way, interleaved")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1: on 2 cores the other is left to the store and the upload thread)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        tmp = Path(tmp)
        home = tmp / "home"  # the runs' mirrors go here, the built models are shared
        home.mkdir()
        from tempering.models.presets import cache_dir

        (home / "models").symlink_to(cache_dir() / "models")
        os.environ["TEMPERING_HOME"] = str(home)
        server = SeaweedS3(tmp / "seaweedfs").start()
        try:
            os.environ.update(AWS_ACCESS_KEY_ID=server.key, AWS_SECRET_ACCESS_KEY=server.secret,
                              TEMPERING_S3_ENDPOINT=server.endpoint)
            storage.configure(None)
            result = {"machine_before": machine(), "model": args.model}
            result["checkpoint"] = checkpoint_cost(args.model, f"s3://{server.bucket}/ckpt", tmp, args.repeats)
            print(json.dumps(result["checkpoint"]["median_s"]), f"{result['checkpoint']['bytes'] / 1e6:.0f} MB", flush=True)
            result["runs"] = run_cost(args.model, f"s3://{server.bucket}/runs", tmp, args.steps, args.rounds)
            result["machine_after"] = machine()
        finally:
            server.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    c = result["checkpoint"]
    print(f"\ncheckpoint: {c['bytes'] / 1e6:.0f} MB in {len(c['files'])} files; median save "
          f"{c['median_s']['save']:.2f} s, stage {c['median_s']['stage']:.3f} s, publish {c['median_s']['publish']:.2f} s "
          f"({c['publish_MB_per_s']:.0f} MB/s), download {c['median_s']['download']:.2f} s ({c['download_MB_per_s']:.0f} MB/s)")
    for way, r in result["runs"].items():
        print(f"{way:34s} {r['median_steps_per_min']:5.2f} steps/min  median step {r['median_time_step_s']:.2f} s  "
              f"until all is published {r['median_until_published_s']:.1f} s")
    print(f"load: {result['machine_before']['load_1min']:.2f} before, {result['machine_after']['load_1min']:.2f} after; "
          f"written to {args.out}")


if __name__ == "__main__":
    main()
