"""The outbox's one owner ("A patient's messages", "The sender"): which change calls for which message, written in
the change's own transaction as the appointment and the kind of message only; which reminders are due; what
became of each message. The sender renders and sends them. No HTTP, no SMTP here."""

import datetime as dt

from ..values.refusals import ClinicError, invalid
from ..storage.events import recall, record_event, remember, utc_iso
from .identity import identity
from .appointments import TO_CALL

# The messages a change calls for: a booking's confirmation, one for a whole series, a move's update, a
# cancellation's notice (by the caller, the desk, the patient's link or a reminder cycle's release). An import's
# and an erasure's changes call for none. A reminder is queued by the sender, the configured hours before.
# Reception may send a visit's current state on purpose ('state'), at most once every STATE_EVERY a visit.
# The patients' own booking page asks them to confirm by its link ('web', "Patients book themselves").
KINDS = ("confirmation", "series", "update", "notice", "reminder", "state", "web")
STATE_EVERY = dt.timedelta(minutes=5)
# What became of a message (schema.sql, version 18).
STATES = ("waiting", "held", "sent", "stale", "skipped", "failed")
# Seconds before each new try of a message the server did not take; after the last, it is marked failed.
RETRY_AFTER = (30, 120, 600, 1800, 3600, 3 * 3600, 6 * 3600)
# Why a message was not sent to anyone: no address, messages stopped, a blocked patient, an erasure under way.
SKIPPED = ("no_email", "messages_stopped", "blocked", "erasure")
# Why a later change made a message moot (`moot`), kept in `error` as a skipped one's why is.
STALE = ("ended", "cancelled", "told_later", "never_told", "moved", "to_call")
# What a move or another visit type changes that a message tells: a change of none of it writes no message.
TOLD = ("date", "time", "end_time", "center_id", "doctor_id", "type_id")


def queue_message(conn, appointment_id, kind, at, slot=None):
    """Inside the change's transaction: a message of `kind` about this appointment, to send."""
    if kind not in KINDS:
        raise ValueError(f"no message of kind {kind!r}")
    conn.execute("INSERT INTO outbox (appointment_id, kind, created_at, slot) VALUES (?, ?, ?, ?)",
                 (int(appointment_id), kind, utc_iso(at), slot))


def recipient(clinic, patient_id, reader, kind="message"):
    """Who a message about this patient's visits is written to: (their identity, None), or (None, why) with why
    one of SKIPPED ("The sender"); the read noted for `reader` as `kind`."""
    try:
        return recipient_of(identity(clinic, patient_id, reader, kind))
    except ClinicError:
        return None, "blocked"


def recipient_of(person):
    """The rule of `recipient` over a patient already read through the one door (its `email` and `messages`)."""
    if not person["email"]:
        return None, "no_email"
    return (person, None) if person["messages"] == 1 else (None, "messages_stopped")


def send_state(clinic, appointment_id, source, at):
    """Reception's deliberate act ("What a message says"): a message of the visit's state now, queued. Refused for
    a visit cancelled, ended or waiting for the patient's confirmation of the page, a patient nobody can be written
    to for, or one sent within STATE_EVERY. The patient's id."""
    visit = clinic.conn().execute("SELECT patient_id, status, date, end_time, pending FROM appointments WHERE id = ?",
                                  (int(appointment_id),)).fetchone()
    if visit is None:
        raise ClinicError("APPOINTMENT_NOT_FOUND", "no appointment with that appointmentId")
    ends = dt.datetime.fromisoformat(f"{visit['date']}T{visit['end_time']}").replace(tzinfo=clinic.tz)
    if visit["status"] == "cancelled" or ends <= at:
        raise invalid("only a coming visit's state can be sent", "mail_not_coming")
    if visit["pending"] == "email":  # its own message asks the patient to confirm it: no link of theirs before then
        raise invalid("this visit waits for the patient's confirmation by e-mail", "mail_pending")
    person, why = recipient(clinic, visit["patient_id"], source, "change")
    if person is None:
        raise invalid(f"no message can go to this patient: {why}", "mail_none")
    with clinic.db.transaction() as conn:
        if conn.execute("SELECT 1 FROM outbox WHERE appointment_id = ? AND kind = 'state' AND created_at > ?",
                        (int(appointment_id), utc_iso(at - STATE_EVERY))).fetchone():
            raise invalid("this visit's state was sent a moment ago: wait a few minutes", "mail_recent")
        queue_message(conn, appointment_id, "state", at)
        record_event(conn, at, source, "appointment.mailed", "appointment", int(appointment_id))
    return visit["patient_id"]


def last_message_id(conn):
    """The newest outbox row's id (0 for none): a change's own message is newer."""
    return conn.execute("SELECT coalesce(max(id), 0) FROM outbox").fetchone()[0]


def change_message(conn, appointment_id, after):
    """The message a change wrote about this appointment (the newest after outbox row `after`), or None."""
    return conn.execute("SELECT * FROM outbox WHERE appointment_id = ? AND id > ? AND kind != 'reminder' ORDER BY id"
                        " DESC LIMIT 1", (int(appointment_id), int(after))).fetchone()


def tells_anew(before, after):
    """Whether a move from the appointments row `before` to `after` changed what a message tells the patient."""
    return any(before[key] != after[key] for key in TOLD)


def queue_reminders(clinic, at):
    """A reminder for each live visit starting within the clinic's reminder hours of `at`, not yet reminded at its
    time, told of before that window opened, not on the list to call ("To call"), whose patient wants messages: found by a
    read, then written in one short transaction only when some are due. How many."""
    hours = clinic.settings.reminder_hours
    if not hours:
        return 0
    now, until = at.astimezone(clinic.tz), (at + dt.timedelta(hours=hours)).astimezone(clinic.tz)
    rows = clinic.conn().execute(
        f"""SELECT a.id, a.date, a.time, coalesce((SELECT max(o.created_at) FROM outbox o WHERE o.appointment_id
            = a.id AND o.kind IN ('confirmation', 'series', 'update', 'state')), a.created_at) AS told_at
        FROM appointments a JOIN live_patients p ON p.id = a.patient_id
        WHERE a.date BETWEEN ? AND ? AND a.status != 'cancelled' AND a.attendance IS NULL
          AND p.messages = 1 AND p.email IS NOT NULL AND NOT {TO_CALL} AND a.pending IS NOT 'email'
          AND NOT EXISTS (SELECT 1 FROM outbox r WHERE r.appointment_id = a.id AND r.kind = 'reminder'
                          AND r.slot = a.date || ' ' || a.time)""",
        (now.date().isoformat(), until.date().isoformat())).fetchall()
    due = [row for row in rows if now < local_start(row, clinic.tz) <= until
           and dt.datetime.fromisoformat(row["told_at"]) <= local_start(row, clinic.tz) - dt.timedelta(hours=hours)]
    if not due:
        return 0
    with clinic.db.transaction() as conn:  # each still at its time, still not reminded: a change since is seen
        return sum(conn.execute(
            "INSERT INTO outbox (appointment_id, kind, created_at, slot) SELECT a.id, 'reminder', ?1, ?2"
            " FROM appointments a WHERE a.id = ?3 AND a.status != 'cancelled' AND a.date || ' ' || a.time = ?2"
            " AND NOT EXISTS (SELECT 1 FROM outbox r WHERE r.appointment_id = a.id AND r.kind = 'reminder'"
            " AND r.slot = ?2)", (utc_iso(at), f"{row['date']} {row['time']}", row["id"])).rowcount for row in due)


def local_start(row, zone):
    """When an appointments row's visit starts, in the clinic's zone."""
    return dt.datetime.fromisoformat(f"{row['date']}T{row['time']}").replace(tzinfo=zone)


def due_messages(conn, at, limit=50):
    """The waiting messages whose time has come, oldest first, each the first one still waiting or held for its
    appointment (a patient reads their messages in the order they were written)."""
    return conn.execute(
        "SELECT o.* FROM outbox o WHERE o.state = 'waiting' AND (o.next_try_at IS NULL OR o.next_try_at <= ?)"
        " AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.appointment_id = o.appointment_id AND e.id < o.id"
        " AND e.state IN ('waiting', 'held')) ORDER BY o.id LIMIT ?", (utc_iso(at), limit)).fetchall()


def moot(conn, message, appointment, now):
    """Why a later change made this message stale (one of STALE), or None: its visit has ended, a cancelled visit is
    told only by its notice and a notice only of what the patient was told of, a later message of its appointment
    tells the visit's time anew (a series' message lists every visit of it, as they are then), a reminder's visit
    moved or is on the list to call, the page's first message's visit is confirmed already, or any other of a visit
    still waiting for its patient's confirmation by e-mail. `now`: the clinic's zone."""
    ends = dt.datetime.fromisoformat(f"{appointment['date']}T{appointment['end_time']}").replace(tzinfo=now.tzinfo)
    if ends <= now:
        return "ended"
    if message["kind"] != "notice" and appointment["status"] == "cancelled":
        return "cancelled"
    if message["kind"] == "notice" and not told_of(conn, message):
        return "never_told"
    if message["kind"] == "web" and appointment["pending"] != "email":  # confirmed already: its confirmation tells
        return "told_later"
    if message["kind"] not in ("web", "notice") and appointment["pending"] == "email":  # no link before confirmed:
        return "told_later"  # the confirmation they are sent then tells the visit as it is
    if message["kind"] in ("confirmation", "update", "reminder", "state") and conn.execute(
            "SELECT 1 FROM outbox WHERE appointment_id = ? AND id > ? AND state = 'waiting' AND kind IN"
            " ('confirmation', 'update', 'notice', 'state')", (message["appointment_id"], message["id"])).fetchone():
        return "told_later"
    if message["kind"] == "reminder":
        if message["slot"] != f"{appointment['date']} {appointment['time']}":
            return "moved"
        if conn.execute(f"SELECT 1 FROM appointments a WHERE a.id = ? AND {TO_CALL}", (appointment["id"],)).fetchone():
            return "to_call"
    return None


def told_of(conn, message):
    """Whether a message sent before this one told the patient of its visit: one about the visit, or its series'."""
    return conn.execute(
        "SELECT 1 FROM outbox o JOIN appointments a ON a.id = o.appointment_id WHERE o.state = 'sent' AND o.id < ?1"
        " AND (o.appointment_id = ?2 OR o.kind = 'series' AND a.series_id = (SELECT series_id FROM appointments"
        " WHERE id = ?2))", (message["id"], message["appointment_id"])).fetchone() is not None


def make_clinic_id(conn):
    """Inside a transaction: the clinic's own id made, random, unless it was made before ("What a message says")."""
    conn.execute("INSERT OR IGNORE INTO clinic_identity (one, id, told_before) VALUES (1, lower(hex(randomblob(16))),"
                 " 0)")


def calendar_uids(conn, appointment_ids):
    """{appointment id: its calendar UID} ("What a message says"): unique in the world, by the clinic's own id; a
    visit a message sent before that id was made told of keeps the UID it went with. After `make_clinic_id`."""
    clinic_id, told_before = conn.execute("SELECT id, told_before FROM clinic_identity").fetchone()
    kept = {row[0] for row in conn.execute(
        "SELECT a.id FROM appointments a WHERE a.id IN (SELECT value FROM json_each(?1)) AND EXISTS (SELECT 1 FROM"
        " outbox o JOIN appointments s ON s.id = o.appointment_id WHERE o.id <= ?2 AND o.state = 'sent' AND"
        " (o.appointment_id = a.id OR o.kind = 'series' AND s.series_id = a.series_id))",
        (f"[{','.join(str(int(key)) for key in appointment_ids)}]", told_before))}
    return {int(key): f"appointment-{key}@agenda" if int(key) in kept else f"appointment-{key}.{clinic_id}@agenda"
            for key in appointment_ids}


def told_before(conn, message):
    """The visit's date and time ('YYYY-MM-DD HH:MM') the last message sent before this one told, or None when none
    was sent (an update then reads as a confirmation)."""
    row = conn.execute("SELECT slot FROM outbox WHERE appointment_id = ? AND state = 'sent' AND id < ? ORDER BY id"
                       " DESC LIMIT 1", (message["appointment_id"], message["id"])).fetchone()
    return None if row is None else row["slot"] or ""


def first_to(conn, patient_id):
    """Whether no message was ever sent about this patient's visits (the first says messages are on)."""
    return conn.execute("SELECT 1 FROM outbox o JOIN appointments a ON a.id = o.appointment_id"
                        " WHERE a.patient_id = ? AND o.state = 'sent'", (patient_id,)).fetchone() is None


def start_try(conn, message_id, at, slot=None):
    """Inside a transaction: one more try of this message, the visit's time it tells (`slot`) kept from the first
    try. Its Message-ID, written with the row ("The sender"), or None when the message is no longer waiting."""
    row = conn.execute("SELECT state, message_id FROM outbox WHERE id = ?", (message_id,)).fetchone()
    if row is None or row["state"] != "waiting":
        return None
    conn.execute("UPDATE outbox SET attempts = attempts + 1, slot = coalesce(slot, ?) WHERE id = ?", (slot, message_id))
    return row["message_id"]


def finish(conn, message_id, state, at, error=None):
    """Inside a transaction: the message sent, stale, skipped or failed, with why (never an address): a skipped
    one's why is one of SKIPPED, a stale one's of STALE; a failed one's is kept as the last refusal too."""
    if state not in ("sent", "stale", "skipped", "failed"):
        raise ValueError(f"a message does not end as {state!r}")
    conn.execute("UPDATE outbox SET state = ?, done_at = ?, error = ?, next_try_at = NULL WHERE id = ?",
                 (state, utc_iso(at), error, message_id))
    if state == "failed":
        remember(conn, "mail_refused", error, at)


def try_again(conn, message_id, at, error):
    """Inside a transaction: the server did not take the message; another try after a growing wait, or marked
    failed once the tries are spent. True when it will be tried again."""
    attempts = conn.execute("SELECT attempts FROM outbox WHERE id = ?", (message_id,)).fetchone()["attempts"]
    if attempts > len(RETRY_AFTER):
        finish(conn, message_id, "failed", at, error)
        return False
    wait = RETRY_AFTER[max(0, attempts - 1)]
    conn.execute("UPDATE outbox SET next_try_at = ?, error = ? WHERE id = ?",
                 (utc_iso(at + dt.timedelta(seconds=wait)), error, message_id))
    remember(conn, "mail_refused", error, at)
    return True


def clinic_refused(conn, message_id, at, error):
    """Inside a transaction: the server refused the clinic itself (its login, its sender, its TLS), no fault of
    the patient's: the try does not count against the message, which waits with why ("The sender")."""
    try_undone(conn, message_id, error)
    remember(conn, "mail_refused", error, at)


def try_undone(conn, message_id, error=None):
    """Inside a transaction: the last try of a message did not reach the server (the replica did not confirm it,
    the server refused the clinic), so it does not count against the message; `error`, why, when given."""
    conn.execute("UPDATE outbox SET attempts = max(attempts - 1, 0), error = coalesce(?, error) WHERE id = ?",
                 (error, message_id))


def skip_unsent(conn, patient_id, at):
    """Inside an erasure: nothing more is sent about the patient's visits."""
    conn.execute("UPDATE outbox SET state = 'skipped', done_at = ?, error = 'erasure' WHERE state IN"
                 " ('waiting', 'held') AND appointment_id IN (SELECT id FROM appointments WHERE patient_id = ?)",
                 (utc_iso(at), int(patient_id)))


def hold_unsent(conn):
    """Inside a transaction, after a restore or a promotion: every message not yet sent waits for the admin (the
    machine before may have sent it). How many."""
    return conn.execute("UPDATE outbox SET state = 'held' WHERE state = 'waiting'").rowcount


def release(clinic, ids=None):
    """Held and failed messages (these ids, else all) waiting again, to be sent now or dropped as stale. How many."""
    with clinic.db.transaction() as conn:
        return conn.execute(
            "UPDATE outbox SET state = 'waiting', next_try_at = NULL, attempts = 0 WHERE state IN ('held', 'failed')"
            " AND (?1 IS NULL OR id IN (SELECT value FROM json_each(?1)))",
            (None if ids is None else f"[{','.join(str(int(i)) for i in ids)}]",)).rowcount


def outbox_counts(conn):
    """{state: how many} of every message."""
    counts = dict.fromkeys(STATES, 0)
    counts.update(dict(conn.execute("SELECT state, count(*) FROM outbox GROUP BY state").fetchall()))
    return counts


def mail_summary(conn):
    """What `agenda status` says of the messages: {state: how many}, when the oldest waiting one was written (UTC)
    or None, and the last refusal: (why, when) or (None, None)."""
    oldest = conn.execute("SELECT min(created_at) FROM outbox WHERE state = 'waiting'").fetchone()[0]
    return outbox_counts(conn), oldest, recall(conn, "mail_refused")


def waiting_on_admin(clinic, limit=200):
    """The held and failed messages, and the waiting ones a server refused, oldest first: id, kind, state,
    created_at, attempts, error, and the appointment's id, date, time, doctor and center (never who)."""
    return [dict(row) for row in clinic.conn().execute(
        "SELECT o.id, o.appointment_id, o.kind, o.state, o.created_at, o.attempts, o.error, a.date, a.time,"
        " a.doctor_id, a.center_id FROM outbox o JOIN appointments a ON a.id = o.appointment_id"
        " WHERE o.state IN ('held', 'failed') OR o.state = 'waiting' AND o.error IS NOT NULL ORDER BY o.id LIMIT ?",
        (limit,))]


def messages_of(clinic, appointment_id):
    """What was written to the patient about one appointment, oldest first: kind, state, created_at, done_at."""
    return [dict(row) for row in clinic.conn().execute(
        "SELECT id, kind, state, created_at, done_at, attempts, error FROM outbox WHERE appointment_id = ?"
        " ORDER BY id", (int(appointment_id),))]
