"""Why finance answers miss: each reply of a pipeline evaluation of finance/statements-v1,
read against its task's gold formula. For computed families (growth, margin, current
ratio, ...) a wrong reply either combines the right figures wrongly, uses one of them, or
uses none; and its numbers are either all printed in the filing (it read the wrong line
or year) or not (it made a number up). Lookups are counted by whether the answer is a
figure the filing prints at all. Per family, for each eval file given. Factors no filing
prints (100 for a percentage, 1,000 for a unit change) count as neither.

    .venv/bin/python benchmarks/finance_misses.py runs/smollm2-pipeline-finance-v3/eval/sft/*.json
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering import envs  # noqa: E402
from tempering.envs.finance.verify import _NUMBER, answer_text  # noqa: E402 - the verifier's own number reading

_OPERATOR = re.compile(r"\d\s*[-+*/]\s*[(\d]")
CONSTANTS = {100.0, 1e3, 1e6, 1e9}
"""Factors a formula may use that no filing needs to print (percent, unit scales)."""


def numbers(text: str) -> list[float]:
    """The numbers written in `text`, thousands separators dropped (FY2023-style tokens skipped)."""
    return [float(m.group().replace(",", "")) for m in _NUMBER.finditer(text)]


def kind_of_reply(item: dict, task) -> str:
    """One label for a reply: passed, no_answer, or what its figures have to do with the gold's."""
    if item["passed"]:
        return "passed"
    text = answer_text(item.get("response") or item["replies"][-1])
    if text is None:
        return "no_answer"
    gold = task.reference.gold
    used = set(numbers(text)) - CONSTANTS
    printed = set(numbers(task.prompt[-1].content))
    made_up = "" if used <= printed else ", a number not in the filing"
    if gold.formula is None:
        return "lookup: a printed figure, the wrong one" if not made_up else "lookup" + made_up
    wanted = set(numbers(gold.formula)) - CONSTANTS
    right = len(used & wanted)
    shape = "an expression" if _OPERATOR.search(text) else "a single number"
    if right == len(wanted):
        return f"computed, {shape}: every right figure, wrongly combined{made_up}"
    return f"computed, {shape}: {right} of {len(wanted)} right figures{made_up}"


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("evals", nargs="+", help="eval JSON files (EvalResult) of finance/statements-v1")
    ap.add_argument("--difficulty", type=int, default=2, help="the env's difficulty in the evaluated run")
    args = ap.parse_args()
    env = envs.make("finance/statements-v1", difficulty=args.difficulty)
    for path in args.evals:
        result = json.loads(Path(path).read_text())
        tasks = {t.id: t for t in env.tasks(result["split"], result["n"])}
        by_family: dict[str, Counter] = defaultdict(Counter)
        for item in result["items"]:
            task = tasks[item["id"]]
            by_family[task.family][kind_of_reply(item, task)] += 1
        print(f"{path}: {result['correct']}/{result['n']} passed ({result['split']} split)")
        for family, kinds in sorted(by_family.items()):
            print(f"  {family}: {kinds['passed']} of {sum(kinds.values())} passed")
            for kind, count in kinds.most_common():
                if kind != "passed":
                    print(f"    {count:>3}  {kind}")


if __name__ == "__main__":
    main()
