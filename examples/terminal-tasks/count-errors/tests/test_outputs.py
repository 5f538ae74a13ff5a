from pathlib import Path


def test_error_count():
    assert Path("/app/error_count.txt").read_text().strip() == "47"


def test_log_untouched():
    lines = Path("/app/logs/service.log").read_text().splitlines()
    assert len(lines) == 200 and sum(line.split()[1] == "ERROR" for line in lines) == 47
