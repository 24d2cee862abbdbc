"""Each doctor's calendar feed ("Calendar feeds"): a secret, revocable iCalendar address of their coming
appointments, written with the icalendar library; what an event shows is the clinic's setting. No HTTP here."""

import datetime as dt
import hashlib
import re
import secrets

import icalendar

from ..values.refusals import ClinicError
from ..values.fields import months_after
from ..storage.events import record_event, utc_iso
from .identity import identities

FEED_MONTHS = 18  # how far ahead a feed reaches: the desk's default horizon
FEED_MOST = 1200  # the most appointments a feed holds, the soonest first ("Nothing stalls the caller")
FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]+")  # RFC 5545's CONTROL: no value may hold one


def token_hash(token):
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_feed(clinic, doctor_id, source):
    """A new secret token for the doctor's feed, replacing any earlier one; only its hash is kept."""
    doctor, token, at = clinic.require_doctor(doctor_id), secrets.token_urlsafe(32), clinic.clock()
    with clinic.db.transaction() as conn:
        conn.execute("INSERT INTO doctor_feeds (doctor_id, token_hash, created_at) VALUES (?, ?, ?)"
                     " ON CONFLICT (doctor_id) DO UPDATE SET token_hash = excluded.token_hash,"
                     " created_at = excluded.created_at", (doctor["id"], token_hash(token), utc_iso(at)))
        record_event(conn, at, source, "doctor.feed_made", "doctor", doctor["id"])
    return token


def revoke_feed(clinic, doctor_id, source):
    """End the doctor's feed: its address answers 404 from now on. False when there was none."""
    doctor, at = clinic.require_doctor(doctor_id), clinic.clock()
    with clinic.db.transaction() as conn:
        gone = conn.execute("DELETE FROM doctor_feeds WHERE doctor_id = ?", (doctor["id"],)).rowcount
        if gone:
            record_event(conn, at, source, "doctor.feed_revoked", "doctor", doctor["id"])
    return bool(gone)


def feeds(clinic):
    """[(doctor id, doctor name, when the feed was made)] of the doctors who have one."""
    return [tuple(row) for row in clinic.conn().execute(
        "SELECT f.doctor_id, d.name, f.created_at FROM doctor_feeds f JOIN doctors d ON d.id = f.doctor_id"
        " ORDER BY f.doctor_id")]


def feed_calendar(clinic, token):
    """The iCalendar text (bytes) of the feed this token opens: the doctor's next FEED_MOST live appointments
    from today on; FEED_NOT_FOUND for a token unknown or revoked. Names read are recorded as the feed's."""
    found = clinic.conn().execute("SELECT d.id, d.name FROM doctor_feeds f JOIN doctors d ON d.id = f.doctor_id"
                                  " WHERE f.token_hash = ?", (token_hash(token or ""),)).fetchone()
    if found is None:
        raise ClinicError("FEED_NOT_FOUND", "no such feed")
    today = clinic.today()
    rows = clinic.conn().execute(
        "SELECT a.id, a.date, a.time, a.end_time, a.status, a.reason, a.updated_at, a.squeezed, a.patient_id,"
        " c.name AS center_name FROM appointments a JOIN live_patients p ON p.id = a.patient_id"
        " LEFT JOIN centers c ON c.id = a.center_id WHERE a.doctor_id = ? AND a.status != 'cancelled'"
        " AND a.date BETWEEN ? AND ? ORDER BY a.date, a.time LIMIT ?",
        (found["id"], today.isoformat(), months_after(today, FEED_MONTHS).isoformat(), FEED_MOST)).fetchall()
    shows = clinic.settings.feed_shows
    people = {} if shows == "time" else identities(clinic, [row["patient_id"] for row in rows], f"feed:{found['id']}",
                                                   "feed")
    calendar = icalendar.Calendar()
    calendar.add("prodid", "-//Agenda//doctor feed//ES")
    calendar.add("version", "2.0")
    calendar.add("x-wr-calname", f"Agenda · {found['name']}")
    calendar.add("refresh-interval", dt.timedelta(minutes=15), parameters={"VALUE": "DURATION"})
    for row in rows:
        calendar.add_component(feed_event(row, clinic.tz, shows, people.get(row["patient_id"])))
    calendar.add_missing_timezones()
    return calendar.to_ical()


def calendar_text(text):
    """A value as RFC 5545 allows it: every run of control characters and spaces one space."""
    return " ".join(FORBIDDEN.sub(" ", text).split())


def feed_event(row, zone, shows, person):
    """One appointment as a VEVENT: its number and time, its center; the patient's name (`person`, from the
    one door) and the reason as `shows` says."""
    day = dt.date.fromisoformat(row["date"])
    start, end = (dt.datetime.combine(day, dt.time.fromisoformat(text), tzinfo=zone)
                  for text in (row["time"], row["end_time"]))
    summary = f"Cita {row['id']}" + (" (sobrecita)" if row["squeezed"] else "")
    if shows in ("names", "reasons") and person is not None:
        summary += " · " + (person["full_name"] or "")
    event = icalendar.Event()
    event.add("uid", f"appointment-{row['id']}@agenda")
    event.add("dtstamp", dt.datetime.fromisoformat(row["updated_at"]))
    event.add("dtstart", start)
    event.add("dtend", end)
    event.add("summary", calendar_text(summary))
    event.add("status", "CONFIRMED" if row["status"] == "confirmed" else "TENTATIVE")
    if row["center_name"]:
        event.add("location", calendar_text(row["center_name"]))
    if shows == "reasons" and row["reason"]:
        event.add("description", calendar_text(f"Motivo: {row['reason']}"))
    return event
