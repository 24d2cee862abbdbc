"""openapi.json: a valid OpenAPI 3.1 document of exactly what Agenda serves, served itself.

Every answer of every other test is checked against it (openapi_contract.checked and
conftest.send); these tests hold the document to the code from the other side: every
route is documented, every documented operation is served, and every error code the code
can raise is listed under the status it is raised with.
"""

import hashlib
import itertools
import json
import re
from urllib.parse import quote

import hypothesis
import hypothesis.strategies
import phonenumbers
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

import agenda
from _agenda.web.api import WIRE_CODES
from _agenda.web.answers import STATUS_ERROR_CODES, STATUS_OF
from _agenda.values.fields import (CONTROL_CHARACTERS, EMAIL_PATTERN, normalise_nif, parse_date, parse_phone,
                                   PHONE_PATTERN, text_limit, TEXT_LIMIT)
from _agenda.files.catalogs import CATALOG_COLUMNS
from conftest import ROOT, valid_dni
from openapi_contract import CONTRACT, METHODS, Contract

DOCUMENT = json.loads((ROOT / "openapi.json").read_text(encoding="utf-8"))
JSON_HEADERS = {"content-type": "application/json", "x-request-id": "0123456789abcdef"}


def test_the_document_is_valid_openapi_3_1():
    validate(DOCUMENT)
    assert DOCUMENT["openapi"].startswith("3.1.")
    assert DOCUMENT["info"]["version"] == agenda.__version__


def test_it_is_served_without_a_signature_exactly_as_kept_in_the_repository(api):
    response = api.get("/openapi.json", signature=None)
    assert response.status_int == 200 and response.content_type == "application/json"
    assert response.json == DOCUMENT


def operations_of(document):
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item
            if method in METHODS}


def test_every_route_is_documented_and_every_documented_operation_is_served(api):
    def template(rule):
        return re.sub(r"<(\w+)(?::[^>]*)?>", lambda match: "{" + re.sub(r"_(\w)", lambda m: m[1].upper(), match[1]) + "}",
                      rule)

    served = {(route.method, template(route.rule)) for route in api.app.routes
              if not route.config.get("desk") and not route.config.get("feed") and not route.config.get("patient")}
    assert served == operations_of(DOCUMENT)  # the desk's and the patient's pages (HTML) and feeds: not the API


def test_only_health_and_the_document_are_public(api):
    public = {(route.method, route.rule) for route in api.app.routes if route.config.get("public")}
    documented_public = {(method.upper(), path) for path, item in DOCUMENT["paths"].items()
                         for method, operation in item.items()
                         if method in METHODS and operation.get("security") == []}
    assert public == documented_public == {("GET", "/health"), ("GET", "/openapi.json")}
    for method, path in operations_of(DOCUMENT) - documented_public:
        assert "401" in DOCUMENT["paths"][path][method.lower()]["responses"], (method, path)


def codes_of(response):
    """The error codes a documented response names (enum or const of error.code)."""
    if "$ref" in response:
        response = CONTRACT.resolve(response["$ref"][1:])
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    code = schema.get("properties", {}).get("error", {}).get("properties", {}).get("code", {})
    return set(code.get("enum", [])) | ({code["const"]} if "const" in code else set())


def documented_codes():
    found = set()
    for path, item in DOCUMENT["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                for status, response in operation["responses"].items():
                    found |= {(int(status), code) for code in codes_of(response)}
    return found


def raised_codes():
    """(status, code) of every ClinicError in agenda.py and _agenda/, as the caller reads it (the
    domain's own codes mapped by the API's WIRE_CODES), and of the errors known only by their
    status (bottle's and waitress's own); 404 of a path the document lacks aside. The router's
    405 is documented where a path's neighbour answers it: /appointments/confirm, range and
    end-of-reminder-day, which /appointments/{appointmentId} is not."""
    source = "".join(path.read_text(encoding="utf-8") for path in [ROOT / "agenda.py", *(ROOT / "_agenda").rglob("*.py")])
    raised = {(STATUS_OF[code], WIRE_CODES.get(code, code))
              for code in re.findall(r'(?:ClinicError\(|_CANCELLED = \()\s*"([A-Z_]+)"', source)}
    assert len(raised) > 15  # the pattern still finds them
    # refusals of the staff desk, the CLI and the calendar feeds only, never of an API operation
    raised -= {(401, "LOGIN_FAILED"), (429, "LOGIN_BUSY"), (429, "LOGIN_LOCKED"), (404, "STAFF_NOT_FOUND"), (409, "STAFF_ALREADY_EXISTS"),
               (404, "CLOSURE_NOT_FOUND"), (403, "PATIENT_BLOCKED"), (400, "INSURANCE_REQUIRED"),
               (409, "APPOINTMENT_NOT_TODAY"), (404, "FEED_NOT_FOUND"),
               (404, "WAITLIST_NOT_FOUND"), (409, "WAITLIST_ALREADY_BOOKED"),
               (409, "LINK_TO_CALL"), (409, "LINK_TOO_LATE"), (409, "LINK_SQUEEZED"),  # the patient's link's
               (404, "WEB_CLOSED"), (429, "WEB_BUSY")}  # the patients' booking page's
    return raised | {item for item in STATUS_ERROR_CODES.items() if item[0] != 404}


def test_every_error_code_the_code_raises_is_documented_under_its_status_and_no_other():
    raised = raised_codes()
    assert raised == documented_codes()
    assert {code for _, code in raised} | {"NOT_FOUND", "METHOD_NOT_ALLOWED"} == set(
        DOCUMENT["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"])


def test_every_operation_documents_each_error_it_can_always_give():
    for method, path in operations_of(DOCUMENT):
        responses = DOCUMENT["paths"][path][method.lower()]["responses"]
        assert {"400", "413", "431", "500", "501", "503"} <= set(responses), (method, path)
        if "requestBody" in DOCUMENT["paths"][path][method.lower()]:
            assert "415" in responses, (method, path)


@pytest.mark.parametrize("status, body, expected", [
    (200, {"data": [{"appointmentId": "1"}]}, "'date' is a required property"),
    (418, {"error": {"code": "X", "message": "m"}}, "a status the document does not list"),
    (404, {"error": {"code": "SLOT_NOT_AVAILABLE", "message": "m"}}, "is not one of"),
    (200, {"data": [], "extra": 1}, "Additional properties are not allowed"),
])
def test_the_check_refuses_an_answer_that_breaks_the_document(status, body, expected):
    problems = Contract(DOCUMENT).problems("GET", "/appointments", status, JSON_HEADERS, json.dumps(body).encode())
    assert any(expected in problem for problem in problems), problems


def test_the_check_refuses_html_an_undocumented_path_a_missing_header_and_an_unexpected_body():
    contract = Contract(DOCUMENT)
    assert contract.problems("GET", "/health", 200, {**JSON_HEADERS, "content-type": "text/html"}, b"<p>ok</p>")
    assert contract.problems("GET", "/admin", 200, JSON_HEADERS, b"{}")
    assert contract.problems("DELETE", "/appointments/1", 204, {"x-request-id": "0" * 16}, b"{}")
    assert contract.problems("DELETE", "/appointments/1", 204, {}, b"")
    assert not contract.problems("DELETE", "/appointments/1", 204, {"x-request-id": "0" * 16}, b"")
    assert not contract.problems("GET", "/appointments/range", 200, JSON_HEADERS, b'{"data": []}')


@pytest.mark.parametrize("path, allowed", [("/appointments/confirm", "POST"), ("/appointments/range", "GET"),
                                           ("/appointments/end-of-reminder-day", "POST")])
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_wrong_method_beside_an_appointment_is_405_with_allow_as_documented(api, method, path, allowed):
    """Not an appointment called "confirm": the document's appointmentId is never one of
    these names, and each operation on it lists the 405 they answer (the check holds it)."""
    if (method, path) == ("GET", "/appointments/range"):
        return  # that one exists
    response = api.call(method, path, {} if method == "PUT" else None)
    assert response.status_int == 405 and response.json["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert response.headers["Allow"] == allowed
    schema = {"$ref": "urn:agenda:openapi#/paths/~1appointments~1{appointmentId}/parameters/0/schema"}
    assert list(Draft202012Validator(schema, registry=CONTRACT.registry).iter_errors(path.rsplit("/", 1)[1]))
    for name in ("get", "put", "delete"):
        assert DOCUMENT["paths"]["/appointments/{appointmentId}"][name]["responses"]["405"]
    problems = CONTRACT.problems(method, path, 405, {"content-type": "application/json",
                                                     "x-request-id": "0" * 16, "allow": allowed}, response.body)
    assert not problems, problems


def test_documented_dates_are_exactly_the_dates_the_server_reads():
    """Dates as "Lenient input, strict output" reads them: D/M/YYYY, DD/MM/YYYY, DD-MM-YYYY,
    YYYY-MM-DD; no impossible day, no year 0000."""
    pattern = re.compile(DOCUMENT["components"]["schemas"]["DateText"]["pattern"])
    days = [f"{n}" for n in range(0, 33)] + [f"{n:02d}" for n in range(0, 10)] + ["001"]
    months = [f"{n}" for n in range(0, 14)] + [f"{n:02d}" for n in range(0, 10)]
    years = ["0000", "0001", "0004", "0100", "0400", "1900", "2000", "2024", "2026", "2100", "9999", "10000", "999"]
    checked = 0
    for day in days:
        for month in months:
            for year in years:
                for text in (f"{day}/{month}/{year}", f"{day}-{month}-{year}", f"{year}-{month}-{day}",
                             f"{day}/{month}-{year}", f" {day}/{month}/{year} "):
                    try:
                        parse_date(text, "date")
                        read = True
                    except agenda.ClinicError:
                        read = False
                    assert bool(pattern.search(text)) == read, text
                    checked += 1
    assert checked > 60_000


@pytest.mark.parametrize("pointer, value, valid", [
    ("/components/schemas/NewPatient", {"name": "Ana", "nif": "12345678Z", "birthDate": ""}, True),
    ("/components/schemas/NewPatient", {"name": "Ana", "nif": "12345678Z", "birthDate": "  "}, True),
    ("/components/schemas/NewPatient", {"name": " ", "nif": "12345678Z"}, False),
    ("/components/schemas/ReminderDayEnd", {"dates": ["", "24/11/2026", " "]}, True),
    ("/components/schemas/ReminderDayEnd", {"dates": ["", " "], "date": "24/11/2026"}, True),
    ("/components/schemas/ReminderDayEnd", {"dates": ["", " "]}, False),
    ("/components/schemas/ReminderDayEnd", {"date": " ", "executionDate": ""}, False),
    ("/components/schemas/ReminderDayEnd", {}, False),
    ("/paths/~1appointments~1range/get/parameters/0/schema", "24/11/2026,,25/11/2026,", True),
    ("/paths/~1appointments~1range/get/parameters/0/schema", " , ", False),
    ("/paths/~1patients/get/parameters/0/schema", " ", False),
])
def test_the_document_takes_blank_items_and_states_what_is_required(pointer, value, valid):
    """Blank dates items and a blank birthDate are read as absent (the server's way); nif
    and one of date or dates are required, not blank."""
    problems = CONTRACT.validate(pointer, value)
    assert (not problems) == valid, problems


def fingerprint(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def test_every_change_to_the_api_and_to_the_catalogs_shape_is_in_the_changelog():
    """CHANGELOG.md names the fingerprints of openapi.json (its content, whatever its layout) and of the
    catalog CSV's columns: a change to either without an entry there fails here, with the new ones."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    api = fingerprint(json.dumps(DOCUMENT, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    catalog = fingerprint(",".join(CATALOG_COLUMNS))
    assert f"API fingerprint `{api}`" in changelog, f"note the change to openapi.json in CHANGELOG.md: {api}"
    assert f"Catalog fingerprint `{catalog}`" in changelog, f"note the catalog's new shape in CHANGELOG.md: {catalog}"


NIF_PATTERNS = {
    "GET /patients": next(p for p in DOCUMENT["paths"]["/patients"]["get"]["parameters"] if p["name"] == "nif"),
    "GET /appointments": next(p for p in DOCUMENT["paths"]["/appointments"]["get"]["parameters"] if p["name"] == "nif"),
}


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(hypothesis.strategies.text(alphabet="0123456789XYZABCLTxyzl .-_/\t", max_size=24))
def test_the_document_and_the_server_agree_on_the_shape_of_a_nif(text):
    """What the server accepts as a NIF is what openapi.json's pattern states once separators are
    dropped; the one rule left to the server is a DNI's or NIE's letter (a checksum)."""
    patterns = {re.compile(spec["schema"]["pattern"]) for spec in NIF_PATTERNS.values()}
    patterns.add(re.compile(DOCUMENT["components"]["schemas"]["NewPatient"]["properties"]["nif"]["pattern"]))
    assert len(patterns) == 1
    (pattern,) = patterns
    try:
        normalise_nif(text)
        accepted = True
    except agenda.ClinicError as error:
        accepted = False
        checksum = "check its digits and letter" in error.message
    if accepted or checksum:
        assert pattern.search(text), text
    else:
        assert not pattern.search(text), text


# Text fields and phones: what the document states is what the server takes (docs/design.md, "Text fields",
# "Patients")

def request_text_schemas():
    """(where, field name, schema) of every text the API reads from a request: each query value and each string
    of a body, a list's items too, with the DateText components where they are used."""
    found = []
    for path, item in DOCUMENT["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    found.append((f"{method.upper()} {path}?{parameter['name']}", parameter["name"],
                                  resolved(parameter["schema"])))
            body = operation.get("requestBody")
            if body:
                schema = resolved(body["content"]["application/json"]["schema"])
                for name, field in schema["properties"].items():
                    field = resolved(field)
                    if field.get("type") in ("array", ["array", "null"]):
                        found.append((f"{method.upper()} {path} {name}[]", None, resolved(field["items"])))
                    elif field.get("type") not in ("boolean",):
                        found.append((f"{method.upper()} {path} {name}", name, field))
    return found


def resolved(schema):
    if "$ref" in schema:
        return resolved(CONTRACT.resolve(schema["$ref"][1:]))
    if "oneOf" in schema:
        return resolved(next(option for option in schema["oneOf"] if option.get("type") != "null"))
    return schema


def test_every_text_the_api_reads_states_its_limit_and_takes_no_control_character():
    texts = request_text_schemas()
    assert len(texts) > 30
    for where, name, schema in texts:
        assert schema.get("maxLength") == (text_limit(name) if name else TEXT_LIMIT), where
        assert schema.get("not") == {"$ref": "#/components/schemas/HoldsControlCharacter"}, where
    control = re.compile(DOCUMENT["components"]["schemas"]["HoldsControlCharacter"]["pattern"])
    assert {chr(code) for code in range(0x110000) if control.search(chr(code))} == {
        chr(code) for code in range(0x110000) if CONTROL_CHARACTERS.search(chr(code))}


NUMBERS = itertools.count(1_000)  # a new patient's DNI for each example

PHONE_PATTERNS = [DOCUMENT["components"]["schemas"]["NewPatient"]["properties"]["phone"]["pattern"],
                  next(p for p in DOCUMENT["paths"]["/appointments"]["get"]["parameters"]
                       if p["name"] == "phone")["schema"]["pattern"]]


def test_the_document_states_the_servers_phone_pattern_wherever_a_phone_is_read():
    assert PHONE_PATTERNS == [PHONE_PATTERN, PHONE_PATTERN]
    phones = [name for _, name, _ in request_text_schemas() if name and "phone" in name.lower()]
    assert phones == ["phone", "phone"]


@pytest.mark.parametrize("text, e164", [
    ("612345678", "+34612345678"), ("612 34 56 78", "+34612345678"), (" +34 612-34-56-78 ", "+34612345678"),
    ("0034.612.34.56.78", "+34612345678"), ("969 12 34 56", "+34969123456"),
    # Spanish ranges phonenumbers' metadata does not know today: taken as written, never refused
    ("750000000", "+34750000000"), ("801234567", "+34801234567"), ("+34 990 000 000", "+34990000000"),
    ("905123456", "+34905123456"),
    # E.164 of other countries, known to phonenumbers or not (an unassigned code, the shortest, the longest)
    ("+447911123456", "+447911123456"), ("+12025550123", "+12025550123"), ("+9991234", "+9991234"),
    ("+683 4002".replace(" ", ""), "+6834002"), ("+999999999999999", "+999999999999999"),
])
def test_phones_on_the_patterns_edges_are_taken_in_e164(text, e164):
    assert re.search(PHONE_PATTERN, text)
    assert parse_phone(text.strip()) == e164


@pytest.mark.parametrize("text, e164", [
    ("61234567", None), ("6123456789", None), ("+3461234567", None), ("+34 6123456789", None), ("+123456", None),
    ("+1234567890123456", None), ("+0123456789", None),  # a digit short or too many: a transcription error
    ("512345678", "+34512345678"), ("00 34 612345678", "+34612345678"), ("(+34) 612 345 678", "+34612345678"),
    ("+44 7911 123456", "+447911123456"),  # real numbers written otherwise: read by phonenumbers
])
def test_what_the_pattern_leaves_out_the_server_reads_by_phonenumbers(text, e164):
    """Outside the pattern the server still takes a real number (lenient input) and refuses a wrong one."""
    assert not re.search(PHONE_PATTERN, text)
    if e164 is None:
        with pytest.raises(agenda.ClinicError) as refused:
            parse_phone(text)
        assert refused.value.code == "INVALID_PHONE"
    else:
        assert parse_phone(text) == e164


def test_the_document_states_the_email_pattern_the_service_checks():
    assert DOCUMENT["components"]["schemas"]["NewPatient"]["properties"]["email"]["pattern"] == EMAIL_PATTERN


@hypothesis.settings(max_examples=200, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(email=hypothesis.strategies.from_regex(EMAIL_PATTERN, fullmatch=True).filter(
    lambda text: len(text) <= text_limit("email")))
def test_every_email_the_document_allows_is_taken_and_kept_as_typed(api, email):
    created = api.post("/patients", {"name": "Ana", "nif": valid_dni(next(NUMBERS)), "email": email})
    assert created.status_int == 201, (email, created.text)
    stored, = api.db().execute("SELECT email FROM patients WHERE id = ?", (created.json["patientId"],)).fetchone()
    if email.strip():
        local, domain = email.strip().rsplit("@", 1)
        assert stored == f"{local}@{domain.lower()}"
    else:
        assert stored is None


@hypothesis.settings(max_examples=300, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(phone=hypothesis.strategies.from_regex(PHONE_PATTERN, fullmatch=True).filter(
    lambda text: len(text) <= TEXT_LIMIT))  # the document's maxLength too, as a client keeps both
def test_every_phone_the_document_allows_is_taken_by_the_server(api, phone):
    """A generated client's phones, drawn from the document's own pattern: a new patient with one is created,
    and a search by it is never INVALID_PHONE."""
    created = api.post("/patients", {"name": "Ana", "nif": valid_dni(next(NUMBERS)), "phone": phone})
    assert created.status_int == 201, (phone, created.text)
    stored, = api.db().execute("SELECT phone_e164 FROM patients WHERE id = ?", (created.json["patientId"],)).fetchone()
    digits = re.sub(r"[^0-9]", "", phone)
    if not digits:
        assert stored is None
    elif phone.strip().startswith("+"):
        assert stored == "+" + digits or phonenumbers.is_valid_number(phonenumbers.parse(stored)), (phone, stored)
    else:
        assert stored == "+34" + digits[-9:], (phone, stored)
    searched = api.get(f"/appointments?phone={quote(phone, safe='')}")
    assert searched.status_int in (200, 400), searched.text
    assert searched.status_int == 200 or not digits, searched.text  # blank: no search, date required
