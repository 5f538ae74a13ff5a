"""The data audit finds planted duplicates, near-duplicates, a held-out leak and a length skew."""

import json

from tempering import envs
from tempering.cli.main import main
from tempering.safety.data_audit import audit_rows, near_duplicates


def _sft_rows(n: int) -> list[dict]:
    env = envs.make("math/arith-v1")
    return [{"messages": [{"role": "user", "content": t.prompt[-1].content},
                          {"role": "assistant", "content": env.reference_response(t)}],
             "env": "math/arith-v1", "task_id": t.id}
            for t in env.tasks("train", n)]


def test_clean_rows_pass_and_planted_problems_are_each_found(tmp_path, capsys):
    rows = _sft_rows(60)
    path = tmp_path / "clean.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["audit", "data", str(path), "--n", "50"]) == 0
    assert "held-out overlap: 0 rows against 50 held-out prompts" in capsys.readouterr().out

    test_task = envs.make("math/arith-v1").tasks("test", 5)[3]
    leaked = {"messages": [{"role": "user", "content": test_task.prompt[-1].content},
                           {"role": "assistant", "content": "42"}], "env": "math/arith-v1", "task_id": "x"}
    near = json.loads(json.dumps(rows[7]))
    near["messages"][1]["content"] += " Done."  # one word more: a near-duplicate, not an exact one
    planted = rows + [rows[2], rows[2], {**rows[9], "messages": [
        {"role": m["role"], "content": "  " + m["content"].upper() + " "} for m in rows[9]["messages"]]}, near, leaked]
    path = tmp_path / "planted.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in planted))
    assert main(["audit", "data", str(path), "--n", "50", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert sorted(map(sorted, report["duplicates"])) == [[2, 60, 61], [9, 62]]  # case and spacing do not hide one
    assert [7, 63] in [pair[:2] for pair in report["near_duplicates"]]
    assert report["overlap"] == [{"row": 64, "how": "exact", "held_out": test_task.id}]
    assert not report["ok"]


def test_a_length_skewed_pair_file_is_flagged():
    rows = [{"prompt": f"q{i}", "chosen": "a long and careful answer " * (i % 3 + 2), "rejected": "short"}
            for i in range(40)]
    report = audit_rows(rows)
    assert report.balance["pairs"] == 40 and report.balance["chosen_longer_share"] == 1.0


def test_length_outliers_and_coverage():
    rows = [{"messages": [{"role": "user", "content": f"task {i} " * 20}], "env": "a", "kind": "single"}
            for i in range(30)]
    rows.append({"messages": [{"role": "user", "content": "x " * 5000}], "env": "b", "kind": "repair"})
    report = audit_rows(rows)
    assert report.length["outliers"] == [30]
    assert report.coverage["env"] == {"a": 30, "b": 1} and report.coverage["kind"] == {"single": 30, "repair": 1}


def test_near_duplicate_search_confirms_every_candidate_by_its_jaccard():
    base = " ".join(f"w{i}" for i in range(200))
    texts = [base, base + " extra", " ".join(f"v{i}" for i in range(200)), base.replace("w5 ", "z5 ")]
    pairs = {(a, b): j for a, b, j in near_duplicates(texts)}
    assert set(pairs) == {(0, 1), (0, 3), (1, 3)} and all(j >= 0.9 for j in pairs.values())


def test_a_missing_or_malformed_file_is_one_clear_error(tmp_path, capsys):
    assert main(["audit", "data", str(tmp_path / "none.jsonl")]) == 2
    assert "not found" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\nnot json\n')
    assert main(["audit", "data", str(bad)]) == 2
    assert "bad.jsonl:2 is not valid JSON" in capsys.readouterr().err
