"""math/arith-v1: procedurally generated arithmetic word problems of graded difficulty.

Twelve families run from one-step addition of small numbers (level 1) to three-step problems
(level 5); every operand stays at or below 100. The test split draws families uniformly, so
held-out accuracy averages over all levels; training may weight them (see the curriculum). The verifier is strict about the answer (math-verify
equivalence with the gold number) and lenient about where it is written: `\\boxed{}`, then
`Answer:`, then the last number in the reply; `details["format_ok"]` says whether the reply
used the requested format.
"""

from __future__ import annotations

import random

from tempering.envs.base import SingleTurnEnv
from tempering.envs.math.verify import extract_answer, numbers_equal
from tempering.types import Message, Score, Task

INSTRUCTION = "Solve the problem step by step. End your reply with the final answer on its own line as `Answer: <number>`."

NAMES = ["Ava", "Ben", "Chloe", "Dev", "Emma", "Femi", "Grace", "Hugo", "Iris", "Jon", "Kai", "Lena", "Maya", "Noah", "Omar", "Pia"]
ITEMS = ["apples", "marbles", "stickers", "books", "pencils", "cookies", "stamps", "shells", "cards", "coins"]


def _add_small(r: random.Random) -> tuple[str, int]:
    n, it, a, b = r.choice(NAMES), r.choice(ITEMS), r.randint(2, 12), r.randint(2, 9)
    return f"{n} has {a} {it} and gets {b} more. How many {it} does {n} have now?", a + b


def _sub_small(r: random.Random) -> tuple[str, int]:
    n, it, a = r.choice(NAMES), r.choice(ITEMS), r.randint(5, 20)
    b = r.randint(1, a - 1)
    return f"{n} has {a} {it} and eats {b} of them. How many {it} are left?" if it == "cookies" else \
        f"{n} has {a} {it} and loses {b} of them. How many {it} are left?", a - b


def _add(r: random.Random) -> tuple[str, int]:
    n, it, a, b = r.choice(NAMES), r.choice(ITEMS), r.randint(2, 60), r.randint(2, 40)
    return f"{n} has {a} {it}. {n} gets {b} more {it}. How many {it} does {n} have now?", a + b


def _sub(r: random.Random) -> tuple[str, int]:
    n, it, a = r.choice(NAMES), r.choice(ITEMS), r.randint(20, 100)
    b = r.randint(2, a - 1)
    return f"{n} had {a} {it} and gave away {b} of them. How many {it} does {n} have left?", a - b


def _mul(r: random.Random) -> tuple[str, int]:
    it, a, b = r.choice(ITEMS), r.randint(2, 12), r.randint(2, 12)
    return f"A box holds {a} {it}. How many {it} are in {b} boxes?", a * b


def _div(r: random.Random) -> tuple[str, int]:
    n, it, each, k = r.choice(NAMES), r.choice(ITEMS), r.randint(2, 12), r.randint(2, 9)
    return f"{n} shares {each * k} {it} equally among {k} friends. How many {it} does each friend get?", each


def _add_sub(r: random.Random) -> tuple[str, int]:
    n, it, a, b = r.choice(NAMES), r.choice(ITEMS), r.randint(10, 60), r.randint(2, 40)
    c = r.randint(2, a + b - 1)
    return f"{n} has {a} {it}, buys {b} more, then loses {c}. How many {it} does {n} have now?", a + b - c


def _mul_add(r: random.Random) -> tuple[str, int]:
    n, it, a, b, c = r.choice(NAMES), r.choice(ITEMS), r.randint(2, 12), r.randint(2, 9), r.randint(2, 30)
    return f"{n} buys {b} packs of {it} with {a} in each pack, and already had {c}. How many {it} does {n} have in total?", a * b + c


def _mul_sub(r: random.Random) -> tuple[str, int]:
    n, it, a, b = r.choice(NAMES), r.choice(ITEMS), r.randint(3, 12), r.randint(3, 9)
    c = r.randint(1, a * b - 1)
    return f"{n} has {b} bags with {a} {it} in each bag and gives away {c} {it}. How many {it} are left?", a * b - c


def _div_add(r: random.Random) -> tuple[str, int]:
    n, it, each, k, c = r.choice(NAMES), r.choice(ITEMS), r.randint(2, 10), r.randint(2, 9), r.randint(2, 40)
    return f"{n} splits {each * k} {it} into {k} equal piles, then adds {c} {it} to one pile. How many {it} are in that pile?", each + c


def _two_mul(r: random.Random) -> tuple[str, int]:
    it, a, b, c, d = r.choice(ITEMS), r.randint(2, 9), r.randint(2, 9), r.randint(2, 9), r.randint(2, 9)
    return f"One shelf has {a} rows of {b} {it}; another has {c} rows of {d} {it}. How many {it} are on both shelves?", a * b + c * d


def _three_step(r: random.Random) -> tuple[str, int]:
    n, it, a, b, c = r.choice(NAMES), r.choice(ITEMS), r.randint(2, 10), r.randint(2, 9), r.randint(2, 20)
    d = r.randint(1, a * b + c - 1)
    return (f"{n} buys {b} boxes of {it} with {a} in each box, finds {c} more, then gives {d} to a friend. "
            f"How many {it} does {n} have now?"), a * b + c - d


FAMILIES = {  # name -> (difficulty level, generator)
    "add_small": (1, _add_small), "sub_small": (1, _sub_small),
    "add": (2, _add), "sub": (2, _sub), "mul": (2, _mul),
    "div": (3, _div), "add_sub": (3, _add_sub),
    "mul_add": (4, _mul_add), "mul_sub": (4, _mul_sub), "div_add": (4, _div_add),
    "two_mul": (5, _two_mul), "three_step": (5, _three_step),
}


def generate(rng: random.Random, family: str | None = None, max_level: int = 5) -> Task:
    if family is None:
        family = rng.choice([f for f, (level, _) in FAMILIES.items() if level <= max_level])
    level, make = FAMILIES[family]
    question, answer = make(rng)
    return Task(id="", domain="math", prompt=(Message("user", f"{question}\n{INSTRUCTION}"),), reference=str(answer),
                metadata={"family": family, "difficulty": level})


def verify(task: Task, response: str) -> Score:
    """1.0 when the reply's final answer equals the gold number, else 0.0.

    >>> t = generate(random.Random(0), "add")
    >>> verify(t, f"Answer: {t.reference}").passed
    True
    """
    answer, format_ok = extract_answer(response)
    passed = answer is not None and numbers_equal(task.reference, answer)
    return Score(value=1.0 if passed else 0.0, passed=passed, details={"extracted": answer, "format_ok": format_ok})


def reference_response(task: Task) -> str:
    return f"Answer: {task.reference}"


def make_arith_env(max_level: int = 5) -> SingleTurnEnv:
    families = tuple(f for f, (level, _) in FAMILIES.items() if level <= max_level)
    return SingleTurnEnv("math/arith-v1", lambda rng, fam: generate(rng, fam, max_level), verify, reference_response, families)
