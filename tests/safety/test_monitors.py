"""Drift monitors on hand-made attempts: what counts as a jump, what counts as a repeat."""

from types import SimpleNamespace

from tempering.config.schema import AlertConfig
from tempering.safety.monitors import StepMonitors, repeated_replies
from tempering.trainer.alerts import AlertWatch


def _r(family, passed, task="t", reply="x"):
    return SimpleNamespace(family=family, passed=passed, task_id=task, reply=reply, info=None)


def _run(steps) -> list[str]:
    monitors, watch, history, kinds = StepMonitors(), AlertWatch(AlertConfig()), [], []
    for i, rollouts in enumerate(steps, 1):
        history.append({"step": i} | monitors.metrics(rollouts))
        kinds += [a.kind for a in watch.check(history)]
    return kinds


def test_a_family_that_jumps_from_never_to_always_is_flagged_and_a_lucky_group_is_not():
    never = [[_r("f", False, f"t{i}{j}", f"r{i}{j}") for j in range(4)] for i in range(3)]  # 0 of 12
    assert _run(never + [[_r("f", True, f"u{j}", f"s{j}") for j in range(4)]]) == ["reward_jump"]  # 4 of 4
    lucky = [_r("f", j < 3, f"u{j}", f"s{j}") for j in range(4)]  # 3 of 4: p = 0.0014 at the smoothed 1/14
    assert _run(never + [lucky]) == []


def test_repeated_replies_count_only_across_different_tasks():
    same_task = [_r("f", True, "t1", "SELECT 1") for _ in range(4)]
    assert repeated_replies(same_task) == 0.0  # a group's samples may agree
    across = [_r("f", True, f"t{i}", "SELECT 1") for i in range(3)] + [_r("f", True, "t9", "other")]
    assert repeated_replies(across) == 0.75
