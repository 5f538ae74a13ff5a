import json
from pathlib import Path

EXPECTED = {"east": 3765.06, "north": 3022.94, "south": 4134.29, "west": 3051.93}


def test_totals_file_is_json_with_every_region():
    got = json.loads(Path("/app/totals.json").read_text())
    assert sorted(got) == sorted(EXPECTED)


def test_totals_are_right_to_the_cent():
    got = json.loads(Path("/app/totals.json").read_text())
    assert all(abs(float(got[k]) - v) < 0.005 for k, v in EXPECTED.items())
