"""docs/threat-model.md cannot drift from the code: every list it states (denied system
calls, mount calls, socket families, netlink protocols, what the root file system holds)
is exactly the constant it names, and every file and name in its "Where in the code"
columns exists."""

from __future__ import annotations

import re
from pathlib import Path

from tempering.sandbox import filesystem, paths, seccomp

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "threat-model.md"

# constant named in the doc -> the entries the doc must list for it
CONSTANTS = {
    "DENIED_X86_64": set(seccomp.DENIED_X86_64),
    "MOUNT_X86_64": set(seccomp.MOUNT_X86_64),
    "SOCKET_FAMILIES": set(seccomp.SOCKET_FAMILIES),
    "NETLINK_PROTOCOLS": set(seccomp.NETLINK_PROTOCOLS),
    "USR_DIRS": {"/" + d for d in filesystem.USR_DIRS},
    "ETC_COPY": {"/etc/" + n for n in filesystem.ETC_COPY},
    "ETC_BIND": {"/etc/" + n for n in filesystem.ETC_BIND},
    "DEVICES": {"/dev/" + n for n in filesystem.DEVICES},
    "TASK_DIRS": set(paths.TASK_DIRS),
}


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every markdown table: (header cells, rows of cells)."""
    out, current = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is None:
            current = (cells, [])
            out.append(current)
        elif not all(set(c) <= set("-:") for c in cells):
            current[1].append(cells)
    return out


def _ticks(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _policy_rows() -> dict[str, list[str]]:
    """constant -> the entries the doc lists for it, from the policy table."""
    tables = [rows for head, rows in _tables(DOC.read_text()) if head[:2] == ["List", "Entries"]]
    assert len(tables) == 1, "docs/threat-model.md has one table of the policy's lists"
    out = {}
    for cells in tables[0]:
        names = [t for t in _ticks(cells[2]) if not t.endswith(".py")]
        assert len(names) == 1, cells
        out[names[0]] = _ticks(cells[1])
    return out


def test_the_policy_lists_are_the_codes_constants():
    rows = _policy_rows()
    assert set(rows) == set(CONSTANTS)
    for name, entries in rows.items():
        assert len(entries) == len(set(entries)), f"{name} lists an entry twice"
        assert set(entries) == CONSTANTS[name], (
            f"docs/threat-model.md's list for {name} is not the code's: "
            f"missing {sorted(CONSTANTS[name] - set(entries))}, extra {sorted(set(entries) - CONSTANTS[name])}")


def test_socket_family_numbers_in_the_doc_are_the_filters():
    text = DOC.read_text()
    for table in (seccomp.SOCKET_FAMILIES, seccomp.NETLINK_PROTOCOLS):
        for name, number in table.items():
            assert f"`{name}` ({number})" in text


def _where_tables():
    for head, rows in _tables(DOC.read_text()):
        if head[-1].startswith("Where in the code"):
            base = _ticks(head[-1])
            assert len(base) == 1, head
            yield base[0], rows


def test_where_in_the_code_names_files_and_names_that_exist():
    checked = 0
    for base, rows in _where_tables():
        for cells in rows:
            source = None
            refs = _ticks(cells[-1])
            assert refs and refs[0].endswith(".py"), f"a Where cell starts with a file: {cells}"
            for ref in refs:
                if ref.endswith(".py"):
                    path = REPO / base / ref
                    assert path.is_file(), f"{path} (named in docs/threat-model.md) does not exist"
                    source = path.read_text()
                    continue
                for part in ref.split("."):
                    assert re.search(rf"(?<![\w]){re.escape(part)}(?![\w])", source), \
                        f"{ref} is not in {path} (named in docs/threat-model.md)"
                checked += 1
    assert checked > 40


def test_the_tests_the_doc_names_exist():
    """Each `test_...` the promises table names is a test (or a test file) in tests/sandbox."""
    defined = set()
    for f in Path(__file__).parent.glob("test_*.py"):
        defined |= set(re.findall(r"^def (test_\w+)", f.read_text(), re.M))
        defined.add(f.name)
    named = {t for head, rows in _tables(DOC.read_text()) if head[:3] == ["Promise", "Mechanism", "Test"]
             for cells in rows for t in _ticks(cells[2]) if t.startswith("test_")}
    assert named and not named - defined, f"tests the doc names that do not exist: {sorted(named - defined)}"
