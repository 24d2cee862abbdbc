"""The clinic's own booking page at /reservar (docs/design.md, "The booking page"), driven as a browser would
(webtest): each step, each refusal in words beside its field, a changed, another step's or stale form refused, a
time taken meanwhile offering the others, the page closed; hostile text inert everywhere; the headers both ways;
no patient's data in an address, and no GET that changes anything; under a host's prefix too."""

import datetime as dt
import html
import re

import pytest
import webtest
from hypothesis import given, settings, strategies as st

from _agenda.domain.web_requests import new_token
from _agenda.patient.booking_form import FORM_MINUTES, FormRefused, SIGNED, form_key, signed, verified
from _agenda.storage.connections import transaction
from conftest import valid_dni

CATALOG = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to,pause,needs,category,types,room
center,C1,Centro,,,,,,,,,,,,,
center,C2,Norte,,,,,,,,,,,,,
speciality,MG,Medicina general,,,,,,,,,,,,,
speciality,PED,Pediatría,,,,,,,,,,,,,
insurance,PRIV,Privado,,,,,,,,,,,,,
insurance,SAN,Sanitas,,,,,,,,,,,,,
insurance,DKV,DKV,,,,,,,,,,,,,
type,MG-REV,Revisión,MG,,,,,15,,,,,,,
type,MG-PRI,Primera visita,MG,,,,,30,,,,,,,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-11:00,15,,,,,,MG-REV;MG-PRI,
doctor,GARCIA,Pedro García,MG,C1,,mon-fri,12:00-13:00,15,,,,,,MG-REV,
doctor,RUIZ,Javier Ruiz,PED,C2,PRIV;SAN,mon-fri,09:00-10:00,20,,,,,,,
"""
PRIVACY = "Clínica Sol SL trata sus datos para gestionar su cita; se conservan 5 años; escriba a dpo@clinicasol.es"
WEB = {"web_booking": "on", "web_privacy": PRIVACY, "public_url": "https://citas.clinicasol.es",
       "clinic_name": "Clínica Sol"}
CHOSEN = "/reservar?centro=C1&especialidad=MG&medico=MARTIN&tipo=MG-REV"
PATIENT = {"nombre": "Ana", "apellidos": "Ortega Sanz", "nacimiento": "01/02/1980", "nif": valid_dni(201),
           "telefono": "612345678", "correo": "ana.ortega@example.es"}


class Addresses:
    """WSGI middleware: every address asked of the app (path and query), to prove no patient's data is in one."""

    def __init__(self, app):
        self.app, self.seen = app, []

    def __call__(self, environ, start_response):
        self.seen.append(environ.get("PATH_INFO", "") + "?" + environ.get("QUERY_STRING", ""))
        return self.app(environ, start_response)


@pytest.fixture
def web(make_api):
    return make_api(csv=CATALOG, **WEB)


@pytest.fixture
def browser(web):
    addresses = Addresses(web.app)
    client = webtest.TestApp(addresses)
    client.addresses = addresses
    return client


def appointments(api):
    return [tuple(row) for row in api.db().execute("SELECT date, time, doctor_id, status, pending FROM appointments")]


def changes(api):
    return api.db().execute("SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM appointments) + "
                            "(SELECT count(*) FROM patients) + (SELECT count(*) FROM outbox)").fetchone()[0]


def words(page):
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.text)).split())


def times_form(page):
    return next(form for form in page.forms.values() if form.action.endswith("/reservar/datos"))


def details_form(browser, query=CHOSEN, pick=0):
    """The details' form after choosing the `pick`th time of the first week."""
    times = times_form(browser.get(query))
    times["hueco"] = times.fields["hueco"][0].options[pick][0]
    page = times.submit()
    assert page.status_int == 200, page.text
    return page.forms[0]


def filled(form, **typed):
    for name, value in {**PATIENT, **typed}.items():
        form[name] = value
    form["privacidad"] = typed.get("privacidad", True)
    return form


def test_each_step_is_a_page_of_links_and_a_get_changes_nothing(web, browser):
    before = changes(web)
    page = browser.get("/reservar")
    assert page.status_int == 200 and "¿En qué centro?" in page.text and "Clínica Sol" in page.text
    page = page.click("Centro")  # C1 holds only Medicina general: chosen for the patient
    assert "¿Con quién?" in page.text and "Cualquiera" in page.text and "Pedro García" in page.text
    page = page.click("Lucía Martín")
    assert "¿Qué tipo de visita?" in page.text and "30 min" in page.text
    page = page.click("Revisión")
    assert "Elija día y hora" in page.text and "lunes, 23 de noviembre de 2026" not in page.text  # within the notice
    assert 'value="2026-11-24 09:00 MARTIN"' in page.text and "<script" not in page.text
    back = page.click("← Volver")
    assert "¿Qué tipo de visita?" in back.text and back.click("← Volver").text.count("¿Con quién?") == 1
    ruiz = browser.get("/reservar?centro=C2")  # one speciality, one doctor, no types: straight to the times
    assert "Elija día y hora" in ruiz.text and "RUIZ" in ruiz.text
    assert changes(web) == before


def test_anyone_offers_every_doctors_times_with_their_names(browser):
    page = browser.get("/reservar?centro=C1&especialidad=MG&medico=cualquiera&tipo=MG-REV")
    assert "2026-11-24 09:00 MARTIN" in page.text and "2026-11-24 12:00 GARCIA" in page.text
    assert "Pedro García" in words(page)


def test_a_week_at_a_time_up_to_the_horizon(make_api):
    client = webtest.TestApp(make_api(csv=CATALOG, web_horizon_days=17, **WEB).app)
    page, seen = client.get(CHOSEN), []
    assert "← Semana anterior" not in page.text
    while "Semana siguiente →" in page.text:
        seen.append(re.search(r'semana=([0-9-]+)">Semana siguiente', page.text)[1])
        page = page.click("Semana siguiente →")
    assert seen == ["2026-11-30", "2026-12-07"] and "← Semana anterior" in page.text
    assert "2026-12-10 09:00" in page.text and "2026-12-11" not in page.text  # the 18th day is past the horizon
    assert client.get(CHOSEN + "&semana=2027-05-03").text.count("2026-11-24 09:00") == 1  # out of range: the first


def test_a_patient_books_and_is_told_to_confirm_by_the_mail_no_data_in_any_address(web, browser):
    form = filled(details_form(browser))
    assert form.method.upper() == "POST"
    answer = form.submit()
    assert answer.status_int == 200, answer.text
    assert "Le hemos enviado un correo a a•••@example.es" in words(answer) and "15 minutos" in words(answer)
    assert appointments(web) == [("2026-11-24", "09:00", "MARTIN", "booked", "email")]
    for address in browser.addresses.seen:
        for value in PATIENT.values():
            assert value.lower() not in address.lower() and "ortega" not in address.lower()


def test_each_field_left_blank_is_named_beside_it_and_at_the_top_and_nothing_changes(web, browser):
    form = details_form(browser)
    before = changes(web)
    page = form.submit(status=400)
    summary = page.html.find(id="errores")
    assert summary is not None and summary["role"] == "alert"
    for name in ("nombre", "apellidos", "nacimiento", "nif", "telefono", "correo", "privacidad"):
        field = page.html.find(id=name)
        assert field["aria-invalid"] == "true" and f"{name}-error" in field["aria-describedby"]
        assert page.html.find(id=f"{name}-error").get_text(strip=True)
        assert summary.find("a", href=f"#{name}") is not None
    assert "hay que aceptar la información de protección de datos" in words(page)
    assert changes(web) == before


def test_what_the_booking_refuses_is_said_beside_its_field_with_what_was_typed_kept(web, browser):
    form = filled(details_form(browser), nif="12345678A", nacimiento="31/02/1980")
    page = form.submit(status=400)
    assert page.html.find(id="nacimiento")["aria-invalid"] == "true"
    assert page.forms[0]["nombre"].value == "Ana" and page.forms[0]["nif"].value == "12345678A"
    form = filled(page.forms[0], nif="12345678A", telefono="12", correo="ana.ortega")
    page = form.submit(expect_errors=True)
    assert page.status_int == 400
    for name in ("nif", "telefono", "correo"):  # every field at fault at once, each beside its own
        assert page.html.find(id=name)["aria-invalid"] == "true" and page.html.find(id=f"{name}-error"), name
    assert page.html.find(id="nombre").get("aria-invalid") is None
    assert page.forms[0]["correo"].value == "ana.ortega" and page.forms[0]["privacidad"].checked
    assert appointments(web) == []


def test_an_insurance_the_doctor_does_not_take_is_said_beside_it_and_a_child_books_under_a_guardian(web, browser):
    form = filled(details_form(browser, "/reservar?centro=C2"))
    assert [value for value, *_ in form["aseguradora"].options] == ["PRIV", "SAN"]  # only what he takes
    form["aseguradora"].force_value("DKV")
    page = form.submit(expect_errors=True)
    assert page.status_int in (400, 409) and page.html.find(id="aseguradora")["aria-invalid"] == "true", page.text
    assert appointments(web) == [] and "Sanitas" in page.text
    form = filled(page.forms[0], nombre="Lucía", nacimiento="03/04/2019")
    assert [value for value, *_ in details_form(browser)["aseguradora"].options] == ["", "DKV", "PRIV", "SAN"]
    form["aseguradora"], form["menor"] = "SAN", True
    assert "Le hemos enviado un correo a a•••@example.es" in words(form.submit())
    assert appointments(web) == [("2026-11-24", "09:00", "RUIZ", "booked", "email")]


def test_a_form_changed_or_of_another_step_or_stale_is_refused_in_words(web, browser, clock):
    form = filled(details_form(browser))
    form["centro"] = "C2"
    page = form.submit(status=400)
    assert "El formulario llegó cambiado" in words(page) and "Pedir cita de nuevo" in page.text
    times = times_form(browser.get(CHOSEN))
    fields = {name: times[name] for name in ("centro", "especialidad", "medico", "tipo", "idioma", "emitido", "firma")}
    page = browser.post("/reservar/enviar", {**fields, **PATIENT, "dia": "2026-11-25", "hora": "09:00",
                                             "medico_hueco": "MARTIN", "privacidad": "1"}, status=400)
    assert "llegó cambiado" in words(page)  # the times' signature is no details' one
    form = filled(details_form(browser))
    clock.moment += dt.timedelta(minutes=61)
    page = form.submit(status=403)
    assert "ha caducado" in words(page)
    assert appointments(web) == []


def test_a_time_taken_meanwhile_offers_the_other_times(web, browser):
    form = filled(details_form(browser))
    web.book(web.new_patient(nif=valid_dni(202)), date="24/11/2026", time="09:00", doctor="MARTIN")
    page = form.submit(status=409)
    assert "Esa hora acaba de ocuparse: elija otra." in words(page)
    assert "2026-11-24 09:00 MARTIN" not in page.text and "2026-11-24 09:15 MARTIN" in page.text
    times = times_form(page)
    times["hueco"] = "2026-11-24 09:15 MARTIN"
    assert "Sus datos" in times.submit().text


def test_a_time_chosen_then_taken_or_none_chosen_shows_the_week_again(web, browser):
    times = times_form(browser.get(CHOSEN))
    assert "Elija una hora." in words(times.submit(status=400))
    times["hueco"] = "2026-11-24 09:00 MARTIN"
    web.book(web.new_patient(nif=valid_dni(203)), date="24/11/2026", time="09:00", doctor="MARTIN")
    page = times.submit(status=409)
    assert "Esa hora acaba de ocuparse" in words(page) and "2026-11-24 09:15 MARTIN" in page.text


def test_past_a_bound_the_page_says_try_later_in_words_and_books_nothing(web, browser):
    for number in range(3):
        requested(web, browser, nif=valid_dni(210 + number), correo=f"p{number}@example.es")
    page = filled(details_form(browser), nif=valid_dni(220), correo="p9@example.es").submit(status=429)
    assert "inténtelo más tarde" in words(page) and len(appointments(web)) == 3


def test_closed_the_page_is_a_404_in_words_and_its_errors_are_pages(make_api):
    client = webtest.TestApp(make_api(csv=CATALOG).app)
    for page in (client.get("/reservar", status=404), client.post("/reservar/enviar", {}, status=404),
                 client.get("/reservar/nada", status=404)):
        assert "no da citas por internet" in words(page) or "no existe" in words(page)
        assert page.content_type == "text/html"
    assert client.get("/reservar/nada", status=404).content_type == "text/html"


HOSTILE = '<script>alert(1)</script>"\'><img src=x onerror=alert(2)>'


def test_hostile_text_in_every_field_and_the_catalog_is_shown_inert(make_api):
    catalog = CATALOG.replace("Lucía Martín", "Lucía <b>Martín</b>").replace("Centro,", "Centro <i>x</i>,")
    api = make_api(csv=catalog, **{**WEB, "clinic_name": HOSTILE, "web_privacy": HOSTILE})
    client = webtest.TestApp(api.app)
    page = client.get("/reservar")
    assert "<i>x</i>" not in page.text and "&lt;i&gt;x&lt;/i&gt;" in page.text
    form = details_form(client, "/reservar?centro=C1&especialidad=MG&medico=MARTIN&tipo=MG-REV")
    page = filled(form, **{name: HOSTILE for name in PATIENT}).submit(expect_errors=True)
    for answer in (page, client.get("/reservar")):
        assert "<script>" not in answer.text and "<img" not in answer.text and "<b>" not in answer.text
        assert all(HOSTILE not in value and "alert" not in value for _, value in answer.headerlist)
    assert page.forms[0]["nombre"].value == HOSTILE  # kept as typed, escaped in the page
    asked = client.get("/reservar?centro=" + HOSTILE.replace("&", "%26"), status=400)
    assert "Esa opción ya no se ofrece" in words(asked) and "<script>" not in asked.text and "<img" not in asked.text


def test_the_headers_frame_the_page_only_where_the_clinic_says(make_api):
    closed = webtest.TestApp(make_api(csv=CATALOG, **WEB).app).get("/reservar")
    framed = webtest.TestApp(make_api(csv=None, **WEB, web_frame_ancestors="https://www.clinicasol.es").app
                             ).get("/reservar")
    assert "frame-ancestors 'none'" in closed.headers["Content-Security-Policy"]
    assert closed.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors https://www.clinicasol.es;" in framed.headers["Content-Security-Policy"]
    assert "X-Frame-Options" not in framed.headers
    for page in (closed, framed):
        assert page.headers["Cache-Control"] == "no-store" and page.headers["Referrer-Policy"] == "no-referrer"
        assert "default-src 'self'" in page.headers["Content-Security-Policy"] and "Set-Cookie" not in page.headers


def test_english_by_the_browser_or_the_switch_and_the_form_keeps_it(browser):
    assert "Which center?" in browser.get("/reservar", headers={"Accept-Language": "en-GB,en"}).text
    page = browser.get("/reservar").click("English")
    assert "Which center?" in page.text and 'lang="en"' in page.text
    page = page.click("Centro").click("Lucía Martín").click("Revisión")
    times = times_form(page)
    times["hueco"] = times.fields["hueco"][0].options[0][0]
    assert "Your details" in times.submit().text


def test_the_stylesheet_carries_the_clinics_colour_with_text_that_reads_on_it(make_api):
    dark = webtest.TestApp(make_api(csv=CATALOG, **WEB).app).get("/reservar/reservar.css")
    light = webtest.TestApp(make_api(csv=None, **WEB, web_color="#ffe066").app).get("/reservar/reservar.css")
    assert "--accent: #0b5cad; --on-accent: #ffffff; --accent-text: #0b5cad;" in dark.text
    assert "--accent: #ffe066; --on-accent: #111111; --accent-text: #1d2733;" in light.text
    assert dark.content_type == "text/css"


def test_under_a_hosts_prefix_every_link_and_form_stays_under_it(web):
    client = webtest.TestApp(web.app, extra_environ={"SCRIPT_NAME": "/clinica-a"})
    pages = [client.get("/reservar"), client.get(CHOSEN)]
    pages.append(details_form(client).submit(status=400))
    for page in pages:
        assert not re.search(r'(?:href|action)="/(?!clinica-a/)', page.text), page.text
    assert 'href="/clinica-a/reservar/reservar.css"' in pages[0].text


def requested(web, browser, **typed):
    """Book the first time offered on the page; the confirmation link's token, as the sender makes it."""
    answer = filled(details_form(browser), **typed).submit()
    assert "Le hemos enviado un correo" in words(answer), answer.text
    appointment = web.db().execute("SELECT max(id) FROM appointments").fetchone()[0]
    with transaction(web.db()) as conn:
        return new_token(conn, appointment)


def test_the_confirmation_link_shows_then_confirms_once_and_says_so_again(web, browser):
    token = requested(web, browser)
    before = changes(web)
    for _ in range(2):  # a mail scanner, then the patient
        page = browser.get(f"/reservar/confirmar/{token}")
    assert "martes, 24 de noviembre de 2026" in words(page) and "09:00" in page.text and "Centro" in page.text
    assert "Ana" not in page.text and "Ortega" not in page.text and changes(web) == before
    done = browser.get(f"/reservar/confirmar/{token}?idioma=en").forms[0].submit()  # the language kept
    assert "Thank you: your appointment is confirmed." in words(done)
    assert appointments(web) == [("2026-11-24", "09:00", "MARTIN", "booked", None)]
    again = browser.post(f"/reservar/confirmar/{token}")
    assert "ya estaba confirmada" in words(again) and "ya estaba confirmada" in words(
        browser.get(f"/reservar/confirmar/{token}"))


def test_a_confirmation_link_late_or_unknown_says_so_in_words(web, browser, clock):
    token = requested(web, browser)
    clock.moment += dt.timedelta(minutes=16)
    for page in (browser.get(f"/reservar/confirmar/{token}"), browser.post(f"/reservar/confirmar/{token}")):
        assert "Esta petición ha caducado" in words(page) and 'href="/reservar?idioma=es"' in page.text
    assert appointments(web) == []
    assert "Este enlace no es válido." in words(browser.get("/reservar/confirmar/" + "x" * 32, status=404))
    assert "no existe" in words(browser.get("/reservar/confirmar/a/b", status=404))


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=60, deadline=None)
@given(values=st.fixed_dictionaries({name: TEXT for name in SIGNED["datos"]}), changed=st.sampled_from(
    SIGNED["datos"] + ("emitido", "firma")), to=TEXT, minutes=st.integers(0, 3 * FORM_MINUTES))
def test_a_signed_form_is_taken_only_as_written_for_its_step_and_within_its_time(values, changed, to, minutes):
    key, written = form_key("a secret"), dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.timezone.utc)
    later = written + dt.timedelta(minutes=minutes)
    form = signed(key, "datos", values, written)
    if minutes <= FORM_MINUTES:
        assert verified(key, "datos", form, later) == {name: values[name] or "" for name in SIGNED["datos"]}
    else:
        with pytest.raises(FormRefused, match="expired"):
            verified(key, "datos", form, later)
    for refused in ({**form, changed: to}, signed(key, "horas", values, written)):
        if refused != form:
            with pytest.raises(FormRefused):
                verified(key, "datos", refused, written)
    with pytest.raises(FormRefused, match="tampered"):
        verified(form_key("another clinic's secret"), "datos", form, written)
