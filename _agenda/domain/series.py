"""Series of sessions ("Series"): one patient's appointments every N days or weeks, previewed date by
date (each date's slot, or why not and the nearest free one), booked together in one transaction (every
date, or what fits with the others left out to call), then each its own. No HTTP here."""

import datetime as dt
import re
from typing import NamedTuple

from ..values.refusals import ClinicError, invalid
from ..values.fields import format_date, minutes_of, numeric_id
from ..storage.events import record_event, utc_iso, written_row
from .slots import FREE, read_schedule, slot_state
from .visits import the_visit, types_offered
from .outbox import queue_message
from .booking import admit, live_patient, Visit
from .fitting import why_not
from .appointments import CANCEL_CANCELLED
from .availability import availability
from .changes import cancelled

EVERY = re.compile(r"([1-9][0-9]?)\s*([wsd])")  # 1w, 2w, 10d; s for semana
MAX_SESSIONS = 60


class Session(NamedTuple):
    """One date of a series: the slot asked for when free, else why not and the nearest free slot."""
    day: dt.date
    slot: object
    reason: str | None
    nearest: object


NEAREST_DAYS = 7  # a date's nearest free slot is looked for that day and the 7 days after it
# How the desk may book a previewed series ("Series"): (take the nearest free slot where the time asked is
# not free, leave out a date with no slot for reception to call). "all" books every date at its time or nothing.
TAKES = {"all": (False, False), "nearest": (True, False), "fits": (False, True), "nearest-fits": (True, True)}


def parse_every(text):
    """The days between sessions from '1w' (every week), '2w', '10d' ('1s' for una semana)."""
    found = EVERY.fullmatch((text or "").strip().lower())
    if found is None:
        raise invalid("every must be weeks or days, as 1w, 2w or 10d", "series_every", "every")
    return int(found[1]) * (1 if found[2] == "d" else 7)


def series_dates(first, every_days, count):
    if not 2 <= count <= MAX_SESSIONS:
        raise invalid(f"count must be 2 to {MAX_SESSIONS}", "series_count", "count")
    return [first + dt.timedelta(days=every_days * n) for n in range(count)]


class OtherVisit(NamedTuple):
    """The time a patient's other visit takes: its day, start and end (the patient's time, its pause not)."""
    date: dt.date
    time: str
    end_time: str


def preview_series(clinic, *, doctor_id, first, time_text, every_days, count, center_id=None, speciality_id=None,
                   patient_id=None):
    """Each Session of the series, by the desk's rules, of the visit type asked (`speciality_id`; the doctor's
    default): the slot asked for, or the reason it is not free and the nearest free slot of that day and the
    NEAREST_DAYS after it (`nearest_free`), none taken twice by one series nor over the patient's other visits."""
    doctor = clinic.require_doctor(doctor_id)
    dates = series_dates(first, every_days, count)
    free = {day: availability(clinic, doctor_id=doctor["id"], speciality_id=speciality_id, center_id=center_id,
                              first=day, last=day + dt.timedelta(days=NEAREST_DAYS), channel="desk")
            for day in dates}
    elsewhere = other_visits(clinic, patient_id, dates[0], dates[-1] + dt.timedelta(days=NEAREST_DAYS))
    asked = {day: next((slot for slot in free[day] if slot.date == day and slot.time == time_text), None)
             for day in dates}
    taken = {day for day, slot in asked.items() if slot is not None and clashes(slot, elsewhere)}
    used = elsewhere + [slot for day, slot in asked.items() if slot is not None and day not in taken]
    sessions = []
    for day in dates:
        if asked[day] is not None and day not in taken:
            sessions.append(Session(day, asked[day], None, None))
            continue
        schedule = read_schedule(clinic.conn(), [doctor["id"]], day, day)
        reason = "patient_elsewhere" if day in taken else slot_state(
            schedule, clinic.window("desk"), doctor["id"], day, time_text, center_id)[0]
        if reason == FREE[0]:  # the grid's cell is free, and the visit does not fit there: the door's reason
            reason = unfit_reason(clinic, schedule, doctor, day, time_text, center_id, speciality_id)
        nearest = nearest_free(free[day], day, time_text, used)
        used += [nearest] if nearest else []
        sessions.append(Session(day, None, reason, nearest))
    return sessions


WHY_AS_REASON = {"past_hours": "off_grid", "runs_into": "taken", "runs_into_closed": "closed"}


def unfit_reason(clinic, schedule, doctor, day, time_text, center_id, asked):
    """The slot refusal reason of a visit of the type asked (the doctor's default there) whose start is free on
    the grid but that does not fit whole (`why_not`): its room or machine held, or its length taken."""
    row = next((row for row, _ in schedule.grids.get(day.weekday(), ()) if row["doctor_id"] == doctor["id"]
                and center_id in (None, row["center_id"]) and row["start_time"] <= time_text < row["end_time"]), None)
    if row is None:
        return "outside_hours"
    kind = the_visit(types_offered(clinic.conn(), [doctor["id"]]), doctor, row["center_id"], row["slot_minutes"],
                     asked)
    why = why_not(clinic, doctor["id"], day, time_text, row["center_id"], kind)
    return "taken" if why is None else WHY_AS_REASON.get(why.reason, why.reason)


def other_visits(clinic, patient_id, first, last):
    """[OtherVisit] of the patient's live visits from `first` to `last` (none without a patient)."""
    key = numeric_id(patient_id)
    if key is None:
        return []
    return [OtherVisit(dt.date.fromisoformat(row[0]), row[1], row[2]) for row in clinic.conn().execute(
        "SELECT date, time, end_time FROM appointments WHERE patient_id = ? AND status != 'cancelled'"
        " AND date BETWEEN ? AND ?", (key, first.isoformat(), last.isoformat()))]


def clashes(slot, used):
    """Whether `slot` overlaps any slot or visit of `used` (each with date, time and end_time)."""
    return any(slot.date == other.date and slot.time < other.end_time and other.time < slot.end_time
               for other in used)


def nearest_free(free, day, time_text, used=()):
    """The free slot nearest `day` at `time_text`: that day the closest in time, else the soonest day after it
    (there the closest in time); never one overlapping a slot or visit in `used`. None when there is none."""
    return min((slot for slot in free if not clashes(slot, used)), default=None, key=lambda slot: (
        (slot.date - day).days, abs(minutes_of(slot.time) - minutes_of(time_text)), slot.time))


def what_it_books(sessions, nearest=False, fits=False):
    """([(Session, the slot it takes)], [Session left out]) of a previewed series booked this way (TAKES): a
    date whose time is not free takes its nearest slot with `nearest`; a date with no slot refuses the whole
    series, or with `fits` is left out. SLOT_NOT_AVAILABLE when it would book fewer than 2."""
    taking = [(session, session.slot or (session.nearest if nearest else None)) for session in sessions]
    left = [session for session, slot in taking if slot is None]
    kept = [(session, slot) for session, slot in taking if slot is not None]
    reason = (left[0].reason if left else None) or "taken"
    if left and not fits:
        raise ClinicError("SLOT_NOT_AVAILABLE", f"the series is not free on {dates_text(left)}; " + (
            f"no free slot within {NEAREST_DAYS} days after; book only the dates that fit, or another time" if nearest
            else "take the nearest free slots, book only the dates that fit, or another time"), reason=reason)
    if len(kept) < 2:
        raise ClinicError("SLOT_NOT_AVAILABLE", f"only {len(kept)} of its dates fit: a series books 2 or more; book "
                          "that one alone, or another time", reason=reason)
    return kept, left


def dates_text(sessions):
    return ", ".join(format_date(session.day) for session in sessions)


def series_choices(sessions):
    """The ways the desk offers to book a previewed series: [(take, how many it books, how many left out)], each
    booking 2 or more, no two booking the same slots (the plainer kept), those booking more first; none when no
    way books 2 ("Series")."""
    found, outcomes = [], set()
    for take, (nearest, fits) in TAKES.items():
        try:
            kept, left = what_it_books(sessions, nearest, fits)
        except ClinicError:
            continue
        outcome = tuple(slot for _, slot in kept)
        if outcome not in outcomes:
            outcomes.add(outcome)
            found.append((take, len(kept), len(left)))
    return sorted(found, key=lambda choice: -choice[1])


def book_series(clinic, visit, *, first, time_text, every_days, count, nearest=False, fits=False, source):
    """Book the series of `visit` (a `Visit`: the patient, doctor, type or area, center, insurance and reason of
    every session) in one transaction, each session through the one door: the slot asked for, or with
    `nearest` the nearest free one; a date with neither refuses the whole series, or with `fits` is left out
    for reception to call (`what_it_books`). (series id, [(id, Session)] in date order, [dates left out]); the
    same series sent again (a double click) answers the one booked."""
    at, patient_key = clinic.clock(), numeric_id(visit.patient_id)
    doctor = clinic.require_doctor(visit.doctor_id)
    with clinic.db.transaction() as conn:
        again = conn.execute(
            "SELECT id, left_out FROM series s WHERE patient_id = ? AND doctor_id = ? AND every_days = ? AND asked = ?"
            " AND first_date = ? AND first_time = ? AND EXISTS (SELECT 1 FROM appointments a WHERE a.series_id = s.id"
            " AND a.status != 'cancelled') ORDER BY id DESC LIMIT 1",
            (patient_key, doctor["id"], every_days, count, first.isoformat(), time_text)).fetchone()
        if again is not None:
            return again["id"], [(str(row["id"]), None) for row in conn.execute(
                "SELECT id FROM appointments WHERE series_id = ? ORDER BY date, time", (again["id"],))], \
                [dt.date.fromisoformat(day) for day in again["left_out"].split()]
        live_patient(conn, patient_key)
        sessions = preview_series(clinic, doctor_id=visit.doctor_id, first=first, time_text=time_text,
                                  every_days=every_days, count=count, center_id=visit.center_id,
                                  speciality_id=visit.speciality_id, patient_id=patient_key)
        kept, left = what_it_books(sessions, nearest, fits)
        series = written_row(
            conn, "INSERT INTO series (patient_id, doctor_id, every_days, count, created_at, first_date, first_time,"
            " asked, left_out) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (patient_key, doctor["id"], every_days, len(kept), utc_iso(at), first.isoformat(), time_text, count,
             " ".join(session.day.isoformat() for session in left)))
        booked = []
        for session, slot in sorted(kept, key=lambda pair: (pair[1].date, pair[1].time)):
            session_visit = visit._replace(patient_id=patient_key, doctor_id=doctor["id"], center_id=slot.center_id,
                                           series_id=series["id"], accept_overlap=False)
            booked.append((admit(clinic, conn, session_visit, slot.date, slot.time, "series", at, source), session))
        if booked:
            queue_message(conn, booked[0][0], "series", at)
        record_event(conn, at, source, "series.booked", "series", series["id"],
                     after={**series, "appointments": [int(appointment_id) for appointment_id, _ in booked]})
    return series["id"], booked, [session.day for session in left]


def cancel_rest(clinic, appointment_id, reason, source):
    """Cancel this appointment and every later live one of its series; the ids cancelled."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        this = clinic.require_appointment(appointment_id, CANCEL_CANCELLED)
        if this["series_id"] is None:
            raise invalid("that appointment is not part of a series", "not_in_series")
        rest = conn.execute("SELECT * FROM appointments WHERE series_id = ? AND status != 'cancelled'"
                            " AND (date > ? OR (date = ? AND time >= ?)) ORDER BY date, time",
                            (this["series_id"], this["date"], this["date"], this["time"])).fetchall()
        for row in rest:
            cancelled(clinic, conn, dict(row), at, reason, "appointment.cancelled", source)
    return [str(row["id"]) for row in rest]
