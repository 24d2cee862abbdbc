"""The patient's rights in the domain: erasure under the retention law, anonymisation once the period
ends, the patient's copy of their data, and rectification ("Erasure and retention", "A patient's copy")."""

import datetime as dt
import json

from ..values.refusals import ClinicError
from ..values.fields import numeric_id
from ..storage.events import record_event, utc_iso
from .patients import (anonymise_patient, block_patient, clear_inherited, ERASED, PATIENT_COLUMNS, patient_fields,
                       rectify_patient, typed_of)
from .access import KEEP_DAYS
from .links import forget_links
from .outbox import skip_unsent
from .identity import identity, opened
from .appointments import anonymise_appointments, APPOINTMENT_FIELDS, EMPTIED
from .changes import cancelled

# What identifies a patient, wherever a row or an event holds it; replaced when the period ends.
IDENTITY = (*ERASED, *EMPTIED)
ERASURE_REASON = "erasure requested"


def years_after(day, years):
    """The same day `years` later (29 February becomes 28 February)."""
    try:
        return day.replace(year=day.year + years)
    except ValueError:
        return day.replace(year=day.year + years, day=28)


def live_key(conn, patient_id):
    """The id of a patient not blocked; PATIENT_NOT_FOUND when there is none, or they are blocked."""
    key = numeric_id(patient_id)
    row = None if key is None else conn.execute("SELECT id FROM patients WHERE id = ? AND blocked_at IS NULL",
                                                (key,)).fetchone()
    if row is None:
        raise ClinicError("PATIENT_NOT_FOUND", "no patient with that patientId")
    return row["id"]


# Erasure: blocked first, anonymised when the retention period ends

def request_erasure(clinic, patient_id, source, reader):
    """Record an erasure request: the coming appointments cancelled, the patient blocked until the
    retention period ends (or anonymised now when it already has). What was done, as a dict, with the NIF
    to forward to the caller's platform (read by `reader` through the one door, before the block)."""
    at, now = clinic.clock(), clinic.clock().astimezone(clinic.tz)
    nif = identity(clinic, patient_id, reader, "change")["nif"]
    with clinic.db.transaction() as conn:
        row = {"id": live_key(conn, patient_id)}
        coming = coming_appointments(conn, row["id"], now)
        for appointment in coming:
            cancelled(clinic, conn, appointment, at, ERASURE_REASON, "appointment.cancelled", source, notice=False)
        until = erasable_from(conn, row["id"], now.date(), clinic.settings.retention_years)
        block_patient(conn, row["id"], at, until)
        forget_links(conn, row["id"])
        skip_unsent(conn, row["id"], at)
        conn.execute("UPDATE waitlist SET ended_at = ?, ended_why = 'erased' WHERE patient_id = ? AND ended_at IS NULL",
                     (utc_iso(at), row["id"]))
        forget_guardian(conn, row["id"], at, source)
        record_event(conn, at, source, "patient.erasure_requested", "patient", row["id"],
                     after={"erasableFrom": until.isoformat(), "cancelled": [a["id"] for a in coming]})
        anonymised = until <= now.date()
        if anonymised:
            anonymise(conn, row["id"], at, source)
    return {"patient_id": row["id"], "nif": nif, "cancelled": coming, "erasable_from": until,
            "anonymised": anonymised}


def forget_guardian(conn, guardian_id, at, source):
    """Inside an erasure: the guardian's phone, copied to their children when they were registered, leaves the
    children's rows, so that no answer or search reaches the erased through a child ("A patient's identity")."""
    for child in clear_inherited(conn, guardian_id):
        forget_links(conn, child, ("message", "stop"))  # they went to her address
        record_event(conn, at, source, "patient.guardian_erased", "patient", child,
                     after={"guardianId": guardian_id, "phoneCleared": True})


def erasure_preview(clinic, patient_id, reader):
    """What an erasure request would do, changing nothing: {patient (through the one door, the read noted for
    `reader`), patient_id, cancelled, erasable_from}."""
    now, conn = clinic.clock().astimezone(clinic.tz), clinic.conn()
    person = identity(clinic, live_key(conn, patient_id), reader, "preview")
    return {"patient": person, "patient_id": person["id"], "cancelled": coming_appointments(conn, person["id"], now),
            "erasable_from": erasable_from(conn, person["id"], now.date(), clinic.settings.retention_years)}


def coming_appointments(conn, patient_id, now):
    """The patient's live appointments from `now` (clinic time) on, as appointments rows."""
    today = now.date().isoformat()
    return [dict(a) for a in conn.execute(
        "SELECT * FROM appointments WHERE patient_id = ? AND status != 'cancelled' AND (date > ? OR"
        " (date = ? AND time >= ?)) ORDER BY date, time", (patient_id, today, today, f"{now:%H:%M}"))]


def erasable_from(conn, patient_id, today, years):
    """The day the retention period ends: `years` after the patient's last appointment that took
    place (Ley 41/2002 art. 17); today when none did (no clinical record to keep)."""
    last = conn.execute("SELECT max(date) FROM appointments WHERE patient_id = ? AND status != 'cancelled'"
                        " AND date <= ?", (patient_id, today.isoformat())).fetchone()[0]
    return today if last is None else max(today, years_after(dt.date.fromisoformat(last), years))


def anonymise(conn, patient_id, at, source):
    """Inside a transaction: replace who the patient is, in their row, their appointments' reasons, notes and
    every event about them (and their NIF and phone wherever a child's events hold them), keeping the
    appointments for the clinic's counts."""
    private = identifiers(conn, [patient_id])  # written over, never shown
    anonymise_patient(conn, patient_id, at)
    anonymise_appointments(conn, patient_id)
    conn.execute("UPDATE waitlist SET note = NULL WHERE patient_id = ?", (patient_id,))
    events = conn.execute(
        "SELECT id, before, after FROM events WHERE (entity = 'patient' AND entity_id = ?) OR (entity = 'appointment'"
        " AND entity_id IN (SELECT CAST(id AS TEXT) FROM appointments WHERE patient_id = ?))",
        (str(patient_id), patient_id)).fetchall()
    conn.executemany("UPDATE events SET before = ?, after = ? WHERE id = ?",
                     [(scrubbed(event["before"]), scrubbed(event["after"]), event["id"]) for event in events])
    children = conn.execute("SELECT id, before, after FROM events WHERE entity = 'patient' AND entity_id IN"
                            " (SELECT CAST(id AS TEXT) FROM patients WHERE guardian_id = ?)", (patient_id,)).fetchall()
    conn.executemany("UPDATE events SET before = ?, after = ? WHERE id = ?",
                     [(scrubbed(event["before"], private), scrubbed(event["after"], private), event["id"])
                      for event in children])
    record_event(conn, at, source, "patient.anonymised", "patient", patient_id)


def identifiers(conn, patient_ids):
    """The NIFs and phones of these patients, as stored: what no line about anyone else may carry of them."""
    marks = ",".join("?" * len(patient_ids))
    return {value for row in conn.execute(f"SELECT nif, phone, phone_e164 FROM patients WHERE id IN ({marks})",
                                          list(patient_ids)) for value in row if value}


def scrubbed(stored, found=None):
    """An event's stored JSON with every identifying field emptied; with `found`, only the values in it."""
    if stored is None:
        return None
    values = json.loads(stored)
    if isinstance(values, dict) and found is None:
        values.update({key: None for key in IDENTITY if key in values})
    elif isinstance(values, dict):
        values.update({key: None for key, value in values.items() if isinstance(value, str) and value in found})
    return json.dumps(values, ensure_ascii=False)


def retention_run(clinic, source):
    """Anonymise every blocked patient whose period has ended, and remove access records older than
    two years: {anonymised: [ids], access_removed: N, waiting: N, next: date or None}."""
    at, today = clinic.clock(), clinic.today()
    with clinic.db.transaction() as conn:
        due = [row[0] for row in conn.execute(
            "SELECT id FROM patients WHERE blocked_at IS NOT NULL AND anonymised_at IS NULL AND erasable_from <= ?"
            " ORDER BY id", (today.isoformat(),))]
        for patient_id in due:
            anonymise(conn, patient_id, at, source)
        waiting, upcoming = conn.execute(
            "SELECT count(*), min(erasable_from) FROM patients WHERE blocked_at IS NOT NULL AND anonymised_at IS NULL"
        ).fetchone()
    removed = clinic.access.forget_before(at - dt.timedelta(days=KEEP_DAYS))
    return {"anonymised": due, "access_removed": removed, "waiting": waiting,
            "next": dt.date.fromisoformat(upcoming) if upcoming else None}


# The patient's copy (GDPR art. 15 and 20)

def patient_copy(clinic, patient_id, reader, why=None):
    """Everything Agenda holds about one patient: details, every appointment (cancelled ones too), the
    change history and the record of reads, through the one door (a blocked patient only with `why`)."""
    conn, person = clinic.conn(), opened(clinic, patient_id, reader, why)
    appointments = [json.loads(text) for (text,) in conn.execute(
        f"SELECT {APPOINTMENT_FIELDS} FROM appointments a JOIN doctors d ON d.id = a.doctor_id"
        " WHERE a.patient_id = ? ORDER BY a.date, a.time", (person["id"],))]
    private = erased_guardian(conn, person["id"])
    history = [{"at": event["at"], "source": event["source"], "action": event["action"], "entity": event["entity"],
                "id": event["entity_id"], "before": json.loads(scrubbed(event["before"], private) or "null"),
                "after": json.loads(scrubbed(event["after"], private) or "null")} for event in conn.execute(
        "SELECT * FROM events WHERE (entity = 'patient' AND entity_id = ?) OR (entity = 'appointment' AND entity_id"
        " IN (SELECT CAST(id AS TEXT) FROM appointments WHERE patient_id = ?)) ORDER BY id",
        (str(person["id"]), person["id"]))]
    waiting = [dict(entry) for entry in conn.execute("SELECT * FROM waitlist WHERE patient_id = ? ORDER BY id",
                                                     (person["id"],))]
    accesses = [{**read, "first": utc_iso(read["first"]), "last": utc_iso(read["last"])}
                for read in clinic.access.of_patient(person["id"])]
    return {"generatedAt": utc_iso(clinic.clock()), "patient": patient_details(person), "appointments": appointments,
            "waitingList": waiting, "history": history, "accesses": accesses}


def erased_guardian(conn, patient_id):
    """The NIF and phone of the patient's guardian when the guardian was erased (none else): what the
    child's own history must not show of them."""
    row = conn.execute("SELECT g.id FROM patients p JOIN patients g ON g.id = p.guardian_id WHERE p.id = ?"
                       " AND g.blocked_at IS NOT NULL", (patient_id,)).fetchone()
    return identifiers(conn, [row[0]]) if row else set()


def patient_details(person):
    """The copy's details: each column the copy carries (PATIENT_COLUMNS' `copy`), a guardian by name too."""
    details = {}
    for column in PATIENT_COLUMNS:
        if column.name == "guardian_id":
            details["guardian"] = person["guardian_name"]
        if column.copy:
            details[column.copy] = person[column.key]
    return details


# Rectification (GDPR art. 16)

def rectify(clinic, patient_id, changes, source):
    """Correct a patient's details: `changes` maps some of patients.RECTIFIABLE to new texts ("" empties an
    optional one), checked as a new patient is; the row before and after in the audit trail."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        key = live_key(conn, patient_id)
        row = conn.execute("SELECT * FROM patients WHERE id = ?", (key,)).fetchone()  # written, not shown
        patient = patient_fields({**typed_of(row), **{key: value or None for key, value in changes.items()}},
                                 clinic.today(), guarded=row["guardian_id"] is not None)
        if conn.execute("SELECT 1 FROM live_patients WHERE nif = ? AND id != ?", (patient["nif"], row["id"])).fetchone():
            raise ClinicError("PATIENT_ALREADY_EXISTS", "another patient has that nif", field="nif")
        after, followed = rectify_patient(conn, row, patient, at, source)
        if after["email"] != row["email"]:  # the messages' links went to the old address: they stop
            forget_links(conn, row["id"], ("message", "stop"))
        record_event(conn, at, source, "patient.rectified", "patient", row["id"], before=dict(row), after=after)
        for child, columns in followed.items():  # her children's, which followed hers
            if "email" in columns:
                forget_links(conn, child, ("message", "stop"))
            record_event(conn, at, source, "patient.guardian_rectified", "patient", child,
                         after={"guardianId": row["id"], "followed": columns})
    return after
