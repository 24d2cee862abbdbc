"""The counter ("Attendance", "To call", "Sobrecita"): what reception marks as patients come, or do not,
the appointments that need a call, and an urgent patient squeezed in. No HTTP here."""

from ..values.refusals import ClinicError, invalid
from ..values.fields import hhmm, minutes_of
from ..storage.events import record_event, utc_iso
from .booking import book_visit
from .appointments import CHANGE_CANCELLED, live_appointments, set_attendance

MARKS = ("arrived", "seen", "no_show")  # the desk's own record, beside the caller's status
CALL_IN = "in_consultation"  # "pasa a consulta": an arrival called in, its moment beside the mark ("The waiting room")


def open_marks(clinic, day_iso, start):
    """The marks the desk may set now on a visit of `day_iso` at `start` ("Attendance"): on an earlier day all;
    on its day arrived and seen from the arrival window before its start, no_show from its start; none later."""
    now = clinic.clock().astimezone(clinic.tz)
    today, minute = now.date().isoformat(), now.hour * 60 + now.minute
    if day_iso != today:
        return MARKS if day_iso < today else ()
    opens = minutes_of(start) - clinic.settings.arrival_window_minutes
    return tuple(mark for mark in MARKS if minute >= (minutes_of(start) if mark == "no_show" else opens))


def mark_attendance(clinic, appointment_id, mark, source):
    """Mark an appointment when its time has come (`open_marks`): arrived (now), in_consultation (called in now,
    arrived if not yet), seen, no_show, or None to undo the last step ("The waiting room"); audited. The caller's
    status never changes for it."""
    if mark is not None and mark not in (*MARKS, CALL_IN):
        raise invalid(f"attendance must be one of {', '.join(MARKS)}", "attendance_mark")
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        before = clinic.require_appointment(appointment_id, CHANGE_CANCELLED)
        window = "arrived" if mark == CALL_IN else mark
        if window is not None and window not in open_marks(clinic, before["date"], before["time"]):
            refuse_too_early(clinic, before, window)
        attendance, arrived_at, called_in_at = marked(before, mark, utc_iso(at))
        after = set_attendance(conn, before["id"], attendance, arrived_at, at, called_in_at)
        record_event(conn, at, source, f"appointment.{mark or 'attendance_undone'}", "appointment", before["id"],
                     before=before, after=after)
    return after


def marked(before, mark, now):
    """(attendance, arrived_at, called_in_at) after `mark` at `now` (UTC ISO): an undo steps back once, from
    finished to in consultation, from in consultation to arrived, else to nothing ("The waiting room")."""
    arrived = before["arrived_at"]
    called = before["called_in_at"] if before["attendance"] in ("arrived", "seen") else None
    if mark is None:
        if called and before["attendance"] == "seen":
            return "arrived", arrived, called
        return ("arrived", arrived, None) if called else (None, None, None)
    if mark == CALL_IN:
        return "arrived", arrived or now, called or now
    if mark == "seen":
        return "seen", arrived, called
    return (mark, now, None) if mark == "arrived" else (mark, None, None)


def refuse_too_early(clinic, appointment, mark):
    """APPOINTMENT_NOT_TODAY for a mark whose time has not come: a later day; a no-show before the visit's
    start; an arrival before the arrival window."""
    if appointment["date"] > clinic.today().isoformat():
        raise ClinicError("APPOINTMENT_NOT_TODAY", "that appointment is on a later day: mark it on its day")
    if mark == "no_show":
        raise ClinicError("APPOINTMENT_NOT_TODAY", f"the visit starts at {appointment['time']}: a no-show is marked "
                          "from then", "no_show_before_start")
    opens = max(0, minutes_of(appointment["time"]) - clinic.settings.arrival_window_minutes)
    raise ClinicError("APPOINTMENT_NOT_TODAY", f"the visit starts at {appointment['time']}: it is marked from "
                      f"{hhmm(opens)}", "arrival_window")


def to_call(clinic, reader):
    """Every live appointment from today on that needs a call ("To call"), soonest first; who the patients
    are through the one door, the read noted for `reader`. An appointment leaves the list once moved or cancelled."""
    return live_appointments(clinic, reader, "day", since=clinic.today().isoformat(), to_call=True)


# Two live visits of one patient that overlap (the pause not the patient's time), neither accepted so at the
# desk ("One patient, one place"): kept when they came in with the history of another system, and listed.
OVERLAPS = """FROM appointments a JOIN appointments b ON b.patient_id = a.patient_id AND b.date = a.date AND b.id > a.id
    AND b.time < a.end_time AND a.time < b.end_time
    WHERE a.status != 'cancelled' AND b.status != 'cancelled' AND a.date >= ? AND a.overlap_accepted = 0
      AND b.overlap_accepted = 0"""


def overlapping_pairs(conn, day):
    """How many pairs of one patient's visits from `day` (ISO) on overlap, none accepted ("One patient, one place")."""
    return conn.execute(f"SELECT count(*) {OVERLAPS}", (day,)).fetchone()[0]


def overlaps(clinic, most=50):
    """([(appointment, the other)] of the first `most` pairs of one patient's live visits from today on that
    overlap, neither accepted so, ids and times only; how many pairs there are)."""
    today = clinic.today().isoformat()
    pairs = [tuple(row) for row in clinic.conn().execute(
        f"SELECT a.id, a.date, a.time, a.doctor_id, b.id, b.time, b.doctor_id {OVERLAPS} ORDER BY a.date, a.time, a.id"
        " LIMIT ?", (today, most))]
    return pairs, clinic.conn().execute(f"SELECT count(*) {OVERLAPS}", (today,)).fetchone()[0]


def overlapped(clinic, appointment):
    """[{id, date, time, doctor}] of the same patient's other live visits this appointment overlaps now (the pause
    not the patient's time): those it was booked over on purpose ("One patient, one place"); ids and times only."""
    return [dict(row) for row in clinic.conn().execute(
        "SELECT b.id, b.date, b.time, d.name AS doctor FROM appointments b JOIN doctors d ON d.id = b.doctor_id"
        " WHERE b.patient_id = ? AND b.date = ? AND b.id != ? AND b.status != 'cancelled' AND b.time < ?"
        " AND ? < b.end_time ORDER BY b.time, b.id",
        (appointment["patient_id"], appointment["date"], appointment["id"], appointment["end"],
         appointment["start"]))]


def squeeze_in(clinic, visit, *, day, time_text, source):
    """Book an urgent patient (`visit`, a `Visit`) into a taken or off-grid time of the doctor's hours ("Sobrecita"):
    reception only, marked squeezed, never a slot offered, of the visit type asked (the doctor's default); the same
    patient at the same time again is the same one."""
    return book_visit(clinic, visit._replace(squeezed=True, accept_overlap=False), day, time_text, "sobrecita",
                      source)
