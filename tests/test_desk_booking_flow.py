"""The booking form as reception meets it (webtest; the keys in a real browser: test_desk_keyboard.py): a slot
lost to another receptionist offers the way on (the doctor's next free slots, that time with another doctor of
the speciality), the patient, type, insurance and reason kept, each a click; every wrong field said beside it;
a NIF already held names and links its patient; the NIF marked as required, a child's guardian's NIF allowed;
the center named on the page and after a move; a form kept across a login shows names, not ids."""

import datetime as dt
import re

import pytest
import webtest

from test_desk import PASSWORD, log_in

CATALOG = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to,pause,needs,category,types,room
center,C1,Centro,,,,,,,,,,,,,
center,C2,Norte,,,,,,,,,,,,,
speciality,MG,Medicina general,,,,,,,,,,,,,
insurance,PRIV,Privado,,,,,,,,,,,,,
insurance,SAN,Sanitas,,,,,,,,,,,,,
type,MG-REV,Revisión,MG,,,,,15,,,,,,,
type,MG-PRI,Primera visita,MG,,,,,30,,,,,,,
doctor,MARTIN,Lucía Martín,MG,C1,PRIV;SAN,mon-fri,09:00-11:00,15,,,,,,MG-REV;MG-PRI,
doctor,GIL,Pedro Gil,MG,C2,,mon-fri,09:00-11:00,15,,,,,,MG-REV;MG-PRI,
doctor,SOTO,Rosa Soto,MG,C1,SAN,mon-fri,09:00-11:00,15,,,,,,MG-REV;MG-PRI,
doctor,RAMOS,Luis Ramos,MG,C1,,mon-fri,09:00-11:00,15,,,,,,MG-REV,
"""
TUESDAY = "24/11/2026"
SLOT = f"/desk/book?doctorId=MARTIN&date={TUESDAY}&time=09:30&centerId=C1"


@pytest.fixture
def clinic_api(make_api):
    api = make_api(csv=CATALOG)
    for name in ("ana", "bea"):
        api.app.accounts.add_staff(name, PASSWORD)
    return api


def receptionist(clinic_api, name="ana"):
    client = webtest.TestApp(clinic_api.app)
    assert log_in(client, name=name).status_int == 303
    return client


@pytest.fixture
def desk(clinic_api):
    return receptionist(clinic_api)


def words(element):
    return " ".join(element.get_text(" ").split())


def search(page, text):
    form = next(f for f in page.forms.values() if f.action == "/desk/book/search")
    form["q"] = text
    return form.submit()


def found_form(page):
    """The form that books the slot for the patient found or chosen."""
    return next(f for f in page.forms.values() if f.action == "/desk/book" and "patientId" in f.fields
                and "name" not in f.fields and f.html.select_one("select[name=typeId]") is None
                and "way-on" not in (f.html.find_parent("ul") or {}).get("class", []))


def new_patient_form(page):
    return next(f for f in page.forms.values() if f.action == "/desk/book" and "name" in f.fields)


def offers(page):
    """The way on after a lost slot: {heading: [(what the line says, its form)]}."""
    listed = {}
    for ul in page.html.select("ul.way-on"):
        heading = words(ul.find_previous_sibling("h2"))
        listed[heading] = [(words(li), li.form) for li in ul.select("li")]
    return listed


def live(clinic_api):
    return [tuple(row) for row in clinic_api.db().execute(
        "SELECT patient_id, doctor_id, center_id, date, time, type_id, insurance_id, reason FROM appointments"
        " WHERE status != 'cancelled' ORDER BY id")]


def flash_of(answer):
    return answer.follow().html.find("p", class_="flash").text


def test_a_slot_lost_to_another_receptionist_keeps_the_patient_and_offers_the_way_on(clinic_api):
    first_patient = clinic_api.new_patient()
    second_patient = clinic_api.new_patient(nif="10000001S", name="Pablo", surname="Ortega")
    ana, bea = receptionist(clinic_api, "ana"), receptionist(clinic_api, "bea")
    theirs = search(ana.get(SLOT + "&typeId=MG-PRI"), "12345678Z")  # both on the same slot at once
    mine = search(bea.get(SLOT + "&typeId=MG-PRI"), "ortega")
    for page, insurance, reason in ((theirs, "SAN", "Revisión"), (mine, "PRIV", "Dolor de rodilla")):
        form = found_form(page)
        form["insuranceId"], form["reason"] = insurance, reason
    assert found_form(theirs).submit().status_int == 303  # ana books first
    lost = found_form(mine).submit(expect_errors=True)  # bea loses the race
    assert lost.status_int == 409
    assert words(lost.html.select_one("p.error")) == "Otra cita acaba de ocupar ese hueco: elige otro."
    again = found_form(lost)  # the patient, type, insurance and reason as she chose them
    assert (again["patientId"].value, again["typeId"].value, again["insuranceId"].value, again["reason"].value) == (
        second_patient, "MG-PRI", "PRIV", "Dolor de rodilla")
    assert "Pablo Ortega" in words(lost.html.select_one("ul.found:not(.way-on) li"))
    way_on = offers(lost)
    assert list(way_on) == ["Siguientes huecos libres de Lucía Martín:", "A la misma hora con otro médico:"]
    assert [line for line, _ in way_on["Siguientes huecos libres de Lucía Martín:"]] == [
        f"mar {TUESDAY} {time} · Lucía Martín · Centro Reservar" for time in ("09:00", "10:00", "10:15", "10:30")] + [
        f"mié 25/11/2026 {time} · Lucía Martín · Centro Reservar" for time in ("09:00", "09:15")]
    # Pedro Gil offers first visits and takes every insurance; Rosa Soto takes only Sanitas; Luis Ramos no first visits
    assert [line for line, _ in way_on["A la misma hora con otro médico:"]] == [
        f"mar {TUESDAY} 09:30 · Pedro Gil · Norte Reservar"]
    assert lost.html.select("ul.way-on button")[0].has_attr("autofocus")  # the keyboard starts at the first offer
    assert not lost.html.select_one("input[name=q]").has_attr("autofocus")
    _, other_doctor = way_on["A la misma hora con otro médico:"][0]
    hidden = {i["name"]: i["value"] for i in other_doctor.select("input[type=hidden]")}
    assert hidden == {"csrf": hidden["csrf"], "doctorId": "GIL", "date": TUESDAY, "time": "09:30", "centerId": "C2",
                      "typeId": "MG-PRI", "patientId": second_patient, "insuranceId": "PRIV",
                      "reason": "Dolor de rodilla"}
    booked = bea.post("/desk/book", hidden)  # one click
    assert flash_of(booked) == f"Cita de Pablo Ortega reservada el {TUESDAY} a las 09:30. No se enviará ningún correo: el paciente no tiene correo."
    assert live(clinic_api) == [(int(first_patient), "MARTIN", "C1", "2026-11-24", "09:30", "MG-PRI", "SAN", "Revisión"),
                                (int(second_patient), "GIL", "C2", "2026-11-24", "09:30", "MG-PRI", "PRIV",
                                 "Dolor de rodilla")]


def test_a_new_patient_registered_before_the_slot_was_lost_is_kept_and_not_registered_twice(clinic_api, desk):
    clinic_api.book(clinic_api.new_patient(), date=TUESDAY, time="09:30", insuranceId="SAN")
    page = desk.get(SLOT)  # drawn free a moment ago: typed in and sent after the slot went
    form = new_patient_form(page)
    for name, value in {"name": "Eva", "surname": "Sanz", "nif": "10000002Q", "phone": "612345679",
                        "insuranceId": "PRIV", "reason": "Análisis"}.items():
        form[name] = value
    lost = form.submit(expect_errors=True)
    assert lost.status_int == 409
    eva = clinic_api.db().execute("SELECT id FROM patients WHERE nif = '10000002Q'").fetchone()[0]
    assert found_form(lost)["patientId"].value == str(eva)  # registered, and now the one chosen
    (line, first), = offers(lost)["Siguientes huecos libres de Lucía Martín:"][:1]
    assert line == f"mar {TUESDAY} 09:00 · Lucía Martín · Centro Reservar"
    hidden = {i["name"]: i["value"] for i in first.select("input[type=hidden]")}
    assert desk.post("/desk/book", hidden).status_int == 303
    assert live(clinic_api)[1] == (eva, "MARTIN", "C1", "2026-11-24", "09:00", "MG-REV", "PRIV", "Análisis")
    assert clinic_api.db().execute("SELECT count(*) FROM patients").fetchone()[0] == 2


def test_the_patients_other_visit_offers_no_way_on_but_to_book_over_it(clinic_api, desk):
    patient = clinic_api.new_patient()
    clinic_api.book(patient, date=TUESDAY, time="09:30", doctor="GIL")
    form = found_form(search(desk.get(SLOT), "12345678Z"))
    form["insuranceId"] = "PRIV"
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 409 and "otra cita a esa hora" in words(refused.html.select_one("p.error"))
    assert offers(refused) == {} and "acceptOverlap" in found_form(refused).fields


def test_every_wrong_field_of_the_new_patient_is_said_beside_it_and_nothing_is_written(clinic_api, desk):
    before = clinic_api.db().execute("SELECT count(*) FROM patients").fetchone()[0]
    form = new_patient_form(desk.get(SLOT))
    typed = {"name": "Eva", "nif": "1234", "phone": "12", "reason": "x" * 501}
    for name, value in typed.items():
        form[name] = value
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 400
    page = new_patient_form(refused).html
    beside = {field: words(page.find(attrs={"name": field}).find_parent("label").select_one("span.wrong"))
              for field in ("nif", "phone", "reason")}
    assert beside == {"nif": "El NIF no es válido: hay que revisar sus números y la letra.",
                      "phone": "El teléfono no es válido.", "reason": "Motivo: es demasiado largo; acórtalo."}
    assert "revisa los datos" not in refused.text
    assert all(new_patient_form(refused)[name].value == value for name, value in typed.items())
    assert clinic_api.db().execute("SELECT count(*) FROM patients").fetchone()[0] == before


def test_an_insurance_missing_is_said_beside_the_insurance(clinic_api, desk):
    clinic_api.new_patient()
    refused = found_form(search(desk.get(SLOT), "12345678Z")).submit(expect_errors=True)
    assert refused.status_int == 400
    select = found_form(refused).html.find("select", attrs={"name": "insuranceId"})
    assert words(select.find_parent("label").select_one("span.wrong")) == \
        "Este médico atiende solo algunas aseguradoras: hay que elegir una."


def test_a_nif_already_held_names_and_links_that_patient_and_offers_to_book_them(clinic_api, desk):
    patient = clinic_api.new_patient()  # Ana García, 12345678Z
    form = new_patient_form(desk.get(SLOT))
    for name, value in {"name": "Anabel", "nif": "12345678z", "insuranceId": "SAN", "reason": "Revisión"}.items():
        form[name] = value
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 409
    alert = refused.html.select_one("p.error")
    assert words(alert) == "Ya hay un paciente con ese NIF. Es Ana García: ver su ficha"
    assert alert.select_one("a")["href"] == f"/desk/patients/{patient}"
    nif = new_patient_form(refused).html.find("input", attrs={"name": "nif"})
    assert words(nif.find_parent("label").select_one("span.wrong")) == "Ya hay un paciente con ese NIF."
    assert new_patient_form(refused)["name"].value == "Anabel"  # what was typed, kept
    assert found_form(refused)["patientId"].value == patient  # and the patient who has that NIF, a click away
    assert ("desk:ana", "patient") in {(row["reader"], row["kind"]) for row in clinic_api.app.clinic.access.of_patient(
        patient)}  # the name shown was read through the one door
    assert found_form(refused).submit().status_int == 303
    assert live(clinic_api)[0][:2] == (int(patient), "MARTIN")


def test_the_nif_is_marked_required_and_a_childs_may_be_the_guardians(clinic_api, desk):
    mother = clinic_api.new_patient()
    page = desk.get(SLOT)
    nif = new_patient_form(page).html.find("input", attrs={"name": "nif"})
    label = nif.find_parent("label")
    assert nif.has_attr("required") and label.select_one("abbr.required").text == "*"
    assert words(label).startswith("NIF, NIE o pasaporte (o NIF del tutor) *")
    form = new_patient_form(page)
    for name, value in {"name": "Pablo", "nif": "12345678Z", "birthDate": "03/04/2019", "insuranceId": "SAN"}.items():
        form[name] = value
    form["underGuardian"] = True  # the NIF typed is his mother's
    assert form.submit().status_int == 303
    child = clinic_api.db().execute("SELECT nif, guardian_id FROM patients WHERE name = 'Pablo'").fetchone()
    assert tuple(child) == (None, int(mother))
    form = new_patient_form(desk.get(SLOT.replace("09:30", "10:00")))
    for name, value in {"name": "Pablo", "nif": "12345678Z", "birthDate": "03/04/2000"}.items():
        form[name] = value
    form["underGuardian"] = True
    refused = form.submit(expect_errors=True)  # 26 years old: a NIF of his own is needed
    nif = new_patient_form(refused).html.find("input", attrs={"name": "nif"})
    assert words(nif.find_parent("label").select_one("span.wrong")) == \
        "NIF: hace falta desde los 14 años (o un NIE o pasaporte)."
    assert new_patient_form(refused)["underGuardian"].checked and new_patient_form(refused)["nif"].value == "12345678Z"


def test_the_booking_page_names_the_center_and_puts_the_focus_where_the_keyboard_goes_next(clinic_api, desk):
    clinic_api.new_patient()
    page = desk.get(SLOT)
    assert page.html.h1.text == "Reservar cita en Centro"
    search_box = page.html.select_one("input[name=q]")
    assert search_box["id"] == "q" and search_box.has_attr("autofocus")  # "/" finds it too
    listed = search(page, "garcia")
    assert not listed.html.select_one("input[name=q]").has_attr("autofocus")
    assert [b.has_attr("autofocus") for b in listed.html.select("ul.found button")] == [True, False]  # book, series
    squeeze = desk.get(f"/desk/book?doctorId=GIL&date={TUESDAY}&squeeze=1&centerId=C2")
    assert squeeze.html.h1.text == "Sobrecita" and words(squeeze.html.select_one("main p")) == \
        f"Pedro Gil · {TUESDAY} · Norte"
    day = desk.get(f"/desk/day?date={TUESDAY}&centerId=C1")
    assert "1–9, el primero de esa columna" in words(day.html.select_one("p.keys-hint"))


def test_a_moves_message_names_the_doctor_and_the_center(clinic_api, desk):
    appointment = clinic_api.book(clinic_api.new_patient(), date=TUESDAY, time="09:30", insuranceId="SAN")
    page = desk.get(f"/desk/appointments/{appointment}?doctorId=GIL&date=25/11/2026")
    move = next(f for f in page.forms.values() if f.action.endswith("/move"))
    move["slot"] = "25/11/2026|10:00|GIL|C2"
    assert flash_of(move.submit()) == "Cita de Ana García movida al 25/11/2026 a las 10:00 (Pedro Gil, Norte). No se enviará ningún correo: el paciente no tiene correo."


def test_a_form_kept_across_a_login_shows_names_not_ids(clinic_api, desk, clock):
    patient = clinic_api.new_patient()
    page = search(desk.get(SLOT + "&typeId=MG-PRI"), "12345678Z")
    form = found_form(page)
    form["insuranceId"], form["reason"] = "SAN", "Revisión"
    fields = {name: value for name, value in form.submit_fields()}
    clock.moment += dt.timedelta(minutes=31)  # the session ends before she sends it
    sent = desk.post("/desk/book", fields)
    login = sent.follow()
    again = login.forms[0]
    again["name"], again["password"] = "ana", PASSWORD
    offered = again.submit().follow()
    shown = dict(zip([words(dt_) for dt_ in offered.html.select("dl dt")],
                     [words(dd) for dd in offered.html.select("dl dd")]))
    assert shown == {"Médico": "Lucía Martín", "Fecha": TUESDAY, "Hora": "09:30", "Centro": "Centro",
                     "Tipo de visita": "Primera visita", "Paciente": "Ana García", "Aseguradora": "Sanitas",
                     "Motivo": "Revisión"}
    hidden = {i["name"]: i["value"] for i in offered.html.select("form input[type=hidden]")}
    assert (hidden["doctorId"], hidden["patientId"], hidden["typeId"]) == ("MARTIN", patient, "MG-PRI")  # sent as ids
    assert offered.forms[len(offered.forms) - 1].submit().status_int == 303
    assert live(clinic_api) == [(int(patient), "MARTIN", "C1", "2026-11-24", "09:30", "MG-PRI", "SAN", "Revisión")]


def test_a_kept_moves_slot_is_spelled_out(clinic_api, desk):
    kept = clinic_api.app.accounts.keep_form("ana", "/desk/appointments/1/move", [["slot", "25/11/2026|10:00|GIL|C2"]])
    page = desk.get(f"/desk/kept/{kept}")
    assert re.sub(r"\s+", " ", page.html.select_one("dl").get_text(" ")).strip() == \
        "Hueco 25/11/2026 10:00 · Pedro Gil · Norte"
