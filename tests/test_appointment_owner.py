"""The appointments table has one owner (docs/design.md, "An appointment's columns"): _agenda/domain/appointments.py's
APPOINTMENT_COLUMNS names every column of the live table with who sets it and what the record, the patient's copy,
the export and the anonymising do with it; those read their columns from it; and no other module writes the table."""

import ast
import sqlite3

import pytest

from _agenda.domain.appointments import (APPOINTMENT_COLUMNS, COLUMN_KINDS, EMPTY, IMPORT, KEEP, listed, SETTERS,
                                         update_appointment)
from _agenda.domain.booking import Visit
from _agenda.domain.rights import IDENTITY, patient_copy, request_erasure, retention_run
from _agenda.files.open_formats import APPOINTMENT_COLUMN_NAMES, APPOINTMENT_COLUMNS as FILE_COLUMNS, AS_STORED
from _agenda.files.staged_import import STAGE
from conftest import ROOT
from test_moving import cli
from test_patient_owner import live_columns, writers


def test_every_column_of_the_live_table_is_in_the_list_with_its_decisions_and_no_other(db_path):
    assert sorted(live_columns(db_path, "appointments")) == sorted(column.name for column in APPOINTMENT_COLUMNS)
    assert len({column.name for column in APPOINTMENT_COLUMNS}) == len(APPOINTMENT_COLUMNS)
    for column in APPOINTMENT_COLUMNS:
        assert column.kind in COLUMN_KINDS and column.meaning.strip(), column.name
        assert column.set_by and set(column.set_by) <= set(SETTERS), column.name
        assert column.anonymise in (KEEP, EMPTY), f"appointments.{column.name} has no rule for the anonymising"
        if column.kind == "free text":  # what someone wrote about the patient's visit must not outlive the erasure
            assert column.anonymise == EMPTY and column.name in IDENTITY, column.name
    keys = [column.copy for column in APPOINTMENT_COLUMNS if column.copy]
    assert len(keys) == len(set(keys))


def test_the_import_reads_back_what_the_export_carries_and_nothing_else():
    for column in APPOINTMENT_COLUMNS:
        assert (IMPORT in column.set_by) == bool(column.export), column.name
        if column.export:
            assert column.export in FILE_COLUMNS and APPOINTMENT_COLUMN_NAMES[column.export] == column.export


def test_nothing_but_a_listed_column_is_written():
    assert listed({"reason": None}) == {"reason": None}
    with pytest.raises(ValueError, match="no column no such column"):
        listed({"reason": None, "no such column": "x"})


def row_of(api, appointment_id):
    return dict(api.db().execute("SELECT * FROM appointments WHERE id = ?", (int(appointment_id),)).fetchone())


def test_the_patients_copy_carries_each_column_the_list_gives_it(api):
    patient = api.new_patient()
    booked = api.book(patient, insuranceId="SAN")
    api.delete(f"/appointments/{api.book(patient, time='10:00')}")
    copy = patient_copy(api.app.clinic, patient, "cli:test")
    assert len(copy["appointments"]) == 2
    for record in copy["appointments"]:
        row = row_of(api, record["id"])
        for column in APPOINTMENT_COLUMNS:
            if column.copy and not column.shown:
                assert record[column.copy] == row[column.name], column.name
    assert {record["id"] for record in copy["appointments"]} == {int(booked), int(booked) + 1}


def test_the_anonymising_does_to_each_column_of_the_patients_appointments_what_its_rule_says(api, clock):
    patient = api.new_patient()
    seen = api.book(patient)  # 24/11/2026 09:00, before the erasure: kept, the patient's words gone
    clock.set(2026, 11, 25)
    with api.app.clinic.db.transaction() as conn:  # every column of the row holds something to lose
        update_appointment(conn, int(seen), {"cancel_reason": "mark", "attendance": "seen"}, clock.moment)
    before = row_of(api, seen)
    done = request_erasure(api.app.clinic, patient, "cli", "cli:test")
    assert row_of(api, seen) == before  # the block keeps a visit that took place as it was
    until = done["erasable_from"]
    clock.set(until.year, until.month, until.day)
    assert retention_run(api.app.clinic, "cli")["anonymised"] == [int(patient)]
    after = row_of(api, seen)
    for column in APPOINTMENT_COLUMNS:
        assert after[column.name] == (None if column.anonymise == EMPTY else before[column.name]), column.name


def test_an_exported_appointment_comes_back_the_same_in_each_column_the_export_carries(make_api, db_path, tmp_path):
    api = make_api()
    patient = api.new_patient()
    api.book(patient, insuranceId="SAN", reason="Revisión anual")
    assert api.post("/appointments/confirm", {"appointmentId": api.book(patient, time="10:00"), "confirmed": True}).json[
        "status"] == "confirmed"
    api.app.clinic.db.close()
    out, new = tmp_path / "export", tmp_path / "new.db"
    assert cli(db_path, "export", out).exit_code == 0
    for step in (("seed", out / "catalogs.csv"), ("import-patients", out / "patients.csv"),
                 ("import-appointments", out / "appointments.csv")):
        assert cli(new, *step, "--db", new).exit_code == 0, step

    def carried(path):
        conn = sqlite3.connect(path)
        conn.row_factory = sqlite3.Row
        try:
            return sorted((tuple(row[0] if column.export == "nif" else row[column.name] for column in
                                APPOINTMENT_COLUMNS if column.export) for row in conn.execute(
                "SELECT p.nif, a.* FROM appointments a JOIN patients p ON p.id = a.patient_id")), key=repr)
        finally:
            conn.close()
    assert carried(new) == carried(db_path) and len(carried(new)) == 2


def test_no_module_but_the_owner_writes_the_appointments_table():
    assert writers([ROOT / "agenda.py", *(ROOT / "_agenda").rglob("*.py")], "appointments") == [
        "_agenda/domain/appointments.py"]


@pytest.mark.parametrize("sql", ["INSERT INTO appointments (date)", "update main.appointments SET", "DELETE FROM"
                                 " appointments", "INSERT OR REPLACE INTO appointments", "UPDATE OR IGNORE appointments"])
def test_the_check_would_see_a_second_writer(tmp_path, sql):
    second = tmp_path / "second.py"
    second.write_text(f'def write(conn):\n    conn.execute("{sql} ...")\n', encoding="utf-8")
    untouched = tmp_path / "other.py"
    untouched.write_text('def read(conn):\n    conn.execute("UPDATE staged_appointments SET n = 1")\n',
                         encoding="utf-8")
    assert writers([second, untouched], "appointments") == ["second.py"]


def test_the_staged_import_stages_each_column_the_file_gives_under_its_name():
    """The owner inserts the import's rows from the staged column of each column's own name."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in STAGE:
            conn.execute(statement)
        staged = {row[1] for row in conn.execute("PRAGMA temp.table_info(staged_appointments)")}
    finally:
        conn.close()
    assert {column.name for column in APPOINTMENT_COLUMNS if IMPORT in column.set_by} <= staged
    assert {column.name for column in AS_STORED} <= staged


def test_the_doors_insert_writes_each_column_a_visit_carries():
    """A field of `Visit` named as a column is written by the door's new row (`inserted`'s columns)."""
    tree = ast.parse((ROOT / "_agenda" / "domain" / "booking.py").read_text(encoding="utf-8"))
    inserted = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "inserted")
    written = {key.value for node in ast.walk(inserted) if isinstance(node, ast.Dict) for key in node.keys
               if isinstance(key, ast.Constant)}
    carried = set(Visit._fields) & {column.name for column in APPOINTMENT_COLUMNS}
    assert carried and carried <= written, carried - written
