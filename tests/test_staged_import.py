"""Imports never hold the clinic (docs/design.md, "Imports never hold the clinic"): rows are checked and staged
without the write lock, made live in one short commit, and an import killed at any moment leaves nothing."""

import datetime as dt
import signal
import sqlite3
import subprocess
import time

import pytest

from _agenda.files.open_formats import appointment_rows
from _agenda.files.staged_import import import_appointments
from _agenda.values.refusals import ClinicError

from conftest import agenda_command, seed, valid_dni, write_csv

LONG_DAYS = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to
center,C1,Centro,,,,,,,,
speciality,MG,Medicina general,,,,,,,,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-sun,08:00-20:00,15,,
"""


def appointments_file(tmp_path, count, first=dt.date(2027, 1, 4)):
    """`count` appointments of MARTIN, 48 a day from `first`, each of a new patient."""
    lines = ["date,time,duration,doctor,center,nif,name,phone,status"]
    for n in range(count):
        day, minute = first + dt.timedelta(days=n // 48), 8 * 60 + 15 * (n % 48)
        lines.append(f"{day:%d/%m/%Y},{minute // 60:02d}:{minute % 60:02d},15,MARTIN,C1,{valid_dni(50_000 + n)},"
                     f"Paciente {n},6{n:08d},booked")
    return write_csv(tmp_path, "\n".join(lines) + "\n", "old.csv")


def counts(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT (SELECT count(*) FROM appointments), (SELECT count(*) FROM patients)").fetchone()
    finally:
        conn.close()


def test_an_import_killed_at_any_moment_leaves_nothing_and_a_whole_one_everything(db_path, tmp_path):
    seed(db_path, write_csv(tmp_path, LONG_DAYS))
    source = appointments_file(tmp_path, 20_000)  # about 2 s of work
    for after in (0.5, 1.0, 1.5, 2.0):  # while reading, staging, checking, or committing
        process = subprocess.Popen(agenda_command("import-appointments", str(source), "--db", str(db_path)),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(after)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert counts(db_path) in ((0, 0), (20_000, 20_000)), after
        if counts(db_path) == (20_000, 20_000):
            break
    else:
        done = subprocess.run(agenda_command("import-appointments", str(source), "--db", str(db_path)),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert counts(db_path) == (20_000, 20_000)
    assert not list(tmp_path.glob("etilqs_*")) and not list(tmp_path.glob("*-journal"))  # no staging left behind


def test_staging_takes_no_write_lock_and_a_booking_made_meanwhile_is_kept_or_named(make_api, tmp_path):
    api = make_api(LONG_DAYS)
    clinic = api.app.clinic
    source = appointments_file(tmp_path, 200)
    rows = list(appointment_rows(source))
    other = sqlite3.connect(clinic.db.path, timeout=0)  # a writer that would fail at once on a held lock

    def streamed():
        for number, row in enumerate(rows):
            if number == 100:  # halfway through the file, the caller books another patient
                other.execute("BEGIN IMMEDIATE")
                other.execute("INSERT INTO patients (name, nif, created_at) VALUES ('Otra', ?, '2026-11-23T07:00Z')",
                              (valid_dni(7),))
                other.execute("COMMIT")
            yield row
    done = import_appointments(clinic, streamed(), "old.csv", source="cli")
    other.close()
    assert (done.rows, done.appointments, done.patients, done.problem_count) == (200, 200, 200, 0)
    assert counts(clinic.db.path) == (200, 201)


def test_an_overlap_booked_while_the_import_was_checked_refuses_it_whole(make_api, tmp_path, monkeypatch):
    """The triggers are the last word: a booking made between the checks and the commit refuses the import."""
    api = make_api(LONG_DAYS)
    clinic = api.app.clinic
    source = appointments_file(tmp_path, 10)
    import _agenda.files.staged_import as staged

    real = staged.check_overlaps

    def and_then_a_booking(conn, problems):
        real(conn, problems)
        api.book(api.new_patient(), date="04/01/2027", time="08:00")
    monkeypatch.setattr(staged, "check_overlaps", and_then_a_booking)
    with pytest.raises(ClinicError) as refused:
        import_appointments(clinic, appointment_rows(source), "old.csv", source="cli")
    assert refused.value.code == "SLOT_NOT_AVAILABLE" and "run the import again" in refused.value.message
    assert counts(clinic.db.path) == (1, 1)  # the caller's booking only
