"""The clinic's doctors ("Staff desk"): their weekly hours, and a retirement, which leaves their later
appointments to rebook. No HTTP here."""

from ..storage.events import record_event, written_row
from .appointments import live_appointments


def doctors_with_hours(clinic):
    """Every doctor with their weekly hours at each center and the day they retire from, if any."""
    hours = {}
    for row in clinic.conn().execute("SELECT doctor_id, center_id, weekday, start_time, end_time, slot_minutes"
                                   " FROM schedules ORDER BY doctor_id, center_id, weekday, start_time"):
        hours.setdefault(row["doctor_id"], []).append(dict(row))
    return [{**dict(row), "hours": hours.get(row["id"], [])} for row in clinic.conn().execute(
        "SELECT id, name, speciality_id, retired_from FROM doctors ORDER BY name, id")]


def retire_doctor(clinic, doctor_id, day, source="cli", reader=None):
    """No slot of this doctor is offered from `day` on; the live appointments left from then on
    are returned for rebooking (shown to `reader`), never cancelled ("Staff desk")."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        before = dict(clinic.require_doctor(doctor_id))
        after = written_row(conn, "UPDATE doctors SET retired_from = ? WHERE id = ?", (day.isoformat(), doctor_id))
        record_event(conn, at, source, "doctor.retired", "doctor", doctor_id, before=before, after=after)
    return appointments_from(clinic, doctor_id, day, reader)


def appointments_from(clinic, doctor_id, day, reader=None):
    """This doctor's live appointments from `day` on: those a retirement leaves to rebook (a preview)."""
    return live_appointments(clinic, reader, "preview", doctor_id=doctor_id, since=day.isoformat())
