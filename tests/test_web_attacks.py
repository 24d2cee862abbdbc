"""The booking page proven as an attacker and as a patient would meet it (docs/design.md, "What an attacker can still
observe on the booking page"): a flood of pending bookings from many addresses meets each bound and the clinic's
ceiling while a patient holding a link still acts and the caller still books; one slot raced by the page, the caller
and the desk on a real server; a confirmation link opened twice, late and after release; hostile text in every field
inert at the desk, in the messages and in the export; one NIF from two browsers at once; and a known NIF with the
attacker's own e-mail reads, on the page and in every message to that address, byte for byte as an unknown one."""

import datetime as dt
import http.client
import json
import re
import threading
import urllib.parse

import pytest
import webtest
from bs4 import BeautifulSoup

import agenda
from _agenda.domain.links import new_link
from _agenda.domain.web_requests import new_token
from _agenda.storage.connections import transaction
from _agenda.words.texts import TEXTS
from conftest import Api, CLINIC_CSV, seed, sign, SECRET, valid_dni, write_csv

WEB = {"web_booking": "on", "web_privacy": "Clínica Sol trata sus datos para gestionar su cita.",
       "public_url": "https://citas.clinicasol.es", "clinic_name": "Clínica Sol"}
MARTIN = "/reservar?centro=C1&especialidad=MG&medico=MARTIN"
TODAY = dt.date(2026, 11, 23)  # the test clinic's Monday


def said(key):
    """The Spanish words of a TEXTS key up to its first placeholder: what a page of it says."""
    return TEXTS[key][0].split("{")[0]


def person(n, **typed):
    """Details the page's form takes, of someone new (n tells them apart)."""
    return {"nombre": "Nadia", "apellidos": f"Nueva {n}", "nacimiento": "01/02/1990", "nif": valid_dni(700 + n),
            "telefono": f"6990{n:05d}", "correo": f"nadia{n}@example.es", "privacidad": True, **typed}


class Browser:
    """A browser on the page from one address (`REMOTE_ADDR`, as waitress gives it)."""

    def __init__(self, app, address):
        self.client, self.environ = webtest.TestApp(app), {"REMOTE_ADDR": address}

    def details(self, day, time_text, query=MARTIN):
        """The details' form after choosing this time in its week; None when the week does not offer it."""
        week = TODAY + dt.timedelta(days=(day - TODAY).days // 7 * 7)
        page = self.client.get(f"{query}&semana={week.isoformat()}", extra_environ=self.environ)
        form = next(form for form in page.forms.values() if form.action.endswith("/reservar/datos"))
        wanted = [option[0] for option in form.fields["hueco"][0].options if option[0].startswith(f"{day} {time_text} ")]
        if not wanted:
            return None
        form["hueco"] = wanted[0]
        return form.submit(extra_environ=self.environ).forms[0]

    def book(self, day, time_text, **typed):
        """The booking asked for this time with these details: the answer."""
        return self.send(self.details(day, time_text), **typed)

    def send(self, form, **typed):
        for name, value in {**person(0), **typed}.items():
            form[name] = value
        return form.submit(extra_environ=self.environ, expect_errors=True)


@pytest.fixture
def api(make_api):
    """The test clinic with its page on (conftest's `server` serves it on a real waitress)."""
    return make_api(web_pending_ceiling=12, **WEB)


@pytest.fixture
def web(api):
    return api


def counts(api):
    return api.db().execute("SELECT (SELECT count(*) FROM appointments), (SELECT count(*) FROM patients),"
                            " (SELECT count(*) FROM outbox), (SELECT count(*) FROM web_requests)").fetchone()


def pending(api):
    return api.db().execute("SELECT count(*) FROM appointments WHERE pending = 'email'").fetchone()[0]


def day(offset):
    return TODAY + dt.timedelta(days=offset)


def test_a_flood_meets_each_bound_and_the_ceiling_while_a_link_s_patient_acts_and_the_caller_books(web):
    holder = web.new_patient(nif=valid_dni(600), email="eva@example.es")
    held = web.book(holder, date="26/11/2026", time="10:30")
    with transaction(web.db()) as conn:
        link = new_link(conn, held, "message", web.app.clinic.clock())
    refused, n = [], iter(range(1, 100))

    def ask(address, when, time_text="09:00", expect=200, **typed):
        before = counts(web)
        answer = Browser(web.app, address).book(day(when), time_text, **person(next(n), **typed))
        assert answer.status_int == expect, (address, when, answer.text[-400:])
        if expect == 429:
            assert counts(web) == before and said("web_busy") in answer.text  # a refusal writes nothing
            refused.append(answer.body)
        return answer
    for when in (1, 3, 4):  # one /64: its addresses are one
        ask(f"2001:db8:aa:1::{when}", when)
    ask("2001:db8:aa:1:ffff::9", 7, expect=429)
    ask("2001:db8:aa:2::1", 7)  # the next /64 is someone else
    ask("198.51.100.1", 8, correo="Eve@Example.es")
    ask("198.51.100.2", 9, correo="eve@example.ES")
    ask("198.51.100.3", 10, correo="EVE@example.es", expect=429)  # one e-mail, case folded: 2 pending
    ask("198.51.100.4", 10, nif=valid_dni(650))
    ask("198.51.100.5", 11, nif=valid_dni(650))
    ask("198.51.100.6", 14, nif=valid_dni(650), expect=429)  # one NIF: 2 pending
    late = Browser(web.app, "198.51.100.7").details(day(1), "10:30")  # a form got before the day's cap
    ask("198.51.100.8", 1, "09:30")
    ask("198.51.100.9", 1, "10:00")  # Tuesday: 3 pending for Martín
    assert Browser(web.app, "198.51.100.10").details(day(1), "10:30") is None  # the day is left out of the page
    before = counts(web)
    answer = Browser(web.app, "198.51.100.7").send(late, **person(90))  # its other times offered, nothing written
    assert answer.status_int == 409 and said("web_taken") in answer.text and counts(web) == before
    ask("192.0.2.1", 14)
    ask("192.0.2.2", 16)
    assert pending(web) == 12  # the clinic's ceiling
    ask("192.0.2.3", 17, expect=429)
    assert len(set(refused)) == 1  # every bound answers the same page: which one was met is not said
    patient = webtest.TestApp(web.app)
    assert patient.get(f"/cita/{link}").status_int == 200  # a patient holding their link still acts
    assert patient.post(f"/cita/{link}/confirmar", {"csrf": re.search(
        r'name="csrf" value="([0-9a-f]+)"', patient.get(f"/cita/{link}").text)[1]}).status_int in (200, 303)
    assert web.db().execute("SELECT status FROM appointments WHERE id = ?", (held,)).fetchone()[0] == "confirmed"
    assert web.book(web.new_patient(nif=valid_dni(601)), date="24/11/2026", time="10:30")  # the caller still books
    assert [a["time"] for a in web.get("/appointments?date=24/11/2026").json["data"]] == ["10:30"]
    first = web.db().execute("SELECT appointment_id FROM web_requests ORDER BY id LIMIT 1").fetchone()[0]
    with transaction(web.db()) as conn:
        token = new_token(conn, first)
    answer = webtest.TestApp(web.app).post(f"/reservar/confirmar/{token}")
    assert said("web_confirmed") in answer.text  # one who holds the page's link confirms at the ceiling
    ask("192.0.2.4", 17)  # and that frees its place under the ceiling


def post(base, path, body, headers, source="127.0.0.1"):
    """One POST to the real server from the loopback address `source`: (status, body)."""
    parts = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60, source_address=(source, 0))
    try:
        connection.request("POST", path, body, headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode("utf-8", "replace")
    finally:
        connection.close()


def page_request(web, address, day_, time_text, **typed):
    """The page's last POST for this time, as its browser would send it: (path, body, headers)."""
    form = Browser(web.app, address).details(day_, time_text)
    for name, value in {**person(0), **typed}.items():
        form[name] = value
    return "/reservar/enviar", urllib.parse.urlencode(form.submit_fields()), {
        "Content-Type": "application/x-www-form-urlencoded"}


def desk_session(web):
    """A receptionist logged in: (the session's cookie header, its CSRF token)."""
    web.app.accounts.add_staff("ana", "correct horse battery")
    client = webtest.TestApp(web.app)
    form = client.get("/desk/login").forms[0]
    form["name"], form["password"] = "ana", "correct horse battery"
    form.submit()
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/desk/day").text)[1]
    return f"agenda_desk={client.cookies['agenda_desk']}", csrf


def at_once(*sends):
    """Each (function, args) started together behind one barrier; their answers in order."""
    barrier, answers = threading.Barrier(len(sends)), [None] * len(sends)

    def run(index, function, args):
        barrier.wait(timeout=60)
        answers[index] = function(*args)
    threads = [threading.Thread(target=run, args=(index, *each)) for index, each in enumerate(sends)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return answers


def test_one_slot_raced_by_the_page_the_caller_and_the_desk_goes_to_exactly_one_the_others_refused_in_words(
        web, server):
    cookie, csrf = desk_session(web)
    caller_patient, desk_patient = web.new_patient(nif=valid_dni(610)), web.new_patient(nif=valid_dni(611))
    for round_, time_text in enumerate(("09:00", "09:30", "10:00", "10:30")):
        page = page_request(web, f"127.0.0.{10 + round_}", day(3), time_text, **person(20 + round_))
        caller = json.dumps({"date": "26/11/2026", "time": time_text, "doctorId": "MARTIN",
                             "patientId": caller_patient}).encode()
        desk = urllib.parse.urlencode({"csrf": csrf, "doctorId": "MARTIN", "date": "26/11/2026", "time": time_text,
                                       "centerId": "C1", "patientId": desk_patient})
        answers = at_once(
            (post, (server, *page, f"127.0.0.{10 + round_}")),
            (post, (server, "/appointments", caller, {"Content-Type": "application/json", "X-Signature": sign(
                caller, SECRET, "POST", "/appointments")})),
            (post, (server, "/desk/book", desk, {"Content-Type": "application/x-www-form-urlencoded",
                                                 "Cookie": cookie})))
        won = [answer for answer, done in zip(answers, (200, 201, 303)) if answer[0] == done]
        assert len(won) == 1, [status for status, _ in answers]
        page_answer, caller_answer, desk_answer = answers
        assert page_answer[0] == 200 or (page_answer[0] == 409 and said("web_taken") in page_answer[1])
        assert caller_answer[0] == 201 or (caller_answer[0] == 409 and json.loads(caller_answer[1])["error"][
            "code"] == "SLOT_NOT_AVAILABLE")
        assert desk_answer[0] == 303 or (desk_answer[0] == 409 and "class=\"error\"" in desk_answer[1])
        assert web.db().execute("SELECT count(*) FROM appointments WHERE date = '2026-11-26' AND time = ? AND status"
                                " != 'cancelled'", (time_text,)).fetchone()[0] == 1


def token_of_last(api):
    """The confirmation link's token of the newest request, as the sender makes it when it writes the message."""
    with transaction(api.db()) as conn:
        return new_token(conn, conn.execute("SELECT appointment_id FROM web_requests ORDER BY id DESC LIMIT 1")
                         .fetchone()[0])


def test_a_confirmation_link_opened_twice_late_or_after_release_answers_in_words_and_confirms_once(web, clock):
    patient = webtest.TestApp(web.app)
    assert Browser(web.app, "203.0.113.1").book(day(1), "09:00", **person(30)).status_int == 200
    token = token_of_last(web)
    for _ in range(2):  # a mail scanner opens it first: a GET changes nothing
        assert patient.get(f"/reservar/confirmar/{token}").status_int == 200
    assert pending(web) == 1
    answers = [patient.post(f"/reservar/confirmar/{token}") for _ in range(2)]
    assert said("web_confirmed") in answers[0].text and said("web_already") in answers[1].text
    assert said("web_already") in patient.get(f"/reservar/confirmar/{token}").text
    assert [kind for (kind,) in web.db().execute("SELECT kind FROM outbox ORDER BY id")] == ["web", "confirmation"]
    assert Browser(web.app, "203.0.113.2").book(day(1), "09:30", **person(31)).status_int == 200
    late = token_of_last(web)
    clock.moment += dt.timedelta(minutes=15)  # its time is up: late, though nothing released it yet
    before = counts(web)
    assert said("web_request_expired") in patient.get(f"/reservar/confirmar/{late}").text
    assert said("web_request_expired") in patient.post(f"/reservar/confirmar/{late}").text
    assert pending(web) == 0 and counts(web)[3] == before[3]  # the POST's transaction released it
    assert Browser(web.app, "203.0.113.3").book(day(1), "10:00", **person(32)).status_int == 200
    released = token_of_last(web)
    clock.moment += dt.timedelta(minutes=20)
    taken = web.book(web.new_patient(nif=valid_dni(612)), date="24/11/2026", time="10:00")  # released, then booked
    for opened in (patient.get(f"/reservar/confirmar/{released}"), patient.post(f"/reservar/confirmar/{released}")):
        assert opened.status_int == 200 and said("web_request_expired") in opened.text
    assert web.db().execute("SELECT status, pending FROM appointments WHERE id = ?", (taken,)).fetchone()[:] == (
        "booked", None)  # the caller's visit in that slot is untouched
    assert patient.post(f"/reservar/confirmar/{'x' * 40}", expect_errors=True).status_int == 200  # said, no 500


@pytest.mark.parametrize("second_email", ["nadia40@example.es", "otra.persona@example.es"],
                         ids=["the same e-mail", "another e-mail"])
def test_one_nif_from_two_browsers_at_once_books_both_answers_alike_and_keeps_the_nif_unique(
        web, server, second_email):
    typed = person(40, nif=valid_dni(640))
    sends = [page_request(web, f"127.0.0.{20 + n}", day(1), time_text, **{**typed, "correo": email})
             for n, (time_text, email) in enumerate((("09:00", typed["correo"]), ("09:30", second_email)))]
    answers = at_once(*((post, (server, *send, f"127.0.0.{20 + n}")) for n, send in enumerate(sends)))
    assert [status for status, _ in answers] == [200, 200]
    assert all(said("web_sent") in text for _, text in answers)
    assert web.db().execute("SELECT count(*) FROM patients WHERE nif = ?", (valid_dni(640),)).fetchone()[0] == 1
    cases = sorted(case for (case,) in web.db().execute("SELECT case_of FROM web_requests"))
    assert cases == (["new", "same"] if second_email == typed["correo"] else ["new", "verify"])
    assert pending(web) == 2


ATTACKER = {"nombre": "Mallory", "apellidos": "Atacante", "nacimiento": "05/05/1985", "nif": valid_dni(660),
            "telefono": "600000660", "correo": "mallory@example.net", "privacidad": True}
VARYING = [(re.compile(rb"(/reservar/confirmar/|/cita/baja/|/cita/)[A-Za-z0-9_-]{32,64}"), rb"\1TOKEN"),
           (re.compile(rb"^(Message-ID|Date|X-Agenda-[\w-]+): .*$", re.M), rb"\1: ..."),
           (re.compile(rb"=+[0-9]{6,}=*"), b"BOUNDARY"),
           (re.compile(rb"appointment-\d+\.[0-9a-f-]+@agenda"), b"UID"),
           (re.compile(rb"DTSTAMP:\d+T\d+Z"), b"DTSTAMP"),
           (re.compile(rb'name="csrf" value="[0-9a-f]+"'), b'name="csrf" value="CSRF"')]


def normalised(raw):
    """An answer or a message with what differs between any two requests (tokens, Message-ID, dates of sending,
    MIME boundaries, calendar ids) replaced by placeholders."""
    for pattern, instead in VARYING:
        raw = pattern.sub(instead, raw)
    return raw


def decoded(message):
    """A message as bytes with its parts' transfer encodings undone, so that a token is whole: each part's headers,
    then its content."""
    lines = []
    for part in message.walk():
        lines += [f"{name}: {value}".encode() for name, value in part.items()]
        if not part.is_multipart():
            lines.append(part.get_payload(decode=True))
    return b"\n".join(lines)


def attack(api, mail_server, sender):
    """The attacker books on the page with ATTACKER's details, confirms by the link the e-mail brings: every
    page answered and every message that reached the attacker's address, as bytes."""
    browser, pages = webtest.TestApp(api.app), []
    times = browser.get(f"{MARTIN}&semana=2026-11-23", extra_environ={"REMOTE_ADDR": "198.51.100.66"})
    form = next(form for form in times.forms.values() if form.action.endswith("/reservar/datos"))
    form["hueco"] = "2026-11-24 09:00 MARTIN"
    details = form.submit(extra_environ={"REMOTE_ADDR": "198.51.100.66"})
    for name, value in ATTACKER.items():
        details.forms[0][name] = value
    pages += [times.body, details.body, details.forms[0].submit(extra_environ={"REMOTE_ADDR": "198.51.100.66"}).body]
    assert sender.pass_once() == {"sent": 1}
    first = mail_server.inbox.messages()[-1][1]
    token = re.search(r"/reservar/confirmar/([A-Za-z0-9_-]{32,64})", first.get_body(("plain",)).get_content())[1]
    pages += [browser.get(f"/reservar/confirmar/{token}").body, browser.post(f"/reservar/confirmar/{token}").body]
    assert sender.pass_once() == {"sent": 1}
    confirmation = mail_server.inbox.messages()[-1][1].get_body(("plain",)).get_content()
    link = re.search(r"/cita/([A-Za-z0-9_-]{32,64})", confirmation)[1]  # the visit's own link, theirs to open
    visit_page = browser.get(f"/cita/{link}")
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', visit_page.text)[1]
    confirmed = browser.post(f"/cita/{link}/confirmar", {"csrf": csrf}).maybe_follow()
    assert said("link_confirmed_done") in confirmed.text
    pages += [visit_page.body, confirmed.body]
    messages = [(to, decoded(message)) for to, message in mail_server.inbox.messages()[-2:]]
    assert [to for to, _ in messages] == [["mallory@example.net"]] * 2
    return [normalised(page) for page in pages], [normalised(raw) for _, raw in messages]


def test_a_known_nif_with_the_attacker_s_own_e_mail_reads_byte_for_byte_as_an_unknown_one(tmp_path, clock):
    from mail_server import MailServer
    from _agenda.patient.sender import Mailer, Sender, smtp_server
    mail_server, apps = MailServer(tmp_path), []
    try:
        for name in ("unknown", "known"):
            path = tmp_path / f"{name}.db"
            seed(path, write_csv(tmp_path, CLINIC_CSV))
            apps.append(Api(agenda.create_app(path, SECRET, now=clock, **WEB)))
        victim = apps[1].new_patient(nif=ATTACKER["nif"], name="Victoria", surname="Víctima", phone="611222333",
                                     email="victoria@example.es")
        before = dict(apps[1].db().execute("SELECT * FROM patients WHERE id = ?", (int(victim),)).fetchone())
        seen = [attack(api, mail_server, Sender(api.app.clinic, Mailer(smtp_server(
            mail_server.url, ca_file=str(mail_server.ca_file))), "Clínica Sol <citas@clinicasol.es>",
            WEB["public_url"])) for api in apps]
        assert seen[0][0] == seen[1][0]  # every page, byte for byte
        assert seen[0][1] == seen[1][1]  # the first message and the confirmation
        assert apps[1].db().execute("SELECT case_of FROM web_requests").fetchone()[0] == "verify"
        shown = b"".join(seen[1][0] + seen[1][1])
        for private in (b"Victoria", "Víctima".encode(), b"611222333", b"victoria@example.es"):
            assert private not in shown
        assert dict(apps[1].db().execute("SELECT * FROM patients WHERE id = ?", (int(victim),)).fetchone()) == before
        assert apps[1].db().execute("SELECT count(*) FROM appointments WHERE patient_id = ?",
                                    (int(victim),)).fetchone()[0] == 0
    finally:
        mail_server.stop()
        for api in apps:
            api.app.clinic.db.close()


HOSTILE = ['<script>alert("x")</script>', '"><img src=x onerror=alert(1)>', '=HYPERLINK("http://evil.example","x")',
           "Ana\r\nBcc: victim@example.com", "\u202eetnacatA", "+cmd|' /C calc'!A0", "@SUM(1+1)"]


def inert(html):
    """Whether a parsed page runs nothing it was given: its only scripts the desk's own files, no element with an
    event handler, no image from elsewhere."""
    return all(script.get("src") in ("/desk/desk.js", "/desk/drag.js") for script in html.find_all("script")) and not [
        element for element in html.find_all(True) if any(name.lower().startswith("on") for name in element.attrs)
    ] and not html.find_all("img", src=re.compile(r"^(?!data:|/|cid:)"))


def test_hostile_text_in_every_field_is_refused_in_words_or_reaches_the_desk_the_messages_and_the_export_inert(
        make_api, tmp_path):
    from mail_server import MailServer
    from _agenda.files.open_formats import export_agenda
    from _agenda.patient.sender import Mailer, Sender, smtp_server
    web = make_api(web_pending_per_day=4, **WEB)
    known = web.new_patient(nif=valid_dni(680), email="known@example.es")
    slots = iter((day(when), time_text) for when in (1, 3, 4, 7, 8) for time_text in ("09:00", "09:30", "10:00",
                                                                                       "10:30"))
    n, stored = iter(range(100, 200)), 0
    for field in ("nombre", "apellidos"):
        for value in HOSTILE:
            before, number = counts(web), next(n)
            answer = Browser(web.app, f"198.51.100.{number}").book(*next(slots), **person(number, **{field: value}))
            assert answer.status_int in (200, 400), (field, value)
            stored += answer.status_int == 200
            assert answer.status_int == 200 or counts(web) == before
    form = Browser(web.app, "198.51.100.250").details(*next(slots))
    for field in ("nif", "telefono", "correo", "nacimiento"):
        for value in HOSTILE:
            before = counts(web)
            answer = Browser(web.app, "198.51.100.250").send(form, **person(next(n), **{field: value}))
            assert answer.status_int == 400 and counts(web) == before, (field, value)  # said beside the field
    assert stored >= 10
    for address in ("", "not an address", "::ffff:198.51.100.200", "2001:db8::1%eth0"):  # what a proxy might pass
        assert Browser(web.app, address).book(*next(slots), **person(next(n))).status_int in (200, 429), address
    number = next(n)
    Browser(web.app, "198.51.100.251").book(*next(slots), **person(number, nombre=HOSTILE[0], apellidos=HOSTILE[1],
                                                                     nif=valid_dni(680)))  # for reception to verify
    with transaction(web.db()) as conn:
        token = new_token(conn, conn.execute("SELECT max(appointment_id) FROM web_requests").fetchone()[0])
    assert said("web_confirmed") in webtest.TestApp(web.app).post(f"/reservar/confirmar/{token}").text
    client = webtest.TestApp(web.app)
    web.app.accounts.add_staff("ana", "correct horse battery")
    login = client.get("/desk/login").forms[0]
    login["name"], login["password"] = "ana", "correct horse battery"
    login.submit()
    pages = [client.get("/desk/verify"), client.get(f"/desk/patients/{known}")]
    pages += [client.get(f"/desk/day?date={day(when):%d/%m/%Y}&centerId=C1") for when in (1, 3, 4, 7, 8)]
    pages += [client.get(f"/desk/appointments/{key}") for (key,) in web.db().execute("SELECT id FROM appointments")]
    assert HOSTILE[0] in pages[0].html.get_text() and HOSTILE[1] in pages[0].html.get_text()  # shown, as text
    for page in pages:
        assert inert(page.html), page.request.url
    mail_server = MailServer(tmp_path)
    try:
        sender = Sender(web.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))),
                        "Clínica Sol <citas@clinicasol.es>", WEB["public_url"])
        assert sender.pass_once().get("sent", 0) >= stored
        for to, message in mail_server.inbox.messages():
            assert len(to) == 1 and "Bcc" not in message and "victim@example.com" not in str(to)
            assert len(message.get_all("To")) == 1 and "\n" not in message["Subject"]
            html = message.get_body(("html",))
            assert html is None or inert(BeautifulSoup(html.get_content(), "html.parser"))
    finally:
        mail_server.stop()
    export_agenda(web.app.clinic, tmp_path / "out", "cli:test")
    for name in ("patients.csv", "appointments.csv"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        cells = [cell for line in text.splitlines() for cell in line.split(",")]
        assert not [cell for cell in cells if cell.lstrip('"')[:1] in ("=", "+", "-", "@")], name
