"""`agenda run` as the admin runs it: a real process on 127.0.0.1, its log, and SIGTERM.

Each test starts its own server on a free loopback port, sends a bounded number of
requests, and stops the process it started by its id.
"""

import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile

import edges
from conftest import ROOT, SECRET, Server, days_ahead, send, valid_dni
from mail_server import MailServer

PII = {"nif": valid_dni(45_678_901), "phone": "699112233", "name": "Zacarías", "surname": "Ybarra-Quintanilla"}


def full_flow(url):
    """A patient created, found, booked, moved, reminded, confirmed, and booked again and
    cancelled, as the caller does it."""
    status, created = send(url, "POST", "/patients", {**PII, "birthDate": "02/03/1975"})
    assert status == 201, created
    patient = created["patientId"]
    assert send(url, "GET", f"/patients?nif={PII['nif']}")[0] == 200
    assert send(url, "GET", f"/appointments?phone=%2B34{PII['phone']}")[0] == 200
    day = days_ahead(3)
    assert send(url, "GET", f"/availabilities?specialityId=MG&startDate={day}&endDate={day}")[0] == 200
    status, booked = send(url, "POST", "/appointments", {"date": day, "time": "09:00",
                                                          "doctorId": "MARTIN", "patientId": patient,
                                                          "reason": f"control de {PII['name']}"})
    assert status == 201, booked
    appointment = booked["appointmentId"]
    assert send(url, "PUT", f"/appointments/{appointment}", {"newDate": day, "newTime": "09:30"})[0] == 200
    assert send(url, "GET", f"/appointments?date={day}")[0] == 200
    assert send(url, "POST", "/appointments/confirm", {"appointmentId": appointment, "confirmed": True})[0] == 200
    assert send(url, "POST", "/appointments/end-of-reminder-day",
                {"voiceAgentConfigId": "va", "date": day})[0] == 200
    status, second = send(url, "POST", "/appointments", {"date": day, "time": "10:00", "doctorId": "MARTIN",
                                                         "patientId": patient})
    assert status == 201 and send(url, "DELETE", f"/appointments/{second['appointmentId']}")[0] == 204
    assert send(url, "GET", f"/nonsense/{PII['nif']}/{PII['phone']}")[0] == 404
    assert send(url, "GET", f"/appointments/{PII['nif']}")[0] == 404  # a NIF said where an id was asked
    assert send(url, "POST", "/patients", {**PII})[0] == 409
    return appointment


def test_run_logs_one_line_per_request_and_no_personal_data(running):
    server = running()
    appointment = full_flow(server.url)
    assert server.terminate() == 0
    log = server.log()
    access = [line for line in server.lines if " agenda.access " in line]
    assert len(access) == 14, log
    assert re.search(r" agenda\.access POST /patients 201 \d+\.\dms rid=[0-9a-f]{16}$", access[0])
    assert f"PUT /appointments/{appointment} 200" in log
    assert "GET /? 404" in log and "GET /patients 200" in log
    assert "GET /appointments/... 404" in log
    digits = re.sub(r"\D", "", PII["phone"])
    for secret in (PII["nif"], PII["nif"][:8], digits, digits[-6:], PII["name"], PII["surname"], "Zacar",
                   "Ybarra", SECRET):
        assert secret not in log, f"{secret!r} is in the log"


def test_access_lines_show_while_the_server_runs(running):
    """Each access line is written out as its request ends, while the server runs."""
    server = running()
    assert send(server.url, "GET", "/health")[0] == 200
    deadline = time.monotonic() + 60  # the line, written as the request ends: a minute at most
    while not any("GET /health 200" in line for line in server.lines) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert any("GET /health 200" in line for line in server.lines), server.log()
    assert server.process.poll() is None


def test_sigterm_stops_the_server_cleanly_and_keeps_every_answered_booking(running, db_path):
    server = running("--threads", "4")
    patients = [send(server.url, "POST", "/patients", {"name": "P", "nif": valid_dni(500 + n)})[1]["patientId"]
                for n in range(6)]
    answered, done = [], threading.Event()

    def book_stream():
        for day in (2, 3, 4, 5):
            for n, time_text in enumerate(("09:00", "09:30", "10:00", "10:30")):
                try:
                    status, payload = send(server.url, "POST", "/appointments", {
                        "date": days_ahead(day), "time": time_text, "doctorId": "MARTIN",
                        "patientId": patients[n]})
                except OSError:
                    done.set()
                    return
                if status == 201:
                    answered.append(payload["appointmentId"])
        done.set()

    booker = threading.Thread(target=book_stream)
    booker.start()
    while len(answered) < 3 and not done.is_set():
        time.sleep(0.01)
    code = server.terminate()
    booker.join(timeout=30)
    assert code == 0, server.log()
    assert "stopped" in server.lines[-1]
    assert "Traceback" not in server.log()
    conn = sqlite3.connect(db_path)
    try:
        stored = {str(row[0]) for row in conn.execute("SELECT id FROM appointments")}
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    assert set(answered) <= stored


def test_the_one_file_build_runs_on_a_bare_python(tmp_path, db_path):
    """agenda.pyz, built by the documented command, on this Python with no site-packages (-I -S)."""
    pyz = tmp_path / "agenda.pyz"
    built = subprocess.run([sys.executable, str(ROOT / "tools" / "build_pyz.py"), "-o", str(pyz)],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(pyz) as archive:  # every file the code reads, from every folder of the package
        held = set(archive.namelist())
    assert {f"_agenda/desk/templates/{name}" for name in edges.TEMPLATES} <= held
    assert {"schema.sql", "openapi.json", "seed/catalogs.csv"} <= held
    assert {path.relative_to(ROOT).as_posix() for path in (ROOT / "_agenda").rglob("*.py")} <= held
    bare = [sys.executable, "-I", "-S", str(pyz)]

    def agenda_pyz(*args):
        return subprocess.run(bare + list(args), capture_output=True, text=True, timeout=60, cwd=tmp_path)

    assert agenda_pyz("--version").stdout.strip() == f"agenda, version {agenda_version()}"
    seeded = agenda_pyz("seed", str(ROOT / "seed" / "catalogs.csv"), "--db", str(db_path))
    assert seeded.returncode == 0 and "loaded" in seeded.stdout, seeded.stderr
    (tmp_path / "patients.csv").write_text(f"name,nif,phone\nAna,{valid_dni(9)},612 345 678\n", encoding="utf-8")
    imported = agenda_pyz("import-patients", "patients.csv", "--db", str(db_path))
    assert imported.returncode == 0 and "Imported 1 patient;" in imported.stdout, imported.stderr
    copied = agenda_pyz("backup", "copy.db", "--db", str(db_path))
    assert copied.returncode == 0 and "integrity ok" in copied.stdout, copied.stderr
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    mail = MailServer(tmp_path)  # the sender beside it, started from the archive too
    server = Server(bare + ["run", "--db", str(db_path), "--port", "0", "--smtp", mail.url, "--smtp-ca",
                            str(mail.ca_file), "--mail-from", "citas@clinicasol.es", "--public-url",
                            "http://127.0.0.1:8080"], {**env, "AGENDA_SECRET": SECRET})
    try:
        assert send(server.url, "GET", "/custom-config")[1]["doctors"]["data"]
        assert send(server.url, "GET", f"/patients?nif={valid_dni(9)}")[1]["phone"] == "+34612345678"
        assert send(server.url, "GET", "/openapi.json")[1]["openapi"] == "3.1.0"
        with urllib.request.urlopen(server.url + "/desk/login", timeout=20) as page:  # a template, from the archive
            assert page.status == 200 and b'name="password"' in page.read()
        status, patient = send(server.url, "POST", "/patients", {"name": "Eva", "surname": "Sol", "nif": valid_dni(8),
                                                                  "phone": "612345679", "email": "eva@example.es"})
        assert status == 201
        for day in range(7, 10):  # one of three days in a row is one she works
            status, _ = send(server.url, "POST", "/appointments", {"date": days_ahead(day), "time": "10:00",
                                                                   "doctorId": "MARTIN", "patientId": patient["patientId"]})
            if status == 201:
                break
        assert status == 201
        deadline = time.monotonic() + 60  # a busy machine: a minute at most
        while not mail.inbox.messages() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [recipients for recipients, _ in mail.inbox.messages()] == [["eva@example.es"]], server.log()
    finally:
        assert server.terminate() == 0
        server.stop()
        mail.stop()


def agenda_version():
    return re.search(r'__version__ = "([^"]+)"', (ROOT / "_agenda" / "__init__.py").read_text())[1]
