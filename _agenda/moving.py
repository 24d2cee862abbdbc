"""Moving in and out ("Moving in and out"): the whole agenda written in open formats that Agenda
reads back (catalogs.csv, patients.csv, appointments.csv, events.jsonl), and an old system's
appointments read in, all or nothing."""

import datetime as dt
import json
import os
from pathlib import Path

from .values import (ClinicError, format_date, hhmm, minutes_of, normalise_nif, parse_date, parse_phone, parse_time,
                     patient_fields, sheet_csv)
from .store import INSERT_PATIENT, patient_row, record_event, written_row
from .slots import overlapping, read_schedule
from .identity import identities
from .booking import admit, Visit
from .rights import identifiers, scrubbed
from .imports import CATALOG_COLUMNS, read_table_file

EXPORT_FILES = ("catalogs.csv", "patients.csv", "appointments.csv", "events.jsonl")
DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
PATIENT_COLUMNS = ("name", "surname", "birthDate", "nif", "phone", "guardianNif")
APPOINTMENT_COLUMNS = ("date", "time", "duration", "doctor", "center", "nif", "name", "surname", "phone", "reason",
                       "insurance", "status")


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
            header = {"catalogs.csv": CATALOG_COLUMNS, "patients.csv": PATIENT_COLUMNS,
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


def catalog_rows(conn):
    """The catalogs as `agenda seed` reads them: centers, specialities, insurances, each doctor's
    hours (one row per center, slot length and set of hours, the days that share them), closures."""
    rows = [(kind, row["id"], row["name"]) for kind, table in (("center", "centers"), ("speciality", "specialities"),
                                                               ("insurance", "insurances"))
            for row in conn.execute(f"SELECT id, name FROM {table} ORDER BY id")]
    rows = [(*row, *[""] * (len(CATALOG_COLUMNS) - 3)) for row in rows]
    for doctor in conn.execute("SELECT id, name, speciality_id FROM doctors ORDER BY id"):
        rows += doctor_rows(conn, doctor)
    for closure in conn.execute("SELECT * FROM closures ORDER BY id"):
        hours = f"{closure['start_time']}-{closure['end_time']}" if closure["start_time"] else ""
        rows.append(("closed", closure["doctor_id"] or "", closure["reason"], "", closure["center_id"] or "", "", "",
                     hours, "", format_date(closure["date_from"]), format_date(closure["date_to"])))
    return rows


def doctor_rows(conn, doctor):
    """One doctor's seed rows: the weekdays that share a center, a slot length and the same hours."""
    grids = {}
    for row in conn.execute("SELECT * FROM schedules WHERE doctor_id = ? ORDER BY weekday, start_time", (doctor["id"],)):
        grids.setdefault((row["center_id"], row["slot_minutes"]), {}).setdefault(row["weekday"], []).append(
            f"{row['start_time']}-{row['end_time']}")
    rows = []
    for (center, minutes), days in grids.items():
        insurances = ";".join(row[0] for row in conn.execute(
            "SELECT insurance_id FROM doctor_insurances WHERE doctor_id = ? AND center_id IS ? ORDER BY 1",
            (doctor["id"], center)))
        by_hours = {}
        for weekday, hours in days.items():
            by_hours.setdefault(";".join(hours), []).append(DAY_NAMES[weekday])
        rows += [("doctor", doctor["id"], doctor["name"], doctor["speciality_id"], center or "", insurances,
                  ";".join(names), hours, str(minutes), "", "") for hours, names in by_hours.items()]
    return rows


def patient_line(person):
    """A patient as import-patients reads them: a child of an erased guardian with no guardian at all."""
    return (person["name"], person["surname"] or "", format_date(person["birth_date"]) if person["birth_date"] else "",
            person["nif"] or "", person["phone"] or "", person["guardian_nif"] or "")


def appointment_lines(conn, people):
    """Every appointment of a patient shown (`people`, from the one door), cancelled ones too, in the
    import's format."""
    rows = conn.execute("SELECT a.* FROM appointments a JOIN live_patients p ON p.id = a.patient_id"
                        " ORDER BY a.date, a.time, a.doctor_id, a.id")
    return [(format_date(a["date"]), a["time"], str(minutes_of(a["end_time"]) - minutes_of(a["time"])), a["doctor_id"],
             a["center_id"] or "", person["nif"] or "", person["name"], person["surname"] or "",
             person["phone"] or "", a["reason"] or "", a["insurance_id"] or "", a["status"])
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
    "fechanacimiento": "birthDate", "fechadenacimiento": "birthDate",
}
STATUS_WORDS = {"": "booked", "booked": "booked", "reservada": "booked", "pendiente": "booked",
                "confirmed": "confirmed", "confirmada": "confirmed", "unanswered": "unanswered",
                "sin respuesta": "unanswered", "cancelled": "cancelled", "anulada": "cancelled",
                "cancelada": "cancelled"}
APPOINTMENT_EXAMPLE = "date,time,duration,doctor,center,nif,name,surname,phone,reason,insurance,status"


def read_appointment_file(path):
    """[(line, {field: text})] of an old system's appointments file."""
    return read_table_file(path, APPOINTMENT_COLUMN_NAMES, ("date", "time", "doctor"), APPOINTMENT_EXAMPLE,
                           "an appointments file")


def import_appointments(clinic, rows, file_name, *, dry_run=False, source="cli"):
    """Appointments from an old system's rows: (appointments planned, patients to create, problems).
    All or nothing; a dry run checks outside the write lock and writes nothing."""
    today, at = clinic.today(), clinic.clock()
    if dry_run:
        return plan_import(clinic.conn(), rows, today)
    with clinic.db.transaction() as conn:
        planned, created, problems = plan_import(conn, rows, today)
        if problems:
            return planned, created, problems
        ids = {}
        for patient in created.values():
            ids[patient["nif"]] = written_row(conn, INSERT_PATIENT, patient_row(patient, at))["id"]
        for appointment in planned:
            visit = Visit(appointment["patient_id"] or ids[appointment["nif"]], appointment["doctor"],
                          center_id=appointment["center"], minutes=appointment["minutes"],
                          insurance_id=appointment["insurance"], reason=appointment["reason"])
            admit(clinic, conn, visit, dt.date.fromisoformat(appointment["date"]), appointment["time"], "import", at,
                  source, status=appointment["status"], cancel_reason="cancelled in the system it came from")
        record_event(conn, at, source, "appointments.imported", "appointment", None,
                     after={"file": file_name, "imported": len(planned), "patientsCreated": len(created)})
    return planned, created, problems


def plan_import(conn, rows, today):
    """Check every row against the catalogs, the patients and the agenda's appointments (and each
    other): (appointments, {nif: new patient}, problems as "line N: why")."""
    known = {table: {row[0] for row in conn.execute(f"SELECT id FROM {table}")}
             for table in ("doctors", "centers", "insurances")}
    planned, created, problems = [], {}, []
    for line, fields in rows:
        try:
            appointment = appointment_fields(fields, known)
            appointment["patient_id"], appointment["nif"] = find_or_plan_patient(conn, fields, created, today)
        except ClinicError as error:
            problems.append(f"line {line}: {error.message}")
            continue
        planned.append({**appointment, "line": line})
    problems += overlaps(conn, planned)
    return planned, created, problems


def appointment_fields(fields, known):
    """One row's appointment: date, time, end, doctor, center, insurance, reason, status; ClinicError
    naming the first thing wrong."""
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
    return {"date": day.isoformat(), "time": start, "end": hhmm(end), "minutes": minutes,
            "doctor": fields["doctor"].strip(), "center": fields.get("center", "").strip() or None,
            "insurance": fields.get("insurance", "").strip() or None, "reason": fields.get("reason", "").strip() or None,
            "status": status}


def find_or_plan_patient(conn, fields, created, today):
    """(patient id, None) of the patient a row names, by NIF, else by name and phone; or (None, NIF)
    of a new patient planned from its fields."""
    if fields.get("nif", "").strip():
        nif = normalise_nif(fields["nif"])
        found = conn.execute("SELECT id FROM live_patients WHERE nif = ?", (nif,)).fetchone()
        if found:
            return found[0], None
        if nif not in created:
            created[nif] = patient_fields(fields, today)
        return None, nif
    phone = parse_phone(fields["phone"]) if fields.get("phone", "").strip() else None
    name, surname = fields.get("name", "").strip(), fields.get("surname", "").strip()
    if phone:
        found = conn.execute("SELECT id FROM live_patients WHERE phone_e164 = ? AND lower(name) = lower(?)",
                             (phone, name)).fetchall()
    else:  # a child without a NIF or a phone of their own: by name and surname among those without a NIF
        found = conn.execute("SELECT id FROM live_patients WHERE nif IS NULL AND lower(name) = lower(?) AND"
                             " lower(coalesce(surname, '')) = lower(?)", (name, surname)).fetchall()
    if len(found) != 1:
        raise ClinicError("INVALID_REQUEST", "no NIF, and no one patient here with that name and phone (or, with no "
                                             "phone, that name and surname): give the patient's NIF",
                          "patient_by_phone", "nif")
    return found[0][0], None


def overlaps(conn, planned):
    """Problems for live rows that a doctor's live appointment, in the agenda or on an earlier line,
    would hold taken: the slot decision's rule ("Slot states"), as the schema's triggers hold it."""
    live = sorted((a for a in planned if a["status"] != "cancelled"), key=lambda a: a["line"])
    if not live:
        return []
    days = sorted(a["date"] for a in live)
    busy = read_schedule(conn, sorted({a["doctor"] for a in live}), dt.date.fromisoformat(days[0]),
                         dt.date.fromisoformat(days[-1])).busy
    problems, lines = [], {}
    for appointment in live:
        key = (appointment["doctor"], appointment["date"])
        clash = overlapping(busy.get(key, ()), appointment["time"], appointment["end"])
        if clash:
            what = lines.get((*key, clash[0])) or held(conn, key, clash[0])
            problems.append(f"line {appointment['line']}: {format_date(appointment['date'])} {appointment['time']} "
                            f"with {appointment['doctor']} overlaps {what}")
        busy.setdefault(key, set()).add(appointment["time"] + appointment["end"])
        lines.setdefault((*key, appointment["time"] + appointment["end"]), f"line {appointment['line']}")
    return problems


def held(conn, key, span):
    """What holds a doctor's span of a day in the agenda: 'appointment N already in the agenda'."""
    row = conn.execute("SELECT id FROM appointments WHERE doctor_id = ? AND date = ? AND time = ? AND end_time = ?"
                       " AND status != 'cancelled' AND squeezed = 0", (*key, span[:5], span[5:])).fetchone()
    return f"appointment {row[0]} already in the agenda"
