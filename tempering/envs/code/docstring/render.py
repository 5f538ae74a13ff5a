"""One `code/docstring-v1` task from a family and a seeded rng, written in HumanEval's shape.

A task draws, besides the family's parameters: the function's name and naming style
(snake_case, camelCase, or one lower-case word, as HumanEval's `iscube`), the argument
names, how the hints are spelled (`List[int]` with its `from typing` import, `list[int]`, or
none), one of the family's phrasings, a docstring layout, and 2 or 3 examples. The hidden
tests are ten more inputs; every expected value comes from the reference body, our own code,
executed in this process.
"""

from __future__ import annotations

import copy
import random
import re
import textwrap
from typing import Any

from ..verify import CodeTask
from .family import NUMBER_WORDS, RESERVED, Family

N_HIDDEN = 10
STYLES = (("snake", 0.7), ("camel", 0.2), ("flat", 0.1))
HINTS = (("typing", 0.5), ("builtin", 0.35), ("bare", 0.15))
LAYOUTS = (("inline", 0.3), ("block", 0.3), ("examples", 0.25), ("equals", 0.15))
"""inline: `\"\"\" Text` then doctests, as HumanEval/0; block: text on the line after the quotes;
examples: an "Examples:" heading; equals: "For example:" then `f(x) == y` lines, not doctests."""


def _pick(rng: random.Random, weighted) -> str:
    names, weights = zip(*weighted)
    return rng.choices(names, weights)[0]


def function_name(snake: str, style: str) -> str:
    parts = snake.split("_")
    if style == "camel":
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    return "".join(parts) if style == "flat" else snake


def hint(typing_name: str, style: str) -> str:
    """A type as the hint style spells it: `List[int]` stays for typing; builtin lowers it."""
    if style == "builtin":
        return re.sub(r"\b(List|Dict|Tuple|Set)\[", lambda m: m.group(1).lower() + "[", typing_name)
    return typing_name


def signature(fn: str, names: list[str], family: Family, style: str) -> tuple[str, str]:
    """(the imports the hints need, the `def` line)."""
    if style == "bare":
        return "", f"def {fn}({', '.join(names)}):"
    types = [t for _, t in family.args] + [family.returns]
    args = ", ".join(f"{n}: {hint(t, style)}" for n, (_, t) in zip(names, family.args))
    line = f"def {fn}({args}) -> {hint(family.returns, style)}:"
    used = sorted({m for t in types for m in re.findall(r"\b(List|Dict|Tuple|Set)\[", t)}) if style == "typing" else []
    return (f"from typing import {', '.join(used)}\n\n\n" if used else ""), line


def _fields(fn: str, names: list[str], params: dict) -> dict:
    bad = set(params) & set(RESERVED)
    if bad:
        raise ValueError(f"family parameters {sorted(bad)} clash with the renderer's own fields")
    words = {f"{k}_w": NUMBER_WORDS[v] for k, v in params.items()
             if type(v) is int and 0 <= v < len(NUMBER_WORDS)}
    return {**params, **words, **dict(zip("abc", names)), "fn": fn}


def argument_names(family: Family, fn: str, style: int) -> list[str]:
    """The arguments' names in naming style `style`: the style-th choice of each, so a pair
    stays a pair (`first, second`; `a, b`), skipping a name taken or equal to the function's."""
    names: list[str] = []
    for choices, _ in family.args:
        free = [n for n in choices if n not in names and n != fn]
        names.append(free[style % len(free)])
    return names


def reference_source(family: Family, fn: str, names: list[str], params: dict) -> str:
    """The reference as a module defining `fn` (no docstring, no hints)."""
    return f"def {fn}({', '.join(names)}):\n    " + family.body.format(**_fields(fn, names, params)) + "\n"


def compile_reference(source: str, fn: str):
    ns: dict[str, Any] = {}
    exec(compile(source, f"<{fn}>", "exec"), ns)  # our own reference code, never model output
    return ns[fn]


def draw_cases(family: Family, params: dict, ref, rng: random.Random, want: int, seen: set[str]) -> list[dict]:
    """Up to `want` cases on inputs not in `seen` (which grows), expected values from `ref`."""
    cases = []
    for _ in range(30 * want):
        args = family.inputs(rng, params)
        if repr(args) in seen:
            continue
        seen.add(repr(args))
        cases.append({"args": args, "expected": ref(*copy.deepcopy(args))})
        if len(cases) == want:
            break
    return cases


def _empty(v) -> bool:
    return isinstance(v, (str, list, dict, tuple)) and len(v) == 0


def choose_examples(cases: list[dict], n: int) -> list[dict]:
    """The docstring's examples: inputs that are not empty, with answers that differ, where
    the drawn cases allow (an example list of three empty inputs teaches nothing)."""
    chosen, answers = [], set()
    for full in (True, False):
        for c in cases:
            if len(chosen) == n or c in chosen:
                continue
            if full and (any(_empty(a) for a in c["args"]) or repr(c["expected"]) in answers):
                continue
            chosen.append(c)
            answers.add(repr(c["expected"]))
    return chosen


def docstring(text: str, fn: str, examples: list[dict], layout: str) -> str:
    """The docstring, indented for the function body, closing quotes included."""
    lines = textwrap.wrap(text, 76)
    calls = [f"{fn}({', '.join(repr(a) for a in c['args'])})" for c in examples]
    if layout == "equals":
        body = lines + ["For example:"] + [f"{call} == {c['expected']!r}" for call, c in zip(calls, examples)]
    else:
        doctests = [line for call, c in zip(calls, examples) for line in (f">>> {call}", repr(c["expected"]))]
        body = lines + (["", "Examples:"] if layout == "examples" else [""] if layout == "block" else []) + doctests
    first = f'""" {body[0]}' if layout == "inline" else ('"""\n    ' + body[0] if layout == "block" else f'"""{body[0]}')
    return "    " + first + "".join("\n" + (f"    {line}" if line else "") for line in body[1:]) + '\n    """\n'


def build(family: Family, rng: random.Random) -> CodeTask:
    """One task of `family`: the prompt (imports, signature, docstring with 2-3 examples),
    N_HIDDEN hidden cases, and the reference (the prompt followed by the body)."""
    params = family.params(rng)
    fn = function_name(rng.choice(family.fns), _pick(rng, STYLES))
    names = argument_names(family, fn, rng.randrange(max(len(c) for c, _ in family.args)))
    source = reference_source(family, fn, names, params)
    ref = compile_reference(source, fn)
    seen: set[str] = set()
    drawn = draw_cases(family, params, ref, rng, 8, seen)
    visible = choose_examples(drawn, rng.choice((2, 3)))
    seen = {repr(c["args"]) for c in visible}
    hidden = draw_cases(family, params, ref, rng, N_HIDDEN, seen)
    imports, line = signature(fn, names, family, _pick(rng, HINTS))
    text = rng.choice(family.docs).format(**_fields(fn, names, params))
    prompt = f"{imports}{line}\n{docstring(text, fn, visible, _pick(rng, LAYOUTS))}"
    body = source.split("\n", 1)[1]
    return CodeTask(id=fn, prompt=prompt, entry_point=fn, cases=tuple(hidden), reference=prompt + body,
                    metadata={"family": family.name, "visible": visible, "params": params, "names": names})
