"""Build a large clinic's database for the benchmark (bench/README.md).

30 doctors over 3 centers with weekly hours like a real clinic's (mornings, afternoons,
some part-time), 6 insurances, national holidays, 60,000 patients and 300,000
appointments over two years (the past year and the next), the past mostly confirmed,
some cancelled or unanswered, the future mostly booked. Catalogs go through
`agenda.seed_catalogs`, the same code as `agenda seed`; patients and appointments are
inserted in bulk with the schema's constraints and triggers in force.

    python bench/generate.py /tmp/big.db                     # 300,000 appointments
    python bench/generate.py /tmp/small.db --appointments 3000 --patients 2000
"""

import argparse
import datetime as dt
import random
import sys
import tempfile
import time
from pathlib import Path

if "agenda" not in sys.modules:  # bench/run.py --agenda PATH imports another agenda.py first
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import agenda  # noqa: E402
from _agenda.store import INSERT_PATIENT, database_counts, searched_name, utc_iso  # noqa: E402  (agenda's own)
from _agenda.values import hhmm, minutes_of  # noqa: E402

CENTERS = ("CENTRO", "NORTE", "SUR")
SPECIALITIES = {"MG": ("Medicina general", 10), "PED": ("Pediatría", 6), "DER": ("Dermatología", 4),
                "TRA": ("Traumatología", 5), "GIN": ("Ginecología", 5)}
INSURANCES = ("PRIVADO", "SANITAS", "ADESLAS", "DKV", "MAPFRE", "ASISA")
SHIFTS = (("mon-fri", "08:00-15:00", 15), ("mon-fri", "14:00-21:00", 15), ("mon-fri", "09:00-14:00;16:00-19:00", 20),
          ("mon;wed;fri", "08:00-15:00", 15), ("tue;thu", "09:00-14:00", 20), ("mon-thu", "08:30-14:30", 15))
HOLIDAYS = ("01/01", "06/01", "01/05", "15/08", "12/10", "01/11", "06/12", "08/12", "25/12")
LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
NAMES = ("Ana", "José", "María", "Javier", "Lucía", "Carmen", "Manuel", "Laura", "David", "Marta", "Pablo", "Elena")
SURNAMES = ("García", "Martínez", "López", "Sánchez", "Pérez", "Gómez", "Núñez", "Muñoz", "Ruiz", "Díaz")


def catalog_csv(today):
    lines = ["kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to"]
    lines += [f"center,{center},Centro {center.title()},,,,,,,," for center in CENTERS]
    lines += [f"speciality,{code},{name},,,,,,,," for code, (name, _) in SPECIALITIES.items()]
    lines += [f"insurance,{code},{code.title()},,,,,,,," for code in INSURANCES]
    number = 0
    for code, (_, count) in SPECIALITIES.items():
        for _ in range(count):
            days, hours, slot = SHIFTS[number % len(SHIFTS)]
            center = CENTERS[number % len(CENTERS)]
            accepted = "" if number % 3 else ";".join(INSURANCES[: 2 + number % 4])
            lines.append(f"doctor,DR{number:02d},Dr. {NAMES[number % 12]} {SURNAMES[number % 10]} {number},"
                         f"{code},{center},{accepted},{days},{hours},{slot},,")
            number += 1
    for year in (today.year - 1, today.year, today.year + 1):
        lines += [f"closed,,Festivo,,,,,,,{day}/{year}," for day in HOLIDAYS]
    return "\n".join(lines) + "\n"


def all_slots(conn, first, last):
    """Every (doctor, center, speciality, date, time, end) the schedules give, holidays excepted."""
    schedules = conn.execute("SELECT s.*, d.speciality_id FROM schedules s JOIN doctors d ON d.id = s.doctor_id"
                             ).fetchall()
    holidays = {row[0] for row in conn.execute("SELECT date_from FROM closures WHERE doctor_id IS NULL")}
    slots = []
    day = first
    while day <= last:
        if day.isoformat() not in holidays:
            for row in schedules:
                if row["weekday"] == day.weekday():
                    start, end = minutes_of(row["start_time"]), minutes_of(row["end_time"])
                    for minute in range(start, end - row["slot_minutes"] + 1, row["slot_minutes"]):
                        slots.append((row["doctor_id"], row["center_id"], row["speciality_id"], day.isoformat(),
                                      hhmm(minute), hhmm(minute + row["slot_minutes"])))
        day += dt.timedelta(days=1)
    return slots


def booked_on(day, now):
    """When an appointment on ISO `day` was booked: 0 to 60 days before it, at 09:00 UTC, never after `now`."""
    made = dt.datetime.fromisoformat(day).replace(hour=9, tzinfo=dt.timezone.utc) - dt.timedelta(
        days=random.choice((0, 1, 2, 3, 5, 7, 10, 14, 21, 30, 45, 60)))
    return utc_iso(min(made, now))


def build(path, patients=60_000, appointments=300_000, seed=7, today=None, days=None):
    """The clinic's database at `path`; its appointments over the year before and the year
    after `today`, or over `days` (first, last) when given."""
    random.seed(seed)
    today = today or dt.date.today()
    first_day, last_day = days or (today - dt.timedelta(days=365), today + dt.timedelta(days=365))
    path = Path(path)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    conn = agenda.open_database(path)
    now = dt.datetime.now(dt.timezone.utc)
    with tempfile.TemporaryDirectory() as folder:
        csv_path = Path(folder) / "catalogs.csv"
        csv_path.write_text(catalog_csv(today), encoding="utf-8")
        agenda.seed_catalogs(conn, agenda.read_catalog_file(csv_path), at=now)
    stamp = utc_iso(now)
    with agenda.transaction(conn):
        conn.executemany(INSERT_PATIENT, (
            (NAMES[n % 12], f"{SURNAMES[n % 10]} {SURNAMES[(n // 10) % 10]}",
             f"{1930 + n % 90}-{1 + n % 12:02d}-{1 + n % 28:02d}",
             f"{40_000_000 + n:08d}{LETTERS[(40_000_000 + n) % 23]}", f"6{n:08d}", f"+346{n:08d}", stamp,
             searched_name(NAMES[n % 12], f"{SURNAMES[n % 10]} {SURNAMES[(n // 10) % 10]}"), None)
            for n in range(patients)))
    slots = all_slots(conn, first_day, last_day)
    if appointments > len(slots):
        raise SystemExit(f"only {len(slots)} slots from {first_day} to {last_day}; ask for fewer appointments")
    chosen = sorted(random.sample(slots, appointments), key=lambda slot: (slot[3], slot[4], slot[0]))
    today_text = today.isoformat()

    def rows():
        for doctor, center, speciality, day, start, end in chosen:
            roll = random.random()
            if day < today_text:
                status = "confirmed" if roll < 0.7 else "unanswered" if roll < 0.8 else "cancelled"
            else:
                status = "booked" if roll < 0.85 else "confirmed" if roll < 0.9 else "cancelled"
            made = booked_on(day, now)  # booked some days ahead, as patients do, never after now
            yield (random.randint(1, patients), doctor, speciality, random.choice(INSURANCES), center, day, start,
                   end, random.choice(("Revisión", "Consulta", None)), status, made, made)

    with agenda.transaction(conn):
        conn.executemany(
            "INSERT INTO appointments (patient_id, doctor_id, speciality_id, insurance_id, center_id, date, time,"
            " end_time, reason, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows())
    conn.execute("ANALYZE")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    counts = database_counts(conn)
    conn.close()
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", help="the database file to (re)create")
    parser.add_argument("--patients", type=int, default=60_000)
    parser.add_argument("--appointments", type=int, default=300_000)
    options = parser.parse_args()
    started = time.perf_counter()
    counts = build(options.db, options.patients, options.appointments)
    print(f"{options.db}: {counts['doctors']} doctors, {counts['centers']} centers, {counts['patients']:,} patients, "
          f"{counts['appointments']:,} appointments in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
