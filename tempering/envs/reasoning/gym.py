"""Every reasoning-gym generator as a single-turn env `reasoning/<name>-v1`, scored by its own `score_answer`.

A task is item 0 of the generator's dataset built with a seed drawn from the env's rng, so it is
deterministic given that rng. The prompt is the generator's question plus an instruction to end
with `Answer: ...`; the verifier takes the text after the last `Answer:` (else the last non-empty
line) and hands it, with the stored entry, to the generator's `score_answer`.

Covered: the generators whose reference answer scores 1.0 under their own scorer, whose scorer
rejects junk answers, that build an item in under 2 s on average on a CPU core, and that give the
same item for the same seed in every process. The rest are in EXCLUDED with the reason measured
(reasoning-gym 0.1.25). Not covered: scorers that are lenient in subtler ways than the probe tried.

reasoning_gym takes seconds to import, so it is imported only inside functions.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import io
import random
import re
from typing import Any, Callable

from tempering.envs.base import SingleTurnEnv
from tempering.types import Message, Score, Task

VERSION = "v1"
INSTRUCTION = "\n\nGive your final answer on the last line, after 'Answer:'."

EXCLUDED: dict[str, str] = {
    "composite": "needs a config naming its sub-datasets; default construction raises",
    "boxnet": "answer is None (many valid plans; no reference to prove the scorer)",
    "graph_color": "answer is None (many valid colourings; no reference to prove the scorer)",
    "propositional_logic": "answer is None (many valid conclusions; no reference to prove the scorer)",
    "rubiks_cube": "answer is None (many valid move sequences; no reference to prove the scorer)",
    "rush_hour": "answer is None (many valid move sequences; no reference to prove the scorer)",
    "isomorphic_strings": "item for a seed depends on PYTHONHASHSEED (iterates a set), so tasks differ between runs",
    "polynomial_multiplication": "item for a seed depends on PYTHONHASHSEED, so tasks differ between runs",
    "ransom_note": "item for a seed depends on PYTHONHASHSEED, so tasks differ between runs",
    "word_ladder": "item for a seed depends on PYTHONHASHSEED (word sets), so tasks differ between runs",
    "list_functions": "draws from the global `random` module, so the same seed gives different items",
    "game_of_life_halting": "scorer passes any non-empty answer (it compares bool(str)); 'Answer: x' scores 1.0",
    "coin_flip": "scorer's prefix credit passes 'Answer: 0' for every probability below 1 (10/10 tasks probed)",
}
"""Generators left out of the registry, with the reason measured by probing each one."""

# These constructors load data files (0.15-0.8 s each) but never read the seed, so a reseeded
# copy of one cached instance yields exactly the item a fresh build would (checked per seed).
_REUSE_INSTANCE = frozenset({"arc_agi", "codeio", "figlet_font", "group_anagrams"})

_MARKER = re.compile(r"answer\**\s*:\**", re.IGNORECASE)
_FENCE = re.compile(r"```[\w+-]*\n?(.*?)\n?```", re.DOTALL)
_TAGS = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


@functools.cache
def dataset_names() -> tuple[str, ...]:
    """Every dataset reasoning-gym registers, excluded ones included, sorted."""
    import reasoning_gym  # noqa: F401  (importing it registers every dataset)
    from reasoning_gym.factory import DATASETS

    return tuple(sorted(DATASETS))


def reasoning_gym_envs() -> dict[str, Callable[[], SingleTurnEnv]]:
    """Env id -> factory for every generator not in EXCLUDED."""
    return {f"reasoning/{name}-{VERSION}": functools.partial(make_gym_env, name)
            for name in dataset_names() if name not in EXCLUDED}


def make_gym_env(name: str) -> SingleTurnEnv:
    """The env for one reasoning-gym dataset."""
    return SingleTurnEnv(f"reasoning/{name}-{VERSION}", functools.partial(_generate, name), verify,
                         reference_response)


@functools.cache
def _dataset(name: str) -> Any:
    """One default-config instance per dataset: the scorer, and the template for _REUSE_INSTANCE."""
    import reasoning_gym

    with contextlib.redirect_stdout(io.StringIO()):
        return reasoning_gym.create_dataset(name, seed=0, size=1)


def _entry(name: str, seed: int) -> dict[str, Any]:
    """Item 0 of the dataset seeded with `seed`: what create_dataset(name, seed=seed, size=1)[0] gives."""
    import reasoning_gym

    # Some generators (bf's compiler, codeio) print to stdout; keep that out of the caller's output.
    # (redirect_stdout swaps sys.stdout process-wide: generate tasks from one thread at a time.)
    with contextlib.redirect_stdout(io.StringIO()):
        if name in _REUSE_INSTANCE:
            dataset = copy.copy(_dataset(name))
            dataset.seed = seed
            dataset.config = dataclasses.replace(dataset.config, seed=seed)
        else:
            dataset = reasoning_gym.create_dataset(name, seed=seed, size=1)
        return dataset[0]


def _generate(name: str, rng: random.Random, family: str | None) -> Task:
    seed = rng.randrange(2**31)
    entry = _entry(name, seed)
    return Task(id="", domain="reasoning", prompt=(Message("user", entry["question"] + INSTRUCTION),),
                reference=entry["answer"], metadata={"dataset": name, "seed": seed, "entry": entry})


def extract_answer(response: str) -> str:
    """The final answer in a response: text after the last 'Answer:', else its last non-empty line.

    >>> extract_answer("so 2+2 is 4.\\nAnswer: `4`")
    '4'
    """
    markers = list(_MARKER.finditer(response))
    if markers:
        text = response[markers[-1].end():]
    else:
        lines = [line for line in response.splitlines() if line.strip()]
        text = lines[-1] if lines else ""
    return _unwrap(text)


def _unwrap(text: str) -> str:
    """Strip what models wrap answers in: whitespace, <answer> tags, code fences, backticks."""
    text = text.strip()
    if match := _TAGS.fullmatch(text):
        text = match.group(1).strip()
    if match := _FENCE.fullmatch(text):
        text = match.group(1)
    return text.strip().strip("`").strip()


def verify(task: Task, response: str) -> Score:
    """Score a response with the task's own generator's `score_answer`; a scorer crash scores 0."""
    extracted = extract_answer(response)
    if not extracted:  # some scorers give 0.01-0.05 for any answer, even none: no reward for silence
        return Score(value=0.0, passed=False, details={"extracted": extracted, "error": "no answer found"})
    try:
        value = float(_dataset(task.metadata["dataset"]).score_answer(extracted, task.metadata["entry"]))
    except Exception as exc:  # a scorer bug on odd input must not kill a training step
        return Score(value=0.0, passed=False, details={"extracted": extracted, "error": f"{type(exc).__name__}: {exc}"})
    return Score(value=value, passed=value >= 1.0 - 1e-9, details={"extracted": extracted})


def reference_response(task: Task) -> str:
    """What a perfect model would write: the gold answer after 'Answer:'."""
    return f"Answer: {task.reference}"
