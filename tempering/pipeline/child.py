"""One pipeline stage in its own process: `python -m tempering.pipeline.child ROOT STAGE MODEL SPENT_S`.

Reads the run directory's pipeline.yaml, runs the stage, and writes stages/<stage>.json
(the stage's outputs) only when it finished; `tempering.pipeline.run` starts it. In a pipeline
at a URL (pipeline.json's `url`) it first pulls what the stage needs, and a training stage
publishes each checkpoint there."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tempering.pipeline.config import load_pipeline
from tempering.pipeline.remote import STATE, pull_inputs
from tempering.pipeline.stages import run_demos, run_eval, run_train


def main(argv: list[str]) -> int:
    root, stage, model, spent_s = Path(argv[0]), argv[1], argv[2] or None, float(argv[3])
    cfg, _ = load_pipeline(root / "pipeline.yaml")
    url = json.loads((root / STATE).read_text()).get("url")  # a pipeline at a URL: what it needs comes from there
    if url:
        pull_inputs(root, url, stage, model)
    if stage.startswith("eval-"):
        out = run_eval(cfg, root, stage.removeprefix("eval-"), model)
    elif stage == "demos":
        out = run_demos(cfg, root)
    elif stage in ("sft", "rl", "rl-shuffled"):
        out = run_train(cfg, root, stage, model, shuffle=stage == "rl-shuffled", spent_s=spent_s, url=url)
    else:
        raise SystemExit(f"unknown pipeline stage {stage!r}")
    path = root / "stages" / f"{stage}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1))
    tmp.replace(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
