"""Bad input ("Lenient input, strict output", "Errors"; spec part 7): always a 4xx JSON error with code and message, never
HTML, never a traceback, and nothing in the database changes."""

import json
import logging
import sqlite3

import pytest
import webtest

import _agenda.domain.appointments
import _agenda.domain.availability
import agenda
import edges
from conftest import assert_error, table_rows
from openapi_contract import checked

# Every route of the API that reads a JSON body: each POST and PUT of its table, at a path it answers.
JSON_ROUTES = [(route.method, edges.example_path(route)) for route in edges.API_ROUTES
               if route.method in ("POST", "PUT")]


@pytest.fixture
def booked(api):
    """A patient with one booked appointment, id '1'."""
    assert api.book(api.new_patient()) == "1"
    return api


@pytest.mark.parametrize("method, path", JSON_ROUTES)
@pytest.mark.parametrize("raw", [b"{not json", b'{"a": 1,}', b"\xff\xfe{}", b'{"a": NaN}', b""])
def test_malformed_json_is_400_invalid_json_and_changes_nothing(booked, db_path, method, path, raw):
    before = table_rows(db_path)
    assert_error(booked.call(method, path, raw=raw), 400, "INVALID_JSON")
    assert table_rows(db_path) == before


@pytest.mark.parametrize("method, path", JSON_ROUTES)
@pytest.mark.parametrize("raw", [b"[]", b'"text"', b"42", b"null"])
def test_a_body_that_is_not_an_object_is_400_invalid_json(booked, db_path, method, path, raw):
    before = table_rows(db_path)
    assert_error(booked.call(method, path, raw=raw), 400, "INVALID_JSON")
    assert table_rows(db_path) == before


@pytest.mark.parametrize("method, path", JSON_ROUTES)
def test_a_body_of_another_media_type_is_415(booked, method, path):
    response = booked.call(method, path, raw=b"name=Ana", content_type="application/x-www-form-urlencoded")
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize("field, value", [
    # "Errors": wrong types
    ("date", 20261124), ("time", 900), ("doctorId", 7), ("patientId", 1), ("reason", ["a"]),
    ("centerId", {"id": "C1"}), ("insuranceId", True),
    # "Lenient input, strict output": impossible or unreadable dates and times
    ("date", "31/02/2026"), ("date", "29/02/2027"), ("date", "24/13/2026"), ("date", "tomorrow"),
    ("date", "2026/11/24"), ("time", "25:00"), ("time", "10:60"), ("time", "9h"), ("time", "09:00:30"),
])
def test_a_bad_field_value_is_400_naming_the_field_and_changes_nothing(api, db_path, field, value):
    body = {"date": "24/11/2026", "time": "09:00", "doctorId": "MARTIN", "patientId": api.new_patient(),
            field: value}
    before = table_rows(db_path)
    error = assert_error(api.post("/appointments", body), 400, "INVALID_REQUEST")
    assert field in error["message"]
    assert table_rows(db_path) == before


@pytest.mark.parametrize("date", ["1/3/2026", "01/03/2026", "01-03-2026", "2026-03-01"])
def test_every_lenient_date_form_is_read_the_same(api, date):
    response = api.get(f"/appointments?date={date}")
    assert response.status_int == 200


def test_impossible_date_in_a_query_is_400_naming_it(api):
    assert "date" in assert_error(api.get("/appointments?date=31/02/2026"), 400, "INVALID_REQUEST")["message"]


def test_a_body_over_the_limit_is_413_and_changes_nothing(api, db_path):
    before = table_rows(db_path)
    body = {"name": "A" * 70_000, "nif": "12345678Z"}
    assert_error(api.post("/patients", body), 413, "PAYLOAD_TOO_LARGE")
    assert table_rows(db_path) == before


def test_a_malformed_content_length_is_400(api):
    unlinted = webtest.TestApp(checked(api.app), lint=False)  # webtest's lint would refuse the header itself
    response = unlinted.get("/custom-config", extra_environ={"CONTENT_LENGTH": "many"}, expect_errors=True)
    assert_error(response, 400, "INVALID_REQUEST")


def test_a_body_just_under_the_limit_is_read(api):
    body = {"voiceAgentConfigId": "va", "date": "24/11/2026", "skipAppointmentIds": [str(n) for n in range(7_800)]}
    assert 60_000 < len(json.dumps(body)) < 64 * 1024
    response = api.post("/appointments/end-of-reminder-day", body)
    assert response.status_int == 200, response.text


def test_an_unknown_route_is_404_not_found_as_json(api):
    for path in ("/nothing", "/appointments/1/extra", "/"):
        response = api.get(path)
        assert_error(response, 404, "NOT_FOUND")
        assert b"<" not in response.body


def test_a_wrong_method_is_405_method_not_allowed_as_json(api):
    for method, path in (("PATCH", "/appointments"), ("DELETE", "/patients"), ("POST", "/custom-config")):
        response = api.call(method, path, raw=b"{}")
        assert_error(response, 405, "METHOD_NOT_ALLOWED")
        assert b"<" not in response.body


def test_an_unexpected_exception_is_500_with_a_request_id_logged_not_shown(booked, monkeypatch, caplog):
    def explode(text):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(_agenda.domain.appointments, "numeric_id", explode)
    with caplog.at_level(logging.ERROR, logger="agenda"):
        response = booked.get("/appointments/1")
    error = assert_error(response, 500, "INTERNAL_ERROR")
    assert error["requestId"] == response.headers["X-Request-Id"]
    assert "secret internal detail" not in response.text and "Traceback" not in response.text
    logged = [record for record in caplog.records if error["requestId"] in record.getMessage()]
    assert logged and "secret internal detail" in (logged[0].exc_text or "")


def test_a_locked_database_is_503_service_unavailable(api, monkeypatch):
    def locked(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(_agenda.domain.availability, "free_slots", locked)
    error = assert_error(api.get("/availabilities?doctorId=MARTIN"), 503, "SERVICE_UNAVAILABLE")
    assert error["requestId"]


def test_every_answer_carries_a_request_id(booked):
    for response in (booked.get("/health"), booked.get("/appointments/1"), booked.get("/nowhere"),
                     booked.get("/appointments/1", signature=None)):
        assert len(response.headers["X-Request-Id"]) == 16
