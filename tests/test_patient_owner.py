"""The patient has one owner (docs/design.md, "A patient's columns"): _agenda/patients.py's PATIENT_COLUMNS names
every column of the live table with a rule for each stage of an erasure, an erasure does to each column what its
rule says, and no other module writes the table."""

import re
import sqlite3

import pytest

from _agenda.files.reading import header_key, PATIENT_COLUMN_NAMES
from _agenda.domain.patients import (COLUMN_KINDS, DESK_FIELDS, EMPTY, FOLDED, INHERITED, KEEP, NOW, PATIENT_COLUMNS,
                              RECTIFIABLE, STAGES, UNTIL)
from _agenda.domain.rights import request_erasure, retention_run
from _agenda.storage.events import utc_iso
from _agenda.values.fields import fold
from _agenda.domain.registry import register_patient
from conftest import migrated, ROOT, valid_dni

RULES = (KEEP, EMPTY, NOW, UNTIL, FOLDED)  # or "=TEXT"


def live_columns(db_path, table="patients"):
    migrated(db_path)
    conn = sqlite3.connect(db_path)
    try:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


def test_every_column_of_the_live_table_is_in_the_list_with_a_rule_for_each_stage_and_no_other(db_path):
    assert sorted(live_columns(db_path)) == sorted(column.name for column in PATIENT_COLUMNS)
    assert len({column.name for column in PATIENT_COLUMNS}) == len(PATIENT_COLUMNS)
    for column in PATIENT_COLUMNS:
        assert column.kind in COLUMN_KINDS and column.meaning.strip(), column.name
        for stage in STAGES:
            rule = getattr(column, stage)
            assert rule in RULES or rule.startswith("="), f"patients.{column.name} has no rule for the {stage}"


def test_the_block_keeps_who_the_patient_is_and_the_anonymising_keeps_none_of_it():
    for column in PATIENT_COLUMNS:
        if column.kind != "record-keeping":  # kept, not processed (LOPDGDD art. 32)
            assert column.block == KEEP, column.name
        if column.kind in ("identity", "contact"):  # a column left out of the anonymising would outlive the erasure
            assert column.anonymise != KEEP, column.name


def test_what_people_type_has_a_place_in_every_form_and_file_that_carries_it():
    assert sorted(DESK_FIELDS) == sorted(RECTIFIABLE)  # the desk's correction sends every field it takes
    for column in PATIENT_COLUMNS:
        if column.export or column.api or column.desk:
            assert column.field, column.name
        if column.export:  # import-patients reads back what the export writes, by its field and its headers
            assert all(PATIENT_COLUMN_NAMES[header] == column.field for header in (column.field, *column.headers))
    keys = [header_key(header) for column in PATIENT_COLUMNS for header in (column.field or "", *column.headers)
            if header]
    assert len(keys) == len(set(keys))  # no header names two columns


def expected(stage, before, patient_id, at, until=None):
    """The row after `stage`, as PATIENT_COLUMNS' rules say, from the row before it."""
    after = {}
    for column in PATIENT_COLUMNS:
        rule = getattr(column, stage)
        if rule.startswith("="):
            after[column.name] = rule[1:].format(id=patient_id)
        else:
            after[column.name] = {KEEP: before[column.name], EMPTY: None, NOW: utc_iso(at),
                                  UNTIL: until and until.isoformat(), FOLDED: FOLDED}[rule]
    return {name: fold(f"{after['name'] or ''} {after['surname'] or ''}") if value == FOLDED else value
            for name, value in after.items()}


def row_of(api, patient_id):
    return dict(api.db().execute("SELECT * FROM patients WHERE id = ?", (patient_id,)).fetchone())


def every_given_column_filled(api, patient_id):
    """Each column of a patient's details holds something to lose (one no form here fills, a mark)."""
    with api.app.clinic.db.transaction() as conn:
        for column in PATIENT_COLUMNS:
            if column.kind != "record-keeping" and row_of(api, patient_id)[column.name] is None:
                mark = {"language": "en", "yes_no": 1}.get(column.shape, f"mark {column.name}")  # what the table takes
                conn.execute(f"UPDATE patients SET {column.name} = ? WHERE id = ?", (mark, patient_id))
    row = row_of(api, patient_id)
    assert all(row[column.name] is not None for column in PATIENT_COLUMNS if column.kind != "record-keeping")
    return row


def test_the_block_and_then_the_anonymising_do_to_each_column_what_its_rule_says(api, clock):
    clinic = api.app.clinic
    api.new_patient()
    child = register_patient(clinic, {"name": "Pablo", "surname": "García Núñez", "birthDate": "03/04/2019",
                                      "guardianNif": "12345678Z", "phone": "622000111"}, source="desk:ana")
    api.book(child)  # 24/11/2026 09:00: a visit that took place, so the erasure blocks first
    before = every_given_column_filled(api, child)
    assert before["guardian_id"] is not None and before["search"]
    clock.set(2026, 11, 25)
    done = request_erasure(clinic, child, "cli", "cli:test")
    assert not done["anonymised"]
    blocked = row_of(api, child)
    assert blocked == expected("block", before, int(child), clock.moment, done["erasable_from"])
    clock.set(done["erasable_from"].year, done["erasable_from"].month, done["erasable_from"].day)
    assert retention_run(clinic, "cli")["anonymised"] == [int(child)]
    assert row_of(api, child) == expected("anonymise", blocked, int(child), clock.moment)


def test_a_patient_never_seen_is_blocked_and_anonymised_at_once_each_column_as_its_rules_say(api, clock):
    patient = api.new_patient(nif=valid_dni(31), surname="Ruiz de la Peña")
    before = every_given_column_filled(api, patient)
    done = request_erasure(api.app.clinic, patient, "api", "api")
    assert done["anonymised"]
    blocked = expected("block", before, int(patient), clock.moment, done["erasable_from"])
    assert row_of(api, patient) == expected("anonymise", blocked, int(patient), clock.moment)


def test_a_guardians_erasure_takes_from_her_children_what_they_took_from_her_and_nothing_else(api):
    clinic = api.app.clinic
    guardian = api.new_patient()
    child = register_patient(clinic, {"name": "Pablo", "birthDate": "03/04/2019", "guardianNif": "12345678Z"},
                             source="desk:ana")
    before = row_of(api, child)
    assert INHERITED and all(before[name] == row_of(api, guardian)[name] for name in INHERITED)
    request_erasure(clinic, guardian, "cli", "cli:test")
    assert row_of(api, child) == {**before, **{name: None for name in INHERITED}}


def write_of(table):
    """What an INSERT, REPLACE, UPDATE or DELETE of `table` looks like in source text."""
    return re.compile(r"\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)"
                      rf"\s+(?:main\.)?{table}\b", re.I)


def writers(paths, table="patients"):
    """The names of the files among `paths` that write `table` (SQL text, whatever builds it around)."""
    write = write_of(table)
    return sorted(path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name for path in paths
                  if write.search(path.read_text(encoding="utf-8")))


def test_no_module_but_the_owner_writes_the_patients_table():
    assert writers((ROOT / "_agenda").rglob("*.py")) == ["_agenda/domain/patients.py"]


@pytest.mark.parametrize("sql", ["INSERT INTO patients (name)", "update main.patients SET", "DELETE FROM patients",
                                 "INSERT OR REPLACE INTO patients", "UPDATE OR IGNORE patients SET"])
def test_the_check_would_see_a_second_writer(tmp_path, sql):
    second = tmp_path / "second.py"
    second.write_text(f'def write(conn):\n    conn.execute("{sql} ...")\n', encoding="utf-8")
    untouched = tmp_path / "other.py"
    untouched.write_text('def read(conn):\n    conn.execute("UPDATE patients_seen SET n = 1")\n', encoding="utf-8")
    assert writers([second, untouched]) == ["second.py"]
