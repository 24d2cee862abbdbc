"""A visit holds what it needs, now and after any change (D38; docs/design.md, "What a visit holds"): a state
machine over a generated clinic (two centers, boxes and a machine at each, doctors some placed in rooms, types
with needs) interleaves catalog reloads (a doctor's room taken or given, a type's needs, length or area, a room
or machine moved to another center or category, a doctor's hours), bookings by every channel (the caller, the
desk, a sobrecita, a series, the waiting list, an import, visits under way too), moves, cancellations, the clock,
and conflicts as the upgrade that started holding doctors' rooms left them. After each step, read from the tables
and judged by a plain reading written here apart from the code: no doctor, patient, room or machine is held twice;
no room serves two doctors' visits at once from now on, a sobrecita that holds no room counted in her doctor's
room, which must be hers for its whole span (D42); every coming visit holds exactly its doctor's own room (a
sobrecita apart from it, a free one of its kind) and one resource of its center of each other category its type
needs, none another doctor's room then (but the conflicts an import or the upgrade left, each listed); every
start GET /availabilities lists for a type books; and a reload either keeps all this or is refused and changes
nothing. AGENDA_HOLDS_EXAMPLES runs more examples than the suite's few."""

import collections
import copy
import datetime as dt
import itertools
import json
import os
import re
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, HealthCheck, settings, strategies as st
from hypothesis.stateful import initialize, invariant, rule, RuleBasedStateMachine

import agenda
from _agenda.domain.booking import admit, Visit
from _agenda.files.catalogs import SeedError
from _agenda.domain.counter import squeeze_in
from _agenda.domain.holds import unheld
from _agenda.files.reading import read_catalog_text
from _agenda.domain.outbox import tells_anew
from _agenda.domain.series import book_series
from _agenda.files.staged_import import import_appointments
from _agenda.values.refusals import ClinicError
from _agenda.domain.waitlist import add_waiting, Wish
from _agenda.domain.availability import availability
from _agenda.domain.changes import (book_appointment, cancel_appointment, change_details, change_length,
                                   move_appointment)
from _agenda.domain.fitting import lengths, retypes, why_not_length

from conftest import Api, Clock, MADRID, SECRET, seed, table_rows, valid_dni, write_csv
from test_slot_rules import hhmm
from test_slot_rules_types import HEADER, minutes_of, row

START = dt.datetime(2026, 11, 23, 8, 0, tzinfo=MADRID)  # a Monday
LAST_MOMENT = dt.datetime(2026, 12, 1, 12, 0, tzinfo=MADRID)  # the clock stops here: days stay to come
WORKDAYS = [d for d in (START.date() + dt.timedelta(days=n) for n in range(12)) if d.weekday() < 5]
AREA = {"D1": "MG", "D2": "MG", "D3": "FIS", "D4": "FIS", "D5": "MG"}
PLACES = (("D1", "C1"), ("D2", "C1"), ("D3", "C2"), ("D3", "C1"), ("D4", "C2"), ("D5", "C2"))
DAYS_AT = {("D3", "C2"): "mon-thu", ("D3", "C1"): "fri"}  # else mon-fri
CATEGORIES = ("box", "eco", "sala")
NEEDS = ("", "box", "eco", "box;eco", "sala")
HOURS = (("09:00", "12:00"), ("09:00", "11:50"), ("11:50", "13:00"), ("10:00", "13:00"), ("09:00", "11:00"),
         ("11:00", "13:00"))
PATIENTS = 5
RESOURCES = ("C1-B1", "C1-B2", "C1-ECO", "C2-B1", "C2-B2", "C2-ECO")
TYPES = ("FIS-S", "FIS-V", "MG-A", "MG-E", "X-T")
PROFILE = settings(max_examples=int(os.environ.get("AGENDA_HOLDS_EXAMPLES", "25")), stateful_step_count=20,
                   deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                         HealthCheck.filter_too_much])


# The clinic's catalog, as a model the reloads change

@st.composite
def catalogs(draw):
    """{resources: {id: [center, category, kind]}, types: {id: [area, minutes, pause, needs]}, places: {(doctor,
    center): {hours, step, types, room}}}: a file the catalog accepts. X-T is offered by no one, so its area may
    change."""
    resources = {"C1-B1": ["C1", "box", "room"], "C1-ECO": ["C1", "eco", "machine"],
                 "C2-B1": ["C2", "box", "room"], "C2-ECO": ["C2", "eco", "machine"]}
    if draw(st.booleans()):
        resources["C1-B2"] = ["C1", "box", "room"]
    if draw(st.booleans()):
        resources["C2-B2"] = ["C2", "box", "room"]
    types = {"MG-A": ["MG", draw(st.sampled_from([15, 20, 30])), draw(st.sampled_from([0, 0, 10])),
                      draw(st.sampled_from(["", "box"]))],
             "MG-E": ["MG", 20, draw(st.sampled_from([0, 5])), draw(st.sampled_from(["eco", "box;eco"]))],
             "FIS-S": ["FIS", draw(st.sampled_from([30, 45])), 0, "box"],
             "FIS-V": ["FIS", 30, draw(st.sampled_from([0, 15])), draw(st.sampled_from(["", "box", "eco", "box;eco"]))],
             "X-T": ["MG", 15, 0, ""]}

    def place(types_there, rooms, hours=("09:00", "12:00")):
        return {"hours": hours, "step": draw(st.sampled_from([15, 15, 20, 30])),
                "types": draw(st.permutations(types_there)), "room": draw(st.sampled_from([None, *rooms]))}
    places = {("D1", "C1"): place(["MG-A", "MG-E"], ["C1-B1"]),
              ("D2", "C1"): place(["MG-E", "MG-A"], ["C1-B2"] if "C1-B2" in resources else [],
                                  ("09:00", "11:00")),
              ("D3", "C2"): place(["FIS-S", "FIS-V"], ["C2-B1"]),
              ("D3", "C1"): place(draw(st.sampled_from([[], ["FIS-V"]])), []),  # without types there, or not
              ("D4", "C2"): place(["FIS-V", "FIS-S"], ["C2-B2"] if "C2-B2" in resources else [],
                                  ("10:00", "13:00")),
              ("D5", "C2"): place([], [], ("09:00", "11:00"))}  # a doctor without types
    return {"resources": resources, "types": types, "places": places}


def catalog_text(model):
    """The catalog file of the model."""
    lines = [row("center", c, f"Centro {c}") for c in ("C1", "C2")]
    lines += [row("speciality", a, f"Área {a}") for a in ("MG", "FIS")]
    lines += [type_line(key, kind) for key, kind in sorted(model["types"].items())]
    lines += [row(kind, key, key, center=center, category=category)
              for key, (center, category, kind) in sorted(model["resources"].items())]
    lines += [row("doctor", doctor, f"Dr {doctor}", AREA[doctor], center, DAYS_AT.get((doctor, center), "mon-fri"),
                  "-".join(place["hours"]), str(place["step"]), types=";".join(place["types"]),
                  room=place["room"] or "")
              for (doctor, center), place in sorted(model["places"].items())]
    return HEADER + "\n".join(lines) + "\n"


def type_line(key, kind):
    area, minutes, pause, needs = kind
    return row("type", key, f"Tipo {key}", area, slot=str(minutes), pause=str(pause) if pause else "", needs=needs)


def where(model, doctor, day):
    """(center, place) where the doctor works on that day's weekday, else (None, None)."""
    return next(((center, place) for (who, center), place in model["places"].items() if who == doctor
                 and day.weekday() in weekdays(DAYS_AT.get((who, center), "mon-fri"))), (None, None))


def weekdays(text):
    return {"mon-fri": range(5), "mon-thu": range(4), "fri": (4,)}[text]


# The plain reading, apart from the code

def read_tables(conn):
    """(resources {id: (center, category, is_room)}, schedule rows, {type: needs}, live appointments, holds by
    appointment) straight from the tables."""
    resources = {r[0]: (r[1], r[2], r[3])
                 for r in conn.execute("SELECT id, center_id, category, is_room FROM resources")}
    schedules = [dict(r) for r in conn.execute("SELECT doctor_id, center_id, weekday, start_time, end_time, room_id"
                                               " FROM schedules")]
    needs = {r[0]: tuple(n for n in r[1].split(";") if n) for r in conn.execute("SELECT id, needs FROM visit_types")}
    live = [dict(r) for r in conn.execute("SELECT * FROM appointments WHERE status != 'cancelled' ORDER BY id")]
    holds = {}
    for h in conn.execute("SELECT * FROM holds ORDER BY resource_id"):
        holds.setdefault(h["appointment_id"], []).append(dict(h))
    return resources, schedules, needs, live, holds


def busy_end(a):
    return a["busy_until"] or a["end_time"]


def is_coming(a, now):
    return (a["date"], a["time"]) > (now.date().isoformat(), f"{now:%H:%M}")


def sharing(a, schedules, live, holds, resources):
    """The room a live sobrecita `a` shares with its doctor's other visits, read plainly (D42), or None: the room
    the row of her hours at its start places her in, when that row runs to its busy end, no other doctor's hours
    place them in it then, and no other doctor's visit holds it then."""
    until, weekday = busy_end(a), dt.date.fromisoformat(a["date"]).weekday()
    hours = next((s for s in schedules if s["doctor_id"] == a["doctor_id"] and s["center_id"] == a["center_id"]
                  and s["weekday"] == weekday and s["start_time"] <= a["time"] < s["end_time"]), None)
    room = hours and hours["room_id"]
    doctors = {b["id"]: b["doctor_id"] for b in live}
    if not a["squeezed"] or room not in resources or not resources[room][2] or until > hours["end_time"]:
        return None
    if any(s["room_id"] == room and s["doctor_id"] != a["doctor_id"] and s["weekday"] == weekday
           and s["start_time"] < until and a["time"] < s["end_time"] for s in schedules):
        return None
    if any(h["resource_id"] == room and h["live"] and h["date"] == a["date"] and h["time"] < until
           and a["time"] < h["until"] and doctors.get(h["appointment_id"]) != a["doctor_id"]
           for held in holds.values() for h in held):
        return None
    return room


def wrong_holds(a, resources, schedules, needs, held, less=False, shares=True):
    """Why the live visit `a` does not hold exactly what it needs, or None: its doctor's own room (the room
    their hours at its center place them in at its start, a room of that center; not for a sobrecita), and
    one resource of its center of each category its type needs that the own room is not; each hold live, for
    its span, and none a room another doctor's hours place them in then. With `less`, some may be missing."""
    until, weekday = busy_end(a), dt.date.fromisoformat(a["date"]).weekday()
    if any(not h["live"] or (h["date"], h["time"], h["until"]) != (a["date"], a["time"], until) for h in held):
        return "a hold off its span"
    ids = [h["resource_id"] for h in held]
    if len(set(ids)) != len(ids):
        return "one resource held twice"
    hours = next((s for s in schedules if s["doctor_id"] == a["doctor_id"] and s["center_id"] == a["center_id"]
                  and s["weekday"] == weekday and s["start_time"] <= a["time"] < s["end_time"]), None)
    room = hours and hours["room_id"]
    own = room if room in resources and resources[room][0] == a["center_id"] and resources[room][2] else None
    wanted = [n for n in needs.get(a["type_id"], ()) if own is None or n != resources[own][1]]
    if own is not None and a["squeezed"] and not shares:  # a sobrecita apart from her room takes one of its kind
        wanted.append(resources[own][1])
    rest = list(ids)
    if own is not None and not a["squeezed"] and (own in rest or not less):
        if own not in rest:
            return f"without the doctor's own room {own}"
        rest.remove(own)
    for resource in rest:
        center, category, _ = resources.get(resource, (None, None, None))
        if center != a["center_id"] or category not in wanted:
            return f"{resource} is no resource of center {a['center_id']} it needs ({wanted})"
        wanted.remove(category)
    if wanted and not less:
        return f"without a {wanted[0]}"
    for resource in ids:
        for s in schedules:
            if s["room_id"] == resource and s["doctor_id"] != a["doctor_id"] and s["weekday"] == weekday \
                    and s["start_time"] < until and a["time"] < s["end_time"]:
                return f"{resource} is {s['doctor_id']}'s room {s['start_time']}-{s['end_time']}"
    return None


def held_twice(live, holds):
    """[(what, a, b)] of a doctor (neither squeezed in), a patient (neither accepted so nor imported), a room or
    machine held twice at once by live visits."""
    found = []
    for i, a in enumerate(live):
        for b in live[i + 1:]:
            if a["date"] != b["date"]:
                continue
            if a["doctor_id"] == b["doctor_id"] and not (a["squeezed"] or b["squeezed"]) \
                    and a["time"] < busy_end(b) and b["time"] < busy_end(a):
                found.append(("doctor", a["id"], b["id"]))
            if a["patient_id"] == b["patient_id"] and a["time"] < b["end_time"] and b["time"] < a["end_time"] \
                    and not (a["overlap_accepted"] or b["overlap_accepted"]) \
                    and "import" not in (a["booked_by"], b["booked_by"]):
                found.append(("patient", a["id"], b["id"]))
    spans = sorted((h["resource_id"], h["date"], h["time"], h["until"], h["appointment_id"])
                   for held in holds.values() for h in held if h["live"])
    for first, second in itertools.pairwise(spans):
        if first[:2] == second[:2] and second[2] < first[3]:
            found.append((first[0], first[4], second[4]))
    return found


class Undone(Exception):
    """Raised inside a booking's transaction to roll it back once the door has admitted it."""


def admitted(clinic, slot, probe):
    """None when the caller's door would book this start for a patient with no other visit; else its refusal.
    Nothing is written."""
    day = dt.datetime.strptime(slot["date"], "%d/%m/%Y").date()
    try:
        with clinic.db.transaction() as conn:
            admit(clinic, conn, Visit(probe, slot["doctorId"], slot["specialityId"], slot["centerId"]), day,
                  slot["time"], "caller", clinic.clock(), "api")
            raise Undone
    except Undone:
        return None
    except ClinicError as refused:
        return refused.extra.get("reason") or refused.code


CONFLICT = re.compile(r"appointment (\d+) imported without")


# The machine

class HoldsMachine(RuleBasedStateMachine):
    """One clinic, changed step by step by every channel and by its catalog; the tables judged after each."""

    def __init__(self):
        super().__init__()
        self.folder, self.app = None, None
        self.conflicts, self.upgraded, self.steps = set(), set(), 0

    @initialize(model=catalogs(), before=st.lists(st.tuples(st.sampled_from(sorted(AREA)), st.integers(0, 4),
                                                           st.integers(0, 40), st.integers(0, 2)), max_size=8))
    def open_clinic(self, model, before):
        """The clinic, its patients, and the visits the desk booked `before`: (doctor, day, the pick-th start
        listed, what is asked)."""
        self.folder = Path(tempfile.mkdtemp(prefix="holds-"))
        self.model, self.clock, self.db_path = model, Clock(START), self.folder / "agenda.db"
        seed(self.db_path, write_csv(self.folder, catalog_text(model)), at=START)
        self.app = agenda.create_app(self.db_path, SECRET, now=self.clock)
        self.clinic, self.api = self.app.clinic, Api(self.app)
        self.nifs = [valid_dni(n) for n in range(1, PATIENTS + 1)]
        self.patients = [self.api.new_patient(nif=nif, phone=f"6{n:08d}", name=f"P{n - 1}")  # as imports name them
                         for n, nif in enumerate(self.nifs, 1)]
        self.probe = self.api.new_patient(nif=valid_dni(99), phone="699999999")  # never booked: always free
        for n, (doctor, day, pick, asked) in enumerate(before):
            day = self.day(day)
            kind = self.asking(doctor, day, asked)
            visit = Visit(self.patients[n % PATIENTS], doctor, kind)
            when = {"day": day, "time_text": self.time_for(doctor, day, kind, pick, True), "source": "desk:ana"}
            self.tried("before", lambda visit=visit, when=when: book_appointment(self.clinic, visit, **when))

    def teardown(self):
        if self.app is not None:
            self.app.clinic.db.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    # what the rules pick

    def conn(self):
        return self.clinic.conn()

    def now(self):
        return self.clock().astimezone(MADRID)

    def day(self, pick):
        coming = [d for d in WORKDAYS if d >= self.now().date()]
        return coming[pick % len(coming)]

    def asking(self, doctor, day, pick):
        """None (the doctor's default), or a type the doctor offers where they work that day."""
        _, place = where(self.model, doctor, day)
        offered = list(place["types"]) if place else []
        return None if pick == 0 or not offered else offered[pick % len(offered)]

    def time_for(self, doctor, day, asked, pick, listed, channel="desk"):
        """The `pick`-th start listed for the doctor and type that day by the channel; else (or when not
        `listed`) a time of 5 minutes' grid in or near their hours."""
        if listed:
            try:
                starts = [s.time for s in availability(self.clinic, doctor_id=doctor, speciality_id=asked, first=day,
                                                       last=day, channel=channel)]
            except ClinicError:
                starts = []
            if starts:
                return starts[pick % len(starts)]
        _, place = where(self.model, doctor, day)
        opens, closes = (minutes_of(t) for t in (place["hours"] if place else ("09:00", "12:00")))
        return hhmm(opens - 15 + 5 * (pick % ((closes - opens + 30) // 5)))

    def live_ones(self, coming=True):
        now = self.now()
        return [dict(r) for r in self.conn().execute(
            "SELECT * FROM appointments WHERE status != 'cancelled' ORDER BY id") if not coming or is_coming(r, now)]

    def tried(self, what, call):
        """Run a change by a channel; a refusal in words is an answer, a crash is not."""
        try:
            call()
            event(f"{what}: done")
        except ClinicError as refused:
            event(f"{what}: {refused.extra.get('reason') or refused.code}")

    def answered(self, what, answer):
        assert answer.status_int < 500, answer.text
        said = answer.json.get("error", {}).get("reason", "") if answer.status_int >= 400 else ""
        event(f"{what}: {answer.status_int} {said}".rstrip())

    # bookings, by every channel

    @rule(doctor=st.sampled_from(sorted(AREA)), day=st.integers(0, 9), pick=st.integers(0, 40),
          asked=st.integers(0, 2), who=st.integers(0, PATIENTS - 1), listed=st.booleans())
    def caller_books(self, doctor, day, pick, asked, who, listed):
        day = self.day(day)
        kind = self.asking(doctor, day, asked)
        body = {"date": f"{day:%d/%m/%Y}", "time": self.time_for(doctor, day, kind, pick, listed, "caller"),
                "doctorId": doctor, "patientId": self.patients[who], **({"specialityId": kind} if kind else {})}
        self.answered("caller books", self.api.post("/appointments", body))

    @rule(doctor=st.sampled_from(sorted(AREA)), day=st.integers(0, 9), pick=st.integers(0, 40),
          asked=st.integers(0, 2), who=st.integers(0, PATIENTS - 1), listed=st.booleans(), accept=st.booleans())
    def desk_books(self, doctor, day, pick, asked, who, listed, accept):
        day = self.day(day)
        kind = self.asking(doctor, day, asked)
        time_text = self.time_for(doctor, day, kind, pick, listed)
        visit = Visit(self.patients[who], doctor, kind, accept_overlap=accept)
        self.tried("desk books", lambda: book_appointment(self.clinic, visit, day=day, time_text=time_text,
                                                          source="desk:ana"))

    @rule(doctor=st.sampled_from(sorted(AREA)), day=st.integers(0, 9), pick=st.integers(0, 60),
          asked=st.integers(0, 2), who=st.integers(0, PATIENTS - 1))
    def desk_squeezes_in(self, doctor, day, pick, asked, who):
        day = self.day(day)
        kind = self.asking(doctor, day, asked)
        time_text = self.time_for(doctor, day, kind, pick, False)
        self.tried("sobrecita", lambda: squeeze_in(self.clinic,
                                                   Visit(self.patients[who], doctor, kind),
                                                   day=day, time_text=time_text, source="desk:ana"))

    @rule(doctor=st.sampled_from(sorted(AREA)), day=st.integers(0, 9), pick=st.integers(0, 40),
          asked=st.integers(0, 2), who=st.integers(0, PATIENTS - 1), every=st.sampled_from([1, 2, 7]),
          count=st.integers(2, 4), nearest=st.booleans())
    def desk_books_a_series(self, doctor, day, pick, asked, who, every, count, nearest):
        day = self.day(day)
        kind = self.asking(doctor, day, asked)
        time_text = self.time_for(doctor, day, kind, pick, True)
        visit = Visit(self.patients[who], doctor, kind)
        self.tried("series", lambda: book_series(self.clinic, visit, first=day, time_text=time_text, every_days=every,
                                                 count=count, nearest=nearest, fits=True, source="desk:ana"))

    @rule(doctor=st.sampled_from(sorted(AREA)), day=st.integers(0, 9), pick=st.integers(0, 40),
          asked=st.integers(0, 2), who=st.integers(0, PATIENTS - 1), forward=st.booleans())
    def desk_books_from_the_waiting_list(self, doctor, day, pick, asked, who, forward):
        """An entry added and booked from at once: a new visit, or (`forward`) the patient's latest coming
        visit brought forward, moved to a start of its doctor listed for its type on a day up to its own."""
        later = next((a for a in reversed(self.live_ones()) if a["patient_id"] == int(self.patients[who])), None) \
            if forward else None
        if later is not None:
            doctor, kind = later["doctor_id"], None
            days = [d for d in WORKDAYS if self.now().date() <= d <= dt.date.fromisoformat(later["date"])]
            day = days[day % len(days)] if days else self.day(day)
            offered = (where(self.model, doctor, day)[1] or {}).get("types", ())
            listing = later["type_id"] if later["type_id"] in offered else None
        else:
            day = self.day(day)
            kind = listing = self.asking(doctor, day, asked)

        def book():
            wish = Wish(self.patients[who], day, day + dt.timedelta(days=7), doctor_id=doctor, type_id=kind,
                        appointment_id=later and later["id"])
            entry = add_waiting(self.clinic, wish, source="desk:ana")
            book_appointment(self.clinic, Visit(self.patients[who], doctor, kind),
                             day=day, time_text=self.time_for(doctor, day, listing, pick, True), waitlist_id=entry,
                             source="desk:ana")
        self.tried("waiting list" + (" brings forward" if later else ""), book)

    @rule(lines=st.lists(st.tuples(st.sampled_from(sorted(AREA)), st.integers(-3, 9), st.integers(0, 40),
                                   st.integers(0, 3), st.integers(0, PATIENTS - 1), st.integers(0, 3)),
                         min_size=1, max_size=3), twin=st.booleans(), under_way=st.booleans())
    def an_import(self, lines, twin, under_way):
        """Rows of another system: coming visits at starts listed (or not), some history, some naming a room or
        machine, with `under_way` the first one started 10 minutes ago, and with `twin` one more at the first's
        time by another doctor of its center, of a type that needs a room or machine, so that they may clash."""
        rows, today = [], self.now().date()
        for n, (doctor, day, pick, asked, who, holds) in enumerate(lines):
            started = under_way and n == 0
            day = today if started else today + dt.timedelta(days=day) if day < 0 else self.day(day)
            kinds = [None, *[k for k, t in sorted(self.model["types"].items()) if t[0] == AREA[doctor]]]
            kind, (center, place) = kinds[asked % len(kinds)], where(self.model, doctor, day)
            center = center or "C1"
            time_text = self.time_for(doctor, day, kind if kind in (place or {}).get("types", ()) else None, pick,
                                      day >= today)
            if started:
                minute = self.now().hour * 60 + self.now().minute - 10
                time_text = hhmm(minute - minute % 5)
            named = [key for key, r in sorted(self.model["resources"].items()) if r[0] == center]
            rows.append({"date": f"{day:%d/%m/%Y}", "time": time_text, "doctor": doctor, "center": center,
                         "duration": str(self.model["types"][kind][1] if kind else 15), "nif": self.nifs[who],
                         "name": f"P{who}", "type": kind or "",
                         "holds": named[holds % len(named)] if holds and named else ""})
        if twin:
            first = rows[0]
            other = next((d for d in sorted(AREA) if d != first["doctor"] and where(
                self.model, d, dt.datetime.strptime(first["date"], "%d/%m/%Y").date())[0] == first["center"]), None)
            kind = next((k for k, t in sorted(self.model["types"].items()) if other and t[0] == AREA[other]
                         and t[3]), None)
            if other:
                rows.append({**first, "doctor": other, "type": kind or "", "holds": "",
                             "duration": str(self.model["types"][kind][1] if kind else 15),
                             "nif": self.nifs[(self.nifs.index(first["nif"]) + 1) % PATIENTS],
                             "name": f"P{(self.nifs.index(first['nif']) + 1) % PATIENTS}"})
        first_new = self.conn().execute("SELECT coalesce(max(id), 0) FROM appointments").fetchone()[0]
        try:
            report = import_appointments(self.clinic, [(n, fields, []) for n, fields in enumerate(rows, 2)],
                                         "citas.csv", source="cli")
        except ClinicError as refused:
            event(f"import: {refused.extra.get('reason') or refused.code}")
            return
        event(f"import{' under way' if under_way else ''}: "
              f"{'problems' if report.problem_count else 'conflicts' if report.conflicts else 'done'}")
        listed = {int(found) for _, why in report.conflicts for found in CONFLICT.findall(why)}
        self.conflicts |= listed | {visit.id for visit in unheld(self.conn(), self.now(), started=True)
                                    if visit.id > first_new}

    @rule(which=st.integers(0, 50), pick=st.integers(0, 5))
    def an_upgrade_left_a_conflict(self, which, pick):
        """A coming visit holding besides what it holds a room another doctor's hours place them in then, as the
        upgrade that started holding doctors' rooms leaves one it found so (written here as it found it): listed,
        and never offered."""
        live = [a for a in self.live_ones() if not a["squeezed"]]
        if not live:
            return
        a = live[which % len(live)]
        weekday, until = dt.date.fromisoformat(a["date"]).weekday(), busy_end(a)
        rooms = sorted({s["room_id"] for s in read_tables(self.conn())[1] if s["room_id"] and s["doctor_id"] !=
                        a["doctor_id"] and s["center_id"] == a["center_id"] and s["weekday"] == weekday and
                        s["start_time"] < until and a["time"] < s["end_time"]})
        if not rooms or self.conn().execute(  # a sobrecita beside it, sharing the room, is the door's to judge
                "SELECT 1 FROM appointments WHERE squeezed = 1 AND status != 'cancelled' AND date = ? AND time < ?"
                " AND ? < coalesce(busy_until, end_time)", (a["date"], until, a["time"])).fetchone():
            return
        try:
            with self.clinic.db.transaction() as conn:
                conn.execute("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES (?, ?, ?, ?, ?)",
                             (a["id"], rooms[pick % len(rooms)], a["date"], a["time"], until))
        except sqlite3.IntegrityError:
            event("upgrade conflict: held then")
            return
        event("upgrade conflict: left")
        self.conflicts.add(a["id"])
        self.upgraded.add(a["id"])

    # moves and cancellations

    @rule(which=st.integers(0, 50), day=st.integers(0, 9), pick=st.integers(0, 40), listed=st.booleans())
    def caller_moves(self, which, day, pick, listed):
        live = self.live_ones()
        if not live:
            return
        moved, day = live[which % len(live)], self.day(day)
        time_text = self.time_for(moved["doctor_id"], day, moved["type_id"], pick, listed, "caller")
        self.answered("caller moves", self.api.put(f"/appointments/{moved['id']}", {
            "newDate": f"{day:%d/%m/%Y}", "newTime": time_text}))

    @rule(which=st.integers(0, 50))
    def caller_retries_a_move(self, which):
        """A PUT sent again: to the visit's own date and time (the outbox then gains nothing)."""
        live = self.live_ones()
        if live:
            moved = live[which % len(live)]
            self.answered("caller moves it where it is", self.api.put(f"/appointments/{moved['id']}", {
                "newDate": f"{dt.date.fromisoformat(moved['date']):%d/%m/%Y}", "newTime": moved["time"]}))

    @rule(which=st.integers(0, 50), day=st.integers(0, 9), pick=st.integers(0, 40), listed=st.booleans(),
          other=st.integers(0, 2), there=st.booleans(), accept=st.booleans())
    def desk_moves(self, which, day, pick, listed, other, there, accept):
        """To another time, to another doctor of the area (`other`), and (`there`) to the center where the doctor
        works that day."""
        live = self.live_ones(coming=False)
        if not live:
            return
        moved, day = live[which % len(live)], self.day(day)
        others = [d for d in sorted(AREA) if d != moved["doctor_id"] and AREA[d] == AREA[moved["doctor_id"]]]
        doctor = others[(other - 1) % len(others)] if other else moved["doctor_id"]
        center = where(self.model, doctor, day)[0] if there else None
        time_text = self.time_for(doctor, day, moved["type_id"], pick, listed)
        self.tried("desk moves", lambda: move_appointment(self.clinic, moved["id"], day=day, time_text=time_text,
                                                          doctor_id=doctor,
                                                          center_id=center, source="desk:ana", accept_overlap=accept))

    @rule(which=st.integers(0, 50), pick=st.integers(0, 5))
    def desk_changes_the_type(self, which, pick):
        """Another of the types its doctor offers there for a coming visit: done exactly where the desk offers it
        (`retypes`), but for the patient's other visit then ("Details of a booked visit")."""
        live = self.live_ones()
        offered = list(retypes(self.clinic, live[which % len(live)]["id"]).values()) if live else []
        if not offered:
            return
        kind, why = offered[pick % len(offered)]
        try:
            change_details(self.clinic, live[which % len(live)]["id"], type_id=kind.id, source="desk:ana")
            event("desk changes the type: done")
            assert why is None, why
        except ClinicError as refused:
            event(f"desk changes the type: {refused.extra.get('reason') or refused.code}")
            assert why is not None or refused.extra.get("reason") == "patient_elsewhere", (refused, kind)

    @rule(which=st.integers(0, 50), pick=st.integers(0, 12))
    def desk_changes_the_length(self, which, pick):
        """One of the lengths the desk's form offers a coming visit: its own changes nothing (even where the hours have
        changed under it); another is done exactly where `why_not_length` finds it fits, but for the patient's other
        visit then; a sobrecita's is refused ("Drag to move, and to lengthen")."""
        live = self.live_ones()
        if not live:
            return
        visit = live[which % len(live)]
        offered = lengths(self.clinic, visit["id"])
        minutes = offered[pick % len(offered)]
        if minutes == minutes_of(visit["end_time"]) - minutes_of(visit["time"]) and not visit["squeezed"]:
            assert change_length(self.clinic, visit["id"], minutes, source="desk:ana") == visit  # its own: nothing
            return
        _, why = why_not_length(self.clinic, visit["id"], minutes)
        try:
            change_length(self.clinic, visit["id"], minutes, source="desk:ana")
            event("desk changes the length: done")
            assert why is None and not visit["squeezed"], (why, visit)
        except ClinicError as refused:
            event(f"desk changes the length: {refused.extra.get('reason') or refused.rule or refused.code}")
            assert why is not None or visit["squeezed"] or refused.extra.get("reason") == "patient_elsewhere", (
                refused, visit, minutes)

    @rule(which=st.integers(0, 50), by_caller=st.booleans())
    def cancels(self, which, by_caller):
        live = self.live_ones(coming=False)
        if not live:
            return
        gone = live[which % len(live)]["id"]
        if by_caller:
            self.answered("caller cancels", self.api.delete(f"/appointments/{gone}"))
        else:
            self.tried("desk cancels", lambda: cancel_appointment(self.clinic, gone, reason="test", source="desk:ana"))

    @rule(minutes=st.sampled_from([20, 45, 90, 240, 24 * 60]))
    def the_clock_moves(self, minutes):
        self.clock.moment = min(self.clock.moment + dt.timedelta(minutes=minutes), LAST_MOMENT)

    # catalog reloads

    @rule(place=st.sampled_from(PLACES), room=st.integers(0, 3))
    def reload_a_doctors_room(self, place, room):
        """Taken away, given back, or another (maybe another doctor's then)."""
        self.a_reload(("room", place, room))

    @rule(kind=st.sampled_from(TYPES), needs=st.sampled_from(NEEDS))
    def reload_a_types_needs(self, kind, needs):
        self.a_reload(("needs", kind, needs))

    @rule(kind=st.sampled_from(TYPES[:4]), length=st.sampled_from([15, 20, 30, 45]), pause=st.sampled_from([0, 5, 15]))
    def reload_a_types_length(self, kind, length, pause):
        self.a_reload(("length", kind, (length, pause)))

    @rule(resource=st.sampled_from(RESOURCES), center=st.sampled_from(["C1", "C2"]))
    def reload_a_resource_at_another_center(self, resource, center):
        self.a_reload(("center", resource, center))

    @rule(resource=st.sampled_from(RESOURCES), category=st.sampled_from(CATEGORIES))
    def reload_a_resources_category(self, resource, category):
        self.a_reload(("category", resource, category))

    @rule(place=st.sampled_from(PLACES), hours=st.sampled_from(HOURS))
    def reload_a_doctors_hours(self, place, hours):
        self.a_reload(("hours", place, hours))

    @rule(kind=st.sampled_from(["X-T", "MG-A", "FIS-V"]), area=st.sampled_from(["MG", "FIS"]))
    def reload_a_types_area(self, kind, area):
        """The type's row alone: refused while a doctor of another area offers it."""
        self.a_reload(("area", kind, area))

    @rule()
    def reload_the_same(self):
        self.a_reload(("same", None, None))

    def a_reload(self, change):
        """The catalog loaded again with one change: it keeps every coming visit holding what it needs (checked
        after the step) and never touches an appointment's row, or it is refused and changes nothing. The
        unchanged catalog always loads."""
        how, key, value = change
        model = copy.deepcopy(self.model)
        text = None
        if how == "room":
            center = key[1]
            rooms = [None, *sorted(k for k, r in model["resources"].items() if r[2] == "room" and r[0] == center)]
            model["places"][key]["room"] = rooms[value % len(rooms)]
        elif how == "needs":
            model["types"][key][3] = value
        elif how in ("center", "category"):
            if key not in model["resources"]:
                return
            model["resources"][key][0 if how == "center" else 1] = value
        elif how == "length":
            model["types"][key][1:3] = value
        elif how == "hours":
            model["places"][key]["hours"] = value
        elif how == "area":  # the type's row alone
            model["types"][key][0] = value
            text = "kind,id,name,speciality,slot_minutes,pause,needs\n" + ",".join([
                "type", key, f"Tipo {key}", value, str(model["types"][key][1]), str(model["types"][key][2]),
                model["types"][key][3]]) + "\n"
        before = table_rows(self.db_path)
        try:
            done = agenda.seed_catalogs(self.conn(), read_catalog_text(text or catalog_text(model)), at=self.clock())
        except SeedError as refused:
            assert how != "same", f"the unchanged catalog was refused: {refused}"
            assert table_rows(self.db_path) == before, f"a refused reload ({change}) changed the tables"
            event(f"reload {how}: refused" + (", naming visits" if "Move them first" in str(refused) else ""))
            return
        event(f"reload {how}: {'re-derived' if done['rederived'] else 'loaded'}")
        assert table_rows(self.db_path)["appointments"] == before["appointments"], "a reload changed an appointment"
        self.model = model

    # after each step

    @invariant()
    def nothing_is_held_twice(self):
        _, _, _, live, holds = read_tables(self.conn())
        assert not held_twice(live, holds), held_twice(live, holds)

    @invariant()
    def no_room_serves_two_visits_at_once(self):
        """D42: from now on, a room serves one doctor's visits at a time, counting a sobrecita that holds no room
        as in the room her hours place her in, which must be hers for its whole span, and visits under way."""
        resources, schedules, _, live, holds = read_tables(self.conn())
        now, found, wrong = self.now(), [], []
        later = [a for a in live if (a["date"], busy_end(a)) > (now.date().isoformat(), f"{now:%H:%M}")]
        for a in later:
            rooms = [h["resource_id"] for h in holds.get(a["id"], []) if h["live"] and resources.get(
                h["resource_id"], (0, 0, 0))[2]]
            weekday = dt.date.fromisoformat(a["date"]).weekday()
            placed = next((s["room_id"] for s in schedules if s["doctor_id"] == a["doctor_id"] and s["weekday"] ==
                           weekday and s["center_id"] == a["center_id"] and s["start_time"] <= a["time"] <
                           s["end_time"] and s["room_id"]), None)
            if a["squeezed"] and not rooms and placed:
                rooms = [placed]
                if sharing(a, schedules, live, holds, resources) is None and a["id"] not in self.conflicts:
                    wrong.append(("a sobrecita in a room not hers for its whole span", a["id"], placed))
            found += [(room, a["date"], a["time"], busy_end(a), a["doctor_id"], a["id"]) for room in rooms]
        found.sort()
        wrong += [(one[0], one[5], other[5]) for i, one in enumerate(found) for other in found[i + 1:]
                  if one[:2] == other[:2] and other[2] < one[3] and one[2] < other[3] and one[4] != other[4]]
        assert not wrong, wrong

    @invariant()
    def every_coming_visit_holds_what_it_needs(self):
        """And every conflict not yet ended, under way too, is listed (`agenda status`, the Rooms page)."""
        resources, schedules, needs, live, holds = read_tables(self.conn())
        now, wrong = self.now(), []
        listed = {visit.id for visit in unheld(self.conn(), now, started=True)}
        for a in live:
            shares = sharing(a, schedules, live, holds, resources) is not None
            why = wrong_holds(a, resources, schedules, needs, holds.get(a["id"], []), shares=shares)
            if a["id"] in self.conflicts and why is not None and (a["date"], busy_end(a)) > (
                    now.date().isoformat(), f"{now:%H:%M}"):
                assert a["id"] in listed, f"conflict {a['id']} is not listed"
            if not is_coming(a, now):
                continue
            if a["id"] in self.conflicts:
                if why is None:  # placed since: an ordinary visit from now on
                    self.conflicts.discard(a["id"])
                    self.upgraded.discard(a["id"])
                if a["id"] in self.upgraded:  # it holds another doctor's room, as the upgrade found it
                    continue
                why = wrong_holds(a, resources, schedules, needs, holds.get(a["id"], []), less=True, shares=shares)
            if why is not None:
                wrong.append((a["id"], a["doctor_id"], a["date"], a["time"], busy_end(a), a["type_id"],
                              bool(a["squeezed"]), [h["resource_id"] for h in holds.get(a["id"], [])], why))
        assert not wrong, "\n".join(str(visit) for visit in wrong)

    @invariant()
    def each_change_wrote_the_message_it_calls_for_and_no_other(self):
        """The outbox, read against the audit trail: a booking outside a series a confirmation, a series one message
        on its first visit, a move or another type an update (none to where it was), a cancellation a notice (an erasure's none); an import, a catalog
        reload, a refused change nothing ("A patient's messages")."""
        conn = self.conn()
        wrote = collections.Counter(tuple(row) for row in conn.execute(
            "SELECT appointment_id, kind FROM outbox WHERE kind != 'reminder'"))
        in_series = {row[0] for row in conn.execute("SELECT id FROM appointments WHERE series_id IS NOT NULL")}
        called = collections.Counter()
        for action, entity_id, before, after in conn.execute(
                "SELECT action, entity_id, before, after FROM events ORDER BY id"):
            before, after = json.loads(before or "{}"), json.loads(after or "{}")
            if action in ("appointment.booked", "appointment.squeezed") and int(entity_id) not in in_series:
                called[(int(entity_id), "confirmation")] += 1
            elif action == "series.booked" and after.get("appointments"):
                called[(after["appointments"][0], "series")] += 1
            elif action in ("appointment.moved", "appointment.retyped", "appointment.length_changed") and \
                    tells_anew(before, after):  # to where it was: nothing to tell
                called[(int(entity_id), "update")] += 1
            elif action in ("appointment.cancelled", "appointment.declined", "appointment.released") and \
                    after.get("cancel_reason") != "erasure requested":
                called[(int(entity_id), "notice")] += 1
        assert wrote == called, (wrote - called, called - wrote)

    @invariant()
    def every_start_listed_for_a_type_books(self):
        """One type or doctor a step, in turn: the first, middle and last start the caller is offered are
        admitted."""
        self.steps += 1
        asked = [f"specialityId={kind}" for kind in sorted(self.model["types"])]
        asked += [f"doctorId={doctor}" for doctor in sorted(AREA)]
        today = self.now().date()
        answer = self.api.get(f"/availabilities?{asked[self.steps % len(asked)]}&startDate={today:%d/%m/%Y}"
                              f"&endDate={today + dt.timedelta(days=9):%d/%m/%Y}")
        assert answer.status_int == 200, answer.text
        slots = answer.json["data"]
        for slot in {id(s): s for s in (slots[:1] + slots[len(slots) // 2:][:1] + slots[-1:])}.values():
            assert admitted(self.clinic, slot, self.probe) is None, (slot, admitted(self.clinic, slot, self.probe))


HoldsMachine.TestCase.settings = PROFILE
TestHoldsAfterEveryChange = HoldsMachine.TestCase


# What the machine found, one example each

def one_box(d1_hours="09:00-12:00", d3_hours="12:00-13:00", d3_room="", d2_types="MG-E"):
    """Centro's one box and one ultrasound: Dr D1 (MG) in the box, Dr D2 (MG, `d2_types`) in none, Dr D3 (FIS,
    without types) in the box when `d3_room` says so."""
    return HEADER + "\n".join([
        row("center", "C1", "Centro"), row("speciality", "MG", "Medicina general"),
        row("speciality", "FIS", "Fisioterapia"),
        row("type", "MG-A", "Consulta", "MG", slot="30"),
        row("type", "MG-E", "Ecografía", "MG", slot="20", needs="eco"),
        row("type", "MG-L", "Larga", "MG", slot="90", needs="box"),
        row("room", "C1-B1", "Box 1", center="C1", category="box"),
        row("machine", "C1-ECO", "Ecógrafo", center="C1", category="eco"),
        row("doctor", "D1", "Dr D1", "MG", "C1", "mon-fri", d1_hours, "15", types="MG-A;MG-E", room="C1-B1"),
        row("doctor", "D2", "Dr D2", "MG", "C1", "mon-fri", "09:00-12:00", "15", types=d2_types),
        row("doctor", "D3", "Dr D3", "FIS", "C1", "mon-fri", d3_hours, "15", room=d3_room)]) + "\n"


def live_holds(api, appointment_id):
    return [tuple(h) for h in api.db().execute("SELECT resource_id, time, until FROM holds WHERE appointment_id = ?"
                                               " AND live = 1 ORDER BY resource_id", (int(appointment_id),))]


def test_a_reload_leaving_a_visits_own_room_another_doctors_then_re_derives_it_or_is_refused(make_api, db_path,
                                                                                              clock):
    """D1's visit on Friday 11:30-12:00 holds her box; a reload ending her hours at 11:50 and placing D3 in the
    box from 11:50 left it holding a room that is another doctor's then, neither re-derived nor refused (D3's
    11:50 is then refused `resource_taken`)."""
    api = make_api(one_box())
    visit = api.book(api.new_patient(), date="27/11/2026", time="11:30", doctor="D1", specialityId="MG-A")
    assert live_holds(api, visit) == [("C1-B1", "11:30", "12:00")]
    before = table_rows(db_path)
    try:
        agenda.seed_catalogs(api.db(), read_catalog_text(one_box("09:00-11:50", "11:50-13:00", "C1-B1")), at=clock())
    except SeedError as refused:
        assert f"appointment {visit} (27/11/2026 11:30, doctor D1)" in str(refused)
        assert table_rows(db_path) == before
        return
    resources, schedules, needs, live, holds = read_tables(api.db())
    why = wrong_holds(live[0], resources, schedules, needs, holds.get(int(visit), []))
    assert why is None, why


def test_an_imported_conflict_holds_nothing_it_does_not_need(make_api):
    """A coming row of a scan (it needs the ultrasound, held then) naming D3's box in its `holds` is imported
    and listed as a conflict, and kept the box: a room it does not need, another doctor's then."""
    api = make_api(one_box(d3_room="C1-B1", d3_hours="09:00-12:00", d1_hours="12:00-13:00"))
    api.book(api.new_patient(), date="27/11/2026", time="10:00", doctor="D2", specialityId="MG-E")
    api.new_patient(nif=valid_dni(2), phone="600000002", name="Eva")
    fields = {"date": "27/11/2026", "time": "10:00", "duration": "20", "doctor": "D1", "center": "C1",
              "nif": valid_dni(2), "name": "Eva", "type": "MG-E", "holds": "C1-B1"}
    done = import_appointments(api.app.clinic, [(2, fields, [])], "citas.csv")
    assert [line for line, _ in done.conflicts] == [2]
    imported = api.db().execute("SELECT max(id) FROM appointments").fetchone()[0]
    assert live_holds(api, imported) == []


def test_a_reload_placing_a_doctor_in_a_room_a_visit_under_way_holds_is_refused_until_it_ends(make_api, db_path,
                                                                                              clock):
    """D2's long visit holds the box from 09:15 to 10:45; once it has started, a reload placing D3 (without
    types) in the box then is refused, naming it (the visit keeps its holds, and D3 would be offered a start
    the door refuses); once it has ended, the same reload goes through."""
    api = make_api(one_box(d1_hours="12:00-13:00", d2_types="MG-L"))
    api.book(api.new_patient(), date="23/11/2026", time="09:15", doctor="D2", specialityId="MG-L")
    clock.set(2026, 11, 23, 9, 20)
    placing = read_catalog_text(one_box(d1_hours="12:00-13:00", d2_types="MG-L", d3_hours="09:00-12:00",
                                        d3_room="C1-B1"))
    before = table_rows(db_path)
    with pytest.raises(SeedError) as refused:
        agenda.seed_catalogs(api.db(), placing, at=clock())
    assert "room C1-B1: appointment 1 is under way in it until 10:45, and doctor D3's hours would place them in" \
           " it then: load this after 10:45" in str(refused.value)
    assert table_rows(db_path) == before
    clock.set(2026, 11, 23, 10, 45)
    assert agenda.seed_catalogs(api.db(), placing, at=clock())["changed"]
    offered = api.get("/availabilities?doctorId=D3&startDate=23/11/2026&endDate=23/11/2026").json["data"][0]
    patient = api.new_patient(nif=valid_dni(3), phone="600000003")
    assert admitted(api.app.clinic, offered, patient) is None, offered


def test_a_series_refused_for_a_machine_taken_says_so(make_api):
    """D1 scans at 10:00 on Monday and Tuesday, holding the one ultrasound; a series of scans with D2 at 10:00
    those days was refused with `reason` "free", the grid's state of 10:00, which is no refusal's reason."""
    api = make_api(one_box())
    for day in ("23/11/2026", "24/11/2026"):
        api.book(api.new_patient(nif=valid_dni(int(day[:2])), phone=f"6000000{day[:2]}"), date=day, time="10:00",
                 doctor="D1", specialityId="MG-E")
    patient = api.new_patient(nif=valid_dni(3), phone="600000003")
    try:
        book_series(api.app.clinic, Visit(patient_id=patient, doctor_id="D2", speciality_id="MG-E"),
                    first=dt.date(2026, 11, 23), time_text="10:00", every_days=1, count=2, source="desk:ana")
    except ClinicError as refused:
        assert refused.extra["reason"] == "resource_taken", refused.extra
    else:
        raise AssertionError("a series booked on a machine held")
