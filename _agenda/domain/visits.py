"""Visit types and what a visit holds ("Visit types", "Rooms and machines"): a type's length, pause and needs,
which types a doctor offers at each center (the first their default), the rooms and machines a visit takes,
and the free starts of a type: where on a doctor's grid the whole length and pause fit free, with a free room
and machine of each category it needs. No HTTP here."""

import bisect
import datetime as dt
import functools
import json
from typing import NamedTuple

from ..values.refusals import ClinicError
from ..values.fields import format_date, hhmm, minutes_of
from .slots import day_states, FREE, past_the_grid, read_schedule, Slot


class VisitType(NamedTuple):
    """What a visit is: its type (None: a doctor without types, one slot of their grid), area, length in
    minutes, pause after it (the doctor's time, not the patient's) and the categories of room or machine it
    needs."""
    id: str | None
    name: str | None
    speciality_id: str
    minutes: int
    pause: int = 0
    needs: tuple = ()

    def busy(self):
        """The doctor's minutes for it: its length and its pause."""
        return self.minutes + self.pause


def type_of(row):
    return VisitType(row["id"], row["name"], row["speciality_id"], row["minutes"], row["pause"], needs_of(row["needs"]))


def needs_of(text):
    """The categories a type's `needs` text lists."""
    return tuple(need for need in text.split(";") if need)


def visit_type(conn, type_id):
    """The VisitType of this id, or None."""
    row = conn.execute("SELECT * FROM visit_types WHERE id = ?", (type_id,)).fetchone()
    return None if row is None else type_of(row)


def types_offered(conn, doctor_ids):
    """{(doctor, center): [VisitType, the default first]} of the doctors that declared types; one VisitType a
    type, however many doctors offer it."""
    marks = ",".join("?" * len(doctor_ids))
    offered, made = {}, {}
    for doctor_id, center_id, type_id, *fields in conn.execute(
            "SELECT o.doctor_id, o.center_id, t.id, t.name, t.speciality_id, t.minutes, t.pause, t.needs FROM"
            f" doctor_types o JOIN visit_types t ON t.id = o.type_id WHERE o.doctor_id IN ({marks}) ORDER BY"
            " o.doctor_id, o.center_id, o.position", list(doctor_ids)):
        kind = made.get(type_id) or made.setdefault(type_id, VisitType(type_id, *fields[:4], needs_of(fields[4])))
        offered.setdefault((doctor_id, center_id), []).append(kind)
    return offered


def the_visit(offered, doctor, center_id, slot_minutes, asked=None):
    """The VisitType a booking with `doctor` at `center_id` is: the type asked (a type's id: one the doctor
    offers there; an area's: theirs), else the doctor's first there; a doctor without types there, one slot of
    their grid. SPECIALITY_NOT_FOUND-like refusals as INVALID_REQUEST naming specialityId."""
    types = offered.get((doctor["id"], center_id), [])
    if asked is None or asked == doctor["speciality_id"]:
        return types[0] if types else VisitType(None, None, doctor["speciality_id"], slot_minutes)
    chosen = next((kind for kind in types if kind.id == asked), None)
    if chosen is None:
        raise ClinicError("INVALID_REQUEST", "specialityId is not a speciality or visit type of that doctor there",
                          "speciality", "specialityId")
    return chosen


# Rooms and machines

class Resources(NamedTuple):
    """What the rooms and machines of some centers are doing on some days: {center: [(id, category, is_room)]},
    {weekday: [(doctor, room, start, end)]} of rooms doctors' hours take, {(resource, ISO day): (spans held)},
    each 'HH:MMHH:MM', sorted."""
    at: dict
    placed: dict
    held: dict


OF_CATEGORIES = "SELECT id FROM resources WHERE ?1 IS NULL OR category IN (SELECT value FROM json_each(?1))"
OR_ROOMS = f"{OF_CATEGORIES} OR id IN (SELECT value FROM json_each(?2))"


def read_resources(conn, first, last, but=None, categories=None, rooms=()):
    """The Resources of every center from first to last (ISO days), the holds of appointment `but` (one
    being moved) left out: of every room and machine, or of those of these categories and these `rooms` only
    (their holds only if of those categories)."""
    at, placed, held = {}, {}, {}
    chosen, also = None if categories is None else json.dumps(sorted(categories)), json.dumps(sorted(rooms))
    for row in conn.execute(f"SELECT id, center_id, category, is_room FROM resources WHERE id IN ({OR_ROOMS})"
                            " ORDER BY id", (chosen, also)):
        at.setdefault(row["center_id"], []).append((row["id"], row["category"], row["is_room"]))
    if any(room for resources in at.values() for _, _, room in resources):  # hours place a doctor only in a room
        for row in conn.execute("SELECT doctor_id, room_id, weekday, start_time, end_time FROM schedules"
                                f" WHERE room_id IN ({OR_ROOMS})", (chosen, also)):
            placed.setdefault(row["weekday"], []).append((row["doctor_id"], row["room_id"], row["start_time"],
                                                          row["end_time"]))
    for row in conn.execute(  # a hold's appointment is read only when `but` is given: it is not in the index
            "SELECT resource_id, date, group_concat(time || until) FROM holds WHERE live = 1 AND date BETWEEN ?2"
            f" AND ?3 AND (?4 IS NULL OR appointment_id != ?4) AND resource_id IN ({OF_CATEGORIES})"
            " GROUP BY resource_id, date", (chosen, first, last, but)):
        held[(row[0], row[1])] = tuple(sorted(row[2].split(",")))
    return Resources(at, placed, held)


def others_held(conn, rooms, first, last):
    """{(room, ISO day): (spans held, sorted)} from first to last of these doctors' rooms by visits not their
    doctor's own (schema.sql's `own`, by its own index): what of a doctor's room availability must judge, as
    the doctor's own visits already take the doctor's time ("Rooms and machines")."""
    return {(row[0], row[1]): tuple(sorted(row[2].split(","))) for row in conn.execute(
        "SELECT resource_id, date, group_concat(time || until) FROM holds WHERE live = 1 AND own = 0 AND date BETWEEN"
        " ?2 AND ?3 AND resource_id IN (SELECT value FROM json_each(?1)) GROUP BY resource_id, date",
        (json.dumps(sorted(rooms)), first, last))}


def resources_for(resources, kind, doctor_id, center_id, room_id, day, start, until, squeezed=False):
    """[resource id] a visit of `kind` takes from `start` to `until` (its pause included) on `day`, as
    `what_it_needs` says: the doctor's own room, then the first free one of each other category at the center
    (no live hold over that time, and no other doctor's room then); None when one has none free."""
    return first_free(pools_for(resources, kind, doctor_id, center_id, room_id, day, squeezed), start, until)


def what_it_needs(here, needs, room_id, squeezed=False, shares=True):
    """What a visit holds ("What a visit holds"): (the doctor's own room, held for the visit's length and pause,
    None for a sobrecita, or when the doctor is in none; [each category of its type's `needs` the doctor's own
    room is not, of which it holds one free resource of the center; for a sobrecita that does not share the
    doctor's room (`shares_room`), that room's category first]). `here`: the center's [(id, category, is_room)]."""
    own = next(((r, cat) for r, cat, room in here if r == room_id and room), None)
    others = [need for need in needs if own is None or need != own[1]]
    if own is None or not squeezed:
        return (None if own is None else own[0]), others
    return None, ([] if shares else [own[1]]) + others


SHARES = (
    "SELECT EXISTS (SELECT 1 FROM schedules WHERE doctor_id = ?1 AND room_id = ?2 AND weekday = ?3 AND start_time <= ?5"
    " AND ?6 <= end_time) AND NOT EXISTS (SELECT 1 FROM schedules WHERE room_id = ?2 AND doctor_id != ?1 AND weekday"
    " = ?3 AND start_time < ?6 AND ?5 < end_time) AND NOT EXISTS (SELECT 1 FROM holds h JOIN appointments b ON b.id ="
    " h.appointment_id WHERE h.resource_id = ?2 AND h.date = ?4 AND h.live = 1 AND h.time < ?6 AND ?5 < h.until AND"
    " b.doctor_id != ?1 AND b.id != ?7)")


def shares_room(conn, doctor_id, room_id, day, start, until, but=None):
    """True when a sobrecita of this doctor from `start` to `until` on `day` shares the doctor's room `room_id`
    ("Sobrecita"): one row of their hours places them in it that whole span, no other doctor's then, and no
    other doctor's visit holds it then (appointment `but` left out)."""
    return room_id is not None and bool(conn.execute(SHARES, (doctor_id, room_id, day.weekday(), day.isoformat(),
                                                              start, until, but or 0)).fetchone()[0])


def pools_for(resources, kind, doctor_id, center_id, room_id, day, squeezed=False, shares=True):
    """For what the visit needs (`what_it_needs`), the doctor's own room first: [(resource, is it a room, its
    spans held on `day`, [(start, end)] of other doctors' hours placing them in it that day)] to choose from."""
    here, iso, weekday = resources.at.get(center_id, ()), day.isoformat(), day.weekday()
    own, categories = what_it_needs(here, kind.needs, room_id, squeezed, shares)

    def choice(r, room):
        return (r, room, resources.held.get((r, iso), ()), [(begin, end) for doctor, placed_in, begin, end
                                                             in resources.placed.get(weekday, ())
                                                             if placed_in == r and doctor != doctor_id])
    return ([[choice(own, 1)]] if own else []) + [[choice(r, room) for r, cat, room in here if cat == category]
                                                   for category in categories]


def first_free(pools, start, until):
    """[the first resource of each pool (pools_for) free from start to until], None when a pool has none free."""
    taken = []
    for pool in pools:
        for resource, _, spans, placed in pool:
            if resource not in taken and not held_then(spans, start, until) and not any(
                    begin < until and start < end for begin, end in placed):
                taken.append(resource)
                break
        else:
            return None
    return taken


def none_free(pools, start, until):
    """[[resource id] of each pool (pools_for) with none free from start to until]: what a refusal names."""
    return [[resource for resource, _, _, _ in pool] for pool in pools if first_free([pool], start, until) is None]


def held_then(spans, start, until):
    """True when one of these sorted spans held overlaps start to until. A resource's live holds never overlap
    (schema.sql's triggers): sorted by start they are sorted by end too, so the last one to start before
    `until` is the only one to look at."""
    before_until = bisect.bisect_left(spans, until)  # 'HH:MMHH:MM' < until exactly when it starts before until
    return before_until > 0 and spans[before_until - 1][5:] > start


# Free starts of a visit type

class Fit(NamedTuple):
    """Where a visit (its length, and its pause after) may start on a grid: the cells' start texts, the visit's
    end and busy end (its pause included) from each, how many cells it runs into, and how many first cells
    leave it time before the hours' end."""
    starts: tuple
    ends: tuple
    untils: tuple
    cells: int
    count: int


@functools.lru_cache(maxsize=512)
def fit_of(opens, closes, step, minutes, busy):
    """The Fit of a visit of `minutes` and `busy` on the grid of `step` from `opens` to `closes` (minutes since
    midnight); schedules share a handful of grids and types, so each is worked out once per process."""
    begins = range(opens, closes - step + 1, step)
    return Fit(tuple(hhmm(begin) for begin in begins), tuple(hhmm(begin + minutes) for begin in begins),
               tuple(hhmm(begin + busy) for begin in begins), -(-busy // step),
               sum(1 for begin in begins if begin + busy <= closes))


def free_starts(conn, doctors, first_day, last_day, *, window, visit_of, center_id=None, typed=False):
    """Every start on these doctors' grids from first_day to last_day where the visit `visit_of(doctor, schedule
    row)` (None: the doctor does not offer it there) fits: its whole length and pause free of the doctor's other
    visits, closures and hours' end, and a room and a machine of each category it needs free; sorted Slots whose
    duration is the visit's length and speciality its type's (when `typed`) or the doctor's ("Visit types")."""
    first_day, last_day = max(first_day, window.first_day), min(last_day, window.last_day)
    if not doctors or last_day < first_day:
        return []
    by_id = {doctor["id"]: doctor for doctor in doctors}
    schedule = read_schedule(conn, list(by_id), first_day, last_day, center_id)
    visits = {weekday: [visit_at_row(row, grid, by_id[row["doctor_id"]], kind, typed) for row, grid in rows
                        if (kind := visit_of(by_id[row["doctor_id"]], row)) is not None]
              for weekday, rows in schedule.grids.items()}  # once a schedule row, not once a day
    needs = {need for rows in visits.values() for visit in rows for need in visit[3].needs}
    rooms = {visit[0]["room_id"] for rows in visits.values() for visit in rows if visit[0]["room_id"]}
    others = others_held(conn, rooms, first_day.isoformat(), last_day.isoformat()) if rooms else {}
    resources = read_resources(conn, first_day.isoformat(), last_day.isoformat(), categories=needs,
                               rooms={room for room, _ in others}) if needs or others else None
    for key, spans in others.items():  # a room of a category read already has every hold of its own
        resources.held.setdefault(key, spans)
    slots, day = [], first_day
    while day <= last_day:
        iso, date_text = day.isoformat(), format_date(day)  # once a day, not once a row
        for visit in visits.get(day.weekday(), ()):
            slots += starts_of_row(window, schedule, resources, visit, day, iso, date_text)
        day += dt.timedelta(days=1)
    slots.sort(key=lambda slot: (slot.date, slot.time, slot.doctor_id))
    return slots


def visit_at_row(row, grid, doctor, kind, typed):
    """(row, grid, doctor, kind, its Fit on the row's grid, the area its Slots name)."""
    fit = fit_of(minutes_of(row["start_time"]), minutes_of(row["end_time"]), row["slot_minutes"], kind.minutes,
                 kind.busy())
    return row, grid, doctor, kind, fit, kind.id if typed else doctor["speciality_id"]


def starts_of_row(window, schedule, resources, visit, day, iso, date_text):
    """The free starts on `day` of one schedule row's grid for its visit (visit_at_row): each free cell that
    leaves the visit's length and pause time before the hours' end, whose next cells they run into are free,
    and where what the visit needs is free."""
    row, grid, doctor, kind, fit, area = visit
    blocked = day_states(window, row, grid, day, schedule.closures, schedule.busy.get((doctor["id"], iso)))
    starts = fit.starts
    if len(blocked) == len(starts):
        return []
    found, cells, pools, last = [], fit.cells, None, grid.slots[-1][1]
    held = {} if resources is None else resources.held
    for index in [index for index in range(fit.count) if starts[index] not in blocked]:
        if cells > 1 and any(later in blocked for later in starts[index + 1:index + cells]):
            continue
        if fit.untils[index] > last and past_the_grid(schedule, row, grid, day, fit.untils[index]) != FREE:
            continue  # it runs on past the grid's last cell (hours that end mid-slot)
        if kind.needs or (row["room_id"], iso) in held:
            if pools is None:  # once a row and day, and only for a row with a start free; the doctor's own room
                pools = pools_for(resources, kind, doctor["id"], row["center_id"], row["room_id"], day,  # only when
                                  squeezed=(row["room_id"], iso) not in held)  # held then (`others_held`)
            if first_free(pools, starts[index], fit.untils[index]) is None:
                continue
        found.append(Slot(day, date_text, starts[index], fit.ends[index], kind.minutes, doctor["id"], doctor["name"],
                          area, row["center_id"]))
    return found


def resources_day(conn, center_id, day):
    """The rooms and machines of a center (every one's when None) on `day`: [{id, name, category, is_room,
    placed: [(doctor's name, start, end)], held: {appointment id: (time, until)}}], rooms first."""
    found = []
    for row in conn.execute("SELECT * FROM resources WHERE center_id IS ? OR ? IS NULL ORDER BY is_room DESC, id",
                            (center_id, center_id)):
        placed = [tuple(place) for place in conn.execute(
            "SELECT d.name, s.start_time, s.end_time FROM schedules s JOIN doctors d ON d.id = s.doctor_id WHERE"
            " s.room_id = ? AND s.weekday = ? ORDER BY s.start_time", (row["id"], day.weekday()))]
        held = {hold[0]: (hold[1], hold[2]) for hold in conn.execute(
            "SELECT appointment_id, time, until FROM holds WHERE resource_id = ? AND date = ? AND live = 1"
            " ORDER BY time", (row["id"], day.isoformat()))}
        found.append({"id": row["id"], "name": row["name"], "category": row["category"], "is_room": row["is_room"],
                      "placed": placed, "held": held})
    return found
