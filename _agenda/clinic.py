"""The clinic's operations (`Clinic`): patients, booking, moving, cancelling, confirming, reminder
cycles, closures and doctors. No HTTP here."""

import datetime as dt
import json
import logging
from typing import NamedTuple

from .settings import clinic_zone, Settings
from .refusals import ClinicError, invalid
from .fields import fold, normalise_nif, numeric_id, parse_phone
from .access import AccessRecord
from .identity import identities, identity
from .events import record_event, utc_iso, written_row
from .patients import INHERITED, insert_patient, patient_fields
from .slots import booking_window, CLOSURE_COVERS, day_states, free_slots, FREE, read_schedule
from .visits import free_starts, the_visit, types_offered, visit_type
from .booking import admit, book_visit, brought_forward, channel_of, move_channel, visit_of, Visit

log = logging.getLogger("agenda")
SEARCH_WORDS, SEARCH_CHARS = 10, 200  # the most a patient search takes ("Nothing stalls the caller")


# An appointment as the clinic reads it ("Appointment records"), written as JSON by SQLite so that a
# list is one statement: ids as numbers, the ISO date, start and end, where, its status and who booked
# it. Who the patient is comes through the one door ("A patient's identity"), in each shape's words.
# An appointment that needs a call ("To call"): inside a closure or from its doctor's retirement on,
# and the patient not come. Reception sees it marked and listed; the caller's lists leave it out.
TO_CALL = f"""(coalesce(a.attendance, '') NOT IN ('arrived', 'seen') AND (
    EXISTS (SELECT 1 FROM doctors rd WHERE rd.id = a.doctor_id AND rd.retired_from <= a.date)
    OR EXISTS (SELECT 1 FROM closures c WHERE {CLOSURE_COVERS})))"""
APPOINTMENT_FIELDS = f"""json_object(
    'id', a.id, 'date', a.date, 'start', a.time, 'end', a.end_time, 'status', a.status, 'reason', a.reason,
    'doctor_id', a.doctor_id, 'doctor_name', d.name, 'speciality_id', a.speciality_id, 'center_id', a.center_id,
    'insurance_id', a.insurance_id, 'patient_id', a.patient_id, 'booked_by', a.booked_by, 'attendance', a.attendance,
    'arrived_at', a.arrived_at, 'to_call', CASE WHEN {TO_CALL} THEN json('true') ELSE json('false') END,
    'created_at', a.created_at, 'squeezed', CASE WHEN a.squeezed THEN json('true') ELSE json('false') END,
    'series_id', a.series_id, 'type_id', a.type_id,
    'type_name', (SELECT t.name FROM visit_types t WHERE t.id = a.type_id), 'pause', a.pause,
    'busy_until', coalesce(a.busy_until, a.end_time), 'overlap_accepted', a.overlap_accepted,
    'holds', (SELECT group_concat(r.name, ', ') FROM holds h JOIN resources r ON r.id = h.resource_id
              WHERE h.appointment_id = a.id AND h.live = 1),
    'series_place', CASE WHEN a.series_id IS NULL THEN NULL ELSE (SELECT count(*) FROM appointments s
        WHERE s.series_id = a.series_id AND (s.date < a.date OR (s.date = a.date AND s.time <= a.time))) END,
    'series_count', CASE WHEN a.series_id IS NULL THEN NULL ELSE (SELECT count FROM series WHERE id = a.series_id) END)"""


class Shape(NamedTuple):
    """How an appointment is written: `sql`, a json_object over `a` and its doctor `d`; `person`, who the
    patient is (an identity from the one door) in the same words."""
    sql: str
    person: object


APPOINTMENT_RECORD = Shape(APPOINTMENT_FIELDS, lambda person: {
    "patient_name": person["full_name"], "nif": person["shown_nif"], "phone": person["phone_e164"],
    "guardian_name": person["guardian_name"]})
APPOINTMENT_TABLES = """
    FROM appointments a
    JOIN doctors d ON d.id = a.doctor_id
    JOIN live_patients p ON p.id = a.patient_id
"""


def shaped(clinic, rows, shape, reader, kind):
    """The JSON texts of (patient_id, json) rows with who each patient is, in `shape`'s words, through the
    one door: the read noted for `reader` as `kind`; a row of a patient not shown is left out."""
    people = identities(clinic, [row[0] for row in rows], reader, kind)
    words = {key: json.dumps(shape.person(person), ensure_ascii=False)[1:] for key, person in people.items()}
    return [text[:-1] + "," + words[patient_id] for patient_id, text in rows if patient_id in words]


# What a cancelled appointment answers: reading it, changing it, cancelling it again ("Appointment objects").
READ_CANCELLED = ("APPOINTMENT_CANCELLED", "that appointment was cancelled")


CHANGE_CANCELLED = ("APPOINTMENT_PREVIOUSLY_CANCELLED", "that appointment was cancelled")


CANCEL_CANCELLED = ("APPOINTMENT_ALREADY_CANCELLED", "that appointment is already cancelled")


class Clinic:
    """The clinic's operations over one database, its settings and a clock; no HTTP here.

    Reads return plain data; every change is one BEGIN IMMEDIATE transaction recording an
    event from `source` ("api", "cli", ...); refusals raise ClinicError ("One domain layer").
    """

    def __init__(self, db, settings=None, clock=None):
        self.db = db
        self.settings = settings or Settings()
        self.tz = clinic_zone(self.settings.tz)
        self.clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))
        self.access = AccessRecord(db, self.clock)

    def conn(self):
        return self.db.connection()

    def today(self):
        return self.clock().astimezone(self.tz).date()

    def window(self, channel="caller"):
        """When a channel may book now ("Each channel's rules"): the caller's notice and horizon, or
        the desk's (its CLI twins' too), where a cell already begun takes a walk-in until its end."""
        if channel == "desk":
            return booking_window(self.clock(), self.tz, self.settings.desk_min_notice_minutes,
                                  horizon_months=self.settings.desk_horizon_months, walk_in=True)
        return booking_window(self.clock(), self.tz, self.settings.min_notice_minutes, self.settings.horizon_days)

    # Look-ups: each id the caller names, or its 404

    def require_center(self, center_id):
        if center_id is not None and self.conn().execute(
                "SELECT 1 FROM centers WHERE id = ?", (center_id,)).fetchone() is None:
            raise ClinicError("CENTER_NOT_FOUND", "no center with that centerId")
        return center_id

    def require_doctor(self, doctor_id):
        row = self.conn().execute("SELECT id, name, speciality_id FROM doctors WHERE id = ?",
                                  (doctor_id,)).fetchone()
        if row is None:
            raise ClinicError("DOCTOR_NOT_FOUND", "no doctor with that doctorId")
        return row

    def require_speciality(self, speciality_id):
        if self.conn().execute("SELECT 1 FROM specialities WHERE id = ?", (speciality_id,)).fetchone() is None:
            raise ClinicError("SPECIALITY_NOT_FOUND", "no speciality with that specialityId")

    def require_insurance(self, insurance_id):
        if self.conn().execute("SELECT 1 FROM insurances WHERE id = ?", (insurance_id,)).fetchone() is None:
            raise ClinicError("INSURANCE_NOT_FOUND", "no insurance with that insuranceId")

    def insurance_lists(self, doctor_ids):
        """{(doctor, center): {insurance ids}}: the only insurances each doctor takes at each center
        ("Catalogs"); a doctor and center absent from it take every insurance."""
        lists = {}
        for row in self.conn().execute(
                f"SELECT doctor_id, center_id, insurance_id FROM doctor_insurances WHERE doctor_id IN"
                f" ({','.join('?' * len(doctor_ids))})", list(doctor_ids)):
            lists.setdefault((row["doctor_id"], row["center_id"]), set()).add(row["insurance_id"])
        return lists

    def last_insurances(self, patient_ids):
        """{patient id: the insurance of their latest appointment that named one}, for these patients."""
        keys = sorted({key for key in map(numeric_id, patient_ids) if key is not None})
        return {row[0]: row[1] for row in self.conn().execute(
            "SELECT patient_id, insurance_id FROM (SELECT patient_id, insurance_id, row_number() OVER (PARTITION BY"
            " patient_id ORDER BY date DESC, time DESC, id DESC) AS n FROM appointments WHERE insurance_id IS NOT NULL"
            " AND patient_id IN (SELECT value FROM json_each(?))) WHERE n = 1", (json.dumps(keys),))}

    def appointment_row(self, appointment_id, if_cancelled, columns="a.*"):
        """`columns` (of APPOINTMENT_TABLES) of a live appointment: 404 when there is none,
        `if_cancelled` (code, message) when it was cancelled. The one lookup of an appointment."""
        key = numeric_id(appointment_id)
        row = None if key is None else self.conn().execute(
            f"SELECT a.status AS lookup_status, {columns} {APPOINTMENT_TABLES} WHERE a.id = ?", (key,)).fetchone()
        if row is None:
            raise ClinicError("APPOINTMENT_NOT_FOUND", "no appointment with that appointmentId")
        if row["lookup_status"] == "cancelled":
            raise ClinicError(*if_cancelled)
        found = dict(row)
        del found["lookup_status"]
        return found

    def day_slots(self, day, center_id=None, channel="desk"):
        """Every slot of the doctors who work at this center (or anywhere) on `day`, with its state for
        the channel: [(schedule row with the doctor's name, time, end, (state, detail))]."""
        doctors = self.conn().execute("SELECT id, name, speciality_id FROM doctors").fetchall()
        window, names = self.window(channel), {row["id"]: row for row in doctors}
        schedule = read_schedule(self.conn(), list(names), day, day, center_id)
        found = []
        for row, grid in schedule.grids.get(day.weekday(), ()):
            states = day_states(window, row, grid, day, schedule.closures, schedule.busy.get((row["doctor_id"],
                                                                                             day.isoformat())))
            doctor = {**dict(row), "name": names[row["doctor_id"]]["name"],
                      "speciality_id": names[row["doctor_id"]]["speciality_id"]}
            found += [(doctor, time_text, end_text, states.get(time_text, FREE))
                      for time_text, end_text, _ in grid.slots]
        return found

    # Catalogs and patients

    def centers(self):
        """The clinic's centers: id and name, by id."""
        return [dict(row) for row in self.conn().execute("SELECT id, name FROM centers ORDER BY id")]

    def catalogs(self):
        """The clinic's catalogs ("Catalogs"): centers, specialities and insurances ({id, name}), and each
        doctor with the centers they work at and, by center, the only insurances they take there (none: all)."""
        conn = self.conn()
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

    def find_patient(self, nif_text, reader):
        """The patient with this NIF, through the one door: the read noted for `reader` ("A patient's identity")."""
        row = self.conn().execute("SELECT id FROM live_patients WHERE nif = ?", (normalise_nif(nif_text),)).fetchone()
        if row is None:
            raise ClinicError("PATIENT_NOT_FOUND", "no patient with that nif")
        return identity(self, row["id"], reader, "patient")

    def register_patient(self, fields, source="api"):
        """A new patient from name, surname, birthDate, nif, phone texts; its id. A known NIF is a 409. At the
        desk, a guardianNif names a guardian, and a child under 14 under them needs no NIF of their own."""
        guardian_nif = fields.get("guardianNif") if channel_of(source) == "desk" else None
        patient = patient_fields(fields, self.today(), guarded=bool(guardian_nif))
        at = self.clock()
        with self.db.transaction() as conn:
            existing = patient["nif"] and conn.execute("SELECT id FROM live_patients WHERE nif = ?",
                                                       (patient["nif"],)).fetchone()
            if existing:
                raise ClinicError("PATIENT_ALREADY_EXISTS", "a patient with that nif exists", field="nif",
                                  patientId=str(existing["id"]))
            if guardian_nif:
                guardian = conn.execute(f"SELECT id, {', '.join(INHERITED)} FROM live_patients WHERE nif = ?",
                                        (self.quietly(normalise_nif, guardian_nif),)).fetchone()
                if guardian is None:
                    raise invalid("no patient has the guardian's nif", "guardian", "guardianNif")
                patient.update(guardian_id=guardian["id"],
                               **{name: patient[name] or guardian[name] for name in INHERITED})
            row = insert_patient(conn, patient, at)
            record_event(conn, at, source, "patient.created", "patient", row["id"], after=row)
        return str(row["id"])

    # Slots

    def availability(self, *, doctor_id=None, speciality_id=None, center_id=None, insurance_id=None,
                     first=None, last=None, channel="caller"):
        """The free slots ("Availability") of a doctor or a speciality, from `first` (today) to
        `last` (13 days on), within the channel's horizon."""
        if doctor_id is None and speciality_id is None:
            raise invalid("doctorId or specialityId is required", "doctor_or_speciality")
        self.require_center(center_id)
        first = first or self.today()
        if last is not None and last < first:
            raise invalid("endDate is before startDate", "last_day", "endDate")
        window = self.window(channel)
        if first > window.last_day:  # nothing to offer; also keeps date arithmetic far from year 9999
            return []
        last = min(last or first + dt.timedelta(days=13), window.last_day)
        kind = visit_type(self.conn(), speciality_id) if speciality_id is not None else None
        doctors = self.offering(doctor_id, speciality_id, kind)
        offered = types_offered(self.conn(), [d["id"] for d in doctors]) if doctors else {}
        if kind is None and not offered:  # no types here: every doctor's visit is one slot of their grid
            slots = free_slots(self.conn(), doctors, first, last, window=window, center_id=center_id)
        else:
            slots = free_starts(self.conn(), doctors, first, last, window=window, center_id=center_id, typed=bool(kind),
                                visit_of=lambda doctor, row: self.visit_at(offered, doctor, row, kind))
        if insurance_id is None:
            return slots
        self.require_insurance(insurance_id)
        lists = self.insurance_lists({slot.doctor_id for slot in slots})
        return [slot for slot in slots if insurance_id in lists.get((slot.doctor_id, slot.center_id), {insurance_id})]

    def offering(self, doctor_id, speciality_id, kind):
        """The doctors a request for free slots asks about: the doctor (of the area or offering the type
        asked, if one is), else every doctor of the area, or every doctor offering the type."""
        if doctor_id is not None:
            doctors = [self.require_doctor(doctor_id)]
            if kind is not None:
                return [d for d in doctors if self.conn().execute(
                    "SELECT 1 FROM doctor_types WHERE doctor_id = ? AND type_id = ?", (d["id"], kind.id)).fetchone()]
            if speciality_id is not None:
                self.require_speciality(speciality_id)
                return [d for d in doctors if d["speciality_id"] == speciality_id]
            return doctors
        if kind is not None:
            return self.conn().execute("SELECT DISTINCT d.id, d.name, d.speciality_id FROM doctors d JOIN doctor_types o"
                                       " ON o.doctor_id = d.id WHERE o.type_id = ? ORDER BY d.id", (kind.id,)).fetchall()
        self.require_speciality(speciality_id)
        return self.conn().execute("SELECT id, name, speciality_id FROM doctors WHERE speciality_id = ?",
                                   (speciality_id,)).fetchall()

    @staticmethod
    def visit_at(offered, doctor, row, kind):
        """The visit a doctor's free starts are for at a schedule row: the type asked, where the doctor offers it
        there (else none); or the doctor's default there ("Visit types")."""
        types = offered.get((doctor["id"], row["center_id"]), [])
        if kind is not None:
            return kind if kind in types else None
        return the_visit(offered, doctor, row["center_id"], row["slot_minutes"])

    def types_at(self, doctor_id, center_id):
        """[VisitType] a doctor offers at a center, the first their default; [] for a doctor without types there."""
        return types_offered(self.conn(), [doctor_id]).get((doctor_id, center_id), [])

    def is_visit_type(self, key):
        """Whether `key` names a visit type (not an area)."""
        return self.conn().execute("SELECT 1 FROM visit_types WHERE id = ?", (key,)).fetchone() is not None

    # Appointments: reading

    def appointment(self, appointment_id, reader=None, kind="appointment", shape=APPOINTMENT_RECORD):
        """One live appointment as a record, or as the JSON text of `shape`, who the patient is through the
        one door (the read noted for `reader`; a record without who, when no one reads it); a cancelled one
        is gone (410)."""
        row = self.appointment_row(appointment_id, READ_CANCELLED, columns=f"a.patient_id, {shape.sql} AS json")
        if reader is None and shape is APPOINTMENT_RECORD:
            return json.loads(row["json"])
        text = shaped(self, [(row["patient_id"], row["json"])], shape, reader, kind)
        if not text:
            raise ClinicError("APPOINTMENT_NOT_FOUND", "no appointment with that appointmentId")
        return json.loads(text[0]) if shape is APPOINTMENT_RECORD else text[0]

    def appointment_for_desk(self, appointment_id, reader):
        """One appointment, cancelled ones too (with when, why and by whom), and its history from the audit
        trail, oldest first: [{at, source, action}] ("Appointment records")."""
        found = self.records("a.id = ?", [numeric_id(appointment_id)], reader, "appointment", cancelled=True)
        if not found:
            raise ClinicError("APPOINTMENT_NOT_FOUND", "no appointment with that appointmentId")
        found[0]["history"] = [dict(event) for event in self.conn().execute(
            "SELECT at, source, action FROM events WHERE entity = 'appointment' AND entity_id = ? ORDER BY id",
            (str(found[0]["id"]),))]
        return found[0]

    def cancelled_of(self, patient_id, reader):
        """A patient's cancelled appointments, the latest first, with when and why."""
        return self.records("a.patient_id = ? AND a.status = 'cancelled'", [numeric_id(patient_id)], reader,
                            "patient", cancelled=True, order="a.date DESC, a.time DESC")

    def records(self, where, params, reader, kind, *, cancelled=False, order="a.date, a.time, a.doctor_id"):
        """Appointment records matching `where` (SQL over `a`), with when and why for cancelled ones (included
        when asked), who the patient is through the one door (the read noted for `reader` as `kind`)."""
        rows = self.conn().execute(
            f"SELECT a.patient_id, json_set({APPOINTMENT_FIELDS}, '$.cancelled_at', a.cancelled_at, '$.cancel_reason',"
            f" a.cancel_reason) {APPOINTMENT_TABLES} WHERE {where}{'' if cancelled else ' AND a.status != ?'}"
            f" ORDER BY {order}", [*params] if cancelled else [*params, "cancelled"]).fetchall()
        return [json.loads(text) for text in shaped(self, rows, APPOINTMENT_RECORD, reader, kind)]

    def appointments(self, where, params, reader=None, kind="day", center_id=None, shape=APPOINTMENT_RECORD,
                     for_caller=False):
        """The live appointments matching `where` (SQL over `a`), sorted ("Lists"): records, or the JSON
        array's text of `shape`; who each patient is through the one door, the read noted for `reader` as
        `kind` (records without who, when no one reads them); `for_caller` leaves out those to call."""
        self.require_center(center_id)
        if for_caller:
            where = f"{where} AND NOT {TO_CALL}"
        if center_id is not None:
            where, params = where + " AND a.center_id = ?", [*params, center_id]
        rows = self.conn().execute(
            f"SELECT a.patient_id, {shape.sql} AS json {APPOINTMENT_TABLES} WHERE a.status != 'cancelled' AND {where}"
            " ORDER BY a.date, a.time, a.doctor_id", params).fetchall()
        if reader is None and shape is APPOINTMENT_RECORD:
            return [json.loads(row[1]) for row in rows]
        text = "[" + ",".join(shaped(self, rows, shape, reader, kind)) + "]"
        return json.loads(text) if shape is APPOINTMENT_RECORD else text

    def appointments_on(self, days, reader, center_id=None, shape=APPOINTMENT_RECORD, for_caller=False):
        """The live appointments of these ISO days ("Lists"), but those to call when they are `for_caller`;
        the patients shown noted for `reader`."""
        return self.appointments(f"a.date IN ({','.join('?' * len(days))})", days, reader, "day", center_id, shape,
                                 for_caller)

    def patient_appointments(self, *, nif=None, phone=None, day=None, center_id=None, shape=APPOINTMENT_RECORD,
                             reader):
        """A patient's live appointments ("One route, two jobs"): found by NIF, else by phone;
        on `day`, else from today on; the patients found noted for `reader`."""
        self.require_center(center_id)
        nif, phone = normalise_nif(nif) if nif else None, parse_phone(phone) if phone else None
        patient_ids = []
        if nif is not None:
            patient_ids = [row[0] for row in self.conn().execute("SELECT id FROM live_patients WHERE nif = ?", (nif,))]
        if not patient_ids and phone is not None:
            patient_ids = [row[0] for row in self.conn().execute(
                "SELECT id FROM live_patients WHERE phone_e164 = ?", (phone,))]
        where, params = ("a.date = ?", [day.isoformat()]) if day else ("a.date >= ?", [self.today().isoformat()])
        where += f" AND a.patient_id IN ({','.join('?' * len(patient_ids))})"
        return self.appointments(where, [*params, *patient_ids], reader, "search", center_id, shape)

    # Appointments: changing

    def book(self, *, day, time_text, doctor_id, patient_id, speciality_id=None, insurance_id=None,
             center_id=None, reason=None, waitlist_id=None, accept_overlap=False, source="api"):
        """A new appointment's id ("Booking"), through the one door ("One door for an appointment"): of the visit
        type asked (`speciality_id`: a type's id, or an area's for the doctor's default); a retry of the same
        booking answers the same id; with `waitlist_id` (the desk) that patient's entry ends with it
        (`book_waiting`); with `accept_overlap` (the desk) booked over the same patient's other visit on purpose."""
        visit = Visit(patient_id, doctor_id, speciality_id, center_id, insurance_id=insurance_id, reason=reason,
                      accept_overlap=accept_overlap)
        if waitlist_id:
            return self.book_waiting(visit, day, time_text, waitlist_id, source)
        return book_visit(self, visit, day, time_text, channel_of(source), source)

    def book_waiting(self, visit, day, time_text, waitlist_id, source):
        """A waiting patient booked from their entry, in one transaction that ends it: the later appointment the
        entry would bring forward moved here (its id kept), else a new one ("Waiting list"). Its id."""
        at = self.clock()
        with self.db.transaction() as conn:
            later = brought_forward(conn, waitlist_id, numeric_id(visit.patient_id))
            if later is None:
                return admit(self, conn, visit, day, time_text, "waitlist", at, source, waitlist_id=waitlist_id)
            return self.moved(conn, later, day, time_text, visit.doctor_id, visit.center_id, at, source,
                              visit.accept_overlap, channel="waitlist move", waitlist_id=waitlist_id)

    def move(self, appointment_id, *, day, time_text, doctor_id=None, center_id=None, source="api",
             accept_overlap=False):
        """The appointment to another free slot ("Moving"): of its doctor and center, or at the desk of another
        doctor of the same speciality or another center; its own type, length and mark kept; no longer confirmed;
        over the patient's other visit only when reception accepts it ("One patient, one place")."""
        at = self.clock()
        with self.db.transaction() as conn:
            before = self.appointment_row(appointment_id, CHANGE_CANCELLED)
            return self.moved(conn, before, day, time_text, doctor_id, center_id, at, source, accept_overlap)

    def moved(self, conn, before, day, time_text, doctor_id, center_id, at, source, accept_overlap=False,
              channel=None, waitlist_id=None):
        """Inside a transaction: the appointment row `before` moved through the door by `channel` (the move's own,
        else `move_channel`); what only a move asks asked first. Its id."""
        self.refuse_attended(before, source)
        doctor = self.require_doctor(doctor_id or before["doctor_id"])
        if doctor["speciality_id"] != before["speciality_id"] and doctor["id"] != before["doctor_id"]:
            raise invalid("the new doctor is of another speciality", "speciality", "doctorId")
        same_doctor = doctor["id"] == before["doctor_id"]
        kind = visit_type(conn, before["type_id"]) if before["type_id"] else None
        visit = visit_of(before, kind.needs if kind else (), doctor_id=doctor["id"],
                         center_id=center_id or (before["center_id"] if same_doctor else None),
                         accept_overlap=accept_overlap)
        return admit(self, conn, visit, day, time_text, channel or move_channel(source, visit), at, source,
                     moving=before, waitlist_id=waitlist_id)

    @staticmethod
    def refuse_attended(appointment, source):
        """The caller may not move, cancel or decline an appointment the patient came to ("Attendance")."""
        if source == "api" and appointment["attendance"] in ("arrived", "seen"):
            raise ClinicError("APPOINTMENT_ATTENDED", "the patient has arrived for that appointment or been seen: "
                              "the clinic's reception changes it now")

    def cancel(self, appointment_id, reason="cancelled by the caller", source="api"):
        """Cancel a live appointment; its slot is free again. Nothing is deleted ("Storage")."""
        at = self.clock()
        with self.db.transaction() as conn:
            before = self.appointment_row(appointment_id, CANCEL_CANCELLED)
            self.refuse_attended(before, source)
            self.cancelled(conn, before, at, reason, "appointment.cancelled", source)

    def cancelled(self, conn, before, at, reason, action, source):
        """Inside a transaction: mark `before` cancelled, with its event."""
        after = written_row(conn, "UPDATE appointments SET status = 'cancelled', cancelled_at = ?, cancel_reason = ?,"
                            " updated_at = ? WHERE id = ?", (utc_iso(at), reason, utc_iso(at), before["id"]))
        record_event(conn, at, source, action, "appointment", before["id"], before=before, after=after)

    def confirm(self, appointment_id, confirmed, source="api"):
        """The patient's answer to a reminder ("Confirming"): 'confirmed', 'already_confirmed', or,
        when they will not come, 'cancelled' with the slot freed."""
        at = self.clock()
        with self.db.transaction() as conn:
            before = self.appointment_row(appointment_id, CHANGE_CANCELLED)
            if not confirmed:
                self.refuse_attended(before, source)
                self.cancelled(conn, before, at, "declined at reminder", "appointment.declined", source)
                return "cancelled"
            if before["status"] == "confirmed":
                return "already_confirmed"
            after = written_row(conn, "UPDATE appointments SET status = 'confirmed', confirmed_at = ?,"
                                " updated_at = ? WHERE id = ?", (utc_iso(at), utc_iso(at), before["id"]))
            record_event(conn, at, source, "appointment.confirmed", "appointment", before["id"],
                         before=before, after=after)
        return "confirmed"

    def close_reminder_day(self, *, config_id, days, execution="", skipped=(), center_id=None, source="api"):
        """Close a reminder cycle over these ISO days ("End of a reminder day"): unconfirmed live
        appointments, but the skipped ids, meet the policy. {"processed": N, "repeated": bool}."""
        policy = self.settings.reminder_policy
        at = self.clock()
        with self.db.transaction() as conn:
            self.require_center(center_id)
            if conn.execute("SELECT 1 FROM reminder_cycles WHERE voice_agent_config_id = ? AND days = ?"
                            " AND execution_date = ? AND center_id = ?",
                            (config_id, ",".join(days), execution, center_id or "")).fetchone():
                return {"processed": 0, "repeated": True}
            acted_on, booked = self.unconfirmed(days, skipped, center_id)
            for key in acted_on if policy == "release" else booked if policy == "flag" else ():
                before = dict(conn.execute("SELECT * FROM appointments WHERE id = ?", (key,)).fetchone())
                if policy == "release":
                    self.cancelled(conn, before, at, "no answer to reminder", "appointment.released", source)
                    continue
                after = written_row(conn, "UPDATE appointments SET status = 'unanswered', updated_at = ?"
                                    " WHERE id = ?", (utc_iso(at), key))
                record_event(conn, at, source, "appointment.unanswered", "appointment", key, before=before, after=after)
            cycle = conn.execute(
                "INSERT INTO reminder_cycles (voice_agent_config_id, days, execution_date, center_id, policy,"
                " appointment_ids, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (config_id, ",".join(days), execution, center_id or "", policy, json.dumps(acted_on), utc_iso(at)))
            record_event(conn, at, source, "reminder.closed", "reminder_cycle", cycle.lastrowid,
                         after={"voiceAgentConfigId": config_id, "days": days, "centerId": center_id,
                                "policy": policy, "appointmentIds": acted_on, "skipAppointmentIds": sorted(skipped)})
        return {"processed": len(acted_on), "repeated": False}

    def unconfirmed(self, days, skipped, center_id):
        """(ids of the live unconfirmed appointments of these days, those of them still only booked), sorted;
        never one the patient came to or one to call ("Attendance", "To call")."""
        where = (f"a.date IN ({','.join('?' * len(days))}) AND a.status IN ('booked', 'unanswered')"
                 f" AND coalesce(a.attendance, '') NOT IN ('arrived', 'seen') AND NOT {TO_CALL}")
        params = [*days]
        if skipped:
            where += " AND CAST(a.id AS TEXT) NOT IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(sorted(skipped)))
        if center_id is not None:
            where += " AND a.center_id = ?"
            params.append(center_id)
        rows = self.conn().execute(f"SELECT a.id, a.status FROM appointments a WHERE {where} ORDER BY a.id",
                                   params).fetchall()
        return [row["id"] for row in rows], [row["id"] for row in rows if row["status"] == "booked"]

    # Closures and doctors (the desk and their CLI twins)

    def closures(self, since=None):
        """Closures ending on or after `since` (today), by first day: who, where, when, why."""
        since = (since or self.today()).isoformat()
        return [dict(row) for row in self.conn().execute(
            "SELECT c.id, c.doctor_id, d.name AS doctor_name, c.center_id, c.date_from, c.date_to, c.start_time,"
            " c.end_time, c.reason FROM closures c LEFT JOIN doctors d ON d.id = c.doctor_id WHERE c.date_to >= ?"
            " ORDER BY c.date_from, c.date_to, c.id", (since,))]

    def closure_fields(self, doctor_id, center_id, first, last, start, end):
        """A closure's fields, checked: known doctor and center, days in order, hours both or neither."""
        if doctor_id is not None:
            self.require_doctor(doctor_id)
        self.require_center(center_id)
        last = last or first
        if last < first:
            raise invalid("the last day is before the first", "last_day", "dateTo")
        if (start is None) != (end is None) or (start is not None and end <= start):
            raise invalid("hours need a start and a later end, or neither for whole days", "hours", "end")
        return doctor_id, center_id, first.isoformat(), last.isoformat(), start, end

    def covered_by(self, doctor_id, center_id, first, last, start, end, reader=None):
        """The live appointments a closure would cover (CLOSURE_COVERS, "To call"): each needs a call; who
        each patient is when a `reader` is shown the list (a preview is a read)."""
        return self.appointments(  # the days bound the index's range; the rule is CLOSURE_COVERS
            f"a.date BETWEEN ?1 AND ?2 AND EXISTS (SELECT 1 FROM (SELECT ?1 AS date_from, ?2 AS date_to,"
            f" ?3 AS doctor_id, ?4 AS center_id, ?5 AS start_time, ?6 AS end_time) c WHERE {CLOSURE_COVERS})",
            [first, last, doctor_id, center_id, start, end], reader, "preview")

    def add_closure(self, *, doctor_id=None, center_id=None, first, last=None, start=None, end=None, reason="",
                    source="cli", reader=None):
        """Close a doctor (or everyone) at a center (or every one) for days or hours; its slots leave
        availability at once. {"id", "covered": the live appointments it covers, for rebooking, shown to `reader`}."""
        fields = self.closure_fields(doctor_id, center_id, first, last, start, end)
        at = self.clock()
        with self.db.transaction() as conn:
            row = written_row(conn, "INSERT INTO closures (doctor_id, center_id, date_from, date_to, start_time,"
                                    " end_time, reason) VALUES (?, ?, ?, ?, ?, ?, ?)", (*fields, reason or ""))
            record_event(conn, at, source, "closure.added", "closure", row["id"], after=row)
        return {"id": str(row["id"]), "covered": self.covered_by(*fields, reader=reader)}

    def remove_closure(self, closure_id, source="cli"):
        """Remove a closure (one typed on the wrong date); its slots are offered again."""
        at = self.clock()
        with self.db.transaction() as conn:
            key = numeric_id(closure_id)
            before = None if key is None else conn.execute("SELECT * FROM closures WHERE id = ?", (key,)).fetchone()
            if before is None:
                raise ClinicError("CLOSURE_NOT_FOUND", "no closure with that id")
            conn.execute("DELETE FROM closures WHERE id = ?", (key,))
            record_event(conn, at, source, "closure.removed", "closure", key, before=dict(before))

    def doctors(self):
        """Every doctor with their weekly hours at each center and the day they retire from, if any."""
        hours = {}
        for row in self.conn().execute("SELECT doctor_id, center_id, weekday, start_time, end_time, slot_minutes"
                                       " FROM schedules ORDER BY doctor_id, center_id, weekday, start_time"):
            hours.setdefault(row["doctor_id"], []).append(dict(row))
        return [{**dict(row), "hours": hours.get(row["id"], [])} for row in self.conn().execute(
            "SELECT id, name, speciality_id, retired_from FROM doctors ORDER BY name, id")]

    def retire_doctor(self, doctor_id, day, source="cli", reader=None):
        """No slot of this doctor is offered from `day` on; the live appointments left from then on
        are returned for rebooking (shown to `reader`), never cancelled ("Staff desk")."""
        at = self.clock()
        with self.db.transaction() as conn:
            before = dict(self.require_doctor(doctor_id))
            after = written_row(conn, "UPDATE doctors SET retired_from = ? WHERE id = ?", (day.isoformat(), doctor_id))
            record_event(conn, at, source, "doctor.retired", "doctor", doctor_id, before=before, after=after)
        return self.appointments_from(doctor_id, day, reader)

    def appointments_from(self, doctor_id, day, reader=None):
        """This doctor's live appointments from `day` on: those a retirement leaves to rebook (a preview)."""
        return self.appointments("a.doctor_id = ? AND a.date >= ?", [doctor_id, day.isoformat()], reader, "preview")

    # Patients, as the desk looks for them

    def search_patients(self, text, reader):
        """Patients by NIF, phone or name (up to 20), best matches first, through the one door (the read noted
        for `reader`)."""
        keys = self.patients_matching((text or "").strip())
        found = identities(self, keys, reader, "search")
        return [found[key] for key in keys if key in found]

    def patients_matching(self, text):
        """The ids of the patients as reception types them ("Patient search"): a NIF (separators or none, a
        child's by their live guardian's) or a phone (any format) exactly; else every word, folded, within the
        name and surnames, in any order."""
        if not text:
            return []
        if len(text) > SEARCH_CHARS or len(text.split()) > SEARCH_WORDS:
            raise invalid(f"a search takes at most {SEARCH_WORDS} words and {SEARCH_CHARS} characters",
                          "search_length", "q")
        found = []
        for where, value in (("nif = ?1 OR guardian_nif = ?1", self.quietly(normalise_nif, text)),
                             ("phone_e164 = ?1", self.quietly(parse_phone, text))):
            if value:
                found += [row[0] for row in self.conn().execute(
                    f"SELECT id FROM live_patients WHERE {where} ORDER BY nif IS NULL, id LIMIT 20", (value,))]
        words = fold(text).split()
        if not found and words:
            found = [row[0] for row in self.conn().execute(
                "SELECT id FROM live_patients WHERE " + " AND ".join(["search LIKE ?"] * len(words))
                + " ORDER BY search, id LIMIT 20", ["%" + word + "%" for word in words])]
        return list(dict.fromkeys(found))

    @staticmethod
    def quietly(parse, text):
        try:
            return parse(text)
        except ClinicError:
            return None

    def registered_as(self, patient_id, name):
        """Whether the live patient with this id was registered with this name (a registration sent again)."""
        return self.conn().execute("SELECT 1 FROM live_patients WHERE id = ? AND name = ?",
                                   (numeric_id(patient_id), (name or "").strip())).fetchone() is not None

    def require_patient(self, patient_id):
        """The id (a number) of the live patient with this id (text or number); PATIENT_NOT_FOUND when none."""
        key = numeric_id(patient_id)
        if key is None or self.conn().execute("SELECT 1 FROM live_patients WHERE id = ?", (key,)).fetchone() is None:
            raise ClinicError("PATIENT_NOT_FOUND", "no patient with that patientId")
        return key

    def patient_record(self, patient_id, reader):
        """A patient and their live appointments, the coming ones first, then the past, through the one door
        (the read noted for `reader`)."""
        patient = identity(self, self.require_patient(patient_id), reader, "patient")
        appointments = self.appointments("a.patient_id = ?", [patient["id"]])
        today = self.today().isoformat()
        coming = [a for a in appointments if a["date"] >= today]
        return {**patient, "appointments": coming + [a for a in appointments if a["date"] < today][::-1]}
