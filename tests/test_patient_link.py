"""The patient's own link (docs/design.md, "The patient's link"): one appointment, the first name only; a GET changes
nothing; each action a POST with the page's CSRF token, through the one door as the patient, within the clinic's
notice; a wrong token, another appointment's, an ended visit and a blocked patient open nothing."""

import datetime as dt
import re

import pytest
import webtest

from _agenda.domain.changes import cancel_appointment, move_appointment
from _agenda.domain.links import new_link
from _agenda.values.refusals import ClinicError
from _agenda.domain.registry import register_patient
from _agenda.domain.rights import rectify, request_erasure
from _agenda.storage.connections import transaction
from conftest import MADRID, valid_dni
from test_desk import PASSWORD, log_in


def link(api, appointment_id, made_for="message"):
    with transaction(api.db()) as conn:
        return new_link(conn, appointment_id, made_for, api.app.clinic.clock())


def patient_of(api, **extra):
    return api.new_patient(email="ana@example.es", **extra)


def csrf(page):
    return re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)[1]


def row(api, appointment_id):
    return api.db().execute("SELECT date, time, status FROM appointments WHERE id = ?", (appointment_id,)).fetchone()


def test_opening_the_link_shows_one_appointment_and_changes_nothing(api):
    browser = webtest.TestApp(api.app)
    ana = patient_of(api)
    booked = api.book(ana, reason="Dolor de rodilla")
    token = link(api, booked)
    before = api.db().execute("SELECT count(*) FROM events").fetchone()[0]
    for _ in range(3):  # a scanner, then the patient
        page = browser.get(f"/cita/{token}")
    assert page.status_int == 200 and "Hola, Ana:" in page.text and "24 de noviembre de 2026" in page.text
    for private in ("García", "12345678Z", "612345678", "Dolor", "Lucía Martín"):
        assert private not in page.text
    assert "default-src 'self'" in page.headers["Content-Security-Policy"] and page.headers["Cache-Control"] == "no-store"
    assert "<script" not in page.text
    assert api.db().execute("SELECT count(*) FROM events").fetchone()[0] == before
    assert row(api, booked)["status"] == "booked"
    reads = api.app.clinic.access.of_patient(ana)
    assert [(read["reader"], read["kind"], read["reads"]) for read in reads if read["kind"] == "link"] == \
        [("patient", "link", 3)]


def test_the_patient_confirms_moves_and_cancels_through_the_one_door(api):
    browser = webtest.TestApp(api.app)
    booked = api.book(patient_of(api), date="26/11/2026", time="09:00")
    token = link(api, booked)
    page = browser.get(f"/cita/{token}")
    done = page.forms[0].submit().follow()  # confirm
    assert "su cita queda confirmada" in done.text and row(api, booked)["status"] == "confirmed"
    moved = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(done), "slot": "2026-11-26 10:30"}).follow()
    assert "su cita ha cambiado" in moved.text
    assert tuple(row(api, booked)) == ("2026-11-26", "10:30", "confirmed")  # they chose the time: still confirmed
    event = api.db().execute("SELECT source FROM events WHERE action = 'appointment.moved'").fetchone()
    assert event["source"] == "patient"
    asked = browser.post(f"/cita/{token}/anular", {"csrf": csrf(moved)})  # first, are you sure?
    assert "¿Seguro que quiere anular su cita del jueves, 26 de noviembre de 2026 a las 10:30?" in asked.text
    assert row(api, booked)["status"] == "confirmed"
    cancelled = asked.forms[0].submit().follow()
    assert "Su cita ha sido anulada" in cancelled.text and row(api, booked)["status"] == "cancelled"
    again = browser.get(f"/cita/{token}")
    assert "Esta cita está anulada." in again.text and "form" not in again.text  # and nothing more
    assert browser.post(f"/cita/{token}/anular", {"csrf": csrf(moved), "seguro": "1"},
                        expect_errors=True).status_int == 409  # a reload of the cancel: it says so
    kinds = [kind for kind, in api.db().execute("SELECT kind FROM outbox ORDER BY id")]
    assert kinds == ["confirmation", "update", "notice"]


def test_a_late_cancellation_is_refused_and_the_page_says_to_call(api, clock):
    browser = webtest.TestApp(api.app)
    booked = api.book(patient_of(api), date="24/11/2026", time="09:00")  # 25 hours away
    token = link(api, booked)
    clock.moment += dt.timedelta(hours=2)  # now 23 hours: inside the 24 h notice
    page = browser.get(f"/cita/{token}")
    assert "llame a la clínica" in page.text and "/anular" not in page.text and "/cambiar" not in page.text
    refused = browser.post(f"/cita/{token}/anular", {"csrf": csrf(page)}, expect_errors=True)
    assert refused.status_int == 409 and "llame a la clínica" in refused.text
    refused = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(page), "slot": "2026-11-24 10:00"},
                           expect_errors=True)
    assert refused.status_int == 409 and row(api, booked)["status"] == "booked"


def test_a_wrong_token_another_appointments_an_ended_visit_and_a_blocked_patient_open_nothing(api, clock):
    browser = webtest.TestApp(api.app)
    ana = patient_of(api)
    eva = api.new_patient(nif=valid_dni(1), name="Eva", email="eva@example.es")
    mine, hers = api.book(ana), api.book(eva, time="09:30")
    mine_token, hers_token = link(api, mine), link(api, hers)
    assert browser.get("/cita/" + "x" * 32, expect_errors=True).status_int == 404
    page = browser.get(f"/cita/{mine_token}")
    taken = browser.post(f"/cita/{hers_token}/anular", {"csrf": csrf(page)}, expect_errors=True)  # my CSRF, her link
    assert taken.status_int == 403 and row(api, hers)["status"] == "booked"
    request_erasure(api.app.clinic, eva, "cli", "cli:test")
    assert browser.get(f"/cita/{hers_token}", expect_errors=True).status_int == 404
    clock.moment = dt.datetime(2026, 11, 24, 9, 31, tzinfo=MADRID)  # her visit has ended
    assert browser.get(f"/cita/{mine_token}", expect_errors=True).status_int == 404
    assert "Este enlace no es válido" in browser.get(f"/cita/{mine_token}", expect_errors=True).text


def test_a_post_without_the_pages_token_changes_nothing_and_a_stranger_is_bounded(api):
    browser = webtest.TestApp(api.app)
    booked = api.book(patient_of(api))
    token = link(api, booked)
    assert browser.post(f"/cita/{token}/anular", {"csrf": "0" * 64}, expect_errors=True).status_int == 403
    assert row(api, booked)["status"] == "booked"
    answers = [browser.get("/cita/" + "y" * 32, expect_errors=True).status_int for _ in range(25)]
    assert answers[:20] == [404] * 20 and set(answers[20:]) == {429}  # wrong tokens from one address


def test_the_stop_link_shows_a_button_and_its_post_stops_every_message(api):
    browser = webtest.TestApp(api.app)
    ana = patient_of(api)
    booked = api.book(ana)
    stop = link(api, booked, "stop")
    page = browser.get(f"/cita/baja/{stop}")
    assert page.status_int == 200 and "No quiero recibir más correos" in page.text
    assert api.db().execute("SELECT messages FROM patients WHERE id = ?", (ana,)).fetchone()[0] == 1  # GET: nothing
    done = browser.post(f"/cita/baja/{stop}", "List-Unsubscribe=One-Click",
                        content_type="application/x-www-form-urlencoded")  # a mail program's one-click (RFC 8058)
    assert "ya no recibirá por correo confirmaciones ni recordatorios" in done.text
    chosen = api.db().execute("SELECT messages, messages_by FROM patients WHERE id = ?", (ana,)).fetchone()
    assert tuple(chosen) == (0, "link")
    assert browser.get(f"/cita/{stop}", expect_errors=True).status_int == 404  # a stop link opens no appointment


def test_reception_prints_a_card_whose_qr_opens_the_patients_page_and_sees_what_was_written(make_api):
    api = make_api(public_url="https://citas.clinicasol.es")
    booked = api.book(patient_of(api))
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    page = desk.get(f"/desk/appointments/{booked}")
    assert "Mensajes al paciente" in page.text and "confirmación" in page.text and "por enviar" in page.text
    card = page.forms[[key for key, form in page.forms.items() if form.action.endswith("/card")][0]].submit()
    assert card.status_int == 200 and 'src="data:image/svg+xml' in card.text
    address = re.search(r"https://citas\.clinicasol\.es(/cita/[A-Za-z0-9_-]{32,64})", card.text)[1]
    assert "Hola, Ana:" in webtest.TestApp(api.app).get(address).text
    assert "--public-url" not in card.text
    made = api.db().execute("SELECT made_for FROM patient_links").fetchall()
    assert [row[0] for row in made] == ["card"]


def test_a_visit_the_patient_came_to_is_neither_moved_nor_cancelled_by_the_link(api, clock):
    browser = webtest.TestApp(api.app)
    booked = api.book(patient_of(api), date="24/11/2026", time="09:00")
    token = link(api, booked)
    page = browser.get(f"/cita/{token}")
    with transaction(api.db()) as conn:  # the patient came early: reception marked them arrived
        conn.execute("UPDATE appointments SET attendance = 'arrived' WHERE id = ?", (booked,))
    refused = browser.post(f"/cita/{token}/anular", {"csrf": csrf(page), "seguro": "1"}, expect_errors=True)
    assert refused.status_int == 409 and row(api, booked)["status"] == "booked"
    refused = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(page), "slot": "2026-11-24 10:00"},
                           expect_errors=True)
    assert refused.status_int == 409 and tuple(row(api, booked))[:2] == ("2026-11-24", "09:00")


def test_hostile_tokens_and_forms_are_refused_in_words_never_a_crash(api):
    browser = webtest.TestApp(api.app)
    booked = api.book(patient_of(api))
    token = link(api, booked)
    page = browser.get(f"/cita/{token}")
    for path in ("/cita/" + "a" * 100, "/cita/%00", "/cita/..%2F..", "/cita/baja/x", "/cita/" + token + "/nada"):
        answer = browser.get(path, expect_errors=True)
        assert answer.status_int in (404, 405) and "Traceback" not in answer.text, path
    for slot in ("", "ayer", "2026-02-30 09:00", "2026-11-24", "2026-11-24 25:00", "x" * 5000):
        answer = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(page), "slot": slot}, expect_errors=True)
        assert answer.status_int == 409 and "Esa hora acaba de ocuparse" in answer.text, slot
    assert row(api, booked)["status"] == "booked"


def test_a_move_goes_only_to_a_time_the_page_offers(api):
    browser = webtest.TestApp(api.app)
    booked = api.book(patient_of(api), date="26/11/2026", time="09:00")
    token = link(api, booked)
    page = browser.get(f"/cita/{token}")
    assert 'value="2026-11-26 10:30"' in page.text and "2027" not in page.text
    for slot in ("2027-03-01 09:00", "2026-11-28 10:00"):  # past the caller's horizon; another center's Saturday
        refused = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(page), "slot": slot}, expect_errors=True)
        assert refused.status_int == 409 and tuple(row(api, booked))[:2] == ("2026-11-26", "09:00"), slot


def test_a_strangers_wrong_tokens_never_lock_out_a_patients_link_from_the_same_address(api):
    browser = webtest.TestApp(api.app, extra_environ={"REMOTE_ADDR": "203.0.113.7"})
    token = link(api, api.book(patient_of(api)))
    answers = [browser.get("/cita/" + "w" * 32, expect_errors=True).status_int for _ in range(25)]
    assert answers[-1] == 429
    assert browser.get(f"/cita/{token}").status_int == 200  # the patient behind the same address


def test_the_links_stop_at_a_guardians_erasure_and_when_the_address_changes(api):
    browser = webtest.TestApp(api.app)
    guardian = patient_of(api)  # ana@example.es, NIF 12345678Z
    child = register_patient(api.app.clinic, {"name": "Pablo", "surname": "García", "birthDate": "03/04/2019",
                                              "guardianNif": "12345678Z"}, source="desk:ana")
    eva = api.new_patient(nif=valid_dni(1), name="Eva", email="eva@example.es")
    childs, evas = api.book(child), api.book(eva, time="09:30")
    child_token, card, eva_token = link(api, childs), link(api, childs, "card"), link(api, evas)
    assert "Paciente" in browser.get(f"/cita/{child_token}").text and "Hola:" in browser.get(
        f"/cita/{child_token}").text  # her guardian reads it
    request_erasure(api.app.clinic, guardian, "cli", "cli:test")
    assert browser.get(f"/cita/{child_token}", expect_errors=True).status_int == 404  # it went to her address
    assert browser.get(f"/cita/{card}").status_int == 200  # a card handed at the counter still opens it
    rectify(api.app.clinic, eva, {"email": "eva.nueva@example.es"}, "desk:ana")
    assert browser.get(f"/cita/{eva_token}", expect_errors=True).status_int == 404


def test_a_stop_stops_every_message_to_that_address(api):
    browser = webtest.TestApp(api.app)
    guardian = patient_of(api)
    child = register_patient(api.app.clinic, {"name": "Pablo", "surname": "García", "birthDate": "03/04/2019",
                                              "guardianNif": "12345678Z"}, source="desk:ana")
    stop = link(api, api.book(child), "stop")
    browser.post(f"/cita/baja/{stop}", "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded")
    chosen = api.db().execute("SELECT id, messages FROM patients WHERE id IN (?, ?) ORDER BY id", (guardian, child))
    assert [tuple(row) for row in chosen] == [(int(guardian), 0), (int(child), 0)]


def test_the_door_itself_refuses_the_patients_late_cancel_or_move_on_the_row_it_changes(api):
    """The notice is the door's rule for the channel `patient`, read inside the change's transaction: a visit the
    desk moved near in the meantime is refused, whatever the page saw."""
    booked = api.book(patient_of(api), date="24/11/2026", time="09:00")  # 25 hours away: outside the notice
    move_appointment(api.app.clinic, booked, day=dt.date(2026, 11, 23), time_text="10:30", source="desk:ana")
    with pytest.raises(ClinicError) as refused:
        cancel_appointment(api.app.clinic, booked, reason="x", source="patient")
    assert refused.value.code == "LINK_TOO_LATE"
    with pytest.raises(ClinicError) as refused:
        move_appointment(api.app.clinic, booked, day=dt.date(2026, 11, 26), time_text="09:00", source="patient")
    assert refused.value.code == "LINK_TOO_LATE" and row(api, booked)["status"] == "booked"
    cancel_appointment(api.app.clinic, booked, reason="llamó", source="api")  # the caller's own notice is its own


def test_the_move_list_shows_five_days_and_more_on_asking(api):
    browser = webtest.TestApp(api.app)
    token = link(api, api.book(patient_of(api), date="24/11/2026", time="09:00"))
    page = browser.get(f"/cita/{token}")
    legends = re.findall(r"<legend>([^<]+)</legend>", page.text)
    assert legends[0] == "martes, 24 de noviembre de 2026" and len(legends) == 5
    more = page.click("Ver más días")
    later = re.findall(r"<legend>([^<]+)</legend>", more.text)
    assert later and later[0] not in legends
    choice = re.search(r'name="slot" value="([^"]+)"', more.text)[1]
    moved = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(more), "slot": choice})
    assert moved.status_int == 303  # a time of a later page is one the page offered


def test_the_desk_says_in_its_own_words_why_the_patient_or_the_caller_cancelled(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    by_link, by_call = api.book(patient_of(api), date="26/11/2026"), api.book(
        api.new_patient(nif=valid_dni(1), name="Eva"), date="26/11/2026", time="09:30")
    cancel_appointment(api.app.clinic, by_link, reason="cancelled by the patient", source="patient")
    api.delete(f"/appointments/{by_call}")
    assert "anulada desde su enlace" in desk.get(f"/desk/appointments/{by_link}").text
    called = desk.get(f"/desk/appointments/{by_call}").text
    assert "anulada en la llamada" in called and "cancelled by the caller" not in called


def test_a_day_past_the_horizon_lists_nothing_to_move_to_and_a_move_there_is_refused_in_words(api):
    browser = webtest.TestApp(api.app)
    booked = api.book(patient_of(api), date="26/11/2026", time="09:00")
    token = link(api, booked)
    for day in ("9999-12-20", "9999-12-31", "2027-03-01"):
        page = browser.get(f"/cita/{token}?desde={day}")
        assert page.status_int == 200 and 'name="slot"' not in page.text and "No hay otras horas libres" in page.text
    assert 'value="2026-11-26 10:30"' in browser.get(f"/cita/{token}?desde=0001-01-01").text  # from today
    for slot in ("9999-12-31 09:00", "9999-12-20 09:00"):
        refused = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(page), "slot": slot}, expect_errors=True)
        assert refused.status_int == 409 and "Esa hora acaba de ocuparse" in refused.text, slot
    assert tuple(row(api, booked)) == ("2026-11-26", "09:00", "booked")


def test_the_page_says_what_was_done_as_the_visits_state_says_never_as_its_address_does(api):
    browser = webtest.TestApp(api.app)
    booked = api.book(patient_of(api), date="26/11/2026", time="09:00")
    token = link(api, booked)
    said = {"cancelled": "Su cita ha sido anulada", "moved": "su cita ha cambiado", "confirmed": "queda confirmada"}
    for done, words in said.items():  # a live visit nobody changed
        assert words not in browser.get(f"/cita/{token}?hecho={done}").text, done
    api.post(f"/appointments/{booked}/confirm", {"confirmed": True})  # the caller's confirm, not the patient's
    assert said["confirmed"] not in browser.get(f"/cita/{token}?hecho=confirmed").text
    moved = browser.post(f"/cita/{token}/cambiar", {"csrf": csrf(browser.get(f"/cita/{token}")),
                                                   "slot": "2026-11-26 10:30"}).follow()
    assert said["moved"] in moved.text and said["cancelled"] not in browser.get(f"/cita/{token}?hecho=cancelled").text
    assert said["moved"] not in browser.get(f"/cita/{token}").text  # a plain visit of the page says nothing done
    cancel_appointment(api.app.clinic, booked, reason="x", source="desk:ana")
    cancelled = browser.get(f"/cita/{token}?hecho=cancelled")  # the desk cancelled it: the page says it is
    assert "Esta cita está anulada." in cancelled.text and said["cancelled"] not in cancelled.text


def test_posts_with_a_wrong_csrf_token_are_bounded_first_and_add_no_read_to_the_access_record(api):
    browser = webtest.TestApp(api.app)
    ana = patient_of(api)
    token = link(api, api.book(ana))
    answers = [browser.post(f"/cita/{token}/anular", {"csrf": "0" * 64}, expect_errors=True) for _ in range(12)]
    assert [answer.status_int for answer in answers] == [403] * 10 + [429] * 2
    assert not any("Ana" in answer.text for answer in answers)
    assert not [read for read in api.app.clinic.access.of_patient(ana) if read["kind"] == "link"]
    browser.get(f"/cita/{token}")  # the page that shows her: one read
    assert [read["reads"] for read in api.app.clinic.access.of_patient(ana) if read["kind"] == "link"] == [1]


def test_the_pages_of_a_patient_who_chose_no_language_are_in_spanish_whatever_the_browser_asks(api):
    browser = webtest.TestApp(api.app, extra_environ={"HTTP_ACCEPT_LANGUAGE": "en-GB,en;q=0.9"})
    token = link(api, api.book(patient_of(api)))
    john = register_patient(api.app.clinic, {"name": "John", "nif": valid_dni(1), "email": "john@example.com",
                                             "language": "en"}, source="desk:ana")
    english = link(api, api.book(john, time="09:30"))
    page = browser.get(f"/cita/{token}")
    assert '<html lang="es">' in page.text and "Hola, Ana:" in page.text
    assert '<html lang="es">' in browser.post(f"/cita/{token}/anular", {"csrf": "0" * 64}, expect_errors=True).text
    assert '<html lang="en">' in webtest.TestApp(api.app, extra_environ={"HTTP_ACCEPT_LANGUAGE": "es"}).get(
        f"/cita/{english}").text  # one who chose English reads English
    assert '<html lang="en">' in browser.get("/cita/" + "z" * 32, expect_errors=True).text  # no one's: the browser's
