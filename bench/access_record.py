r"""The caller's reads of one patient with and without the access record (bench/README.md, "The access record").

Builds the large bench clinic (60,000 patients) with the older checkout's code, copies it, and
serves one copy with that checkout (which records no reads) and the other with this one (which
records every GET /patients and GET /appointments?nif as `api`, each a different patient, so
that every request writes a record). Drives both in turn, --rounds paired rounds at 1 and 4
connections, every other round the older one first, and prints each round's ratio of p50s and
of requests a second (this checkout over the older one) and their medians.

    .venv/bin/python bench/access_record.py --before /tmp/agenda-before/agenda.py   # about 3 minutes

Bounded: at most --requests requests or --seconds seconds a side and round, to 127.0.0.1 only;
the servers it starts are stopped by their process id; its files are in one temporary folder.
"""

import argparse
import datetime as dt
import shutil
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path

import run  # bench/run.py: load_agenda, Process, drive, percentile

READS = {
    "GET /patients": lambda nifs: lambda w, n: ("GET", f"/patients?nif={nifs[n % len(nifs)]}", None),
    "GET /appointments?nif": lambda nifs: lambda w, n: ("GET", f"/appointments?nif={nifs[n % len(nifs)]}", None),
}


def serve(agenda_path, db_path):
    return run.Process([sys.executable, str(agenda_path), "run", "--db", str(db_path), "--port", "0"],
                       env={"AGENDA_SECRET": run.SECRET})


def rounds_of(before, after, make, connections, options):
    """Paired rounds: ratios (after over before) of p50 and of requests a second."""
    p50s, rates = [], []
    for number in range(options.rounds):
        figures = {}
        for side in (("before", "after") if number % 2 == 0 else ("after", "before")):
            port = before.port if side == "before" else after.port
            rate, latencies, failures = run.drive(port, make, connections, options.requests, options.seconds)
            if failures:
                raise SystemExit(f"{side}: {len(failures)} non-2xx answers {sorted(set(failures))}")
            figures[side] = (rate, run.percentile(latencies, 0.5))
        p50s.append(figures["after"][1] / figures["before"][1])
        rates.append(figures["after"][0] / figures["before"][0])
    return p50s, rates


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, metavar="PATH", help="the older checkout's agenda.py")
    parser.add_argument("--rounds", type=int, default=7, help="paired rounds for each read and concurrency")
    parser.add_argument("--requests", type=int, default=1500, help="most requests a side and round")
    parser.add_argument("--seconds", type=float, default=3.0, help="most seconds a side and round")
    options = parser.parse_args()
    run.load_agenda(options.before)  # the older schema builds the clinic; this checkout upgrades its copy
    with tempfile.TemporaryDirectory() as folder:
        old, new = Path(folder) / "before.db", Path(folder) / "after.db"
        run.generate.build(old, today=dt.date.today())
        shutil.copyfile(old, new)
        conn = sqlite3.connect(old)
        nifs = [row[0] for row in conn.execute("SELECT nif FROM patients ORDER BY random() LIMIT 5000")]
        conn.close()
        before, after = serve(options.before, old), serve(run.ROOT / "agenda.py", new)
        try:
            for name, reads in READS.items():
                for connections in (1, 4):
                    p50s, rates = rounds_of(before, after, reads(nifs), connections, options)
                    print(f"{name} x{connections}: p50 ratio {statistics.median(p50s):.3f} "
                          f"({', '.join(f'{r:.2f}' for r in p50s)}); req/s ratio {statistics.median(rates):.3f} "
                          f"({', '.join(f'{r:.2f}' for r in rates)})")
            conn = sqlite3.connect(new)
            print(f"reads recorded: {conn.execute('SELECT sum(reads) FROM access_reads').fetchone()[0]:,}")
            conn.close()
        finally:
            before.stop()
            after.stop()


if __name__ == "__main__":
    main()
