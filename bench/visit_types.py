r"""Availability for a visit type beside availability for an area (bench/README.md, "Visit types beside areas").

Builds the large bench clinic twice with bench/generate.py: with visit types, rooms and machines
(--types: 4 types a doctor, 10 rooms, 3 ultrasounds) by this checkout's code, and declared without
types by the older checkout's code (the commit before types), in a child process; both hold the
same 300,000 appointments. Serves each with its own checkout's `agenda run` (1 thread, its default)
and asks, one request at a time, this checkout for GET /availabilities?specialityId=<a type of
general medicine> and the older one for ?specialityId=MG (the area: the same 10 doctors), each over
14 days from one of the 7 days the bench's day endpoints ask about. Each type is paired with the
area: the two driven in turn (every other round the older one first), and for each run the CPU the
server process spent (utime + stime of all its threads, /proc/PID/stat) over the requests it
answered. Prints each type's ratio of CPU a request (this checkout over the older one) round by
round and their median. Target: at most 1.3 for every type.

    git -C /work/main worktree add --detach /tmp/agenda-before b490feb^   # the commit before types
    .venv/bin/python bench/visit_types.py --before /tmp/agenda-before/agenda.py    # about 2.5 minutes
    git -C /work/main worktree remove /tmp/agenda-before

Bounded: at most --requests requests or --seconds seconds a side and run, to 127.0.0.1 only; the
servers and the child it starts are stopped by their process id; its files are in one temporary
folder. Needs nothing beyond the project's virtualenv.
"""

import argparse
import datetime as dt
import http.client
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from contextlib import closing
from pathlib import Path

import run  # bench/run.py: load_agenda, Process, drive, percentile, signature, window
from access_record import serve  # `agenda run` of a checkout on a database

AREA = "MG"
PAIRS = (("MG-PRI", "first visit, 30 min"), ("MG-REV", "follow-up, 15 min"), ("MG-CUR", "10 min + 10 pause"),
         ("MG-ECO", "15 min, needs the ultrasound"), (AREA, "the area: each doctor's default type"))
TICKS = os.sysconf("SC_CLK_TCK")
SAME = "SELECT doctor_id, date, time, status, patient_id FROM appointments ORDER BY doctor_id, date, time"


def cpu_seconds(pid):
    """CPU time the process has used, all its threads, user and system (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def asking(speciality, today):
    """The request maker: availability of `speciality` over 14 days from one of the bench's 7 days."""
    first, _ = run.window(today)
    days = [first + dt.timedelta(days=n) for n in range(7)]
    return lambda w, n: ("GET", (f"/availabilities?specialityId={speciality}&startDate={days[n % 7]:%d/%m/%Y}"
                                 f"&endDate={days[n % 7] + dt.timedelta(days=13):%d/%m/%Y}"), None)


def slots_answered(server, make):
    """How many slots the first request of `make` answers."""
    method, path, _ = make(0, 0)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request(method, path, headers={"X-Signature": run.signature(method, path, b"")})
    answer = connection.getresponse()
    body = json.loads(answer.read())
    connection.close()
    if answer.status != 200:
        raise SystemExit(f"{path}: {answer.status} {body}")
    return len(body["data"] if isinstance(body, dict) else body)


def cpu_run(server, make, options):
    """(server CPU ms a request, p50 ms) of one run at 1 connection."""
    before = cpu_seconds(server.process.pid)
    _, latencies, failures = run.drive(server.port, make, 1, options.requests, options.seconds)
    used = cpu_seconds(server.process.pid) - before
    if failures:
        raise SystemExit(f"{len(failures)} non-2xx answers {sorted(set(failures))}")
    return used * 1000 / len(latencies), run.percentile(latencies, 0.5)


def paired_rounds(before, after, today, options):
    """{type: [(ratio of CPU a request, ours ms, before's ms, ratio of p50s)] a round}."""
    area = asking(AREA, today)
    seen = {key: [] for key, _ in PAIRS}
    for number in range(options.rounds):
        for key, _ in PAIRS:
            figures = {}
            for side in (("before", "after") if number % 2 == 0 else ("after", "before")):
                figures[side] = cpu_run(before, area, options) if side == "before" else cpu_run(
                    after, asking(key, today), options)
            (ours, our_p50), (theirs, their_p50) = figures["after"], figures["before"]
            seen[key].append((ours / theirs, ours, theirs, our_p50 / their_p50))
        print(f"round {number + 1}: " + ", ".join(f"{key} {seen[key][-1][0]:.2f}" for key, _ in PAIRS), flush=True)
    return seen


def build_before(options):
    """The child's job: the clinic without types, built by the older checkout's code."""
    run.load_agenda(options.before)
    run.generate.build(options.build, today=dt.date.fromisoformat(options.today))


def built(folder, options, today):
    """(the clinic with types, the clinic without): the first built here, the second at once by a child."""
    old, new = Path(folder) / "before.db", Path(folder) / "types.db"
    child = subprocess.Popen([sys.executable, __file__, "--before", options.before, "--build", str(old),
                              "--today", today.isoformat()])
    try:
        run.generate.build(new, today=today, types=True)
    finally:
        if child.wait() != 0:
            raise SystemExit("the clinic without types was not built")
    with closing(sqlite3.connect(old)) as a, closing(sqlite3.connect(new)) as b:
        if a.execute(SAME).fetchall() != b.execute(SAME).fetchall():
            raise SystemExit("the two clinics do not hold the same appointments")
        counts = b.execute("SELECT (SELECT count(*) FROM appointments), (SELECT count(*) FROM visit_types),"
                           " (SELECT count(*) FROM resources WHERE is_room), (SELECT count(*) FROM resources WHERE"
                           " NOT is_room), (SELECT count(DISTINCT doctor_id) FROM schedules WHERE room_id IS NOT NULL),"
                           " (SELECT count(*) FROM holds WHERE live)").fetchone()
    print(f"Clinics: {counts[0]:,} appointments in each, the same; with types: {counts[1]} types (4 a doctor), "
          f"{counts[2]} rooms, {counts[3]} machines, {counts[4]} doctors placed in a box, {counts[5]:,} live holds",
          flush=True)
    return old, new


def report(seen, answers, options):
    print(f"\nCPU a request at 1 connection, median of {options.rounds} paired rounds (at most {options.requests} "
          f"requests or {options.seconds:g} s a side and run); the older commit asked for area {AREA} "
          f"({answers[AREA, 'before']} slots in the first 14 days):\n")
    print("| asked of this checkout | slots | CPU ms, this | CPU ms, before | CPU ratio | p50 ratio "
          "| rounds' CPU ratios |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for key, words in PAIRS:
        rows = seen[key]
        cells = [statistics.median(row[k] for row in rows) for k in (1, 2, 0, 3)]
        print(f"| {key} ({words}) | {answers[key, 'after']} | {cells[0]:.2f} | {cells[1]:.2f} | {cells[2]:.2f} | "
              f"{cells[3]:.2f} | {', '.join(f'{row[0]:.2f}' for row in sorted(rows))} |")
    worst = max((statistics.median(row[0] for row in seen[key]), key) for key, _ in PAIRS[:-1])
    print(f"\n{'met' if worst[0] <= 1.3 else 'MISSED'}: availability for a type over 14 days <= 1.3 x the CPU a "
          f"request of availability for the area, served by the commit before types (highest median: {worst[1]} "
          f"{worst[0]:.2f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, metavar="PATH", help="the older checkout's agenda.py")
    parser.add_argument("--rounds", type=int, default=9, help="paired rounds of every type")
    parser.add_argument("--requests", type=int, default=400, help="most requests a side and run")
    parser.add_argument("--seconds", type=float, default=2.0, help="most seconds a side and run")
    parser.add_argument("--build", help=argparse.SUPPRESS)  # the child: build the clinic without types here
    parser.add_argument("--today", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.build:
        return build_before(options)
    if options.rounds < 1 or options.requests < 1:
        parser.error("--rounds and --requests must be at least 1")
    run.load_agenda(run.ROOT / "agenda.py")
    today = dt.date.today()
    with tempfile.TemporaryDirectory() as folder:
        old, new = built(folder, options, today)
        before, after = serve(options.before, old), serve(run.ROOT / "agenda.py", new)
        try:
            answers = {(AREA, "before"): slots_answered(before, asking(AREA, today))}
            answers.update({(key, "after"): slots_answered(after, asking(key, today)) for key, _ in PAIRS})
            seen = paired_rounds(before, after, today, options)
        finally:
            before.stop()
            after.stop()
    report(seen, answers, options)


if __name__ == "__main__":
    main()
