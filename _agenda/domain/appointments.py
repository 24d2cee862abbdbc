"""The appointments table's one owner ("An appointment's columns"): APPOINTMENT_COLUMNS, each column's kind,
meaning, who sets it and where it goes, which drives the record, the patient's copy, the export and the anonymising;
the only writes to the table; and appointments as the clinic reads them ("Appointment records"): one, or the live
ones matching named filters, who the patient is through the one door ("A patient's identity"). No HTTP here."""

import json
from typing import NamedTuple

from ..values.refusals import ClinicError
from ..values.fields import normalise_nif, numeric_id, parse_phone
from ..storage.events import utc_iso, written_row
from .identity import GUARDIAN_JOIN, identity_fields, noted
from .slots import CLOSURE_COVERS, OUTSIDE_HOURS

COLUMN_KINDS = ("visit", "status", "free text", "record-keeping")  # who, with whom, when, where; its state; what
# someone wrote about the patient's visit; what Agenda keeps of it
SETTERS = ("caller", "desk", "patient", "import", "agenda")  # "agenda": Agenda itself, from what was asked
KEEP, EMPTY = "keep", "empty"  # what the anonymising does to a column ("Erasure and retention")


class Column(NamedTuple):
    """A column of the appointments table: what it holds, who may set it, where it goes, what an erasure does."""

    name: str  # in the table
    kind: str  # one of COLUMN_KINDS
    meaning: str
    set_by: tuple  # who may set it (SETTERS): "import" when import-appointments reads it from a file
    copy: str | None  # its key in the appointment's record, which the patient's copy carries; None: left out
    export: str | None  # its field in appointments.csv, which import-appointments reads back; None: not carried
    anonymise: str  # KEEP or EMPTY: what the anonymising does to it once the retention period ends
    shown: str = None  # the record's SQL for it over `a`, when not `a.name`


CALLER, DESK, PATIENT, IMPORT, AGENDA = SETTERS
APPOINTMENT_COLUMNS = (
    Column("id", "record-keeping", "the appointment's number, for ever", (AGENDA,), "id", None, KEEP),
    Column("patient_id", "visit", "the patient; the file carries them by NIF, name, surname and phone",
           (CALLER, DESK, IMPORT), "patient_id", "nif", KEEP),
    Column("doctor_id", "visit", "the doctor", (CALLER, DESK, IMPORT), "doctor_id", "doctor", KEEP),
    Column("speciality_id", "visit", "the doctor's speciality when booked", (AGENDA,), "speciality_id", None, KEEP),
    Column("insurance_id", "visit", "the insurance it is booked with; NULL: none given", (CALLER, DESK, IMPORT),
           "insurance_id", "insurance", KEEP),
    Column("center_id", "visit", "the center; NULL in an agenda without centers", (CALLER, DESK, PATIENT, IMPORT),
           "center_id", "center", KEEP),
    Column("date", "visit", "the ISO day", (CALLER, DESK, PATIENT, IMPORT), "date", "date", KEEP),
    Column("time", "visit", "the start, HH:MM", (CALLER, DESK, PATIENT, IMPORT), "start", "time", KEEP),
    Column("end_time", "visit", "the end of the patient's time, HH:MM: the start and the type's length; the file"
           " carries the minutes", (AGENDA, IMPORT), "end", "duration", KEEP),
    Column("reason", "free text", "why the patient comes, as told", (CALLER, DESK, IMPORT), "reason", "reason", EMPTY),
    Column("status", "status", "booked, confirmed, unanswered or cancelled, the caller's state",
           (CALLER, DESK, PATIENT, IMPORT, AGENDA), "status", "status", KEEP),
    Column("created_at", "record-keeping", "when it was booked (UTC)", (AGENDA,), "created_at", None, KEEP),
    Column("updated_at", "record-keeping", "when it last changed (UTC)", (AGENDA,), None, None, KEEP),
    Column("confirmed_at", "record-keeping", "when the patient confirmed it (UTC)", (AGENDA,), None, None, KEEP),
    Column("cancelled_at", "record-keeping", "when it was cancelled (UTC)", (AGENDA,), None, None, KEEP),
    Column("cancel_reason", "status", "why it was cancelled, in the channel's words or reception's",
           (DESK, AGENDA), None, None, KEEP),
    Column("booked_by", "record-keeping", "the source of its booking: api, desk:NAME, cli, link, import, web",
           (AGENDA,), "booked_by", None, KEEP),
    Column("attendance", "status", "reception's mark: arrived, seen, no_show; NULL: none", (DESK,), "attendance",
           None, KEEP),
    Column("note", "free text", "reception's administrative note on the visit, nothing clinical", (DESK,), "note",
           None, EMPTY),
    Column("arrived_at", "record-keeping", "when the patient was marked arrived (UTC)", (AGENDA,), "arrived_at",
           None, KEEP),
    Column("called_in_at", "record-keeping", "when reception said 'pasa a consulta' (UTC); only beside an arrival",
           (DESK,), "called_in_at", None, KEEP),
    Column("squeezed", "visit", "1: a sobrecita, squeezed in by reception", (DESK,), "squeezed", None, KEEP,
           "CASE WHEN a.squeezed THEN json('true') ELSE json('false') END"),
    Column("series_id", "visit", "the series it belongs to; NULL: none", (DESK,), "series_id", None, KEEP),
    Column("type_id", "visit", "its visit type; NULL: a doctor's plain slot", (CALLER, DESK, IMPORT), "type_id",
           "type", KEEP),
    Column("pause", "visit", "the minutes after it the doctor and its rooms stay busy", (AGENDA, IMPORT), "pause",
           "pause", KEEP),
    Column("busy_until", "visit", "the end of its pause, HH:MM; NULL: its end", (AGENDA,), "busy_until", None, KEEP,
           "coalesce(a.busy_until, a.end_time)"),
    Column("overlap_accepted", "visit", "1: reception booked it over the patient's other visit on purpose",
           (DESK,), "overlap_accepted", None, KEEP),
    Column("pending", "status", "a booking of the patients' page not yet a booking: email, until the patient confirms"
           " it by their link; reception, until reception matches who they are; NULL: none", (AGENDA,), "pending",
           None, KEEP),
    Column("pending_until", "record-keeping", "when a visit pending the patient's e-mail is released unconfirmed"
           " (UTC)", (AGENDA,), "pending_until", None, KEEP),
)
COLUMN_NAMES = tuple(column.name for column in APPOINTMENT_COLUMNS)
EXPORTED = tuple(column for column in APPOINTMENT_COLUMNS if column.export)
EMPTIED = tuple(column.name for column in APPOINTMENT_COLUMNS if column.anonymise == EMPTY)  # what was said

# An appointment that needs a call ("To call"): inside a closure, from its doctor's retirement on, or outside
# their hours, and the patient not come. Reception sees it marked and listed; the caller's lists leave it out.
TO_CALL = f"""(coalesce(a.attendance, '') NOT IN ('arrived', 'seen') AND (
    EXISTS (SELECT 1 FROM doctors rd WHERE rd.id = a.doctor_id AND rd.retired_from <= a.date)
    OR EXISTS (SELECT 1 FROM closures c WHERE {CLOSURE_COVERS}) OR {OUTSIDE_HOURS}))"""
# An appointment as the clinic reads it, written as JSON by SQLite so that a list is one statement: each column's
# `copy` (ids as numbers, the ISO date, start and end, where, its status and who booked it), then what is read beside.
APPOINTMENT_FIELDS = f"""json_object(
    {", ".join(f"'{column.copy}', {column.shown or 'a.' + column.name}" for column in APPOINTMENT_COLUMNS
               if column.copy)},
    'doctor_name', d.name, 'to_call', CASE WHEN {TO_CALL} THEN json('true') ELSE json('false') END,
    'type_name', (SELECT t.name FROM visit_types t WHERE t.id = a.type_id),
    'holds', (SELECT group_concat(r.name, ', ') FROM holds h JOIN resources r ON r.id = h.resource_id
              WHERE h.appointment_id = a.id AND h.live = 1),
    'series_place', CASE WHEN a.series_id IS NULL THEN NULL ELSE (SELECT count(*) FROM appointments s
        WHERE s.series_id = a.series_id AND (s.date < a.date OR (s.date = a.date AND s.time <= a.time))) END,
    'series_count', CASE WHEN a.series_id IS NULL THEN NULL ELSE (SELECT count FROM series WHERE id = a.series_id) END)"""
APPOINTMENT_TABLES = f"""
    FROM appointments a
    JOIN doctors d ON d.id = a.doctor_id
    JOIN live_patients p ON p.id = a.patient_id
    {GUARDIAN_JOIN}
"""


class Shape(NamedTuple):
    """How an appointment is written: `sql`, a json_object over `a` and its doctor `d`; `person`, who the
    patient is in the same words, {word: key of the one door's identity}."""
    sql: str
    person: dict

    def shown(self):
        """`sql` with who the patient is as its last members, written through the one door ("A patient's
        identity"): a query selecting it selects `a.patient_id, g.id` first and hands its rows to `noted`."""
        return f"{self.sql.rstrip()[:-1]}, {identity_fields(self.person)})"


APPOINTMENT_RECORD = Shape(APPOINTMENT_FIELDS, {"patient_name": "full_name", "nif": "shown_nif",
                                                "phone": "phone_e164", "guardian_name": "guardian_name"})
# The desk's page of one appointment: the record, where the patient's messages go (`recipient_of`) and their note.
APPOINTMENT_PAGE = Shape(APPOINTMENT_FIELDS, {**APPOINTMENT_RECORD.person, "email": "email", "messages": "messages",
                                              "patient_note": "note"})
# An appointment as the caller sees it ("Appointment objects"): ids are text; the date DD/MM/YYYY; patientName
# is name and surname, or whichever there is, or null; nif the patient's or their live guardian's; duration in
# minutes. SQLite writes a list of hundreds three times as fast as Python builds them.
CALLER_APPOINTMENT = Shape("""json_object(
    'appointmentId', CAST(a.id AS TEXT),
    'date', substr(a.date, 9, 2) || '/' || substr(a.date, 6, 2) || '/' || substr(a.date, 1, 4),
    'time', a.time, 'doctorId', a.doctor_id, 'doctorName', d.name, 'patientId', CAST(a.patient_id AS TEXT),
    'reason', a.reason, 'centerRef', a.center_id,
    'extraData', json_patch(json_object('status', a.status, 'specialityId', a.speciality_id,
                                        'insuranceId', a.insurance_id,
                                        'duration', (substr(a.end_time, 1, 2) * 60 + substr(a.end_time, 4, 2))
                                                    - (substr(a.time, 1, 2) * 60 + substr(a.time, 4, 2))),
                            CASE WHEN a.type_id IS NULL THEN '{}' ELSE json_object('visitTypeId', a.type_id) END))""",
                           {"nif": "shown_nif", "patientName": "full_name", "phone": "phone_e164"})

# What a cancelled appointment answers: reading it, changing it, cancelling it again ("Appointment objects").
READ_CANCELLED = ("APPOINTMENT_CANCELLED", "that appointment was cancelled")
CHANGE_CANCELLED = ("APPOINTMENT_PREVIOUSLY_CANCELLED", "that appointment was cancelled")
CANCEL_CANCELLED = ("APPOINTMENT_ALREADY_CANCELLED", "that appointment is already cancelled")


def shaped(clinic, rows, reader, kind):
    """The JSON texts of (patient_id, guardian_id, json) rows written with `Shape.shown`, the read noted for
    `reader` as `kind` ("A patient's identity")."""
    noted(clinic, rows, reader, kind)
    return [row[2] for row in rows]


def appointment_row(clinic, appointment_id, if_cancelled, columns="a.*"):
    """`columns` (of APPOINTMENT_TABLES) of a live appointment: 404 when there is none, `if_cancelled` (code,
    message) when it was cancelled. The one lookup of an appointment."""
    key = numeric_id(appointment_id)
    row = None if key is None else clinic.conn().execute(
        f"SELECT a.status AS lookup_status, {columns} {APPOINTMENT_TABLES} WHERE a.id = ?", (key,)).fetchone()
    if row is None:
        raise ClinicError("APPOINTMENT_NOT_FOUND", "no appointment with that appointmentId")
    if row["lookup_status"] == "cancelled":
        raise ClinicError(*if_cancelled)
    found = dict(row)
    del found["lookup_status"]
    return found


def read_appointment(clinic, appointment_id, reader=None, kind="appointment", shape=APPOINTMENT_RECORD):
    """One live appointment as a record, or as the JSON text of `shape`, who the patient is through the
    one door (the read noted for `reader`; a record without who, when no one reads it); a cancelled one
    is gone (410)."""
    if reader is None and shape is APPOINTMENT_RECORD:
        return json.loads(appointment_row(clinic, appointment_id, READ_CANCELLED, f"{shape.sql} AS json")["json"])
    row = appointment_row(clinic, appointment_id, READ_CANCELLED,
                          columns=f"a.patient_id, g.id AS guardian_id, {shape.shown()} AS json")
    (text,) = shaped(clinic, [(row["patient_id"], row["guardian_id"], row["json"])], reader, kind)
    return json.loads(text) if shape is APPOINTMENT_RECORD else text


def appointment_for_desk(clinic, appointment_id, reader):
    """One appointment, cancelled ones too (with when, why and by whom), and its history from the audit
    trail, oldest first: [{at, source, action}] ("Appointment records")."""
    found = with_cancelled(clinic, "a.id = ?", [numeric_id(appointment_id)], reader, "appointment",
                           shape=APPOINTMENT_PAGE)
    if not found:
        raise ClinicError("APPOINTMENT_NOT_FOUND", "no appointment with that appointmentId")
    found[0]["history"] = [dict(event) for event in clinic.conn().execute(
        "SELECT at, source, action FROM events WHERE entity = 'appointment' AND entity_id = ? ORDER BY id",
        (str(found[0]["id"]),))]
    return found[0]


def cancelled_of(clinic, patient_id, reader):
    """A patient's cancelled appointments, the latest first, with when and why."""
    return with_cancelled(clinic, "a.patient_id = ? AND a.status = 'cancelled'", [numeric_id(patient_id)], reader,
                          "patient", order="a.date DESC, a.time DESC")


def with_cancelled(clinic, where, params, reader, kind, order="a.date, a.time", shape=APPOINTMENT_RECORD):
    """Appointment records matching `where` (SQL over `a`), cancelled ones with when and why, who the patient
    is through the one door (the read noted for `reader` as `kind`)."""
    rows = clinic.conn().execute(
        f"SELECT a.patient_id, g.id, json_set({shape.shown()}, '$.cancelled_at', a.cancelled_at,"
        f" '$.cancel_reason', a.cancel_reason) {APPOINTMENT_TABLES} WHERE {where} ORDER BY {order}", params).fetchall()
    return [json.loads(text) for text in shaped(clinic, rows, reader, kind)]


def marks(values):
    return ",".join("?" * len(values))


# The named filters a list of live appointments takes: each, given its value, an SQL condition over `a` and its
# parameters. `to_call` keeps (True) or leaves out (False, the caller's lists) those to call; `pending` likewise
# those the patients' page holds unconfirmed ("Patients book themselves"); `covered_by` takes
# a closure's fields (first, last, doctor, center, start, end: CLOSURE_COVERS, the days bounding the index's range);
# `first_of_each_day` takes (center, first, last, n): each day's first n there by time.
FILTERS = {
    "ids": lambda ids: (f"a.id IN ({marks(ids)})", list(ids)),
    "days": lambda days: (f"a.date IN ({marks(days)})", list(days)),
    "since": lambda day: ("a.date >= ?", [day]),
    "doctor_id": lambda doctor_id: ("a.doctor_id = ?", [doctor_id]),
    "center_id": lambda center_id: ("a.center_id = ?", [center_id]),
    "patient_ids": lambda ids: (f"a.patient_id IN ({marks(ids)})", list(ids)),
    "to_call": lambda wanted: (TO_CALL if wanted else f"NOT {TO_CALL}", []),
    "pending": lambda wanted: ("a.pending IS NOT NULL" if wanted else "a.pending IS NULL", []),
    "covered_by": lambda fields: (
        "a.date BETWEEN ? AND ? AND EXISTS (SELECT 1 FROM (SELECT ? AS date_from, ? AS date_to, ? AS doctor_id,"
        f" ? AS center_id, ? AS start_time, ? AS end_time) c WHERE {CLOSURE_COVERS})", [*fields[:2], *fields]),
    "first_of_each_day": lambda asked: (
        """a.id IN (SELECT id FROM (SELECT x.id, row_number() OVER (PARTITION BY x.date ORDER BY x.time,
        x.doctor_id, x.id) AS n FROM appointments x JOIN live_patients lp ON lp.id = x.patient_id
        WHERE x.status != 'cancelled' AND x.center_id = ? AND x.date BETWEEN ? AND ?) WHERE n <= ?)""", list(asked)),
}


def live_appointments(clinic, reader=None, kind="day", shape=APPOINTMENT_RECORD, **filters):
    """The live appointments matching every named filter (FILTERS; a None value is no filter), sorted
    ("Lists"): records, or the JSON array's text of `shape`; who each patient is through the one door, the
    read noted for `reader` as `kind` (records without who, when no one reads them)."""
    clinic.require_center(filters.get("center_id"))
    where, params = ["a.status != 'cancelled'"], []
    for name, value in filters.items():
        if value is not None:
            condition, values = FILTERS[name](value)
            where.append(condition)
            params += values
    anonymous = reader is None and shape is APPOINTMENT_RECORD
    rows = clinic.conn().execute(
        f"SELECT a.patient_id, g.id, {shape.sql if anonymous else shape.shown()} AS json {APPOINTMENT_TABLES}"
        f" WHERE {' AND '.join(where)} ORDER BY a.date, a.time, a.doctor_id", params).fetchall()
    if anonymous:
        return [json.loads(row[2]) for row in rows]
    text = "[" + ",".join(shaped(clinic, rows, reader, kind)) + "]"
    return json.loads(text) if shape is APPOINTMENT_RECORD else text


def patient_appointments(clinic, *, nif=None, phone=None, day=None, center_id=None, shape=APPOINTMENT_RECORD,
                         reader, pending=None):
    """A patient's live appointments ("One route, two jobs"): found by NIF, else by phone;
    on `day`, else from today on (`pending`: False leaves the page's unconfirmed out, the caller's look-up); the
    patients found noted for `reader`."""
    clinic.require_center(center_id)
    nif, phone = normalise_nif(nif) if nif else None, parse_phone(phone) if phone else None
    patient_ids = []
    if nif is not None:
        patient_ids = [row[0] for row in clinic.conn().execute("SELECT id FROM live_patients WHERE nif = ?", (nif,))]
    if not patient_ids and phone is not None:
        patient_ids = [row[0] for row in clinic.conn().execute(
            "SELECT id FROM live_patients WHERE phone_e164 = ?", (phone,))]
    return live_appointments(clinic, reader, "search", shape, days=[day.isoformat()] if day else None,
                             since=None if day else clinic.today().isoformat(), patient_ids=patient_ids,
                             center_id=center_id, pending=pending)


def count_by_status(conn):
    """{status: how many appointments}, cancelled ones too."""
    return dict(conn.execute("SELECT status, count(*) FROM appointments GROUP BY status").fetchall())


def last_insurances(clinic, patient_ids):
    """{patient id: the insurance of their latest appointment that named one}, for these patients."""
    keys = sorted({key for key in map(numeric_id, patient_ids) if key is not None})
    return {row[0]: row[1] for row in clinic.conn().execute(
        "SELECT patient_id, insurance_id FROM (SELECT patient_id, insurance_id, row_number() OVER (PARTITION BY"
        " patient_id ORDER BY date DESC, time DESC, id DESC) AS n FROM appointments WHERE insurance_id IS NOT NULL"
        " AND patient_id IN (SELECT value FROM json_each(?))) WHERE n = 1", (json.dumps(keys),))}


def visits_told(conn, appointment_ids):
    """What a message to the patient may say of these appointments, in order: id, patient, date, times, status,
    the series, and the center's, doctor's and type's names. Never the reason."""
    return [dict(row) for row in conn.execute(
        "SELECT a.id, a.patient_id, a.date, a.time, a.end_time, a.status, a.series_id, a.squeezed, a.pending,"
        " a.pending_until,"
        " c.name AS center_name, c.address AS center_address, c.phone AS center_phone, d.name AS doctor_name,"
        " t.name AS type_name, t.bring FROM appointments a"
        " JOIN doctors d ON d.id = a.doctor_id LEFT JOIN centers c ON c.id = a.center_id"
        " LEFT JOIN visit_types t ON t.id = a.type_id WHERE a.id IN (SELECT value FROM json_each(?))"
        " ORDER BY a.date, a.time", (json.dumps([int(key) for key in appointment_ids]),))]


def series_coming(conn, series_id, today):
    """The ids of a series' live appointments from `today` on."""
    return [row[0] for row in conn.execute("SELECT id FROM appointments WHERE series_id = ? AND status != 'cancelled'"
                                           " AND date >= ? ORDER BY date, time", (series_id, today.isoformat()))]


# The only writes to the appointments table, each inside its caller's transaction; column names only from the list

def listed(columns):
    """`columns` ({column: value}), each a column of APPOINTMENT_COLUMNS (an SQL name is never input)."""
    unknown = sorted(set(columns) - set(COLUMN_NAMES))
    if unknown:
        raise ValueError(f"the appointments table has no column {', '.join(unknown)}")
    return columns


# The id a new appointment takes: above every one given, a removed one's too ("Patients book themselves").
LAST_ID = ("max((SELECT coalesce(max(id), 0) FROM appointments),"
           " coalesce((SELECT up_to FROM removed_ids WHERE name = 'appointments'), 0))")


def insert_appointment(conn, row, at):
    """A new appointment of `row` ({column: value}; one left out takes the table's default), booked at `at`;
    the row. The one door's ("One door for an appointment")."""
    row = {**listed(row), "created_at": utc_iso(at), "updated_at": utc_iso(at)}
    return written_row(conn, f"INSERT INTO appointments (id, {', '.join(row)}) VALUES ({LAST_ID} + 1, {marks(row)})",
                       tuple(row.values()))


def update_appointment(conn, appointment_id, changes, at):
    """The appointment's `changes` ({column: value}) written, changed at `at`; the row after."""
    changes = {**listed(changes), "updated_at": utc_iso(at)}
    return written_row(conn, f"UPDATE appointments SET {', '.join(f'{name} = ?' for name in changes)} WHERE id = ?",
                       (*changes.values(), appointment_id))


def set_place(conn, appointment_id, place, at, keep_confirmed=False, stays=False):
    """A move's write, the door's: the appointment at `place` ({column: value}: its doctor, day, times, center, type,
    mark), booked again, no longer confirmed, unless `keep_confirmed` (the patient's own move, "Moving") and it was;
    no longer marked unless it `stays` at its time (another type at the desk); the row after."""
    kept = keep_confirmed and conn.execute("SELECT status FROM appointments WHERE id = ?",
                                           (int(appointment_id),)).fetchone()[0] == "confirmed"
    unmarked = {} if stays else {"attendance": None, "arrived_at": None}
    booked = {} if kept else {"status": "booked", "confirmed_at": None}
    return update_appointment(conn, appointment_id, {**place, **unmarked, **booked}, at)


def set_details(conn, appointment_id, changes, at):
    """Reception's change of a booked visit's reason, insurance or note ({column: value}, "Details of a booked
    visit"); the row after."""
    if not set(changes) <= {"reason", "insurance_id", "note"}:
        raise ValueError(f"not a detail of a visit: {sorted(changes)}")
    return update_appointment(conn, appointment_id, changes, at)


def set_pending(conn, appointment_id, pending, at, until=None):
    """A booking of the patients' page held (`pending`: email, until `until`; reception) or made an ordinary
    booking (None); the row after ("Patients book themselves")."""
    return update_appointment(conn, appointment_id, {"pending": pending, "pending_until": until}, at)


def remove_appointment(conn, appointment_id):
    """A booking of the patients' page released unconfirmed: it never was a booking, so its row goes, and with it
    (the schema's trigger) its holds, links and messages. The only removal; refused for any other visit."""
    if conn.execute("DELETE FROM appointments WHERE id = ? AND pending = 'email'",
                    (int(appointment_id),)).rowcount != 1:
        raise ValueError(f"appointment {appointment_id} is not a pending web booking: it is never removed")


def set_status(conn, appointment_id, status, at, reason=None):
    """The caller's state of the appointment: confirmed (when, kept), unanswered, or cancelled (when, and
    `reason`); the row after."""
    changes = {"status": status, **({"confirmed_at": utc_iso(at)} if status == "confirmed" else {}),
               **({"cancelled_at": utc_iso(at), "cancel_reason": reason} if status == "cancelled" else {})}
    return update_appointment(conn, appointment_id, changes, at)


def set_attendance(conn, appointment_id, mark, arrived_at, at, called_in_at=None):
    """Reception's mark on the appointment ("Attendance"), when the patient arrived and when they were called in
    ("The waiting room"); the row after."""
    return update_appointment(conn, appointment_id, {"attendance": mark, "arrived_at": arrived_at,
                                                     "called_in_at": called_in_at}, at)


def anonymise_appointments(conn, patient_id):
    """At the anonymising, each column of the patient's appointments whose rule is EMPTY emptied; the appointments
    kept for the clinic's counts."""
    if EMPTIED:
        conn.execute(f"UPDATE appointments SET {', '.join(f'{name} = NULL' for name in EMPTIED)} WHERE patient_id = ?",
                     (patient_id,))


# What the import writes of the columns a file does not give (IMPORT not among who sets them), over the staged row
# `s` and its doctor `d`: ?1 the import's moment, ?2 the reason a cancelled one was cancelled for.
IMPORT_WRITES = {"speciality_id": "d.speciality_id", "created_at": "?1", "updated_at": "?1",
                 "confirmed_at": "CASE WHEN s.status = 'confirmed' THEN ?1 END",
                 "cancelled_at": "CASE WHEN s.status = 'cancelled' THEN ?1 END",
                 "cancel_reason": "CASE WHEN s.status = 'cancelled' THEN ?2 END", "booked_by": "'import'",
                 "pause": "coalesce(s.pause, 0)", "busy_until": "s.busy_until"}


def insert_staged_appointments(conn, table, at):
    """The import's rows staged in `table` (as `admit_staged` takes them, a column of each the file gives, under
    its name) inserted, booked by 'import' at `at`; cancelled ones as cancelled in the system they came from."""
    values = {**{column.name: f"s.{column.name}" for column in APPOINTMENT_COLUMNS if IMPORT in column.set_by},
              **IMPORT_WRITES}
    conn.execute(f"INSERT INTO appointments (id, {', '.join(values)}) SELECT {LAST_ID} + row_number() OVER (ORDER BY"
                 f" s.date, s.time, s.doctor_id), {', '.join(values.values())} FROM {table} s"
                 " JOIN doctors d ON d.id = s.doctor_id ORDER BY s.date, s.time, s.doctor_id",
                 (utc_iso(at), "cancelled in the system it came from"))


def set_patient(conn, appointment_id, patient_id, at):
    """Reception's match of a web visit ("Por verificar"): the appointment on the patient on file, no longer pending;
    the row after."""
    return update_appointment(conn, appointment_id, {"patient_id": int(patient_id), "pending": None,
                                                     "pending_until": None}, at)
