"""Slots: each doctor's grid, the closures and bookings that cover it, and the free slots a channel may offer."""

import datetime as dt
import json
import functools
from typing import NamedTuple

from ..values.refusals import ClinicError
from ..values.fields import format_date, hhmm, minutes_of, months_after


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


@functools.lru_cache(maxsize=4096)
def wall_clock_is_plain(day, tz):
    """True when the clinic's clock neither skips nor repeats any time on this day (asked of every doctor's
    day: worked out once a day per process)."""
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


def overlapping(spans, time_text, end_text):
    """The spans among `spans` ('HH:MMHH:MM', start and end) that a visit from `time_text` to `end_text`
    overlaps, sorted: what makes a slot `taken`, the rule schema.sql's triggers hold ("Slot states")."""
    return sorted(span for span in spans if span[:5] < end_text and time_text < span[5:])


def slots_clear_of(grid, taken):
    """The slots of the grid that overlap none of `taken`, a set of 'HH:MMHH:MM' start+end texts.

    The usual day is quick: every appointment within the grid's hours fills exactly one
    of its slots (the others belong to the doctor's other shift), so the free slots are
    the rest. After a schedule change an appointment may straddle slots; then one sweep
    beside the grid finds every clash (`swept`).
    """
    if not taken:
        return grid.slots
    if on_grid(grid, taken):
        return [slot for slot in grid.slots if slot[2] not in taken]
    clashing = swept(grid, taken)
    return [slot for slot in grid.slots if slot[0] not in clashing]


def on_grid(grid, taken):
    """True when each of `taken` either is one of the grid's slots or lies outside its hours."""
    first, last = grid.slots[0][0], grid.slots[-1][1]
    return not any(span[:5] < last and first < span[5:] for span in taken - grid.spans)


def swept(grid, taken):
    """The start times of the grid's slots that one of `taken` overlaps, in one sweep beside the grid: a
    doctor's live appointments never overlap (schema.sql's triggers), so sorted by start they are sorted
    by end too, and the first one not yet ended is the only one a slot may overlap."""
    spans = sorted(taken)
    ends, clashing, next_taken = [span[5:] for span in spans], set(), 0
    for time_text, end_text, _ in grid.slots:
        while next_taken < len(spans) and ends[next_taken] <= time_text:
            next_taken += 1
        if next_taken < len(spans) and spans[next_taken] < end_text:  # it starts before the slot ends
            clashing.add(time_text)
    return clashing


class Window(NamedTuple):
    """When a channel may book ("Slot states"): slots that start at `earliest` (now plus its notice,
    in UTC) or later, so on `first_day` (its date) or later, up to `last_day` (today plus its horizon,
    which `horizon` words, as "90 days" or "18 months"); with `walk_in` (reception's, notice 0), a cell of
    the grid already begun too, until its end."""
    tz: object
    earliest: dt.datetime
    first_day: dt.date
    last_day: dt.date
    notice_minutes: int
    horizon: str
    walk_in: bool = False


def any_time(tz):
    """The Window of no notice and no horizon: what a doctor's grid offers whatever the clock says
    ("The clinic at a glance")."""
    earliest = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
    return Window(tz, earliest, dt.date.min, dt.date.max, 0, "none")


def booking_window(now, tz, notice_minutes, horizon_days=None, *, horizon_months=None, walk_in=False):
    """The Window of a channel whose rules are this notice and horizon (days, or calendar months), at `now`;
    `walk_in`: a cell begun stays bookable until its end when the notice is 0 (reception's, "Each channel's rules")."""
    earliest = now.astimezone(dt.timezone.utc) + dt.timedelta(minutes=notice_minutes)
    today = now.astimezone(tz).date()
    if horizon_months is not None:
        last_day, horizon = months_after(today, horizon_months), f"{horizon_months} months"
    else:
        last_day, horizon = today + dt.timedelta(days=horizon_days), f"{horizon_days} days"
    return Window(tz, earliest, earliest.astimezone(tz).date(), last_day, notice_minutes, horizon,
                  walk_in and notice_minutes == 0)


class Schedule(NamedTuple):
    """What decides some doctors' slots over some days, read in four queries: {weekday: [(schedule row,
    its SlotGrid)]}, the closures, {(doctor, ISO day): live appointments' spans}, {doctor: retired_from}."""
    grids: dict
    closures: list
    busy: dict
    retired: dict


def read_schedule(conn, doctor_ids, first_day, last_day, center_id=None, with_bookings=True):
    """The Schedule of these doctors (at this center, when given) from first_day to last_day; without
    bookings when `taken` is left to the schema's triggers (a booking's own transaction)."""
    first, last = first_day.isoformat(), last_day.isoformat()
    marks = ",".join("?" * len(doctor_ids))
    retired = dict(conn.execute(f"SELECT id, retired_from FROM doctors WHERE id IN ({marks})", list(doctor_ids)))
    busy = busy_spans(conn, doctor_ids, first, last) if with_bookings else {}
    return Schedule(schedule_grids(conn, doctor_ids, center_id), closures_between(conn, doctor_ids, first, last),
                    busy, retired)


FREE, TAKEN = ("free", None), ("taken", None)


def day_state(window, retired_from, day):
    """The state all of a doctor's slots share on `day`, when one does: retired, beyond the horizon,
    or a day already past; else None."""
    if retired_from is not None and day.isoformat() >= retired_from:
        return "doctor_retired", f"the doctor no longer sees patients from {format_date(retired_from)}"
    if day > window.last_day:
        return "beyond_horizon", f"{format_date(day)} is beyond the booking horizon ({window.horizon})"
    if day < window.first_day:
        return too_soon(window, day, None)
    return None


def too_soon(window, day, time_text):
    return "too_soon", (f"{format_date(day)}{' ' + time_text if time_text else ''} is past or inside the minimum "
                        f"notice ({window.notice_minutes} minutes)")


def day_states(window, row, grid, day, closures, taken):
    """{time: (state, detail)} of the slots of one schedule row's grid on `day` that are not free; a slot
    not in it is free. The rules of `slot_state`, in its order, over a whole grid at once."""
    whole = day_state(window, row["retired_from"], day)
    if whole is not None:
        return dict.fromkeys((slot[0] for slot in grid.slots), whole)
    shut = closures_on(closures, day, row["doctor_id"], row["center_id"])
    # a slot's instant matters only on the days the notice reaches and on days the clocks change
    timed = day <= window.first_day or not wall_clock_is_plain(day, window.tz)
    if not timed and shut and shut[0]["start_time"] is None:  # the first closure takes the whole day
        return dict.fromkeys((slot[0] for slot in grid.slots), ("closed", shut[0]["reason"] or None))
    busy = taken_times(grid, taken) if taken else ()
    if not (timed or shut):
        return dict.fromkeys(busy, TAKEN)
    states = {}
    for time_text, end_text, _ in grid.slots:
        state = time_state(window, day, time_text, end_text) if timed else None
        if state is None and shut:
            closure = next((c for c in shut if closed_at([c], time_text, end_text)), None)
            state = ("closed", closure["reason"] or None) if closure else None
        if state is None and time_text in busy:
            state = TAKEN
        if state is not None:
            states[time_text] = state
    return states


def taken_times(grid, taken):
    """The start times of the grid's slots that overlap one of `taken` ('HH:MMHH:MM' spans); quick
    when every appointment within the grid's hours fills one of its slots, as on the usual day."""
    if on_grid(grid, taken):
        return {span[:5] for span in taken & grid.spans}
    return swept(grid, taken)


def time_state(window, day, time_text, end_text):
    """too_soon when the slot starts before the window (a walk-in window's slot begun: when it has ended);
    off_grid when the clocks skip its start."""
    starts = local_start(day, time_text, window.tz)
    if starts is None:
        return "off_grid", f"the clocks skip {time_text} on {format_date(day)}"
    return too_soon(window, day, time_text) if starts < window.earliest and not still_open(
        window, day, end_text) else None


def still_open(window, day, end_text):
    """True when a walk-in window still takes a cell of the grid begun before now that ends at `end_text`:
    reception books a walk-in into the cell under way until its end ("Each channel's rules")."""
    if not window.walk_in:
        return False
    ends = local_start(day, end_text, window.tz) if end_text < "24:00" else None
    return ends is not None and ends > window.earliest


def slot_state(schedule, window, doctor_id, day, time_text, center_id=None):
    """The one decision of a doctor's slot at a date and time for a channel ("Slot states"): FREE, or the
    first (reason, detail) of retired, beyond the horizon, too soon, another center, outside the hours,
    off the grid, closed and taken. `schedule` holds this doctor's day at every center."""
    whole = day_state(window, schedule.retired.get(doctor_id), day)
    if whole is not None:
        return whole
    starts = local_start(day, time_text, window.tz)
    if starts is not None and starts < window.earliest and not begun_cell(schedule, window, doctor_id, day,
                                                                          time_text, center_id):
        return too_soon(window, day, time_text)
    here = rows_at(schedule, doctor_id, day, time_text, center_id)
    if not isinstance(here, list):
        return here
    row, grid = here[0]
    if starts is None or not any(slot[0] == time_text for slot in grid.slots):
        return "off_grid", (f"{time_text} is not on the doctor's grid of {row['slot_minutes']} minutes from "
                            f"{row['start_time']}")
    taken = schedule.busy.get((doctor_id, day.isoformat()))
    return day_states(window, row, grid, day, schedule.closures, taken).get(time_text, FREE)


def begun_cell(schedule, window, doctor_id, day, time_text, center_id=None):
    """True when `time_text` starts a cell of the doctor's grid there that a walk-in window still takes."""
    here = rows_at(schedule, doctor_id, day, time_text, center_id) if window.walk_in else None
    return isinstance(here, list) and any(cell[0] == time_text and still_open(window, day, cell[1])
                                          for cell in here[0][1].slots)


def rows_at(schedule, doctor_id, day, time_text, center_id=None):
    """The doctor's schedule rows (with their grids) whose hours hold `time_text` on `day` at the center;
    else the state why none does: another center, or outside the hours."""
    minute = minutes_of(time_text)
    rows = [(row, grid) for row, grid in schedule.grids.get(day.weekday(), ())
            if row["doctor_id"] == doctor_id and minutes_of(row["start_time"]) <= minute < minutes_of(row["end_time"])]
    here = [(row, grid) for row, grid in rows if center_id is None or row["center_id"] == center_id]
    if rows and not here:
        return "wrong_center", f"at {time_text} the doctor works at center {rows[0][0]['center_id']}"
    if not here:
        return "outside_hours", f"the doctor does not work at {time_text} on that day"
    return here


def visit_span(schedule, window, doctor_id, day, time_text, center_id=None, length=None, squeezed=False):
    """Where a visit starting at `time_text` goes, `length(schedule row)` giving its (minutes, pause) there
    (None: one of the doctor's slots, no pause): (the schedule row, its end, its busy end: the pause included)
    when `slot_state` lets it start there and every slot of the grid its length and pause run into is free
    too; a sobrecita (`squeezed`) waives the grid and the other appointments ("Sobrecita"). Else
    SLOT_NOT_AVAILABLE with the state that refuses it."""
    state = slot_state(schedule, window, doctor_id, day, time_text, center_id)
    waived = squeezed and state[0] in ("off_grid", "taken") and local_start(day, time_text, window.tz) is not None
    if state != FREE and not waived:
        raise slot_not_available(*state)
    row, grid = rows_at(schedule, doctor_id, day, time_text, center_id)[0]
    minutes, pause = length(row) if length else (row["slot_minutes"], 0)
    end, busy = minutes_of(time_text) + minutes, minutes_of(time_text) + minutes + pause
    if squeezed:
        end_text, busy_text = hhmm(min(end, 24 * 60 - 1)), hhmm(min(busy, 24 * 60 - 1))
        if closed_at(closures_on(schedule.closures, day, doctor_id, row["center_id"]), time_text, busy_text):
            raise slot_not_available("closed")
        return row, end_text, busy_text
    busy_text = hhmm(busy)
    if busy_text > row["end_time"]:
        raise slot_not_available("off_grid", f"a visit of {minutes} minutes{f' and {pause} after' if pause else ''} "
                                             f"from {time_text} runs past the doctor's hours ({row['end_time']})")
    runs_into = [slot[0] for slot in grid.slots if time_text < slot[0] < busy_text]
    if runs_into:
        states = day_states(window, row, grid, day, schedule.closures, schedule.busy.get((doctor_id, day.isoformat())))
        state = next((states[start] for start in runs_into if start in states), FREE)
        if state != FREE:
            raise slot_not_available(*state)
    state = past_the_grid(schedule, row, grid, day, busy_text)
    if state != FREE:
        raise slot_not_available(*state)
    return row, hhmm(end), busy_text


def past_the_grid(schedule, row, grid, day, busy_text):
    """The state of the minutes a visit runs on past the last slot of its row's grid, up to `busy_text`: hours
    of 09:00-09:40 by 30 minutes hold one slot, and a visit of 40 minutes runs 10 past it, which no slot's
    state covers. Closed or taken when a closure or another visit takes any of them; else FREE."""
    last = grid.slots[-1][1]
    if busy_text <= last:
        return FREE
    shut = [c for c in closures_on(schedule.closures, day, row["doctor_id"], row["center_id"])
            if closed_at([c], last, busy_text)]
    if shut:
        return "closed", shut[0]["reason"] or None
    busy = schedule.busy.get((row["doctor_id"], day.isoformat()), ())
    return TAKEN if overlapping(busy, last, busy_text) else FREE


def free_slots(conn, doctors, first_day, last_day, *, window, center_id=None, starting_at=None,
               with_bookings=True):
    """Every slot of these doctors that `day_states` leaves free from first_day to last_day, sorted
    ("Availability"); only those that start at `starting_at` ('HH:MM') when it is given.
    `doctors` are rows with id, name and speciality_id."""
    first_day, last_day = max(first_day, window.first_day), min(last_day, window.last_day)
    if not doctors or last_day < first_day:
        return []
    by_id = {doctor["id"]: doctor for doctor in doctors}
    schedule = read_schedule(conn, list(by_id), first_day, last_day, center_id, with_bookings)
    slots, day = [], first_day
    while day <= last_day:
        iso, date_text = day.isoformat(), format_date(day)  # once a day, not once a slot
        for row, grid in schedule.grids.get(day.weekday(), ()):
            doctor = by_id[row["doctor_id"]]
            blocked = day_states(window, row, grid, day, schedule.closures, schedule.busy.get((doctor["id"], iso)))
            if len(blocked) == len(grid.slots):
                continue
            offered = grid.slots if not blocked and starting_at is None else [
                slot for slot in grid.slots if slot[0] not in blocked and starting_at in (None, slot[0])]
            minutes, center = row["slot_minutes"], row["center_id"]
            slots += [Slot(day, date_text, time_text, end_text, minutes, doctor["id"], doctor["name"],
                           doctor["speciality_id"], center) for time_text, end_text, _ in offered]
        day += dt.timedelta(days=1)
    slots.sort(key=lambda slot: (slot.date, slot.time, slot.doctor_id))
    return slots


def schedule_grids(conn, doctor_ids, center_id=None):
    """{weekday: [(schedule row, its SlotGrid)]} of these doctors (at this center, when given);
    each row carries the doctor's retired_from."""
    sql = ("SELECT s.doctor_id, s.center_id, s.weekday, s.start_time, s.end_time, s.slot_minutes, s.room_id,"
           " d.retired_from"
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
    """{(doctor, ISO day): {'HH:MMHH:MM' start and busy end (its pause included) of each live appointment}}:
    one row a doctor and day, the spans joined by SQLite, rather than a row an appointment."""
    rows = conn.execute(
        "SELECT doctor_id, date, group_concat(time || coalesce(busy_until, end_time)) FROM appointments"
        f" WHERE doctor_id IN ({','.join('?' * len(doctor_ids))}) AND date BETWEEN ? AND ?"
        " AND status != 'cancelled' AND squeezed = 0 GROUP BY doctor_id, date", [*doctor_ids, first, last])
    return {(doctor_id, iso): set(spans.split(",")) for doctor_id, iso, spans in rows}


# Which appointments a closure covers ("To call"), as SQL over a closure `c` and an appointment `a`: the
# lists' "to call" and a closure's preview use it; `closures_on` and `closed_at` below are the same rule
# over the grid, and tests/test_booking.py holds the two forms equal.
CLOSURE_COVERS = """(c.date_from <= a.date AND a.date <= c.date_to
    AND (c.doctor_id IS NULL OR c.doctor_id = a.doctor_id) AND (c.center_id IS NULL OR c.center_id = a.center_id)
    AND (c.start_time IS NULL OR (c.start_time < a.end_time AND a.time < c.end_time)))"""


# A live visit its doctor's hours no longer hold ("To call"): no row of their hours at its center on its weekday
# holds its start and its end (a sobrecita's start only), as after a reload that shortened or moved them; read
# only of the visits a reload listed (`left_outside_hours`).
HOURS_LEAVE_OUT = """NOT EXISTS (SELECT 1 FROM schedules oh WHERE oh.doctor_id = a.doctor_id AND oh.center_id IS
    a.center_id AND oh.weekday = (CAST(strftime('%w', a.date) AS INTEGER) + 6) % 7 AND oh.start_time <= a.time
    AND a.time < oh.end_time AND (a.squeezed = 1 OR a.end_time <= oh.end_time))"""
OUTSIDE_HOURS = f"""(EXISTS (SELECT 1 FROM outside_hours o WHERE o.appointment_id = a.id) AND {HOURS_LEAVE_OUT})"""


def left_outside_hours(conn, today, doctors):
    """Inside a catalog reload's transaction: list the live visits of these doctors from `today` (ISO) on that
    their hours now leave out, for a call ("To call"); the outside_hours table's one writer."""
    conn.execute(f"INSERT OR IGNORE INTO outside_hours (appointment_id) SELECT a.id FROM appointments a WHERE"
                 f" a.status != 'cancelled' AND a.date >= ? AND a.doctor_id IN (SELECT value FROM json_each(?)) AND"
                 f" {HOURS_LEAVE_OUT}", (today, json.dumps(sorted(doctors))))


def closures_on(closures, day, doctor_id, center_id):
    """The closures of `day` that concern this doctor at this center."""
    iso = day.isoformat()
    return [c for c in closures if c["date_from"] <= iso <= c["date_to"] and c["doctor_id"] in (None, doctor_id)
            and c["center_id"] in (None, center_id)]


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
    "resource_taken": "a room or machine the visit needs is taken then",
    "type_not_offered": "the doctor does not offer the appointment's visit type where they work then",
    "patient_elsewhere": "the patient has another appointment then",
}


def slot_not_available(reason, detail=None):
    """The one refusal of a slot: 409 SLOT_NOT_AVAILABLE with why ("Slot refusal reasons"). A closure's
    own words (a doctor off sick) are the clinic's, never the caller's: a closed slot is only 'closed'."""
    detail = None if reason == "closed" else detail
    return ClinicError("SLOT_NOT_AVAILABLE",
                       f"that slot is not free: {detail or SLOT_REFUSALS[reason]}; offer another one", reason=reason)
