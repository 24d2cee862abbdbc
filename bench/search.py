r"""Reception's patient search on the large bench clinic (bench/README.md, "Patient search").

Builds 60,000 patients with bench/generate.py (names and surnames with accents: García, Núñez,
Muñoz...) and times `registry.search_patients`, the domain call behind the desk's search, for what
reception types: a NIF with separators, a phone as dictated, a common surname without its accent,
a name and a surname in any order, a part of a word, and a name nobody has (every row read). Each
is run --repeat times after one warm-up; the report gives the median and the 95th percentile in
milliseconds and how many patients each found, beside a NIF lookup by the caller's path
(`find_patient`, one indexed read) as the bare cost of a call on this machine.

    .venv/bin/python bench/search.py            # about 30 seconds

In-process and bounded: no server, no network; its database is in a temporary folder.
"""

import argparse
import datetime as dt
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import agenda  # noqa: E402
import generate  # noqa: E402
from _agenda.domain.registry import find_patient, patients_matching

NIF = f"{40_000_000 + 4321:08d}{generate.LETTERS[(40_000_000 + 4321) % 23]}"
TYPED = [
    ("NIF with separators", f"{NIF[:2]}.{NIF[2:5]}.{NIF[5:8]}-{NIF[8].lower()}"),
    ("phone as dictated", "+34 6 0000 4321"),
    ("surname, no accent", "nunez"),
    ("name and surname, any order", "munoz lucia"),
    ("part of a word", "artin"),
    ("nobody has it", "zarzuela"),
]


def timed(call, repeat):
    """(median ms, 95th percentile ms, what the last call returned) of `repeat` calls after a warm-up."""
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        found = call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patients", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=200, help="timed calls a search (default: 200)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agenda-search-bench-") as folder:
        db = Path(folder) / "clinic.db"
        generate.build(db, patients=options.patients, appointments=0)
        app = agenda.create_app(db, "bench-secret")
        clinic = app.clinic
        rows = [("NIF lookup (the caller's)",) + timed(lambda: [find_patient(clinic, NIF)], options.repeat)]
        rows += [(label,) + timed(lambda text=text: patients_matching(clinic, text), options.repeat)
                 for label, text in TYPED]
        clinic.db.close()
    print(f"Patient search on {options.patients:,} patients, {options.repeat} calls each "
          f"({dt.date.today():%d/%m/%Y}, Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version})")
    print(f"{'what was typed':32} {'p50 ms':>8} {'p95 ms':>8} {'found':>6}")
    for label, p50, p95, found in rows:
        print(f"{label:32} {p50:8.2f} {p95:8.2f} {len(found):6d}")


if __name__ == "__main__":
    main()
