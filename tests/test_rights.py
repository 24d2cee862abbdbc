"""The patient's rights (docs/design.md, "Access record"): every read of a patient's data by the
desk, the caller or the CLI is recorded with ids only, and shown to an admin by `agenda
access-log` and the desk's page."""

import datetime as dt
import json
import re
import sqlite3

import pytest
import webtest
from click.testing import CliRunner

import agenda
from _agenda.cli.root import cli_reader

from conftest import Clock, MONDAY, valid_dni

PASSWORD = "correct horse battery"


def access_rows(db_path):
    """(reader, kind, allowed, patient id as the API writes it, reads) for every row of the record of reads,
    the first read first (a row is one patient, reader, kind and outcome on one day)."""
    conn = sqlite3.connect(db_path)
    try:
        return [(reader, kind, bool(allowed), str(patient), reads) for reader, kind, allowed, patient, reads in
                conn.execute("SELECT reader, kind, allowed, patient_id, reads FROM access_reads"
                             " ORDER BY first_at, patient_id, reader, kind")]
    finally:
        conn.close()


def desk_client(api, name="ana", role="reception"):
    """A desk session of a new staff account with this role."""
    api.app.accounts.add_staff(name, PASSWORD, role=role)
    client = webtest.TestApp(api.app)
    form = client.get("/desk/login").forms[0]
    form["name"], form["password"] = name, PASSWORD
    assert form.submit().status_int == 303
    return client


def search(client, query):
    form, = [form for form in client.get("/desk/patients").forms.values() if "q" in form.fields]
    form["q"] = query
    return form.submit()


def test_the_callers_reads_of_a_patient_are_recorded_as_api_and_a_repeat_adds_to_its_days_row(api, db_path, clock):
    patient = api.new_patient()
    other = api.new_patient(nif=valid_dni(11111111), phone="622000111")
    booked = api.book(patient)
    assert access_rows(db_path) == []  # registering and booking read nobody's data back
    assert api.get("/patients?nif=12345678Z").status_int == 200
    clock.moment += dt.timedelta(minutes=1)
    assert api.get("/patients?nif=12345678Z").status_int == 200  # the same answer a moment later
    assert api.get(f"/appointments/{booked}").status_int == 200
    assert api.get("/appointments?nif=12345678Z").status_int == 200
    assert api.get("/appointments?date=24/11/2026").status_int == 200  # the reminder list reads its patients too
    assert api.get("/patients?nif=99999999R").status_int == 404
    assert sorted(access_rows(db_path)) == [
        ("api", "appointment", True, patient, 1), ("api", "day", True, patient, 1), ("api", "patient", True, patient, 2),
        ("api", "search", True, patient, 1)]
    first, last = sqlite3.connect(db_path).execute("SELECT first_at, last_at FROM access_reads WHERE kind = 'patient'"
                                                   ).fetchone()
    assert last - first == 60
    clock.moment += dt.timedelta(days=1)  # another day: a row of its own
    api.get("/patients?nif=12345678Z")
    assert access_rows(db_path)[-1] == ("api", "patient", True, patient, 1) and len(access_rows(db_path)) == 5
    assert other not in {row[3] for row in access_rows(db_path)}


def test_the_desk_records_each_page_a_search_and_the_day_with_the_ids_shown(api, db_path, clock):
    first, second = api.new_patient(), api.new_patient(nif=valid_dni(11111111), phone="622000111")
    appointment = api.book(first)
    api.book(second, time="09:30")
    desk = desk_client(api)
    desk.get(f"/desk/patients/{first}")
    desk.get(f"/desk/patients/{first}")  # a refresh: the same row, counted twice
    desk.get(f"/desk/appointments/{appointment}")
    search(desk, "ana")
    clock.moment += dt.timedelta(seconds=1)
    search(desk, "ana")
    desk.get("/desk/day?date=24/11/2026")
    assert sorted(access_rows(db_path)) == [
        ("desk:ana", "appointment", True, first, 1), ("desk:ana", "day", True, first, 1),
        ("desk:ana", "day", True, second, 1), ("desk:ana", "patient", True, first, 2),
        ("desk:ana", "search", True, first, 2), ("desk:ana", "search", True, second, 2)]


def test_the_record_holds_ids_never_a_name_nif_or_phone(api, db_path):
    patient = api.new_patient(name="Zuriñe", surname="Etxeberria", phone="699887766")
    desk = desk_client(api)
    desk.get(f"/desk/patients/{patient}")
    search(desk, "Zuriñe")
    api.get("/patients?nif=12345678Z")
    conn = sqlite3.connect(db_path)
    dump = "\n".join(conn.iterdump())
    conn.close()
    recorded = [line for line in dump.splitlines() if "access_" in line and line.startswith("INSERT")]
    assert len(recorded) >= 3
    assert not any(word in line for line in recorded for word in ("Zuriñe", "Etxeberria", "12345678Z", "699887766"))


def test_only_an_admin_sees_who_read_a_patient_and_a_refusal_is_recorded(api, db_path, clock):
    patient = api.new_patient()
    reception = desk_client(api)
    reception.get(f"/desk/patients/{patient}")
    assert "/access" not in reception.get(f"/desk/patients/{patient}").text  # hidden from reception
    refused = reception.get(f"/desk/patients/{patient}/access", expect_errors=True)
    assert refused.status_int == 403 and "administración" in refused.text
    clock.moment += dt.timedelta(minutes=5)
    admin = desk_client(api, "luis", role="admin")
    page = admin.get(f"/desk/patients/{patient}")
    page = page.click(href=f"/desk/patients/{patient}/access")
    readers = [[cell.text for cell in row.select("td")] for row in page.html.select("tbody tr")]
    assert [row[0] for row in readers] == ["desk:luis", "desk:ana"]  # a row a reader, the latest first
    assert readers[0][1] == "este registro de lecturas, ficha del paciente" and readers[0][3] == "2"
    assert readers[1][1] == "este registro de lecturas, ficha del paciente" and readers[1][4] == "1"  # one refused
    detail = page.click(href="reader=desk%3Aana")
    days = [[cell.text for cell in row.select("td")] for row in detail.html.select("#detail + table tbody tr")]
    assert sorted(row[2:] for row in days) == [["este registro de lecturas", "1", "denegado"],
                                               ["ficha del paciente", "2", "permitido"]]
    assert ("desk:ana", "access", False, patient, 1) in access_rows(db_path)
    assert admin.get("/desk/patients/999/access", expect_errors=True).status_int == 404


def test_the_cli_reads_are_recorded_as_the_login_and_access_log_lists_them(api, db_path, tmp_path):
    patient = api.new_patient()
    api.book(patient)
    desk = desk_client(api)
    desk.get(f"/desk/patients/{patient}")
    runner = CliRunner(env={"AGENDA_DB": str(db_path)})
    clock = Clock(MONDAY + dt.timedelta(hours=2))
    assert runner.invoke(agenda.cli, ["day", "24/11/2026"], obj={"now": clock}).exit_code == 0
    listed = runner.invoke(agenda.cli, ["access-log", "--patient", str(patient)], obj={"now": clock})
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert len(lines) == 2
    assert "desk:ana  patient page x1  allowed" in lines[0]
    assert f"{cli_reader()}  day list x1  allowed" in lines[1] and lines[1].startswith("23/11/2026 10:00")
    since = runner.invoke(agenda.cli, ["access-log", "--patient", str(patient), "--since", "24/11/2026"])
    assert since.exit_code == 0 and "No reads of patient" in since.output
    unknown = runner.invoke(agenda.cli, ["access-log", "--patient", "999"])
    assert unknown.exit_code == 1 and "no patient" in unknown.output
    wrong = runner.invoke(agenda.cli, ["access-log", "--patient", str(patient), "--since", "ayer"])
    assert wrong.exit_code == 1 and "not a date" in wrong.output


def test_a_running_service_writes_the_record_in_batches_and_writes_what_is_left_when_it_stops(api, db_path):
    """Once started, reads wait in memory for the next batch (a second apart in service); reading the
    record or stopping writes them first, so nothing noted is lost by a clean stop."""
    patient = api.new_patient()
    access = api.app.clinic.access
    access.start(every=3600)  # no batch falls due during the test
    try:
        api.get("/patients?nif=12345678Z")
        assert access_rows(db_path) == []  # noted, not yet written
        assert [(r["reader"], r["kind"]) for r in api.app.clinic.access.of_patient(patient)] == [("api", "patient")]
        desk = desk_client(api)
        desk.get(f"/desk/patients/{patient}")
    finally:
        access.stop()
    assert access_rows(db_path) == [("api", "patient", True, patient, 1), ("desk:ana", "patient", True, patient, 1)]


def test_a_busy_database_keeps_the_batch_for_the_next_turn(api, db_path):
    patient = api.new_patient()
    access = api.app.clinic.access
    access.start(every=3600)
    try:
        api.get("/patients?nif=12345678Z")
        blocker = sqlite3.connect(db_path, timeout=0)
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock past the busy timeout
        api.app.clinic.db.connection().execute("PRAGMA busy_timeout = 50")
        try:
            with pytest.raises(sqlite3.OperationalError):
                access.flush()
        finally:
            blocker.rollback()
            blocker.close()
    finally:
        access.stop()
    assert access_rows(db_path) == [("api", "patient", True, patient, 1)]


# Erasure under the retention law ("Erasure and retention")

def cli(db_path, *args, at=MONDAY, input=None):
    """`agenda ARGS` on this database at this clinic time."""
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_RETENTION_YEARS": None})
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(at)}, input=input)


def at(year, month, day, hour=8):
    return dt.datetime(year, month, day, hour, tzinfo=MONDAY.tzinfo)


def patient_with_a_past_and_a_coming_appointment(api, clock):
    """Ana (12345678Z) seen on 24/11/2026 and booked again on 26/11; the clock on 25/11."""
    patient = api.new_patient()
    seen = api.book(patient)
    clock.set(2026, 11, 25)
    coming = api.book(patient, date="26/11/2026", time="10:00")
    return patient, seen, coming


def test_an_erasure_request_cancels_what_is_coming_and_blocks_the_patient_out_of_every_answer(api, db_path, clock):
    patient, seen, coming = patient_with_a_past_and_a_coming_appointment(api, clock)
    asked = cli(db_path, "patient", "erase", patient, at=clock.moment, input="n\n")
    assert asked.exit_code == 1 and f"will cancel {coming}: 26/11/2026 10:00" in asked.output
    assert "erasable from 24/11/2031" in asked.output and "nothing was done" in asked.output
    assert api.get("/patients?nif=12345678Z").status_int == 200  # a "no" changed nothing
    erased = cli(db_path, "patient", "erase", patient, "--yes", at=clock.moment)
    assert erased.exit_code == 0, erased.output
    assert "1 appointment(s) cancelled; blocked until 24/11/2031" in erased.output
    assert f"Erasure request of patient {patient} (NIF 12345678Z)" in erased.output  # the notice to forward
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT status, cancel_reason FROM appointments WHERE id = ?", (coming,)).fetchone() == (
        "cancelled", "erasure requested")
    assert conn.execute("SELECT source FROM events WHERE action = 'patient.erasure_requested'").fetchone() == ("cli",)
    conn.close()
    assert api.get("/patients?nif=12345678Z").status_int == 404
    assert api.get("/appointments?nif=12345678Z").json["data"] == []
    assert api.get(f"/appointments/{seen}").status_int == 404
    assert api.get("/appointments?date=24/11/2026").json["data"] == []
    desk = desk_client(api, role="admin")
    assert not re.search(r"/desk/patients/\d", search(desk, "García").text)
    assert desk.get(f"/desk/patients/{patient}", expect_errors=True).status_int == 404
    again = api.new_patient()  # the NIF is free: a new record that learns nothing of the old one
    assert again != patient and api.get("/patients?nif=12345678Z").json["id"] == again
    assert api.get("/appointments?nif=12345678Z").json["data"] == []
    assert cli(db_path, "patient", "erase", patient, "--yes").exit_code == 1  # once is enough


def test_the_retention_run_anonymises_on_the_day_the_period_ends_and_never_before(api, db_path, clock):
    patient, seen, coming = patient_with_a_past_and_a_coming_appointment(api, clock)
    api.get("/patients?nif=12345678Z")  # an access on 25/11/2026
    assert cli(db_path, "patient", "erase", patient, "--yes", at=clock.moment).exit_code == 0
    early = cli(db_path, "retention", "run", at=at(2031, 11, 23, 23))
    assert early.exit_code == 0 and "Anonymised 0 patient(s): none." in early.output
    assert "1 blocked patient(s) wait for their period to end; the next on 24/11/2031" in early.output
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT nif, anonymised_at FROM patients WHERE id = ?", (patient,)).fetchone() == (
        "12345678Z", None)
    due = cli(db_path, "retention", "run", at=at(2031, 11, 24, 0))
    assert due.exit_code == 0 and f"Anonymised 1 patient(s): {patient}." in due.output
    name, nif, phone, birth = conn.execute("SELECT name, nif, phone, birth_date FROM patients WHERE id = ?",
                                           (patient,)).fetchone()
    assert (name, nif, phone, birth) == ("Anonimizado", f"ANON-{patient}", None, None)
    assert conn.execute("SELECT count(*) FROM appointments WHERE patient_id = ?", (patient,)).fetchone() == (2,)
    trail = "\n".join(str(row) for row in conn.execute("SELECT * FROM events"))
    assert not any(word in trail for word in ("García", "12345678Z", "612345678", "1980-02-01", "Revisión"))
    assert "patient.anonymised" in trail
    conn.close()


def test_a_patient_never_seen_is_anonymised_at_once_and_the_law_s_minimum_holds(api, db_path):
    patient = api.new_patient()
    short = cli(db_path, "patient", "erase", patient, "--yes", "--retention-years", "4")
    assert short.exit_code == 2 and "Ley 41/2002" in short.output
    erased = cli(db_path, "patient", "erase", patient, "--yes")
    assert erased.exit_code == 0 and "anonymised now: no appointment took place" in erased.output
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT name FROM patients WHERE id = ?", (patient,)).fetchone() == ("Anonimizado",)
    conn.close()


def test_access_records_are_kept_two_years_then_removed_by_the_retention_run(api, db_path, clock):
    api.new_patient()
    api.get("/patients?nif=12345678Z")  # 23/11/2026 08:00
    kept = cli(db_path, "retention", "run", at=MONDAY + dt.timedelta(days=730) - dt.timedelta(minutes=1))
    assert "Removed 0 access record(s)" in kept.output and len(access_rows(db_path)) == 1
    gone = cli(db_path, "retention", "run", at=MONDAY + dt.timedelta(days=730, minutes=1))
    assert "Removed 1 access record(s)" in gone.output and access_rows(db_path) == []


# The patient's copy ("A patient's copy")

def test_the_patients_copy_holds_everything_and_is_recorded_as_an_export(api, db_path, clock, tmp_path):
    patient, seen, coming = patient_with_a_past_and_a_coming_appointment(api, clock)
    api.delete(f"/appointments/{coming}")
    out = tmp_path / "ana.json"
    made = cli(db_path, "patient", "export", patient, "--output", out, at=clock.moment)
    assert made.exit_code == 0, made.output
    assert out.stat().st_mode & 0o777 == 0o600
    copy = json.loads(out.read_text())
    assert copy["patient"]["nif"] == "12345678Z" and copy["patient"]["name"] == "Ana"
    assert [(a["id"], a["status"]) for a in copy["appointments"]] == [(int(seen), "booked"), (int(coming),
                                                                                             "cancelled")]
    assert [e["action"] for e in copy["history"]] == [
        "patient.created", "appointment.booked", "appointment.booked", "appointment.cancelled"]
    assert [(r["reader"], r["kind"]) for r in copy["accesses"]] == [(cli_reader(), "export")]
    again = cli(db_path, "patient", "export", patient, "--output", out)
    assert again.exit_code == 1 and "exists" in again.output
    page = cli(db_path, "patient", "export", patient, "--format", "html")
    assert page.exit_code == 0 and "<h2>Sus citas</h2>" in page.output and "anulada" in page.output
    assert "una copia de sus datos" in page.output


def test_a_blocked_record_opens_only_with_a_reason_and_each_opening_is_recorded(api, db_path, clock):
    patient, seen, coming = patient_with_a_past_and_a_coming_appointment(api, clock)
    assert cli(db_path, "patient", "erase", patient, "--yes", at=clock.moment).exit_code == 0
    refused = cli(db_path, "patient", "export", patient)
    assert refused.exit_code == 1 and "blocked" in refused.output and "12345678Z" not in refused.output
    opened = cli(db_path, "patient", "export", patient, "--why", "Juzgado n.º 3, diligencias 12/2027")
    assert opened.exit_code == 0 and '"nif": "12345678Z"' in opened.output
    conn = sqlite3.connect(db_path)
    (after,), = conn.execute("SELECT after FROM events WHERE action = 'patient.blocked_opened'")
    assert json.loads(after) == {"why": "Juzgado n.º 3, diligencias 12/2027"}
    conn.close()
    kinds = [(kind, allowed) for reader, kind, allowed, _, _ in access_rows(db_path) if kind != "change"]
    assert sorted(kinds) == [("blocked", False), ("blocked", True), ("preview", True)]


def test_the_desk_gives_an_admin_the_copy_and_the_erasure_and_refuses_reception(api, db_path, clock):
    patient, seen, coming = patient_with_a_past_and_a_coming_appointment(api, clock)
    reception = desk_client(api)
    for path in ("copy", "copy?format=json", "erase"):
        assert reception.get(f"/desk/patients/{patient}/{path}", expect_errors=True).status_int == 403
    admin = desk_client(api, "luis", role="admin")
    page = admin.get(f"/desk/patients/{patient}")
    download = page.click(href=f"/desk/patients/{patient}/copy\\?format=json")
    assert download.headers["Content-Disposition"] == f'attachment; filename="paciente-{patient}.json"'
    assert download.json["patient"]["nif"] == "12345678Z" and download.headers["Cache-Control"] == "no-store"
    preview = page.click(href=f"/desk/patients/{patient}/erase")
    assert "26/11/2026 10:00" in preview.text and "24/11/2031" in preview.text
    assert api.get(f"/appointments/{coming}").status_int == 200  # the preview changed nothing
    done = preview.forms[len(preview.forms) - 1].submit().follow()
    assert "1 cita(s) anulada(s)" in done.text and "24/11/2031" in done.text
    assert api.get(f"/appointments/{coming}").status_int == 404  # cancelled, and its patient blocked
    assert api.get("/patients?nif=12345678Z").status_int == 404
    assert admin.get(f"/desk/patients/{patient}", expect_errors=True).status_int == 404


def test_a_patient_s_details_are_rectified_checked_and_the_change_is_audited(api, db_path):
    patient = api.new_patient()
    fixed = cli(db_path, "patient", "rectify", patient, "--phone", "699 88 77 66", "--surname", "García Núñez")
    assert fixed.exit_code == 0, fixed.output
    found = api.get("/patients?nif=12345678Z").json
    assert (found["surname"], found["phone"]) == ("García Núñez", "+34699887766")
    conn = sqlite3.connect(db_path)
    before, after = conn.execute("SELECT before, after FROM events WHERE action = 'patient.rectified'").fetchone()
    conn.close()
    assert json.loads(before)["phone_e164"] == "+34612345678" and json.loads(after)["phone_e164"] == "+34699887766"
    other = api.new_patient(nif=valid_dni(5), phone="622000333")
    clash = cli(db_path, "patient", "rectify", other, "--nif", "12345678Z")
    assert clash.exit_code == 1 and "another patient has that nif" in clash.output
    wrong = cli(db_path, "patient", "rectify", other, "--phone", "12")
    assert wrong.exit_code == 1 and "phone" in wrong.output
    assert api.get(f"/patients?nif={valid_dni(5)}").json["phone"] == "+34622000333"  # refused: unchanged
    assert cli(db_path, "patient", "rectify", other).exit_code == 2
