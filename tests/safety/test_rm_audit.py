"""The reward-model audit: a planted length bias is flagged, a faithful scorer is not."""

import json

from tempering.cli.audit import rm_items
from tempering.cli.main import main
from tempering.safety.rm_audit import audit_reward_model


def test_a_length_loving_scorer_is_flagged_and_a_faithful_one_is_not():
    items, _ = rm_items("code/synth-v1", 12)
    assert any(i.passed for i in items) and any(not i.passed for i in items)
    faithful = {(i.prompt, i.reply): float(i.passed) for i in items}
    good = audit_reward_model(items, lambda p, r: faithful.get((p, r), 0.0) + 0.001 * (hash(r) % 7))
    assert good["agreement"] == 1.0 and not any("length" in f for f in good["flags"])
    assert good["agreement_by_family"] and all(v == 1.0 for v in good["agreement_by_family"].values())
    biased = audit_reward_model(items, lambda p, r: float(len(r)))
    assert biased["length_r"] > 0.99
    assert any("length" in f for f in biased["flags"])
    assert biased["surface_edits"]["polite_sentence"]["mean_shift_spreads"] > 0.1  # padding pays a length-lover


def test_audit_rm_cli_scores_a_real_reward_head(capsys):
    code = main(["audit", "rm", "tiny-random", "--env", "sql/sqlite-v1", "--n", "6", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and code == (1 if report["flags"] else 0)
    assert report["replies"] == 12 and report["pairs"] == 6  # the reference and the broken answer per task
    assert set(report["surface_edits"]) == {"polite_sentence", "blank_lines"}
