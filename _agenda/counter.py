"""The counter ("Attendance", "To call", "Sobrecita"): what reception marks as patients come, or do not,
the appointments that need a call, and an urgent patient squeezed in. No HTTP here."""

from .values import ClinicError, invalid, numeric_id
from .store import record_event, utc_iso, written_row
from .slots import read_schedule, squeeze_span
from .clinic import CHANGE_CANCELLED, TO_CALL, channel_of

MARKS = ("arrived", "seen", "no_show")  # the desk's own record, beside the caller's status


def mark_attendance(clinic, appointment_id, mark, source):
    """Mark an appointment of today or before: arrived (now), seen, no_show, or None to undo a mistake;
    audited. The caller's status never changes for it."""
    if mark is not None and mark not in MARKS:
        raise invalid(f"attendance must be one of {', '.join(MARKS)}", "attendance_mark")
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        before = clinic.appointment_row(appointment_id, CHANGE_CANCELLED)
        if mark is not None and before["date"] > clinic.today().isoformat():
            raise ClinicError("APPOINTMENT_NOT_TODAY", "that appointment is on a later day: mark it on its day")
        arrived_at = utc_iso(at) if mark == "arrived" else before["arrived_at"] if mark == "seen" else None
        after = written_row(conn, "UPDATE appointments SET attendance = ?, arrived_at = ?, updated_at = ? WHERE id = ?",
                            (mark, arrived_at, utc_iso(at), before["id"]))
        record_event(conn, at, source, f"appointment.{mark or 'attendance_undone'}", "appointment", before["id"],
                     before=before, after=after)
    return after


def to_call(clinic, reader=None):
    """Every live appointment from today on that needs a call ("To call"), soonest first; the patients
    shown recorded for `reader`. An appointment leaves the list once moved or cancelled."""
    found = clinic.appointments(f"a.date >= ? AND {TO_CALL}", [clinic.today().isoformat()])
    clinic.seen(reader, "day", [appointment["patient_id"] for appointment in found])
    return found


def squeeze_in(clinic, *, day, time_text, doctor_id, patient_id, insurance_id=None, center_id=None, reason=None,
               source):
    """Book an urgent patient into a taken or off-grid time of the doctor's hours ("Sobrecita"): reception
    only, marked squeezed, never a slot offered; the same patient at the same time again is the same one."""
    if channel_of(source) != "desk":
        raise invalid("only reception squeezes a patient in", "squeeze_at_desk")
    at, patient_key = clinic.clock(), numeric_id(patient_id)
    with clinic.db.transaction() as conn:
        doctor = clinic.require_doctor(doctor_id)
        if patient_key is None or conn.execute("SELECT 1 FROM live_patients WHERE id = ?", (patient_key,)).fetchone() is None:
            raise ClinicError("PATIENT_NOT_FOUND", "no patient with that patientId")
        clinic.require_center(center_id)
        if insurance_id is not None:
            clinic.require_insurance(insurance_id)
        schedule = read_schedule(conn, [doctor["id"]], day, day)
        center, end_text = squeeze_span(schedule, clinic.window("desk"), doctor["id"], day, time_text, center_id)
        clinic.check_insurance(doctor["id"], insurance_id, center, "desk")
        again = conn.execute("SELECT id FROM appointments WHERE patient_id = ? AND doctor_id = ? AND date = ? AND time = ?"
                             " AND status != 'cancelled'", (patient_key, doctor["id"], day.isoformat(), time_text)).fetchone()
        if again is not None:
            return str(again["id"])
        booked = written_row(
            conn, "INSERT INTO appointments (patient_id, doctor_id, speciality_id, insurance_id, center_id, date, time,"
            " end_time, reason, status, created_at, updated_at, booked_by, squeezed)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'booked', ?, ?, ?, 1)",
            (patient_key, doctor["id"], doctor["speciality_id"], insurance_id, center, day.isoformat(), time_text,
             end_text, reason, utc_iso(at), utc_iso(at), source))
        record_event(conn, at, source, "appointment.squeezed", "appointment", booked["id"], after=booked)
    return str(booked["id"])
