r"""A large import beside the caller's bookings (bench/README.md, "Imports never hold the clinic").

Builds the large bench clinic, writes an old system's file of --rows appointments on free starts of its
doctors' grids a year and more ahead (half of them of new patients, by NIF), serves the clinic with
`agenda run`, and runs `agenda import-appointments FILE` in a child process while the caller books and
cancels at one connection. Prints the import's time and peak memory (its child's maximum resident set),
the caller's bookings during it (answered, refused 503, the slowest), and the same for a quarter of the
rows, so that memory flat in the number of rows shows.

    .venv/bin/python bench/import_beside_caller.py                 # about 3 minutes
    .venv/bin/python bench/import_beside_caller.py --rows 20000

Bounded: one import of each size, the caller for as long as it runs, to 127.0.0.1 only; the servers and
the import it starts are stopped by their process id; its files are in one temporary folder.
"""

import argparse
import datetime as dt
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import run  # bench/run.py: load_agenda, generate, Process, signature

LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def old_system_file(db_path, path, rows, first):
    """`rows` appointments on free grid starts from `first` on, half of patients new to the agenda."""
    conn = sqlite3.connect(db_path)
    known = conn.execute("SELECT nif, name, surname FROM patients WHERE nif IS NOT NULL ORDER BY random() LIMIT ?",
                         (rows,)).fetchall()  # a known patient's row names them, as the old system did
    slots = run.generate.all_slots(sqlite3_rows(conn), first, first + dt.timedelta(days=400))
    conn.close()
    random.Random(11).shuffle(slots)
    with open(path, "w", encoding="utf-8") as file:
        file.write("date,time,duration,doctor,center,nif,name,surname,phone,reason,insurance,status\n")
        for n, (doctor, center, _, day, start, end) in enumerate(slots[:rows]):
            nif, name, surname = known[n % len(known)] if n % 2 else (
                f"{70_000_000 + n:08d}{LETTERS[(70_000_000 + n) % 23]}", "Paciente", f"Antiguo {n}")
            minutes = run.generate.minutes_of(end) - run.generate.minutes_of(start)
            file.write(f"{dt.date.fromisoformat(day):%d/%m/%Y},{start},{minutes},{doctor},{center},{nif},{name},"
                       f"{surname or ''},6{n:08d},Revisión,,booked\n")


def sqlite3_rows(conn):
    conn.row_factory = sqlite3.Row
    return conn


def caller_during(port, busy, free, stop):
    """Book and cancel, one at a time, until `stop`: [(ms, status)]."""
    seen, number = [], 0
    import http.client
    import json
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        doctor, day, start, patient = free[number % len(free)]
        body = json.dumps({"date": day, "time": start, "doctorId": doctor, "patientId": str(patient)}).encode()
        started = time.perf_counter()
        connection.request("POST", "/appointments", body, {"Content-Type": "application/json", "X-Signature":
                                                            run.signature("POST", "/appointments", body)})
        answer = connection.getresponse()
        made = json.loads(answer.read() or b"{}")
        seen.append(((time.perf_counter() - started) * 1000, answer.status))
        if answer.status == 201:
            path = f"/appointments/{made['appointmentId']}"
            connection.request("DELETE", path, headers={"X-Signature": run.signature("DELETE", path, b"")})
            connection.getresponse().read()
        number += 1
    busy.extend(seen)


def lock_prober(db_path, held, stop):
    """Try to take the write lock every 5 ms, never waiting; the longest run of refusals, in ms, into `held`."""
    conn = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    refused_since, longest = None, 0.0
    while not stop.is_set():
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            if refused_since is not None:
                longest, refused_since = max(longest, time.perf_counter() - refused_since), None
        except sqlite3.OperationalError:
            refused_since = refused_since or time.perf_counter()
        time.sleep(0.005)
    conn.close()
    held.append(longest * 1000)


def one_import(db_path, source, port, free):
    """(seconds, peak MiB of the import's process, the caller's [(ms, status)], the longest the write lock was
    held, in ms) of one import beside the caller."""
    stop, seen, held = threading.Event(), [], []
    caller = threading.Thread(target=caller_during, args=(port, seen, free, stop))
    prober = threading.Thread(target=lock_prober, args=(db_path, held, stop))
    caller.start()
    prober.start()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURED, sys.executable, str(run.AGENDA_PATH), "import-appointments",
                           str(source), "--db", str(db_path)], capture_output=True, text=True, timeout=1800)
    took = time.perf_counter() - started
    stop.set()
    caller.join(timeout=120)
    prober.join(timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"the import failed:\n{done.stdout}\n{done.stderr[-2000:]}")
    return took, int(done.stdout.strip().splitlines()[-1]) / 1024, seen, held[0]


# Runs a command as its own child and prints the child's peak resident set (KiB) once it is done.
MEASURED = """import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stdout + done.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(done.returncode)"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="appointments in the big file")
    options = parser.parse_args()
    run.load_agenda(run.AGENDA_PATH)
    today = dt.date.today()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        db_path = folder / "big.db"
        run.generate.build(db_path, today=today)
        first = today + dt.timedelta(days=400)  # after the bench clinic's year of bookings: free grids
        small, big = folder / "small.csv", folder / "big.csv"
        old_system_file(db_path, small, options.rows // 4, first + dt.timedelta(days=500))
        old_system_file(db_path, big, options.rows, first)
        conn = sqlite3.connect(db_path)
        free = [(doctor, f"{today + dt.timedelta(days=30 + n % 20):%d/%m/%Y}", None, n + 1) for n, (doctor,) in
                enumerate(conn.execute("SELECT id FROM doctors ORDER BY id"))]
        conn.close()
        server = run.Process([sys.executable, str(run.AGENDA_PATH), "run", "--db", str(db_path), "--port", "0"],
                             env={"AGENDA_SECRET": run.SECRET, "AGENDA_MIN_NOTICE": "0"})
        try:
            free = bookable(server.port, free)
            for label, source, rows in (("a quarter", small, options.rows // 4), ("all", big, options.rows)):
                took, peak, seen, held = one_import(db_path, source, server.port, free)
                slowest = max(ms for ms, _ in seen) if seen else 0
                refused = sum(status == 503 for _, status in seen)
                print(f"{rows:,} rows ({label}): {took:.1f} s, peak memory {peak:.0f} MiB, the write lock held "
                      f"{held:,.0f} ms at the longest; the caller's {len(seen):,} bookings meanwhile: {refused} "
                      f"answered 503, the slowest {slowest:,.0f} ms", flush=True)
        finally:
            server.stop()


def bookable(port, doctors):
    """For each doctor, a free slot the caller books and cancels again and again: (doctor, date, time, patient)."""
    import http.client
    import json
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    found = []
    for doctor, day, _, patient in doctors:
        path = f"/availabilities?doctorId={doctor}&date={day}"
        connection.request("GET", path, headers={"X-Signature": run.signature("GET", path, b"")})
        slots = json.loads(connection.getresponse().read())["data"]
        if slots:
            found.append((doctor, day, slots[0]["time"], patient))
    return found


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
