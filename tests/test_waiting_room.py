"""The waiting room (docs/design.md, "The waiting room"), through webtest as reception works it: arrivals and waits
against each visit's time, "pasa a consulta" and "ha terminado" in one POST each from the page, undo a step at a
time, refusals in words, the poll answering a new version after a mark, and the waits right across a day whose
clocks change in Europe/Madrid."""

import datetime as dt

import pytest
import webtest
from hypothesis import HealthCheck, given, settings, strategies as st

from _agenda.domain.booking import Visit
from _agenda.domain.changes import book_appointment, cancel_appointment, move_appointment
from _agenda.domain.counter import mark_attendance
from _agenda.domain.waiting_room import waiting_room

from conftest import valid_dni
from test_desk import log_in, PASSWORD

UTC = dt.timezone.utc
MONDAY = dt.date(2026, 11, 23)
ROOM = "/desk/waiting?date=23%2F11%2F2026&centerId=C1"


def booked(api, day, visits):
    """{name: id} of visits booked at the desk on `day`: (name, time, doctor) each, each a patient of their own."""
    return {name: book_appointment(api.app.clinic, Visit(api.new_patient(nif=valid_dni(500 + n), name=name,
                                                                         surname="Sala"), doctor,
                                                         insurance_id="PRIV" if doctor == "RUIZ" else None),
                                   day=day, time_text=time, source="desk:ana")
            for n, (name, time, doctor) in enumerate(visits)}


@pytest.fixture
def room(api, clock):
    """Monday 23/11 at Centro: MARTIN sees Ana 09:00, Bea 09:30, Carla 10:00; RUIZ sees Fran 09:20."""
    clock.set(2026, 11, 22, 20, 0)
    visits = booked(api, MONDAY, [("Ana", "09:00", "MARTIN"), ("Bea", "09:30", "MARTIN"), ("Carla", "10:00", "MARTIN"),
                                  ("Fran", "09:20", "RUIZ")])
    api.app.accounts.add_staff("ana", PASSWORD)
    return visits


def at(api, clock, hour, minute):
    """Move the clinic's clock to Monday at that time; a receptionist logged in then (hours pass between: a
    session would have ended)."""
    clock.set(2026, 11, 23, hour, minute)
    desk = webtest.TestApp(api.app)
    assert log_in(desk).status_int == 303
    return desk


def rows(page, state):
    """[(patient, words of the row, buttons)] of a section of the waiting room."""
    section = page.html.select_one(f"section#{state}")
    return [(row.select_one("a").text, " ".join(row.select("td")[3].text.split()),
             [button.text for button in row.select("button")]) for row in section.select("tbody tr")]


def press(page, visit, label):
    """Press a row's button by its words, as reception does: one POST, back to the waiting room."""
    form = next(f for f in page.forms.values() if f.action.endswith(f"/appointments/{visit}/attendance"))
    (value,) = [b["value"] for b in page.html.select(f"#visit-{visit} button") if b.text == label]
    return form.submit("mark", value=value, expect_errors=True)


def test_arrivals_waits_and_the_consultation_in_one_press_each(api, clock, room):
    desk = at(api, clock, 8, 45)
    page = desk.get(ROOM)
    assert rows(page, "expected")[0] == ("Ana Sala", "", ["Llegó", "Pasa a consulta"])
    page = press(page, room["Ana"], "Llegó").follow()
    assert rows(page, "waiting") == [("Ana Sala", "llegó a las 08:45 · adelantado (15 min) · espera 0 min",
                                      ["Pasa a consulta", "Deshacer"])]
    desk = at(api, clock, 9, 5)
    moved = press(desk.get(ROOM), room["Ana"], "Pasa a consulta")
    assert moved.status_int == 303 and moved.headers["Location"].endswith(ROOM)
    desk = at(api, clock, 9, 22)
    press(desk.get(ROOM), room["Fran"], "Llegó")
    desk = at(api, clock, 9, 40)
    press(desk.get(ROOM), room["Bea"], "Llegó")
    desk = at(api, clock, 9, 54)
    page = desk.get(ROOM)
    assert rows(page, "in_consultation") == [("Ana Sala", "llegó a las 08:45 · adelantado (15 min) · en consulta "
                                              "desde las 09:05 · 49 min · esperó 20 min · 5 min pasada su hora",
                                              ["Ha terminado", "Deshacer"])]
    assert rows(page, "waiting") == [
        ("Fran Sala", "llegó a las 09:22 · puntual · espera 32 min · 32 min pasada su hora",
         ["Pasa a consulta", "Deshacer"]),
        ("Bea Sala", "llegó a las 09:40 · con retraso (10 min) · espera 14 min · 14 min pasada su hora",
         ["Pasa a consulta", "Deshacer"])]
    assert [name for name, *_ in rows(page, "expected")] == ["Carla Sala"] and rows(page, "absent") == []
    assert page.html.select_one("#waiting .tick")["data-minutes"] == "32"  # the script counts on from there
    desk = at(api, clock, 10, 1)
    page = press(desk.get(ROOM), room["Ana"], "Ha terminado").follow()
    assert "Ana Sala: ✔ atendido." in page.text
    assert rows(page, "finished") == [("Ana Sala", "llegó a las 08:45 · adelantado (15 min) · pasó a consulta a "
                                       "las 09:05 · esperó 20 min · 5 min pasada su hora", ["Deshacer"])]
    assert rows(page, "absent") == [("Carla Sala", "no ha venido", ["Llegó", "Pasa a consulta", "No vino"])]
    actions = [row[0] for row in api.db().execute(
        "SELECT action FROM events WHERE entity_id = ? AND source = 'desk:ana' ORDER BY id", (str(room["Ana"]),))]
    assert actions == ["appointment.booked", "appointment.arrived", "appointment.in_consultation",
                       "appointment.seen"]


def test_undo_steps_back_once_and_the_arrival_time_is_kept(api, clock, room):
    desk = at(api, clock, 8, 50)
    press(desk.get(ROOM), room["Ana"], "Llegó")
    desk = at(api, clock, 9, 10)
    press(desk.get(ROOM), room["Ana"], "Pasa a consulta")
    press(desk.get(ROOM), room["Ana"], "Ha terminado")
    page = press(desk.get(ROOM), room["Ana"], "Deshacer").follow()  # finished by mistake: in consultation again
    assert rows(page, "in_consultation")[0][1].startswith("llegó a las 08:50 · adelantado (10 min) · en consulta "
                                                          "desde las 09:10")
    page = press(page, room["Ana"], "Deshacer").follow()  # called in by mistake: waiting since 08:50 again
    assert rows(page, "waiting")[0][1] == ("llegó a las 08:50 · adelantado (10 min) · espera 20 min · 10 min "
                                           "pasada su hora")
    page = press(page, room["Ana"], "Deshacer").follow()
    assert rows(page, "absent")[0] == ("Ana Sala", "no ha venido", ["Llegó", "Pasa a consulta", "No vino"])
    row = api.db().execute("SELECT attendance, arrived_at, called_in_at FROM appointments WHERE id = ?",
                           (room["Ana"],)).fetchone()
    assert tuple(row) == (None, None, None)


def test_a_call_in_before_its_time_or_of_a_cancelled_visit_is_refused_in_words(api, clock, room):
    desk = at(api, clock, 6, 0)  # three hours before Ana's visit: the arrival window has not opened
    page = desk.get(ROOM)
    assert rows(page, "expected")[0] == ("Ana Sala", "", [])
    csrf = page.html.find("input", attrs={"name": "csrf"})["value"]
    early = desk.post(f"/desk/appointments/{room['Ana']}/attendance", {"csrf": csrf, "mark": "in_consultation",
                                                                        "back": ROOM}, expect_errors=True)
    assert early.status_int == 409 and "Aún es pronto: la llegada se marca desde un rato antes" in early.text
    cancel_appointment(api.app.clinic, room["Bea"], source="desk:ana")
    desk = at(api, clock, 9, 0)
    csrf = desk.get(ROOM).html.find("input", attrs={"name": "csrf"})["value"]
    gone = desk.post(f"/desk/appointments/{room['Bea']}/attendance", {"csrf": csrf, "mark": "in_consultation",
                                                                       "back": ROOM}, expect_errors=True)
    assert gone.status_int == 409 and "Esa cita ya estaba anulada." in gone.text
    assert "Bea Sala" not in desk.get(ROOM).text
    row = api.db().execute("SELECT count(*) FROM appointments WHERE called_in_at IS NOT NULL").fetchone()
    assert row[0] == 0
    for query, status in (("date=31/02/2026", 400), ("date=01/01/0001", 400), ("centerId=NADA", 404),
                          ("centerId=C1&doctorId=NADIE", 404)):
        wrong = desk.get(f"/desk/waiting?{query}", expect_errors=True)
        assert wrong.status_int == status and wrong.html.select_one("main h1").text, query


def test_the_poll_answers_a_new_version_after_a_mark(api, clock, room):
    desk = at(api, clock, 8, 50)
    page = desk.get(ROOM)
    before = desk.get("/desk/version").json["version"]
    assert page.html.body["data-version"] == str(before)
    press(page, room["Ana"], "Pasa a consulta")  # straight in: arrived and called in at once
    assert desk.get("/desk/version").json["version"] > before
    assert desk.get(ROOM).html.body["data-version"] == str(desk.get("/desk/version").json["version"])


def test_a_move_or_a_no_show_takes_the_call_in_away(api, clock, room):
    clinic = api.app.clinic
    clock.set(2026, 11, 23, 9, 0)
    mark_attendance(clinic, room["Ana"], "in_consultation", "desk:ana")
    mark_attendance(clinic, room["Ana"], "no_show", "desk:ana")
    assert api.db().execute("SELECT called_in_at FROM appointments WHERE id = ?", (room["Ana"],)).fetchone()[0] is None
    mark_attendance(clinic, room["Bea"], "in_consultation", "desk:ana")
    move_appointment(clinic, room["Bea"], day=MONDAY, time_text="10:30", source="desk:ana")  # a mistake: moved
    assert tuple(api.db().execute("SELECT attendance, arrived_at, called_in_at FROM appointments WHERE id = ?",
                                  (room["Bea"],)).fetchone()) == (None, None, None)


def attended(api, visit):
    return tuple(api.db().execute("SELECT attendance, arrived_at, called_in_at FROM appointments WHERE id = ?",
                                  (visit,)).fetchone())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["arrived", "in_consultation", "seen", "no_show", None]), max_size=8))
def test_a_call_in_lives_only_beside_an_arrival_and_each_step_forward_undoes_to_where_it_was(api, clock, room,
                                                                                             marks):
    clinic, visit = api.app.clinic, room["Carla"]
    if clock.moment.date() != MONDAY:
        clock.set(2026, 11, 23, 10, 5)  # Carla's 10:00 visit has begun: every mark is open, all morning
    for mark in marks:
        clock.moment += dt.timedelta(minutes=1)
        before = attended(api, visit)
        mark_attendance(clinic, visit, mark, "desk:ana")
        attendance, arrived_at, called_in_at = attended(api, visit)
        assert called_in_at is None or (attendance in ("arrived", "seen") and arrived_at <= called_in_at)
        assert arrived_at is None if attendance in (None, "no_show") else attendance == "seen" or arrived_at
        stepped = (mark == "in_consultation" and before[0] == "arrived" and before[2] is None) or (
            mark == "seen" and before[0] == "arrived" and before[2] is not None)
        if stepped:  # "pasa a consulta" from the waiting room, "ha terminado" from the consultation: undone
            mark_attendance(clinic, visit, None, "desk:ana")
            assert attended(api, visit) == before
            mark_attendance(clinic, visit, mark, "desk:ana")


NIGHT_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to
center,C1,Urgencias,,,,,,,,
speciality,URG,Urgencias,,,,,,,,
doctor,NOCHE,Pilar Noche,URG,C1,,sun,00:00-12:00,30,,
"""


@pytest.mark.parametrize("day, called_utc, waited, called_local", [
    (dt.date(2026, 10, 25), dt.datetime(2026, 10, 25, 1, 10, tzinfo=UTC), 90, "02:10"),  # 02:10 the second time
    (dt.date(2026, 3, 29), dt.datetime(2026, 3, 29, 1, 10, tzinfo=UTC), 30, "03:10")])  # an hour skipped
def test_waits_are_right_on_the_days_the_clocks_change(make_api, clock, day, called_utc, waited, called_local):
    api = make_api(csv=NIGHT_CSV)
    clinic = api.app.clinic
    clock.set(day.year, day.month, day.day - 1, 20, 0)
    (visit,) = booked(api, day, [("Noa", "01:30", "NOCHE")]).values()
    clock.set(day.year, day.month, day.day, 1, 40)  # before the change: 01:40 is once
    mark_attendance(clinic, visit, "arrived", "desk:ana")
    clock.moment = called_utc
    mark_attendance(clinic, visit, "in_consultation", "desk:ana")
    clock.moment = called_utc + dt.timedelta(minutes=50)
    (seated,) = waiting_room(clinic, day, "C1", reader="desk:ana")["in_consultation"]
    assert (seated["arrived_local"], seated["called_local"], seated["waited"], seated["inside"]) == (
        "01:40", called_local, waited, 50)
    assert seated["past_time"] == waited and seated["punctuality"] == "late" and seated["lateness"] == 10
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    assert log_in(desk).status_int == 303
    page = desk.get(f"/desk/waiting?date={day:%d/%m/%Y}&centerId=C1")
    assert rows(page, "in_consultation")[0][1] == (
        f"llegó a las 01:40 · con retraso (10 min) · en consulta desde las {called_local} · 50 min · "
        f"esperó {waited} min · {waited} min pasada su hora")
