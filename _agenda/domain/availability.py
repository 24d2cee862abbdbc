"""What the clinic offers ("Catalogs", "Availability"): its centers, catalogs and the insurances each doctor takes,
the free slots of a doctor or an area by a channel's window, and every slot of a day with its state. No HTTP here."""

import datetime as dt

from ..values.refusals import invalid
from .slots import day_states, free_slots, FREE, read_schedule
from .visits import free_starts, the_visit, types_offered, visit_type


def clinic_centers(clinic):
    """The clinic's centers: id and name, by id."""
    return [dict(row) for row in clinic.conn().execute("SELECT id, name FROM centers ORDER BY id")]


CATALOG_TABLES = {"centers": "centers", "insurances": "insurances", "specialities": "specialities",
                  "doctors": "doctors", "types": "visit_types"}


def catalog_names(clinic, kind):
    """{id: name} of the clinic's centers, insurances, specialities, doctors or visit types."""
    return {row["id"]: row["name"] for row in clinic.conn().execute(f"SELECT id, name FROM {CATALOG_TABLES[kind]}")}


def catalog_lists(clinic):
    """The clinic's catalogs ("Catalogs"): centers, specialities and insurances ({id, name}), and each
    doctor with the centers they work at and, by center, the only insurances they take there (none: all)."""
    conn = clinic.conn()
    insurance_lists, doctor_centers = {}, {}
    for row in conn.execute("SELECT doctor_id, center_id, insurance_id FROM doctor_insurances ORDER BY 1, 2, 3"):
        insurance_lists.setdefault(row["doctor_id"], {}).setdefault(row["center_id"], []).append(row["insurance_id"])
    for row in conn.execute("SELECT DISTINCT doctor_id, center_id FROM schedules ORDER BY 1, 2"):
        doctor_centers.setdefault(row["doctor_id"], []).append(row["center_id"])
    listed = {table: [dict(row) for row in conn.execute(f"SELECT id, name FROM {table} ORDER BY id")]
              for table in ("centers", "specialities", "insurances")}
    doctors = [{**dict(row), "centers": doctor_centers.get(row["id"], []),
                "insurances": insurance_lists.get(row["id"], {})}
               for row in conn.execute("SELECT id, name, speciality_id FROM doctors ORDER BY id")]
    types = [dict(row) for row in conn.execute(
        "SELECT t.id, t.name, s.name AS area, t.minutes FROM visit_types t JOIN specialities s ON"
        " s.id = t.speciality_id ORDER BY t.id")]
    return {**listed, "doctors": doctors, "types": types}


def insurance_lists(clinic, doctor_ids):
    """{(doctor, center): {insurance ids}}: the only insurances each doctor takes at each center
    ("Catalogs"); a doctor and center absent from it take every insurance."""
    lists = {}
    for row in clinic.conn().execute(
            f"SELECT doctor_id, center_id, insurance_id FROM doctor_insurances WHERE doctor_id IN"
            f" ({','.join('?' * len(doctor_ids))})", list(doctor_ids)):
        lists.setdefault((row["doctor_id"], row["center_id"]), set()).add(row["insurance_id"])
    return lists


def availability(clinic, *, doctor_id=None, speciality_id=None, center_id=None, insurance_id=None,
                 first=None, last=None, channel="caller"):
    """The free slots ("Availability") of a doctor or a speciality, from `first` (today) to
    `last` (13 days on), within the channel's horizon."""
    if doctor_id is None and speciality_id is None:
        raise invalid("doctorId or specialityId is required", "doctor_or_speciality")
    clinic.require_center(center_id)
    first = first or clinic.today()
    if last is not None and last < first:
        raise invalid("endDate is before startDate", "last_day", "endDate")
    window = clinic.window(channel)
    if first > window.last_day:  # nothing to offer; also keeps date arithmetic far from year 9999
        return []
    last = min(last or first + dt.timedelta(days=13), window.last_day)
    kind = visit_type(clinic.conn(), speciality_id) if speciality_id is not None else None
    doctors = offering(clinic, doctor_id, speciality_id, kind)
    offered = types_offered(clinic.conn(), [d["id"] for d in doctors]) if doctors else {}
    if kind is None and not offered and not placed_in_rooms(clinic.conn()):  # one slot of the grid, no room held
        slots = free_slots(clinic.conn(), doctors, first, last, window=window, center_id=center_id)
    else:
        slots = free_starts(clinic.conn(), doctors, first, last, window=window, center_id=center_id, typed=bool(kind),
                            visit_of=lambda doctor, row: visit_at(offered, doctor, row, kind))
    if insurance_id is None:
        return slots
    clinic.require_insurance(insurance_id)
    lists = insurance_lists(clinic, {slot.doctor_id for slot in slots})
    return [slot for slot in slots if insurance_id in lists.get((slot.doctor_id, slot.center_id), {insurance_id})]


def placed_in_rooms(conn):
    """Whether the hours place any doctor in a room: then even a visit of no type holds one ("Rooms and machines")."""
    return conn.execute("SELECT 1 FROM schedules WHERE room_id IS NOT NULL LIMIT 1").fetchone() is not None


def offering(clinic, doctor_id, speciality_id, kind):
    """The doctors a request for free slots asks about: the doctor (of the area or offering the type
    asked, if one is), else every doctor of the area, or every doctor offering the type."""
    if doctor_id is not None:
        doctors = [clinic.require_doctor(doctor_id)]
        if kind is not None:
            return [d for d in doctors if clinic.conn().execute(
                "SELECT 1 FROM doctor_types WHERE doctor_id = ? AND type_id = ?", (d["id"], kind.id)).fetchone()]
        if speciality_id is not None:
            clinic.require_speciality(speciality_id)
            return [d for d in doctors if d["speciality_id"] == speciality_id]
        return doctors
    if kind is not None:
        return clinic.conn().execute("SELECT DISTINCT d.id, d.name, d.speciality_id FROM doctors d JOIN doctor_types o"
                                   " ON o.doctor_id = d.id WHERE o.type_id = ? ORDER BY d.id", (kind.id,)).fetchall()
    clinic.require_speciality(speciality_id)
    return clinic.conn().execute("SELECT id, name, speciality_id FROM doctors WHERE speciality_id = ?",
                               (speciality_id,)).fetchall()


def visit_at(offered, doctor, row, kind):
    """The visit a doctor's free starts are for at a schedule row: the type asked, where the doctor offers it
    there (else none); or the doctor's default there ("Visit types")."""
    types = offered.get((doctor["id"], row["center_id"]), [])
    if kind is not None:
        return kind if kind in types else None
    return the_visit(offered, doctor, row["center_id"], row["slot_minutes"])


def types_at(clinic, doctor_id, center_id):
    """[VisitType] a doctor offers at a center, the first their default; [] for a doctor without types there."""
    return types_offered(clinic.conn(), [doctor_id]).get((doctor_id, center_id), [])


def is_visit_type(clinic, key):
    """Whether `key` names a visit type (not an area)."""
    return clinic.conn().execute("SELECT 1 FROM visit_types WHERE id = ?", (key,)).fetchone() is not None


def day_slots(clinic, day, center_id=None, channel="desk"):
    """Every slot of the doctors who work at this center (or anywhere) on `day`, with its state for
    the channel: [(schedule row with the doctor's name, time, end, (state, detail))]."""
    doctors = clinic.conn().execute("SELECT id, name, speciality_id FROM doctors").fetchall()
    window, names = clinic.window(channel), {row["id"]: row for row in doctors}
    schedule = read_schedule(clinic.conn(), list(names), day, day, center_id)
    found = []
    for row, grid in schedule.grids.get(day.weekday(), ()):
        states = day_states(window, row, grid, day, schedule.closures, schedule.busy.get((row["doctor_id"],
                                                                                         day.isoformat())))
        doctor = {**dict(row), "name": names[row["doctor_id"]]["name"],
                  "speciality_id": names[row["doctor_id"]]["speciality_id"]}
        found += [(doctor, time_text, end_text, states.get(time_text, FREE))
                  for time_text, end_text, _ in grid.slots]
    return found
