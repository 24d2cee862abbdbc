"""The clinic at a glance ("The clinic at a glance"): per doctor and week the slots offered, booked and
free, no-shows and late cancellations, and the minutes offered and booked; per visit type the minutes booked;
per week the reminder cycles' outcomes and who booked (voice agent or desk); how far ahead patients book.
SQL over the appointments and the audit trail. No HTTP here."""

import datetime as dt

from ..values.refusals import invalid
from .slots import any_time, day_states, read_schedule
from .doctors import doctors_with_hours

MAX_WEEKS = 27  # half a year a report
LEAD_BUCKETS = (("same_day", 0, 0), ("week", 1, 7), ("month", 8, 30), ("quarter", 31, 90), ("later", 91, 100000))
REMINDER_ACTIONS = ("confirmed", "declined", "unanswered", "released")


def weeks_between(first, last):
    """The Mondays of the weeks from `first` to `last`."""
    if last < first:
        raise invalid("the last day is before the first", "last_day")
    monday = first - dt.timedelta(days=first.weekday())
    weeks = [monday + dt.timedelta(days=7 * n) for n in range((last - monday).days // 7 + 1)]
    if len(weeks) > MAX_WEEKS:
        raise invalid(f"a report covers {MAX_WEEKS} weeks at most", "report_weeks")
    return weeks


def clinic_report(clinic, first, last):
    """{"weeks", "doctors": [{id, name, weeks: {monday: counts}, totals}], "types": [{name, minutes, visits}],
    "reminders", "sources", "lead"}."""
    weeks = weeks_between(first, last)
    start, end = weeks[0], weeks[-1] + dt.timedelta(days=6)
    doctors = {row["id"]: {"id": row["id"], "name": row["name"], "weeks": {}} for row in doctors_with_hours(clinic)}
    offered_slots(clinic, doctors, start, end)
    week_of = "date(a.date, '-6 days', 'weekday 1')"
    for row in clinic.conn().execute(
            f"SELECT a.doctor_id, {week_of} AS week, sum(a.status != 'cancelled' AND a.squeezed = 0) AS booked,"
            " sum(CASE WHEN a.status != 'cancelled' AND a.squeezed = 0 THEN (substr(a.end_time, 1, 2) * 60"
            " + substr(a.end_time, 4, 2)) - (substr(a.time, 1, 2) * 60 + substr(a.time, 4, 2)) ELSE 0 END) AS minutes,"
            " sum(a.attendance IS 'no_show') AS no_shows, sum(a.status = 'cancelled' AND coalesce(a.cancelled_at >="
            " strftime('%Y-%m-%dT%H:%M:%S', a.date || ' ' || a.time, '-1 day'), 0)) AS late_cancels FROM appointments a"
            " WHERE a.date BETWEEN ? AND ? GROUP BY a.doctor_id, week", (start.isoformat(), end.isoformat())):
        counts = week_counts(doctors[row["doctor_id"]], dt.date.fromisoformat(row["week"]))
        counts.update(booked=row["booked"], no_shows=row["no_shows"], late_cancels=row["late_cancels"],
                      booked_minutes=row["minutes"])
    for doctor in doctors.values():
        for counts in doctor["weeks"].values():
            counts["free"] = max(counts["offered"] - counts["booked"], 0)
        doctor["totals"] = {key: sum(c[key] for c in doctor["weeks"].values())
                            for key in ("offered", "booked", "free", "no_shows", "late_cancels", "offered_minutes",
                                        "booked_minutes")}
        doctor["totals"]["filled"] = share(doctor["totals"]["booked"], doctor["totals"]["offered"])
    listed = [d for d in sorted(doctors.values(), key=lambda d: d["name"]) if d["totals"]["offered"] or d["totals"]["booked"]]
    return {"weeks": weeks, "doctors": listed, "types": minutes_by_type(clinic, start, end),
            "reminders": reminder_outcomes(clinic, weeks),
            "sources": booked_by(clinic, weeks), "lead": lead_times(clinic, start, end)}


def week_counts(doctor, monday):
    return doctor["weeks"].setdefault(monday, {"offered": 0, "booked": 0, "free": 0, "no_shows": 0,
                                               "late_cancels": 0, "offered_minutes": 0, "booked_minutes": 0})


def offered_slots(clinic, doctors, start, end):
    """Count each doctor's slots offered each week: those the one slot decision (`day_states`) leaves free
    on their grid, bookings aside, whatever the clock says now (a window with no notice and no horizon)."""
    schedule, window = read_schedule(clinic.conn(), list(doctors), start, end, with_bookings=False), any_time(clinic.tz)
    day = start
    while day <= end:
        for row, grid in schedule.grids.get(day.weekday(), ()):
            offered = len(grid.slots) - len(day_states(window, row, grid, day, schedule.closures, None))
            counts = week_counts(doctors[row["doctor_id"]], day - dt.timedelta(days=day.weekday()))
            counts["offered"] += offered
            counts["offered_minutes"] += offered * row["slot_minutes"]
        day += dt.timedelta(days=1)


def minutes_by_type(clinic, start, end):
    """[{name, visits, minutes}] booked of each visit type from `start` to `end` (squeezed in or not, never
    cancelled), the most first; visits of no type are under the doctor's area."""
    return [dict(row) for row in clinic.conn().execute(
        "SELECT coalesce(t.name, s.name, a.speciality_id) AS name, count(*) AS visits, sum((substr(a.end_time, 1, 2)"
        " * 60 + substr(a.end_time, 4, 2)) - (substr(a.time, 1, 2) * 60 + substr(a.time, 4, 2))) AS minutes"
        " FROM appointments a LEFT JOIN visit_types t ON t.id = a.type_id LEFT JOIN specialities s ON"
        " s.id = a.speciality_id WHERE a.date BETWEEN ? AND ? AND a.status != 'cancelled'"
        " GROUP BY coalesce(a.type_id, a.speciality_id) ORDER BY minutes DESC, name", (start.isoformat(), end.isoformat()))]


def share(part, whole):
    return round(100 * part / whole) if whole else 0


def reminder_outcomes(clinic, weeks):
    """{monday: {confirmed, declined, unanswered, released}} of the caller's reminder answers, by the
    week they were given."""
    found = {monday: dict.fromkeys(REMINDER_ACTIONS, 0) for monday in weeks}
    start, end = weeks[0].isoformat(), (weeks[-1] + dt.timedelta(days=7)).isoformat()
    for monday, action, count in clinic.conn().execute(
            "SELECT date(substr(at, 1, 10), '-6 days', 'weekday 1'), substr(action, 13), count(*) FROM events"
            " WHERE at >= ? AND at < ? AND action IN ('appointment.confirmed', 'appointment.declined',"
            " 'appointment.unanswered', 'appointment.released') AND source = 'api' GROUP BY 1, 2", (start, end)):
        found.setdefault(dt.date.fromisoformat(monday), dict.fromkeys(REMINDER_ACTIONS, 0))[action] = count
    return found


def booked_by(clinic, weeks):
    """{monday: {"agent", "desk"}}: appointments booked each week by the voice agent and by reception
    (counted by day in SQL, from the covering index, and folded into weeks here)."""
    found = {monday: {"agent": 0, "desk": 0} for monday in weeks}
    start, end = weeks[0].isoformat(), (weeks[-1] + dt.timedelta(days=7)).isoformat()
    for day, agent, count in clinic.conn().execute(
            "SELECT substr(created_at, 1, 10), booked_by = 'api', count(*) FROM appointments"
            " WHERE created_at >= ? AND created_at < ? GROUP BY 1, 2", (start, end)):
        made = dt.date.fromisoformat(day)
        monday = made - dt.timedelta(days=made.weekday())
        found.setdefault(monday, {"agent": 0, "desk": 0})["agent" if agent else "desk"] += count
    return found


def lead_times(clinic, start, end):
    """{bucket: count}: how many days ahead the appointments booked from `start` to `end` were booked
    (counted by booking day and appointment day in SQL, bucketed here)."""
    found = dict.fromkeys((name for name, _, _ in LEAD_BUCKETS), 0)
    for made, day, count in clinic.conn().execute(
            "SELECT substr(created_at, 1, 10), date, count(*) FROM appointments WHERE created_at >= ? AND created_at < ?"
            " GROUP BY 1, 2", (start.isoformat(), (end + dt.timedelta(days=1)).isoformat())):
        ahead = (dt.date.fromisoformat(day) - dt.date.fromisoformat(made)).days
        bucket = next((name for name, low, high in LEAD_BUCKETS if low <= ahead <= high), None)
        if bucket:
            found[bucket] += count
    return found
