"""Moving in and out ("Moving in and out"): the whole agenda written in open formats that Agenda
reads back (catalogs.csv, patients.csv, appointments.csv, events.jsonl), and how an old system's
appointments file is read, row by row (staged_import.py brings them in)."""

import json
import os
from pathlib import Path

from ..values.refusals import ClinicError
from ..values.fields import format_date, hhmm, minutes_of, parse_date, parse_time
from ..values.printing import sheet_csv
from ..domain.patients import EXPORTED, field_text
from ..domain.appointments import EXPORTED as EXPORTED_VISITS
from ..domain.identity import identities
from ..domain.rights import identifiers, scrubbed
from .catalogs import CATALOG_COLUMNS
from .reading import table_rows

EXPORT_FILES = ("catalogs.csv", "patients.csv", "appointments.csv", "events.jsonl")
DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
PATIENT_FILE = tuple(column.field for column in EXPORTED)  # patients.csv's header, as import-patients reads it
# The fields of appointments.csv read and written by rules of their own; every other column the owner's list says the
# file carries (`export`) goes as stored, text in and out ("An appointment's columns").
OWN_RULES = ("date", "time", "duration", "doctor", "center", "nif", "insurance", "status", "type", "pause")
AS_STORED = tuple(column for column in EXPORTED_VISITS if column.export not in OWN_RULES)
APPOINTMENT_COLUMNS = ("date", "time", "duration", "doctor", "center", "nif", "name", "surname", "phone",
                       *(column.export for column in AS_STORED), "insurance", "status", "type", "pause", "holds")


# Moving out: the export

def export_agenda(clinic, folder, reader):
    """Write the agenda into `folder` (made 0700 when new; none of its files, nor any link, may be there),
    every file 0600 from its first byte; who the patients are through the one door (the read noted for
    `reader`); the blocked left out of every file. {file: rows written, "blocked": N, "events_left_out": N}."""
    folder = Path(folder)
    refuse_unsafe_folder(folder)
    conn = clinic.conn()
    people = identities(clinic, [row[0] for row in conn.execute("SELECT id FROM live_patients ORDER BY id")],
                        reader, "export")
    events, left_out = event_lines(conn)
    texts = {"catalogs.csv": catalog_rows(conn), "patients.csv": [patient_line(person) for person in people.values()],
             "appointments.csv": appointment_lines(conn, people), "events.jsonl": events}
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    written = []
    try:
        for name, rows in texts.items():
            header = {"catalogs.csv": CATALOG_COLUMNS, "patients.csv": PATIENT_FILE,
                      "appointments.csv": APPOINTMENT_COLUMNS}.get(name)
            write_private(folder / name, sheet_csv(header, rows) if header else "".join(rows))
            written.append(folder / name)
    except OSError as error:
        for path in written:
            path.unlink(missing_ok=True)
        raise ClinicError("INVALID_REQUEST", f"could not write {folder}: {error.strerror}; nothing was exported",
                          "export_folder") from None
    blocked = conn.execute("SELECT count(*) FROM patients WHERE blocked_at IS NOT NULL").fetchone()[0]
    return {**{name: len(rows) for name, rows in texts.items()}, "blocked": blocked, "events_left_out": left_out}


def refuse_unsafe_folder(folder):
    """Refuse, before a byte is written, a folder that is a link, holds a link, or holds a file of the export."""
    if folder.is_symlink():
        raise ClinicError("INVALID_REQUEST", f"{folder} is a link: give a real, empty folder", "export_folder")
    if not folder.exists():
        return
    links = sorted(path.name for path in folder.iterdir() if path.is_symlink())
    taken = [name for name in EXPORT_FILES if os.path.lexists(folder / name)]
    if links or taken:
        what = f"links ({', '.join(links)})" if links else ", ".join(taken)
        raise ClinicError("INVALID_REQUEST", f"{folder} already holds {what}; give an empty folder", "empty_folder")


def write_private(path, text):
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as file:
        file.write(text)


def catalog_row(kind, **values):
    """A row of the catalog CSV: its cells in CATALOG_COLUMNS' order, blank but those given."""
    return tuple(kind if column == "kind" else str(values.get(column) or "") for column in CATALOG_COLUMNS)


def catalog_rows(conn):
    """The catalogs as `agenda seed` reads them: centers, specialities, insurances, visit types, rooms and
    machines, each doctor's hours (one row per center, slot length, room and set of hours, the days that share
    them, with the types offered there), closures."""
    rows = [catalog_row("center", id=row["id"], name=row["name"], address=row["address"], phone=row["phone"])
            for row in conn.execute("SELECT id, name, address, phone FROM centers ORDER BY id")]
    rows += [catalog_row(kind, id=row["id"], name=row["name"])
             for kind, table in (("speciality", "specialities"), ("insurance", "insurances"))
             for row in conn.execute(f"SELECT id, name FROM {table} ORDER BY id")]
    rows += [catalog_row("type", id=row["id"], name=row["name"], speciality=row["speciality_id"],
                         slot_minutes=row["minutes"], pause=row["pause"] or "", needs=row["needs"], bring=row["bring"])
             for row in conn.execute("SELECT * FROM visit_types ORDER BY id")]
    rows += [catalog_row("room" if row["is_room"] else "machine", id=row["id"], name=row["name"],
                         center=row["center_id"], category=row["category"])
             for row in conn.execute("SELECT * FROM resources ORDER BY id")]
    for doctor in conn.execute("SELECT id, name, speciality_id FROM doctors ORDER BY id"):
        rows += doctor_rows(conn, doctor)
    for closure in conn.execute("SELECT * FROM closures ORDER BY id"):
        hours = f"{closure['start_time']}-{closure['end_time']}" if closure["start_time"] else ""
        rows.append(catalog_row("closed", id=closure["doctor_id"], name=closure["reason"], center=closure["center_id"],
                                hours=hours, date_from=format_date(closure["date_from"]),
                                date_to=format_date(closure["date_to"])))
    return rows


def doctor_rows(conn, doctor):
    """One doctor's seed rows: the weekdays that share a center, a slot length, a room and the same hours."""
    grids = {}
    for row in conn.execute("SELECT * FROM schedules WHERE doctor_id = ? ORDER BY weekday, start_time", (doctor["id"],)):
        grids.setdefault((row["center_id"], row["slot_minutes"], row["room_id"]), {}).setdefault(
            row["weekday"], []).append(f"{row['start_time']}-{row['end_time']}")
    rows = []
    for (center, minutes, room), days in grids.items():
        insurances = ";".join(row[0] for row in conn.execute(
            "SELECT insurance_id FROM doctor_insurances WHERE doctor_id = ? AND center_id IS ? ORDER BY 1",
            (doctor["id"], center)))
        types = ";".join(row[0] for row in conn.execute(
            "SELECT type_id FROM doctor_types WHERE doctor_id = ? AND center_id IS ? ORDER BY position",
            (doctor["id"], center)))
        by_hours = {}
        for weekday, hours in days.items():
            by_hours.setdefault(";".join(hours), []).append(DAY_NAMES[weekday])
        rows += [catalog_row("doctor", id=doctor["id"], name=doctor["name"], speciality=doctor["speciality_id"],
                             center=center, insurances=insurances, days=";".join(names), hours=hours,
                             slot_minutes=minutes, types=types, room=room) for hours, names in by_hours.items()]
    return rows


def patient_line(person):
    """A patient as import-patients reads them (EXPORTED): a child of an erased guardian with no guardian at all."""
    return tuple(field_text(column, person[column.key]) for column in EXPORTED)


def appointment_lines(conn, people):
    """Every appointment of a patient shown (`people`, from the one door), cancelled ones too, in the
    import's format."""
    rows = conn.execute("SELECT a.*, (SELECT group_concat(h.resource_id, ';') FROM holds h WHERE h.appointment_id"
                        " = a.id AND h.live = 1) AS held FROM appointments a JOIN live_patients p ON p.id = a.patient_id"
                        " ORDER BY a.date, a.time, a.doctor_id, a.id")
    return [(format_date(a["date"]), a["time"], str(minutes_of(a["end_time"]) - minutes_of(a["time"])), a["doctor_id"],
             a["center_id"] or "", person["nif"] or "", person["name"], person["surname"] or "",
             person["phone"] or "", *(a[column.name] or "" for column in AS_STORED), a["insurance_id"] or "",
             a["status"], a["type_id"] or "", str(a["pause"] or ""), a["held"] or "")
            for a in rows if (person := people.get(a["patient_id"])) is not None]


# Events about a blocked patient: theirs, and those of their appointments, waiting entries and series.
BLOCKED_EVENT = """(e.entity = 'patient' AND e.entity_id IN (SELECT CAST(id AS TEXT) FROM blocked))
    OR (e.entity = 'appointment' AND e.entity_id IN (SELECT CAST(a.id AS TEXT) FROM appointments a JOIN blocked b
                                                      ON b.id = a.patient_id))
    OR (e.entity = 'waitlist' AND e.entity_id IN (SELECT CAST(w.id AS TEXT) FROM waitlist w JOIN blocked b
                                                   ON b.id = w.patient_id))
    OR (e.entity = 'series' AND e.entity_id IN (SELECT CAST(s.id AS TEXT) FROM series s JOIN blocked b
                                                 ON b.id = s.patient_id))"""


def event_lines(conn):
    """The audit trail, one JSON object a line, its before and after as objects, but every event about a
    blocked patient, and a blocked guardian's NIF and phone where a child's events hold them: (lines, how
    many events were left out)."""
    private = identifiers(conn, [row[0] for row in conn.execute("SELECT id FROM patients WHERE blocked_at IS NOT NULL")])
    rows = conn.execute(
        f"WITH blocked AS (SELECT id FROM patients WHERE blocked_at IS NOT NULL) SELECT e.*, {BLOCKED_EVENT} AS"
        " about_blocked, e.entity = 'patient' AND e.entity_id IN (SELECT CAST(c.id AS TEXT) FROM patients c JOIN"
        " blocked b ON b.id = c.guardian_id) AS about_their_child FROM events e ORDER BY e.id").fetchall()
    lines = [json.dumps({**{key: row[key] for key in row.keys() if key not in ("about_blocked", "about_their_child")},
                         "before": json.loads(scrubbed(row["before"], private if row["about_their_child"] else set())
                                              or "null"),
                         "after": json.loads(scrubbed(row["after"], private if row["about_their_child"] else set())
                                             or "null")},
                        ensure_ascii=False) + "\n" for row in rows if not row["about_blocked"]]
    return lines, len(rows) - len(lines)


# Moving in: an old system's appointments

APPOINTMENT_COLUMN_NAMES = {  # a header, folded: our field
    "date": "date", "fecha": "date", "time": "time", "hora": "time", "duration": "duration",
    "duracion": "duration", "duración": "duration", "minutes": "duration", "minutos": "duration",
    "doctor": "doctor", "medico": "doctor", "médico": "doctor", "center": "center", "centro": "center",
    "nif": "nif", "dni": "nif", "nie": "nif", "name": "name", "nombre": "name", "surname": "surname",
    "apellidos": "surname", "phone": "phone", "telefono": "phone", "teléfono": "phone", "movil": "phone",
    "móvil": "phone", "reason": "reason", "motivo": "reason", "insurance": "insurance", "seguro": "insurance",
    "aseguradora": "insurance", "status": "status", "estado": "status", "birthdate": "birthDate",
    "fechanacimiento": "birthDate", "fechadenacimiento": "birthDate", "type": "type", "tipo": "type",
    "tipodevisita": "type", "pause": "pause", "pausa": "pause", "holds": "holds", "salas": "holds",
    **{column.export: column.export for column in AS_STORED},
}
STATUS_WORDS = {"": "booked", "booked": "booked", "reservada": "booked", "pendiente": "booked",
                "confirmed": "confirmed", "confirmada": "confirmed", "unanswered": "unanswered",
                "sin respuesta": "unanswered", "cancelled": "cancelled", "anulada": "cancelled",
                "cancelada": "cancelled"}
APPOINTMENT_EXAMPLE = "date,time,duration,doctor,center,nif,name,surname,phone,reason,insurance,status"


def appointment_rows(path):
    """The records of an old system's appointments file as it streams: (line, {field: text}, [why a cell is
    refused]) (`table_rows`); PatientFileError for a file that cannot be read."""
    return table_rows(path, APPOINTMENT_COLUMN_NAMES, ("date", "time", "doctor"), APPOINTMENT_EXAMPLE,
                      "an appointments file")


def appointment_fields(fields, known):
    """One row's appointment: date, time, end, doctor, center, insurance, reason, status, and its visit type,
    pause (the type's when not given), busy end and the rooms and machines it holds (a JSON list, or None);
    ClinicError naming the first thing wrong. `known`: the ids of each catalog, a type's pause by its id."""
    day, start = parse_date(fields.get("date", ""), "date"), parse_time(fields.get("time", ""), "time")
    try:
        minutes = int(fields.get("duration") or 15)
    except ValueError:
        raise ClinicError("INVALID_REQUEST", f"duration {fields['duration']!r} is not a number of minutes",
                          "minutes", "duration") from None
    if not 1 <= minutes <= 480 or minutes_of(start) + minutes > 24 * 60:
        raise ClinicError("INVALID_REQUEST", "duration must be 1 to 480 minutes, ending the same day",
                          "duration_range", "duration")
    for field, table in (("doctor", "doctors"), ("center", "centers"), ("insurance", "insurances")):
        value = fields.get(field, "").strip()
        if (value or field == "doctor") and value not in known[table]:
            raise ClinicError("INVALID_REQUEST", f"{field} {value!r} is not in the catalogs (agenda seed loads them)",
                              "catalog", field)
    status = STATUS_WORDS.get(fields.get("status", "").strip().lower())
    if status is None:
        raise ClinicError("INVALID_REQUEST", f"status {fields['status']!r} is not one of booked, confirmed, "
                                             "unanswered, cancelled (or reservada, confirmada, anulada)",
                          "status_word", "status")
    end = minutes_of(start) + minutes
    center = fields.get("center", "").strip() or None
    kind, pause, holds = visit_fields(fields, known, known["doctors"][fields["doctor"].strip()], center)
    return {"date": day.isoformat(), "time": start, "end": hhmm(end), "minutes": minutes,
            "doctor": fields["doctor"].strip(), "center": fields.get("center", "").strip() or None,
            "insurance": fields.get("insurance", "").strip() or None, "status": status,
            **{column.name: fields.get(column.export, "").strip() or None for column in AS_STORED}, "type": kind, "pause": pause, "busy_until": hhmm(min(end + (pause or 0), 24 * 60)),
            "holds": json.dumps(holds) if holds else None}


def visit_fields(fields, known, area, center):
    """A row's visit type (None; of the doctor's `area`), its pause in minutes (the type's when not given) and
    the rooms and machines it holds ([ids] of `center`, `;` between them in the file): as `agenda export`
    writes them ("Moving in and out")."""
    kind = fields.get("type", "").strip() or None
    if kind is not None and kind not in known["visit_types"]:
        raise ClinicError("INVALID_REQUEST", f"type {kind!r} is not in the catalogs (agenda seed loads them)",
                          "catalog", "type")
    if kind is not None and known["visit_types"][kind][1] != area:
        raise ClinicError("INVALID_REQUEST", f"type {kind!r} is of area {known['visit_types'][kind][1]}, not the"
                          f" doctor's ({area})", "type_area", "type")
    text = fields.get("pause", "").strip()
    if text and (not text.isdigit() or int(text) > 240):
        raise ClinicError("INVALID_REQUEST", f"pause {text!r} must be a whole number of minutes from 0 to 240",
                          "minutes", "pause")
    pause = int(text) if text else (known["visit_types"][kind][0] if kind else None)
    holds = [item.strip() for item in fields.get("holds", "").split(";") if item.strip()]
    unknown = [item for item in holds if item not in known["resources"]]
    if unknown:
        raise ClinicError("INVALID_REQUEST", f"holds {unknown[0]!r} is not a room or machine in the catalogs",
                          "catalog", "holds")
    elsewhere = [item for item in holds if center is not None and known["resources"][item] != center]
    if elsewhere:
        raise ClinicError("INVALID_REQUEST", f"holds {elsewhere[0]!r}, a room or machine of center"
                          f" {known['resources'][elsewhere[0]]}, not of the appointment's ({center})",
                          "holds_center", "holds")
    return kind, pause or None, list(dict.fromkeys(holds))
