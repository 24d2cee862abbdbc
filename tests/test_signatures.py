"""X-Signature on every route of the API but the public ones ("Signatures"; spec part 5), and every route of
every edge let in by the caller's signature, the desk's cookie, or neither: the few that take neither, named."""

import base64
import hashlib
import hmac

import pytest
import webtest

import agenda
import edges
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


def test_every_route_above_is_every_route_of_the_tables_that_takes_a_signature():
    listed = {edges.route_of(method, url).key for method, url, _ in EVERY_ROUTE}
    signed = {route.key for route in edges.ROUTES if route.door == "signature"}
    assert not signed - listed, "routes that take a signature with no request in EVERY_ROUTE"
    assert not listed - signed, "requests in EVERY_ROUTE of a route that takes no signature"


# The routes that take neither the caller's signature nor the desk's cookie, each with why: a route
# added without either fails below until it is named here.
OPEN_ROUTES = {
    ("GET", "/health"): "the service's health, for its monitor: nothing of the clinic's",
    ("GET", "/openapi.json"): "the API's own document",
    ("GET", "/desk"): "sends the browser on to the day, which asks for the login",
    ("GET", "/desk/login"): "the login page",
    ("POST", "/desk/login"): "the login itself, with the login page's own token",
    ("GET", "/desk/desk.css"): "the login page's stylesheet",
    ("GET", "/desk/desk.js"): "the login page's script",
    ("GET", "/feeds/<token>.ics"): "a doctor's calendar feed: its token is all the access it gives",
    ("GET", "/cita/cita.css"): "the patient's link's stylesheet",
    ("GET", "/cita/<token>"): "the patient's link: its token opens one appointment",
    ("POST", "/cita/<token>/confirmar"): "the patient confirms, by the token and the page's own CSRF token",
    ("POST", "/cita/<token>/anular"): "the patient cancels, by the token and the page's own CSRF token",
    ("POST", "/cita/<token>/cambiar"): "the patient moves, by the token and the page's own CSRF token",
    ("GET", "/cita/baja/<token>"): "a message's stop link: a button only",
    ("POST", "/cita/baja/<token>"): "a message's one-click stop (RFC 8058): its token is all it takes",
    ("GET", "/reservar/reservar.css"): "the booking page's stylesheet",
    ("GET", "/reservar"): "the clinic's booking page: what it offers, a choice at a time (off: a 404)",
    ("POST", "/reservar/datos"): "the booking page's details form, after its signed choices; it changes nothing",
    ("POST", "/reservar/enviar"): "a patient's booking, its form signed by the page; it holds the time until the "
                                  "patient confirms by the e-mail's link",
    ("GET", "/reservar/confirmar/<token>"): "a booking's confirmation link: shows what it would confirm",
    ("POST", "/reservar/confirmar/<token>"): "a booking's confirmation: its token is all it takes",
}


def test_the_routes_that_take_neither_signature_nor_cookie_are_the_open_ones_named():
    open_routes = {route.key for route in edges.ROUTES if route.door == "neither"}
    assert not open_routes - set(OPEN_ROUTES), "routes open by their table's marks, not named in OPEN_ROUTES"
    assert not set(OPEN_ROUTES) - open_routes, "OPEN_ROUTES names routes that are not there, or not open"


def test_the_route_tables_read_are_every_route_the_app_serves(api):
    assert [(route.method, route.rule) for route in api.app.routes] == [(r.method, r.rule) for r in edges.ROUTES]


@pytest.mark.parametrize("route", edges.ROUTES, ids=lambda route: " ".join(route.key))
def test_a_request_with_neither_signature_nor_cookie_is_refused_but_on_an_open_route(api, db_path, route):
    before = table_rows(db_path)
    answer = webtest.TestApp(api.app).request(edges.example_path(route), method=route.method, expect_errors=True)
    refused = {"signature": answer.status_int == 401 and answer.content_type == "application/json"
               and answer.json["error"]["code"] == "INVALID_SIGNATURE",
               "cookie": answer.status_int == 303 and answer.headers["Location"].endswith("/desk/login")}
    if route.door == "neither":
        assert not any(refused.values()), f"{route.key} is classed open by its table, yet refused {answer.status}"
    else:
        assert refused[route.door], (f"{route.key} takes the {route.door} by its table's marks, yet answered "
                                     f"{answer.status}: teach edges.door its mark, and name it in OPEN_ROUTES")
    assert table_rows(db_path) == before


@pytest.fixture
def booked(api):
    assert api.book(api.new_patient()) == "1"
    return api


def body_bytes(body):
    import json
    return b"" if body is None else json.dumps(body).encode()


@pytest.mark.parametrize("method, url, body", EVERY_ROUTE)
def test_every_route_refuses_missing_wrong_and_other_requests_signatures(booked, db_path, method, url, body):
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


def test_health_needs_no_signature(booked):
    response = booked.get("/health", signature=None)
    assert response.status_int == 200 and response.json == {"status": "ok", "replica": "off"}


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
def test_both_schemes_in_every_encoding_are_accepted_where_chosen(make_api, scheme):
    booked = make_api(**({"signature_scheme": "body"} if scheme == "body" else {}))
    booked.book(booked.new_patient())
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


def test_a_pinned_scheme_refuses_the_other_one(make_api):
    body_only = make_api(signature_scheme="body")
    assert body_only.get("/custom-config", signature="body").status_int == 200
    assert_error(body_only.get("/custom-config", signature="request"), 401, "INVALID_SIGNATURE")
    request_only = make_api(csv=None, signature_scheme="request")
    assert request_only.get("/custom-config", signature="request").status_int == 200
    assert_error(request_only.get("/custom-config", signature="body"), 401, "INVALID_SIGNATURE")


def test_auto_logs_which_scheme_the_caller_uses_without_the_secret(api, caplog):
    with caplog.at_level("INFO", logger="agenda"):
        api.get("/custom-config", signature="request")
    text = caplog.text
    assert "'request' scheme" in text and SECRET not in text


def test_signatures_are_compared_in_constant_time(api, monkeypatch):
    calls = []
    real_compare = hmac.compare_digest

    def spy(a, b):
        calls.append((len(a), len(b)))
        return real_compare(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert_error(api.get("/custom-config", signature=sign(b"x")), 401, "INVALID_SIGNATURE")
    assert calls == [(32, 32), (32, 32)]  # both schemes compared, always


def test_the_app_refuses_to_start_without_a_secret(db_path, clock):
    with pytest.raises(ValueError, match="secret"):
        agenda.create_app(db_path, None, now=clock)
    with pytest.raises(ValueError, match="secret"):
        agenda.create_app(db_path, "", now=clock)


def test_insecure_development_mode_checks_no_signature(make_api):
    api = make_api(secret=None, insecure=True)
    assert api.get("/custom-config", signature=None).status_int == 200


# One captured signature must never open another request (docs/design.md, "Signatures").

def captured_signatures(method, url, raw):
    """What an attacker can capture of one request: its signature under each scheme and encoding."""
    request_text = method.encode() + b"\n" + url.encode() + b"\n" + raw
    found = {}
    for scheme, message in (("request", request_text), ("body", raw)):
        digest = hmac.new(SECRET.encode(), message, hashlib.sha256).digest()
        found[f"{scheme} hex"] = digest.hex()
        found[f"{scheme} base64"] = base64.b64encode(digest).decode()
    return found, request_text


def replays(captured, other):
    """Every body and target an attacker controls, sent with a captured signature to another operation."""
    (method, url, body), (other_method, other_url, other_body) = captured, other
    raw, other_raw = body_bytes(body), body_bytes(other_body)
    signatures, request_text = captured_signatures(method, url, raw)
    path, _, query = url.partition("?")
    other_path = other_url.partition("?")[0]
    targets = {other_url, other_path + ("?" + query if query else ""), other_url + ("&" if "?" in other_url else "?") + "x=1"}
    bodies = {b"", raw, other_raw, request_text, url.encode(), (method + "\n" + url + "\n").encode()}
    for name, signature in signatures.items():
        for target in sorted(targets):
            for sent in sorted(bodies):
                if (other_method, target, sent) != (method, url, raw):  # the very request: no other one
                    yield name, other_method, target, sent, signature


@pytest.mark.parametrize("captured", EVERY_ROUTE, ids=[f"{m} {u}" for m, u, _ in EVERY_ROUTE])
def test_no_captured_signature_opens_another_request_under_the_default_settings(booked, db_path, captured):
    before = table_rows(db_path)
    tried = 0
    for other in EVERY_ROUTE:
        if other == captured:
            continue
        for name, method, target, sent, signature in replays(captured, other):
            response = booked.call(method, target, raw=sent, signature=signature)
            assert response.status_int == 401, (name, method, target, sent, response.text)
            tried += 1
    assert tried > (len(EVERY_ROUTE) - 1) * 4 * 6
    assert table_rows(db_path) == before


def test_under_auto_a_request_signature_sent_as_a_body_opens_nothing(make_api, db_path):
    """The hole `auto` had: GET and DELETE ignored their bodies, so a request-scheme signed
    text sent as the body of one passed as a body-scheme signature."""
    api = make_api(signature_scheme="auto")
    api.book(api.new_patient())
    before = table_rows(db_path)
    for method, url, body in EVERY_ROUTE:
        signatures, request_text = captured_signatures(method, url, body_bytes(body))
        for other_method, other_url, _ in EVERY_ROUTE:
            if other_method in ("GET", "DELETE") and (other_method, other_url) != (method, url):
                for scheme in ("request hex", "request base64"):
                    response = api.call(other_method, other_url, raw=request_text, signature=signatures[scheme])
                    assert response.status_int in (400, 401), response.text
                    assert response.status_int == 401 or "no body" in response.json["error"]["message"]
    assert table_rows(db_path) == before


def test_the_default_scheme_is_request_and_a_body_signature_is_logged_as_such(api, caplog):
    assert api.app.clinic.settings.signature_scheme == "request"
    with caplog.at_level("INFO", logger="agenda"):
        assert_error(api.get("/custom-config", signature="body"), 401, "INVALID_SIGNATURE")
    assert "signed with the 'body' scheme, and this server takes 'request'" in caplog.text
    assert SECRET not in caplog.text and sign(b"") not in caplog.text


@pytest.mark.parametrize("scheme, warned", [("body", "can read any patient and cancel any appointment"),
                                            ("auto", "so the weaker 'body' too")])
def test_choosing_a_weaker_scheme_is_warned_at_start(make_api, caplog, scheme, warned):
    with caplog.at_level("WARNING", logger="agenda"):
        make_api(signature_scheme=scheme)
    assert warned in caplog.text
