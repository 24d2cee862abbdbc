"""Closures ("To call", "Staff desk"): a doctor, or everyone, closed at a center, or every one, for days or hours; the
live appointments one covers, to call. No HTTP here."""

from ..values.refusals import ClinicError, invalid
from ..values.fields import numeric_id
from ..storage.events import record_event, written_row
from .appointments import live_appointments


def coming_closures(clinic, since=None):
    """Closures ending on or after `since` (today), by first day: who, where, when, why."""
    since = (since or clinic.today()).isoformat()
    return [dict(row) for row in clinic.conn().execute(
        "SELECT c.id, c.doctor_id, d.name AS doctor_name, c.center_id, c.date_from, c.date_to, c.start_time,"
        " c.end_time, c.reason FROM closures c LEFT JOIN doctors d ON d.id = c.doctor_id WHERE c.date_to >= ?"
        " ORDER BY c.date_from, c.date_to, c.id", (since,))]


def closure_fields(clinic, doctor_id, center_id, first, last, start, end):
    """A closure's fields, checked: known doctor and center, days in order, hours both or neither."""
    if doctor_id is not None:
        clinic.require_doctor(doctor_id)
    clinic.require_center(center_id)
    last = last or first
    if last < first:
        raise invalid("the last day is before the first", "last_day", "dateTo")
    if (start is None) != (end is None) or (start is not None and end <= start):
        raise invalid("hours need a start and a later end, or neither for whole days", "hours", "end")
    return doctor_id, center_id, first.isoformat(), last.isoformat(), start, end


def covered_by(clinic, doctor_id, center_id, first, last, start, end, reader=None):
    """The live appointments a closure would cover (CLOSURE_COVERS, "To call"): each needs a call; who
    each patient is when a `reader` is shown the list (a preview is a read)."""
    return live_appointments(clinic, reader, "preview", covered_by=(first, last, doctor_id, center_id, start, end))


def add_closure(clinic, *, doctor_id=None, center_id=None, first, last=None, start=None, end=None, reason="",
                source="cli", reader=None):
    """Close a doctor (or everyone) at a center (or every one) for days or hours; its slots leave
    availability at once. {"id", "covered": the live appointments it covers, for rebooking, shown to `reader`}."""
    fields = closure_fields(clinic, doctor_id, center_id, first, last, start, end)
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        row = written_row(conn, "INSERT INTO closures (doctor_id, center_id, date_from, date_to, start_time,"
                                " end_time, reason) VALUES (?, ?, ?, ?, ?, ?, ?)", (*fields, reason or ""))
        record_event(conn, at, source, "closure.added", "closure", row["id"], after=row)
    return {"id": str(row["id"]), "covered": covered_by(clinic, *fields, reader=reader)}


def remove_closure(clinic, closure_id, source="cli"):
    """Remove a closure (one typed on the wrong date); its slots are offered again."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        key = numeric_id(closure_id)
        before = None if key is None else conn.execute("SELECT * FROM closures WHERE id = ?", (key,)).fetchone()
        if before is None:
            raise ClinicError("CLOSURE_NOT_FOUND", "no closure with that id")
        conn.execute("DELETE FROM closures WHERE id = ?", (key,))
        record_event(conn, at, source, "closure.removed", "closure", key, before=dict(before))
