"""`code/project-v1`: small Python projects written one function per step, where the last
step builds on the earlier ones. Built from the code/synth-v1 families; two shapes:

    chain   a(x), then b(y), then pipeline(x) = b(a(x)), calling the two (the output kind
            of a is the input kind of b)
    map     a(x), then a_each(items) = [a(x) for x in items], calling a

Each step is graded in the sandbox like code/synth-v1, on its three examples (shown in its
prompt) and ten hidden tests, with the model's latest code for the earlier steps in the same
module. Feedback shows a failing example or the error that stopped the code, and only counts
failed hidden tests; the `log` artifact a model can RECALL says no more than the feedback.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import replace

from ...types import Score, Task
from ..long import Attempt, LongEnv, LongTask, Subtask, long_prompt
from .extract import extract_code
from .humaneval import _BREAK
from .synth import FAMILIES, N_HIDDEN, N_VISIBLE, Family, _indent_doc, build
from .verify import CodeTask, verify_code

PROJECT_ID = "code/project-v1"
SHAPES = ("chain", "map")
GOAL = ("Build a small Python module in {n} steps: {names}. Each step asks for one function. Your "
        "latest code for every earlier step stays in the module, so a later function can call an "
        "earlier one. Reply to each step with its function in one ```python code block.")
STEP = "write this function.\n\n```python\n{prompt}```"

# Families that compose: each reference terminates and never raises on any value of its input
# kind, and draws its inputs without its parameters. name -> (input kind, output kind), where
# "ints" is a list of ints.
KINDS: dict[str, tuple[str, str]] = {
    "reverse_words": ("str", "str"), "capitalize_words": ("str", "str"), "remove_char": ("str", "str"),
    "caesar": ("str", "str"), "swap_case": ("str", "str"), "run_length": ("str", "str"),
    "count_char": ("str", "int"), "count_vowels": ("str", "int"), "count_words": ("str", "int"),
    "is_palindrome": ("str", "bool"), "extract_numbers": ("str", "ints"),
    "running_sum": ("ints", "ints"), "dedupe": ("ints", "ints"), "rotate": ("ints", "ints"),
    "evens_then_odds": ("ints", "ints"), "clip": ("ints", "ints"), "pairwise_sums": ("ints", "ints"),
    "sum_above": ("ints", "int"), "count_multiples": ("ints", "int"), "max_gap": ("ints", "int"),
    "longest_increasing_run": ("ints", "int"), "index_of_max": ("ints", "int"),
    "digit_sum": ("int", "int"), "reverse_number": ("int", "int"), "is_prime": ("int", "bool"),
}
_FAMILY = {f.name: f for f in FAMILIES}
_SIGNATURE = re.compile(r"^\((\w+): (\w+)\) -> (\w+)$")


def _follows(a: str, b: str) -> bool:
    return a != b and KINDS[a][1] == KINDS[b][0]


def generate(rng: random.Random, shape: str | None) -> Task:
    """One project of `shape` (a random one when None)."""
    shape = shape or rng.choice(SHAPES)
    names = tuple(KINDS)
    if shape == "chain":
        a = rng.choice([n for n in names if any(_follows(n, b) for b in names)])
        b = rng.choice([n for n in names if _follows(a, n)])
        fa, fb = _FAMILY[a], _FAMILY[b]
        arg, kind, _ = _SIGNATURE.match(fa.signature).groups()
        out = _SIGNATURE.match(fb.signature).group(3)
        steps = [_family_step(fa, rng), _family_step(fb, rng)]
        doc = f"Return {b}({a}({arg})): call your {a} from step 1, then your {b} from step 2 on its result."
        inputs = [fa.args(rng, {}) for _ in range(200)]
        steps.append(_derived("pipeline", f"({arg}: {kind}) -> {out}", doc, f"return {b}({a}({arg}))", inputs, steps))
    else:
        fa = _FAMILY[rng.choice(names)]
        steps = [_family_step(fa, rng)]
        doc = f"Return the list of {fa.name}(item) for every item of items, in order: call your {fa.name} from step 1."
        inputs = [[[fa.args(rng, {})[0] for _ in range(rng.randint(0, 4))]] for _ in range(200)]
        steps.append(_derived(f"{fa.name}_each", "(items: list) -> list", doc,
                              f"return [{fa.name}(item) for item in items]", inputs, steps))
    module = "\n".join(s.check.reference for s in steps)
    long = LongTask(goal=GOAL.format(n=len(steps), names=", ".join(s.name for s in steps)), subtasks=tuple(steps),
                    solution=f"```python\n{module}```")
    return Task(id=steps[-1].name, domain="code", prompt=long_prompt(long, "code"), reference=long,
                metadata={"family": shape, "steps": [s.name for s in steps]})


def _family_step(family: Family, rng: random.Random) -> Subtask:
    """A step that writes one synth-v1 task's function; its examples come first among its cases."""
    code = build(family, rng)
    checks = replace(code, cases=tuple(code.metadata["visible"]) + code.cases)
    return Subtask(family.name, STEP.format(prompt=code.prompt), checks)


def _derived(name: str, signature: str, doc: str, body: str, inputs: list[list], earlier: list[Subtask]) -> Subtask:
    """A step whose function calls the earlier steps' functions; the expected outputs come
    from running the earlier references and `body` here (our own code, not model output)."""
    solution = f"def {name}{signature}:\n    {body}\n"
    ns: dict = {}
    exec(compile("\n".join(s.check.reference for s in earlier) + solution, f"<{name}>", "exec"), ns)
    seen, cases = set(), []
    for args in inputs:
        if repr(args) not in seen and len(cases) < N_VISIBLE + N_HIDDEN:
            seen.add(repr(args))
            cases.append({"args": args, "expected": ns[name](*copy.deepcopy(args))})
    examples = "".join(f"\n>>> {name}({', '.join(repr(a) for a in c['args'])})\n{c['expected']!r}"
                       for c in cases[:N_VISIBLE])
    prompt = f"def {name}{signature}:\n" + f'    """{_indent_doc(doc + examples).lstrip()}\n    """\n'
    check = CodeTask(id=name, prompt=prompt, entry_point=name, cases=tuple(cases), reference=solution)
    return Subtask(name, STEP.format(prompt=prompt), check)


def grade(sub: Subtask, prior: tuple[str, ...], reply: str) -> Attempt:
    """Run the reply's code for `sub`, after the earlier steps' code, on the step's tests."""
    check: CodeTask = sub.check
    code = _code(reply, check)
    if not code:
        status = "empty" if not reply.strip() else "missing"
        message = "Your reply is empty." if status == "empty" else f"Your reply does not define {check.entry_point}."
        return Attempt("", Score(0.0, False, {"status": status}), message, f"status: {status}\n{message}")
    from ...sandbox import shared_sandbox

    score = verify_code(check, "\n\n".join([w for w in prior if w] + [code]), shared_sandbox())
    message = feedback(score)
    d = score.details
    log = f"status: {d['status']}; checks passed: {d['checks_passed']} of {d['checks_total']}\n"
    if d["status"] == "load_error" and d.get("failures"):  # the whole traceback: no test data in it
        log += d["failures"][0]["error"].replace("CandidateError: ", "")
    else:
        log += message
    return Attempt(code, score, message, log)


def _code(reply: str, check: CodeTask) -> str:
    """The reply's code for this step: "" when the reply is empty, or defines functions but
    not this one (so checking a reply against later steps costs no sandbox run)."""
    if not reply.strip():
        return ""
    defines = re.search(rf"^\s*def\s+{re.escape(check.entry_point)}\s*\(", reply, re.M)
    if defines or not re.search(r"^\s*def\s", reply, re.M):
        return extract_code(reply, check.prompt, check.entry_point)
    return ""


def feedback(score: Score) -> str:
    """What a graded attempt tells the model: a failing example, or the error that stopped
    the code; failed hidden tests are only counted (with the exceptions they raised)."""
    d = score.details
    if score.passed:
        return "All tests passed."
    if d["status"] == "load_error":
        err = d["failures"][0]["error"] if d.get("failures") else d.get("candidate_stderr", "")
        return "Your code did not run:\n" + "\n".join([line for line in err.splitlines() if line.strip()][-4:])
    if d["status"] != "failed":
        return f"Your code did not finish ({d['status']}: {d.get('sandbox_detail', '')})."
    shown = [f for f in d["failures"] if f.get("case", N_VISIBLE) < N_VISIBLE]
    if shown:
        return "Your code failed an example:\n" + shown[0]["error"].replace("CandidateError: ", "")
    raised = sorted({m.group(1) for f in d["failures"]
                     if (m := re.match(r"(?:CandidateError: )?(\w+(?:Error|Exception))\b", f.get("error", "")))}
                    - {"AssertionError"})
    raising = f" (raising {', '.join(raised)})" if raised else ""
    return (f"Your code passed the examples but failed {d['checks_total'] - d['checks_passed']} of "
            f"{d['checks_total'] - N_VISIBLE} hidden tests{raising}.")


class ProjectEnv(LongEnv):
    """`code/project-v1`: up to `max_attempts` replies per step; the reward is the fraction
    of steps passed. `families` are the two shapes, for a curriculum to weight."""

    concurrent_verify = True

    def __init__(self, max_attempts: int = 3, max_recalls: int = 3) -> None:
        super().__init__(PROJECT_ID, generate, grade, families=SHAPES, max_attempts=max_attempts,
                         max_recalls=max_recalls, work="code")

    def broken_response(self, task: Task) -> str:
        """The reference with its last function changed to give wrong answers."""
        long: LongTask = task.reference
        module = "\n".join(s.check.reference for s in long.subtasks)
        return f"```python\n{module}{_BREAK.replace('{name}', long.subtasks[-1].name)}```"
