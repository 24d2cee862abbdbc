"""The sender ("The sender"): a process of its own that reads the outbox, renders each message at send time through
the one door and hands it to the clinic's SMTP server, in order per appointment, retrying with a growing wait;
it never holds a request, and holds the write lock only to note what became of a message."""

import contextlib
import fcntl
import datetime as dt
import ipaddress
import logging
import os
import re
import smtplib
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from email.utils import make_msgid, parseaddr
from typing import NamedTuple

from ..domain.appointments import series_coming, visits_told
from ..domain.links import new_link
from ..domain.identity import identity
from ..domain.web_requests import new_token, release_due, typed_language
from ..values.refusals import ClinicError
from ..domain.outbox import (calendar_uids, clinic_refused, due_messages, finish, first_to, make_clinic_id, moot,
                              queue_reminders, recipient, start_try, told_before, try_again, try_undone)
from ..words.pages import visit_view
from ..words.texts import mail_reason
from .messages import envelope, test_message, written, written_web

log = logging.getLogger("agenda")
SECURITIES = {"smtp": "starttls", "smtps": "tls", "smtp+plain": "none"}  # a URL's scheme: how the link is guarded
DEFAULT_PORTS = {"starttls": 587, "tls": 465, "none": 25}
SMTP_SECONDS = 10  # how long the server may take to answer before a try counts as failed
READER = "mail"  # who the access record says read a patient to write to them
# Seconds the sender waits after each refusal of the clinic itself in a row, then every hour ("The sender").
CLINIC_PAUSES = (30, 120, 600, 1800, 3600)
# Where the package _agenda is: a checkout's folder, site-packages, or agenda.pyz itself.
PACKAGE_HOME = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STOP_SECONDS = 15  # how long a stopping sender may take to finish the message it began (one SMTP wait)


class SmtpServer(NamedTuple):
    """The clinic's SMTP server, from `--smtp`: where, how the link is guarded, who logs in."""
    host: str
    port: int
    security: str
    user: str | None
    password: str | None = None
    ca_file: str | None = None


def smtp_server(url, password=None, ca_file=None):
    """An SmtpServer from smtp://[USER@]HOST[:PORT] (STARTTLS, required), smtps://... (TLS from the start) or
    smtp+plain://HOST[:PORT] (no TLS: a relay on this machine); ValueError in words."""
    parts = urllib.parse.urlsplit(url or "")
    if parts.scheme not in SECURITIES or not parts.hostname:
        raise ValueError("the SMTP server is smtp://USER@HOST:587 (STARTTLS), smtps://USER@HOST:465 (TLS) or "
                         "smtp+plain://localhost:25 (a relay on this machine)")
    if parts.password:
        raise ValueError("keep the SMTP password out of the URL: put it in a file only you read (chmod 600) "
                         "and give it with --smtp-password-file")
    security = SECURITIES[parts.scheme]
    if security == "none" and not loopback(parts.hostname):
        raise ValueError(f"smtp+plain:// sends everything in clear, the password too: only to a relay on this machine "
                         f"(localhost), never to {parts.hostname}; use smtp:// (STARTTLS) or smtps://")
    return SmtpServer(parts.hostname, parts.port or DEFAULT_PORTS[security], security,
                      urllib.parse.unquote(parts.username) if parts.username else None, password, ca_file)


def loopback(host):
    """Whether `host` names this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def public_address(url):
    """The address patients reach /cita at, checked: https://, or http:// to this machine only (a token must
    not travel in clear); ValueError in words."""
    parts = urllib.parse.urlsplit(url or "")
    if parts.scheme == "https" and parts.hostname or parts.scheme == "http" and loopback(parts.hostname or ""):
        return url.rstrip("/")
    raise ValueError("where do the patients' links lead? give --public-url https://citas.example.es (or "
                     "AGENDA_PUBLIC_URL): https, as each link's token opens an appointment")


class Refused(Exception):
    """The server refused this message for good (a 5xx for its address or content): it is marked failed, the others
    go on. Its text is the why kept (`failure`)."""


class Deferred(Exception):
    """The server asks to try this message later (a 4xx for its address: greylisting, a full mailbox): it is tried
    again after a growing wait, the others go on."""


class Unreachable(Exception):
    """The server could not be reached or refused for now: the pass stops, the message is tried again later."""


class ClinicRefused(Unreachable):
    """The server refused the clinic itself (its login, its sender address, its TLS): the pass stops and no
    patient's message counts the try ("The sender")."""


# Every why `failure` gives, each in words with its fix (words/texts.py, "mailwhy_" and the reason) and in
# docs/deploy.md.
SMTP_REASONS = ("recipient_refused", "recipient_deferred", "message_refused", "server_busy", "login_refused",
                "login_needed", "sender_refused", "clinic_refused", "no_login", "no_starttls", "certificate",
                "tls_mismatch", "connection_refused", "unknown_host", "no_answer", "unreachable")


def failure(error):
    """The exception (Refused, Deferred, Unreachable or ClinicRefused) for an SMTP or TLS failure, its text the why
    kept: one of SMTP_REASONS, then the server's code or the error's name. Never the address."""
    code = getattr(error, "smtp_code", None)
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        code, said = next(iter(error.recipients.values()))
        if code == 530 or re.search(rb"relay", said or b"", re.I):  # the clinic may not send here: its login, its relay
            return ClinicRefused(f"{'login_needed' if code == 530 else 'clinic_refused'} {code}")
        return (Refused(f"recipient_refused {code}") if code >= 500 else Deferred(f"recipient_deferred {code}"))
    if isinstance(error, smtplib.SMTPDataError):
        if code >= 500 and re.search(rb"5\.7\.2[3-7]|dmarc|spf|dkim", error.smtp_error or b"", re.I):
            return ClinicRefused(f"sender_refused {code}")  # the clinic's own domain not vouching for its From
        return Refused(f"message_refused {code}") if code >= 500 else Unreachable(f"server_busy {code}")
    if isinstance(error, smtplib.SMTPResponseException):  # the greeting, the login, the sender: every message waits
        if code < 500:
            return Unreachable(f"server_busy {code}")
        if isinstance(error, smtplib.SMTPAuthenticationError) or code == 530:
            return ClinicRefused(f"{'login_refused' if code != 530 else 'login_needed'} {code}")
        return ClinicRefused(f"{'sender_refused' if isinstance(error, smtplib.SMTPSenderRefused) else 'clinic_refused'}"
                             f" {code}")
    if isinstance(error, smtplib.SMTPNotSupportedError) or "authentication method" in str(error):
        return ClinicRefused("no_starttls" if "STARTTLS" in str(error) else "no_login")
    if isinstance(error, ssl.SSLCertVerificationError):
        return ClinicRefused(f"certificate {error.verify_message}")
    if isinstance(error, ssl.SSLError):
        return ClinicRefused(f"tls_mismatch {error.reason or type(error).__name__}")
    for kind, reason in ((ConnectionRefusedError, "connection_refused"), (socket.gaierror, "unknown_host"),
                         (TimeoutError, "no_answer")):
        if isinstance(error, kind) or isinstance(error.__context__, kind):
            return Unreachable(reason)
    return Unreachable(f"unreachable {type(error).__name__}")


class Mailer:
    """One SMTP connection, opened when a message is to go and reused for the pass, closed after it."""

    def __init__(self, server, timeout=SMTP_SECONDS):
        self.server, self.timeout, self.connection = server, timeout, None

    def open(self):
        server = self.server
        context = ssl.create_default_context(cafile=server.ca_file)
        if server.security == "tls":
            connection = smtplib.SMTP_SSL(server.host, server.port, timeout=self.timeout, context=context)
        else:
            connection = smtplib.SMTP(server.host, server.port, timeout=self.timeout)
            if server.security == "starttls":
                connection.starttls(context=context)
        if server.user:
            connection.login(server.user, server.password or "")
        return connection

    def send(self, message, from_address, to_address):
        """Hand one message to the server for one address; else Refused, Deferred, Unreachable or ClinicRefused
        (`failure`), in words without the address."""
        try:
            if self.connection is None:
                self.connection = self.open()
            self.connection.send_message(message, from_address, [to_address])
        except (smtplib.SMTPException, OSError) as error:
            refusal = failure(error)
            if not isinstance(refusal, Deferred | Refused) or isinstance(error, smtplib.SMTPDataError):
                self.close()
            raise refusal from None

    def close(self):
        if self.connection is not None:
            try:
                self.connection.quit()
            except (smtplib.SMTPException, OSError):
                self.connection.close()
            self.connection = None


class Sender:
    """Sends what the outbox holds: `pass_once` sends what is due; `until_stopped` goes on every few seconds.
    sync: when replication is acknowledged, a function true once the replica holds every commit so far."""

    def __init__(self, clinic, mailer, from_address, public_url, sync=None, batch=50):
        self.clinic, self.mailer, self.from_address, self.sync = clinic, mailer, from_address, sync
        self.public_url, self.batch = public_address(public_url), batch
        self.domain = parseaddr(from_address)[1].rpartition("@")[2] or "agenda.invalid"
        self.paused_until, self.pauses = None, 0  # after the server refused the clinic itself: a growing wait

    def pass_once(self, stopping=None):
        """Queue the reminders now due, then send the messages due, in order; {state: how many} of this pass."""
        clinic, done = self.clinic, {}
        release_due(clinic, clinic.clock())  # a booking of the patients' page never confirmed: released
        queue_reminders(clinic, clinic.clock())
        if self.paused_until is not None and clinic.clock() < self.paused_until:
            return done
        try:
            while not (stopping is not None and stopping.is_set()) and "unreachable" not in done:
                messages = due_messages(clinic.conn(), clinic.clock(), self.batch)
                if not messages:
                    break
                if self.sync is not None and not self.sync():
                    log.warning("mail waits: the replica has not confirmed the changes its messages tell of")
                    return {**done, "waiting for the replica": len(messages)}
                for message in messages:
                    if stopping is not None and stopping.is_set():
                        break
                    state = self.send_one(message)
                    done[state] = done.get(state, 0) + 1
                    if state in ("unreachable", "waiting for the replica"):
                        return done
        finally:
            self.mailer.close()
        return done

    def until_stopped(self, stopping, every=5.0, alive=lambda: True):
        """Pass after pass, as `passes_until_stopped` makes them."""
        passes_until_stopped(self.pass_once, stopping, every, alive)

    def send_one(self, message):
        """Send one message, or mark it stale or skipped: what became of it."""
        clinic, at = self.clinic, self.clinic.clock()
        conn = clinic.conn()
        visit = visits_told(conn, [message["appointment_id"]])[0]
        stale = moot(conn, message, visit, at.astimezone(clinic.tz))
        if stale:
            return self.ended(message, "stale", stale)
        if message["kind"] == "web":
            return self.send_web(message, visit, at)
        person, why = recipient(clinic, visit["patient_id"], READER)
        if person is None:
            return self.ended(message, "skipped", why)
        told = told_before(conn, message)
        kind = "confirmation" if message["kind"] == "update" and told is None else message["kind"]
        slot = f"{visit['date']} {visit['time']}"
        with clinic.db.transaction() as writing:
            if not still_theirs(writing, visit):  # another's since it was read (reception's match): read it again
                return "moved"
            message_id = start_try(writing, message["id"], at, slot)
            if message_id is None:
                return "taken"
            make_clinic_id(writing)
            link = None if kind == "notice" else new_link(writing, visit["id"], "message", at)
            stop = new_link(writing, visit["id"], "stop", at)
            first = first_to(writing, visit["patient_id"])
            sequence = writing.execute("SELECT count(*) FROM outbox WHERE appointment_id = ? AND state = 'sent'",
                                       (visit["id"],)).fetchone()[0]
        if not self.replica_holds(message):
            return "waiting for the replica"
        series = None
        if kind == "series" and visit["series_id"]:
            series = [visit_view(row, clinic.tz) for row in visits_told(conn, series_coming(conn, visit["series_id"],
                                                                                            clinic.today()))]
        view = {"kind": kind, "language": person["language"], "clinic": clinic.settings.clinic_name,
                "first_name": None if person["guardian_id"] else person["name"],
                "patient_name": person["name"] if person["guardian_id"] else None,  # a child's, to her guardian
                "visit": visit_view(visit, clinic.tz), "series": series,
                "uids": calendar_uids(conn, [one["id"] for one in series or [visit]]),
                "shows": clinic.settings.mail_shows, "link": link and f"{self.public_url}/cita/{link}",
                "stop_link": f"{self.public_url}/cita/baja/{stop}", "first": first, "sequence": sequence, "now": at,
                "before": told if kind == "update" and told and told != slot else None}
        mail = envelope(view, written(view), self.from_address, person["email"], self.message_id(message_id))
        return self.deliver(message, mail, person["email"])

    def replica_holds(self, message):
        """Whether the replica holds the try and its links, when replication is acknowledged: else the try is undone
        (no fault of the message's: it does not count), to be made again."""
        if self.sync is None or self.sync():
            return True
        log.warning("mail waits: the replica has not confirmed a message's try")
        with self.clinic.db.transaction() as writing:
            try_undone(writing, message["id"])
        return False

    def send_web(self, message, visit, at):
        """The page's first message ("Patients book themselves"): to the address typed, whatever the record's choice
        of messages (the patient asked for it this minute), its confirmation link's token made now."""
        clinic = self.clinic
        try:
            person = identity(clinic, visit["patient_id"], READER, "message")
        except ClinicError:
            return self.ended(message, "skipped", "blocked")
        if not person["email"]:
            return self.ended(message, "skipped", "no_email")
        with clinic.db.transaction() as writing:
            message_id = start_try(writing, message["id"], at, f"{visit['date']} {visit['time']}")
            token = None if message_id is None else new_token(writing, visit["id"])
        if token is None:
            return "taken"
        if not self.replica_holds(message):
            return "waiting for the replica"
        until = dt.datetime.fromisoformat(visit["pending_until"]).astimezone(clinic.tz)
        view = {"kind": "web", "language": typed_language(clinic.conn(), visit["id"]),
                "clinic": clinic.settings.clinic_name,
                "first_name": None, "visit": visit_view(visit, clinic.tz), "shows": clinic.settings.mail_shows,
                "link": f"{self.public_url}/reservar/confirmar/{token}", "until": until, "now": at}
        mail = envelope(view, written_web(view), self.from_address, person["email"], self.message_id(message_id))
        return self.deliver(message, mail, person["email"])

    def message_id(self, stored):
        """The Message-ID of a row's stored one: its random left part at the clinic's mail domain, or, for a row
        tried before it was written with the row, the whole one it went with."""
        return stored if stored.startswith("<") else f"<{stored}@{self.domain}>"

    def deliver(self, message, mail, address):
        at = self.clinic.clock()
        try:
            self.mailer.send(mail, parseaddr(self.from_address)[1], address)
        except Refused as error:
            return self.ended(message, "failed", str(error))
        except (Deferred, Unreachable) as error:
            with self.clinic.db.transaction() as conn:
                if isinstance(error, ClinicRefused):
                    clinic_refused(conn, message["id"], at, str(error))
                else:
                    try_again(conn, message["id"], at, str(error))
            if isinstance(error, Deferred):
                return "deferred"
            if isinstance(error, ClinicRefused):
                self.pauses += 1
                self.paused_until = at + dt.timedelta(seconds=CLINIC_PAUSES[min(self.pauses, len(CLINIC_PAUSES)) - 1])
            log.warning("mail waits: %s", mail_reason(str(error)))
            return "unreachable"
        self.pauses, self.paused_until = 0, None
        return self.ended(message, "sent")

    def ended(self, message, state, why=None):
        with self.clinic.db.transaction() as conn:
            finish(conn, message["id"], state, self.clinic.clock(), why)
        return state


def still_theirs(conn, visit):
    """Inside the try's transaction: whether the visit is still the patient's it was read with, so that its link
    goes only to the address of the patient it opens ("Por verificar")."""
    return conn.execute("SELECT 1 FROM appointments WHERE id = ? AND patient_id = ?",
                        (visit["id"], visit["patient_id"])).fetchone() is not None


def send_test(mailer, from_address, to_address, language, clinic_name, now):
    """`agenda mail test`: one message saying only that the clinic's mail reaches `to_address`."""
    domain = parseaddr(from_address)[1].rpartition("@")[2] or "agenda.invalid"
    try:
        mailer.send(test_message(language, clinic_name, from_address, to_address, make_msgid(domain=domain), now),
                    parseaddr(from_address)[1], to_address)
    finally:
        mailer.close()


def passes_until_stopped(pass_once, stopping, every=5.0, alive=lambda: True):
    """Pass after pass, `every` seconds apart, until `stopping` is set or `alive()` is false (the service that
    started it is gone); a message begun is finished first."""
    while not stopping.is_set() and alive():
        try:
            done = pass_once(stopping)
        except Exception:  # a pass that failed is tried again; the next may find the database or server back
            log.exception("a mail pass failed; trying again in %.0f s", every)
            done = {}
        if done:
            log.info("mail: %s", ", ".join(f"{count} {state}" for state, count in sorted(done.items())))
        stopping.wait(every)


def sender_lock(db_path):
    """The one sender of a database ("The sender"): an exclusive lock beside it (mode 0600), held while its
    descriptor is open (the kernel lets go of it when the process dies); None when another sender holds it."""
    descriptor = os.open(f"{db_path}.mail-sender", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


class SenderProcess:
    """`agenda mail send` beside `agenda run`, as Litestream is ("The sender"): started with it on the cores the
    service leaves, restarted with a growing wait when it dies, sent SIGTERM at shutdown (it finishes the message
    it began), killed only if it cannot stop in `stop_seconds`. `env` carries its settings (AGENDA_*)."""

    def __init__(self, env, stop_seconds=STOP_SECONDS):
        # the command from its own module, not the face: from a checkout, an install or agenda.pyz alike
        self.command = [sys.executable, "-c", "from _agenda.cli.mail import cli; cli(prog_name='agenda')", "mail",
                        "send"]
        self.env = {**os.environ, **env, "PYTHONPATH": PACKAGE_HOME, "PYTHONUNBUFFERED": "1",
                    "AGENDA_SENDER_PARENT": str(os.getpid())}
        self.stop_seconds, self.process, self.stopping = stop_seconds, None, threading.Event()
        self.cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        self.thread = threading.Thread(target=self.supervise, name="mail-sender", daemon=True)

    def start(self):
        self.thread.start()

    def supervise(self, backoff=1.0):
        while not self.stopping.is_set():
            started = time.monotonic()
            if self.cores:  # off the service's one core ("One core")
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(0, self.cores)
            self.process = subprocess.Popen(self.command, env=self.env, stdout=subprocess.PIPE,
                                            stderr=subprocess.STDOUT, text=True, errors="replace")
            log.info("mail sender started (pid %s)", self.process.pid)
            for line in self.process.stdout:
                log.info("mail: %s", line.rstrip())
            code = self.process.wait()
            if self.stopping.is_set():
                return
            backoff = 1.0 if time.monotonic() - started > 60 else min(backoff * 2, 60.0)
            log.warning("the mail sender stopped (exit %s); messages wait in the outbox; restarting it in %.0f s",
                        code, backoff)
            self.stopping.wait(backoff)

    def stop(self):
        self.stopping.set()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=self.stop_seconds)
            except subprocess.TimeoutExpired:
                self.process.kill()
                log.warning("the mail sender did not stop in %d s and was killed: a message it was sending may go "
                            "again, with the same Message-ID", self.stop_seconds)
        self.thread.join(timeout=5)
