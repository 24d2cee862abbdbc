"""The end of a reminder cycle ("End of a reminder day"): the unconfirmed appointments of its days meet the
clinic's policy (flagged, released or kept), once per cycle. No HTTP here."""

import json

from ..storage.events import record_event, utc_iso
from .appointments import set_status, TO_CALL
from .changes import cancelled


def close_reminder_day(clinic, *, config_id, days, execution="", skipped=(), center_id=None, source="api"):
    """Close a reminder cycle over these ISO days ("End of a reminder day"): unconfirmed live
    appointments, but the skipped ids, meet the policy. {"processed": N, "repeated": bool}."""
    policy = clinic.settings.reminder_policy
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        clinic.require_center(center_id)
        if conn.execute("SELECT 1 FROM reminder_cycles WHERE voice_agent_config_id = ? AND days = ?"
                        " AND execution_date = ? AND center_id = ?",
                        (config_id, ",".join(days), execution, center_id or "")).fetchone():
            return {"processed": 0, "repeated": True}
        acted_on, booked = unconfirmed(clinic, days, skipped, center_id)
        for key in acted_on if policy == "release" else booked if policy == "flag" else ():
            before = dict(conn.execute("SELECT * FROM appointments WHERE id = ?", (key,)).fetchone())
            if policy == "release":
                cancelled(clinic, conn, before, at, "no answer to reminder", "appointment.released", source)
                continue
            after = set_status(conn, key, "unanswered", at)
            record_event(conn, at, source, "appointment.unanswered", "appointment", key, before=before, after=after)
        cycle = conn.execute(
            "INSERT INTO reminder_cycles (voice_agent_config_id, days, execution_date, center_id, policy,"
            " appointment_ids, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (config_id, ",".join(days), execution, center_id or "", policy, json.dumps(acted_on), utc_iso(at)))
        record_event(conn, at, source, "reminder.closed", "reminder_cycle", cycle.lastrowid,
                     after={"voiceAgentConfigId": config_id, "days": days, "centerId": center_id,
                            "policy": policy, "appointmentIds": acted_on, "skipAppointmentIds": sorted(skipped)})
    return {"processed": len(acted_on), "repeated": False}


def last_cycle(conn):
    """The reminder cycle closed last (a reminder_cycles row), or None."""
    return conn.execute("SELECT * FROM reminder_cycles ORDER BY closed_at DESC, id DESC LIMIT 1").fetchone()


def unconfirmed(clinic, days, skipped, center_id):
    """(ids of the live unconfirmed appointments of these days, those of them still only booked), sorted;
    never one the patient came to, one to call or one the patients' page holds ("Attendance", "To call", "Patients
    book themselves")."""
    where = (f"a.date IN ({','.join('?' * len(days))}) AND a.status IN ('booked', 'unanswered')"
             f" AND coalesce(a.attendance, '') NOT IN ('arrived', 'seen') AND NOT {TO_CALL} AND a.pending IS NULL")
    params = [*days]
    if skipped:
        where += " AND CAST(a.id AS TEXT) NOT IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(sorted(skipped)))
    if center_id is not None:
        where += " AND a.center_id = ?"
        params.append(center_id)
    rows = clinic.conn().execute(f"SELECT a.id, a.status FROM appointments a WHERE {where} ORDER BY a.id",
                               params).fetchall()
    return [row["id"] for row in rows], [row["id"] for row in rows if row["status"] == "booked"]
