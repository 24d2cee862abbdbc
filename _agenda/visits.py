"""Visit types and what a visit holds ("Visit types", "Rooms and machines"): a type's length, pause and needs,
which types a doctor offers at each center (the first their default), the rooms and machines a visit takes,
and the free starts of a type: where on a doctor's grid the whole length and pause fit free, with a free room
and machine of each category it needs. No HTTP here."""

import datetime as dt
from typing import NamedTuple

from .values import ClinicError, format_date, hhmm, minutes_of
from .slots import day_states, overlapping, read_schedule, Slot


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
    return VisitType(row["id"], row["name"], row["speciality_id"], row["minutes"], row["pause"],
                     tuple(need for need in row["needs"].split(";") if need))


def visit_type(conn, type_id):
    """The VisitType of this id, or None."""
    row = conn.execute("SELECT * FROM visit_types WHERE id = ?", (type_id,)).fetchone()
    return None if row is None else type_of(row)


def types_offered(conn, doctor_ids):
    """{(doctor, center): [VisitType, the default first]} of the doctors that declared types."""
    marks = ",".join("?" * len(doctor_ids))
    offered = {}
    for row in conn.execute(f"SELECT o.doctor_id, o.center_id, t.* FROM doctor_types o JOIN visit_types t ON"
                            f" t.id = o.type_id WHERE o.doctor_id IN ({marks}) ORDER BY o.doctor_id, o.center_id,"
                            f" o.position", list(doctor_ids)):
        offered.setdefault((row["doctor_id"], row["center_id"]), []).append(type_of(row))
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
    {weekday: [(doctor, room, start, end)]} of rooms doctors' hours take, {(resource, ISO day): {spans held}}."""
    at: dict
    placed: dict
    held: dict


def read_resources(conn, first, last, but=None):
    """The Resources of every center from first to last (ISO days), the holds of appointment `but` (one
    being moved) left out."""
    at, placed, held = {}, {}, {}
    for row in conn.execute("SELECT id, center_id, category, is_room FROM resources ORDER BY id"):
        at.setdefault(row["center_id"], []).append((row["id"], row["category"], row["is_room"]))
    for row in conn.execute("SELECT doctor_id, room_id, weekday, start_time, end_time FROM schedules"
                            " WHERE room_id IS NOT NULL"):
        placed.setdefault(row["weekday"], []).append((row["doctor_id"], row["room_id"], row["start_time"],
                                                      row["end_time"]))
    for row in conn.execute("SELECT resource_id, date, group_concat(time || until) FROM holds WHERE live = 1"
                            " AND date BETWEEN ? AND ? AND appointment_id IS NOT ? GROUP BY resource_id, date",
                            (first, last, but)):
        held[(row[0], row[1])] = set(row[2].split(","))
    return Resources(at, placed, held)


def resources_for(resources, kind, doctor_id, center_id, room_id, day, start, until, squeezed=False):
    """[resource id] a visit of `kind` takes from `start` to `until` (its pause included) on `day`: for each
    category it needs, the doctor's own room when it is of that category, else the first free one of the
    category at the center (no live hold over that time, and no other doctor's room then); None when a
    category has none free. A sobrecita with no room free shares the one the doctor is in; never a machine."""
    taken, iso = [], day.isoformat()
    for category in kind.needs:
        own = [r for r, cat, room in resources.at.get(center_id, ()) if r == room_id and cat == category and room]
        if own:
            continue
        free = next((r for r, cat, _ in resources.at.get(center_id, ()) if cat == category and r not in taken
                     and not overlapping(resources.held.get((r, iso), set()), start, until)
                     and not placed_then(resources, r, doctor_id, day, start, until)), None)
        if free is None and squeezed and any(cat == category and room for _, cat, room in resources.at.get(
                center_id, ())):
            continue
        if free is None:
            return None
        taken.append(free)
    return taken


def placed_then(resources, resource_id, doctor_id, day, start, until):
    """True when another doctor's hours place them in this room at any of that time."""
    return any(room == resource_id and doctor != doctor_id and begin < until and start < end
               for doctor, room, begin, end in resources.placed.get(day.weekday(), ()))


# Free starts of a visit type

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
    resources = read_resources(conn, first_day.isoformat(), last_day.isoformat())
    slots, day = [], first_day
    while day <= last_day:
        for row, grid in schedule.grids.get(day.weekday(), ()):
            doctor, kind = by_id[row["doctor_id"]], visit_of(by_id[row["doctor_id"]], row)
            if kind is not None:
                slots += starts_of_row(window, schedule, resources, doctor, row, grid, day, kind, typed)
        day += dt.timedelta(days=1)
    slots.sort(key=lambda slot: (slot.date, slot.time, slot.doctor_id))
    return slots


def starts_of_row(window, schedule, resources, doctor, row, grid, day, kind, typed):
    """The free starts of one schedule row's grid on `day` for a visit of `kind`."""
    iso, step = day.isoformat(), row["slot_minutes"]
    blocked = day_states(window, row, grid, day, schedule.closures, schedule.busy.get((doctor["id"], iso)))
    if len(blocked) == len(grid.slots):
        return []
    found, closes, date_text = [], minutes_of(row["end_time"]), format_date(day)
    starts = [slot[0] for slot in grid.slots]
    for index, start in enumerate(starts):
        begin = minutes_of(start)
        busy_end = begin + kind.busy()
        if busy_end > closes or any(later in blocked for later in starts[index:index + -(-kind.busy() // step)]):
            continue
        until = hhmm(busy_end)
        if kind.needs and resources_for(resources, kind, doctor["id"], row["center_id"], row["room_id"], day,
                                        start, until) is None:
            continue
        found.append(Slot(day, date_text, start, hhmm(begin + kind.minutes), kind.minutes, doctor["id"],
                          doctor["name"], kind.id if typed else doctor["speciality_id"], row["center_id"]))
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
