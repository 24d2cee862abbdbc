"""The waiting list (docs/design.md, "Waiting list"): patients who want an earlier slot; the desk shows,
on a freed slot and on the "free now" list, the waiting patients it fits, oldest first, and booking one
from there takes them off; entries end with their window; covered by the patient's rights."""

import datetime as dt

import pytest
import webtest
from click.testing import CliRunner

import agenda
from _agenda.rights import patient_copy, request_erasure
from _agenda.waitlist import add_waiting, free_now, named, waiting

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
    add_waiting(clinic, patient_id=eva, doctor_id="MARTIN", first=TUESDAY, last=NEW_YEAR, time_from="09:00",
                time_to="10:00", note="mañanas", source="desk:ana")
    assert add_waiting(clinic, patient_id=eva, doctor_id="MARTIN", first=TUESDAY, last=NEW_YEAR, time_from="09:00",
                       time_to="10:00", note="mañanas", source="desk:ana") == "1"  # sent twice: the same entry
    clock.moment += dt.timedelta(minutes=1)
    add_waiting(clinic, patient_id=leo, speciality_id="MG", first=TUESDAY, last=TUESDAY, source="desk:ana")
    entries = named(clinic, waiting(clinic), "desk:ana")
    assert [e["patient_name"] for e in entries] == ["Eva García", "Leo García"]
    tuesday = [fitting for slot, fitting in free_now(clinic, entries) if slot.date == TUESDAY]
    assert tuesday == []  # nothing free that day yet
    api.delete(f"/appointments/{full_tuesday[1]}")  # 09:30 frees
    api.delete(f"/appointments/{full_tuesday[3]}")  # 10:30 frees: outside Eva's times
    found = {(slot.date, slot.time): [e["patient_name"] for e in fitting] for slot, fitting in free_now(clinic, entries)}
    assert found[(TUESDAY, "09:30")] == ["Eva García", "Leo García"] and found[(TUESDAY, "10:30")] == ["Leo García"]
    clock.set(2026, 11, 25, 8, 0)  # Leo's window has passed
    assert [e["patient_name"] for e in named(clinic, waiting(clinic), "desk:test")] == ["Eva García"]


def test_the_desk_lights_the_freed_slot_and_booking_from_it_takes_the_patient_off(api, full_tuesday):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    eva = api.new_patient(nif=valid_dni(1), name="Eva", phone="699000111")
    page = desk.get("/desk/waitlist")
    form = page.forms[[f.action for f in page.forms.values()].index("/desk/waitlist")]
    form["nif"], form["doctorId"], form["dateFrom"], form["dateTo"] = valid_dni(1), "MARTIN", "24/11/2026", "31/12/2026"
    form["note"] = "puede venir con una hora de aviso"
    assert form.submit().follow().html.find("p", class_="flash").text == "Eva García está en la lista de espera."
    api.delete(f"/appointments/{full_tuesday[2]}")  # 10:00 frees
    day = desk.get("/desk/day?date=24/11/2026&centerId=C1")
    lit = [" ".join(a.text.split()) for a in day.html.select(".timeline a.free.waited")]
    assert lit == ["10:00 + libre · ⌛ 1 en espera"]
    listed = desk.get("/desk/waitlist").html.select_one("ul.free-now").get_text(" ")
    assert "24/11/2026 10:00" in listed and "Eva García" in listed and "699 00 01 11" in " ".join(listed.split())
    slot = desk.get(day.html.select_one(".timeline a.free.waited")["href"])
    take = slot.forms[[f.fields.get("waitlistId") is not None for f in slot.forms.values()].index(True)]
    booked = take.submit()
    assert booked.follow().html.find("p", class_="flash").text.startswith("Cita de Eva García reservada el 24/11/2026")
    assert waiting(api.app.clinic) == [] and "Nadie espera." in desk.get("/desk/waitlist").text
    assert api.db().execute("SELECT ended_why FROM waitlist").fetchone()[0] == "booked"


@pytest.mark.parametrize("fields, said", [
    ({"doctorId": "", "specialityId": ""}, "Elige un médico o una especialidad"),
    ({"dateTo": "20/11/2026"}, "Las fechas:"),
    ({"timeFrom": "12:00", "timeTo": "09:00"}, "Las horas:"),
    ({"nif": "00000001R"}, "Ese paciente no existe."),
])
def test_a_bad_entry_is_refused_in_spanish_and_what_was_typed_stays(api, fields, said):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    api.new_patient()
    page = desk.get("/desk/waitlist")
    typed = {"csrf": page.html.find("input", attrs={"name": "csrf"})["value"], "nif": "12345678Z", "doctorId": "MARTIN",
             "dateFrom": "24/11/2026", "dateTo": "31/12/2026", "note": "tardes", **fields}
    refused = desk.post("/desk/waitlist", typed, expect_errors=True)
    assert refused.status_int in (400, 404) and refused.html.find("p", class_="error").text.startswith(said)
    assert refused.html.find("input", attrs={"name": "note"})["value"] == "tardes"
    assert api.db().execute("SELECT count(*) FROM waitlist").fetchone()[0] == 0


def test_the_patients_copy_holds_their_entries_and_erasure_ends_them(api):
    clinic = api.app.clinic
    patient = api.new_patient()
    add_waiting(clinic, patient_id=patient, doctor_id="MARTIN", first=TUESDAY, last=NEW_YEAR, note="tardes",
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
