"""PNG plots for run reports (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_demo(metrics: list[dict], before: float, after: float, out: Path, ci: tuple[tuple[float, float], tuple[float, float]] | None = None) -> Path:
    """Left: sampled reward per step (and a moving average). Right: held-out accuracy before/after."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [2.2, 1]})
    steps = [m["step"] for m in metrics]
    rewards = [m["reward_mean"] for m in metrics]
    left.plot(steps, rewards, ".", alpha=0.4, label="mean reward of sampled completions")
    window = 5
    if len(rewards) >= window:
        avg = [sum(rewards[i - window + 1 : i + 1]) / window for i in range(window - 1, len(rewards))]
        left.plot(steps[window - 1 :], avg, "-", label=f"moving average ({window} steps)")
    left.set_xlabel("policy update")
    left.set_ylabel("reward (pass rate at T=0.7)")
    left.set_title("GRPO training reward")
    left.legend(loc="upper left", fontsize=8)
    bars = right.bar(["before", "after"], [before * 100, after * 100], color=["#999999", "#2a7ab9"])
    if ci:
        for bar, (lo, hi), val in zip(bars, ci, (before, after)):
            right.errorbar(bar.get_x() + bar.get_width() / 2, val * 100, yerr=[[val * 100 - lo * 100], [hi * 100 - val * 100]], color="k", capsize=5)
    for bar, val in zip(bars, (before, after)):
        right.text(bar.get_x() + 0.05, val * 100 + 0.5, f"{val:.1%}", ha="left", va="bottom")
    right.set_ylabel("held-out greedy accuracy (%)")
    right.set_title("held-out accuracy (95% CI)")
    right.set_ylim(0, max(after, before) * 100 * 1.4 + 5)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
