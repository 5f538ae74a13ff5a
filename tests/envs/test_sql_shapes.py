"""sql/shapes-v1: every family's reference passes and its broken query fails on every shape
(in the sandbox, on a sample), the splits are disjoint and `unseen` holds out shapes, styles
and vocabularies, renamed columns never appear in their questions, the styles and shapes are
what they claim, and the max_turns loop is sql/sqlite-v1's."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from tempering import envs
from tempering.envs.base import split_of
from tempering.envs.sql.env import INSTRUCTION
from tempering.envs.sql.shapes.build import build
from tempering.envs.sql.shapes.domains_train import TRAIN_DOMAINS
from tempering.envs.sql.shapes.domains_unseen import UNSEEN_DOMAINS
from tempering.envs.sql.shapes.env import MAX_CHARS, ShapesEnv, _well_posed, generate
from tempering.envs.sql.shapes.families import FAMILIES
from tempering.envs.sql.shapes.naming import STYLES, TRAIN_STYLES, UNSEEN_STYLES, Naming, draw_naming, plural
from tempering.envs.sql.shapes.topology import SHAPES, TRAIN_SHAPES, UNSEEN_SHAPES
from tempering.envs.sql.verify import run_queries, same_result, verify
from tempering.errors import TaskError

ENV = "sql/shapes-v1"
DOMAINS = {**TRAIN_DOMAINS, **UNSEEN_DOMAINS}


@pytest.fixture(scope="module")
def sb(shared_sandbox):
    return shared_sandbox


@pytest.fixture(scope="module")
def env():
    return ShapesEnv()


@pytest.fixture(scope="module")
def drawn(env):
    return {split: env.tasks(split, n) for split, n in (("train", 120), ("test", 20), ("unseen", 60))}


def _question(task) -> str:
    return task.prompt[0].content.split("Question: ", 1)[1].rsplit("\n\n", 1)[0]


def _db(domain: str, style: str, seed: int = 0):
    rng = random.Random(f"{domain}|{style}|{seed}")
    return build(rng, DOMAINS[domain], draw_naming(rng, style))


def test_check_env_passes(sb):
    report = envs.check_env(ENV, n=3)
    assert report.ok and report.checked == 9, report.problems


def test_every_family_reference_passes_and_broken_fails(sb, env):
    assert len(FAMILIES) >= 20
    for i, family in enumerate(env.families):
        task = env.task("unseen" if i % 3 == 0 else "train", i, family)
        assert task.family == family and task.metadata["difficulty"] == FAMILIES[family][0]
        assert verify(task, env.reference_response(task)).passed, (family, task.reference.query)
        broken = verify(task, env.broken_response(task))
        assert not broken.passed and broken.details["status"] == "wrong_result", (family, broken.details)


def _fits() -> dict[str, set[str]]:
    """The families each shape can pose, found on the host: two databases per domain."""
    fits: dict[str, set[str]] = {shape: set() for shape in SHAPES}
    for key, domain in DOMAINS.items():
        styles = TRAIN_STYLES if key in TRAIN_DOMAINS else UNSEEN_STYLES
        for seed, style in enumerate(styles[:2]):
            db = _db(key, style, seed)
            con, rng = db.connect(), random.Random(seed)
            for family, (_, pose) in FAMILIES.items():
                for _ in range(3):
                    q = pose(rng, db)
                    if q is not None and _well_posed(con, q):
                        fits[domain.shape].add(family)
                        break
            con.close()
    return fits


def test_families_pose_across_shapes_and_hold_in_the_sandbox(sb):
    fits = _fits()
    for family in FAMILIES:  # every skill is trained and is measured on held-out shapes
        assert {s for s in TRAIN_SHAPES if family in fits[s]}, family
        assert {s for s in UNSEEN_SHAPES if family in fits[s]}, family
    assert all(len(fits[s]) >= 12 for s in SHAPES), {s: len(f) for s, f in fits.items()}
    rng = random.Random(0)
    for shape in SHAPES:  # a sample of each shape's families, run as the verifier runs them
        domains = {k: d for k, d in DOMAINS.items() if d.shape == shape}
        styles = TRAIN_STYLES if shape in TRAIN_SHAPES else UNSEEN_STYLES
        for family in rng.sample(sorted(fits[shape]), 3):
            task = generate(random.Random(f"{shape}|{family}"), family, (family,), domains, styles)
            assert task.metadata["shape"] == shape
            ref, broken = run_queries(task.reference.db, [task.reference.query, task.reference.broken])
            assert ref["status"] == "ok" and broken["status"] == "ok", (shape, family, ref, broken)
            assert not same_result(ref["rows"], broken["rows"], task.reference.ordered), (shape, family)


def test_tasks_are_deterministic(env):
    a, b = env.task("train", 7), ShapesEnv().task("train", 7)
    assert a == b and a.reference.db == b.reference.db
    assert env.task("unseen", 3) == ShapesEnv().task("unseen", 3)
    assert env.task("train", 8).prompt != a.prompt


def test_splits_are_disjoint(drawn):
    train = {t.prompt[0].content for t in drawn["train"]}
    test = {t.prompt[0].content for t in drawn["test"]}
    assert len(train) == 120 and len(test) == 20 and not train & test
    assert {split_of(p) for p in test} == {"test"} and {split_of(p) for p in train} == {"train"}


def _vocabulary(domains) -> set[str]:
    """Every entity noun and table spelling of `domains`, singular and plural."""
    words = set()
    for d in domains.values():
        for e in d.roles.values():
            words |= {e.noun, e.plural} | {w for t in e.tables for w in (t, plural(t))}
    return words


def test_unseen_holds_out_shapes_styles_and_vocabularies(drawn):
    assert not set(TRAIN_SHAPES) & set(UNSEEN_SHAPES) and not set(TRAIN_STYLES) & set(UNSEEN_STYLES)
    assert {d.shape for d in TRAIN_DOMAINS.values()} == set(TRAIN_SHAPES)
    assert {d.shape for d in UNSEEN_DOMAINS.values()} == set(UNSEEN_SHAPES)
    assert not _vocabulary(TRAIN_DOMAINS) & _vocabulary(UNSEEN_DOMAINS)
    seen = drawn["train"] + drawn["test"]
    for key, allowed in (("shape", TRAIN_SHAPES), ("style", TRAIN_STYLES), ("schema", TRAIN_DOMAINS)):
        assert {t.metadata[key] for t in seen} <= set(allowed)
    for key, allowed in (("shape", UNSEEN_SHAPES), ("style", UNSEEN_STYLES), ("schema", UNSEEN_DOMAINS)):
        assert {t.metadata[key] for t in drawn["unseen"]} == set(allowed), key
    tables = lambda ts: {n.lower() for t in ts for n in re.findall(r"CREATE TABLE (\w+)", t.prompt[0].content)}  # noqa: E731
    assert not tables(drawn["unseen"]) & tables(seen)


def test_train_draws_every_shape_style_and_domain_often(drawn):
    train = drawn["train"]
    assert {t.metadata["shape"] for t in train} == set(TRAIN_SHAPES)
    assert {t.metadata["style"] for t in train} == set(TRAIN_STYLES)
    assert len({t.metadata["schema"] for t in train}) >= 15 and len({t.family for t in train}) >= 25


def test_no_table_is_one_of_handwritten_v1():
    data = json.loads((Path(envs.__file__).parent / "sql" / "handwritten.json").read_text())
    hand = {n.lower() for db in data["databases"] for n in re.findall(r"CREATE TABLE (\w+)", db["script"])}
    assert not {k for k in DOMAINS} & {db["key"] for db in data["databases"]}
    spelled = {w.replace(" ", sep) for w in _vocabulary(DOMAINS) for sep in ("", "_")}
    assert not spelled & hand, spelled & hand


def _spelled_words(name: str, style: str) -> str:
    """An identifier as the words it was made of, less its style's prefix: intUnitCount -> "unit count"."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").lower().split()
    if style == "hungarian" or style == "coded":
        words = words[1:]
    return " ".join(words)


def test_renamed_columns_never_appear_in_their_questions(drawn):
    concepts = [c for d in DOMAINS.values() for e in d.roles.values() for c in e.attrs]
    assert sum(c.renamed for c in concepts) >= 0.6 * len(concepts)
    tasks = drawn["train"] + drawn["unseen"]
    renamed = 0
    for t in tasks:
        text = _question(t).lower()
        mentions = [m for m in t.metadata["mentions"] if m[2]]
        renamed += bool(mentions)
        for name, said, _ in mentions:
            assert said.lower() in text, (t.id, said)
            assert not re.search(rf"\b{re.escape(name.lower())}\b", text), (t.id, name, text)
            words = _spelled_words(name, t.metadata["style"])
            assert not words or not re.search(rf"\b{re.escape(words)}\b", text), (t.id, name, text)
    assert renamed >= 0.3 * len(tasks), renamed


STYLE_PATTERNS = {"snake": r"[a-z][a-z0-9_]*", "abbrev": r"[a-z][a-z0-9_]*", "upper": r"[A-Z][A-Z0-9_]*",
                  "camel": r"[a-z][A-Za-z0-9]*", "pascal": r"[A-Z][A-Za-z0-9]*", "concat": r"[a-z][a-z0-9]*",
                  "hungarian": r"(str|int|flt|dt|b)[A-Z][A-Za-z0-9]*", "coded": r"[a-z]{3}[0-9]?_[a-z0-9_]+"}


@pytest.mark.parametrize("style", list(STYLES))
def test_each_style_spells_columns_its_way(style):
    for seed, key in enumerate(("bank", "agency", "kits", "chess")):
        db = _db(key, style, seed)
        for t in db.tables:
            for c in t.columns:
                assert re.fullmatch(STYLE_PATTERNS[style], c.name), (style, t.name, c.name)
    abbreviated = {c.name for key in TRAIN_DOMAINS for t in _db(key, "abbrev").tables for c in t.columns}
    assert {"qty", "amt"} & abbreviated or style != "abbrev"


def test_each_shape_has_its_structure():
    for key, d in DOMAINS.items():
        db = _db(key, "snake")
        links = db.links()
        fks = Counter(link.child.role for link in links)
        shape = d.shape
        if shape in ("chain", "lines", "snowflake", "threaded"):  # a two-join path exists
            assert any(b.child is a.parent and not a.self_ref and not b.self_ref for a in links for b in links), key
        if shape in ("selfref", "threaded"):
            assert any(link.self_ref for link in links), key
        if shape in ("junction", "bom"):
            assert any(t.pk is None and len(t.of("fk")) == 2 for t in db.tables), key
        assert {"star": fks["fact"] == 3, "wide": len(db.tables) == 1 and 8 <= len(db.tables[0].columns) <= 12,
                "dual": fks["move"] == 3, "lines": fks["line"] == 2}.get(shape, True), key
        for t in db.tables:  # every link is declared in the schema the prompt shows
            for c in t.of("fk"):
                assert f"REFERENCES {c.target}(" in t.ddl, (key, t.ddl)


def test_prompt_keeps_sqlite_v1s_frame_within_its_length(drawn):
    for t in drawn["train"] + drawn["unseen"]:
        text = t.prompt[0].content
        assert len(text) <= MAX_CHARS and text.startswith("Here is an SQLite database of ")
        assert "CREATE TABLE" in text and "Sample rows" in text and text.endswith(INSTRUCTION)
    ordered = [t for t in drawn["train"] if t.metadata["ordered"]]
    assert ordered and all("first" in _question(t) or "order" in _question(t) for t in ordered)


def test_sql_error_is_fed_back_and_a_second_answer_can_win(sb):
    env = envs.make(ENV, max_turns=3, turn_cost=0.1)
    task = env.task("test", 2)
    env.reset(task)
    table = re.search(r"CREATE TABLE (\w+)", task.prompt[0].content).group(1)
    first = env.step(f"```sql\nSELECT no_such_column FROM {table}\n```")
    assert not first.terminated and first.reward == 0.0 and first.info["status"] == "sql_error"
    assert "no such column: no_such_column" in first.messages[0].content and "reply 2 of 3" in first.messages[0].content
    second = env.step(env.reference_response(task))
    assert second.terminated and second.info["passed"] and second.reward == pytest.approx(0.9)


def test_last_turn_ends_the_episode_with_zero(sb):
    env = envs.make(ENV, max_turns=2)
    env.reset(env.task("unseen", 4))
    assert not env.step("no idea").terminated
    last = env.step(env.broken_response(env.task("unseen", 4)))
    assert last.terminated and last.reward == 0.0 and last.info["status"] == "wrong_result"


def test_difficulty_restricts_families():
    easy = envs.make(ENV, difficulty=1)
    assert set(easy.families) == {f for f, (level, _) in FAMILIES.items() if level == 1}
    assert {t.metadata["difficulty"] for t in easy.tasks("train", 8)} == {1}
    with pytest.raises(TaskError, match="no task family 'self_most'"):
        easy.task("train", 0, "self_most")
    for bad in (0, 6, 2.5):
        with pytest.raises(TaskError, match="difficulty must be"):
            ShapesEnv(difficulty=bad)
    assert isinstance(envs.make(ENV), ShapesEnv) and isinstance(draw_naming(random.Random(0), "snake"), Naming)
