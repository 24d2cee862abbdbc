"""Crash rounds (docs/replication.md, "Crash rounds"): many writers change a clinic served by `agenda run
--replica --ack-after-replication` (bookings, moves, cancellations and confirmations through the signed API,
patients registered, bookings at the desk, closures added by a command run beside the service); at a random
moment the service and its Litestream are killed with SIGKILL, as a machine dies; the replica is restored
with `agenda restore --from-replica`, and the restore is held to what was promised. Used by
tests/test_crash_restore.py and, for many rounds, bench/crash_rounds.py. Loopback only; every process it
starts is stopped by its own id; every wait is bounded."""

import datetime as dt
import hashlib
import hmac
import http.client
import http.cookiejar
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

SECRET = "crash-round-secret"
PASSWORD = "correct horse battery"
API_WRITERS = 5  # each owns a doctor; with the patients' writer, the desk's and the command's: 8 writers
CLINIC_CSV = "kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to\n" \
             "center,C1,Centro,,,,,,,,\nspeciality,MG,Medicina general,,,,,,,,\n" + "".join(
                 f"doctor,D{n},Doctor {n},MG,C1,,mon-sun,07:00-21:00,5,,\n" for n in range(1, API_WRITERS + 3))
DESK_DOCTOR, CLOSED_DOCTOR = f"D{API_WRITERS + 1}", f"D{API_WRITERS + 2}"


def valid_dni(number):
    return f"{number:08d}" + "TRWAGMYFPDXBNJZSQVHLCKE"[number % 23]


def agenda(root, *args, **options):
    """`agenda ARGS` of the checkout at `root`, run to its end."""
    env = {**child_env(), **options.pop("env", {})}
    return subprocess.run([sys.executable, str(Path(root) / "agenda.py"), *args], capture_output=True, text=True,
                          timeout=300, env=env, **options)


def child_env(folder=None):
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    env.update(AGENDA_SECRET=SECRET, AGENDA_MIN_NOTICE="0", PYTHONUNBUFFERED="1")
    if folder is not None:
        env["TMPDIR"] = str(folder)  # the private Litestream folder a killed service leaves lies here
    return env


def send(url, method, path, body=None):
    """One signed request (the request scheme); (status, JSON answer); OSError when the server is gone."""
    raw = b"" if body is None else json.dumps(body).encode()
    signature = hmac.new(SECRET.encode(), method.encode() + b"\n" + path.encode() + b"\n" + raw,
                         hashlib.sha256).hexdigest()
    request = urllib.request.Request(url + path, data=raw if body is not None else None, method=method,
                                     headers={"Content-Type": "application/json", "X-Signature": signature})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")
    except (http.client.HTTPException, urllib.error.URLError) as error:
        raise OSError(str(error)) from None


class Service:
    """`agenda run` of the checkout at `root`, with its Litestream; killed together by `kill`."""

    def __init__(self, root, folder, db_path, *args):
        command = [sys.executable, str(Path(root) / "agenda.py"), "run", "--db", str(db_path), "--port", "0", *args]
        self.lines, self.url = [], None
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env=child_env(folder), cwd=root)
        threading.Thread(target=lambda: self.lines.extend(self.process.stdout), daemon=True).start()
        deadline = time.monotonic() + 60
        while self.url is None and time.monotonic() < deadline and self.process.poll() is None:
            found = [re.search(r"listening on (http://127\.0\.0\.1:\d+)", line) for line in list(self.lines)]
            self.url = next((match[1] for match in found if match), None)
            time.sleep(0.02)
        if self.url is None:
            self.kill()
            raise AssertionError("the service did not start:\n" + "".join(self.lines))

    def litestreams(self):
        return [int(pid) for pid in re.findall(r"litestream started \(pid (\d+)\)", "".join(list(self.lines)))]

    def kill_litestream(self):
        for pid in self.litestreams():
            stop(pid)

    def kill(self):
        """SIGKILL to the service and every Litestream it started: the machine is gone."""
        for pid in [self.process.pid, *self.litestreams()]:
            stop(pid)
        self.process.wait(timeout=30)


def stop(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def wait_for(condition, seconds=60, message="condition"):
    """Wait until condition() is true, a minute at most unless told; AssertionError naming it past that."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{message}: not within {seconds} s")


@dataclass
class Acknowledged:
    """What the service acknowledged: the changes per entity ('appointment', id) and the desk's bookings."""
    changes: dict = field(default_factory=dict)
    desk: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, entity, entity_id):
        with self.lock:
            key = (entity, str(entity_id))
            self.changes[key] = self.changes.get(key, 0) + 1

    def count(self):
        return sum(self.changes.values()) + len(self.desk)


def slots(doctor, first_day):
    """The doctor's 5-minute slots from 07:00 to 21:00, day after day."""
    day = first_day
    while True:
        for minute in range(7 * 60, 21 * 60, 5):
            yield doctor, day.strftime("%d/%m/%Y"), f"{minute // 60:02d}:{minute % 60:02d}"
        day += dt.timedelta(days=1)


def api_writer(url, number, acked, stopped):
    """Registers a patient, then books the doctor's next slots, moving one booking in three, cancelling
    one in four and confirming one in five."""
    patient = None
    while patient is None and not stopped.is_set():
        status, answer = send(url, "POST", "/patients", {"name": f"Paciente {number}", "nif": valid_dni(number)})
        if status == 201:
            patient = answer["patientId"]
            acked.add("patient", patient)
        elif status == 409:  # saved by an earlier try that was answered 503
            patient = send(url, "GET", f"/patients?nif={valid_dni(number)}")[1].get("patientId")
    free = slots(f"D{number}", dt.date.today() + dt.timedelta(days=1))
    for turn in range(100000):
        if stopped.is_set():
            return
        doctor, day, start = next(free)
        status, answer = send(url, "POST", "/appointments",
                              {"date": day, "time": start, "doctorId": doctor, "patientId": patient})
        if status != 201:
            continue
        booked = answer["appointmentId"]
        acked.add("appointment", booked)
        if turn % 3 == 1:
            _, day, start = next(free)
            if send(url, "PUT", f"/appointments/{booked}", {"newDate": day, "newTime": start})[0] == 200:
                acked.add("appointment", booked)
        if turn % 4 == 2 and send(url, "DELETE", f"/appointments/{booked}")[0] == 204:
            acked.add("appointment", booked)
        elif turn % 5 == 3 and send(url, "POST", "/appointments/confirm",
                                    {"appointmentId": booked, "confirmed": True})[0] == 200:
            acked.add("appointment", booked)


def patients_writer(url, acked, stopped):
    for number in range(1000, 1000000):
        if stopped.is_set():
            return
        status, answer = send(url, "POST", "/patients", {"name": "Nuevo", "nif": valid_dni(number)})
        if status == 201:
            acked.add("patient", answer["patientId"])


def desk_writer(url, acked, stopped):
    """Reception at the desk: logs in, then books a new patient in each of a doctor's slots."""
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    login = browser.open(url + "/desk/login", timeout=30).read().decode()
    browser.open(url + "/desk/login", urllib.parse.urlencode({
        "csrf": re.search(r'name="csrf" value="([^"]+)"', login)[1], "name": "ana", "password": PASSWORD}).encode(),
        timeout=30)
    for number, (doctor, day, start) in enumerate(slots(DESK_DOCTOR, dt.date.today() + dt.timedelta(days=1)), 500000):
        if stopped.is_set():
            return
        slot = {"doctorId": doctor, "date": day, "time": start, "centerId": "C1"}
        try:
            page = browser.open(f"{url}/desk/book?{urllib.parse.urlencode(slot)}", timeout=30).read().decode()
            booked = browser.open(url + "/desk/book", urllib.parse.urlencode({
                **slot, "csrf": re.search(r'name="csrf" value="([^"]+)"', page)[1], "name": "Eva",
                "nif": valid_dni(number), "reason": "Control"}).encode(), timeout=30)
        except urllib.error.HTTPError:  # a 503: saved here, not acknowledged
            continue
        if "/desk/day" in booked.url and "reservada" in booked.read().decode():
            with acked.lock:
                acked.desk.append((doctor, dt.datetime.strptime(day, "%d/%m/%Y").date().isoformat(), start))


class Beside:
    """Commands run beside the service, part of the machine: killed with it, and none starts once it is gone
    (a command left running would write over what the killed service had half written)."""

    def __init__(self):
        self.lock, self.running, self.gone = threading.Lock(), set(), False

    def run(self, root, *args):
        with self.lock:
            if self.gone:
                return ""
            process = subprocess.Popen([sys.executable, str(Path(root) / "agenda.py"), *args], stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, env=child_env())
            self.running.add(process)
        try:
            return process.communicate(timeout=300)[0]
        finally:
            with self.lock:
                self.running.discard(process)

    def kill(self):
        with self.lock:
            self.gone = True
            for process in self.running:
                stop(process.pid)


def command_writer(root, db_path, beside, stopped):
    """Closures added and removed by `agenda closed`, a command run beside the service (acknowledged by
    nobody: what it proves is that it leaves checkpoints to Litestream)."""
    day = (dt.date.today() + dt.timedelta(days=200)).strftime("%d/%m/%Y")
    while not stopped.wait(1.0):  # a command starts in about half a second of CPU: one pair a second at most
        added = beside.run(root, "closed", "add", "--doctor", CLOSED_DOCTOR, "--from", day, "--reason", "Congreso",
                           "--db", str(db_path))
        for closure in re.findall(r"Added closure (\d+)", added):
            beside.run(root, "closed", "remove", closure, "--db", str(db_path))


@dataclass
class Round:
    """One round's outcome: what was acknowledged, and what is wrong with the restore (nothing: [])."""
    acknowledged: int
    problems: list
    restored_events: int = 0
    primary_events: int = 0
    checkpoints_alone: int = 0  # passive checkpoints the service ran while Litestream was down


def crash_round(root, folder, rng, cores="one", litestream_down=False, replica=None):
    """One round in `folder` (new, empty): a clinic, eight writers, SIGKILL at a random moment 1 to 4 s in,
    a restore, and the problems found. With litestream_down, Litestream is killed as soon as it starts for
    a few seconds first, so that the service checkpoints by itself meanwhile, then let be. `replica`: another
    replica than the folder's own (a URL in S3-compatible storage, with its keys in the environment)."""
    db_path, replica, acked, alone = served_and_killed(root, Path(folder), rng, cores, litestream_down, replica)
    restored = Path(folder) / "restored.db"
    done = agenda(root, "restore", "--from-replica", str(replica), "--db", str(restored), "-y")
    if done.returncode != 0:
        return Round(acked.count(), [f"restore refused: {(done.stdout + done.stderr).strip()[-600:]}"],
                     checkpoints_alone=alone)
    return Round(acked.count(), *held(db_path, restored, acked), checkpoints_alone=alone)


def served_and_killed(root, folder, rng, cores, litestream_down=False, replica=None):
    """(the killed primary's file, its replica, what was acknowledged, the service's own checkpoints) of a clinic
    served with eight writers and killed at a random moment."""
    db_path, replica = folder / "clinic.db", replica or folder / "replica"
    (folder / "catalogs.csv").write_text(CLINIC_CSV, encoding="utf-8")
    for args, given in ((("seed", str(folder / "catalogs.csv")), None), (("staff", "add", "ana"), PASSWORD + "\n")):
        done = agenda(root, *args, "--db", str(db_path), input=given)
        assert done.returncode == 0, done.stdout + done.stderr
    down = ("--litestream-down-after", "1") if litestream_down else ()
    service = Service(root, folder, db_path, "--replica", str(replica), "--ack-after-replication", "--cores", cores,
                      *down)
    acked, stopped, beside = Acknowledged(), threading.Event(), Beside()
    try:
        wait_for(lambda: send(service.url, "GET", "/health")[0] == 200, message="the replica answering")
        writers = [until_gone(api_writer, service.url, n, acked, stopped) for n in range(1, API_WRITERS + 1)]
        writers += [until_gone(patients_writer, service.url, acked, stopped),
                    until_gone(desk_writer, service.url, acked, stopped),
                    until_gone(command_writer, root, db_path, beside, stopped)]
        for writer in writers:
            writer.start()
        if litestream_down:
            wait_for(lambda: acked.count() >= 20, message="the first acknowledged changes")
            keep_down(service, seconds=4)
        time.sleep(rng.uniform(1.0, 4.0))
    finally:
        beside.kill()  # the machine dies: its commands with the service and Litestream
        service.kill()
        stopped.set()
    for writer in writers:
        writer.join(timeout=120)
    return db_path, replica, acked, sum("the service checkpointed" in line for line in list(service.lines))


def damaged_file_round(root, folder, rng, cores="one", upload=None, restore_env=None):
    """A crash round whose replica is then compacted by Litestream (level 1, every second) and one compacted
    file damaged as a disk damages one, 16 bytes flipped in its middle; `agenda restore --from-replica` must
    give the primary's newest state whole, every appointment as the primary has it, with no loss said and
    nobody to phone (the files it was compacted from hold the same changes); and a restore at an earlier
    transaction, the list to phone the truth (`phoned`). `upload(folder)`: the replica's files put elsewhere once
    damaged (an S3 store), its URL: the restores then read that replica."""
    db_path, replica, acked, _ = served_and_killed(root, Path(folder), rng, cores)
    compacted(db_path, replica, Path(folder))
    damaged = max(Path(replica, "ltx", "1").glob("*.ltx"))  # the newest: the newest state needs it
    data = bytearray(damaged.read_bytes())
    for index in range(len(data) // 2, min(len(data), len(data) // 2 + 16)):
        data[index] ^= 0xFF
    damaged.write_bytes(bytes(data))
    source = upload(replica) if upload else str(replica)
    restored = Path(folder) / "restored.db"
    done = agenda(root, "restore", "--from-replica", source, "--db", str(restored), "-y", env=restore_env or {})
    said = done.stdout + done.stderr
    if done.returncode != 0:
        return Round(acked.count(), [f"restore refused: {said.strip()[-600:]}"])
    problems, ours, theirs = held(db_path, restored, acked)
    facts = "SELECT id, date, time, doctor_id, status FROM appointments ORDER BY id"
    if rows(restored, facts) != rows(db_path, facts):
        problems.append("the restore's appointments are not the primary's newest")
    problems += [f"said {words!r} though nothing is lost" for words in ("phone these patients", "unknown", "Changed ",
                                                                        "More may have changed") if words in said]
    return Round(acked.count(), problems + phoned(root, replica, db_path, Path(folder), rng, source, restore_env),
                 ours, theirs)


def phoned(root, replica, primary, folder, rng, source=None, restore_env=None):
    """Problems of a restore at an earlier transaction of the replica, drawn at random: the appointments it says
    to phone, and their count, must be those whose date, time, doctor or state differ between it and the
    primary's newest state (one booked and cancelled since left out), as read here with plain SQL."""
    points = sorted(int(path.name[17:33], 16) for path in Path(replica, "ltx", "0").glob("*.ltx"))
    point = rng.choice(points[:-1] or points)
    earlier = folder / "earlier.db"
    done = agenda(root, "restore", "--from-replica", source or str(replica), "--at", f"transaction {point}", "--db",
                  str(earlier), "-y", env=restore_env or {})
    if done.returncode != 0:
        return [f"restore at transaction {point} refused: {(done.stdout + done.stderr).strip()[-600:]}"]
    facts = "SELECT id, date, time, doctor_id, status FROM appointments"
    before, after = ({row[0]: row[1:] for row in rows(path, facts)} for path in (earlier, primary))
    truth = sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key)
                   and not (key not in before and after[key][3] == "cancelled"))
    said = done.stdout.partition("Changed after that moment")[2]
    counted = re.match(r" \((\d+) appointments?\)", said)
    listed = [int(found) for found in re.findall(r"^  (\d+): ", said, re.MULTILINE)]
    if listed != sorted(listed, key=lambda key: ((after.get(key) or before[key])[0], key)) or sorted(listed) != truth \
            or (int(counted[1]) if counted else 0) != len(truth):
        return [f"at transaction {point}: listed {sorted(listed)} to phone, {counted and counted[1]} counted; the "
                f"appointments that differ are {truth}"]
    return []


def compacted(db_path, replica, folder):
    """Litestream run on the killed primary's file, compacting every second, until a level-1 file holds the
    replica's newest transaction; then stopped (SIGTERM)."""
    config = folder / "compact.yml"
    config.write_text(json.dumps({"levels": [{"interval": "1s"}], "dbs": [{"path": str(db_path), "replica": {
        "url": f"file://{replica}", "sync-interval": "1s"}}]}), encoding="utf-8")
    binary = next(path for path in (Path(sys.executable).parent / "litestream",) if path.exists())
    process = subprocess.Popen([str(binary), "replicate", "-config", str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)

    def newest(level):
        return max((int(path.name[17:33], 16) for path in Path(replica, "ltx", str(level)).glob("*.ltx")), default=-1)
    try:
        wait_for(lambda: newest(1) > 1 and newest(1) == newest(0), 60, "a level-1 file holding the newest "
                 "transaction")
    finally:
        process.terminate()  # it ships what it has not yet shipped, then exits
        process.wait(timeout=60)


def until_gone(writer, *args):
    """A thread running `writer` until it ends or the service is gone (killed mid-answer)."""
    def run():
        try:
            writer(*args)
        except (OSError, http.client.HTTPException):
            pass
    return threading.Thread(target=run, daemon=True)


def keep_down(service, seconds):
    """Kill each Litestream the service starts, for `seconds`."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        service.kill_litestream()
        time.sleep(0.1)


def rows(path, sql, params=()):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def held(primary, restored, acked):
    """(problems, restored events, primary events): the restore passes integrity_check, its events are
    the killed primary's first k (k at least the event of every acknowledged change), and it holds every
    acknowledged booking of the desk."""
    problems = [f"integrity_check: {row[0]}" for row in rows(restored, "PRAGMA integrity_check") if row[0] != "ok"]
    ours = rows(restored, "SELECT * FROM events WHERE action != 'database.restored' ORDER BY id")
    theirs = rows(primary, "SELECT * FROM events ORDER BY id")
    if ours != theirs[:len(ours)]:
        first = next(n for n, (a, b) in enumerate(zip(ours + [None] * len(theirs), theirs)) if a != b)
        problems.append(f"events differ from the primary's from row {first + 1}")
    by_entity = {}
    for event in theirs:  # (id, at, source, action, entity, entity_id, before, after)
        by_entity.setdefault((event[4], event[5]), []).append(event[0])
    needed = 0
    for key, count in acked.changes.items():
        if len(by_entity.get(key, [])) < count:
            problems.append(f"the primary has fewer events than acknowledged changes for {key}")
        else:
            needed = max(needed, by_entity[key][count - 1])
    last = ours[-1][0] if ours else 0
    if last < needed:
        problems.append(f"the restore ends at event {last}; acknowledged changes reach event {needed}")
    booked = set(rows(restored, "SELECT doctor_id, date, time FROM appointments"))
    lost = [slot for slot in acked.desk if slot not in booked]
    if lost:
        problems.append(f"{len(lost)} acknowledged desk bookings missing, e.g. {lost[0]}")
    return problems, len(ours), len(theirs)
