"""The audit trail and the service's own facts: `record_event` ("Audit"), the row a write wrote, and
`remember`/`recall` of what `agenda status` shows (scheme seen, last backup); the counts a copy is checked by."""

import datetime as dt
import json


def utc_iso(moment):
    """An aware datetime as ISO text in UTC, to the second (how times are stored)."""
    return moment.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


_STORED_JSON = json.JSONEncoder(ensure_ascii=False)  # events and service_state


def record_event(conn, at, source, action, entity, entity_id, before=None, after=None):
    """Every change leaves a row saying when, from where, what, and the rows around it ("Audit")."""
    conn.execute(
        "INSERT INTO events (at, source, action, entity, entity_id, before, after)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (utc_iso(at), source, action, entity, None if entity_id is None else str(entity_id),
         None if before is None else _STORED_JSON.encode(before),
         None if after is None else _STORED_JSON.encode(after)))


def latest_event_id(conn):
    """A number that grows with every change: the newest event's id (0 before any)."""
    return conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]


def remember(conn, key, value, at):
    """Keep one fact about the service for `agenda status` (scheme seen, last backup)."""
    conn.execute(
        "INSERT INTO service_state (key, value, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (key, _STORED_JSON.encode(value), utc_iso(at)))


def recall(conn, key):
    """(value, updated_at) of a fact kept by `remember`, or (None, None)."""
    row = conn.execute("SELECT value, updated_at FROM service_state WHERE key = ?", (key,)).fetchone()
    return (None, None) if row is None else (json.loads(row["value"]), row["updated_at"])


def database_counts(conn):
    """What an admin checks a copy by: patients, appointments (live ones too), doctors."""
    return dict(conn.execute(
        "SELECT (SELECT count(*) FROM patients) AS patients,"
        " (SELECT count(*) FROM appointments) AS appointments,"
        " (SELECT count(*) FROM appointments WHERE status != 'cancelled') AS live_appointments,"
        " (SELECT count(*) FROM doctors) AS doctors,"
        " (SELECT count(*) FROM centers) AS centers").fetchone())


def written_row(conn, sql, params):
    """The row that an INSERT, or an UPDATE of one row, wrote, as the statement itself
    returns it ("Audit": the event's `after`)."""
    (row,) = conn.execute(f"{sql} RETURNING *", params).fetchall()
    return dict(row)
