"""The booking page read as a patient would (docs/design.md, "The booking page"): every mistake in the details
said in one look, not one refusal after another, in the page's own register (usted, as the link's pages)."""

import datetime as dt
import re

from test_booking_page import browser, details_form, filled, requested, web, words  # noqa: F401 (fixtures)
from test_mail import mail_server  # noqa: F401 (a fixture)

TU = re.compile(r"\b(revisa|elige|escribe|márcala|regístralo|acórtalo)\b", re.IGNORECASE)  # tú, on a usted page


def test_every_mistake_in_the_details_is_said_at_once_beside_its_field_and_in_usted(web, browser):
    form = filled(details_form(browser), nif="12345678A", nacimiento="1980-13-45", telefono="12",
                  correo="ana.ortega@", privacidad=False)
    page = form.submit(status=400)
    summary = page.html.find(id="errores")
    for name in ("nacimiento", "nif", "telefono", "correo", "privacidad"):
        assert page.html.find(id=name)["aria-invalid"] == "true", name
        assert summary.find("a", href=f"#{name}") is not None, name
    assert page.forms[0]["nif"].value == "12345678A" and page.forms[0]["correo"].value == "ana.ortega@"
    assert "hay que revisar sus números y la letra" in words(page)
    assert not TU.search(words(page)), TU.search(words(page))


def test_in_english_the_link_says_center_as_the_page_did_and_book_again_stays_in_english(web, browser, clock):
    page = browser.get("/reservar?idioma=en").click("Centro").click("Lucía Martín").click("Revisión")
    assert "<dt>Center</dt>" in page.text
    token = requested(web, browser)
    shown = browser.get(f"/reservar/confirmar/{token}?idioma=en")
    assert "<dt>Center</dt>" in shown.text and "Centre" not in shown.text
    clock.moment += dt.timedelta(minutes=16)
    late = browser.get(f"/reservar/confirmar/{token}?idioma=en")
    assert "expired" in words(late), words(late)
    assert "Which center?" in late.click("Book again").text


def test_the_first_message_s_plain_text_speaks_of_no_button_it_does_not_have(make_api):
    from _agenda.patient.messages import written_web

    view = {"language": "es", "clinic": "Clínica Sol", "shows": {}, "link": "https://citas.example.es/x",
            "until": dt.datetime(2026, 11, 24, 8, 15),
            "visit": {"starts": dt.datetime(2026, 11, 24, 9, 0), "center_name": "Centro"}}
    for language in ("es", "en"):
        written = written_web({**view, "language": language})
        assert "botón" not in written["text"] and "button" not in written["text"], written["text"]
        assert "08:15" in written["text"] and view["link"] in written["text"]


def test_a_visit_moved_at_the_desk_before_its_patient_confirms_sends_no_link_of_theirs_until_then(
        make_api, mail_server):
    from _agenda.domain.changes import move_appointment
    from _agenda.domain.web_booking import confirm_booking, request_booking
    from _agenda.patient.sender import Mailer, Sender, smtp_server
    from test_mail import FROM
    from test_web_booking import ADDRESS, WEB, ask

    api = make_api(**WEB)
    sender = Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM,
                    WEB["public_url"])
    request_booking(api.app.clinic, ask(), ADDRESS)
    visit = api.db().execute("SELECT max(id) FROM appointments").fetchone()[0]
    move_appointment(api.app.clinic, visit, day=dt.date(2026, 11, 24), time_text="09:30", source="desk:ana")
    sender.pass_once()
    texts = [message.get_body(("plain",)).get_content() for _, message in mail_server.inbox.messages()]
    assert len(texts) == 1 and "/reservar/confirmar/" in texts[0]  # the page's own message, nothing more
    assert not any("/cita/" in text for text in texts)  # the patient's link waits for their confirmation
    token = re.search(r"/reservar/confirmar/([A-Za-z0-9_-]+)", texts[0])[1]
    assert confirm_booking(api.app.clinic, token) == "confirmed"
    sender.pass_once()
    confirmation = mail_server.inbox.messages()[-1][1].get_body(("plain",)).get_content()
    assert "/cita/" in confirmation and "09:30" in confirmation  # the time it now has


def test_the_desk_says_a_move_of_a_visit_still_to_be_confirmed_sends_nothing_now(make_api):
    from test_desk_verify import WEB, asked, desk_of, PASSWORD

    api = make_api(**WEB)
    api.app.accounts.add_staff("ana", PASSWORD)
    visit = asked(api, nif="12345678Z", email="nueva@example.es")["appointment_id"]
    desk, csrf = desk_of(api)
    moved = desk.post(f"/desk/appointments/{visit}/move", {"csrf": csrf, "slot": "24/11/2026|09:30|MARTIN|C1"})
    flash = moved.follow().html.find("p", class_="flash").text
    assert "No se enviará ningún correo: se le dirá cuando confirme la cita por el correo." in flash, flash


def test_the_week_marks_a_web_booking_still_pending_as_the_day_does(make_api):
    from test_desk_verify import WEB, asked, desk_of, PASSWORD

    api = make_api(**WEB)
    api.app.accounts.add_staff("ana", PASSWORD)
    asked(api, nif="12345678Z", email="nueva@example.es")
    desk, _ = desk_of(api)
    for path in ("/desk/day?date=24/11/2026&centerId=C1", "/desk/week?date=24/11/2026&centerId=C1"):
        mark = desk.get(path).html.select_one(".card.pending .pending-mark")
        assert mark is not None and mark.text.startswith("Pendiente de confirmar por el paciente hasta"), path


def test_the_details_lead_back_to_the_week_of_the_time_chosen_even_after_a_refusal(web, browser):
    times = browser.get("/reservar?centro=C1&especialidad=MG&medico=MARTIN&tipo=MG-REV&idioma=en")
    later = times.click("Next week")
    form = next(form for form in later.forms.values() if form.action.endswith("/reservar/datos"))
    chosen = form.fields["hueco"][0].options[0][0]
    form["hueco"] = chosen
    details = form.submit()
    refused = details.forms[0].submit(status=400)  # blank: a POST answered; the browser's back would post again
    for page in (details, refused):
        week = page.click("← Back")
        assert "Choose a day and time" in week.text and f'value="{chosen}"' in week.text  # that week, in English


def test_the_por_verificar_page_speaks_to_reception_as_the_rest_of_the_desk_does(make_api):
    from test_desk_verify import WEB, desk_of, PASSWORD

    api = make_api(**WEB)
    api.app.accounts.add_staff("ana", PASSWORD)
    desk, _ = desk_of(api)
    said = words(desk.get("/desk/verify"))
    assert "Llama al teléfono de la ficha: si es esa persona, pasa la cita a su ficha" in said, said
    assert not re.search(r"\b(Llame|pase|rechácela|ciérrela)\b", said)  # usted, on the desk's tú
