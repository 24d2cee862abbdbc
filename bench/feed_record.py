r"""What a doctor's feed with names adds to the record of reads in a year (bench/README.md, "The record
of reads, bounded").

Builds the large bench clinic (300,000 appointments), gives its busiest doctor a feed showing names,
and polls it through the service's own code (`feed_calendar`) --polls times a day for --days days on a
clock that moves on, while the doctor's patients book at the clinic's own pace (the doctor's coming
appointments over a year, a day's worth each day, straight into the table) and the past leaves the
feed. Prints the patients a poll shows, the rows and bytes (SQLite's dbstat) the record holds after
each day, and the year it adds at that pace, beside what a row a request and a row a day would add.

    .venv/bin/python bench/feed_record.py              # about two minutes
    .venv/bin/python bench/feed_record.py --days 14 --polls 8

Bounded: --days x --polls polls, in one process, its files in one temporary folder.
"""

import argparse
import datetime as dt
import random
import statistics
import sys
import tempfile
from pathlib import Path

import run  # bench/run.py: load_agenda, generate

MIB = 1024 * 1024


def record_size(conn):
    """(rows, bytes) of the record of reads: its table's pages, as SQLite's dbstat counts them."""
    rows = conn.execute("SELECT count(*) FROM access_reads").fetchone()[0]
    size = conn.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'access_reads'").fetchone()[0]
    return rows, size


def book_a_days_worth(conn, doctor, day, count, patients):
    """`count` new appointments of the doctor on free starts of the coming year, as patients book them."""
    slots = conn.execute("SELECT center_id, speciality_id, date, time, end_time FROM appointments WHERE doctor_id = ?"
                         " AND date > ? ORDER BY random() LIMIT ?", (doctor, day.isoformat(), count * 4)).fetchall()
    made = 0
    for center, speciality, date, time, end in slots:
        if made == count:
            break
        taken = conn.execute("SELECT 1 FROM appointments WHERE doctor_id = ? AND date = ? AND time = ? AND status !="
                             " 'cancelled'", (doctor, date, time)).fetchone()
        if taken:  # a free start of the grid: one cancelled there, as the generator leaves one in ten
            continue
        conn.execute("INSERT INTO appointments (patient_id, doctor_id, speciality_id, center_id, date, time, end_time,"
                     " status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'booked', ?, ?)",
                     (random.randint(1, patients), doctor, speciality, center, date, time, end, f"{day}T09:00:00Z",
                      f"{day}T09:00:00Z"))
        made += 1
    conn.commit()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=7, help="days of polling")
    parser.add_argument("--polls", type=int, default=4, help="polls a day (a calendar app's default: 96)")
    options = parser.parse_args()
    run.load_agenda(run.AGENDA_PATH)
    agenda = run.agenda
    from _agenda.domain.clinic import Clinic
    from _agenda.domain.feeds import feed_calendar, new_feed
    from _agenda.storage.database import Database
    from _agenda.values.settings import Settings
    today = dt.date.today()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.db"
        run.generate.build(path, today=today)
        conn = agenda.open_database(path)
        doctor, coming, patients = conn.execute(
            "SELECT doctor_id, count(*), (SELECT count(*) FROM patients) FROM appointments WHERE status != 'cancelled'"
            " AND date >= ? GROUP BY doctor_id ORDER BY 2 DESC LIMIT 1", (today.isoformat(),)).fetchone()
        moment = [dt.datetime.combine(today, dt.time(6), dt.timezone.utc)]
        clinic = Clinic(Database(path), Settings(feed_shows="names"), lambda: moment[0])
        token = new_feed(clinic, doctor, "cli")
        per_day, sizes, shown = round(coming / 365), [], None
        print(f"{doctor}: {coming:,} coming appointments; {per_day} booked a day; {options.polls} polls a day")
        for number in range(options.days):
            day = today + dt.timedelta(days=number)
            for poll in range(options.polls):
                moment[0] = dt.datetime.combine(day, dt.time(6), dt.timezone.utc) + dt.timedelta(
                    hours=16 * poll / options.polls)
                body = feed_calendar(clinic, token)
                shown = shown or body.count(b"BEGIN:VEVENT")
            clinic.access.flush()
            sizes.append(record_size(conn))
            print(f"day {number + 1}: {sizes[-1][0]:,} rows, {sizes[-1][1] / 1024:,.0f} KiB", flush=True)
            book_a_days_worth(conn, doctor, day, per_day, patients)
        rows_a_day = statistics.median(later[0] - earlier[0] for earlier, later in zip(sizes, sizes[1:]))
        bytes_a_row = sizes[-1][1] / max(sizes[-1][0], 1)
        year = (sizes[0][0] + rows_a_day * 364) * bytes_a_row
        print(f"a poll shows {shown:,} appointments; after the first day each day adds {rows_a_day:,.0f} rows "
              f"({bytes_a_row:.0f} bytes a row)")
        print(f"a year at this pace: {year / MIB:.1f} MiB (a row a day per patient: "
              f"{sizes[0][0] * 365 * bytes_a_row / MIB:,.0f} MiB; a row a request, at 96 polls a day: "
              f"{sizes[0][0] * 96 * 365 * bytes_a_row / MIB:,.0f} MiB)")
        clinic.db.close()
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
