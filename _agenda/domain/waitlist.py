"""The waiting list ("Waiting list"): patients who want an earlier slot, and which free slots fit them,
oldest first. Nothing is booked or reserved without a person. No HTTP here."""

import datetime as dt
from typing import NamedTuple

from ..values.refusals import ClinicError, invalid
from ..values.fields import format_date, numeric_id, parse_time
from ..storage.events import record_event, utc_iso, written_row
from .identity import identities
from .visits import visit_type
from .booking import end_entry
from .availability import availability

AHEAD_DAYS = 14  # how far the "free now" list looks
FREE_SLOTS, NAMED_UNDER = 30, 3  # the "free now" list's most slots, and waiting patients named under each
PAGE = 50  # waiting entries a page


class Wish(NamedTuple):
    """What a waiting patient asks for: a doctor or a speciality (or a visit type's area), where, from `first` to
    `last` between two times of day (any when None), the type and insurance to book with, a note, and the later
    appointment of theirs it would bring forward."""
    patient_id: object
    first: dt.date
    last: dt.date
    doctor_id: str | None = None
    speciality_id: str | None = None
    center_id: str | None = None
    time_from: str | None = None
    time_to: str | None = None
    note: str | None = None
    type_id: str | None = None
    appointment_id: object = None
    insurance_id: str | None = None


def add_waiting(clinic, wish, *, source):
    """Put a patient on the list as `wish` (a `Wish`) asks: for a doctor or a speciality (a visit type's area when
    it names one, and then only slots where that type fits), with the insurance to book with; naming the patient's
    later appointment it would bring forward (its doctor, type and insurance the defaults), which a booking from the
    entry then moves. Its id."""
    later = brings_forward(clinic, wish.patient_id, wish.appointment_id) if wish.appointment_id else None
    if later is not None:  # its doctor, type and insurance the defaults
        wish = wish._replace(type_id=wish.type_id or later["type_id"],
                             insurance_id=wish.insurance_id or later["insurance_id"],
                             doctor_id=wish.doctor_id or (None if wish.speciality_id else later["doctor_id"]))
    kind = visit_type(clinic.conn(), wish.type_id) if wish.type_id else None
    if wish.type_id and kind is None:
        raise ClinicError("SPECIALITY_NOT_FOUND", "no visit type with that id")
    speciality_id = wish.speciality_id or (kind.speciality_id if kind and not wish.doctor_id else None)
    if (wish.doctor_id is None) == (speciality_id is None):
        raise invalid("give a doctor or a speciality", "doctor_or_speciality")
    if wish.last < wish.first or wish.last < clinic.today():
        raise invalid("the window must end today or later, after it starts", "window")
    start, end = parse_time(wish.time_from, "timeFrom") if wish.time_from else "00:00", \
        parse_time(wish.time_to, "timeTo") if wish.time_to else "24:00"
    if end <= start:
        raise invalid("the times of day need a start and a later end", "times_of_day")
    entry = {"doctor_id": wish.doctor_id, "speciality_id": speciality_id, "center_id": wish.center_id,
             "date_from": wish.first.isoformat(), "date_to": wish.last.isoformat(), "time_from": start,
             "time_to": end, "type_id": wish.type_id, "appointment_id": later and later["id"],
             "insurance_id": wish.insurance_id}
    return written_entry(clinic, wish.patient_id, entry, wish.note, later, source)


def written_entry(clinic, patient_id, entry, note, later, source):
    """The entry checked against the catalogs (the appointment it brings forward of its area) and written, in
    one transaction; the one already waiting when it is the same sent twice. Its id."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        patient = {"id": clinic.require_patient(patient_id)}
        if entry["doctor_id"]:
            area = clinic.require_doctor(entry["doctor_id"])["speciality_id"]
        else:
            area = entry["speciality_id"]
            clinic.require_speciality(area)
        if later is not None and later["speciality_id"] != area:
            raise invalid("the appointment to bring forward is of another speciality", "brings_forward_area",
                          "appointmentId")
        if entry["insurance_id"]:
            clinic.require_insurance(entry["insurance_id"])
        clinic.require_center(entry["center_id"])
        names = list(entry)
        same = conn.execute("SELECT id FROM waitlist WHERE ended_at IS NULL AND patient_id = ? AND "
                            + " AND ".join(f"{name} IS ?" for name in names), (patient["id"], *entry.values())).fetchone()
        if same is not None:  # the same entry sent twice: the one waiting
            return str(same["id"])
        row = written_row(conn, f"INSERT INTO waitlist (patient_id, note, created_at, {', '.join(names)}) VALUES"
                          f" (?, ?, ?{', ?' * len(names)})", (patient["id"], note, utc_iso(at), *entry.values()))
        record_event(conn, at, source, "waitlist.added", "waitlist", row["id"], after=row)
    return str(row["id"])


def brings_forward(clinic, patient_id, appointment_id):
    """The appointment row a new entry would bring forward: this patient's, live, from today on; else refused."""
    row = clinic.conn().execute(
        "SELECT id, doctor_id, speciality_id, type_id, insurance_id FROM appointments WHERE id = ? AND patient_id = ?"
        " AND status != 'cancelled' AND date >= ?",
        (numeric_id(appointment_id), numeric_id(patient_id), clinic.today().isoformat())).fetchone()
    if row is None:
        raise invalid("the appointment to bring forward must be a live one of that patient, from today on",
                      "brings_forward", "appointmentId")
    return dict(row)


def later_appointments(clinic, patient_id):
    """The patient's live appointments from today on (id, date, time, the doctor's name), soonest first, at most
    PAGE: what a new waiting entry may bring forward. Nothing of who the patient is."""
    return [dict(row) for row in clinic.conn().execute(
        "SELECT a.id, a.date, a.time, d.name AS doctor_name FROM appointments a JOIN doctors d ON d.id = a.doctor_id"
        " WHERE a.patient_id = ? AND a.status != 'cancelled' AND a.date >= ? ORDER BY a.date, a.time LIMIT ?",
        (numeric_id(patient_id), clinic.today().isoformat(), PAGE))]


def end_waiting(clinic, entry_id, why, source):
    """Take an entry off the list ('removed'; a booking ends its own, "One door for an appointment").
    WAITLIST_NOT_FOUND when it is not waiting."""
    at, key = clinic.clock(), numeric_id(entry_id)
    with clinic.db.transaction() as conn:
        before = None if key is None else conn.execute("SELECT * FROM waitlist WHERE id = ? AND ended_at IS NULL",
                                                       (key,)).fetchone()
        if before is None:
            raise ClinicError("WAITLIST_NOT_FOUND", "no one waiting with that id")
        end_entry(conn, dict(before), why, at, source)


def waiting(clinic):
    """Everyone waiting now (window not passed), oldest first, with the date and time of the live appointment each
    would bring forward, if any; without who they are (`named` adds it)."""
    found = [dict(row) for row in clinic.conn().execute(
        "SELECT w.*, d.name AS doctor_name, f.date AS forward_date, f.time AS forward_time FROM waitlist w"
        " JOIN live_patients p ON p.id = w.patient_id LEFT JOIN doctors d ON d.id = w.doctor_id"
        " LEFT JOIN appointments f ON f.id = w.appointment_id AND f.status != 'cancelled'"
        " WHERE w.ended_at IS NULL AND w.date_to >= ?"
        " ORDER BY w.created_at, w.id", (clinic.today().isoformat(),))]
    return found


def named(clinic, entries, reader):
    """Waiting entries with the patient's name and phone, through the one door (the read noted for `reader`)."""
    people = identities(clinic, [entry["patient_id"] for entry in entries], reader, "day")
    return [{**entry, "patient_name": people[entry["patient_id"]]["full_name"],
             "phone": people[entry["patient_id"]]["phone"]} for entry in entries if entry["patient_id"] in people]


def fits(entry, slot):
    """Whether a free slot (Slot) is what this waiting entry asks for (a slot listed for its visit type, when it
    names one: its whole length fits there; before the appointment it would bring forward, when it names one)."""
    iso = slot.date.isoformat()
    return (entry["doctor_id"] in (None, slot.doctor_id) and (entry["type_id"] or entry["speciality_id"]) in (
                slot.speciality_id, None if entry["type_id"] is None else slot.speciality_id)
            and entry["center_id"] in (None, slot.center_id) and entry["date_from"] <= iso <= entry["date_to"]
            and entry["time_from"] <= slot.time < entry["time_to"]
            and (iso, slot.time) < (entry.get("forward_date") or "9999", entry.get("forward_time") or ""))


def free_now(clinic, entries, days=AHEAD_DAYS, most=FREE_SLOTS):
    """The first `most` free slots of the next `days` that fit someone waiting, none begun: [(slot, [entries,
    oldest first])]."""
    today, found, now = clinic.today(), [], clinic.clock().astimezone(clinic.tz)
    begun = (today.isoformat(), f"{now:%H:%M}")  # a walk-in's cell under way is no slot to phone someone for
    asked = sorted({(entry["doctor_id"], entry["type_id"] or (None if entry["doctor_id"] else entry["speciality_id"]))
                    for entry in entries}, key=str)
    slots = {}
    for doctor_id, speciality_id in asked:
        for slot in availability(clinic, doctor_id=doctor_id, speciality_id=speciality_id, first=today,
                                 last=today + dt.timedelta(days=days), channel="desk"):
            if (slot.date.isoformat(), slot.time) > begun:
                slots[(slot.date, slot.time, slot.doctor_id, slot.speciality_id)] = slot
    for key in sorted(slots):
        fitting = [entry for entry in entries if fits(entry, slots[key])]
        if fitting:
            found.append((slots[key], fitting))
        if len(found) == most:
            break
    return found


def window_text(entry):
    """An entry's window as reception reads it: DD/MM/YYYY–DD/MM/YYYY, HH:MM–HH:MM when narrowed."""
    times = "" if (entry["time_from"], entry["time_to"]) == ("00:00", "24:00") else \
        f", {entry['time_from']}–{entry['time_to']}"
    return f"{format_date(entry['date_from'])}–{format_date(entry['date_to'])}{times}"
