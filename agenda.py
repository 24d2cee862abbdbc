"""Agenda: a small clinic's appointment agenda as one HTTP service on one SQLite file.

The caller (a voice-agent platform) looks patients up, asks for free slots, books,
moves and cancels appointments, and runs reminder cycles through the API of the
caller's spec. docs/design.md says why things are as they are; its sections are cited
here by name.

Sections, in the order data flows: settings and errors; parsing (dates, times, NIF,
phones, body fields); storage (connections, transactions, schema, events, copies);
slots; the clinic's operations (the `Clinic` class: no HTTP); the web edge (signatures,
handlers, the route table, waitress); catalogs and imports; the command line.
"""

import base64
import csv
import datetime as dt
import functools
import hashlib
import hmac
import http.client
import io
import json
import logging
import logging.handlers
import os
import queue
import random
import re
import secrets
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
import urllib.parse
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import bottle
import click
import phonenumbers
from stdnum.es import dni, nie

__version__ = "0.2.0"

log = logging.getLogger("agenda")


# --- Settings and errors ----------------------------------------------------------

SIGNATURE_SCHEMES = ("request", "body", "auto")  # the default first; docs/design.md, "Signatures"
REMINDER_POLICIES = ("flag", "release", "keep")
DEFAULT_TZ = "Europe/Madrid"


@dataclass(frozen=True)
class Settings:
    """What the clinic may tune ("Configuration and CLI"); every field has an option of `agenda run`."""

    tz: str = DEFAULT_TZ
    signature_scheme: str = "request"
    min_notice_minutes: int = 60
    horizon_days: int = 90
    reminder_policy: str = "flag"
    max_body_bytes: int = 64 * 1024
    desk_idle_minutes: int = 30

    def __post_init__(self):
        if self.signature_scheme not in SIGNATURE_SCHEMES:
            raise ValueError(f"signature scheme must be one of {', '.join(SIGNATURE_SCHEMES)}")
        if self.reminder_policy not in REMINDER_POLICIES:
            raise ValueError(f"reminder policy must be one of {', '.join(REMINDER_POLICIES)}")
        if self.min_notice_minutes < 0:
            raise ValueError("minimum notice must be 0 minutes or more")
        if self.horizon_days < 1:
            raise ValueError("booking horizon must be at least 1 day")
        if self.max_body_bytes < 1024:
            raise ValueError("body limit must be at least 1024 bytes")
        if self.desk_idle_minutes < 1:
            raise ValueError("the desk's idle time must be at least 1 minute")
        clinic_zone(self.tz)


def clinic_zone(name):
    """The ZoneInfo of a time zone name; ValueError naming a good one when it is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (try {DEFAULT_TZ})") from None


class ClinicError(Exception):
    """A refusal the caller can act on: an HTTP status and an error code ("Errors")."""

    def __init__(self, status, code, message, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra

    def payload(self):
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


def invalid(message):
    return ClinicError(400, "INVALID_REQUEST", message)


def body_too_large(limit):
    """The 413 of "Errors", from the app and from waitress alike."""
    return ClinicError(413, "PAYLOAD_TOO_LARGE", f"the body is over {limit} bytes")


# --- Parsing ----------------------------------------------------------------------

_DAY_MONTH_YEAR = re.compile(r"(\d{1,2})([/-])(\d{1,2})\2(\d{4})", re.ASCII)
_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})", re.ASCII)
_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", re.ASCII)


def parse_date(text, field):
    """D/M/YYYY, DD/MM/YYYY, DD-MM-YYYY or YYYY-MM-DD to a date ("Lenient input, strict output")."""
    text = text.strip()
    match = _DAY_MONTH_YEAR.fullmatch(text)
    if match:
        day, month, year = int(match[1]), int(match[3]), int(match[4])
    else:
        match = _ISO_DATE.fullmatch(text)
        if not match:
            raise invalid(f"{field} must be a date written DD/MM/YYYY")
        year, month, day = (int(part) for part in match.groups())
    try:
        return dt.date(year, month, day)
    except ValueError:
        raise invalid(f"{field} is not a real date") from None


def parse_time(text, field):
    """H:MM, HH:MM or HH:MM:SS to 'HH:MM'; seconds must be zero ("Lenient input, strict output")."""
    match = _TIME.fullmatch(text.strip())
    if not match:
        raise invalid(f"{field} must be a time written HH:MM")
    hours, minutes, seconds = int(match[1]), int(match[2]), int(match[3] or 0)
    if hours > 23 or minutes > 59 or seconds > 59:
        raise invalid(f"{field} is not a real time")
    if seconds:
        raise invalid(f"{field} must be on the minute (HH:MM)")
    return f"{hours:02d}:{minutes:02d}"


def format_date(value):
    """An ISO date string (as stored) or a date, written as the caller reads it: DD/MM/YYYY."""
    if isinstance(value, str):
        return f"{value[8:10]}/{value[5:7]}/{value[0:4]}"
    return f"{value.day:02d}/{value.month:02d}/{value.year:04d}"


def plural(count, noun):
    """'1 patient', '2 patients', '1,234 appointments', '3 specialities'."""
    if count == 1:
        return f"1 {noun}"
    return f"{count:,} {noun[:-1] + 'ies' if noun.endswith('y') and noun[-2] not in 'aeiou' else noun + 's'}"


def minutes_of(hhmm):
    """'HH:MM' to minutes since midnight."""
    return int(hhmm[:2]) * 60 + int(hhmm[3:5])


def hhmm(minutes):
    """Minutes since midnight to 'HH:MM'."""
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


_DNI_SHAPE = re.compile(r"\d{7,8}[A-Z]|\d{8}", re.ASCII)
_NIE_SHAPE = re.compile(r"[XYZ]\d{7}[A-Z]?", re.ASCII)
_OTHER_ID = re.compile(r"[A-Z0-9]{5,20}")


def normalise_nif(text):
    """Trim, upper-case and drop spaces, dots and dashes; check DNI and NIE letters ("Patients").

    A DNI written without its leading zero (1234567L) is padded to eight digits.
    Values of another shape (passports) pass when they are 5 to 20 letters and digits.
    NFKC first, so that fullwidth or other compatibility digits become ASCII and one
    person cannot be stored twice under two spellings of the same NIF.
    """
    nif = re.sub(r"[\s.\-]", "", unicodedata.normalize("NFKC", text)).upper()
    if _DNI_SHAPE.fullmatch(nif):
        nif = nif.zfill(9) if nif[-1].isalpha() else nif
        if not dni.is_valid(nif):
            raise ClinicError(400, "INVALID_NIF", "nif is not a valid DNI: check its digits and letter")
    elif _NIE_SHAPE.fullmatch(nif):
        if not nie.is_valid(nif):
            raise ClinicError(400, "INVALID_NIF", "nif is not a valid NIE: check its digits and letter")
    elif not _OTHER_ID.fullmatch(nif):
        raise ClinicError(400, "INVALID_NIF", "nif must be a DNI, a NIE or an id of 5 to 20 letters and digits")
    return nif


def parse_phone(text, field="phone"):
    """A phone as the caller says it (Spain by default) to E.164 ("Patients")."""
    candidates = [text]
    if not text.lstrip().startswith("+"):
        # a '+' sent unencoded in a query string arrives as a space: 34 699 ... is +34 699 ...
        candidates.append("+" + text.strip())
    for candidate in candidates:
        try:
            number = phonenumbers.parse(candidate, "ES")
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    raise ClinicError(400, "INVALID_PHONE", f"{field} is not a valid phone number")


def body_text(body, name, required=False):
    """A string field of a JSON body: stripped; absent, null or blank is None."""
    value = body.get(name)
    if isinstance(value, str):
        value = value.strip()
    elif value is not None:
        raise invalid(f"{name} must be a string")
    if not value:
        if required:
            raise invalid(f"{name} is required")
        return None
    return value


def body_text_list(body, name):
    """A list of strings of a JSON body, each stripped; blank items are dropped."""
    value = body.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise invalid(f"{name} must be a list of strings")
    return [item.strip() for item in value if item.strip()]


def all_fields(readers):
    """{name: read()} for each reader; a refusal names every field at fault, not only the first
    (one field's own code when it is the only one, else INVALID_REQUEST)."""
    values, refusals = {}, []
    for name, read in readers.items():
        try:
            values[name] = read()
        except ClinicError as refusal:
            if refusal.status != 400:
                raise
            refusals.append(refusal)
    if len(refusals) == 1:
        raise refusals[0]
    if refusals:
        raise invalid("; ".join(refusal.message for refusal in refusals))
    return values


def optional_date(fields, name):
    text = body_text(fields, name)
    return parse_date(text, name) if text else None


def iso_or_blank(day):
    return day.isoformat() if day else ""


def past_date(fields, name, today):
    day = optional_date(fields, name)
    if day and day > today:
        raise invalid(f"{name} is in the future")
    return day


def optional_phone(fields, name="phone"):
    text = body_text(fields, name)
    return parse_phone(text, name) if text else None


def patient_fields(fields, today):
    """A new patient ("Patients") from a JSON body or an imported CSV row, checked and normalised.

    fields maps name, surname, birthDate, nif and phone to text; the answer maps the
    patients table's columns to what it stores.
    """
    patient = all_fields({
        "name": lambda: body_text(fields, "name", required=True),
        "nif": lambda: normalise_nif(body_text(fields, "nif", required=True)),
        "surname": lambda: body_text(fields, "surname"),
        "birth_date": lambda: past_date(fields, "birthDate", today),
        "phone": lambda: body_text(fields, "phone"),
        "phone_e164": lambda: optional_phone(fields)})
    birth_date = patient["birth_date"]
    return {**patient, "birth_date": birth_date.isoformat() if birth_date else None}


def numeric_id(text):
    """A patient or appointment id as the caller writes it, to our integer key; None when it cannot be one."""
    text = ("" if text is None else str(text)).strip()
    return int(text) if re.fullmatch(r"[0-9]{1,18}", text) else None


MAX_DAYS = 62  # dates one range or one reminder close may name ("Lists")


def parse_dates(texts, field):
    """Distinct ISO days from date texts, sorted; blank texts are skipped, and 1 to MAX_DAYS must remain."""
    days = sorted({parse_date(text, field).isoformat() for text in texts if text.strip()})
    if not days:
        raise invalid(f"{field} is required")
    if len(days) > MAX_DAYS:
        raise invalid(f"{field} holds more than {MAX_DAYS} days")
    return days


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet run a cell ("What Agenda prints")


def printable(value):
    """Text fit for one line of a terminal: escapes, newlines and direction overrides become spaces."""
    return _UNPRINTABLE.sub(" ", "" if value is None else str(value))


def sheet_cell(value):
    """A cell a spreadsheet shows and never runs: text that would start a formula gets a leading '."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def sheet_csv(header, rows):
    """The one CSV writer for sheets people open: every cell quoted and neutralised ("What Agenda prints")."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(header)
    writer.writerows([sheet_cell(value) for value in row] for row in rows)
    return out.getvalue()


# --- Storage ----------------------------------------------------------------------

SCHEMA_FILE = "schema.sql"
OPENAPI_FILE = "openapi.json"
DEMO_CATALOGS = "seed/catalogs.csv"
_SECTION = re.compile(r"^-- version (\d+)\s*$", re.MULTILINE)


def data_file_path(name):
    """Where a file shipped with this module is: schema.sql, openapi.json, seed/catalogs.csv.

    Beside this module in a checkout; in an install, in <prefix>/share/agenda/, because
    a top-level module carries no package data and setup.cfg installs them as data.
    """
    candidates = [Path(__file__).parent / name]
    for scheme in (None, f"{os.name}_user"):
        try:
            data = sysconfig.get_path("data", scheme) if scheme else sysconfig.get_path("data")
        except KeyError:
            continue
        candidates.append(Path(data) / "share" / "agenda" / name)
    candidates.append(Path(sys.prefix) / "share" / "agenda" / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise RuntimeError(f"{name} not found; looked in: {', '.join(map(str, candidates))}")


def schema_path():
    return data_file_path(SCHEMA_FILE)


def read_data_file(name):
    """The bytes of a shipped file: from disk, or from inside agenda.pyz (the one-file build)."""
    loader = globals().get("__loader__")
    if loader is not None and type(loader).__name__ == "zipimporter":
        return loader.get_data(os.path.join(os.path.dirname(__file__), name))
    return data_file_path(name).read_bytes()


def read_schema():
    return read_data_file(SCHEMA_FILE).decode("utf-8")


def schema_sections(text):
    """[(version, sql), ...] in order, from the '-- version N' headings of schema.sql."""
    marks = list(_SECTION.finditer(text))
    sections = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        sections.append((int(mark[1]), text[mark.end():end]))
    versions = [version for version, _ in sections]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"{SCHEMA_FILE} sections must be numbered 1, 2, 3, ... in order")
    return sections


MMAP_BYTES = 256 * 1024 * 1024  # a clinic's years of appointments ("Connections and the write lock")
CHECKPOINT_PAGES = 100  # SQLite's own auto-checkpoint, kept small so the write that runs it stays quick ("Storage")


def connect(path, timeout=5.0):
    """The one way to open the database: web, CLI and tests all come through here.

    foreign_keys and busy_timeout are set before any statement; isolation_level=None
    leaves transactions to `transaction()`; check_same_thread is off only so that
    `Database.close()` may close each thread's connection ("Storage").
    """
    conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    conn.execute("PRAGMA synchronous = FULL")  # a booking read back to a patient survives a power cut
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
    return conn


@contextmanager
def transaction(conn):
    """One write transaction, taken with BEGIN IMMEDIATE; commits, or rolls back on error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def migrate(conn, schema_text=None):
    """Bring the database up to the newest section of schema.sql, in order ("Schema")."""
    if schema_text is None:
        schema_text = read_schema()
    sections = schema_sections(schema_text)
    newest = sections[-1][0] if sections else 0
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > newest:
        raise RuntimeError(
            f"the database is at schema version {current}, newer than this agenda ({newest}): "
            "upgrade agenda before using it")
    for version, sql in sections:
        if version <= current:
            continue
        try:
            # executescript runs the section as written; the BEGIN makes it all or nothing.
            conn.executescript(f"BEGIN IMMEDIATE;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return newest


def create_private_file(path):
    """Create the file readable by its owner only, unless it is already there."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def open_database(path):
    """Create (mode 0600) or open the database, in WAL mode, at the newest schema."""
    create_private_file(path)
    conn = connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    migrate(conn)
    return conn


class Database:
    """One SQLite file: a connection per thread (waitress serves from several) and one
    write lock they queue on ("Connections and the write lock")."""

    def __init__(self, path):
        self.path = str(path)
        self.write_lock = threading.Lock()
        self._local = threading.local()
        self._connections = []
        self._guard = threading.Lock()
        open_database(self.path).close()

    def connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path)
            with self._guard:
                self._connections.append(conn)
        return conn

    @contextmanager
    def transaction(self):
        """`transaction()` on this thread's connection, once this process's other writers are done."""
        with self.write_lock, transaction(self.connection()) as conn:
            yield conn

    def close(self):
        with self._guard:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()


def utc_iso(moment):
    """An aware datetime as ISO text in UTC, to the second (how times are stored)."""
    return moment.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


_STORED_JSON = json.JSONEncoder(ensure_ascii=False)  # events and service_state


def record_event(conn, at, source, action, entity, entity_id, before=None, after=None):
    """Every change leaves a row saying when, from where, what, and the rows around it ("Audit")."""
    conn.execute(
        "INSERT INTO events (at, source, action, entity, entity_id, before, after)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (utc_iso(at), source, action, entity, None if entity_id is None else str(entity_id),
         None if before is None else _STORED_JSON.encode(before),
         None if after is None else _STORED_JSON.encode(after)))


INSERT_PATIENT = ("INSERT INTO patients (name, surname, birth_date, nif, phone, phone_e164, created_at)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?)")


def patient_row(patient, at):
    """The parameters of INSERT_PATIENT for a patient made by patient_fields."""
    return (patient["name"], patient["surname"], patient["birth_date"], patient["nif"], patient["phone"],
            patient["phone_e164"], utc_iso(at))


def remember(conn, key, value, at):
    """Keep one fact about the service for `agenda status` (scheme seen, last backup)."""
    conn.execute(
        "INSERT INTO service_state (key, value, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (key, _STORED_JSON.encode(value), utc_iso(at)))


def recall(conn, key):
    """(value, updated_at) of a fact kept by `remember`, or (None, None)."""
    row = conn.execute("SELECT value, updated_at FROM service_state WHERE key = ?", (key,)).fetchone()
    return (None, None) if row is None else (json.loads(row["value"]), row["updated_at"])


def database_counts(conn):
    """What an admin checks a copy by: patients, appointments (live ones too), doctors."""
    return dict(conn.execute(
        "SELECT (SELECT count(*) FROM patients) AS patients,"
        " (SELECT count(*) FROM appointments) AS appointments,"
        " (SELECT count(*) FROM appointments WHERE status != 'cancelled') AS live_appointments,"
        " (SELECT count(*) FROM doctors) AS doctors,"
        " (SELECT count(*) FROM centers) AS centers").fetchone())


def open_read_only(path):
    """A connection that cannot change the file (a backup being checked before a restore)."""
    conn = sqlite3.connect(f"file:{quote(str(Path(path).resolve()))}?mode=ro", uri=True,
                           isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


def check_database_file(path):
    """The schema version and counts of an agenda database file; ValueError says what is wrong.

    Reads only: integrity_check first, then the schema version, then the tables.
    """
    newest = schema_sections(read_schema())[-1][0]
    try:
        conn = open_read_only(path)
    except sqlite3.Error as error:
        raise ValueError(f"cannot open it: {error}") from None
    try:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise ValueError("integrity_check failed: " + "; ".join(problems[:5]))
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            raise ValueError("it is not an agenda database (schema version 0)")
        if version > newest:
            raise ValueError(f"its schema version {version} is newer than this agenda's ({newest}); "
                             "upgrade agenda first")
        return version, database_counts(conn)
    except sqlite3.DatabaseError as error:
        raise ValueError(f"it is not a readable SQLite database: {error}") from None
    finally:
        conn.close()


def fsync_path(path):
    """Flush a file, or a folder's entries after a rename, to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def copy_database(conn, dest):
    """A consistent, compact copy of conn's database at dest, mode 0600, placed atomically.

    VACUUM INTO writes a temporary file beside dest from one read transaction (so a
    server may go on writing), the copy must pass integrity_check, then it is flushed
    and renamed over dest. Returns the copy's schema version and counts.
    """
    dest = Path(dest)
    temporary = dest.with_name(f".{dest.name}.{os.getpid()}.partial")
    temporary.unlink(missing_ok=True)
    create_private_file(temporary)
    try:
        conn.execute("VACUUM INTO ?", (str(temporary),))
        version, counts = check_database_file(temporary)
        fsync_path(temporary)
        os.replace(temporary, dest)
        fsync_path(dest.parent)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return version, counts


BACKUP_STAMP = "%Y%m%d-%H%M%S"


def backup_target(db_path, dest, at):
    """Where a backup goes: DEST itself, or, when DEST is a folder (or ends in '/'), a new file
    in it named after the database and `at` (clinic-20261121-030000.db)."""
    target = Path(dest)
    if not (target.is_dir() or str(dest).endswith(("/", os.sep))):
        return target
    target.mkdir(parents=True, exist_ok=True)
    stem, stamp = Path(db_path).stem, at.astimezone().strftime(BACKUP_STAMP)
    target, serial = target / f"{stem}-{stamp}.db", 1
    while target.exists():
        serial += 1
        target = target.with_name(f"{stem}-{stamp}-{serial}.db")
    return target


def backup_database(conn, db_path, target, at):
    """Copy conn's database (the file db_path) to target and note it for `agenda status`; (bytes, counts)."""
    if target.resolve() == Path(db_path).resolve():
        raise ValueError(f"{target} is the database itself; give another file or a folder")
    _, counts = copy_database(conn, target)
    size = target.stat().st_size
    with transaction(conn):
        remember(conn, "last_backup", {"path": str(target.resolve()), "bytes": size, **counts}, at)
    return size, counts


def rotate_backups(db_path, folder, keep):
    """Delete all but the `keep` newest dated backups of db_path in folder; the paths deleted."""
    pattern = re.compile(re.escape(Path(db_path).stem) + r"-\d{8}-\d{6}(-\d+)?\.db")
    dated = sorted((path for path in Path(folder).iterdir() if pattern.fullmatch(path.name)),
                   key=lambda path: (path.stat().st_mtime, path.name))
    for old in dated[:-keep]:
        old.unlink()
    return dated[:-keep]


def prepare_restore(db_path, src):
    """Check a restore of the backup src over db_path before anything is replaced:
    (src's schema version, src's counts, db_path's counts or None). ValueError says why not.

    The current database leaves WAL mode here: that needs the only connection, so it fails
    while a server has the file open, and it folds the WAL in, so the copy kept aside is whole.
    """
    source, database = Path(src), Path(db_path)
    try:
        version, counts = check_database_file(source)
    except ValueError as error:
        raise ValueError(f"{src} was not restored and nothing changed: {error}") from None
    if database.exists() and database.resolve() == source.resolve():
        raise ValueError(f"{src} is the database itself; give a backup")
    if not database.is_file():
        return version, counts, None
    current = connect(database, timeout=0.2)
    try:
        current_counts = database_counts(current)
        if current.execute("PRAGMA journal_mode = DELETE").fetchone()[0] != "delete":
            raise sqlite3.OperationalError("database is locked")
    except sqlite3.OperationalError as error:
        if "locked" in str(error) or "busy" in str(error):
            raise ValueError(f"{db_path} is in use, probably by the running service: stop it first "
                             "(sudo systemctl stop agenda), then restore") from None
        raise ValueError(f"{db_path}: cannot open the database: {error}") from None
    except sqlite3.DatabaseError:
        current_counts = None
    finally:
        current.close()
    return version, counts, current_counts


def restore_database(db_path, src, version, counts, at):
    """Put a checked copy of src in place of db_path; the files it replaces are kept aside
    (DB.before-restore-STAMP), never deleted. Returns that path, or None."""
    database = Path(db_path)
    restoring = database.with_name(f".{database.name}.restoring")
    try:
        source_conn = open_read_only(src)
        try:
            copy_database(source_conn, restoring)
        finally:
            source_conn.close()
        aside = None
        if database.exists():
            aside = database.with_name(f"{database.name}.before-restore-{at.astimezone().strftime(BACKUP_STAMP)}")
            for suffix in ("", "-wal", "-shm"):
                if Path(f"{database}{suffix}").exists():
                    os.replace(f"{database}{suffix}", f"{aside}{suffix}")
            litestream_state = database.with_name(f".{database.name}-litestream")  # of the file set aside
            if litestream_state.exists():
                os.replace(litestream_state, aside.with_name(f".{aside.name}-litestream"))
        os.replace(restoring, database)
        fsync_path(database.parent)
    except BaseException:
        restoring.unlink(missing_ok=True)
        raise
    conn = open_database(database)
    try:
        with transaction(conn):
            record_event(conn, at, "cli", "database.restored", "database", None,
                         after={"from": str(Path(src).resolve()), "keptAside": str(aside) if aside else None,
                                "schemaVersion": version, **counts})
    finally:
        conn.close()
    return aside


def written_row(conn, sql, params):
    """The row that an INSERT, or an UPDATE of one row, wrote, as the statement itself
    returns it ("Audit": the event's `after`)."""
    (row,) = conn.execute(f"{sql} RETURNING *", params).fetchall()
    return dict(row)


# --- Slots ------------------------------------------------------------------------

class Slot(NamedTuple):
    date: dt.date
    date_text: str  # DD/MM/YYYY, written once a day rather than once a slot
    time: str
    end_time: str
    duration: int
    doctor_id: str
    doctor_name: str
    speciality_id: str
    center_id: str | None


def local_start(day, time_text, tz):
    """The UTC instant a wall-clock slot starts, or None when DST skips that wall time.

    In October's repeated hour the first occurrence is taken (fold=0), so a slot
    is offered once, not twice. The answer is in UTC because Python compares and
    adds to datetimes that share a tzinfo by their wall-clock reading.
    """
    naive = dt.datetime.combine(day, dt.time(int(time_text[:2]), int(time_text[3:5])))
    instant = naive.replace(tzinfo=tz).astimezone(dt.timezone.utc)
    if instant.astimezone(tz).replace(tzinfo=None) != naive:
        return None
    return instant


def wall_clock_is_plain(day, tz):
    """True when the clinic's clock neither skips nor repeats any time on this day."""
    midnight = dt.datetime.combine(day, dt.time(), tzinfo=tz)
    return midnight.utcoffset() == (midnight + dt.timedelta(days=1)).utcoffset()


class SlotGrid(NamedTuple):
    """One schedule's slot grid: its (start, end, start+end) 'HH:MM' texts and the set of start+end."""
    slots: tuple
    spans: frozenset


@functools.lru_cache(maxsize=512)
def slot_grid(start, stop, step):
    """The grid of slots of `step` minutes from `start` to `stop` (minutes since midnight).

    Schedules share a handful of grids, so each is built once per process, not once a request.
    """
    slots = tuple((hhmm(begin), hhmm(begin + step), hhmm(begin) + hhmm(begin + step))
                  for begin in range(start, stop - step + 1, step))
    return SlotGrid(slots, frozenset(slot[2] for slot in slots))


def slots_clear_of(grid, taken):
    """The slots of the grid that overlap none of `taken`, a set of 'HH:MMHH:MM' start+end texts.

    The usual day is quick: every appointment within the grid's hours fills exactly one
    of its slots (the others belong to the doctor's other shift), so the free slots are
    the rest. After a schedule change an appointment may straddle slots; then one sweep
    beside the grid finds every clash, since a doctor's live appointments never overlap
    (schema.sql's triggers): sorted by start they are sorted by end too.
    """
    if not taken:
        return grid.slots
    opens, closes = grid.slots[0][0], grid.slots[-1][1]
    if not any(span[:5] < closes and opens < span[5:] for span in taken - grid.spans):
        return [slot for slot in grid.slots if slot[2] not in taken]
    spans = sorted((span[:5], span[5:]) for span in taken)
    clear, next_taken = [], 0
    for slot in grid.slots:
        time_text, end_text, _ = slot
        while next_taken < len(spans) and spans[next_taken][1] <= time_text:
            next_taken += 1
        if next_taken == len(spans) or end_text <= spans[next_taken][0]:
            clear.append(slot)
    return clear


def free_slots(conn, doctors, first_day, last_day, *, tz, earliest, center_id=None, overlaps_checked=True,
               starting_at=None):
    """Every offerable slot of these doctors from first_day to last_day, sorted ("Availability");
    only those that start at `starting_at` ('HH:MM') when it is given.

    `doctors` are rows with id, name and speciality_id. A slot lies on the doctor's grid
    inside working hours (at `center_id` when given), is not covered by a closure, overlaps
    no live appointment of that doctor (unless overlaps_checked is False) and starts no
    earlier than `earliest`, an aware datetime in UTC.
    """
    first_day = max(first_day, earliest.astimezone(tz).date())  # nothing earlier can be offered
    if not doctors or last_day < first_day:
        return []
    by_id = {doctor["id"]: doctor for doctor in doctors}
    first, last = first_day.isoformat(), last_day.isoformat()
    grids = schedule_grids(conn, list(by_id), center_id)
    closures = closures_between(conn, list(by_id), first, last)
    busy = busy_spans(conn, list(by_id), first, last) if overlaps_checked else {}
    slots, day = [], first_day
    while day <= last_day:
        iso, date_text = day.isoformat(), format_date(day)  # once a day, not once a slot
        day_closures = [c for c in closures if c["date_from"] <= iso <= c["date_to"]]
        # Each slot's instant is worked out only where it can matter: on the days the
        # notice reaches and on DST days; on a later plain day every slot is offerable.
        instants = tz if day <= earliest.astimezone(tz).date() or not wall_clock_is_plain(day, tz) else None
        for hours, grid in grids.get(day.weekday(), ()):
            if hours["retired_from"] is not None and iso >= hours["retired_from"]:
                continue
            doctor = by_id[hours["doctor_id"]]
            shut = [c for c in day_closures
                    if c["doctor_id"] in (None, doctor["id"]) and c["center_id"] in (None, hours["center_id"])]
            if any(c["start_time"] is None for c in shut):
                continue  # closed all day
            for time_text, end_text, _ in slots_clear_of(grid, busy.get((doctor["id"], iso))):
                if (starting_at is not None and time_text != starting_at) or (shut and closed_at(shut, time_text,
                                                                                                   end_text)):
                    continue
                if instants is not None:
                    starts = local_start(day, time_text, instants)
                    if starts is None or starts < earliest:
                        continue
                slots.append(Slot(day, date_text, time_text, end_text, hours["slot_minutes"], doctor["id"],
                                  doctor["name"], doctor["speciality_id"], hours["center_id"]))
        day += dt.timedelta(days=1)
    slots.sort(key=lambda slot: (slot.date, slot.time, slot.doctor_id))
    return slots


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


def schedule_grids(conn, doctor_ids, center_id=None):
    """{weekday: [(schedule row, its SlotGrid)]} of these doctors (at this center, when given);
    each row carries the doctor's retired_from."""
    sql = ("SELECT s.doctor_id, s.center_id, s.weekday, s.start_time, s.end_time, s.slot_minutes, d.retired_from"
           f" FROM schedules s JOIN doctors d ON d.id = s.doctor_id WHERE s.doctor_id IN ({','.join('?' * len(doctor_ids))})")
    params = list(doctor_ids)
    if center_id is not None:
        sql += " AND s.center_id = ?"
        params.append(center_id)
    grids = {}
    for row in conn.execute(sql, params):
        grid = slot_grid(minutes_of(row["start_time"]), minutes_of(row["end_time"]), row["slot_minutes"])
        grids.setdefault(row["weekday"], []).append((row, grid))
    return grids


def closures_between(conn, doctor_ids, first, last):
    """The closures that touch these ISO days and concern these doctors or everyone."""
    return conn.execute(
        "SELECT doctor_id, center_id, date_from, date_to, start_time, end_time, reason FROM closures"
        f" WHERE date_to >= ? AND date_from <= ? AND (doctor_id IS NULL OR doctor_id IN ({','.join('?' * len(doctor_ids))}))",
        [first, last, *doctor_ids]).fetchall()


def busy_spans(conn, doctor_ids, first, last):
    """{(doctor, ISO day): {'HH:MMHH:MM' start+end of each live appointment}}: one row a doctor
    and day, the spans joined by SQLite, rather than a row an appointment."""
    rows = conn.execute(
        "SELECT doctor_id, date, group_concat(time || end_time) FROM appointments"
        f" WHERE doctor_id IN ({','.join('?' * len(doctor_ids))}) AND date BETWEEN ? AND ?"
        " AND status != 'cancelled' GROUP BY doctor_id, date", [*doctor_ids, first, last])
    return {(doctor_id, iso): set(spans.split(",")) for doctor_id, iso, spans in rows}


def closed_at(closures, time_text, end_text):
    """True when one of these closures (whole days, or hours) covers any of the slot."""
    return any(c["start_time"] is None or (c["start_time"] < end_text and time_text < c["end_time"]) for c in closures)


# --- The clinic's operations --------------------------------------------------------

# An appointment as the caller sees it ("Appointment objects"), written as JSON by SQLite: the one
# place its shape is set. Ids are text; the date DD/MM/YYYY; patientName is name and surname, or
# whichever there is, or null; duration in minutes. A list of hundreds is written three times as
# fast as Python builds and encodes them.
APPOINTMENT_JSON = """json_object(
    'appointmentId', CAST(a.id AS TEXT),
    'date', substr(a.date, 9, 2) || '/' || substr(a.date, 6, 2) || '/' || substr(a.date, 1, 4),
    'time', a.time, 'doctorId', a.doctor_id, 'doctorName', d.name, 'patientId', CAST(a.patient_id AS TEXT),
    'nif', p.nif,
    'patientName', CASE WHEN coalesce(p.name, '') = '' THEN nullif(p.surname, '')
                        WHEN coalesce(p.surname, '') = '' THEN p.name ELSE p.name || ' ' || p.surname END,
    'phone', p.phone_e164, 'reason', a.reason, 'centerRef', a.center_id,
    'extraData', json_object('status', a.status, 'specialityId', a.speciality_id, 'insuranceId', a.insurance_id,
                             'duration', (substr(a.end_time, 1, 2) * 60 + substr(a.end_time, 4, 2))
                                         - (substr(a.time, 1, 2) * 60 + substr(a.time, 4, 2))))"""
APPOINTMENT_TABLES = """
    FROM appointments a
    JOIN doctors d ON d.id = a.doctor_id
    JOIN patients p ON p.id = a.patient_id
"""


def iso_of(date_text):
    """DD/MM/YYYY, as answers write it, back to ISO."""
    return f"{date_text[6:10]}-{date_text[3:5]}-{date_text[0:2]}"


def patient_view(row):
    """A patient as the caller sees it ("Patients")."""
    return {"id": str(row["id"]), "name": row["name"], "surname": row["surname"],
            "birthDate": format_date(row["birth_date"]) if row["birth_date"] else None,
            "nif": row["nif"], "phone": row["phone_e164"] or row["phone"], "extra": None}


# What a cancelled appointment answers: reading it, changing it, cancelling it again ("Appointment objects").
READ_CANCELLED = (410, "APPOINTMENT_PREVIOUSLY_CANCELLED", "that appointment was cancelled")
CHANGE_CANCELLED = (409, "APPOINTMENT_PREVIOUSLY_CANCELLED", "that appointment was cancelled")
CANCEL_CANCELLED = (409, "APPOINTMENT_ALREADY_CANCELLED", "that appointment is already cancelled")


SLOT_REFUSALS = {  # reason: what the message says ("Slot refusal reasons")
    "taken": "another appointment holds that time",
    "off_grid": "that time is not on the doctor's slot grid",
    "outside_hours": "the doctor does not work at that time",
    "closed": "the doctor or the center is closed then",
    "too_soon": "that time is past or inside the minimum notice",
    "beyond_horizon": "that day is beyond the booking horizon",
    "wrong_center": "the doctor works at another center at that time",
    "doctor_retired": "the doctor no longer sees patients then",
}


def slot_not_available(reason, detail=None):
    """The one refusal of a slot: 409 SLOT_NOT_AVAILABLE with why ("Slot refusal reasons")."""
    return ClinicError(409, "SLOT_NOT_AVAILABLE",
                       f"that slot is not free: {detail or SLOT_REFUSALS[reason]}; offer another one", reason=reason)


LOCK_AFTER, LOCK_MINUTES = 5, 15  # failed logins in a row, and how long they lock a name
SESSION_HOURS = 12  # a desk session ends after this long, however busy
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 14, 8, 1


def hash_password(password):
    """scrypt with a salt of its own, as staff.password stores it."""
    if len(password) < 8:
        raise invalid("a password needs 8 characters or more")
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def password_matches(stored, password):
    _, n, r, p, salt, digest = stored.split("$")
    tried = hashlib.scrypt(password.encode("utf-8", "replace"), salt=bytes.fromhex(salt), n=int(n), r=int(r),
                           p=int(p), dklen=32)
    return hmac.compare_digest(tried.hex(), digest)


DUMMY_PASSWORD = "scrypt$16384$8$1$" + "00" * 16 + "$" + "00" * 32  # an unknown name costs one scrypt too


def token_hash(token):
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def staff_name(name):
    """A staff account's name: 1 to 40 letters, digits, dots, dashes or underscores."""
    name = (name or "").strip().lower()
    if not re.fullmatch(r"[a-z0-9._-]{1,40}", name):
        raise invalid("a staff name is 1 to 40 letters, digits, dots, dashes or underscores")
    return name


class Clinic:
    """The clinic's operations over one database, its settings and a clock; no HTTP here.

    Reads return plain data; every change is one BEGIN IMMEDIATE transaction recording an
    event from `source` ("api", "cli", ...); refusals raise ClinicError ("One domain layer").
    """

    def __init__(self, db, settings=None, clock=None):
        self.db = db
        self.settings = settings or Settings()
        self.tz = clinic_zone(self.settings.tz)
        self.clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))

    def conn(self):
        return self.db.connection()

    def today(self):
        return self.clock().astimezone(self.tz).date()

    def earliest_start(self):
        """Now plus the minimum notice, in UTC: real minutes, even across a DST change ("Clinic time")."""
        return self.clock().astimezone(dt.timezone.utc) + dt.timedelta(minutes=self.settings.min_notice_minutes)

    def last_bookable_day(self):
        return self.today() + dt.timedelta(days=self.settings.horizon_days)

    # Look-ups: each id the caller names, or its 404

    def require_center(self, center_id):
        if center_id is not None and self.conn().execute(
                "SELECT 1 FROM centers WHERE id = ?", (center_id,)).fetchone() is None:
            raise ClinicError(404, "CENTER_NOT_FOUND", "no center with that centerId")
        return center_id

    def require_doctor(self, doctor_id):
        row = self.conn().execute("SELECT id, name, speciality_id FROM doctors WHERE id = ?",
                                  (doctor_id,)).fetchone()
        if row is None:
            raise ClinicError(404, "DOCTOR_NOT_FOUND", "no doctor with that doctorId")
        return row

    def require_speciality(self, speciality_id):
        if self.conn().execute("SELECT 1 FROM specialities WHERE id = ?", (speciality_id,)).fetchone() is None:
            raise ClinicError(404, "SPECIALITY_NOT_FOUND", "no speciality with that specialityId")

    def require_insurance(self, insurance_id):
        if self.conn().execute("SELECT 1 FROM insurances WHERE id = ?", (insurance_id,)).fetchone() is None:
            raise ClinicError(404, "INSURANCE_NOT_FOUND", "no insurance with that insuranceId")

    def accepts_insurance(self, doctor_id, insurance_id):
        listed = [row[0] for row in self.conn().execute(
            "SELECT insurance_id FROM doctor_insurances WHERE doctor_id = ?", (doctor_id,))]
        return not listed or insurance_id in listed

    def appointment_row(self, appointment_id, if_cancelled, columns="a.*"):
        """`columns` (of APPOINTMENT_TABLES) of a live appointment: 404 when there is none,
        `if_cancelled` (status, code, message) when it was cancelled. The one lookup of an appointment."""
        key = numeric_id(appointment_id)
        row = None if key is None else self.conn().execute(
            f"SELECT a.status AS lookup_status, {columns} {APPOINTMENT_TABLES} WHERE a.id = ?", (key,)).fetchone()
        if row is None:
            raise ClinicError(404, "APPOINTMENT_NOT_FOUND", "no appointment with that appointmentId")
        if row["lookup_status"] == "cancelled":
            raise ClinicError(*if_cancelled)
        found = dict(row)
        del found["lookup_status"]
        return found

    def slot_at(self, doctor, day, time_text, center_id):
        """This doctor's slot at this date and time, or SLOT_NOT_AVAILABLE with its reason ("Booking"):
        on the grid, within hours, not closed, inside the notice and the horizon. An overlap with
        another appointment is left to schema.sql's triggers, in the same transaction."""
        if day <= self.last_bookable_day():
            for slot in free_slots(self.conn(), [doctor], day, day, tz=self.tz, earliest=self.earliest_start(),
                                   center_id=center_id, overlaps_checked=False, starting_at=time_text):
                return slot
        raise self.slot_refusal(doctor["id"], day, time_text, center_id)

    def slot_refusal(self, doctor_id, day, time_text, center_id):
        """Why this doctor has no slot at this date and time: the first of the horizon, the
        notice, the hours (at this center), the grid, a closure ("Slot refusal reasons")."""
        retired_from = self.conn().execute("SELECT retired_from FROM doctors WHERE id = ?", (doctor_id,)).fetchone()[0]
        if retired_from is not None and day.isoformat() >= retired_from:
            return slot_not_available("doctor_retired", f"the doctor no longer sees patients from "
                                                        f"{format_date(retired_from)}")
        if day > self.last_bookable_day():
            return slot_not_available("beyond_horizon", f"{format_date(day)} is beyond the booking horizon "
                                                        f"({self.settings.horizon_days} days)")
        starts = local_start(day, time_text, self.tz) if day >= self.today() else None
        if day < self.today() or (starts is not None and starts < self.earliest_start()):
            return slot_not_available("too_soon", f"{format_date(day)} {time_text} is past or inside the "
                                                  f"minimum notice ({self.settings.min_notice_minutes} minutes)")
        minute = minutes_of(time_text)
        hours = [row for row in self.conn().execute(
            "SELECT center_id, start_time, end_time, slot_minutes FROM schedules WHERE doctor_id = ? AND weekday = ?",
            (doctor_id, day.weekday())) if minutes_of(row["start_time"]) <= minute < minutes_of(row["end_time"])]
        here = [row for row in hours if center_id is None or row["center_id"] == center_id]
        if hours and not here:
            return slot_not_available("wrong_center", f"at {time_text} the doctor works at center "
                                                      f"{hours[0]['center_id']}")
        if not here:
            return slot_not_available("outside_hours", f"the doctor does not work at {time_text} on that day")
        row = here[0]
        if starts is None or (minute - minutes_of(row["start_time"])) % row["slot_minutes"] or \
                minute + row["slot_minutes"] > minutes_of(row["end_time"]):
            return slot_not_available("off_grid", f"{time_text} is not on the doctor's grid of "
                                                  f"{row['slot_minutes']} minutes from {row['start_time']}")
        return slot_not_available("closed")

    # Catalogs and patients

    def catalogs(self):
        """The catalogs in the shape the caller reads ("Catalogs"): doctors, specialities, insurances, centers."""
        conn = self.conn()
        centers = [dict(row) for row in conn.execute("SELECT id, name FROM centers ORDER BY id")]
        insurance_lists, doctor_centers = {}, {}
        for row in conn.execute("SELECT doctor_id, insurance_id FROM doctor_insurances ORDER BY 1, 2"):
            insurance_lists.setdefault(row["doctor_id"], []).append(row["insurance_id"])
        for row in conn.execute("SELECT DISTINCT doctor_id, center_id FROM schedules ORDER BY 1, 2"):
            doctor_centers.setdefault(row["doctor_id"], []).append(row["center_id"])
        doctors = []
        for row in conn.execute("SELECT id, name, speciality_id FROM doctors ORDER BY id"):
            for center_id in doctor_centers.get(row["id"], [None]):
                entry = {"id": row["id"], "name": row["name"], "speciality": row["speciality_id"]}
                if centers:
                    entry["idCenter"] = center_id
                if row["id"] in insurance_lists:
                    entry["insurances"] = insurance_lists[row["id"]]
                doctors.append(entry)
        config = {
            "doctors": {"description": "Doctors; one entry per center where the doctor works. "
                                       "insurances, when present, lists the only insurances accepted.",
                        "data": doctors},
            "specialities": {"description": "Specialities and appointment types", "data": [
                dict(row) for row in conn.execute("SELECT id, name FROM specialities ORDER BY id")]},
            "insurances": {"description": "Insurances, private patients included", "data": [
                dict(row) for row in conn.execute("SELECT id, name FROM insurances ORDER BY id")]},
        }
        if centers:
            config["centers"] = {"description": "Sites of the clinic", "data": centers}
        return config

    def find_patient(self, nif_text):
        row = self.conn().execute("SELECT * FROM patients WHERE nif = ?", (normalise_nif(nif_text),)).fetchone()
        if row is None:
            raise ClinicError(404, "PATIENT_NOT_FOUND", "no patient with that nif")
        return patient_view(row)

    def register_patient(self, fields, source="api"):
        """A new patient from name, surname, birthDate, nif, phone texts; its id. A known NIF is a 409."""
        patient = patient_fields(fields, self.today())
        at = self.clock()
        with self.db.transaction() as conn:
            existing = conn.execute("SELECT id FROM patients WHERE nif = ?", (patient["nif"],)).fetchone()
            if existing:
                raise ClinicError(409, "PATIENT_ALREADY_EXISTS", "a patient with that nif exists",
                                  patientId=str(existing["id"]))
            row = written_row(conn, INSERT_PATIENT, patient_row(patient, at))
            record_event(conn, at, source, "patient.created", "patient", row["id"], after=row)
        return str(row["id"])

    # Slots

    def availability(self, *, doctor_id=None, speciality_id=None, center_id=None, insurance_id=None,
                     first=None, last=None):
        """The free slots ("Availability") of a doctor or a speciality, from `first` (today) to
        `last` (13 days on), within the horizon."""
        if doctor_id is None and speciality_id is None:
            raise invalid("doctorId or specialityId is required")
        self.require_center(center_id)
        first = first or self.today()
        if last is not None and last < first:
            raise invalid("endDate is before startDate")
        horizon = self.last_bookable_day()
        if first > horizon:  # nothing to offer; also keeps date arithmetic far from year 9999
            return []
        last = min(last or first + dt.timedelta(days=13), horizon)
        if doctor_id is not None:
            doctors = [self.require_doctor(doctor_id)]
            if speciality_id is not None:
                self.require_speciality(speciality_id)
                doctors = [d for d in doctors if d["speciality_id"] == speciality_id]
        else:
            self.require_speciality(speciality_id)
            doctors = self.conn().execute("SELECT id, name, speciality_id FROM doctors WHERE speciality_id = ?",
                                          (speciality_id,)).fetchall()
        if insurance_id is not None:
            self.require_insurance(insurance_id)
            doctors = [d for d in doctors if self.accepts_insurance(d["id"], insurance_id)]
        return free_slots(self.conn(), doctors, first, last, tz=self.tz, earliest=self.earliest_start(),
                          center_id=center_id)

    # Appointments: reading

    def appointment_json(self, appointment_id):
        """One live appointment as the caller sees it, as JSON text; a cancelled one is gone (410)."""
        return self.appointment_row(appointment_id, READ_CANCELLED, columns=f"{APPOINTMENT_JSON} AS json")["json"]

    def appointment(self, appointment_id):
        return json.loads(self.appointment_json(appointment_id))

    def live_appointments_json(self, where, params, center_id=None):
        """The live appointments matching `where` (SQL over `a`), sorted ("Lists"), as a JSON array's text."""
        self.require_center(center_id)
        if center_id is not None:
            where, params = where + " AND a.center_id = ?", [*params, center_id]
        (text,) = self.conn().execute(  # the whole array in one step ("Lists")
            f"SELECT '[' || coalesce(group_concat(json), '') || ']' FROM (SELECT {APPOINTMENT_JSON} AS json"
            f" {APPOINTMENT_TABLES} WHERE a.status != 'cancelled' AND {where} ORDER BY a.date, a.time, a.doctor_id)",
            params).fetchone()
        return text

    def live_appointments(self, where, params, center_id=None):
        return json.loads(self.live_appointments_json(where, params, center_id))

    def appointments_on_json(self, days, center_id=None):
        """The live appointments of these ISO days ("Lists"), as a JSON array's text."""
        return self.live_appointments_json(f"a.date IN ({','.join('?' * len(days))})", days, center_id)

    def appointments_on(self, days, center_id=None):
        return json.loads(self.appointments_on_json(days, center_id))

    def patient_appointments(self, *, nif=None, phone=None, day=None, center_id=None):
        """A patient's live appointments ("One route, two jobs"): found by NIF, else by phone;
        on `day`, else from today on."""
        self.require_center(center_id)
        nif, phone = normalise_nif(nif) if nif else None, parse_phone(phone) if phone else None
        patient_ids = []
        if nif is not None:
            patient_ids = [row[0] for row in self.conn().execute("SELECT id FROM patients WHERE nif = ?", (nif,))]
        if not patient_ids and phone is not None:
            patient_ids = [row[0] for row in self.conn().execute(
                "SELECT id FROM patients WHERE phone_e164 = ?", (phone,))]
        if not patient_ids:
            return []
        where, params = ("a.date = ?", [day.isoformat()]) if day else ("a.date >= ?", [self.today().isoformat()])
        where += f" AND a.patient_id IN ({','.join('?' * len(patient_ids))})"
        return self.live_appointments(where, [*params, *patient_ids], center_id)

    # Appointments: changing

    def book(self, *, day, time_text, doctor_id, patient_id, speciality_id=None, insurance_id=None,
             center_id=None, reason=None, source="api"):
        """A new appointment's id ("Booking"); a retry of the same booking answers the same id."""
        at = self.clock()
        patient_key = numeric_id(patient_id)
        with self.db.transaction() as conn:
            doctor = self.require_doctor(doctor_id)
            if patient_key is None or conn.execute("SELECT 1 FROM patients WHERE id = ?",
                                                   (patient_key,)).fetchone() is None:
                raise ClinicError(404, "PATIENT_NOT_FOUND", "no patient with that patientId")
            if speciality_id is not None:
                self.require_speciality(speciality_id)
                if speciality_id != doctor["speciality_id"]:
                    raise invalid("specialityId is not the speciality of that doctor")
            if insurance_id is not None:
                self.require_insurance(insurance_id)
                if not self.accepts_insurance(doctor_id, insurance_id):
                    raise ClinicError(409, "INSURANCE_NOT_ACCEPTED", "that doctor does not accept that insurance")
            self.require_center(center_id)
            try:
                slot = self.slot_at(doctor, day, time_text, center_id)
                booked = written_row(
                    conn, "INSERT INTO appointments (patient_id, doctor_id, speciality_id, insurance_id, center_id,"
                    " date, time, end_time, reason, status, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'booked', ?, ?)",
                    (patient_key, doctor_id, doctor["speciality_id"], insurance_id, slot.center_id, day.isoformat(),
                     slot.time, slot.end_time, reason, utc_iso(at), utc_iso(at)))
            except ClinicError as refusal:
                return self.retried_booking(patient_key, doctor_id, day, time_text, refusal)
            except sqlite3.IntegrityError:
                return self.retried_booking(patient_key, doctor_id, day, time_text, slot_not_available("taken"))
            record_event(conn, at, source, "appointment.booked", "appointment", booked["id"], after=booked)
        return str(booked["id"])

    def retried_booking(self, patient_key, doctor_id, day, time_text, refusal):
        """The id of this patient's live booking at this slot, or the slot's refusal. Asked only
        once the slot refused a booking: a retry always finds its first booking there."""
        retried = self.conn().execute(
            "SELECT id FROM appointments WHERE patient_id = ? AND doctor_id = ? AND date = ? AND time = ?"
            " AND status != 'cancelled'", (patient_key, doctor_id, day.isoformat(), time_text)).fetchone()
        if retried is None:
            raise refusal
        return str(retried["id"])

    def move(self, appointment_id, *, day, time_text, source="api"):
        """The appointment to another free slot of its doctor and center ("Moving"); no longer confirmed."""
        at = self.clock()
        with self.db.transaction() as conn:
            before = self.appointment_row(appointment_id, CHANGE_CANCELLED)
            slot = self.slot_at(self.require_doctor(before["doctor_id"]), day, time_text, before["center_id"])
            try:
                after = written_row(
                    conn, "UPDATE appointments SET date = ?, time = ?, end_time = ?, center_id = ?,"
                    " status = 'booked', confirmed_at = NULL, updated_at = ? WHERE id = ?",
                    (day.isoformat(), slot.time, slot.end_time, slot.center_id, utc_iso(at), before["id"]))
            except sqlite3.IntegrityError:
                raise slot_not_available("taken") from None
            record_event(conn, at, source, "appointment.moved", "appointment", before["id"], before=before, after=after)
        return str(before["id"])

    def cancel(self, appointment_id, reason="cancelled by the caller", source="api"):
        """Cancel a live appointment; its slot is free again. Nothing is deleted ("Storage")."""
        at = self.clock()
        with self.db.transaction() as conn:
            before = self.appointment_row(appointment_id, CANCEL_CANCELLED)
            self.cancelled(conn, before, at, reason, "appointment.cancelled", source)

    def cancelled(self, conn, before, at, reason, action, source):
        """Inside a transaction: mark `before` cancelled, with its event."""
        after = written_row(conn, "UPDATE appointments SET status = 'cancelled', cancelled_at = ?, cancel_reason = ?,"
                            " updated_at = ? WHERE id = ?", (utc_iso(at), reason, utc_iso(at), before["id"]))
        record_event(conn, at, source, action, "appointment", before["id"], before=before, after=after)

    def confirm(self, appointment_id, confirmed, source="api"):
        """The patient's answer to a reminder ("Confirming"): 'confirmed', 'alreadyConfirmed', or,
        when they will not come, 'cancelled' with the slot freed."""
        at = self.clock()
        with self.db.transaction() as conn:
            before = self.appointment_row(appointment_id, CHANGE_CANCELLED)
            if not confirmed:
                self.cancelled(conn, before, at, "declined at reminder", "appointment.declined", source)
                return "cancelled"
            if before["status"] == "confirmed":
                return "alreadyConfirmed"
            after = written_row(conn, "UPDATE appointments SET status = 'confirmed', confirmed_at = ?,"
                                " updated_at = ? WHERE id = ?", (utc_iso(at), utc_iso(at), before["id"]))
            record_event(conn, at, source, "appointment.confirmed", "appointment", before["id"],
                         before=before, after=after)
        return "confirmed"

    def close_reminder_day(self, *, config_id, days, execution="", skipped=(), center_id=None, source="api"):
        """Close a reminder cycle over these ISO days ("End of a reminder day"): unconfirmed live
        appointments, but the skipped ids, meet the policy. {"processed": N, "repeated": bool}."""
        policy = self.settings.reminder_policy
        at = self.clock()
        with self.db.transaction() as conn:
            self.require_center(center_id)
            if conn.execute("SELECT 1 FROM reminder_cycles WHERE voice_agent_config_id = ? AND days = ?"
                            " AND execution_date = ? AND center_id = ?",
                            (config_id, ",".join(days), execution, center_id or "")).fetchone():
                return {"processed": 0, "repeated": True}
            acted_on, booked = self.unconfirmed(days, skipped, center_id)
            for key in acted_on if policy == "release" else booked if policy == "flag" else ():
                before = dict(conn.execute("SELECT * FROM appointments WHERE id = ?", (key,)).fetchone())
                if policy == "release":
                    self.cancelled(conn, before, at, "no answer to reminder", "appointment.released", source)
                    continue
                after = written_row(conn, "UPDATE appointments SET status = 'unanswered', updated_at = ?"
                                    " WHERE id = ?", (utc_iso(at), key))
                record_event(conn, at, source, "appointment.unanswered", "appointment", key, before=before, after=after)
            cycle = conn.execute(
                "INSERT INTO reminder_cycles (voice_agent_config_id, days, execution_date, center_id, policy,"
                " appointment_ids, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (config_id, ",".join(days), execution, center_id or "", policy, json.dumps(acted_on), utc_iso(at)))
            record_event(conn, at, source, "reminder.closed", "reminder_cycle", cycle.lastrowid,
                         after={"voiceAgentConfigId": config_id, "days": days, "centerId": center_id,
                                "policy": policy, "appointmentIds": acted_on, "skipAppointmentIds": sorted(skipped)})
        return {"processed": len(acted_on), "repeated": False}

    def unconfirmed(self, days, skipped, center_id):
        """(ids of the live unconfirmed appointments of these days, those of them still only booked), sorted."""
        where = f"date IN ({','.join('?' * len(days))}) AND status IN ('booked', 'unanswered')"
        params = [*days]
        if skipped:
            where += " AND CAST(id AS TEXT) NOT IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(sorted(skipped)))
        if center_id is not None:
            where += " AND center_id = ?"
            params.append(center_id)
        rows = self.conn().execute(f"SELECT id, status FROM appointments WHERE {where} ORDER BY id", params).fetchall()
        return [row["id"] for row in rows], [row["id"] for row in rows if row["status"] == "booked"]

    # Staff accounts and desk sessions ("Staff desk")

    def add_staff(self, name, password, source="cli"):
        name = staff_name(name)
        at = self.clock()
        with self.db.transaction() as conn:
            if conn.execute("SELECT 1 FROM staff WHERE name = ?", (name,)).fetchone():
                raise ClinicError(409, "STAFF_ALREADY_EXISTS", f"there is already a staff account {name!r}")
            conn.execute("INSERT INTO staff (name, password, created_at) VALUES (?, ?, ?)",
                         (name, hash_password(password), utc_iso(at)))
            record_event(conn, at, source, "staff.added", "staff", name)

    def set_staff_password(self, name, password, source="cli"):
        """A new password; the account's sessions end and its lock is lifted."""
        at = self.clock()
        with self.db.transaction() as conn:
            name = self.require_staff(name)["name"]
            conn.execute("UPDATE staff SET password = ?, failed_logins = 0, locked_until = NULL WHERE name = ?",
                         (hash_password(password), name))
            conn.execute("DELETE FROM desk_sessions WHERE staff_name = ?", (name,))
            record_event(conn, at, source, "staff.password_set", "staff", name)

    def remove_staff(self, name, source="cli"):
        at = self.clock()
        with self.db.transaction() as conn:
            name = self.require_staff(name)["name"]
            conn.execute("DELETE FROM staff WHERE name = ?", (name,))  # and, by cascade, its sessions
            record_event(conn, at, source, "staff.removed", "staff", name)

    def require_staff(self, name):
        row = self.conn().execute("SELECT * FROM staff WHERE name = ?", ((name or "").strip().lower(),)).fetchone()
        if row is None:
            raise ClinicError(404, "STAFF_NOT_FOUND", f"no staff account {name!r}")
        return row

    def staff(self):
        return [dict(row) for row in self.conn().execute(
            "SELECT name, created_at, failed_logins, locked_until FROM staff ORDER BY name")]

    def log_in(self, name, password):
        """A new desk session's (token, csrf) for the right password. The fifth wrong one in a row
        locks the name for LOCK_MINUTES; the lock is decided inside the write transaction, after the
        scrypt, and no failure clears it ("Desk accounts and sessions")."""
        at, name = self.clock(), (name or "").strip().lower()
        row = self.conn().execute("SELECT password FROM staff WHERE name = ?", (name,)).fetchone()
        checked = row["password"] if row else DUMMY_PASSWORD
        matches = password_matches(checked, password) and row is not None
        token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        granted = False
        if row is not None:
            with self.db.transaction() as conn:
                granted = self.settle_login(conn, name, checked, matches, at, (token, csrf))
        if not granted:
            raise ClinicError(401, "LOGIN_FAILED", "wrong name or password, or the name is locked for "
                                                   f"{LOCK_MINUTES} minutes after {LOCK_AFTER} failures")
        return token, csrf

    def settle_login(self, conn, name, checked, matches, at, session):
        """Inside the login's write transaction: a locked name stays locked and counts nothing; the right
        password (the one checked is still the account's) opens a session; a wrong one counts."""
        row = conn.execute("SELECT password, failed_logins, locked_until FROM staff WHERE name = ?",
                           (name,)).fetchone()
        if row is None or (row["locked_until"] is not None and row["locked_until"] > utc_iso(at)):
            return False
        if matches and row["password"] == checked:
            conn.execute("UPDATE staff SET failed_logins = 0, locked_until = NULL WHERE name = ?", (name,))
            conn.execute("INSERT INTO desk_sessions (token_hash, staff_name, csrf, created_at, last_seen)"
                         " VALUES (?, ?, ?, ?, ?)", (token_hash(session[0]), name, session[1], utc_iso(at), utc_iso(at)))
            return True
        failures = row["failed_logins"] + 1
        if failures < LOCK_AFTER:
            conn.execute("UPDATE staff SET failed_logins = ? WHERE name = ?", (failures, name))
            return False
        conn.execute("UPDATE staff SET failed_logins = 0, locked_until = ? WHERE name = ?",
                     (utc_iso(at + dt.timedelta(minutes=LOCK_MINUTES)), name))
        record_event(conn, at, "desk", "staff.locked", "staff", name)
        return False

    def desk_session(self, token):
        """{"name", "csrf"} of a live session, its idle time restarted; None when unknown or idle too long."""
        if not token:
            return None
        at = self.clock()
        row = self.conn().execute("SELECT * FROM desk_sessions WHERE token_hash = ?", (token_hash(token),)).fetchone()
        if row is None:
            return None
        idle = at - dt.datetime.fromisoformat(row["last_seen"])
        age = at - dt.datetime.fromisoformat(row["created_at"])
        if idle > dt.timedelta(minutes=self.settings.desk_idle_minutes) or age > dt.timedelta(hours=SESSION_HOURS):
            with self.db.transaction() as conn:
                conn.execute("DELETE FROM desk_sessions WHERE token_hash = ?", (row["token_hash"],))
            return None
        if idle > dt.timedelta(minutes=1):  # written down once a minute at most, not at every page
            with self.db.transaction() as conn:
                conn.execute("UPDATE desk_sessions SET last_seen = ? WHERE token_hash = ?",
                             (utc_iso(at), row["token_hash"]))
        return {"name": row["staff_name"], "csrf": row["csrf"]}

    def log_out(self, token):
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM desk_sessions WHERE token_hash = ?", (token_hash(token or ""),))

    # Closures and doctors (the desk and their CLI twins)

    def closures(self, since=None):
        """Closures ending on or after `since` (today), by first day: who, where, when, why."""
        since = (since or self.today()).isoformat()
        return [dict(row) for row in self.conn().execute(
            "SELECT c.id, c.doctor_id, d.name AS doctor_name, c.center_id, c.date_from, c.date_to, c.start_time,"
            " c.end_time, c.reason FROM closures c LEFT JOIN doctors d ON d.id = c.doctor_id WHERE c.date_to >= ?"
            " ORDER BY c.date_from, c.date_to, c.id", (since,))]

    def closure_fields(self, doctor_id, center_id, first, last, start, end):
        """A closure's fields, checked: known doctor and center, days in order, hours both or neither."""
        if doctor_id is not None:
            self.require_doctor(doctor_id)
        self.require_center(center_id)
        last = last or first
        if last < first:
            raise invalid("the last day is before the first")
        if (start is None) != (end is None) or (start is not None and end <= start):
            raise invalid("hours need a start and a later end, or neither for whole days")
        return doctor_id, center_id, first.isoformat(), last.isoformat(), start, end

    def covered_by(self, doctor_id, center_id, first, last, start, end):
        """The live appointments a closure would cover: each needs a call."""
        where, params = "a.date BETWEEN ? AND ?", [first, last]
        if doctor_id is not None:
            where, params = where + " AND a.doctor_id = ?", [*params, doctor_id]
        if start is not None:
            where, params = where + " AND a.time < ? AND ? < a.end_time", [*params, end, start]
        return self.live_appointments(where, params, center_id)

    def add_closure(self, *, doctor_id=None, center_id=None, first, last=None, start=None, end=None, reason="",
                    source="cli"):
        """Close a doctor (or everyone) at a center (or every one) for days or hours; its slots leave
        availability at once. {"id", "covered": the live appointments it covers, for rebooking}."""
        fields = self.closure_fields(doctor_id, center_id, first, last, start, end)
        at = self.clock()
        with self.db.transaction() as conn:
            row = written_row(conn, "INSERT INTO closures (doctor_id, center_id, date_from, date_to, start_time,"
                                    " end_time, reason) VALUES (?, ?, ?, ?, ?, ?, ?)", (*fields, reason or ""))
            record_event(conn, at, source, "closure.added", "closure", row["id"], after=row)
        return {"id": str(row["id"]), "covered": self.covered_by(*fields)}

    def remove_closure(self, closure_id, source="cli"):
        """Remove a closure (one typed on the wrong date); its slots are offered again."""
        at = self.clock()
        with self.db.transaction() as conn:
            key = numeric_id(closure_id)
            before = None if key is None else conn.execute("SELECT * FROM closures WHERE id = ?", (key,)).fetchone()
            if before is None:
                raise ClinicError(404, "CLOSURE_NOT_FOUND", "no closure with that id")
            conn.execute("DELETE FROM closures WHERE id = ?", (key,))
            record_event(conn, at, source, "closure.removed", "closure", key, before=dict(before))

    def doctors(self):
        """Every doctor with their weekly hours at each center and the day they retire from, if any."""
        hours = {}
        for row in self.conn().execute("SELECT doctor_id, center_id, weekday, start_time, end_time, slot_minutes"
                                       " FROM schedules ORDER BY doctor_id, center_id, weekday, start_time"):
            hours.setdefault(row["doctor_id"], []).append(dict(row))
        return [{**dict(row), "hours": hours.get(row["id"], [])} for row in self.conn().execute(
            "SELECT id, name, speciality_id, retired_from FROM doctors ORDER BY name, id")]

    def retire_doctor(self, doctor_id, day, source="cli"):
        """No slot of this doctor is offered from `day` on; the live appointments left from then on
        are returned for rebooking, never cancelled ("Staff desk")."""
        at = self.clock()
        with self.db.transaction() as conn:
            before = dict(self.require_doctor(doctor_id))
            after = written_row(conn, "UPDATE doctors SET retired_from = ? WHERE id = ?", (day.isoformat(), doctor_id))
            record_event(conn, at, source, "doctor.retired", "doctor", doctor_id, before=before, after=after)
        return self.live_appointments("a.doctor_id = ? AND a.date >= ?", [doctor_id, day.isoformat()])

    # Patients, as the desk looks for them

    def search_patients(self, text):
        """Patients by NIF, phone or name (up to 20), best matches first."""
        text = (text or "").strip()
        if not text:
            return []
        found = []
        for column, value in (("nif", self.quietly(normalise_nif, text)), ("phone_e164", self.quietly(parse_phone, text))):
            if value:
                found += self.conn().execute(f"SELECT * FROM patients WHERE {column} = ?", (value,)).fetchall()
        if not found:
            pattern = "%" + re.sub(r"([%_\\])", r"\\\1", text) + "%"
            found = self.conn().execute(
                "SELECT * FROM patients WHERE name || ' ' || coalesce(surname, '') LIKE ? ESCAPE '\\'"
                " ORDER BY name, surname, id LIMIT 20", (pattern,)).fetchall()
        return [patient_view(row) for row in found]

    @staticmethod
    def quietly(parse, text):
        try:
            return parse(text)
        except ClinicError:
            return None

    def patient_record(self, patient_id):
        """A patient and their live appointments, the coming ones first, then the past."""
        key = numeric_id(patient_id)
        row = None if key is None else self.conn().execute("SELECT * FROM patients WHERE id = ?", (key,)).fetchone()
        if row is None:
            raise ClinicError(404, "PATIENT_NOT_FOUND", "no patient with that patientId")
        appointments = self.live_appointments("a.patient_id = ?", [key])
        today = self.today().isoformat()
        coming = [a for a in appointments if iso_of(a["date"]) >= today]
        return {**patient_view(row), "appointments": coming + [a for a in appointments if iso_of(a["date"]) < today][::-1]}

    # The desk's day

    def day_plan(self, day, center_id=None):
        """One center's day for the desk ("Staff desk"): each doctor who works there that day with
        their slots, each one free, booked (its appointment), closed (the reason) or past."""
        iso, earliest = day.isoformat(), self.earliest_start()
        sql = ("SELECT s.*, d.name, d.speciality_id, d.retired_from FROM schedules s JOIN doctors d ON d.id = s.doctor_id"
               " WHERE s.weekday = ? AND (d.retired_from IS NULL OR d.retired_from > ?)")
        params = [day.weekday(), iso]
        if center_id is not None:
            sql, params = sql + " AND s.center_id = ?", [*params, center_id]
        plans = {}
        for row in self.conn().execute(sql + " ORDER BY d.name, s.doctor_id, s.start_time", params):
            plan = plans.setdefault(row["doctor_id"], {"id": row["doctor_id"], "name": row["name"],
                                                        "speciality_id": row["speciality_id"], "slots": {}})
            grid = slot_grid(minutes_of(row["start_time"]), minutes_of(row["end_time"]), row["slot_minutes"])
            shut = [c for c in closures_between(self.conn(), [row["doctor_id"]], iso, iso)
                    if c["center_id"] in (None, row["center_id"])]
            for time_text, end_text, _ in grid.slots:
                starts = local_start(day, time_text, self.tz)
                closure = next((c for c in shut if closed_at([c], time_text, end_text)), None)
                state = "closed" if closure else "past" if starts is None or starts < earliest else "free"
                plan["slots"][time_text] = {"time": time_text, "end": end_text, "state": state,
                                            "reason": closure["reason"] if closure else None, "center_id": row["center_id"]}
        for appointment in self.appointments_on([iso], center_id):  # a retired doctor's too: to rebook
            plan = plans.setdefault(appointment["doctorId"], {
                "id": appointment["doctorId"], "name": appointment["doctorName"],
                "speciality_id": appointment["extraData"]["specialityId"], "slots": {}})
            end = hhmm(minutes_of(appointment["time"]) + appointment["extraData"]["duration"])
            for slot in [s for s in plan["slots"].values() if s["time"] < end and appointment["time"] < s["end"]]:
                del plan["slots"][slot["time"]]  # a slot the appointment overlaps is not on offer
            plan["slots"][appointment["time"]] = {"time": appointment["time"], "end": end, "state": "booked",
                                                  "appointment": appointment}
        return [{**plan, "slots": [plan["slots"][key] for key in sorted(plan["slots"])]} for plan in plans.values()]

    # The service's own facts

    def note_signatures(self, counts):
        """Add {scheme: signed requests} to what `agenda status` shows; never fails a request for it."""
        try:
            with self.db.transaction() as conn:
                for scheme, count in counts.items():
                    noted, _ = recall(conn, f"signature_scheme.{scheme}")
                    total = count + (noted.get("count", 0) if isinstance(noted, dict) else 0)
                    remember(conn, f"signature_scheme.{scheme}", {"count": total}, self.clock())
        except sqlite3.Error as error:
            log.warning("could not note the signature schemes: %s", error)


# --- The web edge: the API ---------------------------------------------------------

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


def matching_schemes(secret, header, method, target, body):
    """Every scheme whose signature matches this request, the stronger first. All
    are compared, in constant time, so timing tells nothing about which failed."""
    given = decode_signature(header)
    if given is None:
        return []
    messages = signed_messages(method, target, body)
    return [scheme for scheme in SIGNED_SCHEMES
            if hmac.compare_digest(sign(secret, messages[scheme]), given)]


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
BOTTLE_ERROR_MESSAGES = {404: "no such endpoint", 405: "method not allowed on this endpoint",
                         500: "unexpected error; the service logged it"}
BODYLESS_METHODS = ("GET", "HEAD", "DELETE")  # the spec sends no body with them
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


def logged_path(environ):
    """The path for the access log, without what a caller's mistake could put there ("Access
    log"): a route's id only when it is a number (a NIF sent as an appointment id is not), an
    unknown path (or method) as `/?`, never the query string (it holds NIFs and phones)."""
    if "bottle.route" not in environ:
        return "/?"
    path = environ.get("PATH_INFO", "")
    for value in environ.get("route.url_args", {}).values():
        if not str(value).isdigit():
            path = path.replace(str(value), "...")
    return path


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
            access_log.info("%s %s %s %.1fms rid=%s", environ.get("REQUEST_METHOD", "-"), logged_path(environ),
                            status[0] if status else "-", (time.perf_counter() - started) * 1000, rid)

    return app


def error_response(error):
    """A ClinicError as the JSON answer of "Errors"."""
    bottle.response.status = error.status
    bottle.response.content_type = "application/json"
    return json_bytes(error.payload())


def json_error_page(http_error):
    """Bottle's own errors (unknown route, wrong method, crash) as JSON, never HTML ("Errors");
    under /desk, a page for the receptionist."""
    status = http_error.status_code
    if bottle.request.path.startswith("/desk"):
        return desk_error_page(http_error)
    code = STATUS_ERROR_CODES.get(status, f"HTTP_{status}")
    message = BOTTLE_ERROR_MESSAGES.get(status, bottle.HTTP_CODES.get(status, "error").lower())
    extra = {}
    if status >= 500:
        extra["requestId"] = request_id()
        log.error("request %s failed: %s", extra["requestId"], http_error.exception)
    else:
        request_id()
    bottle.response.content_type = "application/json"
    return json_bytes(ClinicError(status, code, message, **extra).payload())


def internal_error(rid):
    """A 500 that names the request id; the traceback goes to the log, never to the caller."""
    log.exception("request %s failed", rid)
    return error_response(ClinicError(500, "INTERNAL_ERROR", BOTTLE_ERROR_MESSAGES[500], requestId=rid))


class ApiPlugin:
    """Wraps every route: request id, body limit, signature, JSON answers and errors."""

    name = "agenda"
    api = 2

    NOTE_EVERY_SECONDS = 60  # how often the count of signed requests per scheme is written down

    def __init__(self, secret, settings, on_signatures=None, after_write=None):
        self.secret = secret
        self.settings = settings
        self.after_write = after_write  # --ack-after-replication: waits for the replica, or raises a 503
        self.on_signatures = on_signatures or (lambda counts: None)
        self.seen, self.unnoted, self.noted_at, self.counting = set(), {}, 0.0, threading.Lock()

    def apply(self, callback, route):
        if route.config.get("desk"):
            return callback  # the desk's own plugin guards it; a signature never opens it
        public = route.config.get("public", False)

        def wrapper(*args, **kwargs):
            request = bottle.request
            rid = request_id()
            try:
                raw = request.environ["agenda.raw_body"] = self.read_body(request)
                if not public and self.secret is not None:
                    self.check_signature(request, raw)
                if raw and request.method in BODYLESS_METHODS:
                    raise invalid(f"a {request.method} request carries no body; send it without one")
                result = callback(*args, **kwargs)
                if self.after_write is not None and request.method in ("POST", "PUT", "DELETE"):
                    self.after_write()
            except ClinicError as error:
                return error_response(error)
            except sqlite3.OperationalError as error:
                if not any(marker in str(error).lower() for marker in _BUSY_MARKERS):
                    return internal_error(rid)
                log.error("request %s: database unavailable: %s", rid, error)
                return error_response(ClinicError(503, "SERVICE_UNAVAILABLE",
                                               "the agenda cannot write right now; try again", requestId=rid))
            except Exception:
                return internal_error(rid)
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
            raise ClinicError(400, "INVALID_REQUEST", "Content-Length is not a number") from None
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
        matched = matching_schemes(self.secret, header, request.method, request_target(request.environ), raw)
        accepted = [scheme for scheme in matched if scheme in allowed]
        if not accepted:
            why = signature_problem(header) or (
                f"signed with the {matched[0]!r} scheme, and this server takes {pinned!r} (--signature-scheme)"
                if matched else "it matches no scheme")
            log.warning("request %s: signature refused: %s; tried %s; body %d bytes, path %s, query %d bytes",
                        request_id(), why, " and ".join(allowed), len(raw), logged_path(request.environ),
                        len(request.environ.get("QUERY_STRING", "").encode("latin-1")))
            raise ClinicError(401, "INVALID_SIGNATURE", "missing or invalid X-Signature")
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
        raise ClinicError(415, "UNSUPPORTED_MEDIA_TYPE", "send the body as Content-Type: application/json")

    def no_constants(name):
        raise ValueError(name)

    try:
        body = json.loads(request.environ["agenda.raw_body"].decode("utf-8"), parse_constant=no_constants)
        _JSON.encode(body).encode("utf-8")  # every text, keys too, must be one UTF-8 can carry
    except RecursionError:
        raise ClinicError(400, "INVALID_JSON", "the body nests too deep") from None
    except UnicodeEncodeError:
        raise ClinicError(400, "INVALID_JSON", "the body holds a lone surrogate (\\ud800 to \\udfff)") from None
    except (ValueError, UnicodeDecodeError):
        raise ClinicError(400, "INVALID_JSON", "the body is not valid UTF-8 JSON") from None
    if not isinstance(body, dict):
        raise ClinicError(400, "INVALID_JSON", "the body must be a JSON object")
    return body


def query_text(name, required=False):
    """A query-string value, read with getunicode so accents survive; blank is None."""
    value = (bottle.request.query.getunicode(name) or "").strip()
    if not value:
        if required:
            raise invalid(f"{name} is required")
        return None
    return value


def query_date(*names):
    """The date of the first of these aliases present, or None; every alias present must be a date."""
    days = [parse_date(text, name) for name in names if (text := query_text(name)) is not None]
    return days[0] if days else None


def clinic():
    """The Clinic of the app serving this request."""
    return bottle.request.app.clinic


def created(payload):
    bottle.response.status = 201
    return payload


# Handlers: read the request, call the clinic, shape the answer. Mounted by API_ROUTES.

def health():
    clinic().conn().execute("SELECT 1").fetchone()
    return {"status": "ok"}


def openapi_document():
    """This API described in OpenAPI 3.1. It holds no data, so it needs no signature."""
    return bottle.request.app.openapi


def custom_config():
    return clinic().catalogs()


def find_patient():
    return clinic().find_patient(query_text("nif", required=True))


def create_patient():
    return created({"patientId": clinic().register_patient(json_body())})


def availabilities():
    asked = all_fields({"single": lambda: query_date("date"),
                        "first": lambda: query_date("startDate", "dateFrom", "from"),
                        "last": lambda: query_date("endDate", "dateTo", "to")})
    first, last = asked["first"], asked["last"]
    if asked["single"] is not None and first is None and last is None:
        first = last = asked["single"]
    slots = clinic().availability(doctor_id=query_text("doctorId"), speciality_id=query_text("specialityId"),
                                  center_id=query_text("centerId"), insurance_id=query_text("insuranceId"),
                                  first=first, last=last)
    return data_json(slots_json(slots))


def appointments():
    """One route, two jobs: the patient search with nif or phone, else the day list with date."""
    center_id, date_text = query_text("centerId"), query_text("date")
    nif, phone = query_text("nif"), query_text("phone")
    if nif is None and phone is None:
        if date_text is None:
            raise invalid("date (day list) or nif or phone (patient search) is required")
        return data_json(clinic().appointments_on_json([parse_date(date_text, "date").isoformat()], center_id))
    day = parse_date(date_text, "date") if date_text else None
    return {"data": clinic().patient_appointments(nif=nif, phone=phone, day=day, center_id=center_id)}


def appointments_range():
    days = parse_dates(query_text("dates", required=True).split(","), "dates")
    return data_json(clinic().appointments_on_json(days, query_text("centerId")))


def appointment(appointment_id):
    return clinic().appointment_json(appointment_id).encode()


def data_json(array_text):
    """{"data": [...]} around a JSON array SQLite wrote, without parsing it again."""
    return b'{"data":' + array_text.encode() + b"}"


def book_appointment():
    body = json_body()
    return created({"appointmentId": clinic().book(**all_fields({
        "day": lambda: parse_date(body_text(body, "date", required=True), "date"),
        "time_text": lambda: parse_time(body_text(body, "time", required=True), "time"),
        "doctor_id": lambda: body_text(body, "doctorId", required=True),
        "patient_id": lambda: body_text(body, "patientId", required=True),
        "speciality_id": lambda: body_text(body, "specialityId"),
        "insurance_id": lambda: body_text(body, "insuranceId"),
        "center_id": lambda: body_text(body, "centerId"),
        "reason": lambda: body_text(body, "reason")}))})


def move_appointment(appointment_id):
    body = json_body()
    return {"appointmentId": clinic().move(appointment_id, **all_fields({
        "day": lambda: parse_date(body_text(body, "newDate", required=True), "newDate"),
        "time_text": lambda: parse_time(body_text(body, "newTime", required=True), "newTime")}))}


def cancel_appointment(appointment_id):
    clinic().cancel(appointment_id)
    bottle.response.status = 204


def confirm_appointment():
    body = json_body()
    return {"status": clinic().confirm(**all_fields({
        "appointment_id": lambda: body_text(body, "appointmentId", required=True),
        "confirmed": lambda: body_flag(body, "confirmed")}))}


def body_flag(body, name):
    if not isinstance(body.get(name), bool):
        raise invalid(f"{name} is required and must be true or false")
    return body[name]


def reminder_days(body):
    """The days of a reminder close: `dates`, else `date`; a wrong `date` is refused even beside `dates`."""
    single = optional_date(body, "date")
    texts = body_text_list(body, "dates")
    if not texts and single is None:
        raise invalid("date or dates is required")
    return parse_dates(texts, "dates") if texts else [single.isoformat()]


def end_of_reminder_day():
    body = json_body()
    closed = clinic().close_reminder_day(**all_fields({
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


def create_app(db_path, secret=None, *, insecure=False, now=None, after_write=None, **options):
    """The WSGI app over the SQLite file at db_path; its Clinic is `app.clinic`.

    secret: the caller's shared secret ("Signatures"); None is refused unless insecure=True,
    a development mode that checks no signature. now: the clock, a function returning an
    aware datetime ("Clinic time"). after_write: called before a change is answered
    ("Replication"). options: the fields of Settings.
    """
    settings = Settings(**options)
    if not secret and not insecure:
        raise ValueError("a shared secret is required (AGENDA_SECRET); "
                         "only a development server may run without one")
    if not secret:
        log.warning("SIGNATURES ARE OFF: anyone who reaches this server can read and change the agenda")
    elif settings.signature_scheme in SCHEME_WARNINGS:
        log.warning(SCHEME_WARNINGS[settings.signature_scheme])
    app = bottle.Bottle()
    app.clinic = Clinic(Database(db_path), settings, now)
    app.openapi = read_data_file(OPENAPI_FILE)
    app.default_error_handler = json_error_page
    app.install(ApiPlugin(secret or None, settings, on_signatures=app.clinic.note_signatures, after_write=after_write))
    app.install(DeskPlugin())
    for method, path, handler, config in API_ROUTES + DESK_ROUTES:
        app.route(path, method, handler, **config)
    app.wsgi = with_access_log(app.wsgi)  # Bottle.__call__ calls self.wsgi
    return app


# --- The web edge: the staff desk ---------------------------------------------------

# Every text the desk shows, in Spanish and English ("Staff desk"): one table.
TEXTS = {
    "app": ("Agenda", "Agenda"), "login": ("Entrar", "Log in"), "logout": ("Salir", "Log out"),
    "name": ("Nombre", "Name"), "surname": ("Apellidos", "Surname"), "password": ("Contraseña", "Password"),
    "nif": ("NIF", "NIF"), "phone": ("Teléfono", "Phone"), "birth": ("Nacimiento", "Birth date"),
    "today": ("Hoy", "Today"), "previous": ("Día anterior", "Previous day"), "next": ("Día siguiente", "Next day"),
    "center": ("Centro", "Center"), "all_centers": ("Todos los centros", "All centers"), "show": ("Ver", "Show"),
    "free": ("libre", "free"), "past": ("pasado", "past"), "closed": ("cerrado", "closed"),
    "booked": ("reservada", "booked"), "confirmed": ("✓ confirmada", "✓ confirmed"),
    "unanswered": ("? sin respuesta", "? no answer"), "no_doctors": ("Nadie pasa consulta este día en este centro.",
                                                                    "No doctor sees patients that day at this center."),
    "search": ("Buscar paciente", "Find a patient"), "find": ("Buscar", "Find"),
    "search_hint": ("NIF, teléfono o nombre", "NIF, phone or name"), "no_patients": ("Ningún paciente encontrado.",
                                                                                   "No patient found."),
    "book": ("Reservar", "Book"), "book_title": ("Reservar cita", "Book an appointment"),
    "choose": ("Elegir", "Choose"), "new_patient": ("Paciente nuevo", "New patient"),
    "register_and_book": ("Registrar y reservar", "Register and book"), "reason": ("Motivo", "Reason"),
    "doctor": ("Médico", "Doctor"), "date": ("Fecha", "Date"), "time": ("Hora", "Time"), "status": ("Estado", "Status"),
    "appointment": ("Cita", "Appointment"), "move": ("Mover", "Move"), "move_to": ("Mover a", "Move to"),
    "cancel": ("Anular", "Cancel"), "cancel_reason": ("Motivo de la anulación", "Why it is cancelled"),
    "confirm": ("Marcar confirmada", "Mark confirmed"), "patient": ("Paciente", "Patient"),
    "appointments": ("Citas", "Appointments"), "none": ("Ninguna.", "None."), "back": ("Volver al día", "Back to the day"),
    "closures": ("Cierres", "Closures"), "add_closure": ("Añadir cierre", "Add a closure"),
    "everyone": ("Todos", "Everyone"), "from": ("Desde", "From"), "to": ("Hasta", "To"),
    "hours_from": ("Hora inicio (vacío: todo el día)", "From (blank: whole day)"), "hours_to": ("Hora fin", "To"),
    "remove": ("Quitar", "Remove"), "covers": ("Este cierre cubre estas citas, que habrá que llamar:",
                                              "This closure covers these appointments, which need a call:"),
    "save_anyway": ("Guardar el cierre", "Save the closure"), "doctors": ("Médicos", "Doctors"),
    "hours": ("Horario", "Hours"), "retire": ("Retirar desde", "Retire from"), "retired_from": ("Retirado desde",
                                                                                              "Retired from"),
    "left_to_rebook": ("Citas que quedan por reubicar:", "Appointments left to rebook:"),
    "retire_anyway": ("Retirar", "Retire"), "day": ("Día", "Day"),
    "weekdays": (("lun", "mar", "mié", "jue", "vie", "sáb", "dom"), ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")),
    "booked_done": ("Cita de {patient} reservada el {date} a las {time}.", "{patient} booked on {date} at {time}."),
    "moved_done": ("Cita de {patient} movida al {date} a las {time}.", "{patient}'s appointment moved to {date} at {time}."),
    "cancelled_done": ("Cita de {patient} anulada.", "{patient}'s appointment cancelled."),
    "confirmed_done": ("Cita de {patient} confirmada.", "{patient}'s appointment confirmed."),
    "closure_done": ("Cierre guardado.", "Closure saved."), "closure_removed": ("Cierre quitado.", "Closure removed."),
    "retired_done": ("{doctor} retirado desde el {date}.", "{doctor} retired from {date}."),
    "LOGIN_FAILED": ("Nombre o contraseña incorrectos. Tras 5 intentos fallidos el nombre queda bloqueado "
                     "15 minutos.", "Wrong name or password. After 5 failed logins a name is locked for 15 minutes."),
    "CSRF": ("El formulario ha caducado; vuelve a intentarlo.", "The form expired; try again."),
    "reason_taken": ("Otra cita acaba de ocupar ese hueco: elige otro.", "Another booking just took that slot: choose another."),
    "reason_off_grid": ("Esa hora no está en la agenda del médico.", "That time is not on the doctor's grid."),
    "reason_outside_hours": ("El médico no pasa consulta a esa hora.", "The doctor does not work at that time."),
    "reason_too_soon": ("Esa hora ya ha pasado o está demasiado cerca.", "That time is past or too soon."),
    "reason_closed": ("Ese hueco está cerrado.", "That slot is closed."),
    "reason_beyond_horizon": ("Esa fecha está demasiado lejos.", "That date is too far ahead."),
    "reason_wrong_center": ("A esa hora el médico está en otro centro.", "At that time the doctor is at another center."),
    "reason_doctor_retired": ("El médico ya no pasa consulta ese día.", "The doctor no longer works that day."),
    "PATIENT_ALREADY_EXISTS": ("Ya hay un paciente con ese NIF.", "A patient with that NIF exists."),
    "APPOINTMENT_PREVIOUSLY_CANCELLED": ("Esa cita ya estaba anulada.", "That appointment was already cancelled."),
    "APPOINTMENT_ALREADY_CANCELLED": ("Esa cita ya estaba anulada.", "That appointment was already cancelled."),
    "not_found": ("No existe.", "Not found."), "error": ("Algo ha fallado.", "Something went wrong."),
}
DESK_COOKIE, LOGIN_COOKIE, FLASH_COOKIE = "agenda_desk", "agenda_login", "agenda_flash"
DESK_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
}


def desk_language(environ):
    """'en' when the browser puts English before Spanish, else 'es' (the default)."""
    for part in environ.get("HTTP_ACCEPT_LANGUAGE", "").split(","):
        tag = part.split(";")[0].strip().lower()
        if tag[:2] in ("es", "en"):
            return tag[:2]
    return "es"


def translator(language):
    """t(key, **values): the text of TEXTS in this language."""
    index = 1 if language == "en" else 0

    def t(key, **values):
        text = TEXTS[key][index] if key in TEXTS else key
        return text.format(**values) if values else text
    return t


@functools.lru_cache(maxsize=None)
def desk_template(name):
    """A template of templates/, compiled once (bottle's SimpleTemplate)."""
    return bottle.SimpleTemplate(read_data_file(f"templates/{name}.tpl").decode("utf-8"))


def desk_page(template, status=200, **values):
    """A desk page: the template inside the layout, in the desk's language."""
    desk = bottle.request.environ["agenda.desk"]
    t = translator(desk["lang"])
    flash = bottle.request.get_cookie(FLASH_COOKIE)
    if flash:
        bottle.response.delete_cookie(FLASH_COOKIE, path="/desk")
    values = {"t": t, "desk": desk, "format_date": format_date, "dialled": dialled, "quote": urllib.parse.quote,
              "urlencode": urllib.parse.urlencode, "error": None, **values}
    body = desk_template(template).render(**values)
    bottle.response.status = status
    bottle.response.content_type = "text/html; charset=utf-8"
    return desk_template("layout").render(body=body, flash=urllib.parse.unquote(flash or ""), **values)


def dialled(e164):
    """A phone as reception dials it: Spanish numbers without +34, in groups (612 34 56 78)."""
    try:
        number = phonenumbers.parse(e164 or "")
    except phonenumbers.NumberParseException:
        return e164 or ""
    style = phonenumbers.PhoneNumberFormat.NATIONAL if number.country_code == 34 else \
        phonenumbers.PhoneNumberFormat.INTERNATIONAL
    return phonenumbers.format_number(number, style)


def desk_refusal(error):
    """What a receptionist reads for a refusal: their words for a known one, else its message."""
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    key = f"reason_{error.extra['reason']}" if error.extra.get("reason") else error.code
    return t(key) if key in TEXTS else error.message


def done(message, to):
    """After a change: say what changed (on the next page) and go back to `to`."""
    secure = bottle.request.environ.get("wsgi.url_scheme") == "https"  # the trusted proxy's, via waitress
    bottle.response.set_cookie(FLASH_COOKIE, urllib.parse.quote(message), path="/desk", httponly=True,
                               samesite="strict", secure=secure, max_age=60)
    see_other(to)


def see_other(path):
    """303 to a path of this server, relative: a client's Host header never goes into it."""
    answer = bottle.response.copy(cls=bottle.HTTPResponse)
    answer.status, answer.body = 303, ""
    answer.set_header("Location", path)
    raise answer


def day_address(date, center_id):
    query = {"date": format_date(date)}
    if center_id:
        query["centerId"] = center_id
    return "/desk/day?" + urllib.parse.urlencode(query)


class DeskPlugin:
    """Wraps every desk route: the session cookie, CSRF on every POST, no X-Signature, safe headers,
    HTML answers in the desk's language ("Staff desk")."""

    name = "desk"
    api = 2

    def apply(self, callback, route):
        if not route.config.get("desk"):
            return callback
        open_page = route.config.get("open_page", False)

        def wrapper(*args, **kwargs):
            request, environ = bottle.request, bottle.request.environ
            request_id()
            for name, value in DESK_HEADERS.items():
                bottle.response.set_header(name, value)
            environ["agenda.desk"] = desk = {"lang": desk_language(environ), "name": None, "csrf": None}
            if raw_header(environ, "X-Signature") is not None:
                return desk_error(400, "a desk page takes no X-Signature: sign in at /desk/login")
            session = clinic().desk_session(request.get_cookie(DESK_COOKIE))
            if session is None and not open_page:
                see_other("/desk/login")
            desk.update(session or {})
            if request.method == "POST" and not open_page and not hmac.compare_digest(
                    (request.forms.getunicode("csrf") or "").encode(), desk["csrf"].encode()):
                return desk_error(403, translator(desk["lang"])("CSRF"))
            try:
                return callback(*args, **kwargs)
            except ClinicError as error:
                return desk_error(error.status, desk_refusal(error))
            except bottle.HTTPResponse:
                raise  # a redirect
            except Exception:
                log.exception("request %s failed", request_id())
                return desk_error(500, translator(desk["lang"])("error"))
        return wrapper


def desk_error_page(http_error):
    """Bottle's own errors under /desk (an unknown page, a crash) as a page, with the desk's headers."""
    environ = bottle.request.environ
    environ.setdefault("agenda.desk", {"lang": desk_language(environ), "name": None, "csrf": None})
    for name, value in DESK_HEADERS.items():
        bottle.response.set_header(name, value)
    if http_error.status_code >= 500:
        log.error("request %s failed: %s", request_id(), http_error.exception)
    t = translator(environ["agenda.desk"]["lang"])
    return desk_error(http_error.status_code, t("not_found") if http_error.status_code == 404 else t("error"))


def desk_error(status, message):
    return desk_page("error", status=status, message=message)


def desk_source():
    return f"desk:{bottle.request.environ['agenda.desk']['name']}"


def form(name):
    """A form field, read with getunicode; blank is None."""
    return (bottle.request.forms.getunicode(name) or "").strip() or None


# Desk handlers: read the form, call the clinic with the receptionist as the source, show the page.

def desk_home():
    see_other("/desk/day")


def desk_login_page(error=None, name=""):
    token = secrets.token_urlsafe(24)
    secure = bottle.request.environ.get("wsgi.url_scheme") == "https"  # the trusted proxy's, via waitress
    bottle.response.set_cookie(LOGIN_COOKIE, token, path="/desk", httponly=True, samesite="strict", secure=secure)
    return desk_page("login", status=401 if error else 200, login_token=token, error=error, name=name)


def desk_log_in():
    """Log in: the login form's token must match its cookie (CSRF before a session exists)."""
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    given, expected = form("csrf") or "", bottle.request.get_cookie(LOGIN_COOKIE) or ""
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        return desk_error(403, t("CSRF"))
    name = form("name") or ""
    try:
        token, _ = clinic().log_in(name, bottle.request.forms.getunicode("password") or "")
    except ClinicError as error:
        return desk_login_page(t(error.code), name)
    secure = bottle.request.environ.get("wsgi.url_scheme") == "https"  # the trusted proxy's, via waitress
    bottle.response.set_cookie(DESK_COOKIE, token, path="/desk", httponly=True, samesite="strict", secure=secure)
    bottle.response.delete_cookie(LOGIN_COOKIE, path="/desk")
    see_other("/desk/day")


def desk_log_out():
    clinic().log_out(bottle.request.get_cookie(DESK_COOKIE))
    bottle.response.delete_cookie(DESK_COOKIE, path="/desk")
    see_other("/desk/login")


def desk_centers():
    return [dict(row) for row in clinic().conn().execute("SELECT id, name FROM centers ORDER BY id")]


def desk_day():
    """The day view: one center, its doctors side by side, every slot free, booked, closed or past."""
    day = parse_date(query_text("date"), "date") if query_text("date") else clinic().today()
    if not 1900 <= day.year <= 2999:
        raise invalid("date must be a year from 1900 to 2999")
    centers = desk_centers()
    center_id = query_text("centerId") or (centers[0]["id"] if centers else None)
    plans = clinic().day_plan(day, clinic().require_center(center_id))
    times = sorted({slot["time"] for plan in plans for slot in plan["slots"]})
    cells = {(plan["id"], slot["time"]): slot for plan in plans for slot in plan["slots"]}
    return desk_page("day", day=day, center_id=center_id, centers=centers, plans=plans, times=times, cells=cells,
                     previous=day_address(day - dt.timedelta(days=1), center_id),
                     following=day_address(day + dt.timedelta(days=1), center_id),
                     today=day_address(clinic().today(), center_id))


def desk_book_page(error=None, status=200):
    """Booking a free slot: the slot, a patient search, and a new patient's form."""
    slot = {name: query_text(name) or form(name) for name in ("doctorId", "date", "time", "centerId")}
    doctor = clinic().require_doctor(slot["doctorId"])
    found = clinic().search_patients(query_text("q")) if query_text("q") else None
    typed = {name: form(name) or "" for name in ("name", "surname", "nif", "phone", "birthDate", "reason")}
    return desk_page("book", status=status, slot=slot, doctor=doctor, found=found, q=query_text("q") or "",
                     typed=typed, error=error)


def desk_book():
    """Book the slot for a patient found, or for a new one registered in the same form."""
    source, slot = desk_source(), {name: form(name) for name in ("doctorId", "date", "time", "centerId")}
    try:
        patient_id = form("patientId") or desk_patient_id(source)
        day = parse_date(slot["date"] or "", "date")
        clinic().book(day=day, time_text=parse_time(slot["time"] or "", "time"), doctor_id=slot["doctorId"],
                      patient_id=patient_id, center_id=slot["centerId"], reason=form("reason"), source=source)
    except ClinicError as error:
        return desk_book_page(desk_refusal(error), status=error.status)
    patient = clinic().patient_record(patient_id)
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    full_name = " ".join(part for part in (patient["name"], patient["surname"]) if part)
    done(t("booked_done", patient=full_name, date=format_date(day), time=slot["time"]),
         day_address(day, slot["centerId"]))


def desk_patient_id(source):
    """The new patient of the booking form, registered; the same one when the form comes again (a
    booking refused after the registration, sent once more with another slot)."""
    fields = {name: form(name) for name in ("name", "surname", "nif", "phone", "birthDate")}
    try:
        return clinic().register_patient(fields, source=source)
    except ClinicError as error:
        known = clinic().search_patients(fields["nif"] or "") if error.code == "PATIENT_ALREADY_EXISTS" else []
        if len(known) == 1 and known[0]["name"] == (fields["name"] or "") and known[0]["id"] == error.extra["patientId"]:
            return known[0]["id"]
        raise


def desk_appointment(appointment_id, error=None, status=200):
    """One appointment: move it to a free slot of its doctor, cancel it with a reason, confirm it."""
    appointment = clinic().appointment(appointment_id)
    day = parse_date(query_text("date") or appointment["date"], "date")
    free = clinic().availability(doctor_id=appointment["doctorId"], center_id=appointment["centerRef"],
                                 first=day, last=day)
    return desk_page("appointment", status=status, appointment=appointment, free=free, day=day, error=error)


def desk_move(appointment_id):
    before = clinic().appointment(appointment_id)
    try:
        day = parse_date(form("date") or "", "date")
        time_text = parse_time(form("time") or "", "time")
        clinic().move(appointment_id, day=day, time_text=time_text, source=desk_source())
    except ClinicError as error:
        return desk_appointment(appointment_id, desk_refusal(error), error.status)
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    done(t("moved_done", patient=before["patientName"], date=format_date(day), time=time_text),
         day_address(day, before["centerRef"]))


def desk_cancel(appointment_id):
    before = clinic().appointment(appointment_id)
    clinic().cancel(appointment_id, reason=form("reason") or "cancelled at the desk", source=desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    done(t("cancelled_done", patient=before["patientName"]), day_address(parse_date(before["date"], "date"),
                                                                        before["centerRef"]))


def desk_confirm(appointment_id):
    before = clinic().appointment(appointment_id)
    clinic().confirm(appointment_id, True, source=desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    done(t("confirmed_done", patient=before["patientName"]), day_address(parse_date(before["date"], "date"),
                                                                        before["centerRef"]))


def desk_patients():
    q = query_text("q") or ""
    return desk_page("patients", q=q, found=clinic().search_patients(q) if q else None)


def desk_patient(patient_id):
    return desk_page("patient", patient=clinic().patient_record(patient_id))


def desk_closures(error=None, status=200, covered=None):
    typed = {name: form(name) or "" for name in ("doctorId", "centerId", "dateFrom", "dateTo", "start", "end",
                                                 "reason")}
    return desk_page("closures", status=status, closures=clinic().closures(), doctors=clinic().doctors(),
                     centers=desk_centers(), typed=typed, error=error, covered=covered)


def desk_add_closure():
    """Add a closure; when it covers booked appointments they are listed first, and saved on confirmation."""
    try:
        fields = all_fields({
            "doctor_id": lambda: form("doctorId"), "center_id": lambda: form("centerId"),
            "first": lambda: parse_date(form("dateFrom") or "", "dateFrom"),
            "last": lambda: parse_date(form("dateTo"), "dateTo") if form("dateTo") else None,
            "start": lambda: parse_time(form("start"), "start") if form("start") else None,
            "end": lambda: parse_time(form("end"), "end") if form("end") else None})
        covered = clinic().covered_by(*clinic().closure_fields(**fields))
        if covered and not form("confirmed"):
            return desk_closures(covered=covered)
        clinic().add_closure(**fields, reason=form("reason") or "", source=desk_source())
    except ClinicError as error:
        return desk_closures(desk_refusal(error), error.status)
    done(translator(bottle.request.environ["agenda.desk"]["lang"])("closure_done"), "/desk/closures")


def desk_remove_closure(closure_id):
    clinic().remove_closure(closure_id, source=desk_source())
    done(translator(bottle.request.environ["agenda.desk"]["lang"])("closure_removed"), "/desk/closures")


def desk_doctors(error=None, status=200, left=None):
    return desk_page("doctors", status=status, doctors=clinic().doctors(), error=error, left=left,
                     weekdays=translator(bottle.request.environ["agenda.desk"]["lang"])("weekdays"))


def desk_retire(doctor_id):
    """Retire a doctor from a date; the appointments left after it are listed to rebook."""
    try:
        day = parse_date(form("date") or "", "date")
        doctor = clinic().require_doctor(doctor_id)
        left = clinic().live_appointments("a.doctor_id = ? AND a.date >= ?", [doctor_id, day.isoformat()])
        if not form("confirmed"):
            return desk_doctors(left={"doctor": dict(doctor), "date": format_date(day), "appointments": left})
        clinic().retire_doctor(doctor_id, day, source=desk_source())
    except ClinicError as error:
        return desk_doctors(desk_refusal(error), error.status)
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    done(t("retired_done", doctor=doctor["name"], date=format_date(day)), "/desk/doctors")


def desk_stylesheet():
    bottle.response.content_type = "text/css; charset=utf-8"
    return read_data_file("templates/desk.css")


DESK = {"desk": True}
DESK_ROUTES = [  # (method, path, handler, route config)
    ("GET", "/desk", desk_home, {**DESK, "open_page": True}),
    ("GET", "/desk/desk.css", desk_stylesheet, {**DESK, "open_page": True}),
    ("GET", "/desk/login", desk_login_page, {**DESK, "open_page": True}),
    ("POST", "/desk/login", desk_log_in, {**DESK, "open_page": True}),
    ("POST", "/desk/logout", desk_log_out, DESK),
    ("GET", "/desk/day", desk_day, DESK),
    ("GET", "/desk/book", desk_book_page, DESK),
    ("POST", "/desk/book", desk_book, DESK),
    ("GET", "/desk/appointments/<appointment_id:int>", desk_appointment, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/move", desk_move, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/cancel", desk_cancel, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/confirm", desk_confirm, DESK),
    ("GET", "/desk/patients", desk_patients, DESK),
    ("GET", "/desk/patients/<patient_id:int>", desk_patient, DESK),
    ("GET", "/desk/closures", desk_closures, DESK),
    ("POST", "/desk/closures", desk_add_closure, DESK),
    ("POST", "/desk/closures/<closure_id:int>/remove", desk_remove_closure, DESK),
    ("GET", "/desk/doctors", desk_doctors, DESK),
    ("POST", "/desk/doctors/<doctor_id>/retire", desk_retire, DESK),
]


# --- The web edge: waitress -------------------------------------------------------

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
    `discard_unread`."""
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
                error = ClinicError(refusal.code, STATUS_ERROR_CODES.get(refusal.code, f"HTTP_{refusal.code}"),
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


def serve_until_stopped(app, on_listening=None, **options):
    """waitress until SIGTERM or Ctrl-C. On either, waitress stops taking requests and
    lets the ones in flight finish (its task dispatcher's shutdown) before we return.
    on_listening(url) runs once the port is bound: a port in use fails before it."""
    server, _ = make_server(app, **options)

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


def log_to_stderr():
    """`agenda run`'s log on stderr through the standard library's queue ("Access log"): a
    request hands its line over, a listener thread writes it. Returns the listener, or None
    when the host program has set its own logging (tests do)."""
    root = logging.getLogger()
    if root.handlers:
        return None
    writer = logging.StreamHandler()
    writer.setFormatter(logging.Formatter(LOG_FORMAT))
    records = queue.SimpleQueue()
    root.addHandler(logging.handlers.QueueHandler(records))
    root.setLevel(logging.INFO)
    listener = logging.handlers.QueueListener(records, writer)
    listener.start()
    return listener


def stop_logging(listener):
    """Write out what is queued and give stderr back (the end of `log_to_stderr`)."""
    if listener is not None:
        listener.stop()
        root = logging.getLogger()
        for handler in [h for h in root.handlers if isinstance(h, logging.handlers.QueueHandler)]:
            root.removeHandler(handler)


# --- Replication: Litestream beside the service -------------------------------------

LITESTREAM_SYNC_SECONDS = 10  # how long --ack-after-replication waits for the replica before a 503


def litestream_binary():
    """The litestream executable: AGENDA_LITESTREAM, else the one `pip install 'agenda[replica]'`
    put beside this Python, else on PATH; None when there is none."""
    candidates = [os.environ.get("AGENDA_LITESTREAM"), str(Path(sysconfig.get_path("scripts")) / "litestream"),
                  str(Path(sys.executable).parent / "litestream"), shutil.which("litestream")]
    return next((path for path in candidates if path and os.access(path, os.X_OK)), None)


def without_password(url):
    """A replica URL fit for a log or a status line: user@host, never user:password@host."""
    return re.sub(r"^(\w+://[^/:@]+):[^/@]*@", r"\1:***@", url)


def replica_url(target):
    """A replica as Litestream names it: a folder becomes file:///its/absolute/path."""
    if re.match(r"(file|sftp|s3|gs|abs|webdav|nats)://", target):
        return target
    return "file://" + str(Path(target).expanduser().resolve())


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a unix socket: Litestream's control socket."""

    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def litestream_call(socket_path, method, path, body=None, timeout=LITESTREAM_SYNC_SECONDS + 5):
    """(status, JSON answer) of a request to Litestream's control socket; OSError when it is not there."""
    connection = UnixHTTPConnection(socket_path, timeout)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body),
                           headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        text = answer.read()
    finally:
        connection.close()
    try:
        return answer.status, json.loads(text or b"{}")
    except ValueError:
        return answer.status, {"error": text.decode("utf-8", "replace")}


def private_folder():
    """A new folder only this user can enter (0700, a random name made atomically), short enough to
    hold a unix socket (108 bytes): Litestream's config and control socket ("Replication")."""
    folder = tempfile.mkdtemp(prefix="agenda-litestream-")
    if len(folder) > 80:  # a long TMPDIR: /tmp holds it instead, just as privately
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="agenda-litestream-", dir="/tmp")
    return folder


class Replicator:
    """Litestream replicating the database while `agenda run` serves ("Replication"): started
    with it, restarted with backoff when it dies (an unreachable replica never stops bookings),
    stopped on shutdown after a last sync; its output goes to the log."""

    def __init__(self, binary, db_path, url, key_path=None, host_key=None, sync_interval="1s"):
        self.binary, self.db_path, self.url = binary, str(Path(db_path).resolve()), replica_url(url)
        self.folder = private_folder()  # the config names a key; the socket answers /sync
        self.socket_path = str(Path(self.folder) / "control.sock")
        self.config = Path(self.folder) / "litestream.yml"
        replica = {"url": self.url, "sync-interval": sync_interval, **({"key-path": key_path} if key_path else {}),
                   **({"host-key": host_key} if host_key else {})}
        self.config.write_text(json.dumps({  # JSON is YAML: no YAML library needed
            "socket": {"enabled": True, "path": self.socket_path},
            "dbs": [{"path": self.db_path, "replica": replica}]}), encoding="utf-8")
        os.chmod(self.config, 0o600)
        self.process, self.stopping, self.thread = None, threading.Event(), None

    def start(self):
        self.thread = threading.Thread(target=self.supervise, name="litestream", daemon=True)
        self.thread.start()

    def supervise(self, backoff=1.0):
        while not self.stopping.is_set():
            started = time.monotonic()
            self.process = subprocess.Popen([self.binary, "replicate", "-config", str(self.config)],
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                            errors="replace")
            log.info("litestream started (pid %s), replicating to %s", self.process.pid, without_password(self.url))
            log_litestream(self.process.stdout)
            code = self.process.wait()
            if self.stopping.is_set():
                return
            backoff = 1.0 if time.monotonic() - started > 60 else min(backoff * 2, 60.0)
            log.warning("litestream stopped (exit %s); bookings go on; restarting it in %.0f s", code, backoff)
            self.stopping.wait(backoff)

    def stop(self, timeout=30):
        """Stop Litestream: on SIGTERM it ships what it has not yet shipped, then exits."""
        self.stopping.set()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.thread is not None:
            self.thread.join(timeout=5)
        shutil.rmtree(self.folder, ignore_errors=True)

    def sync(self):
        """Wait until everything committed so far is in the replica; ClinicError 503 when it cannot be."""
        try:
            status, answer = litestream_call(self.socket_path, "POST", "/sync", {
                "path": self.db_path, "wait": True, "timeout": LITESTREAM_SYNC_SECONDS})
        except OSError as error:
            status, answer = 0, {"error": str(error)}
        if status != 200:
            log.warning("request %s: not acknowledged: the replica did not confirm it (%s)", request_id(),
                        answer.get("error", status))
            raise ClinicError(503, "SERVICE_UNAVAILABLE", "saved here but not yet in the replica; retry: a "
                                                         "retried change is not made twice", requestId=request_id())


def log_litestream(stream):
    """Litestream's output into the log, its warnings and errors as warnings."""
    for line in stream:
        text = re.sub(r"^time=\S+ ", "", line.rstrip())
        log.log(logging.WARNING if re.search(r"level=(WARN|ERROR)", text) else logging.INFO, "litestream: %s", text)


def replica_position(socket_path, db_path, now):
    """What `agenda status` says of the replica: its transaction id and how long since the last
    shipment, from the running Litestream; or why it cannot say."""
    try:
        _, listed = litestream_call(socket_path, "GET", "/list", timeout=2)
        _, txid = litestream_call(socket_path, "GET", "/txid?" + urllib.parse.urlencode({"path": db_path}),
                                  timeout=2)
    except OSError:
        return "Litestream is not running (`agenda run --replica` starts it)"
    entry = next((db for db in listed.get("databases", []) if db.get("path") == db_path), {})
    last = entry.get("last_sync_at")
    if not last:
        return f"transaction {txid.get('txid', '?')}; nothing shipped yet since Litestream started"
    behind = (now - dt.datetime.fromisoformat(last.replace("Z", "+00:00"))).total_seconds()
    return f"transaction {txid.get('txid', '?')}; last shipped {behind:.0f} s ago"


# --- Catalogs and imports -----------------------------------------------------------

CATALOG_COLUMNS = ("kind", "id", "name", "speciality", "center", "insurances", "days", "hours",
                   "slot_minutes", "date_from", "date_to")
WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6,  # and in Spanish:
            "lun": 0, "mar": 1, "mie": 2, "mié": 2, "jue": 3, "vie": 4, "sab": 5, "sáb": 5, "dom": 6,
            "lunes": 0, "martes": 1, "miercoles": 2, "miércoles": 2, "jueves": 3, "viernes": 4, "sabado": 5,
            "sábado": 5, "domingo": 6}
CATALOG_TABLES = {  # what a seed may change, in the order a snapshot reads it
    "centers": "SELECT id, name FROM centers ORDER BY id",
    "specialities": "SELECT id, name FROM specialities ORDER BY id",
    "insurances": "SELECT id, name FROM insurances ORDER BY id",
    "doctors": "SELECT id, name, speciality_id FROM doctors ORDER BY id",
    "doctor_insurances": "SELECT doctor_id, insurance_id FROM doctor_insurances ORDER BY 1, 2",
    "schedules": "SELECT doctor_id, center_id, weekday, start_time, end_time, slot_minutes FROM schedules"
                 " ORDER BY 1, 2, 3, 4",
    "closures": "SELECT doctor_id, center_id, date_from, date_to, start_time, end_time, reason"
                " FROM closures ORDER BY 1, 2, 3, 4, 5",
}


CATALOG_NOUNS = {"centers": "center", "specialities": "speciality", "insurances": "insurance", "doctors": "doctor",
                 "doctor_insurances": "doctor insurance", "schedules": "schedule", "closures": "closure"}


class SeedError(Exception):
    """A catalog file that cannot be applied; `problems` are (line, message) pairs."""

    def __init__(self, problems):
        self.problems = sorted(problems)
        super().__init__("\n".join(f"line {line}: {message}" for line, message in self.problems))


class _NothingChanged(Exception):
    pass


def parse_days(text):
    days = set()
    for part in re.split(r"[;\s]+", text.strip().lower()):
        if not part:
            continue
        first, _, last = part.partition("-")
        if first not in WEEKDAYS or (last and last not in WEEKDAYS):
            raise ValueError(f"days: {part!r} is not a weekday (mon, tue, ... or ranges like mon-fri)")
        start, stop = WEEKDAYS[first], WEEKDAYS[last or first]
        if stop < start:
            raise ValueError(f"days: {part!r} runs backwards")
        days.update(range(start, stop + 1))
    if not days:
        raise ValueError("days is required (like mon-fri or mon;wed;fri)")
    return sorted(days)


def parse_hours(text, required=True):
    ranges = []
    for part in re.split(r"[;\s]+", text.strip()):
        if not part:
            continue
        start, sep, end = part.partition("-")
        try:
            start, end = parse_time(start, "hours"), parse_time(end, "hours")
        except ClinicError:
            sep = ""
        if not sep:
            raise ValueError(f"hours: {part!r} is not a range like 09:00-14:00")
        if end <= start:
            raise ValueError(f"hours: {part!r} ends before it starts")
        ranges.append((start, end))
    if required and not ranges:
        raise ValueError("hours is required (like 09:00-14:00;16:00-19:00)")
    return ranges


def parse_slot_minutes(text):
    if not text:
        return 15
    if not text.isdigit() or not 5 <= int(text) <= 480:
        raise ValueError(f"slot_minutes: {text!r} must be a whole number of minutes from 5 to 480")
    return int(text)


def read_catalog_file(path):
    """[(line number, row dict), ...] of a "Catalog file" CSV; columns by name, extra columns ignored."""
    try:
        return read_catalog_text(Path(path).read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise SeedError([(1, "the file is not UTF-8: save it as 'CSV UTF-8'")]) from None


CSV_SEPARATORS = {",": "','", ";": "';'", "\t": "a tab"}


def read_catalog_text(text):
    """read_catalog_file's rows from the text of the file. The separator is the header's: ','
    or ';' (a Spanish spreadsheet's CSV) or a tab; a cell holding ';' lists is then quoted."""
    separator = max(CSV_SEPARATORS, key=text.split("\n", 1)[0].count)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=separator)
    found = [name.strip().lower() for name in reader.fieldnames or []]
    if "kind" not in found:
        raise SeedError([(1, f"the header row must name the columns {','.join(CATALOG_COLUMNS)}; it was read "
                             f"with {CSV_SEPARATORS[separator]} as the separator and has the columns "
                             f"{found or 'none'}")])
    rows = []
    for row in reader:
        clean = {(key or "").strip().lower(): (value or "").strip()
                 for key, value in row.items() if isinstance(value, str) or value is None}
        if any(clean.values()):
            rows.append((reader.line_num, clean))
    return rows


def _snapshot(conn):
    return {table: [tuple(row) for row in conn.execute(sql)] for table, sql in CATALOG_TABLES.items()}


def parse_catalog(rows):
    """Read catalog rows into what seed_catalogs applies; problems are (line, message)."""
    problems = []
    simple = {"center": {}, "speciality": {}, "insurance": {}}
    doctors, closures = {}, []
    for line, row in rows:
        kind = row.get("kind", "").lower()
        try:
            if kind in simple:
                if not row.get("id") or not row.get("name"):
                    raise ValueError(f"a {kind} row needs id and name")
                simple[kind][row["id"]] = row["name"]
            elif kind == "doctor":
                if not row.get("id") or not row.get("name") or not row.get("speciality"):
                    raise ValueError("a doctor row needs id, name and speciality")
                insurances = {item.strip() for item in row.get("insurances", "").split(";") if item.strip()}
                entry = {"line": line, "name": row["name"], "speciality": row["speciality"],
                         "center": row.get("center") or None, "insurances": tuple(sorted(insurances)),
                         "days": parse_days(row.get("days", "")), "hours": parse_hours(row.get("hours", "")),
                         "slot_minutes": parse_slot_minutes(row.get("slot_minutes", ""))}
                doctors.setdefault(row["id"], []).append(entry)
            elif kind == "closed":
                if not row.get("date_from"):
                    raise ValueError("a closed row needs date_from (DD/MM/YYYY)")
                first = parse_date(row["date_from"], "date_from")
                last = parse_date(row["date_to"], "date_to") if row.get("date_to") else first
                if last < first:
                    raise ValueError("date_to is before date_from")
                for start, end in parse_hours(row.get("hours", ""), required=False) or [(None, None)]:
                    closures.append((line, row.get("id") or None, row.get("center") or None,
                                     first.isoformat(), last.isoformat(), start, end, row.get("name", "")))
            else:
                raise ValueError(f"kind must be one of center, speciality, insurance, doctor, closed;"
                                 f" got {row.get('kind', '')!r}")
        except ClinicError as error:
            problems.append((line, error.message))
        except ValueError as error:
            problems.append((line, str(error)))
    for doctor_id, entries in doctors.items():
        for field in ("name", "speciality", "insurances"):
            if len({entry[field] for entry in entries}) > 1:
                problems.append((entries[-1]["line"],
                                 f"doctor {doctor_id}: {field} differs from line {entries[0]['line']}"))
    return simple, doctors, closures, problems


def _exists(conn, table, key):
    return conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (key,)).fetchone() is not None


def _apply_doctor(conn, doctor_id, entries):
    """Upsert one doctor and replace their hours at the centers named; returns problems."""
    first = entries[0]
    problems = []
    if not _exists(conn, "specialities", first["speciality"]):
        problems.append((first["line"], f"speciality {first['speciality']!r} is not in the catalog"))
    for insurance_id in first["insurances"]:
        if not _exists(conn, "insurances", insurance_id):
            problems.append((first["line"], f"insurance {insurance_id!r} is not in the catalog"))
    for entry in entries:
        if entry["center"] and not _exists(conn, "centers", entry["center"]):
            problems.append((entry["line"], f"center {entry['center']!r} is not in the catalog"))
    if problems:
        return problems
    conn.execute("INSERT INTO doctors (id, name, speciality_id) VALUES (?, ?, ?)"
                 " ON CONFLICT (id) DO UPDATE SET name = excluded.name, speciality_id = excluded.speciality_id",
                 (doctor_id, first["name"], first["speciality"]))
    conn.execute("DELETE FROM doctor_insurances WHERE doctor_id = ?", (doctor_id,))
    conn.executemany("INSERT INTO doctor_insurances (doctor_id, insurance_id) VALUES (?, ?)",
                     [(doctor_id, insurance_id) for insurance_id in first["insurances"]])
    for center in {entry["center"] for entry in entries}:
        conn.execute("DELETE FROM schedules WHERE doctor_id = ? AND center_id IS ?", (doctor_id, center))
    for entry in entries:
        conn.executemany(
            "INSERT INTO schedules (doctor_id, center_id, weekday, start_time, end_time, slot_minutes)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(doctor_id, entry["center"], weekday, start, end, entry["slot_minutes"])
             for weekday in entry["days"] for start, end in entry["hours"]])
    overlap = conn.execute(
        "SELECT a.weekday, a.start_time, a.end_time, b.start_time, b.end_time"
        " FROM schedules a JOIN schedules b ON a.doctor_id = b.doctor_id AND a.weekday = b.weekday"
        " AND a.id < b.id AND a.start_time < b.end_time AND b.start_time < a.end_time"
        " WHERE a.doctor_id = ? LIMIT 1", (doctor_id,)).fetchone()
    if overlap:
        day = next(name for name, number in WEEKDAYS.items() if number == overlap[0])
        problems.append((first["line"], f"doctor {doctor_id}: hours {overlap[1]}-{overlap[2]} and "
                                        f"{overlap[3]}-{overlap[4]} overlap on {day}"))
    return problems


def _apply_closure(conn, line, doctor_id, center_id, first, last, start, end, reason):
    """Add a closure, or update the reason of the same one; returns problems."""
    if doctor_id and not _exists(conn, "doctors", doctor_id):
        return [(line, f"doctor {doctor_id!r} is not in the catalog")]
    if center_id and not _exists(conn, "centers", center_id):
        return [(line, f"center {center_id!r} is not in the catalog")]
    same = conn.execute("SELECT id FROM closures WHERE doctor_id IS ? AND center_id IS ? AND date_from = ?"
                        " AND date_to = ? AND start_time IS ? AND end_time IS ?",
                        (doctor_id, center_id, first, last, start, end)).fetchone()
    if same:
        conn.execute("UPDATE closures SET reason = ? WHERE id = ?", (reason, same["id"]))
    else:
        conn.execute("INSERT INTO closures (doctor_id, center_id, date_from, date_to, start_time, end_time, reason)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?)", (doctor_id, center_id, first, last, start, end, reason))
    return []


def seed_catalogs(conn, rows, *, at, source="cli"):
    """Apply catalog rows in one transaction: all or nothing ("Catalog file").

    References are checked against the database inside the transaction even when the
    file already has problems, so one run reports every bad line. Returns a summary;
    `changed` is False when the file held nothing new (the transaction is then rolled
    back and no event is recorded).
    """
    simple, doctors, closures, problems = parse_catalog(rows)
    try:
        with transaction(conn):
            before = _snapshot(conn)
            for kind, table in (("center", "centers"), ("speciality", "specialities"), ("insurance", "insurances")):
                conn.executemany(f"INSERT INTO {table} (id, name) VALUES (?, ?)"
                                 " ON CONFLICT (id) DO UPDATE SET name = excluded.name", simple[kind].items())
            has_centers = conn.execute("SELECT 1 FROM centers LIMIT 1").fetchone() is not None
            for doctor_id, entries in doctors.items():
                problems.extend(_apply_doctor(conn, doctor_id, entries))
                problems.extend((entry["line"], f"doctor {doctor_id}: center is required when the clinic has centers")
                                for entry in entries if has_centers and entry["center"] is None)
            for closure in closures:
                problems.extend(_apply_closure(conn, *closure))
            if problems:
                raise SeedError(problems)
            after = _snapshot(conn)
            summary = {table: len(table_rows) for table, table_rows in after.items()}
            if after == before:
                raise _NothingChanged()
            record_event(conn, at, source, "catalog.seeded", "catalog", None, after=summary)
    except _NothingChanged:
        return {"changed": False, **summary}
    return {"changed": True, **summary}


# --- Patient import -----------------------------------------------------------------

PATIENT_COLUMN_NAMES = {  # a header, lower case without spaces, dashes or underscores: our field
    "name": "name", "nombre": "name", "surname": "surname", "surnames": "surname", "apellidos": "surname",
    "birthdate": "birthDate", "dateofbirth": "birthDate", "fechanacimiento": "birthDate",
    "fechadenacimiento": "birthDate", "nif": "nif", "dni": "nif", "nie": "nif",
    "phone": "phone", "telephone": "phone", "telefono": "phone", "teléfono": "phone", "movil": "phone",
    "móvil": "phone",
}


class PatientFileError(Exception):
    """A patient file that cannot be read at all (not one bad row: those are listed)."""


def decode_text_file(raw):
    """Text from a CSV exported by another system: UTF-8 (with or without BOM), else
    Windows-1252, else Latin-1, which reads any byte."""
    for encoding in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            return raw.decode(encoding), encoding
        except UnicodeDecodeError:
            continue


def read_patient_file(path):
    """[(line, {field: text})] from a patients CSV with a header (',' ';' or tab separated)."""
    text, _ = decode_text_file(Path(path).read_bytes())
    if not text.strip():
        raise PatientFileError("the file is empty; it needs a header row: name,surname,birthDate,nif,phone")
    try:
        dialect = csv.Sniffer().sniff(text.split("\n", 1)[0], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    header = next(reader)
    fields = [PATIENT_COLUMN_NAMES.get(re.sub(r"[\s_\-]", "", name).lower()) for name in header]
    missing = [name for name in ("name", "nif") if name not in fields]
    if missing:
        raise PatientFileError(f"the header has no {' and no '.join(missing)} column; it reads {header}; "
                           "name it name,surname,birthDate,nif,phone")
    rows = []
    for values in reader:
        if any(value.strip() for value in values):
            rows.append((reader.line_num, {field: value for field, value in zip(fields, values) if field}))
    return rows


def plan_patient_import(conn, rows, today):
    """Check every row as POST /patients would ("Patients"), against the file and the database.

    Returns (patients to insert, problems, already present): problems are
    "line N: why" texts; a NIF already in the agenda is reported, never doubled.
    """
    known = dict(conn.execute("SELECT nif, id FROM patients"))
    first_line_of = {}
    patients, problems, present = [], [], []
    for line, fields in rows:
        try:
            patient = patient_fields(fields, today)
        except ClinicError as error:
            problems.append(f"line {line}: {error.message}")
            continue
        nif = patient["nif"]
        if nif in known:
            present.append(f"line {line}: already in the agenda as patient {known[nif]}, not imported")
        elif nif in first_line_of:
            problems.append(f"line {line}: the same nif as line {first_line_of[nif]}")
        else:
            first_line_of[nif] = line
            patients.append(patient)
    return patients, problems, present


# --- The command line ------------------------------------------------------------

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def db_option(function):
    """--db: the SQLite file, from AGENDA_DB too."""
    return click.option("--db", "db_path", envvar="AGENDA_DB", default="agenda.db", show_default=True,
                        type=click.Path(dir_okay=False), help="The SQLite file [env: AGENDA_DB].")(function)


def rules_options(function):
    """--min-notice and --horizon, as `agenda run` takes them, so a command books by the same rules."""
    function = click.option("--min-notice", default=60, show_default=True, type=click.IntRange(0, None),
                            envvar="AGENDA_MIN_NOTICE", help="Minutes between now and the first slot offered.")(function)
    return click.option("--horizon", default=90, show_default=True, type=click.IntRange(1, None),
                        envvar="AGENDA_HORIZON", help="Days ahead that may be booked.")(function)


def tz_option(function):
    return click.option("--tz", default=DEFAULT_TZ, show_default=True, envvar="AGENDA_TZ",
                        help="The clinic's time zone, for 'today' and 'now' [env: AGENDA_TZ].")(function)


def cli_zone(tz):
    """The clinic's ZoneInfo, or a ClickException naming a good one."""
    try:
        return clinic_zone(tz)
    except ValueError as error:
        raise click.ClickException(str(error)) from None


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="agenda", help="Show the version and exit.")
def cli():
    """Agenda: a small clinic's appointment agenda, served to a voice agent over HTTP.

    Every option may also come from an AGENDA_* environment variable (see each
    command's -h). A first run, on the demo clinic:

    \b
    Example:
        agenda seed seed/catalogs.csv --db clinic.db
        agenda secret set --db clinic.db
        agenda run --db clinic.db
    """


@cli.command()
@db_option
@click.argument("file", type=click.Path(dir_okay=False), required=False)
@click.option("--demo", is_flag=True, help="Load the demo clinic shipped with agenda instead of a FILE.")
def seed(db_path, file, demo):
    """Load centers, specialities, insurances, doctors' hours and closures from a CSV.

    The file (UTF-8, header row, ',' or ';' separated) is applied in one transaction:
    every error is reported with its line number and nothing changes; loading the same
    file again changes nothing more. Columns: kind,id,name,speciality,center,insurances,
    days,hours,slot_minutes,date_from,date_to (see the README). Days may be written in
    English or Spanish (mon-fri, lun-vie, lunes;miércoles).

    Example:

    \b
        agenda seed seed/catalogs.csv --db clinic.db
    """
    if demo == bool(file):
        raise click.ClickException("give the catalog CSV to load, or --demo for the demo clinic (not both)")
    if file and not Path(file).is_file():
        raise click.ClickException(f"{file}: no such file; give the path of the catalog CSV")
    file = file or "the demo clinic"
    try:
        rows = read_catalog_text(read_data_file(DEMO_CATALOGS).decode("utf-8-sig")) if demo else read_catalog_file(file)
        conn = open_database(db_path)
    except SeedError as error:
        raise click.ClickException(f"{file}: nothing was loaded.\n{error}") from None
    except (sqlite3.Error, OSError, RuntimeError) as error:
        raise click.ClickException(f"{db_path}: cannot open the database: {error}") from None
    try:
        summary = seed_catalogs(conn, rows, at=dt.datetime.now(dt.timezone.utc))
    except SeedError as error:
        raise click.ClickException(f"{file}: nothing was loaded.\n{error}") from None
    finally:
        conn.close()
    counts = ", ".join(plural(summary[table], noun) for table, noun in CATALOG_NOUNS.items())
    state = "loaded" if summary["changed"] else "already up to date, nothing changed"
    click.echo(f"{file}: {state}. {db_path} now holds {counts}.")


def cli_now(ctx):
    """Now, from the clock a test put in the context object, else the real one ("Clinic time")."""
    clock = (ctx.obj or {}).get("now")
    return clock() if clock else dt.datetime.now(dt.timezone.utc)


def existing_database(db_path):
    """The agenda database at db_path, which must exist: a typo must not make an empty one."""
    if not Path(db_path).is_file():
        raise click.ClickException(f"{db_path}: no such database; give its path with --db or AGENDA_DB")
    try:
        return open_database(db_path)
    except (sqlite3.Error, OSError, RuntimeError) as error:
        raise click.ClickException(f"{db_path}: cannot open the database: {error}") from None


def human_size(size):
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024


def describe_counts(counts):
    return (f"{plural(counts['appointments'], 'appointment')} ({counts['live_appointments']:,} not cancelled), "
            f"{plural(counts['patients'], 'patient')}")


def secret_file_option(function):
    return click.option(
        "--secret-file", envvar="AGENDA_SECRET_FILE", default=None, type=click.Path(dir_okay=False),
        help="Where `agenda secret set` keeps the secret [env: AGENDA_SECRET_FILE; "
             "default: the database's name with .secret].")(function)


def secret_file_path(db_path, secret_file):
    return Path(secret_file) if secret_file else Path(db_path).with_suffix(".secret")


def read_secret_file(path):
    """The stored secret, refused when others may read the file."""
    mode = path.stat().st_mode
    if mode & 0o077:
        raise click.ClickException(f"{path} can be read by others (mode {mode & 0o777:o}); "
                                   f"run: chmod 600 {path}")
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise click.ClickException(f"{path} is empty; store the secret with: agenda secret set")
    return value


@cli.command()
@db_option
@click.option("--secret", envvar="AGENDA_SECRET", default=None,
              help="The caller's shared secret [env: AGENDA_SECRET]; better: `agenda secret set`.")
@secret_file_option
@click.option("--insecure-no-signature", is_flag=True,
              help="Development only: serve without checking signatures.")
@click.option("--host", default="127.0.0.1", show_default=True, envvar="AGENDA_HOST",
              help="Address to listen on; keep 127.0.0.1 behind a reverse proxy.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), envvar="AGENDA_PORT",
              help="Port to listen on (0: any free port, logged at start).")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(1, 64), envvar="AGENDA_THREADS",
              help="waitress worker threads, one SQLite connection each. Python runs one at a time, "
                   "so more only pass it between them; 2 lets short requests pass a long list.")
@click.option("--trusted-proxy", default=None, envvar="AGENDA_TRUSTED_PROXY",
              help="Address of the reverse proxy whose forwarding headers to trust (e.g. 127.0.0.1).")
@click.option("--trusted-proxy-headers", default="x-forwarded-for x-forwarded-proto", show_default=True,
              envvar="AGENDA_TRUSTED_PROXY_HEADERS", help="Which of the proxy's headers to trust.")
@click.option("--channel-timeout", default=60, show_default=True, type=click.IntRange(1, 3600),
              envvar="AGENDA_CHANNEL_TIMEOUT", help="Seconds before an idle connection is closed.")
@tz_option
@click.option("--signature-scheme", type=click.Choice(SIGNATURE_SCHEMES), default="request", show_default=True,
              envvar="AGENDA_SIGNATURE_SCHEME",
              help="What the caller signs: the whole request; only the body (weaker: one signature of an "
                   "empty body opens every GET and DELETE); or either, while setting up an integration.")
@click.option("--min-notice", default=60, show_default=True, type=click.IntRange(0, None),
              envvar="AGENDA_MIN_NOTICE", help="Minutes between now and the first slot offered.")
@click.option("--horizon", default=90, show_default=True, type=click.IntRange(1, None),
              envvar="AGENDA_HORIZON", help="Days ahead that may be booked.")
@click.option("--reminder-policy", type=click.Choice(REMINDER_POLICIES), default="flag", show_default=True,
              envvar="AGENDA_REMINDER_POLICY",
              help="What closing a reminder day does to unconfirmed appointments.")
@click.option("--replica", default=None, envvar="AGENDA_REPLICA",
              help="Replicate continuously with Litestream to a folder, file://, sftp://user@host/path or "
                   "s3://bucket/path [env: AGENDA_REPLICA].")
@click.option("--replica-key", default=None, envvar="AGENDA_REPLICA_KEY", type=click.Path(dir_okay=False),
              help="The SSH key for an sftp:// replica [env: AGENDA_REPLICA_KEY].")
@click.option("--replica-host-key", default=None, envvar="AGENDA_REPLICA_HOST_KEY",
              help="The sftp:// server's public host key, as ssh-keyscan prints it, so that no other machine "
                   "can pose as it [env: AGENDA_REPLICA_HOST_KEY].")
@click.option("--ack-after-replication", is_flag=True, envvar="AGENDA_ACK_AFTER_REPLICATION",
              help="Answer a change only once the replica holds it (503 when it cannot be reached).")
@click.pass_context
def run(ctx, db_path, secret, secret_file, insecure_no_signature, host, port, threads, trusted_proxy,
        trusted_proxy_headers, channel_timeout, tz, signature_scheme, min_notice, horizon, reminder_policy,
        replica, replica_key, replica_host_key, ack_after_replication):
    """Serve the API and the staff desk with waitress (127.0.0.1:8080 unless told otherwise).

    The secret comes from AGENDA_SECRET, else from the file `agenda secret set`
    wrote. Refuses to start without one, unless --insecure-no-signature is given
    for development. Logs one line per request (never a query string, NIF, phone
    or name) and stops cleanly on SIGTERM or Ctrl-C. With --replica, Litestream
    copies every change off the machine as it happens (docs/replication.md).

    Example:

    \b
        agenda secret set --db clinic.db && agenda run --db clinic.db --replica /mnt/nas/agenda
    """
    if not Path(db_path).is_file():
        raise click.ClickException(f"{db_path}: no such database; create it with `agenda seed CATALOGS.csv --db "
                                   f"{db_path}` (or `agenda seed --demo`), or give its path with --db or AGENDA_DB")
    if ack_after_replication and not replica:
        raise click.ClickException("--ack-after-replication waits for a replica: give --replica URL too")
    secret = secret_to_serve(db_path, secret, secret_file, insecure_no_signature, signature_scheme)
    settings = {"tz": tz, "signature_scheme": signature_scheme, "min_notice_minutes": min_notice,
                "horizon_days": horizon, "reminder_policy": reminder_policy}
    serve = (ctx.obj or {}).get("serve") or serve_until_stopped
    listener = log_to_stderr()
    # waitress warns "Task queue depth is N" for every request that waits for a free thread;
    # the access log's durations say the same, once.
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    replicator = None
    try:
        replicator = start_replication(db_path, replica, replica_key, replica_host_key) if replica else None
        try:
            app = create_app(db_path, secret, insecure=insecure_no_signature, **settings,
                             after_write=replicator.sync if ack_after_replication else None)
        except (ValueError, RuntimeError, sqlite3.Error, OSError) as error:
            raise click.ClickException(f"cannot start: {error}") from None
        if not app.clinic.conn().execute("SELECT 1 FROM doctors LIMIT 1").fetchone():
            log.warning("%s has no doctors: no slot can be offered; load the catalogs with `agenda seed`", db_path)
        try:
            serve(app, on_listening=lambda url: click.echo(f"Agenda {__version__} serving {db_path} on {url}",
                                                           err=True),
                  **waitress_options(app, host, port, threads, channel_timeout, trusted_proxy, trusted_proxy_headers))
        except OSError as error:
            raise click.ClickException(f"cannot listen on {host}:{port}: {error}") from None
        finally:
            app.clinic.db.close()
    finally:
        if replicator is not None:
            replicator.stop()
        stop_logging(listener)


def waitress_options(app, host, port, threads, channel_timeout, trusted_proxy, trusted_proxy_headers):
    options = {"host": host, "port": port, "threads": threads, "channel_timeout": channel_timeout,
               # waitress refuses a Content-Length at or over this before reading the body
               "max_request_body_size": app.clinic.settings.max_body_bytes + 1, "ident": "agenda"}
    if trusted_proxy:
        options.update(trusted_proxy=trusted_proxy, trusted_proxy_headers=trusted_proxy_headers,
                       clear_untrusted_proxy_headers=True)
    return options


def start_replication(db_path, replica, key_path, host_key=None):
    """Litestream replicating db_path to `replica` beside the service, noted for `agenda status`."""
    binary = litestream_binary()
    if binary is None:
        raise click.ClickException("--replica needs Litestream: pip install 'agenda[replica]' (or set "
                                   "AGENDA_LITESTREAM to the litestream executable)")
    replicator = Replicator(binary, db_path, replica, key_path, host_key)
    conn = connect(db_path)
    try:
        with transaction(conn):
            remember(conn, "replica", {"url": without_password(replicator.url), "socket": replicator.socket_path},
                     dt.datetime.now(dt.timezone.utc))
    finally:
        conn.close()
    replicator.start()
    return replicator


def secret_to_serve(db_path, secret, secret_file, insecure, scheme):
    """The secret `run` serves with (the option, else the stored file), or None in development
    mode; a ClickException saying how to set one; a warning for a weaker scheme."""
    stored = secret_file_path(db_path, secret_file)
    if not secret and stored.is_file():
        secret = read_secret_file(stored)
    if not secret and not insecure:
        raise click.ClickException("no shared secret: run `agenda secret set` (or set AGENDA_SECRET) with the "
                                   "secret shown in the caller's integration settings "
                                   "(--insecure-no-signature for development only)")
    if insecure and not secret:
        click.secho("WARNING: signatures are off. Anyone who reaches this port can read and change the "
                    "agenda. Never use this outside development.", fg="red", bold=True, err=True)
    elif scheme in SCHEME_WARNINGS:
        click.secho(f"WARNING: {SCHEME_WARNINGS[scheme]}.", fg="yellow", bold=True, err=True)
    return secret or None


# Admin commands: backups, the day sheet, patients, the secret, status

@cli.command()
@db_option
@click.argument("dest", type=click.Path())
@click.option("--keep", type=click.IntRange(1, None), default=None,
              help="With a folder as DEST: keep the N newest dated backups and delete older ones.")
@click.pass_context
def backup(ctx, db_path, dest, keep):
    """Copy the database to DEST, safely even while the service runs and writes.

    The copy is made with VACUUM INTO under a temporary name, must pass
    integrity_check, and is then renamed into place with mode 0600 (owner only).
    With a folder as DEST the copy is named after the database and the time
    (clinic-20261121-030000.db), and --keep N deletes all but the N newest of those.

    Example:

    \b
        agenda backup /var/backups/agenda --keep 14 --db /var/lib/agenda/clinic.db
    """
    at = cli_now(ctx)
    target = backup_target(db_path, dest, at)
    if keep and target == Path(dest):
        raise click.ClickException("--keep rotates dated backups in a folder: give a folder as DEST")
    conn = existing_database(db_path)
    try:
        size, counts = backup_database(conn, db_path, target, at)
    except (sqlite3.Error, OSError, ValueError) as error:
        raise click.ClickException(f"no backup was written: {error}") from None
    finally:
        conn.close()
    click.echo(f"Wrote {target} ({human_size(size)}, integrity ok): {describe_counts(counts)}.")
    for old in rotate_backups(db_path, target.parent, keep) if keep else ():
        click.echo(f"Deleted {old} (keeping the {keep} newest).")


@cli.command()
@db_option
@click.argument("src", type=click.Path(dir_okay=False), required=False)
@click.option("--from-replica", "replica", default=None,
              help="Restore from a Litestream replica (a folder, file://, sftp://, s3://) instead of a backup.")
@click.option("--at", "moment", default=None,
              help="With --from-replica: the state at this clinic time, DD/MM/YYYY HH:MM[:SS] (default: the newest).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before replacing the database.")
@tz_option
@click.pass_context
def restore(ctx, db_path, src, replica, moment, yes, tz):
    """Replace the database with the backup SRC, or a replica's state; the current one is kept aside.

    Stop the service first. What is restored must pass integrity_check and be an
    agenda database no newer than this agenda, or nothing changes. The current
    database is renamed to DB.before-restore-YYYYMMDD-HHMMSS, never deleted.

    Example:

    \b
        agenda restore /var/backups/agenda/clinic-20261121-030000.db --db /var/lib/agenda/clinic.db
        agenda restore --from-replica /mnt/nas/agenda --at "24/11/2026 10:15" --db /var/lib/agenda/clinic.db
    """
    if bool(src) == bool(replica) or (moment and not replica):
        raise click.ClickException("give a backup file SRC, or --from-replica URL [--at TIME] (not both)")
    if replica:
        with tempfile.TemporaryDirectory(dir=Path(db_path).resolve().parent, prefix=".replica-") as folder:
            src = fetch_replica(replica, cli_moment(moment, tz) if moment else None, Path(folder) / "replica.db")
            return ctx.invoke(restore, db_path=db_path, src=str(src), yes=yes, tz=tz)
    if not Path(src).is_file():
        raise click.ClickException(f"{src}: no such file; give the path of a backup")
    try:
        version, counts, current_counts = prepare_restore(db_path, src)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    if Path(db_path).is_file() and not yes:
        mine = f"{db_path} ({describe_counts(current_counts)})" if current_counts else db_path
        click.confirm(f"Replace {mine} with {src} ({describe_counts(counts)})?", abort=True)
    try:
        aside = restore_database(db_path, src, version, counts, cli_now(ctx))
    except (sqlite3.Error, OSError, ValueError, RuntimeError) as error:
        raise click.ClickException(f"restore failed: {error}") from None
    click.echo(f"Restored {src} into {db_path}: {describe_counts(counts)}.")
    if aside:
        click.echo(f"The database it replaced is kept as {aside}.")
    click.echo("Start the service again (sudo systemctl start agenda).")


def cli_moment(text, tz):
    """A clinic time, DD/MM/YYYY HH:MM[:SS], as an aware UTC datetime."""
    day_text, _, time_text = text.strip().partition(" ")
    found = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", time_text.strip())
    if not found:
        raise click.ClickException(f"--at {text!r}: write it as DD/MM/YYYY HH:MM, e.g. \"24/11/2026 10:15\"")
    day = cli_date(day_text, "--at")
    local = dt.datetime(day.year, day.month, day.day, int(found[1]), int(found[2]), int(found[3] or 0),
                        tzinfo=cli_zone(tz))
    return local.astimezone(dt.timezone.utc)


def fetch_replica(replica, moment, output):
    """The replica's newest state, or its state at `moment`, restored by Litestream into `output`."""
    binary = litestream_binary()
    if binary is None:
        raise click.ClickException("--from-replica needs Litestream: pip install 'agenda[replica]'")
    command = [binary, "restore", "-o", str(output)]
    if moment is not None:
        command += ["-timestamp", moment.strftime("%Y-%m-%dT%H:%M:%SZ")]
    result = subprocess.run(command + [replica_url(replica)], capture_output=True, text=True, timeout=600)
    if result.returncode != 0 or not output.is_file():
        raise click.ClickException(f"nothing was restored: Litestream could not read {replica}: "
                                   f"{(result.stderr or result.stdout).strip() or 'no output'}")
    os.chmod(output, 0o600)
    return output


STATUS_NAMES = ("booked", "confirmed", "unanswered")
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def cli_clinic(ctx, db_path, tz=DEFAULT_TZ, **rules):
    """The Clinic over an existing database, on the CLI's clock ("Clinic time"); rules: Settings' fields."""
    existing_database(db_path).close()
    try:
        return Clinic(Database(db_path), Settings(tz=tz, **rules), lambda: cli_now(ctx))
    except ValueError as error:
        raise click.ClickException(str(error)) from None


def day_sheet(clinic, day, center_id=None):
    """A day's live appointments, each doctor's together, by time: what `agenda day` prints."""
    try:
        appointments = clinic.appointments_on([day.isoformat()], center_id)
    except ClinicError:
        known = ", ".join(row[0] for row in clinic.conn().execute("SELECT id FROM centers ORDER BY id"))
        raise click.ClickException(f"no center {center_id!r}; the centers are: {known or 'none'}") from None
    return sorted(appointments, key=lambda a: (a["doctorName"], a["doctorId"], a["time"]))


@cli.command()
@db_option
@click.argument("date", required=False)
@click.option("--center", "center_id", default=None, help="Only this center's appointments (its id).")
@click.option("--csv", "as_csv", is_flag=True, help="Comma-separated values, for a spreadsheet.")
@tz_option
@click.pass_context
def day(ctx, db_path, date, center_id, as_csv, tz):
    """The day sheet: each doctor's appointments with time, patient, phone, reason, status.

    DATE as the clinic writes it, DD/MM/YYYY (default: today). Cancelled
    appointments are left out; status is booked, confirmed or unanswered.

    Example:

    \b
        agenda day 23/11/2026 --center CENTRO --csv > monday.csv
    """
    zone = cli_zone(tz)
    try:
        when = parse_date(date, "DATE") if date else cli_now(ctx).astimezone(zone).date()
    except ClinicError:
        raise click.ClickException(f"{date!r} is not a date; write it as DD/MM/YYYY, e.g. 23/11/2026") from None
    clinic = cli_clinic(ctx, db_path, tz)
    try:
        rows = day_sheet(clinic, when, center_id)
    finally:
        clinic.db.close()
    click.echo(day_sheet_csv(rows) if as_csv else day_sheet_text(rows, when, center_id), nl=False)


def end_time(appointment):
    return hhmm(minutes_of(appointment["time"]) + appointment["extraData"]["duration"])


def day_sheet_csv(rows):
    return sheet_csv(["date", "time", "end", "doctor_id", "doctor", "center", "patient", "phone", "reason", "status"],
                     ([row["date"], row["time"], end_time(row), row["doctorId"], row["doctorName"], row["centerRef"],
                       row["patientName"], row["phone"], row["reason"], row["extraData"]["status"]] for row in rows))


def day_sheet_text(rows, when, center_id):
    """The day sheet for a terminal: every value made printable, so each appointment keeps its one line."""
    where = f"center {printable(center_id)}" if center_id else "all centers"
    lines = [f"{WEEKDAY_NAMES[when.weekday()]} {format_date(when)}, {where}: {plural(len(rows), 'appointment')}"]
    width = max((len(printable(row["patientName"])) for row in rows), default=0)
    doctor = None
    for row in rows:
        if row["doctorId"] != doctor:
            doctor = row["doctorId"]
            lines.append(f"\n{printable(row['doctorName'])} ({printable(doctor)})")
        center = f"  [{printable(row['centerRef'])}]" if row["centerRef"] and not center_id else ""
        lines.append(f"  {row['time']}  {printable(row['patientName']):<{width}}  {printable(row['phone']):<13}  "
                     f"{row['extraData']['status']:<10}  {printable(row['reason']) or '-'}{center}")
    return "\n".join(lines) + "\n"


@cli.command("import-patients")
@db_option
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Check and report; write nothing.")
@tz_option
@click.pass_context
def import_patients(ctx, db_path, file, dry_run, tz):
    """Bring in patients from another system's CSV: name,surname,birthDate,nif,phone.

    UTF-8 or Latin-1, with a header row; ',' ';' or tab separated. Every row is
    checked as the API checks a new patient (NIF letter, phone, date). Bad rows are
    listed by line and then nothing is imported: all or nothing. A NIF already in
    the agenda is reported and never doubled.

    Example:

    \b
        agenda import-patients old-system.csv --dry-run && agenda import-patients old-system.csv
    """
    if not Path(file).is_file():
        raise click.ClickException(f"{file}: no such file; give the path of the patients CSV")
    today = cli_now(ctx).astimezone(cli_zone(tz)).date()
    try:
        rows = read_patient_file(file)
    except PatientFileError as error:
        raise click.ClickException(f"{file}: nothing was imported: {error}") from None
    except csv.Error as error:
        raise click.ClickException(f"{file}: nothing was imported: not a readable CSV: {error}") from None
    conn = existing_database(db_path)
    try:
        with transaction(conn):  # BEGIN IMMEDIATE: no NIF can arrive between the check and the insert
            if len(rows) >= 2000:
                with click.progressbar(rows, label=f"Checking {len(rows):,} rows", file=sys.stderr) as bar:
                    patients, problems, present = plan_patient_import(conn, bar, today)
            else:
                patients, problems, present = plan_patient_import(conn, rows, today)
            if not problems and not dry_run:
                at = cli_now(ctx)
                conn.executemany(INSERT_PATIENT, (patient_row(patient, at) for patient in patients))
                record_event(conn, at, "cli", "patients.imported", "patient", None,
                             after={"file": Path(file).name, "imported": len(patients),
                                    "alreadyPresent": len(present)})
    finally:
        conn.close()
    for line in present[:20]:
        click.echo(printable(line))
    if len(present) > 20:
        click.echo(f"... and {len(present) - 20:,} more already in the agenda")
    if problems:
        for line in problems[:50]:
            click.echo(printable(line), err=True)
        if len(problems) > 50:
            click.echo(f"... and {len(problems) - 50:,} more bad rows", err=True)
        raise click.ClickException(f"{file}: {plural(len(problems), 'bad row')}; "
                                   "nothing was imported. Fix them and run the import again.")
    if dry_run:
        click.echo(f"Dry run: {plural(len(patients), 'patient')} would be imported; {len(present):,} already in "
                   "the agenda. Nothing was written.")
    else:
        click.echo(f"Imported {plural(len(patients), 'patient')}; {len(present):,} already in the agenda.")


@cli.group()
def secret():
    """Keep the caller's shared secret in a file only its owner can read.

    Example:

    \b
        agenda secret set --db /var/lib/agenda/clinic.db
    """


@secret.command("set")
@db_option
@secret_file_option
def secret_set(db_path, secret_file):
    """Store the shared secret, typed at a hidden prompt or piped on standard input.

    Never pass the secret as an argument: it would land in the shell's history.
    The file is written with mode 0600; `agenda run` reads it when AGENDA_SECRET
    is not set. Restart the service to use a new secret.

    Example:

    \b
        agenda secret set --db /var/lib/agenda/clinic.db
    """
    stdin = sys.stdin
    if stdin.isatty():
        value = click.prompt("Shared secret (not shown)", hide_input=True, confirmation_prompt=True)
    else:
        value = stdin.readline()
    value = value.strip()
    if not value:
        raise click.ClickException("no secret given; type it at the prompt or pipe it in: "
                                   "agenda secret set < file-holding-the-secret")
    path = secret_file_path(db_path, secret_file)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    temporary.unlink(missing_ok=True)
    create_private_file(temporary)
    try:
        temporary.write_text(value + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise click.ClickException(f"cannot write {path}: {error}") from None
    if len(value) < 16:
        click.echo("Warning: the secret is under 16 characters; a longer one is harder to guess.", err=True)
    click.echo(f"Stored the secret in {path} (mode 600). Restart the service to use it.")


# The desk's twins: every staff action as a command, for scripts and an admin without a browser

@contextmanager
def clinic_at(ctx, db_path, tz=DEFAULT_TZ, **rules):
    """The Clinic over an existing database for one command; a refusal becomes one `Error:` line."""
    clinic = cli_clinic(ctx, db_path, tz, **rules)
    try:
        yield clinic
    except ClinicError as error:
        raise click.ClickException(error.message) from None
    finally:
        clinic.db.close()


def cli_date(text, option):
    try:
        return parse_date(text, option)
    except ClinicError:
        raise click.ClickException(f"{option} {text!r} is not a date; write it as DD/MM/YYYY, e.g. 24/11/2026") from None


def cli_time(text, option):
    try:
        return parse_time(text, option)
    except ClinicError:
        raise click.ClickException(f"{option} {text!r} is not a time; write it as HH:MM, e.g. 09:30") from None


def appointment_line(a):
    """One appointment on one line of a terminal."""
    return printable(f"{a['appointmentId']}: {a['date']} {a['time']} {a['doctorName']} ({a['doctorId']})"
                     f"{' at ' + a['centerRef'] if a['centerRef'] else ''}, {a['patientName']} "
                     f"{a['phone'] or ''}").rstrip()


@cli.command()
@db_option
@click.option("--doctor", "doctor_id", required=True, help="The doctor's id.")
@click.option("--date", "date_text", required=True, help="The day, DD/MM/YYYY.")
@click.option("--time", "time_text", required=True, help="The slot's start, HH:MM.")
@click.option("--patient", "patient_id", default=None, help="The patient's id (or give --nif).")
@click.option("--nif", default=None, help="The patient's NIF, when the id is not at hand.")
@click.option("--center", "center_id", default=None, help="The center (where the doctor works then).")
@click.option("--reason", default=None, help="Why the patient comes.")
@tz_option
@rules_options
@click.pass_context
def book(ctx, db_path, doctor_id, date_text, time_text, patient_id, nif, center_id, reason, tz, min_notice, horizon):
    """Book a free slot for a patient, with the same rules as the API and the desk.

    Example:

    \b
        agenda book --doctor MARTIN --date 24/11/2026 --time 09:30 --nif 12345678Z --reason Revisión
    """
    day, start = cli_date(date_text, "--date"), cli_time(time_text, "--time")
    with clinic_at(ctx, db_path, tz, min_notice_minutes=min_notice, horizon_days=horizon) as clinic:
        if patient_id is None:
            if nif is None:
                raise click.ClickException("give the patient: --patient ID or --nif NIF")
            patient_id = clinic.find_patient(nif)["id"]
        booked = clinic.book(day=day, time_text=start, doctor_id=doctor_id, patient_id=patient_id,
                             center_id=center_id, reason=reason, source="cli")
        click.echo(f"Booked {appointment_line(clinic.appointment(booked))}")


@cli.command()
@db_option
@click.argument("appointment_id")
@click.option("--date", "date_text", required=True, help="The new day, DD/MM/YYYY.")
@click.option("--time", "time_text", required=True, help="The new start, HH:MM.")
@tz_option
@rules_options
@click.pass_context
def move(ctx, db_path, appointment_id, date_text, time_text, tz, min_notice, horizon):
    """Move an appointment to another free slot of its doctor and center; it is no longer confirmed.

    Example:

    \b
        agenda move 123 --date 25/11/2026 --time 10:00
    """
    day, start = cli_date(date_text, "--date"), cli_time(time_text, "--time")
    with clinic_at(ctx, db_path, tz, min_notice_minutes=min_notice, horizon_days=horizon) as clinic:
        clinic.move(appointment_id, day=day, time_text=start, source="cli")
        click.echo(f"Moved {appointment_line(clinic.appointment(appointment_id))}")


@cli.command()
@db_option
@click.argument("appointment_id")
@click.option("--reason", default="cancelled by the clinic", show_default=True, help="Why it is cancelled.")
@tz_option
@click.pass_context
def cancel(ctx, db_path, appointment_id, reason, tz):
    """Cancel an appointment; its slot is free again (nothing is deleted).

    Example:

    \b
        agenda cancel 123 --reason "the patient phoned the front desk"
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        line = appointment_line(clinic.appointment(appointment_id))
        clinic.cancel(appointment_id, reason=reason, source="cli")
        click.echo(f"Cancelled {line}")


@cli.command()
@db_option
@click.argument("appointment_id")
@tz_option
@click.pass_context
def confirm(ctx, db_path, appointment_id, tz):
    """Mark an appointment confirmed (the patient said they will come).

    Example:

    \b
        agenda confirm 123
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        state = clinic.confirm(appointment_id, True, source="cli")
        click.echo(f"{'Already confirmed' if state == 'alreadyConfirmed' else 'Confirmed'} "
                   f"{appointment_line(clinic.appointment(appointment_id))}")


@cli.group()
def closed():
    """Holidays and absences: list, add and remove closures; their slots leave availability at once.

    Example:

    \b
        agenda closed add --from 24/12/2026 --to 26/12/2026 --reason Navidad
    """


@closed.command("list")
@db_option
@tz_option
@click.pass_context
def closed_list(ctx, db_path, tz):
    """The closures from today on: id, who, where, days, hours, reason.

    Example:

    \b
        agenda closed list --db /var/lib/agenda/clinic.db
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        for c in clinic.closures():
            hours = f" {c['start_time']}-{c['end_time']}" if c["start_time"] else ""
            click.echo(printable(f"{c['id']}: {c['doctor_name'] or 'everyone'} at {c['center_id'] or 'every center'}, "
                                 f"{format_date(c['date_from'])} to {format_date(c['date_to'])}{hours}: {c['reason']}"))


@closed.command("add")
@db_option
@click.option("--doctor", "doctor_id", default=None, help="The doctor's id (default: everyone).")
@click.option("--center", "center_id", default=None, help="The center (default: every center).")
@click.option("--from", "first", required=True, help="The first day, DD/MM/YYYY.")
@click.option("--to", "last", default=None, help="The last day (default: the first).")
@click.option("--hours", default=None, help="Only these hours, HH:MM-HH:MM (default: the whole day).")
@click.option("--reason", default="", help="Why: a holiday, a course, an absence.")
@tz_option
@click.pass_context
def closed_add(ctx, db_path, doctor_id, center_id, first, last, hours, reason, tz):
    """Close a doctor or everyone, at a center or all, for days or hours; lists the bookings it covers.

    Example:

    \b
        agenda closed add --doctor MARTIN --from 30/11/2026 --hours 09:00-11:00 --reason Congreso
    """
    start = end = None
    if hours:
        start_text, _, end_text = hours.partition("-")
        start, end = cli_time(start_text, "--hours"), cli_time(end_text, "--hours")
    with clinic_at(ctx, db_path, tz) as clinic:
        added = clinic.add_closure(doctor_id=doctor_id, center_id=center_id, first=cli_date(first, "--from"),
                                   last=cli_date(last, "--to") if last else None, start=start, end=end,
                                   reason=reason, source="cli")
        click.echo(f"Added closure {added['id']}; it covers {plural(len(added['covered']), 'booked appointment')}"
                   f"{': call to rebook' if added['covered'] else '.'}")
        for appointment in added["covered"]:
            click.echo(f"  {appointment_line(appointment)}")


@closed.command("remove")
@db_option
@click.argument("closure_id")
@tz_option
@click.pass_context
def closed_remove(ctx, db_path, closure_id, tz):
    """Remove a closure (one typed on the wrong date): its slots are offered again.

    Example:

    \b
        agenda closed remove 12
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        clinic.remove_closure(closure_id, source="cli")
        click.echo(f"Removed closure {closure_id}.")


@cli.group()
def doctor():
    """Doctors: retire one who leaves (no slot offered from a date on).

    Example:

    \b
        agenda doctor retire RUIZ --from 01/01/2027
    """


@doctor.command("retire")
@db_option
@click.argument("doctor_id")
@click.option("--from", "first", required=True, help="The first day the doctor no longer sees patients.")
@tz_option
@click.pass_context
def doctor_retire(ctx, db_path, doctor_id, first, tz):
    """Offer no slot of DOCTOR_ID from a date on; lists the appointments left after it, to rebook.

    They are never cancelled by this: call each patient and move or cancel it.

    Example:

    \b
        agenda doctor retire RUIZ --from 01/01/2027
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        left = clinic.retire_doctor(doctor_id, cli_date(first, "--from"), source="cli")
        click.echo(f"{doctor_id} offers no slot from {first} on; {plural(len(left), 'appointment')} left to rebook"
                   f"{':' if left else '.'}")
        for appointment in left:
            click.echo(f"  {appointment_line(appointment)}")


@cli.group()
def staff():
    """Reception's accounts for the desk (/desk), apart from the caller's secret.

    Example:

    \b
        agenda staff add ana --db /var/lib/agenda/clinic.db
    """


def new_password():
    """A password from a hidden prompt (twice), or the first line of standard input when it is not a terminal."""
    if sys.stdin.isatty():
        return click.prompt("Password (not shown)", hide_input=True, confirmation_prompt=True)
    try:
        return sys.stdin.readline().rstrip("\n")
    except UnicodeDecodeError:
        raise click.ClickException("the password on standard input is not UTF-8 text") from None


@staff.command("add")
@db_option
@click.argument("name")
@click.pass_context
def staff_add(ctx, db_path, name):
    """Add a staff account; its password from a hidden prompt, or from standard input.

    Example:

    \b
        agenda staff add ana --db /var/lib/agenda/clinic.db
    """
    with clinic_at(ctx, db_path) as clinic:
        clinic.add_staff(name, new_password(), source="cli")
        click.echo(f"Added {name}: they log in at /desk.")


@staff.command("password")
@db_option
@click.argument("name")
@click.pass_context
def staff_password(ctx, db_path, name):
    """Set a new password (it also ends their sessions and lifts a lock).

    Example:

    \b
        agenda staff password ana
    """
    with clinic_at(ctx, db_path) as clinic:
        clinic.set_staff_password(name, new_password(), source="cli")
        click.echo(f"New password set for {name}; their desk sessions are closed.")


@staff.command("remove")
@db_option
@click.argument("name")
@click.pass_context
def staff_remove(ctx, db_path, name):
    """Remove a staff account and end its sessions.

    Example:

    \b
        agenda staff remove ana
    """
    with clinic_at(ctx, db_path) as clinic:
        clinic.remove_staff(name, source="cli")
        click.echo(f"Removed {name}.")


@staff.command("list")
@db_option
@tz_option
@click.pass_context
def staff_list(ctx, db_path, tz):
    """The staff accounts, when each was added, and any lock.

    Example:

    \b
        agenda staff list
    """
    zone = cli_zone(tz)
    with clinic_at(ctx, db_path, tz) as clinic:
        for member in clinic.staff():
            locked = member["locked_until"] and member["locked_until"] > utc_iso(cli_now(ctx))
            click.echo(f"{member['name']}  added {clinic_time(member['created_at'], zone)}"
                       f"{'  locked until ' + clinic_time(member['locked_until'], zone) if locked else ''}")


@cli.group(invoke_without_command=True)
@db_option
@click.option("--replica", default=None, envvar="AGENDA_REPLICA",
              help="The replica to follow: a folder, file://, sftp:// or s3:// [env: AGENDA_REPLICA].")
@click.pass_context
def standby(ctx, db_path, replica):
    """Keep a read-only copy of the agenda following a replica, on a second machine or disk.

    The copy (--db) is rebuilt from the replica when this starts, then kept within a
    second or two of the primary until SIGTERM. Read it, never write it; to take over,
    stop this and run `agenda standby promote`.

    Example:

    \b
        agenda standby --replica sftp://agenda@nas/agenda --db /var/lib/agenda/standby.db
    """
    if ctx.invoked_subcommand is not None:
        return
    if not replica:
        raise click.ClickException("give the replica to follow: --replica URL (or AGENDA_REPLICA)")
    binary = litestream_binary()
    if binary is None:
        raise click.ClickException("standby needs Litestream: pip install 'agenda[replica]'")
    listener = log_to_stderr()
    try:
        follow_replica(binary, replica, Path(db_path).resolve())
    finally:
        stop_logging(listener)


def follow_replica(binary, replica, copy, backoff=1.0):
    """Litestream's follow mode into `copy` until SIGTERM, started afresh (with backoff) if it stops."""
    stopping = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    try:
        while not stopping.is_set():
            for leftover in (copy, *(Path(f"{copy}{suffix}") for suffix in ("-txid", "-wal", "-shm"))):
                Path(leftover).unlink(missing_ok=True)  # follow mode starts from no file
            process = subprocess.Popen([binary, "restore", "-f", "-follow-interval", "1s", "-o", str(copy),
                                        replica_url(replica)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, errors="replace")
            log.info("standby: following %s into %s (litestream pid %s)", replica_url(replica), copy, process.pid)
            threading.Thread(target=log_litestream, args=(process.stdout,), daemon=True).start()
            while process.poll() is None and not stopping.wait(0.5):
                pass
            if stopping.is_set():
                process.terminate()
                process.wait(timeout=30)
                break
            log.warning("standby: litestream stopped (exit %s); starting again in %.0f s", process.returncode, backoff)
            stopping.wait(backoff)
            backoff = min(backoff * 2, 60.0)
    finally:
        signal.signal(signal.SIGTERM, previous)
    log.info("standby stopped")


@standby.command("promote")
@db_option
def standby_promote(db_path):
    """Turn a stopped standby's copy into this machine's agenda, ready to serve and replicate.

    Stop `agenda standby` first. The copy must pass integrity_check; it is brought to
    this agenda's schema, and it stops being a follower. Then start the service with a
    NEW replica path, never the old one.

    Example:

    \b
        agenda standby promote --db /var/lib/agenda/standby.db
    """
    copy = Path(db_path)
    if not copy.is_file():
        raise click.ClickException(f"{db_path}: no such standby copy; give its path with --db")
    try:
        version, counts = check_database_file(copy)
        Path(f"{copy}-txid").unlink(missing_ok=True)
        open_database(copy).close()
    except (ValueError, sqlite3.Error) as error:
        raise click.ClickException(f"{db_path} was not promoted: {error}") from None
    click.echo(f"Promoted {db_path}: {describe_counts(counts)}. Now serve it, replicating to a new place:\n"
               f"  agenda run --db {db_path} --replica NEW_REPLICA")


@cli.command("sign")
@db_option
@click.argument("method")
@click.argument("target")
@click.option("--body", "body_file", type=click.File("rb"), default=None,
              help="The file holding the body exactly as sent ('-': standard input); none for GET and DELETE.")
@click.option("--secret", envvar="AGENDA_SECRET", default=None,
              help="The caller's shared secret [env: AGENDA_SECRET]; else the stored one.")
@secret_file_option
def sign_command(db_path, method, target, body_file, secret, secret_file):
    """Show what each scheme signs for a request, byte for byte, and its X-Signature.

    TARGET is the path and query exactly as sent, not the full URL. The signed
    bytes are printed escaped, so a stray newline shows as \\n. The secret comes from
    the same places `agenda run` reads it, and is never printed.

    Example:

    \b
        agenda sign POST /patients --body patient.json --db /var/lib/agenda/clinic.db
    """
    secret = secret or (read_secret_file(secret_file_path(db_path, secret_file))
                        if secret_file_path(db_path, secret_file).is_file() else None)
    if not secret:
        raise click.ClickException("no shared secret: set AGENDA_SECRET or run `agenda secret set` first")
    body = body_file.read() if body_file else b""
    for warning in signing_warnings(method, target, body):
        click.echo(f"Warning: {warning}", err=True)
    messages = signed_messages(method.upper(), target, body)
    for scheme in SIGNED_SCHEMES:
        message = messages[scheme]
        digest = sign(secret, message)
        click.echo(f"{scheme} scheme signs {plural(len(message), 'byte')}:\n  {repr(message)[2:-1] or '(nothing)'}")
        click.echo(f"  hex     {digest.hex()}\n  base64  {base64.b64encode(digest).decode()}")


def signing_warnings(method, target, body):
    """The integrators' usual mistakes, seen in what they are about to sign."""
    if re.match(r"[a-z]+://", target, re.IGNORECASE):
        yield "TARGET is a full URL; the request scheme signs the path and query only, as sent"
    if not target.startswith("/"):
        yield "TARGET should start with '/'"
    if re.search(r"[^\x21-\x7e]", target):
        yield ("TARGET holds a space or a character that cannot go on the wire as it is: sign the path and "
               "query exactly as the request sends them, percent-encoded (Ib%C3%A1%C3%B1ez, not Ibáñez)")
    if body.endswith(b"\n"):
        yield "the body ends with a newline: sign it only if the request sends it too"
    if body and method.upper() in BODYLESS_METHODS:
        yield f"a {method.upper()} carries no body"


def signature_advice(seen, tz):
    """What `agenda status` says of the schemes the caller signed with ({scheme: (count, last UTC time)}):
    never the weaker scheme when the caller uses the stronger one ("The caller's scheme")."""
    request_count, request_last = seen.get("request", (0, None))
    body_count, body_last = seen.get("body", (0, None))
    if request_last:
        also = f"; {plural(body_count, 'request')} signed the body alone" if body_count else ""
        return (f"the caller signs whole requests ({plural(request_count, 'request')}, last "
                f"{clinic_time(request_last, tz)}{also}): the default scheme, `request`, the stronger one; keep it")
    if body_last:
        return (f"the caller signs only bodies ({plural(body_count, 'request')}, last {clinic_time(body_last, tz)}): "
                "under --signature-scheme body one captured signature of an empty body opens every GET and "
                "DELETE (docs/security.md); ask the caller to sign requests")
    return "no signed request seen yet"


def clinic_time(utc_text, tz):
    """A stored UTC time as the clinic reads it: DD/MM/YYYY HH:MM, local."""
    moment = dt.datetime.fromisoformat(utc_text).astimezone(tz)
    return f"{format_date(moment.date())} {moment:%H:%M}"


def signatures_seen(conn):
    """{scheme: (signed requests counted, last time seen in UTC)} from what `run` noted."""
    seen = {}
    for scheme in SIGNED_SCHEMES:
        value, at = recall(conn, f"signature_scheme.{scheme}")
        if at:
            seen[scheme] = (value.get("count", 1) if isinstance(value, dict) else 1, at)
    legacy, legacy_at = recall(conn, "signature_scheme")  # the one key older versions kept
    if legacy in SIGNED_SCHEMES and legacy not in seen:
        seen[legacy] = (1, legacy_at)
    return seen


def status_lines(conn, db_path, now, tz):
    """(label, text) of what `agenda status` shows of the database."""
    counts = database_counts(conn)
    by_status = dict(conn.execute("SELECT status, count(*) FROM appointments GROUP BY status").fetchall())
    cycle = conn.execute("SELECT * FROM reminder_cycles ORDER BY closed_at DESC, id DESC LIMIT 1").fetchone()
    last_backup, backup_at = recall(conn, "last_backup")
    size = sum(Path(f"{db_path}{suffix}").stat().st_size for suffix in ("", "-wal")
               if Path(f"{db_path}{suffix}").exists())
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    catalogs = f"{plural(counts['centers'], 'center')}, {plural(counts['doctors'], 'doctor')}"
    lines = [
        ("Database", f"{Path(db_path).resolve()} ({human_size(size)}, schema version {version})"),
        ("Catalogs", catalogs if counts["doctors"] else catalogs + ": nothing can be booked; load the catalogs "
                                                                   "with `agenda seed FILE`"),
        ("Patients", f"{counts['patients']:,}"),
        ("Appointments", f"{counts['appointments']:,}: " + ", ".join(
            f"{by_status.get(name, 0):,} {name}" for name in STATUS_NAMES + ("cancelled",))),
        ("Reminders", "no reminder cycle closed yet" if not cycle else
         f"last cycle closed {clinic_time(cycle['closed_at'], tz)} for "
         f"{', '.join(format_date(day) for day in cycle['days'].split(','))}"
         f"{' at ' + cycle['center_id'] if cycle['center_id'] else ''}: "
         f"{len(json.loads(cycle['appointment_ids']))} handled ({cycle['policy']})"),
        ("Signatures", signature_advice(signatures_seen(conn), tz)),
    ]
    replica, _ = recall(conn, "replica")
    if replica:
        lines.append(("Replica", f"{replica['url']}: "
                                 f"{replica_position(replica['socket'], str(Path(db_path).resolve()), now)}"))
    if not last_backup:
        lines.append(("Last backup", "none yet: run `agenda backup FOLDER --keep 14`"))
    else:
        stale = now - dt.datetime.fromisoformat(backup_at) > dt.timedelta(days=1)
        lines.append(("Last backup", f"{clinic_time(backup_at, tz)} to {last_backup['path']} "
                                     f"({human_size(last_backup['bytes'])})"
                                     + ("; more than a day ago: check the nightly backup" if stale else "")))
    return lines


@cli.command()
@db_option
@secret_file_option
@tz_option
@click.pass_context
def status(ctx, db_path, secret_file, tz):
    """What the agenda holds and how it runs: file, counts, reminders, signatures, backups.

    Times are the clinic's (--tz).

    Example:

    \b
        agenda status --db /var/lib/agenda/clinic.db
    """
    zone = cli_zone(tz)
    conn = existing_database(db_path)
    try:
        lines = status_lines(conn, db_path, cli_now(ctx), zone)
    finally:
        conn.close()
    stored = secret_file_path(db_path, secret_file)
    if stored.is_file():
        mode = stored.stat().st_mode & 0o777
        lines.append(("Secret", f"stored in {stored} (mode {mode:o}{', readable by others!' if mode & 0o077 else ''})"))
    else:
        lines.append(("Secret", "no stored secret; AGENDA_SECRET or `agenda secret set` gives one"))
    for label, text in lines:
        click.echo(f"{label + ':':<14}{text}")


if __name__ == "__main__":
    cli()
