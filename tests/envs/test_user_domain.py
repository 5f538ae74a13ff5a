"""A domain added from outside the package (docs/domains.md), env options from the config,
and the FeedbackEnv episode every professional domain shares."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tempering import envs
from tempering.config import load_config
from tempering.envs.feedback import FeedbackEnv
from tempering.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def units(monkeypatch):
    monkeypatch.chdir(REPO)
    envs.import_envs(["examples.domains.units"])
    from examples.domains.units import UnitsEnv

    return UnitsEnv


def test_the_example_domain_registers_checks_and_trains_from_a_config(units):
    assert "units/convert-v1" in envs.list_envs()
    report = envs.check_env("units/convert-v1", n=4)
    assert report.ok and report.checked == 8, report.problems
    cfg = load_config(None, ["env.id=units/convert-v1", "env.imports=[examples.domains.units]",
                             "env.options={units/convert-v1: {difficulty: 1}}"])
    env = envs.make_from_config(cfg.env)
    assert isinstance(env, units) and env.families == ("km_to_m", "kg_to_g")
    assert len((REPO / "examples/domains/units.py").read_text().splitlines()) < 100


def test_the_cli_imports_the_module(units):
    out = subprocess.run([sys.executable, "-m", "tempering.cli.main", "envs", "check", "units/convert-v1",
                          "--import", "examples.domains.units", "--n", "2"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and "units/convert-v1: ok (4 tasks checked)" in out.stdout, out.stderr
    bad = subprocess.run([sys.executable, "-m", "tempering.cli.main", "envs", "list", "--import", "no.such.module"],
                         cwd=REPO, capture_output=True, text=True)
    assert bad.returncode == 2 and "cannot import 'no.such.module'" in bad.stderr


def test_register_refuses_bad_and_taken_ids(units):
    with pytest.raises(ConfigError, match="not of the form domain/name-vN"):
        envs.register("Units", units)
    with pytest.raises(ConfigError, match="already registered"):
        envs.register("math/arith-v1", units)
    with pytest.raises(ConfigError, match="already registered"):
        envs.register("units/convert-v1", lambda: units())


def test_options_for_an_env_the_run_does_not_use_are_an_error():
    cfg = load_config(None, ["env.options={code/synth-v1: {max_turns: 2}}"])
    with pytest.raises(ConfigError, match="env.options names code/synth-v1"):
        envs.make_from_config(cfg.env)
    cfg = load_config(None, ["env.id=mix", "env.mix={math/arith-v1: 1, cad/parts-v1: 1}",
                             "env.options={cad/parts-v1: {difficulty: 1}}"])
    mixed = envs.make_from_config(cfg.env)
    assert mixed.members["cad/parts-v1"].families == ("plate", "rod")


def test_a_feedback_episode_retries_then_scores_with_the_turn_cost(units):
    env = FeedbackEnv("units/convert-v1", units()._generate, units().verify,
                      lambda t: f"Answer: {t.reference}", max_turns=3, turn_cost=0.25)
    task = env.task("test", 0)
    env.reset(task)
    miss = env.step("Answer: 0.5")
    assert not miss.terminated and miss.reward == 0.0
    assert "is not right" in miss.messages[0].content and "(reply 2 of 3)" in miss.messages[0].content
    assert env.context_messages(lambda s: len(s.split()), 10_000)[-1] == miss.messages[0]
    hit = env.step(f"Answer: {task.reference}")
    assert (hit.terminated, hit.reward, hit.info["turn"], hit.info["passed"]) == (True, 0.75, 2, True)
    env.reset(task)
    for _ in range(2):
        assert not env.step("no number").terminated
    last = env.step("still no number")
    assert (last.terminated, last.reward, last.info["status"]) == (True, 0.0, "no_answer")


def test_multi_turn_evaluation_plays_episodes_with_feedback(units, tiny):
    from tempering.eval import evaluate_episodes
    from tempering.rollout import HFClient

    result = evaluate_episodes(HFClient(tiny.model, tiny.tokenizer), "units/convert-v1", "test", n=3, max_turns=2,
                               max_new_tokens=4)
    assert result.n == 3 and result.correct == 0  # a random model converts nothing
    assert [i["turns"] for i in result.items] == [2, 2, 2]
    assert all(len(i["feedback"]) == 1 and "(reply 2 of 2)" in i["feedback"][0] for i in result.items)
    one = evaluate_episodes(HFClient(tiny.model, tiny.tokenizer), "units/convert-v1", "test", n=3, max_turns=1,
                            max_new_tokens=4)
    assert [i["turns"] for i in one.items] == [1, 1, 1] and one.items[0]["replies"] == result.items[0]["replies"][:1]


def test_a_multi_reply_evaluation_counts_first_reply_passes_apart(units, tiny):
    """Task 1 passes on its second reply, task 2 on its first, task 3 never: 2 passed, 1 first."""
    from tempering.eval import evaluate_episodes
    from tempering.rollout.fake import ScriptedClient

    tasks = envs.make("units/convert-v1").tasks("test", 3)
    right = [f"Answer: {t.reference}" for t in tasks]
    # turn 1 of all three episodes, then turn 2 of the two still open (1 and 3)
    replies = ["no number", right[1], "no number", right[0], "still none"]
    result = evaluate_episodes(ScriptedClient(tiny.tokenizer, replies), "units/convert-v1", "test", n=3, max_turns=2)
    assert [(i["passed"], i["turns"]) for i in result.items] == [(True, 2), (True, 1), (False, 2)]
    assert (result.correct, result.first_correct) == (2, 1) and "first reply 1/3" in result.summary()
    assert result.repeated == 0  # "no number", then "still none": different words
    again = evaluate_episodes(ScriptedClient(tiny.tokenizer, ["no number", right[1], "x", "no number", "y"]),
                              "units/convert-v1", "test", n=3, max_turns=2)
    assert again.repeated == 1 and "1 repeated an earlier reply word for word" in again.summary()
    one = evaluate_episodes(ScriptedClient(tiny.tokenizer, replies[:3]), "units/convert-v1", "test", n=3, max_turns=1)
    assert (one.correct, one.first_correct, one.repeated) == (1, None, None)
