"""The patient's link's moves (docs/design.md, "The patient's link", "Moving"): the page lists the days with free
times on to the caller's horizon, however few days a week the doctor works; the patient's own move keeps a
confirmed visit confirmed, and the message it writes asks nothing more of them; anyone else's move unconfirms."""

import datetime as dt
import re

import webtest

from _agenda.domain.changes import move_appointment
from _agenda.domain.closures import add_closure
from _agenda.domain.links import new_link
from _agenda.patient.messages import written
from _agenda.storage.connections import transaction
from conftest import MADRID, valid_dni
from test_mail import mail_server, PUBLIC, sender  # noqa: F401 (the fixtures)


def link(api, appointment_id):
    with transaction(api.db()) as conn:
        return new_link(conn, appointment_id, "message", api.app.clinic.clock())


def csrf(page):
    return re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)[1]


def days_listed(page):
    return [dt.date.fromisoformat(day) for day in sorted({value.split()[0] for value in re.findall(
        r'name="slot" value="([^"]+)"', page.text)})]


def test_a_doctor_of_two_days_a_week_free_only_weeks_ahead_is_listed_on_to_the_horizon(api):
    """NUNEZ works Mondays and Wednesdays, two times a day; away for three weeks: the page lists his next five days
    with free times past them, and "Ver más días" the next five, on to the caller's horizon (90 days), no further."""
    ana = api.new_patient(email="ana@example.es")
    booked = api.book(ana, date="25/11/2026", time="16:00", doctor="NUNEZ")
    api.book(api.new_patient(nif=valid_dni(1), name="Eva"), date="25/11/2026", time="16:30", doctor="NUNEZ")
    add_closure(api.app.clinic, doctor_id="NUNEZ", first=dt.date(2026, 11, 26), last=dt.date(2026, 12, 15),
                reason="Vacaciones", source="cli")
    browser, token = webtest.TestApp(api.app), link(api, booked)
    page = browser.get(f"/cita/{token}")
    listed = days_listed(page)
    assert listed == [dt.date(2026, 12, 16), dt.date(2026, 12, 21), dt.date(2026, 12, 23), dt.date(2026, 12, 28),
                      dt.date(2026, 12, 30)]
    horizon = api.app.clinic.window().last_day
    while "Ver más días" in page.text:
        page = page.click("Ver más días")
        listed += days_listed(page)
    every = [dt.date(2026, 12, 16) + dt.timedelta(days=n) for n in range((horizon - dt.date(2026, 12, 16)).days + 1)]
    assert listed == [day for day in every if day.weekday() in (0, 2)]  # each of his days, once, to the horizon
    assert listed[-1] > horizon - dt.timedelta(days=7)
    last = f"{listed[-1]} 16:30"
    assert browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(page), "slot": last}).status_int == 303
    assert tuple(api.db().execute("SELECT date, time FROM appointments WHERE id = ?", (booked,)).fetchone()) == (
        str(listed[-1]), "16:30")


def test_the_patients_own_move_keeps_the_visit_confirmed_and_anyone_elses_unconfirms_it(api):
    booked = api.book(api.new_patient(email="ana@example.es"), date="26/11/2026", time="09:00")
    browser, token = webtest.TestApp(api.app), link(api, booked)
    done = browser.get(f"/cita/{token}").forms[0].submit().follow()  # the patient confirms
    moved = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(done), "slot": "2026-11-26 10:30"}).follow()
    assert "su cita ha cambiado" in moved.text and "Confirmo que iré" not in moved.text and "confirmada" in moved.text
    status = api.db().execute("SELECT status, confirmed_at FROM appointments WHERE id = ?", (booked,)).fetchone()
    assert status["status"] == "confirmed" and status["confirmed_at"] is not None
    api.put(f"/appointments/{booked}", {"newDate": "26/11/2026", "newTime": "10:00"})  # the caller's move
    assert api.db().execute("SELECT status FROM appointments WHERE id = ?", (booked,)).fetchone()[0] == "booked"
    api.post("/appointments/confirm", {"appointmentId": booked, "confirmed": True})
    move_appointment(api.app.clinic, booked, day=dt.date(2026, 11, 27), time_text="09:00", source="desk:ana")
    assert api.db().execute("SELECT status, confirmed_at FROM appointments WHERE id = ?", (booked,)).fetchone()[:] \
        == ("booked", None)  # the desk's move too


def test_the_message_after_the_patients_own_move_does_not_ask_them_to_confirm_again(api, sender, mail_server):
    booked = api.book(api.new_patient(email="ana@example.es"), date="26/11/2026", time="09:00")
    assert sender.pass_once() == {"sent": 1}
    browser, token = webtest.TestApp(api.app), link(api, booked)
    done = browser.get(f"/cita/{token}").forms[0].submit().follow()  # confirmed by the link: no message
    browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(done), "slot": "2026-11-26 10:30"})
    assert sender.pass_once() == {"sent": 1}
    messages = [message for _, message in mail_server.inbox.messages()]
    update = messages[-1]
    text, html = (update.get_body((kind,)).get_content() for kind in ("plain", "html"))
    for words in (text, html):
        assert "ha cambiado y sigue confirmada" in words and "confirmar" not in words.lower(), words
        assert "Para ver, cambiar o anular la cita:" in words
    assert "Ver, cambiar o anular" in html
    first = messages[0].get_body(("plain",)).get_content()
    assert "Para confirmar, cambiar o anular la cita:" in first  # a booked visit's message still asks


def test_an_update_of_a_visit_the_patient_has_not_confirmed_still_asks_them_to(api):
    starts = dt.datetime(2026, 12, 1, 9, 0, tzinfo=MADRID)
    view = {"kind": "update", "language": None, "clinic": "Clínica Sol", "first_name": "Ana", "series": None,
            "visit": {"id": 7, "status": "booked", "center_name": "Centro", "starts": starts,
                      "ends": starts + dt.timedelta(minutes=30)},
            "shows": "place", "link": f"{PUBLIC}/cita/{'a' * 32}", "stop_link": f"{PUBLIC}/cita/baja/{'b' * 32}",
            "first": False, "sequence": 1, "now": starts, "uids": {7: "appointment-7.c@agenda"}}
    assert "Para confirmar, cambiar o anular la cita:" in written(view)["text"]
    view["visit"]["status"] = "confirmed"
    assert "Para ver, cambiar o anular la cita:" in written(view)["text"]


def test_a_move_to_a_day_gone_by_is_refused_as_a_time_the_page_never_offered(api):
    booked = api.book(api.new_patient(email="ana@example.es"), date="26/11/2026", time="09:00")
    browser, token = webtest.TestApp(api.app), link(api, booked)
    page = browser.get(f"/cita/{token}")
    refused = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(page), "slot": "2026-11-20 09:00"},
                           expect_errors=True)
    assert refused.status_int == 409 and "Esa hora acaba de ocuparse" in refused.text
    assert tuple(api.db().execute("SELECT date, time FROM appointments WHERE id = ?", (booked,)).fetchone()) == (
        "2026-11-26", "09:00")
