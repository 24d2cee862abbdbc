"""The booking page read again as an attacker would (docs/design.md, "The booking page", "Patients book
themselves"): a body that is no text refused in words, not a crash; another site's page cannot post the page's
forms from its visitors' addresses nor confirm a visit; one mailbox is one e-mail to the bounds, whatever "+tag"
its address carries."""

import re

import pytest
import webtest

from _agenda.domain.verifying import match_request
from _agenda.domain.web_booking import confirm_booking, request_booking
from _agenda.patient import sender as sending
from _agenda.domain.web_requests import BOUNDS, mailbox

from test_booking_page import CATALOG, CHOSEN, PATIENT, WEB, changes, details_form, filled, times_form, words
from test_web_bounds import asker, busy, LOOSE, WEB as BOUNDS_WEB
from test_web_booking import last_request, token_for
from test_desk_verify import ask, known_patient, WEB as VERIFY_WEB
from test_web_mail import PUBLIC, sender, TOKEN  # noqa: F401 (a fixture)
from test_mail import mail_server  # noqa: F401 (a fixture)

CROSS = {"Sec-Fetch-Site": "cross-site"}


@pytest.fixture
def web(make_api):
    return make_api(csv=CATALOG, **WEB)


def test_a_form_whose_body_is_not_utf8_is_refused_in_words_and_changes_nothing(web):
    browser, before = webtest.TestApp(web.app), changes(web)
    fields = dict(filled(details_form(browser)).submit_fields())
    for path, name in (("/reservar/datos", "hueco"), ("/reservar/enviar", "nombre")):
        body = "&".join(f"{key}={value}" for key, value in fields.items() if key != name) + f"&{name}=%ff%fe"
        page = browser.post(path, body.encode(), content_type="application/x-www-form-urlencoded", status=400)
        assert "llegó cambiado" in words(page)
    assert changes(web) == before


def test_another_sites_page_cannot_post_the_forms_nor_confirm_and_the_pages_own_posts_still_go(web):
    browser, before = webtest.TestApp(web.app), changes(web)
    times = times_form(browser.get(CHOSEN))
    times["hueco"] = times.fields["hueco"][0].options[0][0]
    assert "llegó cambiado" in words(times.submit(headers=CROSS, status=400))
    form = filled(details_form(browser))
    assert "llegó cambiado" in words(form.submit(headers=CROSS, status=400))
    assert changes(web) == before
    assert form.submit(headers={"Sec-Fetch-Site": "same-origin"}).status_int == 200  # framed or not: its own
    token = token_for(web, last_request(web)["appointment_id"])
    shown = browser.post(f"/reservar/confirmar/{token}", headers=CROSS, status=403)
    assert shown.forms[0].action.endswith(f"/reservar/confirmar/{token}")  # the button, for the patient to press
    assert web.db().execute("SELECT pending FROM appointments").fetchone()[0] == "email"
    browser.post(f"/reservar/confirmar/{token}", headers={"Sec-Fetch-Site": "same-origin"})
    assert web.db().execute("SELECT pending FROM appointments").fetchone()[0] is None


def test_one_mailbox_is_one_e_mail_to_the_bound_whatever_its_plus_tag(make_api):
    assert mailbox(" Rosa+Cita1@Example.es ") == mailbox("rosa@example.es") == "rosa@example.es"
    assert mailbox("rosa@example.es") != mailbox("rosa2@example.es")
    web, next_ask = make_api(**BOUNDS_WEB, **LOOSE), asker()
    bound = next(bound for bound in BOUNDS if bound.column == "email_key")
    for n in range(bound.pending):
        request_booking(web.app.clinic, next_ask(email=f"rosa+{n}@example.es"), f"198.51.100.{n}")
    busy(web.app.clinic, next_ask(email="rosa+other@example.es"), "203.0.113.9")


@pytest.fixture
def verify_web(make_api):
    return make_api(**VERIFY_WEB)


def test_a_confirmation_being_written_as_reception_matches_the_visit_never_takes_its_link_to_the_typed_address(
        verify_web, mail_server, monkeypatch):
    web = verify_web
    post = sending.Sender(web.app.clinic, sending.Mailer(sending.smtp_server(
        mail_server.url, ca_file=str(mail_server.ca_file))), "Clínica <citas@example.es>", PUBLIC)
    known_patient(web)
    request_booking(web.app.clinic, ask(), "203.0.113.7")
    assert post.pass_once() == {"sent": 1}
    token = re.search(r"/reservar/confirmar/([A-Za-z0-9_-]+)", mail_server.inbox.messages()[-1][1].get_body(
        ("plain",)).get_content())[1]
    assert confirm_booking(web.app.clinic, token) == "confirmed"
    appointment = web.db().execute("SELECT id FROM appointments").fetchone()[0]
    read, matched = sending.recipient, []

    def then_matched(clinic, patient_id, reader, kind="message"):  # reception's match lands just after the read
        found = read(clinic, patient_id, reader, kind)
        if not matched:
            matched.append(match_request(clinic, appointment, "desk:ana"))
        return found
    monkeypatch.setattr(sending, "recipient", then_matched)
    post.pass_once()
    after = mail_server.inbox.messages()[1:]
    assert [to for to, _ in after if to != ["rosa@example.es"]] == []  # the typed address got no link of hers
    assert after and all("/cita/" in message.get_body(("plain",)).get_content() for _, message in after)


def test_behind_a_proxy_it_was_not_told_to_trust_the_page_says_so_in_the_log_naming_no_one(web, caplog):
    browser = webtest.TestApp(web.app)
    forwarded = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "198.51.100.23"}
    filled(details_form(browser)).submit(extra_environ=forwarded)
    said = [record.getMessage() for record in caplog.records if "--trusted-proxy" in record.getMessage()]
    assert said and not any("198.51.100.23" in line or PATIENT["correo"] in line for line in said)
    caplog.clear()
    filled(details_form(browser, pick=1)).submit(extra_environ={"REMOTE_ADDR": "198.51.100.23"})
    assert not [record for record in caplog.records if "--trusted-proxy" in record.getMessage()]
