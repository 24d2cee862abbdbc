"""One door for an appointment (docs/design.md, "One door for an appointment"): every channel books and
moves through `_agenda/domain/booking.py`, by its rules in one order; a waiting entry ends with its booking or
nothing is made; a move keeps the appointment's length and mark; the import, the report and the list to
call ask the one slot decision and the one rule of what a closure covers."""

import ast
import datetime as dt
import re

import pytest
import webtest
from hypothesis import HealthCheck, given, settings, strategies as st

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain import booking
from _agenda.domain.counter import squeeze_in
from _agenda.domain.report import clinic_report
from _agenda.domain.series import book_series
from _agenda.domain.slots import any_time, closed_at, closures_on, FREE, read_schedule, slot_state
from _agenda.domain.waitlist import add_waiting, waiting, Wish
from _agenda.domain.appointments import live_appointments
from _agenda.domain.changes import book_appointment, change_length, move_appointment
from _agenda.domain.closures import add_closure, covered_by
from _agenda.domain.doctors import retire_doctor

from conftest import ROOT, assert_error, table_rows, valid_dni
from test_availability import NIGHT_CSV
from test_desk import PASSWORD, log_in
from test_moving import cli, write

TUESDAY, WEEK = dt.date(2026, 11, 24), dt.date(2026, 11, 23)
TIMES = ("date", "time", "end_time", "doctor_id", "center_id", "patient_id")


def unchanged(db_path):
    """Every table but the record of reads (a refused page still shows, and records, who waits)."""
    return {table: rows for table, rows in table_rows(db_path).items() if not table.startswith("access_")}


def writes_of_appointments(text):
    """What a piece of source text writes of the appointments: 'insert', and 'update' for an UPDATE that
    sets where or when an appointment is (its date, times, doctor, center or patient)."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        sql = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else \
            "".join(part.value for part in node.values if isinstance(part, ast.Constant)) \
            if isinstance(node, ast.JoinedStr) else ""
        if re.search(r"\bINSERT\s+INTO\s+appointments\b", sql, re.I):
            found.add("insert")
        for set_clause in re.findall(r"\bUPDATE\s+appointments\s+SET\s+(.*?)(?:\bWHERE\b|$)", sql, re.I | re.S):
            if set(re.findall(r"(\w+)\s*=", set_clause)) & set(TIMES):
                found.add("update")
    return found


DOOR_WRITES = ("insert_appointment", "insert_staged_appointments", "set_place")  # the owner's, for the door alone


def calls_of(text, names):
    """Which of `names` a piece of source text calls."""
    return {node.func.id if isinstance(node.func, ast.Name) else node.func.attr for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in names}


def test_only_the_door_inserts_an_appointment_or_moves_one():
    sources = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
               for path in [ROOT / "agenda.py", *sorted((ROOT / "_agenda").rglob("*.py"))]}
    writers = {name: writes_of_appointments(text) for name, text in sources.items()}
    assert {name: found for name, found in writers.items() if found} == {
        "_agenda/domain/appointments.py": {"insert"}}  # the owner holds the SQL; a move is its set_place
    callers = {name: calls_of(text, DOOR_WRITES) for name, text in sources.items()}
    assert {name: found for name, found in callers.items() if found} == {"_agenda/domain/booking.py": set(DOOR_WRITES)}
    assert [name for name, text in sources.items() if calls_of(text, {"update_appointment"})] == [
        "_agenda/domain/appointments.py"]  # any other change through the owner's named writes


def test_the_source_check_would_see_another_writer():
    assert writes_of_appointments('conn.execute("insert into appointments (date) values (?)")') == {"insert"}
    assert writes_of_appointments('sql = ("UPDATE appointments SET status = ?,"\n " time = ? WHERE id = ?")') == \
        {"update"}
    assert writes_of_appointments('x = f"UPDATE appointments SET {c} = ?, end_time = ? WHERE id = ?"') == {"update"}
    assert writes_of_appointments('"UPDATE appointments SET status = ?, updated_at = ? WHERE id = ?"') == set()
    assert calls_of("row = appointments.set_place(conn, 1, {}, at)\ninsert_appointment(conn, {}, at)", DOOR_WRITES) == {
        "set_place", "insert_appointment"}


class Recorded(dict):
    """CHANNELS, noting each channel the door is asked to apply."""

    def __init__(self, table):
        super().__init__(table)
        self.asked = []

    def __getitem__(self, channel):
        self.asked.append(channel)
        return super().__getitem__(channel)


def test_every_channel_books_and_moves_through_the_door(api, db_path, tmp_path, monkeypatch):
    recorded = Recorded(booking.CHANNELS)
    monkeypatch.setattr(booking, "CHANNELS", recorded)
    clinic, desk = api.app.clinic, desk_of(api)
    ana, eva = api.new_patient(), api.new_patient(nif=valid_dni(1), name="Eva")
    booked = api.book(ana)  # caller
    api.put(f"/appointments/{booked}", {"newDate": "24/11/2026", "newTime": "09:30"})  # caller move
    move_appointment(clinic, booked, day=dt.date(2026, 11, 30), time_text="16:30", doctor_id="NUNEZ", source="desk:ana")
    at_ten = book_appointment(clinic, Visit(patient_id=eva, doctor_id="MARTIN"), day=TUESDAY, time_text="10:00",
                              source="desk:ana")  # desk
    change_length(clinic, at_ten, 20, source="desk:ana")  # shortened at the desk
    squeezed = squeeze_in(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), day=TUESDAY, time_text="10:10",
                          source="cli")
    move_appointment(clinic, squeezed, day=TUESDAY, time_text="10:20", source="desk:ana")  # a sobrecita moved
    _, sessions, _ = book_series(clinic, Visit(patient_id=eva, doctor_id="MARTIN"), first=dt.date(2026, 12, 2),
                                 time_text="09:00", every_days=7, count=2, source="desk:ana")
    add_waiting(clinic, Wish(patient_id=eva, doctor_id="MARTIN", first=TUESDAY, last=TUESDAY), source="desk:ana")
    take_from_the_waitlist(desk, "10:30").submit()
    forward = add_waiting(clinic,
                          Wish(eva, TUESDAY, dt.date(2026, 11, 27), appointment_id=sessions[1][0]),
                          source="desk:ana")
    book_appointment(clinic, Visit(patient_id=eva, doctor_id="MARTIN"), day=dt.date(2026, 11, 27), time_text="09:00",
                     waitlist_id=forward, source="desk:ana")  # a waiting move
    move_appointment(clinic, booked, day=dt.date(2026, 11, 25), time_text="16:30", source="patient")  # by the link
    imported = cli(db_path, "import-appointments", write(tmp_path / "old.csv", (
        "date,time,duration,doctor,center,nif,name,phone,reason,insurance,status\n"
        "26/11/2026,09:05,45,MARTIN,C1,12345678Z,,,,,\n")))
    assert imported.exit_code == 0, imported.output
    # another visit type needs a clinic of types: test_visit_details.py holds that it passes the door as 'desk retype';
    # the patients' page needs a clinic that opens it: test_web_booking.py holds that it passes the door as 'web'
    assert set(recorded.asked) == set(booking.CHANNELS) - {"desk retype", "web"}
    assert api.db().execute("SELECT count(*) FROM appointments").fetchone()[0] == 7


def desk_of(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    return desk


def take_from_the_waitlist(desk, time_text, patient_name="Eva"):
    """The booking page's form that books the first waiting patient of MARTIN's Tuesday slot."""
    page = desk.get(f"/desk/book?doctorId=MARTIN&date=24/11/2026&time={time_text}&centerId=C1")
    forms = [form for form in page.forms.values() if form.fields.get("waitlistId") is not None]
    assert forms and patient_name in page.text
    return forms[0]


@pytest.fixture
def eva_waiting(api):
    """Eva (patient 2) waits for MARTIN on Tuesday; the desk logged in as ana. (desk, Eva, her entry)."""
    desk = desk_of(api)
    api.new_patient()
    eva = api.new_patient(nif=valid_dni(1), name="Eva")
    entry = add_waiting(api.app.clinic, Wish(patient_id=eva, doctor_id="MARTIN", first=TUESDAY, last=TUESDAY),
                        source="desk:ana")
    return desk, eva, entry


def test_a_waiting_entry_ends_with_its_booking_in_one_transaction(api, eva_waiting):
    desk, eva, entry = eva_waiting
    form = take_from_the_waitlist(desk, "09:30")
    assert form.submit().status_int == 303
    (appointment,) = api.db().execute("SELECT id, created_at FROM appointments WHERE patient_id = ?", (eva,))
    ended = api.db().execute("SELECT ended_why, ended_at FROM waitlist WHERE id = ?", (entry,)).fetchone()
    assert tuple(ended) == ("booked", appointment["created_at"])
    actions = [row[0] for row in api.db().execute("SELECT action FROM events WHERE id > (SELECT max(id) FROM events"
                                                  " WHERE action = 'waitlist.added') ORDER BY id")]
    assert actions == ["appointment.booked", "waitlist.booked"]
    again = form.submit()  # a double click: the booking made, nothing more
    assert again.status_int == 303 and "reservada" in again.follow().text
    assert api.db().execute("SELECT count(*) FROM appointments").fetchone()[0] == 1


def test_a_refused_booking_from_the_waitlist_is_not_made_and_the_entry_still_waits(api, eva_waiting, db_path):
    desk, eva, entry = eva_waiting
    form = take_from_the_waitlist(desk, "09:30")
    api.book(api.new_patient(nif=valid_dni(2)), time="09:30")  # a colleague takes the slot meanwhile
    before = unchanged(db_path)
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 409 and "Otra cita acaba de ocupar ese hueco" in refused.text
    assert unchanged(db_path) == before and [w["id"] for w in waiting(api.app.clinic)] == [int(entry)]


def test_another_patients_waiting_entry_is_refused_and_changes_nothing(api, eva_waiting, db_path):
    desk, eva, entry = eva_waiting
    form = take_from_the_waitlist(desk, "09:30")
    form["patientId"] = "1"  # Ana's booking, with Eva's entry
    before = unchanged(db_path)
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 404 and "Esa persona ya no está en la lista de espera." in refused.text
    assert unchanged(db_path) == before
    with pytest.raises(agenda.ClinicError) as by_hand:
        book_appointment(api.app.clinic, Visit(patient_id="1", doctor_id="MARTIN"), day=TUESDAY, time_text="09:30",
                         waitlist_id=entry, source="desk:ana")
    assert by_hand.value.code == "WAITLIST_NOT_FOUND" and unchanged(db_path) == before


def test_a_stale_entry_says_already_booked_links_the_appointment_and_books_nothing(api, eva_waiting, db_path):
    desk, eva, entry = eva_waiting
    stale = take_from_the_waitlist(desk, "09:30")  # one receptionist's page...
    colleague = webtest.TestApp(api.app)
    api.app.accounts.add_staff("luis", PASSWORD)
    log_in(colleague, name="luis")
    assert take_from_the_waitlist(colleague, "10:30").submit().status_int == 303  # ...another books Eva first
    (booked,) = [row[0] for row in api.db().execute("SELECT id FROM appointments WHERE patient_id = ?", (eva,))]
    before = unchanged(db_path)
    refused = stale.submit(expect_errors=True)
    said = refused.html.find("p", class_="error")
    assert refused.status_int == 409 and said.text.startswith("Esa persona ya tiene cita desde la lista de espera")
    assert said.find("a")["href"] == f"/desk/appointments/{booked}" and said.find("a").text == "Ver la cita"
    assert unchanged(db_path) == before
    with pytest.raises(agenda.ClinicError) as by_hand:
        book_appointment(api.app.clinic, Visit(patient_id=eva, doctor_id="MARTIN"), day=TUESDAY, time_text="09:30",
                         waitlist_id=entry, source="cli")
    assert by_hand.value.extra == {"appointmentId": str(booked)}


def test_only_the_desk_books_from_the_waitlist_or_squeezes_in(api, eva_waiting, db_path):
    _, eva, entry = eva_waiting
    before = unchanged(db_path)
    for attempt in (lambda: book_appointment(api.app.clinic, Visit(patient_id=eva, doctor_id="MARTIN"), day=TUESDAY,
                                             time_text="09:30", waitlist_id=entry, source="api"),
                    lambda: squeeze_in(api.app.clinic, Visit(patient_id=eva, doctor_id="MARTIN"), day=TUESDAY,
                                       time_text="09:40", source="api")):
        with pytest.raises(agenda.ClinicError) as refused:
            attempt()
        assert refused.value.code == "INVALID_REQUEST"
    assert unchanged(db_path) == before


def test_a_retry_answers_the_booking_made_before_any_refusal(api, clock):
    clinic, patient = api.app.clinic, api.new_patient()
    first = api.book(patient, date="26/11/2026", time="09:00")
    add_closure(clinic, doctor_id="MARTIN", first=dt.date(2026, 11, 26), reason="Congreso", source="desk:ana")
    retire_doctor(clinic, "MARTIN", dt.date(2026, 11, 26), source="desk:ana")
    assert api.book(patient, date="26/11/2026", time="09:00") == first  # closed and retired now: still its id
    squeezed = squeeze_in(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=TUESDAY, time_text="09:10",
                          source="desk:ana")
    clock.set(2026, 11, 24, 10, 0)  # 09:10 is past now
    assert squeeze_in(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=TUESDAY, time_text="09:10",
                      source="desk:ana") == squeezed


def imported_hour(db_path, tmp_path):
    """An old system's 60-minute visit, 24/11 09:00-10:00 with MARTIN (a 30-minute grid); its id."""
    done = cli(db_path, "import-appointments", write(tmp_path / "old.csv", (
        "date,time,duration,doctor,center,nif,name,phone,reason,insurance,status\n"
        "24/11/2026,09:00,60,MARTIN,C1,12345678Z,,,Primera visita,,\n")))
    assert done.exit_code == 0, done.output
    return "1"


def test_a_move_keeps_the_appointments_own_length(make_api, db_path, tmp_path):
    api = make_api()
    api.new_patient()
    hour = imported_hour(db_path, tmp_path)

    def span():
        return tuple(api.db().execute("SELECT date, time, end_time FROM appointments WHERE id = ?", (hour,)).fetchone())
    assert api.put(f"/appointments/{hour}", {"newDate": "27/11/2026", "newTime": "09:30"}).status_int == 200
    assert span() == ("2026-11-27", "09:30", "10:30")
    assert api.get(f"/appointments/{hour}").json["extraData"]["duration"] == 60
    refused = assert_error(api.put(f"/appointments/{hour}", {"newDate": "27/11/2026", "newTime": "10:30"}),
                           409, "SLOT_NOT_AVAILABLE")
    assert refused["reason"] == "off_grid"  # it would run past her hours
    api.book(api.new_patient(nif=valid_dni(1)), date="26/11/2026", time="10:00")
    assert assert_error(api.put(f"/appointments/{hour}", {"newDate": "26/11/2026", "newTime": "09:30"}),
                        409, "SLOT_NOT_AVAILABLE")["reason"] == "taken"
    add_closure(api.app.clinic, doctor_id="MARTIN", first=dt.date(2026, 11, 30), start="09:30", end="10:00",
                reason="Sesión clínica", source="desk:ana")
    assert assert_error(api.put(f"/appointments/{hour}", {"newDate": "30/11/2026", "newTime": "09:00"}),
                        409, "SLOT_NOT_AVAILABLE")["reason"] == "closed"
    assert span() == ("2026-11-27", "09:30", "10:30")
    move_appointment(api.app.clinic, hour, day=dt.date(2026, 11, 30), time_text="10:00", source="desk:ana")
    assert span() == ("2026-11-30", "10:00", "11:00")


def test_an_import_plans_with_the_slot_decision_as_the_database_holds_it(make_api, db_path, tmp_path):
    """A sobrecita takes no time from the grid, for the triggers and the slot decision alike: a row
    over it imports; a row over a plain appointment is refused by line, and nothing is imported."""
    api = make_api()
    patient = api.new_patient()
    squeeze_in(api.app.clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=TUESDAY, time_text="09:10",
               source="desk:ana")
    api.book(patient, time="10:00")
    rows = ("date,time,duration,doctor,center,nif,name,phone,reason,insurance,status\n"
            "24/11/2026,09:00,30,MARTIN,C1,12345678Z,,,,,\n")
    over = cli(db_path, "import-appointments", write(tmp_path / "over.csv", rows + "24/11/2026,10:15,10,MARTIN,C1,"
                                                     "12345678Z,,,,,\n"))
    assert over.exit_code == 1 and "line 3: 24/11/2026 10:15 with MARTIN overlaps appointment 2 already in the agenda" \
        in over.output
    assert cli(db_path, "import-appointments", write(tmp_path / "fine.csv", rows)).exit_code == 0


def test_the_report_never_counts_a_slot_the_clocks_skip(make_api):
    """The report asks the slot decision, so what it refuses (here 02:00 and 02:30 on the night the clocks
    go forward) is never counted as offered."""
    api = make_api(NIGHT_CSV)
    week = dt.date(2026, 3, 23)
    offered = {d["id"]: d["totals"]["offered"] for d in clinic_report(api.app.clinic, week, week)["doctors"]}
    assert offered == {"NOCHE": 4, "DIA": 14}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from([None, "MARTIN", "RUIZ", "NUNEZ"]), st.sampled_from([None, "C1", "C2"]),
                          st.integers(0, 6), st.integers(0, 2), st.one_of(st.none(), st.integers(0, 16))),
                max_size=4),
       st.one_of(st.none(), st.integers(0, 7)))
def test_the_report_counts_the_slots_the_slot_decision_offers(api, closures, retired_on):
    clinic, conn = api.app.clinic, api.db()
    with clinic.db.transaction() as writing:
        writing.execute("DELETE FROM closures")
        writing.execute("UPDATE doctors SET retired_from = ? WHERE id = 'RUIZ'",
                        (None if retired_on is None else (WEEK + dt.timedelta(days=retired_on)).isoformat(),))
        for doctor, center, first, days, hour in closures:
            hours = (None, None) if hour is None else (f"{9 + hour // 2:02d}:{hour % 2 * 30:02d}",
                                                       f"{10 + hour // 2:02d}:{hour % 2 * 30:02d}")
            writing.execute("INSERT INTO closures (doctor_id, center_id, date_from, date_to, start_time, end_time)"
                            " VALUES (?, ?, ?, ?, ?, ?)", (doctor, center, (WEEK + dt.timedelta(days=first)).isoformat(),
                                                           (WEEK + dt.timedelta(days=first + days)).isoformat(), *hours))
    offered = {d["id"]: d["totals"]["offered"] for d in clinic_report(clinic, WEEK, WEEK + dt.timedelta(days=6))["doctors"]}
    expected, window = {}, any_time(clinic.tz)
    for doctor in ("MARTIN", "RUIZ", "NUNEZ"):
        for day in (WEEK + dt.timedelta(days=n) for n in range(7)):
            schedule = read_schedule(conn, [doctor], day, day, with_bookings=False)
            for row, grid in schedule.grids.get(day.weekday(), ()):
                expected[doctor] = expected.get(doctor, 0) + sum(
                    slot_state(schedule, window, doctor, day, start, row["center_id"]) == FREE
                    for start, _, _ in grid.slots)
    assert {key: value for key, value in offered.items() if value} == {key: value for key, value in expected.items()
                                                                       if value}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from([None, "MARTIN", "RUIZ"]), st.sampled_from([None, "C1", "C2"]),
                          st.integers(0, 4), st.integers(0, 1), st.one_of(st.none(), st.integers(0, 11))),
                min_size=1, max_size=3),
       st.lists(st.tuples(st.sampled_from(["MARTIN", "RUIZ"]), st.sampled_from([None, "C1", "C2"]),
                          st.integers(0, 4), st.integers(0, 23), st.integers(1, 9)), min_size=1, max_size=8))
def test_what_a_closure_covers_is_one_rule_for_the_grid_the_lists_and_the_preview(api, closures, appointments):
    """CLOSURE_COVERS (the lists' "to call" and a closure's preview) and closures_on with closed_at (the
    grid's slots) say the same of every appointment."""
    clinic = api.app.clinic
    day_of = [(WEEK + dt.timedelta(days=n)) for n in range(5)]

    def at(ten_minutes):
        return f"{9 + ten_minutes // 6:02d}:{ten_minutes % 6 * 10:02d}"
    rows = [{"doctor_id": d, "center_id": c, "date_from": day_of[first].isoformat(),
             "date_to": day_of[min(first + days, 4)].isoformat(), "start_time": None if h is None else at(h),
             "end_time": None if h is None else at(h + 3), "reason": ""} for d, c, first, days, h in closures]
    with clinic.db.transaction() as writing:
        writing.execute("DELETE FROM closures")
        writing.execute("DELETE FROM outbox")
        writing.execute("DELETE FROM appointments")
        writing.executemany("INSERT INTO closures (doctor_id, center_id, date_from, date_to, start_time, end_time)"
                            " VALUES (:doctor_id, :center_id, :date_from, :date_to, :start_time, :end_time)", rows)
        writing.execute("INSERT OR IGNORE INTO patients (name, nif, created_at) VALUES ('P', ?, '')", (valid_dni(99),))
        (patient,) = writing.execute("SELECT id FROM patients WHERE nif = ?", (valid_dni(99),)).fetchone()
        for doctor, center, day, start, length in appointments:  # squeezed: the triggers let them overlap
            writing.execute("INSERT INTO appointments (patient_id, doctor_id, center_id, date, time, end_time,"
                            " created_at, updated_at, squeezed) VALUES (?, ?, ?, ?, ?, ?, '', '', 1)",
                            (patient, doctor, center, day_of[day].isoformat(), at(start), at(start + length)))
    listed = live_appointments(clinic)
    for appointment in listed:
        day = dt.date.fromisoformat(appointment["date"])
        shut = closures_on(rows, day, appointment["doctor_id"], appointment["center_id"])
        assert appointment["to_call"] == closed_at(shut, appointment["start"], appointment["end"])
    for closure in rows:
        covered = {a["id"] for a in covered_by(clinic, closure["doctor_id"], closure["center_id"], closure["date_from"],
                                               closure["date_to"], closure["start_time"], closure["end_time"])}
        assert covered == {a["id"] for a in listed if closed_at(closures_on(
            [closure], dt.date.fromisoformat(a["date"]), a["doctor_id"], a["center_id"]), a["start"], a["end"])}
