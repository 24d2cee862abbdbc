"""The reminder cycle: POST /appointments/confirm ("Confirming"; spec part 3 rows 4-5 and 8, part 4
rule 4) and POST /appointments/end-of-reminder-day ("End of a reminder day"; spec part 4 rule 6)."""

import json

import pytest

from conftest import assert_error, table_rows


def confirm(api, appointment_id, confirmed=True):
    return api.post("/appointments/confirm", {"appointmentId": appointment_id, "confirmed": confirmed})


def status_of(api, appointment_id):
    return api.db().execute("SELECT status FROM appointments WHERE id = ?", (int(appointment_id),)).fetchone()[0]


def test_confirming_answers_200_confirmed(api):
    appointment_id = api.book(api.new_patient())
    response = confirm(api, appointment_id)
    assert response.status_int == 200 and response.json == {"status": "confirmed"}
    assert api.get(f"/appointments/{appointment_id}").json["extraData"]["status"] == "confirmed"


def test_confirming_twice_answers_200_already_confirmed(api, db_path):
    appointment_id = api.book(api.new_patient())
    confirm(api, appointment_id)
    before = table_rows(db_path)
    response = confirm(api, appointment_id)
    assert response.status_int == 200 and response.json == {"status": "alreadyConfirmed"}
    assert table_rows(db_path) == before


def test_confirming_an_unknown_appointment_is_404_not_found(api):
    assert_error(confirm(api, "98765"), 404, "APPOINTMENT_NOT_FOUND")
    assert_error(confirm(api, "no-such-id"), 404, "APPOINTMENT_NOT_FOUND")


def test_declining_cancels_and_frees_the_slot(api):
    appointment_id = api.book(api.new_patient(), time="10:00")
    response = confirm(api, appointment_id, confirmed=False)
    assert response.status_int == 200 and response.json == {"status": "cancelled"}
    row = api.db().execute("SELECT status, cancel_reason FROM appointments").fetchone()
    assert tuple(row) == ("cancelled", "declined at reminder")
    assert "10:00" in [s["time"] for s in api.get("/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]
    assert api.get("/appointments?date=24/11/2026").json["data"] == []


@pytest.mark.parametrize("confirmed", [True, False])
def test_confirming_a_cancelled_appointment_is_409_previously_cancelled(api, confirmed):
    appointment_id = api.book(api.new_patient())
    api.delete(f"/appointments/{appointment_id}")
    assert_error(confirm(api, appointment_id, confirmed), 409, "APPOINTMENT_PREVIOUSLY_CANCELLED")


@pytest.mark.parametrize("confirmed", ["true", 1, None, "yes"])
def test_confirmed_that_is_not_a_boolean_is_400(api, db_path, confirmed):
    appointment_id = api.book(api.new_patient())
    before = table_rows(db_path)
    response = api.post("/appointments/confirm", {"appointmentId": appointment_id, "confirmed": confirmed})
    assert "confirmed" in assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert table_rows(db_path) == before


@pytest.fixture
def reminder_day(api):
    """Four appointments on 24/11 (three at C1, one at C2 on 25/11): one confirmed."""
    patients = [api.new_patient(),
                api.new_patient(nif="11111111H", phone="699111222"),
                api.new_patient(nif="X1234567L", phone="655443322")]
    ids = {"confirmed": api.book(patients[0], time="09:00"),
           "silent": api.book(patients[1], time="09:30"),
           "late": api.book(patients[2], time="10:00"),
           "other_day": api.book(patients[0], date="25/11/2026", time="16:00", doctor="NUNEZ")}
    confirm(api, ids["confirmed"])
    return ids


def close_day(api, **body):
    body = {"voiceAgentConfigId": "agent-1", "date": "24/11/2026", "executionDate": "23/11/2026",
            "dates": ["24/11/2026"], "centerId": "C1", "skipAppointmentIds": [], **body}
    return api.post("/appointments/end-of-reminder-day", body)


def test_end_of_day_flags_unconfirmed_appointments_by_default(api, reminder_day):
    response = close_day(api, skipAppointmentIds=[reminder_day["late"]])
    assert response.status_int == 200 and response.json == {"status": "ok", "processed": 1}
    assert status_of(api, reminder_day["silent"]) == "unanswered"
    assert status_of(api, reminder_day["late"]) == "booked"          # skipped: untouched
    assert status_of(api, reminder_day["confirmed"]) == "confirmed"  # confirmed: untouched
    assert status_of(api, reminder_day["other_day"]) == "booked"     # another day
    day = api.get("/appointments?date=24/11/2026").json["data"]      # flagged ones stay listed
    assert {a["appointmentId"]: a["extraData"]["status"] for a in day}[reminder_day["silent"]] == "unanswered"


def test_end_of_day_release_policy_cancels_and_frees_slots(make_api):
    api = make_api(reminder_policy="release")
    patient = api.new_patient()
    confirmed, silent = api.book(patient, time="09:00"), api.book(patient, time="09:30")
    skipped = api.book(patient, time="10:30")
    confirm(api, confirmed)
    assert close_day(api, skipAppointmentIds=[skipped]).json == {"status": "ok", "processed": 1}
    assert (status_of(api, silent), status_of(api, confirmed), status_of(api, skipped)) == (
        "cancelled", "confirmed", "booked")
    reason = api.db().execute("SELECT cancel_reason FROM appointments WHERE id = ?", (int(silent),)).fetchone()[0]
    assert reason == "no answer to reminder"
    assert "09:30" in [s["time"] for s in api.get("/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]


def test_end_of_day_keep_policy_only_records_the_cycle(make_api):
    api = make_api(reminder_policy="keep")
    silent = api.book(api.new_patient(), time="09:30")
    assert close_day(api).json == {"status": "ok", "processed": 1}
    assert status_of(api, silent) == "booked"
    cycle = api.db().execute("SELECT policy, appointment_ids FROM reminder_cycles").fetchone()
    assert cycle["policy"] == "keep" and json.loads(cycle["appointment_ids"]) == [int(silent)]


def test_repeating_the_same_end_of_day_call_changes_nothing_more(make_api, db_path):
    api = make_api(reminder_policy="release")
    patient = api.new_patient()
    api.book(patient, time="09:00")
    assert close_day(api).json["processed"] == 1
    added_after = api.book(patient, time="10:00")  # booked after the cycle closed
    before = table_rows(db_path)
    response = close_day(api)
    assert response.status_int == 200 and response.json["processed"] == 0
    assert table_rows(db_path) == before
    assert status_of(api, added_after) == "booked"


def test_end_of_day_without_center_covers_every_center(api, reminder_day):
    response = close_day(api, dates=["24/11/2026", "25/11/2026"], centerId=None)
    assert response.json["processed"] == 3
    assert status_of(api, reminder_day["other_day"]) == "unanswered"


def test_end_of_day_with_center_leaves_other_centers_alone(api, reminder_day):
    assert close_day(api, dates=["25/11/2026"], date="25/11/2026", centerId="C1").json["processed"] == 0
    assert status_of(api, reminder_day["other_day"]) == "booked"


def test_end_of_day_uses_date_when_dates_is_absent(api, reminder_day):
    body = {"voiceAgentConfigId": "agent-1", "date": "25/11/2026", "executionDate": "24/11/2026"}
    assert api.post("/appointments/end-of-reminder-day", body).json["processed"] == 1
    assert status_of(api, reminder_day["other_day"]) == "unanswered"


def test_a_flagged_appointment_can_still_be_confirmed(api, reminder_day):
    close_day(api)
    assert confirm(api, reminder_day["silent"]).json == {"status": "confirmed"}


def test_end_of_day_refuses_bad_bodies_and_changes_nothing(api, reminder_day, db_path):
    before = table_rows(db_path)
    assert_error(api.post("/appointments/end-of-reminder-day", {"voiceAgentConfigId": "a"}), 400, "INVALID_REQUEST")
    assert_error(close_day(api, dates="24/11/2026"), 400, "INVALID_REQUEST")
    assert_error(close_day(api, skipAppointmentIds=[1, 2]), 400, "INVALID_REQUEST")
    assert_error(close_day(api, dates=["32/11/2026"]), 400, "INVALID_REQUEST")
    assert_error(close_day(api, centerId="NOPE"), 404, "CENTER_NOT_FOUND")
    assert table_rows(db_path) == before


def test_the_whole_reminder_flow_in_order(api, reminder_day):
    """Spec part 4, reminder flow: list, call each valid phone, record answers, close."""
    day = api.get("/appointments?date=24/11/2026&centerId=C1").json["data"]
    callable_ = [a for a in day if a["phone"]]
    assert len(callable_) == 3
    for appointment in callable_:
        if appointment["appointmentId"] == reminder_day["late"]:
            assert confirm(api, appointment["appointmentId"], confirmed=False).json == {"status": "cancelled"}
    assert close_day(api).json == {"status": "ok", "processed": 1}
    statuses = {a["appointmentId"]: a["extraData"]["status"]
                for a in api.get("/appointments?date=24/11/2026").json["data"]}
    assert statuses == {reminder_day["confirmed"]: "confirmed", reminder_day["silent"]: "unanswered"}


def test_a_second_cycle_over_a_closed_day_counts_the_flagged_and_changes_none(api, reminder_day, db_path):
    """Another voiceAgentConfigId closing the same day: the unanswered ones are its
    unconfirmed too, so it counts and records them, but flags nothing again."""
    assert close_day(api).json["processed"] == 2
    statuses = table_rows(db_path)["appointments"]
    events = api.db().execute("SELECT count(*) FROM events WHERE action = 'appointment.unanswered'").fetchone()[0]
    response = close_day(api, voiceAgentConfigId="agent-2")
    assert response.json == {"status": "ok", "processed": 2}
    assert table_rows(db_path)["appointments"] == statuses
    assert api.db().execute("SELECT count(*) FROM events WHERE action = 'appointment.unanswered'").fetchone()[0] \
        == events == 2
    cycle = api.db().execute("SELECT appointment_ids FROM reminder_cycles WHERE voice_agent_config_id = 'agent-2'")
    assert json.loads(cycle.fetchone()[0]) == sorted([int(reminder_day["silent"]), int(reminder_day["late"])])
