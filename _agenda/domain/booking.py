"""One door for an appointment ("One door for an appointment"): every booking and every move, by any
channel, is checked and written here, in one order, by the channel's rules in CHANNELS. No HTTP here."""

import json
import sqlite3
from typing import NamedTuple

from ..values.refusals import ClinicError, invalid
from ..values.fields import format_date, minutes_of, numeric_id
from ..storage.events import record_event, utc_iso, written_row
from .appointments import COLUMN_NAMES, insert_appointment, insert_staged_appointments, set_place
from .outbox import queue_message, tells_anew
from .web_requests import release_expired
from .slots import read_schedule, slot_not_available, visit_span
from .holds import coming, placement_notes, placements
from .visits import first_free, none_free, pools_for, read_resources, shares_room, the_visit, types_offered, VisitType
from .availability import insurance_lists, is_visit_type


class Visit(NamedTuple):
    """What is booked: for whom, with whom (the speciality or visit type asked, if any: "Visit types"), where
    (None: where the doctor works then), what (None: the type asked, or the doctor's default there: its length,
    pause and needs), the insurance and reason, the series it belongs to, whether it is squeezed in, and whether
    reception books it over the same patient's other visit on purpose ("One patient, one place"), and until when
    the patients' page holds it for the patient's confirmation ("Patients book themselves")."""
    patient_id: object
    doctor_id: str
    speciality_id: str | None = None
    center_id: str | None = None
    kind: VisitType | None = None
    insurance_id: str | None = None
    reason: str | None = None
    series_id: int | None = None
    squeezed: bool = False
    accept_overlap: bool = False
    pending_until: str | None = None  # a booking of the patients' page: held until then (UTC) for their e-mail


def visit_of(appointment, needs=(), **changes):
    """The Visit an appointment row is (its own type, length, pause and mark kept; `needs`, its type's; an
    overlap accepted once is not accepted again unasked), with `changes`: what a move takes."""
    minutes = minutes_of(appointment["end_time"]) - minutes_of(appointment["time"])
    kind = VisitType(appointment["type_id"], None, appointment["speciality_id"], minutes, appointment["pause"], needs)
    return Visit(appointment["patient_id"], appointment["doctor_id"], None, appointment["center_id"], kind,
                 insurance_id=appointment["insurance_id"], reason=appointment["reason"],
                 series_id=appointment["series_id"], squeezed=bool(appointment["squeezed"]))._replace(**changes)


class Rules(NamedTuple):
    """Which checks a channel's booking passes, in the door's order ("One door for an appointment")."""
    desk_only: bool          # only reception (the desk and its CLI twins) books this way
    retry: bool              # the same booking sent again answers the one made, before any refusal
    window: str | None       # whose notice and horizon ("caller", "desk"); None: any day (history too)
    place: str               # "grid": a free start of the grid; "hours": any time of the hours; "kept": as given
    insurance: str | None    # "required": the doctor's list there asks for one; "accepted": only checked if given
    patient: str | None      # "one place": the patient free then; "may accept": reception may book over it on purpose
    waitlist: bool           # ends the patient's own waiting entry, in the same transaction
    event: str               # what the audit trail calls it
    message: str | None      # the message to the patient it calls for (outbox.KINDS); None: none (a series sends one)
    keeps_confirmed: bool = False  # a move keeps a confirmed visit confirmed: the patient chose the time themselves


CHANNELS = {
    "caller": Rules(False, True, "caller", "grid", "accepted", "one place", False, "appointment.booked", "confirmation"),
    "desk": Rules(True, True, "desk", "grid", "required", "may accept", False, "appointment.booked", "confirmation"),
    "waitlist": Rules(True, True, "desk", "grid", "required", "may accept", True, "appointment.booked", "confirmation"),
    "sobrecita": Rules(True, True, "desk", "hours", "required", "one place", False, "appointment.squeezed",
                       "confirmation"),
    "series": Rules(True, False, "desk", "grid", "required", "one place", False, "appointment.booked", None),
    "import": Rules(True, False, None, "kept", None, None, False, "appointment.imported", None),
    "caller move": Rules(False, False, "caller", "grid", "accepted", "one place", False, "appointment.moved", "update"),
    "desk move": Rules(True, False, "desk", "grid", "accepted", "may accept", False, "appointment.moved", "update"),
    "sobrecita move": Rules(True, False, "desk", "hours", "accepted", "one place", False, "appointment.moved",
                            "update"),
    "waitlist move": Rules(True, True, "desk", "grid", "accepted", "may accept", True, "appointment.moved", "update"),
    "patient move": Rules(False, False, "caller", "grid", "accepted", "one place", False, "appointment.moved", "update",
                          keeps_confirmed=True),
    "desk retype": Rules(True, False, "desk", "grid", "accepted", "one place", False, "appointment.retyped", "update"),
    "web": Rules(False, False, "web", "grid", "accepted", "one place", False, "appointment.booked", "web"),
    "desk relength": Rules(True, False, "desk", "grid", "accepted", "one place", False, "appointment.length_changed",
                           "update"),
}


def channel_of(source):
    """Whose rules a change follows ("Each channel's rules"): the caller's for 'api', for the patient's own
    link ('patient') and their booking page ('web'), else the desk's (the desk, and its twins in the CLI)."""
    return "caller" if source in ("api", "patient", "web") else "desk"


def move_channel(source, visit):
    """The channel of a move: the patient's own; the caller's; the desk's; a sobrecita stays one, moved by the desk."""
    if source == "patient":
        return "patient move"
    if channel_of(source) == "caller":
        return "caller move"
    return "sobrecita move" if visit.squeezed else "desk move"


def book_visit(clinic, visit, day, time_text, channel, source, waitlist_id=None):
    """One appointment through the door in its own BEGIN IMMEDIATE transaction: its id as text."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        return admit(clinic, conn, visit, day, time_text, channel, at, source, waitlist_id=waitlist_id)


def admit(clinic, conn, visit, day, time_text, channel, at, source, *, moving=None, waitlist_id=None):
    """The one door, inside the caller's transaction: `visit` at `day` and `time_text` checked by the
    channel's rules in one order (who, the retry, the patient and catalogs, the waiting entry, the slot and
    the visit's type, the insurance, the doctor free then (the triggers), its rooms and machines, the patient
    free then) and written: a new row, or `moving`'s row moved (its id kept), with what it holds. Its id as
    text."""
    rules = CHANNELS[channel]
    if rules.desk_only and channel_of(source) != "desk":
        raise invalid(f"only reception books by the {channel} channel", "reception_only")
    if release_expired(conn, at) and moving is not None and conn.execute(  # an expired hold refuses no one
            "SELECT 1 FROM appointments WHERE id = ?", (moving["id"],)).fetchone() is None:
        raise ClinicError("APPOINTMENT_NOT_FOUND", "no appointment with that appointmentId")  # released just now
    patient_key = numeric_id(visit.patient_id)
    again = retried(conn, patient_key, visit.doctor_id, day, time_text, visit.speciality_id) if rules.retry else None
    if again is not None:
        return str(again["id"])
    doctor = known(clinic, conn, visit, patient_key)
    entry = waiting_entry(conn, waitlist_id, patient_key) if rules.waitlist else None
    span = place(clinic, conn, visit, doctor, day, time_text, rules, moving)
    elsewhere = patient_elsewhere(clinic, conn, patient_key, day, time_text, span, rules, moving)
    accepted = elsewhere is not None and rules.patient == "may accept" and visit.accept_overlap
    check_insurance(clinic, doctor["id"], visit.insurance_id, span.center, rules.insurance)
    try:
        row = written(conn, visit, span, patient_key, doctor, day, time_text, at, source, moving, accepted,
                      rules.keeps_confirmed)
    except sqlite3.IntegrityError:
        raise slot_not_available("taken") from None
    # the slot's own refusals first (the doctor, then the rooms and machines): the transaction rolls back
    try:
        hold(conn, row["id"], holding(conn, span, doctor["id"], day, time_text, moving, visit.squeezed), day,
             time_text, span.busy_until)
    except sqlite3.IntegrityError:
        raise slot_not_available("resource_taken") from None
    if elsewhere is not None and not accepted:
        raise elsewhere
    record_event(conn, at, source, rules.event, "appointment", row["id"], before=moving, after=row)
    if rules.message and (moving is None or tells_anew(moving, row)):  # a move to where it was tells nothing
        queue_message(conn, row["id"], rules.message, at)
    if entry is not None:
        end_entry(conn, entry, "booked", at, source, appointment_id=row["id"])
    return str(row["id"])


class Span(NamedTuple):
    """Where and how long a visit goes: its center, its end (the patient's time), its busy end (its pause
    included: the doctor's, its rooms' and machines' time), its type, and the room the doctor is in then."""
    center: str | None
    end: str
    busy_until: str
    kind: VisitType
    room_id: str | None


def written(conn, visit, span, patient_key, doctor, day, time_text, at, source, moving, accepted, keep=False):
    """The appointments row inserted, or `moving`'s row moved or given another type (`span.kind`: a move keeps its
    own; booked again, no longer confirmed, unless `keep` and it was confirmed: "Moving"; its arrival kept where
    it stays)."""
    if moving is None:
        return inserted(conn, visit._replace(center_id=span.center), patient_key, doctor, day, time_text, span, at,
                        source, accepted)
    stays = (moving["doctor_id"], moving["date"], moving["time"]) == (doctor["id"], day.isoformat(), time_text)
    return set_place(conn, moving["id"], {
        "doctor_id": doctor["id"], "date": day.isoformat(), "time": time_text, "end_time": span.end,
        "center_id": span.center, "busy_until": span.busy_until, "type_id": span.kind.id, "pause": span.kind.pause,
        "squeezed": int(visit.squeezed), "overlap_accepted": int(accepted)}, at, keep, stays)


def holding(conn, span, doctor_id, day, time_text, moving=None, squeezed=False):
    """[resource] the visit takes for its length and pause, as `what_it_needs` says ("What a visit holds"; a
    sobrecita shares its doctor's room only as `shares_room` says, else takes a free one of its category);
    SLOT_NOT_AVAILABLE (resource_taken) when one has none free then, its `held` naming each category's taken."""
    if not span.kind.needs and not span.room_id:
        return []
    resources = read_resources(conn, day.isoformat(), day.isoformat(), but=moving and moving["id"])
    shares = squeezed and shares_room(conn, doctor_id, span.room_id, day, time_text, span.busy_until,
                                      moving and moving["id"])
    pools = pools_for(resources, span.kind, doctor_id, span.center, span.room_id, day, squeezed, shares)
    taken = first_free(pools, time_text, span.busy_until)
    if taken is None:
        refusal = slot_not_available("resource_taken")
        refusal.held = [(row[0], sorted(row[1].split("\x1f"))) for row in conn.execute(
            "SELECT category, group_concat(name, char(31)) FROM resources WHERE id IN (SELECT value FROM json_each(?))"
            " GROUP BY category ORDER BY category", (json.dumps([r for pool in none_free(pools, time_text,
                                                                                         span.busy_until)
                                                                  for r in pool]),))]
        raise refusal
    return taken


def hold(conn, appointment_id, resources, day, time_text, until):
    """What the appointment holds now: these resources from `time_text` to `until` (its earlier holds gone)."""
    conn.execute("DELETE FROM holds WHERE appointment_id = ?", (appointment_id,))
    conn.executemany("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES (?, ?, ?, ?, ?)",
                     [(appointment_id, resource, day.isoformat(), time_text, until) for resource in resources])


def patient_elsewhere(clinic, conn, patient_key, day, time_text, span, rules, moving):
    """The refusal SLOT_NOT_AVAILABLE (patient_elsewhere) naming the same patient's other live, not yet ended
    visit the visit overlaps (the pause not the patient's time), or None when the patient is free then or the
    channel does not ask ("One patient, one place"). A guardian and a child are two patients."""
    if rules.patient is None:
        return None
    now = clinic.clock().astimezone(clinic.tz)
    other = conn.execute(
        "SELECT a.id, a.date, a.time, a.doctor_id, d.name FROM appointments a JOIN doctors d ON d.id = a.doctor_id"
        " WHERE a.patient_id = ? AND a.status != 'cancelled' AND a.date = ? AND a.time < ? AND ? < a.end_time"
        " AND a.id != ? AND (a.date > ? OR a.end_time > ?) ORDER BY a.time LIMIT 1",
        (patient_key, day.isoformat(), span.end, time_text, moving["id"] if moving else 0, now.date().isoformat(),
         f"{now:%H:%M}")).fetchone()
    if other is None:
        return None
    return ClinicError("SLOT_NOT_AVAILABLE", f"that slot is not free: the patient has another appointment then "
                      f"({format_date(other['date'])} {other['time']} with {other['name']}); offer another one",
                      reason="patient_elsewhere", elsewhere={
                          "appointmentId": str(other["id"]), "date": format_date(other["date"]),
                          "time": other["time"], "doctorId": other["doctor_id"], "doctorName": other["name"]})


def admit_staged(clinic, conn, table, at, source):
    """The door for many, inside the caller's transaction: the import channel's rows staged in `table` (line,
    date, time, end_time, doctor_id, center_id, insurance_id, reason, status, patient_id, type_id, pause,
    busy_until, holds), checked as the channel's rules say, in SQL over them all (who; what they name, still
    known, the patient live; their times as they were; the triggers refuse an overlap of a doctor or of a room
    or machine held), written in one INSERT, each with the channel's event; then their holds: history's as the
    file gives them where free, and what each coming visit needs, the file's first ("What a visit holds"). What
    the rooms and machines say: [(line, why)], by line."""
    rules = CHANNELS["import"]
    if rules.desk_only and channel_of(source) != "desk":
        raise invalid("only reception books by the import channel", "reception_only")
    unknown = conn.execute(
        f"SELECT min(line) FROM {table} s WHERE NOT EXISTS (SELECT 1 FROM doctors d WHERE d.id = s.doctor_id)"
        " OR (s.center_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM centers c WHERE c.id = s.center_id))"
        " OR (s.insurance_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM insurances i WHERE i.id = s.insurance_id))"
        " OR NOT EXISTS (SELECT 1 FROM live_patients p WHERE p.id = s.patient_id)").fetchone()[0]
    if unknown is not None:
        raise invalid(f"line {unknown}: its doctor, center, insurance or patient is gone since it was checked; "
                      "run the import again", "import_changed")
    first = conn.execute("SELECT coalesce(max(id), 0) FROM appointments").fetchone()[0]
    try:
        insert_staged_appointments(conn, table, at)
    except sqlite3.IntegrityError:
        raise slot_not_available("taken") from None
    made = conn.execute(f"SELECT s.line, a.id, a.date, a.time, coalesce(a.busy_until, a.end_time), s.holds FROM {table}"
                        " s JOIN appointments"
                        " a ON a.id > ? AND a.doctor_id = s.doctor_id AND a.date = s.date AND a.time = s.time AND"
                        " a.patient_id = s.patient_id AND a.status != 'cancelled' WHERE s.status != 'cancelled'"
                        " ORDER BY s.line", (first,)).fetchall()
    conflicts, now = [], clinic.clock().astimezone(clinic.tz)
    ended = (now.date().isoformat(), f"{now:%H:%M}")
    for line, appointment_id, day, time_text, until, held in made:  # history's where free, in the file's order
        for resource in json.loads(held or "[]") if (day, until) <= ended else ():
            if conn.execute("INSERT INTO holds (appointment_id, resource_id, date, time, until) SELECT ?1, ?2, ?3,"
                            " ?4, ?5 WHERE NOT EXISTS (SELECT 1 FROM holds WHERE resource_id = ?2 AND date = ?3 AND"
                            " live = 1 AND time < ?5 AND ?4 < until)",
                            (appointment_id, resource, day, time_text, until)).rowcount == 0:
                conflicts.append((line, f"{format_date(day)} {time_text}: {resource} is held then by another"
                                        f" appointment; appointment {appointment_id} imported without it"))
    conflicts += hold_coming(conn, now, first, made)
    columns = ", ".join(f"'{name}', {name}" for name in COLUMN_NAMES)
    conn.execute("INSERT INTO events (at, source, action, entity, entity_id, before, after) SELECT ?, ?, ?,"
                 f" 'appointment', CAST(id AS TEXT), NULL, json_object({columns}) FROM appointments WHERE id > ?"
                 " ORDER BY id", (utc_iso(at), source, rules.event, first))
    return sorted(conflicts)


def hold_coming(conn, now, first, made):
    """Inside the import's commit: each visit made not yet ended (ids over `first`; `made`: (line, id, ..., the
    file's holds)) holds what it needs, the file's holds first ("What a visit holds"); what that says, by line."""
    lines = {row[1]: row[0] for row in made}
    given = {row[1]: json.loads(row[5] or "[]") for row in made}
    needing = {row[0] for row in conn.execute(  # a visit of no needs, its doctor in no room, given nothing: none
        "SELECT a.id FROM appointments a LEFT JOIN visit_types t ON t.id = a.type_id WHERE a.id > ? AND (t.needs != ''"
        " OR a.doctor_id IN (SELECT doctor_id FROM schedules WHERE room_id IS NOT NULL))", (first,))}
    placed = placements(conn, coming(conn, now, [key for key in lines if key in needing or given[key]],
                                     started=True), given)  # a visit under way like any other not ended
    conn.executemany("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES (?, ?, ?, ?, ?)",
                     [(visit.id, resource, visit.date, visit.time, visit.until)
                      for visit, taken in placed for resource in taken or ()])
    return placement_notes(placed, lines, given)


def inserted(conn, visit, patient_key, doctor, day, time_text, span, at, booked_by, accepted):
    """The new appointments row, booked: of its type, length and pause (`span`)."""
    return insert_appointment(conn, {
        "patient_id": patient_key, "doctor_id": doctor["id"], "speciality_id": doctor["speciality_id"],
        "insurance_id": visit.insurance_id, "center_id": visit.center_id, "date": day.isoformat(), "time": time_text,
        "end_time": span.end, "reason": visit.reason, "status": "booked", "booked_by": booked_by,
        "squeezed": int(visit.squeezed), "series_id": visit.series_id, "type_id": span.kind.id,
        "pause": span.kind.pause, "busy_until": span.busy_until, "overlap_accepted": int(accepted),
        "pending": "email" if visit.pending_until else None, "pending_until": visit.pending_until}, at)


def retried(conn, patient_key, doctor_id, day, time_text, asked=None):
    """The live appointment of this patient with this doctor at this date and time (id, series_id), of the
    type or area `asked` if one is: a booking sent again (a lost answer, a double click) is the one made; never one
    the patients' page holds, which is no booking of the caller's or the desk's ("Patients book themselves")."""
    return None if patient_key is None else conn.execute(
        "SELECT id, series_id FROM appointments WHERE patient_id = ? AND doctor_id = ? AND date = ? AND time = ?"
        " AND status != 'cancelled' AND pending IS NULL AND (? IS NULL OR ? IN (coalesce(type_id, ''), speciality_id))",
        (patient_key, doctor_id, day.isoformat(), time_text, asked, asked)).fetchone()


def live_patient(conn, patient_key):
    """Refuse a patient who is not here, or is blocked (PATIENT_NOT_FOUND): the one check of who is booked."""
    if patient_key is None or conn.execute("SELECT 1 FROM live_patients WHERE id = ?",
                                           (patient_key,)).fetchone() is None:
        raise ClinicError("PATIENT_NOT_FOUND", "no patient with that patientId")


def known(clinic, conn, visit, patient_key):
    """The visit's doctor row, once its doctor, patient, speciality or visit type, insurance and center are known
    (a type the doctor offers is checked where they work then)."""
    doctor = clinic.require_doctor(visit.doctor_id)
    live_patient(conn, patient_key)
    if visit.speciality_id is not None and not is_visit_type(clinic, visit.speciality_id):
        clinic.require_speciality(visit.speciality_id)
        if visit.speciality_id != doctor["speciality_id"]:
            raise invalid("specialityId is not the speciality of that doctor", "speciality", "specialityId")
    if visit.insurance_id is not None:
        clinic.require_insurance(visit.insurance_id)
    clinic.require_center(visit.center_id)
    return doctor


def place(clinic, conn, visit, doctor, day, time_text, rules, moving=None):
    """The Span of the visit at `time_text` by the channel's place rule and window: its type (asked, kept by a
    move, or the doctor's default where they work then; a move to another doctor who does not offer it there is
    refused, as a move to where its doctor does not offer it) and the one slot decision (`visit_span`) over its
    length and pause; the database's triggers refuse an overlap with another appointment, but for a sobrecita kept
    on the grid, which they leave out, so its schedule is read with the bookings."""
    on_grid, kinds = rules.place == "grid", []

    def length(row):
        offered = types_offered(conn, [doctor["id"]]) if visit.kind is None or moving is not None else {}
        kinds.append(visit.kind or the_visit(offered, doctor, row["center_id"], row["slot_minutes"],
                                             visit.speciality_id))
        if moving is not None and kinds[0].id is not None and kinds[0].id not in {
                kind.id for kind in offered.get((doctor["id"], row["center_id"]), [])}:
            if moving["doctor_id"] != doctor["id"]:
                raise invalid("that doctor does not offer the appointment's visit type there", "type_not_offered",
                              "doctorId")
            if rules.window == "caller":
                raise slot_not_available("type_not_offered")
            raise invalid("the doctor does not offer the appointment's visit type at that center: move it where they"
                          " do, or to another doctor", "type_not_offered", "centerId")
        return kinds[0].minutes, kinds[0].pause
    schedule = read_schedule(conn, [doctor["id"]], day, day, with_bookings=visit.squeezed and on_grid)
    row, end, busy_until = visit_span(schedule, clinic.window(rules.window), doctor["id"], day, time_text,
                                      visit.center_id, length, squeezed=not on_grid)
    return Span(row["center_id"], end, busy_until, kinds[0], row["room_id"])


def check_insurance(clinic, doctor_id, insurance_id, center_id, rule):
    """Refuse an insurance the doctor does not take at this center; when the rule is 'required' (the
    desk), also none at all where the doctor has a list, private being one of its entries."""
    listed = insurance_lists(clinic, [doctor_id]).get((doctor_id, center_id)) if rule else None
    if listed and insurance_id is None and rule == "required":
        raise ClinicError("INSURANCE_REQUIRED", "that doctor takes only some insurances there: give one of "
                          + ", ".join(sorted(listed)), field="insuranceId")
    if listed and insurance_id is not None and insurance_id not in listed:
        raise ClinicError("INSURANCE_NOT_ACCEPTED", "that doctor does not accept that insurance there",
                          field="insuranceId")


def waiting_entry(conn, entry_id, patient_key):
    """The waiting entry a booking ends: still waiting, and this patient's own. Else WAITLIST_NOT_FOUND,
    or WAITLIST_ALREADY_BOOKED with the appointment it was booked as ("Waiting list")."""
    key = numeric_id(entry_id)
    entry = None if key is None else conn.execute("SELECT * FROM waitlist WHERE id = ? AND patient_id = ?",
                                                  (key, patient_key)).fetchone()
    if entry is not None and entry["ended_why"] == "booked":
        booked = conn.execute("SELECT id FROM appointments WHERE id = ? OR (? IS NULL AND patient_id = ? AND"
                              " created_at = ?) ORDER BY id DESC LIMIT 1",  # entries booked before they kept it
                              (entry["appointment_id"], entry["appointment_id"], patient_key,
                               entry["ended_at"])).fetchone()
        link = {} if booked is None else {"appointmentId": str(booked["id"])}
        raise ClinicError("WAITLIST_ALREADY_BOOKED", "that waiting entry was already booked"
                          + (f": appointment {booked['id']}" if booked else ""), **link)
    if entry is None or entry["ended_at"] is not None:
        raise ClinicError("WAITLIST_NOT_FOUND", "no one waiting with that id")
    return dict(entry)


def end_entry(conn, entry, why, at, source, appointment_id=None):
    """Inside a transaction: end a waiting entry ('booked', naming the appointment it became, or 'removed'),
    with its event."""
    after = written_row(conn, "UPDATE waitlist SET ended_at = ?, ended_why = ?, appointment_id = coalesce(?,"
                        " appointment_id) WHERE id = ?", (utc_iso(at), why, appointment_id, entry["id"]))
    record_event(conn, at, source, f"waitlist.{why}", "waitlist", entry["id"], before=entry, after=after)


def brought_forward(conn, entry_id, patient_key):
    """The live appointment a waiting entry of this patient, still waiting, would bring forward (its row), or
    None: a booking from that entry moves it rather than making another ("Waiting list")."""
    key = numeric_id(entry_id)
    row = None if key is None else conn.execute(
        "SELECT a.* FROM waitlist w JOIN appointments a ON a.id = w.appointment_id WHERE w.id = ? AND"
        " w.patient_id = ? AND w.ended_at IS NULL AND a.status != 'cancelled'", (key, patient_key)).fetchone()
    return None if row is None else dict(row)
