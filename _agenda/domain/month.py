"""A month at a glance ("The month at a glance"): each day's worked, free, booked and closed minutes per doctor,
its closures, and the days a visit type fits, for one doctor or one center, read in a number of queries that
does not grow with the month's days; and the first free start of a type up to the desk's horizon. No HTTP here."""

import datetime as dt

from ..values.fields import minutes_of, months_after
from .slots import closed_at, closures_on, local_start, read_schedule
from .fitting import fitting_cells
from .availability import availability

# A live appointment's minutes, from its start to its end ('HH:MM' texts), in SQL.
MINUTES = ("((CAST(substr(end_time, 1, 2) AS INTEGER) - CAST(substr(time, 1, 2) AS INTEGER)) * 60"
           " + CAST(substr(end_time, 4, 2) AS INTEGER) - CAST(substr(time, 4, 2) AS INTEGER))")


def month_days(first):
    """Every date of the month `first` (any day of it) is in, the first day first."""
    start = first.replace(day=1)
    return [start + dt.timedelta(days=n) for n in range((months_after(start, 1) - start).days)]


def month_weeks(first):
    """The month as weeks, Monday first: [[date or None (a day of another month)] * 7]."""
    days = month_days(first)
    cells = [None] * days[0].weekday() + days
    cells += [None] * (-len(cells) % 7)
    return [cells[n:n + 7] for n in range(0, len(cells), 7)]


def month_view(clinic, first, doctor_id=None, center_id=None, type_id=None):
    """{date: {"doctors": [{id, name, center_id, hours, free, booked, closed, count}] (minutes, by name),
    "closures": [{reason, hours, doctor, holiday}], "fits": whether a visit of `type_id` starts free there}} of one
    doctor's month (at every center) or one center's; free is the cells where a visit of the doctor fits whole
    (`fitting_cells`), hours the cells the clock has that day ("The month at a glance")."""
    days = month_days(first)
    conn = clinic.conn()
    if doctor_id is not None:
        doctors = [clinic.require_doctor(doctor_id)]
    else:
        doctors = conn.execute("SELECT DISTINCT d.id, d.name, d.speciality_id FROM doctors d JOIN schedules s ON"
                               " s.doctor_id = d.id WHERE s.center_id = ?", (center_id,)).fetchall()
    names = {d["id"]: d["name"] for d in doctors}
    schedule = read_schedule(conn, list(names), days[0], days[-1], center_id, with_bookings=False)
    cells = {(doctor, day, time) for doctor, day, time in fitting_cells(clinic, days[0], days[-1], center_id,
                                                                          doctor_id) if doctor in names}
    month = {day: {"doctors": {}, "closures": [], "fits": False} for day in days}
    for day in days:
        for row, grid in schedule.grids.get(day.weekday(), ()):
            worked(month[day], row, grid, day, names, cells, schedule, clinic.tz)
    for row in conn.execute(
            f"SELECT a.doctor_id, d.name, a.date, count(*), sum(CASE WHEN a.squeezed = 0 THEN {MINUTES} ELSE 0 END)"
            " FROM appointments a JOIN doctors d ON d.id = a.doctor_id WHERE a.status != 'cancelled' AND a.date"
            " BETWEEN ? AND ? AND (? IS NULL OR a.doctor_id = ?) AND (? IS NULL OR a.center_id = ?)"
            " GROUP BY a.doctor_id, a.date", (days[0].isoformat(), days[-1].isoformat(), doctor_id, doctor_id,
                                              center_id, center_id)):
        counts = doctor_day(month[dt.date.fromisoformat(row[2])], row[0], row[1], None)
        counts["count"], counts["booked"] = row[3], row[4] or 0
    for day, drawn in month.items():
        drawn["closures"] = closures_of(schedule.closures, day, drawn, doctor_id, center_id, names)
        drawn["doctors"] = sorted(drawn["doctors"].values(), key=lambda counts: (counts["name"], counts["id"]))
    if type_id is not None:
        for slot in availability(clinic, doctor_id=doctor_id, speciality_id=type_id, center_id=center_id,
                                 first=days[0], last=days[-1], channel="desk"):
            month[slot.date]["fits"] = True
    return month


def doctor_day(drawn, doctor_id, name, center_id):
    """A doctor's minutes on a day of the month, made when first met."""
    return drawn["doctors"].setdefault(doctor_id, {"id": doctor_id, "name": name, "center_id": center_id,
                                                   "hours": 0, "free": 0, "booked": 0, "closed": 0, "count": 0})


def worked(drawn, row, grid, day, names, cells, schedule, tz):
    """Add one schedule row's cells on `day` to its doctor's minutes: those the clock has (a skipped hour in March
    has none), those free for a visit, and those closed; nothing from the day the doctor retires."""
    if row["retired_from"] is not None and day.isoformat() >= row["retired_from"]:
        return
    counts = doctor_day(drawn, row["doctor_id"], names[row["doctor_id"]], row["center_id"])
    counts["center_id"] = counts["center_id"] or row["center_id"]
    shut = closures_on(schedule.closures, day, row["doctor_id"], row["center_id"])
    step = row["slot_minutes"]
    for time_text, end_text, _ in grid.slots:
        if local_start(day, time_text, tz) is None:
            continue
        counts["hours"] += step
        counts["free"] += step * ((row["doctor_id"], day, time_text) in cells)
        counts["closed"] += step * (bool(shut) and closed_at(shut, time_text, end_text))


def closures_of(closures, day, drawn, doctor_id, center_id, names):
    """The closures of `day` the month shows: the clinic's, the center's and those of its doctors (the doctor's,
    at a center she works at that day), each once: {reason, hours ('' for the whole day), doctor, holiday}."""
    centers = {counts["center_id"] for counts in drawn["doctors"].values()} if doctor_id else {center_id}
    shown = []
    for closure in closures:
        if not closure["date_from"] <= day.isoformat() <= closure["date_to"]:
            continue
        if closure["center_id"] is not None and closure["center_id"] not in centers:
            continue
        if closure["doctor_id"] is not None and closure["doctor_id"] not in names:
            continue
        hours = f"{closure['start_time']}–{closure['end_time']}" if closure["start_time"] else ""
        said = {"reason": closure["reason"], "hours": hours, "doctor": names.get(closure["doctor_id"]),
                "holiday": closure["doctor_id"] is None and not hours}
        if said not in shown:
            shown.append(said)
    return shown


def reachable_months(clinic):
    """The first day of each month from this one to the desk's horizon's."""
    today, last = clinic.today(), clinic.window("desk").last_day
    months, at = [], today.replace(day=1)
    while at <= last:
        months.append(at)
        at = months_after(at, 1)
    return months


CHUNK_DAYS = 31  # the days one look for the next free start reads at once, on to the horizon


def next_free(clinic, first, doctor_id=None, speciality_id=None, center_id=None):
    """The first free start from `first` on, up to the desk's horizon, of a visit type or area (`speciality_id`)
    with this doctor (or any doctor offering it), as the desk books it (`availability`); None when there is none.
    Read a month at a time, so a start next week is found at the cost of one month."""
    last = clinic.window("desk").last_day
    while first <= last:
        found = availability(clinic, doctor_id=doctor_id, speciality_id=speciality_id, center_id=center_id,
                             first=first, last=min(first + dt.timedelta(days=CHUNK_DAYS - 1), last), channel="desk")
        if found:
            return found[0]
        first += dt.timedelta(days=CHUNK_DAYS)
    return None
