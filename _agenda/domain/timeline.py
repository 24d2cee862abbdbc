"""The day and the week drawn as time ("The day as time"): columns (a doctor's day) of blocks on one
minute axis, each named (free, past, closed, taken, off hours, retired, too far ahead), and the
appointments over them. Plain data for the desk's templates; no HTTP here."""

import datetime as dt
from typing import NamedTuple

from ..values.fields import clinic_moment, format_date, hhmm, minutes_of
from .fitting import fitting_cells
from .counter import open_marks
from .visits import types_offered
from .appointments import APPOINTMENT_TABLES, live_appointments, TO_CALL
from .availability import day_slots

# Slot states a column draws as one block however many slots they cover, and their words' keys.
MERGED = {"too_soon": "past", "closed": "closed", "beyond_horizon": "beyond_horizon", "doctor_retired": "retired",
          "wrong_center": "elsewhere", "off_grid": "past", "outside_hours": "off"}


class Block(NamedTuple):
    start: int  # minutes since midnight
    end: int
    kind: str  # free, taken, unfit (free, but no visit the doctor offers fits), past, closed, beyond_horizon, ...
    detail: str | None
    time: str
    center_id: str | None
    quiet: bool = False  # drawn without its words: a closure's part under cards, its words after them
    type_id: str | None = None  # a free cell's visit type (None: a doctor without types)
    type_name: str | None = None  # its name, when it is not the doctor's default there (the cell says it)


PALETTE = 8  # the colours of visit types (desk.css: .vt0 to .vt7; .vt-none, a visit without a type)


def colours(conn):
    """{type id: its colour's class}: a stable place in the sorted list of the catalog's type ids, round the
    palette ("The day as time")."""
    return {row[0]: f"vt{n % PALETTE}" for n, row in enumerate(conn.execute("SELECT id FROM visit_types ORDER BY id"))}


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
            "slot_minutes": set(), "blocks": [], "cards": [], "starts": []}


def fill_day(clinic, columns, day, center_id, doctor_id, key_of, reader):
    """Add one day's slots and appointments to `columns` (keyed by `key_of(doctor_id, day)`): a cell free only
    where a visit the doctor offers there fits whole (`fitting_cells`), else `unfit`."""
    fits = fitting_cells(clinic, day, day, center_id, doctor_id)
    for doctor, time_text, end_text, (state, detail) in day_slots(clinic, day, center_id):
        if doctor_id not in (None, doctor["doctor_id"]):
            continue
        column = columns.setdefault(key_of(doctor["doctor_id"], day), new_column(
            key_of(doctor["doctor_id"], day), doctor["doctor_id"], doctor["name"], doctor["speciality_id"], day))
        column["slot_minutes"].add(doctor["slot_minutes"])
        column["starts"].append((time_text, doctor["center_id"]))  # where a drop may start a visit ("Drag to move")
        kind = state if state in ("free", "taken") else MERGED.get(state, "past")
        fit = fits.get((doctor["doctor_id"], day, time_text)) if kind == "free" else None
        kind = "unfit" if kind == "free" and fit is None else kind
        column["blocks"].append(Block(minutes_of(time_text), minutes_of(end_text), kind,
                                      detail if kind == "closed" else None, time_text, doctor["center_id"],
                                      type_id=fit and fit.kind.id, type_name=None if not fit or fit.default
                                      else fit.kind.name))
    painted = colours(clinic.conn())
    for appointment in live_appointments(clinic, reader, "day", days=[day.isoformat()], doctor_id=doctor_id,
                                         center_id=center_id):  # only those drawn are read
        key = key_of(appointment["doctor_id"], day)
        column = columns.setdefault(key, new_column(key, appointment["doctor_id"], appointment["doctor_name"],
                                                    appointment["speciality_id"], day))
        column["cards"].append({**appointment, "from": minutes_of(appointment["start"]),
                                "to": minutes_of(appointment["end"]), "busy_to": minutes_of(appointment["busy_until"]),
                                "arrived_local": clinic_moment(appointment.get("arrived_at"), clinic.tz, "%H:%M"),
                                "marks": open_marks(clinic, appointment["date"], appointment["start"]),
                                "colour": painted.get(appointment["type_id"])})  # none: the neutral card


MOST_LANES = 4  # the most cards drawn side by side at one time in a column; desk.css has their rules


def in_lanes(cards):
    """Cards that overlap in time drawn side by side ("Sobrecita"): each card's `lane` and its group's
    `lanes` (1: alone), the visit first and the sobrecita squeezed on it beside it."""
    group, ends, group_end = [], [], -1
    for card in sorted(cards, key=lambda c: (c["from"], c["squeezed"], c["id"])):
        if card["from"] >= group_end:
            for each in group:
                each["lanes"] = min(len(ends), MOST_LANES)
            group, ends = [], []
        lane = next((n for n, end in enumerate(ends) if end <= card["from"]), len(ends))
        ends[lane:lane + 1] = [card["to"]]
        card["lane"], group_end = lane % MOST_LANES, max(group_end, card["to"])
        group.append(card)
    for each in group:
        each["lanes"] = min(len(ends), MOST_LANES)


def clear_of_cards(block, cards):
    """A closure as two blocks when cards cover its start: the part under them quiet, its words from the first
    minute no card (nor its pause) covers, so the reason is never hidden under a card ("The day as time")."""
    at = block.start
    for card in sorted(cards, key=lambda c: c["from"]):
        if card["from"] <= at < card["busy_to"]:
            at = card["busy_to"]
    if at == block.start or at >= block.end:
        return [block]
    return [block._replace(end=at, quiet=True), block._replace(start=at)]


TICK_ROWS, NOW_ROWS = 4, 8  # the minutes a tick's words and the "now" label take on the axis (desk.css)


def now_label_at(now):
    """The minute the axis's "now" label starts at: beside the line, inside its quarter hour, below that
    quarter's tick words, so it never covers a tick's words ("The day as time")."""
    quarter = now - now % 15
    return min(max(now - NOW_ROWS // 2, quarter + TICK_ROWS), quarter + 15 - NOW_ROWS)


def legend(clinic, cards, doctor_ids, center_id=None):
    """[(colour class, type name)] of the visit types these doctors offer (at `center_id`, when given) or these
    cards are, by name; the neutral colour (None) last, when a card has no type beside typed ones."""
    offered = types_offered(clinic.conn(), sorted(doctor_ids)) if doctor_ids else {}
    names = {kind.id: kind.name for (_, center), kinds in offered.items() for kind in kinds
             if center_id in (None, center)}
    names.update({card["type_id"]: card["type_name"] for card in cards if card["type_id"]})
    painted = colours(clinic.conn())
    shown = sorted(((painted[key], name) for key, name in names.items() if key in painted), key=lambda item: item[1])
    return shown + ([("vt-none", None)] if shown and any(not card["type_id"] for card in cards) else [])


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
        column["blocks"] = [part for block in column["blocks"] if block.kind != "taken" or not any(
            card["from"] <= block.start and block.end <= card["busy_to"] for card in column["cards"])  # its card says it
            for part in (clear_of_cards(block, column["cards"]) if block.kind == "closed" else [block])]
        column["slot_minutes"], column["starts"] = sorted(column["slot_minutes"]), runs(sorted(column["starts"]))
        in_lanes(column["cards"])
    return Timeline(columns, first, last, [(minute, hhmm(minute)) for minute in range(first, last, 15)])


def runs(starts):
    """Sorted (time, center) starts of a column as [[center, first, last, step]]: each run of one center's starts a
    step apart (0: one start), what a drop may start a visit at, written small ("Drag to move, and to lengthen")."""
    found = []
    for time_text, center in starts:
        last = found[-1] if found else None
        gap = minutes_of(time_text) - minutes_of(last[2]) if last else 0
        if last and last[0] == center and gap > 0 and last[3] in (0, gap):
            last[2], last[3] = time_text, gap
        elif not last or (last[0], last[2]) != (center, time_text):
            found.append([center, time_text, time_text, 0])
    return found


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
    """One doctor's week, at every center: a column a day, Monday first, with the `centers` (ids) of that day;
    days off drawn as off hours, a Saturday or Sunday only when the doctor works or has an appointment that day."""
    columns = {}
    doctor = clinic.require_doctor(doctor_id)
    for each in week_days(day):
        columns[each] = new_column(each, doctor_id, doctor["name"], doctor["speciality_id"], each)
        fill_day(clinic, columns, each, None, doctor_id, lambda _, on: on, reader)
        columns[each]["centers"] = sorted({block.center_id for block in columns[each]["blocks"] if block.center_id}
                                          | {card["center_id"] for card in columns[each]["cards"]})
    return laid_out([column for each, column in columns.items()
                     if each.weekday() < 5 or column["blocks"] or column["cards"]])


WEEK_CARDS = 40  # the most appointments a day of a center's week draws, by time; the rest counted, linked to the day


def center_week(clinic, center_id, day, reader=None):
    """A center's week, a day a column ("The day as time"): each doctor's appointments, free slots and those to
    call, counted, and the day's first WEEK_CARDS appointments by time as `cards`, who they are read through the
    one door for `reader` (only those drawn), and how many `more` the day holds."""
    days = {each: {"day": each, "date": format_date(each), "doctors": {}, "cards": [], "booked": 0}
            for each in week_days(day)}
    first, last = min(days).isoformat(), max(days).isoformat()
    fits = fitting_cells(clinic, min(days), max(days), center_id)
    for each, drawn in days.items():
        for doctor, time_text, _, _ in day_slots(clinic, each, center_id):
            tally(drawn, doctor["doctor_id"], doctor["name"])["free"] += (doctor["doctor_id"], each, time_text) in fits
    for row in clinic.conn().execute(
            f"SELECT a.date, a.doctor_id, d.name, count(*), sum({TO_CALL}) {APPOINTMENT_TABLES} WHERE a.status !="
            " 'cancelled' AND a.center_id = ? AND a.date BETWEEN ? AND ? GROUP BY a.date, a.doctor_id",
            (center_id, first, last)):
        drawn = days[dt.date.fromisoformat(row[0])]
        counts = tally(drawn, row[1], row[2])
        counts["booked"], counts["to_call"] = row[3], row[4]
        drawn["booked"] += row[3]
    painted = colours(clinic.conn())
    for appointment in live_appointments(clinic, reader, "day", center_id=center_id,
                                         first_of_each_day=(center_id, first, last, WEEK_CARDS)):
        days[dt.date.fromisoformat(appointment["date"])]["cards"].append(
            {**appointment, "arrived_local": clinic_moment(appointment.get("arrived_at"), clinic.tz, "%H:%M"),
             "colour": painted.get(appointment["type_id"])})
    for drawn in days.values():
        drawn["doctors"] = sorted(drawn["doctors"].values(), key=lambda counts: counts["name"])
        drawn["more"] = max(0, drawn["booked"] - len(drawn["cards"]))
    return list(days.values())


def tally(drawn, doctor_id, name):
    """A doctor's counts on a day of a center's week, made when first met."""
    return drawn["doctors"].setdefault(doctor_id, {"id": doctor_id, "name": name, "free": 0, "booked": 0,
                                                   "to_call": 0})
