"""Clinics reached by a path prefix on one host name (docs/design.md, "A host of clinics"): a folder named
`clinica-a` is reached at /clinica-a/ with its routes its own (SCRIPT_NAME, PATH_INFO); the caller's signature
covers the path as sent, prefix and all; every link, form action, redirect and cookie of the desk and of the
patient's link stays under the prefix, so that two clinics on one host name share nothing a browser or a caller
sends; a host-name clinic, and a lone `agenda run`, are as they were."""

import datetime as dt
import json
import re
import shutil
import urllib.error
import urllib.request

import pytest
import webtest
from click.testing import CliRunner
from webtest.http import StopableWSGIServer

import agenda
from _agenda.cli.host import close_clinic, open_clinic
from _agenda.domain.links import card_link
from _agenda.patient.sender import Mailer, Sender, smtp_server
from _agenda.web.host import Clinics

import edges
from conftest import sign, table_rows, valid_dni
from mail_server import MailServer
from test_host import assert_nginx_takes, certificate, make_clinic

A, B, NAMED = "clinica-a", "clinica-b", "citas.clinica-n.es"
PROVIDER = "agenda.provider.es"  # the one host name of the prefix clinics
PASSWORD = "correct horse battery"
SECRETS = {A: "secret-of-prefix-a", B: "secret-of-prefix-b", NAMED: "secret-of-named-n"}
GET_PAGES = [route for route in edges.DESK_ROUTES if route.method == "GET"]
POSTS = sorted((route for route in edges.DESK_ROUTES if route.method == "POST"), key=lambda route: "logout" in
               route.rule)  # each action, the logout last
LINKED = re.compile(r'\s(href|src|action|formaction)="([^"]*)"')


@pytest.fixture
def folder(tmp_path):
    """The host's folder: two clinics reached by a prefix, one at its own host name, each with its own secret and
    an admin, ana (one clinic seeded, then copied: its folder is all a clinic is)."""
    folder = tmp_path / "clinics"
    folder.mkdir()
    app = open_clinic(make_clinic(folder, A, tmp_path))
    app.accounts.add_staff("ana", PASSWORD, role="admin")
    close_clinic(app)
    for name in (B, NAMED):
        shutil.copytree(folder / A, folder / name)
    for name in (A, B, NAMED):
        (folder / name / "agenda.secret").write_text(SECRETS[name])  # the file as made: 0600
    return folder


@pytest.fixture
def provider(folder):
    clinics = Clinics(folder, open_clinic, close_clinic, share=2)
    yield clinics
    clinics.close_all()


def ask(clinics, method, url, secret, signed=None, host=PROVIDER, body=None):
    """A request to the host's app, signed with `secret` over `signed` (the path as sent by default)."""
    raw = b"" if body is None else json.dumps(body).encode()
    headers = {"Host": host, "X-Signature": sign(raw, secret, method, signed or url)}
    headers.update({"Content-Type": "application/json"} if body is not None else {})
    return webtest.TestApp(clinics).request(url, method=method, body=raw, headers=headers, expect_errors=True)


def browser(clinics):
    return webtest.TestApp(clinics, extra_environ={"HTTP_HOST": PROVIDER})


def log_in(client, prefix):
    page = client.get(f"{prefix}/desk/login")
    form = page.forms[0]
    form["name"], form["password"] = "ana", PASSWORD
    return form.submit()


def escapes(answer, prefix):
    """Every address an answer sends a browser to that leaves `prefix`: its links, form actions, scripts and
    stylesheets, its Location, its cookies' Path."""
    found = [value for _, value in LINKED.findall(answer.text if "html" in answer.content_type else "")
             if value.startswith("/") and not value.startswith(prefix + "/")]
    location = answer.headers.get("Location", "")
    found += [location] if location and not location.split("://", 1)[-1].partition("/")[2].startswith(
        prefix[1:] + "/") else []
    for cookie in answer.headers.getall("Set-Cookie"):
        path = re.search(r"(?i);\s*path=([^;]*)", cookie)
        found += [cookie] if path is None or path[1] != prefix + "/desk" else []
    return found


def book_from_the_day(client, prefix):
    """Reception books a new patient in tomorrow's first free slot from the day; every answer on the way."""
    day = client.get(f"{prefix}/desk/day?date={dt.date.today() + dt.timedelta(days=1):%d/%m/%Y}")
    booking = client.get(day.html.select_one(".timeline a[data-slot]")["href"])
    form = next(f for f in booking.forms.values() if f.action == f"{prefix}/desk/book" and "name" in f.fields)
    form["name"], form["nif"], form["phone"] = "Luis Pérez", valid_dni(12345678), "612345678"
    booked = form.submit()
    return [day, booking, booked, booked.follow()]


def test_a_prefix_clinic_takes_the_callers_signature_over_the_path_as_sent_prefix_and_all(provider):
    assert ask(provider, "GET", f"/{A}/custom-config", SECRETS[A]).status_int == 200
    refused = ask(provider, "GET", f"/{A}/custom-config", SECRETS[A], signed="/custom-config")
    assert refused.status_int == 401 and refused.json["error"]["code"] == "INVALID_SIGNATURE"
    assert ask(provider, "GET", f"/{A}/custom-config", SECRETS[A], signed=f"/{B}/custom-config").status_int == 401
    assert ask(provider, "GET", "/custom-config", SECRETS[NAMED], host=NAMED).status_int == 200  # as before


def test_a_signature_for_one_prefix_clinic_opens_nothing_at_another(provider):
    before = table_rows(provider.folder / B / "agenda.db")
    for method, path in (("GET", "/custom-config"), ("GET", "/appointments/1"), ("DELETE", "/appointments/1")):
        answer = ask(provider, method, f"/{B}{path}", SECRETS[A])
        assert answer.status_int == 401 and answer.json["error"]["code"] == "INVALID_SIGNATURE"
        assert ask(provider, method, f"/{B}{path}", SECRETS[A], signed=f"/{A}{path}").status_int == 401
    assert table_rows(provider.folder / B / "agenda.db") == before


def test_a_prefix_is_no_host_name_and_a_host_names_clinic_keeps_its_whole_path(provider):
    assert ask(provider, "GET", "/custom-config", SECRETS[A], host=A).status_int == 404  # Host: clinica-a
    assert ask(provider, "GET", f"/{A}/custom-config", SECRETS[NAMED], host=NAMED).status_int == 404
    assert ask(provider, "GET", "/clinica-z/custom-config", SECRETS[A]).status_int == 404
    assert ask(provider, "GET", f"/{A}", SECRETS[A]).status_int == 404  # the prefix alone: no route of A's
    assert webtest.TestApp(provider).get(f"/{A}/health", headers={"Host": PROVIDER}).json["status"] == "ok"


def test_reception_books_and_every_desk_page_and_action_of_a_prefix_clinic_stays_under_its_prefix(provider):
    client, prefix = browser(provider), f"/{A}"
    for route in GET_PAGES:  # signed out: each sends to the login page, under the prefix
        answer = client.get(prefix + edges.example_path(route), expect_errors=True)
        assert answer.status_int in (200, 303) and not escapes(answer, prefix), route.key
    logged = log_in(client, prefix)
    assert logged.status_int == 303 and not escapes(logged, prefix)
    assert {cookie.path for cookie in client.cookiejar} == {f"{prefix}/desk"}
    answers = book_from_the_day(client, prefix)
    assert [escapes(answer, prefix) for answer in answers] == [[]] * 4
    assert answers[2].status_int == 303 and "Luis Pérez" in answers[3].text
    assert ask(provider, "GET", f"/{A}/appointments/1", SECRETS[A]).json["patientName"] == "Luis Pérez"
    assert ask(provider, "GET", f"/{B}/appointments/1", SECRETS[B]).status_int == 404
    appointment = client.get(f"{prefix}/desk/appointments/1")
    card = next(f for f in appointment.forms.values() if f.action == f"{prefix}/desk/appointments/1/card").submit()
    assert not escapes(card, prefix) and f"http://{PROVIDER}{prefix}/cita/" in card.text  # no public_url set
    for route in GET_PAGES:  # appointment 1 and patient 1 there now
        answer = client.get(prefix + edges.example_path(route), expect_errors=True)
        assert answer.status_int < 500 and not escapes(answer, prefix), (route.key, escapes(answer, prefix))
    csrf = client.get(f"{prefix}/desk/day").html.select_one("input[name=csrf]")["value"]
    for route in POSTS:  # each action, sent as its forms are though with little filled in: a page or a redirect
        answer = client.post(prefix + edges.example_path(route), {"csrf": csrf}, expect_errors=True)
        assert answer.status_int < 500 and not escapes(answer, prefix), (route.key, escapes(answer, prefix))


def test_a_doctors_calendar_feed_made_at_the_desk_of_a_prefix_clinic_is_an_address_under_the_prefix(provider):
    client, prefix = browser(provider), f"/{A}"
    log_in(client, prefix)
    doctors = client.get(f"{prefix}/desk/doctors")
    made = next(f for f in doctors.forms.values() if f.action == f"{prefix}/desk/doctors/MARTIN/feed").submit()
    address = re.search(r"http://\S+?\.ics", made.text)[0]
    assert address.startswith(f"http://{PROVIDER}{prefix}/feeds/")
    assert client.get(address.split(PROVIDER, 1)[1]).content_type == "text/calendar"


def test_a_desk_login_to_one_prefix_clinic_is_no_login_to_another_on_the_same_host_name(provider):
    client = browser(provider)
    log_in(client, f"/{A}")
    token = next(cookie.value for cookie in client.cookiejar if cookie.name == "agenda_desk")
    other = webtest.TestApp(provider, extra_environ={"HTTP_HOST": PROVIDER})
    other.set_cookie("agenda_desk", token)
    answer = other.get(f"/{B}/desk/day")
    assert answer.status_int == 303 and answer.headers["Location"].endswith(f"/{B}/desk/login")
    assert client.get(f"/{A}/desk/day").status_int == 200


def test_the_patients_link_of_a_prefix_clinic_stays_under_the_prefix(provider):
    client, prefix = browser(provider), f"/{A}"
    log_in(client, prefix)
    book_from_the_day(client, prefix)
    token = card_link(provider.served[A].app.clinic, 1)
    page = client.get(f"{prefix}/cita/{token}")
    assert not escapes(page, prefix) and f'action="{prefix}/cita/{token}/confirmar"' in page.text
    confirmed = page.forms[0].submit()
    assert confirmed.status_int == 303 and confirmed.headers["Location"].endswith(f"{prefix}/cita/{token}?hecho="
                                                                                  "confirmed")
    assert client.get(f"/{B}/cita/{token}", expect_errors=True).status_int == 404


def test_a_real_waitress_passes_the_path_as_sent_to_the_signature(provider):
    server = StopableWSGIServer.create(provider)
    try:
        for signed, status in ((f"/{A}/custom-config", 200), ("/custom-config", 401)):
            request = urllib.request.Request(f"{server.application_url}{A}/custom-config", headers={
                "Host": PROVIDER, "X-Signature": sign(b"", SECRETS[A], "GET", signed)})
            try:
                with urllib.request.urlopen(request, timeout=60) as answer:
                    assert answer.status == status
            except urllib.error.HTTPError as error:
                assert error.code == status
    finally:
        server.shutdown()


def test_a_patients_mail_leads_under_the_prefix_when_public_url_carries_it(provider, tmp_path):
    patient = ask(provider, "POST", f"/{A}/patients", SECRETS[A], body={
        "name": "Ana", "nif": valid_dni(7), "email": "ana@example.es"}).json["patientId"]
    slot = ask(provider, "GET", f"/{A}/availabilities?doctorId=MARTIN", SECRETS[A]).json["data"][0]
    assert ask(provider, "POST", f"/{A}/appointments", SECRETS[A], body={
        "date": slot["date"], "time": slot["time"], "doctorId": "MARTIN", "patientId": patient}).status_int == 201
    server, mail_server = StopableWSGIServer.create(provider), MailServer(tmp_path)
    try:
        public_url = f"{server.application_url}{A}/"  # as an admin writes it: the host's name, the prefix
        sender = Sender(provider.served[A].app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(
            mail_server.ca_file))), "citas@provider.es", public_url)
        assert sender.pass_once() == {"sent": 1}
        [(_, message)] = mail_server.inbox.messages()
        link = re.search(re.escape(public_url) + r"cita/[A-Za-z0-9_-]+", message.get_body(("plain",)).get_content())
        with urllib.request.urlopen(link[0], timeout=60) as answer:
            page = answer.read().decode()
        assert "Ana" in page and f'action="/{A}/cita/' in page and not re.search(r'="/(?!clinica-a/)', page)
    finally:
        server.shutdown()
        mail_server.stop()


@pytest.mark.skipif(not shutil.which("nginx"), reason="nginx is not installed")
@pytest.mark.skipif(not shutil.which("openssl"), reason="openssl is not installed")
def test_agenda_host_nginx_writes_one_server_for_the_prefix_clinics_that_nginx_takes(folder, tmp_path):
    (folder / A / "agenda.toml").write_text('desk_network = "192.0.2.0/24"\n')
    certificate(tmp_path / "live", PROVIDER)
    out, command = tmp_path / "sites", ["host", "nginx", str(folder), str(tmp_path / "sites"), "--certificates",
                                        str(tmp_path / "live"), "--logs", str(tmp_path)]
    result = CliRunner().invoke(agenda.cli, command)
    assert result.exit_code == 1 and "2 clinics reached by a path prefix left out: give --prefix-host" in \
        result.output
    result = CliRunner().invoke(agenda.cli, [*command, "--prefix-host", PROVIDER])
    assert result.exit_code == 0 and ": 3 clinics;" in result.output, result.output
    assert f"{B}: its desk is closed to every address" in result.output
    sites = (out / "agenda-host.conf").read_text()
    provider_server = sites[sites.index(f"server_name {PROVIDER};\n    ssl_certificate"):]
    desk_of_a = provider_server[provider_server.index(f"location /{A}/desk {{"):]
    assert desk_of_a.index("allow 192.0.2.0/24;") < desk_of_a.index("deny all;") < desk_of_a.index(f"/{B}/desk")
    for name in (A, B):
        assert f"location = /{name}/desk/login {{" in provider_server and f"location /{name}/cita/ {{" in \
            provider_server and f"location /{name}/reservar {{" in provider_server
    assert f"location /{B}/desk {{\n        deny all;" in provider_server
    assert f"listen 80;\n    server_name {NAMED};\n    location / {{ return 404; }}" in sites
    assert_nginx_takes(out, tmp_path)
