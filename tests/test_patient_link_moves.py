"""The patient's link's moves (docs/design.md, "The patient's link", "Moving"): the page lists the days with free
times on to the caller's horizon, however few days a week the doctor works; the patient's own move keeps a
confirmed visit confirmed, and the message it writes asks nothing more of them; anyone else's move unconfirms."""

import datetime as dt
import re

import pytest
import webtest

from _agenda.domain.closures import add_closure
from _agenda.domain.links import new_link
from _agenda.patient import pages
from _agenda.storage.connections import transaction
from conftest import valid_dni


@pytest.fixture(autouse=True)
def fresh_bounds(monkeypatch):
    monkeypatch.setattr(pages, "BOUNDS", pages.Bounds())


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
    with free times past them, and "Ver más días" the next five, on to the caller's horizon (90 days) and no further."""
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
