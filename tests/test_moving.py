"""Moving in and out (docs/design.md, "Moving in and out"): `agenda export` writes a clinic that
`agenda seed`, `import-patients` and `import-appointments` build again, the same; an old system's
appointments come in all or nothing, refused by line, through the CLI."""

import datetime as dt
import json
import sqlite3

from click.testing import CliRunner

import pytest

import agenda
from _agenda.files.catalogs import CATALOG_TABLES
from _agenda.domain.registry import register_patient

from conftest import Clock, CLINIC_CSV, MONDAY, table_rows, valid_dni

PER_CENTER = CLINIC_CSV + """\
doctor,GOMEZ,Eva Gómez,DER,C1,PRIV;SAN,tue;thu,09:00-10:00;16:00-17:00,30,,
doctor,GOMEZ,Eva Gómez,DER,C1,PRIV;SAN,fri,12:00-13:00,30,,
doctor,GOMEZ,Eva Gómez,DER,C2,DKV,wed,09:00-10:00,20,,
"""


def cli(db_path, *args, at=MONDAY, input=None):
    runner = CliRunner(env={"AGENDA_DB": str(db_path)})
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(at)}, input=input)


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def snapshot(db_path):
    """What moving must keep: the catalogs, the patients and the appointments, without ids or times of writing."""
    conn = sqlite3.connect(db_path)
    try:
        catalogs = {table: sorted(conn.execute(sql).fetchall(), key=repr) for table, sql in CATALOG_TABLES.items()}
        patients = sorted(conn.execute("SELECT name, surname, birth_date, nif, phone_e164, (SELECT g.nif FROM patients g"
                                       " WHERE g.id = patients.guardian_id) FROM patients"), key=repr)
        appointments = sorted(conn.execute(
            "SELECT a.date, a.time, a.end_time, a.doctor_id, a.center_id, p.nif, p.name, a.reason, a.insurance_id,"
            " a.status"
            " FROM appointments a JOIN patients p ON p.id = a.patient_id"), key=repr)
        return catalogs, patients, appointments
    finally:
        conn.close()


def old_system_file(tmp_path):
    """An old system's appointments as a Spanish spreadsheet saves them: ';', Windows-1252, Spanish headers,
    a time off today's grid, a new patient, a cancelled one."""
    return write(tmp_path / "citas.csv", (
        "Fecha;Hora;Duración;Médico;Centro;DNI;Nombre;Apellidos;Teléfono;Motivo;Seguro;Estado\n"
        f"24/11/2026;10:05;20;MARTIN;C1;{valid_dni(7)};Íñigo;Núñez Peña;699 12 34 56;Revisión anual;SAN;confirmada\n"
        f"25/11/2026;09:00;30;RUIZ;C1;{valid_dni(8)};=Pilar;'Ruiz;612 00 00 01;Vacuna;PRIV;anulada\n"
        "26/11/2026;09:30;30;MARTIN;C1;12345678Z;;;;Control;;\n"), "cp1252")


def test_an_exported_clinic_is_built_again_the_same_from_the_export_alone(make_api, db_path, tmp_path, clock):
    api = make_api(PER_CENTER)
    ana = api.new_patient(name="Ana María", surname="García-Ñúñez")
    api.book(ana)  # Tuesday 24/11 09:00
    cancelled = api.book(ana, date="24/11/2026", time="10:00")
    api.delete(f"/appointments/{cancelled}")
    child = register_patient(api.app.clinic, {"name": "Pablo", "surname": "García", "birthDate": "03/04/2019",
                                              "guardianNif": "12345678Z"}, source="desk:ana")  # no NIF of his own
    api.book(child, date="24/11/2026", time="10:30")
    imported = cli(db_path, "import-appointments", old_system_file(tmp_path))
    assert imported.exit_code == 0, imported.output
    assert "3 appointments imported, 2 new patients" in imported.output
    api.app.clinic.db.close()
    before = snapshot(db_path)
    assert ("2026-11-24", "10:05", "10:25", "MARTIN", "C1", valid_dni(7), "Íñigo", "Revisión anual", "SAN",
            "confirmed") in before[2]  # off the grid, as it was
    assert ("Pablo", "García", "2019-04-03", None, "+34612345678", "12345678Z") in before[1]
    out = tmp_path / "export"
    exported = cli(db_path, "export", out, at=MONDAY + dt.timedelta(days=3))
    assert exported.exit_code == 0, exported.output
    assert out.stat().st_mode & 0o777 == 0o700
    assert {path.name: path.stat().st_mode & 0o777 for path in out.iterdir()} == {
        "catalogs.csv": 0o600, "patients.csv": 0o600, "appointments.csv": 0o600, "events.jsonl": 0o600}
    assert "'=Pilar" in (out / "patients.csv").read_text()  # a spreadsheet shows it, never runs it
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    conn = sqlite3.connect(db_path)
    assert len(events) == conn.execute("SELECT count(*) FROM events").fetchone()[0]
    conn.close()
    new = tmp_path / "new.db"
    for step in (("seed", out / "catalogs.csv"), ("import-patients", out / "patients.csv"),
                 ("import-appointments", out / "appointments.csv")):
        done = cli(new, *step, "--db", new, at=MONDAY + dt.timedelta(days=3))
        assert done.exit_code == 0, (step, done.output)
    assert snapshot(new) == before


def test_an_import_with_any_bad_row_imports_nothing_and_names_each_line(make_api, db_path, tmp_path):
    api = make_api()
    api.book(api.new_patient())  # MARTIN, Tuesday 09:00-09:30
    before = table_rows(db_path)
    bad = write(tmp_path / "bad.csv", (
        "date,time,duration,doctor,center,nif,name,phone,reason,insurance,status\n"
        f"24/11/2026,09:15,30,MARTIN,C1,{valid_dni(1)},Eva,,,,\n"
        "24/11/2026,12:00,30,NADIE,C1,12345678Z,,,,,\n"
        "31/11/2026,12:00,30,MARTIN,C1,12345678Z,,,,,\n"
        "25/11/2026,12:00,30,MARTIN,C1,12345678Z,,,,NOPE,\n"
        "25/11/2026,13:00,30,MARTIN,C1,12345678Z,,,,,perhaps\n"
        f"25/11/2026,14:00,30,MARTIN,C1,{valid_dni(2)},Leo,,,,\n"
        f"25/11/2026,14:15,30,MARTIN,C1,{valid_dni(3)},Mar,,,,\n"
        "25/11/2026,15:00,30,MARTIN,C1,,Nadie,600000000,,,\n"))
    refused = cli(db_path, "import-appointments", bad)
    assert refused.exit_code == 1 and "7 bad rows" in refused.output
    for expected in ("line 2: 24/11/2026 09:15 with MARTIN overlaps appointment 1 already in the agenda",
                     "line 3: doctor 'NADIE' is not in the catalogs", "line 4: date is not a real date",
                     "line 5: insurance 'NOPE' is not in the catalogs", "line 6: status 'perhaps' is not one of",
                     "line 8: 25/11/2026 14:15 with MARTIN overlaps line 7", "line 9: no NIF"):
        assert expected in refused.output, (expected, refused.output)
    assert "nothing was imported" in refused.output
    assert table_rows(db_path) == before


def test_a_dry_run_checks_without_the_write_lock_and_writes_nothing(make_api, db_path, tmp_path):
    make_api().new_patient()  # 12345678Z, whom the file's last row names by NIF alone
    before = table_rows(db_path)
    holder = sqlite3.connect(db_path, timeout=0)
    holder.execute("BEGIN IMMEDIATE")  # a booking in progress elsewhere holds the write lock
    try:
        dry = cli(db_path, "import-appointments", old_system_file(tmp_path), "--dry-run")
    finally:
        holder.rollback()
        holder.close()
    assert dry.exit_code == 0, dry.output
    assert "Dry run: 3 appointments would be imported, 2 new patients. Nothing was written." in dry.output
    assert table_rows(db_path) == before


def test_an_export_never_overwrites_and_leaves_blocked_patients_out(make_api, db_path, tmp_path, clock):
    api = make_api()
    kept, erased = api.new_patient(), api.new_patient(nif=valid_dni(9), phone="699000111")
    api.book(erased)
    clock.set(2026, 11, 25)
    assert cli(db_path, "patient", "erase", erased, "--yes", at=clock.moment).exit_code == 0
    out = tmp_path / "out"
    done = cli(db_path, "export", out)
    assert done.exit_code == 0 and "1 blocked patient left out" in done.output
    assert valid_dni(9) not in (out / "patients.csv").read_text() + (out / "appointments.csv").read_text()
    assert "12345678Z" in (out / "patients.csv").read_text() and kept
    again = cli(db_path, "export", out)
    assert again.exit_code == 1 and "already holds catalogs.csv" in again.output


@pytest.mark.parametrize("planted", ["events.jsonl", "notes.txt"])
def test_an_export_into_a_folder_with_a_link_writes_nothing(make_api, db_path, tmp_path, planted):
    """A link planted in the folder (to a file another user would read) stops the export before a byte."""
    make_api().new_patient()
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere.txt"
    out.mkdir()
    (out / planted).symlink_to(elsewhere)
    refused = cli(db_path, "export", out)
    assert refused.exit_code == 1 and "Traceback" not in refused.output and "link" in refused.output
    assert sorted(path.name for path in out.iterdir()) == [planted] and not elsewhere.exists()
    linked = tmp_path / "linked"
    linked.symlink_to(out, target_is_directory=True)
    assert cli(db_path, "export", linked).exit_code == 1 and sorted(p.name for p in out.iterdir()) == [planted]
