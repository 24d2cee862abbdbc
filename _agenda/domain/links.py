"""The patient's own links' one owner ("The patient's link"): a token made for one message or card about one
appointment, only its hash kept; what it opens; and what the patient may do there, each through the one door
as the channel `patient`, with the caller's window and rules. No HTTP here."""

import datetime as dt
import hashlib
import json
import re
import secrets

from ..values.refusals import ClinicError
from ..storage.events import record_event, utc_iso
from .appointments import CHANGE_CANCELLED, TO_CALL
from .slots import slot_not_available
from .availability import availability
from .changes import cancel_appointment, confirm_appointment, move_appointment
from .identity import identity
from .patients import set_messages, sharing_address

TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{32,64}")  # secrets.token_urlsafe(24): 192 bits in 32 characters
STOP_DAYS = 365  # how long a message's one-click stop works
MOVE_DAYS = 13  # one look for free times to move to reads its first day and 13 more: the caller's first look
SOURCE = "patient"  # who the audit trail and the access record say acted: the patient, by their link


def link_hash(token):
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


def new_link(conn, appointment_id, made_for, at):
    """Inside a transaction: a new token opening this appointment (made for a 'message', a printed 'card', or a
    message's one-click 'stop'); only its hash is kept. The token."""
    token = secrets.token_urlsafe(24)
    conn.execute("INSERT INTO patient_links (hash, appointment_id, made_at, made_for) VALUES (?, ?, ?, ?)",
                 (link_hash(token), int(appointment_id), utc_iso(at), made_for))
    return token


def forget_links(conn, patient_id, made_for=("message", "card", "stop")):
    """Inside a change: the links made for `made_for` to the patient's appointments stop (all at an erasure, the
    messages' at a change of the address they went to)."""
    conn.execute("DELETE FROM patient_links WHERE appointment_id IN (SELECT id FROM appointments WHERE patient_id = ?)"
                 " AND made_for IN (SELECT value FROM json_each(?))", (int(patient_id), json.dumps(list(made_for))))


def opened(clinic, token, stop=False):
    """What a token opens, or None (unknown, ended, its patient blocked, its visit still waiting for the patient's
    confirmation of their booking page): the appointment with its doctor's, center's
    and type's names, `to_call` and the patient's `language` (none is Spanish). A visit's link lasts until the visit
    ends; a stop link, a year."""
    if not TOKEN_SHAPE.fullmatch(token or ""):
        return None
    row = clinic.conn().execute(
        f"""SELECT a.*, l.made_at, l.made_for, p.language, d.name AS doctor_name, c.name AS center_name,
                   c.address AS center_address, c.phone AS center_phone, t.name AS type_name, t.bring,
                   {TO_CALL} AS to_call
            FROM patient_links l JOIN appointments a ON a.id = l.appointment_id
            JOIN live_patients p ON p.id = a.patient_id JOIN doctors d ON d.id = a.doctor_id
            LEFT JOIN centers c ON c.id = a.center_id LEFT JOIN visit_types t ON t.id = a.type_id
            WHERE l.hash = ? AND a.pending IS NOT 'email'""", (link_hash(token),)).fetchone()
    if row is None or (row["made_for"] == "stop") != stop:
        return None
    found, now = dict(row), clinic.clock()
    if stop:
        return found if dt.datetime.fromisoformat(row["made_at"]) + dt.timedelta(days=STOP_DAYS) > now else None
    found["starts"], found["ends"] = (dt.datetime.fromisoformat(f"{row['date']}T{row[key]}").replace(tzinfo=clinic.tz)
                                      for key in ("time", "end_time"))
    return found if found["ends"] > now else None


def first_name(clinic, appointment):
    """(first name, whether a guardian reads it) of the appointment's patient, read through the one door as the
    patient's own read."""
    person = identity(clinic, appointment["patient_id"], SOURCE, "link")
    return person["name"], person["guardian_id"] is not None


def in_notice(clinic, appointment):
    """Whether the visit is still outside the clinic's cancellation notice (the link may cancel or move it)."""
    notice = dt.timedelta(hours=clinic.settings.cancel_notice_hours)
    return appointment["starts"] - clinic.clock() >= notice


def link_confirm(clinic, appointment):
    """The patient confirms their visit, as the caller's confirm; refused for a visit on the list to call."""
    if appointment["to_call"]:
        raise ClinicError("LINK_TO_CALL", "the clinic will call about this visit: it cannot be confirmed here")
    return confirm_appointment(clinic, appointment["id"], True, source=SOURCE)


def link_cancel(clinic, appointment):
    """The patient cancels their visit, up to the clinic's notice."""
    if not in_notice(clinic, appointment):
        raise ClinicError("LINK_TOO_LATE", "the visit is too near to cancel or move here: call the clinic")
    cancel_appointment(clinic, appointment["id"], reason="cancelled by the patient", source=SOURCE)


def move_choices(clinic, appointment, first=None, last=None):
    """The free slots the patient may move to: same doctor, center and type, the caller's window, from `first`
    (today) to `last` (two weeks on), outside the clinic's cancellation notice (a move there could not be undone
    here). None for a sobrecita, a visit inside the notice, one without a center, or from past the caller's horizon."""
    first = max(first or clinic.today(), clinic.today())
    if appointment["squeezed"] or appointment["center_id"] is None or not in_notice(clinic, appointment) \
            or first > min(last or first, clinic.window().last_day):  # also keeps the arithmetic far from year 9999
        return []
    slots = availability(clinic, doctor_id=appointment["doctor_id"], center_id=appointment["center_id"],
                         speciality_id=appointment["type_id"] or appointment["speciality_id"], first=first,
                         last=last or first + dt.timedelta(days=MOVE_DAYS))
    notice, now = dt.timedelta(hours=clinic.settings.cancel_notice_hours), clinic.clock()
    return [slot for slot in slots if (str(slot.date), slot.time) != (appointment["date"], appointment["time"])
            and slot.center_id == appointment["center_id"] and dt.datetime.combine(
                slot.date, dt.time.fromisoformat(slot.time), tzinfo=clinic.tz) - now >= notice]


def days_to_move(clinic, appointment, first=None, count=5):
    """The free slots of the first `count` days with free times to move to, from `first` (today) on to the caller's
    horizon, two weeks read at a time; and the next day with free times after them, or None."""
    found, day, horizon = [], max(first or clinic.today(), clinic.today()), clinic.window().last_day
    while day <= horizon:
        found += move_choices(clinic, appointment, day, min(day + dt.timedelta(days=MOVE_DAYS), horizon))
        days = sorted({slot.date for slot in found})
        if len(days) > count:
            return [slot for slot in found if slot.date <= days[count - 1]], days[count]
        day += dt.timedelta(days=MOVE_DAYS + 1)
    return found, None


def link_move(clinic, appointment, day, time_text):
    """The patient moves their visit to another free slot of the same doctor, center and type (never a sobrecita),
    up to the clinic's notice, through the one door."""
    if appointment["squeezed"]:
        raise ClinicError("LINK_SQUEEZED", "an urgent visit added by the clinic is moved by the clinic")
    if not in_notice(clinic, appointment):
        raise ClinicError("LINK_TOO_LATE", "the visit is too near to cancel or move here: call the clinic")
    if not any((slot.date, slot.time) == (day, time_text) for slot in move_choices(clinic, appointment, day, day)):
        raise slot_not_available("taken")  # only what the page offers: this doctor, center and type, these days
    return move_appointment(clinic, appointment["id"], day=day, time_text=time_text, source=SOURCE)


DONE_BY_LINK = {"appointment.confirmed": "confirmed", "appointment.moved": "moved",
                "appointment.cancelled": "cancelled"}


def done_by_link(clinic, appointment):
    """What the patient last did to the visit by their link (confirmed, moved, cancelled) when it is the visit's
    last change, else None: what their page may say was done."""
    last = clinic.conn().execute("SELECT source, action FROM events WHERE entity = 'appointment' AND entity_id = ?"
                                 " ORDER BY id DESC LIMIT 1", (str(appointment["id"]),)).fetchone()
    return DONE_BY_LINK.get(last["action"]) if last is not None and last["source"] == SOURCE else None


def link_stop(clinic, appointment):
    """The one-click link of a message: no more messages to its address, about this patient or any other whose
    messages go there (a guardian's children)."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        for patient_id in sharing_address(conn, appointment["patient_id"]):
            if set_messages(conn, patient_id, 0, at, "link") is not None:
                record_event(conn, at, SOURCE, "patient.messages_stopped", "patient", patient_id)


def card_link(clinic, appointment_id):
    """A new link for a live appointment's printed card (reception hands it at the counter); the token."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        appointment = clinic.require_appointment(appointment_id, CHANGE_CANCELLED)
        return new_link(conn, appointment["id"], "card", at)
