"""The web_requests table's one owner ("Patients book themselves"): each booking asked on the patients' own page,
the keys its bounds count by (never what was typed), its confirmation link's hash, and the release of a visit
never confirmed, inside the door's transactions and the sender's pass. No HTTP here."""

import hashlib
import hmac
import ipaddress
import secrets

from ..storage.events import record_event, utc_iso
from .patients import remove_patient
from .appointments import remove_appointment, set_pending

SOURCE = "web"  # who the audit trail and the access record say acted: the patients' page


class Bound:
    """A bound of the page, counted over web_requests by one key ("Patients book themselves"): at most
    `pending` requests waiting for their confirmation at once, `daily` made (each one message sent) in a day."""

    def __init__(self, column, pending, daily):
        self.column, self.pending, self.daily = column, pending, daily


BOUNDS = (Bound("address_key", 3, 10), Bound("email_key", 2, 5), Bound("nif_key", 2, 5))


def address_text(address):
    """What the bound per address counts by: an IPv6 address's /64, an IPv4 address (mapped ones too) whole."""
    try:
        ip = ipaddress.ip_address((address or "").strip())
    except ValueError:
        return (address or "").strip()
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.ip_network(f"{ip}/64", strict=False)) if ip.version == 6 else str(ip)


def keyed(conn, text):
    """Inside a transaction: HMAC-SHA256 of `text` by the clinic's own key (web_key, random, made at the first
    need): a bound counts by it, the text is never kept."""
    conn.execute("INSERT OR IGNORE INTO web_key (one, key) VALUES (1, randomblob(32))")
    key = conn.execute("SELECT key FROM web_key").fetchone()[0]
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def mailbox(email):
    """The mailbox an address reaches, as the bound per e-mail counts it: case-folded, its local part's "+tag"
    left out, as nearly every mail service delivers "ana+1@" to "ana@"."""
    local, at, domain = (email or "").strip().casefold().rpartition("@")
    return f"{local.split('+', 1)[0]}{at}{domain}" if at else domain


def request_keys(conn, address, email, nif):
    """{address_key, email_key, nif_key} of a request: the /64 (or IPv4) address, the folded e-mail, the NIF."""
    return {"address_key": keyed(conn, "a:" + address_text(address)),
            "email_key": keyed(conn, "e:" + mailbox(email)),
            "nif_key": keyed(conn, "n:" + (nif or "").strip().upper())}


def over_bounds(conn, keys, at, since):
    """The first bound (its column) these keys are over now, or None: pending requests (not confirmed, not
    released) and requests made since `since` (a day before `at`), each counted in SQL by its index."""
    for bound in BOUNDS:
        pending, made = conn.execute(
            f"SELECT count(*) FILTER (WHERE confirmed_at IS NULL AND released_at IS NULL AND expires_at > ?2),"
            f" count(*) FROM web_requests WHERE {bound.column} = ?1 AND created_at > ?3",
            (keys[bound.column], utc_iso(at), utc_iso(since))).fetchone()
        if pending >= bound.pending or made >= bound.daily:
            return bound.column
    return None


def pending_web(conn, doctor_id=None, day=None):
    """How many web bookings wait for the patient's e-mail now: the clinic's, or one doctor's on one day."""
    return conn.execute("SELECT count(*) FROM appointments WHERE pending = 'email' AND (?1 IS NULL OR doctor_id = ?1)"
                        " AND (?2 IS NULL OR date = ?2)", (doctor_id, day)).fetchone()[0]


def insert_request(conn, row, at):
    """A request of the page ({appointment_id, patient_id, case_of, typed_nif, doctor_id, date, expires_at and the
    keys}), made at `at`; its id."""
    row = {**row, "created_at": utc_iso(at)}
    return conn.execute(f"INSERT INTO web_requests ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                        tuple(row.values())).lastrowid


def token_hash(token):
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


def new_token(conn, appointment_id):
    """Inside the sender's transaction: a new token for the confirmation link of the request holding this visit,
    only its hash kept (a message tried again makes another; the last one sent opens it). The token, or None."""
    token = secrets.token_urlsafe(24)
    changed = conn.execute("UPDATE web_requests SET token_hash = ? WHERE appointment_id = ?",
                           (token_hash(token), int(appointment_id))).rowcount
    return token if changed else None


def typed_language(conn, appointment_id):
    """The language typed on the page for the request holding this visit (None: Spanish): its first message's."""
    row = conn.execute("SELECT language FROM web_requests WHERE appointment_id = ?", (int(appointment_id),)).fetchone()
    return row and row[0]


def request_of(conn, token):
    """The request a confirmation link's token opens (its row), or None."""
    return conn.execute("SELECT * FROM web_requests WHERE token_hash = ?", (token_hash(token),)).fetchone()


def confirm_request(conn, request, at):
    """Inside a transaction: the patient confirmed by the link; the visit a booking ('new', 'same') or waiting for
    reception ('verify'), its request confirmed. The appointments row after."""
    conn.execute("UPDATE web_requests SET confirmed_at = ? WHERE id = ?", (utc_iso(at), request["id"]))
    return set_pending(conn, request["appointment_id"], "reception" if request["case_of"] == "verify" else None, at)


def end_request(conn, appointment_id, at, by):
    """Inside a transaction: reception matched or refused the request holding this visit; the NIF typed emptied and
    the provisional record no longer its, so that nothing keeps that record once it holds nothing."""
    conn.execute("UPDATE web_requests SET ended_at = ?, ended_by = ?, typed_nif = NULL, patient_id = NULL"
                 " WHERE appointment_id = ?",
                 (utc_iso(at), by, int(appointment_id)))


def release_expired(conn, at):
    """Inside a transaction (the door's, the sender's): each visit still waiting for the patient's e-mail past its
    time released: the visit removed, its request released, and a patient it made with nothing else removed
    ("Patients book themselves"). How many."""
    expired = conn.execute(
        "SELECT a.id, a.patient_id, r.case_of FROM appointments a LEFT JOIN web_requests r ON r.appointment_id = a.id"
        " WHERE a.pending = 'email' AND a.pending_until <= ? ORDER BY a.pending_until", (utc_iso(at),)).fetchall()
    for appointment_id, patient_id, case_of in expired:
        conn.execute("UPDATE web_requests SET released_at = ? WHERE appointment_id = ?", (utc_iso(at), appointment_id))
        remove_appointment(conn, appointment_id)
        record_event(conn, at, SOURCE, "appointment.web_released", "appointment", appointment_id)
        if case_of in ("new", "verify") and remove_patient(conn, patient_id):
            record_event(conn, at, SOURCE, "patient.removed", "patient", patient_id)
    return len(expired)


def release_due(clinic, at):
    """The sender's pass: the release in a short transaction of its own, only once a read finds a visit due."""
    if clinic.conn().execute("SELECT 1 FROM appointments WHERE pending = 'email' AND pending_until <= ? LIMIT 1",
                             (utc_iso(at),)).fetchone() is None:
        return 0
    with clinic.db.transaction() as conn:
        return release_expired(conn, at)
