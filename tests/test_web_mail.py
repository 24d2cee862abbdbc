"""The page's first message, through a real SMTP server (docs/design.md, "Patients book themselves"): it asks the
patient to confirm by its link, the token made when the message is written (only its hash kept), in the same words
whichever of the three cases the booking was, naming no one and carrying nothing clinical; confirmed, the usual
confirmation follows; never confirmed, the sender's pass releases it and nothing more is sent."""

import datetime as dt
import hashlib
import re

import pytest

from _agenda.domain.web_booking import confirm_booking, request_booking
from _agenda.patient.sender import Mailer, Sender, smtp_server

from conftest import valid_dni
from test_mail import FROM, mail_server  # noqa: F401 (a fixture)
from test_web_booking import ADDRESS, ask, WEB

PUBLIC = WEB["public_url"]
TOKEN = re.compile(re.escape(PUBLIC) + r"/reservar/confirmar/([A-Za-z0-9_-]{32,64})(?![A-Za-z0-9_-])")


@pytest.fixture
def web(make_api):
    return make_api(**WEB)


@pytest.fixture
def sender(web, mail_server):
    return Sender(web.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM, PUBLIC)


def text_of(message):
    return message.get_body(("plain",)).get_content()


def test_the_first_message_asks_to_confirm_by_a_link_whose_hash_alone_is_kept_and_names_no_one(
        web, sender, mail_server):
    hostile = "Rosa\r\nBcc: x@evil.example <script>"
    request_booking(web.app.clinic, ask(name=hostile, surname="Vidal\u202e"), ADDRESS)
    assert sender.pass_once() == {"sent": 1}
    [(recipients, message)] = mail_server.inbox.messages()
    assert recipients == ["rosa@example.es"] and message["To"] == "rosa@example.es"
    assert message["Subject"] == "Confirme su cita: martes, 24 de noviembre de 2026, 09:00"
    assert message["List-Unsubscribe"] is None and not list(message.iter_attachments())  # no stop, no calendar
    raw = message.as_string()
    for private in ("Rosa", "Vidal", "evil", "script", valid_dni(501), "611222333"):
        assert private not in raw
    text = text_of(message)
    assert "Hola:" in text and "08:15" in text and "no haga nada" in text  # before 08:15, Madrid
    token = TOKEN.search(text)[1]
    kept = web.db().execute("SELECT token_hash FROM web_requests").fetchone()[0]
    assert kept == hashlib.sha256(token.encode()).hexdigest() and token not in str(list(web.db().execute(
        "SELECT * FROM web_requests")))
    assert confirm_booking(web.app.clinic, token) == "confirmed"
    assert sender.pass_once() == {"sent": 1}
    confirmation = mail_server.inbox.messages()[1][1]
    assert confirmation["Subject"] == "Cita reservada: martes, 24 de noviembre de 2026, 09:00"
    assert f"{PUBLIC}/cita/" in text_of(confirmation)  # the patient's own link


def test_the_first_message_reads_the_same_whether_the_nif_is_new_known_with_that_e_mail_or_known_with_another(
        web, sender, mail_server):
    web.new_patient(nif=valid_dni(502), name="Eva", email="eva@example.es", language="en")
    web.new_patient(nif=valid_dni(503), name="Pía", email="pia@example.es")
    cases = [("09:00", valid_dni(501), "rosa@example.es"), ("09:30", valid_dni(502), "eva@example.es"),
             ("10:00", valid_dni(503), "otra@example.es")]
    for time_text, nif, email in cases:
        request_booking(web.app.clinic, ask(time=time_text, nif=nif, email=email), ADDRESS)
    assert [row[0] for row in web.db().execute("SELECT case_of FROM web_requests ORDER BY id")] == [
        "new", "same", "verify"]
    assert sender.pass_once() == {"sent": 3}
    bodies = set()
    for (_, message), (time_text, _, _) in zip(mail_server.inbox.messages(), cases):
        text = TOKEN.sub("LINK", text_of(message)).replace(time_text, "TIME")
        bodies.add((message["Subject"].replace(time_text, "TIME"), text))
    assert len(bodies) == 1, bodies  # the known patient's English and name change nothing: the words typed decide


def test_never_confirmed_the_sender_s_pass_releases_it_and_sends_nothing_after(web, sender, mail_server, clock):
    request_booking(web.app.clinic, ask(), ADDRESS)
    clock.moment += dt.timedelta(minutes=15)
    assert sender.pass_once() == {}
    assert mail_server.inbox.messages() == []
    assert web.db().execute("SELECT count(*) FROM outbox").fetchone()[0] == 0
    assert web.db().execute("SELECT released_at FROM web_requests").fetchone()[0] is not None
