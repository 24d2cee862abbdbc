"""GET /custom-config ("Catalogs", spec part 2 Catalogs) and the patient endpoints ("Patients", spec part 4)."""

import pytest

from _agenda.files.catalogs import SeedError

from conftest import CLINIC_CSV, assert_error, seed, table_rows, write_csv

SINGLE_SITE_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes
speciality,MG,Medicina general,,,,,,
doctor,SOLO,Pedro Solo,MG,,,mon-fri,09:00-10:00,30
"""


def test_custom_config_has_the_suggested_shape(api):
    config = api.get("/custom-config").json
    for key in ("doctors", "specialities", "insurances", "centers"):
        assert isinstance(config[key]["description"], str)
        assert isinstance(config[key]["data"], list)
    assert config["centers"]["data"] == [{"id": "C1", "name": "Centro"}, {"id": "C2", "name": "Norte"}]
    assert {"id": "PED", "name": "Pediatría"} in config["specialities"]["data"]
    assert [i["id"] for i in config["insurances"]["data"]] == ["DKV", "PRIV", "SAN"]


def test_custom_config_repeats_a_doctor_once_per_center_with_center_ids(api):
    doctors = api.get("/custom-config").json["doctors"]["data"]
    martin = [d for d in doctors if d["id"] == "MARTIN"]
    assert [d["idCenter"] for d in martin] == ["C1", "C2"]
    assert all(d["speciality"] == "MG" and d["name"] == "Lucía Martín" for d in martin)


def test_custom_config_lists_insurances_only_for_doctors_who_restrict_them(api):
    doctors = {d["id"]: d for d in api.get("/custom-config").json["doctors"]["data"]}
    assert doctors["RUIZ"]["insurances"] == ["PRIV", "SAN"]
    assert "insurances" not in doctors["NUNEZ"]


def test_custom_config_of_a_single_site_clinic_has_no_centers(make_api):
    config = make_api(SINGLE_SITE_CSV).get("/custom-config").json
    assert "centers" not in config
    assert config["doctors"]["data"] == [{"id": "SOLO", "name": "Pedro Solo", "speciality": "MG"}]


def test_custom_config_shows_a_reseed_through_another_connection_at_once(api, db_path, tmp_path):
    """`agenda seed`'s own connection adds a doctor while the service runs."""
    assert "NEW" not in {d["id"] for d in api.get("/custom-config").json["doctors"]["data"]}
    seed(db_path, write_csv(tmp_path, CLINIC_CSV + "doctor,NEW,Nuevo Doctor,MG,C2,,mon,09:00-10:00,30\n",
                            name="more.csv"))
    doctors = {d["id"]: d for d in api.get("/custom-config").json["doctors"]["data"]}
    assert doctors["NEW"] == {"id": "NEW", "name": "Nuevo Doctor", "speciality": "MG", "idCenter": "C2"}


def test_custom_config_shows_a_change_made_on_the_connection_that_serves_it(api):
    """webtest serves on the test's thread, so api.db() is the very connection that serves it."""
    api.get("/custom-config")
    api.db().execute("UPDATE doctors SET name = 'Dra. Ruiz' WHERE id = 'RUIZ'")
    doctors = {d["id"]: d for d in api.get("/custom-config").json["doctors"]["data"]}
    assert doctors["RUIZ"]["name"] == "Dra. Ruiz"


def test_get_patient_by_nif_returns_the_patient_object(api):
    patient_id = api.new_patient(nif="12345678Z", name="Ana", surname="García", phone="612 34 56 78")
    patient = api.get("/patients?nif=12345678Z").json
    assert patient == {"id": patient_id, "name": "Ana", "surname": "García", "birthDate": "01/02/1980",
                       "nif": "12345678Z", "phone": "+34612345678", "extra": None}


def test_get_patient_with_unknown_nif_is_404_patient_not_found(api):
    # spec part 4 Patients rule 1: 404 is one of the three "not found" answers
    assert_error(api.get("/patients?nif=11111111H"), 404, "PATIENT_NOT_FOUND")


def test_get_patient_without_nif_is_400(api):
    error = assert_error(api.get("/patients"), 400, "INVALID_REQUEST")
    assert "nif" in error["message"]


def test_nif_is_normalised_on_create_and_lookup(api):
    patient_id = api.new_patient(nif=" 12.345.678-z ")
    assert api.get("/patients?nif=12345678z").json["id"] == patient_id
    assert api.get("/patients?nif=12%20345%20678%20Z").json["nif"] == "12345678Z"


def test_a_nif_in_fullwidth_digits_is_the_same_patient(api):
    patient_id = api.new_patient(nif="12345678Z")
    assert api.get("/patients?nif=%EF%BC%91%EF%BC%92345678Z").json["id"] == patient_id  # "１２345678Z"
    error = assert_error(api.post("/patients", {"name": "Otra", "nif": "１２３４５６７８Ｚ"}), 409,
                         "PATIENT_ALREADY_EXISTS")
    assert error["patientId"] == patient_id


def test_dni_without_leading_zero_is_padded(api):
    patient_id = api.new_patient(nif="0000001R")
    assert api.get("/patients?nif=0000001R").json["id"] == patient_id
    assert api.get("/patients?nif=00000001R").json["nif"] == "00000001R"


def test_dni_or_nie_with_wrong_letter_is_400_invalid_nif(api, db_path):
    before = table_rows(db_path)
    for bad in ("12345678A", "X1234567A", "12345678"):
        assert_error(api.get(f"/patients?nif={bad}"), 400, "INVALID_NIF")
        response = api.post("/patients", {"name": "Ana", "nif": bad, "phone": "612345678"})
        assert_error(response, 400, "INVALID_NIF")
    assert table_rows(db_path) == before


def test_nie_and_passport_numbers_are_accepted(api):
    assert api.new_patient(nif="X1234567L", phone="699111222")
    assert api.new_patient(nif="PAA123456", phone="655443322")
    assert api.get("/patients?nif=x-1234567-l").json["nif"] == "X1234567L"


def test_create_patient_answers_201_with_patient_id(api):
    response = api.post("/patients", {"name": "Íñigo", "surname": "Ibáñez", "birthDate": "3/4/1990",
                                      "nif": "87654321X", "phone": "+34 699 111 222"})
    assert response.status_int == 201
    assert isinstance(response.json["patientId"], str) and response.json["patientId"]
    patient = api.get("/patients?nif=87654321X").json
    assert (patient["name"], patient["surname"], patient["birthDate"]) == ("Íñigo", "Ibáñez", "03/04/1990")


def test_phone_is_stored_as_given_and_as_e164(api):
    api.new_patient(phone="699 11 12 22")
    row = api.db().execute("SELECT phone, phone_e164 FROM patients").fetchone()
    assert tuple(row) == ("699 11 12 22", "+34699111222")


def test_duplicate_nif_is_409_with_the_existing_patient_id(api, db_path):
    # spec part 4 Patients rule 2: the service may reject a duplicate with 409
    patient_id = api.new_patient(nif="12345678Z")
    before = table_rows(db_path)
    error = assert_error(api.post("/patients", {"name": "Otra", "nif": "12345678-z"}), 409,
                         "PATIENT_ALREADY_EXISTS")
    assert error["patientId"] == patient_id
    assert table_rows(db_path) == before


def test_unparseable_phone_is_400_invalid_phone(api, db_path):
    before = table_rows(db_path)
    assert_error(api.post("/patients", {"name": "Ana", "nif": "12345678Z", "phone": "12"}), 400, "INVALID_PHONE")
    assert table_rows(db_path) == before


def test_name_and_nif_are_required(api):
    assert "name" in assert_error(api.post("/patients", {"nif": "12345678Z"}), 400, "INVALID_REQUEST")["message"]
    assert "nif" in assert_error(api.post("/patients", {"name": "Ana"}), 400, "INVALID_REQUEST")["message"]


def test_patient_with_only_name_and_nif_has_null_optional_fields(api):
    response = api.post("/patients", {"name": "Ana", "nif": "12345678Z"})
    assert response.status_int == 201
    patient = api.get("/patients?nif=12345678Z").json
    assert (patient["surname"], patient["birthDate"], patient["phone"]) == (None, None, None)


def test_impossible_or_future_birth_date_is_400(api):
    for bad in ("31/02/1990", "01/01/2030", "yesterday"):
        error = assert_error(api.post("/patients", {"name": "Ana", "nif": "12345678Z", "birthDate": bad}),
                             400, "INVALID_REQUEST")
        assert "birthDate" in error["message"]


def test_sql_shaped_and_unicode_names_are_stored_literally(api):
    name = "Robert'); DROP TABLE patients;-- ñ 😀"
    api.new_patient(name=name, surname="Ñúñez" * 20)
    patient = api.get("/patients?nif=12345678Z").json
    assert patient["name"] == name and patient["surname"] == "Ñúñez" * 20


# A doctor may take different insurances at different centers

PER_CENTER_CSV = CLINIC_CSV + """\
doctor,GOMEZ,Eva Gómez,DER,C1,PRIV;SAN,tue,09:00-10:00,30,,
doctor,GOMEZ,Eva Gómez,DER,C2,DKV,thu,09:00-10:00,30,,
"""


def test_a_doctor_takes_each_centers_own_insurances_in_the_catalog_the_slots_and_the_booking(make_api):
    api = make_api(PER_CENTER_CSV)
    gomez = [d for d in api.get("/custom-config").json["doctors"]["data"] if d["id"] == "GOMEZ"]
    assert [(d["idCenter"], d["insurances"]) for d in gomez] == [("C1", ["PRIV", "SAN"]), ("C2", ["DKV"])]

    def days(insurance):
        found = api.get(f"/availabilities?doctorId=GOMEZ&insuranceId={insurance}&startDate=24/11/2026").json["data"]
        return {(slot["date"], slot["centerId"]) for slot in found}
    assert days("DKV") == {("26/11/2026", "C2"), ("03/12/2026", "C2")}
    assert days("SAN") == {("24/11/2026", "C1"), ("01/12/2026", "C1")}
    assert days("PRIV") == days("SAN")
    patient = api.new_patient()
    assert_error(api.post("/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "GOMEZ",
                                            "patientId": patient, "insuranceId": "DKV"}), 409, "INSURANCE_NOT_ACCEPTED")
    api.book(patient, date="26/11/2026", time="09:00", doctor="GOMEZ", insuranceId="DKV")


def test_two_rows_of_one_doctor_at_one_center_must_name_the_same_insurances(make_api, db_path, tmp_path):
    make_api()
    before = table_rows(db_path)
    clash = PER_CENTER_CSV + "doctor,GOMEZ,Eva Gómez,DER,C1,DKV,fri,09:00-10:00,30,,\n"
    with pytest.raises(SeedError) as refused:
        seed(db_path, write_csv(tmp_path, clash, "clash.csv"))
    assert refused.value.problems == [(19, "doctor GOMEZ: insurances at C1 differ from line 17 (one list per center)")]
    assert table_rows(db_path) == before
