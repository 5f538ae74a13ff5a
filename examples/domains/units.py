"""units/convert-v1: unit conversions, a domain added from outside the package (docs/domains.md).

    temper envs check units/convert-v1 --import examples.domains.units
    # in a config:  env: {id: units/convert-v1, imports: [examples.domains.units]}
"""

from __future__ import annotations

import random
import re

from tempering.envs import register
from tempering.envs.feedback import FeedbackEnv
from tempering.types import Message, Score, Task

# family -> (level, from unit, to unit, factor, offset): value_to = value_from * factor + offset
FAMILIES = {
    "km_to_m": (1, "km", "m", 1000.0, 0.0),
    "kg_to_g": (1, "kg", "g", 1000.0, 0.0),
    "h_to_s": (2, "hours", "seconds", 3600.0, 0.0),
    "mi_to_km": (2, "miles", "km", 1.609344, 0.0),
    "kmh_to_ms": (3, "km/h", "m/s", 1 / 3.6, 0.0),
    "c_to_f": (3, "degrees Celsius", "degrees Fahrenheit", 1.8, 32.0),
    "f_to_c": (4, "degrees Fahrenheit", "degrees Celsius", 5 / 9, -160 / 9),
    "psi_to_kpa": (4, "psi", "kPa", 6.894757, 0.0),
}
RTOL = 1e-3  # answers within 0.1 % count
_ANSWER = re.compile(r"Answer:\s*(-?[\d,]*\.?\d+(?:[eE][-+]?\d+)?)")


def generate(rng: random.Random, family: str | None, difficulty: int = 4) -> Task:
    family = family or rng.choice([f for f, spec in FAMILIES.items() if spec[0] <= difficulty])
    level, src, dst, factor, offset = FAMILIES[family]
    value = round(rng.uniform(1, 500), rng.choice((0, 1, 2)))
    question = (f"Convert {value:g} {src} to {dst}. Give the result to at least four significant figures "
                f"and end with `Answer: <number>`.")
    return Task(id="", domain="units", prompt=(Message("user", question),), reference=value * factor + offset,
                metadata={"family": family, "difficulty": level, "unit": dst})


def verify(task: Task, response: str) -> Score:
    found = _ANSWER.findall(response)
    if not found:
        return Score(0.0, False, {"status": "no_answer", "feedback": "End your reply with `Answer: <number>`."})
    got = float(found[-1].replace(",", ""))
    ok = abs(got - task.reference) <= RTOL * max(1.0, abs(task.reference))
    text = f"{got:g} {task.metadata['unit']} is not right: check the conversion factor and recompute."
    return Score(float(ok), ok, {"status": "correct" if ok else "wrong", "answer": got, "feedback": text})


class UnitsEnv(FeedbackEnv):
    def __init__(self, difficulty: int = 4, max_turns: int = 2) -> None:
        families = tuple(f for f, spec in FAMILIES.items() if spec[0] <= difficulty)
        super().__init__("units/convert-v1", lambda rng, fam: generate(rng, fam, difficulty), verify,
                         lambda task: f"Answer: {task.reference:.6f}", families, max_turns)

    def broken_response(self, task: Task) -> str:
        return f"Answer: {task.reference * 1.01 + 1:.6f}"


register("units/convert-v1", UnitsEnv)
