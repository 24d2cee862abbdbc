"""X-Signature on every route but /health (D5; spec part 5)."""

import base64
import hashlib
import hmac

import pytest

import agenda
from conftest import SECRET, assert_error, sign, table_rows
from openapi_contract import CONTRACT, METHODS

# Every route with a request that would succeed if it were signed.
EVERY_ROUTE = [
    ("GET", "/custom-config", None),
    ("GET", "/patients?nif=12345678Z", None),
    ("POST", "/patients", {"name": "Luis", "nif": "11111111H"}),
    ("GET", "/availabilities?doctorId=MARTIN&date=24/11/2026", None),
    ("GET", "/appointments?date=24/11/2026", None),
    ("GET", "/appointments?nif=12345678Z", None),
    ("GET", "/appointments/range?dates=24/11/2026,25/11/2026", None),
    ("GET", "/appointments/1", None),
    ("POST", "/appointments", {"date": "24/11/2026", "time": "10:00", "doctorId": "MARTIN", "patientId": "1"}),
    ("PUT", "/appointments/1", {"newDate": "24/11/2026", "newTime": "10:30"}),
    ("POST", "/appointments/confirm", {"appointmentId": "1", "confirmed": True}),
    ("POST", "/appointments/end-of-reminder-day", {"voiceAgentConfigId": "a", "dates": ["24/11/2026"]}),
    ("DELETE", "/appointments/1", None),
]


def test_every_route_above_is_every_signed_operation_of_openapi_json():
    signed = {(method.upper(), path) for path, item in CONTRACT.document["paths"].items()
              for method, operation in item.items() if method in METHODS and operation.get("security") != []}
    listed = {(method, CONTRACT.operation(method, url.split("?")[0])[0]) for method, url, _ in EVERY_ROUTE}
    assert listed == signed


@pytest.fixture
def booked(api):
    assert api.book(api.new_patient()) == "1"
    return api


def body_bytes(body):
    import json
    return b"" if body is None else json.dumps(body).encode()


@pytest.mark.parametrize("method, url, body", EVERY_ROUTE)
def test_every_route_refuses_missing_wrong_and_other_requests_signatures_d5(booked, db_path, method, url, body):
    raw = body_bytes(body)
    other_target = "/appointments/2" if url != "/appointments/2" else "/appointments/3"
    refused = {
        "missing": None,
        "garbage": "not-a-signature",
        "wrong secret": sign(raw, secret="another-secret"),
        "wrong secret, request scheme": sign(raw, "another-secret", method, url),
        "truncated": sign(raw)[:40],
        "other request": sign(raw, SECRET, "GET" if method != "GET" else "DELETE", other_target),
        "other body": sign(b'{"other": "body"}'),
    }
    before = table_rows(db_path)
    for name, signature in refused.items():
        response = booked.call(method, url, raw=raw, signature=signature)
        assert response.status_int == 401, name
        assert_error(response, 401, "INVALID_SIGNATURE")
    assert table_rows(db_path) == before
    accepted = booked.call(method, url, raw=raw, signature="request")
    assert accepted.status_int < 300, accepted.text


def test_health_needs_no_signature_d17(booked):
    response = booked.get("/health", signature=None)
    assert response.status_int == 200 and response.json == {"status": "ok"}


def encodings(digest):
    return {
        "hex": digest.hex(),
        "HEX": digest.hex().upper(),
        "base64": base64.b64encode(digest).decode(),
        "base64 unpadded": base64.b64encode(digest).decode().rstrip("="),
        "sha256=hex": "sha256=" + digest.hex(),
        "SHA256=base64": "SHA256=" + base64.b64encode(digest).decode(),
    }


@pytest.mark.parametrize("scheme", ["body", "request"])
def test_both_schemes_in_every_encoding_are_accepted_d5(booked, scheme):
    requests = [("GET", "/appointments?date=24/11/2026", b""),
                ("POST", "/appointments/confirm", b'{"appointmentId": "1", "confirmed": true}')]
    for method, url, raw in requests:
        message = raw if scheme == "body" else method.encode() + b"\n" + url.encode() + b"\n" + raw
        digest = hmac.new(SECRET.encode(), message, hashlib.sha256).digest()
        for name, signature in encodings(digest).items():
            response = booked.call(method, url, raw=raw, signature=signature)
            assert response.status_int == 200, (scheme, name, response.text)


def test_request_scheme_signs_the_query_as_sent(booked):
    url = "/appointments?date=24%2F11%2F2026"
    assert booked.get(url, signature="request").status_int == 200
    forged = sign(b"", SECRET, "GET", "/appointments?date=25%2F11%2F2026")
    assert_error(booked.get(url, signature=forged), 401, "INVALID_SIGNATURE")


def test_a_pinned_scheme_refuses_the_other_one_d5(make_api):
    body_only = make_api(signature_scheme="body")
    assert body_only.get("/custom-config", signature="body").status_int == 200
    assert_error(body_only.get("/custom-config", signature="request"), 401, "INVALID_SIGNATURE")
    request_only = make_api(csv=None, signature_scheme="request")
    assert request_only.get("/custom-config", signature="request").status_int == 200
    assert_error(request_only.get("/custom-config", signature="body"), 401, "INVALID_SIGNATURE")


def test_auto_logs_which_scheme_the_caller_uses_without_the_secret_d5(api, caplog):
    with caplog.at_level("INFO", logger="agenda"):
        api.get("/custom-config", signature="request")
    text = caplog.text
    assert "'request' scheme" in text and SECRET not in text


def test_signatures_are_compared_in_constant_time_d5(api, monkeypatch):
    calls = []
    real_compare = hmac.compare_digest

    def spy(a, b):
        calls.append((len(a), len(b)))
        return real_compare(a, b)

    monkeypatch.setattr(agenda.hmac, "compare_digest", spy)
    assert_error(api.get("/custom-config", signature=sign(b"x")), 401, "INVALID_SIGNATURE")
    assert calls == [(32, 32), (32, 32)]  # both schemes compared, always


def test_the_app_refuses_to_start_without_a_secret_d5(db_path, clock):
    with pytest.raises(ValueError, match="secret"):
        agenda.create_app(db_path, None, now=clock)
    with pytest.raises(ValueError, match="secret"):
        agenda.create_app(db_path, "", now=clock)


def test_insecure_development_mode_checks_no_signature(make_api):
    api = make_api(secret=None, insecure=True)
    assert api.get("/custom-config", signature=None).status_int == 200
