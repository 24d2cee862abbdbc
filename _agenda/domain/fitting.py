"""What fits where at the desk ("Staff desk", "Visit types"): the cells of the doctors' grids where a type
they offer there fits whole, by the caller's own decision (`visits.free_starts` under the desk's window),
and why a visit does not fit at a start, asked of the pieces the door asks (`slots.visit_span`, then the
rooms and machines). No HTTP here."""

import datetime as dt
from typing import NamedTuple

from ..values.refusals import ClinicError
from ..values.fields import hhmm, minutes_of
from .slots import FREE, overlapping, read_schedule, rows_at, slot_state, visit_span
from .visits import (first_free, free_starts, held_then, others_held, pools_for, read_resources, types_offered,
                     visit_type, VisitType)


class Fits(NamedTuple):
    """The visit a free cell is offered for: its type (None: a doctor without types, one cell of the grid),
    and whether it is the doctor's default there (else the page names it)."""
    kind: VisitType
    default: bool


def fitting_cells(clinic, first, last, center_id=None, doctor_id=None):
    """{(doctor, day, time): Fits} of every start from `first` to `last` where the desk may book a visit: the
    doctor's default type there when it fits, else the first of the doctor's types there that fits (in their
    order); a doctor without types there, each free cell of the grid. Each type asked once per position."""
    conn = clinic.conn()
    doctors = conn.execute("SELECT id, name, speciality_id FROM doctors WHERE ? IS NULL OR id = ?",
                           (doctor_id, doctor_id)).fetchall()
    if not doctors:
        return {}
    offered, window, found = types_offered(conn, [d["id"] for d in doctors]), clinic.window("desk"), {}
    by_id = {d["id"]: d for d in doctors}
    for position in range(max((len(kinds) for kinds in offered.values()), default=1)):
        def visit_of(doctor, row, position=position):
            kinds = offered.get((doctor["id"], row["center_id"]))
            if kinds:
                return kinds[position] if position < len(kinds) else None
            return VisitType(None, None, doctor["speciality_id"], row["slot_minutes"]) if position == 0 else None
        for slot in free_starts(conn, doctors, first, last, window=window, visit_of=visit_of, center_id=center_id):
            kinds = offered.get((slot.doctor_id, slot.center_id))
            kind = kinds[position] if kinds else VisitType(None, None, by_id[slot.doctor_id]["speciality_id"],
                                                           slot.duration)
            found.setdefault((slot.doctor_id, slot.date, slot.time), Fits(kind, position == 0))
    return found


class Why(NamedTuple):
    """Why a visit does not fit at a start, in the clinic's terms: a slot's state ("Slot refusal reasons"), or
    `past_hours` (it runs past the doctor's hours), `runs_into` (into the visit at `at`), `runs_into_closed`,
    or `resource_taken` with what is `held` then: [(category, [names of its rooms or machines])]."""
    reason: str
    at: str | None = None
    ends: str | None = None
    held: tuple = ()


def why_not(clinic, doctor_id, day, time_text, center_id, kind, but=None):
    """None when a visit of `kind` starts at `time_text` at the desk (the doctor, the hours, closures and the
    doctor's other visits, then a room and machine of each category it needs), the appointment row `but` (one
    given another type) left out of what is busy and held; else its Why."""
    conn = clinic.conn()
    schedule = read_schedule(conn, [doctor_id], day, day)  # with the bookings: `taken` is read here
    if but is not None:
        schedule.busy.get((doctor_id, day.isoformat()), set()).discard(but["time"] + (but["busy_until"]
                                                                                      or but["end_time"]))
    window = clinic.window("desk")
    try:
        row, _, busy_until = visit_span(schedule, window, doctor_id, day, time_text, center_id,
                                        lambda _: (kind.minutes, kind.pause))
    except ClinicError as refusal:
        if slot_state(schedule, window, doctor_id, day, time_text, center_id) != FREE:
            return Why(refusal.rule)
        return ran_into(schedule, doctor_id, day, time_text, kind, refusal.rule, center_id)
    own, iso = row["room_id"], day.isoformat()
    others = others_held(conn, [own], iso, iso) if own else {}
    if not kind.needs and not others:
        return None
    resources = read_resources(conn, iso, iso, but=but and but["id"], categories=kind.needs)
    names = dict(conn.execute("SELECT id, name FROM resources").fetchall())
    held = [(category, [names.get(own, own)]) for (category,) in conn.execute(  # the doctor's own, held by another
        "SELECT category FROM resources WHERE id = ?", (own,)) if held_then(others.get((own, iso), ()), time_text,
                                                                             busy_until)]
    for category in kind.needs:
        pools = pools_for(resources, kind._replace(needs=(category,)), doctor_id, row["center_id"], row["room_id"],
                          day)
        if first_free(pools, time_text, busy_until) is None:
            held.append((category, [names.get(resource, resource) for pool in pools for resource, *_ in pool]))
    return Why("resource_taken", held=tuple(held)) if held else None


def retypes(clinic, appointment_id):
    """{type id: (VisitType, None where it fits whole at the visit's start in place of its own, else its Why)} of
    each type the appointment's doctor offers where it is but its own (`why_not`, the visit itself left out); {} for
    a sobrecita or a cancelled visit: what the desk offers to change its type to, and why not."""
    row = clinic.conn().execute("SELECT * FROM appointments WHERE id = ?", (int(appointment_id),)).fetchone()
    if row is None or row["squeezed"] or row["status"] == "cancelled":
        return {}
    day, offered = dt.date.fromisoformat(row["date"]), types_offered(clinic.conn(), [row["doctor_id"]])
    return {kind.id: (kind, why_not(clinic, row["doctor_id"], day, row["time"], row["center_id"], kind, row))
            for kind in offered.get((row["doctor_id"], row["center_id"]), []) if kind.id != row["type_id"]}


def ran_into(schedule, doctor_id, day, time_text, kind, reason, center_id):
    """The Why of a visit whose start is free but whose length and pause are not: past the hours, into the
    doctor's next visit, or into a closure."""
    iso, here = day.isoformat(), schedule.grids.get(day.weekday(), ())
    row = next(row for row, _ in here if row["doctor_id"] == doctor_id and center_id in (None, row["center_id"])
               and row["start_time"] <= time_text < row["end_time"])
    busy = minutes_of(time_text) + kind.minutes + kind.pause
    if reason == "off_grid":
        return Why("past_hours", ends=row["end_time"])
    later = overlapping(schedule.busy.get((doctor_id, iso), ()), time_text, hhmm(busy))
    if reason == "taken" and later:
        return Why("runs_into", at=later[0][:5])
    return Why("runs_into_closed" if reason == "closed" else reason)


def lengths(clinic, appointment_id):
    """[minutes] a booked visit may last from its start: each step of its doctor's grid there until the hours end
    (its pause after), and its own; only its own off the hours ("Drag to move, and to lengthen"). Whether one fits
    is the door's to say."""
    appointment = clinic.conn().execute("SELECT * FROM appointments WHERE id = ?", (int(appointment_id),)).fetchone()
    day, own = dt.date.fromisoformat(appointment["date"]), minutes_of(appointment["end_time"]) - minutes_of(
        appointment["time"])
    here = rows_at(read_schedule(clinic.conn(), [appointment["doctor_id"]], day, day, with_bookings=False),
                   appointment["doctor_id"], day, appointment["time"], appointment["center_id"])
    if not isinstance(here, list):
        return [own]
    row = here[0][0]
    room = minutes_of(row["end_time"]) - minutes_of(appointment["time"]) - (appointment["pause"] or 0)
    return sorted({own, *range(row["slot_minutes"], room + 1, row["slot_minutes"])})


def why_not_length(clinic, appointment_id, minutes):
    """(the VisitType of the booked visit at `minutes`, its Why at its own start, the visit itself left out, or None
    where it fits): why the desk refuses a length, in its words ("Drag to move, and to lengthen")."""
    appointment = clinic.conn().execute("SELECT * FROM appointments WHERE id = ?", (int(appointment_id),)).fetchone()
    own = visit_type(clinic.conn(), appointment["type_id"]) if appointment["type_id"] else None
    kind = VisitType(appointment["type_id"], own and own.name, appointment["speciality_id"], minutes,
                     appointment["pause"] or 0, own.needs if own else ())
    offered = types_offered(clinic.conn(), [appointment["doctor_id"]])
    if kind.id is not None and kind.id not in {other.id for other in offered.get(
            (appointment["doctor_id"], appointment["center_id"]), [])}:  # as the door refuses a move of it
        return kind, Why("type_not_offered")
    return kind, why_not(clinic, appointment["doctor_id"], dt.date.fromisoformat(appointment["date"]),
                         appointment["time"], appointment["center_id"], kind, appointment)

