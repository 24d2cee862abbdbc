"""The slot rules hold together (docs/design.md, "Slot states"), over generated schedules, closures,
bookings, clocks and channel rules: nothing is offered twice; a slot is listed exactly when
`slot_state` says it is free; a listed slot books through the API and a slot the desk shows free
books through the desk; every refusal's reason is the state `slot_state` gives."""

import contextlib
import datetime as dt
import re
import tempfile
from pathlib import Path
from zoneinfo import ZoneInfo

import webtest
from hypothesis import HealthCheck, Phase, example, given, settings, strategies as st

import agenda
from _agenda.domain.booking import Visit
from _agenda.desk.views import day_plan
from _agenda.domain.slots import read_schedule, slot_state
from _agenda.domain.changes import book_appointment
from conftest import SECRET, Api, Clock, seed, valid_dni, write_csv

MADRID = ZoneInfo("Europe/Madrid")
MONDAY = dt.date(2026, 11, 23)
DAYS = [MONDAY + dt.timedelta(days=n) for n in range(5)]
PASSWORD = "correct horse battery"
HEADER = "kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to\n"
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def hhmm(minutes):
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


@st.composite
def clinics(draw):
    """A seed CSV: two centers, one or two doctors with one or two shifts each, a few closures."""
    lines = ["center,C1,Centro,,,,,,,,", "center,C2,Norte,,,,,,,,", "speciality,MG,Medicina general,,,,,,,,"]
    doctors = draw(st.sampled_from([["D1"], ["D1", "D2"]]))
    for doctor in doctors:
        for shift in range(draw(st.integers(1, 2))):
            days = draw(st.lists(st.sampled_from(WEEKDAYS), min_size=1, max_size=4, unique=True))
            step = draw(st.sampled_from([15, 20, 30]))
            start = (8 + 7 * shift) * 60 + draw(st.sampled_from([0, 10, 30]))
            end = start + step * draw(st.integers(1, 8))
            center = draw(st.sampled_from(["C1", "C2"]))
            lines.append(f"doctor,{doctor},Dr {doctor},MG,{center},,{';'.join(days)},{hhmm(start)}-{hhmm(end)},{step},,")
    for n in range(draw(st.integers(0, 2))):
        doctor = draw(st.sampled_from(["", *doctors]))
        center = draw(st.sampled_from(["", "C1", "C2"]))
        first = draw(st.sampled_from(DAYS))
        last = first + dt.timedelta(days=draw(st.integers(0, 2)))
        hours = ""
        if draw(st.booleans()):
            opens = draw(st.integers(8 * 12, 18 * 12)) * 5
            hours = f"{hhmm(opens)}-{hhmm(opens + draw(st.sampled_from([15, 30, 60, 90])))}"
        lines.append(f"closed,{doctor},Cierre {n},,{center},,,{hours},,{first:%d/%m/%Y},{last:%d/%m/%Y}")
    return HEADER + "\n".join(lines) + "\n"


moments = st.builds(lambda day, minute: dt.datetime.combine(day, dt.time(minute // 60, minute % 60), tzinfo=MADRID),
                    st.sampled_from(DAYS[:3]), st.integers(7 * 60, 18 * 60))
probes = st.lists(st.tuples(st.sampled_from(["D1", "D2"]), st.sampled_from(DAYS), st.integers(7 * 12, 20 * 12 - 1)),
                  max_size=6)


def listed_slots(api, doctors):
    found = []
    for doctor in doctors:
        answer = api.get(f"/availabilities?doctorId={doctor}&startDate={DAYS[0]:%d/%m/%Y}&endDate={DAYS[-1]:%d/%m/%Y}")
        assert answer.status_int == 200, answer.text
        found += [(s["doctorId"], s["date"], s["time"], s["centerId"]) for s in answer.json["data"]]
    return found


def states(clinic, doctors, channel="caller"):
    """{(doctor, DD/MM/YYYY, HH:MM): slot_state} for every 5 minutes of the days, at any center, by a
    channel's rules."""
    schedule = read_schedule(clinic.conn(), doctors, DAYS[0], DAYS[-1])
    window = clinic.window(channel)
    return {(doctor, f"{day:%d/%m/%Y}", hhmm(minute)): slot_state(schedule, window, doctor, day, hhmm(minute))
            for doctor in doctors for day in DAYS for minute in range(7 * 60, 20 * 60, 5)}


@settings(max_examples=40, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(catalog=clinics(), now=moments, notice=st.sampled_from([0, 30, 60, 120]), horizon=st.integers(1, 5),
       desk_notice=st.sampled_from([0, 15, 90]), bookings=probes, attempts=probes)
@example(  # reception booked past the caller's horizon; the caller sending that booking again is answered with it
    catalog="kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to\n"
            "center,C1,Centro,,,,,,,,\ncenter,C2,Norte,,,,,,,,\nspeciality,MG,Medicina general,,,,,,,,\n"
            "doctor,D2,Dr D2,MG,C1,,thu,15:10-15:55,15,,\n",
    now=dt.datetime(2026, 11, 23, 7, 0, tzinfo=ZoneInfo("Europe/Madrid")), notice=0, horizon=1, desk_notice=0,
    bookings=[("D2", dt.date(2026, 11, 26), 188)], attempts=[("D2", dt.date(2026, 11, 26), 188)])
def test_free_slots_refusals_and_the_desk_agree_with_slot_state(catalog, now, notice, horizon, desk_notice, bookings,
                                                                attempts):
    with generated_clinic(catalog, now, notice, horizon, desk_notice) as app:
        check_one_clinic(Api(app), app, bookings, attempts)


@contextlib.contextmanager
def generated_clinic(catalog, now, notice, horizon, desk_notice):
    """The app on a new database seeded with the catalog file's text, its clock at `now`, the caller's notice
    and horizon and the desk's notice as given; closed after."""
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "agenda.db"
        seed(db_path, write_csv(Path(folder), catalog))
        app = agenda.create_app(db_path, SECRET, now=Clock(now), min_notice_minutes=notice, horizon_days=horizon,
                                desk_min_notice_minutes=desk_notice)
        try:
            yield app
        finally:
            app.clinic.db.close()


def check_one_clinic(api, app, bookings, attempts):
    clinic = app.clinic
    doctors = [row[0] for row in clinic.conn().execute("SELECT id FROM doctors ORDER BY id")]
    patients = [api.new_patient(nif=valid_dni(n), phone=f"6{n:08d}") for n in range(1, 4)]
    for n, (doctor, day, five) in enumerate(bookings):  # some bookings first: they take slots
        if doctor in doctors:
            book_appointment(clinic, Visit(patient_id=patients[n % 3], doctor_id=doctor), day=day,
                             time_text=hhmm(five * 5), source="cli") \
                if slot_state(read_schedule(clinic.conn(), [doctor], day, day), clinic.window("desk"), doctor, day,
                                     hhmm(five * 5))[0] == "free" else None
    listed = listed_slots(api, doctors)
    assert len(listed) == len({slot[:3] for slot in listed}), "a slot offered twice"
    state_of = states(clinic, doctors)
    assert {slot[:3] for slot in listed} == {key for key, state in state_of.items() if state[0] == "free"}
    desk_free = {key for key, state in states(clinic, doctors, "desk").items() if state[0] == "free"}
    for day in DAYS:  # the desk shows free exactly what slot_state lets it book, by the desk's rules
        shown = [(plan["id"], f"{day:%d/%m/%Y}", cell["time"]) for center in ("C1", "C2")
                 for plan in day_plan(clinic, day, center) for cell in plan["slots"] if cell["state"] == "free"]
        assert len(shown) == len(set(shown)) and set(shown) == {key for key in desk_free if key[1] == f"{day:%d/%m/%Y}"}
    for n, (doctor, day, five) in enumerate(attempts):  # each answer is the state slot_state gives
        if doctor not in doctors:
            continue
        key = (doctor, f"{day:%d/%m/%Y}", hhmm(five * 5))
        expected = states(clinic, [doctor])[key]
        own = clinic.conn().execute(  # the patient's own booking there: the same booking sent again is a retry
            "SELECT id FROM appointments WHERE patient_id = ? AND doctor_id = ? AND date = ? AND time = ?"
            " AND status != 'cancelled'", (patients[n % 3], doctor, day.isoformat(), key[2])).fetchone()
        answer = api.post("/appointments", {"date": key[1], "time": key[2], "doctorId": doctor,
                                             "patientId": patients[n % 3]})
        if expected[0] == "free":
            assert answer.status_int == 201, (key, answer.text)
        elif own is not None:  # answered with the one made, whatever the window says of the slot now
            assert (answer.status_int, answer.json["appointmentId"]) == (201, str(own[0])), (key, answer.text)
        else:
            assert (answer.status_int, answer.json["error"].get("reason")) == (409, expected[0]), (key, answer.text)
    desk_free_now = [(plan["id"], f"{day:%d/%m/%Y}", cell["time"], center) for day in DAYS for center in ("C1", "C2")
                     for plan in day_plan(clinic, day, center) for cell in plan["slots"] if cell["state"] == "free"]
    if desk_free_now:
        book_through_the_desk(app, api, desk_free_now[0])


def book_through_the_desk(app, api, slot):
    """A slot the desk shows free books through the desk: the day view's link, the form, a 303."""
    doctor, date, time_text, center = slot
    app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(app)
    login = desk.get("/desk/login").forms[0]
    login["name"], login["password"] = "ana", PASSWORD
    assert login.submit().status_int == 303
    day = desk.get(f"/desk/day?date={date}&centerId={center}")
    link = day.html.find("a", href=re.compile(rf"doctorId={doctor}&.*time={time_text}"))
    assert link is not None, (slot, day.text)
    form = desk.get(link["href"]).forms[len(desk.get(link["href"]).forms) - 1]
    form["name"], form["nif"] = "Eva", valid_dni(99)
    assert form.submit().status_int == 303
    booked = api.get(f"/appointments?date={date}").json["data"]
    assert (doctor, time_text) in {(a["doctorId"], a["time"]) for a in booked}
