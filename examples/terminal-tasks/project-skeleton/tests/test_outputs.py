import subprocess
import sys
from pathlib import Path


def test_layout():
    assert Path("/app/calc/calc/__init__.py").is_file() and Path("/app/calc/tests").is_dir()


def test_add_works_in_a_fresh_interpreter():
    r = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, '/app/calc'); "
                        "import calc; print(calc.add(2, 40))"], capture_output=True, text=True, timeout=20)
    assert r.stdout.strip() == "42", r.stderr


def test_one_commit_holds_the_package():
    log = subprocess.run(["git", "-C", "/app/calc", "log", "--oneline"], capture_output=True, text=True, timeout=20)
    assert len(log.stdout.strip().splitlines()) == 1
    files = subprocess.run(["git", "-C", "/app/calc", "ls-files"], capture_output=True, text=True, timeout=20)
    assert "calc/__init__.py" in files.stdout.split()
