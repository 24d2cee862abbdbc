"""Hostile input: SQL-shaped and Unicode values, and the body limit on a real server.

Signatures on every route are in test_signatures.py, personal data kept out of the log in
test_run_process.py, file modes in test_storage.py and test_admin.py.
"""

import json
from urllib.parse import quote

import pytest

from _agenda.values.fields import TEXT_LIMIT
from conftest import SECRET, assert_error, raw_exchange, sign, table_rows
from openapi_contract import CONTRACT

HOSTILE_TEXTS = [
    "Robert'); DROP TABLE patients;--",
    "' OR '1'='1",
    '"; DELETE FROM appointments; --',
    "%_ LIKE wildcards _%",
    "Ñúñez Íñigo Çàrmen",
    "Zoë 😀 👩‍⚕️ 🏥",
    "محمد 李 Ελένη",
    "x" * TEXT_LIMIT,  # the longest a name takes (a tab, a line break, a NUL: test_text_fields.py)
]


@pytest.mark.parametrize("text", HOSTILE_TEXTS, ids=range(len(HOSTILE_TEXTS)))
def test_sql_shaped_and_unicode_values_are_stored_and_read_back_literally(api, text):
    patient_id = api.new_patient(name=text, surname=text[::-1])
    found = api.get("/patients?nif=12345678Z").json
    assert (found["name"], found["surname"]) == (text, text[::-1])
    appointment_id = api.book(patient_id, reason=text)
    appointment = api.get(f"/appointments/{appointment_id}").json
    assert appointment["reason"] == text
    assert appointment["patientName"] == f"{text} {text[::-1]}".strip()
    listed, = api.get("/appointments?date=24/11/2026").json["data"]
    assert listed == appointment
    assert api.db().execute("SELECT count(*) FROM patients").fetchone()[0] == 1


@pytest.mark.parametrize("url, status, code", [
    ("/appointments?date=24/11/2026&centerId={}", 404, "CENTER_NOT_FOUND"),
    ("/availabilities?doctorId={}", 404, "DOCTOR_NOT_FOUND"),
    ("/availabilities?specialityId={}", 404, "SPECIALITY_NOT_FOUND"),
    ("/availabilities?doctorId=MARTIN&insuranceId={}", 404, "INSURANCE_NOT_FOUND"),
    ("/appointments/{}", 404, "APPOINTMENT_NOT_FOUND"),
    ("/patients?nif={}", 400, "INVALID_NIF"),
    ("/appointments?nif={}", 400, "INVALID_NIF"),
    ("/appointments?phone={}", 400, "INVALID_PHONE"),
])
def test_sql_shaped_ids_in_a_query_find_nothing_and_change_nothing(api, db_path, url, status, code):
    api.book(api.new_patient())
    before = table_rows(db_path)
    for text in ("1' OR '1'='1", "1 OR 1=1", "%", "MARTIN'--", "Ñ😀"):
        assert_error(api.get(url.format(quote(text, safe=""))), status, code)
    assert table_rows(db_path) == before


# The body limit under `agenda run`: waitress itself refuses what is over it, as JSON.

def exchange(url, raw_request, timeout=10):
    """Send raw bytes to the server; (status, headers, body) of its answer, read until it closes."""
    head, _, body = raw_exchange(url, raw_request, timeout).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    status = int(status_line.split()[1])
    method, target = raw_request.split(b" ", 2)[:2]
    CONTRACT.check(method.decode(), target.decode(), status, headers, body)
    return status, {name.lower(): value for name, value in headers.items()}, body


def request_head(method, path, **headers):
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", *(
        f"{name.replace('_', '-')}: {value}" for name, value in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def assert_json_refusal(answer, status, code):
    got_status, headers, body = answer
    assert got_status == status, body
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["code"] == code


def test_a_body_declared_over_64_kib_is_refused_413_before_it_is_sent(running):
    """Only the headers and 1 KiB of a 10 MB body are sent: the answer comes anyway, so the
    server did not wait to read the body."""
    server = running()
    head = request_head("POST", "/patients", Content_Type="application/json", Content_Length=10_000_000,
                        X_Signature="0" * 64)
    assert_json_refusal(exchange(server.url, head + b"{" + b" " * 1023), 413, "PAYLOAD_TOO_LARGE")
    assert_json_refusal(exchange(server.url, request_head("GET", "/health", Content_Length=64 * 1024 + 1)),
                        413, "PAYLOAD_TOO_LARGE")


def test_a_chunked_body_is_refused_413_once_it_passes_64_kib(running):
    server = running()
    chunk = b" " * 16_384
    # 65,568 bytes and no last chunk: the body never ends, the limit comes first. (More
    # than the server reads before it answers would make its close a reset.)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(4))
    head = request_head("POST", "/patients", Content_Type="application/json", Transfer_Encoding="chunked",
                        X_Signature="0" * 64)
    assert_json_refusal(exchange(server.url, head + chunks), 413, "PAYLOAD_TOO_LARGE")


def test_a_body_of_exactly_64_kib_is_read(running):
    server = running()
    body = json.dumps({"name": "Ana", "nif": "12345678Z"}).encode()
    body += b" " * (64 * 1024 - len(body))
    head = request_head("POST", "/patients", Content_Type="application/json", Content_Length=len(body),
                        X_Signature=sign(body, SECRET, "POST", "/patients"))
    status, _, answer = exchange(server.url, head + body)
    assert status == 201, answer


def test_a_malformed_request_is_refused_400_as_json(running):
    server = running()
    malformed = request_head("GET", "/health", Content_Length="many")
    assert_json_refusal(exchange(server.url, malformed), 400, "INVALID_REQUEST")
    assert_json_refusal(exchange(server.url, request_head("POST", "/patients", Transfer_Encoding="gzip")),
                        501, "NOT_IMPLEMENTED")
