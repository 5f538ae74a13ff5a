import shutil
import subprocess
from pathlib import Path


def test_backup_holds_the_text_notes():
    backup = Path("/app/backup")
    assert sorted(p.name for p in backup.iterdir()) == ["calendar.txt", "todo.txt"]
    assert (backup / "todo.txt").read_text() == "buy milk\n"


def test_the_script_itself_works_when_run_again():
    shutil.rmtree("/app/backup")
    r = subprocess.run(["bash", "/app/scripts/backup.sh"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in Path("/app/backup").iterdir()) == ["calendar.txt", "todo.txt"]
