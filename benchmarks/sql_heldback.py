"""The SQL held-back check on real model answers: every reply of a pipeline evaluation that
passed sql/sqlite-v1 is scored again on a second instance of its database
(verify.second_instance). Honest answers should pass it; the share that fails is the check's
false-alarm rate on this model (or answers right by coincidence on the first instance).

    .venv/bin/python benchmarks/sql_heldback.py runs/smollm2-pipeline-trained/eval/sft/sql__sqlite-v1__test.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering import envs  # noqa: E402


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("evals", nargs="+", help="eval JSON files (EvalResult) of sql/sqlite-v1")
    ap.add_argument("--difficulty", type=int, default=3)
    args = ap.parse_args()
    env = envs.make("sql/sqlite-v1", difficulty=args.difficulty)
    for path in args.evals:
        result = json.loads(Path(path).read_text())
        tasks = {t.id: t for t in env.tasks(result["split"], result["n"])}
        passed = [i for i in result["items"] if i["passed"]]
        replies = [i.get("response") or i["replies"][-1] for i in passed]
        again = [env.strong_verify(tasks[i["id"]], r).passed for i, r in zip(passed, replies)]
        print(f"{path}: {len(passed)} passing replies, {sum(again)} pass the second instance, "
              f"{len(passed) - sum(again)} fail it ({(len(passed) - sum(again)) / max(1, len(passed)):.0%})")
        for i, r, ok in zip(passed, replies, again):
            if not ok:
                print("  fails the second instance:", i["id"], " ".join(r.split())[:200])
    sys.stdout.flush()


if __name__ == "__main__":
    main()
