"""An appointment changed by any channel: booked, moved, cancelled or confirmed, each one transaction through
the one door ("One door for an appointment") with its event. No HTTP here."""

import datetime as dt

from ..values.refusals import ClinicError, invalid
from ..values.fields import numeric_id, text_field
from ..storage.events import record_event
from .appointments import CANCEL_CANCELLED, CHANGE_CANCELLED, set_details, set_status
from .visits import types_offered, visit_type
from .outbox import queue_message
from .booking import (admit, book_visit, brought_forward, channel_of, CHANNELS, check_insurance, move_channel,
                      visit_of, Visit)


def book_appointment(clinic, visit, *, day, time_text, waitlist_id=None, source="api"):
    """A new appointment's id ("Booking") of `visit` (a `Visit`), through the one door ("One door for an
    appointment"): of the visit type asked (its `speciality_id`: a type's id, or an area's for the doctor's default);
    a retry of the same booking answers the same id; with `waitlist_id` (the desk) that patient's entry ends with it
    (`book_waiting`); with its `accept_overlap` (the desk) booked over the same patient's other visit on purpose."""
    if waitlist_id:
        return book_waiting(clinic, visit, day, time_text, waitlist_id, source)
    return book_visit(clinic, visit, day, time_text, channel_of(source), source)


def book_waiting(clinic, visit, day, time_text, waitlist_id, source):
    """A waiting patient booked from their entry, in one transaction that ends it: the later appointment the
    entry would bring forward moved here (its id kept), else a new one ("Waiting list"). Its id."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        later = brought_forward(conn, waitlist_id, numeric_id(visit.patient_id))
        if later is None:
            return admit(clinic, conn, visit, day, time_text, "waitlist", at, source, waitlist_id=waitlist_id)
        return moved(clinic, conn, later, day, time_text, visit.doctor_id, visit.center_id, at, source,
                          visit.accept_overlap, channel="waitlist move", waitlist_id=waitlist_id)


def move_appointment(clinic, appointment_id, *, day, time_text, doctor_id=None, center_id=None, source="api",
         accept_overlap=False):
    """The appointment to another free slot ("Moving"): of its doctor and center, or at the desk of another
    doctor of the same speciality or another center; its own type, length and mark kept; no longer confirmed;
    over the patient's other visit only when reception accepts it ("One patient, one place")."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        before = clinic.require_appointment(appointment_id, CHANGE_CANCELLED)
        return moved(clinic, conn, before, day, time_text, doctor_id, center_id, at, source, accept_overlap)


def moved(clinic, conn, before, day, time_text, doctor_id, center_id, at, source, accept_overlap=False,
          channel=None, waitlist_id=None):
    """Inside a transaction: the appointment row `before` moved through the door by `channel` (the move's own,
    else `move_channel`); what only a move asks asked first. Its id."""
    refuse_attended(before, source)
    refuse_late(clinic, before, source)
    doctor = clinic.require_doctor(doctor_id or before["doctor_id"])
    if doctor["speciality_id"] != before["speciality_id"] and doctor["id"] != before["doctor_id"]:
        raise invalid("the new doctor is of another speciality", "speciality", "doctorId")
    same_doctor = doctor["id"] == before["doctor_id"]
    kind = visit_type(conn, before["type_id"]) if before["type_id"] else None
    visit = visit_of(before, kind.needs if kind else (), doctor_id=doctor["id"],
                     center_id=center_id or (before["center_id"] if same_doctor else None),
                     accept_overlap=accept_overlap)
    return admit(clinic, conn, visit, day, time_text, channel or move_channel(source, visit), at, source,
                 moving=before, waitlist_id=waitlist_id)


def refuse_late(clinic, appointment, source):
    """The patient's own link may not cancel or move a visit inside the clinic's cancellation notice ("The patient's
    link"): read on the row inside the change's transaction."""
    starts = dt.datetime.fromisoformat(f"{appointment['date']}T{appointment['time']}").replace(tzinfo=clinic.tz)
    if source == "patient" and starts - clinic.clock() < dt.timedelta(hours=clinic.settings.cancel_notice_hours):
        raise ClinicError("LINK_TOO_LATE", "the visit is too near to cancel or move here: call the clinic")


def refuse_attended(appointment, source):
    """The caller and the patient's link may not move, cancel or decline an appointment the patient came to
    ("Attendance")."""
    if source in ("api", "patient") and appointment["attendance"] in ("arrived", "seen"):
        raise ClinicError("APPOINTMENT_ATTENDED", "the patient has arrived for that appointment or been seen: "
                          "the clinic's reception changes it now")


def cancel_appointment(clinic, appointment_id, reason="cancelled by the caller", source="api"):
    """Cancel a live appointment; its slot is free again. Nothing is deleted ("Storage")."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        before = clinic.require_appointment(appointment_id, CANCEL_CANCELLED)
        refuse_attended(before, source)
        refuse_late(clinic, before, source)
        cancelled(clinic, conn, before, at, reason, "appointment.cancelled", source)


def cancelled(clinic, conn, before, at, reason, action, source, notice=True):
    """Inside a transaction: mark `before` cancelled, with its event and, unless `notice` is False (an erasure's),
    the notice to the patient."""
    after = set_status(conn, before["id"], "cancelled", at, reason)
    record_event(conn, at, source, action, "appointment", before["id"], before=before, after=after)
    if notice:
        queue_message(conn, before["id"], "notice", at)


def confirm_appointment(clinic, appointment_id, confirmed, source="api"):
    """The patient's answer to a reminder ("Confirming"): 'confirmed', 'already_confirmed', or,
    when they will not come, 'cancelled' with the slot freed."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        before = clinic.require_appointment(appointment_id, CHANGE_CANCELLED)
        if not confirmed:
            refuse_attended(before, source)
            cancelled(clinic, conn, before, at, "declined at reminder", "appointment.declined", source)
            return "cancelled"
        if before["status"] == "confirmed":
            return "already_confirmed"
        after = set_status(conn, before["id"], "confirmed", at)
        record_event(conn, at, source, "appointment.confirmed", "appointment", before["id"],
                     before=before, after=after)
    return "confirmed"


UNCHANGED = object()  # a detail `change_details` is not asked to change
DETAILS = {"reason": "appointment.reason_changed", "insurance_id": "appointment.insurance_changed",
           "note": "appointment.note_changed"}  # what reception changes on a booked visit, and its event


def change_details(clinic, appointment_id, *, reason=UNCHANGED, insurance_id=UNCHANGED, type_id=None,
                   note=UNCHANGED, source="desk"):
    """Reception changes a booked visit's reason, insurance (as the door checks it), reception's note or visit type
    ("Details of a booked visit"), each change an event; another type (`type_id`; None keeps it) through the door as
    the channel 'desk retype' (its length, holds, an update to the patient, unconfirmed), refused where it won't fit."""
    at = clinic.clock()
    given = {"reason": reason if reason is UNCHANGED else text_field(reason or "", "reason"),
             "insurance_id": insurance_id if insurance_id is UNCHANGED else insurance_id or None,
             "note": note if note is UNCHANGED else text_field(note or "", "note")}
    with clinic.db.transaction() as conn:
        before = clinic.require_appointment(appointment_id, CHANGE_CANCELLED)
        changed = {name: value for name, value in given.items() if value is not UNCHANGED and value != before[name]}
        if "insurance_id" in changed:
            if changed["insurance_id"] is not None:
                clinic.require_insurance(changed["insurance_id"])
            check_insurance(clinic, before["doctor_id"], changed["insurance_id"], before["center_id"],
                            CHANNELS[channel_of(source)].insurance)
        row = before
        if type_id and type_id != before["type_id"]:
            row = retyped(clinic, conn, before, type_id, changed.get("insurance_id", before["insurance_id"]), at,
                          source)
        if changed:
            row = set_details(conn, before["id"], changed, at)
        for name in changed:
            record_event(conn, at, source, DETAILS[name], "appointment", before["id"], before=before, after=row)
    return row


def retyped(clinic, conn, before, type_id, insurance_id, at, source):
    """Inside the change's transaction: the appointment `before` of the visit type `type_id` (one its doctor offers
    there; never a sobrecita's) through the door, at its own time, doctor and center; the row written."""
    offered = types_offered(conn, [before["doctor_id"]]).get((before["doctor_id"], before["center_id"]), [])
    kind = next((kind for kind in offered if kind.id == type_id), None)
    if kind is None:
        raise invalid("the doctor does not offer that visit type there", "type_not_here", "typeId")
    if before["squeezed"]:
        raise invalid("a sobrecita keeps its visit type: cancel it and squeeze in another", "squeezed_type", "typeId")
    visit = visit_of(before, kind.needs, kind=kind, insurance_id=insurance_id)
    admit(clinic, conn, visit, dt.date.fromisoformat(before["date"]), before["time"], "desk retype", at, source,
          moving=before)
    return dict(conn.execute("SELECT * FROM appointments WHERE id = ?", (before["id"],)).fetchone())


LENGTHS = range(5, 481)  # the minutes a visit may last, as a visit type's length ("Drag to move, and to lengthen")


def change_length(clinic, appointment_id, minutes, source="desk"):
    """Reception lengthens or shortens a booked visit to `minutes` (its start, type and pause kept) through the one
    door as the channel 'desk relength': its holds re-derived, unconfirmed, an update to the patient; refused where
    it won't fit, a sobrecita's refused; the same length records nothing. The row after."""
    length = int(minutes) if str(minutes).strip().isdigit() and int(minutes) in LENGTHS else None
    if length is None:
        raise invalid("minutes must be a whole number of minutes from 5 to 480", "length", "minutes")
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        before = clinic.require_appointment(appointment_id, CHANGE_CANCELLED)
        if before["squeezed"]:
            raise invalid("a sobrecita keeps its length: cancel it and squeeze in another", "squeezed_length",
                          "minutes")
        kind = visit_type(conn, before["type_id"]) if before["type_id"] else None
        visit = visit_of(before, kind.needs if kind else ())
        if visit.kind.minutes == length:
            return dict(before)
        admit(clinic, conn, visit._replace(kind=visit.kind._replace(minutes=length)),
              dt.date.fromisoformat(before["date"]), before["time"], "desk relength", at, source, moving=before)
        return dict(conn.execute("SELECT * FROM appointments WHERE id = ?", (before["id"],)).fetchone())

