"""Booking ("Booking"), moving ("Moving"), cancelling, reading and listing appointments ("One route, two jobs", "Appointment objects", "Lists"),
the spec's state table (part 3) and its multi-center rules (part 4)."""

import sqlite3

import pytest

from conftest import assert_error, table_rows

REQUIRED_STRING_FIELDS = ("appointmentId", "date", "time", "doctorId", "patientId")
OPTIONAL_STRING_FIELDS = ("doctorName", "nif", "patientName", "phone", "reason", "centerRef")


def assert_appointment_shape(appointment):
    """"Appointment objects": required fields are non-empty strings, optional ones strings or null."""
    for field in REQUIRED_STRING_FIELDS:
        assert isinstance(appointment[field], str) and appointment[field], field
    for field in OPTIONAL_STRING_FIELDS:
        assert appointment[field] is None or isinstance(appointment[field], str), field
    assert len(appointment["date"]) == 10 and appointment["date"][2] == "/" and appointment["date"][5] == "/"
    assert len(appointment["time"]) == 5 and appointment["time"][2] == ":"
    extra = appointment["extraData"]
    assert extra["status"] in ("booked", "confirmed", "unanswered")
    assert {"specialityId", "insuranceId", "duration"} <= set(extra)


# Booking ("Booking"; spec part 3 rows 1-2; part 4 rule 3)

def test_booking_a_free_slot_answers_201_with_an_appointment_id(api):
    patient = api.new_patient()
    response = api.post("/appointments", {"date": "24/11/2026", "time": "09:30", "doctorId": "MARTIN",
                                          "specialityId": "MG", "patientId": patient, "reason": "Dolor de espalda",
                                          "centerId": "C1", "insuranceId": "DKV"})
    assert response.status_int == 201
    appointment = api.get(f"/appointments/{response.json['appointmentId']}").json
    assert_appointment_shape(appointment)
    assert appointment == {
        "appointmentId": response.json["appointmentId"], "date": "24/11/2026", "time": "09:30",
        "doctorId": "MARTIN", "doctorName": "Lucía Martín", "patientId": patient, "nif": "12345678Z",
        "patientName": "Ana García", "phone": "+34612345678", "reason": "Dolor de espalda", "centerRef": "C1",
        "extraData": {"status": "booked", "specialityId": "MG", "insuranceId": "DKV", "duration": 30}}


def test_a_patient_without_surname_is_named_by_the_name_alone_in_every_answer(api):
    patient = api.post("/patients", {"name": "Iker", "nif": "00000023T", "phone": "612000000"}).json["patientId"]
    appointment_id = api.book(patient, time="10:00")
    single = api.get(f"/appointments/{appointment_id}").json
    assert single["patientName"] == "Iker" and single["extraData"]["duration"] == 30
    assert api.get("/appointments?date=24/11/2026").json["data"] == [single]
    assert api.get("/appointments?nif=00000023T").json["data"] == [single]
    assert api.get("/appointments/range?dates=24/11/2026").json["data"] == [single]


def test_booking_accepts_lenient_dates_and_times(api):
    patient = api.new_patient()
    appointment_id = api.book(patient, date="2026-11-24", time="9:30:00")
    assert api.get(f"/appointments/{appointment_id}").json["time"] == "09:30"


def test_booking_a_taken_slot_is_409_slot_not_available(api, db_path):
    first, second = api.new_patient(), api.new_patient(nif="11111111H", phone="699111222")
    api.book(first, time="10:00")
    before = table_rows(db_path)
    assert_error(api.book(second, time="10:00", status=409), 409, "SLOT_NOT_AVAILABLE")
    assert table_rows(db_path) == before


def test_a_retried_booking_returns_the_same_appointment_id(api, db_path):
    patient = api.new_patient()
    first = api.book(patient, time="10:00")
    before = table_rows(db_path)
    assert api.book(patient, time="10:00") == first
    assert table_rows(db_path) == before


def test_a_booking_retried_once_its_slot_is_inside_the_notice_still_gets_its_id(api, db_path, clock):
    """The caller retries a booking whose answer it lost; meanwhile the slot came within
    the minimum notice. The booking was made: the retry gets its id, not a 409."""
    patient = api.new_patient()
    clock.set(2026, 11, 23, 7, 30)
    first = api.book(patient, date="23/11/2026", time="09:00")
    clock.set(2026, 11, 23, 8, 30)  # 09:00 is now 30 minutes away; the notice is 60
    before = table_rows(db_path)
    assert api.book(patient, date="23/11/2026", time="09:00") == first
    assert table_rows(db_path) == before


@pytest.mark.parametrize("date, time, why", [
    ("24/11/2026", "09:15", "off the slot grid"),
    ("24/11/2026", "11:00", "after working hours"),
    ("25/11/2026", "09:00", "doctor away"),
    ("08/12/2026", "09:00", "holiday"),
    ("20/11/2026", "09:00", "in the past"),
    ("01/06/2027", "09:00", "beyond the horizon"),
])
def test_booking_a_slot_that_is_not_offered_is_409(api, date, time, why):
    patient = api.new_patient()
    assert_error(api.book(patient, date=date, time=time, status=409), 409, "SLOT_NOT_AVAILABLE")


def test_booking_inside_the_minimum_notice_is_409(api, clock):
    patient = api.new_patient()
    clock.set(2026, 11, 23, 8, 1)  # 09:00 is now 59 minutes away; the notice is 60
    assert_error(api.book(patient, date="23/11/2026", time="09:00", status=409), 409, "SLOT_NOT_AVAILABLE")
    assert api.book(patient, date="23/11/2026", time="09:30")


def test_booking_with_an_insurance_the_doctor_does_not_take_is_409(api):
    patient = api.new_patient()
    response = api.book(patient, doctor="RUIZ", insuranceId="DKV", status=409)
    assert_error(response, 409, "INSURANCE_NOT_ACCEPTED")
    assert api.book(patient, doctor="RUIZ", insuranceId="SAN")


def test_booking_at_a_center_where_the_doctor_is_not_then_is_409(api):
    patient = api.new_patient()
    assert_error(api.book(patient, centerId="C2", status=409), 409, "SLOT_NOT_AVAILABLE")
    appointment_id = api.book(patient, date="28/11/2026", time="10:00", centerId="C2")
    assert api.get(f"/appointments/{appointment_id}").json["centerRef"] == "C2"


def test_booking_without_center_takes_the_center_of_the_doctors_hours(api):
    patient = api.new_patient()
    appointment_id = api.book(patient, date="28/11/2026", time="10:30")
    assert api.get(f"/appointments/{appointment_id}").json["centerRef"] == "C2"


def test_booking_with_another_doctors_speciality_is_400(api):
    patient = api.new_patient()
    error = assert_error(api.book(patient, specialityId="PED", status=400), 400, "INVALID_REQUEST")
    assert "specialityId" in error["message"]


@pytest.mark.parametrize("change, code", [
    ({"doctorId": "NOBODY"}, "DOCTOR_NOT_FOUND"),
    ({"patientId": "999"}, "PATIENT_NOT_FOUND"),
    ({"patientId": "not-a-number"}, "PATIENT_NOT_FOUND"),
    ({"specialityId": "NOPE"}, "SPECIALITY_NOT_FOUND"),
    ({"insuranceId": "NOPE"}, "INSURANCE_NOT_FOUND"),
    ({"centerId": "C9"}, "CENTER_NOT_FOUND"),
])
def test_booking_with_unknown_ids_is_404_and_changes_nothing(api, db_path, change, code):
    patient = api.new_patient()
    before = table_rows(db_path)
    body = {"date": "24/11/2026", "time": "09:00", "doctorId": "MARTIN", "patientId": patient, **change}
    assert_error(api.post("/appointments", body), 404, code)
    assert table_rows(db_path) == before


@pytest.mark.parametrize("missing", ["date", "time", "doctorId", "patientId"])
def test_booking_requires_date_time_doctor_and_patient(api, missing):
    body = {"date": "24/11/2026", "time": "09:00", "doctorId": "MARTIN", "patientId": api.new_patient()}
    del body[missing]
    assert missing in assert_error(api.post("/appointments", body), 400, "INVALID_REQUEST")["message"]


def test_the_database_itself_refuses_a_second_live_appointment_in_a_slot(api):
    patient = api.new_patient()
    api.book(patient, time="09:00")
    conn = api.db()
    insert = ("INSERT INTO appointments (patient_id, doctor_id, date, time, end_time, status, created_at,"
              " updated_at) VALUES (?, 'MARTIN', '2026-11-24', ?, ?, 'booked', 'x', 'x')")
    with pytest.raises(sqlite3.IntegrityError):  # same start: the unique index
        conn.execute(insert, (int(patient), "09:00", "09:30"))
    with pytest.raises(sqlite3.IntegrityError, match="SLOT_NOT_AVAILABLE"):  # overlap: the trigger
        conn.execute(insert, (int(patient), "09:15", "09:45"))
    conn.execute(insert, (int(patient), "09:30", "10:00"))  # the next slot is free


# Moving ("Moving"; spec part 3 row 3)

def test_moving_keeps_the_id_and_frees_the_old_slot(api):
    patient = api.new_patient()
    appointment_id = api.book(patient, time="09:00")
    response = api.put(f"/appointments/{appointment_id}", {"newDate": "26/11/2026", "newTime": "10:30"})
    assert response.status_int == 200 and response.json == {"appointmentId": appointment_id}
    moved = api.get(f"/appointments/{appointment_id}").json
    assert (moved["date"], moved["time"], moved["centerRef"]) == ("26/11/2026", "10:30", "C1")
    free = [s["time"] for s in api.get("/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]
    assert "09:00" in free


def test_a_moved_appointment_is_no_longer_confirmed(api):
    appointment_id = api.book(api.new_patient())
    api.post("/appointments/confirm", {"appointmentId": appointment_id, "confirmed": True})
    api.put(f"/appointments/{appointment_id}", {"newDate": "24/11/2026", "newTime": "10:00"})
    assert api.get(f"/appointments/{appointment_id}").json["extraData"]["status"] == "booked"


def test_moving_onto_an_overlapping_part_of_its_own_slot_is_allowed(make_api):
    csv = ("kind,id,name,speciality,center,insurances,days,hours,slot_minutes\n"
           "speciality,FIS,Fisioterapia,,,,,,\ndoctor,FISIO,Eva Fisio,FIS,,,mon-fri,09:00-10:00,15\n")
    api = make_api(csv)
    appointment_id = api.book(api.new_patient(), time="09:00", doctor="FISIO")
    assert api.put(f"/appointments/{appointment_id}", {"newDate": "24/11/2026", "newTime": "09:15"}).status_int == 200
    assert api.put(f"/appointments/{appointment_id}", {"newDate": "24/11/2026", "newTime": "09:15"}).status_int == 200


def test_moving_onto_a_taken_slot_is_409_and_changes_nothing(api, db_path):
    mine = api.book(api.new_patient(), time="09:00")
    api.book(api.new_patient(nif="11111111H", phone="699111222"), time="10:00")
    before = table_rows(db_path)
    response = api.put(f"/appointments/{mine}", {"newDate": "24/11/2026", "newTime": "10:00"})
    assert_error(response, 409, "SLOT_NOT_AVAILABLE")
    assert table_rows(db_path) == before


def test_moving_stays_with_the_same_doctor_and_center(api):
    appointment_id = api.book(api.new_patient(), time="09:00")  # MARTIN at C1
    response = api.put(f"/appointments/{appointment_id}", {"newDate": "28/11/2026", "newTime": "10:00"})
    assert_error(response, 409, "SLOT_NOT_AVAILABLE")  # Saturday hours are at C2


def test_moving_a_cancelled_appointment_is_409_previously_cancelled(api):
    appointment_id = api.book(api.new_patient())
    api.delete(f"/appointments/{appointment_id}")
    response = api.put(f"/appointments/{appointment_id}", {"newDate": "26/11/2026", "newTime": "10:00"})
    assert_error(response, 409, "APPOINTMENT_PREVIOUSLY_CANCELLED")


def test_moving_an_unknown_appointment_is_404(api):
    for unknown in ("999", "abc"):
        response = api.put(f"/appointments/{unknown}", {"newDate": "26/11/2026", "newTime": "10:00"})
        assert_error(response, 404, "APPOINTMENT_NOT_FOUND")


def test_moving_requires_new_date_and_new_time(api):
    appointment_id = api.book(api.new_patient())
    error = assert_error(api.put(f"/appointments/{appointment_id}", {"newDate": "26/11/2026"}), 400,
                         "INVALID_REQUEST")
    assert "newTime" in error["message"]


# Cancelling (spec part 3 rows 6-8; part 4 rule 5)

def test_cancelling_answers_204_with_no_body(api):
    appointment_id = api.book(api.new_patient())
    response = api.delete(f"/appointments/{appointment_id}")
    assert response.status_int == 204 and response.body == b""
    row = api.db().execute("SELECT status, cancel_reason, cancelled_at FROM appointments").fetchone()
    assert row["status"] == "cancelled" and row["cancel_reason"] and row["cancelled_at"]


def test_cancelling_twice_is_409_already_cancelled(api, db_path):
    appointment_id = api.book(api.new_patient())
    api.delete(f"/appointments/{appointment_id}")
    before = table_rows(db_path)
    assert_error(api.delete(f"/appointments/{appointment_id}"), 409, "APPOINTMENT_ALREADY_CANCELLED")
    assert table_rows(db_path) == before


def test_cancelling_an_unknown_appointment_is_404_not_found(api):
    assert_error(api.delete("/appointments/424242"), 404, "APPOINTMENT_NOT_FOUND")


def test_a_confirmed_appointment_can_be_cancelled(api):
    appointment_id = api.book(api.new_patient())
    api.post("/appointments/confirm", {"appointmentId": appointment_id, "confirmed": True})
    assert api.delete(f"/appointments/{appointment_id}").status_int == 204


def test_reading_a_cancelled_appointment_is_410_previously_cancelled(api):
    appointment_id = api.book(api.new_patient())
    api.delete(f"/appointments/{appointment_id}")
    assert_error(api.get(f"/appointments/{appointment_id}"), 410, "APPOINTMENT_PREVIOUSLY_CANCELLED")
    assert_error(api.get("/appointments/31337"), 404, "APPOINTMENT_NOT_FOUND")


def test_a_cancelled_slot_can_be_booked_again(api):
    first = api.book(api.new_patient())
    api.delete(f"/appointments/{first}")
    second = api.book(api.new_patient(nif="11111111H", phone="699111222"))
    assert second != first


# Lists: day list, range and patient search ("One route, two jobs", "Lists"; spec part 4 rules 1-2)

@pytest.fixture
def busy_day(api):
    """Three patients with appointments on 24/11 at both centers and one cancelled."""
    ana = api.new_patient()
    luis = api.new_patient(nif="11111111H", name="Luis", surname="Pérez", phone="699111222")
    eva = api.new_patient(nif="X1234567L", name="Eva", surname="Sanz", phone="655443322")
    ids = {
        "ana_martin": api.book(ana, time="10:00"),
        "luis_ruiz": api.book(luis, time="09:00", doctor="RUIZ"),
        "eva_martin": api.book(eva, time="09:00"),
        "ana_nunez": api.book(ana, date="25/11/2026", time="16:00", doctor="NUNEZ"),
        "luis_sat": api.book(luis, date="28/11/2026", time="10:00"),
    }
    cancelled = api.book(eva, time="10:30")
    api.delete(f"/appointments/{cancelled}")
    ids["cancelled"] = cancelled
    return ids


def listed(response):
    assert response.status_int == 200, response.text
    for appointment in response.json["data"]:
        assert_appointment_shape(appointment)
    return [a["appointmentId"] for a in response.json["data"]]


def test_day_list_is_sorted_by_time_then_doctor_and_leaves_out_cancelled(api, busy_day):
    assert listed(api.get("/appointments?date=24/11/2026")) == [
        busy_day["eva_martin"], busy_day["luis_ruiz"], busy_day["ana_martin"]]


def test_day_list_with_center_id_returns_only_that_site(api, busy_day):
    assert listed(api.get("/appointments?date=25/11/2026&centerId=C2")) == [busy_day["ana_nunez"]]
    assert listed(api.get("/appointments?date=25/11/2026&centerId=C1")) == []
    assert listed(api.get("/appointments?date=28/11/2026")) == [busy_day["luis_sat"]]


def test_every_listed_appointment_carries_its_center_ref(api, busy_day):
    data = api.get("/appointments/range?dates=24/11/2026,25/11/2026,28/11/2026").json["data"]
    assert {a["appointmentId"]: a["centerRef"] for a in data} == {
        busy_day["eva_martin"]: "C1", busy_day["luis_ruiz"]: "C1", busy_day["ana_martin"]: "C1",
        busy_day["ana_nunez"]: "C2", busy_day["luis_sat"]: "C2"}


def test_range_covers_every_listed_day_sorted_and_deduplicated(api, busy_day):
    ids = listed(api.get("/appointments/range?dates=25/11/2026,24/11/2026,24-11-2026"))
    assert ids == [busy_day["eva_martin"], busy_day["luis_ruiz"], busy_day["ana_martin"], busy_day["ana_nunez"]]
    assert listed(api.get("/appointments/range?dates=24/11/2026&centerId=C2")) == []


def test_day_list_and_range_show_each_change_at_once(api, busy_day):
    """A booking, a confirmation and a cancel each show in the very next list."""
    day, days = "/appointments?date=24/11/2026", "/appointments/range?dates=24/11/2026,25/11/2026"
    assert listed(api.get(day)) == listed(api.get(day))
    listed(api.get(days))
    new = api.book(api.new_patient(nif="22222222J", phone="622222222"), time="09:30")
    assert new in listed(api.get(day)) and new in listed(api.get(days))
    api.post("/appointments/confirm", {"appointmentId": new, "confirmed": True})
    statuses = {a["appointmentId"]: a["extraData"]["status"] for a in api.get(day).json["data"]}
    assert statuses[new] == "confirmed"
    api.delete(f"/appointments/{new}")
    assert new not in listed(api.get(day)) and new not in listed(api.get(days))


def test_lists_show_a_booking_made_through_another_connection(api, make_api):
    """Another process (here another app on the same file, so another SQLite connection)
    changes the data; the next list shows it."""
    day = "/appointments?date=24/11/2026"
    assert listed(api.get(day)) == []
    other = make_api(csv=None)
    booked = other.book(other.new_patient())
    assert listed(api.get(day)) == [booked]


def test_range_takes_at_most_62_days(api):
    dates = ",".join(f"{day:02d}/01/2027" for day in range(1, 32)) + "," + ",".join(
        f"{day:02d}/02/2027" for day in range(1, 29))
    assert api.get(f"/appointments/range?dates={dates}").status_int == 200
    more = dates + ",01/03/2027,02/03/2027,03/03/2027,04/03/2027"
    assert_error(api.get(f"/appointments/range?dates={more}"), 400, "INVALID_REQUEST")
    assert_error(api.get("/appointments/range"), 400, "INVALID_REQUEST")


def test_search_by_nif_returns_the_patients_appointments_from_today_on(api, busy_day, clock):
    assert listed(api.get("/appointments?nif=12345678Z")) == [busy_day["ana_martin"], busy_day["ana_nunez"]]
    clock.set(2026, 11, 25)
    assert listed(api.get("/appointments?nif=12345678Z")) == [busy_day["ana_nunez"]]


def test_search_by_phone_finds_the_patient(api, busy_day):
    assert listed(api.get("/appointments?phone=%2B34699111222")) == [busy_day["luis_ruiz"], busy_day["luis_sat"]]
    assert listed(api.get("/appointments?phone=699%2011%2012%2022")) == [busy_day["luis_ruiz"],
                                                                        busy_day["luis_sat"]]
    # an unencoded '+' arrives as a space
    assert listed(api.get("/appointments?phone=+34699111222")) == [busy_day["luis_ruiz"], busy_day["luis_sat"]]
    assert_error(api.get("/appointments?phone=12"), 400, "INVALID_PHONE")


def test_search_with_date_returns_that_day_only(api, busy_day):
    assert listed(api.get("/appointments?nif=12345678Z&date=25/11/2026")) == [busy_day["ana_nunez"]]


def test_search_with_center_id_returns_that_site_only(api, busy_day):
    assert listed(api.get("/appointments?nif=11111111H&centerId=C2")) == [busy_day["luis_sat"]]


def test_search_by_nif_falls_back_to_the_phone_when_the_nif_finds_nobody(api, busy_day):
    assert listed(api.get("/appointments?nif=00000001R&phone=655443322")) == [busy_day["eva_martin"]]


def test_search_for_an_unknown_patient_is_an_empty_list(api, busy_day):
    assert listed(api.get("/appointments?nif=00000001R")) == []


def test_get_appointments_without_date_nif_or_phone_is_400(api):
    assert_error(api.get("/appointments"), 400, "INVALID_REQUEST")
    assert_error(api.get("/appointments?centerId=C1"), 400, "INVALID_REQUEST")


def test_lists_with_an_unknown_center_are_404_center_not_found(api):
    assert_error(api.get("/appointments?date=24/11/2026&centerId=NOPE"), 404, "CENTER_NOT_FOUND")
    assert_error(api.get("/appointments/range?dates=24/11/2026&centerId=NOPE"), 404, "CENTER_NOT_FOUND")
    assert_error(api.get("/appointments?nif=12345678Z&centerId=NOPE"), 404, "CENTER_NOT_FOUND")


def test_a_patient_without_phone_is_listed_with_null_phone(api):
    response = api.post("/patients", {"name": "Sin", "surname": "Teléfono", "nif": "23456789D"})
    appointment_id = api.book(response.json["patientId"])
    assert api.get(f"/appointments/{appointment_id}").json["phone"] is None
    assert listed(api.get("/appointments?date=24/11/2026")) == [appointment_id]


def test_booking_a_date_long_past_is_409_in_any_time_zone(make_api):
    # 01/01/0001 09:00 in Tokyo is in year 0 in UTC: it must be refused, not overflow
    api = make_api(tz="Asia/Tokyo")
    assert_error(api.book(api.new_patient(), date="01/01/0001", status=409), 409, "SLOT_NOT_AVAILABLE")


# Slot refusal reasons: each refusal of a slot says why, in the API's answer

@pytest.mark.parametrize("date, time, reason, named", [
    ("24/11/2026", "10:07", "off_grid", "10:07"), ("24/11/2026", "18:00", "outside_hours", "18:00"),
    ("25/11/2026", "09:00", "closed", "closed"), ("23/11/2026", "08:30", "too_soon", "minimum notice"),
    ("01/06/2027", "09:00", "beyond_horizon", "horizon"),
])
def test_a_refused_slot_says_why_in_reason_and_message(api, db_path, date, time, reason, named):
    patient = api.new_patient()
    before = table_rows(db_path)
    error = assert_error(api.post("/appointments", {"date": date, "time": time, "doctorId": "MARTIN",
                                                     "patientId": patient}), 409, "SLOT_NOT_AVAILABLE")
    assert error["reason"] == reason and named in error["message"]
    assert table_rows(db_path) == before


def test_a_taken_slot_and_another_centers_hours_say_so(api):
    api.book(api.new_patient())
    other = api.new_patient(nif="11111111H", phone="622222222")
    taken = assert_error(api.post("/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "MARTIN",
                                                     "patientId": other}), 409, "SLOT_NOT_AVAILABLE")
    elsewhere = assert_error(api.post("/appointments", {"date": "28/11/2026", "time": "10:00", "doctorId": "MARTIN",
                                                         "patientId": other, "centerId": "C1"}),
                             409, "SLOT_NOT_AVAILABLE")
    assert (taken["reason"], elsewhere["reason"]) == ("taken", "wrong_center")
    assert "C2" in elsewhere["message"]


def test_a_request_with_several_wrong_fields_names_every_one(api, db_path):
    before = table_rows(db_path)
    error = assert_error(api.post("/appointments", {"date": "31/02/2026", "time": "25:00", "patientId": 7}),
                         400, "INVALID_REQUEST")
    for field in ("date", "time", "doctorId", "patientId"):
        assert field in error["message"], error["message"]
    error = assert_error(api.post("/patients", {"nif": "12345678A", "phone": "12", "birthDate": "01/01/2999"}),
                         400, "INVALID_REQUEST")
    for field in ("name", "nif", "phone", "birthDate"):
        assert field in error["message"], error["message"]
    error = assert_error(api.put("/appointments/1", {"newDate": "x"}), 400, "INVALID_REQUEST")
    assert "newDate" in error["message"] and "newTime" in error["message"]
    assert table_rows(db_path) == before
