"""Build a large clinic's database for the benchmark (bench/README.md).

30 doctors over 3 centers with weekly hours like a real clinic's (mornings, afternoons,
some part-time), 6 insurances, national holidays, 60,000 patients and 300,000
appointments over two years (the past year and the next), the past mostly confirmed,
some cancelled or unanswered, the future mostly booked. Catalogs go through
`agenda.seed_catalogs`, the same code as `agenda seed`; patients and appointments are
inserted in bulk with the schema's constraints and triggers in force.

With --types the same clinic also declares visit types, rooms and machines: 4 types a
doctor (each area's first visit of 30 minutes, follow-up of 15, a 10-minute visit with a
10-minute pause, and a fourth needing an ultrasound or a treatment room), 10 rooms (a
treatment room and boxes at each center, the doctors whose hours fit placed in a box) and
an ultrasound at each center. Its appointments are the same ones, at the same starts, each
of a type that fits its cell (the follow-up, or the 10 + 10 on a 20-minute grid; a quarter
the ultrasound's or treatment room's type where that is free then, holding it), and each of
a doctor placed in a box holds that box.

    python bench/generate.py /tmp/big.db                     # 300,000 appointments
    python bench/generate.py /tmp/small.db --appointments 3000 --patients 2000
    python bench/generate.py /tmp/typed.db --types           # the same, with types, rooms and machines
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
from _agenda.storage.events import database_counts, utc_iso  # noqa: E402  (agenda's own)
from _agenda.domain.patients import insert_patient  # noqa: E402
from _agenda.values.fields import hhmm, minutes_of  # noqa: E402

CENTERS = ("CENTRO", "NORTE", "SUR")
SPECIALITIES = {"MG": ("Medicina general", 10), "PED": ("Pediatría", 6), "DER": ("Dermatología", 4),
                "TRA": ("Traumatología", 5), "GIN": ("Ginecología", 5)}
INSURANCES = ("PRIVADO", "SANITAS", "ADESLAS", "DKV", "MAPFRE", "ASISA")
SHIFTS = (("mon-fri", "08:00-15:00", 15), ("mon-fri", "14:00-21:00", 15), ("mon-fri", "09:00-14:00;16:00-19:00", 20),
          ("mon;wed;fri", "08:00-15:00", 15), ("tue;thu", "09:00-14:00", 20), ("mon-thu", "08:30-14:30", 15))
HOLIDAYS = ("01/01", "06/01", "01/05", "15/08", "12/10", "01/11", "06/12", "08/12", "25/12")
LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
# With types: (suffix, name, minutes, pause, needs) of every area's types, and each area's fourth
COMMON_TYPES = (("PRI", "Primera visita", 30, 0, ""), ("REV", "Revisión", 15, 0, ""), ("CUR", "Cura", 10, 10, ""))
FOURTH_TYPE = {"MG": ("ECO", "Ecografía", 15, 0, "ecografo"), "GIN": ("ECO", "Ecografía", 15, 0, "ecografo"),
               "TRA": ("ECO", "Ecografía", 15, 0, "ecografo"), "PED": ("VAC", "Vacunación", 15, 0, "curas"),
               "DER": ("CIR", "Cirugía menor", 45, 15, "curas")}
ROOMS = {"CENTRO": ("BOX-C1", "BOX-C2", "BOX-C3", "CURAS-C"), "NORTE": ("BOX-N1", "BOX-N2", "CURAS-N"),
         "SUR": ("BOX-S1", "BOX-S2", "CURAS-S")}  # a room's category: what its id starts with
NAMES = ("Ana", "José", "María", "Javier", "Lucía", "Carmen", "Manuel", "Laura", "David", "Marta", "Pablo", "Elena")
SURNAMES = ("García", "Martínez", "López", "Sánchez", "Pérez", "Gómez", "Núñez", "Muñoz", "Ruiz", "Díaz")


def catalog_csv(today, types=False):
    """The catalog file: as it always was, or with `types` five columns more (pause, needs, category, types,
    room) and the types, rooms and machines."""
    more = ",,,,," if types else ""
    lines = ["kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to"
             + (",pause,needs,category,types,room" if types else "")]
    lines += [f"center,{center},Centro {center.title()},,,,,,,,{more}" for center in CENTERS]
    lines += [f"speciality,{code},{name},,,,,,,,{more}" for code, (name, _) in SPECIALITIES.items()]
    lines += [f"insurance,{code},{code.title()},,,,,,,,{more}" for code in INSURANCES]
    if types:
        lines += [f"type,{code}-{suffix},{name},{code},,,,,{minutes},,,{pause},{needs},,," for code in SPECIALITIES
                  for suffix, name, minutes, pause, needs in (*COMMON_TYPES, FOURTH_TYPE[code])]
        lines += [f"room,{room},{room.title()},,{center},,,,,,,,,{room.split('-')[0].lower()},,"
                  for center, rooms in ROOMS.items() for room in rooms]
        lines += [f"machine,ECO-{center},Ecógrafo {center.title()},,{center},,,,,,,,,ecografo,," for center in CENTERS]
    placed, number = {}, 0
    for code, (_, count) in SPECIALITIES.items():
        for _ in range(count):
            days, hours, slot = SHIFTS[number % len(SHIFTS)]
            center = CENTERS[number % len(CENTERS)]
            accepted = "" if number % 3 else ";".join(INSURANCES[: 2 + number % 4])
            lines.append(f"doctor,DR{number:02d},Dr. {NAMES[number % 12]} {SURNAMES[number % 10]} {number},"
                         f"{code},{center},{accepted},{days},{hours},{slot},,"
                         + (f",,,,{';'.join(types_of(code, slot))},{box_for(placed, center, days, hours)}"
                            if types else ""))
            number += 1
    for year in (today.year - 1, today.year, today.year + 1):
        lines += [f"closed,,Festivo,,,,,,,{day}/{year},{more}" for day in HOLIDAYS]
    return "\n".join(lines) + "\n"


def types_of(code, slot_minutes):
    """A doctor's 4 types, the default first: the one that fills a cell of their grid."""
    first = "REV" if slot_minutes == 15 else "CUR"
    return [f"{code}-{suffix}" for suffix in (first, "PRI", FOURTH_TYPE[code][0], "CUR" if first == "REV" else "REV")]


def box_for(placed, center, days, hours):
    """The first box at the center that no doctor placed earlier holds at any of these hours ('' when none is
    free: that doctor is in no room); `placed` {box: [(weekday, start, end)]} grows with it."""
    from _agenda.files.catalogs import parse_days, parse_hours  # this checkout's: only a clinic with types needs it
    times = [(day, start, end) for day in parse_days(days) for start, end in parse_hours(hours)]
    for box in ROOMS[center]:
        if box.startswith("BOX") and not any(day == other and start < until and begin < end for day, start, end in times
                                             for other, begin, until in placed.get(box, ())):
            placed.setdefault(box, []).extend(times)
            return box
    return ""


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


def build(path, patients=60_000, appointments=300_000, seed=7, today=None, days=None, types=False):
    """The clinic's database at `path`; its appointments over the year before and the year
    after `today`, or over `days` (first, last) when given. With `types`, the same clinic
    declaring types, rooms and machines, its appointments typed (typed_visit)."""
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
        csv_path.write_text(catalog_csv(today, types), encoding="utf-8")
        agenda.seed_catalogs(conn, agenda.read_catalog_file(csv_path), at=now)
    with agenda.transaction(conn):
        for n in range(patients):
            insert_patient(conn, {"name": NAMES[n % 12], "surname": f"{SURNAMES[n % 10]} {SURNAMES[(n // 10) % 10]}",
                                  "birth_date": f"{1930 + n % 90}-{1 + n % 12:02d}-{1 + n % 28:02d}",
                                  "nif": f"{40_000_000 + n:08d}{LETTERS[(40_000_000 + n) % 23]}",
                                  "phone": f"6{n:08d}", "phone_e164": f"+346{n:08d}"}, now, "cli")
    slots = all_slots(conn, first_day, last_day)
    if appointments > len(slots):
        raise SystemExit(f"only {len(slots)} slots from {first_day} to {last_day}; ask for fewer appointments")
    chosen = sorted(random.sample(slots, appointments), key=lambda slot: (slot[3], slot[4], slot[0]))
    insert_appointments(conn, chosen, patients, today.isoformat(), now, types)
    conn.execute("ANALYZE")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    counts = database_counts(conn)
    conn.close()
    return counts


def insert_appointments(conn, chosen, patients, today_text, now, types):
    """The appointments of the `chosen` slots, in one transaction: the past mostly confirmed, the future mostly
    booked; with `types`, each of a type and holding what it needs. Typing draws from its own generator, so
    a clinic with types has the very appointments of the one without."""
    typing, holds, held = random.Random(11), [], {}

    def rows():
        for doctor, center, speciality, day, start, end in chosen:
            roll = random.random()
            if day < today_text:
                status = "confirmed" if roll < 0.7 else "unanswered" if roll < 0.8 else "cancelled"
            else:
                status = "booked" if roll < 0.85 else "confirmed" if roll < 0.9 else "cancelled"
            made = booked_on(day, now)  # booked some days ahead, as patients do, never after now
            row = (random.randint(1, patients), doctor, speciality, random.choice(INSURANCES), center, day, start,
                   end, random.choice(("Revisión", "Consulta", None)), status, made, made)
            yield typed_visit(row, typing, holds, held) if types else row

    columns = "patient_id, doctor_id, speciality_id, insurance_id, center_id, date, time, end_time, reason, status," \
              " created_at, updated_at" + (", type_id, pause, busy_until" if types else "")
    with agenda.transaction(conn):
        conn.executemany(f"INSERT INTO appointments ({columns}) VALUES ({', '.join('?' * (columns.count(',') + 1))})",
                         rows())
        if not holds:
            return
        ids = {tuple(row[1:]): row[0] for row in conn.execute("SELECT id, doctor_id, date, time FROM appointments")}
        conn.executemany("INSERT INTO holds (appointment_id, resource_id, date, time, until, live)"
                         " VALUES (?, ?, ?, ?, ?, ?)", [(ids[doctor, day, start], resource, day, start, until, live)
                                                         for doctor, day, start, resource, until, live in holds])
        conn.execute(  # each visit of a doctor placed in a box holds it too, as the door writes it
            "INSERT INTO holds (appointment_id, resource_id, date, time, until, live) SELECT a.id, s.room_id, a.date,"
            " a.time, a.busy_until, a.status != 'cancelled' FROM appointments a JOIN schedules s ON s.doctor_id ="
            " a.doctor_id AND s.center_id IS a.center_id AND s.weekday = (CAST(strftime('%w', a.date) AS INTEGER)"
            " + 6) % 7 AND s.start_time <= a.time AND a.time < s.end_time WHERE s.room_id IS NOT NULL")


def typed_visit(row, typing, holds, held):
    """The appointments row with its type, end, pause and busy end: a quarter of them, where the area's fourth
    type fits the cell and its ultrasound or treatment room is free then, of that type (its hold appended to
    `holds`, and to `held` {(resource, day): [(start, until)] live} when live); the rest the doctor's default,
    the type that fills a cell of their grid."""
    doctor, speciality, center, day, start, end, status = row[1], row[2], row[4], row[5], row[6], row[7], row[9]
    begin, step = minutes_of(start), minutes_of(end) - minutes_of(start)
    suffix, _, minutes, pause, needs = FOURTH_TYPE[speciality]
    resource = f"ECO-{center}" if needs == "ecografo" else f"CURAS-{center[0]}"
    live, until = status != "cancelled", hhmm(begin + minutes + pause)
    spans = held.setdefault((resource, day), [])
    if minutes + pause <= step and typing.random() < 0.25 and not (
            live and any(other < until and start < other_until for other, other_until in spans)):
        holds.append((doctor, day, start, resource, until, int(live)))
        if live:
            spans.append((start, until))
    else:
        suffix, _, minutes, pause, _ = COMMON_TYPES[1 if step == 15 else 2]
    return (*row[:7], hhmm(begin + minutes), *row[8:], f"{speciality}-{suffix}", pause, hhmm(begin + minutes + pause))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", help="the database file to (re)create")
    parser.add_argument("--patients", type=int, default=60_000)
    parser.add_argument("--appointments", type=int, default=300_000)
    parser.add_argument("--types", action="store_true", help="declare visit types, rooms and machines, and type"
                                                             " the appointments")
    options = parser.parse_args()
    started = time.perf_counter()
    counts = build(options.db, options.patients, options.appointments, types=options.types)
    print(f"{options.db}: {counts['doctors']} doctors, {counts['centers']} centers, {counts['patients']:,} patients, "
          f"{counts['appointments']:,} appointments in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
