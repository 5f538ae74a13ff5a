"""Verified demonstrations: every kept one replays to reward 1 through a fresh env; the split
guard stops held-out tasks and HumanEval from reaching training data."""

from __future__ import annotations

import ast
import random
import re

import pytest

from tempering import envs
from tempering.envs.code.humaneval import load_humaneval
from tempering.envs.code.mutants import mutants
from tempering.errors import DataLeakError
from tempering.trainer.demos import demonstrations, env_demonstrations, humaneval_overlap, split_guard
from tempering.types import Message


def _words(messages) -> int:
    return sum(len(m.content.split()) for m in messages)


DOMAINS = ["sql/sqlite-v1", "cad/parts-v1", "code/repair-v1", "finance/statements-v1"]


@pytest.mark.parametrize("env_id", DOMAINS)
def test_every_demonstration_replays_to_reward_one(env_id, shared_sandbox):
    demos = env_demonstrations(env_id, _words, budget=1500, kinds={"single": 1.0, "repair": 3.0}, seed=1, max_tasks=6)
    assert demos.rows, demos.summary()
    assert demos.kinds["repair"] >= 1, demos.summary()
    for row in demos.rows:
        env = envs.make(env_id)
        messages = [Message(**m) for m in row["messages"]]
        assert "/train/" in row["task_id"]
        task = env.task("train", int(row["task_id"].split("/train/")[1].split("/")[0]))
        assert list(env.reset(task)) == [m for m in messages if m.role != "assistant"][:len(task.prompt)]
        replies = [m.content for m in messages if m.role == "assistant"]
        fed_back = [m.content for m in messages[len(task.prompt):] if m.role == "user"]
        for i, reply in enumerate(replies):
            result = env.step(reply)
            if i < len(replies) - 1:  # the wrong attempt: not passed, and the env said exactly this
                assert not result.terminated
                assert result.messages[0].content == fed_back[i]
        assert result.terminated and result.reward == 1.0
        if row["kind"] == "repair":
            assert len(replies) == 2 and replies[0] != replies[1]


def test_demonstrations_longer_than_the_sft_max_len_are_dropped_and_counted():
    unbounded = env_demonstrations("math/arith-v1", _words, budget=10**6, kinds={"single": 1.0}, max_tasks=20)
    cap = sorted(r["tokens"] for r in unbounded.rows)[10]  # about half are longer
    capped = env_demonstrations("math/arith-v1", _words, budget=10**6, kinds={"single": 1.0}, max_tasks=20,
                                max_len=cap)
    longer = sum(r["tokens"] > cap for r in unbounded.rows)
    assert longer > 0 and all(r["tokens"] <= cap for r in capped.rows)
    assert capped.dropped == {f"single: longer than sft.data.max_len ({cap})": longer}
    assert len(capped.rows) + longer == len(unbounded.rows)


@pytest.mark.parametrize("env_id", ["terminal/repo-v1", "finance/filings-long-v1"])
def test_tool_demonstrations_replay_with_the_tools_real_outputs(env_id, shared_sandbox):
    demos = env_demonstrations(env_id, _words, budget=10**6, kinds={"tool": 1.0}, max_tasks=2)
    assert len(demos.rows) == 2 and demos.kinds == {"tool": 2}, demos.summary()
    for row in demos.rows:
        roles = [m["role"] for m in row["messages"]]
        assert roles.count("assistant") >= 2 and roles[-1] == "assistant"
        outputs = [m["content"] for m in row["messages"][2:] if m["role"] == "user"]
        if env_id == "terminal/repo-v1":  # tests failed; the code read holds every line the patch replaces; pass; DONE
            patch = re.search(r"\.replace\((.+), 1\)\)\nEOF", row["messages"][-3]["content"], re.S)
            replaced = ast.literal_eval(f"({patch.group(1)})")[0]
            assert " failed" in outputs[0] and replaced in outputs[1] and ", 0 failed" in outputs[2]
            assert row["messages"][-1]["content"] == "DONE"
        else:  # each read_section call got its section's text
            assert all(o.startswith("[") for o in outputs)


def test_demonstrations_split_the_token_budget_by_weight():
    rows, per_env = demonstrations({"sql/sqlite-v1": 3.0, "code/repair-v1": 1.0}, 4000, _words, seed=0)
    by_env = {e.env_id: e for e in per_env}
    assert by_env["sql/sqlite-v1"].tokens >= 3000 > by_env["sql/sqlite-v1"].tokens - max(
        r["tokens"] for r in by_env["sql/sqlite-v1"].rows)
    assert by_env["code/repair-v1"].tokens >= 1000
    assert len(rows) == sum(len(e.rows) for e in per_env)


def test_code_mutants_are_one_change_bugs():
    source = "def f(xs):\n    return [x + 1 for x in xs if x < 3]\n"
    out = list(mutants(source, random.Random(0)))
    assert out and all(m != source for m in out)
    assert any("x - 1" in m for m in out) and any("x <= 3" in m for m in out)
    for m in out:
        compile(m, "<mutant>", "exec")


def _rows(env_id="sql/sqlite-v1"):
    return env_demonstrations(env_id, _words, budget=300, kinds={"single": 1.0}, max_tasks=3).rows


def test_split_guard_passes_clean_train_data():
    report = split_guard(_rows(), {"sql/sqlite-v1": (20, ["test"])})
    assert report["leaks"] == 0 and report["held_out_prompts_checked"] == 20
    assert report["humaneval_problems_checked"] == 164


def test_split_guard_catches_a_planted_test_prompt():
    rows = _rows()
    test_task = envs.make("sql/sqlite-v1").task("test", 7)
    rows.append({"messages": [m.as_dict() for m in test_task.prompt] + [{"role": "assistant", "content": "x"}],
                 "task_id": "sql/sqlite-v1/train/999", "env": "sql/sqlite-v1", "kind": "single", "tokens": 1})
    with pytest.raises(DataLeakError, match="test/7: its prompt is in the training data"):
        split_guard(rows, {"sql/sqlite-v1": (10, ["test"])})


def test_split_guard_catches_humaneval_and_test_ids():
    he = load_humaneval()[3]
    rows = _rows() + [{"messages": [{"role": "user", "content": "Complete this:\n" + he.prompt},
                                    {"role": "assistant", "content": he.reference}],
                       "task_id": "code/synth-v1/train/1", "env": "code/synth-v1", "kind": "single", "tokens": 1}]
    with pytest.raises(DataLeakError, match="HumanEval/3"):
        split_guard(rows, {})
    bad = [{**_rows()[0], "task_id": "sql/sqlite-v1/test/0"}]
    with pytest.raises(DataLeakError, match="not a train task"):
        split_guard(bad, {})


def test_rows_that_meet_humaneval_by_coincidence_are_found():
    he = load_humaneval()[13]  # greatest_common_divisor: a textbook Euclid loop
    body = he.reference[len(he.prompt):]
    rows = _rows() + [{"messages": [{"role": "user", "content": "gcd of a and b"},
                                    {"role": "assistant", "content": f"```python\ndef gcd(a, b):\n{body}```"}],
                       "task_id": "code/synth-v1/train/5", "env": "code/synth-v1", "kind": "single", "tokens": 9}]
    assert humaneval_overlap(rows) == {len(rows) - 1: "HumanEval/13"}


def test_sampled_demonstrations_keep_only_finished_replies_that_score_one(tiny):
    """Rejection sampling: of each task's replies the first that ended on its own and scores
    1 is kept; a right number cut at max_new_tokens, or a wrong one, keeps nothing."""
    from tempering.rollout.fake import ScriptedClient
    from tempering.trainer.demos import sampled_demonstrations

    env = envs.make("math/arith-v1")
    right = [env.reference_response(env.task("train", i)) for i in range(4)]
    # task 0: wrong, then right (kept); task 1: wrong twice; task 2: right but cut; task 3: right
    replies = ["Answer: -1", right[0], "Answer: -1", "Answer: -2", right[2], right[2], right[3], "Answer: -1"]
    client = ScriptedClient(tiny.tokenizer, replies, cut={4, 5})
    demos = sampled_demonstrations("math/arith-v1", client, _words, budget=10**6, samples=2, max_tasks=4,
                                   batch_size=4)
    assert [r["task_id"] for r in demos.rows] == [env.task("train", i).id for i in (0, 3)]
    assert [r["messages"][-1]["content"] for r in demos.rows] == [right[0], right[3]]
    assert {r["kind"] for r in demos.rows} == {"sampled"}
    assert demos.dropped == {"sampled: no finished reply of 2 scored 1": 2}
    assert demos.tasks_tried == 4 and demos.tokens == sum(r["tokens"] for r in demos.rows)
    assert len(client.prompts) == 8  # every task asked for both replies in one batch


def test_sampled_demonstrations_of_failures_teach_the_fix_not_the_mistake(tiny):
    """keep failed (kind self_repair): the model's first reply that fails stays as context of
    weight 0, the env's real feedback on it follows, and the reference is the one target; a
    task whose replies all pass keeps nothing, and an env without feedback is one clear error."""
    from tempering.errors import ConfigError
    from tempering.rollout.fake import ScriptedClient
    from tempering.trainer.demos import sampled_demonstrations

    env_id = "finance/statements-v1"
    env = envs.make(env_id)
    right = [env.reference_response(env.task("train", i)) for i in range(3)]
    wrong = env.broken_response(env.task("train", 0))
    # task 0: right, then wrong (the wrong one is kept); task 1: right twice (nothing); task 2: wrong but cut
    replies = [right[0], wrong, right[1], right[1], env.broken_response(env.task("train", 2)), right[2]]
    client = ScriptedClient(tiny.tokenizer, replies, cut={4})
    demos = sampled_demonstrations(env_id, client, _words, budget=10**6, samples=2, max_tasks=3, batch_size=3,
                                   keep="failed")
    assert [r["task_id"] for r in demos.rows] == [env.task("train", i).id for i in (0, 2)]
    assert {r["kind"] for r in demos.rows} == {"self_repair"}
    assert demos.dropped == {"self_repair: every one of 2 replies passed": 1}
    first = [Message(**m) for m in demos.rows[0]["messages"]]
    said = [m for m in first if m.role == "assistant"]
    assert [(m.content, m.weight) for m in said] == [(wrong, 0), (right[0], 1)]
    fresh = envs.make(env_id)
    fresh.reset(env.task("train", 0))
    verdict = list(fresh.step(wrong).messages)  # what the env really says to the wrong reply
    at = first.index(said[0]) + 1
    assert verdict and first[at:at + len(verdict)] == verdict and first[at + len(verdict)] == said[1]
    later = sampled_demonstrations(env_id, ScriptedClient(tiny.tokenizer, [wrong], repeat_last=True), _words,
                                   budget=10**6, max_tasks=2, batch_size=2, keep="failed", start=5)
    assert [r["task_id"] for r in later.rows] == [env.task("train", i).id for i in (5, 6)]  # tasks apart from 0..4
    with pytest.raises(ConfigError, match="keep failed needs an env that gives feedback"):
        sampled_demonstrations("math/arith-v1", client, _words, budget=10, keep="failed")
    with pytest.raises(ConfigError, match="keep must be one of passed, failed"):
        sampled_demonstrations(env_id, client, _words, budget=10, keep="wrong")


def test_the_demos_stage_says_how_far_it_is(capsys):
    """A line per interval while an env's demonstrations are made: tasks tried, kept, tokens, ETA."""
    from tempering.trainer.demos import EnvDemos, Progress

    out = EnvDemos("code/docstring-v1", rows=[{}, {}], tokens=500, tasks_tried=3)
    progress = Progress("code/docstring-v1 (failed replies of the model)", budget=2000, every_s=0.0)
    progress.show(out)
    line = capsys.readouterr().out
    assert line.startswith("[demos] code/docstring-v1 (failed replies of the model): 3 tasks tried, 2 kept, 500/2,000 tokens")
    assert "ETA" in line
