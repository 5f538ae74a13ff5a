"""cad/parts-v1's wordings: the classic prompts are the ones generated before the styles
existed; every style states every fact of a part and nothing else, so the reference builds
the part in every style; `wording: held_out` keeps its held-out styles out of training."""

from __future__ import annotations

import hashlib
import random
import string
from concurrent.futures import ThreadPoolExecutor

import pytest

from tempering import envs
from tempering.envs.cad.env import PARTIAL, WORDINGS, PartsEnv, generate
from tempering.envs.cad.parts import COMPOSED, FAMILIES, draw, family
from tempering.envs.cad.wording import HELD_OUT_STYLES, STYLES, TEMPLATES, TRAINED_STYLES, Words, render
from tempering.errors import TaskError

ALL = (*FAMILIES, COMPOSED)


def _prompts():
    """268 prompts of the default env (and composed: 0.5) in a fixed order."""
    env = PartsEnv()
    yield from (env.task(split, i).prompt[0].content for split in ("train", "test", "unseen") for i in range(40))
    yield from (env.task(split, i, f).prompt[0].content for f in env.families for split in ("train", "test")
                for i in range(3))
    yield from (env.task("unseen", i, f).prompt[0].content for f in env.unseen_families for i in range(3))
    mixed = PartsEnv(difficulty=3, composed=0.5)
    for split in ("train", "test"):
        yield from (mixed.task(split, i).prompt[0].content for i in range(30))
        yield from (mixed.task(split, i, COMPOSED).prompt[0].content for i in range(5))


BEFORE = {  # drawings generated before the wording styles existed
    ("train", 0, "flange"): "A round flange: a disc of diameter 120 mm and thickness 12 mm with a central through bore "
    "of diameter 46 mm, and 6 through holes of diameter 6 mm evenly spaced on a bolt circle of diameter 79 mm, the "
    "first at 30 degrees from the +x axis (counter-clockwise).",
    ("test", 1, "corner_holes"): "A plate 40 x 70 x 8 mm (x, y, z) with four through holes of diameter 6 mm, one near "
    "each corner, each hole's centre 10 mm in from both adjacent edges.",
    ("unseen", 0, "pocket_block"): "A block 70 x 30 x 30 mm (x, y, z). Into its top face: a rectangular pocket 15 x "
    "10 mm and 23 mm deep, centred in x and y. At x = 23.25, y = 0: a through hole of diameter 5 mm, counterbored "
    "from the top to diameter 10 mm and 5 mm deep.",
}


def test_the_default_prompts_are_the_ones_generated_before_the_styles():
    prompts = list(_prompts())
    digest = hashlib.sha256("\n\x00\n".join(prompts).encode()).hexdigest()
    assert (len(prompts), digest) == (268, "68757a57252b9218217ab0df120dc29e803437f5c6ea107e3dbe743019f7341e")
    env = PartsEnv()
    for (split, i, fam), text in BEFORE.items():
        assert env.task(split, i, fam).prompt[0].content.startswith(f"Drawing: {text}\n\n")
    assert PartsEnv(wording="classic").task("test", 3).prompt == env.task("test", 3).prompt
    assert {env.task("train", i).metadata["wording"] for i in range(30)} == {"classic"}


def _facts(template: str) -> set[str]:
    """The facts a template states: its fields, a restated `a__b` counted as `a`."""
    return {name.split("__")[0] for _, name, _, _ in string.Formatter().parse(template) if name}


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_style_states_every_fact_of_the_classic_sentence_and_no_other(name):
    templates = TEMPLATES[name]
    assert len(templates) == len(STYLES) and len(set(templates)) == len(STYLES)  # five wordings, all different
    for style, template in zip(STYLES, templates):
        assert _facts(template) == _facts(templates[0]), (name, style)


RESTATED = {  # field -> what it must equal, from the values it restates (the reference script's geometry)
    "d_in__wall": lambda v: (v["d_out"] - v["d_in"]) / 2,
    "x__half": lambda v: v["x"] / 2, "y__half": lambda v: v["y"] / 2,
    "e__cx": lambda v: v["x"] / 2 - v["e"], "e__cy": lambda v: v["y"] / 2 - v["e"],
    "e__pitch_x": lambda v: v["x"] - 2 * v["e"], "e__pitch_y": lambda v: v["y"] - 2 * v["e"],
    "h2__total": lambda v: v["h1"] + v["h2"],
    "length__centres": lambda v: v["length"] - v["w"],
    "bc__radius": lambda v: v["bc"] / 2,
    "hx__from_wall": lambda v: v["hx"] + v["x"] / 2, "hx__from_end": lambda v: v["x"] / 2 - v["hx"],
    "y__inside": lambda v: v["y"] - 2 * v["t"],
    "h__sleeve": lambda v: v["h"] - v["tf"],
    "base__caps": lambda v: v["base"].upper(),
    "x__from_end": lambda v: v["x"] + v["base_x"] / 2,  # a composed part's feature, from its base's -x end
}


def _words(fam: str, seed: str) -> list[Words]:
    words, _ = family(fam)[1](random.Random(seed))
    return [words, *words.values.get("features", ())]


def test_restated_values_agree_with_what_they_restate():
    seen = set()
    for fam in ALL:
        for i in range(40):
            base, *features = _words(fam, f"{fam}|{i}")
            for words in (base, *features):
                v = {**words.values, "base_x": base.values.get("x")}
                for field in (f for f in v if "__" in f):
                    assert v[field] == RESTATED[field](v), (fam, i, field)
                    seen.add(field)
    assert seen == set(RESTATED)


def test_a_style_changes_the_words_only():
    for fam in ALL:
        for i in range(20):
            seed = f"{fam}|{i}"
            classic = draw(fam, seed)
            texts = {classic[0]}
            for style in STYLES[1:]:
                spec, script, broken = draw(fam, seed, style)
                assert (script, broken) == classic[1:], (fam, style)
                texts.add(spec)
                assert "\n\n" not in spec and "{" not in spec  # one paragraph, every field filled
            assert len(texts) == len(STYLES)
    with pytest.raises(ValueError, match="unknown wording style 'prose'"):
        render(Words("plate", dict(x=1, y=2, t=3)), "prose")


def test_the_reference_builds_the_part_in_every_style(shared_sandbox):
    """Each family once in a sandbox, its style turning over the four new ones (the scripts are
    the same in every style: test_a_style_changes_the_words_only)."""
    tasks = [generate(random.Random(f"styles|{fam}"), fam, styles=(STYLES[1 + i % 4],)) for i, fam in enumerate(ALL)]
    assert {t.metadata["wording"] for t in tasks} == set(STYLES[1:])
    env = PartsEnv(wording="varied")
    with ThreadPoolExecutor(4) as pool:
        right = list(pool.map(lambda t: env.verify(t, env.reference_response(t)), tasks))
        wrong = list(pool.map(lambda t: env.verify(t, env.broken_response(t)), tasks))
    assert [t.metadata["family"] for t, s in zip(tasks, right) if not s.passed] == []
    assert [t.metadata["family"] for t, s in zip(tasks, wrong) if s.passed or s.value >= PARTIAL] == []


def test_check_env_with_held_out_wording(shared_sandbox):
    report = envs.check_env("cad/parts-v1", n=2, options={"wording": "held_out", "difficulty": 3})
    assert report.ok, report.problems
    assert report.checked == 6


HELD_OUT_WORDS = ("THRU", " DP", "PCD", "+x end", "+x face", "recess", "mm across the outside", "apart on the inside",
                  "centres are", "corners on the x axis", "from the -x end", "from the -x edge")
"""Phrases only the held-out styles use."""


def test_held_out_styles_never_reach_training():
    assert set(TRAINED_STYLES) | set(HELD_OUT_STYLES) == set(STYLES) and not set(TRAINED_STYLES) & set(HELD_OUT_STYLES)
    for phrase in HELD_OUT_WORDS:
        assert not any(phrase in t for name in TEMPLATES for t in TEMPLATES[name][:3]), phrase
        assert any(phrase in t for name in TEMPLATES for t in TEMPLATES[name][3:]), phrase
    held, varied = PartsEnv(wording="held_out", composed=0.3), PartsEnv(wording="varied", composed=0.3)
    train = [held.task("train", i) for i in range(300)]
    assert {t.metadata["wording"] for t in train} == set(TRAINED_STYLES)
    assert not [t.id for t in train if any(p in t.prompt[0].content for p in HELD_OUT_WORDS)]
    assert [t.prompt for t in train[:50]] == [varied.task("train", i).prompt for i in range(50)]  # one train split
    for split in ("test", "unseen"):
        drawn = [held.task(split, i) for i in range(60)]
        assert {t.metadata["wording"] for t in drawn} == set(HELD_OUT_STYLES), split
        assert {t.metadata["wording"] for t in (varied.task(split, i) for i in range(60))} == set(TRAINED_STYLES)
    assert {held.task("test", i).metadata["family"] for i in range(120)} == set(held.families)  # trained families
    assert {held.task("unseen", i).metadata["family"] for i in range(40)} == set(held.unseen_families)


def test_the_wording_option(tmp_path):
    assert list(WORDINGS) == ["classic", "varied", "held_out"]
    from tempering.cli.evaluate import env_options

    env = envs.make("cad/parts-v1", **env_options(["wording=held_out", "difficulty=2"]))
    assert env.wording == "held_out" and env.task("test", 0).metadata["wording"] in HELD_OUT_STYLES
    with pytest.raises(TaskError, match="wording must be one of classic, varied, held_out, got 'fancy'"):
        PartsEnv(wording="fancy")
    with pytest.raises(TaskError, match="a tasks_file's drawings are its own"):
        PartsEnv(tasks_file=str(tmp_path / "parts.jsonl"), wording="varied")
