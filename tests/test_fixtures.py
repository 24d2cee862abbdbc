"""The suite's own machinery: a test's fresh database is a copy of a template (conftest.py), and
AGENDA_NO_SKIP fails a run with a skip, in one process and on an xdist worker (no_skip.py)."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from _agenda.storage.shipped import read_schema, schema_sections
from conftest import CLINIC_CSV, MONDAY, migrated, seed, seed_into, table_rows, write_csv


def assert_whole_private_and_in_wal_mode(db_path):
    assert db_path.stat().st_mode & 0o777 == 0o600
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == schema_sections(read_schema())[-1][0]
    finally:
        conn.close()


def test_a_copied_database_is_the_seeded_one_in_wal_mode_and_private(tmp_path):
    csv = write_csv(tmp_path, CLINIC_CSV + "doctor,SOTO,Ana Soto,DER,C1,,mon,09:00-10:00,30,,\n")
    first, copied, fresh = tmp_path / "first.db", tmp_path / "copied.db", tmp_path / "fresh.db"
    assert seed(first, csv) == seed(copied, csv) == seed_into(fresh, csv, MONDAY)
    assert ("seeded", csv.read_bytes(), MONDAY) in conftest._templates  # the second was a copy
    assert table_rows(copied) == table_rows(fresh) and table_rows(copied)["doctors"]
    assert_whole_private_and_in_wal_mode(copied)


def test_an_empty_database_is_a_copy_at_the_newest_schema(tmp_path):
    migrated(tmp_path / "first.db")
    migrated(tmp_path / "copied.db")
    assert "migrated" in conftest._templates
    assert_whole_private_and_in_wal_mode(tmp_path / "copied.db")
    assert not any(table_rows(tmp_path / "copied.db").values())


def test_seeding_a_database_already_there_seeds_it_again(tmp_path):
    db_path = tmp_path / "agenda.db"
    seed(db_path, write_csv(tmp_path, CLINIC_CSV))
    again = seed(db_path, write_csv(tmp_path, CLINIC_CSV + "insurance,MAP,Mapfre,,,,,,,,\n", "more.csv"))
    assert again["changed"] and again["insurances"] == 4


SKIPS = """
import pytest

def test_runs():
    pass

def test_skipped():
    pytest.skip("a missing tool")
"""


@pytest.mark.parametrize("workers", ["0", "1"])  # one process; a worker and the controller
def test_with_agenda_no_skip_a_skip_on_any_worker_fails_the_run(tmp_path, workers):
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_skips.py").write_text(SKIPS, encoding="utf-8")
    (tmp_path / "test_skipped_module.py").write_text(
        'import pytest\npytest.skip("no browser", allow_module_level=True)\n', encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "AGENDA_"))}
    plugins = ["-p", "no_skip", "-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:hypothesispytest"]
    gated = subprocess.run([sys.executable, "-m", "pytest", *plugins, "-n", workers, str(tmp_path)],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path,
                           env={**env, "AGENDA_NO_SKIP": "1", "PYTHONPATH": str(Path(__file__).parent)})
    assert gated.returncode == 1 and "1 passed, 2 skipped" in gated.stdout, gated.stdout + gated.stderr
    assert "AGENDA_NO_SKIP is set and 2 test(s) were skipped" in gated.stdout, gated.stdout
    assert "test_skips.py::test_skipped" in gated.stdout and "test_skipped_module.py" in gated.stdout
