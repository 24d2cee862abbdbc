"""The catalog file ("Catalog file"): centers, specialities, insurances, visit types, rooms and machines,
doctors' hours (with the types they offer and the room they are in) and closures, checked line by line and
applied in one transaction, all or nothing."""

import json
import re

from ..values.refusals import ClinicError
from ..values.fields import format_date, parse_date, parse_time
from ..storage.connections import transaction
from ..storage.events import record_event
from ..domain.holds import rederive, sharing_under_way, touched_by, unheld, what_holds_read
from ..domain.slots import left_outside_hours


CATALOG_COLUMNS = ("kind", "id", "name", "speciality", "center", "insurances", "days", "hours",
                   "slot_minutes", "date_from", "date_to", "pause", "needs", "category", "types", "room", "address",
                   "phone", "bring")
RESOURCE_KINDS = {"room": 1, "machine": 0}  # a resource row's kind: is it a room


WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6,  # and in Spanish:
            "lun": 0, "mar": 1, "mie": 2, "mié": 2, "jue": 3, "vie": 4, "sab": 5, "sáb": 5, "dom": 6,
            "lunes": 0, "martes": 1, "miercoles": 2, "miércoles": 2, "jueves": 3, "viernes": 4, "sabado": 5,
            "sábado": 5, "domingo": 6}


CATALOG_TABLES = {  # what a seed may change, in the order a snapshot reads it
    "centers": "SELECT id, name, address, phone FROM centers ORDER BY id",
    "specialities": "SELECT id, name FROM specialities ORDER BY id",
    "insurances": "SELECT id, name FROM insurances ORDER BY id",
    "doctors": "SELECT id, name, speciality_id FROM doctors ORDER BY id",
    "doctor_insurances": "SELECT doctor_id, center_id, insurance_id FROM doctor_insurances ORDER BY 1, 2, 3",
    "schedules": "SELECT doctor_id, center_id, weekday, start_time, end_time, slot_minutes, room_id FROM schedules"
                 " ORDER BY 1, 2, 3, 4",
    "visit_types": "SELECT id, name, speciality_id, minutes, pause, needs, bring FROM visit_types ORDER BY id",
    "doctor_types": "SELECT doctor_id, center_id, type_id, position FROM doctor_types ORDER BY 1, 2, 4",
    "resources": "SELECT id, name, center_id, is_room, category FROM resources ORDER BY id",
    "closures": "SELECT doctor_id, center_id, date_from, date_to, start_time, end_time, reason"
                " FROM closures ORDER BY 1, 2, 3, 4, 5",
}


CATALOG_NOUNS = {"centers": "center", "specialities": "speciality", "insurances": "insurance", "doctors": "doctor",
                 "doctor_insurances": "doctor insurance", "schedules": "schedule", "closures": "closure",
                 "visit_types": "visit type", "doctor_types": "offered type", "resources": "room and machine"}


class SeedError(Exception):
    """A catalog file that cannot be applied, or a file that cannot be read; `problems` are (line, message) pairs."""

    def __init__(self, problems):
        self.problems = sorted(problems)
        super().__init__("\n".join(f"line {line}: {message}" for line, message in self.problems))


class _NothingChanged(Exception):
    pass


def parse_days(text):
    days = set()
    for part in re.split(r"[;\s]+", text.strip().lower()):
        if not part:
            continue
        first, _, last = part.partition("-")
        if first not in WEEKDAYS or (last and last not in WEEKDAYS):
            raise ValueError(f"days: {part!r} is not a weekday: write mon tue wed thu fri sat sun or lun mar mié "
                             f"jue vie sáb dom (or the whole names), a ';' between days, ranges like mon-fri or lun-vie")
        start, stop = WEEKDAYS[first], WEEKDAYS[last or first]
        if stop < start:
            raise ValueError(f"days: {part!r} runs backwards")
        days.update(range(start, stop + 1))
    if not days:
        raise ValueError("days is required (like mon-fri or mon;wed;fri)")
    return sorted(days)


def parse_hours(text, required=True):
    ranges = []
    for part in re.split(r"[;\s]+", text.strip()):
        if not part:
            continue
        start, sep, end = part.partition("-")
        try:
            start, end = parse_time(start, "hours"), parse_time(end, "hours")
        except ClinicError:
            sep = ""
        if not sep:
            raise ValueError(f"hours: {part!r} is not a range like 09:00-14:00")
        if end <= start:
            raise ValueError(f"hours: {part!r} ends before it starts")
        ranges.append((start, end))
    if required and not ranges:
        raise ValueError("hours is required (like 09:00-14:00;16:00-19:00)")
    return ranges


def parse_pause(text):
    if not (text or "").strip():
        return 0
    if not text.strip().isdigit() or int(text) > 240:
        raise ValueError(f"pause: {text!r} must be a whole number of minutes from 0 to 240")
    return int(text)


def parse_slot_minutes(text, required=False):
    if not text and required:
        raise ValueError("slot_minutes is required: the visit's length in minutes, 5 to 480")
    if not text:
        return 15
    if not text.isdigit() or not 5 <= int(text) <= 480:
        raise ValueError(f"slot_minutes: {text!r} must be a whole number of minutes from 5 to 480")
    return int(text)


def _snapshot(conn):
    return {table: [tuple(row) for row in conn.execute(sql)] for table, sql in CATALOG_TABLES.items()}


def parse_catalog(rows):
    """Read catalog rows into what seed_catalogs applies: {"simple", "doctors", "closures", "types", "resources"};
    problems are (line, message)."""
    parsed = {"simple": {"center": {}, "speciality": {}, "insurance": {}}, "doctors": {}, "closures": [],
              "types": {}, "resources": {}, "places": {}}
    problems = []
    for line, row in rows:
        try:
            read_row(parsed, row.get("kind", "").lower(), line, row)
        except ClinicError as error:
            problems.append((line, error.message))
        except ValueError as error:
            problems.append((line, str(error)))
    for doctor_id, entries in parsed["doctors"].items():
        problems += doctor_disagreements(doctor_id, entries)
    return parsed, problems


def read_row(parsed, kind, line, row):
    """One catalog row into `parsed`; ValueError (or ClinicError) saying what is wrong with it."""
    if kind in parsed["simple"]:
        if not row.get("id") or not row.get("name"):
            raise ValueError(f"a {kind} row needs id and name")
        parsed["simple"][kind][row["id"]] = row["name"]
        if kind == "center":  # what a message to a patient says of it ("What a message says")
            parsed["places"][row["id"]] = (row.get("address") or None, row.get("phone") or None)
    elif kind == "doctor":
        entry = doctor_entry(line, row)
        parsed["doctors"].setdefault(row["id"], []).append(entry)
    elif kind == "closed":
        parsed["closures"] += closure_entries(line, row)
    elif kind == "type":
        if not row.get("id") or not row.get("name") or not row.get("speciality"):
            raise ValueError("a type row needs id, name, speciality (its area) and slot_minutes (its length)")
        parsed["types"][row["id"]] = {"line": line, "name": row["name"], "speciality": row["speciality"],
                                      "minutes": parse_slot_minutes(row.get("slot_minutes", ""), required=True),
                                      "pause": parse_pause(row.get("pause", "")), "needs": listed(row.get("needs")),
                                      "bring": row.get("bring") or None}
    elif kind in RESOURCE_KINDS:
        if not row.get("id") or not row.get("name") or not row.get("category"):
            raise ValueError(f"a {kind} row needs id, name and category (box, surgery, ultrasound...)")
        parsed["resources"][row["id"]] = {"line": line, "name": row["name"], "center": row.get("center") or None,
                                          "is_room": RESOURCE_KINDS[kind], "category": row["category"].strip()}
    else:
        raise ValueError(f"kind must be one of center, speciality, insurance, type, room, machine, doctor, closed;"
                         f" got {row.get('kind', '')!r}")


def listed(text):
    """The items of a ';' list, in order, once each."""
    return tuple(dict.fromkeys(item.strip() for item in (text or "").split(";") if item.strip()))


def doctor_entry(line, row):
    if not row.get("id") or not row.get("name") or not row.get("speciality"):
        raise ValueError("a doctor row needs id, name and speciality")
    return {"line": line, "name": row["name"], "speciality": row["speciality"], "center": row.get("center") or None,
            "insurances": tuple(sorted(listed(row.get("insurances")))), "days": parse_days(row.get("days", "")),
            "hours": parse_hours(row.get("hours", "")), "slot_minutes": parse_slot_minutes(row.get("slot_minutes", "")),
            "types": listed(row.get("types")), "room": (row.get("room") or "").strip() or None}


def closure_entries(line, row):
    if not row.get("date_from"):
        raise ValueError("a closed row needs date_from (DD/MM/YYYY)")
    first = parse_date(row["date_from"], "date_from")
    last = parse_date(row["date_to"], "date_to") if row.get("date_to") else first
    if last < first:
        raise ValueError("date_to is before date_from")
    return [(line, row.get("id") or None, row.get("center") or None, first.isoformat(), last.isoformat(), start, end,
             row.get("name", "")) for start, end in parse_hours(row.get("hours", ""), required=False) or [(None, None)]]


def doctor_disagreements(doctor_id, entries):
    """A doctor's rows must agree on name and speciality, and, at one center, on insurances (each
    center may have its own list: "Catalogs")."""
    problems = []
    for field in ("name", "speciality"):
        if len({entry[field] for entry in entries}) > 1:
            problems.append((entries[-1]["line"], f"doctor {doctor_id}: {field} differs from line {entries[0]['line']}"))
    first_at = {}
    for entry in entries:
        first = first_at.setdefault(entry["center"], entry)
        for field in ("insurances", "types"):
            if entry[field] != first[field]:
                problems.append((entry["line"], f"doctor {doctor_id}: {field} at {entry['center'] or 'the clinic'} "
                                                f"differ from line {first['line']} (one list per center)"))
    return problems


def _exists(conn, table, key):
    return conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (key,)).fetchone() is not None


def _apply_doctor(conn, doctor_id, entries):
    """Upsert one doctor and replace their hours at the centers named; returns problems."""
    first = entries[0]
    problems = []
    if not _exists(conn, "specialities", first["speciality"]):
        problems.append((first["line"], f"speciality {first['speciality']!r} is not in the catalog"))
    for entry in entries:
        problems += [(entry["line"], f"insurance {insurance_id!r} is not in the catalog")
                     for insurance_id in entry["insurances"] if not _exists(conn, "insurances", insurance_id)]
        if entry["center"] and not _exists(conn, "centers", entry["center"]):
            problems.append((entry["line"], f"center {entry['center']!r} is not in the catalog"))
    problems += room_problems(conn, entries)
    if problems:
        return problems
    conn.execute("INSERT INTO doctors (id, name, speciality_id) VALUES (?, ?, ?)"
                 " ON CONFLICT (id) DO UPDATE SET name = excluded.name, speciality_id = excluded.speciality_id",
                 (doctor_id, first["name"], first["speciality"]))
    for center in {entry["center"] for entry in entries}:
        conn.execute("DELETE FROM schedules WHERE doctor_id = ? AND center_id IS ?", (doctor_id, center))
        conn.execute("DELETE FROM doctor_insurances WHERE doctor_id = ? AND center_id IS ?", (doctor_id, center))
    conn.executemany("INSERT OR IGNORE INTO doctor_insurances (doctor_id, center_id, insurance_id) VALUES (?, ?, ?)",
                     [(doctor_id, entry["center"], insurance_id) for entry in entries
                      for insurance_id in entry["insurances"]])
    for entry in entries:
        conn.executemany(
            "INSERT INTO schedules (doctor_id, center_id, weekday, start_time, end_time, slot_minutes, room_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(doctor_id, entry["center"], weekday, start, end, entry["slot_minutes"], entry["room"])
             for weekday in entry["days"] for start, end in entry["hours"]])
    problems += _apply_doctor_types(conn, doctor_id, entries)
    overlap = conn.execute(
        "SELECT a.weekday, a.start_time, a.end_time, b.start_time, b.end_time"
        " FROM schedules a JOIN schedules b ON a.doctor_id = b.doctor_id AND a.weekday = b.weekday"
        " AND a.id < b.id AND a.start_time < b.end_time AND b.start_time < a.end_time"
        " WHERE a.doctor_id = ? LIMIT 1", (doctor_id,)).fetchone()
    if overlap:
        day = next(name for name, number in WEEKDAYS.items() if number == overlap[0])
        problems.append((first["line"], f"doctor {doctor_id}: hours {overlap[1]}-{overlap[2]} and "
                                        f"{overlap[3]}-{overlap[4]} overlap on {day}"))
    return problems


def _apply_closure(conn, line, doctor_id, center_id, first, last, start, end, reason):
    """Add a closure, or update the reason of the same one; returns problems."""
    if doctor_id and not _exists(conn, "doctors", doctor_id):
        return [(line, f"doctor {doctor_id!r} is not in the catalog")]
    if center_id and not _exists(conn, "centers", center_id):
        return [(line, f"center {center_id!r} is not in the catalog")]
    same = conn.execute("SELECT id FROM closures WHERE doctor_id IS ? AND center_id IS ? AND date_from = ?"
                        " AND date_to = ? AND start_time IS ? AND end_time IS ?",
                        (doctor_id, center_id, first, last, start, end)).fetchone()
    if same:
        conn.execute("UPDATE closures SET reason = ? WHERE id = ?", (reason, same["id"]))
    else:
        conn.execute("INSERT INTO closures (doctor_id, center_id, date_from, date_to, start_time, end_time, reason)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?)", (doctor_id, center_id, first, last, start, end, reason))
    return []


def _apply_types(conn, types):
    """Upsert the visit types; problems for an area not in the catalog."""
    problems = [(kind["line"], f"type: speciality {kind['speciality']!r} is not in the catalog")
                for kind in types.values() if not _exists(conn, "specialities", kind["speciality"])]
    if not problems:
        conn.executemany("INSERT INTO visit_types (id, name, speciality_id, minutes, pause, needs, bring) VALUES (?, ?,"
                         " ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, speciality_id ="
                         " excluded.speciality_id, minutes = excluded.minutes, pause = excluded.pause, needs ="
                         " excluded.needs, bring = excluded.bring",
                         [(key, kind["name"], kind["speciality"], kind["minutes"], kind["pause"], ";".join(kind["needs"]),
                           kind["bring"]) for key, kind in types.items()])
    return problems


def _apply_resources(conn, resources):
    """Upsert the rooms and machines; problems for a center not in the catalog."""
    problems = [(item["line"], f"center {item['center']!r} is not in the catalog")
                for item in resources.values() if item["center"] and not _exists(conn, "centers", item["center"])]
    if not problems:
        conn.executemany("INSERT INTO resources (id, name, center_id, is_room, category) VALUES (?, ?, ?, ?, ?)"
                         " ON CONFLICT (id) DO UPDATE SET name = excluded.name, center_id = excluded.center_id,"
                         " is_room = excluded.is_room, category = excluded.category",
                         [(key, item["name"], item["center"], item["is_room"], item["category"])
                          for key, item in resources.items()])
    return problems


def room_problems(conn, entries):
    """Problems for a doctor's row placing them in a room unknown, not a room, or at another center."""
    problems = []
    for entry in entries:
        room = entry["room"] and conn.execute("SELECT * FROM resources WHERE id = ?", (entry["room"],)).fetchone()
        if entry["room"] and (not room or not room["is_room"] or room["center_id"] != entry["center"]):
            problems.append((entry["line"], f"room {entry['room']!r} is not a room of center {entry['center']!r}"))
    return problems


def _apply_doctor_types(conn, doctor_id, entries):
    """Replace the types the doctor offers at each center named, in order; problems for a type unknown, of
    another area, longer (with its pause) than any of the doctor's hours there, or needing a room or machine
    the center lacks."""
    problems, speciality = [], entries[0]["speciality"]
    for center, line, types, longest in doctor_centers(entries):
        conn.execute("DELETE FROM doctor_types WHERE doctor_id = ? AND center_id IS ?", (doctor_id, center))
        for position, type_id in enumerate(types):
            kind = conn.execute("SELECT * FROM visit_types WHERE id = ?", (type_id,)).fetchone()
            why = type_refused(conn, kind, type_id, speciality, center, longest)
            if why:
                problems.append((line, f"doctor {doctor_id}: {why}"))
                continue
            conn.execute("INSERT INTO doctor_types (doctor_id, center_id, type_id, position) VALUES (?, ?, ?, ?)",
                         (doctor_id, center, type_id, position))
    return problems


def doctor_centers(entries):
    """(center, first line, types, longest hours in minutes) of each center a doctor's rows name."""
    found = {}
    for entry in entries:
        longest = max(minutes_between(start, end) for start, end in entry["hours"])
        center, line, types, before = found.get(entry["center"], (entry["center"], entry["line"], entry["types"], 0))
        found[entry["center"]] = (center, line, types, max(before, longest))
    return found.values()


def minutes_between(start, end):
    return (int(end[:2]) * 60 + int(end[3:])) - (int(start[:2]) * 60 + int(start[3:]))


def type_refused(conn, kind, type_id, speciality, center, longest):
    """Why a doctor of `speciality` may not offer this type at `center`, or None."""
    if kind is None:
        return f"type {type_id!r} is not in the catalog"
    if kind["speciality_id"] != speciality:
        return f"type {type_id!r} is of area {kind['speciality_id']}, not the doctor's {speciality}"
    if kind["minutes"] + kind["pause"] > longest:
        return f"type {type_id!r} ({kind['minutes']} + {kind['pause']} minutes) is longer than any of the hours there"
    missing = [need for need in kind["needs"].split(";") if need and not conn.execute(
        "SELECT 1 FROM resources WHERE center_id IS ? AND category = ?", (center, need)).fetchone()]
    return f"type {type_id!r} needs a {missing[0]}, and center {center!r} has none" if missing else None


def rooms_shared(conn, doctors):
    """Problems for two doctors whose hours place them in one room at once, on the last line of the file's
    `doctors` rows placing one of them there."""
    row = conn.execute("SELECT a.doctor_id, b.doctor_id, a.room_id FROM schedules a JOIN schedules b ON"
                       " a.room_id = b.room_id AND a.weekday = b.weekday AND a.doctor_id < b.doctor_id AND"
                       " a.start_time < b.end_time AND b.start_time < a.end_time LIMIT 1").fetchone()
    if row is None:
        return []
    line = max((entry["line"] for doctor_id in row[:2] for entry in doctors.get(doctor_id, ())
                if entry["room"] == row[2]), default=1)
    return [(line, f"room {row[2]}: doctors {row[0]} and {row[1]} would be in it at the same time")]


def names_shared(conn, types):
    """Problems for a visit type whose id is an area's: the caller's specialityId names one or the other."""
    return [(types[row[0]]["line"] if row[0] in types else 1,
             f"type {row[0]!r}: an area (speciality) has that id; give the type another")
            for row in conn.execute("SELECT id FROM visit_types WHERE id IN (SELECT id FROM specialities)")]


def doctors_by(conn, sql):
    """{key: [doctor id, sorted]} of the (key, doctor) rows a check's `sql` finds, by key."""
    found = {}
    for key, doctor_id in conn.execute(sql + " ORDER BY 1, 2"):
        found.setdefault(key, []).append(doctor_id)
    return found


def doctors_of_another_area(conn, types):
    """Problems for a type offered by a doctor of another area (its area changed, or the doctor's), naming them."""
    found = doctors_by(conn, "SELECT DISTINCT t.id, d.id FROM doctor_types o JOIN visit_types t ON t.id = o.type_id"
                             " JOIN doctors d ON d.id = o.doctor_id WHERE t.speciality_id != d.speciality_id")
    return [(types[type_id]["line"] if type_id in types else 1,
             f"type {type_id!r}: doctors {', '.join(doctors)} offer it, and it would be of an area not theirs:"
             " take it from their rows first") for type_id, doctors in found.items()]


def rederived(conn, now, before, parsed, touched):
    """Inside the seed's transaction: the coming visits the catalog touched hold what they need now ("What a
    visit holds"); ([{id, date, time, doctor, holds}] whose room or machine changed, a conflict from before
    too, problems naming those that would find none)."""
    bad = unheld(conn, now, touching=touched)
    unplaced = rederive(conn, now, [visit for visit in bad if visit.id not in before])
    rederive(conn, now, [visit for visit in bad if visit.id in before])  # placed if they fit now, else listed
    if not unplaced:
        now_held = {visit.id: [row[0] for row in conn.execute(
            "SELECT resource_id FROM holds WHERE appointment_id = ? ORDER BY 1", (visit.id,))] for visit in bad}
        return [{"id": visit.id, "date": visit.date, "time": visit.time, "doctor": visit.doctor_id,
                 "holds": now_held[visit.id]} for visit in bad if sorted(visit.held or ()) != now_held[visit.id]], []
    lines = [entry["line"] for doctor_id in touched[0] for entry in parsed["doctors"].get(doctor_id, ())] + [
        parsed["types"][type_id]["line"] for type_id in touched[1] if type_id in parsed["types"]] + [
        parsed["resources"][key]["line"] for key in touched[2] if key in parsed["resources"]]
    named = "; ".join(f"appointment {visit.id} ({format_date(visit.date)} {visit.time}, doctor {visit.doctor_id})"
                      for visit in unplaced)
    return [], [(min(lines, default=1), f"this would leave without the room or machine they need: {named}. Move"
                                        " them first (agenda move ID), or give the catalog the room or machine back")]


def under_way(conn, now, parsed, rooms, sharing):
    """Problems for a room of `rooms` a visit under way holds (it keeps them) while the hours would place another
    doctor in it, or a sobrecita under way shared (`sharing`) and would not: load the catalog once it has ended."""
    found = conn.execute(
        "SELECT DISTINCT h.resource_id, h.until, a.id, s.doctor_id FROM holds h JOIN appointments a ON a.id ="
        " h.appointment_id JOIN schedules s ON s.room_id = h.resource_id AND s.doctor_id != a.doctor_id AND"
        " s.weekday = ? AND s.start_time < h.until AND h.time < s.end_time WHERE h.live = 1 AND h.date = ? AND"
        " h.time <= ? AND ? < h.until AND h.resource_id IN (SELECT value FROM json_each(?)) ORDER BY 1, 3, 4",
        (now.weekday(), now.date().isoformat(), f"{now:%H:%M}", f"{now:%H:%M}", json.dumps(sorted(rooms)))).fetchall()
    now_sharing = sharing_under_way(conn, now)
    return [(min([entry["line"] for entry in parsed["doctors"].get(doctor_id, ())] or [1]),
             f"room {room}: appointment {appointment} is under way in it until {until}, and doctor {doctor_id}'s"
             f" hours would place them in it then: load this after {until}") for room, until, appointment, doctor_id
            in found] + [(min([e["line"] for entries in parsed["doctors"].values() for e in entries] or [1]),
                          f"room {room}: appointment {appointment}, a sobrecita, is under way in it until {until},"
                          f" sharing its doctor's room, which the hours would no longer keep theirs: load this after"
                          f" {until}") for appointment, (room, until) in sorted(sharing.items())
                         if now_sharing.get(appointment) != (room, until)]


def _apply_rows(conn, parsed):
    """Write the parsed catalog over the database's, inside the caller's transaction; the problems found."""
    problems = []
    for kind, table in (("center", "centers"), ("speciality", "specialities"), ("insurance", "insurances")):
        conn.executemany(f"INSERT INTO {table} (id, name) VALUES (?, ?)"
                         " ON CONFLICT (id) DO UPDATE SET name = excluded.name", parsed["simple"][kind].items())
    conn.executemany("UPDATE centers SET address = ?, phone = ? WHERE id = ?",
                     [(address, phone, key) for key, (address, phone) in parsed["places"].items()])
    problems.extend(_apply_types(conn, parsed["types"]) + _apply_resources(conn, parsed["resources"]))
    has_centers = conn.execute("SELECT 1 FROM centers LIMIT 1").fetchone() is not None
    problems.extend((item["line"], f"{'room' if item['is_room'] else 'machine'} {key}: center is required"
                                   " when the clinic has centers")
                    for key, item in parsed["resources"].items() if has_centers and item["center"] is None)
    for doctor_id, entries in parsed["doctors"].items():
        problems.extend(_apply_doctor(conn, doctor_id, entries))
        problems.extend((entry["line"], f"doctor {doctor_id}: center is required when the clinic has centers")
                        for entry in entries if has_centers and entry["center"] is None)
    for closure in parsed["closures"]:
        problems.extend(_apply_closure(conn, *closure))
    return problems + rooms_shared(conn, parsed["doctors"]) + names_shared(conn, parsed["types"]) + \
        doctors_of_another_area(conn, parsed["types"]) + rooms_gone(conn, parsed["resources"])


def rooms_gone(conn, resources):
    """Problems for a room or machine row that leaves a doctor's hours placing them in what is no longer a room of
    their center, naming the doctors."""
    found = doctors_by(conn, "SELECT DISTINCT s.room_id, s.doctor_id FROM schedules s LEFT JOIN resources r ON r.id ="
                             " s.room_id WHERE s.room_id IS NOT NULL AND (r.id IS NULL OR r.is_room = 0 OR r.center_id"
                             " IS NOT s.center_id)")
    return [(resources[room_id]["line"] if room_id in resources else 1,
             f"{room_id}: doctors {', '.join(doctors)} work in it; it must stay a room of their center (take it from"
             " their rows first)") for room_id, doctors in found.items()]


def seed_catalogs(conn, rows, *, at, source="cli", tz=None):
    """Apply catalog rows in one transaction, all or nothing ("Catalog file"), every bad line reported (references
    checked even when the file has problems); a summary, `changed` False (rolled back, no event) when nothing is new."""
    parsed, problems = parse_catalog(rows)
    now, changed = at if tz is None else at.astimezone(tz), []
    try:
        with transaction(conn):
            before, held = _snapshot(conn), what_holds_read(conn)
            conn.execute("SAVEPOINT catalog")
            problems.extend(_apply_rows(conn, parsed))
            touched = None if problems else touched_by(held, what_holds_read(conn))
            if touched:  # the coming visits it touches, judged before and after
                conn.execute("ROLLBACK TO catalog")
                before_unheld = {visit.id for visit in unheld(conn, now, touching=touched)}
                sharing = sharing_under_way(conn, now)
                _apply_rows(conn, parsed)
                changed, unplaced = rederived(conn, now, before_unheld, parsed, touched)
                problems.extend(unplaced + under_way(conn, now, parsed, touched[2], sharing))
                left_outside_hours(conn, now.date().isoformat(), touched[0])
            conn.execute("RELEASE catalog")
            if problems:
                raise SeedError(problems)
            after = _snapshot(conn)
            summary = {table: len(table_rows) for table, table_rows in after.items()}
            if after == before and not changed:
                raise _NothingChanged()
            record_event(conn, at, source, "catalog.seeded", "catalog", None,
                         after={**summary, "rederived": [visit["id"] for visit in changed]})
    except _NothingChanged:
        return {"changed": False, **summary, "rederived": []}
    return {"changed": True, **summary, "rederived": changed}


