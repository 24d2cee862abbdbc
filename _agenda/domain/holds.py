"""What a coming visit holds after any change ("What a visit holds"): which live visits not yet started hold
other than `what_it_needs` says under the catalog in force, and their holds re-derived by it, in the caller's
transaction. A catalog change and an import ask it; a booking asks `what_it_needs` through its pools."""

import datetime as dt
import json
from typing import NamedTuple

from ..values.fields import format_date
from .visits import first_free, held_then, needs_of, pools_for, read_resources, shares_room, VisitType, what_it_needs


class Coming(NamedTuple):
    """A live visit not yet started, as its holds are judged: where and when (its busy end: its pause
    included), its type's needs, whether it is squeezed in, the room its doctor's hours place them in then,
    what it holds now ([resource id], each for exactly its span; None when a hold is off its span), and for a
    sobrecita whether it shares that room (`shares_room`)."""
    id: int
    doctor_id: str
    center_id: str | None
    date: str
    time: str
    until: str
    needs: tuple
    squeezed: bool
    room_id: str | None
    held: list | None
    shares: bool = False


COMING = (
    "SELECT a.id, a.doctor_id, a.center_id, a.date, a.time, coalesce(a.busy_until, a.end_time) AS until,"
    " coalesce(t.needs, '') AS needs, a.squeezed, (SELECT s.room_id FROM schedules s WHERE s.doctor_id ="
    " a.doctor_id AND s.center_id IS a.center_id AND s.weekday = (CAST(strftime('%w', a.date) AS INTEGER) + 6) % 7"
    " AND s.start_time <= a.time AND a.time < s.end_time) AS room_id, (SELECT json_group_array(h.resource_id ||"
    " CASE WHEN h.live = 1 AND h.date = a.date AND h.time = a.time AND h.until = coalesce(a.busy_until,"
    " a.end_time) THEN '' ELSE char(31) END) FROM holds h WHERE h.appointment_id = a.id) AS held"
    " FROM appointments a LEFT JOIN visit_types t ON t.id = a.type_id WHERE a.status != 'cancelled'"
    " AND (a.date > ?1 OR (a.date = ?1 AND CASE WHEN ?8 THEN coalesce(a.busy_until, a.end_time) ELSE a.time END > ?2)) AND (?3 IS NULL OR a.id IN (SELECT value FROM json_each(?3)))"
    " AND (?4 IS NULL OR a.doctor_id IN (SELECT value FROM json_each(?4)) OR a.type_id IN (SELECT value FROM"
    " json_each(?5)) OR a.id IN (SELECT h.appointment_id FROM holds h WHERE h.live = 1 AND h.resource_id IN (SELECT"
    " value FROM json_each(?6)))) AND (?7 IS NULL OR a.date = ?7) ORDER BY a.date, a.time, a.id")


def coming(conn, now, ids=None, touching=None, day=None, started=False):
    """[Coming] of every live visit that starts after `now` (the clinic's local time; with `started`, that has not
    ended by then: under way too), or of these ids only, or of those of these (doctors, types, resources held)
    only, or of that ISO `day` only."""
    found = []
    touched = (None, None, None) if touching is None else [json.dumps(sorted(some)) for some in touching]
    for row in conn.execute(COMING, (now.date().isoformat(), f"{now:%H:%M}", None if ids is None
                                     else json.dumps(sorted(ids)), *touched, day, started)):
        held = json.loads(row["held"])
        found.append(Coming(row["id"], row["doctor_id"], row["center_id"], row["date"], row["time"], row["until"],
                            needs_of(row["needs"]), bool(row["squeezed"]), row["room_id"],
                            None if any(item.endswith("\x1f") for item in held) else held,
                            bool(row["squeezed"]) and shares_room(conn, row["doctor_id"], row["room_id"],
                                                                  dt.date.fromisoformat(row["date"]), row["time"],
                                                                  row["until"], row["id"])))
    return found


def sharing_under_way(conn, now):
    """{id: (room, until)} of the sobrecitas under way at `now` that share their doctor's room (`shares_room`):
    a started visit keeps what it holds, so a change must leave them sharing it ("Sobrecita")."""
    day, minute = now.date(), f"{now:%H:%M}"
    rows = conn.execute(
        "SELECT a.id, a.doctor_id, a.time, coalesce(a.busy_until, a.end_time), s.room_id FROM appointments a JOIN"
        " schedules s ON s.doctor_id = a.doctor_id AND s.center_id IS a.center_id AND s.weekday = ? AND s.start_time"
        " <= a.time AND a.time < s.end_time WHERE a.squeezed = 1 AND a.status != 'cancelled' AND a.date = ? AND"
        " a.time <= ? AND ? < coalesce(a.busy_until, a.end_time) AND s.room_id IS NOT NULL",
        (day.weekday(), day.isoformat(), minute, minute)).fetchall()
    return {row[0]: (row[4], row[3]) for row in rows if shares_room(conn, row[1], row[4], day, row[2], row[3], row[0])}


def resources_of(conn):
    """{id: (center, category, is_room)} of every room and machine, and {weekday: [(doctor, room, start, end)]}
    of the rooms doctors' hours place them in."""
    at = {row[0]: (row[1], row[2], row[3]) for row in conn.execute(
        "SELECT id, center_id, category, is_room FROM resources")}
    placed = {}
    for row in conn.execute("SELECT doctor_id, room_id, weekday, start_time, end_time FROM schedules"
                            " WHERE room_id IS NOT NULL"):
        placed.setdefault(row[2], []).append((row[0], row[1], row[3], row[4]))
    return at, placed


def holds_what_it_needs(visit, resources):
    """True when the visit holds exactly what `what_it_needs` says: the doctor's own room, and one resource of
    the center of each other category, none another doctor's room then, each for the visit's span."""
    at, placed = resources
    if visit.held is None or len(set(visit.held)) != len(visit.held):
        return False
    here = [(r, cat, room) for r, (center, cat, room) in at.items() if center == visit.center_id]
    own, categories = what_it_needs(here, visit.needs, visit.room_id, visit.squeezed, visit.shares)
    weekday, rest = dt.date.fromisoformat(visit.date).weekday(), list(visit.held)
    if any(placed_in in rest and doctor != visit.doctor_id and begin < visit.until and visit.time < end
           for doctor, placed_in, begin, end in placed.get(weekday, ())):
        return False  # another doctor's room then, its own room too (hours shortened under a visit)
    if own is not None:
        if own not in rest:
            return False
        rest.remove(own)
    for resource in rest:
        center, category, _ = at.get(resource, (None, None, None))
        if resource not in at or center != visit.center_id or category not in categories:
            return False
        categories.remove(category)
    return not categories


def unheld(conn, now, ids=None, touching=None, day=None, started=False):
    """[Coming] of the live visits not yet started (with `started`, not yet ended) (of these ids, these (doctors,
    types, resources held), or that ISO day only, when given) that hold other than what they need: what a change
    must re-derive, and (`started`) the conflicts the rooms page and `agenda status` list."""
    resources = resources_of(conn)
    return [visit for visit in coming(conn, now, ids, touching, day, started)
            if not holds_what_it_needs(visit, resources)]


HOLDS_READ = (  # what a coming visit's holds depend on in the catalog
    "SELECT doctor_id, center_id, weekday, start_time, end_time, room_id FROM schedules",
    "SELECT id, needs FROM visit_types",
    "SELECT id, center_id, is_room, category FROM resources")


def what_holds_read(conn):
    """The catalog's rows a coming visit's holds depend on: its doctor's hours and rooms, types' needs, rooms
    and machines."""
    return [{tuple(row) for row in conn.execute(sql)} for sql in HOLDS_READ]


def touched_by(before, after):
    """(doctors, types, resources) whose coming visits a change of `what_holds_read` may touch: the doctors
    whose hours changed or whose room did, the types whose needs did, and the rooms and machines that changed
    or whose doctor did (the visits holding them); None when nothing did."""
    hours, kinds, resources = (old ^ new for old, new in zip(before, after))
    rooms = {row[5] for row in hours if row[5]} | {row[0] for row in resources}
    touched = ({row[0] for row in hours} | {row[0] for row in before[0] | after[0] if row[5] in rooms},
               {row[0] for row in kinds}, rooms)  # a doctor in a room that changed: a sobrecita holds none
    return touched if any(touched) else None


def placements(conn, visits, prefer=None):
    """[(visit, [resource] or None: none free)] of these visits (Coming) in time order (then by doctor), each
    given what it needs among what is free once those before it took theirs: the resources `prefer` names for
    it ({id: [resource]}) when they are exactly what it needs and free, else the first free of each pool.
    Nothing is written."""
    every, found, day, resources = resources_of(conn), [], None, None
    for visit in sorted(visits, key=lambda visit: (visit.date, visit.time, visit.doctor_id, visit.id)):
        if visit.date != day:  # one read a day; what each visit takes is added to it as it goes
            day, resources = visit.date, read_resources(conn, visit.date, visit.date)
        wanted = list((prefer or {}).get(visit.id) or ())
        if wanted and holds_what_it_needs(visit._replace(held=wanted), every) and not any(
                held_then(resources.held.get((resource, day), ()), visit.time, visit.until) for resource in wanted):
            taken = wanted
        else:
            taken = first_free(pools_for(resources, VisitType(None, None, "", 5, 0, visit.needs), visit.doctor_id,
                                         visit.center_id, visit.room_id, dt.date.fromisoformat(day), visit.squeezed,
                                         visit.shares),
                               visit.time, visit.until)
        for resource in taken or ():
            resources.held[(resource, day)] = tuple(sorted(resources.held.get((resource, day), ())
                                                           + (visit.time + visit.until,)))
        found.append((visit, taken))
    return found


def rederive(conn, now, visits, prefer=None):
    """Inside the caller's transaction: each of these visits (Coming) holds what it needs now, as `placements`
    chooses; [Coming] of those that found none free, each left holding what it held where still free."""
    conn.executemany("DELETE FROM holds WHERE appointment_id = ?", [(visit.id,) for visit in visits])
    placed = placements(conn, visits, prefer)
    conn.executemany("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES (?, ?, ?, ?, ?)",
                     [(visit.id, resource, visit.date, visit.time, visit.until)
                      for visit, taken in placed for resource in taken or ()])
    unplaced = [visit for visit, taken in placed if taken is None]
    for visit in unplaced:  # what it held, where nothing else holds it since and no other doctor's hours place them
        conn.executemany(
            "INSERT INTO holds (appointment_id, resource_id, date, time, until) SELECT ?1, ?2, ?3, ?4, ?5 WHERE NOT"
            " EXISTS (SELECT 1 FROM holds WHERE resource_id = ?2 AND date = ?3 AND live = 1 AND time < ?5 AND ?4 < until)"
            " AND NOT EXISTS (SELECT 1 FROM schedules WHERE room_id = ?2 AND doctor_id != ?6 AND weekday ="
            " (CAST(strftime('%w', ?3) AS INTEGER) + 6) % 7 AND start_time < ?5 AND ?4 < end_time)",
            [(visit.id, resource, visit.date, visit.time, visit.until, visit.doctor_id) for resource in visit.held or ()])
    return unplaced


def placement_notes(placed, lines, given, dry_run=False):
    """What an import's rooms and machines say by line, [(line, why)]: a coming visit that found none free
    (imported without it, named by its id), and one given other than the file's `given` ({id: [resource]})."""
    notes = []
    for visit, taken in placed:
        when = f"{format_date(visit.date)} {visit.time}"
        if taken is None:
            notes.append((lines[visit.id], f"{when}: no room or machine it needs is free then; " + (
                "it would be imported without it" if dry_run else f"appointment {visit.id} imported without it")))
        elif given.get(visit.id) and sorted(taken) != sorted(given[visit.id]):
            notes.append((lines[visit.id], f"{when}: holds {', '.join(sorted(taken)) or 'none'}, not the file's"
                                           f" {', '.join(sorted(given[visit.id]))}, as its visit needs"))
    return notes
