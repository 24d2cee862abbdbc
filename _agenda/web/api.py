"""The caller's API: signatures, the plugin that guards every API route, the handlers and API_ROUTES."""

import base64
import hmac
import json
import logging
import re
import sqlite3
import threading
import time

import bottle

from ..values.refusals import body_too_large, ClinicError, invalid
from ..values.fields import (all_fields, body_text, body_text_list, iso_or_blank, optional_date, parse_date, parse_dates,
                     parse_time)
from ..storage.events import recall, remember
from ..domain.patients import PATIENT_COLUMNS, field_text
from .answers import (_JSON, BOTTLE_ERROR_MESSAGES, clinic, internal_error, json_bytes, logged_path, query_date,
                      query_text, raw_header, refusal_for, request_id, request_target, status_of, STATUS_ERROR_CODES)
from ..domain import changes
from ..domain.booking import Visit
from ..domain import registry
from ..domain.appointments import CALLER_APPOINTMENT, live_appointments, patient_appointments, read_appointment
from ..domain.availability import availability, catalog_lists
from ..domain.reminders import close_reminder_day

log = logging.getLogger("agenda")


def decode_signature(header):
    """The 32 digest bytes of an X-Signature: hex or base64, with or without 'sha256=' ("Signatures")."""
    text = (header or "").strip()
    if text[:7].lower() == "sha256=":
        text = text[7:]
    if re.fullmatch(r"[0-9a-fA-F]{64}", text):
        return bytes.fromhex(text)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            digest = decode(text + "=" * (-len(text) % 4))
        except ValueError:
            continue
        if len(digest) == 32:
            return digest
    return None


def sign(secret, message):
    """HMAC-SHA256 of message (bytes) keyed with the shared secret."""
    return hmac.digest(secret.encode("utf-8"), message, "sha256")  # OpenSSL's one-shot HMAC, in C


def signed_messages(method, target, body):
    """What each scheme signs ("Signatures"): the raw body, or method, path with query, and body."""
    return {"body": body, "request": method.encode() + b"\n" + target.encode("latin-1", "replace") + b"\n" + body}


SIGNED_SCHEMES = ("request", "body")  # what `auto` accepts, the stronger first


SCHEME_WARNINGS = {
    "body": "signature scheme 'body': a GET or DELETE has no body, so whoever sees one signature of an "
            "empty body can read any patient and cancel any appointment; use 'request' once the caller can",
    "auto": "signature scheme 'auto' takes either scheme, so the weaker 'body' too: use it only to learn "
            "the caller's scheme (the log names it), then pin that one",
}


def matching_schemes(secret, header, method, target, body, schemes=SIGNED_SCHEMES):
    """Every one of `schemes` whose signature matches this request, the stronger first. All
    are compared, in constant time, so timing tells nothing about which failed."""
    given = decode_signature(header)
    if given is None:
        return []
    messages = signed_messages(method, target, body)
    return [scheme for scheme in schemes if hmac.compare_digest(sign(secret, messages[scheme]), given)]


def signature_problem(header):
    """Why an X-Signature can match nothing whatever was signed, or None when it is a digest."""
    if not header:
        return "no X-Signature header"
    if decode_signature(header) is not None:
        return None
    text = header.strip()[7:] if header.strip()[:7].lower() == "sha256=" else header.strip()
    if re.fullmatch(r"[0-9a-fA-F]+", text):
        return f"hex of the wrong length ({len(text)} digits; an HMAC-SHA256 has 64)"
    if re.fullmatch(r"[A-Za-z0-9+/_-]+=*", text):
        return "base64 of the wrong length (an HMAC-SHA256 is 32 bytes)"
    return "neither hex nor base64"


BODYLESS_METHODS = ("GET", "HEAD", "DELETE")  # the spec sends no body with them


def slots_json(slots):
    """Free slots as the caller sees them ("Availability"), as a JSON array's text: each
    {date, time, duration, doctorId, doctorName, specialityId, centerId}."""
    shared = {}  # what a doctor's slots at one center have in common, encoded once
    parts = []
    for slot in slots:
        key = (slot.doctor_id, slot.center_id)
        if key not in shared:
            shared[key] = json.dumps({"doctorId": slot.doctor_id, "doctorName": slot.doctor_name,
                                      "specialityId": slot.speciality_id, "centerId": slot.center_id},
                                     separators=(",", ":"))[1:]
        parts.append(f'{{"date":"{slot.date_text}","time":"{slot.time}","duration":{slot.duration},{shared[key]}')
    return "[" + ",".join(parts) + "]"


# What the caller reads of a patient, and what it may send (PATIENT_COLUMNS' `api`), each under its field.
API_PATIENT = tuple(column for column in PATIENT_COLUMNS if column.api == "both")
API_SENT = tuple(column for column in PATIENT_COLUMNS if column.api in ("both", "sent"))


def patient_view(patient):
    """A patient as the caller sees it ("Patients"): API_PATIENT, the NIF theirs or their live guardian's."""
    return {"id": str(patient["id"]), **{column.field: field_text(column, patient[column.key], None)
                                        for column in API_PATIENT}, "nif": patient["shown_nif"], "extra": None}


# Refusals whose code the caller's spec does not know, as the caller reads them ("Errors").
WIRE_CODES = {"DATABASE_BUSY": "SERVICE_UNAVAILABLE", "NOT_REPLICATED": "SERVICE_UNAVAILABLE",
              "APPOINTMENT_CANCELLED": "APPOINTMENT_PREVIOUSLY_CANCELLED"}


def api_refusal(error):
    """A refusal as the caller reads it ("Errors"): the status of its own code, the code the caller's
    spec names (WIRE_CODES), its message and fields."""
    bottle.response.status = status_of(error)
    bottle.response.content_type = "application/json"
    return json_bytes({"error": {"code": WIRE_CODES.get(error.code, error.code), "message": error.message,
                                 **error.extra}})


def note_signatures(db, clock, counts):
    """Add {scheme: signed requests} to what `agenda status` shows; never fails a request for it."""
    try:
        with db.transaction() as conn:
            for scheme, count in counts.items():
                noted, _ = recall(conn, f"signature_scheme.{scheme}")
                total = count + (noted.get("count", 0) if isinstance(noted, dict) else 0)
                remember(conn, f"signature_scheme.{scheme}", {"count": total}, clock())
    except sqlite3.Error as error:
        log.warning("could not note the signature schemes: %s", error)


def api_error_page(http_error):
    """Bottle's own errors (an unknown route, a wrong method, a crash) as the caller's JSON, never HTML."""
    status = http_error.status_code
    code = STATUS_ERROR_CODES.get(status, f"HTTP_{status}")
    message = BOTTLE_ERROR_MESSAGES.get(status, bottle.HTTP_CODES.get(status, "error").lower())
    extra = {}
    if status >= 500:
        extra["requestId"] = request_id()
        log.error("request %s failed: %s", extra["requestId"], http_error.exception)
    else:
        request_id()
    bottle.response.content_type = "application/json"
    return json_bytes(ClinicError(code, message, **extra).payload())


class ApiPlugin:
    """Wraps every route: request id, body limit, signature, JSON answers and errors."""

    name = "agenda"
    api = 2

    NOTE_EVERY_SECONDS = 60  # how often the count of signed requests per scheme is written down

    def __init__(self, secret, settings, on_signatures=None):
        self.secret = secret
        self.settings = settings
        self.on_signatures = on_signatures or (lambda counts: None)
        self.seen, self.unnoted, self.noted_at, self.counting = set(), {}, 0.0, threading.Lock()

    def apply(self, callback, route):
        if route.config.get("desk") or route.config.get("feed") or route.config.get("patient"):
            return callback  # the desk's own plugin guards it, a feed's token opens only it; a signature neither
        public = route.config.get("public", False)

        def wrapper(*args, **kwargs):
            request = bottle.request
            rid = request_id()
            try:
                raw = request.environ["agenda.raw_body"] = self.read_body(request)
                if not public and self.secret is not None:
                    self.check_signature(request, raw)
                if raw and request.method in BODYLESS_METHODS:
                    raise invalid(f"a {request.method} request carries no body; send it without one", "no_body")
                result = callback(*args, **kwargs)
            except Exception as error:
                refusal = refusal_for(error)
                return api_refusal(refusal) if refusal else internal_error(rid)
            if result is None:
                return b""
            bottle.response.content_type = "application/json"
            return result if isinstance(result, bytes) else json_bytes(result)

        return wrapper

    def read_body(self, request):
        """The raw body, refused with 413 past the limit (before reading, when it says its length)."""
        limit = self.settings.max_body_bytes
        try:
            declared_length = request.content_length
        except ValueError:
            raise ClinicError("INVALID_REQUEST", "Content-Length is not a number", "content_length") from None
        if declared_length <= 0 and "chunked" not in request.environ.get("HTTP_TRANSFER_ENCODING", "").lower():
            return b""  # no body: nothing to read (most GETs and DELETEs)
        raw = b"" if declared_length > limit else request.body.read(limit + 1)
        if declared_length > limit or len(raw) > limit:
            raise body_too_large(limit)
        return raw

    def check_signature(self, request, raw):
        """401 unless X-Signature matches a scheme this server accepts ("Signatures"); a refusal
        is logged with why, never with the signature, the secret or the query ("The caller's scheme")."""
        pinned = self.settings.signature_scheme
        allowed = SIGNED_SCHEMES if pinned == "auto" else (pinned,)
        header = raw_header(request.environ, "X-Signature")
        target = request_target(request.environ)
        accepted = matching_schemes(self.secret, header, request.method, target, raw, allowed)
        if not accepted:  # the schemes not taken are tried only now, to say why
            matched = matching_schemes(self.secret, header, request.method, target, raw,
                                       [scheme for scheme in SIGNED_SCHEMES if scheme not in allowed])
            why = signature_problem(header) or (
                f"signed with the {matched[0]!r} scheme, and this server takes {pinned!r} (--signature-scheme)"
                if matched else "it matches no scheme")
            log.warning("request %s: signature refused: %s; tried %s; body %d bytes, path %s, query %d bytes",
                        request_id(), why, " and ".join(allowed), len(raw), logged_path(request.environ),
                        len(request.environ.get("QUERY_STRING", "").encode("latin-1")))
            raise ClinicError("INVALID_SIGNATURE", "missing or invalid X-Signature")
        self.count_signature(accepted[0])

    def count_signature(self, scheme):
        """Count the signed requests per scheme; hand the counts over (for `agenda status`) when a
        scheme is first seen, then at most every NOTE_EVERY_SECONDS."""
        with self.counting:
            self.unnoted[scheme] = self.unnoted.get(scheme, 0) + 1
            new = scheme not in self.seen
            self.seen.add(scheme)
            if not new and time.monotonic() - self.noted_at < self.NOTE_EVERY_SECONDS:
                return
            counts, self.unnoted, self.noted_at = self.unnoted, {}, time.monotonic()
        if new:
            log.info("the caller signs with the %r scheme", scheme)
        self.on_signatures(counts)


def json_body():
    """The request's JSON object: 415 for another media type, 400 INVALID_JSON for anything but
    an object of text UTF-8 can carry ("No input reaches a 500")."""
    request = bottle.request
    media_type = (request.content_type or "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ClinicError("UNSUPPORTED_MEDIA_TYPE", "send the body as Content-Type: application/json")

    def no_constants(name):
        raise ValueError(name)

    try:
        body = json.loads(request.environ["agenda.raw_body"].decode("utf-8"), parse_constant=no_constants)
        _JSON.encode(body).encode("utf-8")  # every text, keys too, must be one UTF-8 can carry
    except RecursionError:
        raise ClinicError("INVALID_JSON", "the body nests too deep") from None
    except UnicodeEncodeError:
        raise ClinicError("INVALID_JSON", "the body holds a lone surrogate (\\ud800 to \\udfff)") from None
    except (ValueError, UnicodeDecodeError):
        raise ClinicError("INVALID_JSON", "the body is not valid UTF-8 JSON") from None
    if not isinstance(body, dict):
        raise ClinicError("INVALID_JSON", "the body must be a JSON object")
    return body


def created(payload):
    bottle.response.status = 201
    return payload


# Handlers: read the request, call the clinic, shape the answer. Mounted by API_ROUTES.

def health():
    """200 with what the replica is doing, or 503 whenever a write would be refused: the database
    cannot be read, or with --ack-after-replication the replica does not answer."""
    clinic().conn().execute("SELECT 1").fetchone()
    app = bottle.request.app
    state = app.replica.state() if app.replica is not None else "off"
    if app.acknowledged and state != "ok":
        raise ClinicError("NOT_REPLICATED", f"changes are not acknowledged while the replica is {state}; retry")
    return {"status": "ok", "replica": state}


def openapi_document():
    """This API described in OpenAPI 3.1. It holds no data, so it needs no signature."""
    return bottle.request.app.openapi


def custom_config():
    return custom_config_of(catalog_lists(clinic()))


def custom_config_of(catalogs):
    """The catalogs as the caller reads them ("Catalogs"): doctors once per center, described."""
    doctors = []
    for doctor in catalogs["doctors"]:
        for center_id in doctor["centers"] or [None]:
            entry = {"id": doctor["id"], "name": doctor["name"], "speciality": doctor["speciality_id"]}
            if catalogs["centers"]:
                entry["idCenter"] = center_id
            if doctor["insurances"].get(center_id):
                entry["insurances"] = doctor["insurances"][center_id]
            doctors.append(entry)
    config = {
        "doctors": {"description": "Doctors; one entry per center where the doctor works. "
                                   "insurances, when present, lists the only insurances accepted at that center.",
                    "data": doctors},
        "specialities": {"description": "Specialities and appointment types", "data": catalogs["specialities"] + [
            {"id": kind["id"], "name": f"{kind['name']} ({kind['area']}, {kind['minutes']} min)"}
            for kind in catalogs["types"]]},
        "insurances": {"description": "Insurances, private patients included", "data": catalogs["insurances"]},
    }
    if catalogs["centers"]:
        config["centers"] = {"description": "Sites of the clinic", "data": catalogs["centers"]}
    return config


def find_patient():
    return patient_view(registry.find_patient(clinic(), query_text("nif", required=True), reader="api"))


def create_patient():
    body = json_body()
    return created({"patientId": registry.register_patient(
        clinic(), {column.field: body[column.field] for column in API_SENT if column.field in body})})


def availabilities():
    asked = all_fields({"single": lambda: query_date("date"),
                        "first": lambda: query_date("startDate", "dateFrom", "from"),
                        "last": lambda: query_date("endDate", "dateTo", "to")})
    first, last = asked["first"], asked["last"]
    if asked["single"] is not None and first is None and last is None:
        first = last = asked["single"]
    slots = availability(clinic(), doctor_id=query_text("doctorId"), speciality_id=query_text("specialityId"),
                         center_id=query_text("centerId"), insurance_id=query_text("insuranceId"),
                         first=first, last=last)
    return data_json(slots_json(slots))


def appointments():
    """One route, two jobs: the patient search with nif or phone, else the day list with date."""
    center_id, date_text = query_text("centerId"), query_text("date")
    nif, phone = query_text("nif"), query_text("phone")
    if nif is None and phone is None:
        if date_text is None:
            raise invalid("date (day list) or nif or phone (patient search) is required", "date_or_search")
        return data_json(live_appointments(clinic(), "api", "day", CALLER_APPOINTMENT, center_id=center_id,
                                           days=[parse_date(date_text, "date").isoformat()], to_call=False,
                                           pending=False))
    day = parse_date(date_text, "date") if date_text else None
    return data_json(patient_appointments(clinic(), nif=nif, phone=phone, day=day, center_id=center_id,
                                          shape=CALLER_APPOINTMENT, reader="api", pending=False))


def appointments_range():
    days = parse_dates(query_text("dates", required=True).split(","), "dates")
    return data_json(live_appointments(clinic(), "api", "day", CALLER_APPOINTMENT, days=days,
                                       center_id=query_text("centerId"), to_call=False, pending=False))


def appointment(appointment_id):
    return read_appointment(clinic(), appointment_id, "api", shape=CALLER_APPOINTMENT).encode()


def data_json(array_text):
    """{"data": [...]} around a JSON array SQLite wrote, without parsing it again."""
    return b'{"data":' + array_text.encode() + b"}"


def book_appointment():
    body = json_body()
    asked = all_fields({
        "day": lambda: parse_date(body_text(body, "date", required=True), "date"),
        "time_text": lambda: parse_time(body_text(body, "time", required=True), "time"),
        "doctor_id": lambda: body_text(body, "doctorId", required=True),
        "patient_id": lambda: body_text(body, "patientId", required=True),
        "speciality_id": lambda: body_text(body, "specialityId"),
        "insurance_id": lambda: body_text(body, "insuranceId"),
        "center_id": lambda: body_text(body, "centerId"),
        "reason": lambda: body_text(body, "reason")})
    day, time_text = asked.pop("day"), asked.pop("time_text")
    return created({"appointmentId": changes.book_appointment(clinic(), Visit(**asked), day=day,
                                                              time_text=time_text)})


def move_appointment(appointment_id):
    body = json_body()
    return {"appointmentId": changes.move_appointment(clinic(), appointment_id, **all_fields({
        "day": lambda: parse_date(body_text(body, "newDate", required=True), "newDate"),
        "time_text": lambda: parse_time(body_text(body, "newTime", required=True), "newTime")}))}


def cancel_appointment(appointment_id):
    changes.cancel_appointment(clinic(), appointment_id)
    bottle.response.status = 204


CONFIRM_STATES = {"already_confirmed": "alreadyConfirmed"}  # the caller's word for the clinic's


def confirm_appointment():
    body = json_body()
    state = changes.confirm_appointment(clinic(), **all_fields({
        "appointment_id": lambda: body_text(body, "appointmentId", required=True),
        "confirmed": lambda: body_flag(body, "confirmed")}))
    return {"status": CONFIRM_STATES.get(state, state)}


def body_flag(body, name):
    if not isinstance(body.get(name), bool):
        raise invalid(f"{name} is required and must be true or false", "flag", name)
    return body[name]


def reminder_days(body):
    """The days of a reminder close: `dates`, else `date`; a wrong `date` is refused even beside `dates`."""
    single = optional_date(body, "date")
    texts = body_text_list(body, "dates")
    if not texts and single is None:
        raise invalid("date or dates is required", "date_or_dates")
    return parse_dates(texts, "dates") if texts else [single.isoformat()]


def end_of_reminder_day():
    body = json_body()
    closed = close_reminder_day(clinic(), **all_fields({
        "config_id": lambda: body_text(body, "voiceAgentConfigId") or "",
        "days": lambda: reminder_days(body),
        "execution": lambda: iso_or_blank(optional_date(body, "executionDate")),
        "skipped": lambda: set(body_text_list(body, "skipAppointmentIds")),
        "center_id": lambda: body_text(body, "centerId")}))
    answer = {"status": "ok", "processed": closed["processed"]}
    return {**answer, "repeated": True} if closed["repeated"] else answer


# An appointment's own path; never one of the named routes beside it, so that a wrong
# method there answers 405 with Allow, not 404 for an appointment called "confirm".
APPOINTMENT_PATH = "/appointments/<appointment_id:re:(?!(?:confirm|range|end-of-reminder-day)$)[^/]+>"


API_ROUTES = [  # (method, path, handler, route config)
    ("GET", "/health", health, {"public": True}),
    ("GET", "/openapi.json", openapi_document, {"public": True}),
    ("GET", "/custom-config", custom_config, {}),
    ("GET", "/patients", find_patient, {}),
    ("POST", "/patients", create_patient, {}),
    ("GET", "/availabilities", availabilities, {}),
    ("GET", "/appointments", appointments, {}),
    ("GET", "/appointments/range", appointments_range, {}),
    ("POST", "/appointments", book_appointment, {}),
    ("POST", "/appointments/confirm", confirm_appointment, {}),
    ("POST", "/appointments/end-of-reminder-day", end_of_reminder_day, {}),
    ("GET", APPOINTMENT_PATH, appointment, {}),
    ("PUT", APPOINTMENT_PATH, move_appointment, {}),
    ("DELETE", APPOINTMENT_PATH, cancel_appointment, {}),
]
