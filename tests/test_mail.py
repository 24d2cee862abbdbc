"""The sender (docs/design.md, "The sender", "What a message says"): every message through a real SMTP server that
asks for STARTTLS, on a certificate the test makes; once each, in order per appointment, across a server that
refuses for a while, an address refused, a later change, a block and a SIGTERM."""

import datetime as dt
import os
import random
import re
import signal
import sqlite3
import subprocess
import time

import pytest
import webtest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain.closures import add_closure
from _agenda.domain.outbox import hold_unsent, start_try
from _agenda.domain.registry import register_patient
from _agenda.domain.patients import set_messages
from _agenda.domain.rights import request_erasure
from _agenda.domain.series import book_series
from _agenda.words.texts import mail_reason, TEXTS, translator
from _agenda.patient.messages import envelope, written
from _agenda.patient.sender import Mailer, public_address, Sender, smtp_server, SMTP_REASONS
from _agenda.storage.connections import transaction
from conftest import (agenda_command, days_ahead, EVERY_DAY_CSV, MADRID, ROOT, SEEDED_AT, seed, send, valid_dni,
                      write_csv)
from conftest import Api
from mail_server import free_port, MailServer

FROM = "Clínica Sol <citas@clinicasol.es>"
PUBLIC = "https://citas.clinicasol.es"


@pytest.fixture
def mail_server(tmp_path):
    server = MailServer(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def sender(api, mail_server):
    return Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM, PUBLIC)


def states(api):
    return [tuple(row) for row in api.db().execute("SELECT appointment_id, kind, state FROM outbox ORDER BY id")]


def link_of(message):
    return re.search(re.escape(PUBLIC) + r"/cita/([A-Za-z0-9_-]{32,64})(?![A-Za-z0-9_-])",
                     message.get_body(("plain",)).get_content())


def test_a_booking_sends_one_confirmation_in_spanish_with_its_link_and_nothing_clinical(api, sender, mail_server):
    ana = api.new_patient(email="ana@example.es")
    booked = api.book(ana, reason="Dolor de rodilla")
    assert sender.pass_once() == {"sent": 1}
    assert sender.pass_once() == {}  # once
    [(recipients, message)] = mail_server.inbox.messages()
    assert recipients == ["ana@example.es"]
    assert message["Subject"] == "Cita reservada: martes, 24 de noviembre de 2026, 09:00"
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert message["List-Unsubscribe"].strip().startswith(f"<{PUBLIC}/cita/baja/")
    raw = message.as_string()
    for private in ("Dolor", "12345678Z", "612345678", "García"):
        assert private not in raw
    text = message.get_body(("plain",)).get_content()
    assert "Hola, Ana:" in text and "Centro" in text and "09:00" in text and "Lucía Martín" not in text
    assert "nos dio esta dirección" in text  # the first message says messages are on
    calendar = next(part for part in message.iter_attachments() if part.get_content_type() == "text/calendar")
    clinic_id = api.db().execute("SELECT id FROM clinic_identity").fetchone()[0]
    assert f"UID:appointment-{booked}.{clinic_id}@agenda" in calendar.get_content()  # unique in the world
    token = link_of(message)[1]
    assert token not in calendar.get_content() and "/cita/" not in calendar.get_content()  # calendars share it
    page = webtest.TestApp(api.app).get(f"/cita/{token}")
    assert page.status_int == 200 and "Ana" in page.text and "García" not in page.text


def test_a_refused_booking_sends_nothing_and_a_move_before_sending_sends_one_message_of_the_new_time(
        api, sender, mail_server):
    ana, eva = api.new_patient(email="ana@example.es"), api.new_patient(nif=valid_dni(1), name="Eva")
    booked = api.book(ana)
    api.book(eva, status=409)  # the same slot, refused: rolled back, nothing written
    assert api.put(f"/appointments/{booked}", {"newDate": "24/11/2026", "newTime": "10:00"}).status_int == 200
    assert sender.pass_once() == {"stale": 1, "sent": 1}
    [(_, message)] = mail_server.inbox.messages()
    assert message["Subject"] == "Cita reservada: martes, 24 de noviembre de 2026, 10:00"  # never told: a confirmation
    assert states(api) == [(int(booked), "confirmation", "stale"), (int(booked), "update", "sent")]


def test_a_server_that_refuses_for_a_while_gets_each_message_once_and_in_order(api, sender, mail_server, clock):
    ana = api.new_patient(email="ana@example.es")
    booked = api.book(ana)
    assert sender.pass_once() == {"sent": 1}  # told of the visit
    api.put(f"/appointments/{booked}", {"newDate": "24/11/2026", "newTime": "10:00"})
    mail_server.inbox.busy = True
    assert sender.pass_once() == {"unreachable": 1}
    api.delete(f"/appointments/{booked}")  # a notice waits behind the update
    assert sender.pass_once() == {}  # not yet time to try again
    mail_server.inbox.busy = False
    clock.moment += dt.timedelta(minutes=1)
    assert sender.pass_once() == {"stale": 1, "sent": 1}  # the update is moot: the visit was cancelled
    message = mail_server.inbox.messages()[-1][1]
    assert message["Subject"].startswith("Cita anulada")
    assert "METHOD:CANCEL" in next(message.iter_attachments()).get_content()


def test_one_refused_address_never_holds_the_others(api, sender, mail_server):
    ana = api.new_patient(email="nadie@example.es")
    eva = api.new_patient(nif=valid_dni(1), name="Eva", email="eva@example.es")
    mail_server.inbox.refused.add("nadie@example.es")
    api.book(ana)
    api.book(eva, time="09:30")
    assert sender.pass_once() == {"failed": 1, "sent": 1}
    assert [recipients for recipients, _ in mail_server.inbox.messages()] == [["eva@example.es"]]
    failed = api.db().execute("SELECT error FROM outbox WHERE state = 'failed'").fetchone()["error"]
    assert "550" in failed and "nadie" not in failed  # why, never the address
    api.app.accounts.add_staff("ana", "correct horse battery")
    desk = webtest.TestApp(api.app)
    login = desk.get("/desk/login")
    login.form["name"], login.form["password"] = "ana", "correct horse battery"
    login.form.submit()
    page = desk.get("/desk/appointments/1")  # reception reads why, and what to do, in its words
    assert "no enviado: el servidor de correo no lo aceptó — el servidor rechazó la dirección del paciente (550)" \
           in page.text and "compruebe su correo" in page.text


def test_no_address_a_stop_or_a_block_sends_nothing(api, sender, mail_server):
    ana = api.new_patient()  # no e-mail
    eva = api.new_patient(nif=valid_dni(1), name="Eva", email="eva@example.es")
    with transaction(api.db()) as conn:  # she stopped them
        set_messages(conn, eva, 0, api.app.clinic.clock(), "desk:ana")
    leo = api.new_patient(nif=valid_dni(2), name="Leo", email="leo@example.es")
    api.book(ana)
    api.book(eva, time="09:30")
    api.book(leo, time="10:00")
    request_erasure(api.app.clinic, leo, "cli", "cli:test")
    assert sender.pass_once() == {"skipped": 2}  # the erasure skipped Leo's own at once
    assert api.db().execute("SELECT error FROM outbox WHERE appointment_id IN (SELECT id FROM appointments WHERE"
                            " patient_id = ?)", (leo,)).fetchone()[0] == "erasure"
    assert mail_server.inbox.messages() == []
    assert api.db().execute("SELECT count(*) FROM patient_links").fetchone()[0] == 0


def test_a_reminder_goes_the_clinics_hours_before_and_none_for_a_visit_booked_inside_them(api, sender, mail_server,
                                                                                           clock):
    ana = api.new_patient(email="ana@example.es")
    eva = api.new_patient(nif=valid_dni(1), name="Eva", email="eva@example.es")
    api.book(ana, date="27/11/2026", time="09:00")  # Friday: booked Monday, more than 48 h before
    assert sender.pass_once() == {"sent": 1}
    clock.moment = dt.datetime(2026, 11, 25, 9, 30, tzinfo=MADRID)  # Wednesday, inside the 48 h
    api.book(eva, date="27/11/2026", time="10:00")  # booked inside them: a confirmation, no reminder
    assert sender.pass_once() == {"sent": 2}
    assert sender.pass_once() == {}
    subjects = [(recipients, message["Subject"]) for recipients, message in mail_server.inbox.messages()]
    assert subjects == [(["ana@example.es"], "Cita reservada: viernes, 27 de noviembre de 2026, 09:00"),
                        (["eva@example.es"], "Cita reservada: viernes, 27 de noviembre de 2026, 10:00"),
                        (["ana@example.es"], "Recordatorio de su cita: viernes, 27 de noviembre de 2026, 09:00")]


def test_after_a_restore_unsent_messages_wait_for_the_admin(api, sender, mail_server, db_path):
    ana = api.new_patient(email="ana@example.es")
    api.book(ana)
    with transaction(api.db()) as conn:
        assert hold_unsent(conn) == 1
    assert sender.pass_once() == {}
    runner = CliRunner()
    status = runner.invoke(agenda.cli, ["mail", "status", "--db", str(db_path)])
    assert status.exit_code == 0 and "1 held" in status.output and "confirmation about appointment" in status.output
    assert "ana@" not in status.output
    retry = runner.invoke(agenda.cli, ["mail", "retry", "--db", str(db_path)])
    assert retry.exit_code == 0 and "1 message(s) released" in retry.output
    assert sender.pass_once() == {"sent": 1}


def test_agenda_mail_test_sends_a_test_message_and_refuses_a_wrong_address(mail_server, db_path, api):
    runner = CliRunner()
    args = ["mail", "test", "--db", str(db_path), "--smtp", mail_server.url, "--smtp-ca", str(mail_server.ca_file),
            "--mail-from", FROM, "--clinic-name", "Clínica Sol"]
    sent = runner.invoke(agenda.cli, [*args, "recepcion@clinicasol.es"])
    assert sent.exit_code == 0, sent.output
    [(recipients, message)] = mail_server.inbox.messages()
    assert recipients == ["recepcion@clinicasol.es"] and message["Subject"] == "Mensaje de prueba de Clínica Sol"
    wrong = runner.invoke(agenda.cli, [*args, "not an address"])
    assert wrong.exit_code == 2 and "ADDRESS" in wrong.output


NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(name=NAMES, clinic=NAMES, center=NAMES)
def test_no_name_breaks_a_header_or_the_calendar(name, clinic, center):
    """Hypothesis: whatever a patient's name, the clinic's or a center's, the message has one To, one Subject of one
    line, and the calendar is one event."""
    starts = dt.datetime(2026, 12, 1, 9, 0, tzinfo=MADRID)
    visit = {"id": 7, "status": "booked", "center_name": center, "doctor_name": "X", "type_name": None,
             "starts": starts, "ends": starts + dt.timedelta(minutes=30)}
    view = {"kind": "confirmation", "language": None, "clinic": clinic, "first_name": name, "visit": visit,
            "series": None, "shows": "place", "link": f"{PUBLIC}/cita/{'a' * 32}",
            "stop_link": f"{PUBLIC}/cita/baja/{'b' * 32}", "first": True, "sequence": 0, "now": starts,
            "uids": {7: "appointment-7.c@agenda"}}
    message = envelope(view, written(view), FROM, "ana@example.es", "<1@clinicasol.es>")
    raw = message.as_bytes()
    parsed = __import__("email").message_from_bytes(raw, policy=__import__("email").policy.default)
    assert len(parsed.get_all("To")) == 1 and parsed["To"].addresses[0].addr_spec == "ana@example.es"
    assert len(parsed.get_all("Subject")) == 1 and "\n" not in str(parsed["Subject"])
    assert parsed["Auto-Submitted"] == "auto-generated"
    calendar = next(part for part in parsed.iter_attachments()).get_content()
    assert calendar.count("BEGIN:VEVENT") == 1


class SenderChild:
    """The seeded clinic with `count` coming visits, each of a patient with an e-mail, and `agenda mail send` run
    against it in child processes: `start()` one (it is stopped by the test, by its own id), `finish()` a last
    pass that sends what is left."""

    def __init__(self, tmp_path, db_path, mail_server, count):
        seed(db_path, write_csv(tmp_path, EVERY_DAY_CSV), at=SEEDED_AT)
        app = agenda.create_app(db_path, "s" * 32)
        api = Api(app, "s" * 32)
        for number in range(count):
            patient = api.new_patient(nif=valid_dni(100 + number), name=f"P{number}", email=f"p{number}@example.es")
            api.book(patient, date=days_ahead(3 + number // 4), time=("09:00", "09:30", "10:00", "10:30")[number % 4])
        app.clinic.db.close()
        self.addresses = sorted(f"p{number}@example.es" for number in range(count))
        self.inbox = mail_server.inbox
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
        self.env.update(PYTHONUNBUFFERED="1", AGENDA_SMTP=mail_server.url, AGENDA_SMTP_CA=str(mail_server.ca_file),
                        AGENDA_MAIL_FROM=FROM, AGENDA_PUBLIC_URL=PUBLIC)
        self.command = agenda_command("mail", "send", "--db", str(db_path), "--every", "0.5")

    def start(self):
        """A sender, once it has sent a message more than before (a minute at most, for a busy machine)."""
        before = len(self.inbox.messages())
        child = subprocess.Popen(self.command, env=self.env, cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while len(self.inbox.messages()) == before and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.005)
        return child

    def finish(self):
        once = subprocess.run([*self.command, "--once"], env=self.env, cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert once.returncode == 0, once.stdout + once.stderr
        return self.inbox.messages()


def test_the_sender_sends_each_message_once_across_a_sigterm(tmp_path, db_path, mail_server):
    """`agenda mail send` in a child process, stopped by SIGTERM in the middle of many messages and started again:
    every message arrives once."""
    senders = SenderChild(tmp_path, db_path, mail_server, 30)
    for _ in range(2):
        child = senders.start()
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == 0, child.stdout.read().decode()
    received = senders.finish()
    assert sorted(recipients[0] for recipients, _ in received) == senders.addresses
    assert len({message["Message-ID"] for _, message in received}) == 30


def test_agenda_run_with_smtp_sends_a_booking_s_confirmation_and_stops_its_sender(running, mail_server):
    """`agenda run --smtp` starts the sender beside the service and stops it with the service."""
    server = running("--smtp", mail_server.url, "--smtp-ca", str(mail_server.ca_file), "--mail-from", FROM,
                     "--public-url", PUBLIC, "--clinic-name", "Clínica Sol")
    status, patient = send(server.url, "POST", "/patients", {"name": "Ana", "surname": "García", "nif": "12345678Z",
                                                              "phone": "612345678", "email": "ana@example.es"})
    assert status == 201
    status, _ = send(server.url, "POST", "/appointments", {"date": days_ahead(2), "time": "09:00", "doctorId": "MARTIN",
                                                            "patientId": patient["patientId"]})
    assert status == 201
    deadline = time.monotonic() + 60  # a busy machine: a minute at most
    while not mail_server.inbox.messages() and time.monotonic() < deadline:
        time.sleep(0.05)
    [(recipients, message)] = mail_server.inbox.messages()
    assert recipients == ["ana@example.es"] and "Clínica Sol" in message.get_body(("plain",)).get_content()
    assert server.terminate() == 0
    assert "mail sender started" in server.log() and "ana@example.es" not in server.log()
    assert "no phone for the center C1" in server.log()  # the patients are told to call: the admin, to add it
    assert not [line for line in server.log().splitlines() if "Traceback" in line]


def test_agenda_run_refuses_to_start_a_sender_without_where_its_links_lead(running, mail_server, db_path):
    runner = CliRunner()
    said = runner.invoke(agenda.cli, ["run", "--db", str(db_path), "--insecure-no-signature", "--smtp", mail_server.url,
                                      "--mail-from", FROM])
    assert said.exit_code == 1 and "--public-url" in said.output
    said = runner.invoke(agenda.cli, ["run", "--db", str(db_path), "--insecure-no-signature", "--smtp",
                                      "smtp://u:secret@host", "--mail-from", FROM, "--public-url", PUBLIC])
    assert said.exit_code == 1 and "--smtp-password-file" in said.output and "secret" not in said.output.replace(
        "--smtp-password-file", "")


def test_while_the_replica_has_not_confirmed_nothing_is_sent(api, mail_server):
    confirmed = []
    sender = Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM,
                    PUBLIC, sync=lambda: bool(confirmed))
    api.book(api.new_patient(email="ana@example.es"))
    assert sender.pass_once() == {"waiting for the replica": 1}
    assert mail_server.inbox.messages() == []
    confirmed.append(True)
    assert sender.pass_once() == {"sent": 1}


PLACES_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to,pause,needs,category,types,room,address,phone,bring
center,C1,Centro,,,,,,,,,,,,,,"Calle Mayor 1, Madrid",912 345 678,
speciality,MG,Medicina general,,,,,,,,,,,,,,,,
type,MG-ECO,Ecografía,MG,,,,,30,,,,,,,,,,Vejiga llena
doctor,MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-11:00,30,,,,,,MG-ECO,,,,
"""


def test_a_centers_address_and_phone_and_what_to_bring_travel_both_ways_and_reach_the_message_not_the_caller(
        make_api, mail_server, db_path, tmp_path, clock):
    api = make_api(PLACES_CSV)
    sender = Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM,
                    PUBLIC)
    api.book(api.new_patient(email="ana@example.es"), specialityId="MG-ECO")
    assert sender.pass_once() == {"sent": 1}
    text = mail_server.inbox.messages()[0][1].get_body(("plain",)).get_content()
    assert "Dirección: Calle Mayor 1, Madrid" in text and "Indicaciones: Vejiga llena" in text and "912 345 678" in text
    assert "Calle Mayor" not in api.get("/custom-config").text  # not the caller's (D14)
    token = link_of(mail_server.inbox.messages()[0][1])[1]
    clock.moment = dt.datetime(2026, 11, 23, 10, 0, tzinfo=MADRID)  # 23 hours before: inside the notice
    page = webtest.TestApp(api.app).get(f"/cita/{token}")
    assert 'Llame a la clínica al <a href="tel:+34912345678">912 345 678</a>' in page.text and "Vejiga llena" in page.text
    api.app.clinic.db.close()
    out = tmp_path / "export"
    runner = CliRunner()
    assert runner.invoke(agenda.cli, ["export", str(out), "--db", str(db_path)]).exit_code == 0
    exported = (out / "catalogs.csv").read_text(encoding="utf-8")
    assert "Calle Mayor 1, Madrid" in exported and "Vejiga llena" in exported
    new = tmp_path / "new.db"
    seeded = runner.invoke(agenda.cli, ["seed", str(out / "catalogs.csv"), "--db", str(new)])
    assert seeded.exit_code == 0, seeded.output
    tables = {}
    for path in (db_path, new):
        conn = sqlite3.connect(path)
        tables[path] = [conn.execute("SELECT id, name, address, phone FROM centers").fetchall(),
                        conn.execute("SELECT id, bring FROM visit_types").fetchall()]
        conn.close()
    assert tables[db_path] == tables[new] == [[("C1", "Centro", "Calle Mayor 1, Madrid", "912 345 678")],
                                              [("MG-ECO", "Vejiga llena")]]


def test_a_try_cut_short_by_a_crash_goes_once_more_with_the_message_id_written_with_its_row(api, sender, mail_server):
    """kill -9 between the server's 250 and the note of it: the next pass sends it again, with the Message-ID written
    with the row, so the patient's mail program shows one message; the database refuses to change it."""
    api.book(api.new_patient(email="ana@example.es"))
    written_with_row = api.db().execute("SELECT message_id FROM outbox").fetchone()[0]
    assert re.fullmatch(r"[0-9a-f]{32}", written_with_row)
    with transaction(api.db()) as conn:  # the first try's own transaction, then the crash
        assert start_try(conn, 1, api.app.clinic.clock()) == written_with_row
    with pytest.raises(sqlite3.IntegrityError, match="keeps its Message-ID"), transaction(api.db()) as conn:
        conn.execute("UPDATE outbox SET message_id = 'other'")
    assert sender.pass_once() == {"sent": 1}
    [(_, message)] = mail_server.inbox.messages()
    assert message["Message-ID"] == f"<{written_with_row}@clinicasol.es>"
    assert api.db().execute("SELECT attempts, state FROM outbox").fetchone()[:] == (2, "sent")


def test_the_sender_killed_at_random_moments_repeats_a_message_at_most_once_with_its_message_id(tmp_path, db_path,
                                                                                              mail_server):
    """`agenda mail send` killed with SIGKILL at a random moment, five times, then run to the end: every message
    arrives, at most twice, and a repeat carries the first's Message-ID."""
    senders = SenderChild(tmp_path, db_path, mail_server, 20)
    for _ in range(5):
        child = senders.start()
        time.sleep(random.uniform(0, 0.05))
        child.kill()
        child.wait(timeout=30)
    by_address = {}
    for recipients, message in senders.finish():
        by_address.setdefault(recipients[0], []).append(message["Message-ID"])
    assert sorted(by_address) == senders.addresses
    assert all(len(ids) <= 2 and len(set(ids)) == 1 for ids in by_address.values()), by_address


def test_a_childs_messages_go_to_her_guardian_naming_the_child(api, sender, mail_server):
    api.new_patient(email="madre@example.es")  # the guardian, NIF 12345678Z
    child = register_patient(api.app.clinic, {"name": "Pablo", "surname": "García", "birthDate": "03/04/2019",
                                              "guardianNif": "12345678Z"}, source="desk:ana")
    api.book(child)
    assert sender.pass_once() == {"sent": 1}
    [(recipients, message)] = mail_server.inbox.messages()
    text = message.get_body(("plain",)).get_content()
    assert recipients == ["madre@example.es"] and text.startswith("Hola:") and "Paciente: Pablo" in text


def test_a_visit_on_the_list_to_call_gets_no_reminder_and_its_link_cannot_confirm_it(api, sender, mail_server,
                                                                                     clock):
    ana = api.new_patient(email="ana@example.es")
    booked = api.book(ana, date="27/11/2026", time="09:00")
    assert sender.pass_once() == {"sent": 1}
    add_closure(api.app.clinic, doctor_id="MARTIN", first=dt.date(2026, 11, 27), reason="Congreso")
    token = link_of(mail_server.inbox.messages()[0][1])[1]
    browser = webtest.TestApp(api.app)
    page = browser.get(f"/cita/{token}")
    assert "La clínica le llamará" in page.text and "/confirmar" not in page.text
    refused = browser.post(f"/cita/{token}/confirmar", {"csrf": re.search(r'csrf" value="(\w+)"', page.text)[1]
                                                        if 'csrf" value=' in page.text else ""}, expect_errors=True)
    assert refused.status_int in (403, 409)
    assert api.db().execute("SELECT status FROM appointments WHERE id = ?", (booked,)).fetchone()[0] == "booked"
    clock.moment = dt.datetime(2026, 11, 25, 10, 0, tzinfo=MADRID)  # inside the 48 hours
    assert sender.pass_once() == {}  # no reminder


def test_no_reminder_when_the_clinic_turns_them_off(make_api, mail_server, clock):
    api = make_api(reminder_hours=0)
    sender = Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM,
                    PUBLIC)
    api.book(api.new_patient(email="ana@example.es"), date="27/11/2026", time="09:00")
    assert sender.pass_once() == {"sent": 1}
    clock.moment = dt.datetime(2026, 11, 25, 10, 0, tzinfo=MADRID)
    assert sender.pass_once() == {}


def test_an_english_patient_reads_english_and_a_clinic_that_shows_the_doctor_names_them(make_api, mail_server):
    api = make_api(mail_shows="doctor")
    sender = Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM,
                    PUBLIC)
    ana = api.new_patient(name="<b>Ann</b>", email="ann@example.es")
    with transaction(api.db()) as conn:
        conn.execute("UPDATE patients SET language = 'en' WHERE id = ?", (ana,))
    api.book(ana)
    assert sender.pass_once() == {"sent": 1}
    [(_, message)] = mail_server.inbox.messages()
    assert message["Subject"] == "Appointment booked: Tuesday 24 November 2026, 09:00"
    text, page = message.get_body(("plain",)).get_content(), message.get_body(("html",)).get_content()
    assert "Hello <b>Ann</b>," in text and "Practitioner: Lucía Martín" in text
    assert "&lt;b&gt;Ann&lt;/b&gt;" in page and "<b>Ann</b>" not in page  # a name is text, never markup
    assert 'lang="en"' in page
    link = webtest.TestApp(api.app).get(f"/cita/{link_of(message)[1]}")
    assert "Your appointment" in link.text and "I will be there" in link.text and "Lucía Martín" in link.text


def test_a_restore_holds_the_messages_not_yet_sent_for_the_admin(api, db_path, tmp_path):
    runner = CliRunner()
    api.book(api.new_patient(email="ana@example.es"))
    assert runner.invoke(agenda.cli, ["backup", str(tmp_path / "copy.db"), "--db", str(db_path)]).exit_code == 0
    api.app.clinic.db.close()  # the service stopped, as a restore asks
    restored = runner.invoke(agenda.cli, ["restore", str(tmp_path / "copy.db"), "--db", str(db_path), "--yes"])
    assert restored.exit_code == 0, restored.output
    assert "1 message(s) to patients not yet sent are held" in restored.output
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT state FROM outbox").fetchall() == [("held",)]
    conn.close()


def test_a_server_that_refuses_the_clinic_itself_holds_every_message_for_later_and_fails_none(api, sender,
                                                                                              mail_server, clock):
    for number in range(3):
        api.book(api.new_patient(nif=valid_dni(number), name=f"P{number}", email=f"p{number}@example.es"),
                 time=("09:00", "09:30", "10:00")[number])
    mail_server.inbox.refuse_sender = True  # a wrong --mail-from, a password changed: no patient's fault
    assert sender.pass_once() == {"unreachable": 1}
    states_now = [row[0] for row in api.db().execute("SELECT state FROM outbox")]
    assert states_now == ["waiting"] * 3
    assert [tuple(row) for row in api.db().execute("SELECT error, attempts FROM outbox WHERE error IS NOT NULL")] == [
        ("sender_refused 550", 0)]  # the try does not count against the patient's message
    mail_server.inbox.refuse_sender = False
    clock.moment += dt.timedelta(minutes=1)
    assert sender.pass_once() == {"sent": 3}


def test_an_smtp_server_in_clear_is_only_one_on_this_machine_and_links_only_over_https():
    assert smtp_server("smtp+plain://localhost:25").security == "none"
    assert smtp_server("smtp+plain://citas@127.0.0.1:2525").user == "citas"
    with pytest.raises(ValueError, match="only to a relay on this machine"):
        smtp_server("smtp+plain://citas@mail.example.es:25")
    with pytest.raises(ValueError, match="keep the SMTP password out of the URL"):
        smtp_server("smtps://citas:secreto@mail.example.es")
    assert public_address("https://citas.example.es/") == "https://citas.example.es"
    assert public_address("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    for wrong in ("http://citas.example.es", "ftp://x", "", "citas.example.es"):
        with pytest.raises(ValueError, match="https"):
            public_address(wrong)


def test_one_sender_at_a_time_for_a_database(api, db_path, mail_server):
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    env.update(PYTHONUNBUFFERED="1", AGENDA_SMTP=mail_server.url, AGENDA_SMTP_CA=str(mail_server.ca_file),
               AGENDA_MAIL_FROM=FROM, AGENDA_PUBLIC_URL=PUBLIC)
    command = agenda_command("mail", "send", "--db", str(db_path), "--every", "0.5")
    first = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "Sending the patients' messages" in first.stdout.readline()  # it holds the lock now
        second = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert second.returncode == 1 and "one sender at a time" in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
    assert (db_path.parent / f"{db_path.name}.mail-sender").stat().st_mode & 0o777 == 0o600


def test_an_update_says_what_the_visit_was_as_the_last_message_told_it(api, sender, mail_server):
    booked = api.book(api.new_patient(email="ana@example.es"))
    assert sender.pass_once() == {"sent": 1}  # told: Tuesday 09:00
    api.put(f"/appointments/{booked}", {"newDate": "24/11/2026", "newTime": "09:30"})
    api.put(f"/appointments/{booked}", {"newDate": "24/11/2026", "newTime": "10:00"})
    assert sender.pass_once() == {"stale": 1, "sent": 1}  # one update, of the latest time
    update = mail_server.inbox.messages()[-1][1]
    text = update.get_body(("plain",)).get_content()
    assert update["Subject"] == "Cita cambiada: martes, 24 de noviembre de 2026, 10:00"
    assert "Hora: 10:00" in text and "Antes: martes, 24 de noviembre de 2026, 09:00" in text  # not 09:30


def test_a_pass_with_nothing_due_takes_no_write_lock(api, sender, monkeypatch):
    """The sender's every pass asks for reminders; with none due and nothing to send it writes nothing, so it never
    queues behind the caller's bookings for the write lock."""
    api.book(api.new_patient(email="ana@example.es"), date="27/11/2026", time="09:00")
    assert sender.pass_once() == {"sent": 1}
    database, taken = api.app.clinic.db, []
    opened = database.transaction
    monkeypatch.setattr(database, "transaction", lambda *args, **kw: taken.append(1) or opened(*args, **kw))
    assert sender.pass_once() == {} and taken == []


def test_agenda_mail_send_refuses_in_words_what_it_cannot_send_with(api, db_path, tmp_path, mail_server):
    runner = CliRunner(env={key: None for key in os.environ if key.startswith("AGENDA_")})
    base = ["mail", "send", "--db", str(db_path), "--once"]
    said = runner.invoke(agenda.cli, base)
    assert said.exit_code == 1 and "no SMTP server: give --smtp" in said.output
    readable = tmp_path / "smtp.password"
    readable.write_text("secreto\n")
    readable.chmod(0o644)
    said = runner.invoke(agenda.cli, [*base, "--smtp", "smtps://citas@mail.example.es", "--smtp-password-file",
                                      str(readable)])
    assert said.exit_code == 1 and f"chmod 600 {readable}" in said.output and "secreto" not in said.output
    smtp = ["--smtp", mail_server.url, "--smtp-ca", str(mail_server.ca_file)]
    said = runner.invoke(agenda.cli, [*base, *smtp, "--public-url", "http://citas.example.es", "--mail-from", FROM])
    assert said.exit_code == 1 and "https" in said.output
    said = runner.invoke(agenda.cli, [*base, *smtp, "--public-url", PUBLIC])
    assert said.exit_code == 1 and "--mail-from" in said.output
    said = runner.invoke(agenda.cli, [*base, *smtp, "--public-url", PUBLIC, "--mail-from", FROM])
    assert said.exit_code == 0 and "nothing to send" in said.output, said.output


def test_a_notice_follows_only_what_the_patient_was_told_of(api, sender, mail_server):
    """A visit whose confirmation went stale, never sent, is cancelled without a word; a series' visit, told by the
    series' message, is cancelled with its notice."""
    eva = api.new_patient(nif=valid_dni(1), name="Eva", email="eva@example.es")
    _, sessions, _ = book_series(api.app.clinic, Visit(patient_id=eva, doctor_id="MARTIN"), first=dt.date(2026, 12, 2),
                                 time_text="09:00", every_days=7, count=3, source="desk:ana")
    assert sender.pass_once() == {"sent": 1}  # the series: its three visits told
    third = sessions[2][0]
    booked = api.book(api.new_patient(email="ana@example.es"))
    api.delete(f"/appointments/{booked}")  # before any pass: the confirmation goes stale, never sent
    api.delete(f"/appointments/{third}")
    assert sender.pass_once() == {"stale": 2, "sent": 1}
    assert [recipients for recipients, _ in mail_server.inbox.messages()] == [["eva@example.es"]] * 2
    assert [tuple(row) for row in api.db().execute("SELECT kind, state, error FROM outbox WHERE appointment_id = ?",
                                                   (booked,))] == [("confirmation", "stale", "cancelled"),
                                                                   ("notice", "stale", "never_told")]


def test_a_wrong_password_535_fails_no_patients_message_and_says_so(api, mail_server, clock, db_path):
    """The server refuses the clinic's login (535) for a day: no message fails, the sender waits longer each time
    and does not try the patients' messages one after another; the admin reads why and what to do."""
    mailer = Mailer(smtp_server(mail_server.login_url, password="wrong", ca_file=str(mail_server.ca_file)))
    sender = Sender(api.app.clinic, mailer, FROM, PUBLIC)
    for number in range(3):
        api.book(api.new_patient(nif=valid_dni(number), name=f"P{number}", email=f"p{number}@example.es"),
                 date="27/11/2026", time=("09:00", "09:30", "10:00")[number])
    assert sender.pass_once() == {"unreachable": 1}
    assert sender.pass_once() == {}  # paused: not a login a pass
    for _ in range(9):  # more than the eight tries a patient's message gets
        clock.moment += dt.timedelta(hours=3)
        assert sender.pass_once() == {"unreachable": 1}
    logins = mail_server.inbox.logins  # smtplib tries PLAIN, then LOGIN: once a pass, not once a message
    assert len(logins) == 2 * 10 and not any(taken for _, taken in logins)
    assert [tuple(row) for row in api.db().execute("SELECT state, attempts FROM outbox")] == [("waiting", 0)] * 3
    runner = CliRunner()
    said = runner.invoke(agenda.cli, ["status", "--db", str(db_path)], obj={"now": clock})
    line = next(line for line in said.output.splitlines() if line.startswith("Mail:"))
    assert "3 waiting, the oldest written 23/11/2026" in line and "(27 h ago)" in line
    assert "refused the clinic's login (535)" in line and "--smtp-password-file" in line
    listed = runner.invoke(agenda.cli, ["mail", "status", "--db", str(db_path)]).output
    assert "waiting  confirmation about appointment 1 (27/11/2026 09:00, MARTIN at C1)" in listed
    assert "refused the clinic's login (535)" in listed and "p0@" not in listed
    mailer.server = mailer.server._replace(password="secreto")  # the admin fixes the password file
    clock.moment += dt.timedelta(hours=1)
    assert sender.pass_once() == {"sent": 3}


@pytest.mark.parametrize("refusal, why", [("no_relay", "clinic_refused 554"), ("dmarc", "sender_refused 550")])
def test_a_server_refusing_the_clinics_relay_or_its_domain_fails_no_patients_message(api, sender, mail_server, clock,
                                                                                    refusal, why):
    """554 relay access denied at RCPT, 550 5.7.26 (DMARC) at DATA: the clinic's setup, no patient's address."""
    for number in range(3):
        api.book(api.new_patient(nif=valid_dni(number), name=f"P{number}", email=f"p{number}@example.es"),
                 time=("09:00", "09:30", "10:00")[number])
    setattr(mail_server.inbox, refusal, True)
    for _ in range(9):  # more than the tries a patient's message gets, an hour apart (the longest pause)
        assert sender.pass_once() == {"unreachable": 1}
        clock.moment += dt.timedelta(hours=1)
    assert [tuple(row) for row in api.db().execute("SELECT state, attempts FROM outbox")] == [("waiting", 0)] * 3
    assert api.db().execute("SELECT error FROM outbox WHERE id = 1").fetchone()[0] == why
    setattr(mail_server.inbox, refusal, False)
    clock.moment += dt.timedelta(hours=1)
    assert sender.pass_once() == {"sent": 3}


def test_a_try_the_replica_did_not_confirm_does_not_count_against_the_message(api, mail_server, db_path):
    """A replica that flaps: the pass's changes confirmed, each try's not; the tries do not add up to a failure."""
    asked, flapping = [], [True]

    def sync():
        asked.append(1)
        return not flapping[0] or len(asked) % 2 == 1  # the pass's own question yes, the try's no

    sender = Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM,
                    PUBLIC, sync=sync)
    api.book(api.new_patient(email="ana@example.es"))
    for _ in range(12):  # more than the tries a message gets
        assert sender.pass_once() == {"waiting for the replica": 1}
    assert tuple(api.db().execute("SELECT state, attempts FROM outbox").fetchone()) == ("waiting", 0)
    assert mail_server.inbox.messages() == []
    flapping[0] = False
    assert sender.pass_once() == {"sent": 1}


def test_a_greylisted_address_waits_alone_and_the_messages_behind_it_go(api, sender, mail_server, clock):
    for number in range(4):
        api.book(api.new_patient(nif=valid_dni(number), name=f"P{number}", email=f"p{number}@example.es"),
                 time=("09:00", "09:30", "10:00", "10:30")[number])
    mail_server.inbox.greylisted.add("p0@example.es")
    assert sender.pass_once() == {"deferred": 1, "sent": 3}
    assert api.db().execute("SELECT state, error FROM outbox WHERE id = 1").fetchone()[:] == (
        "waiting", "recipient_deferred 450")
    mail_server.inbox.greylisted.clear()
    clock.moment += dt.timedelta(minutes=1)
    assert sender.pass_once() == {"sent": 1}
    assert sorted(recipients[0] for recipients, _ in mail_server.inbox.messages()) == [
        f"p{number}@example.es" for number in range(4)]


def test_with_acknowledged_replication_a_try_is_in_the_replica_before_the_server_hears_of_it(api, mail_server,
                                                                                             db_path):
    """The sync asked after the try is written: a restore from the replica knows the message may have gone, and
    `agenda mail status` says so of it once held."""
    seen = []

    def sync():  # what the replica would hold, and whether the server has the message yet
        conn = sqlite3.connect(db_path)
        seen.append((conn.execute("SELECT attempts FROM outbox").fetchone()[0], len(mail_server.inbox.messages())))
        conn.close()
        return True
    sender = Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM,
                    PUBLIC, sync=sync)
    api.book(api.new_patient(email="ana@example.es"))
    assert sender.pass_once() == {"sent": 1}
    assert (1, 0) in seen
    with transaction(api.db()) as conn:  # as a restore of that replica finds it
        conn.execute("UPDATE outbox SET state = 'waiting'")
        hold_unsent(conn)
    listed = CliRunner().invoke(agenda.cli, ["mail", "status", "--db", str(db_path)]).output
    assert "held, may have gone already  confirmation about appointment 1" in listed
    assert "carries its Message-ID" in listed


def test_every_tls_mistake_says_its_fix(api, mail_server, db_path, tmp_path):
    runner = CliRunner(env={key: None for key in os.environ if key.startswith("AGENDA_")})
    args = ["mail", "test", "--db", str(db_path), "--mail-from", FROM, "recepcion@clinicasol.es"]
    untrusted = runner.invoke(agenda.cli, [*args, "--smtp", mail_server.url])  # its CA not given
    assert untrusted.exit_code == 1 and "certificate is not trusted" in untrusted.output
    assert "--smtp-ca" in untrusted.output
    implicit = runner.invoke(agenda.cli, [*args, "--smtp", mail_server.url.replace("smtp://", "smtps://"),
                                          "--smtp-ca", str(mail_server.ca_file)])  # TLS from the start on STARTTLS
    assert implicit.exit_code == 1 and "smtps:// speaks TLS from the start (port 465)" in implicit.output
    closed = runner.invoke(agenda.cli, [*args, "--smtp", f"smtp://127.0.0.1:{free_port()}"])
    assert closed.exit_code == 1 and "nothing answers at that port" in closed.output
    assert mail_server.inbox.messages() == []
    (tmp_path / "clear").mkdir()
    in_clear = MailServer(tmp_path / "clear", starttls=False)
    try:
        said = runner.invoke(agenda.cli, [*args, "--smtp", in_clear.url])
        assert said.exit_code == 1 and "offers no STARTTLS: for port 465 use smtps://HOST:465" in said.output
        assert in_clear.inbox.messages() == []
    finally:
        in_clear.stop()


def test_the_upgrade_keeps_a_tried_message_id_and_a_visit_on_a_calendar_keeps_its_uid(api, sender, mail_server,
                                                                                       db_path):
    """Rows written before Message-IDs were written with them: a tried one keeps the one it went with, an untried
    one gets one; a visit told before the upgrade keeps its calendar UID, so its update reaches it, and a visit
    told after gets one unique in the world."""
    ana = api.book(api.new_patient(email="ana@example.es"))
    assert sender.pass_once() == {"sent": 1}
    eva = api.book(api.new_patient(nif=valid_dni(1), name="Eva", email="eva@example.es"), time="10:00")
    with transaction(api.db()) as conn:  # the database as version 18 left it (24's page, 23's notes, 22's, 20's first)
        for statement in ("DROP INDEX patients_by_any_nif", "DROP TRIGGER appointment_removed",
                          "DROP TRIGGER patient_removed", "DROP TABLE removed_ids",
                          "DROP TABLE web_key", "DROP TABLE web_requests", "DROP INDEX appointments_pending_until",
                          "ALTER TABLE appointments DROP COLUMN pending_until",
                          "ALTER TABLE appointments DROP COLUMN pending",
                          "ALTER TABLE appointments DROP COLUMN note", "ALTER TABLE patients DROP COLUMN note",
                          "DROP TRIGGER called_in_only_beside_an_arrival",
                          "ALTER TABLE appointments DROP COLUMN called_in_at",
                          "DROP INDEX holds_of_others", "DROP TRIGGER holds_of_the_doctors_own_room",
                          "DROP TABLE outside_hours", "ALTER TABLE holds DROP COLUMN own",
                          "DROP TRIGGER outbox_message_id_kept", "DROP TRIGGER outbox_message_id",
                          "DROP TABLE clinic_identity", "UPDATE outbox SET message_id = '<old@clinicasol.es>'"
                          " WHERE id = 1", "UPDATE outbox SET message_id = NULL WHERE id = 2"):
            conn.execute(statement)
    api.db().execute("PRAGMA user_version = 18")
    upgraded = agenda.connect(db_path)
    agenda.migrate(upgraded)
    upgraded.close()
    kept, made = [row[0] for row in api.db().execute("SELECT message_id FROM outbox ORDER BY id")]
    assert kept == "<old@clinicasol.es>" and re.fullmatch(r"[0-9a-f]{32}", made)
    api.put(f"/appointments/{ana}", {"newDate": "24/11/2026", "newTime": "09:30"})
    assert sender.pass_once() == {"sent": 2}
    clinic_id = api.db().execute("SELECT id FROM clinic_identity").fetchone()[0]
    uids = {recipients[0]: re.search(r"UID:(\S+)", next(message.iter_attachments()).get_content())[1]
            for recipients, message in mail_server.inbox.messages()[1:]}
    assert uids == {"ana@example.es": f"appointment-{ana}@agenda",
                    "eva@example.es": f"appointment-{eva}.{clinic_id}@agenda"}
    assert mail_server.inbox.messages()[1][1]["Message-ID"] == f"<{made}@clinicasol.es>"  # eva's, written first


def test_the_demo_clinic_gives_a_patient_its_number_and_a_center_without_one_is_warned_of(make_api, mail_server,
                                                                                           tmp_path):
    api = make_api((ROOT / "seed" / "catalogs.csv").read_text(encoding="utf-8"))
    sender = Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))), FROM,
                    PUBLIC)
    api.book(api.new_patient(email="ana@example.es"))
    assert sender.pass_once() == {"sent": 1}
    text = mail_server.inbox.messages()[0][1].get_body(("plain",)).get_content()
    assert "Si necesita hablar con la clínica: 910 123 456" in text and "C/ Mayor 12, 28013 Madrid" in text
    runner = CliRunner()
    demo = runner.invoke(agenda.cli, ["seed", "--demo", "--db", str(tmp_path / "demo.db")])
    assert demo.exit_code == 0 and "no phone" not in demo.output
    seeded = runner.invoke(agenda.cli, ["seed", str(write_csv(tmp_path, EVERY_DAY_CSV)), "--db",
                                        str(tmp_path / "other.db")])
    assert seeded.exit_code == 0 and "Warning: no phone for the center C1" in seeded.output
    assert "docs/catalogs.md" in seeded.output


def test_every_why_of_the_sender_is_said_in_both_languages_and_in_the_deploy_guide():
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for reason in SMTP_REASONS:
        spanish, english = TEXTS[f"mailwhy_{reason}"]
        assert spanish != english and f"| {english.split('{detail}')[0].split(':')[0]} |" in guide, reason
    assert mail_reason("login_refused 535") == mail_reason("login_refused 535", translator("en")) == (
        "the server refused the clinic's login (535): check the user in --smtp (smtp://USER@HOST) and the password "
        "in --smtp-password-file")
    assert mail_reason("login_refused 535", translator("es")).startswith("el servidor rechazó el usuario o la contraseña")
    assert mail_reason("the server could not be reached: OSError") == "the server could not be reached: OSError"
