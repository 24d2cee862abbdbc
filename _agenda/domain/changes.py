"""An appointment changed by any channel: booked, moved, cancelled or confirmed, each one transaction through
the one door ("One door for an appointment") with its event. No HTTP here."""

import datetime as dt

from ..values.refusals import ClinicError, invalid
from ..values.fields import numeric_id
from ..storage.events import record_event
from .appointments import CANCEL_CANCELLED, CHANGE_CANCELLED, set_status
from .visits import visit_type
from .outbox import queue_message
from .booking import admit, book_visit, brought_forward, channel_of, move_channel, visit_of


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
