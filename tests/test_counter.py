"""The front desk's own rules, through the clinic and the API (docs/design.md, "Patient search", "Each
channel's rules", "Attendance", "To call"): search as reception types, a walk-in now and a follow-up in
months, arrivals and no-shows, the appointments that need a call, insurance asked at the desk, a move
to another doctor. The same as the receptionist works it: test_desk.py and test_desk_browser.py."""

import datetime as dt

import pytest
import webtest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain.counter import mark_attendance, open_marks, to_call
from _agenda.values.fields import fold
from _agenda.domain.appointments import live_appointments, read_appointment
from _agenda.domain.availability import day_slots
from _agenda.domain.changes import book_appointment, cancel_appointment, move_appointment
from _agenda.domain.closures import add_closure
from _agenda.domain.doctors import retire_doctor
from _agenda.domain.registry import register_patient, search_patients

from conftest import assert_error, Clock, MONDAY, valid_dni
from test_desk import log_in, PASSWORD


def names_found(clinic, text):
    return sorted(f"{p['name']} {p['surname']}" for p in search_patients(clinic, text, "desk:test"))


@pytest.fixture
def people(api):
    clinic = api.app.clinic
    for n, (name, surname, phone) in enumerate([("María", "Gómez Ruiz", "612000001"), ("José", "Gomez Alba", "612000002"),
                                                ("Lucía", "GÓMEZ PEÑA", "612000003"), ("Íñigo", "Ibáñez Núñez", "612000004"),
                                                ("Ana", "Müller Güell", "612000005")]):
        register_patient(clinic, {"name": name, "surname": surname, "nif": valid_dni(n + 1), "phone": phone}, "cli")
    return clinic


@pytest.mark.parametrize("typed, expected", [
    ("Gómez", ["José Gomez Alba", "Lucía GÓMEZ PEÑA", "María Gómez Ruiz"]),
    ("gomez", ["José Gomez Alba", "Lucía GÓMEZ PEÑA", "María Gómez Ruiz"]),
    ("GÓMEZ", ["José Gomez Alba", "Lucía GÓMEZ PEÑA", "María Gómez Ruiz"]),
    ("maria", ["María Gómez Ruiz"]), ("ibanez", ["Íñigo Ibáñez Núñez"]), ("nunez", ["Íñigo Ibáñez Núñez"]),
    ("Lucía Gómez", ["Lucía GÓMEZ PEÑA"]), ("gomez lucia", ["Lucía GÓMEZ PEÑA"]), ("peña luc", ["Lucía GÓMEZ PEÑA"]),
    ("guell", ["Ana Müller Güell"]), ("MULLER", ["Ana Müller Güell"]), ("gom ru", ["María Gómez Ruiz"]),
    ("00000001R", ["María Gómez Ruiz"]), ("00.000.001-r", ["María Gómez Ruiz"]), ("00000001 R", ["María Gómez Ruiz"]),
    ("612 00 00 02", ["José Gomez Alba"]), ("+34 612-000-002", ["José Gomez Alba"]), ("(612) 000 002", ["José Gomez Alba"]),
    ("gomez zz", []), ("%", []), ("_", []),
])
def test_search_finds_people_as_reception_types_them(people, typed, expected):
    assert names_found(people, typed) == expected


def test_folding_drops_case_accents_and_marks():
    assert fold("  ÁÉÍÓÚ ñÑ üÜ Ç-l·l '_x ") == " aeiou nn uu c l l x"


def test_a_rectified_name_is_found_by_its_new_spelling_and_not_the_old(people):
    from _agenda.domain.rights import rectify
    maria = search_patients(people, "maría", "desk:test")[0]
    rectify(people, maria["id"], {"surname": "Sáez Ortúzar"}, "desk:ana")
    assert names_found(people, "ortuzar") == ["María Sáez Ortúzar"] and "María Gómez Ruiz" not in names_found(people, "gomez")


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(codec="utf-8", categories=["L", "M", "N", "P", "Z"]), max_size=30))
def test_folding_is_stable_and_leaves_only_words(text):
    folded = fold(text)
    assert fold(folded) == folded and "  " not in folded and folded.startswith(" ")
    assert all(word.isalnum() for word in folded.split())
    assert fold(text.upper()) == fold(text.lower()) or not text.isascii()


def test_the_desk_books_a_walk_in_now_and_a_follow_up_in_six_months_the_caller_cannot(api, clock):
    clinic, patient = api.app.clinic, api.new_patient()
    clock.set(2026, 11, 24, 9, 40)  # MARTIN's 09:30 slot has begun: the desk's until 10:00, past for the caller
    for_desk = day_slots(clinic, dt.date(2026, 11, 24), "C1")
    states = {(doctor["doctor_id"], time): state[0] for doctor, time, _, state in for_desk}
    assert states[("MARTIN", "09:00")] == "too_soon" and states[("MARTIN", "09:30")] == "free"
    assert api.post("/appointments", {"date": "24/11/2026", "time": "10:00", "doctorId": "MARTIN",
                                      "patientId": patient}).json["error"]["reason"] == "too_soon"
    walk_in = book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=dt.date(2026, 11, 24),
                               time_text="09:30", source="desk:ana")
    assert read_appointment(clinic, walk_in)["booked_by"] == "desk:ana"
    with pytest.raises(agenda.ClinicError) as begun:  # a slot that has ended is past for everyone
        book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=dt.date(2026, 11, 24),
                         time_text="09:00", source="desk:ana")
    assert begun.value.extra["reason"] == "too_soon"
    visit, follow_up = Visit(patient, "MARTIN"), dict(day=dt.date(2027, 5, 25), time_text="10:00")
    assert api.post("/appointments", {"date": "25/05/2027", "time": "10:00", "doctorId": "MARTIN",
                                      "patientId": patient}).json["error"]["reason"] == "beyond_horizon"
    assert book_appointment(clinic, visit, **follow_up, source="desk:ana")
    with pytest.raises(agenda.ClinicError) as too_far:
        book_appointment(clinic, visit, **{**follow_up, "day": dt.date(2028, 5, 25)}, source="desk:ana")
    assert "beyond the booking horizon (18 months)" in too_far.value.message


def test_the_desks_rules_are_settings_of_their_own(make_api):
    api = make_api(desk_min_notice_minutes=120, desk_horizon_months=2)
    window = api.app.clinic.window("desk")
    assert window.earliest == (MONDAY + dt.timedelta(hours=2)).astimezone(dt.timezone.utc)
    assert window.last_day == dt.date(2027, 1, 23) and api.app.clinic.window().last_day == dt.date(2027, 2, 21)
    with pytest.raises(ValueError):
        agenda.Settings(desk_horizon_months=0)


def test_attendance_is_the_desks_record_and_the_caller_may_not_undo_a_visit(api, clock):
    clinic, patient = api.app.clinic, api.new_patient()
    booked = api.book(patient)  # 24/11/2026 09:00
    with pytest.raises(agenda.ClinicError) as early:
        mark_attendance(clinic, booked, "arrived", "desk:ana")
    assert early.value.code == "APPOINTMENT_NOT_TODAY"
    clock.set(2026, 11, 24, 8, 55)
    arrived = mark_attendance(clinic, booked, "arrived", "desk:ana")
    assert arrived["attendance"] == "arrived" and arrived["arrived_at"] == "2026-11-24T07:55:00+00:00"
    answer = api.get(f"/appointments/{booked}").json
    assert answer["extraData"]["status"] == "booked" and "attendance" not in answer["extraData"]
    for refused in (api.put(f"/appointments/{booked}", {"newDate": "25/11/2026", "newTime": "10:00"}),
                    api.delete(f"/appointments/{booked}"),
                    api.post("/appointments/confirm", {"appointmentId": booked, "confirmed": False})):
        assert_error(refused, 409, "APPOINTMENT_ATTENDED")
    assert api.post("/appointments/confirm", {"appointmentId": booked, "confirmed": True}).json["status"] == "confirmed"
    closed = api.post("/appointments/end-of-reminder-day", {"voiceAgentConfigId": "va", "date": "24/11/2026"})
    assert closed.status_int == 200 and read_appointment(clinic, booked)["status"] == "confirmed"
    seen = mark_attendance(clinic, booked, "seen", "desk:ana")
    assert seen["attendance"] == "seen" and seen["arrived_at"] == "2026-11-24T07:55:00+00:00"
    undone = mark_attendance(clinic, booked, None, "desk:ana")
    assert undone["attendance"] is None and undone["arrived_at"] is None
    assert api.delete(f"/appointments/{booked}").status_int == 204  # a mistake undone: the caller may again
    actions = [row[0] for row in api.db().execute("SELECT action FROM events WHERE entity = 'appointment' ORDER BY id")]
    assert ["appointment.arrived", "appointment.confirmed", "appointment.seen", "appointment.attendance_undone",
            "appointment.cancelled"] == [a for a in actions if a != "appointment.booked"]


def afternoon_of_nunez(api):
    """NUÑEZ's Monday afternoon (23/11, Norte): two visits booked at the desk, 16:00 and 16:30; their ids."""
    clinic = api.app.clinic
    return [book_appointment(clinic,
                             Visit(patient_id=api.new_patient(nif=valid_dni(40 + n), name=f"P{n}"), doctor_id="NUNEZ"),
                             day=dt.date(2026, 11, 23), time_text=start, source="desk:ana")
            for n, start in enumerate(("16:00", "16:30"))]


def refusal(call):
    with pytest.raises(agenda.ClinicError) as refused:
        call()
    return refused.value.code, refused.value.rule


def test_an_arrival_is_marked_from_two_hours_before_and_a_no_show_from_the_visits_start(api, clock):
    clinic = api.app.clinic
    four, half_past = afternoon_of_nunez(api)
    clock.set(2026, 11, 23, 9, 52)  # the morning: too early for either
    assert refusal(lambda: mark_attendance(clinic, four, "arrived", "desk:ana")) == ("APPOINTMENT_NOT_TODAY",
                                                                                    "arrival_window")
    assert refusal(lambda: mark_attendance(clinic, half_past, "no_show", "desk:ana")) == ("APPOINTMENT_NOT_TODAY",
                                                                                         "no_show_before_start")
    assert read_appointment(clinic, four)["attendance"] is None
    assert api.delete(f"/appointments/{four}").status_int == 204  # the voice agent cancels it as before
    four = book_appointment(clinic, Visit(patient_id=api.new_patient(), doctor_id="NUNEZ"), day=dt.date(2026, 11, 23),
                            time_text="16:00", source="desk:ana")
    clock.set(2026, 11, 23, 14, 0)  # two hours before 16:00, 2h30 before 16:30
    assert open_marks(clinic, "2026-11-23", "16:00") == ("arrived", "seen")
    assert refusal(lambda: mark_attendance(clinic, half_past, "arrived", "desk:ana"))[1] == "arrival_window"
    assert mark_attendance(clinic, four, "arrived", "desk:ana")["arrived_at"] == "2026-11-23T13:00:00+00:00"
    assert_error(api.delete(f"/appointments/{four}"), 409, "APPOINTMENT_ATTENDED")  # arrived: as before
    clock.set(2026, 11, 23, 16, 29)
    assert refusal(lambda: mark_attendance(clinic, half_past, "no_show", "desk:ana"))[1] == "no_show_before_start"
    clock.set(2026, 11, 23, 16, 30)
    assert mark_attendance(clinic, half_past, "no_show", "desk:ana")["attendance"] == "no_show"
    clock.set(2026, 11, 24, 8, 0)  # the next morning: yesterday's visits take any mark
    assert open_marks(clinic, "2026-11-23", "16:30") == ("arrived", "seen", "no_show")
    assert open_marks(clinic, "2026-11-25", "09:00") == ()


@pytest.mark.parametrize("window, now, marks", [(30, "15:29", ()), (30, "15:30", ("arrived", "seen")),
                                                (0, "15:59", ()), (0, "16:00", ("arrived", "seen", "no_show")),
                                                (1440, "00:00", ("arrived", "seen"))])  # never before its day
def test_the_arrival_window_is_the_clinics_setting(make_api, clock, window, now, marks):
    api = make_api(arrival_window_minutes=window)
    clock.set(2026, 11, 23, *map(int, now.split(":")))
    assert open_marks(api.app.clinic, "2026-11-23", "16:00") == marks
    assert open_marks(api.app.clinic, "2026-11-24", "00:30") == ()


def test_agenda_run_takes_the_arrival_window_from_its_option_or_the_environment(db_path, tmp_path):
    agenda.open_database(db_path).close()
    served = {}
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": "s3cret", "AGENDA_ARRIVAL_WINDOW": "45"})
    started = runner.invoke(agenda.cli, ["run"], obj={"serve": lambda app, **options: served.update(app=app)})
    assert started.exit_code == 0, started.output
    assert served["app"].clinic.settings.arrival_window_minutes == 45
    served["app"].clinic.db.close()
    wrong = runner.invoke(agenda.cli, ["run", "--arrival-window", "2000"], obj={"serve": lambda app, **options: None})
    assert wrong.exit_code == 2 and "--arrival-window" in wrong.output
    assert "AGENDA_ARRIVAL_WINDOW" in runner.invoke(agenda.cli, ["run", "-h"]).output
    with pytest.raises(ValueError):
        agenda.Settings(arrival_window_minutes=-1)


def test_the_desk_shows_only_the_marks_whose_time_has_come_and_refuses_the_others(api, clock):
    four, half_past = afternoon_of_nunez(api)
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)

    def buttons_at(hour, minute):
        """Each card's quick buttons on the day at that time (logged in again: hours pass between)."""
        clock.set(2026, 11, 23, hour, minute)
        assert log_in(desk).status_int == 303
        day = desk.get("/desk/day?date=23/11/2026&centerId=C2").html
        return [[b.text for b in card.select("form.quick button")] for card in day.select(".timeline article.card")]
    assert buttons_at(9, 52) == [[], []]
    page = desk.get(f"/desk/appointments/{four}")
    assert page.html.select(f"form[action='/desk/appointments/{four}/attendance'] button") == []
    csrf = page.html.find("input", attrs={"name": "csrf"})["value"]
    early = desk.post(f"/desk/appointments/{four}/attendance", {"csrf": csrf, "mark": "arrived"}, expect_errors=True)
    assert early.status_int == 409 and "Aún es pronto: la llegada se marca desde un rato antes" in early.text
    assert buttons_at(14, 5) == [["Llegó"], []]
    assert buttons_at(16, 1) == [["Llegó", "No vino"], ["Llegó"]]
    page = desk.get(f"/desk/appointments/{four}")
    assert [b.text for b in page.html.select(f"form[action='/desk/appointments/{four}/attendance'] button")] == [
        "Llegó", "Atendido", "No vino"]


def test_a_no_show_may_be_moved_by_the_caller(api, clock):
    clinic, patient = api.app.clinic, api.new_patient()
    booked = api.book(patient)
    clock.set(2026, 11, 24, 9, 40)
    assert mark_attendance(clinic, booked, "no_show", "desk:ana")["attendance"] == "no_show"
    with pytest.raises(agenda.ClinicError):
        mark_attendance(clinic, booked, "gone", "desk:ana")
    assert api.put(f"/appointments/{booked}", {"newDate": "26/11/2026", "newTime": "10:00"}).status_int == 200
    assert read_appointment(clinic, booked)["attendance"] is None  # a new visit: nothing has happened yet


def test_an_appointment_inside_a_new_closure_is_to_call_and_out_of_the_callers_lists(api):
    clinic = api.app.clinic
    ana, eva = api.new_patient(), api.new_patient(nif=valid_dni(7), name="Eva", phone="612999999")
    first, second = api.book(ana, time="09:00"), api.book(eva, time="10:00")
    add_closure(clinic, doctor_id="MARTIN", first=dt.date(2026, 11, 24), start="08:30", end="09:30", reason="Médico")
    assert [a["id"] for a in to_call(clinic, "desk:test")] == [int(first)]
    day_list = api.get("/appointments?date=24/11/2026").json["data"]
    assert [a["appointmentId"] for a in day_list] == [second]
    ranged = api.get("/appointments/range?dates=24/11/2026,25/11/2026").json["data"]
    assert [a["appointmentId"] for a in ranged] == [second]
    assert [a["appointmentId"] for a in api.get("/appointments?nif=12345678Z").json["data"]] == [first]
    assert api.get(f"/appointments/{first}").status_int == 200
    closed = api.post("/appointments/end-of-reminder-day", {"voiceAgentConfigId": "va", "date": "24/11/2026"})
    assert closed.json["processed"] == 1 and read_appointment(clinic, first)["status"] == "booked"  # only the other
    assert [a["to_call"] for a in live_appointments(clinic, days=["2026-11-24"])] == [True, False]
    move_appointment(clinic, first, day=dt.date(2026, 11, 24), time_text="10:30", source="desk:ana")
    assert to_call(clinic, "desk:test") == [] and len(api.get("/appointments?date=24/11/2026").json["data"]) == 2


def test_appointments_after_a_retirement_are_to_call_until_moved_or_cancelled(api, clock):
    clinic, patient = api.app.clinic, api.new_patient()
    booked = [api.book(patient, date=day) for day in ("24/11/2026", "26/11/2026", "27/11/2026")]
    retire_doctor(clinic, "MARTIN", dt.date(2026, 11, 26), source="desk:ana")
    assert [str(a["id"]) for a in to_call(clinic, "desk:test")] == booked[1:]
    cancel_appointment(clinic, booked[1], source="desk:ana")
    assert [str(a["id"]) for a in to_call(clinic, "desk:test")] == booked[2:]
    clock.set(2026, 11, 28)
    assert to_call(clinic, "desk:test") == []  # the list runs from today on


def test_the_desk_asks_for_the_insurance_of_a_doctor_with_a_list_and_the_caller_need_not(api):
    clinic, patient = api.app.clinic, api.new_patient()
    ruiz, slot = Visit(patient, "RUIZ"), dict(day=dt.date(2026, 11, 24), time_text="09:00")
    with pytest.raises(agenda.ClinicError) as missing:
        book_appointment(clinic, ruiz, **slot, source="desk:ana")
    assert missing.value.code == "INSURANCE_REQUIRED" and "PRIV, SAN" in missing.value.message
    with pytest.raises(agenda.ClinicError) as refused:
        book_appointment(clinic, ruiz._replace(insurance_id="DKV"), **slot, source="desk:ana")
    assert refused.value.code == "INSURANCE_NOT_ACCEPTED"
    assert read_appointment(clinic, book_appointment(clinic, ruiz._replace(insurance_id="PRIV"), **slot,
                                                     source="desk:ana"))["insurance_id"] == "PRIV"
    assert api.book(patient, time="09:20", doctor="RUIZ")  # the caller's contract is unchanged
    assert book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=dt.date(2026, 11, 24),
                            time_text="10:00", source="desk:ana")  # a doctor without a list takes anyone


def test_the_desk_moves_to_another_doctor_of_the_speciality_or_another_center(api):
    clinic, patient = api.app.clinic, api.new_patient()
    booked = api.book(patient)  # MARTIN, C1, 24/11 09:00
    move_appointment(clinic, booked, day=dt.date(2026, 11, 30), time_text="16:30", doctor_id="NUNEZ", source="desk:ana")
    moved = read_appointment(clinic, booked)
    assert (moved["doctor_id"], moved["center_id"], moved["start"]) == ("NUNEZ", "C2", "16:30")
    move_appointment(clinic, booked, day=dt.date(2026, 11, 28), time_text="10:00", doctor_id="MARTIN", center_id="C2",
                     source="desk:ana")
    assert read_appointment(clinic, booked)["center_id"] == "C2"
    with pytest.raises(agenda.ClinicError) as other_speciality:
        move_appointment(clinic, booked, day=dt.date(2026, 11, 24), time_text="09:20", doctor_id="RUIZ",
                         source="desk:ana")
    assert "another speciality" in other_speciality.value.message
    assert_error(api.put(f"/appointments/{booked}", {"newDate": "30/11/2026", "newTime": "16:30"}),
                 409, "SLOT_NOT_AVAILABLE")  # the caller's move stays with the doctor and center it has


def test_a_patients_overlapping_visits_that_came_in_are_kept_and_listed_until_one_is_moved(api, db_path, tmp_path):
    """Another system's history may hold one patient at two doctors at once: kept, listed by `agenda status`
    and under the desk's calls, until one is moved; one accepted at the desk is no longer listed."""
    patient = api.new_patient()
    old = tmp_path / "old.csv"
    old.write_text("date,time,duration,doctor,center,nif,name,status\n"
                   "24/11/2026,09:00,30,MARTIN,C1,12345678Z,Ana,booked\n"
                   "24/11/2026,09:20,20,RUIZ,C1,12345678Z,Ana,booked\n", encoding="utf-8")
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None})
    assert runner.invoke(agenda.cli, ["import-appointments", str(old)], obj={"now": Clock(MONDAY)}).exit_code == 0
    status = runner.invoke(agenda.cli, ["status"], obj={"now": Clock(MONDAY)}).output
    assert "Overlaps:     1 pair of one patient's coming visits overlap" in status
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    assert log_in(desk).status_int == 303
    listed = desk.get("/desk/calls").html.select("ul.overlaps li a")
    assert [link["href"] for link in listed] == ["/desk/appointments/1", "/desk/appointments/2"]
    move_appointment(api.app.clinic, "2", day=dt.date(2026, 11, 24), time_text="09:40", source="desk:ana")
    assert not desk.get("/desk/calls").html.select("ul.overlaps")
    assert "Overlaps" not in runner.invoke(agenda.cli, ["status"], obj={"now": Clock(MONDAY)}).output
    assert patient
