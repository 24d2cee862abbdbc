"""A booked visit's details changed at the desk ("Details of a booked visit"), through webtest: its reason,
insurance and reception's note change with an event each and no message; another visit type goes through the one
door (its length, its holds, unconfirmed, one update to the patient) or is refused in words, changing nothing; a
patient's administrative note shows on their visits as text, leaves with their erasure and is in their copy."""

import csv
import json

import pytest
import webtest

from agenda import ClinicError
from _agenda.domain import booking
from _agenda.domain.changes import change_details, confirm_appointment
from _agenda.domain.counter import mark_attendance
from _agenda.domain.rights import patient_copy, request_erasure, retention_run
from _agenda.files.open_formats import export_agenda

from test_booking import Recorded, unchanged
from test_desk import PASSWORD, log_in

# MARTIN (15-minute grid) takes Privado and Adeslas, and offers a follow-up of 15 minutes, a first visit of 30
# with a pause of 10, and an ultrasound scan of 20 that needs the one machine, which GIL's scans need too.
CATALOG = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to,pause,needs,category,types,room
center,C1,Centro,,,,,,,,,,,,,
speciality,MG,Medicina general,,,,,,,,,,,,,
insurance,PRIV,Privado,,,,,,,,,,,,,
insurance,ADES,Adeslas,,,,,,,,,,,,,
insurance,MAPF,Mapfre,,,,,,,,,,,,,
type,MG-REV,Revisión,MG,,,,,15,,,,,,,
type,MG-PRI,Primera visita,MG,,,,,30,,,10,,,,
type,MG-ECO,Ecografía,MG,,,,,20,,,,eco,,,
machine,C1-ECO,Ecógrafo,,C1,,,,,,,,,eco,,
doctor,MARTIN,Lucía Martín,MG,C1,PRIV;ADES,mon-fri,09:00-11:00,15,,,,,,MG-REV;MG-PRI;MG-ECO,
doctor,GIL,Pedro Gil,MG,C1,,mon-fri,09:00-11:00,15,,,,,,MG-ECO;MG-REV,
"""


@pytest.fixture
def clinic(make_api):
    """(the caller's api, the desk logged in as ana) of CATALOG's clinic, on Monday 23/11/2026 at 08:00."""
    api = make_api(csv=CATALOG)
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    assert log_in(desk).status_int == 303
    return api, desk


def booked(api, time="09:00", kind="MG-REV", doctor="MARTIN", patient=None, confirmed=False):
    patient = patient or api.new_patient(email="ana@example.com")
    appointment = api.book(patient, time=time, doctor=doctor, specialityId=kind, insuranceId="PRIV")
    if confirmed:
        confirm_appointment(api.app.clinic, appointment, True)
    return appointment


def details_form(desk, appointment):
    page = desk.get(f"/desk/appointments/{appointment}")
    return page, next(form for form in page.forms.values() if form.action.endswith("/details"))


def row(api, appointment):
    return dict(api.db().execute("SELECT * FROM appointments WHERE id = ?", (appointment,)).fetchone())


def updates(api, appointment):
    return api.db().execute("SELECT count(*) FROM outbox WHERE appointment_id = ? AND kind = 'update'",
                            (appointment,)).fetchone()[0]


def actions(api, appointment):
    return [tuple(event) for event in api.db().execute(
        "SELECT action, source FROM events WHERE entity = 'appointment' AND entity_id = ? ORDER BY id",
        (str(appointment),))][1:]  # after the booking


def test_reason_insurance_and_note_change_each_recorded_keeping_the_visit_confirmed_and_telling_nothing(clinic):
    api, desk = clinic
    appointment = booked(api, confirmed=True)
    told = api.db().execute("SELECT count(*) FROM outbox").fetchone()[0]
    _, form = details_form(desk, appointment)
    assert form["reason"].value == "Revisión" and form["insuranceId"].value == "PRIV"
    assert [value for value, _, _ in form["insuranceId"].options] == ["", "ADES", "PRIV"]  # the doctor's, by name
    form["reason"], form["insuranceId"], form["note"] = "Control anual", "ADES", "Llamar antes: trae informes"
    page = form.submit().follow()
    assert page.html.find(class_="flash").text == ("Datos de la cita guardados. No se envía ningún correo: el cambio"
                                                    " no altera lo que se le comunicó.")
    after = row(api, appointment)
    assert (after["reason"], after["insurance_id"], after["note"], after["status"]) == (
        "Control anual", "ADES", "Llamar antes: trae informes", "confirmed")
    assert api.db().execute("SELECT count(*) FROM outbox").fetchone()[0] == told  # nothing told changed
    assert actions(api, appointment)[1:] == [("appointment.reason_changed", "desk:ana"),
                                             ("appointment.insurance_changed", "desk:ana"),
                                             ("appointment.note_changed", "desk:ana")]
    history = page.html.find("h2", string="Historial").find_next("table").text
    assert all(words in history for words in ("motivo cambiado", "aseguradora cambiada", "nota de recepción cambiada"))
    _, form = details_form(desk, appointment)
    form.submit().follow()  # saved as it is: nothing changed, nothing recorded
    assert len(actions(api, appointment)) == 4
    caller = api.get(f"/appointments/{appointment}").json  # the caller never sees reception's note
    assert "Llamar antes" not in json.dumps(caller) and caller["extraData"]["insuranceId"] == "ADES"


def test_a_type_that_fits_goes_through_the_door_its_length_and_holds_rederived_unconfirmed_with_one_update(
        clinic, monkeypatch):
    api, desk = clinic
    appointment = booked(api, confirmed=True)
    recorded = Recorded(booking.CHANNELS)
    monkeypatch.setattr(booking, "CHANNELS", recorded)
    page, form = details_form(desk, appointment)
    assert [value for value, _, _ in form["typeId"].options] == ["MG-REV", "MG-PRI", "MG-ECO"]  # both fit at 09:00
    form["typeId"] = "MG-ECO"
    assert "Datos de la cita guardados." in form.submit().follow().text
    after = row(api, appointment)
    assert (after["type_id"], after["end_time"], after["pause"], after["status"], after["confirmed_at"]) == (
        "MG-ECO", "09:20", 0, "booked", None)
    assert [tuple(hold) for hold in api.db().execute("SELECT resource_id, time, until FROM holds WHERE"
                                                     " appointment_id = ?", (appointment,))] == [("C1-ECO", "09:00", "09:20")]
    assert updates(api, appointment) == 1 and recorded.asked == ["desk retype"]
    assert actions(api, appointment)[-1] == ("appointment.retyped", "desk:ana")
    _, form = details_form(desk, appointment)
    form["typeId"] = "MG-PRI"
    form.submit()
    after = row(api, appointment)
    assert (after["type_id"], after["end_time"], after["busy_until"]) == ("MG-PRI", "09:30", "09:40")
    assert api.db().execute("SELECT count(*) FROM holds WHERE appointment_id = ?", (appointment,)).fetchone()[0] == 0
    assert updates(api, appointment) == 2
    assert "tipo de visita cambiado" in desk.get(f"/desk/appointments/{appointment}").text


def test_a_type_that_does_not_fit_is_not_offered_and_refused_in_words_with_what_was_typed_changing_nothing(
        clinic, db_path):
    api, desk = clinic
    appointment = booked(api)
    booked(api, time="09:30", patient=api.new_patient(nif="00000001R", name="Eva"))  # a first visit runs into it
    booked(api, doctor="GIL", kind="MG-ECO", patient=api.new_patient(nif="00000002W", name="Iker"))  # the machine
    _, form = details_form(desk, appointment)
    assert [value for value, _, _ in form["typeId"].options] == ["MG-REV"]  # neither fits: only the visit's own
    before = unchanged(db_path)
    for kind, words in (("MG-PRI", "llega a la cita de las 09:30"), ("MG-ECO", "Ecógrafo")):
        _, form = details_form(desk, appointment)
        form["reason"], form["note"] = "Dolor de espalda", "avisar a su hija"
        form["typeId"].force_value(kind)  # sent by hand, or offered before another visit took the time
        page = form.submit(expect_errors=True)
        assert page.status_int == 409 and words in page.html.find(class_="error").text
        kept = next(form for form in page.forms.values() if form.action.endswith("/details"))
        assert (kept["reason"].value, kept["note"].value, kept["typeId"].value) == (
            "Dolor de espalda", "avisar a su hija", kind)
        assert unchanged(db_path) == before


def test_an_insurance_the_doctor_does_not_take_or_none_where_they_keep_a_list_is_refused_beside_it(clinic, db_path):
    api, desk = clinic
    appointment = booked(api)
    before = unchanged(db_path)
    for insurance, status, words in (("MAPF", 409, "no atiende esa aseguradora"),
                                     ("", 400, "solo algunas aseguradoras")):
        _, form = details_form(desk, appointment)
        form["insuranceId"].force_value(insurance)
        form["reason"] = "Otro motivo"
        page = form.submit(expect_errors=True)
        assert page.status_int == status and words in page.html.find(class_="wrong").text
        assert next(form for form in page.forms.values() if form.action.endswith("/details"))["reason"].value == \
            "Otro motivo"
        assert unchanged(db_path) == before
    with pytest.raises(ClinicError) as refused:
        change_details(api.app.clinic, appointment, insurance_id="NOPE", source="desk:ana")
    assert refused.value.code == "INSURANCE_NOT_FOUND" and unchanged(db_path) == before


HOSTILE = '=HYPERLINK("http://x.example","prefiere mañanas") <b onmouseover="x()">avisar a su hija</b>'
VISIT = '<script>alert("trae informes")</script>'


def test_a_patients_note_shows_on_their_visits_as_text_is_in_their_copy_and_leaves_with_their_erasure(
        clinic, clock, tmp_path):
    api, desk = clinic
    patient = api.new_patient()
    page = desk.get(f"/desk/patients/{patient}")
    form = next(form for form in page.forms.values() if form.action == f"/desk/patients/{patient}")
    form["note"] = HOSTILE
    assert "Nota (nada clínico)" in page.text  # the field says what it is not for
    form.submit().follow()
    appointment = booked(api, patient=patient)
    _, details = details_form(desk, appointment)
    details["note"] = VISIT
    details.submit()
    page = desk.get(f"/desk/appointments/{appointment}")
    assert page.html.find(class_="patient-note").text == HOSTILE and "<b onmouseover" not in page.text  # text only
    assert page.html.find(class_="visit-note").text == VISIT and "<script>alert" not in page.text
    copy = patient_copy(api.app.clinic, patient, "cli:test")
    assert copy["patient"]["note"] == HOSTILE and copy["appointments"][0]["note"] == VISIT
    export_agenda(api.app.clinic, tmp_path / "out", "cli:test")
    with open(tmp_path / "out" / "patients.csv", encoding="utf-8-sig", newline="") as sheet:
        line, = [line for line in csv.DictReader(sheet)]
    assert line["note"] == "'" + HOSTILE  # a cell a spreadsheet shows, never runs
    clock.set(2026, 11, 25)
    done = request_erasure(api.app.clinic, patient, "cli", "cli:test")
    clock.set(done["erasable_from"].year, done["erasable_from"].month, done["erasable_from"].day)
    retention_run(api.app.clinic, "cli")
    assert api.db().execute("SELECT note FROM patients WHERE id = ?", (patient,)).fetchone()[0] is None
    assert api.db().execute("SELECT note FROM appointments WHERE id = ?", (appointment,)).fetchone()[0] is None
    stored = " ".join(str(value) for event in api.db().execute("SELECT before, after FROM events") for value in event)
    assert "prefiere mañanas" not in stored and "trae informes" not in stored


def test_a_patient_already_at_the_counter_keeps_their_arrival_when_their_visit_changes_type(clinic, clock):
    api, _ = clinic
    appointment = booked(api)
    clock.set(2026, 11, 24, 8, 50)
    mark_attendance(api.app.clinic, appointment, "arrived", "desk:ana")
    change_details(api.app.clinic, appointment, type_id="MG-PRI", source="desk:ana")
    after = row(api, appointment)
    assert (after["type_id"], after["end_time"], after["attendance"]) == ("MG-PRI", "09:30", "arrived")
    assert after["arrived_at"] is not None
