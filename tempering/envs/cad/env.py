"""`cad/parts-v1`: write a tcad script that builds a part from a drawing; the CAD tool's
geometry facts (or the script's error) come back; adjust over several turns.

Reward: 1.0 for an exact match (overlap with the target >= 0.999 by volume, volume within
0.01 %, every size and the lowest corner within 0.05 mm, the same number of through-holes and bodies: a fillet 20 %
too small on a 120 mm plate changes the volume by 0.035 %); otherwise 0.8 x the overlap
(intersection over union), so a nearly right part scores above a rough one and both below
the exact one; 0 for a script that fails, or a mesh that is not a closed solid.

Splits: `train` and `test` are parts of the trained families (the prompt's hash decides
which); `unseen` holds out whole families (parts.HELD_OUT: a U-channel, a flanged bushing,
a hex standoff, a block with a pocket and a counterbored hole) that training never draws,
so it measures whether the skill carries over to parts of a kind never seen.

Wording (the option `wording`, `WORDINGS`): `classic` words every drawing of a family with its
one sentence, as it always has; `varied` draws each part's wording from wording.TRAINED_STYLES
in every split; `held_out` trains on those and words test and unseen in wording.HELD_OUT_STYLES
only, so its test split asks for trained families in words training never used.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tempering.envs.cad.parts import COMPOSED, FAMILIES, FRAME, HELD_OUT, draw
from tempering.envs.cad.parts import family as family_of
from tempering.envs.cad.tool import API, Measured, measure
from tempering.envs.cad.wording import HELD_OUT_STYLES, TRAINED_STYLES
from tempering.envs.feedback import FeedbackEnv
from tempering.errors import TaskError
from tempering.types import Message, Score, Task

ENV_ID = "cad/parts-v1"
EXACT_IOU = 0.999
VOLUME_RTOL = 1e-4
SIZE_TOL_MM = 0.05
PARTIAL = 0.8
"""Most a part that is not an exact match can score (times its overlap with the target)."""

INSTRUCTION = (f"Write a Python script with the tcad API that builds this part.\n{FRAME}\n"
               f"tcad (already imported with `from tcad import *`):\n{API}\n"
               "Assign the finished part to `result`. Reply with the script in one ```python block.")
WORDINGS = {  # option value -> the styles (train, test, unseen) draw from
    "classic": (("classic",),) * 3,
    "varied": (TRAINED_STYLES,) * 3,
    "held_out": (TRAINED_STYLES, HELD_OUT_STYLES, HELD_OUT_STYLES),
}
_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S)


def _sandbox():
    from tempering.sandbox import shared_sandbox

    return shared_sandbox()


def extract_script(response: str) -> str | None:
    """The last fenced code block (an unclosed one runs to the end of the reply: a reply cut
    at its token limit still runs, and its error comes back), else the whole reply if it
    assigns `result`; with tcad's names imported at the top."""
    blocks = _BLOCK.findall(response)
    body = blocks[-1] if blocks else (response if re.search(r"^\s*result\s*=", response, re.M) else None)
    if body is None or not body.strip():
        return None
    return "from tcad import *\n" + body


def families_at(max_level: int, held_out: bool = False) -> tuple[str, ...]:
    """The families up to `max_level` that training draws, or (held_out) only the unseen split."""
    return tuple(f for f, (level, _) in FAMILIES.items() if level <= max_level and (f in HELD_OUT) == held_out)


def generate(rng, family: str | None, families: tuple[str, ...] = families_at(5),
             styles: tuple[str, ...] = ("classic",)) -> Task:
    """One part of `family`, or of one drawn from `families`, worded in one of `styles` (the
    rng draws the style after the part, and only when there is a choice: one style leaves
    the stream, and so every classic prompt, as it was)."""
    if family is None:
        family = rng.choice(families)
    seed = f"{family}|{rng.getrandbits(64)}"
    style = styles[0] if len(styles) == 1 else rng.choice(styles)
    spec, script, broken = draw(family, seed, style)
    return Task(id="", domain="cad", prompt=(Message("user", f"Drawing: {spec}\n\n{INSTRUCTION}"),),
                reference={"script": script, "broken": broken, "spec": spec},
                metadata={"family": family, "difficulty": family_of(family)[0], "wording": style})


def _fmt(v: float) -> str:
    return f"{v:,.1f}"


def describe(m: Measured) -> str:
    """The tool's report of a part, as the model reads it."""
    p, t = m.part, m.target
    size = " x ".join(_fmt(v) for v in p["size"])
    tsize = " x ".join(_fmt(v) for v in t["size"])
    return (f"CAD tool: the part is a closed solid.\n"
            f"  volume {_fmt(p['volume'])} mm^3 (target {_fmt(t['volume'])})\n"
            f"  size {size} mm (target {tsize})\n"
            f"  lowest corner at ({', '.join(_fmt(v) for v in p['min'])}) (target "
            f"({', '.join(_fmt(v) for v in t['min'])}))\n"
            f"  through-holes {p['holes']} (target {t['holes']}), bodies {p['bodies']} (target {t['bodies']})\n"
            f"  overlap with the target {m.iou:.3f} (1.000 is an exact match)")


def score_part(m: Measured) -> Score:
    if m.status != "ok":
        text = f"CAD tool error ({m.status}): {m.error}"
        return Score(0.0, False, {"status": m.status, "error": m.error, "feedback": text})
    p, t = m.part, m.target
    size_ok = all(abs(a - b) <= SIZE_TOL_MM for a, b in zip(p["size"] + p["min"], t["size"] + t["min"]))
    volume_ok = abs(p["volume"] - t["volume"]) <= VOLUME_RTOL * t["volume"]
    exact = (m.iou >= EXACT_IOU and volume_ok and size_ok and p["holes"] == t["holes"]
             and p["bodies"] == t["bodies"])
    value = 1.0 if exact else PARTIAL * max(0.0, min(1.0, m.iou))
    feedback = describe(m) + ("" if exact else "\nThe part does not match the drawing yet: fix the script.")
    return Score(value, exact, {"status": "match" if exact else "mismatch", "iou": m.iou, "part": p,
                                "target": t, "feedback": feedback})


def load_parts(path: str) -> dict[str, list[Task]]:
    """Parts of your own from a JSONL file, one per line: {"drawing": text, "script": tcad
    script that builds it, optional "id", "split" (train | test, default test) and
    "difficulty"}. Tasks by split; a bad line is a TaskError naming it and the fix."""
    fix = 'each line must be a JSON object like {"drawing": "A plate ...", "script": "result = box(40, 30, 5)"}'
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise TaskError(f"{ENV_ID}: cannot read tasks_file {path}: {e.strerror}") from None
    out: dict[str, list[Task]] = {"train": [], "test": []}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise TaskError(f"{path} line {n}: not JSON ({e}); {fix}") from None
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) and row[k].strip() for k in ("drawing", "script")):
            raise TaskError(f"{path} line {n}: needs non-empty string fields drawing and script; {fix}")
        split = row.get("split", "test")
        if split not in out:
            raise TaskError(f"{path} line {n}: split must be train or test, got {split!r}")
        try:
            compile(row["script"], f"{path} line {n}", "exec")
        except SyntaxError as e:
            raise TaskError(f"{path} line {n}: the script is not valid Python ({e.msg}, its line {e.lineno})") from None
        out[split].append(Task(id=f"{ENV_ID}/{split}/{row.get('id', n)}", domain="cad",
                               prompt=(Message("user", f"Drawing: {row['drawing']}\n\n{INSTRUCTION}"),),
                               reference={"script": row["script"], "spec": row["drawing"],
                                          "broken": row["script"] + "\nresult = result.at(1, 0, 0)"},
                               metadata={"family": "file", "difficulty": int(row.get("difficulty", 3))}))
    if not any(out.values()):
        raise TaskError(f"{ENV_ID}: tasks_file {path} holds no parts; {fix}")
    return out


class PartsEnv(FeedbackEnv):
    """`cad/parts-v1`. Options: difficulty (highest family level drawn, 1-5, in every split),
    max_turns (script attempts, default 3), turn_cost (reward taken off per extra attempt),
    tasks_file (a JSONL of parts of your own instead of the generated families: `load_parts`),
    composed (the share, 0 to 1, of train and test parts drawn as parts composed of 2-3
    features of the trained moves, at difficulty >= 3: `parts.COMPOSED`; 0 by default, so
    earlier measurements still hold), wording (classic, varied or held_out: `WORDINGS`;
    classic by default, today's prompts bit for bit).
    The unseen split draws the HELD_OUT families up to the difficulty (there are none at
    difficulty 1, so that env has only train and test)."""

    concurrent_verify = True

    def __init__(self, difficulty: int = 5, max_turns: int = 3, turn_cost: float = 0.0,
                 tasks_file: str | None = None, composed: float = 0.0, wording: str = "classic") -> None:
        if not isinstance(difficulty, int) or not 1 <= difficulty <= 5:
            raise TaskError(f"{ENV_ID}: difficulty must be 1 to 5, got {difficulty!r}")
        if isinstance(composed, bool) or not isinstance(composed, (int, float)) or not 0 <= composed <= 1:
            raise TaskError(f"{ENV_ID}: composed is the share of composed parts, a number from 0 to 1; "
                            f"got {composed!r}")
        if wording not in WORDINGS:
            raise TaskError(f"{ENV_ID}: wording must be one of {', '.join(WORDINGS)}, got {wording!r}")
        if tasks_file and wording != "classic":
            raise TaskError(f"{ENV_ID}: wording={wording} words the generated parts; a tasks_file's drawings "
                            "are its own: drop one of the two options")
        shapes, unseen = families_at(difficulty), families_at(difficulty, held_out=True)
        share = composed if difficulty >= 3 else 0.0
        train_styles, test_styles, unseen_styles = WORDINGS[wording]
        self.wording = wording

        def draw_part(rng, fam, styles=train_styles):  # the rng is only touched for the share when there is one
            if fam is None and share > 0 and rng.random() < share:
                fam = COMPOSED
            return generate(rng, fam, shapes, styles)

        families = shapes + ((COMPOSED,) if share > 0 else ())
        super().__init__(ENV_ID, draw_part, self._verify,
                         self._reference, families, max_turns, turn_cost,
                         unseen=(lambda rng, fam: generate(rng, fam, unseen, unseen_styles)) if unseen else None,
                         unseen_families=unseen)
        self._draw_test = lambda rng, fam: draw_part(rng, fam, test_styles)
        self._file = load_parts(tasks_file) if tasks_file else None
        if self._file is not None:
            self.families = self.unseen_families = ()
            self.splits = tuple(s for s, tasks in self._file.items() if tasks)
            self.size = lambda split: len(self._file.get(split, ()))

    def _generator(self, split: str):
        """test draws its own styles (with wording: held_out, ones training never draws)."""
        return self._draw_test if split == "test" else self._generate

    def task(self, split: str, index: int, family: str | None = None) -> Task:
        if self._file is None:
            return super().task(split, index, family)
        tasks = self._file.get(split, [])
        if not tasks:
            raise TaskError(f"{ENV_ID}: the tasks_file has no {split!r} parts")
        return tasks[index % len(tasks)]

    def tasks(self, split: str, n: int, start: int = 0) -> list[Task]:
        if self._file is None:
            return super().tasks(split, n, start)
        return self._file.get(split, [])[start : start + n]

    @staticmethod
    def _verify(task: Task, response: str) -> Score:
        script = extract_script(response)
        if script is None:
            text = "No script found: reply with the tcad script in one ```python block that assigns `result`."
            return Score(0.0, False, {"status": "no_script", "feedback": text})
        return score_part(measure(script, "from tcad import *\n" + task.reference["script"], _sandbox()))

    @staticmethod
    def _reference(task: Task) -> str:
        return f"```python\n{task.reference['script']}\n```"

    def broken_response(self, task: Task) -> str:
        return f"```python\n{task.reference['broken']}\n```"
