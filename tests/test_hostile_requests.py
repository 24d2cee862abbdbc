"""No input reaches a 500, one request per message, and a refused sender reads why
(docs/design.md, "No input reaches a 500", "Waitress's refusals").

Each class of failure is closed where it starts: headers are read as sent (never decoded
as UTF-8), JSON that nests too deep or holds a lone surrogate is INVALID_JSON, a message
framed two ways is refused and its connection closed, and a body over the limit is read
and dropped (within bounds) so that its sender gets the 413.
"""

import http.client
import json
import logging
import re
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from _agenda.web.answers import log_text
from _agenda.web.serving import LOG_FORMAT, OneLineFormatter
from conftest import SECRET, agenda_command, assert_error, days_ahead, raw_exchange, send, sign, table_rows
from test_errors import JSON_ROUTES

# Every text field of every JSON body the API reads, with a body that is otherwise valid.
TEXT_FIELDS = {
    ("POST", "/patients"): ({"name": "Ana", "nif": "12345678Z", "surname": "García", "phone": "612345678",
                             "birthDate": "01/02/1980"}, ["name", "nif", "surname", "phone", "birthDate"]),
    ("POST", "/appointments"): ({"date": "24/11/2026", "time": "10:00", "doctorId": "MARTIN", "patientId": "1",
                                 "reason": "Revisión", "centerId": "C1"},
                                ["date", "time", "doctorId", "patientId", "reason", "centerId"]),
    ("PUT", "/appointments/1"): ({"newDate": "24/11/2026", "newTime": "10:30"}, ["newDate", "newTime"]),
    ("POST", "/appointments/confirm"): ({"appointmentId": "1", "confirmed": True}, ["appointmentId"]),
    ("POST", "/appointments/end-of-reminder-day"): (
        {"voiceAgentConfigId": "va", "date": "24/11/2026", "executionDate": "23/11/2026", "centerId": "C1",
         "skipAppointmentIds": ["9"]}, ["voiceAgentConfigId", "date", "executionDate", "centerId"]),
}


@pytest.fixture
def booked(api):
    assert api.book(api.new_patient()) == "1"
    return api


def test_every_json_route_has_its_text_fields_listed():
    assert set(TEXT_FIELDS) == set(JSON_ROUTES)


@pytest.mark.parametrize("method, path", JSON_ROUTES)
def test_a_lone_surrogate_in_any_text_field_or_key_is_400_and_changes_nothing(booked, db_path, caplog, method, path):
    body, fields = TEXT_FIELDS[(method, path)]
    before = table_rows(db_path)
    for field in fields:
        for surrogate in ("\\ud800", "\\udfff", "Ana\\udc80"):
            raw = json.dumps({**body, field: "PLACEHOLDER"}).replace("PLACEHOLDER", surrogate).encode()
            assert_error(booked.call(method, path, raw=raw), 400, "INVALID_JSON")
    raw = json.dumps({**body, "PLACEHOLDER": "x"}).replace("PLACEHOLDER", "\\ud800").encode()
    assert_error(booked.call(method, path, raw=raw), 400, "INVALID_JSON")
    listed = json.dumps({**body, "skipAppointmentIds": ["PLACEHOLDER"]}).replace("PLACEHOLDER", "\\ud800")
    assert_error(booked.call(method, path, raw=listed.encode()), 400, "INVALID_JSON")
    assert table_rows(db_path) == before
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize("method, path", JSON_ROUTES)
@pytest.mark.parametrize("depth", [1_000, 5_000, 10_000])
def test_json_nested_very_deep_is_400_invalid_json(booked, db_path, caplog, method, path, depth):
    before = table_rows(db_path)
    for raw in (b'{"a":' + b"[" * depth + b"]" * depth + b"}", b'{"a":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"):
        assert_error(booked.call(method, path, raw=raw), 400, "INVALID_JSON")
    assert table_rows(db_path) == before
    assert "Traceback" not in caplog.text


def test_a_pair_of_surrogates_written_as_escapes_is_ordinary_text(booked):
    raw = json.dumps({"name": "PLACEHOLDER", "nif": "11111111H"}).replace("PLACEHOLDER", "Zo\\ud83d\\ude00")
    assert booked.post("/patients", raw=raw.encode()).status_int == 201
    assert booked.get("/patients?nif=11111111H").json["name"] == "Zo😀"


def test_a_get_or_delete_carrying_a_body_is_refused_400_and_changes_nothing(booked, db_path):
    """The spec sends no body with them; a signed text sent as one must never pass (Signatures)."""
    before = table_rows(db_path)
    for method, url in (("GET", "/custom-config"), ("GET", "/patients?nif=12345678Z"),
                        ("DELETE", "/appointments/1")):
        error = assert_error(booked.call(method, url, raw=b'{"a": 1}'), 400, "INVALID_REQUEST")
        assert "no body" in error["message"]
    assert table_rows(db_path) == before


@pytest.mark.parametrize("method, url, allowed", [
    ("GET", "/appointments/confirm", "POST"), ("PUT", "/appointments/confirm", "POST"),
    ("DELETE", "/appointments/confirm", "POST"), ("GET", "/appointments/end-of-reminder-day", "POST"),
    ("DELETE", "/appointments/end-of-reminder-day", "POST"), ("PUT", "/appointments/range", "GET"),
    ("DELETE", "/appointments/range", "GET"), ("POST", "/appointments/range", "GET"),
])
def test_a_wrong_method_on_a_named_route_is_405_with_allow(booked, db_path, method, url, allowed):
    before = table_rows(db_path)
    body = {"newDate": "24/11/2026", "newTime": "10:30"} if method in ("PUT", "POST") else None
    response = booked.call(method, url, body)
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert set(response.headers["Allow"].split(",")) >= {allowed}
    assert table_rows(db_path) == before


# On a real server: raw bytes, as an attacker sends them.

def statuses(received):
    return [int(line.split()[1]) for line in received.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]


def booked_on(server):
    _, patient = send(server.url, "POST", "/patients", {"name": "Ana", "nif": "12345678Z"})
    status, booking = send(server.url, "POST", "/appointments", {"date": days_ahead(3), "time": "09:00",
                                                                "doctorId": "MARTIN", "patientId": patient["patientId"]})
    assert status == 201, booking
    return booking["appointmentId"]


def test_non_utf8_bytes_in_any_header_are_refused_never_a_500(running, db_path):
    server = running()
    booked_on(server)
    before = table_rows(db_path)
    for header in (b"X-Signature: \xff\xfe\xe9" + b"0" * 61, b"X-Signature: sha256=\xc3\x28",
                   b"X-Signature: " + sign(b"", SECRET, "GET", "/custom-config").encode() + b"\xff",
                   b"Content-Type: application/json; charset=\xff", b"X-Anything: \x80\x81"):
        received = raw_exchange(server.url, b"GET /custom-config HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
                                         + header + b"\r\n\r\n")
        assert statuses(received) == [401], received
        assert json.loads(received.partition(b"\r\n\r\n")[2])["error"]["code"] == "INVALID_SIGNATURE"
    assert table_rows(db_path) == before
    server.terminate()
    assert "Traceback" not in server.log() and " 500 " not in server.log()


def test_content_length_beside_transfer_encoding_is_refused_and_nothing_after_it_runs(running, db_path):
    """RFC 9112, 6.1: a proxy that frames by Content-Length would pass the second request
    inside the first one's body; here the message is refused and its connection closed."""
    server = running()
    appointment_id = booked_on(server)
    before = table_rows(db_path)
    path = f"/appointments/{appointment_id}"
    smuggled = (f"DELETE {path} HTTP/1.1\r\nHost: a\r\nX-Signature: {sign(b'', SECRET, 'DELETE', path)}\r\n"
                "\r\n").encode()
    body = b"0\r\n\r\n" + smuggled
    for transfer_encoding in (b"chunked", b"gzip, chunked"):
        first = (b"POST /patients HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\nTransfer-Encoding: %s\r\n\r\n" % (len(body), transfer_encoding))
        received = raw_exchange(server.url, first + body)
        head = received.partition(b"\r\n\r\n")[0]
        assert statuses(received) in ([400], [501]), received  # one answer; the connection closed after it
        assert b"Connection: close" in head
        assert json.loads(received.partition(b"\r\n\r\n")[2])["error"]["code"] in ("INVALID_REQUEST",
                                                                                    "NOT_IMPLEMENTED")
    assert table_rows(db_path) == before
    status, appointment = send(server.url, "GET", path)
    assert status == 200 and appointment["appointmentId"] == appointment_id


def test_a_chunked_request_alone_is_still_served(running):
    server = running()
    body = json.dumps({"name": "Ana", "nif": "12345678Z"}).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    received = raw_exchange(server.url, b"POST /patients HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                                    b"Transfer-Encoding: chunked\r\nConnection: close\r\nX-Signature: "
                                    + sign(body, SECRET, "POST", "/patients").encode() + b"\r\n\r\n" + chunked)
    assert statuses(received) == [201], received


def test_the_sender_of_a_body_over_the_limit_reads_the_413(running):
    """http.client sends the whole 3 MiB, then reads: the server drops what it is sent
    (within bounds) before closing, so the answer is there to read, 20 times in 20."""
    server = running()
    parts = urlsplit(server.url)
    body = b"{" + b" " * (3 * 1024 * 1024) + b"}"
    answers = []
    for _ in range(20):
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        try:
            connection.request("POST", "/patients", body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            answers.append((response.status, json.loads(response.read())["error"]["code"]))
        except OSError as error:
            answers.append(type(error).__name__)
        finally:
            connection.close()
    assert answers == [(413, "PAYLOAD_TOO_LARGE")] * 20


def test_waitress_still_has_the_two_hooks_agenda_sets():
    """Waitress's refusals: Agenda's channel sets waitress's parser and error task classes.
    Should an upgrade rename or drop them, this fails before any refusal goes out as text."""
    import inspect

    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser
    from waitress.task import ErrorTask

    from _agenda.web.serving import json_refusing_channel

    assert HTTPChannel.parser_class is HTTPRequestParser and HTTPChannel.error_task_class is ErrorTask
    assert "header_plus" in inspect.signature(HTTPRequestParser.parse_header).parameters
    parser = HTTPRequestParser(_Adj())
    assert {"chunked", "headers", "error"} <= set(vars(parser)) | set(vars(HTTPRequestParser))
    channel = json_refusing_channel()
    assert issubclass(channel.parser_class, HTTPRequestParser) and issubclass(channel.error_task_class, ErrorTask)
    assert "execute" in vars(channel.error_task_class) and "parse_header" in vars(channel.parser_class)


class _Adj:
    """Just enough of waitress's Adjustments for a parser to be made."""
    url_scheme = "http"
    max_request_header_size = 262144
    max_request_body_size = 1073741824
    inbuf_overflow = 524288


def test_a_line_break_or_separator_in_a_desk_id_never_splits_a_log_line(running, db_path):
    """Every request is one access-log line, whatever a desk address carries ("Access log")."""
    subprocess.run(agenda_command("staff", "add", "ana", "--db", str(db_path)), input="correct horse battery\n",
                   text=True, check=True, capture_output=True, timeout=60)
    server = running()
    login = raw_exchange(server.url, b"POST /desk/login HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
                                     b"Cookie: agenda_login=tttttttttttttttt\r\n"
                                     b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 66\r\n\r\n"
                                     b"csrf=tttttttttttttttt&name=ana&password=correct+horse+battery&x=abc")
    cookie = re.search(rb"agenda_desk=[^;]+", login).group()
    hostile = ["/desk/doctors/A%0Afake%20line/retire", "/desk/doctors/A%0D%0Afake/retire",
               "/desk/doctors/A%E2%80%A8B%C2%85C/retire", "/desk/appointments/1%0A2", "/desk/patients/%0A",
               "/desk/x%0Ay%0D", "/desk/appointments/1%0A", "/desk/patients/1%0D%0A", "/desk/appointments/1%0B",
               "/appointments/1%0A", "/desk/appointments/1%1B%5B2J"]
    for path in hostile:
        for method in (b"GET", b"POST"):
            raw_exchange(server.url, method + b" " + path.encode() + b" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
                         b"Cookie: " + cookie + b"\r\nContent-Length: 6\r\n\r\ncsrf=x")
    server.terminate()
    lines = server.log().splitlines()
    lines = [line for line in lines if not line.startswith("Agenda ")]  # the log, without `agenda run`'s banner
    access = [line for line in lines if " agenda.access " in line]
    assert len(access) == 1 + 2 * len(hostile), server.log()  # the login, then one line a request
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ agenda[.\w]* .*", line) for line in lines), \
        server.log()  # every line is a record of its own: none begins inside another
    assert all(re.search(r" \d{3} \d+\.\dms rid=[0-9a-f]{16}$", line) for line in access), server.log()
    assert not [line for line in lines if "fake" in line]
    assert all(line.isprintable() for line in lines)
    assert "GET /desk/appointments/1\\n 404 " in server.log()  # bottle's route takes "1\n" (its $ before a last \n)


def test_every_record_of_the_services_log_is_one_line_whatever_its_message_holds():
    """`agenda run`'s formatter escapes what a message may carry from a request (a line break, a terminal's
    escape, a line separator); a traceback still follows its record."""
    formatter = OneLineFormatter(LOG_FORMAT)
    record = logging.LogRecord("agenda", logging.ERROR, __file__, 1, "request %s failed: %s",
                               ("7", "a\nb\r\x1b[2J\u2028\x85"), None)
    assert formatter.format(record).endswith("request 7 failed: a\\nb\\r\\x1b[2J\\u2028\\x85")
    try:
        raise ValueError("x")
    except ValueError:
        record.exc_info = sys.exc_info()
    assert formatter.format(record).splitlines()[0].endswith("\\x85") and "Traceback" in formatter.format(record)
    assert log_text("C:\\new\n") == "C:\\\\new\\n"  # a backslash sent is doubled: never read as an escape
