"""The pipeline's results: per env and split, each evaluation point's accuracy with its Wilson
interval, and paired exact McNemar tests between points (same tasks, same order)."""

from __future__ import annotations

import json
from pathlib import Path

from tempering.eval.stats import paired
from tempering.pipeline.config import PipelineConfig
from tempering.pipeline.stages import eval_file, eval_splits

WATCH_LABEL = {False: " (not trained)", True: " (SFT replays the base's own verified replies)",
               "failed": " (SFT trains fixes of the base's own failed replies)"}
"""By the watched env's demos.sampled keep (earlier runs recorded True for passed)."""
COMPARISONS = (("base", "sft"), ("sft", "rl"), ("base", "rl"), ("sft", "rl-shuffled"), ("rl-shuffled", "rl"))
# The spurious-reward control passes where it gained at most this share of the real RL gain.
CONTROL_SHARE = 1 / 3
SIGNIFICANT = 0.05
"""Exact McNemar p under which a paired difference counts as real RL beating its control."""


def _point(path: Path) -> dict | None:
    if not path.is_file():
        return None
    r = json.loads(path.read_text())
    families: dict[str, list[int]] = {}
    rewards: dict[str, list[float]] = {}
    for item in r["items"]:
        if item.get("family") and not item.get("infra_failed"):  # unscored: no part in the rates
            count = families.setdefault(item["family"], [0, 0])
            count[0] += bool(item["passed"])
            count[1] += 1
            rewards.setdefault(item["family"], []).append(float(item.get("reward") or 0.0))
    point = {"accuracy": r["accuracy"], "ci": [r["ci_low"], r["ci_high"]], "n": r["n"], "correct": r["correct"],
             "infra_failed": r.get("infra_failed", 0), "first_correct": r.get("first_correct"),
             "repeated": r.get("repeated"),
             "format_rate": r["format_rate"], "mean_response_tokens": r["mean_response_tokens"],
             "seconds": r["seconds"], "families": dict(sorted(families.items())),
             # a task the sandbox failed was not scored: it takes no part in the paired tests
             "passed": {i["id"]: bool(i["passed"]) for i in r["items"] if not i.get("infra_failed")}}
    if any(v not in (0.0, 1.0) for values in rewards.values() for v in values):
        # partial credit (CAD's overlap, a share of tests): a family at 0 passes may still be close
        point["family_reward"] = {f: round(sum(v) / len(v), 3) for f, v in sorted(rewards.items())}
    return point


def results_table(cfg: PipelineConfig, root: Path, points: list[str]) -> dict:
    """{env: {split: {"points": {point: ...}, "paired": {"a->b": ...}}}} for every measured pair."""
    out: dict = {}
    for group in ("envs", "watch"):
        for env_id, spec in cfg.env_evals(group).items():
            for split in eval_splits(cfg, env_id, spec):
                found = {p: _point(eval_file(root, p, env_id, split)) for p in points}
                found = {p: v for p, v in found.items() if v is not None}
                tests = {}
                for a, b in COMPARISONS:
                    if a in found and b in found:
                        ids = [i for i in found[a]["passed"] if i in found[b]["passed"]]
                        tests[f"{a}->{b}"] = {**paired([found[a]["passed"][i] for i in ids],
                                                       [found[b]["passed"][i] for i in ids]),
                                              "points": 100 * (found[b]["accuracy"] - found[a]["accuracy"])}
                for v in found.values():
                    del v["passed"]
                out.setdefault(env_id, {})[split] = {"group": group, "points": found, "paired": tests,
                                                     "replayed": _replayed(cfg, env_id)}
    return out


def _replayed(cfg, env_id: str) -> bool | str:
    """How SFT saw a watched env: not at all (False), its passing replies (True), its failed ones (failed)."""
    if env_id not in cfg.demos.sampled:
        return False
    return True if cfg.sampled()[env_id].keep == "passed" else "failed"


def _cell(p: dict | None) -> str:
    if p is None:
        return "—"
    cell = f"{p['accuracy']:.1%} [{p['ci'][0]:.0%}, {p['ci'][1]:.0%}] n={p['n']}"
    if p.get("first_correct") is not None:  # a multi-reply evaluation: the first reply's passes too
        cell += f", first reply {p['first_correct']}"
    if p.get("repeated"):  # episodes whose reply after feedback repeated an earlier one
        cell += f", {p['repeated']} repeated"
    return cell


def report_lines(state: dict) -> list[str]:
    results = state.get("results", {})
    points = [p for p in ("base", "sft", "rl", "rl-shuffled")
              if any(p in s["points"] for splits in results.values() for s in splits.values())]
    lines = [f"# Pipeline {state.get('name', '')}", "",
             "Greedy held-out accuracy (Wilson 95% CI); p: paired exact McNemar between stages on the same tasks.", "",
             "| " + " | ".join(["env", "split", *points, "SFT vs base", "RL vs SFT", "shuffled vs SFT"]) + " |",
             "|---|---|" + "---|" * len(points) + "---|---|---|"]
    for env_id, splits in results.items():
        for split, s in splits.items():
            tests = s["paired"]

            def delta(key: str) -> str:
                t = tests.get(key)
                return "—" if t is None else f"{t['points']:+.1f} (p={t['p']:.3g})"

            name = env_id + (WATCH_LABEL[s.get("replayed") or False] if s["group"] == "watch" else "")
            cells = [name, split, *(_cell(s["points"].get(p)) for p in points),
                     delta("base->sft"), delta("sft->rl"), delta("sft->rl-shuffled")]
            lines.append("| " + " | ".join(cells) + " |")
    lines += family_lines(results, points)
    checks = control_checks(results)
    if checks:
        lines += ["", "The spurious-reward control: RL from the same SFT model with each group's rewards permuted. "
                      f"It passes where its gain over SFT is at most {CONTROL_SHARE:.2g} of the real RL gain, "
                      "and the real RL gain is positive. Where real RL does not beat the control on the same tasks "
                      f"(p < {SIGNIFICANT:g}), a pass says little: both may have moved by noise.", "",
                  "| env | split | RL vs SFT | control vs SFT | RL vs control (paired) | control within a third "
                  "| RL beats control |",
                  "|---|---|---|---|---|---|---|"]
        for c in checks:
            t = c["rl_vs_control"]
            lines.append(f"| {c['env']} | {c['split']} | {c['rl_gain']:+.1f} | {c['control_gain']:+.1f} | "
                         f"{t['wrong_to_right']}/{t['right_to_wrong']}, p={t['p']:.3g} | "
                         f"{'yes' if c['passes'] else 'no'} | {'yes' if c['rl_beats_control'] else 'no'} |")
    lines += ["", "| stage | status | minutes | CPU-hours | peak RSS (GB) |", "|---|---|---|---|---|"]
    for stage, r in state.get("stages", {}).items():
        cpu = f"{r['cpu_hours']:.2f}" if "cpu_hours" in r else "—"
        status = f"{r.get('status')}, reused from {r['reused_from']}" if "reused_from" in r else r.get("status")
        lines.append(f"| {stage} | {status} | {r.get('seconds', 0) / 60:.1f} | {cpu} | "
                     f"{r.get('peak_rss_mb', 0) / 1024:.2f} |")
    wall = wall_minutes(state)
    if wall["pipeline"] or wall["control"]:
        lines += ["", f"Wall time of the stages run in this directory: {wall['pipeline']:.0f} minutes for the pipeline"
                      + (f", and {wall['control']:.0f} more for the control" if wall["control"] else "")
                      + (f" ({', '.join(wall['reused'])} reused from another run, not counted)" if wall["reused"] else "")
                      + "."]
    cost = cost_per_point(state)
    if cost is not None:
        lines += ["", f"Training compute (demos, sft, rl): {cost['cpu_hours']:.2f} CPU-hours for a mean "
                      f"{cost['points']:+.1f} points base -> rl over the trained envs' splits: "
                      f"{cost['cpu_hours_per_point']:.3f} CPU-hours per point."]
    return lines


def family_lines(results: dict, points: list[str]) -> list[str]:
    """Passed / evaluated per task family at each point, for the trained envs whose tasks have
    more than one family: where a domain's score comes from, and what no stage has taught."""
    lines: list[str] = []
    for env_id, splits in results.items():
        for split, s in splits.items():
            found = {p: s["points"][p].get("families", {}) for p in points if p in s["points"]}
            names = sorted({f for fams in found.values() for f in fams})
            if s["group"] != "envs" or len(names) < 2:
                continue
            if not lines:
                lines = ["", "Passed / evaluated, by task family (and the mean reward, where the domain gives "
                             "partial credit):"]
            lines += ["", f"{env_id}, {split}:", "", "| family | " + " | ".join(found) + " |",
                      "|---|" + "---|" * len(found)]
            partial = {p: s["points"][p].get("family_reward") for p in found}
            for name in names:
                cells = [(f"{fams[name][0]}/{fams[name][1]}" if name in fams else "—")
                         + (f" (reward {partial[p][name]:.2f})" if partial[p] and name in partial[p] else "")
                         for p, fams in found.items()]
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _beats(test: dict) -> bool:
    """The later point beat the earlier one on the same tasks: more wins than losses, exact p < 0.05."""
    return test["wrong_to_right"] > test["right_to_wrong"] and test["p"] < SIGNIFICANT


def control_checks(results: dict) -> list[dict]:
    """Per trained (env, split) with RL and control points: the real and the control gain over
    SFT, the paired RL-vs-control test, and whether the control stayed within CONTROL_SHARE of
    a positive real gain."""
    out = []
    for env_id, splits in results.items():
        for split, s in splits.items():
            tests = s["paired"]
            if s["group"] != "envs" or not {"sft->rl", "sft->rl-shuffled", "rl-shuffled->rl"} <= set(tests):
                continue
            real, control = tests["sft->rl"]["points"], tests["sft->rl-shuffled"]["points"]
            out.append({"env": env_id, "split": split, "rl_gain": real, "control_gain": control,
                        "rl_vs_control": tests["rl-shuffled->rl"],
                        "passes": real > 0 and control <= CONTROL_SHARE * real,
                        "rl_beats_control": _beats(tests["rl-shuffled->rl"])})
    return out


def wall_minutes(state: dict) -> dict:
    """Minutes the stages took in this run directory, the pipeline's apart from the control's
    (rl-shuffled and its evaluation); stages reused from another run count in that run, not here."""
    out = {"pipeline": 0.0, "control": 0.0, "reused": []}
    for stage, r in state.get("stages", {}).items():
        if "reused_from" in r:
            out["reused"].append(stage)
        else:
            out["control" if stage.endswith("rl-shuffled") else "pipeline"] += r.get("seconds", 0) / 60
    return out


def cost_per_point(state: dict) -> dict | None:
    """CPU-hours of the training stages per point of mean held-out gain (base -> rl) over the
    trained envs; None until both are known, or when there is no gain to divide by."""
    stages = state.get("stages", {})
    if not all("cpu_hours" in stages.get(s, {}) for s in ("sft", "rl")):
        return None
    gains = [s["paired"]["base->rl"]["points"] for splits in state.get("results", {}).values()
             for s in splits.values() if s["group"] == "envs" and "base->rl" in s["paired"]]
    cpu = sum(stages.get(s, {}).get("cpu_hours", 0.0) for s in ("demos", "sft", "rl"))
    if not gains or sum(gains) <= 0:
        return None
    mean = sum(gains) / len(gains)
    return {"cpu_hours": cpu, "points": mean, "cpu_hours_per_point": cpu / mean}


def write_report(root: Path, state: dict) -> Path:
    path = root / "report.md"
    path.write_text("\n".join(report_lines(state)) + "\n")
    return path
