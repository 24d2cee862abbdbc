"""The slot rules hold for visit types, pauses, rooms and machines (docs/design.md, "Slot states", "Visit types"):
what the property over generated clinics found, one example each."""

import datetime as dt

import pytest

from _agenda.values import ClinicError
from conftest import seed, valid_dni, write_csv

HEADER = ("kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to,pause,needs,category,"
          "types,room\n")


def row(kind, key="", name="", speciality="", center="", days="", hours="", slot="", first="", last="", pause="",
        needs="", category="", types="", room=""):
    return ",".join([kind, key, name, speciality, center, "", days, hours, slot, first, last, pause, needs, category,
                     types, room])


# What the property found, one example each

def runs_past_the_grid(slot="30", types="LONG", closed=True):
    """D1 works 09:00-09:40 on a grid of `slot` minutes, offering `types` (LONG: a visit of 40 minutes, on a
    grid of 30 one slot and 10 minutes more); on Tuesday 24/11 a meeting closes 09:30-09:40, when `closed`."""
    return HEADER + "\n".join([
        row("center", "C1", "Centro"), row("speciality", "MG", "Medicina general"),
        row("type", "LONG", "Larga", "MG", slot="40"),
        row("doctor", "D1", "Dr D1", "MG", "C1", "mon-fri", "09:00-09:40", slot, types=types),
        *([row("closed", "", "Reunión", hours="09:30-09:40", first="24/11/2026")] if closed else [])]) + "\n"


def test_a_visit_that_runs_past_the_grids_last_slot_into_a_closure_is_neither_offered_nor_booked(make_api):
    """Hours of 09:00-09:40 by 30 minutes have one slot; a visit of 40 minutes from 09:00 fits the hours, and its
    last 10 minutes, which no slot holds, were not checked: it was offered and booked over the closure."""
    api = make_api(csv=runs_past_the_grid())
    patient = api.new_patient()
    days = "startDate=23/11/2026&endDate=25/11/2026"
    assert [s["date"] for s in api.get(f"/availabilities?specialityId=LONG&{days}").json["data"]] == [
        "23/11/2026", "25/11/2026"]  # on Tuesday the closure takes its last 10 minutes
    refused = api.post("/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "D1", "patientId": patient})
    assert (refused.status_int, refused.json["error"]["reason"]) == (409, "closed")
    with pytest.raises(ClinicError) as desk_refusal:
        api.app.clinic.book(day=dt.date(2026, 11, 24), time_text="09:00", doctor_id="D1", patient_id=patient,
                            source="desk:ana")
    assert desk_refusal.value.extra["reason"] == "closed"
    assert api.post("/appointments", {"date": "25/11/2026", "time": "09:00", "doctorId": "D1",
                                      "patientId": patient}).status_int == 201


def test_a_visit_that_runs_past_the_grids_last_slot_into_another_visit_is_neither_offered_nor_booked(
        make_api, db_path, tmp_path):
    """A visit made at 09:30 when the grid was of 10 minutes stays when the hours become one slot of 30 and 10
    minutes more: a visit of 40 from 09:00 would run into it, which no slot of the new grid shows."""
    api = make_api(csv=runs_past_the_grid(slot="10", types="", closed=False))
    patient = api.new_patient()
    assert api.post("/appointments", {"date": "24/11/2026", "time": "09:30", "doctorId": "D1",
                                      "patientId": patient}).status_int == 201
    seed(db_path, write_csv(tmp_path, runs_past_the_grid(closed=False), "again.csv"))
    days = "startDate=24/11/2026&endDate=25/11/2026"
    assert [s["date"] for s in api.get(f"/availabilities?specialityId=LONG&{days}").json["data"]] == ["25/11/2026"]
    other = api.new_patient(nif=valid_dni(7), phone="600000007")
    refused = api.post("/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "D1", "patientId": other})
    assert (refused.status_int, refused.json["error"]["reason"]) == (409, "taken")


TWO_KINDS_OF_VISIT = HEADER + "\n".join([
    row("center", "C1", "Centro"), row("speciality", "MG", "Medicina general"),
    row("type", "MG-A", "Primera", "MG", slot="30"), row("type", "MG-B", "Revisión", "MG", slot="15"),
    *[row("doctor", doctor, f"Dr {doctor}", "MG", "C1", "mon-fri", "09:00-12:00", "15", types=types)
      for doctor, types in (("D1", "MG-A"), ("D2", "MG-B"), ("D3", "MG-B;MG-A"), ("D4", ""))]]) + "\n"


@pytest.mark.parametrize("doctor, moved", [("D2", False), ("D4", False), ("D3", True)])
def test_a_move_to_another_doctor_who_does_not_offer_the_visits_type_there_is_refused(make_api, doctor, moved):
    """The desk moved a first visit of 30 minutes to a doctor who offers only follow-ups, or no types at all,
    and it kept its type there; a doctor who offers it (not first) takes it with its length."""
    api = make_api(csv=TWO_KINDS_OF_VISIT)
    made = api.post("/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "D1",
                                      "patientId": api.new_patient()}).json["appointmentId"]
    move = {"day": dt.date(2026, 11, 24), "time_text": "10:00", "doctor_id": doctor, "source": "desk:ana"}
    if moved:
        api.app.clinic.move(made, **move)
    else:
        with pytest.raises(ClinicError) as refusal:
            api.app.clinic.move(made, **move)
        assert (refusal.value.code, refusal.value.rule, refusal.value.field) == ("INVALID_REQUEST", "speciality",
                                                                                 "doctorId")
    visit = api.app.clinic.appointment(made)
    assert (visit["doctor_id"], visit["start"], visit["end"], visit["type_id"]) == (
        (doctor, "10:00", "10:30", "MG-A") if moved else ("D1", "09:00", "09:30", "MG-A"))
