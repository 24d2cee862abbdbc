"""GET /availabilities ("Availability"), with the clock frozen ("Clinic time"), across daylight-saving changes.

The test clinic (conftest): MARTIN works Mon-Fri 09:00-11:00 at C1 and Sat 10:00-11:00
at C2 in 30-minute slots, and is away on Wed 25/11; RUIZ (PED, only PRIV and SAN)
Mon-Fri 09:00-10:00 at C1 in 20-minute slots; NUNEZ (MG) Mon and Wed 16:00-17:00 at
C2; 08/12 is a holiday; C2 is closed 16:00-16:30 on 30/11. Now: Mon 23/11/2026 08:00.
"""

import datetime as dt
import random

import pytest

from _agenda.domain.slots import slot_grid, slots_clear_of, taken_times
from _agenda.domain.visits import Resources, VisitType, resources_for
from _agenda.values.fields import hhmm
from conftest import CLINIC_CSV, MADRID, assert_error, seed, valid_dni, write_csv


def slots(api, query):
    response = api.get("/availabilities?" + query)
    assert response.status_int == 200, response.text
    return response.json["data"]


def keys(data):
    return [(slot["date"], slot["time"], slot["doctorId"], slot["centerId"]) for slot in data]


def test_slots_follow_weekly_hours_slot_grid_and_absences(api):
    data = slots(api, "doctorId=MARTIN&startDate=24/11/2026&endDate=28/11/2026")
    c1_morning = ["09:00", "09:30", "10:00", "10:30"]
    assert keys(data) == (
        [("24/11/2026", t, "MARTIN", "C1") for t in c1_morning]
        # Wed 25/11: away all day
        + [("26/11/2026", t, "MARTIN", "C1") for t in c1_morning]
        + [("27/11/2026", t, "MARTIN", "C1") for t in c1_morning]
        + [("28/11/2026", t, "MARTIN", "C2") for t in ("10:00", "10:30")])


def test_slot_has_every_field_of(api):
    slot = slots(api, "doctorId=RUIZ&date=24/11/2026")[0]
    assert slot == {"date": "24/11/2026", "time": "09:00", "duration": 20, "doctorId": "RUIZ",
                    "doctorName": "Javier Ruiz", "specialityId": "PED", "centerId": "C1"}


def test_holiday_for_everyone_has_no_slots(api):
    assert slots(api, "specialityId=MG&date=08/12/2026") == []
    assert slots(api, "specialityId=PED&date=08/12/2026") == []
    assert len(slots(api, "specialityId=PED&date=09/12/2026")) == 3


def test_partial_closure_of_a_center_removes_only_its_hours(api):
    assert [s["time"] for s in slots(api, "doctorId=NUNEZ&date=30/11/2026")] == ["16:30"]
    assert [s["time"] for s in slots(api, "doctorId=NUNEZ&date=02/12/2026")] == ["16:00", "16:30"]


def test_speciality_lists_every_doctor_sorted_by_date_time_doctor(api):
    data = slots(api, "specialityId=MG&startDate=30/11/2026&endDate=30/11/2026")
    assert keys(data) == [("30/11/2026", "09:00", "MARTIN", "C1"), ("30/11/2026", "09:30", "MARTIN", "C1"),
                          ("30/11/2026", "10:00", "MARTIN", "C1"), ("30/11/2026", "10:30", "MARTIN", "C1"),
                          ("30/11/2026", "16:30", "NUNEZ", "C2")]


def test_minimum_notice_hides_slots_starting_too_soon(api, clock):
    # now 08:00 and 60 minutes of notice: 09:00 is just offerable
    assert [s["time"] for s in slots(api, "doctorId=MARTIN&date=23/11/2026")] == ["09:00", "09:30", "10:00",
                                                                                  "10:30"]
    clock.set(2026, 11, 23, 9, 15)
    assert [s["time"] for s in slots(api, "doctorId=MARTIN&date=23/11/2026")] == ["10:30"]


def test_minimum_notice_counts_the_seconds_of_now_too(api, clock):
    """At 08:00:00 a 09:00 slot is just offerable; one second later it is not, though the
    same question was answered a second before."""
    assert slots(api, "doctorId=MARTIN&date=23/11/2026")[0]["time"] == "09:00"
    clock.moment += dt.timedelta(seconds=1)
    assert slots(api, "doctorId=MARTIN&date=23/11/2026")[0]["time"] == "09:30"


def test_a_booked_slot_leaves_the_answer_and_comes_back_when_cancelled(api):
    """The very next answer shows a booking, and then its cancellation."""
    query = "specialityId=MG&date=24/11/2026"
    assert ("24/11/2026", "09:00", "MARTIN", "C1") in keys(slots(api, query))
    booked = api.book(api.new_patient())
    assert ("24/11/2026", "09:00", "MARTIN", "C1") not in keys(slots(api, query))
    api.delete(f"/appointments/{booked}")
    assert ("24/11/2026", "09:00", "MARTIN", "C1") in keys(slots(api, query))


def test_availability_shows_a_booking_made_through_another_connection(api, make_api):
    query = "doctorId=MARTIN&date=24/11/2026"
    assert slots(api, query)[0]["time"] == "09:00"
    other = make_api(csv=None)
    other.book(other.new_patient())
    assert slots(api, query)[0]["time"] == "09:30"


def test_minimum_notice_is_configurable(make_api, clock):
    api = make_api(min_notice_minutes=0)
    clock.set(2026, 11, 23, 9, 15)
    assert [s["time"] for s in slots(api, "doctorId=MARTIN&date=23/11/2026")] == ["09:30", "10:00", "10:30"]


def test_far_future_dates_are_an_empty_list_not_an_error(api):
    assert slots(api, "doctorId=MARTIN&startDate=30/12/9999") == []
    assert slots(api, "doctorId=MARTIN&date=31/12/9999") == []
    assert_error(api.book(api.new_patient(), date="31/12/9999", status=409), 409, "SLOT_NOT_AVAILABLE")


def test_past_days_have_no_slots(api):
    assert slots(api, "doctorId=MARTIN&startDate=16/11/2026&endDate=20/11/2026") == []


def test_range_is_clamped_to_the_booking_horizon(make_api):
    api = make_api(horizon_days=3)
    data = slots(api, "doctorId=MARTIN&startDate=23/11/2026&endDate=31/12/2026")
    assert sorted({s["date"] for s in data}) == ["23/11/2026", "24/11/2026", "26/11/2026"]


def test_default_range_is_today_and_the_next_13_days(api):
    dates = {s["date"] for s in slots(api, "doctorId=RUIZ")}
    weekdays = [dt.date(2026, 11, 23) + dt.timedelta(days=n) for n in range(14)]
    expected = {d.strftime("%d/%m/%Y") for d in weekdays if d.weekday() < 5 and d != dt.date(2026, 12, 8)}
    assert dates == expected


def test_date_aliases_are_accepted(api):
    expected = keys(slots(api, "doctorId=RUIZ&startDate=24/11/2026&endDate=26/11/2026"))
    assert keys(slots(api, "doctorId=RUIZ&dateFrom=24/11/2026&dateTo=26/11/2026")) == expected
    assert keys(slots(api, "doctorId=RUIZ&from=2026-11-24&to=26-11-2026")) == expected
    assert len(expected) == 9


def test_insurance_filter_keeps_doctors_who_accept_it(api):
    assert slots(api, "specialityId=PED&insuranceId=DKV&date=24/11/2026") == []
    assert len(slots(api, "specialityId=PED&insuranceId=SAN&date=24/11/2026")) == 3
    # doctors without an insurance list accept every insurance
    assert {s["doctorId"] for s in slots(api, "specialityId=MG&insuranceId=DKV&date=23/11/2026")} == {
        "MARTIN", "NUNEZ"}


def test_center_id_counts_only_that_centers_hours(api):
    week = "startDate=23/11/2026&endDate=29/11/2026"
    assert {s["date"] for s in slots(api, f"doctorId=MARTIN&centerId=C2&{week}")} == {"28/11/2026"}
    c1 = slots(api, f"doctorId=MARTIN&centerId=C1&{week}")
    assert "28/11/2026" not in {s["date"] for s in c1} and {s["centerId"] for s in c1} == {"C1"}
    assert {s["doctorId"] for s in slots(api, f"specialityId=MG&centerId=C2&{week}")} == {"MARTIN", "NUNEZ"}


def test_booked_slot_is_not_offered_and_comes_back_when_cancelled(api):
    patient = api.new_patient()
    appointment_id = api.book(patient, date="24/11/2026", time="09:30")
    assert "09:30" not in [s["time"] for s in slots(api, "doctorId=MARTIN&date=24/11/2026")]
    assert api.delete(f"/appointments/{appointment_id}").status_int == 204
    assert "09:30" in [s["time"] for s in slots(api, "doctorId=MARTIN&date=24/11/2026")]


def test_a_split_shift_counts_each_appointment_against_its_own_hours(make_api):
    api = make_api(CLINIC_CSV + "doctor,SOTO,Ana Soto,DER,C1,,mon-fri,09:00-10:00;16:00-17:00,30,,\n")
    patient = api.new_patient()
    api.book(patient, date="24/11/2026", time="16:00", doctor="SOTO")
    assert [s["time"] for s in slots(api, "doctorId=SOTO&date=24/11/2026")] == ["09:00", "09:30", "16:30"]
    api.book(patient, date="24/11/2026", time="09:30", doctor="SOTO")
    assert [s["time"] for s in slots(api, "doctorId=SOTO&date=24/11/2026")] == ["09:00", "16:30"]


def test_an_appointment_off_a_new_grid_blocks_every_slot_it_overlaps(make_api, db_path, tmp_path):
    api = make_api()
    api.book(api.new_patient(), date="24/11/2026", time="09:30")  # 09:30-10:00 on the 30-minute grid
    seed(db_path, write_csv(tmp_path, CLINIC_CSV.replace("mon-fri,09:00-11:00,30", "mon-fri,09:00-11:00,20")))
    # the new grid: 09:00 09:20 09:40 10:00 10:20 10:40; 09:20-09:40 and 09:40-10:00 overlap the booking
    assert [s["time"] for s in slots(api, "doctorId=MARTIN&date=24/11/2026")] == ["09:00", "10:00", "10:20",
                                                                                  "10:40"]
    api.book(api.new_patient(nif=valid_dni(11111111)), date="24/11/2026", time="09:20", status=409)


@pytest.mark.parametrize("seed_number", range(40))
def test_slots_clear_of_matches_a_plain_overlap_check(seed_number):
    """Both ways through slots_clear_of (on the grid, and off it after a schedule change)
    give the slots that overlap no appointment, as checking each pair would."""
    chance = random.Random(seed_number)
    step = chance.choice((10, 15, 20, 30))
    start = chance.randrange(7 * 60, 10 * 60, 5)
    grid = slot_grid(start, start + step * chance.randint(1, 12), step)
    taken, minute = set(), start - 60
    while minute < start + 13 * 30:  # appointments that never overlap, some on the grid, some not
        length = chance.choice((step, step, 5, 25, 45))
        if chance.random() < 0.5:
            taken.add(hhmm(minute) + hhmm(minute + length))
        minute += length + chance.choice((0, 0, 5))
    if chance.random() < 0.5:  # half the cases: only appointments on the grid (the quick way)
        taken = {span for span in taken if span in grid.spans}
    expected = [slot for slot in grid.slots
                if not any(span[:5] < slot[1] and slot[0] < span[5:] for span in taken)]
    assert list(slots_clear_of(grid, taken)) == expected
    assert taken_times(grid, taken) == {slot[0] for slot in grid.slots} - {slot[0] for slot in expected}


@pytest.mark.parametrize("seed_number", range(40))
def test_resources_for_finds_what_a_plain_check_of_every_hold_finds(seed_number):
    """resources_for looks at one hold a resource (the last to start before the visit ends), and takes a room
    another doctor's hours place them in at no time they overlap: the resources it gives are those a plain
    check of every hold and every doctor's hours gives (the doctor's own room first, held by a visit and shared
    by a sobrecita), for a visit and for a sobrecita."""
    chance = random.Random(seed_number)
    day, center = dt.date(2026, 11, 24), [("BOX1", "box", 1), ("BOX2", "box", 1), ("ECO1", "eco", 0)]
    held = {}
    for resource, _, _ in center:  # holds of one resource never overlap (the triggers)
        minute, spans = 8 * 60 + chance.choice((0, 5, 10)), []
        while minute < 14 * 60:
            length = chance.choice((10, 15, 20, 30, 45))
            if chance.random() < 0.6:
                spans.append(hhmm(minute) + hhmm(minute + length))
            minute += length + chance.choice((0, 0, 5, 15))
        held[(resource, day.isoformat())] = tuple(sorted(spans))
    placed = [(doctor, room, hhmm(begin), hhmm(begin + chance.choice((30, 60, 120))))
              for doctor, room, begin in [(chance.choice(("ME", "OTHER")), chance.choice(("BOX1", "BOX2")),
                                           chance.randrange(8 * 60, 13 * 60, 15)) for _ in range(chance.randint(0, 3))]]
    resources = Resources({"C": center}, {day.weekday(): placed}, held)
    kind = VisitType("T", "T", "MG", 20, 0, tuple(chance.sample(("box", "eco"), chance.randint(1, 2))))
    room_id = chance.choice((None, "BOX1", "ECO1"))
    for minute in range(7 * 60 + 40, 14 * 60 + 20, 5):
        start, until = hhmm(minute), hhmm(minute + chance.choice((15, 20, 25)))
        for squeezed in (False, True):
            def free(r):
                return not any(span[:5] < until and start < span[5:] for span in held[(r, day.isoformat())]) and not any(
                    room == r and doctor != "ME" and begin < until and start < end
                    for doctor, room, begin, end in placed)
            own = room_id if any(r == room_id and room for r, _, room in center) else None
            expected = [own] if own and not squeezed else []
            if own and not squeezed and not free(own):
                expected = None
            for category in kind.needs if expected is not None else ():
                if own and any(r == own and cat == category for r, cat, _ in center):
                    continue  # the doctor's own room is of it: held as theirs, or shared by a sobrecita
                found = [r for r, cat, _ in center if cat == category and r not in expected and free(r)]
                if not found:
                    expected = None
                    break
                expected.append(found[0])
            assert resources_for(resources, kind, "ME", "C", room_id, day, start, until, squeezed) == expected


def test_unknown_ids_answer_404_with_their_code(api):
    assert_error(api.get("/availabilities?doctorId=NOBODY"), 404, "DOCTOR_NOT_FOUND")
    assert_error(api.get("/availabilities?specialityId=NOPE"), 404, "SPECIALITY_NOT_FOUND")
    assert_error(api.get("/availabilities?doctorId=MARTIN&centerId=C9"), 404, "CENTER_NOT_FOUND")
    assert_error(api.get("/availabilities?doctorId=MARTIN&insuranceId=XX"), 404, "INSURANCE_NOT_FOUND")


def test_bad_queries_answer_400(api):
    assert_error(api.get("/availabilities"), 400, "INVALID_REQUEST")
    error = assert_error(api.get("/availabilities?doctorId=MARTIN&startDate=26/11/2026&endDate=24/11/2026"),
                         400, "INVALID_REQUEST")
    assert "endDate" in error["message"]
    error = assert_error(api.get("/availabilities?doctorId=MARTIN&startDate=31/02/2026"), 400, "INVALID_REQUEST")
    assert "startDate" in error["message"]


def test_query_values_with_accents_are_read_as_utf8(make_api):
    csv = ("kind,id,name,speciality,center,insurances,days,hours,slot_minutes\n"
           "center,CÁDIZ,Cádiz,,,,,,\nspeciality,MG,Medicina,,,,,,\n"
           "doctor,PEÑA,Luis Peña,MG,CÁDIZ,,mon-fri,09:00-10:00,30\n")
    api = make_api(csv)
    data = slots(api, "doctorId=PE%C3%91A&centerId=C%C3%81DIZ&date=24/11/2026")
    assert [(s["doctorId"], s["centerId"], s["doctorName"]) for s in data] == [("PEÑA", "CÁDIZ", "Luis Peña")] * 2


# Daylight saving ("Clinic time"): in Madrid 2026 the clocks go 02:00 -> 03:00 on Sun 29/03
# and 03:00 -> 02:00 on Sun 25/10.

NIGHT_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes
speciality,URG,Urgencias,,,,,,
doctor,NOCHE,Guardia nocturna,URG,,,sun,01:00-04:00,30
doctor,DIA,Consulta de día,URG,,,mon-sun,09:00-10:00,30
"""


def test_spring_forward_skips_wall_times_that_do_not_exist(make_api, clock):
    clock.set(2026, 3, 28, 12, 0)
    api = make_api(NIGHT_CSV)
    assert [s["time"] for s in slots(api, "doctorId=NOCHE&date=29/03/2026")] == ["01:00", "01:30", "03:00",
                                                                                 "03:30"]


def test_fall_back_offers_the_repeated_hour_once(make_api, clock):
    clock.set(2026, 10, 24, 12, 0)
    api = make_api(NIGHT_CSV)
    times = [s["time"] for s in slots(api, "doctorId=NOCHE&date=25/10/2026")]
    assert times == ["01:00", "01:30", "02:00", "02:30", "03:00", "03:30"]


def test_minimum_notice_counts_real_minutes_across_spring_forward(make_api, clock):
    # 01:30 CET is 00:30 UTC; an hour later is 01:30 UTC, which is 03:30 CEST
    clock.moment = dt.datetime(2026, 3, 29, 1, 30, tzinfo=MADRID)
    api = make_api(NIGHT_CSV)
    assert [s["time"] for s in slots(api, "doctorId=NOCHE&date=29/03/2026")] == ["03:30"]


def test_minimum_notice_counts_real_minutes_across_fall_back(make_api, clock):
    # 02:10 CEST (the first 02:10) is 00:10 UTC; an hour later is 02:10 CET, so 03:00 CET is offered
    clock.moment = dt.datetime(2026, 10, 25, 2, 10, tzinfo=MADRID)
    api = make_api(NIGHT_CSV)
    assert [s["time"] for s in slots(api, "doctorId=NOCHE&date=25/10/2026")] == ["03:00", "03:30"]


@pytest.mark.parametrize("today, first, last", [
    ((2026, 3, 25), "27/03/2026", "31/03/2026"),   # Fri to Tue around 29/03
    ((2026, 10, 21), "23/10/2026", "27/10/2026"),  # Fri to Tue around 25/10
])
def test_days_around_both_changes_keep_the_same_grid(make_api, clock, today, first, last):
    clock.set(*today)
    api = make_api(NIGHT_CSV)
    per_day = {}
    for slot in slots(api, f"doctorId=DIA&startDate={first}&endDate={last}"):
        per_day.setdefault(slot["date"], []).append(slot["time"])
    assert len(per_day) == 5
    assert all(times == ["09:00", "09:30"] for times in per_day.values())


def test_a_slot_on_the_spring_forward_day_can_be_booked_once(make_api, clock):
    clock.set(2026, 3, 28, 12, 0)
    api = make_api(NIGHT_CSV)
    patient = api.new_patient()
    api.book(patient, date="29/03/2026", time="03:00", doctor="NOCHE")
    api.book(patient, date="29/03/2026", time="02:30", doctor="NOCHE", status=409)
    assert [s["time"] for s in slots(api, "doctorId=NOCHE&date=29/03/2026")] == ["01:00", "01:30", "03:30"]


# Every listed start books, whoever holds the doctor's own room then (D38, D42)

def ana_in_box_one():
    """Dr Ana in box 1 all day (30-minute visits on a 15-minute grid), Dr Bea in no room, her long visit needing
    a box, and box 1 the center's only box."""
    from test_slot_rules_types import HEADER, row
    return HEADER + "\n".join([
        row("center", "C1", "Centro"), row("speciality", "MG", "Medicina general"),
        row("type", "MG-A", "Consulta", "MG", slot="30"), row("type", "MG-L", "Larga", "MG", slot="150", needs="box"),
        row("room", "C1-B1", "Box 1", center="C1", category="box"),
        row("doctor", "ANA", "Dr Ana", "MG", "C1", "mon-fri", "09:00-17:00", "15", types="MG-A", room="C1-B1"),
        row("doctor", "BEA", "Dr Bea", "MG", "C1", "mon-fri", "09:00-17:00", "15", types="MG-L")]) + "\n"


def refused_starts(api, date):
    """[(time, what the door says)] of Ana's starts the caller is offered on `date` that the door refuses."""
    from test_holds_state_machine import admitted
    probe = api.new_patient(nif=valid_dni(77), phone="600000077")
    offered = slots(api, f"doctorId=ANA&date={date}")
    assert offered
    return [(slot["time"], said) for slot in offered if (said := admitted(api.app.clinic, slot, probe)) is not None]


def test_an_imported_visit_under_way_in_anothers_room_is_a_conflict_and_her_listed_starts_book(make_api, clock):
    """At 10:20 an import brings Bea's visit 10:00 to 12:30 naming box 1, Ana's room all day: it was held, and
    the caller was offered Ana's 11:30, 11:45, 12:00 and 12:15, each answered 409 `resource_taken`. Now it is
    a conflict, listed by line and not held, `agenda status` and the desk's Rooms page list it."""
    import webtest
    from click.testing import CliRunner
    import agenda
    from _agenda.files.staged_import import import_appointments
    from test_desk import log_in, PASSWORD
    api = make_api(ana_in_box_one())
    api.app.accounts.add_staff("ana", PASSWORD)
    api.new_patient(nif=valid_dni(2), phone="600000002", name="Eva")
    clock.set(2026, 11, 24, 10, 20)
    fields = {"date": "24/11/2026", "time": "10:00", "duration": "150", "doctor": "BEA", "center": "C1",
              "nif": valid_dni(2), "name": "Eva", "type": "MG-L", "holds": "C1-B1"}
    dry = import_appointments(api.app.clinic, [(2, fields, [])], "citas.csv", dry_run=True, source="cli")
    done = import_appointments(api.app.clinic, [(2, fields, [])], "citas.csv", source="cli")
    assert [line for line, _ in done.conflicts] == [line for line, _ in dry.conflicts] == [2], done.conflicts
    assert api.db().execute("SELECT count(*) FROM holds WHERE live = 1").fetchone()[0] == 0
    assert refused_starts(api, "24/11/2026") == []
    status = CliRunner(env={"AGENDA_DB": str(api.app.clinic.db.path), "AGENDA_SECRET": None}).invoke(
        agenda.cli, ["status"], obj={"now": clock})
    assert "1 coming appointment without the room or machine it needs" in status.output, status.output
    desk = webtest.TestApp(api.app)
    log_in(desk)
    rooms = desk.get("/desk/rooms?date=24/11/2026&centerId=C1").html.find(id="unplaced")
    assert rooms is not None and [a["href"] for a in rooms.find_all("a")] == ["/desk/appointments/1"]


def test_a_conflict_the_upgrade_left_on_her_room_is_never_offered(make_api, clock):
    """A database from before doctors' rooms were held: Bea's visit holds box 1, Ana's room, at 15:00, and the
    upgrade lists it. Ana's 14:45, 15:00 and 15:15 were offered, each answered 409 `resource_taken`."""
    import re
    import agenda
    from _agenda.storage.shipped import newest_version, read_schema
    api = make_api(ana_in_box_one())
    conn = api.db()
    patient = api.new_patient()
    with conn:
        conn.execute("INSERT INTO appointments (id, patient_id, doctor_id, speciality_id, center_id, date, time,"
                     " end_time, busy_until, type_id, created_at, updated_at) VALUES (100, ?, 'BEA', 'MG', 'C1',"
                     " '2026-11-24', '15:00', '15:30', '15:30', NULL, 'x', 'x')", (patient,))
        conn.execute("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES (100, 'C1-B1',"
                     " '2026-11-24', '15:00', '15:30')")
        conn.execute("PRAGMA user_version = 14")
    agenda.migrate(conn, re.split(r"\n-- version (?:1[6-9]|[2-9][0-9])\s*\n", read_schema())[0])
    conn.execute(f"PRAGMA user_version = {newest_version()}")
    assert refused_starts(api, "24/11/2026") == []
    assert not {"14:45", "15:00", "15:15"} & {s["time"] for s in slots(api, "doctorId=ANA&date=24/11/2026")}
    from _agenda.domain.fitting import why_not  # the desk says why, in the door's words
    from _agenda.domain.visits import VisitType
    said = why_not(api.app.clinic, "ANA", dt.date(2026, 11, 24), "15:00", "C1", VisitType("MG-A", None, "MG", 30))
    assert (said.reason, said.held) == ("resource_taken", (("box", ["Box 1"]),)), said
