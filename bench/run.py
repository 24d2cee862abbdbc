r"""One command for the whole benchmark (bench/README.md, its targets and results):
build a large clinic (300,000 appointments) and a small one (3,000), serve each with
`agenda run` on 127.0.0.1 with no cache of answers, drive every endpoint at 1, 4 and 16
connections on the large one and at 1 on the small one, do the same to two bare waitress +
SQLite apps (one indexed lookup; one durable INSERT and commit), and print a markdown
table and one line per target, met or missed.

    .venv/bin/python bench/run.py                # about 7 minutes on 2 cores
    .venv/bin/python bench/run.py --quick        # fewer requests and rounds: a smoke run, under 2 minutes
    .venv/bin/python bench/run.py --replication-only   # only the booking with Litestream off/on/acked
    .venv/bin/python bench/run.py --agenda /tmp/agenda-before/agenda.py --server-arg=--answer-cache-mb \
        --server-arg=0                           # another agenda.py, e.g. an older commit's worktree

--agenda PATH measures that agenda.py instead of this checkout's: the bench imports it (so
the databases are built with its own schema and catalog code) and serves it with
`python PATH run`; its schema.sql must lie beside it. --server-arg ARG (repeatable) is
added to that `run` command line, e.g. `--answer-cache-mb 0` for a server of before the
rework, which kept answers by default. Requests are signed with the `request` scheme
(HMAC-SHA256 of METHOD, path with query as sent and body, joined by newlines) with the
secret the bench gives the server. AGENDA_THREADS sets `agenda run`'s threads and the bare
apps' alike (default: `agenda run`'s own default).

Every run is bounded: at most --requests requests or --seconds seconds per endpoint and
concurrency, and a fixed number of paired rounds; to 127.0.0.1 only; the servers it starts
are stopped by their process id, and every file it writes is in one temporary folder.

The replication section (issue "Replication", item 7) books (POST /appointments) at 1 and 4
connections on three copies of the large clinic, each served by its own `agenda run`: without
a replica, with `--replica FOLDER` (Litestream ships every second), and with
`--ack-after-replication` too; then measures, on the one replicating without acks, how long
after a booking's answer the replica holds it (the loss window of a machine lost meanwhile).
"""

import argparse
import datetime as dt
import hashlib
import hmac
import http.client
import importlib
import itertools
import json
import os
import platform
import random
import re
import selectors
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from zoneinfo import ZoneInfo

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

agenda = generate = slots = events = None  # imported by load_agenda(): this checkout's agenda.py, or --agenda's
AGENDA_PATH = ROOT / "agenda.py"
SERVER_ARGS = []
THREADS = 1

SECRET = "bench-secret"
LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
CONNECTIONS = (1, 4, 16)


def load_agenda(path):
    """Import the agenda.py at `path`, the insides the bench reads (from the same checkout), and
    bench/generate.py, which uses them."""
    global agenda, generate, slots, events, AGENDA_PATH, THREADS
    AGENDA_PATH = Path(path).resolve()
    sys.path.insert(0, str(AGENDA_PATH.parent))
    agenda = importlib.import_module("agenda")
    if Path(agenda.__file__).resolve() != AGENDA_PATH:
        raise SystemExit(f"imported {agenda.__file__}, not {AGENDA_PATH}")
    slots, events = importlib.import_module("_agenda.domain.slots"), importlib.import_module("_agenda.storage.events")
    generate = importlib.import_module("generate")
    THREADS = int(os.environ.get("AGENDA_THREADS") or next(
        option.default for option in agenda.run.params if option.name == "threads"))  # agenda run reads it too


class Process:
    """A server child process on 127.0.0.1:0; its URL from the line it logs, its log drained
    (noting the Litestream it starts, by process id, and the snapshots Litestream logs)."""

    def __init__(self, command, env=None):
        self.litestream_pids, self.snapshots = set(), 0
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env={**os.environ, **(env or {})}, cwd=ROOT)
        self.port = None
        deadline = time.monotonic() + 30
        for line in self.process.stdout:
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if found:
                self.port = int(found[1])
                break
            if time.monotonic() > deadline:
                break
        if self.port is None:
            self.stop()
            raise SystemExit(f"{command} did not start")
        threading.Thread(target=lambda: [self.note(line) for line in self.process.stdout], daemon=True).start()

    def note(self, line):
        started = re.search(r"litestream started \(pid (\d+)\)", line)
        if started:
            self.litestream_pids.add(int(started[1]))
        elif re.search(r"litestream: .*snapshot (complete|written)", line):
            self.snapshots += 1

    def rss_mb(self):
        """Resident memory in MB: all of it, and the part that is the database file's pages
        read through SQLite's memory map (shared with the page cache, not the process's own)."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return tuple(int(re.search(rf"{field}:\s+(\d+) kB", status)[1]) / 1024 for field in ("VmRSS", "RssFile"))

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        for pid in self.litestream_pids:  # `agenda run` stops its Litestream; should it not have, by its id
            try:
                if b"litestream" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGTERM)
            except (OSError, ProcessLookupError):
                pass


def agenda_server(db_path, extra=()):
    return Process([sys.executable, str(AGENDA_PATH), "run", "--db", str(db_path), "--port", "0", *SERVER_ARGS,
                    *extra], env={"AGENDA_SECRET": SECRET})


def bare_server(script, db_path):
    return Process([sys.executable, str(HERE / script), str(db_path), "--threads", str(THREADS)])


def signature(method, path, raw):
    """X-Signature under the `request` scheme ("Signatures"): METHOD, path with query exactly
    as sent, and the raw body, joined by newlines."""
    message = method.encode() + b"\n" + path.encode("latin-1") + b"\n" + raw
    return hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()


def drive(port, make_request, connections, requests, seconds):
    """Send up to `requests` requests (or for `seconds`) over `connections` keep-alive
    connections; (requests per second, sorted latencies in ms, non-2xx answers).

    One thread serves every connection through a selector: each sends its next request as
    soon as its answer is in, like that many clients. Not a thread per connection: sixteen
    Python threads wait for one another's interpreter lock, and that wait (up to 5 ms a
    switch) would land in the latencies measured, on top of the server's."""
    budget = iter(range(requests))
    deadline = time.monotonic() + seconds
    latencies, failures = [], []
    selector = selectors.DefaultSelector()

    def send_next(client, started=None):
        number = next(budget, None) if time.monotonic() < deadline else None
        if number is None:
            selector.unregister(client["sock"])
            client["sock"].close()
            return
        method, path, body = make_request(client["worker"], number)
        raw = b"" if body is None else json.dumps(body).encode()
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Signature: {signature(method, path, raw)}\r\n" \
               "Accept: application/json\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n"
        client["started"] = started or time.perf_counter()
        client["sock"].sendall(head.encode() + b"\r\n" + raw)

    def answer_in(client):
        """(status, bytes the answer takes, whether the server closes the connection after
        it) once its head is in the buffer, else None."""
        buffer = client["buffer"]
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = bytes(buffer[:end]).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ", 2)[1])
        length, closing = 0, False
        for line in head[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection":
                closing = value.strip().lower() == "close"
            elif name == "transfer-encoding":
                raise RuntimeError("the bench reads answers with a Content-Length only")
        return status, end + 4 + length, closing

    def connect(client):
        client["sock"] = socket.create_connection(("127.0.0.1", port), timeout=30)
        client["sock"].setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        selector.register(client["sock"], selectors.EVENT_READ, client)

    clients = [{"worker": worker, "buffer": bytearray(), "started": 0.0} for worker in range(connections)]
    for client in clients:
        connect(client)
    started = time.perf_counter()
    for client in clients:
        send_next(client)
    while selector.get_map():
        events = selector.select(timeout=30)
        if not events:
            raise RuntimeError("no answer in 30 s")
        for key, _ in events:
            client = key.data
            chunk = client["sock"].recv(262144)
            if not chunk:
                raise RuntimeError("the server closed a connection in the middle of the bench")
            client["buffer"] += chunk
            answer = answer_in(client)
            if answer is None or len(client["buffer"]) < answer[1]:
                continue
            latencies.append((time.perf_counter() - client["started"]) * 1000)
            if answer[0] >= 300:
                failures.append(answer[0])
            del client["buffer"][:answer[1]]
            if answer[2]:  # as an HTTP client does: a new connection, its time counted in the next answer
                selector.unregister(client["sock"])
                client["sock"].close()
                reconnected = time.perf_counter()
                connect(client)
                send_next(client, reconnected)
            else:
                send_next(client)
    elapsed = time.perf_counter() - started
    latencies.sort()
    return len(latencies) / elapsed, latencies, failures


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def window(today):
    """The week the day endpoints ask about (the day after tomorrow and six more): the small
    clinic's 3,000 appointments lie in it, as many a day as the large clinic's."""
    return today + dt.timedelta(days=2), today + dt.timedelta(days=8)


RANGE = "GET /appointments/range (3 working days)"
AVAILABILITY = "GET /availabilities (10 doctors, 14 days)"
WRITES = ("POST /patients", "POST /appointments", "PUT /appointments/{id}", "DELETE /appointments/{id}",
          "POST /appointments/confirm", "POST /appointments/end-of-reminder-day")
RATIO_ENDPOINTS = ("GET /patients", "GET /appointments/{id}")


def workload(db_path, today):
    """Request makers for every endpoint, with ids and free slots read from the database.
    Every write changes something: each booking takes a new slot, each cancel and confirm
    another booked appointment, each reminder close is a new cycle; `state["overdrawn"]`
    names a pool that ran out (its requests then repeat, and the report says so)."""
    conn = sqlite3.connect(db_path)
    nifs = [row[0] for row in conn.execute("SELECT nif FROM patients ORDER BY random() LIMIT 2000")]
    patient_ids = [row[0] for row in conn.execute("SELECT id FROM patients ORDER BY random() LIMIT 2000")]
    first, last = window(today)
    horizon = today + dt.timedelta(days=89)
    live = [row[0] for row in conn.execute(
        "SELECT id FROM appointments WHERE status != 'cancelled' AND date BETWEEN ? AND ? ORDER BY random() LIMIT 2000",
        (first.isoformat(), last.isoformat()))]
    candidates = [row[0] for row in conn.execute(
        "SELECT id FROM appointments WHERE status = 'booked' AND date BETWEEN ? AND ? ORDER BY id",
        (first.isoformat(), horizon.isoformat()))]
    conn.close()
    random.Random(5).shuffle(candidates)
    live_set = set(live)
    cancel_pool = [key for number, key in enumerate(candidates) if number % 2 == 0 and key not in live_set]
    cancel_set = set(cancel_pool)
    confirm_pool = [key for key in candidates if key not in cancel_set]
    week = [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]
    week_days = [day.strftime("%d/%m/%Y") for day in week]
    working_days = [day.strftime("%d/%m/%Y") for day in week if day.weekday() < 5]

    def free_slots(seed):
        """Every free slot up to the booking horizon (90 days), shuffled."""
        conn = agenda.connect(db_path)
        doctors = [dict(row) for row in conn.execute("SELECT * FROM doctors ORDER BY id")]
        window = slots.booking_window(dt.datetime.now(dt.timezone.utc), ZoneInfo("Europe/Madrid"), 0,
                                      (horizon - first).days)
        free = slots.free_slots(conn, doctors, first, horizon, window=window)
        conn.close()
        random.Random(seed).shuffle(free)
        return free

    free = free_slots(3)
    by_doctor_day = {}
    for slot in free:
        by_doctor_day.setdefault((slot.doctor_id, slot.date_text, slot.center_id), []).append(slot)
    pairs = [slots[:2] for slots in by_doctor_day.values() if len(slots) >= 2][:16]  # one per mover
    paired = {(slot.doctor_id, slot.date_text, slot.time) for pair in pairs for slot in pair}
    singles = [slot for slot in free if (slot.doctor_id, slot.date_text, slot.time) not in paired]
    state = {"movers": {}, "to_cancel": None, "overdrawn": set(), "recycled": 0,
             "pools": {"free slots": len(singles), "to confirm": len(confirm_pool)}}

    def drawn(counter, pool, name):
        number = next(counter)
        if number >= len(pool):
            state["overdrawn"].add(name)
        return pool[number % len(pool)]

    def book_body(slot, patient):
        return {"date": slot.date_text, "time": slot.time, "doctorId": slot.doctor_id,
                "patientId": str(patient), "reason": "Bench"}

    bookings = [itertools.count(), 0]  # the counter, and how many of `singles` it had drawn at the last refill
    patients_for_bookings = itertools.count()

    def refill(requests):
        """Before a timed run of bookings, at least `requests` free slots left: when not, the
        bench cancels its own earlier bookings in the database (the large clinic's next 90
        days are 97% booked, and ~3,000 free slots are fewer than the bookings timed) and
        lists the free slots again. Never during a timed run: it writes, and would be timed."""
        drawn_so_far = next(bookings[0])  # one number skipped, harmless
        if len(singles) - drawn_so_far >= requests:
            bookings[0] = itertools.count(drawn_so_far)
            return
        keep = {int(appointment) for appointment, _, _ in state["movers"].values()} | set(state["to_cancel"] or ())
        conn = sqlite3.connect(db_path, timeout=30, isolation_level=None)
        mine = [row[0] for row in conn.execute("SELECT id FROM appointments WHERE reason = 'Bench' AND status = 'booked'")
                if row[0] not in keep]
        at = events.utc_iso(dt.datetime.now(dt.timezone.utc))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("UPDATE appointments SET status = 'cancelled', cancelled_at = ?, cancel_reason = ?,"
                         " updated_at = ? WHERE id = ?", ((at, "bench: slot reused", at, key) for key in mine))
        conn.execute("COMMIT")
        conn.close()
        state["recycled"] += len(mine)
        singles[:] = [slot for slot in free_slots(len(singles) + drawn_so_far)
                      if (slot.doctor_id, slot.date_text, slot.time) not in paired]
        bookings[0] = itertools.count()

    def post_appointment(worker, n):
        """A new slot each time, across every run: a repeat would be an idempotent retry ("Booking")."""
        slot = drawn(bookings[0], singles, "free slots")
        return "POST", "/appointments", book_body(slot, patient_ids[next(patients_for_bookings) % len(patient_ids)])

    def put_appointment(worker, n):
        appointment, (one, other), turn = state["movers"][worker]
        target = other if turn % 2 == 0 else one
        state["movers"][worker] = (appointment, (one, other), turn + 1)
        return "PUT", f"/appointments/{appointment}", {"newDate": target.date_text, "newTime": target.time}

    numbers = itertools.count(70_000_000)

    def new_patient(number):
        return "POST", "/patients", {"name": "Bench", "surname": "Load", "nif": f"{number:08d}{LETTERS[number % 23]}",
                                     "phone": f"6{number % 100_000_000:08d}"}

    cancels = itertools.count()

    def delete_appointment(worker, n):
        """Each request cancels another booked appointment: first those POST /appointments
        booked, then others of the next 90 days that no read asks about."""
        return "DELETE", f"/appointments/{drawn(cancels, state['to_cancel'], 'to cancel')}", None

    confirms = itertools.count()

    def confirm_appointment(worker, n):
        """Each request confirms another booked appointment (a repeat would change nothing)."""
        return "POST", "/appointments/confirm", {"appointmentId": str(drawn(confirms, confirm_pool, "to confirm")),
                                                 "confirmed": True}

    cycles = itertools.count()

    def close_reminder_day(worker, n):
        """Each request closes a new reminder cycle (a repeat answers `repeated`, changing nothing)."""
        number = next(cycles)
        return "POST", "/appointments/end-of-reminder-day", {
            "voiceAgentConfigId": f"bench-{number}", "date": working_days[number % len(working_days)]}

    endpoints = [
        ("GET /health", lambda w, n: ("GET", "/health", None)),
        ("GET /custom-config", lambda w, n: ("GET", "/custom-config", None)),
        ("GET /patients", lambda w, n: ("GET", f"/patients?nif={nifs[n % len(nifs)]}", None)),
        ("POST /patients", lambda w, n: new_patient(next(numbers))),
        (AVAILABILITY, lambda w, n: (
            "GET", f"/availabilities?specialityId=MG&startDate={week_days[n % 7]}"
                   f"&endDate={(week[n % 7] + dt.timedelta(days=13)).strftime('%d/%m/%Y')}", None)),
        ("GET /appointments?date", lambda w, n: (
            "GET", f"/appointments?date={working_days[n % len(working_days)]}", None)),
        ("GET /appointments?nif", lambda w, n: ("GET", f"/appointments?nif={nifs[n % len(nifs)]}", None)),
        (RANGE, lambda w, n: (
            "GET", "/appointments/range?dates=" + ",".join(working_days[n % 3: n % 3 + 3]), None)),
        ("GET /appointments/{id}", lambda w, n: ("GET", f"/appointments/{live[n % len(live)]}", None)),
        ("POST /appointments", post_appointment),
        ("PUT /appointments/{id}", put_appointment),
        ("DELETE /appointments/{id}", delete_appointment),
        ("POST /appointments/confirm", confirm_appointment),
        ("POST /appointments/end-of-reminder-day", close_reminder_day),
    ]

    def prepare(name, port, requests):
        """Book what a move needs, list what a cancel takes (the bench's bookings since the
        last run added), and free slots for bookings, before each timed run of that endpoint."""
        if name == "POST /appointments":
            refill(requests)
        if name == "PUT /appointments/{id}" and not state["movers"]:
            for worker, (one, other) in enumerate(pairs):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                raw = json.dumps(book_body(one, patient_ids[worker])).encode()
                conn.request("POST", "/appointments", body=raw, headers={
                    "X-Signature": signature("POST", "/appointments", raw), "Content-Type": "application/json"})
                answer = conn.getresponse()
                if answer.status not in (200, 201):
                    raise SystemExit(f"booking a mover: {answer.status} {answer.read()[:300]!r}")
                state["movers"][worker] = (json.loads(answer.read())["appointmentId"], (one, other), 0)
                conn.close()
        if name == "DELETE /appointments/{id}":  # the bookings since the last run join the pool's end
            movers = {int(appointment) for appointment, _, _ in state["movers"].values()}
            conn = sqlite3.connect(db_path)
            booked = [row[0] for row in conn.execute(
                "SELECT id FROM appointments WHERE reason = 'Bench' AND status = 'booked' ORDER BY id")]
            conn.close()
            known = set(state["to_cancel"] or ())
            fresh = [key for key in booked if key not in movers and key not in known]
            state["to_cancel"] = fresh + cancel_pool if state["to_cancel"] is None else state["to_cancel"] + fresh
            state["pools"]["to cancel"] = len(state["to_cancel"])

    return endpoints, prepare, state, nifs


def bare_read_request(nifs):
    return lambda w, n: ("GET", f"/?nif={nifs[n % len(nifs)]}", None)


def bare_write_request(w, n):
    return "POST", "/", {"name": "Bench", "worker": w, "number": n}


def measure(port, make, count, requests, seconds, label):
    rate, latencies, failures = drive(port, make, count, requests, seconds)
    figures = {"rate": rate, "p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99),
               "count": len(latencies), "failures": len(failures), "statuses": sorted(set(failures))}
    print(f"  {label} x{count}: {rate:.0f}/s p50 {figures['p50']:.2f} ms p99 {figures['p99']:.2f} ms"
          f" ({len(failures)} non-2xx{': ' + str(figures['statuses']) if failures else ''})", file=sys.stderr)
    return figures


def paired_rounds(ours, bare, rounds, requests, seconds, label, before=lambda: None):
    """Agenda and a bare app, both running, driven in turn at 16 connections `rounds` times,
    every other round the bare app first: each round's ratio is taken a second apart, so the
    machine's drift over minutes cancels out, and a drift within a round does too. The
    median round counts: a burst from another tenant can take a third off one side of a
    round. Returns the rounds' (ratio of requests a second, ratio of p50s), and the rounds."""
    seen = []
    for number in range(rounds):
        before()
        figures = {}
        for side in (("ours", "bare") if number % 2 == 0 else ("bare", "ours")):
            port, make = ours if side == "ours" else bare
            rate, latencies, failures = drive(port, make, 16, requests, seconds)
            figures[side] = (rate, percentile(latencies, 0.5), len(failures))
        seen.append(figures)
    rate_ratios = [f["ours"][0] / f["bare"][0] for f in seen]
    p50_ratios = [f["ours"][1] / f["bare"][1] for f in seen]
    print(f"  paired {label}: req/s ratios {', '.join(f'{r:.2f}' for r in rate_ratios)};"
          f" p50 ratios {', '.join(f'{r:.2f}' for r in p50_ratios)}", file=sys.stderr)
    return {"rate_ratios": sorted(rate_ratios), "p50_ratios": sorted(p50_ratios),
            "rate": statistics.median(f["ours"][0] for f in seen), "bare_rate": statistics.median(f["bare"][0] for f in seen),
            "p50": statistics.median(f["ours"][1] for f in seen), "bare_p50": statistics.median(f["bare"][1] for f in seen),
            "failures": sum(f["ours"][2] for f in seen)}


def table_round(servers, loads, requests, seconds):
    """One round of the table: each endpoint on the large clinic at 1 connection, at once on the
    small one at 1 (the two p50s of the 300k/3k ratio back to back, so that the shared
    machine's drift does not land between them), then on the large one at 4 and 16."""
    runs = {"300k": {}, "3k": {}}
    for number, (name, _) in enumerate(loads["300k"][0]):
        for label, count in (("300k", 1), ("3k", 1), *(("300k", count) for count in CONNECTIONS[1:])):
            endpoints, prepare, _, _ = loads[label]
            prepare(name, servers[label].port, requests)
            runs[label][name, count] = measure(servers[label].port, endpoints[number][1], count, requests, seconds,
                                               f"{label} {name}")
    return runs


def median_of_rounds(rounds):
    """Each run's requests a second, p50 and p99 as the median of its rounds' (a few minutes
    apart, so that a spell of slow cores moves one round, not the figure); failures summed;
    the rounds' p50s and p99s kept, sorted, for the report."""
    out = {}
    for key in rounds[0]:
        seen = [runs[key] for runs in rounds]
        out[key] = {figure: statistics.median(f[figure] for f in seen) for figure in ("rate", "p50", "p99")}
        out[key].update(count=sum(f["count"] for f in seen), failures=sum(f["failures"] for f in seen),
                        statuses=sorted({status for f in seen for status in f["statuses"]}),
                        p50s=sorted(f["p50"] for f in seen), p99s=sorted(f["p99"] for f in seen))
    return out


def bench(big, small, options, today, folder):
    """Every measurement, with all four servers running (an idle one costs nothing):
    the bare lookup app at every concurrency; the table's rounds (`table_round`); the
    bare lookup app again (the better of its two runs counts); the paired read rounds; the
    bare write app at every concurrency; the paired write rounds."""
    servers = {}
    try:
        servers["300k"] = agenda_server(big)
        servers["3k"] = agenda_server(small)
        servers["bare read"] = bare_server("bare_app.py", big)
        servers["bare write"] = bare_server("bare_write_app.py", Path(folder) / "bare-writes.db")
        loads = {"300k": workload(big, today), "3k": workload(small, today)}
        read_bare = bare_read_request(loads["300k"][3])
        out, bare_runs, rounds = {}, [], []
        for _ in range(2):
            runs = {count: measure(servers["bare read"].port, read_bare, count, options.requests, options.seconds,
                                   "bare read") for count in CONNECTIONS}
            bare_runs.append(runs)
            if rounds:
                break
            for _ in range(options.table_rounds):  # the requests shared among the rounds
                rounds.append(table_round(servers, loads, max(1, options.requests // options.table_rounds),
                                          options.seconds))
            out["rss"] = servers["300k"].rss_mb()
        out["300k"], out["3k"] = median_of_rounds([r["300k"] for r in rounds]), median_of_rounds([r["3k"] for r in rounds])
        out["growth"] = {name: statistics.median(r["300k"][name, 1]["p50"] / r["3k"][name, 1]["p50"] for r in rounds)
                         for name, _ in loads["300k"][0]}
        out["bare read"] = {count: max((runs[count] for runs in bare_runs), key=lambda f: f["rate"])
                            for count in CONNECTIONS}
        out["bare read rates"] = [runs[16]["rate"] for runs in bare_runs]
        endpoints = dict(loads["300k"][0])
        out["paired reads"] = {name: paired_rounds((servers["300k"].port, endpoints[name]),
                                                   (servers["bare read"].port, read_bare), options.rounds,
                                                   options.requests, options.seconds, name)
                               for name in RATIO_ENDPOINTS}
        out["bare write"] = {count: measure(servers["bare write"].port, bare_write_request, count, options.requests,
                                            options.seconds, "bare write") for count in CONNECTIONS}
        prepare = loads["300k"][1]
        out["paired writes"] = {name: paired_rounds(
            (servers["300k"].port, endpoints[name]), (servers["bare write"].port, bare_write_request),
            options.write_rounds, options.requests, options.seconds, name,
            before=lambda name=name: prepare(name, servers["300k"].port, options.requests)) for name in WRITES}
        out["pools"] = {label: (load[2]["pools"], sorted(load[2]["overdrawn"]), load[2]["recycled"])
                        for label, load in loads.items()}
        return out
    finally:
        for server in servers.values():
            server.stop()


REPLICATION_MODES = (("off", ()), ("on", ("--replica",)), ("on, acked", ("--replica", "--ack-after-replication")))
BOOKING = "POST /appointments"


def litestream():
    """The litestream executable `agenda run --replica` uses: AGENDA_LITESTREAM, else beside this Python."""
    candidates = [os.environ.get("AGENDA_LITESTREAM"), str(Path(sys.executable).parent / "litestream")]
    return next((path for path in candidates if path and os.access(path, os.X_OK)), None)


def replica_files(folder, level="all"):
    """The LTX files `litestream ltx` lists in a replica folder: (level, highest transaction id)."""
    result = subprocess.run([litestream(), "ltx", "-level", level, "-json", "file://" + str(Path(folder).resolve())],
                            capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        return []
    return [(item["level"], int(item["max_txid"], 16)) for item in json.loads(result.stdout or "[]")]


def replication_copies(big, folder):
    """One copy of the freshly built large clinic per replication mode, made before any request,
    each served by its own server with its own replica folder."""
    copies = {}
    source = sqlite3.connect(big)
    for number, (mode, _) in enumerate(REPLICATION_MODES):
        copies[mode] = Path(folder) / f"replication-{number}.db"
        target = sqlite3.connect(copies[mode])
        source.backup(target)
        target.close()
    source.close()
    return copies


def replication(copies, options, today, folder, rounds, tries=5):
    """Bookings at 1 and 4 connections with replication off, on, and on with every write acked
    only once the replica holds it: all three servers running, each started replica's first
    snapshot written before any load (at most 180 s), the modes driven in turn in `rounds`
    rounds (the order rotated each round, latencies pooled), so the machine's drift falls on
    all three alike; then the loss window, `tries` times, on the server without acks."""
    if not any(option.name == "replica" for option in agenda.run.params) or litestream() is None:
        return {"skipped": f"{AGENDA_PATH} has no `run --replica`" if litestream() else "no litestream executable"}
    servers, replicas = {}, {}
    try:
        for number, (mode, flags) in enumerate(REPLICATION_MODES):
            extra = []
            if flags:
                replicas[mode] = Path(folder) / f"replica-{number}"
                replicas[mode].mkdir()
                extra = ["--replica", str(replicas[mode]), *flags[1:]]
            servers[mode] = agenda_server(copies[mode], extra)
        started, deadline = time.monotonic(), time.monotonic() + 180
        while not all(servers[mode].snapshots or any(level == 9 for level, _ in replica_files(replicas[mode], "9"))
                      for mode in replicas):
            if time.monotonic() > deadline:
                raise SystemExit("Litestream wrote no first snapshot of the large clinic in 180 s")
            time.sleep(0.5)
        snapshot = time.monotonic() - started
        print(f"  replicas' first snapshots written in {snapshot:.1f} s", file=sys.stderr)
        loads = {mode: workload(copies[mode], today) for mode in servers}
        for mode, server in servers.items():  # warm each server's pages and Litestream's sync path, untimed
            endpoints, prepare = dict(loads[mode][0]), loads[mode][1]
            prepare(BOOKING, server.port, 30)
            drive(server.port, endpoints[BOOKING], 1, 30, 2.0)
        out = {"snapshot": snapshot, "rounds": rounds, "runs": {}}
        for count in (1, 4):
            pooled = {mode: ([], 0.0, []) for mode in servers}
            for number in range(rounds):
                order = list(servers)[number % 3:] + list(servers)[:number % 3]
                for mode in order:
                    endpoints, prepare = dict(loads[mode][0]), loads[mode][1]
                    requests = max(1, options.requests // rounds)
                    prepare(BOOKING, servers[mode].port, requests)
                    started = time.perf_counter()
                    _, latencies, failures = drive(servers[mode].port, endpoints[BOOKING], count, requests,
                                                   options.seconds / rounds)
                    seen, elapsed, failed = pooled[mode]
                    pooled[mode] = (seen + latencies, elapsed + time.perf_counter() - started, failed + failures)
            for mode, (latencies, elapsed, failures) in pooled.items():
                latencies.sort()
                figures = {"rate": len(latencies) / elapsed, "p50": percentile(latencies, 0.5),
                           "p99": percentile(latencies, 0.99), "count": len(latencies), "failures": len(failures),
                           "statuses": sorted(set(failures))}
                out["runs"][mode, count] = figures
                print(f"  booking, replication {mode} x{count}: {figures['rate']:.0f}/s p50 {figures['p50']:.2f} ms "
                      f"p99 {figures['p99']:.2f} ms ({len(failures)} non-2xx)", file=sys.stderr)
        endpoints = dict(loads["on"][0])
        out["window"] = [loss_window(servers["on"].port, endpoints[BOOKING], replicas["on"], folder, number)
                         for number in range(tries)]
        print(f"  loss window: {', '.join('over 10 s' if w is None else f'{w * 1000:.0f} ms' for w in out['window'])}",
              file=sys.stderr)
        return out
    finally:
        for server in servers.values():
            server.stop()


def loss_window(port, make, replica, folder, number, bound=10.0, every=0.1):
    """Seconds from a booking's answer (no --ack-after-replication) until the replica holds it:
    `litestream ltx` on the replica folder every `every` s until a transaction newer than the
    replica's last one is listed, then a restore up to it must hold the new appointment (else
    the poll goes on); None when not within `bound` s. A random pause first: Litestream ships
    once a second, so a booking lands anywhere in that second, as a caller's does."""
    time.sleep(1.2 + random.Random(number).random())  # the previous try's shipment out of the way
    before = max((txid for _, txid in replica_files(replica)), default=0)
    method, path, body = make(0, number)
    raw = json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=raw, headers={"X-Signature": signature(method, path, raw),
                                                   "Content-Type": "application/json"})
    answer = conn.getresponse()
    booked, text = time.monotonic(), answer.read()
    conn.close()
    if answer.status not in (200, 201):
        raise SystemExit(f"booking for the loss window: {answer.status} {text[:300]!r}")
    appointment = json.loads(text)["appointmentId"]
    while time.monotonic() < booked + bound:
        polled = time.monotonic()
        newest = max((txid for _, txid in replica_files(replica)), default=0)
        if newest > before:
            restored = Path(folder) / "loss-window.db"
            subprocess.run([litestream(), "restore", "-txid", f"{newest:016x}", "-o", str(restored),
                            "file://" + str(Path(replica).resolve())], capture_output=True, timeout=120, check=True)
            conn = sqlite3.connect(restored)
            held = conn.execute("SELECT 1 FROM appointments WHERE id = ?", (int(appointment),)).fetchone()
            conn.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{restored}{suffix}").unlink(missing_ok=True)
            if held:
                return polled - booked
            before = newest
        time.sleep(every)
    return None


def per_working_day(db_path, today):
    """Live appointments a working day in the bench's week."""
    first, last = window(today)
    conn = sqlite3.connect(db_path)
    count, = conn.execute("SELECT count(*) FROM appointments WHERE status != 'cancelled' AND date BETWEEN ? AND ?",
                          (first.isoformat(), last.isoformat())).fetchone()
    conn.close()
    days = sum(1 for n in range((last - first).days + 1) if (first + dt.timedelta(days=n)).weekday() < 5)
    return count / days


def disk_flushes(folder, seconds=5.0, pages=6):
    """How long this machine's disk takes to make a write durable, without SQLite: `pages`
    4 KB pages written and fdatasync'd, over and over for `seconds`, about as often as the
    WAL commits of bookings at 16 connections, each under `synchronous=FULL` ("Storage").
    (p50 ms, p99 ms, max ms, how many took over 4 ms, how many in all.) A single writer
    waits for each one: one slow flush holds up every connection queued behind it."""
    path = Path(folder) / "flush-probe"
    size = 4 << 20
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.pwrite(descriptor, bytes(size), 0)
        os.fsync(descriptor)
        page, offset, times = os.urandom(4096), 0, []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for _ in range(pages):
                os.pwrite(descriptor, page, offset)
                offset = (offset + len(page)) % size
            started = time.perf_counter()
            os.fdatasync(descriptor)
            times.append((time.perf_counter() - started) * 1000)
            time.sleep(0.0006)  # the rest of a booking's ~0.9 ms turn
    finally:
        os.close(descriptor)
        path.unlink()
    times.sort()
    return percentile(times, 0.5), percentile(times, 0.99), times[-1], sum(t > 4 for t in times), len(times)


CPU_WATCH = """
import json, os, signal, sys, time
parent = int(sys.argv[1])
def work():
    total = 0
    for number in range(20000):
        total += number * number
times = []
signal.signal(signal.SIGTERM, lambda *_: (print(json.dumps(times)), sys.exit(0)))
while os.getppid() == parent:  # the bench gone, the watcher goes too
    started = time.thread_time()
    work()
    times.append(time.thread_time() - started)
    time.sleep(0.5)
"""


def watch_cpu():
    """A child that times one fixed piece of Python work (about 1 ms) every half second, in
    CPU time, so that waiting for a core does not count: on a shared host the same work takes
    up to twice as long while a neighbour is busy, and every latency of the run moves with it."""
    return subprocess.Popen([sys.executable, "-c", CPU_WATCH, str(os.getpid())], stdout=subprocess.PIPE, text=True)


def cpu_steadiness(watcher):
    """Stop the watcher: (its p50 and p90 as multiples of its fastest, how many times)."""
    watcher.send_signal(signal.SIGTERM)
    times = sorted(json.loads(watcher.communicate(timeout=30)[0] or "[]"))
    if not times:
        return float("nan"), float("nan"), 0
    return percentile(times, 0.5) / times[0], percentile(times, 0.9) / times[0], len(times)


def cpu_seconds():
    """(CPU seconds the whole machine has been busy, those of this process and its waited-for
    children): their difference over the run is what other tenants of the machine took."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, _steal = fields
    own = os.times()
    return ((user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK"),
            own.user + own.system + own.children_user + own.children_system)


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    memory = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())[1]) / 1024 / 1024
    return (f"{os.cpu_count()} cores ({cpu}), {memory:.0f} GiB, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1500, help="most requests per endpoint and concurrency")
    parser.add_argument("--seconds", type=float, default=4.0, help="most seconds per endpoint and concurrency")
    parser.add_argument("--table-rounds", type=int,
                        help="rounds of the table, the requests shared among them; each figure is their median "
                             "(default 3; 1 with --quick)")
    parser.add_argument("--rounds", type=int, default=11, help="paired rounds for each read ratio target")
    parser.add_argument("--write-rounds", type=int, default=5, help="paired rounds for each write endpoint")
    parser.add_argument("--quick", action="store_true", help="300 requests, 2 s, 3 rounds: a smoke run")
    parser.add_argument("--replication-only", action="store_true",
                        help="only the replication section: bookings with Litestream off, on and acked, and the "
                             "loss window, on the large clinic")
    parser.add_argument("--agenda", default=str(ROOT / "agenda.py"), metavar="PATH",
                        help="the agenda.py to measure (default: this checkout's)")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                        help="one more argument to `agenda run` (repeat it; e.g. --server-arg=--answer-cache-mb "
                             "--server-arg=0 for a server from before the rework)")
    options = parser.parse_args()
    if options.quick:
        options.requests, options.seconds, options.rounds, options.write_rounds = 300, 2.0, 3, 3
    if options.table_rounds is None:
        options.table_rounds = 1 if options.quick else 3
    if options.table_rounds < 1 or options.requests < options.table_rounds:
        parser.error("--table-rounds must be at least 1 and at most --requests")
    load_agenda(options.agenda)
    SERVER_ARGS[:] = options.server_arg
    today = dt.date.today()
    started_all, cpu_before = time.perf_counter(), cpu_seconds()
    code = hashlib.sha256(AGENDA_PATH.read_bytes()).hexdigest()[:12]
    with tempfile.TemporaryDirectory() as folder:
        big, small = Path(folder) / "big.db", Path(folder) / "small.db"
        started = time.perf_counter()
        counts = generate.build(big, today=today)
        built = time.perf_counter() - started
        copies = replication_copies(big, folder)
        print(f"built {counts['appointments']:,} appointments, {counts['patients']:,} patients in {built:.1f} s",
              file=sys.stderr)
        density = (per_working_day(big, today),)
        if not options.replication_only:
            generate.build(small, patients=2000, appointments=3000, today=today, days=window(today))
            density += (per_working_day(small, today),)
        flushes, watcher = disk_flushes(folder), watch_cpu()
        try:
            out = {} if options.replication_only else bench(big, small, options, today, folder)
            out["replication"] = replication(copies, options, today, folder, rounds=1 if options.quick else 3)
        finally:
            steadiness = cpu_steadiness(watcher)
    cpu_after = cpu_seconds()
    setup = {"built": built, "density": density, "flushes": flushes, "steadiness": steadiness, "code": code,
             "today": today,
             "minutes": (time.perf_counter() - started_all) / 60, "options": options,
             "others": ((cpu_after[0] - cpu_before[0]) - (cpu_after[1] - cpu_before[1]))
             / (time.perf_counter() - started_all)}
    if options.replication_only:
        print("\n".join([run_line(setup), "", *replication_report(out["replication"], setup)]))
    else:
        print(report(out, setup))


def report(out, setup):
    results, small, bare, bare_write = out["300k"], out["3k"], out["bare read"], out["bare write"]
    density, options = setup["density"], setup["options"]
    names = list(dict.fromkeys(name for name, _ in results))
    server = f"`{AGENDA_PATH}` (sha256 {setup['code']}…)" + (
        f" with `{' '.join(SERVER_ARGS)}`" if SERVER_ARGS else "")
    lines = [
        run_line(setup),
        "",
        f"Database: 30 doctors, 3 centers, 60,000 patients, 300,000 appointments over two years (built in "
        f"{setup['built']:.0f} s); {density[0]:.0f} live appointments a working day in the week the day endpoints "
        f"ask about, so the three-day range holds about {3 * density[0]:,.0f}. Small clinic: the same doctors, 2,000 "
        f"patients, 3,000 appointments in that week ({density[1]:.0f} a working day). Server: {server}, "
        f"{THREADS} thread{'s' if THREADS > 1 else ''}, access log on, no cache of answers; the bare apps on as "
        f"many threads. Bare lookup: the better of a run before Agenda's and one after "
        f"({out['bare read rates'][0]:.0f} and {out['bare read rates'][1]:.0f} requests/s at 16 connections). "
        f"Agenda's figures are each the median of {options.table_rounds} round{'s' if options.table_rounds > 1 else ''}"
        f" of the whole table, a few minutes apart (at most {max(1, options.requests // options.table_rounds)} "
        f"requests or {options.seconds:g} s an endpoint and concurrency a round; 300k/3k is the median of the rounds'"
        " ratios). Latencies in ms; `vs bare` is requests/s at 16 connections over the bare app's: reads against "
        "the lookup, writes against the durable write (median of the paired rounds).",
        "",
        "| endpoint | p50 x1 | p99 x1 | p50 x4 | p99 x4 | p50 x16 | p99 x16 | req/s x16 | vs bare x16 "
        "| p50 3k x1 | 300k/3k p50 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def row(name, figures, ratio, few=None):
        cells = [f"{figures[c][key]:.2f}" for c in CONNECTIONS for key in ("p50", "p99")]
        small_p50 = "" if few is None else f"{few['p50']:.2f}"
        growth = "" if few is None else f"{out['growth'][name]:.2f}"
        return (f"| {name} | {' | '.join(cells)} | {figures[16]['rate']:.0f} | {ratio:.2f} "
                f"| {small_p50} | {growth} |")

    lines.append(row("bare waitress + SQLite lookup", bare, 1.0))
    lines.append(row("bare waitress + SQLite durable INSERT", bare_write, 1.0))
    for name in names:
        figures = {count: results[name, count] for count in CONNECTIONS}
        ratio = (out["paired writes"][name]["rate_ratios"][len(out["paired writes"][name]["rate_ratios"]) // 2]
                 if name in WRITES else figures[16]["rate"] / bare[16]["rate"])
        lines.append(row(name, figures, ratio, small[name, 1]))

    lines += ["", f"Writes at 16 connections against the bare durable-write app ({options.write_rounds} paired "
                  "rounds each, medians; no p99 target here: the disk's flushes decide it):", "",
              "| endpoint | req/s | bare req/s | req/s ratio | p50 ms | bare p50 ms | p50 ratio |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for name, paired in out["paired writes"].items():
        lines.append(f"| {name} | {paired['rate']:.0f} | {paired['bare_rate']:.0f} "
                     f"| {statistics.median(paired['rate_ratios']):.2f} | {paired['p50']:.2f} "
                     f"| {paired['bare_p50']:.2f} | {statistics.median(paired['p50_ratios']):.2f} |")
    lines += ["", f"Paired read rounds at 16 connections ({options.rounds} rounds, sorted req/s ratios; the median "
                  "is judged): " + "; ".join(f"{name} {', '.join(f'{r:.2f}' for r in paired['rate_ratios'])}"
                                             for name, paired in out["paired reads"].items()) + ".",
              "", f"Server resident memory after the table's runs: {out['rss'][0]:.0f} MB, of which "
                  f"{out['rss'][1]:.0f} MB are files mapped (the database's pages read through the map, and the "
                  "code)."]
    if options.table_rounds > 1:
        judged = [name for name in names if results[name, 4]["p99"] > 15 or name == RANGE]
        lines += ["", "The rounds' p99 at 4 connections, sorted, where the median is over 15 ms: " + "; ".join(
            f"{name} {', '.join(f'{p99:.1f}' for p99 in results[name, 4]['p99s'])}" for name in judged)
            + ". Availability's p50 at 1 connection: "
              + ", ".join(f"{p50:.2f}" for p50 in results[AVAILABILITY, 1]["p50s"]) + "."]

    targets = []

    def target(met, text):
        targets.append(f"- {'met' if met else 'MISSED'}: {text}")

    others = [(results[name, 4]["p99"], name) for name in names if name != RANGE]
    over = [(p99, name) for p99, name in others if p99 > 20]
    target(not over, "p99 at 4 connections <= 20 ms for every endpoint but the range" + (
        f" (highest: {max(others)[1]} {max(others)[0]:.1f} ms)" if not over else
        ": " + ", ".join(f"{name} {p99:.1f} ms ({p99 - 20:+.1f})" for p99, name in sorted(over, reverse=True))))
    p99 = results[RANGE, 4]["p99"]
    target(p99 <= 50, f"the three-day range's p99 at 4 connections <= 50 ms ({p99:.1f} ms"
                      f"{f', {p99 - 50:+.1f}' if p99 > 50 else ''})")
    p50 = results[AVAILABILITY, 1]["p50"]
    target(p50 <= 5, f"availability (10 doctors, 14 days) p50 at 1 connection <= 5 ms ({p50:.2f} ms"
                     f"{f', {p50 - 5:+.2f}' if p50 > 5 else ''})")
    for name, paired in out["paired reads"].items():
        median = statistics.median(paired["rate_ratios"])
        target(median >= 0.7, f"{name} at 16 connections >= 0.70 of the bare app's requests/s (median of "
                              f"{len(paired['rate_ratios'])} paired rounds: {median:.2f})")
    growths = [(out["growth"][name], name) for name in names]
    grown = [(growth, name) for growth, name in growths if growth > 1.3]
    target(not grown, "p50 at 300k <= 1.3 x p50 at 3k for every endpoint" + (
        f" (highest: {max(growths)[1]} {max(growths)[0]:.2f})" if not grown else
        ": " + ", ".join(f"{name} {growth:.2f}" for growth, name in sorted(grown, reverse=True))))
    checks = []
    failed = [(name, label, count, figures["failures"], figures["statuses"])
              for label in ("300k", "3k") for (name, count), figures in out[label].items() if figures["failures"]]
    failed += [(name, "paired", 16, paired["failures"], []) for group in ("paired reads", "paired writes")
               for name, paired in out[group].items() if paired["failures"]]
    checks.append("every answer 2xx" if not failed else "answers not 2xx: " + "; ".join(
        f"{name} {label} x{count}: {number} {statuses}" for name, label, count, number, statuses in failed))
    for label, (pools, overdrawn, recycled) in out["pools"].items():
        checks.append(f"{label}: {', '.join(f'{number:,} {pool}' for pool, number in pools.items())}; "
                      f"{recycled:,} of the bench's bookings cancelled in the database to free their slots" + (
                          f"; ran out of {', '.join(overdrawn)}: those writes repeated" if overdrawn else ""))
    lines += ["", "Targets:", *targets, "", "Checks: " + "; ".join(checks) + ".", "", "### Replication", "",
              *replication_report(out["replication"], setup)]
    return "\n".join(lines)


def run_line(setup):
    flushes, steadiness, options = setup["flushes"], setup["steadiness"], setup["options"]
    return (f"Run {setup['today']} ({setup['minutes']:.1f} minutes, {options.requests} requests or "
            f"{options.seconds:g} s per endpoint and concurrency). Machine: {machine()}. Disk: {flushes[4]:,} flushes "
            f"of 6 pages (write and fdatasync, as a booking's commit) took p50 {flushes[0]:.2f} ms, p99 "
            f"{flushes[1]:.2f}, max {flushes[2]:.1f}; {flushes[3]} over 4 ms. CPU: the same 1 ms of Python, timed "
            f"in CPU time every half second through the run ({steadiness[2]:,} times), took p50 {steadiness[0]:.2f} "
            f"and p90 {steadiness[1]:.2f} times its fastest. "
            f"Other processes on the machine kept on average {setup['others']:.2f} of its {os.cpu_count()} cores "
            f"busy during the run.")


def replication_report(out, setup):
    """The replication section's lines: a table per mode, and the loss window."""
    if "skipped" in out:
        return [f"Replication not measured: {out['skipped']}."]
    options, runs = setup["options"], out["runs"]
    lines = [
        f"POST /appointments on three copies of the large clinic, each with its own `agenda run` ({THREADS} "
        f"thread{'s' if THREADS > 1 else ''}, all three running): no replica (off); `--replica FOLDER` (on: "
        f"Litestream ships every second); and `--ack-after-replication` too (on, acked: each booking answered once "
        f"Litestream says the replica holds it). Both replicas' first snapshots were written "
        f"({out['snapshot']:.1f} s) before any load. At most {options.requests} bookings or {options.seconds:g} s a "
        f"mode and concurrency, in {out['rounds']} round{'s' if out['rounds'] > 1 else ''} (the modes in turn, the "
        f"order rotated, latencies pooled). Latencies in ms; `p50 / off` is the mode's p50 over the p50 without a "
        f"replica.",
        "",
        "| replication | req/s x1 | p50 x1 | p99 x1 | p50 / off x1 | req/s x4 | p50 x4 | p99 x4 | p50 / off x4 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for mode, _ in REPLICATION_MODES:
        cells = []
        for count in (1, 4):
            figures = runs[mode, count]
            cells += [f"{figures['rate']:.0f}", f"{figures['p50']:.2f}", f"{figures['p99']:.2f}",
                      f"{figures['p50'] / runs['off', count]['p50']:.2f}"]
        lines.append(f"| {mode} | {' | '.join(cells)} |")
    failed = [f"{mode} x{count}: {figures['failures']} {figures['statuses']}"
              for (mode, count), figures in runs.items() if figures["failures"]]
    windows = out["window"]
    held = sorted(w for w in windows if w is not None)
    median = statistics.median_high([float("inf") if w is None else w for w in windows])  # inf: over 10 s
    lines += ["", f"Loss window without `--ack-after-replication`: a booking was in the replica "
                  f"{'over 10 s' if median == float('inf') else f'{median * 1000:.0f} ms'} after its answer (median of "
                  f"{len(windows)} tries, one booking at a time, at a random point of Litestream's second; sorted: "
                  f"{', '.join(f'{w * 1000:.0f}' for w in held)}{' ms' if held else ''}"
                  f"{f', and {len(windows) - len(held)} not within 10 s' if len(held) < len(windows) else ''}; "
                  "`litestream ltx` polled every 100 ms, each new transaction checked by a restore holding the "
                  "booking, so to within about 0.2 s): a machine lost that long after a booking's answer loses it.",
              "", "Checks: " + ("every booking answered 2xx." if not failed else "answers not 2xx: "
                                + "; ".join(failed) + ".")]
    return lines


if __name__ == "__main__":
    main()
