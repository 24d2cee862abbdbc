"""One door for a patient's identity (docs/design.md, "A patient's identity"): every route of every edge and
every command of the CLI, driven on a clinic with a guardian and her child, an erased guardian and her child,
an erased patient and a new patient holding a freed NIF, shows a patient only with the read recorded for its
reader, and never shows the blocked. A route or a command with no case here fails, so a page added later
cannot forget the door; and no module but identity.py reads who a patient is."""

import ast
import csv
import dataclasses
import datetime as dt
import io
import json
import re
import sqlite3
from pathlib import Path
from typing import NamedTuple

import click
import pytest
import webtest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

import agenda
from _agenda.domain.booking import Visit
from _agenda.cli.root import cli_reader
from _agenda.domain.feeds import new_feed
from _agenda.domain.rights import request_erasure
from _agenda.domain.series import book_series
from _agenda.domain.waitlist import add_waiting, Wish
from _agenda.domain.changes import book_appointment
from _agenda.domain.closures import add_closure
from _agenda.domain.registry import register_patient
from _agenda.domain.links import new_link
from _agenda.domain.web_requests import new_token
from _agenda.domain.identity import full_name, GUARDIAN_JOIN, IDENTITY_SQL, identity_fields
from _agenda.storage.connections import transaction
from _agenda.domain.web_booking import confirm_booking, request_booking, WebAsk

import edges
from conftest import Clock, MADRID, ROOT, valid_dni

PASSWORD = "correct horse battery"
TUESDAY, MONDAY_NOON = dt.date(2026, 11, 24), dt.datetime(2026, 11, 23, 12, 0, tzinfo=MADRID)


class Person(NamedTuple):
    id: str
    marks: tuple  # what shows them: a surname of their own, their NIF, their phone as written and as dialled


def phone_marks(digits):
    return (f"+34{digits}", f"{digits[:3]} {digits[3:5]} {digits[5:7]} {digits[7:]}")


@pytest.fixture
def clinic_of_people(make_api, clock, tmp_path):
    """The test clinic with people whose marks are their own; the erased are blocked on 23/11 at noon."""
    api = make_api(feed_shows="reasons")
    clinic = api.app.clinic
    zoraida = api.new_patient(nif=valid_dni(101), name="Zoraida", surname="Quintanilla", phone="611000101")
    bernarda = api.new_patient(nif=valid_dni(102), name="Bernarda", surname="Villalobos", phone="611000102")
    tobias = register_patient(clinic, {"name": "Tobías", "surname": "Ugarte", "birthDate": "03/04/2019",
                                       "guardianNif": valid_dni(102), "phone": "611000105"}, source="desk:ana")
    herminia = api.new_patient(nif=valid_dni(103), name="Herminia", surname="Castañeda", phone="611000103",
                               birthDate="07/07/1977")
    lucas = register_patient(clinic, {"name": "Lucas", "surname": "Iturbe", "birthDate": "05/06/2018",
                                      "guardianNif": valid_dni(103)}, source="desk:ana")  # her phone copied
    filomena = api.new_patient(nif=valid_dni(104), name="Filomena", surname="Zubizarreta", phone="611000104",
                               birthDate="08/08/1966")
    monday = clock.moment.date()
    for patient, start, reason in ((herminia, "09:00", "Revisión"), (filomena, "09:30", "Secreto médico")):
        book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN", reason=reason), day=monday,
                         time_text=start, source="desk:ana")
    api.book(filomena, time="10:30", reason="Secreto médico")
    booked = {"of_zoraida": api.book(zoraida, time="09:00"), "of_tobias": api.book(tobias, time="09:30"),
              "of_lucas": api.book(lucas, doctor="RUIZ", time="09:00"), "of_bernarda": api.book(bernarda, time="10:00")}
    add_waiting(clinic, Wish(patient_id=zoraida, doctor_id="MARTIN", first=TUESDAY, last=dt.date(2026, 12, 31)),
                source="desk:ana")
    add_closure(clinic, doctor_id="MARTIN", first=TUESDAY, start="10:00", end="10:30", reason="Reunión")
    clock.moment = MONDAY_NOON
    for patient in (herminia, filomena):
        request_erasure(clinic, patient, "cli", "cli:test")
    anselmo = api.new_patient(nif=valid_dni(103), name="Anselmo", surname="Ximénez", phone="611000106")
    visible = {"zoraida": Person(zoraida, ("Quintanilla", valid_dni(101), *phone_marks("611000101"))),
               "bernarda": Person(bernarda, ("Villalobos", valid_dni(102), *phone_marks("611000102"))),
               "tobias": Person(tobias, ("Ugarte", *phone_marks("611000105"))),
               "lucas": Person(lucas, ("Iturbe",)),
               "anselmo": Person(anselmo, ("Ximénez", valid_dni(103), *phone_marks("611000106")))}
    blocked = {"herminia": ("Castañeda", "Herminia", *phone_marks("611000103"), "611000103", "1977-07-07",
                            "07/07/1977"),
               "filomena": ("Zubizarreta", "Filomena", valid_dni(104), *phone_marks("611000104"), "Secreto médico",
                            "1966-08-08", "08/08/1966")}
    api.app.accounts.add_staff("luis", PASSWORD, role="admin")
    return World(api, clock, tmp_path, visible, blocked, booked, new_feed(clinic, "MARTIN", "cli"))


class World(NamedTuple):
    api: object
    clock: object
    tmp_path: Path
    visible: dict
    blocked: dict
    booked: dict
    feed_token: str

    def reads(self, reader):
        """{patient id: reads} the record holds for this reader."""
        self.api.app.clinic.access.flush()
        return {str(row[0]): row[1] for row in self.api.db().execute(
            "SELECT patient_id, sum(reads) FROM access_reads WHERE reader = ? GROUP BY patient_id", (reader,))}

    def shown(self, text):
        """The visible people whose marks `text` holds."""
        return {name for name, person in self.visible.items() if any(mark in text for mark in person.marks)}

    def desk(self):
        """The admin's desk session: (client, its CSRF token)."""
        client = webtest.TestApp(self.api.app)
        form = client.get("/desk/login").forms[0]
        form["name"], form["password"] = "luis", PASSWORD
        form.submit()
        return client, re.search(r'name="csrf" value="([^"]+)"', client.get("/desk/day").text)[1]

    def cli(self, *args):
        runner = CliRunner(env={"AGENDA_DB": str(self.api.app.clinic.db.path), "AGENDA_SECRET": None})
        result = runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(self.clock.moment)})
        assert result.exit_code in (0, 1), (args, result.output, result.exception)
        return result.output


def without_typed(text, fields):
    """A page without what the receptionist typed into its form (a search's words are theirs, not a read)."""
    for value in fields.values():
        text = text.replace(value, "") if len(value) > 3 else text
    return text


def readable(response):
    """What an answer shows a person: JSON decoded, an iCalendar's folded lines unfolded."""
    if response.content_type == "application/json":
        return json.dumps(response.json, ensure_ascii=False)
    return response.body.decode("utf-8", "replace").replace("\r\n ", "")


# Each case drives one route or command as its users would and yields (reader, what it showed); `shows`
# names the people the case must show, so that a case cannot pass by showing nobody.

def api_case(*requests, shows=()):
    def run(world):
        for method, path, *body in requests:
            path = path.format(**world.booked, **{name: p.id for name, p in world.visible.items()})
            yield "api", readable(world.api.call(method, path, body[0] if body else None))
    return run, set(shows)


def desk_case(*requests, shows=()):
    """GET path, or POST path {fields}; a redirect after a change is followed (its flash is a read)."""
    def run(world):
        client, csrf = world.desk()
        names = {**world.booked, **{name: p.id for name, p in world.visible.items()}, "token": world.feed_token}
        for method, path, *fields in requests:
            path = path.format(**names)
            if method == "GET":
                answer = client.get(path, expect_errors=True)
            else:
                form = {key: value.format(**names) for key, value in (fields[0] if fields else {}).items()}
                answer = client.post(path, {**form, "csrf": csrf}, expect_errors=True)
            yield "desk:luis", without_typed(readable(answer), fields[0] if fields and method == "POST" else {})
            if answer.status_int in (302, 303) and answer.headers["Location"].startswith("/desk/"):
                yield "desk:luis", readable(client.get(answer.headers["Location"], expect_errors=True))
    return run, set(shows)


def cli_case(*commands, shows=()):
    def run(world):
        names = {**world.booked, **{name: p.id for name, p in world.visible.items()}, "tmp": world.tmp_path}
        for command in commands:
            yield cli_reader(), world.cli(*[str(part).format(**names) for part in command])
    return run, set(shows)


def feed_case(world):
    client = webtest.TestApp(world.api.app)
    yield "feed:MARTIN", readable(client.get(f"/feeds/{world.feed_token}.ics"))


def link_case(action=None, stop=False):
    """The patient's link of every appointment, the erased's too, opened (and, for an action, its form sent with the
    page's token): a live visit's page names its patient's first name only, the erased's opens nothing."""
    def run(world):
        client = webtest.TestApp(world.api.app)
        ids = [row[0] for row in world.api.db().execute("SELECT id FROM appointments ORDER BY id")]
        with transaction(world.api.db()) as conn:
            tokens = [new_link(conn, key, "stop" if stop else "message", world.clock()) for key in ids]
        for token in tokens:
            page = client.get(f"/cita/baja/{token}" if stop else f"/cita/{token}", expect_errors=True)
            yield "patient", readable(page)
            if action and page.status_int == 200:
                found = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
                answer = client.post(f"/cita/{token}/{action}" if action != "baja" else f"/cita/baja/{token}",
                                     {"csrf": found[1] if found else "", "slot": "2026-11-26 10:00"}, expect_errors=True)
                yield "patient", readable(answer)
    return run, set()


def rooms_case(world):
    """Each appointment holds a room of its own (the blocked's too), then the rooms page of each day."""
    with world.api.db() as conn:
        for key, day, start, end in conn.execute("SELECT id, date, time, end_time FROM appointments").fetchall():
            conn.execute("INSERT INTO resources VALUES (?, ?, 'C1', 1, '')", (f"R{key}", f"Box {key}"))
            conn.execute("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES (?, ?, ?, ?, ?)",
                         (key, f"R{key}", day, start, end))
    client, _ = world.desk()
    for day in ("23/11/2026", "24/11/2026"):
        yield "desk:luis", readable(client.get(f"/desk/rooms?date={day}&centerId=C1"))


def kept_case(world):
    client, _ = world.desk()
    kept = world.api.app.accounts.keep_form("luis", "/desk/book", [["patientId", world.visible["zoraida"].id]])
    yield "desk:luis", readable(client.get(f"/desk/kept/{kept}", expect_errors=True))


def verify_case(*requests, shows=()):
    """The desk's case after two web bookings confirmed by their links, each naming a NIF on file with another
    e-mail: Bernarda's (her child Tobías on file under it) and the erased Herminia's, which Anselmo holds now; the
    appointments as {web_bernarda} and {web_anselmo}."""
    run, _ = desk_case(*requests)

    def with_requests(world):
        clinic = world.api.app.clinic
        clinic.settings = dataclasses.replace(clinic.settings, web_booking="on", web_privacy="Clínica Sol.",
                                              public_url="https://citas.example.es")
        for name, nif, start in (("web_bernarda", valid_dni(102), "09:00"), ("web_anselmo", valid_dni(103), "09:30")):
            request_booking(clinic, WebAsk("C1", "MG", "MARTIN", None, "2026-11-27", start, "Rosa", "Vidal",
                                           "1985-03-02", nif, False, "699111222", "rosa.vidal@example.es", None, "es"),
                            "203.0.113.7")
            world.booked[name] = str(world.api.db().execute("SELECT max(appointment_id) FROM web_requests").fetchone()[0])
            with transaction(world.api.db()) as conn:
                token = new_token(conn, world.booked[name])
            assert confirm_booking(clinic, token) == "confirmed"
        yield from run(world)
    return with_requests, set(shows)


def booking_case(stage):
    """The booking page on, driven to `stage` ("css", "steps", "details", "book", "confirm"): a booking asks with a
    known NIF, a blocked one and a new one, each with an address of its own; no answer shows anyone (the page reads
    no record into what it says), the confirmation link's page neither."""
    def run(world):
        clinic = world.api.app.clinic
        clinic.settings = dataclasses.replace(clinic.settings, web_booking="on", web_privacy="Privacidad",
                                              public_url="https://citas.example.es")
        client = webtest.TestApp(world.api.app)
        if stage == "css":
            yield "web", readable(client.get("/reservar/reservar.css"))
            return
        for nif in (valid_dni(101), valid_dni(104), valid_dni(120)):
            times = client.get("/reservar?centro=C1&especialidad=MG&medico=MARTIN")
            yield "web", readable(times)
            form = next(form for form in times.forms.values() if form.action.endswith("/datos"))
            form["hueco"] = form.fields["hueco"][0].options[0][0]
            details = form.submit()
            yield "web", readable(details)
            if stage in ("book", "confirm"):
                typed = {"nombre": "Nadia", "apellidos": "Nueva", "nacimiento": "01/01/1990", "nif": nif,
                         "telefono": "699000111", "correo": f"nadia.{nif}@example.es", "privacidad": True}
                for name, value in typed.items():
                    details.forms[0][name] = value
                yield "web", readable(details.forms[0].submit(expect_errors=True))
        if stage == "confirm":
            with transaction(world.api.db()) as conn:
                pending = [row[0] for row in conn.execute("SELECT id FROM appointments WHERE pending = 'email'")]
                tokens = [new_token(conn, key) for key in pending]
            assert len(tokens) == 3
            for token in tokens:
                yield "web", readable(client.get(f"/reservar/confirmar/{token}"))
                yield "web", readable(client.post(f"/reservar/confirmar/{token}"))
    return run, set()


SLOT = "doctorId=MARTIN&date=26/11/2026&time=09:00&centerId=C1"
ROUTES = {
    ("GET", "/health"): api_case(("GET", "/health")),
    ("GET", "/openapi.json"): api_case(("GET", "/openapi.json")),
    ("GET", "/custom-config"): api_case(("GET", "/custom-config")),
    ("GET", "/patients"): api_case(("GET", f"/patients?nif={valid_dni(101)}"), ("GET", f"/patients?nif={valid_dni(103)}"),
                                   ("GET", f"/patients?nif={valid_dni(104)}"), shows={"zoraida", "anselmo"}),
    ("POST", "/patients"): api_case(("POST", "/patients", {"name": "Nadia", "nif": valid_dni(110)}),
                                    ("POST", "/patients", {"name": "Otra", "nif": valid_dni(101)})),
    ("GET", "/availabilities"): api_case(("GET", "/availabilities?doctorId=MARTIN")),
    ("GET", "/appointments"): api_case(
        ("GET", "/appointments?date=24/11/2026"), ("GET", "/appointments?date=23/11/2026"),
        ("GET", "/appointments?phone=611000103"), ("GET", f"/appointments?nif={valid_dni(102)}"),
        ("GET", f"/appointments?nif={valid_dni(103)}"), shows={"zoraida", "tobias", "lucas", "bernarda"}),
    ("GET", "/appointments/range"): api_case(("GET", "/appointments/range?dates=23/11/2026,24/11/2026"),
                                             shows={"zoraida", "tobias", "lucas"}),
    ("POST", "/appointments"): api_case(("POST", "/appointments", {"date": "25/11/2026", "time": "09:00",
                                                                   "doctorId": "RUIZ", "patientId": "{zoraida}"})),
    ("POST", "/appointments/confirm"): api_case(("POST", "/appointments/confirm",
                                                 {"appointmentId": "{of_lucas}", "confirmed": True})),
    ("POST", "/appointments/end-of-reminder-day"): api_case(("POST", "/appointments/end-of-reminder-day",
                                                             {"date": "24/11/2026"})),
    ("GET", "/appointments/<appointment_id>"): api_case(("GET", "/appointments/{of_lucas}"),
                                                        ("GET", "/appointments/{of_tobias}"), shows={"lucas", "tobias"}),
    ("PUT", "/appointments/<appointment_id>"): api_case(("PUT", "/appointments/{of_zoraida}",
                                                         {"newDate": "26/11/2026", "newTime": "10:00"})),
    ("DELETE", "/appointments/<appointment_id>"): api_case(("DELETE", "/appointments/{of_zoraida}")),
    ("GET", "/desk"): desk_case(("GET", "/desk")),
    ("GET", "/desk/desk.css"): desk_case(("GET", "/desk/desk.css")),
    ("GET", "/desk/desk.js"): desk_case(("GET", "/desk/desk.js")),
    ("GET", "/desk/drag.js"): desk_case(("GET", "/desk/drag.js")),
    ("GET", "/desk/login"): desk_case(("GET", "/desk/login")),
    ("POST", "/desk/login"): desk_case(("POST", "/desk/login", {"name": "luis", "password": PASSWORD})),
    ("POST", "/desk/logout"): desk_case(("POST", "/desk/logout")),
    ("GET", "/desk/kept/<kept>"): (kept_case, set()),
    ("GET", "/desk/version"): desk_case(("GET", "/desk/version")),
    ("GET", "/desk/day"): desk_case(("GET", "/desk/day?date=24/11/2026&centerId=C1"),
                                    ("GET", "/desk/day?date=23/11/2026&centerId=C1"),
                                    ("GET", "/desk/day?date=24/11/2026&centerId=C1&doctorId=RUIZ"),
                                    shows={"zoraida", "tobias", "lucas", "bernarda"}),
    ("GET", "/desk/week"): desk_case(("GET", "/desk/week?date=24/11/2026&doctorId=MARTIN"),
                                     ("GET", "/desk/week?date=24/11/2026&centerId=C1"), shows={"zoraida", "tobias"}),
    ("GET", "/desk/month"): desk_case(("GET", "/desk/month?month=11/2026&doctorId=MARTIN"),  # time, not names
                                      ("GET", "/desk/month?month=11/2026&centerId=C1&typeId=MG")),
    ("GET", "/desk/rooms"): (rooms_case, {"zoraida", "tobias", "bernarda"}),
    ("GET", "/desk/calls"): desk_case(("GET", "/desk/calls"), shows={"bernarda"}),
    ("GET", "/desk/waiting"): desk_case(("GET", "/desk/waiting?date=24/11/2026&centerId=C1"),
                                        ("GET", "/desk/waiting?date=23/11/2026&centerId=C1"),
                                        ("GET", "/desk/waiting?date=24/11/2026&centerId=C1&doctorId=RUIZ"),
                                        shows={"zoraida", "tobias", "lucas", "bernarda"}),
    ("GET", "/desk/waitlist"): desk_case(("GET", "/desk/waitlist"), ("GET", "/desk/waitlist?patientId={tobias}"),
                                         shows={"zoraida", "tobias", "bernarda"}),
    ("POST", "/desk/waitlist"): desk_case(("POST", "/desk/waitlist", {"patientId": "{anselmo}", "doctorId": "MARTIN",
                                                                      "dateFrom": "24/11/2026", "dateTo": "31/12/2026"}),
                                          shows={"anselmo"}),
    ("POST", "/desk/waitlist/search"): desk_case(*[("POST", "/desk/waitlist/search", {"q": q}) for q in (
        valid_dni(103), "Castañeda", "611000103", valid_dni(104), "Zubizarreta", "Lucas")],
        ("POST", "/desk/waitlist/search", {"patientId": "{zoraida}"}), shows={"anselmo", "lucas", "zoraida"}),
    ("POST", "/desk/waitlist/<entry_id:int>/remove"): desk_case(("POST", "/desk/waitlist/1/remove")),
    ("GET", "/desk/book"): desk_case(("GET", f"/desk/book?{SLOT}"), ("GET", f"/desk/book?{SLOT}&patientId={{tobias}}"),
                                     shows={"zoraida", "tobias", "bernarda"}),
    ("POST", "/desk/book"): desk_case(("POST", "/desk/book", {"doctorId": "MARTIN", "date": "26/11/2026",
                                                             "time": "09:00", "centerId": "C1", "patientId": "{lucas}"}),
                                      shows={"lucas"}),
    ("POST", "/desk/book/search"): desk_case(*[("POST", f"/desk/book/search?{SLOT}", {"q": q}) for q in (
        valid_dni(103), "Castañeda", "611000103", valid_dni(104), "Zubizarreta", "Lucas")], shows={"anselmo", "lucas"}),
    ("GET", "/desk/appointments/<appointment_id:int>"): desk_case(("GET", "/desk/appointments/{of_lucas}"),
                                                                  shows={"lucas"}),
    ("POST", "/desk/appointments/<appointment_id:int>/details"): desk_case(
        ("POST", "/desk/appointments/{of_tobias}/details", {"reason": "Control"}), shows={"tobias"}),
    ("POST", "/desk/appointments/<appointment_id:int>/length"): desk_case(
        ("POST", "/desk/appointments/{of_tobias}/length", {"minutes": "60"}), shows={"tobias"}),
    ("POST", "/desk/appointments/<appointment_id:int>/move"): desk_case(
        ("POST", "/desk/appointments/{of_tobias}/move", {"slot": "26/11/2026|10:00|MARTIN|C1"}), shows={"tobias"}),
    ("POST", "/desk/appointments/<appointment_id:int>/cancel"): desk_case(
        ("POST", "/desk/appointments/{of_zoraida}/cancel", {"reason": "llamó"}), shows={"zoraida"}),
    ("POST", "/desk/appointments/<appointment_id:int>/confirm"): desk_case(
        ("POST", "/desk/appointments/{of_lucas}/confirm"), ("POST", "/desk/appointments/{of_lucas}/confirm"), shows={"lucas"}),
    ("POST", "/desk/appointments/<appointment_id:int>/mail"): desk_case(
        ("POST", "/desk/appointments/{of_lucas}/mail"), shows={"lucas"}),
    ("POST", "/desk/appointments/<appointment_id:int>/cancel-rest"): desk_case(
        ("POST", "/desk/appointments/{series}/cancel-rest", {"reason": "alta"}), shows={"tobias"}),
    ("POST", "/desk/series"): desk_case(("POST", "/desk/series", {
        "doctorId": "MARTIN", "date": "01/12/2026", "time": "09:00", "centerId": "C1", "patientId": "{tobias}",
        "n": "1", "unit": "w", "count": "3"}), shows={"tobias"}),
    ("POST", "/desk/appointments/<appointment_id:int>/attendance"): desk_case(
        ("POST", "/desk/appointments/{of_zoraida}/attendance", {"mark": ""}), shows={"zoraida"}),
    ("GET", "/desk/patients"): desk_case(("GET", "/desk/patients")),
    ("POST", "/desk/patients"): desk_case(*[("POST", "/desk/patients", {"q": q}) for q in (
        valid_dni(103), "Castañeda", "611000103", "Lucas", "Bernarda")], shows={"anselmo", "lucas", "bernarda"}),
    ("GET", "/desk/patients/new"): desk_case(("GET", "/desk/patients/new")),
    ("POST", "/desk/patients/new"): desk_case(("POST", "/desk/patients/new", {
        "name": "Rosa", "nif": valid_dni(107), "email": "rosa@example.com"})),
    ("GET", "/desk/patients/<patient_id:int>"): desk_case(("GET", "/desk/patients/{tobias}"),
                                                          ("GET", "/desk/patients/{lucas}"),
                                                          shows={"tobias", "bernarda", "lucas"}),
    ("POST", "/desk/patients/<patient_id:int>"): desk_case(("POST", "/desk/patients/{anselmo}", {
        "name": "Anselmo", "surname": "Ximénez", "nif": valid_dni(103), "phone": "611000106"}), shows={"anselmo"}),
    ("GET", "/desk/patients/<patient_id:int>/book"): desk_case(("GET", "/desk/patients/{lucas}/book"),
                                                               shows={"lucas"}),
    ("GET", "/desk/patients/<patient_id:int>/access"): desk_case(("GET", "/desk/patients/{lucas}/access"),
                                                                 shows={"lucas"}),
    ("GET", "/desk/access"): desk_case(("GET", "/desk/access")),
    ("GET", "/desk/patients/<patient_id:int>/copy"): desk_case(("GET", "/desk/patients/{tobias}/copy"),
                                                               ("GET", "/desk/patients/{lucas}/copy?format=json"),
                                                               shows={"tobias", "lucas"}),
    ("GET", "/desk/patients/<patient_id:int>/erase"): desk_case(("GET", "/desk/patients/{zoraida}/erase"),
                                                                shows={"zoraida"}),
    ("POST", "/desk/patients/<patient_id:int>/erase"): desk_case(("POST", "/desk/patients/{anselmo}/erase")),
    ("GET", "/desk/closures"): desk_case(("GET", "/desk/closures")),
    ("POST", "/desk/closures"): desk_case(("POST", "/desk/closures", {"doctorId": "", "centerId": "",
                                                                     "dateFrom": "24/11/2026"}),
                                          shows={"zoraida", "tobias", "lucas"}),
    ("GET", "/desk/closures/<closure_id:int>/remove"): desk_case(("GET", "/desk/closures/1/remove")),
    ("POST", "/desk/closures/<closure_id:int>/remove"): desk_case(("POST", "/desk/closures/1/remove")),
    ("GET", "/desk/doctors"): desk_case(("GET", "/desk/doctors")),
    ("GET", "/desk/report"): desk_case(("GET", "/desk/report")),
    ("POST", "/desk/doctors/<doctor_id>/retire"): desk_case(("POST", "/desk/doctors/RUIZ/retire",
                                                             {"date": "24/11/2026"}), shows={"lucas"}),
    ("POST", "/desk/doctors/<doctor_id>/feed"): desk_case(("POST", "/desk/doctors/MARTIN/feed")),
    ("POST", "/desk/appointments/<appointment_id:int>/card"): desk_case(
        ("POST", "/desk/appointments/{of_lucas}/card")),  # the first name only: none of his marks
    ("GET", "/feeds/<token>.ics"): (feed_case, {"zoraida", "tobias"}),
    ("GET", "/cita/cita.css"): (lambda world: iter([("patient", readable(webtest.TestApp(world.api.app).get(
        "/cita/cita.css")))]), set()),
    ("GET", "/cita/<token>"): link_case(),
    ("POST", "/cita/<token>/confirmar"): link_case("confirmar"),
    ("POST", "/cita/<token>/anular"): link_case("anular"),
    ("POST", "/cita/<token>/cambiar"): link_case("cambiar"),
    ("GET", "/cita/baja/<token>"): link_case(stop=True),
    ("POST", "/cita/baja/<token>"): link_case("baja", stop=True),
    ("GET", "/desk/verify"): verify_case(("GET", "/desk/verify"), shows={"bernarda", "tobias", "anselmo"}),
    ("POST", "/desk/verify/<appointment_id:int>/match"): verify_case(
        ("POST", "/desk/verify/{web_bernarda}/match", {}), ("POST", "/desk/verify/{web_anselmo}/match", {}),
        shows={"bernarda", "anselmo"}),
    ("POST", "/desk/verify/<appointment_id:int>/refuse"): verify_case(
        ("POST", "/desk/verify/{web_bernarda}/refuse", {}), shows={"anselmo"}),
    ("GET", "/reservar/reservar.css"): booking_case("css"),
    ("GET", "/reservar"): booking_case("steps"),
    ("POST", "/reservar/datos"): booking_case("details"),
    ("POST", "/reservar/enviar"): booking_case("book"),
    ("GET", "/reservar/confirmar/<token>"): booking_case("confirm"),
    ("POST", "/reservar/confirmar/<token>"): booking_case("confirm"),
}
NIF_FILE = "nif,name\n{nif},Anselmo\n"
COMMANDS = {
    "access-log": cli_case(("access-log", "--patient", "{lucas}")),
    "backup": cli_case(("backup", "{tmp}/copy.db")),
    "book": cli_case(("book", "--doctor", "RUIZ", "--date", "25/11/2026", "--time", "09:20", "--nif", valid_dni(103),
                      "--insurance", "PRIV"), shows={"anselmo"}),
    "cancel": cli_case(("cancel", "{of_tobias}"), shows={"tobias"}),
    "closed add": cli_case(("closed", "add", "--doctor", "RUIZ", "--from", "24/11/2026"), shows={"lucas"}),
    "closed list": cli_case(("closed", "list")),
    "closed remove": cli_case(("closed", "remove", "1")),
    "confirm": cli_case(("confirm", "{of_lucas}"), shows={"lucas"}),
    "day": cli_case(("day", "24/11/2026"), ("day", "23/11/2026"), shows={"zoraida", "tobias", "lucas"}),
    "doctor feed": cli_case(("doctor", "feed", "RUIZ")),
    "doctor feeds": cli_case(("doctor", "feeds")),
    "doctor retire": cli_case(("doctor", "retire", "RUIZ", "--from", "24/11/2026"), shows={"lucas"}),
    "export": cli_case(("export", "{tmp}/out")),
    "health": cli_case(("health", "--help")),  # asks a running service's /health: no patient there
    "clinic adopt": cli_case(("clinic", "adopt", "--help")),  # a clinic's file moved whole, no patient read
    "clinic release": cli_case(("clinic", "release", "--help")),  # the same: test_clinic_move.py
    "host serve": cli_case(("host", "serve", "--help")),  # serves the routes above, each clinic's: test_host.py
    "host nginx": cli_case(("host", "nginx", "{tmp}", "{tmp}/sites")),  # host names and networks only
    "host drill": cli_case(("host", "drill", "{tmp}", "--replica", "{tmp}/replica")),  # events' ids only: the
    # drills of test_host_drill.py print each clinic's line
    "host mail": cli_case(("host", "mail", "--help")),  # reads through the door as `mail`: test_host_mail.py sends
    "host status": cli_case(("host", "status", "{tmp}")),  # counts only: a folder without clinics here
    "import-appointments": cli_case(("import-appointments", "{tmp}/appointments.csv", "--dry-run")),
    "import-patients": cli_case(("import-patients", "{tmp}/patients.csv", "--dry-run")),
    "migrate": cli_case(("migrate",)),  # the schema only: nothing of a patient
    "mail retry": cli_case(("mail", "retry")),  # ids and kinds only
    "mail send": cli_case(("mail", "send", "--help")),  # reads through the door as `mail`: tests/test_mail.py sends
    "mail status": cli_case(("mail", "status")),  # ids and kinds only
    "mail test": cli_case(("mail", "test", "--help")),  # sends an address a message that names no patient
    "move": cli_case(("move", "{of_lucas}", "--date", "25/11/2026", "--time", "09:20"), shows={"lucas"}),
    "patient erase": cli_case(("patient", "erase", "{anselmo}", "--yes"), shows={"anselmo"}),
    "patient export": cli_case(("patient", "export", "{tobias}"), ("patient", "export", "{lucas}"),
                               shows={"tobias", "bernarda", "lucas"}),
    "patient rectify": cli_case(("patient", "rectify", "{lucas}", "--surname", "Iturbe")),
    "patient add": cli_case(("patient", "add", "--name", "Rosa", "--nif", valid_dni(108), "--email", "rosa@example.com")),
    "report": cli_case(("report",)),
    "replica check": cli_case(("replica", "check", "--help")),  # reads events only: test_restore_drill.py runs it
    "restore": cli_case(("restore", "--help")),  # replaces the database: test_admin.py restores for real; the
    # appointments a restore at an earlier moment loses are named through the door (test_restore_walk_back.py)
    "retention run": cli_case(("retention", "run")),
    "run": cli_case(("run", "--help")),  # serves the routes above
    "secret set": cli_case(("secret", "set", "--help")),
    "seed": cli_case(("seed", "--help")),
    "sign": cli_case(("sign", "GET", "/health", "--secret", "s3cret")),
    "staff add": cli_case(("staff", "add", "--help")),
    "staff list": cli_case(("staff", "list")),
    "staff password": cli_case(("staff", "password", "--help")),
    "staff remove": cli_case(("staff", "remove", "nadie")),
    "staff role": cli_case(("staff", "role", "luis", "admin")),
    "staff unlock": cli_case(("staff", "unlock", "luis")),
    "standby": cli_case(("standby", "--help")),
    "standby promote": cli_case(("standby", "promote", "--help")),
    "status": cli_case(("status",)),
    "waitlist add": cli_case(("waitlist", "add", "--nif", valid_dni(103), "--doctor", "MARTIN", "--from", "24/11/2026",
                              "--to", "31/12/2026"),
                             ("waitlist", "add", "--nif", valid_dni(101), "--brings-forward", "{of_zoraida}", "--from",
                              "23/11/2026", "--to", "23/11/2026")),
    "waitlist list": cli_case(("waitlist", "list"), shows={"zoraida"}),
    "waitlist remove": cli_case(("waitlist", "remove", "1")),
}


def every_route():
    """Each route of every table, keyed as ROUTES keys its case."""
    return [route.key for route in edges.ROUTES]


def every_command():
    """Each command line a user runs: the commands, and a subgroup that runs on its own."""
    return [" ".join(words) for words, command in edges.command_lines() if words and (
        not isinstance(command, click.Group) or command.invoke_without_command)]


def check(world, case, shows):
    """Drive a case; each answer shows only patients recorded for its reader, never the blocked."""
    seen = set()
    runs = case(world)
    while True:
        before = {reader: world.reads(reader) for reader in ("api", "desk:luis", cli_reader(), "feed:MARTIN")}
        try:
            reader, text = next(runs)
        except StopIteration:
            break
        for name, marks in world.blocked.items():
            assert not [mark for mark in marks if mark in text], f"{name} (blocked) shown to {reader}"
        after = world.reads(reader)
        for name in world.shown(text):
            person = world.visible[name]
            assert after.get(person.id, 0) > before[reader].get(person.id, 0), f"{name} shown to {reader} unrecorded"
        seen |= world.shown(text)
    assert shows <= seen, f"the case showed {sorted(seen)}, not {sorted(shows)}"


@pytest.mark.parametrize("key", every_route(), ids=" ".join)
def test_every_route_shows_a_patient_only_through_the_one_door(clinic_of_people, key):
    assert key in ROUTES, f"{key}: no case in ROUTES; add one that shows a patient, if the route can"
    world = clinic_of_people
    if key[1].endswith("cancel-rest"):
        series, _, _ = book_series(world.api.app.clinic,
                                   Visit(patient_id=world.visible["tobias"].id, doctor_id="MARTIN"),
                                   first=dt.date(2026, 12, 15), time_text="10:30", every_days=7, count=2,
                                   source="desk:ana")
        world.booked["series"] = str(world.api.db().execute(
            "SELECT min(id) FROM appointments WHERE series_id = ?", (series,)).fetchone()[0])
    check(world, *ROUTES[key])


@pytest.mark.parametrize("command", every_command())
def test_every_command_shows_a_patient_only_through_the_one_door(clinic_of_people, command):
    assert command in COMMANDS, f"agenda {command}: no case in COMMANDS; add one that shows a patient, if it can"
    world = clinic_of_people
    (world.tmp_path / "patients.csv").write_text(NIF_FILE.format(nif=valid_dni(103)), encoding="utf-8")
    (world.tmp_path / "appointments.csv").write_text(
        f"date,time,doctor,nif,name\n25/11/2026,09:00,RUIZ,{valid_dni(103)},Anselmo\n", encoding="utf-8")
    check(world, *COMMANDS[command])


def test_every_route_and_command_has_a_case_and_every_case_names_one_that_is_there():
    assert not set(every_route()) - set(ROUTES), "routes with no case in ROUTES"
    assert not set(every_command()) - set(COMMANDS), "commands with no case in COMMANDS"
    assert not set(ROUTES) - set(every_route()), "cases in ROUTES of no route"
    assert not set(COMMANDS) - set(every_command()), "cases in COMMANDS of no command"


def test_the_check_fails_for_a_page_that_shows_a_patient_without_the_record(clinic_of_people):
    world = clinic_of_people

    def unrecorded(world):
        yield "desk:luis", "Quintanilla"
    with pytest.raises(AssertionError, match="zoraida shown to desk:luis unrecorded"):
        check(world, unrecorded, set())

    def leaking(world):
        yield "api", "tutor: Herminia Castañeda"
    with pytest.raises(AssertionError, match="herminia"):
        check(world, leaking, set())


# The one door, in the code: no other module selects who a patient is

IDENTITY_COLUMNS = re.compile(r"\b(name|surname|nif|phone|phone_e164|birth_date|guardian_nif|guardian_name)\b|(?<!\()\*")
WRITTEN_NOT_SHOWN = {  # reads of identity that write it, never show it: (module, function)
    ("domain/registry.py", "register_patient"),  # the guardian's phone, copied to the child's row
    ("domain/rights.py", "rectify"),  # the current details, merged with the corrections
    ("domain/rights.py", "forget_guardian"),  # the erased guardian's phone, emptied where a child's row copied it
    ("domain/rights.py", "identifiers"),  # a blocked patient's NIF and phone, to leave them out of other lines
}


def identity_selects(path):
    """(function, SQL) of each string in `path` that selects identity columns from the patients."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    top = ast.Module([node for node in tree.body if not isinstance(node, (ast.FunctionDef, ast.ClassDef))], [])
    for function in functions + [top]:
        inner = {id(node) for child in ast.iter_child_nodes(function) if isinstance(child, ast.FunctionDef)
                 for node in ast.walk(child)}
        nodes = [node for node in ast.walk(function) if id(node) not in inner]
        parts = {id(part) for node in nodes if isinstance(node, ast.JoinedStr) for part in node.values}
        for node in nodes:
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and id(node) not in parts:
                text = node.value if isinstance(node, ast.Constant) else "".join(
                    part.value for part in node.values if isinstance(part, ast.Constant))
                if not isinstance(text, str):
                    continue
                for table in re.finditer(r"\bFROM (live_)?patients\b", text, re.I):
                    start = text.upper().rfind("SELECT", 0, table.start())
                    if start >= 0 and IDENTITY_COLUMNS.search(text[start + 6:table.start()]):
                        found.append((getattr(function, "name", "<module>"), text[start:table.end()]))
    return found


def package_files():
    """(path within _agenda, path) of every module of the package."""
    return [(path.relative_to(ROOT / "_agenda").as_posix(), path) for path in sorted((ROOT / "_agenda").rglob("*.py"))]


def test_only_identity_py_selects_who_a_patient_is():
    leaks = [(name, function, sql) for name, path in package_files() if name != "domain/identity.py"
             for function, sql in identity_selects(path) if (name, function) not in WRITTEN_NOT_SHOWN]
    assert not leaks


def test_the_code_check_would_see_a_second_door(tmp_path):
    second = tmp_path / "second.py"
    second.write_text('def page(conn):\n    return conn.execute("SELECT p.id, p.name FROM patients p")\n'
                      'def other(conn):\n    return conn.execute(f"SELECT * FROM live_patients WHERE id = {1}")\n')
    assert [function for function, _ in identity_selects(second)] == ["page", "other"]


def test_only_identity_py_notes_a_read():
    noting = [name for name, path in package_files()
              if ".access.note(" in path.read_text(encoding="utf-8") and name != "domain/identity.py"]
    assert noting == []


# What the door means for the people around the erased

def test_a_freed_nif_finds_only_its_new_holder_and_no_child_of_the_old(clinic_of_people):
    world = clinic_of_people
    client, csrf = world.desk()
    found = client.post("/desk/patients", {"q": valid_dni(103), "csrf": csrf}).text
    assert "Ximénez" in found and "Iturbe" not in found and "tutor" not in found.lower()
    assert world.api.get(f"/patients?nif={valid_dni(103)}").json["name"] == "Anselmo"
    assert world.api.get(f"/appointments?nif={valid_dni(103)}").json["data"] == []  # Lucas's is not hers now
    lucas = world.api.get(f"/appointments/{world.booked['of_lucas']}").json
    assert lucas["patientName"] == "Lucas Iturbe" and lucas["nif"] is None and lucas["phone"] is None
    assert world.api.get("/appointments?phone=611000103").json["data"] == []


def test_the_export_leaves_the_blocked_out_wholly_and_reads_back_the_child_without_a_guardian(clinic_of_people):
    world = clinic_of_people
    out = world.tmp_path / "out"
    said = world.cli("export", out)
    assert "2 blocked patients left out" in said and "events about them left out" in said, said
    files = {path.name: path.read_text(encoding="utf-8") for path in out.iterdir()}
    for name, marks in world.blocked.items():
        for file, text in files.items():
            assert not [mark for mark in marks if mark in text], f"{name} in {file}"
    lucas, = [row for row in csv.DictReader(io.StringIO(files["patients.csv"])) if row["surname"] == "Iturbe"]
    assert [lucas[field] for field in ("birthDate", "nif", "phone", "guardianNif")] == ["05/06/2018", "", "", ""]
    new = world.tmp_path / "new.db"
    for step in (("seed", out / "catalogs.csv"), ("import-patients", out / "patients.csv"),
                 ("import-appointments", out / "appointments.csv")):
        runner = CliRunner(env={"AGENDA_DB": str(new)})
        done = runner.invoke(agenda.cli, [*map(str, step)], obj={"now": Clock(world.clock.moment)})
        assert done.exit_code == 0, (step, done.output)
    conn = agenda.open_database(new)
    lucas = conn.execute("SELECT nif, guardian_id, birth_date FROM patients WHERE surname = 'Iturbe'").fetchall()
    assert [tuple(row) for row in lucas] == [(None, None, "2018-06-05")]
    conn.close()


def test_a_reader_searching_again_and_again_adds_to_one_row_a_day(clinic_of_people):
    world = clinic_of_people
    client, csrf = world.desk()
    for turn in range(300):
        client.post("/desk/patients", {"q": ("Zoraida", "Quintan")[turn % 2], "csrf": csrf})
    rows = world.api.db().execute("SELECT reads FROM access_reads WHERE reader = 'desk:luis' AND kind = 'search'"
                                  " AND patient_id = ?", (world.visible["zoraida"].id,)).fetchall()
    assert [tuple(row) for row in rows] == [(300,)]
    page = client.get("/desk/access")
    by_reader = {row.select("td")[0].text: row.select("td")[2].text for row in page.html.select("table")[0].select(
        "tbody tr")}
    assert int(by_reader["desk:luis"]) >= 300 and "Quintanilla" not in page.text  # ids only
    summary = client.get(f"/desk/patients/{world.visible['zoraida'].id}/access")
    assert len(summary.html.select("table.access tbody tr")) == 1  # one reader, one line: the detail a click away


# The door's two forms: who a patient is in Python (`identity_of`) and in SQL beside an appointment's row

NAMES = st.one_of(st.none(), st.just(""), st.text(alphabet="ab ñ'-", min_size=1, max_size=6))


@settings(max_examples=300, deadline=None)
@given(name=NAMES, surname=NAMES, nif=st.sampled_from([None, "", "12345678Z"]),
       guardian=st.one_of(st.none(), st.tuples(NAMES, NAMES, st.sampled_from([None, "", "87654321X"]))))
def test_the_door_writes_who_a_patient_is_in_sql_as_in_python(name, surname, nif, guardian):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE patients (id INTEGER PRIMARY KEY, name, surname, nif, phone_e164, guardian_id,"
                 " blocked_at, email, messages, note)")
    if guardian is not None:
        conn.execute("INSERT INTO patients VALUES (2, ?, ?, ?, NULL, NULL, NULL, NULL, 1, NULL)", guardian)
    conn.execute("INSERT INTO patients VALUES (1, ?, ?, ?, '+34600000000', ?, NULL, 'a@example.es', 1, 'de mañana')",
                 (name, surname, nif, 2 if guardian else None))
    words = {key: key for key in IDENTITY_SQL}
    (text,) = conn.execute(f"SELECT json_object({identity_fields(words)}) FROM patients p {GUARDIAN_JOIN}"
                           " WHERE p.id = 1").fetchone()
    guardian_nif = guardian[2] if guardian else None
    expected = {"full_name": full_name(name, surname), "shown_nif": nif or guardian_nif,
                "phone_e164": "+34600000000",
                "guardian_name": full_name(*guardian[:2]) if guardian else None, "email": "a@example.es",
                "messages": 1, "note": "de mañana"}
    assert json.loads(text) == expected
