"""What both web edges answer with: request ids, the access log ("Access log"), JSON answers and errors
(`STATUS_OF`, `refusal_for`, "Errors"), query values, the request's Clinic, the one after-change hook, and the
pages' paths under a host's prefix (`rooted`, `rooted_page`)."""

import json
import logging
import random
import re
import sqlite3
import time
from urllib.parse import quote

import bottle

from ..values.refusals import ClinicError, invalid
from ..values.fields import parse_date, text_field

log = logging.getLogger("agenda")


def raw_header(environ, name):
    """A request header as sent, one character a byte (WSGI's latin-1), or None. Not
    bottle's get_header: it decodes UTF-8 and raises on any other byte."""
    return environ.get("HTTP_" + name.upper().replace("-", "_"))


def request_target(environ):
    """The path and query as the client sent them (waitress keeps REQUEST_URI)."""
    target = environ.get("REQUEST_URI") or environ.get("RAW_URI")
    if not target:
        raw_path = environ.get("SCRIPT_NAME", "") + environ.get("bottle.raw_path", environ.get("PATH_INFO", ""))
        target = quote(raw_path.encode("latin-1"), safe="/:@!$&'()*+,;=-._~%")
        if environ.get("QUERY_STRING"):
            target += "?" + environ["QUERY_STRING"]
    return target


def rooted(path):
    """A path of the app's own ('/desk/day') as a browser reaches it: after the prefix a host of clinics serves
    this clinic under (SCRIPT_NAME, "A host of clinics"); the path itself when there is none."""
    return bottle.request.environ.get("SCRIPT_NAME", "").rstrip("/") + path


ROOTED_LINK = re.compile(r'(\s(?:href|src|action|formaction)=")(?=/(?!/))')  # a page's link from the root: href="/


def rooted_page(page):
    """A page with every link, form action, script and stylesheet it writes from the root ('/desk/...') under the
    clinic's prefix: the one place the pages learn it, so no template names it; the page as is without one."""
    root = rooted("")
    return ROOTED_LINK.sub(lambda found: found[1] + root, page) if root else page


STATUS_ERROR_CODES = {400: "INVALID_REQUEST", 401: "INVALID_SIGNATURE", 404: "NOT_FOUND",
                      405: "METHOD_NOT_ALLOWED", 413: "PAYLOAD_TOO_LARGE",
                      415: "UNSUPPORTED_MEDIA_TYPE", 431: "HEADERS_TOO_LARGE", 500: "INTERNAL_ERROR",
                      501: "NOT_IMPLEMENTED"}


# The HTTP status of each refusal's code, for both edges ("Errors"): the domain speaks codes only.
STATUS_OF = {
    "INVALID_REQUEST": 400, "INVALID_JSON": 400, "INVALID_NIF": 400, "INVALID_PHONE": 400,
    "INVALID_SIGNATURE": 401, "LOGIN_FAILED": 401,
    "NOT_FOUND": 404, "APPOINTMENT_NOT_FOUND": 404, "CENTER_NOT_FOUND": 404, "CLOSURE_NOT_FOUND": 404,
    "DOCTOR_NOT_FOUND": 404, "FEED_NOT_FOUND": 404, "WAITLIST_NOT_FOUND": 404, "INSURANCE_NOT_FOUND": 404,
    "PATIENT_NOT_FOUND": 404, "SPECIALITY_NOT_FOUND": 404,
    "STAFF_NOT_FOUND": 404, "PATIENT_BLOCKED": 403, "METHOD_NOT_ALLOWED": 405,
    "APPOINTMENT_ALREADY_CANCELLED": 409, "APPOINTMENT_PREVIOUSLY_CANCELLED": 409, "INSURANCE_NOT_ACCEPTED": 409,
    "PATIENT_ALREADY_EXISTS": 409, "SLOT_NOT_AVAILABLE": 409, "STAFF_ALREADY_EXISTS": 409,
    "APPOINTMENT_ATTENDED": 409, "APPOINTMENT_NOT_TODAY": 409, "LINK_TO_CALL": 409, "LINK_TOO_LATE": 409,
    "LINK_SQUEEZED": 409, "WAITLIST_ALREADY_BOOKED": 409, "INSURANCE_REQUIRED": 400,
    "APPOINTMENT_CANCELLED": 410, "PAYLOAD_TOO_LARGE": 413, "LOGIN_BUSY": 429, "LOGIN_LOCKED": 429, "WEB_BUSY": 429,
    "WEB_CLOSED": 404, "UNSUPPORTED_MEDIA_TYPE": 415, "HEADERS_TOO_LARGE": 431,
    "INTERNAL_ERROR": 500, "NOT_IMPLEMENTED": 501,
    "DATABASE_BUSY": 503, "NOT_REPLICATED": 503, "SERVICE_UNAVAILABLE": 503,
}


def status_of(error):
    """The HTTP status of a refusal, by its code; 500 for a code no table knows (a bug)."""
    return STATUS_OF.get(error.code, 500)


BOTTLE_ERROR_MESSAGES = {404: "no such endpoint", 405: "method not allowed on this endpoint",
                         500: "unexpected error; the service logged it"}


_BUSY_MARKERS = ("locked", "busy", "readonly", "read-only", "disk", "full", "unable to open")


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def json_bytes(payload):
    """An answer's body: compact UTF-8 JSON."""
    return _JSON.encode(payload).encode("utf-8")


def new_request_id():
    """16 hex digits, unique enough to find one request in a day's log."""
    return f"{random.getrandbits(64):016x}"


def request_id():
    """This request's id, given by `with_access_log`; it is sent back as X-Request-Id."""
    environ = bottle.request.environ
    if "agenda.request_id" not in environ:
        environ["agenda.request_id"] = new_request_id()
    return environ["agenda.request_id"]


access_log = logging.getLogger("agenda.access")


_UNSAFE_IN_A_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def log_text(text):
    """Text from a request fit for one log line ("Access log"): a backslash, control characters and line
    separators written as escapes (\\, \\n, \\x1b, \\u2028), so that no request can end a line or forge one."""
    return _UNSAFE_IN_A_LINE.sub(_escape, str(text).replace("\\", "\\\\"))


def _escape(found):
    return found[0].encode("unicode_escape").decode("ascii")


def logged_path(environ):
    """The path for the access log, without what a caller's mistake could put there ("Access
    log"): a route's id only when it is a number (a NIF sent as an appointment id is not), an
    unknown path (or method) as `/?`, never the query string (it holds NIFs and phones); `log_text`."""
    if "bottle.route" not in environ:
        return "/?"
    path = environ.get("PATH_INFO", "")
    for value in environ.get("route.url_args", {}).values():
        if not str(value).isdigit():
            path = path.replace(str(value), "...")
    return log_text(path)


def with_access_log(wsgi):
    """WSGI middleware: a request id for every request, and one access-log line for each
    (method, path, status, duration in ms, request id), unknown routes and crashes included."""

    def app(environ, start_response):
        started = time.perf_counter()
        rid = environ["agenda.request_id"] = new_request_id()
        status = []

        def start(status_line, headers, exc_info=None):
            status.append(status_line.split(" ", 1)[0])
            return start_response(status_line, headers + [("X-Request-Id", rid)], exc_info)

        try:
            return wsgi(environ, start)
        finally:
            access_log.info("%s %s %s %.1fms rid=%s%s", log_text(environ.get("REQUEST_METHOD", "-")),
                            logged_path(environ), status[0] if status else "-", (time.perf_counter() - started) * 1000,
                            rid, f" clinic={environ['agenda.clinic']}" if "agenda.clinic" in environ else "")

    return app


def refusal_for(error):
    """What an exception means to either edge: a ClinicError as it is; a database that is busy or
    cannot be written, a 503 "try again" (DATABASE_BUSY); None for anything else, a bug ("Errors")."""
    if isinstance(error, sqlite3.OperationalError) and any(m in str(error).lower() for m in _BUSY_MARKERS):
        log.error("request %s: database unavailable: %s", request_id(), error)
        error = ClinicError("DATABASE_BUSY", "the agenda cannot write right now; try again")
    if not isinstance(error, ClinicError):
        return None
    if status_of(error) >= 500:
        error.extra.setdefault("requestId", request_id())
    return error


class AfterChange:
    """A bottle plugin installed once by `create_app` inside both edges' own: a change about to be
    answered as done (a 2xx or 3xx on POST, PUT or DELETE) is first handed to `hook`, which raises
    a ClinicError when it cannot hold it ("Replication": --ack-after-replication)."""

    name = "after_change"
    api = 2

    def __init__(self, hook):
        self.hook = hook

    def apply(self, callback, route):
        if self.hook is None or route.method not in ("POST", "PUT", "DELETE") or route.config.get("no_change"):
            return callback

        def wrapper(*args, **kwargs):
            try:
                result = callback(*args, **kwargs)
            except bottle.HTTPResponse as answer:  # the desk's redirect after a change
                if answer.status_code < 400:
                    self.hook()
                raise
            if bottle.response.status_code < 400:
                self.hook()
            return result
        return wrapper


def error_response(error):
    """A ClinicError as the JSON answer of "Errors"."""
    bottle.response.status = status_of(error)
    bottle.response.content_type = "application/json"
    return json_bytes(error.payload())


def internal_error(rid):
    """A 500 that names the request id; the traceback goes to the log, never to the caller."""
    log.exception("request %s failed", rid)
    return error_response(ClinicError("INTERNAL_ERROR", BOTTLE_ERROR_MESSAGES[500], requestId=rid))


def query_text(name, required=False):
    """A query-string value, read with getunicode so accents survive, through `text_field`; blank is None."""
    value = text_field(bottle.request.query.getunicode(name) or "", name)
    if not value:
        if required:
            raise invalid(f"{name} is required", "required", name)
        return None
    return value


def query_date(*names):
    """The date of the first of these aliases present, or None; every alias present must be a date."""
    days = [parse_date(text, name) for name in names if (text := query_text(name)) is not None]
    return days[0] if days else None


def clinic():
    """The Clinic of the app serving this request."""
    return bottle.request.app.clinic
