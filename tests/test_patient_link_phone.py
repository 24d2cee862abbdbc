"""The clinic's phone and the link's button, as a patient meets them on a phone (docs/design.md, "What a message
says", "The patient's link"): the phone a tel: link to its E.164, said once on every page; the mail's whole blue
button the link; no word of the mail broken mid-word (in Chromium: test_patient_link_browser.py)."""

import datetime as dt
import re

import webtest

from _agenda.domain.closures import add_closure
from _agenda.domain.links import new_link
from _agenda.patient.messages import written
from _agenda.storage.connections import transaction
from conftest import MADRID, valid_dni
from test_mail import PLACES_CSV, PUBLIC

TEL = '<a href="tel:+34912345678">912 345 678</a>'


def mail_view(kind="confirmation", phone="912 345 678"):
    """A message's view as the sender makes it, of a visit at a center with a phone."""
    starts = dt.datetime(2026, 12, 1, 9, 0, tzinfo=MADRID)
    return {"kind": kind, "language": None, "clinic": "Clínica Sol", "first_name": "Ana", "series": None,
            "visit": {"id": 7, "status": "booked", "center_name": "Centro", "center_address": "Calle Mayor 1",
                      "center_phone": phone, "starts": starts, "ends": starts + dt.timedelta(minutes=30)},
            "shows": "place", "link": f"{PUBLIC}/cita/{'a' * 32}", "stop_link": f"{PUBLIC}/cita/baja/{'b' * 32}",
            "first": True, "sequence": 0, "now": starts, "uids": {7: "appointment-7.c@agenda"}}


def test_the_mails_whole_button_is_the_link_and_its_phone_a_tel_link_said_once():
    html = written(mail_view())["html"]
    button = re.search(r'<td([^>]*)><a href="' + re.escape(f"{PUBLIC}/cita/{'a' * 32}") + r'" style="([^"]*)">', html)
    assert "padding" not in button[1]  # the cell adds nothing the link does not cover
    assert "display:inline-block" in button[2] and "border-width:12px 18px" in button[2]  # the link is the button
    assert html.count("912 345 678") == 1 and re.search(r'<a href="tel:\+34912345678" style="[^"]*nowrap[^"]*">'
                                                         r'912 345 678</a>', html)
    assert "break-all" not in html  # a word of the footer broke mid-word; only the addresses may break anywhere
    assert re.findall(r"overflow-wrap:anywhere[^>]*>([^<]*)<", html) == [f"{PUBLIC}/cita/{'a' * 32}",
                                                                         f"{PUBLIC}/cita/baja/{'b' * 32}"]
    notice = written(mail_view("notice"))["html"]
    assert notice.count("912 345 678") == 1 and 'href="tel:+34912345678"' in notice
    assert "tel:" not in written(mail_view(phone="ext. 25"))["html"]  # no number to call: plain text


def link(api, appointment_id):
    with transaction(api.db()) as conn:
        return new_link(conn, appointment_id, "message", api.app.clinic.clock())


def test_every_page_of_the_link_says_the_clinics_phone_once_as_a_tel_link(make_api, clock):
    api = make_api(PLACES_CSV)
    booked = api.book(api.new_patient(email="ana@example.es"), date="26/11/2026", time="09:00")
    browser, token = webtest.TestApp(api.app), link(api, booked)
    page = browser.get(f"/cita/{token}")
    said = {"the visit": page, "a wrong form": browser.post(f"/cita/{token}/anular", {"csrf": "0" * 64},
                                                            expect_errors=True)}
    full = api.book(api.new_patient(nif=valid_dni(1), name="Eva", email="eva@example.es"), date="30/11/2026",
                    time="10:30")
    clock.moment = dt.datetime(2026, 11, 29, 11, 0, tzinfo=MADRID)  # inside its notice: nothing to move to
    said["too late to move"] = browser.get(f"/cita/{link(api, full)}")
    clock.moment = dt.datetime(2026, 11, 23, 8, 0, tzinfo=MADRID)
    add_closure(api.app.clinic, doctor_id="MARTIN", first=dt.date(2026, 11, 26), reason="Baja", source="cli")
    said["to call"] = browser.get(f"/cita/{token}")
    assert "La clínica le llamará" in said["to call"].text and "Faltan menos de" in said["too late to move"].text
    for what, answer in said.items():
        assert answer.text.count("912 345 678") == 1 and answer.text.count(TEL) == 1, what
