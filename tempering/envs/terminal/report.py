"""Terminal eval results: completion rate and pass@k per task and per category, as JSON and Markdown.

A trial passes when every test of its task passed. Per task, with n trials of which c
passed: completion rate c/n and the unbiased pass@k = 1 - C(n-c, k)/C(n, k) (Chen et al.,
2021; the same estimator as eval/passk.py, kept here so this module needs no torch). Per
category and overall: the mean over the tasks that ran. Skipped tasks are listed with their
reason and never counted as failures or passes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from math import comb
from pathlib import Path

from .agents import TrialResult


def pass_at_k(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


@dataclass
class TerminalReport:
    agent: str
    tasks_dir: str
    results: list[TrialResult] = field(default_factory=list)
    ks: tuple[int, ...] = (1,)

    def tasks(self) -> list[dict]:
        rows: dict[str, dict] = {}
        for r in self.results:
            row = rows.setdefault(r.task_id, {"task": r.task_id, "category": r.category, "difficulty": r.difficulty,
                                              "trials": 0, "passed": 0, "skipped": False, "reason": "",
                                              "wall_s": 0.0})
            if r.status == "skipped":
                row.update(skipped=True, reason=r.reason)
                continue
            row["trials"] += 1
            row["passed"] += r.status == "passed"
            row["wall_s"] += r.wall_s
            if r.status != "passed" and not row["reason"]:
                row["reason"] = r.reason
        for row in rows.values():
            n, c = row["trials"], row["passed"]
            row["wall_s"] = round(row["wall_s"] / n, 2) if n else 0.0
            if n:
                row["completion_rate"] = c / n
                row["pass_at_k"] = {str(k): pass_at_k(n, c, k) for k in self.ks if k <= n}
        return sorted(rows.values(), key=lambda r: r["task"])

    def categories(self) -> list[dict]:
        groups: dict[str, list[dict]] = {}
        for row in self.tasks():
            groups.setdefault(row["category"], []).append(row)
        groups["(all)"] = self.tasks()
        out = []
        for cat, rows in groups.items():
            ran = [r for r in rows if not r["skipped"]]
            entry = {"category": cat, "tasks": len(rows), "ran": len(ran), "skipped": len(rows) - len(ran)}
            if ran:
                entry["completion_rate"] = sum(r["completion_rate"] for r in ran) / len(ran)
                entry["pass_at_k"] = {str(k): sum(r["pass_at_k"][str(k)] for r in ran) / len(ran)
                                      for k in self.ks if all(str(k) in r["pass_at_k"] for r in ran)}
            out.append(entry)
        return sorted(out, key=lambda e: (e["category"] == "(all)", e["category"]))

    def summary(self) -> str:
        total = next(c for c in self.categories() if c["category"] == "(all)")
        rate = f"{total['completion_rate']:.3f}" if total["ran"] else "-"
        return (f"terminal eval, agent {self.agent}: completion rate {rate} over {total['ran']} tasks "
                f"({total['skipped']} skipped)")

    def to_json(self) -> dict:
        return {"agent": self.agent, "tasks_dir": self.tasks_dir, "ks": list(self.ks), "summary": self.summary(),
                "categories": self.categories(), "tasks": self.tasks(), "trials": [r.to_json() for r in self.results]}

    def to_markdown(self) -> str:
        ks = [str(k) for k in self.ks]
        lines = [f"# Terminal eval: agent `{self.agent}`", "", self.summary() + ".", "",
                 "| Task | Category | Difficulty | Trials | Passed | " + " | ".join(f"pass@{k}" for k in ks)
                 + " | Wall s (mean) | Note |",
                 "|---|---|---|---|---|" + "---|" * len(ks) + "---|---|"]
        for r in self.tasks():
            if r["skipped"]:
                lines.append(f"| {r['task']} | {r['category']} | {r['difficulty']} | - | - | "
                             + " | ".join("-" for _ in ks) + f" | - | skipped: {_cell(r['reason'])} |")
                continue
            pk = " | ".join(f"{r['pass_at_k'][k]:.2f}" if k in r["pass_at_k"] else "-" for k in ks)
            note = "" if r["passed"] == r["trials"] else _cell(r["reason"])
            lines.append(f"| {r['task']} | {r['category']} | {r['difficulty']} | {r['trials']} | {r['passed']} | "
                         f"{pk} | {r['wall_s']:.1f} | {note} |")
        lines += ["", "| Category | Tasks | Ran | Skipped | Completion rate | "
                  + " | ".join(f"pass@{k}" for k in ks) + " |", "|---|---|---|---|---|" + "---|" * len(ks)]
        for c in self.categories():
            rate = f"{c['completion_rate']:.2f}" if c["ran"] else "-"
            pk = " | ".join(f"{c['pass_at_k'][k]:.2f}" if c.get("pass_at_k", {}).get(k) is not None else "-"
                            for k in ks)
            lines.append(f"| {c['category']} | {c['tasks']} | {c['ran']} | {c['skipped']} | {rate} | {pk} |")
        return "\n".join(lines) + "\n"

    def write(self, json_path: Path) -> tuple[Path, Path]:
        """Write the JSON report and a Markdown one beside it."""
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(self.to_json(), indent=1))
        md = json_path.with_suffix(".md")
        md.write_text(self.to_markdown())
        return json_path, md


def _cell(text: str) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= 160 else text[:157] + "..."
