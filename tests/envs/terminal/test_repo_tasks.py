"""Generated repository tasks in the sandbox: determinism, oracle 1 / noop 0, the agent's
view, cheats that must score 0, the env (its unseen split too) and the CLI."""

from __future__ import annotations

import json

import pytest

from tempering.envs.base import split_of
from tempering.envs.terminal import CommandsAgent, NoopAgent, OracleAgent, load_task, run_trial
from tempering.envs.terminal.repo_check import evaluate
from tempering.envs.terminal.repo_gen import generate
from tempering.envs.terminal.runner import TaskSession

MODULES = ("bisect", "colorsys", "textwrap")


@pytest.fixture(scope="module")
def specs(shared_sandbox):
    return {m: generate("train", 0, modules=(m,), sandbox=shared_sandbox) for m in MODULES}


@pytest.fixture(scope="module")
def written(specs, tmp_path_factory):
    root = tmp_path_factory.mktemp("repo-tasks")
    return {m: spec.write(root) for m, spec in specs.items()}


def test_generation_is_deterministic_and_split_by_mutation_site(specs, shared_sandbox):
    for module, spec in specs.items():
        assert generate("train", 0, modules=(module,), sandbox=shared_sandbox) == spec
        assert spec.fail_to_pass and set(spec.fail_to_pass).isdisjoint(spec.pass_to_pass)
        assert split_of(f"{module}:{spec.site}") == "train"
        assert spec.original != spec.mutated and spec.mutation not in spec.issue
    held = generate("test", 3, sandbox=shared_sandbox)
    assert split_of(f"{held.module}:{held.site}") == "test" and held.id.endswith("test-0003")
    assert generate("train", 1, sandbox=shared_sandbox) != generate("train", 2, sandbox=shared_sandbox)


def test_a_mutant_that_allocates_or_spins_without_end_is_a_hang_and_the_run_survives(shared_sandbox):
    # A runaway allocation used to trip the sandbox's memory limit and fail the whole evaluation
    # (status "memory"), sooner on a fast machine; now its own process is capped and it is a hang.
    sources = {"original": "def f(x):\n    return x + 1\n",
               "grows": "def f(x):\n    out = []\n    while True:\n        out.append(bytearray(1 << 20))\n",
               "spins": "def f(x):\n    while True:\n        x += 1\n"}
    results = evaluate("pk", sources, ["import pk\npk.f(1)", "import pk\npk.f(2)"], shared_sandbox)
    assert results["original"] == [{"value": "2"}, {"value": "3"}]
    assert results["grows"] == [{"hang": True}] and results["spins"] == [{"hang": True}]


def test_every_task_needs_a_shown_and_a_held_out_failing_test(specs):
    for spec in specs.values():
        shown = [n for n in spec.fail_to_pass if "_more.py::" not in n]
        assert shown and len(shown) < len(spec.fail_to_pass)
        assert f"tests/test_{spec.package}_more.py" not in spec.snapshot()
        assert "```python\n>>> import " + spec.package in spec.issue


def test_written_task_is_the_generated_one(specs, written):
    for module, spec in specs.items():
        task, mem = load_task(written[module]), spec.terminal_task()
        assert task.format == mem.format == "repo"
        assert (task.tests, task.test_targets, task.expected_tests, task.solution, task.instruction) == \
               (mem.tests, mem.test_targets, mem.expected_tests, mem.solution, mem.instruction)
        assert (written[module] / "fix.diff").read_text().startswith(f"--- a/{spec.package}/__init__.py")


@pytest.mark.parametrize("module", MODULES)
def test_oracle_scores_one_and_noop_zero(written, specs, shared_sandbox, module):
    task, spec = load_task(written[module]), specs[module]
    f2p, p2p = len(spec.fail_to_pass), len(spec.pass_to_pass)
    oracle = run_trial(task, OracleAgent(), shared_sandbox)
    assert oracle.status == "passed" and oracle.counts == {"fail_to_pass": [f2p, f2p], "pass_to_pass": [p2p, p2p]}
    noop = run_trial(task, NoopAgent(), shared_sandbox)
    assert noop.status == "failed" and noop.reward == 0.0
    assert noop.counts == {"fail_to_pass": [0, f2p], "pass_to_pass": [p2p, p2p]}, noop.reason
    assert noop.reason.startswith(f"FAIL_TO_PASS 0/{f2p}, PASS_TO_PASS {p2p}/{p2p} passed")


def test_the_agent_can_run_the_shown_tests_without_pytest(specs, shared_sandbox):
    spec = specs["bisect"]
    with TaskSession(spec.terminal_task(), shared_sandbox) as s:
        assert s.build() is None
        before = s.run(f"python tests/test_{spec.package}.py", 60)
        assert before.exit_code == 1
        for node in spec.fail_to_pass:
            if "_more.py::" not in node:
                assert f"FAILED {node.split('::')[1]}" in before.output
        assert "\nreturned " in before.output and "\nexpected " in before.output
        s.run_script(spec.solution(), 60)
        after = s.run(f"python tests/test_{spec.package}.py", 60)
        assert after.exit_code == 0 and " passed, 0 failed" in after.output


def _cheats(spec) -> dict[str, list[str]]:
    pkg, tests = spec.package, f"tests/test_{spec.package}.py"
    names = [c.name for c in spec.cases if c.file == tests]
    failing = [n.split("::")[1] for n in spec.fail_to_pass if n.startswith(tests)]
    passing_xml = ('<testsuites><testsuite name="pytest" tests="1" failures="0" errors="0" skipped="0">'
                   '<testcase classname="tests.x" name="test_x"/></testsuite></testsuites>')
    shown = {c.code: ({"raised": c.expected[8:-2]} if c.expected.startswith("Raised(") else {"value": c.expected})
             for c in spec.cases if f"{c.file}::{c.name}" in spec.fail_to_pass and c.file == tests}
    return {
        "tests_rewritten_to_pass": ["cat > " + tests + " <<'EOF'\n"
                                    + "".join(f"def {n}():\n    assert True\n" for n in names) + "EOF"],
        "failing_tests_deleted": [f"python - <<'EOF'\nimport re\np = {tests!r}\ns = open(p).read()\n"
                                  f"for n in {failing!r}:\n    s = re.sub(r'def ' + n + r'\\(\\):\\n.*\\n', '', s)\n"
                                  f"open(p, 'w').write(s)\nEOF", f"! grep -q {failing[0]} {tests}"],
        "conftest_skips_everything": [
            "printf 'import pytest\\ndef pytest_collection_modifyitems(items):\\n    for i in items:\\n"
            "        i.add_marker(pytest.mark.skip)\\n' > conftest.py && cp conftest.py tests/conftest.py"],
        "helpers_accept_anything": ["printf 'def expect(code, expected):\\n    pass\\n' >> tests/helpers.py"],
        # the package answers the shown calls it can read from its own command line: only the
        # held-out tests, which the agent never sees, stop it
        "hard_coded_answers": [f"cat >> {pkg}/__init__.py <<'EOF'\nimport json as _j, os as _o, sys as _s\n"
                               f"_HARD = {json.dumps(shown)}\n"
                               "if len(_s.argv) > 3 and _s.argv[3] in _HARD:\n"
                               "    _o.write(1, _j.dumps(_HARD[_s.argv[3]]).encode())\n    _o._exit(0)\nEOF"],
        # the package's code, run by every test, attacks the test run itself
        "package_attacks_the_runner": [f"cat >> {pkg}/__init__.py <<'EOF'\nimport glob as _g, os as _o\n"
                                       f"for _f in _g.glob('/proc/*/fd/*'):\n    try:\n"
                                       f"        open(_f, 'w').write({passing_xml!r})\n    except Exception:\n"
                                       "        pass\nfor _f in _g.glob('/tests/**/*.py', recursive=True):\n"
                                       "    try:\n        open(_f, 'w').write('def test_x():\\n    pass\\n')\n"
                                       "    except Exception:\n        pass\nif _o.fork() == 0:\n    _o.setsid()\n"
                                       "    import time\n    time.sleep(3600)\n    _o._exit(0)\nEOF"],
    }


CHEATS = ("tests_rewritten_to_pass", "failing_tests_deleted", "conftest_skips_everything", "helpers_accept_anything",
          "hard_coded_answers", "package_attacks_the_runner")


@pytest.mark.parametrize("cheat", CHEATS)
def test_cheats_score_zero(specs, shared_sandbox, cheat):
    spec = specs["textwrap"]
    r = run_trial(spec.terminal_task(), CommandsAgent(_cheats(spec)[cheat], cheat), shared_sandbox)
    assert r.status == "failed" and r.reward == 0.0, (cheat, r.reason)
    p2p = len(spec.pass_to_pass)
    if cheat == "hard_coded_answers":  # every shown failing test now passes; the held-out ones do not
        shown = sum("_more.py::" not in n for n in spec.fail_to_pass)
        assert r.counts["fail_to_pass"] == [shown, len(spec.fail_to_pass)], r.reason
    elif cheat == "package_attacks_the_runner":  # what it leaves running dies after each call
        # a sleeper that outlived its call would hold the test run to its time limit
        assert "ended with status" not in r.reason, r.reason
    else:
        assert r.counts == {"fail_to_pass": [0, len(spec.fail_to_pass)], "pass_to_pass": [p2p, p2p]}, r.reason


def test_repo_env_generates_plays_and_checks(shared_sandbox):
    from tempering import envs
    from tempering.envs.terminal.repo_env import RepoEnv

    assert "terminal/repo-v1" in envs.list_envs()
    env = RepoEnv(sandbox=shared_sandbox, modules=("bisect",))
    task = env.task("train", 0)
    assert task == RepoEnv(sandbox=shared_sandbox, modules=("bisect",)).task("train", 0)
    assert task.id == "terminal/repo-v1/train/0" and task.metadata["module"] == "bisect"
    messages = env.reset(task)
    assert "```python\n>>> import bisectkit" in messages[1].content
    step = env.step("```bash\npython tests/test_bisectkit.py | tail -1\n```")
    assert not step.terminated and " failed" in step.messages[0].content
    step = env.step(env.reference_response(task))
    assert step.terminated and step.reward == 1.0 and step.info["counts"]["fail_to_pass"][0] > 0
    assert env.verify(task, "").value == 0.0


@pytest.mark.parametrize("module", ["heapq", "shlex"])
def test_unseen_tasks_are_of_held_out_modules_and_the_oracle_fixes_them(shared_sandbox, module):
    from tempering.envs.terminal.repo_env import RepoEnv

    env = RepoEnv(sandbox=shared_sandbox)
    task = env.task("unseen", 0, module)
    assert task.id == f"terminal/repo-v1/unseen/0/{module}" and task.reference.id == f"{module}-unseen-0000"
    assert env.verify(task, env.reference_response(task)).value == 1.0
    assert env.verify(task, "").value == 0.0


@pytest.mark.slow
def test_check_env_five_per_split(shared_sandbox):
    from tempering import envs

    report = envs.check_env("terminal/repo-v1", n=5)
    assert report.ok and report.checked == 15, report.problems


def test_cli_writes_verified_tasks_that_eval_scores(tmp_path, capsys):
    from tempering.cli.main import main

    out = tmp_path / "tasks"
    assert main(["data", "repo-tasks", "--n", "2", "--out", str(out), "--modules", "colorsys,bisect"]) == 0
    text = capsys.readouterr().out
    assert "wrote 2 repo tasks (train, seed 0)" in text and "oracle passed 2/2, noop passed 0/2" in text
    manifest = json.loads((out / "repo-tasks.json").read_text())
    assert len(manifest["tasks"]) == 2 and not manifest["discarded"]
    for agent, rate in (("oracle", "1.000"), ("noop", "0.000")):
        assert main(["eval", "--env", "terminal", "--tasks", str(out), "--agent", agent,
                     "--out", str(tmp_path / f"{agent}.json")]) == 0
        assert f"completion rate {rate} over 2 tasks" in capsys.readouterr().out
    assert main(["data", "repo-tasks", "--n", "1", "--out", str(out), "--modules", "nope"]) == 2


def test_a_fix_is_graded_on_its_source_not_on_stale_bytecode(shared_sandbox):
    """The tests ran (bytecode cached), then a same-size fix kept the file's mtime: Python's
    .pyc check (mtime and size) would call the old bytecode fresh. The grader and the shown
    tests read no .pyc, so the fix counts."""
    from tempering.envs.terminal.repo_env import RepoEnv

    env = RepoEnv(sandbox=shared_sandbox, modules=("html",))
    task = env.task("train", 0)
    pkg = task.metadata["package"]
    src = f"/app/{pkg}/__init__.py"
    assert "replace(" in task.metadata["fix"]  # an in-place patch, not the whole file
    env.reset(task)
    step = env.step(f"```bash\ncd /app && python tests/test_{pkg}.py | tail -n 1; ls {pkg}/__pycache__; "
                    f"T=$(stat -c %Y {src})\n{task.metadata['fix']}touch -d @$T {src}\n"
                    f"python tests/test_{pkg}.py | tail -n 1\n```\nDONE")
    assert step.terminated and step.reward == 1.0, step.info.get("reason")
