"""Patients book themselves ("Patients book themselves"): what the clinic's own page offers, its free times, a
booking asked there (one of three cases, one answer), held through the one door as the channel `web` until the
patient confirms it by the e-mail's link, and that confirmation. No HTTP here."""

import datetime as dt
import json
from typing import NamedTuple

from ..values.refusals import ClinicError, invalid
from ..values.fields import all_fields, normalise_nif, parse_date, parse_time, text_field
from ..values.printing import masked
from ..values.settings import web_offer_items
from ..storage.events import record_event, utc_iso
from .patients import insert_patient, patient_fields
from .slots import slot_not_available
from .identity import noted
from .visits import types_offered
from .availability import availability
from .outbox import queue_message
from .booking import admit, Visit
from .web_requests import (confirm_request, insert_request, over_bounds, pending_web, release_expired, request_keys,
                           request_of, SOURCE)
from .links import TOKEN_SHAPE


class WebAsk(NamedTuple):
    """A booking asked on the page: where, with whom (None: cualquiera), what and when; who (for a child without a
    NIF, `nif` is the guardian's), how to reach them, their insurance and language ('es' or 'en')."""
    center_id: str | None
    speciality_id: str | None
    doctor_id: str | None
    type_id: str | None
    day: str
    time: str
    name: str
    surname: str
    birth_date: str
    nif: str
    child: bool
    phone: str
    email: str
    insurance_id: str | None
    language: str


def web_open(clinic):
    """Refuse WEB_CLOSED unless the clinic takes bookings on its page."""
    if clinic.settings.web_booking != "on":
        raise ClinicError("WEB_CLOSED", "the clinic takes no bookings on its page")


def offered(clinic):
    """{doctor id: the visit types the page offers of theirs (None: every one)} of the doctors not retired that
    --web-offer names (empty: every doctor)."""
    items, today = web_offer_items(clinic.settings.web_offer), clinic.today().isoformat()
    doctors = [row[0] for row in clinic.conn().execute(
        "SELECT id FROM doctors WHERE retired_from IS NULL OR retired_from > ? ORDER BY id", (today,))]
    if not items:
        return dict.fromkeys(doctors)
    found = {}
    for item in items:
        doctor, _, kind = item.partition("/")
        if doctor in doctors and found.get(doctor, set()) is not None:
            found[doctor] = None if not kind else found.get(doctor, set()) | {kind}
    return found


def web_offer(clinic):
    """What the page offers: {centers, specialities, doctors: [{id, name, speciality_id, center_ids, types: [{id,
    name, minutes}]}]}, only what the settings offer, by id; WEB_CLOSED when the page is off."""
    web_open(clinic)
    conn, offer = clinic.conn(), offered(clinic)
    kinds = types_offered(conn, list(offer)) if offer else {}
    doctors = []
    for row in conn.execute("SELECT id, name, speciality_id FROM doctors WHERE id IN (SELECT value FROM json_each(?))"
                            " ORDER BY id", (json_list(offer),)):
        centers = [center for (center,) in conn.execute(
            "SELECT DISTINCT center_id FROM schedules WHERE doctor_id = ? ORDER BY center_id", (row["id"],))]
        types = {kind.id: {"id": kind.id, "name": kind.name, "minutes": kind.minutes} for center in centers
                 for kind in kinds.get((row["id"], center), []) if offer[row["id"]] is None
                 or kind.id in offer[row["id"]]}
        if centers and (types or offer[row["id"]] is None):
            doctors.append({**dict(row), "center_ids": centers, "types": sorted(types.values(), key=by_id)})
    centers = {center for doctor in doctors for center in doctor["center_ids"]}
    specialities = {doctor["speciality_id"] for doctor in doctors}
    return {"centers": [dict(row) for row in conn.execute("SELECT id, name FROM centers ORDER BY id")
                        if row["id"] in centers],
            "specialities": [dict(row) for row in conn.execute("SELECT id, name FROM specialities ORDER BY id")
                             if row["id"] in specialities],
            "doctors": doctors}


def by_id(item):
    return item["id"]


def json_list(values):
    return json.dumps(sorted(values))


def web_times(clinic, *, center_id, speciality_id, doctor_id, type_id, week_start):
    """[(ISO day, [(time, doctor id)])] of the 7 days from `week_start` (a date or its text): the caller's slot
    decision in the page's window, of the doctors and types the page offers (a doctor, or cualquiera of the
    speciality), a doctor's day left out once it holds as many pending web bookings as --web-pending-per-day allows."""
    web_open(clinic)
    if isinstance(week_start, str):
        week_start = parse_date(week_start, "week")
    window, days = clinic.window("web"), [week_start + dt.timedelta(days=n) for n in range(7)]
    found = {day: [] for day in days}
    first, last = max(week_start, clinic.today()), min(days[-1], window.last_day)
    if first <= last:
        for doctor in chosen_doctors(clinic, speciality_id, doctor_id, type_id):
            for slot in availability(clinic, doctor_id=doctor, center_id=center_id, speciality_id=type_id,
                                     first=first, last=last, channel="web"):
                found[slot.date].append((slot.time, slot.doctor_id))
    conn, cap = clinic.conn(), clinic.settings.web_pending_per_day
    full = {(row[0], row[1]) for row in conn.execute(
        "SELECT doctor_id, date FROM appointments WHERE pending = 'email' AND date BETWEEN ? AND ? GROUP BY"
        " doctor_id, date HAVING count(*) >= ?", (days[0].isoformat(), days[-1].isoformat(), cap))}
    return [(day.isoformat(), sorted({slot for slot in found[day] if (slot[1], day.isoformat()) not in full}))
            for day in days]


def chosen_doctors(clinic, speciality_id, doctor_id, type_id):
    """The doctors the page asks free times of: the doctor named, or each of the speciality's (offering the type,
    when one is named) that the page offers; a doctor the page does not offer, none."""
    offer = offered(clinic)
    rows = clinic.conn().execute("SELECT id, speciality_id FROM doctors ORDER BY id").fetchall()
    found = []
    for row in rows:
        if row["id"] not in offer or doctor_id not in (None, row["id"]):
            continue
        if doctor_id is None and speciality_id is not None and row["speciality_id"] != speciality_id:
            continue
        types = offer[row["id"]]
        if types is not None and type_id not in types:
            continue  # a doctor offered for some types only: one of them asked
        found.append(row["id"])
    return found


def read_ask(clinic, ask):
    """What a WebAsk says, checked, every field at fault named at once: {day, time, patient (as patient_fields
    reads it: for a child, theirs without a NIF), nif (the NIF typed, normalised; a child's guardian's)}."""
    fields = {"name": ask.name, "surname": ask.surname, "birthDate": ask.birth_date, "phone": ask.phone,
              "email": ask.email, "language": ask.language, "messages": "yes", "nif": "" if ask.child else ask.nif}
    today = clinic.today()
    return all_fields({
        "day": lambda: parse_date(ask.day or "", "date"),
        "time": lambda: parse_time(ask.time or "", "time"),
        "nif": lambda: normalise_nif(required(ask.nif, "nif")),
        "email": lambda: required(ask.email, "email"),
        "phone": lambda: required(ask.phone, "phone"),
        "birth": lambda: required(ask.birth_date, "birthDate"),
        "patient": lambda: patient_fields(fields, today, guarded=bool(ask.child)),
        "insurance": lambda: ask.insurance_id is None or clinic.require_insurance(ask.insurance_id)})


def required(text, field):
    """A text the page requires, through the one door for text; refused naming `field` when blank."""
    value = text_field(text or "", field)
    if not value:
        raise invalid(f"{field} is required", "required", field)
    return value


def request_booking(clinic, ask, address):
    """A booking asked on the page from `address`, held as pending through the one door as the channel `web`
    in one of three cases (new, same, verify: "Patients book themselves"), and its message queued: the masked
    e-mail the answer names, the same in every case. Refused: a field at fault, SLOT_NOT_AVAILABLE, WEB_BUSY (a
    bound), WEB_CLOSED."""
    web_open(clinic)
    asked = read_ask(clinic, ask)
    day, time_text = asked["day"], asked["time"]
    doctor_id = doctor_for(clinic, ask, day, time_text)
    at = clinic.clock()
    until = at + dt.timedelta(minutes=clinic.settings.web_confirm_minutes)
    with clinic.db.transaction() as conn:
        release_expired(conn, at)
        keys = request_keys(conn, address, asked["patient"]["email"], asked["nif"])
        busy(clinic, conn, keys, doctor_id, day, at)
        visit = Visit(None, doctor_id, ask.type_id, ask.center_id, insurance_id=ask.insurance_id,
                      pending_until=utc_iso(until))
        case, patient_id, appointment_id = booked(clinic, conn, asked, ask, visit, day, time_text, at)
        read = conn.execute("SELECT id FROM patients WHERE nif = ?", (asked["nif"],)).fetchall() if case == "verify" \
            else []
        insert_request(conn, {"appointment_id": int(appointment_id), "patient_id": patient_id, "case_of": case,
                              "typed_nif": asked["nif"] if case == "verify" else None, "doctor_id": doctor_id,
                              "language": asked["patient"]["language"],
                              "date": day.isoformat(), "expires_at": utc_iso(until), **keys}, at)
    noted(clinic, [(patient_id, None), *((row[0], None) for row in read)], SOURCE, "web")  # the records looked at
    return masked(asked["patient"]["email"])


def doctor_for(clinic, ask, day, time_text):
    """The doctor a booking asks: the one named, or the first the page offers free then (cualquiera); refused
    SLOT_NOT_AVAILABLE (taken) when the page offers no such time."""
    for found_day, times in web_times(clinic, center_id=ask.center_id, speciality_id=ask.speciality_id,
                                      doctor_id=ask.doctor_id, type_id=ask.type_id, week_start=day):
        for found_time, doctor in times:
            if (found_day, found_time) == (day.isoformat(), time_text):
                return doctor
        break
    raise slot_not_available("taken")


def busy(clinic, conn, keys, doctor_id, day, at):
    """Refuse WEB_BUSY when a bound is reached: per address, e-mail and NIF; the clinic's ceiling; the doctor's
    day's cap ("Patients book themselves")."""
    settings = clinic.settings
    if over_bounds(conn, keys, at, at - dt.timedelta(days=1)) or pending_web(conn) >= settings.web_pending_ceiling \
            or pending_web(conn, doctor_id, day.isoformat()) >= settings.web_pending_per_day:
        raise ClinicError("WEB_BUSY", "too many bookings wait for their confirmation: try again later")


def booked(clinic, conn, asked, ask, visit, day, time_text, at):
    """Inside the transaction: (case, patient id, appointment id) of the booking, through the one door; a known
    record whose visit the door refuses for being elsewhere then becomes 'verify', the attempt undone."""
    nif, email, patient = asked["nif"], asked["patient"]["email"], asked["patient"]
    known = None if ask.child else conn.execute("SELECT id, email, blocked_at FROM patients WHERE nif = ? ORDER BY"
                                                " blocked_at IS NOT NULL LIMIT 1", (nif,)).fetchone()
    if known is None and not ask.child:
        patient_id = made(conn, patient, at)
        return "new", patient_id, admit(clinic, conn, visit._replace(patient_id=patient_id), day, time_text, "web", at,
                                        SOURCE)
    if known is not None and same(clinic, conn, known, email, day):
        conn.execute("SAVEPOINT web_same")
        try:
            appointment_id = admit(clinic, conn, visit._replace(patient_id=known["id"]), day, time_text, "web", at,
                                   SOURCE)
            return "same", known["id"], appointment_id
        except ClinicError as refusal:
            if refusal.rule != "patient_elsewhere":
                raise
            conn.execute("ROLLBACK TO web_same")
        finally:
            conn.execute("RELEASE web_same")
    patient_id = made(conn, {**patient, "nif": None}, at)
    return "verify", patient_id, admit(clinic, conn, visit._replace(patient_id=patient_id), day, time_text, "web", at,
                                       SOURCE)


def same(clinic, conn, known, email, day):
    """Whether a known record is the one who asks: live, its e-mail the one typed (case-folded), and, when the page
    books first visits only, no visit of theirs before."""
    if known["blocked_at"] is not None or (known["email"] or "").casefold() != email.casefold():
        return False
    return clinic.settings.web_visits != "first" or conn.execute(
        "SELECT 1 FROM appointments WHERE patient_id = ? AND status != 'cancelled' AND date < ?",
        (known["id"], day.isoformat())).fetchone() is None


def made(conn, patient, at):
    """A patient the page's request inserts (the patients owner's write), its event naming only the page; the id."""
    row = insert_patient(conn, patient, at, SOURCE)
    record_event(conn, at, SOURCE, "patient.created", "patient", row["id"])
    return row["id"]


def confirm_view(clinic, token):
    """What a confirmation link would confirm: {date, time, end, center, doctor (None unless the messages show
    it), state: pending, confirmed or expired}; None for no such link. Reads no one."""
    if not TOKEN_SHAPE.fullmatch(token or ""):
        return None
    conn = clinic.conn()
    request = request_of(conn, token)
    if request is None:
        return None
    visit = conn.execute(
        "SELECT a.date, a.time, a.end_time, a.status, a.pending, a.pending_until, c.name AS center, d.name AS doctor"
        " FROM appointments a JOIN doctors d ON d.id = a.doctor_id LEFT JOIN centers c ON c.id = a.center_id"
        " WHERE a.id = ?", (request["appointment_id"] or 0,)).fetchone()
    return {"date": visit and visit["date"], "time": visit and visit["time"], "end": visit and visit["end_time"],
            "center": visit and visit["center"],
            "doctor": visit["doctor"] if visit and clinic.settings.mail_shows == "doctor" else None,
            "state": request_state(request, visit, clinic.clock())}


def request_state(request, visit, now):
    """pending, confirmed or expired: a request released, its visit gone, cancelled or past its time, is expired."""
    if request["confirmed_at"] is not None:
        return "confirmed"
    if visit is None or visit["status"] == "cancelled" or visit["pending"] != "email" \
            or visit["pending_until"] <= utc_iso(now):
        return "expired"
    return "pending"


def confirm_booking(clinic, token):
    """The patient confirms by the link (a POST): 'confirmed' (the visit a booking, or reception's to match, its
    confirmation queued), 'already' (confirmed before) or 'expired' (late, released, or no such link)."""
    if not TOKEN_SHAPE.fullmatch(token or ""):
        return "expired"
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        release_expired(conn, at)
        request = request_of(conn, token)
        if request is None:
            return "expired"
        visit = conn.execute("SELECT * FROM appointments WHERE id = ?", (request["appointment_id"] or 0,)).fetchone()
        state = request_state(request, visit, at)
        if state != "pending":
            return "already" if state == "confirmed" else "expired"
        after = confirm_request(conn, request, at)
        record_event(conn, at, SOURCE, "appointment.web_confirmed", "appointment", visit["id"], before=dict(visit),
                     after=after)
        queue_message(conn, visit["id"], "confirmation", at)
    return "confirmed"
