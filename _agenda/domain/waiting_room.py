"""The waiting room ("The waiting room"): a center's day (or one doctor's) as reception follows it, who is in
consultation, who waits and for how long, who is still to come, who has not come and who has finished. Every
wait is counted between stored UTC instants and shown in the clinic's zone. No HTTP here."""

import datetime as dt

from .appointments import live_appointments
from .counter import CALL_IN, open_marks

STATES = ("in_consultation", "waiting", "expected", "absent", "finished")  # in the order the page shows them
ON_TIME = 5  # minutes either side of a visit's start an arrival is on time


def waiting_room(clinic, day, center_id, doctor_id=None, reader=None):
    """{state: [visit]} of `day`'s live visits at `center_id` (one doctor's when asked), each with its state,
    its moments in the clinic's zone and its waits in whole minutes; who each patient is through the one door,
    the read noted for `reader`."""
    clinic.require_center(center_id)
    if doctor_id is not None:
        clinic.require_doctor(doctor_id)
    now, today = clinic.clock(), day == clinic.today()
    room = {state: [] for state in STATES}
    for visit in live_appointments(clinic, reader, "day", days=[day.isoformat()], center_id=center_id,
                                   doctor_id=doctor_id):
        seated = seat(clinic, visit, now, today)
        room[seated["state"]].append(seated)
    room["waiting"].sort(key=lambda visit: (visit["start"], visit["arrived_at"]))
    room["in_consultation"].sort(key=lambda visit: visit["called_in_at"])
    return room


def seat(clinic, visit, now, today):
    """One visit as the waiting room shows it: its state, arrived and called-in times (HH:MM in the clinic's zone),
    `waited` (arrival to the call, or to now while it waits today), `past_time` (of that wait, the minutes past the
    visit's start), `punctuality` (late, early, on_time) by `lateness` minutes, `inside` (minutes in consultation),
    `marks` open now (`open_marks`, and CALL_IN with an arrival)."""
    start = dt.datetime.combine(dt.date.fromisoformat(visit["date"]), dt.time.fromisoformat(visit["start"]),
                                tzinfo=clinic.tz)
    arrived, called = instant(visit["arrived_at"]), instant(visit["called_in_at"])
    state = state_of(visit["attendance"], called, start <= now)
    until = called or (now if today and state == "waiting" else None)
    lateness = minutes(start, arrived) if arrived else 0
    punctuality = None if arrived is None else "late" if lateness > ON_TIME else \
        "early" if lateness < -ON_TIME else "on_time"
    marks = open_marks(clinic, visit["date"], visit["start"])
    return {**visit, "state": state, "marks": marks + ((CALL_IN,) if "arrived" in marks else ()),
            "arrived_local": local(clinic, arrived), "called_local": local(clinic, called),
            "waited": minutes(arrived, until) if arrived and until else None,
            "past_time": max(0, minutes(max(arrived, start), until)) if arrived and until else None,
            "punctuality": punctuality, "lateness": abs(lateness),
            "inside": minutes(called, now) if called and today and state == "in_consultation" else None}


def state_of(attendance, called, started):
    """Where a visit is: in_consultation, waiting, finished, absent (marked, or its start passed unmarked) or
    expected."""
    if attendance == "arrived":
        return "in_consultation" if called else "waiting"
    if attendance == "seen":
        return "finished"
    return "absent" if attendance == "no_show" or started else "expected"


def instant(text):
    """The aware UTC moment of a stored ISO instant, or None."""
    return dt.datetime.fromisoformat(text) if text else None


def minutes(earlier, later):
    """Whole minutes from one instant to another (negative when `later` is earlier)."""
    return int((later - earlier).total_seconds() // 60)


def local(clinic, moment):
    """HH:MM of an instant in the clinic's zone, or None."""
    return f"{moment.astimezone(clinic.tz):%H:%M}" if moment else None
