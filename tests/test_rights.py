"""The patient's rights (docs/design.md, "Access record"): every read of a patient's data by the
desk, the caller or the CLI is recorded with ids only, and shown to an admin by `agenda
access-log` and the desk's page."""

import datetime as dt
import getpass
import sqlite3

import pytest
import webtest
from click.testing import CliRunner

import agenda

from conftest import Clock, MONDAY, valid_dni

PASSWORD = "correct horse battery"


def access_rows(db_path):
    """(reader, kind, allowed, [patient ids as the API writes them]) for every access record, oldest first."""
    conn = sqlite3.connect(db_path)
    try:
        return [(reader, kind, bool(allowed), ids.split(",")) for reader, kind, allowed, ids in
                conn.execute("SELECT r.reader, r.kind, r.allowed, group_concat(p.patient_id) FROM access_records r"
                             " JOIN access_patients p ON p.record_id = r.id GROUP BY r.id ORDER BY r.id")]
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


def test_the_callers_reads_of_a_patient_are_recorded_as_api_and_a_repeat_records_nothing(api, db_path, clock):
    patient = api.new_patient()
    other = api.new_patient(nif=valid_dni(11111111), phone="622000111")
    booked = api.book(patient)
    assert access_rows(db_path) == []  # registering and booking read nobody's data back
    assert api.get("/patients?nif=12345678Z").status_int == 200
    assert api.get("/patients?nif=12345678Z").status_int == 200  # the same answer a moment later
    assert api.get(f"/appointments/{booked}").status_int == 200
    assert api.get("/appointments?nif=12345678Z").status_int == 200
    assert api.get("/appointments?date=24/11/2026").status_int == 200  # the reminder list: no one patient
    assert api.get("/patients?nif=99999999R").status_int == 404
    assert access_rows(db_path) == [("api", "patient", True, [patient]), ("api", "appointment", True, [patient]),
                                    ("api", "search", True, [patient])]
    clock.moment += dt.timedelta(minutes=11)  # long after: a new read
    api.get("/patients?nif=12345678Z")
    assert access_rows(db_path)[-1] == ("api", "patient", True, [patient]) and len(access_rows(db_path)) == 4
    assert other not in {i for row in access_rows(db_path) for i in row[3]}


def test_the_desk_records_each_page_a_search_and_the_day_with_the_ids_shown(api, db_path):
    first, second = api.new_patient(), api.new_patient(nif=valid_dni(11111111), phone="622000111")
    appointment = api.book(first)
    api.book(second, time="09:30")
    desk = desk_client(api)
    desk.get(f"/desk/patients/{first}")
    desk.get(f"/desk/patients/{first}")  # a refresh shows nothing new
    desk.get(f"/desk/appointments/{appointment}")
    search(desk, "ana")
    search(desk, "ana")
    desk.get("/desk/day?date=24/11/2026")
    assert access_rows(db_path) == [
        ("desk:ana", "patient", True, [first]), ("desk:ana", "appointment", True, [first]),
        ("desk:ana", "search", True, [first, second]), ("desk:ana", "day", True, [first, second])]


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
    assert len(recorded) >= 6
    assert not any(word in line for line in recorded for word in ("Zuriñe", "Etxeberria", "12345678Z", "699887766"))


def test_only_an_admin_sees_who_read_a_patient_and_a_refusal_is_recorded(api, db_path):
    patient = api.new_patient()
    reception = desk_client(api)
    reception.get(f"/desk/patients/{patient}")
    assert "/access" not in reception.get(f"/desk/patients/{patient}").text  # hidden from reception
    refused = reception.get(f"/desk/patients/{patient}/access", expect_errors=True)
    assert refused.status_int == 403 and "administración" in refused.text
    admin = desk_client(api, "luis", role="admin")
    page = admin.get(f"/desk/patients/{patient}")
    page = page.click(href=f"/desk/patients/{patient}/access")
    assert [cell.text for cell in page.html.select("tbody tr td:nth-of-type(2)")] == [
        "desk:luis", "desk:luis", "desk:ana", "desk:ana"]  # newest first: this page, luis's look, ana's refusal
    assert "denegado" in page.text and "ficha del paciente" in page.text
    assert access_rows(db_path)[1] == ("desk:ana", "access", False, [patient])
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
    assert "desk:ana  patient page  allowed" in lines[0]
    assert f"cli:{getpass.getuser()}  day list  allowed" in lines[1] and lines[1].startswith("23/11/2026 10:00")
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
        assert [(r["reader"], r["kind"]) for r in api.app.clinic.access_of(patient)] == [("api", "patient")]
        desk = desk_client(api)
        desk.get(f"/desk/patients/{patient}")
    finally:
        access.stop()
    assert access_rows(db_path) == [("api", "patient", True, [patient]), ("desk:ana", "patient", True, [patient])]


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
    assert access_rows(db_path) == [("api", "patient", True, [patient])]
