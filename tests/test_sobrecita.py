"""A "sobrecita" (docs/design.md, "Sobrecita"): reception squeezes an urgent patient into a taken or
off-grid time of the doctor's hours; it is marked on every view, audited, never offered to the caller,
and the database still refuses every other overlap. Through the clinic, the desk (webtest) and the CLI."""

import datetime as dt
import sqlite3

import pytest
import webtest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

import agenda
from _agenda.domain.counter import squeeze_in
from _agenda.domain.appointments import read_appointment
from _agenda.domain.changes import book_appointment, move_appointment
from _agenda.domain.registry import register_patient

from conftest import MONDAY, Clock, assert_error, valid_dni
from test_desk import PASSWORD, events, log_in

TUESDAY = dt.date(2026, 11, 24)  # MARTIN at C1, 09:00-11:00 in 30-minute slots


def squeeze(clinic, patient, time_text, day=TUESDAY, source="desk:ana", **extra):
    return squeeze_in(clinic, day=day, time_text=time_text, doctor_id="MARTIN", patient_id=patient, source=source,
                      **extra)


def test_a_sobrecita_goes_into_a_taken_or_off_grid_time_and_leaves_the_grid_as_it_was(api):
    clinic = api.app.clinic
    first, urgent, other = api.new_patient(), api.new_patient(nif=valid_dni(1)), api.new_patient(nif=valid_dni(2))
    booked = api.book(first, time="09:00")
    on_top = squeeze(clinic, urgent, "09:00", reason="Urgente")
    between = squeeze(clinic, other, "09:10")
    rows = {row["id"]: row for row in api.db().execute("SELECT * FROM appointments")}
    assert (rows[int(on_top)]["time"], rows[int(on_top)]["end_time"], rows[int(on_top)]["squeezed"]) == ("09:00", "09:30", 1)
    assert (rows[int(between)]["time"], rows[int(between)]["end_time"]) == ("09:10", "09:40")
    assert rows[int(booked)]["squeezed"] == 0
    free = [s["time"] for s in api.get("/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]
    assert free == ["09:30", "10:00", "10:30"]  # a sobrecita takes no slot and is never one offered
    assert api.book(api.new_patient(nif=valid_dni(3)), time="09:30")  # the slot under the 09:10 one still books
    listed = api.get("/appointments?date=24/11/2026").json["data"]
    assert [a["time"] for a in listed] == ["09:00", "09:00", "09:10", "09:30"]  # a real visit: its reminder is due
    assert all(set(a["extraData"]) == {"status", "specialityId", "insuranceId", "duration"} for a in listed)
    assert squeeze(clinic, urgent, "09:00") == on_top  # sent twice: the same one
    assert [after for _, after in events(api, "appointment.squeezed")] == [on_top, between]
    assert {source for source, _ in events(api, "appointment.squeezed")} == {"desk:ana"}


@pytest.mark.parametrize("day, time_text, reason", [
    (TUESDAY, "12:00", "outside_hours"),  # not in the doctor's hours
    (dt.date(2026, 11, 25), "09:10", "closed"),  # her holiday, off the grid too
    (TUESDAY, "11:00", "outside_hours"),  # her hours end at 11:00
    (dt.date(2026, 11, 28), "10:10", "wrong_center"),  # Saturday she works at C2
    (dt.date(2028, 11, 21), "09:10", "beyond_horizon"),
])
def test_a_sobrecita_keeps_every_rule_but_the_grid_and_the_other_appointments(api, day, time_text, reason):
    patient = api.new_patient()
    with pytest.raises(agenda.ClinicError) as refused:
        squeeze(api.app.clinic, patient, time_text, day=day, center_id="C1")
    assert refused.value.code == "SLOT_NOT_AVAILABLE" and refused.value.extra["reason"] == reason


def test_a_sobrecita_in_the_past_or_by_the_caller_is_refused(api, clock):
    patient = api.new_patient()
    clock.set(2026, 11, 24, 9, 20)
    with pytest.raises(agenda.ClinicError) as past:
        squeeze(api.app.clinic, patient, "09:10")
    assert past.value.extra["reason"] == "too_soon"
    with pytest.raises(agenda.ClinicError) as caller:
        squeeze(api.app.clinic, patient, "09:40", source="api")
    assert caller.value.code == "INVALID_REQUEST"
    assert api.db().execute("SELECT count(*) FROM appointments").fetchone()[0] == 0


def test_a_moved_sobrecita_stays_one_and_keeps_its_length(api):
    """A move keeps what the appointment is (docs/design.md, "One door for an appointment"): the desk moves
    a sobrecita by the sobrecita's rules, the caller only to a free slot of the grid; either way it stays
    squeezed, takes no slot, and keeps its length."""
    clinic = api.app.clinic
    taken = api.book(api.new_patient(nif=valid_dni(1)), time="10:30")
    squeezed = squeeze(clinic, api.new_patient(), "09:10")
    assert api.put(f"/appointments/{squeezed}", {"newDate": "24/11/2026", "newTime": "10:00"}).status_int == 200
    row = api.db().execute("SELECT squeezed, time, end_time FROM appointments WHERE id = ?", (squeezed,)).fetchone()
    assert tuple(row) == (1, "10:00", "10:30")
    assert "10:00" in [s["time"] for s in api.get("/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]
    assert_error(api.put(f"/appointments/{squeezed}", {"newDate": "24/11/2026", "newTime": "10:30"}),
                 409, "SLOT_NOT_AVAILABLE")  # the caller's move: a free slot of the grid, sobrecita or not
    assert_error(api.put(f"/appointments/{squeezed}", {"newDate": "24/11/2026", "newTime": "10:40"}),
                 409, "SLOT_NOT_AVAILABLE")
    move_appointment(clinic, squeezed, day=TUESDAY, time_text="10:40", source="desk:ana")  # on top of 10:30, off the grid
    row = api.db().execute("SELECT squeezed, time, end_time FROM appointments WHERE id = ?", (squeezed,)).fetchone()
    assert tuple(row) == (1, "10:40", "11:10") and read_appointment(clinic, taken)["start"] == "10:30"
    with pytest.raises(agenda.ClinicError) as closed:
        move_appointment(clinic, squeezed, day=dt.date(2026, 11, 25), time_text="09:10", source="desk:ana")
    assert closed.value.extra["reason"] == "closed"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=115), st.booleans()), min_size=1, max_size=12))
def test_the_database_refuses_every_overlap_but_a_sobrecitas(api, tries):
    """Whatever mix of bookings and sobrecitas is tried, and whatever row is written past the clinic,
    no two live appointments of a doctor that are not sobrecitas ever overlap."""
    clinic, conn = api.app.clinic, api.db()
    with clinic.db.transaction() as writing:
        writing.execute("DELETE FROM outbox")
        writing.execute("DELETE FROM appointments")
    known = [row[0] for row in conn.execute("SELECT id FROM patients ORDER BY id")]
    patients = known + [register_patient(clinic, {"name": f"P{n}", "nif": valid_dni(n + 1), "phone": "612345678"},
                                         "cli") for n in range(len(known), 12)]
    for patient, (minute, squeezed) in zip(patients, tries):
        time_text = f"{9 + minute // 60:02d}:{minute % 60:02d}"
        try:
            if squeezed:
                squeeze(clinic, patient, time_text)
            else:
                book_appointment(clinic, day=TUESDAY, time_text=time_text, doctor_id="MARTIN", patient_id=patient,
                                 source="desk:ana")
        except agenda.ClinicError:
            pass
    plain = conn.execute("SELECT time, end_time FROM appointments WHERE squeezed = 0 AND status != 'cancelled'"
                         " ORDER BY time").fetchall()
    assert all(earlier[1] <= later[0] for earlier, later in zip(plain, plain[1:]))
    for start, end in plain:  # straight into the table, past every rule of the clinic: refused
        for shifted in (start, f"{start[:3]}{int(start[3:]) + 1:02d}" if start[3:] < "59" else start):
            with pytest.raises(sqlite3.IntegrityError), clinic.db.transaction() as writing:
                writing.execute("INSERT INTO appointments (patient_id, doctor_id, date, time, end_time, created_at,"
                                " updated_at) VALUES (?, 'MARTIN', ?, ?, ?, '', '')",
                                (patients[0], TUESDAY.isoformat(), shifted, end))


def test_the_desk_squeezes_a_patient_in_and_marks_it_on_every_view(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    api.book(api.new_patient(), time="09:00")
    patient = api.new_patient(nif=valid_dni(7), name="Pablo", surname="Ortega")
    day = desk.get("/desk/day?date=24/11/2026&centerId=C1")
    link, = [a["href"] for a in day.html.select(".col-head a.squeeze") if "MARTIN" in a["href"]]
    page = desk.get(link)
    assert page.html.h1.text == "Sobrecita"
    chosen = page.forms[[f.action for f in page.forms.values()].index("/desk/book")]
    missing = chosen.submit(expect_errors=True)
    assert missing.status_int == 400 and missing.html.find("p", class_="error").text.startswith("Hora: ")
    fields = {"csrf": page.html.find("input", attrs={"name": "csrf"})["value"], "doctorId": "MARTIN",
              "date": "24/11/2026", "centerId": "C1", "squeeze": "1", "patientId": patient, "time": "9:05",
              "reason": "Dolor agudo"}
    done = desk.post("/desk/book", fields)
    assert done.follow().html.find("p", class_="flash").text == \
        "Cita de Pablo Ortega reservada el 24/11/2026 a las 09:05."
    card, = [c for c in desk.get("/desk/day?date=24/11/2026&centerId=C1").html.select(".card") if "Pablo" in c.text]
    assert "squeezed" in card["class"] and "⚡ sobrecita" in card.text
    appointment_id = card.select_one("a.who")["href"].rsplit("/", 1)[1]
    page = desk.get(f"/desk/appointments/{appointment_id}")
    assert "⚡ sobrecita" in page.html.find("dl").text and "sobrecita" in page.html.select("table tbody tr")[0].text
    assert "⚡ sobrecita" in desk.get(f"/desk/patients/{patient}").text
    printed = desk.get("/desk/day?date=24/11/2026&centerId=C1").html.select("table.print-day tbody tr")
    assert any("⚡ sobrecita" in row.text and "Pablo" in row.text for row in printed)


def test_agenda_book_squeeze_is_the_desks_twin(api, db_path):
    api.new_patient()
    api.book(api.new_patient(nif=valid_dni(4)), time="09:00")
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})
    args = ["book", "--doctor", "MARTIN", "--date", "24/11/2026", "--time", "09:00", "--nif", "12345678Z"]
    taken = runner.invoke(agenda.cli, args, obj={"now": Clock(MONDAY)})
    assert taken.exit_code == 1 and "another appointment holds that time" in taken.output
    squeezed = runner.invoke(agenda.cli, args + ["--squeeze", "--reason", "Urgente"], obj={"now": Clock(MONDAY)})
    assert squeezed.exit_code == 0, squeezed.output
    assert squeezed.output.startswith("Booked 2: 24/11/2026 09:00 Lucía Martín") and "(squeezed in)" in squeezed.output
    assert [source for source, _ in events(api, "appointment.squeezed")] == ["cli"]
