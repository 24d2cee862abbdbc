r"""The caller beside the clinic's heaviest pages (bench/README.md, "Nothing stalls the caller").

Builds the large bench clinic (300,000 appointments) with what makes the desk's pages heaviest: 200
patients waiting for one speciality, a center of 62 doctors with a full day, a doctor's feed showing
names, an admin's account. Serves it with `agenda run` at each --threads asked, and drives the caller
at 4 connections (the free slots of a speciality over 14 days, one appointment, a patient by NIF, in
turn) for --seconds, first alone, then while one desk client (another process) requests the heaviest
page of each kind back to back: the waiting list, a search of 10 words, the 27-week report, the
62-doctor day and week, a doctor's week, the feed. Prints the caller's p50 and p99 each way, and each
page's bytes and time. Target: the caller's p50 under 50 ms and p99 under 500 ms beside the pages.

    .venv/bin/python bench/desk_beside_caller.py                    # about 3 minutes
    .venv/bin/python bench/desk_beside_caller.py --threads 1 4 --seconds 20

Bounded: --seconds a side and thread count, to 127.0.0.1 only; the servers and the desk client it
starts are stopped by their process id; its files are in one temporary folder.
"""

import argparse
import datetime as dt
import http.cookiejar
import multiprocessing
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import run  # bench/run.py: load_agenda, generate, Process, drive, percentile

PASSWORD = "bench-password-1"
WIDE = "GRANDE"  # the center of 62 doctors


def heavier(path, today):
    """Add to the bench clinic what makes each kind of desk page heaviest."""
    with tempfile.TemporaryDirectory() as folder:
        rows = ["kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to",
                f"center,{WIDE},Centro Grande,,,,,,,,"]
        rows += [f"doctor,G{n:02d},Dra. Grande {n},MG,{WIDE},,mon-sun,08:00-15:00,15,," for n in range(62)]
        csv_path = Path(folder) / "wide.csv"
        csv_path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        conn = run.agenda.open_database(path)
        run.agenda.seed_catalogs(conn, run.agenda.read_catalog_file(csv_path), at=dt.datetime.now(dt.timezone.utc))
    day, stamp = (today + dt.timedelta(days=1)).isoformat(), f"{today}T08:00:00Z"
    patients = conn.execute("SELECT count(*) FROM patients").fetchone()[0]
    conn.executemany(
        "INSERT INTO appointments (patient_id, doctor_id, speciality_id, center_id, date, time, end_time, reason,"
        " status, created_at, updated_at) VALUES (?, ?, 'MG', ?, ?, ?, ?, 'Revisión', 'booked', ?, ?)",
        [(random.randint(1, patients), f"G{n:02d}", WIDE, day, run.generate.hhmm(480 + 15 * k),
          run.generate.hhmm(495 + 15 * k), stamp, stamp) for n in range(62) for k in range(0, 28, 2)])
    conn.executemany(
        "INSERT INTO waitlist (patient_id, speciality_id, date_from, date_to, note, created_at) VALUES (?, 'MG', ?, ?,"
        " 'mañanas', ?)", [(n * 7 + 1, today.isoformat(), (today + dt.timedelta(days=13)).isoformat(), stamp)
                          for n in range(200)])
    conn.commit()
    conn.close()


def desk_pages(today, feed_token):
    """The heaviest page of each kind, as (name, method, path, form)."""
    words = "maria jose garcia lopez martinez sanchez perez gomez nunez ruiz"
    last = today + dt.timedelta(days=13)
    return [("waiting list, 200 waiting", "GET", "/desk/waitlist", None),
            ("search, 10 words", "POST", "/desk/patients", {"q": words}),
            ("report, 27 weeks", "GET", "/desk/report?" + urllib.parse.urlencode(
                {"from": (last - dt.timedelta(days=7 * 26)).strftime("%d/%m/%Y"), "to": last.strftime("%d/%m/%Y")}),
             None),
            ("day, 62 doctors", "GET", f"/desk/day?date={(today + dt.timedelta(days=1)):%d/%m/%Y}&centerId={WIDE}",
             None),
            ("week, 62 doctors' center", "GET", f"/desk/week?date={today:%d/%m/%Y}&centerId={WIDE}", None),
            ("week, one doctor", "GET", f"/desk/week?date={today:%d/%m/%Y}&doctorId=DR06", None),
            ("feed, the busiest doctor", "GET", f"/feeds/{feed_token}.ics", None)]


def desk_client(port, pages, stop, results):
    """Log in, then request each page back to back until `stop` is set; (name, bytes, ms) into `results`."""
    base = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    login = opener.open(base + "/desk/login").read().decode()
    token = re.search(r'name="csrf" value="([^"]+)"', login)[1]
    opener.open(base + "/desk/login", urllib.parse.urlencode({"csrf": token, "name": "admin",
                                                              "password": PASSWORD}).encode()).read()
    csrf = re.search(r'name="csrf" value="([^"]+)"', opener.open(base + "/desk/day").read().decode())[1]
    while not stop.is_set():
        for name, method, path, form in pages:
            data = urllib.parse.urlencode({**form, "csrf": csrf}).encode() if method == "POST" else None
            started = time.perf_counter()
            body = opener.open(base + path, data, timeout=60).read()
            results.put((name, len(body), (time.perf_counter() - started) * 1000))
            if stop.is_set():
                break


def caller(nifs, appointments):
    def make(worker, number):
        kind = number % 3
        if kind == 0:
            return "GET", "/availabilities?specialityId=DER", None
        if kind == 1:
            return "GET", f"/appointments/{appointments[number % len(appointments)]}", None
        return "GET", f"/patients?nif={nifs[number % len(nifs)]}", None
    return make


def sampled_caller(path):
    """The caller's requests over 500 patients and 500 live appointments of the clinic at `path`, drawn at random."""
    conn = sqlite3.connect(path)
    nifs = [row[0] for row in conn.execute("SELECT nif FROM patients ORDER BY random() LIMIT 500")]
    appointments = [row[0] for row in conn.execute(
        "SELECT id FROM appointments WHERE status != 'cancelled' ORDER BY random() LIMIT 500")]
    conn.close()
    return caller(nifs, appointments)


def figures(port, make, seconds):
    rate, latencies, failures = run.drive(port, make, 4, 10 ** 9, seconds)
    if failures:
        raise SystemExit(f"the caller had {len(failures)} non-2xx answers: {sorted(set(failures))[:5]}")
    return run.percentile(latencies, 0.5), run.percentile(latencies, 0.99), rate


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8], help="agenda run --threads to try")
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds of each measure")
    options = parser.parse_args()
    run.load_agenda(run.AGENDA_PATH)
    today = dt.date.today()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.db"
        run.generate.build(path, today=today)
        heavier(path, today)
        from _agenda.domain.clinic import Clinic
        from _agenda.domain.feeds import new_feed
        from _agenda.domain.staff import Accounts
        from _agenda.storage.database import Database
        clinic = Clinic(Database(path))
        feed_token = new_feed(clinic, "DR06", "cli")
        Accounts(clinic.db).add_staff("admin", PASSWORD, role="admin")
        clinic.db.close()
        make, pages = sampled_caller(path), desk_pages(today, feed_token)
        for threads in options.threads:
            server = run.Process([sys.executable, str(run.AGENDA_PATH), "run", "--db", str(path), "--port", "0",
                                  "--threads", str(threads), "--feed-shows", "names"],
                                 env={"AGENDA_SECRET": run.SECRET})
            try:
                alone = figures(server.port, make, options.seconds)
                stop, results = multiprocessing.Event(), multiprocessing.Queue()
                desk = multiprocessing.Process(target=desk_client, args=(server.port, pages, stop, results))
                desk.start()
                time.sleep(1.0)
                beside = figures(server.port, make, options.seconds)
                stop.set()
                desk.join(timeout=120)
                if desk.is_alive():
                    desk.terminate()
                seen = {}
                while not results.empty():
                    name, size, ms = results.get()
                    seen.setdefault(name, []).append((size, ms))
            finally:
                server.stop()
            print(f"--threads {threads}: the caller alone p50 {alone[0]:.1f} ms, p99 {alone[1]:.1f} ms "
                  f"({alone[2]:.0f}/s); beside the desk p50 {beside[0]:.1f} ms, p99 {beside[1]:.1f} ms "
                  f"({beside[2]:.0f}/s)", flush=True)
            for name, _, _, _ in pages:
                sizes = seen.get(name, [])
                if sizes:
                    print(f"    {name}: {max(size for size, _ in sizes):,} bytes, "
                          f"{statistics.median(ms for _, ms in sizes):,.0f} ms (median of {len(sizes)})")


if __name__ == "__main__":
    main()
