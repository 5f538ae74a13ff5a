"""What CAD replies build, against the drawing's reference script: each reply of a pipeline
evaluation of cad/parts-v1, per family. A reply's shape is its sequence of moves, the
primitives it adds or cuts (`box - cylinder` for a plate with a hole); numbers are left out.
A miss either has the reference's shape with some size or place wrong, or another shape
(for an unseen family, often a trained family's script), or no part at all (no script, or a
script that does not run). The mean reward is the verifier's partial credit (0.8 x overlap).

    .venv/bin/python benchmarks/cad_misses.py runs/smollm2-pipeline-cad/eval/sft/*.json
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering import envs  # noqa: E402
from tempering.envs.cad.env import extract_script  # noqa: E402 - the verifier's own script reading

_MOVE = re.compile(r"([-+&]?)\s*\b(box|cylinder|sphere|rounded_box)\(")
NO_PART = ("script_error", "timeout", "memory", "not_closed", "tool_error")


def shape(script: str) -> str:
    """The moves of a script in order, e.g. 'box - box' or 'cylinder + cylinder - cylinder'
    (a primitive with no operator before it, such as one assigned to a name, shows bare)."""
    return " ".join(f"{sign} {name}" if sign else name for sign, name in _MOVE.findall(script))


def kind_of_reply(item: dict, reference: str) -> str:
    if item["passed"]:
        return "passed"
    script = extract_script(item.get("response") or (item.get("replies") or [""])[-1])
    if script is None:
        return "no script"
    if item.get("status") in NO_PART:
        return f"no part ({item['status']})"
    return "the reference's moves, a size or place wrong" if shape(script) == shape(reference) else "other moves"


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("evals", nargs="+", help="eval JSON files (EvalResult) of cad/parts-v1")
    ap.add_argument("--difficulty", type=int, default=3, help="the env's difficulty in the evaluated run")
    ap.add_argument("--composed", type=float, default=0.0, help="the env's composed share in the evaluated run")
    args = ap.parse_args()
    env = envs.make("cad/parts-v1", difficulty=args.difficulty, composed=args.composed)
    for path in args.evals:
        result = json.loads(Path(path).read_text())
        tasks = {t.id: t for t in env.tasks(result["split"], result["n"])}
        kinds: dict[str, Counter] = defaultdict(Counter)
        rewards: dict[str, list[float]] = defaultdict(list)
        shapes: dict[str, Counter] = defaultdict(Counter)
        for item in result["items"]:
            task = tasks[item["id"]]
            ref = task.reference["script"]
            kinds[task.family][kind_of_reply(item, ref)] += 1
            rewards[task.family].append(float(item.get("reward") or 0))
            script = extract_script(item.get("response") or (item.get("replies") or [""])[-1])
            if script is not None and not item["passed"]:
                shapes[task.family][shape(script)] += 1
        print(f"\n{path}: {result['split']}, {result['correct']}/{result['n']} passed")
        for fam in sorted(kinds):
            n = sum(kinds[fam].values())
            ref = shape(next(t for t in tasks.values() if t.family == fam).reference["script"])
            print(f"  {fam} (n={n}, reference moves: {ref}), mean reward {sum(rewards[fam]) / n:.2f}")
            for kind, count in kinds[fam].most_common():
                print(f"    {count:3d}  {kind}")
            print("    moves of the misses: " + "; ".join(f"{s or '(none)'} x{c}" for s, c in shapes[fam].most_common(4)))


if __name__ == "__main__":
    main()
