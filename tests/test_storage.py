"""Storage ("Storage") and the audit trail ("Audit")."""

import datetime as dt
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import threading
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain.slots import booking_window, free_slots
from _agenda.storage.shipped import read_schema, schema_path, schema_sections
from _agenda.storage.connections import CHECKPOINT_PAGES, MMAP_BYTES, schema_version
from _agenda.storage.schema import run_section, SchemaBehind, sql_statements, upgrade
from _agenda.values.fields import hhmm, minutes_of
from _agenda.domain.appointments import live_appointments, read_appointment
from _agenda.domain.changes import book_appointment
from _agenda.domain.registry import register_patient
from conftest import CLINIC_CSV, MONDAY, SECRET, Api, Clock, Server, agenda_command, seed, valid_dni, write_csv


def test_connect_sets_row_factory_foreign_keys_busy_timeout_full_sync_and_mmap(db_path):
    agenda.open_database(db_path).close()
    conn = agenda.connect(db_path)
    assert conn.row_factory is sqlite3.Row
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES  # reads at any size
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(sqlite3.IntegrityError):  # foreign keys really are enforced
        conn.execute("INSERT INTO doctors (id, name, speciality_id) VALUES ('X', 'X', 'no-such-speciality')")


def test_the_write_log_is_checkpointed_every_few_pages_so_no_write_pays_for_a_large_one(api, db_path):
    """"Storage": SQLite's own auto-checkpoint at CHECKPOINT_PAGES, not its default 1000 pages."""
    conn = agenda.connect(db_path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    wal = db_path.with_name(db_path.name + "-wal")
    largest = 0
    for number in range(200):  # about 800 pages written in all
        api.new_patient(nif=valid_dni(30000000 + number), phone=f"6{number:08d}")
        largest = max(largest, wal.stat().st_size)
    assert largest <= 32 + (CHECKPOINT_PAGES + 20) * (page_size + 24)  # a WAL frame: header and page


def test_database_files_are_readable_by_their_owner_only(api, db_path):
    api.new_patient()
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_new_database_is_at_the_newest_schema_version(db_path):
    conn = agenda.open_database(db_path)
    sections = schema_sections(schema_path().read_text())
    assert conn.execute("PRAGMA user_version").fetchone()[0] == sections[-1][0] >= 1


SCHEMA_V3 = """
-- version 1
CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY);
-- version 2
ALTER TABLE notes ADD COLUMN body TEXT;
-- version 3
INSERT INTO notes (body) VALUES ('added by 3, after the column of 2');
"""


def test_upgrades_run_in_order_from_the_current_version(tmp_path):
    conn = agenda.connect(tmp_path / "old.db")
    assert agenda.migrate(conn, SCHEMA_V3.split("-- version 2")[0]) == 1
    assert agenda.migrate(conn, SCHEMA_V3) == 3
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    assert [tuple(r) for r in conn.execute("SELECT * FROM notes")] == [(1, "added by 3, after the column of 2")]
    agenda.migrate(conn, SCHEMA_V3)  # idempotent: nothing runs twice
    assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 1


def test_a_failing_upgrade_changes_nothing(tmp_path):
    conn = agenda.connect(tmp_path / "old.db")
    agenda.migrate(conn, SCHEMA_V3)
    broken = SCHEMA_V3 + "-- version 4\nCREATE TABLE half (id INTEGER);\nTHIS IS NOT SQL;\n"
    with pytest.raises(sqlite3.OperationalError):
        agenda.migrate(conn, broken)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'").fetchone()[0] == 0


def test_a_database_newer_than_the_code_is_refused(tmp_path):
    conn = agenda.connect(tmp_path / "new.db")
    conn.execute("PRAGMA user_version = 99")
    with pytest.raises(RuntimeError, match="newer"):
        agenda.migrate(conn)


def test_schema_sections_must_be_numbered_in_order():
    with pytest.raises(RuntimeError):
        schema_sections("-- version 1\nSELECT 1;\n-- version 3\nSELECT 1;\n")


def test_one_connection_per_thread(api):
    database = api.app.clinic.db
    mine = database.connection()
    assert database.connection() is mine
    theirs = []
    thread = threading.Thread(target=lambda: theirs.append(database.connection()))
    thread.start()
    thread.join()
    assert theirs[0] is not mine


def test_writes_take_the_write_lock_at_begin_and_roll_back_on_error(db_path):
    agenda.open_database(db_path).close()
    writer, other = agenda.connect(db_path), agenda.connect(db_path, timeout=0)
    with pytest.raises(RuntimeError):
        with agenda.transaction(writer):
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")  # the lock is taken at BEGIN, before any write
            writer.execute("INSERT INTO centers (id, name) VALUES ('C', 'Centro')")
            raise RuntimeError("boom")
    assert writer.execute("SELECT count(*) FROM centers").fetchone()[0] == 0
    assert not writer.in_transaction


def test_dates_are_stored_iso_and_cancellations_keep_the_row(api):
    appointment_id = api.book(api.new_patient(), date="24/11/2026", time="9:30")
    api.delete(f"/appointments/{appointment_id}")
    row = api.db().execute("SELECT date, time, end_time, status, cancelled_at FROM appointments").fetchone()
    assert (row["date"], row["time"], row["end_time"], row["status"]) == ("2026-11-24", "09:30", "10:00",
                                                                         "cancelled")
    assert row["cancelled_at"].startswith("2026-11-23T07:00")  # the app's clock, in UTC


def test_every_change_is_recorded_as_an_event_with_its_source(api):
    patient = api.new_patient()
    appointment_id = api.book(patient, time="09:00")
    api.put(f"/appointments/{appointment_id}", {"newDate": "24/11/2026", "newTime": "10:00"})
    api.post("/appointments/confirm", {"appointmentId": appointment_id, "confirmed": True})
    api.delete(f"/appointments/{appointment_id}")
    api.post("/appointments/end-of-reminder-day", {"voiceAgentConfigId": "a", "date": "24/11/2026"})
    events = [dict(row) for row in api.db().execute("SELECT * FROM events ORDER BY id")]
    assert [(e["source"], e["action"]) for e in events] == [
        ("cli", "catalog.seeded"), ("api", "patient.created"), ("api", "appointment.booked"),
        ("api", "appointment.moved"), ("api", "appointment.confirmed"), ("api", "appointment.cancelled"),
        ("api", "reminder.closed")]
    moved = events[3]
    assert moved["entity"] == "appointment" and moved["entity_id"] == appointment_id
    assert json.loads(moved["before"])["time"] == "09:00" and json.loads(moved["after"])["time"] == "10:00"
    assert all(e["at"].startswith("2026-11-23T07:00") for e in events[1:])
    # each change's `after` is the row as written, word for word: the next change's `before`,
    # and for the last one the row as it stands
    booked, moved, confirmed, cancelled = events[2:6]
    assert booked["before"] is None and booked["entity_id"] == appointment_id
    assert [booked["after"], moved["after"], confirmed["after"]] == [moved["before"], confirmed["before"],
                                                                      cancelled["before"]]
    stored = api.db().execute("SELECT * FROM appointments WHERE id = ?", (appointment_id,)).fetchone()
    assert json.loads(cancelled["after"]) == dict(stored)
    first = json.loads(booked["after"])
    assert (first["id"], first["status"]) == (int(appointment_id), "booked")


def test_refused_requests_record_no_event(api):
    api.new_patient()
    count = api.db().execute("SELECT count(*) FROM events").fetchone()[0]
    api.book("1", time="09:15", status=409)
    api.delete("/appointments/77")
    api.post("/patients", {"name": "Dup", "nif": "12345678Z"})
    assert api.db().execute("SELECT count(*) FROM events").fetchone()[0] == count


def test_bookings_survive_a_restart_of_the_service(make_api):
    api = make_api()
    appointment_id = api.book(api.new_patient())
    api.app.clinic.db.close()
    restarted = make_api(csv=None)
    assert restarted.get(f"/appointments/{appointment_id}").json["time"] == "09:00"
    assert restarted.book(restarted.new_patient(nif="11111111H", phone="699111222"), status=409)


def test_availability_reads_appointments_from_an_index_alone(api, db_path):
    """The query behind every availability answer ("Availability") never visits the appointments
    table: its plan is a covering-index search, on a database without ANALYZE statistics."""
    api.book(api.new_patient())
    conn = agenda.connect(db_path)
    statements = []
    conn.set_trace_callback(statements.append)
    doctors = conn.execute("SELECT id, name, speciality_id FROM doctors WHERE speciality_id = 'MG'").fetchall()
    now = dt.datetime(2026, 11, 23, 7, 0, tzinfo=dt.timezone.utc)
    window = booking_window(now, ZoneInfo("Europe/Madrid"), 0, 90)
    assert free_slots(conn, doctors, dt.date(2026, 11, 23), dt.date(2026, 12, 6), window=window)
    conn.set_trace_callback(None)
    busy = [sql for sql in statements if "FROM appointments" in sql]
    assert len(busy) == 1
    plan = " ".join(row["detail"] for row in conn.execute("EXPLAIN QUERY PLAN " + busy[0]))
    assert "COVERING INDEX appointments_by_doctor_day" in plan, plan
    conn.close()


CATALOGS = ("centers", "specialities", "insurances", "doctors", "doctor_insurances", "schedules", "closures")


def seed_at_old_version(conn, tmp_path):
    """The test clinic's catalogs in a database at an older schema: seeded by today's code into a
    database of its own, then the columns both versions share copied over."""
    now = tmp_path / "catalogs-now.db"
    seed(now, write_csv(tmp_path, CLINIC_CSV))
    conn.execute("ATTACH DATABASE ? AS now", (str(now),))
    with agenda.transaction(conn):
        for table in CATALOGS:
            shared = {row[1] for row in conn.execute(f"PRAGMA now.table_info({table})")}
            columns = ", ".join(row[1] for row in conn.execute(f"PRAGMA main.table_info({table})") if row[1] in shared)
            conn.execute(f"INSERT OR IGNORE INTO main.{table} ({columns}) SELECT {columns} FROM now.{table}")
    conn.execute("DETACH DATABASE now")


def migrated(db_path):
    """`agenda migrate` on db_path, as the admin runs it (or `agenda run` as it starts); what it said."""
    result = CliRunner().invoke(agenda.cli, ["migrate", "--db", str(db_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_version_2_clinic_upgrades_to_the_index_and_keeps_its_bookings(tmp_path):
    """An admin who installs this agenda over last month's database: `agenda migrate` adds schema
    version 3's index, and every booking still holds its slot."""
    db_path = tmp_path / "clinic.db"
    conn = agenda.connect(db_path)
    agenda.migrate(conn, read_schema().split("-- version 3")[0])
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    seed_at_old_version(conn, tmp_path)
    with agenda.transaction(conn):
        conn.execute("INSERT INTO patients (name, nif, created_at) VALUES ('Ana', '12345678Z', 'x')")
        conn.execute("INSERT INTO appointments (patient_id, doctor_id, speciality_id, center_id, date, time,"
                     " end_time, created_at, updated_at) VALUES (1, 'MARTIN', 'MG', 'C1', '2026-11-24', '09:30',"
                     " '10:00', 'x', 'x')")
    conn.close()
    migrated(db_path)
    api = Api(agenda.create_app(db_path, SECRET, now=Clock(MONDAY)))
    conn = agenda.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] >= 3
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'appointments_by_doctor_day'"
                        ).fetchone()[0] == 1
    conn.close()
    times = [slot["time"] for slot in api.get("/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]
    assert times == ["09:00", "10:00", "10:30"]
    assert api.get("/appointments/1").json["time"] == "09:30"


def test_the_previous_releases_database_opens_here_with_every_booking(tmp_path):
    """The upgrade path an admin takes (docs/deploy.md): a database at the previous schema
    version, with bookings in it, upgraded by this agenda's `migrate`, every booking kept."""
    sections = schema_sections(read_schema())
    newest = sections[-1][0]
    db_path = tmp_path / "clinic.db"
    conn = agenda.connect(db_path)
    agenda.migrate(conn, read_schema().split(f"-- version {newest}")[0])
    assert conn.execute("PRAGMA user_version").fetchone()[0] == newest - 1
    seed_at_old_version(conn, tmp_path)
    with agenda.transaction(conn):
        for n, (nif, time_text, status) in enumerate([("12345678Z", "09:00", "booked"),
                                                      ("11111111H", "09:30", "confirmed"),
                                                      ("22222222J", "10:00", "cancelled")], start=1):
            conn.execute("INSERT INTO patients (name, nif, created_at) VALUES (?, ?, 'x')", (f"P{n}", nif))
            conn.execute("INSERT INTO appointments (patient_id, doctor_id, speciality_id, center_id, date, time,"
                         " end_time, status, created_at, updated_at) VALUES (?, 'MARTIN', 'MG', 'C1', '2026-11-24',"
                         " ?, ?, ?, 'x', 'x')", (n, time_text, hhmm(minutes_of(time_text) + 30), status))
    columns = ", ".join(row[1] for row in conn.execute("PRAGMA table_info(appointments)"))
    before = [tuple(row) for row in conn.execute(f"SELECT {columns} FROM appointments ORDER BY id")]
    conn.close()
    assert f"from schema version {newest - 1} to {newest}" in migrated(db_path)
    api = Api(agenda.create_app(db_path, SECRET, now=Clock(MONDAY)))
    try:
        assert api.db().execute("PRAGMA user_version").fetchone()[0] == newest
        assert [tuple(row) for row in api.db().execute(f"SELECT {columns} FROM appointments ORDER BY id")] == before
        listed = api.get("/appointments?date=24/11/2026").json["data"]
        assert [(a["time"], a["extraData"]["status"]) for a in listed] == [("09:00", "booked"), ("09:30", "confirmed")]
        times = [slot["time"] for slot in api.get("/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]
        assert times == ["10:00", "10:30"]
    finally:
        api.app.clinic.db.close()


def test_staff_made_before_roles_become_admins_and_the_upgrade_says_so(tmp_path, caplog):
    db_path = tmp_path / "clinic.db"
    conn = agenda.connect(db_path)
    agenda.migrate(conn, read_schema().split("-- version 7")[0])
    with agenda.transaction(conn):
        for name in ("luis", "ana"):
            conn.execute("INSERT INTO staff (name, password, created_at) VALUES (?, 'x', 'x')", (name,))
    with caplog.at_level("INFO", logger="agenda"):
        agenda.migrate(conn)
    assert [tuple(row) for row in conn.execute("SELECT name, role FROM staff ORDER BY name")] == [
        ("ana", "admin"), ("luis", "admin")]
    assert "staff accounts made before roles are now admin: ana, luis" in caplog.text
    conn.close()
    fresh = agenda.connect(tmp_path / "fresh.db")
    caplog.clear()
    agenda.migrate(fresh)
    assert "now admin" not in caplog.text  # a new database has no one to tell about
    fresh.close()


def test_an_upgrade_first_keeps_the_database_as_it_was_beside_it(tmp_path):
    """One path for every upgrade ("Schema"): a checked, private copy named with both versions, kept;
    a new database has nothing to keep; a second try of the same upgrade keeps both copies."""
    db_path = tmp_path / "clinic.db"
    conn = agenda.connect(db_path)
    agenda.migrate(conn, SCHEMA_V3.split("-- version 3")[0])
    with agenda.transaction(conn):
        conn.execute("INSERT INTO notes (body) VALUES ('written at version 2')")
    assert agenda.migrate(conn, SCHEMA_V3) == 3
    aside = tmp_path / "clinic.db.before-schema-2-to-3"
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600
    kept = sqlite3.connect(aside)
    assert kept.execute("PRAGMA user_version").fetchone()[0] == 2
    assert kept.execute("SELECT body FROM notes").fetchall() == [("written at version 2",)]
    kept.close()
    conn.execute("PRAGMA user_version = 2")
    agenda.migrate(conn, SCHEMA_V3.replace("INSERT INTO notes", "INSERT OR IGNORE INTO notes"))
    assert len(list(tmp_path.glob("clinic.db.before-schema-2-to-3*"))) == 2
    assert not list(tmp_path.glob("fresh.db.before-*")) and agenda.migrate(agenda.connect(tmp_path / "fresh.db"),
                                                                           SCHEMA_V3) == 3
    assert not list(tmp_path.glob("fresh.db.before-*"))


def test_version_5_takes_who_booked_each_appointment_from_the_audit_trail(tmp_path):
    """The clinic's record says who booked an appointment; the bookings made before version 5 take it
    from their booking event, the newer ones have it on their row ("Appointment records")."""
    db_path = tmp_path / "clinic.db"
    conn = agenda.connect(db_path)
    agenda.migrate(conn, read_schema().split("-- version 5")[0])
    seed_at_old_version(conn, tmp_path)
    with agenda.transaction(conn):
        for n, (source, start, end) in enumerate([("api", "09:00", "09:30"), ("desk:ana", "09:30", "10:00"),
                                                  (None, "10:00", "10:30")], start=1):
            conn.execute("INSERT INTO patients (name, nif, created_at) VALUES (?, ?, 'x')", (f"P{n}", valid_dni(n)))
            conn.execute("INSERT INTO appointments (patient_id, doctor_id, speciality_id, center_id, date, time,"
                         " end_time, created_at, updated_at) VALUES (?, 'MARTIN', 'MG', 'C1', '2026-11-24', ?, ?,"
                         " 'x', 'x')", (n, start, end))
            if source:
                conn.execute("INSERT INTO events (at, source, action, entity, entity_id) VALUES"
                             " ('x', ?, 'appointment.booked', 'appointment', ?)", (source, str(n)))
    conn.close()
    migrated(db_path)
    clinic = agenda.Clinic(agenda.Database(db_path), clock=Clock(MONDAY))
    try:
        assert [a["booked_by"] for a in live_appointments(clinic, days=["2026-11-24"])] == ["api", "desk:ana", None]
        patient = register_patient(clinic, {"name": "Eva", "nif": valid_dni(9)}, source="desk:luis")
        booked = book_appointment(clinic, Visit(patient_id=patient, doctor_id="RUIZ", insurance_id="PRIV"),
                                  day=dt.date(2026, 11, 25), time_text="09:00", source="desk:luis")
        assert read_appointment(clinic, booked)["booked_by"] == "desk:luis"
    finally:
        clinic.db.close()


def test_the_upgrade_that_rebuilds_patients_keeps_every_row_id_and_reference(tmp_path, api, db_path):
    """Version 7 rebuilds `patients` (the NIF's unique constraint becomes an index that skips blocked
    records): every patient, id and appointment's reference survives, and a broken reference stops it."""
    patient = api.new_patient()
    api.book(patient)
    api.app.clinic.db.close()
    old = tmp_path / "old.db"
    conn = agenda.connect(old)
    agenda.migrate(conn, read_schema().split("-- version 7")[0])
    seed_at_old_version(conn, tmp_path)
    source = sqlite3.connect(db_path)
    columns = "id, name, surname, birth_date, nif, phone, phone_e164, created_at"
    rows = source.execute(f"SELECT {columns} FROM patients").fetchall()
    source.close()
    with agenda.transaction(conn):
        conn.executemany(f"INSERT INTO patients ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.execute("INSERT INTO appointments (patient_id, doctor_id, date, time, end_time, created_at, updated_at)"
                     " VALUES (?, 'MARTIN', '2026-11-24', '09:00', '09:15', 'x', 'x')", (rows[0][0],))
    agenda.migrate(conn)
    assert [tuple(row) for row in conn.execute(f"SELECT {columns} FROM patients")] == rows
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    with pytest.raises(sqlite3.IntegrityError):  # the references still hold after the rebuild
        conn.execute("INSERT INTO appointments (patient_id, doctor_id, date, time, end_time, created_at, updated_at)"
                     " VALUES (999, 'MARTIN', '2026-11-24', '10:00', '10:15', 'x', 'x')")
    conn.close()
    broken = agenda.connect(tmp_path / "broken.db")
    with pytest.raises(sqlite3.IntegrityError, match="broken references"):
        agenda.migrate(broken, read_schema().replace(
            "INSERT INTO patients_v7", "INSERT INTO appointments (patient_id, doctor_id, date, time, end_time, "
            "created_at, updated_at) VALUES (5, 'X', 'd', 't', 'u', 'x', 'x');\nINSERT INTO patients_v7"))
    assert broken.execute("PRAGMA user_version").fetchone()[0] == 6  # the failed section left nothing
    broken.close()


def test_insurance_lists_made_before_centers_had_their_own_hold_at_each_center_of_the_doctor(tmp_path):
    """Version 8 gives each doctor's list of insurances a center: a list made before holds at every
    center where the doctor has hours, and a doctor without hours keeps it for the clinic."""
    conn = agenda.connect(tmp_path / "clinic.db")
    agenda.migrate(conn, read_schema().split("-- version 8")[0])
    seed_at_old_version(conn, tmp_path)
    with agenda.transaction(conn):
        conn.execute("INSERT INTO doctors (id, name, speciality_id) VALUES ('NUEVO', 'Sin horas', 'MG')")
        conn.executemany("INSERT INTO doctor_insurances (doctor_id, insurance_id) VALUES (?, ?)",
                         [("MARTIN", "SAN"), ("NUEVO", "DKV")])
    agenda.migrate(conn)
    assert [tuple(row) for row in conn.execute("SELECT doctor_id, center_id, insurance_id FROM doctor_insurances"
                                               " ORDER BY 1, 2, 3")] == [
        ("MARTIN", "C1", "SAN"), ("MARTIN", "C2", "SAN"), ("NUEVO", None, "DKV"), ("RUIZ", "C1", "PRIV"),
        ("RUIZ", "C1", "SAN")]
    conn.close()


# Upgrades under races (docs/design.md, "Schema"): only `agenda run` and `agenda migrate` upgrade

OLD_VERSION = 9  # the sections above it rebuild tables and add kept_forms, which the field's race made twice


def old_clinic(tmp_path, name="old.db"):
    """The test clinic at schema version OLD_VERSION with three patients and their appointments, in WAL
    mode as a served database is."""
    db_path = tmp_path / name
    conn = agenda.connect(db_path)
    conn.execute("PRAGMA journal_mode = WAL")
    agenda.migrate(conn, read_schema().split(f"-- version {OLD_VERSION + 1}")[0])
    seed_at_old_version(conn, tmp_path)
    with agenda.transaction(conn):
        for n in range(1, 4):
            conn.execute("INSERT INTO patients (name, nif, created_at) VALUES (?, ?, 'x')", (f"P{n}", valid_dni(n)))
            conn.execute("INSERT INTO appointments (patient_id, doctor_id, speciality_id, center_id, date, time,"
                         " end_time, created_at, updated_at) VALUES (?, 'MARTIN', 'MG', 'C1', '2026-11-24', ?, ?,"
                         " 'x', 'x')", (n, f"{8 + n:02d}:00", f"{8 + n:02d}:30"))
    conn.close()
    return db_path


def clinic_rows(db_path):
    """What an upgrade must keep: the patients and appointments, by the columns every version has."""
    conn = sqlite3.connect(db_path)
    try:
        return (conn.execute("SELECT id, name, nif FROM patients ORDER BY id").fetchall(),
                conn.execute("SELECT id, patient_id, doctor_id, date, time, status FROM appointments ORDER BY id"
                             ).fetchall())
    finally:
        conn.close()


def schema_of(db_path):
    """(user_version, every table, index and trigger by kind and name, integrity, broken references)."""
    conn = sqlite3.connect(db_path)
    try:
        return (conn.execute("PRAGMA user_version").fetchone()[0],
                sorted(conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")),
                conn.execute("PRAGMA integrity_check").fetchall(), conn.execute("PRAGMA foreign_key_check").fetchall())
    finally:
        conn.close()


def test_two_processes_finding_one_old_database_upgrade_it_once_between_them(tmp_path):
    """The field's race: a service start and the backup timer (or two admins) on one old file. Ten rounds of
    two real processes started at once, `agenda migrate` twice or `agenda run` beside `agenda migrate`: both
    succeed, one upgrades and keeps the one copy, the other finds nothing to do; the schema is the newest, as
    a new database's, and every row is there."""
    template = old_clinic(tmp_path)
    rows = clinic_rows(template)
    agenda.open_database(tmp_path / "new.db").close()
    newest = schema_sections(read_schema())[-1][0]
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    env.update(AGENDA_SECRET=SECRET, PYTHONUNBUFFERED="1")
    for round_number in range(10):
        folder = tmp_path / f"round-{round_number}"
        folder.mkdir()
        db_path = folder / "clinic.db"
        shutil.copyfile(template, db_path)
        command = agenda_command("migrate", "--db", str(db_path))
        first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if round_number % 3 == 2:  # the service starting beside it
            server = Server(agenda_command("run", "--db", str(db_path), "--port", "0"), env)
            assert server.terminate() == 0, server.log()
            other = server.log()
        else:
            second = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                    timeout=60)
            assert second.returncode == 0, second.stdout
            other = second.stdout
        said = first.communicate(timeout=60)[0]
        assert first.returncode == 0, said
        assert (said + other).count("kept as") == 1, said + other  # one upgraded (the service logs it)
        upgraded_by_the_service = "upgrading" in other
        assert said.count("nothing to do") + other.count("nothing to do") == (
            upgraded_by_the_service if round_number % 3 == 2 else 1), said + other  # the other found it done
        assert schema_of(db_path) == schema_of(tmp_path / "new.db") and schema_of(db_path)[0] == newest
        assert clinic_rows(db_path) == rows
        (kept,) = [path for path in folder.iterdir() if ".before-schema-" in path.name]
        assert kept.name == f"clinic.db.before-schema-{OLD_VERSION}-to-{newest}" and kept.stat().st_mode & 0o077 == 0
        assert schema_of(kept)[0] == OLD_VERSION and clinic_rows(kept) == rows


def test_a_section_another_process_ran_meanwhile_is_skipped_inside_its_own_transaction(tmp_path):
    """Each section reads the version again inside its write transaction: a process that read the old version
    before another upgraded skips what is done instead of failing on it ("table kept_forms already exists")."""
    db_path = old_clinic(tmp_path)
    late = agenda.connect(db_path)
    assert schema_version(late) == OLD_VERSION  # read before the other process upgraded
    other = agenda.connect(db_path)
    agenda.migrate(other)
    other.close()
    sections = dict(schema_sections(read_schema()))
    assert run_section(late, OLD_VERSION + 1, sections[OLD_VERSION + 1]) is False
    assert upgrade(late).ran == [] and late.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    late.close()
    assert len(list(tmp_path.glob("old.db.before-schema-*"))) == 1


def test_a_section_runs_statement_by_statement_each_trigger_whole():
    """A section runs inside a transaction of ours (executescript would commit it first), so it is split into
    statements: at each ';' that completes one, never inside a trigger's body, a string or a comment."""
    sections = schema_sections(read_schema())
    for version, sql in sections:
        statements = sql_statements(sql)
        assert sql.startswith("".join(statements)) and all(map(sqlite3.complete_statement, statements)), version
    triggers = [text for _, sql in sections for text in sql_statements(sql) if "CREATE TRIGGER" in text]
    assert triggers and all(text.rstrip().endswith("END;") and text.count(";") >= 2 for text in triggers)
    assert sql_statements("INSERT INTO t VALUES ('a;b'); -- c;d\nSELECT 1;\n-- the end\n") == [
        "INSERT INTO t VALUES ('a;b');", " -- c;d\nSELECT 1;"]
    with pytest.raises(RuntimeError, match="without its ';'"):
        sql_statements("CREATE TABLE a (x);\nCREATE TABLE b (y)\n-- the end\n")


@pytest.mark.parametrize("command", [("day", "24/11/2026"), ("status",), ("staff", "list"), ("report",),
                                     ("retention", "run"), ("seed", "{catalogs}"), ("standby", "promote")],
                         ids=" ".join)
def test_every_other_command_refuses_an_older_schema_naming_agenda_migrate_and_changes_nothing(tmp_path, command):
    db_path = old_clinic(tmp_path, "clinic.db")
    catalogs = write_csv(tmp_path, CLINIC_CSV)
    before = db_path.read_bytes()
    result = CliRunner().invoke(agenda.cli, [arg.format(catalogs=catalogs) for arg in command] + ["--db", str(db_path)])
    if command == ("standby", "promote"):  # a standby's copy is not upgraded there either: `agenda run` does it
        assert result.exit_code == 0 and f"agenda run --db {db_path}" in result.output, result.output
    else:
        assert result.exit_code == 1 and result.output.startswith("Error: "), result.output
        assert len(result.output.splitlines()) == 1 and "Traceback" not in result.output
        assert f"schema version {OLD_VERSION}, older" in result.output
        assert f"`agenda migrate --db {db_path}`" in result.output
    assert db_path.read_bytes() == before and schema_of(db_path)[0] == OLD_VERSION
    assert not list(tmp_path.glob("clinic.db.before-*"))


def test_the_app_and_the_library_refuse_an_older_database_too(tmp_path):
    db_path = old_clinic(tmp_path)
    with pytest.raises(SchemaBehind, match="agenda migrate"):
        agenda.create_app(db_path, SECRET)
    with pytest.raises(SchemaBehind, match="agenda migrate"):
        agenda.Database(db_path)
    assert schema_of(db_path)[0] == OLD_VERSION


def test_a_backup_copies_an_older_database_as_it_is(tmp_path):
    db_path = old_clinic(tmp_path, "clinic.db")
    result = CliRunner().invoke(agenda.cli, ["backup", str(tmp_path / "copy.db"), "--db", str(db_path)])
    assert result.exit_code == 0 and "integrity ok" in result.output, result.output
    assert schema_of(tmp_path / "copy.db")[0] == schema_of(db_path)[0] == OLD_VERSION
    assert clinic_rows(tmp_path / "copy.db") == clinic_rows(db_path)
    assert not list(tmp_path.glob("clinic.db.before-*"))
    assert "nothing to do" not in migrated(db_path) and migrated(db_path).endswith("nothing to do.\n")
