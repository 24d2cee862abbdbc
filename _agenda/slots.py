"""Slots: each doctor's grid, the closures and bookings that cover it, and the free slots a channel may offer."""

import datetime as dt
import functools
import json
from typing import NamedTuple

from .values import ClinicError, format_date, hhmm, minutes_of


class Slot(NamedTuple):
    date: dt.date
    date_text: str  # DD/MM/YYYY, written once a day rather than once a slot
    time: str
    end_time: str
    duration: int
    doctor_id: str
    doctor_name: str
    speciality_id: str
    center_id: str | None


def local_start(day, time_text, tz):
    """The UTC instant a wall-clock slot starts, or None when DST skips that wall time.

    In October's repeated hour the first occurrence is taken (fold=0), so a slot
    is offered once, not twice. The answer is in UTC because Python compares and
    adds to datetimes that share a tzinfo by their wall-clock reading.
    """
    naive = dt.datetime.combine(day, dt.time(int(time_text[:2]), int(time_text[3:5])))
    instant = naive.replace(tzinfo=tz).astimezone(dt.timezone.utc)
    if instant.astimezone(tz).replace(tzinfo=None) != naive:
        return None
    return instant


def wall_clock_is_plain(day, tz):
    """True when the clinic's clock neither skips nor repeats any time on this day."""
    midnight = dt.datetime.combine(day, dt.time(), tzinfo=tz)
    return midnight.utcoffset() == (midnight + dt.timedelta(days=1)).utcoffset()


class SlotGrid(NamedTuple):
    """One schedule's slot grid: its (start, end, start+end) 'HH:MM' texts and the set of start+end."""
    slots: tuple
    spans: frozenset


@functools.lru_cache(maxsize=512)
def slot_grid(start, stop, step):
    """The grid of slots of `step` minutes from `start` to `stop` (minutes since midnight).

    Schedules share a handful of grids, so each is built once per process, not once a request.
    """
    slots = tuple((hhmm(begin), hhmm(begin + step), hhmm(begin) + hhmm(begin + step))
                  for begin in range(start, stop - step + 1, step))
    return SlotGrid(slots, frozenset(slot[2] for slot in slots))


def slots_clear_of(grid, taken):
    """The slots of the grid that overlap none of `taken`, a set of 'HH:MMHH:MM' start+end texts.

    The usual day is quick: every appointment within the grid's hours fills exactly one
    of its slots (the others belong to the doctor's other shift), so the free slots are
    the rest. After a schedule change an appointment may straddle slots; then one sweep
    beside the grid finds every clash, since a doctor's live appointments never overlap
    (schema.sql's triggers): sorted by start they are sorted by end too.
    """
    if not taken:
        return grid.slots
    opens, closes = grid.slots[0][0], grid.slots[-1][1]
    if not any(span[:5] < closes and opens < span[5:] for span in taken - grid.spans):
        return [slot for slot in grid.slots if slot[2] not in taken]
    spans = sorted((span[:5], span[5:]) for span in taken)
    clear, next_taken = [], 0
    for slot in grid.slots:
        time_text, end_text, _ = slot
        while next_taken < len(spans) and spans[next_taken][1] <= time_text:
            next_taken += 1
        if next_taken == len(spans) or end_text <= spans[next_taken][0]:
            clear.append(slot)
    return clear


def free_slots(conn, doctors, first_day, last_day, *, tz, earliest, center_id=None, overlaps_checked=True,
               starting_at=None):
    """Every offerable slot of these doctors from first_day to last_day, sorted ("Availability");
    only those that start at `starting_at` ('HH:MM') when it is given.

    `doctors` are rows with id, name and speciality_id. A slot lies on the doctor's grid
    inside working hours (at `center_id` when given), is not covered by a closure, overlaps
    no live appointment of that doctor (unless overlaps_checked is False) and starts no
    earlier than `earliest`, an aware datetime in UTC.
    """
    first_day = max(first_day, earliest.astimezone(tz).date())  # nothing earlier can be offered
    if not doctors or last_day < first_day:
        return []
    by_id = {doctor["id"]: doctor for doctor in doctors}
    first, last = first_day.isoformat(), last_day.isoformat()
    grids = schedule_grids(conn, list(by_id), center_id)
    closures = closures_between(conn, list(by_id), first, last)
    busy = busy_spans(conn, list(by_id), first, last) if overlaps_checked else {}
    slots, day = [], first_day
    while day <= last_day:
        iso, date_text = day.isoformat(), format_date(day)  # once a day, not once a slot
        day_closures = [c for c in closures if c["date_from"] <= iso <= c["date_to"]]
        # Each slot's instant is worked out only where it can matter: on the days the
        # notice reaches and on DST days; on a later plain day every slot is offerable.
        instants = tz if day <= earliest.astimezone(tz).date() or not wall_clock_is_plain(day, tz) else None
        for hours, grid in grids.get(day.weekday(), ()):
            if hours["retired_from"] is not None and iso >= hours["retired_from"]:
                continue
            doctor = by_id[hours["doctor_id"]]
            shut = [c for c in day_closures
                    if c["doctor_id"] in (None, doctor["id"]) and c["center_id"] in (None, hours["center_id"])]
            if any(c["start_time"] is None for c in shut):
                continue  # closed all day
            for time_text, end_text, _ in slots_clear_of(grid, busy.get((doctor["id"], iso))):
                if (starting_at is not None and time_text != starting_at) or (shut and closed_at(shut, time_text,
                                                                                                   end_text)):
                    continue
                if instants is not None:
                    starts = local_start(day, time_text, instants)
                    if starts is None or starts < earliest:
                        continue
                slots.append(Slot(day, date_text, time_text, end_text, hours["slot_minutes"], doctor["id"],
                                  doctor["name"], doctor["speciality_id"], hours["center_id"]))
        day += dt.timedelta(days=1)
    slots.sort(key=lambda slot: (slot.date, slot.time, slot.doctor_id))
    return slots


def slots_json(slots):
    """Free slots as the caller sees them ("Availability"), as a JSON array's text: each
    {date, time, duration, doctorId, doctorName, specialityId, centerId}."""
    shared = {}  # what a doctor's slots at one center have in common, encoded once
    parts = []
    for slot in slots:
        key = (slot.doctor_id, slot.center_id)
        if key not in shared:
            shared[key] = json.dumps({"doctorId": slot.doctor_id, "doctorName": slot.doctor_name,
                                      "specialityId": slot.speciality_id, "centerId": slot.center_id},
                                     separators=(",", ":"))[1:]
        parts.append(f'{{"date":"{slot.date_text}","time":"{slot.time}","duration":{slot.duration},{shared[key]}')
    return "[" + ",".join(parts) + "]"


def schedule_grids(conn, doctor_ids, center_id=None):
    """{weekday: [(schedule row, its SlotGrid)]} of these doctors (at this center, when given);
    each row carries the doctor's retired_from."""
    sql = ("SELECT s.doctor_id, s.center_id, s.weekday, s.start_time, s.end_time, s.slot_minutes, d.retired_from"
           f" FROM schedules s JOIN doctors d ON d.id = s.doctor_id WHERE s.doctor_id IN ({','.join('?' * len(doctor_ids))})")
    params = list(doctor_ids)
    if center_id is not None:
        sql += " AND s.center_id = ?"
        params.append(center_id)
    grids = {}
    for row in conn.execute(sql, params):
        grid = slot_grid(minutes_of(row["start_time"]), minutes_of(row["end_time"]), row["slot_minutes"])
        grids.setdefault(row["weekday"], []).append((row, grid))
    return grids


def closures_between(conn, doctor_ids, first, last):
    """The closures that touch these ISO days and concern these doctors or everyone."""
    return conn.execute(
        "SELECT doctor_id, center_id, date_from, date_to, start_time, end_time, reason FROM closures"
        f" WHERE date_to >= ? AND date_from <= ? AND (doctor_id IS NULL OR doctor_id IN ({','.join('?' * len(doctor_ids))}))",
        [first, last, *doctor_ids]).fetchall()


def busy_spans(conn, doctor_ids, first, last):
    """{(doctor, ISO day): {'HH:MMHH:MM' start+end of each live appointment}}: one row a doctor
    and day, the spans joined by SQLite, rather than a row an appointment."""
    rows = conn.execute(
        "SELECT doctor_id, date, group_concat(time || end_time) FROM appointments"
        f" WHERE doctor_id IN ({','.join('?' * len(doctor_ids))}) AND date BETWEEN ? AND ?"
        " AND status != 'cancelled' GROUP BY doctor_id, date", [*doctor_ids, first, last])
    return {(doctor_id, iso): set(spans.split(",")) for doctor_id, iso, spans in rows}


def closed_at(closures, time_text, end_text):
    """True when one of these closures (whole days, or hours) covers any of the slot."""
    return any(c["start_time"] is None or (c["start_time"] < end_text and time_text < c["end_time"]) for c in closures)


SLOT_REFUSALS = {  # reason: what the message says ("Slot refusal reasons")
    "taken": "another appointment holds that time",
    "off_grid": "that time is not on the doctor's slot grid",
    "outside_hours": "the doctor does not work at that time",
    "closed": "the doctor or the center is closed then",
    "too_soon": "that time is past or inside the minimum notice",
    "beyond_horizon": "that day is beyond the booking horizon",
    "wrong_center": "the doctor works at another center at that time",
    "doctor_retired": "the doctor no longer sees patients then",
}


def slot_not_available(reason, detail=None):
    """The one refusal of a slot: 409 SLOT_NOT_AVAILABLE with why ("Slot refusal reasons")."""
    return ClinicError(409, "SLOT_NOT_AVAILABLE",
                       f"that slot is not free: {detail or SLOT_REFUSALS[reason]}; offer another one", reason=reason)
