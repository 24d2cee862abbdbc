"""The clinic's rules, called directly on its one domain layer (docs/design.md, "One domain
layer"): no HTTP, no signature; what the API, the CLI and the desk all share."""

import datetime as dt
import json

import pytest

import agenda
from _agenda.domain.booking import Visit
from _agenda.web.answers import status_of
from _agenda.domain.appointments import patient_appointments, read_appointment
from _agenda.domain.availability import availability
from _agenda.domain.changes import book_appointment, cancel_appointment, confirm_appointment, move_appointment
from _agenda.domain.registry import find_patient, register_patient
from _agenda.domain.reminders import close_reminder_day
from conftest import CLINIC_CSV, MONDAY, seed, write_csv

TUESDAY = dt.date(2026, 11, 24)


@pytest.fixture
def clinic(db_path, tmp_path, clock):
    seed(db_path, write_csv(tmp_path, CLINIC_CSV))
    made = agenda.Clinic(agenda.Database(db_path), agenda.Settings(), clock)
    yield made
    made.db.close()


@pytest.fixture
def ana(clinic):
    return register_patient(clinic, {"name": "Ana", "surname": "García", "nif": "12345678Z", "phone": "612345678"},
                            source="cli")


def refusal(call, *args, **kwargs):
    with pytest.raises(agenda.ClinicError) as caught:
        call(*args, **kwargs)
    return status_of(caught.value), caught.value.code  # the status each edge gives the domain's code


def events(clinic):
    return [(row["source"], row["action"]) for row in clinic.conn().execute("SELECT * FROM events ORDER BY id")
            if row["action"] != "catalog.seeded"]


def test_a_booking_is_one_event_from_its_source_and_reads_back_as_the_clinic_records_it(clinic, ana):
    appointment_id = book_appointment(clinic, Visit(ana, "MARTIN", reason="Revisión"), day=TUESDAY,
                                      time_text="09:00", source="cli")
    seen = read_appointment(clinic, appointment_id, "cli:test")
    assert (seen["date"], seen["start"], seen["patient_name"], seen["center_id"]) == ("2026-11-24", "09:00",
                                                                                   "Ana García", "C1")
    assert (seen["end"], seen["status"], seen["speciality_id"], seen["insurance_id"], seen["booked_by"]) == (
        "09:30", "booked", "MG", None, "cli")
    assert events(clinic) == [("cli", "patient.created"), ("cli", "appointment.booked")]


def test_a_retried_booking_is_the_same_appointment(clinic, ana):
    first = book_appointment(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), day=TUESDAY, time_text="09:00")
    assert book_appointment(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), day=TUESDAY, time_text="09:00") == first
    assert clinic.conn().execute("SELECT count(*) FROM appointments").fetchone()[0] == 1


@pytest.mark.parametrize("day, time_text, center_id, reason", [
    (TUESDAY, "09:10", None, "off_grid"),                   # off the 30-minute grid
    (TUESDAY, "10:45", None, "off_grid"),                   # would end after 11:00
    (TUESDAY, "12:00", None, "outside_hours"),
    (dt.date(2026, 11, 28), "10:00", "C1", "wrong_center"),  # on Saturdays MARTIN is at C2
    (dt.date(2026, 11, 25), "09:00", None, "closed"),        # MARTIN's holiday
    (dt.date(2026, 12, 8), "09:00", None, "closed"),         # everyone's holiday
    (dt.date(2026, 11, 23), "08:30", None, "too_soon"),      # before now plus the notice
    (dt.date(2026, 11, 20), "09:00", None, "too_soon"),      # in the past
    (dt.date(2027, 6, 1), "09:00", None, "beyond_horizon"),
])
def test_a_slot_that_is_not_offered_is_refused_with_its_reason(clinic, ana, day, time_text, center_id, reason):
    with pytest.raises(agenda.ClinicError) as caught:
        book_appointment(clinic, Visit(patient_id=ana, doctor_id="MARTIN", center_id=center_id), day=day,
                         time_text=time_text)
    assert (status_of(caught.value), caught.value.code, caught.value.extra) == (409, "SLOT_NOT_AVAILABLE",
                                                                            {"reason": reason})
    assert clinic.conn().execute("SELECT count(*) FROM appointments").fetchone()[0] == 0


def test_another_patient_cannot_take_a_taken_slot(clinic, ana):
    book_appointment(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), day=TUESDAY, time_text="09:00")
    moving = book_appointment(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), day=TUESDAY, time_text="10:00")
    other = register_patient(clinic, {"name": "Luis", "nif": "11111111H"})
    for attempt in (lambda: book_appointment(clinic, Visit(patient_id=other, doctor_id="MARTIN"), day=TUESDAY,
                                             time_text="09:00"),
                    lambda: move_appointment(clinic, moving, day=TUESDAY, time_text="09:00")):
        with pytest.raises(agenda.ClinicError) as caught:
            attempt()
        assert (caught.value.code, caught.value.extra) == ("SLOT_NOT_AVAILABLE", {"reason": "taken"})
        assert "another appointment holds that time" in caught.value.message


@pytest.mark.parametrize("change, expected", [
    ({"doctor_id": "NOBODY"}, (404, "DOCTOR_NOT_FOUND")),
    ({"patient_id": "999"}, (404, "PATIENT_NOT_FOUND")),
    ({"patient_id": "not a number"}, (404, "PATIENT_NOT_FOUND")),
    ({"speciality_id": "PED"}, (400, "INVALID_REQUEST")),
    ({"doctor_id": "RUIZ", "insurance_id": "DKV"}, (409, "INSURANCE_NOT_ACCEPTED")),
    ({"center_id": "C2"}, (409, "SLOT_NOT_AVAILABLE")),
    ({"center_id": "NOWHERE"}, (404, "CENTER_NOT_FOUND")),
])
def test_a_booking_names_what_is_wrong(clinic, ana, change, expected):
    visit = Visit(**{"doctor_id": "MARTIN", "patient_id": ana, **change})
    assert refusal(book_appointment, clinic, visit, day=TUESDAY, time_text="09:00") == expected


def test_move_cancel_and_confirm_obey_one_rule_for_a_cancelled_appointment(clinic, ana):
    appointment_id = book_appointment(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), day=TUESDAY, time_text="09:00")
    assert move_appointment(clinic, appointment_id, day=TUESDAY, time_text="10:00") == appointment_id
    assert confirm_appointment(clinic, appointment_id, True) == "confirmed"
    assert confirm_appointment(clinic, appointment_id, True) == "already_confirmed"
    assert move_appointment(clinic, appointment_id, day=TUESDAY, time_text="10:30")
    assert read_appointment(clinic, appointment_id, "cli:test")["status"] == "booked"  # a move unconfirms it
    cancel_appointment(clinic, appointment_id, reason="the patient phoned", source="cli")
    assert refusal(read_appointment, clinic, appointment_id) == (410, "APPOINTMENT_CANCELLED")  # the caller reads
    # it as APPOINTMENT_PREVIOUSLY_CANCELLED, its spec's code (WIRE_CODES)
    assert refusal(move_appointment, clinic, appointment_id, day=TUESDAY, time_text="09:00") == (
        409, "APPOINTMENT_PREVIOUSLY_CANCELLED")
    assert refusal(confirm_appointment, clinic, appointment_id, True) == (409, "APPOINTMENT_PREVIOUSLY_CANCELLED")
    assert refusal(cancel_appointment, clinic, appointment_id) == (409, "APPOINTMENT_ALREADY_CANCELLED")
    assert refusal(cancel_appointment, clinic, "12345") == (404, "APPOINTMENT_NOT_FOUND")
    row = clinic.conn().execute("SELECT status, cancel_reason FROM appointments").fetchone()
    assert tuple(row) == ("cancelled", "the patient phoned")


def test_declining_at_a_reminder_frees_the_slot(clinic, ana):
    appointment_id = book_appointment(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), day=TUESDAY, time_text="09:00")
    assert confirm_appointment(clinic, appointment_id, False) == "cancelled"
    assert ("24/11/2026", "09:00") in {(slot.date_text, slot.time) for slot in availability(clinic, 
        doctor_id="MARTIN", first=TUESDAY, last=TUESDAY)}


@pytest.mark.parametrize("policy, status_after", [("flag", "unanswered"), ("release", "cancelled"),
                                                  ("keep", "booked")])
def test_closing_a_reminder_day_follows_the_policy_once(db_path, tmp_path, clock, policy, status_after):
    seed(db_path, write_csv(tmp_path, CLINIC_CSV))
    clinic = agenda.Clinic(agenda.Database(db_path), agenda.Settings(reminder_policy=policy), clock)
    try:
        patient = register_patient(clinic, {"name": "Ana", "nif": "12345678Z"})
        silent = book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=TUESDAY, time_text="09:00")
        skipped = book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=TUESDAY,
                                   time_text="09:30")
        answered = book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=TUESDAY,
                                    time_text="10:00")
        confirm_appointment(clinic, answered, True)
        close = {"config_id": "va", "days": ["2026-11-24"], "skipped": {skipped}}
        assert close_reminder_day(clinic, **close) == {"processed": 1, "repeated": False}
        assert close_reminder_day(clinic, **close) == {"processed": 0, "repeated": True}
        status = dict(clinic.conn().execute("SELECT id, status FROM appointments").fetchall())
        assert status == {int(silent): status_after, int(skipped): "booked", int(answered): "confirmed"}
        cycle = clinic.conn().execute("SELECT policy, appointment_ids FROM reminder_cycles").fetchone()
        assert (cycle["policy"], json.loads(cycle["appointment_ids"])) == (policy, [int(silent)])
    finally:
        clinic.db.close()


def test_availability_defaults_to_two_weeks_from_today_within_the_horizon(clinic, clock):
    days = {slot.date for slot in availability(clinic, speciality_id="MG")}
    assert min(days) == MONDAY.date() and max(days) <= MONDAY.date() + dt.timedelta(days=13)
    assert availability(clinic, doctor_id="MARTIN", first=dt.date(2027, 6, 1)) == []
    assert refusal(availability, clinic) == (400, "INVALID_REQUEST")
    assert refusal(availability, clinic, doctor_id="MARTIN", first=TUESDAY, last=MONDAY.date()) == (
        400, "INVALID_REQUEST")


def test_a_patient_is_found_by_any_spelling_of_the_nif_and_never_registered_twice(clinic, ana):
    assert str(find_patient(clinic, " 12.345.678-z ", "cli:test")["id"]) == ana
    with pytest.raises(agenda.ClinicError) as caught:
        register_patient(clinic, {"name": "Otra", "nif": "12345678z"})
    assert (caught.value.code, caught.value.extra) == ("PATIENT_ALREADY_EXISTS", {"patientId": ana})


def test_a_patients_appointments_by_nif_or_phone_from_today_on(clinic, ana, clock):
    booked = book_appointment(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), day=TUESDAY, time_text="09:00")
    assert [str(a["id"]) for a in patient_appointments(clinic, nif="12345678Z", reader="cli:test")] == [booked]
    assert [str(a["id"]) for a in patient_appointments(clinic, phone="+34 612 345 678", reader="cli:test")] == [booked]
    clock.set(2026, 11, 25)
    assert patient_appointments(clinic, nif="12345678Z", reader="cli:test") == []
    assert str(patient_appointments(clinic, nif="12345678Z", day=TUESDAY, reader="cli:test")[0]["id"]) == booked
