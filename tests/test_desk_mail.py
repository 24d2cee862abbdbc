"""Reception knows what the patient will receive (docs/design.md, "What a message says"): after a booking, a move or a
cancellation the desk says whether a message goes and where, the address partly hidden, or why not; search rows and
the appointment say whether the patient has an e-mail; "Enviar por correo" sends the visit's state now, once in a few
minutes; a message being tried again says since when and why."""

import datetime as dt


from _agenda.domain.patients import set_messages
from _agenda.patient.sender import Mailer, Sender, smtp_server
from _agenda.storage.connections import transaction

from test_mail import mail_server  # noqa: F401 (the fixture)
from test_desk import desk, last_form, log_in  # noqa: F401 (the desk fixture)

FAR = "01/12/2026"  # beyond the 48 hours of a reminder from the test clinic's Monday


def sender_of(api, mail_server):
    return Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))),
                  "Clínica <citas@clinica.es>", "https://citas.clinica.es")


def flash_of(answer):
    assert answer.status_int == 303, answer.text
    assert "@" not in answer.headers["Set-Cookie"]  # ids only in the cookie, never an address
    return answer.follow().html.find(class_="flash").get_text(" ", strip=True)


def booking_form(desk, day, time, nif):
    """The booking form's "Reservar" of the patient found by NIF."""
    page = desk.get(f"/desk/book?doctorId=MARTIN&date={day}&time={time}&centerId=C1")
    search = form_of(page, "/desk/book/search")
    search["q"] = nif
    found = search.submit()
    return next(form for form in found.forms.values() if "patientId" in form.fields)


def form_of(page, action):
    return next(form for form in page.forms.values() if form.action.endswith(action))


def test_a_booking_says_where_its_message_goes_or_why_none_does(api, desk):
    log_in(desk)
    for nif, email, stopped, (day, time), said in (
            ("11111111H", "ana.garcia@example.es", False, (FAR, "09:00"), "Se enviará un correo a a•••@example.es."),
            ("22222222J", None, False, (FAR, "09:30"), "No se enviará ningún correo: el paciente no tiene correo."),
            ("33333333P", "luis@example.es", True, (FAR, "10:00"), "No se enviará ningún correo: el paciente pidió no"),
            ("44444444A", "eva@example.es", False, ("24/11/2026", "09:00"), "Se enviará un correo a e•••@example.es. No "
                                                                           "habrá recordatorio: la cita es dentro de las "
                                                                           "próximas 48 h.")):
        patient = api.new_patient(nif=nif, **({"email": email} if email else {}))
        if stopped:
            with transaction(api.db()) as conn:
                set_messages(conn, patient, 0, api.app.clinic.clock(), "desk:ana")
        flash = flash_of(booking_form(desk, day, time, nif).submit())
        assert said in flash, flash
        api.db().execute("DELETE FROM outbox")  # the next booking's flash reads its own message only
    reminder = "No habrá recordatorio"
    assert reminder not in flash_of(booking_form(desk, FAR, "10:30", "44444444A").submit())


def test_a_move_and_a_cancellation_say_what_goes_and_a_notice_of_a_visit_never_told_says_none_goes(api, desk, mail_server):
    log_in(desk)
    visit = api.book(api.new_patient(email="ana@example.es"), date=FAR, time="09:00")
    page = desk.get(f"/desk/appointments/{visit}")
    cancel = form_of(page, "/cancel")
    cancel["reason"] = "llamó"
    assert "No se enviará ningún correo: no se le había avisado de la cita." in flash_of(cancel.submit())
    visit = api.book(api.new_patient(nif="22222222J", email="bea@example.es"), date=FAR, time="10:00")
    sender_of(api, mail_server).pass_once()  # its confirmation goes
    move = form_of(desk.get(f"/desk/appointments/{visit}"), "/move")
    move["slot"] = f"{FAR}|10:30|MARTIN|C1"
    assert "Se enviará un correo a b•••@example.es." in flash_of(move.submit())
    cancel = form_of(desk.get(f"/desk/appointments/{visit}"), "/cancel")
    cancel["reason"] = "llamó"
    assert "Se enviará un correo a b•••@example.es." in flash_of(cancel.submit())


def test_search_rows_and_the_appointment_say_whether_the_patient_has_an_email(api, desk):
    log_in(desk)
    with_mail = api.new_patient(email="ana@example.es")
    api.new_patient(nif="22222222J", name="Bea")
    search = form_of(desk.get("/desk/patients"), "/desk/patients")
    search["q"] = "García"
    rows = [row.get_text(" ", strip=True) for row in search.submit().html.select("ul.found li")]
    assert any("Ana" in row and "con correo" in row for row in rows) and any(
        "Bea" in row and "sin correo" in row for row in rows), rows
    page = desk.get(f"/desk/appointments/{api.book(with_mail, date=FAR)}")
    assert page.html.find(class_="mail-to").get_text(strip=True) == "a•••@example.es"


def test_send_by_email_sends_the_visits_state_once_in_a_few_minutes_and_nothing_clinical(api, desk, mail_server,
                                                                                        clock):
    log_in(desk)
    ana = api.new_patient(email="ana@example.es")
    visit = api.book(ana, date=FAR, time="09:00", reason="Dolor de rodilla")
    sender = sender_of(api, mail_server)
    sender.pass_once()
    flash = flash_of(form_of(desk.get(f"/desk/appointments/{visit}"), "/mail").submit())
    assert flash.endswith("Se enviará un correo a a•••@example.es.")
    again = form_of(desk.get(f"/desk/appointments/{visit}"), "/mail").submit(expect_errors=True)
    assert again.status_int == 400 and "hace un momento" in again.text
    assert api.db().execute("SELECT count(*) FROM outbox WHERE kind = 'state'").fetchone()[0] == 1
    sender.pass_once()
    (to, message), = [one for one in mail_server.inbox.messages() if one[1]["Subject"].startswith("Su cita:")]
    assert to == ["ana@example.es"] and "Dolor" not in message.as_string()
    assert "/cita/" in message.get_body(("plain",)).get_content()
    clock.moment += dt.timedelta(minutes=6)
    assert form_of(desk.get(f"/desk/appointments/{visit}"), "/mail").submit().status_int == 303
    assert [row[0] for row in api.db().execute("SELECT source FROM events WHERE action = 'appointment.mailed'")] == [
        "desk:ana", "desk:ana"]


def test_send_by_email_is_refused_in_words_for_a_patient_without_one_and_changes_nothing(api, desk):
    log_in(desk)
    visit = api.book(api.new_patient(), date=FAR)
    refused = form_of(desk.get(f"/desk/appointments/{visit}"), "/mail").submit(expect_errors=True)
    assert refused.status_int == 400 and "el paciente no tiene correo o pidió no recibir mensajes" in refused.text
    assert api.db().execute("SELECT count(*) FROM outbox WHERE kind = 'state'").fetchone()[0] == 0
    page = desk.get(f"/desk/appointments/{visit}")
    cancel = form_of(page, "/cancel")
    cancel["reason"] = "llamó"
    cancel.submit()
    page = desk.get(f"/desk/appointments/{visit}")
    assert not [form for form in page.forms.values() if form.action.endswith("/mail")]
    csrf = next(form for form in page.forms.values() if "csrf" in form.fields)["csrf"].value
    late = desk.post(f"/desk/appointments/{visit}/mail", {"csrf": csrf}, expect_errors=True)
    assert late.status_int == 400 and "ni está anulada" in late.text


def test_a_message_tried_again_says_since_when_and_why(api, desk, mail_server):
    log_in(desk)
    visit = api.book(api.new_patient(email="ana@example.es"), date=FAR)
    mail_server.inbox.busy = True
    sender_of(api, mail_server).pass_once()
    row = desk.get(f"/desk/appointments/{visit}").html.select_one("table.messages tbody tr").get_text(" ", strip=True)
    assert "reintentando desde 23/11/2026 08:00" in row and "se reintentará automáticamente" in row, row
