"""The web edge both channels share: request ids, the access log, JSON answers and errors, and
waitress (its channel, serving until stopped on one core, the log on stderr)."""

import contextlib
import json
import logging
import os
import random
import re
import select
import signal
import sqlite3
import time
from urllib.parse import quote

import bottle

from .refusals import body_too_large, ClinicError, invalid
from .fields import parse_date, text_field

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


STATUS_ERROR_CODES = {400: "INVALID_REQUEST", 401: "INVALID_SIGNATURE", 404: "NOT_FOUND",
                      405: "METHOD_NOT_ALLOWED", 413: "PAYLOAD_TOO_LARGE",
                      415: "UNSUPPORTED_MEDIA_TYPE", 431: "HEADERS_TOO_LARGE", 500: "INTERNAL_ERROR",
                      501: "NOT_IMPLEMENTED"}


# The HTTP status of each refusal's code, for both edges ("Errors"): the domain speaks codes only.
STATUS_OF = {
    "INVALID_REQUEST": 400, "INVALID_JSON": 400, "INVALID_NIF": 400, "INVALID_PHONE": 400,
    "INVALID_SIGNATURE": 401, "LOGIN_FAILED": 401,
    "NOT_FOUND": 404, "APPOINTMENT_NOT_FOUND": 404, "CENTER_NOT_FOUND": 404, "CLOSURE_NOT_FOUND": 404,
    "DOCTOR_NOT_FOUND": 404, "FEED_NOT_FOUND": 404, "WAITLIST_NOT_FOUND": 404, "INSURANCE_NOT_FOUND": 404, "PATIENT_NOT_FOUND": 404, "SPECIALITY_NOT_FOUND": 404,
    "STAFF_NOT_FOUND": 404, "PATIENT_BLOCKED": 403, "METHOD_NOT_ALLOWED": 405,
    "APPOINTMENT_ALREADY_CANCELLED": 409, "APPOINTMENT_PREVIOUSLY_CANCELLED": 409, "INSURANCE_NOT_ACCEPTED": 409,
    "PATIENT_ALREADY_EXISTS": 409, "SLOT_NOT_AVAILABLE": 409, "STAFF_ALREADY_EXISTS": 409,
    "APPOINTMENT_ATTENDED": 409, "APPOINTMENT_NOT_TODAY": 409, "WAITLIST_ALREADY_BOOKED": 409, "INSURANCE_REQUIRED": 400,
    "APPOINTMENT_CANCELLED": 410, "PAYLOAD_TOO_LARGE": 413, "LOGIN_BUSY": 429, "LOGIN_LOCKED": 429, "UNSUPPORTED_MEDIA_TYPE": 415, "HEADERS_TOO_LARGE": 431,
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
            access_log.info("%s %s %s %.1fms rid=%s", log_text(environ.get("REQUEST_METHOD", "-")),
                            logged_path(environ), status[0] if status else "-", (time.perf_counter() - started) * 1000,
                            rid)

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


LINGER_SECONDS, LINGER_IDLE_SECONDS, LINGER_BYTES = 1.0, 0.2, 8 * 1024 * 1024


def discard_unread(sock):
    """Read and drop what the client is still sending, within LINGER_* bounds, so that
    closing after a refusal does not reset the connection before the client reads why
    (nginx's lingering close). Called only while waitress's loop leaves the socket alone."""
    deadline, dropped = time.monotonic() + LINGER_SECONDS, 0
    while dropped < LINGER_BYTES:
        wait = min(LINGER_IDLE_SECONDS, deadline - time.monotonic())
        if wait <= 0 or not select.select([sock], [], [], wait)[0]:
            return
        try:
            chunk = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            return
        if not chunk:
            return
        dropped += len(chunk)


def json_refusing_channel():
    """waitress's channel with two class attributes of ours (docs/design.md, "Waitress's
    refusals"): a parser that refuses a message framed two ways, and an error task that
    answers waitress's own refusals (400, 413, 431, 501) as the JSON of "Errors", after
    `discard_unread`; and a `writable` that keeps the loop from spinning on a task's answer."""
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser, ParsingError
    from waitress.task import ErrorTask

    class OneMessageParser(HTTPRequestParser):
        def parse_header(self, header_plus):
            """RFC 9112, 6.1: Content-Length beside Transfer-Encoding may be a smuggled request."""
            super().parse_header(header_plus)
            if self.chunked and "CONTENT_LENGTH" in self.headers:
                raise ParsingError("Content-Length and Transfer-Encoding: send one of them")

    class JsonErrorTask(ErrorTask):
        def execute(self):
            refusal = self.request.error
            if refusal.code == 413:
                error = body_too_large(self.channel.adj.max_request_body_size - 1)
            else:
                error = ClinicError(STATUS_ERROR_CODES.get(refusal.code, f"HTTP_{refusal.code}"),
                                    refusal.body or refusal.reason.lower())
            body = json_bytes(error.payload())
            rid = new_request_id()
            access_log.info("- - %s 0.0ms rid=%s (refused by the server: %s)", refusal.code, rid, refusal.reason)
            discard_unread(self.channel.socket)
            self.status = f"{refusal.code} {refusal.reason}"
            self.response_headers += [("Content-Type", "application/json"), ("X-Request-Id", rid)]
            self.set_close_on_finish()
            self.content_length = len(body)
            self.write(body)

    class JsonRefusingChannel(HTTPChannel):
        parser_class = OneMessageParser
        error_task_class = JsonErrorTask

        writing = False  # a task's thread is in write_soon, holding (or about to take) the outbuf's lock

        def write_soon(self, data):
            self.writing = True
            try:
                return super().write_soon(data)
            finally:
                self.writing = False
                if self.total_outbufs_len and self.connected:
                    self.server.pull_trigger()  # what the socket did not take is the loop's to send

        def writable(self):
            """The loop does not ask to write while a task's thread is writing (it holds the lock the loop
            would need: the spin); what a write leaves, the loop sends (docs/design.md, "The loop that
            waited on itself")."""
            if self.will_close or self.close_when_flushed:
                return True
            return bool(self.total_outbufs_len) and (not (self.requests and self.writing)
                                                     or self.total_outbufs_len >= self.adj.outbuf_high_watermark)

    return JsonRefusingChannel


def make_server(app, **options):
    """waitress's server for `app` with Agenda's channel (`json_refusing_channel`), and
    the map its loop watches: the listeners, then each connection."""
    import waitress

    sockets = {}
    server = waitress.create_server(app, map=sockets, **options)
    channel = json_refusing_channel()
    for listener in sockets.values():
        if hasattr(listener, "channel_class"):
            listener.channel_class = channel
    return server, sockets


CORES = ("one", "all")  # `agenda run --cores`: the service's threads on one core, or on every core allowed


def current_core():
    """The core this thread last ran on (/proc/thread-self/stat's 39th field), or None where there is no /proc."""
    try:
        with open("/proc/thread-self/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None


def keep_to_one_core():
    """Keep every thread of this process, and those it starts later, on one core, the one it runs on: its
    threads then hand the interpreter's lock over without waking another core (docs/design.md, "One core").
    The core, said in the log (the system's, when it gives one only); None when the system cannot pin."""
    if not hasattr(os, "sched_setaffinity"):
        return None  # a system without cores to choose (not Linux)
    allowed = os.sched_getaffinity(0)
    if len(allowed) == 1:
        log.info("threads on core %s, the one the system gives", *allowed)
        return next(iter(allowed))
    core = current_core()
    core = core if core in allowed else min(allowed)
    try:
        pin_threads({core})
    except OSError as error:  # a sandbox that forbids it: serve on the cores given, every thread alike
        with contextlib.suppress(OSError):
            pin_threads(allowed)
        log.warning("cannot keep the threads on one core (%s); serving on the cores given", error)
        return None
    log.info("threads kept on core %s; --cores all to use every core", core)
    return core


def pin_threads(cores):
    """Every thread of this process on these cores (a thread that ends meanwhile skipped)."""
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(task), cores)


def serve_until_stopped(app, on_listening=None, cores="one", **options):
    """waitress until SIGTERM or Ctrl-C. On either, waitress stops taking requests and
    lets the ones in flight finish (its task dispatcher's shutdown) before we return.
    on_listening(url) runs once the port is bound: a port in use fails before it. cores: CORES."""
    server, _ = make_server(app, **options)
    if cores == "one":
        keep_to_one_core()

    def stop(signum, frame):
        raise SystemExit(0)  # waitress's loop catches it and shuts its threads down

    previous = signal.signal(signal.SIGTERM, stop)
    listening = getattr(server, "effective_listen", None) or [(server.effective_host, server.effective_port)]
    for host, port in listening:
        log.info("listening on http://%s:%s", host, port)
    if on_listening is not None:
        on_listening(f"http://{listening[0][0]}:{listening[0][1]}")
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
    log.info("stopped")


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class OneLineFormatter(logging.Formatter):
    """A record's message on one line whatever it holds: its control characters and line separators
    escaped (a traceback still follows it on lines of its own)."""

    def formatMessage(self, record):
        return _UNSAFE_IN_A_LINE.sub(_escape, super().formatMessage(record))


def log_to_stderr():
    """`agenda run`'s log on stderr, one line a record, written by the thread that logs it ("Access
    log"). Returns the handler, or None when the host program has set its own logging (tests do)."""
    root = logging.getLogger()
    if root.handlers:
        return None
    writer = logging.StreamHandler()
    writer.setFormatter(OneLineFormatter(LOG_FORMAT))
    root.addHandler(writer)
    root.setLevel(logging.INFO)
    return writer


def stop_logging(writer):
    """Give stderr back (the end of `log_to_stderr`)."""
    if writer is not None:
        writer.flush()
        logging.getLogger().removeHandler(writer)
