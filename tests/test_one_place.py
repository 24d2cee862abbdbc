"""One patient, one place (docs/design.md, "One patient, one place"): a patient never holds two live, not yet
ended appointments that overlap, with any doctor at any center; the caller is told which (409
SLOT_NOT_AVAILABLE, reason patient_elsewhere, `elsewhere` naming it, as openapi.json says: conftest's Api checks
every answer against it); the pause after a visit is not the patient's time; a move never clashes with itself;
a guardian and a child are two patients; only reception may book over it on purpose, audited, and never as a
sobrecita or a series; racing requests give one booking; imported history is kept as it was."""

import datetime as dt
import json

import pytest

import agenda
from _agenda.domain.booking import admit, Visit
from _agenda.domain.counter import squeeze_in
from _agenda.domain.series import book_series
from _agenda.domain.changes import book_appointment, cancel_appointment, move_appointment
from _agenda.domain.registry import register_patient

from conftest import assert_error, send, table_rows, valid_dni
from test_concurrency import race
from test_moving import cli, write
from test_rooms_and_machines import waitress  # noqa: F401 (a fixture)
from test_visit_types import people, row_of, TUESDAY, TYPES_CSV


@pytest.fixture
def typed(make_api):
    return make_api(TYPES_CSV)


def booking(patient, doctor, time_text, day="24/11/2026", **extra):
    return {"date": day, "time": time_text, "doctorId": doctor, "patientId": patient, **extra}


def elsewhere(answer):
    error = assert_error(answer, 409, "SLOT_NOT_AVAILABLE")
    assert error["reason"] == "patient_elsewhere", error
    return error["elsewhere"]


def test_the_same_patient_at_the_same_time_with_another_doctor_anywhere_is_refused_naming_the_other(typed, db_path):
    ana, luis = people(typed, 2)
    first = typed.book(ana, time="10:00", specialityId="MG-PRI")  # Centro, 10:00-10:30
    before = table_rows(db_path)
    for doctor, time_text in (("GIL", "10:00"), ("GIL", "10:20"), ("MUNOZ", "10:15"), ("SOTO", "09:45")):
        refused = typed.post("/appointments", booking(ana, doctor, time_text))  # Centro and Norte
        assert elsewhere(refused) == {"appointmentId": first, "date": "24/11/2026", "time": "10:00",
                                      "doctorId": "MARTIN", "doctorName": "Lucía Martín"}
        assert "24/11/2026 10:00 with Lucía Martín" in refused.json["error"]["message"]
    assert table_rows(db_path) == before
    assert typed.book(luis, time="10:00", doctor="GIL")  # another patient: free
    assert typed.book(ana, time="10:40", doctor="GIL")  # once hers has ended
    assert typed.book(ana, date="25/11/2026", time="10:00", doctor="GIL")  # another day


def test_the_pause_after_a_visit_is_the_doctors_time_not_the_patients(typed):
    ana, luis = people(typed, 2)
    typed.book(ana, time="09:00", specialityId="MG-PRI")  # 09:00-09:30, her pause to 09:40
    assert elsewhere(typed.post("/appointments", booking(ana, "MUNOZ", "09:15", specialityId="FIS-VAL")))
    after = typed.book(ana, time="09:30", doctor="MUNOZ", specialityId="FIS-VAL")  # 09:30, at Norte
    assert row_of(typed, after)["time"] == "09:30"
    assert typed.book(luis, time="10:00", doctor="MUNOZ", specialityId="FIS-VAL")
    assert typed.book(luis, time="09:30", doctor="SOTO", specialityId="FIS-VAL")  # ends 10:00 as the other starts


def test_a_move_never_clashes_with_itself_and_clashes_with_the_patients_other_visit(typed):
    ana, = people(typed, 1)
    first = typed.book(ana, time="09:00", specialityId="MG-PRI")
    assert typed.put(f"/appointments/{first}", {"newDate": "24/11/2026", "newTime": "09:15"}).status_int == 200
    other = typed.book(ana, time="10:00", doctor="MUNOZ", specialityId="FIS-VAL")  # 10:00-10:30 at Norte
    refused = typed.put(f"/appointments/{first}", {"newDate": "24/11/2026", "newTime": "10:15"})
    assert elsewhere(refused)["appointmentId"] == other
    assert row_of(typed, first)["time"] == "09:15"
    cancel_appointment(typed.app.clinic, other)  # a cancelled visit holds no time
    assert typed.put(f"/appointments/{first}", {"newDate": "24/11/2026", "newTime": "10:15"}).status_int == 200


def test_a_visit_under_way_still_counts(typed, clock):
    ana, = people(typed, 1)
    first = typed.book(ana, time="09:00", specialityId="MG-PRI")
    clock.set(2026, 11, 24, 9, 10)  # she is with Dr. Martín until 09:30
    with pytest.raises(agenda.ClinicError) as refused:
        book_appointment(typed.app.clinic, Visit(patient_id=ana, doctor_id="GIL"), day=TUESDAY, time_text="09:20",
                         source="desk:ana")
    assert refused.value.extra["elsewhere"]["appointmentId"] == first
    assert book_appointment(typed.app.clinic, Visit(patient_id=ana, doctor_id="GIL"), day=TUESDAY, time_text="09:40",
                            source="desk:ana")


def test_a_guardian_and_the_child_are_two_patients(typed):
    mother = typed.new_patient()  # 12345678Z
    child = register_patient(typed.app.clinic, {"name": "Pablo", "surname": "García", "birthDate": "03/04/2019",
                                                "guardianNif": "12345678Z"}, source="desk:ana")
    typed.book(mother, time="09:00", doctor="MARTIN", specialityId="MG-PRI")
    assert typed.book(child, time="09:00", doctor="GIL")
    assert elsewhere(typed.post("/appointments", booking(child, "MUNOZ", "09:00")))["doctorId"] == "GIL"


def test_only_reception_books_over_it_on_purpose_recorded_in_the_row_and_the_event(typed):
    ana, = people(typed, 1)
    clinic = typed.app.clinic
    first = typed.book(ana, time="09:00", specialityId="MG-PRI")
    with pytest.raises(agenda.ClinicError) as plain:
        book_appointment(clinic, Visit(patient_id=ana, doctor_id="GIL"), day=TUESDAY, time_text="09:00",
                         source="desk:ana")
    assert plain.value.extra["reason"] == "patient_elsewhere"
    with pytest.raises(agenda.ClinicError) as caller:
        book_appointment(clinic, Visit(patient_id=ana, doctor_id="GIL", accept_overlap=True), day=TUESDAY,
                         time_text="09:00", source="api")
    assert caller.value.extra["reason"] == "patient_elsewhere"
    accepted = book_appointment(clinic, Visit(patient_id=ana, doctor_id="GIL", accept_overlap=True), day=TUESDAY,
                                time_text="09:00", source="desk:ana")
    assert row_of(typed, accepted)["overlap_accepted"] == 1 and row_of(typed, first)["overlap_accepted"] == 0
    source, after = typed.db().execute("SELECT source, after FROM events WHERE action = 'appointment.booked'"
                                       " AND entity_id = ?", (accepted,)).fetchone()
    assert source == "desk:ana" and json.loads(after)["overlap_accepted"] == 1
    free = book_appointment(clinic, Visit(patient_id=ana, doctor_id="GIL", accept_overlap=True), day=TUESDAY,
                            time_text="10:00", source="desk:ana")
    assert row_of(typed, free)["overlap_accepted"] == 0  # nothing to accept: nothing recorded


def test_a_move_accepts_an_overlap_only_when_asked_again(typed):
    ana, = people(typed, 1)
    clinic = typed.app.clinic
    typed.book(ana, time="09:00", specialityId="MG-PRI")
    typed.book(ana, time="10:00", doctor="MUNOZ", specialityId="FIS-VAL")
    over = book_appointment(clinic, Visit(patient_id=ana, doctor_id="GIL", accept_overlap=True), day=TUESDAY,
                            time_text="09:00", source="desk:ana")
    with pytest.raises(agenda.ClinicError) as moved:  # onto her other visit: a new overlap, not the one accepted
        move_appointment(clinic, over, day=TUESDAY, time_text="10:00", source="desk:ana")
    assert moved.value.extra["elsewhere"]["doctorId"] == "MUNOZ"
    move_appointment(clinic, over, day=TUESDAY, time_text="10:00", accept_overlap=True, source="desk:ana")
    assert (row_of(typed, over)["time"], row_of(typed, over)["overlap_accepted"]) == ("10:00", 1)
    move_appointment(clinic, over, day=TUESDAY, time_text="10:40", source="desk:ana")  # clear of both
    assert row_of(typed, over)["overlap_accepted"] == 0
    refused = typed.put(f"/appointments/{over}", {"newDate": "24/11/2026", "newTime": "09:20"})
    assert elsewhere(refused)["doctorId"] == "MARTIN"


def test_never_as_a_sobrecita_nor_a_series(typed, db_path):
    ana, = people(typed, 1)
    clinic = typed.app.clinic
    typed.book(ana, time="09:00", specialityId="MG-PRI")
    before = table_rows(db_path)
    with pytest.raises(agenda.ClinicError) as squeezed:
        squeeze_in(clinic, Visit(patient_id=ana, doctor_id="GIL"), day=TUESDAY, time_text="09:10", source="desk:ana")
    assert squeezed.value.extra["reason"] == "patient_elsewhere"
    for channel, visit in (("sobrecita", Visit(ana, "GIL", squeezed=True, accept_overlap=True)),
                           ("series", Visit(ana, "GIL", accept_overlap=True))):
        with pytest.raises(agenda.ClinicError) as refused:
            with clinic.db.transaction() as conn:
                admit(clinic, conn, visit, TUESDAY, "09:20", channel, clinic.clock(), "desk:ana")
        assert refused.value.extra["reason"] == "patient_elsewhere", channel
    with pytest.raises(agenda.ClinicError) as series:
        book_series(clinic, Visit(patient_id=ana, doctor_id="GIL"), first=TUESDAY, time_text="09:00", every_days=7,
                    count=2, source="desk:ana")
    assert series.value.extra["reason"] == "patient_elsewhere"
    assert table_rows(db_path) == before


@pytest.mark.parametrize("threads", [2, 4])
def test_one_patient_racing_to_two_doctors_gets_one_booking(typed, waitress, threads):  # noqa: F811
    url = waitress(threads)
    ana, = people(typed, 1)
    bodies = [booking(ana, doctor, "10:00") for doctor in ("MARTIN", "GIL", "MUNOZ", "SOTO")[:threads]]
    answers = race([lambda body=body: send(url, "POST", "/appointments", body) for body in bodies])
    assert sorted(status for status, _ in answers) == [201] + [409] * (len(bodies) - 1), answers
    assert {payload["error"]["reason"] for status, payload in answers if status == 409} == {"patient_elsewhere"}
    assert typed.db().execute("SELECT count(*) FROM appointments WHERE patient_id = ?", (ana,)).fetchone()[0] == 1


def test_imported_history_that_overlaps_is_kept(typed, db_path, tmp_path):
    ana, = people(typed, 1)
    rows = ("date,time,duration,doctor,center,nif,name,phone,reason,insurance,status\n"
            f"24/11/2026,09:00,30,MARTIN,C1,{valid_dni(100)},,,Revisión,,\n"
            f"24/11/2026,09:20,20,GIL,C1,{valid_dni(100)},,,Análisis,,\n"
            f"24/11/2026,09:30,45,MUNOZ,C2,{valid_dni(100)},,,Sesión,,\n")
    done = cli(db_path, "import-appointments", write(tmp_path / "citas.csv", rows))
    assert done.exit_code == 0, done.output
    kept = [tuple(row) for row in typed.db().execute(
        "SELECT doctor_id, time, end_time FROM appointments WHERE patient_id = ? ORDER BY time", (ana,))]
    assert kept == [("MARTIN", "09:00", "09:30"), ("GIL", "09:20", "09:40"), ("MUNOZ", "09:30", "10:15")]
    assert elsewhere(typed.post("/appointments", booking(ana, "SOTO", "10:00")))["doctorId"] == "MUNOZ"
