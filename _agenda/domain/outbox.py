"""The outbox's one owner ("A patient's messages"): which change calls for which message, written in the change's
own transaction as the appointment and the kind of message only; the sender renders and sends them. No HTTP here."""

from ..storage.events import utc_iso

# The messages a change calls for: a booking's confirmation, one for a whole series, a move's update, a
# cancellation's notice (by the caller, the desk, the patient's link or a reminder cycle's release). An import's
# and an erasure's changes call for none.
KINDS = ("confirmation", "series", "update", "notice")


def queue_message(conn, appointment_id, kind, at):
    """Inside the change's transaction: a message of `kind` about this appointment, to send."""
    if kind not in KINDS:
        raise ValueError(f"no message of kind {kind!r}")
    conn.execute("INSERT INTO outbox (appointment_id, kind, created_at) VALUES (?, ?, ?)",
                 (int(appointment_id), kind, utc_iso(at)))
