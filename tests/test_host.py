"""Many clinics in one service (docs/design.md, "A host of clinics"): each clinic folder under the host's folder is
served at its own host name with its own secret; nothing signed for one clinic reads or changes another; a folder
added is served without a restart and one removed stops being served; a damaged file, a full disk or requests
that hang in one clinic leave the others answering; a wrong settings file is refused naming the key."""

import json
import os
import shutil
import subprocess
import sys
import sqlite3
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import webtest
from click.testing import CliRunner
from webtest.http import StopableWSGIServer

import agenda
from _agenda.cli.host import close_clinic, open_clinic
from _agenda.values.settings import settings_in_file
from _agenda.web import host as hosting
from _agenda.web.host import Clinics
from _agenda.storage.shipped import newest_version

from conftest import agenda_command, EVERY_DAY_CSV, ROOT, SEEDED_AT, seed, Server, sign, table_rows, write_csv
from test_desk import log_in, PASSWORD
from test_signatures import EVERY_ROUTE
from test_storage import old_clinic, schema_of

A, B = "citas.clinica-a.es", "citas.clinica-b.es"
SECRETS = {A: "secret-of-clinic-a", B: "secret-of-clinic-b"}


class Moment:
    """A monotonic clock the test moves."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def make_clinic(folder, name, tmp_path, settings=None):
    """A clinic folder: the test clinic seeded, its secret (0600) and its settings file."""
    clinic = folder / name
    clinic.mkdir()
    seed(clinic / "agenda.db", write_csv(tmp_path, EVERY_DAY_CSV), at=SEEDED_AT)
    descriptor = os.open(clinic / "agenda.secret", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(descriptor, SECRETS.get(name, "another-secret").encode())
    os.close(descriptor)
    (clinic / "agenda.toml").write_text(settings if settings is not None else "min_notice_minutes = 0\n")
    return clinic


@pytest.fixture
def fleet(tmp_path):
    folder = tmp_path / "clinics"
    folder.mkdir()
    for name in (A, B):
        make_clinic(folder, name, tmp_path)
    clock = Moment()
    clinics = Clinics(folder, open_clinic, close_clinic, share=2, clock=clock)
    clinics.clock_moment = clock
    yield clinics
    clinics.close_all()


def ask(clinics, host, method, url, body=None, secret=None):
    """One request to the host's app at `host`, signed with `secret` (the clinic's own by default)."""
    raw = b"" if body is None else json.dumps(body).encode()
    headers = {"Host": host, "X-Signature": sign(raw, secret or SECRETS[host], method, url)}
    if body is not None:
        headers["Content-Type"] = "application/json"
    return webtest.TestApp(clinics).request(url, method=method, body=raw, headers=headers, expect_errors=True)


def first_patient_and_booking(clinics, host):
    patient = ask(clinics, host, "POST", "/patients", {"name": "Luis", "nif": "11111111H"}).json["patientId"]
    day = ask(clinics, host, "GET", "/availabilities?doctorId=MARTIN").json["data"][0]
    booked = ask(clinics, host, "POST", "/appointments", {"date": day["date"], "time": day["time"],
                                                         "doctorId": "MARTIN", "patientId": patient})
    assert booked.status_int == 201, booked.text
    return booked.json["appointmentId"]


@pytest.mark.parametrize("method, url, body", EVERY_ROUTE)
def test_a_request_signed_for_one_clinic_reads_and_changes_nothing_of_another(fleet, method, url, body):
    for host in (A, B):
        first_patient_and_booking(fleet, host)
    before = table_rows(fleet.folder / B / "agenda.db")
    answer = ask(fleet, B, method, url, body, secret=SECRETS[A])
    assert answer.status_int == 401 and answer.json["error"]["code"] == "INVALID_SIGNATURE"
    assert table_rows(fleet.folder / B / "agenda.db") == before
    assert ask(fleet, B, method, url, body).status_int != 401  # B's own secret opens it


def test_each_clinic_answers_with_its_own_data(fleet):
    assert first_patient_and_booking(fleet, A) == "1"
    assert ask(fleet, B, "GET", "/appointments/1").json["error"]["code"] == "APPOINTMENT_NOT_FOUND"
    assert ask(fleet, A, "GET", "/appointments/1").json["patientName"] == "Luis"
    assert ask(fleet, B, "GET", "/patients?nif=11111111H").status_int == 404


def test_an_unknown_host_name_is_refused_and_the_host_reads_no_address_as_a_clinic(fleet):
    for host in ("citas.otra.es", "127.0.0.1", "[::1]:8080", ""):
        answer = webtest.TestApp(fleet).get("/health", headers={"Host": host}, expect_errors=True)
        assert answer.status_int == 404 and answer.json["error"]["code"] == "NOT_FOUND"


def test_a_folder_added_is_served_at_once_and_one_removed_stops_being_served(fleet, tmp_path):
    make_clinic(fleet.folder, "citas.clinica-c.es", tmp_path)
    answer = ask(fleet, "citas.clinica-c.es", "GET", "/custom-config", secret="another-secret")
    assert answer.status_int == 200
    shutil.rmtree(fleet.folder / B)
    fleet.clock_moment.now += hosting.LOOK_EVERY
    assert ask(fleet, B, "GET", "/custom-config").status_int == 404
    assert ask(fleet, A, "GET", "/custom-config").status_int == 200


def test_an_idle_clinic_is_put_away_and_opened_again_when_asked(fleet):
    assert ask(fleet, A, "GET", "/custom-config").status_int == 200
    assert fleet.served[A].app is not None
    fleet.clock_moment.now += hosting.IDLE_AFTER + 1
    assert ask(fleet, B, "GET", "/custom-config").status_int == 200
    assert fleet.served[A].app is None
    assert ask(fleet, A, "GET", "/custom-config").status_int == 200


def test_a_clinic_with_a_request_in_flight_is_never_put_away_under_it(fleet):
    fleet.look(force=True)
    one = fleet.entered(A)  # a request of A's, under way
    app = fleet.app_of(one)
    fleet.clock_moment.now += hosting.IDLE_AFTER + 1
    (fleet.folder / A / "agenda.toml").write_text("min_notice_minutes = 30\n")
    shutil.rmtree(fleet.folder / B)
    fleet.look(force=True)
    assert one.app is app and A in fleet.served and B not in fleet.served
    with fleet.guard:
        one.in_flight -= 1  # the request is answered
    fleet.look(force=True)
    assert one.app is None and A in fleet.served


def test_a_clinic_whose_settings_or_secret_change_is_opened_again_with_them(fleet):
    assert ask(fleet, A, "GET", "/custom-config").status_int == 200
    assert fleet.served[A].app.clinic.settings.min_notice_minutes == 0
    (fleet.folder / A / "agenda.toml").write_text("min_notice_minutes = 45\n")
    fleet.clock_moment.now += hosting.LOOK_EVERY
    assert ask(fleet, A, "GET", "/custom-config").status_int == 200
    assert fleet.served[A].app.clinic.settings.min_notice_minutes == 45
    (fleet.folder / A / "agenda.secret").write_text("a-new-secret-of-clinic-a")
    fleet.clock_moment.now += hosting.LOOK_EVERY
    assert ask(fleet, A, "GET", "/custom-config").status_int == 401
    assert ask(fleet, A, "GET", "/custom-config", secret="a-new-secret-of-clinic-a").status_int == 200


def test_a_host_folder_unreadable_for_a_moment_leaves_the_clinics_served(fleet, monkeypatch):
    assert ask(fleet, A, "GET", "/custom-config").status_int == 200

    def unreadable(folder):
        raise PermissionError(13, "Permission denied", str(folder))

    monkeypatch.setattr(hosting, "clinic_folders", unreadable)
    fleet.clock_moment.now += hosting.LOOK_EVERY
    assert ask(fleet, A, "GET", "/custom-config").status_int == 200
    assert ask(fleet, "citas.otra.es", "GET", "/health", secret="x").status_int == 404


def test_a_damaged_clinic_answers_503_and_the_others_go_on(fleet):
    path = fleet.folder / A / "agenda.db"
    data = bytearray(path.read_bytes())
    data[100:4096 * 3] = b"\x5a" * (4096 * 3 - 100)
    path.write_bytes(bytes(data))
    damaged = ask(fleet, A, "GET", "/custom-config")
    assert damaged.status_int == 503 and damaged.headers["Retry-After"] == "1"
    assert ask(fleet, B, "GET", "/custom-config").status_int == 200


def test_a_full_disk_in_one_clinic_refuses_only_its_writes(fleet, monkeypatch):
    first_patient_and_booking(fleet, B)
    ask(fleet, A, "GET", "/custom-config")

    def full(*args, **kwargs):  # what SQLite says when the disk is full (ENOSPC): SQLITE_FULL
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(fleet.served[A].app.clinic.db, "transaction", full)
    refused = ask(fleet, A, "POST", "/patients", {"name": "Ana", "nif": "22222222J"})
    assert refused.status_int == 503 and refused.json["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert ask(fleet, B, "POST", "/patients", {"name": "Ana", "nif": "22222222J"}).status_int == 201


def test_a_clinic_whose_requests_hang_leaves_threads_to_the_others(tmp_path):
    folder = tmp_path / "clinics"
    folder.mkdir()
    for name in (A, B):
        make_clinic(folder, name, tmp_path)
    release, entered = threading.Event(), threading.Semaphore(0)

    def hanging(environ, start_response):
        entered.release()
        release.wait(120)
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]

    def open_one(clinic_folder):
        return hanging if clinic_folder.name == A else open_clinic(clinic_folder)

    clinics = Clinics(folder, open_one, lambda app: app is hanging or close_clinic(app), share=2)
    server = StopableWSGIServer.create(clinics, host="127.0.0.1", threads=4)
    try:
        assert server.wait()
        port = server.adj.port

        def get(host, path="/health"):
            request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": host})
            try:
                with urllib.request.urlopen(request, timeout=120) as answer:
                    return answer.status
            except urllib.error.HTTPError as error:
                return error.code

        with ThreadPoolExecutor(4) as pool:
            hung = [pool.submit(get, A) for _ in range(2)]
            assert entered.acquire(timeout=60) and entered.acquire(timeout=60)  # both of A's share are hanging
            assert get(A) == 503  # A's third waits for no thread
            assert get(B) == 200 and not any(future.done() for future in hung)
            release.set()
            assert [future.result() for future in hung] == [200, 200]
    finally:
        release.set()
        server.shutdown()
        clinics.close_all()


def test_a_wrong_settings_file_is_refused_naming_the_file_the_key_and_the_fix(fleet, tmp_path, caplog):
    clinic = make_clinic(fleet.folder, "citas.clinica-d.es", tmp_path, settings="min_notice = 0\n")
    with pytest.raises(ValueError, match=r"agenda\.toml: unknown setting 'min_notice'; the settings are: tz,"):
        settings_in_file(clinic / "agenda.toml")
    answer = ask(fleet, "citas.clinica-d.es", "GET", "/custom-config", secret="another-secret")
    assert answer.status_int == 503
    assert "unknown setting 'min_notice'" in caplog.text
    (clinic / "agenda.toml").write_text('horizon_days = "90"\n')
    with pytest.raises(ValueError, match="horizon_days must be a whole number, not '90'"):
        settings_in_file(clinic / "agenda.toml")
    (clinic / "agenda.toml").write_text('tz = "Mars/Base"\n')
    with pytest.raises(ValueError, match="tz = 'Mars/Base': unknown time zone"):
        settings_in_file(clinic / "agenda.toml")


def test_a_clinic_without_its_secret_is_not_served(fleet):
    (fleet.folder / B / "agenda.secret").unlink()
    assert ask(fleet, B, "GET", "/custom-config").status_int == 503
    assert ask(fleet, A, "GET", "/custom-config").status_int == 200


def test_host_status_names_what_it_passes_over_and_refuses_a_folder_without_clinics(fleet, tmp_path):
    (fleet.folder / "Citas.Mayusculas.es").mkdir()
    (fleet.folder / "citas.sin-base.es").mkdir()
    result = CliRunner().invoke(agenda.cli, ["host", "status", str(fleet.folder)])
    assert "Citas.Mayusculas.es" in result.output and "no host name in small letters" in result.output
    assert "citas.sin-base.es" in result.output and "no agenda.db: agenda seed" in result.output
    (fleet.folder / B / "agenda.secret").chmod(0o644)
    result = CliRunner().invoke(agenda.cli, ["host", "status", str(fleet.folder)])
    assert result.exit_code == 1 and "its secret:" in result.output and "can be read by others" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(agenda.cli, ["host", "status", str(empty)])
    assert result.exit_code == 1 and "holds no clinic" in result.output


def test_host_status_lists_every_clinic_and_fails_for_one_in_trouble(fleet):
    result = CliRunner().invoke(agenda.cli, ["host", "status", str(fleet.folder)])
    assert result.exit_code == 0, result.output
    assert A in result.output and B in result.output and "every clinic ok" in result.output
    (fleet.folder / B / "agenda.secret").unlink()
    result = CliRunner().invoke(agenda.cli, ["host", "status", str(fleet.folder)])
    assert result.exit_code == 1 and "no secret: agenda secret set" in result.output


def each_clinic_answers(server):
    """Each clinic of the fleet answers its caller at its own host name, on a real `agenda host serve`."""
    for host in (A, B):
        request = urllib.request.Request(server.url + "/custom-config", headers={
            "Host": host, "X-Signature": sign(b"", SECRETS[host], "GET", "/custom-config")})
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert answer.status == 200


def test_agenda_host_serve_serves_each_clinic_at_its_host_name_and_stops_on_sigterm(fleet):
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    server = Server(agenda_command("host", "serve", str(fleet.folder), "--port", "0"), {**env, "PYTHONUNBUFFERED": "1"})
    try:
        each_clinic_answers(server)
        assert server.terminate() == 0
        assert f"clinic={A}" in server.log() and f"clinic={B}" in server.log()
    finally:
        server.stop()


def certificate(folder, name):
    """A certificate for `name` in folder/name, as certbot leaves one."""
    live = folder / name
    live.mkdir(parents=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-subj", f"/CN={name}", "-days", "1", "-keyout", str(live / "privkey.pem"), "-out",
                    str(live / "fullchain.pem")], check=True, capture_output=True, timeout=60)


def assert_nginx_takes(out, tmp_path):
    """`nginx -t` takes the sites written into `out`, included in an http block as docs/deploy.md says."""
    temp = "\n".join(f"    {kind}_temp_path {tmp_path}/{kind};" for kind in ("client_body", "proxy", "fastcgi",
                                                                              "uwsgi", "scgi"))
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
                    f"http {{\n    access_log off;\n{temp}\n    include {out}/agenda-host.conf;\n}}\n")
    checked = subprocess.run(["nginx", "-t", "-p", str(tmp_path), "-e", f"{tmp_path}/error.log", "-c", str(conf)],
                             check=False, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "test is successful" in checked.stderr, checked.stderr


@pytest.mark.skipif(not shutil.which("nginx"), reason="nginx is not installed")
@pytest.mark.skipif(not shutil.which("openssl"), reason="openssl is not installed")
def test_agenda_host_nginx_writes_a_server_a_clinic_that_nginx_takes(fleet, tmp_path):
    (fleet.folder / A / "agenda.toml").write_text('desk_network = "192.0.2.0/24, 198.51.100.7"\n')
    certificate(tmp_path / "live", A)
    out = tmp_path / "sites"
    result = CliRunner().invoke(agenda.cli, ["host", "nginx", str(fleet.folder), str(out), "--certificates",
                                             str(tmp_path / "live"), "--logs", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"{B}: no certificate yet, port 80 only: sudo certbot --nginx -d {B}" in result.output
    assert f"{B}: its desk is closed to every address: set desk_network" in result.output
    sites = (out / "agenda-host.conf").read_text()
    server_of_a = sites[sites.index(f"server_name {A};\n    ssl_certificate"):]
    assert "allow 192.0.2.0/24;" in server_of_a and "allow 198.51.100.7/32;" in server_of_a
    assert f"listen 80;\n    server_name {B};\n    location / {{ return 404; }}" in sites
    assert_nginx_takes(out, tmp_path)
    (fleet.folder / B / "agenda.toml").write_text("clinic_nam = 'Sol'\n")
    result = CliRunner().invoke(agenda.cli, ["host", "nginx", str(fleet.folder), str(out), "--certificates",
                                             str(tmp_path / "live"), "--logs", str(tmp_path)])
    assert result.exit_code == 1 and f"{B}: left out, a wrong setting:" in result.output and "Traceback" not in \
        result.output
    assert f"server_name {A};" in (out / "agenda-host.conf").read_text()
    assert f"server_name {B};" not in (out / "agenda-host.conf").read_text()


@pytest.mark.parametrize("command", [("serve",), ("status",), ("nginx",)])
def test_a_host_folder_that_is_not_there_is_refused_with_the_fix(tmp_path, command):
    extra = [str(tmp_path / "sites")] if command == ("nginx",) else []
    result = CliRunner().invoke(agenda.cli, ["host", *command, str(tmp_path / "nowhere"), *extra])
    assert result.exit_code == 1 and "no such folder; make it" in result.output


def test_a_desk_login_is_a_login_to_one_clinic_only(fleet):
    """The same name and password in two clinics of one host: a session opened at A opens nothing at B."""
    fleet.look(force=True)
    for name in (A, B):
        fleet.app_of(fleet.served[name]).accounts.add_staff("ana", PASSWORD)
    at_a = webtest.TestApp(fleet, extra_environ={"HTTP_HOST": A})
    assert log_in(at_a).status_int == 303
    assert at_a.get("/desk/day").status_int == 200
    cookie = "; ".join(f"{name}={value}" for name, value in at_a.cookies.items())
    at_b = webtest.TestApp(fleet, extra_environ={"HTTP_HOST": B})
    refused = at_b.get("/desk/day", headers={"Cookie": cookie}, expect_errors=True)
    assert refused.status_int == 303 and refused.location.endswith("/desk/login"), refused
    assert at_b.get("/desk/login").status_int == 200  # B's own desk still asks for B's login


def test_a_clinic_whose_schema_is_behind_is_upgraded_and_one_ahead_leaves_the_others_served(fleet, tmp_path):
    """A clinic at an older schema is brought up to date when first asked, as `agenda run` does; one written by a
    newer Agenda answers 503 and names nothing of it, and its neighbours answer as before."""
    behind, ahead = "citas.clinica-c.es", "citas.clinica-d.es"
    (fleet.folder / behind).mkdir()
    shutil.move(old_clinic(tmp_path), fleet.folder / behind / "agenda.db")
    (fleet.folder / behind / "agenda.secret").write_text("another-secret")
    os.chmod(fleet.folder / behind / "agenda.secret", 0o600)
    make_clinic(fleet.folder, ahead, tmp_path)
    conn = sqlite3.connect(fleet.folder / ahead / "agenda.db")
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    fleet.look(force=True)
    assert ask(fleet, behind, "GET", "/custom-config", secret="another-secret").status_int == 200
    assert schema_of(fleet.folder / behind / "agenda.db")[0] == newest_version()
    refused = ask(fleet, ahead, "GET", "/custom-config", secret="another-secret")
    assert refused.status_int == 503 and refused.headers["Retry-After"] and "999" not in refused.text
    assert ask(fleet, A, "GET", "/custom-config").status_int == 200
    assert first_patient_and_booking(fleet, B)


def test_a_host_holding_more_files_than_select_watches_serves_and_refuses_as_ever(fleet):
    """A host of hundreds of clinics holds a few files each: its loop and its refusals wait with poll(), not
    select() (no descriptor past 1023), and it lifts its soft limit of open files to the hard one."""
    opened = ("import os, resource, runpy, sys; "
              "resource.setrlimit(resource.RLIMIT_NOFILE, (1110, resource.getrlimit(resource.RLIMIT_NOFILE)[1])); "
              "[os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]; "
              f"sys.argv = ['agenda', 'host', 'serve', {str(fleet.folder)!r}, '--port', '0']; "
              f"runpy.run_path({str(ROOT / 'agenda.py')!r}, run_name='__main__')")
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    server = Server([sys.executable, "-c", opened], {**env, "PYTHONUNBUFFERED": "1"})
    try:
        each_clinic_answers(server)
        too_big = urllib.request.Request(server.url + "/patients", data=b"x" * 200_000, method="POST",
                                         headers={"Host": A, "Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(too_big, timeout=60)
        assert refused.value.code == 413 and json.loads(refused.value.read())["error"]["code"] == "PAYLOAD_TOO_LARGE"
        assert server.terminate() == 0
    finally:
        server.stop()
