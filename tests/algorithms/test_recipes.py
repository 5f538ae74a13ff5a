"""The recipe table (config.RECIPES) is the one place an algorithm is described, and adding
one is an estimator and a row: the worked example below trains a new one end to end."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import torch

from tempering.algorithms import ADVANTAGES
from tempering.config import FALLBACK_DEFAULTS, GAE, RECIPES, AlgorithmConfig, Recipe, load_config
from tempering.envs.fake import parity_env

DOCS = Path(__file__).resolve().parents[2] / "docs" / "algorithms.md"


def test_every_row_names_what_exists():
    unset = {f.name for f in dataclasses.fields(AlgorithmConfig) if f.default is None}
    for name, r in RECIPES.items():
        assert r.kind in ("rl", "offline") and r.summary, name
        assert r.head in ("causal", "reward"), name
        assert set(r.defaults) <= unset and set(r.defaults) <= set(FALLBACK_DEFAULTS), name
        if r.kind == "rl":
            assert r.estimator in ADVANTAGES or r.estimator == GAE, name
            assert not r.data and not r.preference, name
        else:
            assert not r.estimator and r.data in ("sft", "pairs"), name
        assert r.needs_critic == (r.estimator == GAE)


def test_docs_list_every_recipe():
    text = DOCS.read_text()
    for name, r in RECIPES.items():
        assert f"| `{name}` | {r.kind} |" in text, f"docs/algorithms.md has no row for {name}"


# -- the worked example (docs/algorithms.md, "Adding an algorithm") -------------------------
def sign_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """(N, G) rewards -> (N, G) advantages: +1 above the group mean, -1 below, 0 at it."""
    return torch.sign(rewards - rewards.mean(dim=1, keepdim=True))


def test_a_new_algorithm_is_one_estimator_and_one_row(tmp_path, monkeypatch, capsys):
    from tempering.cli.main import main
    from tempering.trainer import prepare_run, train

    seen = []

    def estimator(rewards):
        seen.append(rewards.clone())
        return sign_advantages(rewards)

    monkeypatch.setitem(ADVANTAGES, "sign", estimator)  # 1. the estimator
    monkeypatch.setitem(RECIPES, "sign_pg", Recipe("rl", "policy, sign of r - group mean", "sign",  # 2. the row
                                                   {"loss_agg": "token_mean"}))

    cfg = load_config("configs/tiny-cpu.yaml", ["algorithm.name=sign_pg", "algorithm.beta=0"])
    assert cfg.algorithm.loss_agg == "token_mean"  # the row's default resolved
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=2, progress=False, env=parity_env())

    assert [m["step"] for m in metrics] == [1, 2]
    assert len(seen) == 2 and all(r.shape == (2, 4) for r in seen)  # once per step: 2 prompts x 4 attempts
    assert all(math.isfinite(m["loss"]) for m in metrics)
    assert any(len(set(g.tolist())) > 1 for r in seen for g in r)  # some group's attempts scored differently,
    assert any(m["grad_norm"] > 0 for m in metrics)                   # and its sign advantages moved the weights
    assert "name: sign_pg" in (tmp_path / "config.yaml").read_text()
    assert main(["settings", "algorithm"]) == 0
    assert "sign_pg: loss_agg=token_mean  # rl: policy, sign of r - group mean" in capsys.readouterr().out
