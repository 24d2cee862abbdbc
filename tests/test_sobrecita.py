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
from _agenda.domain.booking import Visit
from _agenda.domain.counter import squeeze_in
from _agenda.domain.appointments import read_appointment
from _agenda.domain.changes import book_appointment, move_appointment
from _agenda.domain.registry import register_patient

from conftest import MONDAY, Clock, assert_error, valid_dni
from test_desk import PASSWORD, events, log_in

TUESDAY = dt.date(2026, 11, 24)  # MARTIN at C1, 09:00-11:00 in 30-minute slots


def squeeze(clinic, patient, time_text, day=TUESDAY, source="desk:ana", **extra):
    return squeeze_in(clinic, Visit(patient, "MARTIN", **extra), day=day, time_text=time_text, source=source)


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
                book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=TUESDAY,
                                 time_text=time_text, source="desk:ana")
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
        "Cita de Pablo Ortega reservada el 24/11/2026 a las 09:05. No se enviará ningún correo: el paciente no tiene correo."
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


# A sobrecita shares its doctor's room only while that room is hers for its whole span (D42)

def box_four(eva_until="14:00", second_box=True, dani_from=None):
    """Box 4, Dr Eva's until `eva_until` and Dr Dani's from `dani_from` (then to 18:00), and (`second_box`) a free
    box 5; a first visit lasts 30 minutes on a 15-minute grid."""
    from test_slot_rules_types import HEADER, row
    return HEADER + "\n".join([
        row("center", "C1", "Centro"), row("speciality", "MG", "Medicina general"),
        row("type", "MG-A", "Consulta", "MG", slot="30"),
        row("room", "C1-B4", "Box 4", center="C1", category="box"),
        *([row("room", "C1-B5", "Box 5", center="C1", category="box")] if second_box else []),
        row("doctor", "EVA", "Dr Eva", "MG", "C1", "mon-fri", f"09:00-{eva_until}", "15", types="MG-A", room="C1-B4"),
        row("doctor", "DANI", "Dr Dani", "MG", "C1", "mon-fri", f"{dani_from or eva_until}-18:00", "15", types="MG-A",
            room="C1-B4")]) + "\n"


def in_rooms(api):
    """[(room, appointment, doctor, time, until)] of every live visit in a room, read plainly: what it holds,
    and a sobrecita holding no room in the room its doctor's hours place her in at its start."""
    db = api.db()
    found = [tuple(r) for r in db.execute(
        "SELECT h.resource_id, a.id, a.doctor_id, a.time, h.until FROM holds h JOIN appointments a ON a.id ="
        " h.appointment_id WHERE h.live = 1 AND a.status != 'cancelled'")]
    found += [tuple(r) for r in db.execute(
        "SELECT s.room_id, a.id, a.doctor_id, a.time, coalesce(a.busy_until, a.end_time) FROM appointments a"
        " JOIN schedules s ON s.doctor_id = a.doctor_id AND s.weekday = (CAST(strftime('%w', a.date) AS INTEGER) + 6)"
        " % 7 AND s.start_time <= a.time AND a.time < s.end_time WHERE a.squeezed = 1 AND a.status != 'cancelled'"
        " AND s.room_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.appointment_id = a.id AND"
        " h.live = 1)")]
    return sorted(found)


def two_in_a_room(api):
    """[(room, a, b)] of two visits of different doctors in one room at once."""
    rooms = in_rooms(api)
    return [(a[0], a[1], b[1]) for i, a in enumerate(rooms) for b in rooms[i + 1:]
            if a[0] == b[0] and a[2] != b[2] and a[3] < b[4] and b[3] < a[4]]


def test_a_sobrecita_running_past_its_doctors_stretch_in_the_room_takes_a_free_box(make_api):
    """Eva's sobrecita at 13:50 runs 30 minutes, to 14:20, and box 4 is Dani's from 14:00: it held nothing, and
    Dani's 14:00 then booked into box 4 too, two patients in one box, listed nowhere."""
    api = make_api(box_four())
    squeezed = squeeze_in(api.app.clinic, Visit(patient_id=api.new_patient(), doctor_id="EVA"), day=TUESDAY,
                          time_text="13:50", source="desk:ana")
    assert [tuple(r) for r in api.db().execute("SELECT resource_id, time, until FROM holds WHERE appointment_id = ?",
                                               (int(squeezed),))] == [("C1-B5", "13:50", "14:20")]
    api.book(api.new_patient(nif=valid_dni(1)), time="14:00", doctor="DANI")
    assert two_in_a_room(api) == []


def test_a_sobrecita_with_no_free_box_for_its_whole_span_is_refused(make_api):
    api = make_api(box_four(second_box=False))
    with pytest.raises(agenda.ClinicError) as refused:
        squeeze_in(api.app.clinic, Visit(patient_id=api.new_patient(), doctor_id="EVA"), day=TUESDAY, time_text="13:50",
                   source="desk:ana")
    assert refused.value.extra["reason"] == "resource_taken"
    inside = squeeze_in(api.app.clinic, Visit(api.new_patient(nif=valid_dni(1)), "EVA"), day=TUESDAY,
                        time_text="13:30", source="desk:ana")  # to 14:00: her box all along, shared with her own visit
    api.book(api.new_patient(nif=valid_dni(2)), time="13:30", doctor="EVA")
    assert api.db().execute("SELECT count(*) FROM holds WHERE appointment_id = ?", (int(inside),)).fetchone()[0] == 0
    assert two_in_a_room(api) == []


@pytest.mark.parametrize("second_box", [True, False])
def test_a_reload_ending_a_coming_sobrecitas_room_re_derives_it_or_is_refused_naming_it(make_api, db_path, clock,
                                                                                        second_box):
    """Box 4 is Eva's until 17:00; her sobrecita at 11:50 shares it. A reload ending her stretch at 12:00 and giving
    the box to Dani was accepted, the sobrecita left in Dani's box to 12:20: it now takes box 5, or the reload is
    refused naming it."""
    from test_holds_state_machine import table_rows
    from _agenda.files.catalogs import SeedError
    from _agenda.files.reading import read_catalog_text
    api = make_api(box_four(eva_until="17:00", second_box=second_box))
    squeezed = squeeze_in(api.app.clinic, Visit(patient_id=api.new_patient(), doctor_id="EVA"), day=TUESDAY,
                          time_text="11:50", source="desk:ana")
    before = table_rows(db_path)
    reload = read_catalog_text(box_four(eva_until="12:00", second_box=second_box))
    if not second_box:
        with pytest.raises(SeedError) as refused:
            agenda.seed_catalogs(api.db(), reload, at=clock())
        assert f"appointment {squeezed} (24/11/2026 11:50, doctor EVA)" in str(refused.value)
        assert table_rows(db_path) == before
        return
    assert agenda.seed_catalogs(api.db(), reload, at=clock())["rederived"][0]["holds"] == ["C1-B5"]
    api.book(api.new_patient(nif=valid_dni(1)), time="12:00", doctor="DANI")
    assert two_in_a_room(api) == []


def test_a_reload_ending_the_sharing_under_a_sobrecita_under_way_is_refused(make_api, db_path, clock):
    """At 10:12, Eva's sobrecita runs 10:05 to 10:35 in her box 4; a reload moving her to box 5 and Dani into box 4
    was accepted (the same reload over a regular visit under way is refused)."""
    from test_holds_state_machine import table_rows
    from _agenda.files.catalogs import SeedError
    from _agenda.files.reading import read_catalog_text
    api = make_api(box_four(eva_until="17:00"))
    squeezed = squeeze_in(api.app.clinic, Visit(patient_id=api.new_patient(), doctor_id="EVA"), day=TUESDAY,
                          time_text="10:05", source="desk:ana")
    clock.set(2026, 11, 24, 10, 12)
    moved = box_four(eva_until="17:00", dani_from="09:00").replace(
        "Dr Eva,MG,C1,,mon-fri,09:00-17:00,15,,,,,,MG-A,C1-B4", "Dr Eva,MG,C1,,mon-fri,09:00-17:00,15,,,,,,MG-A,C1-B5")
    assert "C1-B5\n" in moved
    before = table_rows(db_path)
    with pytest.raises(SeedError) as refused:
        agenda.seed_catalogs(api.db(), read_catalog_text(moved), at=clock())
    assert f"room C1-B4: appointment {squeezed}, a sobrecita, is under way in it until 10:35" in str(refused.value)
    assert table_rows(db_path) == before
    clock.set(2026, 11, 24, 10, 35)
    assert agenda.seed_catalogs(api.db(), read_catalog_text(moved), at=clock())["changed"]
