"""cad/parts-v1: every family's reference builds its target exactly and a part one dimension
off scores less; the held-out families are only in the unseen split; scripts that fail,
crash the kernel, hang or cheat score 0 with a clear error; the episode carries the tool's
report back for another attempt."""

from __future__ import annotations


import pytest

from tempering import envs
from tempering.envs.cad.env import PARTIAL, PartsEnv, extract_script
from tempering.envs.cad import tool
from tempering.envs.cad.parts import COMPOSED, FAMILIES, HELD_OUT
from tempering.errors import ConfigError, TaskError


@pytest.fixture(scope="module")
def env(shared_sandbox):
    return PartsEnv()


def test_check_env_passes():
    report = envs.check_env("cad/parts-v1", n=5)
    assert report.ok, report.problems
    assert report.checked == 15  # five tasks in each of train, test and unseen


def test_every_family_builds_its_target_and_a_wrong_part_scores_less(env):
    tasks = [env.task("test", 0, f) for f in env.families] + [env.task("unseen", i, f) for f in env.unseen_families
                                                               for i in range(2)]
    for task in tasks:
        family = task.metadata["family"]
        right = env.verify(task, env.reference_response(task))
        wrong = env.verify(task, env.broken_response(task))
        assert (right.value, right.passed, right.details["iou"]) == (1.0, True, pytest.approx(1.0)), family
        assert not wrong.passed and wrong.value < PARTIAL, (family, wrong.details)


def test_the_unseen_split_holds_out_whole_families(env):
    assert len(FAMILIES) >= 14 and len(HELD_OUT) >= 3
    assert set(env.families) | set(env.unseen_families) == set(FAMILIES)
    assert set(env.unseen_families) == set(HELD_OUT) and not set(env.families) & set(HELD_OUT)
    drawn = {split: [env.task(split, i).metadata["family"] for i in range(n)]
             for split, n in (("train", 200), ("test", 50), ("unseen", 50))}
    assert not set(drawn["train"] + drawn["test"]) & set(HELD_OUT)
    assert set(drawn["unseen"]) == set(HELD_OUT)  # each held-out family, and nothing else
    assert len(set(drawn["train"])) == len(env.families)
    with pytest.raises(TaskError, match="no task family 'hex_standoff' in split train"):
        env.task("train", 0, "hex_standoff")


def test_unseen_parts_pass_with_the_reference_and_fail_broken(env):
    from concurrent.futures import ThreadPoolExecutor

    tasks = env.tasks("unseen", 6)
    with ThreadPoolExecutor(4) as pool:
        right = list(pool.map(lambda t: env.verify(t, env.reference_response(t)), tasks))
        wrong = list(pool.map(lambda t: env.verify(t, env.broken_response(t)), tasks))
    assert [t.id for t, s in zip(tasks, right) if not s.passed] == []
    assert [t.id for t, s in zip(tasks, wrong) if s.passed or s.value >= PARTIAL] == []


def test_composed_parts_are_one_script_line_per_feature_and_build_their_target(shared_sandbox):
    from concurrent.futures import ThreadPoolExecutor

    env = PartsEnv(difficulty=3, composed=0.5)
    assert env.families[-1] == COMPOSED and COMPOSED not in env.unseen_families
    tasks = [env.task(split, i, COMPOSED) for split in ("train", "test") for i in range(4)]
    for task in tasks:
        spec, script = task.reference["spec"], task.reference["script"].splitlines()
        assert task.metadata["difficulty"] == 3
        assert len(script) - 1 == spec.count(";") + 1 in (2, 3)  # the base, then a line per feature
        assert script[0].startswith("result = box(") and all(line.startswith("result = result ") for line in script[1:])
    with ThreadPoolExecutor(4) as pool:
        right = list(pool.map(lambda t: env.verify(t, env.reference_response(t)), tasks))
        wrong = list(pool.map(lambda t: env.verify(t, env.broken_response(t)), tasks))
    assert [t.id for t, s in zip(tasks, right) if not s.passed] == []
    assert [t.id for t, s in zip(tasks, wrong) if s.passed or s.value >= PARTIAL] == []


def test_composed_parts_are_drawn_only_when_asked_and_never_in_the_unseen_split():
    drawn = lambda e, split: {e.task(split, i).metadata["family"] for i in range(120)}  # noqa: E731
    on = PartsEnv(difficulty=3, composed=0.5)
    train = [on.task("train", i).metadata["family"] for i in range(400)]
    assert 0.4 < train.count(COMPOSED) / len(train) < 0.6  # the share asked for
    assert COMPOSED in drawn(on, "test")
    assert COMPOSED not in drawn(on, "unseen") and drawn(on, "unseen") <= set(HELD_OUT)
    off = PartsEnv(difficulty=3)
    assert COMPOSED not in drawn(off, "train")
    assert [off.task("test", i).prompt for i in range(20)] == [PartsEnv(difficulty=3, composed=0).task("test", i).prompt
                                                               for i in range(20)]  # 0 draws what it always drew
    assert COMPOSED not in PartsEnv(difficulty=2, composed=0.5).families  # a level-3 family
    for bad in ("yes", True, 1.5, -0.1):
        with pytest.raises(TaskError, match="composed is the share of composed parts, a number from 0 to 1"):
            PartsEnv(composed=bad)


def test_a_near_miss_scores_above_a_rough_part(env):
    task = env.task("test", 0, "plate_hole")
    near = env.verify(task, env.broken_response(task))  # the hole 20 % too wide
    spec = task.reference["script"]
    rough = env.verify(task, "```python\n" + spec.split(" - ")[0].replace("result = box(", "result = box(2 * ") + "\n```")
    assert near.details["status"] == rough.details["status"] == "mismatch"
    assert 0 < rough.value < near.value < 1.0


def test_the_report_names_what_differs(env):
    task = env.task("test", 1, "tube")
    plain = task.reference["script"].split(" - ")[0]  # the tube without its bore
    score = env.verify(task, f"```python\n{plain}\n```")
    text = score.details["feedback"]
    assert "through-holes 0 (target 1)" in text and "does not match" in text
    assert score.details["part"]["volume"] > score.details["target"]["volume"]


HOSTILE = {
    "syntax error": ("result = box(10, 10,\n", "script_error", "SyntaxError"),
    "no result": ("part = box(10, 10, 10)\n", "script_error", "named result"),
    "not a part": ("result = 42\n", "script_error", "NotAPart"),
    "bad dimension": ("result = box(10, -5, 3)\n", "script_error", "y must be above 0"),
    "everything cut away": ("result = box(10, 10, 10) - box(20, 20, 20)\n", "script_error", "EmptyPart"),
    "exit before the part": ("import sys\nsys.exit(0)\n", "script_error", "exited before"),
    "endless loop": ("while True:\n    pass\n", "timeout", "time limit"),
    "memory bomb": ("x = bytearray(4 << 30)\n", "memory", "out of memory"),
    "kernel crash": ("import ctypes\nctypes.string_at(0)\n", "script_error", "crashed"),
    "fake mesh file": ("import os\nopen('part.mesh', 'wb').write(b'\\x05\\0\\0\\0\\x01\\0\\0\\0' + b'x' * 72)\n"
                       "os._exit(0)\n", "not_closed", ""),
    "too many parts": ("result = box(1, 1, 1)\nfor i in range(100000):\n    result = result + sphere(1).at(i, 0, 0)\n",
                       "timeout|memory", "CAD tool error"),  # the kernel's lazy CSG tree: either limit may go first
}


@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_scripts_score_zero_with_a_clear_error(env, kind, monkeypatch):
    code, status, words = HOSTILE[kind]
    if kind == "endless loop":  # a tight CPU limit on the program under test, the wall limit generous
        monkeypatch.setattr(tool, "LIMITS", tool.LIMITS.with_(cpu_s=2, wall_s=60))
    task = env.task("test", 0, "plate")
    score = env.verify(task, f"```python\n{code}```")
    assert (score.value, score.passed) == (0.0, False) and score.details["status"] in status.split("|"), score.details
    assert words in score.details["feedback"]


def test_the_script_cannot_reach_the_measurement(env):
    """Patching tcad or the kernel in the build run changes nothing in the measure run."""
    task = env.task("test", 0, "plate")
    code = ("import manifold3d, tcad\nmanifold3d.Manifold.volume = lambda self: 1.0\n"
            "tcad.Part.volume = property(lambda self: 1.0)\nresult = box(1, 1, 1)\n")
    score = env.verify(task, f"```python\n{code}```")
    assert score.details["status"] == "mismatch" and score.details["part"]["volume"] == pytest.approx(1.0)
    assert score.details["iou"] < 0.01


def test_an_episode_feeds_the_error_back_and_a_fix_ends_it(env):
    task = env.task("test", 0, "plate_hole")
    env.reset(task)
    first = env.step("```python\nresult = box(10, 10)\n```")
    assert not first.terminated and first.reward == 0.0
    assert "TypeError" in first.messages[0].content and "reply 2 of 3" in first.messages[0].content
    second = env.step("```python\n" + task.reference["script"].split(" - ")[0] + "\n```")
    assert not second.terminated and "overlap with the target" in second.messages[0].content
    third = env.step(env.reference_response(task))
    assert (third.terminated, third.reward, third.info["turn"]) == (True, 1.0, 3)


def test_single_turn_scores_the_one_attempt(env):
    one = PartsEnv(max_turns=1)
    task = one.task("test", 0, "rod")
    one.reset(task)
    step = one.step("```python\nresult = cylinder(1, 1)\n```")
    assert step.terminated and 0 < step.reward < PARTIAL


def test_difficulty_and_options():
    two = PartsEnv(difficulty=2)
    assert (two.families, two.unseen_families) == (("plate", "rod", "tube", "plate_hole"), ("u_channel",))
    assert {two.task("unseen", i).metadata["difficulty"] for i in range(10)} == {2}
    easy = envs.make("cad/parts-v1", difficulty=1)
    assert {easy.task("train", i).metadata["family"] for i in range(20)} == {"plate", "rod"}
    assert easy.splits == ("train", "test")  # no held-out family at level 1
    with pytest.raises(TaskError, match="unknown split 'unseen'"):
        easy.task("unseen", 0)
    with pytest.raises(TaskError, match="difficulty must be 1 to 5"):
        PartsEnv(difficulty=9)
    with pytest.raises(ConfigError, match="has no option 'level'"):
        envs.make("cad/parts-v1", level=2)


def test_extract_script():
    assert extract_script("no code here") is None
    assert extract_script("```python\nresult = box(1, 2, 3)\n```").endswith("result = box(1, 2, 3)\n")
    assert extract_script("result = rod") == "from tcad import *\nresult = rod"
    cut = extract_script("Here:\n```python\nresult = box(1, 2, 3)\nresult = result + ")  # cut at the token limit
    assert cut == "from tcad import *\nresult = box(1, 2, 3)\nresult = result + "
    assert extract_script("```python\na = 1\n```\ntext\n```python\nresult = box(1, 1, 1)\n```").endswith("box(1, 1, 1)\n")


def test_parts_of_your_own_from_a_file(env, tmp_path):
    good = tmp_path / "parts.jsonl"
    good.write_text('{"id": "washer", "drawing": "A washer: outer diameter 20 mm, bore 8 mm, 2 mm thick.", '
                    '"script": "result = cylinder(20, 2) - cylinder(8, 2)"}\n\n'
                    '{"drawing": "A cube of 10 mm.", "script": "result = box(10, 10, 10)", "split": "train"}\n')
    mine = PartsEnv(tasks_file=str(good))
    assert mine.splits == ("train", "test") and mine.size("test") == 1 and mine.families == ()
    task = mine.task("test", 0)
    assert task.id == "cad/parts-v1/test/washer" and "washer" in task.prompt[0].content
    assert mine.verify(task, mine.reference_response(task)).passed
    shifted = mine.verify(task, mine.broken_response(task))
    assert not shifted.passed and shifted.details["iou"] < 1.0


@pytest.mark.parametrize("line, words", [
    ("not json", "line 1: not JSON"),
    ('{"drawing": "x"}', "line 1: needs non-empty string fields drawing and script"),
    ('{"drawing": "x", "script": "result = box(1, 1, 1)", "split": "dev"}', "split must be train or test"),
    ('{"drawing": "x", "script": "result = box(1,"}', "the script is not valid Python"),
])
def test_a_bad_parts_file_is_one_clear_error(tmp_path, line, words):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(TaskError, match=words):
        PartsEnv(tasks_file=str(path))
    with pytest.raises(TaskError, match="cannot read tasks_file"):
        PartsEnv(tasks_file=str(tmp_path / "missing.jsonl"))


def test_a_task_whose_reference_does_not_build_scores_zero_as_a_bad_task(env, tmp_path):
    path = tmp_path / "parts.jsonl"
    path.write_text('{"drawing": "A plate.", "script": "result = box(10, 10)"}\n')
    mine = PartsEnv(tasks_file=str(path))
    score = mine.verify(mine.task("test", 0), "```python\nresult = box(10, 10, 1)\n```")
    assert (score.value, score.details["status"]) == (0.0, "bad_task")
    assert "reference script does not build" in score.details["error"]
