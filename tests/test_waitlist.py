"""The waiting list (docs/design.md, "Waiting list"): patients who want an earlier slot; the desk shows,
on a freed slot and on the "free now" list, the waiting patients it fits, oldest first, and booking one
from there takes them off; entries end with their window; covered by the patient's rights."""

import datetime as dt

import pytest
import webtest
from click.testing import CliRunner

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain.rights import patient_copy, request_erasure
from _agenda.domain.waitlist import add_waiting, free_now, named, waiting, Wish
from _agenda.domain.appointments import read_appointment
from _agenda.domain.changes import book_appointment

from conftest import MONDAY, Clock, valid_dni
from test_desk import PASSWORD, log_in

TUESDAY, NEW_YEAR = dt.date(2026, 11, 24), dt.date(2026, 12, 31)


@pytest.fixture
def full_tuesday(api):
    """MARTIN's Tuesday 24/11 booked through (09:00-11:00); the appointment ids."""
    return [api.book(api.new_patient(nif=valid_dni(20 + n)), time=time)
            for n, time in enumerate(("09:00", "09:30", "10:00", "10:30"))]


def test_a_freed_slot_shows_the_waiting_patients_it_fits_oldest_first(api, full_tuesday, clock):
    clinic = api.app.clinic
    eva = api.new_patient(nif=valid_dni(1), name="Eva")
    leo = api.new_patient(nif=valid_dni(2), name="Leo")
    morning = Wish(eva, TUESDAY, NEW_YEAR, doctor_id="MARTIN", time_from="09:00", time_to="10:00", note="mañanas")
    add_waiting(clinic, morning, source="desk:ana")
    assert add_waiting(clinic, morning, source="desk:ana") == "1"  # sent twice: the same entry
    clock.moment += dt.timedelta(minutes=1)
    add_waiting(clinic, Wish(patient_id=leo, speciality_id="MG", first=TUESDAY, last=TUESDAY), source="desk:ana")
    entries = named(clinic, waiting(clinic), "desk:ana")
    assert [e["patient_name"] for e in entries] == ["Eva García", "Leo García"]
    tuesday = [fitting for slot, fitting in free_now(clinic, entries) if slot.date == TUESDAY]
    assert tuesday == []  # nothing free that day yet
    api.delete(f"/appointments/{full_tuesday[1]}")  # 09:30 frees
    api.delete(f"/appointments/{full_tuesday[3]}")  # 10:30 frees: outside Eva's times
    found = {(slot.date, slot.time): [e["patient_name"] for e in fitting] for slot, fitting in free_now(clinic, entries)}
    assert found[(TUESDAY, "09:30")] == ["Eva García", "Leo García"] and found[(TUESDAY, "10:30")] == ["Leo García"]
    clock.set(2026, 11, 24, 9, 31)  # the 09:30 cell under way takes a walk-in at the desk: no one is phoned for it
    found = {(slot.date, slot.time) for slot, _ in free_now(clinic, entries)}
    assert (TUESDAY, "09:30") not in found and (TUESDAY, "10:30") in found
    clock.set(2026, 11, 25, 8, 0)  # Leo's window has passed
    assert [e["patient_name"] for e in named(clinic, waiting(clinic), "desk:test")] == ["Eva García"]


def test_the_desk_lights_the_freed_slot_and_booking_from_it_takes_the_patient_off(api, full_tuesday):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    eva = api.new_patient(nif=valid_dni(1), name="Eva", phone="699000111")
    page = desk.get("/desk/waitlist")
    form = page.forms[[f.action for f in page.forms.values()].index("/desk/waitlist")]
    form["doctorId"], form["dateFrom"], form["dateTo"] = "MARTIN", "24/11/2026", "31/12/2026"
    form["q"], form["note"] = "eva garcia", "puede venir con una hora de aviso"
    found = desk.post("/desk/waitlist/search", dict(form.submit_fields()))  # "Buscar": what was typed stays
    form = found.forms[[f.action for f in found.forms.values()].index("/desk/waitlist")]
    assert form["patientId"].value == str(eva) and form["note"].value == "puede venir con una hora de aviso"
    assert form.submit().follow().html.find("p", class_="flash").text == "Eva García está en la lista de espera."
    api.delete(f"/appointments/{full_tuesday[2]}")  # 10:00 frees
    day = desk.get("/desk/day?date=24/11/2026&centerId=C1")
    lit = [" ".join(a.text.split()) for a in day.html.select(".timeline a.free.waited")]
    assert lit == ["10:00 + libre · 1 en espera"]
    listed = desk.get("/desk/waitlist").html.select_one("ul.free-now").get_text(" ")
    assert "24/11/2026 10:00" in listed and "Eva García" in listed and "699 00 01 11" in " ".join(listed.split())
    slot = desk.get(day.html.select_one(".timeline a.free.waited")["href"])
    take = slot.forms[[f.fields.get("waitlistId") is not None for f in slot.forms.values()].index(True)]
    booked = take.submit()
    assert booked.follow().html.find("p", class_="flash").text.startswith("Cita de Eva García reservada el 24/11/2026")
    assert waiting(api.app.clinic) == [] and "Nadie espera." in desk.get("/desk/waitlist").text
    assert api.db().execute("SELECT ended_why FROM waitlist").fetchone()[0] == "booked"


def test_the_waiting_table_says_the_day_added_the_center_by_name_and_the_phone_whole(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    eva = api.new_patient(nif=valid_dni(1), name="Eva", phone="699000111")
    add_waiting(api.app.clinic, Wish(patient_id=eva, doctor_id="MARTIN", center_id="C1", first=TUESDAY, last=NEW_YEAR),
                source="desk:ana")
    row = desk.get("/desk/waitlist").html.select_one("table tbody tr")
    since, patient, phone, doctor = [" ".join(td.get_text(" ").split()) for td in row.select("td")][:4]
    assert (since, patient, doctor) == ("23/11/2026", "Eva García", "Lucía Martín · Centro")  # not 2026-11-23, C1
    assert "phone" in row.select("td")[2]["class"] and phone == "699 00 01 11"  # one line: .phone does not wrap


@pytest.mark.parametrize("fields, said", [
    ({"doctorId": "", "specialityId": ""}, "Elige un médico o una especialidad"),
    ({"dateTo": "20/11/2026"}, "Las fechas:"),
    ({"timeFrom": "12:00", "timeTo": "09:00"}, "Las horas:"),
    ({"patientId": "99"}, "Ese paciente no existe."),
    ({"patientId": ""}, "Paciente: falta este dato."),
])
def test_a_bad_entry_is_refused_in_spanish_and_what_was_typed_stays(api, fields, said):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    api.new_patient()
    page = desk.get("/desk/waitlist")
    typed = {"csrf": page.html.find("input", attrs={"name": "csrf"})["value"], "patientId": "1", "doctorId": "MARTIN",
             "dateFrom": "24/11/2026", "dateTo": "31/12/2026", "note": "tardes", **fields}
    refused = desk.post("/desk/waitlist", typed, expect_errors=True)
    assert refused.status_int in (400, 404) and refused.html.find("p", class_="error").text.startswith(said)
    assert refused.html.find("input", attrs={"name": "note"})["value"] == "tardes"
    assert api.db().execute("SELECT count(*) FROM waitlist").fetchone()[0] == 0


def test_the_patients_copy_holds_their_entries_and_erasure_ends_them(api):
    clinic = api.app.clinic
    patient = api.new_patient()
    add_waiting(clinic, Wish(patient_id=patient, doctor_id="MARTIN", first=TUESDAY, last=NEW_YEAR, note="tardes"),
                source="desk:ana")
    copy = patient_copy(clinic, patient, "desk:luis")
    assert [(w["doctor_id"], w["note"]) for w in copy["waitingList"]] == [("MARTIN", "tardes")]
    done = request_erasure(clinic, patient, "desk:luis", "desk:luis")
    assert waiting(clinic) == [] and api.db().execute("SELECT ended_why FROM waitlist").fetchone()[0] == "erased"
    assert done["anonymised"]  # never seen: anonymised at once, the entry's note with the rest
    assert api.db().execute("SELECT note FROM waitlist").fetchone()[0] is None


def test_agenda_waitlist_add_list_and_remove(api, full_tuesday, db_path):
    api.new_patient()
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})

    def invoke(*args):
        return runner.invoke(agenda.cli, ["waitlist", *args], obj={"now": Clock(MONDAY)})
    added = invoke("add", "--nif", "12345678Z", "--doctor", "MARTIN", "--from", "24/11/2026", "--to", "24/11/2026",
                   "--times", "09:00-10:00", "--note", "mañanas")
    assert added.exit_code == 0 and added.output.startswith("Waiting list entry 1: patient ")
    api.delete(f"/appointments/{full_tuesday[0]}")
    listed = invoke("list")
    assert listed.exit_code == 0 and listed.output.splitlines() == [
        "1: Ana García +34612345678, MARTIN, 24/11/2026–24/11/2026, 09:00–10:00 (mañanas)",
        "Free 24/11/2026 09:00 MARTIN: fits 1"]
    assert invoke("remove", "1").output == "Removed waiting list entry 1.\n"
    gone = invoke("remove", "1")
    assert gone.exit_code == 1 and "no one waiting with that id" in gone.output
    assert invoke("list").output == "No one is waiting.\n"


@pytest.fixture
def eva_later(api):
    """Eva's visit with MARTIN on 15/12/2026 09:00 (insured by Sanitas), booked at the desk: (Eva, its id)."""
    eva = api.new_patient(nif=valid_dni(1), name="Eva")
    later = book_appointment(api.app.clinic,
                             Visit(patient_id=eva, doctor_id="MARTIN", insurance_id="SAN", reason="Revisión"),
                             day=dt.date(2026, 12, 15), time_text="09:00", source="desk:ana")
    return eva, later


def test_an_entry_bringing_a_visit_forward_takes_its_doctor_and_insurance_and_only_earlier_slots(api, eva_later):
    clinic, (eva, later) = api.app.clinic, eva_later
    entry = add_waiting(clinic, Wish(patient_id=eva, appointment_id=later, first=TUESDAY, last=NEW_YEAR),
                        source="desk:ana")
    (waiting_now,) = waiting(clinic)
    assert (waiting_now["doctor_id"], waiting_now["insurance_id"], waiting_now["appointment_id"]) == (
        "MARTIN", "SAN", int(later))
    assert (waiting_now["forward_date"], waiting_now["forward_time"]) == ("2026-12-15", "09:00")
    offered = {(slot.date, slot.time) for slot, _ in free_now(clinic, waiting(clinic), days=30, most=500)}
    assert (dt.date(2026, 12, 14), "10:30") in offered and (dt.date(2026, 12, 15), "08:30") not in offered
    assert not {(day, time) for day, time in offered if (day, time) >= (dt.date(2026, 12, 15), "09:00")}
    assert add_waiting(clinic, Wish(patient_id=eva, appointment_id=later, first=TUESDAY, last=NEW_YEAR),
                       source="desk:ana") == entry  # sent twice: the one waiting
    other = api.new_patient(nif=valid_dni(2), name="Leo")
    for asked, rule in (({"patient_id": other, "appointment_id": later}, "brings_forward"),  # not his
                        ({"patient_id": eva, "appointment_id": "999"}, "brings_forward"),
                        ({"patient_id": eva, "appointment_id": later, "doctor_id": "RUIZ"}, "brings_forward_area")):
        with pytest.raises(agenda.ClinicError) as refused:
            add_waiting(clinic, Wish(first=TUESDAY, last=NEW_YEAR, **asked), source="desk:ana")
        assert (refused.value.rule, refused.value.field) == (rule, "appointmentId")
    api.delete(f"/appointments/{later}")
    assert waiting(clinic)[0]["forward_date"] is None  # cancelled since: a plain entry, any slot of its window


def test_booking_from_the_entry_moves_the_visit_it_brings_forward_and_ends_it_in_one_transaction(api, eva_later):
    clinic, (eva, later) = api.app.clinic, eva_later
    entry = add_waiting(clinic, Wish(patient_id=eva, appointment_id=later, first=TUESDAY, last=NEW_YEAR),
                        source="desk:ana")
    api.book(api.new_patient(nif=valid_dni(2)), time="10:00")  # 24/11 10:00 taken: a refused move changes nothing
    with pytest.raises(agenda.ClinicError):
        book_appointment(clinic, Visit(patient_id=eva, doctor_id="MARTIN"), day=TUESDAY, time_text="10:00",
                         waitlist_id=entry, source="desk:ana")
    assert read_appointment(clinic, later)["date"] == "2026-12-15" and len(waiting(clinic)) == 1
    moved = book_appointment(clinic, Visit(patient_id=eva, doctor_id="MARTIN", insurance_id="SAN"), day=TUESDAY,
                             time_text="10:30", waitlist_id=entry, source="desk:ana")
    assert moved == later  # the same visit, its id kept
    record = read_appointment(clinic, later)
    assert (record["date"], record["start"], record["insurance_id"], record["reason"]) == (
        "2026-11-24", "10:30", "SAN", "Revisión")
    assert api.db().execute("SELECT count(*) FROM appointments WHERE patient_id = ? AND status != 'cancelled'",
                            (eva,)).fetchone()[0] == 1
    assert tuple(api.db().execute("SELECT ended_why, appointment_id FROM waitlist WHERE id = ?", (entry,)).fetchone()) \
        == ("booked", int(later))
    actions = [row[0] for row in api.db().execute("SELECT action FROM events WHERE id > (SELECT max(id) FROM events"
                                                  " WHERE action = 'appointment.booked' AND entity_id = ?)"
                                                  " AND entity IN ('appointment', 'waitlist') AND action !="
                                                  " 'appointment.booked' ORDER BY id", (later,))]
    assert actions == ["waitlist.added", "appointment.moved", "waitlist.booked"]
    again = book_appointment(clinic, Visit(patient_id=eva, doctor_id="MARTIN", insurance_id="SAN"), day=TUESDAY,
                             time_text="10:30", waitlist_id=entry, source="desk:ana")  # a double click: the same visit
    assert again == later and read_appointment(clinic, later)["start"] == "10:30"


def test_the_desk_adds_a_patient_found_by_name_with_the_visit_to_bring_forward_and_books_it_in_two_clicks(
        api, eva_later, full_tuesday):
    eva, later = eva_later
    api.new_patient(nif=valid_dni(2), name="Eva", surname="Gómez")
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    page = desk.get("/desk/waitlist")
    form = page.forms[[f.action for f in page.forms.values()].index("/desk/waitlist")]
    assert not [b for b in page.html.select("form.waiting-add button") if b.text == "Añadir a la lista de espera"]
    form["q"], form["dateFrom"], form["dateTo"] = "eva", "24/11/2026", "31/12/2026"
    two = desk.post("/desk/waitlist/search", dict(form.submit_fields()))  # two Evas: each with a button
    chosen = [b for b in two.html.select("ul.found button") if "12345678Z" not in b.parent.text]
    form = two.forms[[f.action for f in two.forms.values()].index("/desk/waitlist")]
    assert len(two.html.select("ul.found li")) == 2 and chosen
    picked = desk.post("/desk/waitlist/search", {**dict(form.submit_fields()), "patientId": str(eva)})
    form = picked.forms[[f.action for f in picked.forms.values()].index("/desk/waitlist")]
    assert form["dateFrom"].value == "24/11/2026" and "Eva García" in picked.html.select_one("p.chosen").text
    assert [o.text for o in picked.html.select("select[name=appointmentId] option")] == [
        "ninguna: una cita nueva", "15/12/2026 09:00 · Lucía Martín"]
    form["appointmentId"] = later
    assert form.submit().follow().html.find("p", class_="flash").text == "Eva García está en la lista de espera."
    api.delete(f"/appointments/{full_tuesday[3]}")  # 24/11 10:30 frees
    listed = desk.get("/desk/waitlist").html.select_one("ul.free-now")
    assert "adelanta su cita del 15/12/2026 09:00" in listed.text
    link = listed.select_one("a")["href"]
    assert f"patientId={eva}" in link and "waitlistId=1" in link and "insuranceId=SAN" in link
    booking = desk.get(link)  # the patient chosen, the insurance too: no search again
    take = booking.forms[[f.fields.get("waitlistId") is not None and f.action == "/desk/book"
                          for f in booking.forms.values()].index(True)]
    assert take["patientId"].value == str(eva) and take["waitlistId"].value == "1"
    assert "Se moverá su cita del 15/12/2026 09:00 a este hueco" in booking.text
    assert take.submit().follow().html.find("p", class_="flash").text.startswith("Cita de Eva García reservada el 24/11")
    assert [tuple(row) for row in api.db().execute(
        "SELECT id, date, time FROM appointments WHERE patient_id = ? AND status != 'cancelled'", (eva,))] == [
        (int(later), "2026-11-24", "10:30")]
    assert waiting(api.app.clinic) == []


def test_agenda_waitlist_add_brings_a_visit_forward(api, eva_later, db_path):
    eva, later = eva_later
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})

    def invoke(*args):
        return runner.invoke(agenda.cli, ["waitlist", *args], obj={"now": Clock(MONDAY)})
    added = invoke("add", "--nif", valid_dni(1), "--brings-forward", later, "--from", "24/11/2026", "--to", "11/12/2026")
    assert added.exit_code == 0 and added.output == f"Waiting list entry 1: patient {eva}, to bring appointment {later} forward.\n"
    assert invoke("list").output.splitlines()[0] == (
        f"1: Eva García +34612345678, MARTIN, 24/11/2026–11/12/2026, brings forward {later} (15/12/2026 09:00)")
    wrong = invoke("add", "--nif", valid_dni(1), "--brings-forward", "77", "--from", "24/11/2026", "--to", "11/12/2026")
    assert wrong.exit_code == 1 and "the appointment to bring forward must be a live one of that patient" in wrong.output
    assert "--brings-forward" in runner.invoke(agenda.cli, ["waitlist", "add", "-h"]).output


def test_the_booking_form_from_the_list_has_the_patient_and_the_entrys_insurance_chosen(api):
    clinic = api.app.clinic
    leo = api.new_patient(nif=valid_dni(2), name="Leo")
    add_waiting(clinic,
                Wish(leo, TUESDAY, TUESDAY, doctor_id="RUIZ", insurance_id="SAN", time_from="09:00", time_to="09:30"),
                source="desk:ana")
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    link = desk.get("/desk/waitlist").html.select_one("ul.free-now a")["href"]
    booking = desk.get(link)
    take = booking.forms[[f.fields.get("waitlistId") is not None and f.action == "/desk/book"
                          for f in booking.forms.values()].index(True)]
    assert (take["patientId"].value, take["insuranceId"].value) == (leo, "SAN")
    assert "En espera y encajan con este hueco" not in booking.text  # Leo, chosen already, is not listed twice
    assert take.submit().status_int == 303 and waiting(clinic) == []
    assert [tuple(row) for row in api.db().execute("SELECT doctor_id, time, insurance_id FROM appointments")] == [
        ("RUIZ", "09:00", "SAN")]
