"""Series of sessions ("Series"): one patient's appointments every N days or weeks, previewed date by
date (each date's slot, or why not and the nearest free one), booked together in one transaction,
then each its own. No HTTP here."""

import datetime as dt
import re
from typing import NamedTuple

from .values import ClinicError, format_date, invalid, minutes_of, numeric_id
from .store import record_event, utc_iso, written_row
from .slots import read_schedule, slot_state
from .booking import admit, live_patient, retried, Visit
from .clinic import CANCEL_CANCELLED

EVERY = re.compile(r"([1-9][0-9]?)\s*([wsd])")  # 1w, 2w, 10d; s for semana
MAX_SESSIONS = 60


class Session(NamedTuple):
    """One date of a series: the slot asked for when free, else why not and the nearest free slot."""
    day: dt.date
    slot: object
    reason: str | None
    nearest: object


def parse_every(text):
    """The days between sessions from '1w' (every week), '2w', '10d' ('1s' for una semana)."""
    found = EVERY.fullmatch((text or "").strip().lower())
    if found is None:
        raise invalid("every must be weeks or days, as 1w, 2w or 10d", "series_every", "every")
    return int(found[1]) * (1 if found[2] == "d" else 7)


def series_dates(first, every_days, count):
    if not 2 <= count <= MAX_SESSIONS:
        raise invalid(f"count must be 2 to {MAX_SESSIONS}", "series_count", "count")
    return [first + dt.timedelta(days=every_days * n) for n in range(count)]


def preview_series(clinic, *, doctor_id, first, time_text, every_days, count, center_id=None, speciality_id=None):
    """Each Session of the series, by the desk's rules, of the visit type asked (`speciality_id`; the doctor's
    default): the slot asked for, or the reason it is not free and the nearest free slot that day (closest in
    time) or else the next day."""
    doctor = clinic.require_doctor(doctor_id)
    sessions = []
    for day in series_dates(first, every_days, count):
        free = clinic.availability(doctor_id=doctor["id"], speciality_id=speciality_id, center_id=center_id,
                                   first=day, last=day + dt.timedelta(days=1), channel="desk")
        asked = next((slot for slot in free if slot.date == day and slot.time == time_text), None)
        if asked is not None:
            sessions.append(Session(day, asked, None, None))
            continue
        schedule = read_schedule(clinic.conn(), [doctor["id"]], day, day)
        reason, _ = slot_state(schedule, clinic.window("desk"), doctor["id"], day, time_text, center_id)
        same_day = [slot for slot in free if slot.date == day]
        nearest = min(same_day, key=lambda slot: abs(minutes_of(slot.time) - minutes_of(time_text))) \
            if same_day else next(iter(free), None)
        sessions.append(Session(day, None, reason, nearest))
    return sessions


def book_series(clinic, *, patient_id, doctor_id, first, time_text, every_days, count, center_id=None,
                insurance_id=None, reason=None, nearest=False, speciality_id=None, source):
    """Book every session of the series in one transaction, each through the one door: the slot asked for, or
    with `nearest` the nearest free one; a date with neither refuses the whole series. [(id, Session)] in
    date order; the same series sent again (a double click) answers the one booked."""
    at, patient_key = clinic.clock(), numeric_id(patient_id)
    with clinic.db.transaction() as conn:
        again = retried(conn, patient_key, doctor_id, first, time_text)
        if again is not None and again["series_id"] is not None and conn.execute(
                "SELECT 1 FROM series WHERE id = ? AND every_days = ? AND count = ?",
                (again["series_id"], every_days, count)).fetchone():
            return again["series_id"], [(str(row["id"]), None) for row in conn.execute(
                "SELECT id FROM appointments WHERE series_id = ? ORDER BY date, time", (again["series_id"],))]
        live_patient(conn, patient_key)
        sessions = preview_series(clinic, doctor_id=doctor_id, first=first, time_text=time_text,
                                  every_days=every_days, count=count, center_id=center_id, speciality_id=speciality_id)
        missing = [s for s in sessions if s.slot is None and (not nearest or s.nearest is None)]
        if missing:
            raise ClinicError("SLOT_NOT_AVAILABLE", "the series is not free on " + ", ".join(
                format_date(s.day) for s in missing) + ("; no free slot that day or the next" if nearest else
                                                        "; take the nearest free slots, or another time"),
                              reason=missing[0].reason or "taken")
        doctor = clinic.require_doctor(doctor_id)
        series = written_row(conn, "INSERT INTO series (patient_id, doctor_id, every_days, count, created_at)"
                             " VALUES (?, ?, ?, ?, ?)", (patient_key, doctor["id"], every_days, count, utc_iso(at)))
        booked = []
        for session in sessions:
            slot = session.slot or session.nearest
            visit = Visit(patient_key, doctor["id"], speciality_id, center_id=slot.center_id,
                          insurance_id=insurance_id, reason=reason, series_id=series["id"])
            booked.append((admit(clinic, conn, visit, slot.date, slot.time, "series", at, source), session))
        record_event(conn, at, source, "series.booked", "series", series["id"],
                     after={**series, "appointments": [int(appointment_id) for appointment_id, _ in booked]})
    return series["id"], booked


def cancel_rest(clinic, appointment_id, reason, source):
    """Cancel this appointment and every later live one of its series; the ids cancelled."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        this = clinic.appointment_row(appointment_id, CANCEL_CANCELLED)
        if this["series_id"] is None:
            raise invalid("that appointment is not part of a series", "not_in_series")
        rest = conn.execute("SELECT * FROM appointments WHERE series_id = ? AND status != 'cancelled'"
                            " AND (date > ? OR (date = ? AND time >= ?)) ORDER BY date, time",
                            (this["series_id"], this["date"], this["date"], this["time"])).fetchall()
        for row in rest:
            clinic.cancelled(conn, dict(row), at, reason, "appointment.cancelled", source)
    return [str(row["id"]) for row in rest]
