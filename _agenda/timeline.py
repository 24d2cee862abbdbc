"""The day and the week drawn as time ("The day as time"): columns (a doctor's day) of blocks on one
minute axis, each named (free, past, closed, taken, off hours, retired, too far ahead), and the
appointments over them. Plain data for the desk's templates; no HTTP here."""

import datetime as dt
from typing import NamedTuple

from .values import format_date, hhmm, minutes_of
from .counter import open_marks

# Slot states a column draws as one block however many slots they cover, and their words' keys.
MERGED = {"too_soon": "past", "closed": "closed", "beyond_horizon": "beyond_horizon", "doctor_retired": "retired",
          "wrong_center": "elsewhere", "off_grid": "past", "outside_hours": "off"}


class Block(NamedTuple):
    start: int  # minutes since midnight
    end: int
    kind: str  # free, taken, past, closed, beyond_horizon, retired, off
    detail: str | None
    time: str
    center_id: str | None


def merged(blocks):
    """Neighbouring blocks of one kind and detail as one; free and taken slots stay one a slot."""
    out = []
    for block in sorted(blocks):
        last = out[-1] if out else None
        if last and block.kind not in ("free", "taken") and (last.kind, last.detail) == (block.kind, block.detail) \
                and last.end >= block.start:
            out[-1] = last._replace(end=max(last.end, block.end))
        else:
            out.append(block)
    return out


def off_hours(blocks, first, last):
    """Blocks of `off` over every minute from first to last that no block covers."""
    gaps, at = [], first
    for block in sorted(blocks):
        if block.start > at:
            gaps.append(Block(at, block.start, "off", None, hhmm(at), None))
        at = max(at, block.end)
    if at < last:
        gaps.append(Block(at, last, "off", None, hhmm(at), None))
    return gaps


def new_column(key, doctor_id, name, speciality_id, day):
    return {"key": key, "doctor_id": doctor_id, "name": name, "speciality_id": speciality_id, "day": day,
            "slot_minutes": set(), "blocks": [], "cards": []}


def fill_day(clinic, columns, day, center_id, doctor_id, key_of, reader):
    """Add one day's slots and appointments to `columns` (keyed by `key_of(doctor_id, day)`)."""
    for doctor, time_text, end_text, (state, detail) in clinic.day_slots(day, center_id):
        if doctor_id not in (None, doctor["doctor_id"]):
            continue
        column = columns.setdefault(key_of(doctor["doctor_id"], day), new_column(
            key_of(doctor["doctor_id"], day), doctor["doctor_id"], doctor["name"], doctor["speciality_id"], day))
        column["slot_minutes"].add(doctor["slot_minutes"])
        kind = state if state in ("free", "taken") else MERGED.get(state, "past")
        column["blocks"].append(Block(minutes_of(time_text), minutes_of(end_text), kind,
                                      detail if kind == "closed" else None, time_text, doctor["center_id"]))
    where, params = ("a.date = ? AND a.doctor_id = ?", [day.isoformat(), doctor_id]) if doctor_id else \
        ("a.date = ?", [day.isoformat()])
    for appointment in clinic.appointments(where, params, reader, "day", center_id):  # only those drawn are read
        key = key_of(appointment["doctor_id"], day)
        column = columns.setdefault(key, new_column(key, appointment["doctor_id"], appointment["doctor_name"],
                                                    appointment["speciality_id"], day))
        column["cards"].append({**appointment, "from": minutes_of(appointment["start"]),
                                "to": minutes_of(appointment["end"]), "busy_to": minutes_of(appointment["busy_until"]),
                                "arrived_local": local_time(clinic, appointment),
                                "marks": open_marks(clinic, appointment["date"], appointment["start"])})


def local_time(clinic, appointment):
    """HH:MM, in the clinic's zone, of the patient's arrival; '' when none is recorded."""
    if not appointment.get("arrived_at"):
        return ""
    return f"{dt.datetime.fromisoformat(appointment['arrived_at']).astimezone(clinic.tz):%H:%M}"


class Timeline(NamedTuple):
    """Columns over one axis from `first` to `last` (minutes, whole hours); `ticks` label it."""
    columns: list
    first: int
    last: int
    ticks: list


def laid_out(columns):
    """The Timeline of these columns: the axis from the hour before the earliest minute to the hour
    after the latest, each column's blocks merged and its gaps drawn as off hours."""
    spans = [(b.start, b.end) for c in columns for b in c["blocks"]] + [(a["from"], a["busy_to"]) for c in columns
                                                                        for a in c["cards"]]
    if not spans:
        return Timeline([], 0, 0, [])
    first = min(start for start, _ in spans) // 60 * 60
    last = min(24 * 60, -(-max(end for _, end in spans) // 60) * 60)
    for column in columns:
        column["blocks"] = merged(column["blocks"])
        column["blocks"] += off_hours(column["blocks"], first, last)
        column["blocks"] = [block for block in column["blocks"] if block.kind != "taken" or not any(
            card["from"] <= block.start and block.end <= card["busy_to"] for card in column["cards"])]  # its card says it
        column["slot_minutes"] = sorted(column["slot_minutes"])
    return Timeline(columns, first, last, [(minute, hhmm(minute)) for minute in range(first, last, 15)])


def day_timeline(clinic, day, center_id=None, doctor_id=None, reader=None):
    """One center's day (one doctor's, when given): a column a doctor, by name."""
    columns = {}
    fill_day(clinic, columns, day, center_id, doctor_id, lambda doctor, _: doctor, reader)
    return laid_out(sorted(columns.values(), key=lambda c: (c["name"], c["doctor_id"])))


def week_days(day):
    """Monday to Sunday of the week of `day`."""
    monday = day - dt.timedelta(days=day.weekday())
    return [monday + dt.timedelta(days=n) for n in range(7)]


def doctor_week(clinic, doctor_id, day, reader=None):
    """One doctor's week, at every center: a column a day, Monday first; days off drawn as off hours,
    a Saturday or Sunday only when the doctor works or has an appointment that day."""
    columns = {}
    doctor = clinic.require_doctor(doctor_id)
    for each in week_days(day):
        columns[each] = new_column(each, doctor_id, doctor["name"], doctor["speciality_id"], each)
        fill_day(clinic, columns, each, None, doctor_id, lambda _, on: on, reader)
    return laid_out([column for each, column in columns.items()
                     if each.weekday() < 5 or column["blocks"] or column["cards"]])


def center_week(clinic, center_id, day):
    """A center's week: for each day, each doctor's free slots, appointments and those to call."""
    days = []
    for each in week_days(day):
        doctors = {}
        for doctor, _, _, (state, _) in clinic.day_slots(each, center_id):
            counts = doctors.setdefault(doctor["doctor_id"], {"id": doctor["doctor_id"], "name": doctor["name"],
                                                              "free": 0, "booked": 0, "to_call": 0})
            counts["free"] += state == "free"
        for appointment in clinic.appointments_on([each.isoformat()], None, center_id):  # counts: no one read
            counts = doctors.setdefault(appointment["doctor_id"], {"id": appointment["doctor_id"],
                                                                   "name": appointment["doctor_name"], "free": 0,
                                                                   "booked": 0, "to_call": 0})
            counts["booked"] += 1
            counts["to_call"] += appointment["to_call"]
        days.append({"day": each, "date": format_date(each),
                     "doctors": sorted(doctors.values(), key=lambda counts: counts["name"])})
    return days
