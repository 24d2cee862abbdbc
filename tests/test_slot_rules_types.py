"""The slot rules hold for visit types, pauses, rooms, machines and patients (docs/design.md, "Slot states",
"Visit types", "Rooms and machines", "One patient, one place"), over generated catalogs (types whose lengths are
and are not multiples of the grid, pauses, rooms and a machine per center, doctors placed in rooms, hours that
end mid-slot), closures, visits made before (some holding rooms and machines, some cancelled, some accepted over
the patient's other visit, some squeezed in), clocks and channel rules. A plain reading of the rules, written
here apart from the code, says where a visit fits: on the doctor's grid, its length and pause inside the hours,
free of closures and of the doctor's other visits, with a room and a machine of each category it needs free,
the patient at no other live visit then. Against it: every route of GET /availabilities (a type, an area, a
doctor) lists exactly the starts it finds, nothing twice; a start listed books through the API, the desk's door
and the desk's own form for a patient free then; any other booking, sobrecita or move (by the caller, by the
desk, to another doctor) is refused with a reason its state gives, or done with the visit's own type, length
and pause; the desk's free cells agree with the list of each doctor's default type; after each, no doctor,
room or machine is held twice at once, each visit holds what its type needs, and no patient holds two
overlapping live visits unless reception accepted it. AGENDA_TYPES_EXAMPLES=2000 runs more examples than the
suite's few (`--hypothesis-show-statistics` counts the answers given)."""

import datetime as dt
import os
from typing import NamedTuple

import pytest
import webtest
from hypothesis import event, HealthCheck, Phase, given, settings, strategies as st

from _agenda.domain.booking import Visit
from _agenda.domain.counter import squeeze_in
from _agenda.desk.views import day_plan
from _agenda.values.refusals import ClinicError
from _agenda.domain.appointments import read_appointment
from _agenda.domain.availability import availability
from _agenda.domain.changes import book_appointment, cancel_appointment, move_appointment
from conftest import Api, seed, valid_dni, write_csv
from test_slot_rules import DAYS, generated_clinic, hhmm, MADRID, MONDAY, PASSWORD, WEEKDAYS

HEADER = ("kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to,pause,needs,category,"
          "types,room\n")
AREAS = ("MG", "FIS")
CENTERS = ("C1", "C2")
DOCTORS = ("D1", "D2", "D3")
PROFILE = settings(max_examples=int(os.environ.get("AGENDA_TYPES_EXAMPLES", "60")), deadline=None,
                   phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def minutes_of(text):
    return int(text[:2]) * 60 + int(text[3:5])


def row(kind, key="", name="", speciality="", center="", days="", hours="", slot="", first="", last="", pause="",
        needs="", category="", types="", room=""):
    return ",".join([kind, key, name, speciality, center, "", days, hours, slot, first, last, pause, needs, category,
                     types, room])


# The generated clinic

@st.composite
def clinics(draw):
    """A catalog file: two centers, two areas, a few types of each, rooms and a machine at each center, two or
    three doctors with one or two shifts (some placed in a room, offering some of their area's types there, the
    first their default), a few closures. Every file is one the catalog accepts."""
    lines = [row("center", c, f"Centro {c}") for c in CENTERS] + [row("speciality", a, f"Área {a}") for a in AREAS]
    resources = {}
    for center in CENTERS:
        found = [(f"{center}-BOX{n}", "box", "room") for n in range(1, draw(st.integers(0, 2)) + 1)]
        found += [(f"{center}-CON", "consulta", "room")] if draw(st.booleans()) else []
        found += [(f"{center}-ECO", "eco", "machine")] if draw(st.booleans()) else []
        resources[center] = found
        lines += [row(kind, key, key, center=center, category=category) for key, category, kind in found]
    types = {}
    for area in AREAS:
        for n in range(1, draw(st.integers(1, 3)) + 1):
            types[f"{area}-{n}"] = (area, draw(st.sampled_from([10, 15, 20, 25, 30, 40, 45, 60])),
                                    draw(st.sampled_from([0, 0, 5, 10, 15])),
                                    draw(st.sampled_from(["", "box", "eco", "eco", "box;eco", "consulta"])))
    lines += [row("type", key, f"Tipo {key}", area, slot=str(minutes), pause=str(pause) if pause else "", needs=needs)
              for key, (area, minutes, pause, needs) in types.items()]
    doctors, shifts = DOCTORS[:draw(st.integers(2, 3))], []
    for number, doctor in enumerate(doctors, 1):
        shifts += doctor_shifts(draw, doctor, number, resources)
        lines += doctor_rows(draw, doctor, "MG" if number == 1 else draw(st.sampled_from(AREAS)), types, resources,
                             [shift[1:] for shift in shifts if shift[0] == doctor])
    lines += closure_rows(draw, doctors, shifts)
    return HEADER + "\n".join(lines) + "\n"


def doctor_shifts(draw, doctor, number, resources):
    """[(doctor, days, start, end, step, center, room)]: one or two shifts, some ending mid-slot, some placing
    the doctor in a room of their own."""
    shifts = []
    for shift in range(draw(st.integers(1, 2))):
        days = draw(st.lists(st.sampled_from(WEEKDAYS[:5]), min_size=1, max_size=4, unique=True))
        step = draw(st.sampled_from([15, 20, 30]))
        start = (8 + 7 * shift) * 60 + draw(st.sampled_from([0, 10, 30]))
        end = start + step * draw(st.integers(1, 8)) + draw(st.sampled_from([0, 0, 0, 5, 10]))  # some end mid-slot
        center = draw(st.sampled_from(["C1", "C1", "C2"]))  # doctors meet at C1, to share its rooms and machine
        mine = [key for key, _, kind in resources[center] if kind == "room" and key.endswith(
            (f"BOX{number}",) + (("CON",) if number == 1 else ()))]  # no room is two doctors'
        shifts.append((doctor, days, start, end, step, center, draw(st.sampled_from([None, *mine]))))
    return shifts


def doctor_rows(draw, doctor, area, types, resources, shifts):
    """One doctor's rows: their shifts, offering at each center some of their area's types that fit there."""
    area_types = [key for key, kind in types.items() if kind[0] == area]
    lines = []
    for center in sorted({shift[4] for shift in shifts}):
        longest = max(end - start for _, start, end, _, at, _ in shifts if at == center)
        categories = {category for _, category, _ in resources[center]}
        chosen = draw(st.lists(st.sampled_from(area_types), unique=True, max_size=len(area_types)))
        offered = [key for key in chosen if types[key][1] + types[key][2] <= longest
                   and set(filter(None, types[key][3].split(";"))) <= categories]
        lines += [row("doctor", doctor, f"Dr {doctor}", area, center, ";".join(days), f"{hhmm(start)}-{hhmm(end)}",
                      str(step), types=";".join(offered), room=room or "")
                  for days, start, end, step, at, room in shifts if at == center]
    return lines


def closure_rows(draw, doctors, shifts):
    """Closures of whole days or of some hours (some the last minutes of a shift), of a doctor or everyone, at a
    center or all."""
    lines = []
    for n in range(draw(st.integers(0, 2))):
        first = draw(st.sampled_from(DAYS))
        last = first + dt.timedelta(days=draw(st.integers(0, 2)))
        hours, how = "", draw(st.sampled_from(["days", "hours", "a shift's end"]))
        if how == "hours":
            opens = draw(st.integers(8 * 12, 18 * 12)) * 5
            hours = f"{hhmm(opens)}-{hhmm(opens + draw(st.sampled_from([5, 15, 30, 60, 90])))}"
        elif how == "a shift's end":
            ends = draw(st.sampled_from(shifts))[3]
            hours = f"{hhmm(ends - draw(st.sampled_from([5, 10, 15])))}-{hhmm(ends)}"
        lines.append(row("closed", draw(st.sampled_from(["", *doctors])), f"Cierre {n}",
                         center=draw(st.sampled_from(["", *CENTERS])), hours=hours, first=f"{first:%d/%m/%Y}",
                         last=f"{last:%d/%m/%Y}"))
    return lines


moments = st.builds(lambda day, minute: dt.datetime.combine(day, dt.time(minute // 60, minute % 60), tzinfo=MADRID),
                    st.sampled_from([MONDAY - dt.timedelta(days=1), *DAYS[:2]]), st.integers(7 * 60, 18 * 60))
picks = st.one_of(st.integers(0, 5), st.integers(0, 10 ** 4))  # early starts, so that visits meet


class Booking(NamedTuple):
    """A booking made before the checks, through the desk's door: by `doctor` on the `day`-th of their working
    days (the coming ones first), at the `pick`-th start the desk lists there, else at a time of the hours
    (`when`); asking `asked` (0 nothing, 1 the area, 2.. a type offered there), for the `patient`-th patient;
    `how`: booked, accepted over the patient's other visit, or squeezed in (a sobrecita); cancelled after."""
    doctor: str
    day: int
    pick: int
    when: int
    asked: int
    patient: int
    how: str
    cancel: bool


class Attempt(NamedTuple):
    """A booking or a move checked against the plain reading: `way` is a start listed, any time of the hours,
    or one near a visit made ("over": by `doctor`, "beside": by another doctor, a move to another doctor); the
    `pick`-th of the list or of the visits; asking `asked` by `channel`, for a patient free then (0), the
    visit's own (1), or the (`patient` - 2)-th."""
    way: str
    pick: int
    doctor: str
    day: int
    when: int
    asked: int
    channel: str
    patient: int


bookings = st.lists(st.builds(Booking, st.sampled_from(DOCTORS), st.integers(0, 3), picks, st.integers(0, 10 ** 4),
                              st.integers(0, 4), st.integers(0, 2),
                              st.sampled_from(["book", "book", "accept", "squeeze"]), st.booleans()), max_size=8)
attempts = st.lists(st.builds(Attempt, st.sampled_from(["listed", "listed", "any", "over", "beside", "beside"]), picks,
                              st.sampled_from(DOCTORS), st.integers(0, 3), st.integers(0, 10 ** 4), st.integers(0, 4),
                              st.sampled_from(["api", "desk", "accept", "form", "squeeze", "move", "desk move"]),
                              st.integers(0, 4)), max_size=6)


# A plain reading of the rules, apart from the code

class Kind(NamedTuple):
    """A visit: its type (None: one slot of the grid), length, pause and the categories it needs."""
    id: str | None
    minutes: int
    pause: int = 0
    needs: tuple = ()


class Catalog(NamedTuple):
    rows: list       # schedule rows, as dicts
    kinds: dict      # type id: Kind
    offered: dict    # (doctor, center): [type id], the default first
    areas: dict      # doctor: area
    resources: list  # dicts: id, center_id, category, is_room
    closures: list


def read_catalog(conn):
    offered = {}
    for doctor, center, key in conn.execute("SELECT doctor_id, center_id, type_id FROM doctor_types"
                                            " ORDER BY doctor_id, center_id, position"):
        offered.setdefault((doctor, center), []).append(key)
    return Catalog([dict(r) for r in conn.execute("SELECT * FROM schedules")],
                   {r["id"]: Kind(r["id"], r["minutes"], r["pause"], tuple(filter(None, r["needs"].split(";"))))
                    for r in conn.execute("SELECT * FROM visit_types")}, offered,
                   dict(conn.execute("SELECT id, speciality_id FROM doctors").fetchall()),
                   [dict(r) for r in conn.execute("SELECT id, center_id, category, is_room FROM resources"
                                                  " ORDER BY id")],
                   [dict(r) for r in conn.execute("SELECT * FROM closures")])


class Live(NamedTuple):
    appointments: list  # the live ones, as dicts
    holds: list         # the live ones, as dicts


def read_live(conn):
    return Live([dict(r) for r in conn.execute("SELECT * FROM appointments WHERE status != 'cancelled' ORDER BY id")],
                [dict(r) for r in conn.execute("SELECT * FROM holds WHERE live = 1")])


def row_at(catalog, doctor, day, minute):
    return next((r for r in catalog.rows if r["doctor_id"] == doctor and r["weekday"] == day.weekday()
                 and minutes_of(r["start_time"]) <= minute < minutes_of(r["end_time"])), None)


def kind_at(catalog, doctor, center, slot_minutes, asked):
    """The visit asking `asked` (None or the doctor's area: their default there) is at a center; None when the
    doctor does not offer that type there."""
    types = catalog.offered.get((doctor, center), [])
    if asked is None or asked == catalog.areas[doctor]:
        return catalog.kinds[types[0]] if types else Kind(None, slot_minutes)
    return catalog.kinds[asked] if asked in types else None


def reasons(catalog, live, window, doctor, day, time_text, kind, now=None, patient=None, squeezed=False,
            shares=None):
    """Every state that keeps a visit of `kind` from starting at `time_text` (an empty set: it fits), read
    plainly: when, where, the grid and hours, closures, the doctor's visits, rooms and machines, the patient. A
    sobrecita (`squeezed`) may start off the grid, run past the hours and meet the doctor's other visits, and
    `shares` the doctor's room, holding it not (`shares` is `squeezed` unless said)."""
    found, begin = set(), minutes_of(time_text)
    if day > window.last_day:
        found.add("beyond_horizon")
    at = row_at(catalog, doctor, day, begin)
    if at is None:
        return found | ({"too_soon"} if begun(window, day, begin) else set()) | {"outside_hours"}
    start, end, step = minutes_of(at["start_time"]), minutes_of(at["end_time"]), at["slot_minutes"]
    busy_end, iso = begin + kind.minutes + kind.pause, day.isoformat()
    on_grid = (begin - start) % step == 0 and begin + step <= end
    # begun: past, but reception's cell of the grid under way (its notice 0) takes a walk-in until its end
    if begun(window, day, begin) and not (window.walk_in and on_grid and not begun(window, day, begin + step,
                                                                                     ended=True)):
        found.add("too_soon")
    if not squeezed and (not on_grid or busy_end > end):
        found.add("off_grid")
    until = hhmm(busy_end)
    # a cell of the grid the visit runs into is the visit's, as the desk draws it: a closure or a visit that
    # touches it keeps the visit out, and so does one in the minutes it runs on past the grid's last cell; a
    # sobrecita's own minutes only, and the cell it starts in, if it starts on the grid
    cells = min(start + -(-(busy_end - start) // step) * step, start + (end - start) // step * step)
    reach = hhmm(max(busy_end, begin + step if on_grid else begin) if squeezed else max(busy_end, cells))
    if any(c["date_from"] <= iso <= c["date_to"] and c["doctor_id"] in (None, doctor)
           and c["center_id"] in (None, at["center_id"])
           and (c["start_time"] is None or (c["start_time"] < reach and time_text < c["end_time"]))
           for c in catalog.closures):
        found.add("closed")
    if not squeezed and any(a["doctor_id"] == doctor and a["date"] == iso and not a["squeezed"] and a["time"] < reach
                            and time_text < (a["busy_until"] or a["end_time"]) for a in live.appointments):
        found.add("taken")
    if held_for(catalog, live, kind, doctor, at, day, time_text, until, squeezed if shares is None else shares) \
            is None:
        found.add("resource_taken")
    if patient is not None and elsewhere(live, patient, day, time_text, hhmm(begin + kind.minutes), now):
        found.add("patient_elsewhere")
    return found


def begun(window, day, minute, ended=False):
    """True when `minute` of `day` comes before the window's earliest start (now plus its notice); a cell's
    end (`ended`) has come at that start too."""
    at = dt.datetime.combine(day, dt.time(minute // 60, minute % 60), tzinfo=window.tz)
    return at <= window.earliest if ended else at < window.earliest


def shared(catalog, live, doctor, at, own, day, time_text, until):
    """Whether a sobrecita shares its doctor's room `own` (D42): the hours' row placing them in it at its start
    runs to its busy end, and no other doctor's hours place them in it, nor another doctor's visit holds it, then."""
    doctors = {a["id"]: a["doctor_id"] for a in live.appointments}
    return own is not None and at["start_time"] <= time_text and until <= at["end_time"] and not any(
        s["room_id"] == own["id"] and s["doctor_id"] != doctor and s["weekday"] == day.weekday()
        and s["start_time"] < until and time_text < s["end_time"] for s in catalog.rows) and not any(
        h["resource_id"] == own["id"] and h["date"] == day.isoformat() and h["time"] < until and time_text < h["until"]
        and doctors.get(h["appointment_id"]) != doctor for h in live.holds)


def held_for(catalog, live, kind, doctor, at, day, time_text, until, shares=False):
    """[resource] a visit takes: the doctor's room then (none for a sobrecita (`shares`) that shares it, and a
    free room of its category for one that does not), then for each category it needs that the doctor's room is
    not, the first of the center's of it that no live hold and no other doctor's hours take then; None: one has
    none."""
    def free(r):
        return not any(h["resource_id"] == r and h["date"] == day.isoformat() and h["time"] < until
                       and time_text < h["until"] for h in live.holds) \
            and not any(s["room_id"] == r and s["doctor_id"] != doctor and s["weekday"] == day.weekday()
                        and s["start_time"] < until and time_text < s["end_time"] for s in catalog.rows)
    own = next((r for r in catalog.resources if r["id"] == at["room_id"] and r["is_room"]), None)
    taken = [own["id"]] if own and not shares else []
    if taken and not free(own["id"]):
        return None
    wanted = [need for need in kind.needs if not (own and own["category"] == need)]
    if shares and own and not shared(catalog, live, doctor, at, own, day, time_text, until):
        wanted.insert(0, own["category"])  # a sobrecita apart from its doctor's room takes a free one of its kind
    for need in wanted:
        found = [r["id"] for r in catalog.resources if r["center_id"] == at["center_id"] and r["category"] == need
                 and r["id"] not in taken and free(r["id"])]
        if not found:
            return None
        taken.append(found[0])
    return taken


def elsewhere(live, patient, day, time_text, end_text, now):
    """The patient's live visit, not yet ended at `now`, that the patient's time from time_text to end_text
    overlaps (the pause is not theirs), or None."""
    ended = now.astimezone(MADRID).strftime("%Y-%m-%d %H:%M")
    return next((a for a in live.appointments if str(a["patient_id"]) == str(patient) and a["date"] == day.isoformat()
                 and a["time"] < end_text and time_text < a["end_time"] and f"{a['date']} {a['end_time']}" > ended),
                None)


def expected_list(catalog, live, window, doctors, asked, first=DAYS[0], last=DAYS[-1]):
    """{(doctor, date, time, center, duration, specialityId)} availability should answer for `doctors` asking
    `asked` (a type; an area or None: each doctor's default where they work)."""
    found, day = set(), first
    while day <= last:
        for at in catalog.rows:
            if at["doctor_id"] not in doctors or at["weekday"] != day.weekday():
                continue
            kind = kind_at(catalog, at["doctor_id"], at["center_id"], at["slot_minutes"], asked)
            if kind is None:
                continue
            shown = asked if asked in catalog.kinds else catalog.areas[at["doctor_id"]]
            found |= {(at["doctor_id"], f"{day:%d/%m/%Y}", hhmm(begin), at["center_id"], kind.minutes, shown)
                      for begin in range(minutes_of(at["start_time"]), minutes_of(at["end_time"]), 5)
                      if not reasons(catalog, live, window, at["doctor_id"], day, hhmm(begin), kind)}
        day += dt.timedelta(days=1)
    return found


# What the API and the desk answer

def listed(api, query, first=DAYS[0], last=DAYS[-1]):
    answer = api.get(f"/availabilities?{query}&startDate={first:%d/%m/%Y}&endDate={last:%d/%m/%Y}")
    assert answer.status_int == 200, answer.text
    slots = [(s["doctorId"], s["date"], s["time"], s["centerId"], s["duration"], s["specialityId"])
             for s in answer.json["data"]]
    assert len(slots) == len(set(slots)), f"a start offered twice: {query}"
    return set(slots)


def every_route_lists_what_fits(api, clinic, catalog, doctors):
    """Availability by each type, each area and each doctor answers exactly the starts that fit, by the
    caller's rules."""
    live, window = read_live(clinic.conn()), clinic.window("caller")
    for key in catalog.kinds:
        offering = [d for d in doctors if any(key in catalog.offered.get((d, c), []) for c in CENTERS)]
        assert listed(api, f"specialityId={key}") == expected_list(catalog, live, window, offering, key), key
    for area in AREAS:
        of_area = [d for d in doctors if catalog.areas[d] == area]
        assert listed(api, f"specialityId={area}") == expected_list(catalog, live, window, of_area, area), area
    for doctor in doctors:
        assert listed(api, f"doctorId={doctor}") == expected_list(catalog, live, window, [doctor], None), doctor


def the_desk_draws_what_the_default_type_lists(clinic, catalog, doctors):
    """The desk's day draws a free cell exactly where a visit its doctor offers there fits whole by the desk's
    rules, read plainly: the default type where it fits, else the first of the doctor's types there that does
    (the cell names it); a doctor without types there, each free cell of the grid. So every start the desk lists
    of the default type is a free cell of it, and every free cell is a start the desk lists of its type."""
    live, window = read_live(clinic.conn()), clinic.window("desk")
    assert window.walk_in == (window.notice_minutes == 0) and not clinic.window("caller").walk_in
    for day in DAYS:
        cells = {(plan["id"], cell["time"]): cell["type_id"] for center in CENTERS
                 for plan in day_plan(clinic, day, center) for cell in plan["slots"] if cell["state"] == "free"}
        expected = {}
        for at in [r for r in catalog.rows if r["doctor_id"] in doctors and r["weekday"] == day.weekday()]:
            start, end, step = minutes_of(at["start_time"]), minutes_of(at["end_time"]), at["slot_minutes"]
            kinds = [catalog.kinds[key] for key in catalog.offered.get((at["doctor_id"], at["center_id"]), [])] \
                or [Kind(None, step)]
            for begin in range(start, end - step + 1, step):
                fit = next((kind for kind in kinds if not reasons(catalog, live, window, at["doctor_id"], day,
                                                                  hhmm(begin), kind)), None)
                if fit is not None:
                    expected[(at["doctor_id"], hhmm(begin))] = fit.id
        assert cells == expected, (day, set(cells.items()) ^ set(expected.items()))
        for d in doctors:
            listed = {(s.doctor_id, s.time) for s in availability(clinic, doctor_id=d, first=day, last=day,
                                                                  channel="desk")}
            assert listed <= cells.keys(), (day, listed - cells.keys())


def nothing_is_held_twice(conn, catalog):
    """Straight from the tables: no doctor's live visits overlap (pauses included), no room or machine has two
    live holds at once nor one in another doctor's room then, each visit holds its doctor's room (but a
    sobrecita) and a resource of each other category its type needs, for its length and pause, and no patient holds two overlapping live
    visits (every one made here is still to come) but one reception accepted on purpose."""
    live = read_live(conn)
    by_id = {a["id"]: a for a in live.appointments}
    for a in live.appointments:
        busy = a["busy_until"] or a["end_time"]
        for b in live.appointments:
            if a["id"] < b["id"] and a["date"] == b["date"] and a["time"] < (b["busy_until"] or b["end_time"]) \
                    and b["time"] < busy:
                assert a["doctor_id"] != b["doctor_id"] or a["squeezed"] or b["squeezed"], ("doctor twice", a, b)
                if a["patient_id"] == b["patient_id"] and a["time"] < b["end_time"] and b["time"] < a["end_time"]:
                    assert a["overlap_accepted"] or b["overlap_accepted"], ("patient twice", a, b)
        holds_what_it_needs(catalog, live, a)
    for h in live.holds:
        assert h["appointment_id"] in by_id, ("a hold outlives its visit", h)
        for g in live.holds:
            assert not (h["resource_id"] == g["resource_id"] and h["date"] == g["date"] and h is not g
                        and h["time"] < g["until"] and g["time"] < h["until"]), ("held twice", h, g)
        weekday = dt.date.fromisoformat(h["date"]).weekday()
        assert not [s for s in catalog.rows if s["room_id"] == h["resource_id"] and s["weekday"] == weekday
                    and s["doctor_id"] != by_id[h["appointment_id"]]["doctor_id"]
                    and s["start_time"] < h["until"] and h["time"] < s["end_time"]], ("another's room", h)


def holds_what_it_needs(catalog, live, a):
    """A visit holds its doctor's room then (but a sobrecita, which shares it), and one resource of each other
    category its type needs, for its length and pause."""
    kind = catalog.kinds.get(a["type_id"])
    busy = a["busy_until"] or a["end_time"]
    holds = [h for h in live.holds if h["appointment_id"] == a["id"]]
    assert all((h["date"], h["time"], h["until"]) == (a["date"], a["time"], busy) for h in holds), (a, holds)
    if kind is not None:
        assert (minutes_of(a["end_time"]) - minutes_of(a["time"]), a["pause"]) == (kind.minutes, kind.pause), a
    at = row_at(catalog, a["doctor_id"], dt.date.fromisoformat(a["date"]), minutes_of(a["time"]))
    own = next((r for r in catalog.resources if at and r["id"] == at["room_id"] and r["is_room"]), None)
    held = [h["resource_id"] for h in holds]
    if own and not a["squeezed"]:
        assert own["id"] in held, (a, holds)
        held.remove(own["id"])
    categories = sorted(next(r["category"] for r in catalog.resources if r["id"] == h) for h in held)
    needed = sorted(need for need in (kind.needs if kind else ()) if not (own and own["category"] == need))
    if own and a["squeezed"] and not shared(catalog, live, a["doctor_id"], at, own, dt.date.fromisoformat(a["date"]),
                                            a["time"], busy):
        needed = sorted(needed + [own["category"]])
    assert categories == needed, (a, holds)


# The property

@PROFILE
@given(catalog=clinics(), now=moments, notice=st.sampled_from([0, 30, 60, 120]), horizon=st.integers(1, 6),
       desk_notice=st.sampled_from([0, 15, 90]), before=bookings, tries=attempts)
def test_types_rooms_machines_and_patients_list_book_and_refuse_as_the_rules_say(catalog, now, notice, horizon,
                                                                                 desk_notice, before, tries):
    with generated_clinic(catalog, now, notice, horizon, desk_notice) as app:
        check_one_clinic(Api(app), app, before, tries)


def check_one_clinic(api, app, before, tries):
    clinic = app.clinic
    catalog = read_catalog(clinic.conn())
    doctors = sorted(catalog.areas)
    patients = [api.new_patient(nif=valid_dni(n), phone=f"6{n:08d}") for n in range(1, 4)]
    for made in before:  # bookings first: they take time, rooms and machines
        if made.doctor in doctors:
            book_before(clinic, catalog, patients, made)
    nothing_is_held_twice(clinic.conn(), catalog)
    desk = Desk(app)
    for attempt in tries:
        if attempt.channel in ("move", "desk move"):
            try_move(api, clinic, catalog, attempt)
        elif attempt.doctor in doctors:
            try_one(api, clinic, desk, catalog, patients, attempt)
        nothing_is_held_twice(clinic.conn(), catalog)
    every_route_lists_what_fits(api, clinic, catalog, doctors)
    the_desk_draws_what_the_default_type_lists(clinic, catalog, doctors)


def book_before(clinic, catalog, patients, made):
    """A Booking, as the desk (its CLI twin) makes it; a refusal leaves nothing."""
    day = working_day(catalog, made.doctor, made.day, clinic.today())
    asked = asking(catalog, made.doctor, day, made.when, made.asked)
    starts = availability(clinic, doctor_id=made.doctor, speciality_id=asked, first=day, last=day, channel="desk")
    time_text = starts[made.pick % len(starts)].time if starts and made.how != "squeeze" else some_time(
        catalog, made.doctor, day, made.when)
    visit = Visit(patients[made.patient], made.doctor, asked, accept_overlap=made.how == "accept")
    try:
        key = (squeeze_in if made.how == "squeeze" else book_appointment)(clinic, visit, day=day, time_text=time_text,
                                                                          source="cli")
    except ClinicError:
        return
    if made.cancel:
        cancel_appointment(clinic, key, reason="generated", source="cli")


def working_day(catalog, doctor, which, today):
    """One of the days the doctor works (any day, when none), the coming ones first."""
    days = [d for d in DAYS if any(r["doctor_id"] == doctor and r["weekday"] == d.weekday() for r in catalog.rows)]
    days = sorted(days or DAYS, key=lambda d: (d < today, d))
    return days[which % len(days)]


def some_time(catalog, doctor, day, when):
    """A time in the doctor's hours that day, on the grid or not, when they work; else any."""
    rows = [r for r in catalog.rows if r["doctor_id"] == doctor and r["weekday"] == day.weekday()]
    if not rows:
        return hhmm(8 * 60 + when * 5 % (10 * 60))
    at = rows[when % len(rows)]
    start, end = minutes_of(at["start_time"]), minutes_of(at["end_time"])
    return hhmm(start + when * 5 % (end - start))


def asking(catalog, doctor, day, when, asked):
    """What a booking asks for: nothing (0), the doctor's area (1), or a type the doctor offers there."""
    at = row_at(catalog, doctor, day, minutes_of(some_time(catalog, doctor, day, when)))
    types = catalog.offered.get((doctor, at["center_id"]), []) if at else []
    return [None, catalog.areas[doctor], *types][asked] if asked < 2 + len(types) else None


def try_one(api, clinic, desk, catalog, patients, attempt):
    """One booking by a channel, of a start listed, of any time, or near a visit made (by its doctor or another,
    for its patient or another): its answer is what the plain reading says."""
    live, today, now = read_live(clinic.conn()), clinic.today(), clinic.clock()
    channel = "desk" if attempt.channel == "form" and desk.used else attempt.channel  # the form once: it is slow
    over = live.appointments[attempt.pick % len(live.appointments)] if attempt.way in ("over", "beside") \
        and live.appointments else None
    doctor = attempt.doctor if not over else others(catalog, over["doctor_id"], attempt.pick, any_area=True) \
        if attempt.way == "beside" else over["doctor_id"]
    day = dt.date.fromisoformat(over["date"]) if over else working_day(catalog, doctor, attempt.day, today)
    asked = asking(catalog, doctor, day, attempt.when, attempt.asked)
    query = f"doctorId={doctor}" + (f"&specialityId={asked}" if asked else "")
    shown = listed(api, query, day, day)
    assert shown == expected_list(catalog, live, clinic.window("caller"), [doctor], asked, day, day), (query, day)
    pool = [] if attempt.way != "listed" else sorted(s[2] for s in shown) if channel == "api" else [
        s.time for s in availability(clinic, doctor_id=doctor, speciality_id=asked, first=day, last=day,
                                     channel="desk")]
    time_text = pool[attempt.pick % len(pool)] if pool else near(catalog, live, clinic, doctor, over, attempt.when) \
        if over else some_time(catalog, doctor, day, attempt.when)
    at = row_at(catalog, doctor, day, minutes_of(time_text))
    kind = at and kind_at(catalog, doctor, at["center_id"], at["slot_minutes"], asked)
    if kind is None:  # outside the hours, or a type not offered there: asked nothing
        asked, kind = None, at and kind_at(catalog, doctor, at["center_id"], at["slot_minutes"], None)
    who = over["patient_id"] if over and attempt.patient == 1 else patients[attempt.patient - 2] \
        if attempt.patient >= 2 else free_patient(api, live, patients, day, time_text, kind, now)
    found = reasons(catalog, live, window_of(clinic, channel), doctor, day, time_text, kind or Kind(None, 5), now,
                    who, squeezed=channel == "squeeze")
    if pool:
        assert not found - {"patient_elsewhere"}, (time_text, found)  # a listed start fits
    retry = next((a for a in live.appointments if (str(a["patient_id"]), a["doctor_id"], a["date"], a["time"])
                  == (str(who), doctor, day.isoformat(), time_text) and asked in (None, a["speciality_id"],
                                                                                   a["type_id"])), None)
    if channel == "form":
        answer = desk.book(doctor, day, time_text, at and at["center_id"], asked, who)
    else:
        answer = booked(api, clinic, doctor, day, time_text, asked, who, channel)
    judge(clinic, answer, found, retry, channel, live, (doctor, day, time_text, kind))


def others(catalog, doctor, pick, any_area=False):
    """Another doctor than `doctor` (of their area, unless `any_area`), the `pick`-th; else `doctor`."""
    found = [d for d in sorted(catalog.areas)
             if d != doctor and (any_area or catalog.areas[d] == catalog.areas[doctor])]
    return found[pick % len(found)] if found else doctor


def near(catalog, live, clinic, doctor, visit, when, leaving=None):
    """A start of the doctor's grid within half an hour of `visit`'s (the `when`-th), free or not (Live leaving
    out `leaving`, a visit being moved); else the visit's own time."""
    day = dt.date.fromisoformat(visit["date"])
    found = [hhmm(minutes_of(visit["time"]) + minute) for minute in range(-30, 35, 5)]
    found = [t for t in found if not ({"off_grid", "outside_hours"} & reasons(
        catalog, leaving or live, clinic.window("desk"), doctor, day, t, Kind(None, 5)))]
    return found[when % len(found)] if found else visit["time"]


def window_of(clinic, channel):
    return clinic.window("caller" if channel == "api" else "desk")


def free_patient(api, live, patients, day, time_text, kind, now):
    """A patient free from time_text for the visit's length: one of those there, else a new one."""
    end_text = hhmm(minutes_of(time_text) + (kind.minutes if kind else 5))
    free = [p for p in patients if not elsewhere(live, p, day, time_text, end_text, now)]
    if free:
        return free[0]
    patients.append(api.new_patient(nif=valid_dni(len(patients) + 1), phone=f"6{len(patients) + 1:08d}"))
    return patients[-1]


def booked(api, clinic, doctor, day, time_text, asked, patient, channel):
    """(201 or the refusal's status, the new appointment's id or the refusal's reason) of a booking by the API,
    or by the desk (with the patient's other visit accepted on purpose, when `channel` says so)."""
    patient = str(patient)
    if channel == "api":
        answer = api.post("/appointments", {"date": f"{day:%d/%m/%Y}", "time": time_text, "doctorId": doctor,
                                             "patientId": patient, **({"specialityId": asked} if asked else {})})
        error = answer.json.get("error", {})
        return answer.status_int, answer.json.get("appointmentId") or error.get("reason") or error.get("code")
    try:
        if channel == "squeeze":
            return 201, squeeze_in(clinic, Visit(patient_id=patient, doctor_id=doctor, speciality_id=asked), day=day,
                                   time_text=time_text, source="desk:ana")
        return 201, book_appointment(clinic,
                                     Visit(patient, doctor, asked, accept_overlap=channel == "accept"),
                                     day=day, time_text=time_text, source="desk:ana")
    except ClinicError as error:
        return (409 if error.code == "SLOT_NOT_AVAILABLE" else 400), error.extra.get("reason") or error.code


def try_move(api, clinic, catalog, attempt):
    """A move of a visit made (by the caller, or by the desk, to another doctor of its area too) to a start near
    it, its own time too: it keeps its type, length and pause and holds what it needs at the new time when the
    plain reading, leaving the visit itself out, says it fits there; to a doctor who does not offer its type
    there, or where it does not fit, it is refused and stays as it was."""
    live, today = read_live(clinic.conn()), clinic.today()
    coming = [a for a in live.appointments if a["date"] >= today.isoformat()]
    if not coming:
        return
    moved = coming[attempt.pick % len(coming)]
    day, doctor = dt.date.fromisoformat(moved["date"]), moved["doctor_id"]
    if attempt.way == "beside" and attempt.channel == "desk move":
        doctor = others(catalog, doctor, attempt.pick)
    rest = Live([a for a in live.appointments if a["id"] != moved["id"]],
                [h for h in live.holds if h["appointment_id"] != moved["id"]])
    time_text = near(catalog, live, clinic, doctor, moved, attempt.when, leaving=rest)
    needs = catalog.kinds[moved["type_id"]].needs if moved["type_id"] else ()
    kind = Kind(moved["type_id"], minutes_of(moved["end_time"]) - minutes_of(moved["time"]), moved["pause"], needs)
    found = reasons(catalog, rest, window_of(clinic, "api" if attempt.channel == "move" else "desk"), doctor, day,
                    time_text, kind, clinic.clock(), moved["patient_id"], squeezed=moved["squeezed"] and
                    attempt.channel == "desk move", shares=moved["squeezed"])  # a sobrecita moved by the desk stays one
    status, said = moving(api, clinic, moved, doctor, day, time_text, attempt.channel)
    event(f"{attempt.channel}: {'moved' if status == 200 else said}")
    after = {a["id"]: a for a in read_live(clinic.conn()).appointments}
    at = row_at(catalog, doctor, day, minutes_of(time_text))
    if doctor != moved["doctor_id"] and kind.id and at and kind.id not in catalog.offered.get(
            (doctor, at["center_id"]), []):
        assert status != 200 and after[moved["id"]] == moved, (moved, doctor, time_text, status, said)
        return
    if found:
        assert status == 409 and said in first_reasons(found), (moved, time_text, status, said, found)
        assert after[moved["id"]] == moved, "a refused move wrote"
        return
    assert status == 200, (moved, time_text, status, said)
    now = after[moved["id"]]
    assert (now["doctor_id"], now["time"], now["type_id"], now["pause"]) == (
        doctor, time_text, moved["type_id"], moved["pause"]), now
    assert minutes_of(now["end_time"]) - minutes_of(now["time"]) == kind.minutes, (now, kind)


def moving(api, clinic, appointment, doctor, day, time_text, channel):
    """(200 or the refusal's status, the refusal's reason) of a move by the caller or by the desk."""
    if channel == "move":
        answer = api.put(f"/appointments/{appointment['id']}", {"newDate": f"{day:%d/%m/%Y}", "newTime": time_text})
        return answer.status_int, answer.json.get("error", {}).get("reason") if answer.json else None
    try:
        move_appointment(clinic, appointment["id"], day=day, time_text=time_text, doctor_id=doctor, source="desk:ana")
        return 200, None
    except ClinicError as error:
        return (409 if error.code == "SLOT_NOT_AVAILABLE" else 400), error.extra.get("reason") or error.code


def first_reasons(found):
    """The states a refusal may give: those of the first kind that applies (when, where and the grid; the
    doctor's time; rooms and machines; the patient), in the door's order."""
    tiers = [{"beyond_horizon", "too_soon"}, {"outside_hours"}, {"off_grid", "closed", "taken"}, {"resource_taken"},
             {"patient_elsewhere"}]
    return next(tier & found for tier in tiers if tier & found)


def judge(clinic, answer, found, retry, channel, live, visit):
    """The answer agrees with the plain reading: a retry answers the visit made; a start that fits books, with
    the type's length and pause; else the reason is one of its states, the first that applies by kind (when,
    where and the grid; the doctor's time; rooms and machines; the patient); nothing new is written."""
    status, said = answer
    doctor, day, time_text, kind = visit
    if retry is not None:
        event(f"{channel}: the same booking again")
        assert (status, str(said)) == ((303, "None") if channel == "form" else (201, str(retry["id"]))), (visit, answer)
        assert read_live(clinic.conn()).appointments == live.appointments, "a retry wrote"
        return
    accepted = channel == "accept" and "patient_elsewhere" in found
    found = found - {"patient_elsewhere"} if accepted else found
    event(f"{channel}: {said if found else 'booked over their other visit' if accepted else 'booked'}")
    if not found:
        assert status in (201, 303), (visit, answer, found)
        made = read_live(clinic.conn()).appointments[-1]
        assert (made["doctor_id"], made["date"], made["time"]) == (doctor, day.isoformat(), time_text), made
        assert made["id"] not in {a["id"] for a in live.appointments}, made
        assert minutes_of(made["end_time"]) - minutes_of(made["time"]) == kind.minutes, (made, kind)
        assert (made["pause"], made["type_id"], made["overlap_accepted"], made["squeezed"]) == (
            kind.pause, kind.id, accepted, channel == "squeeze"), made
        return
    assert status not in (201, 303), (visit, answer, found)
    assert read_live(clinic.conn()).appointments == live.appointments, "a refusal wrote"
    if channel == "form":
        return
    assert status == 409 and said in first_reasons(found), (visit, answer, found)


class Desk:
    """The desk's own booking form, logged in once, used once an example (it is the slowest door)."""

    def __init__(self, app):
        self.app, self.client, self.used = app, None, False

    def book(self, doctor, day, time_text, center, asked, patient):
        self.used = True
        if self.client is None:
            self.app.accounts.add_staff("ana", PASSWORD)
            self.client = webtest.TestApp(self.app)
            login = self.client.get("/desk/login").forms[0]
            login["name"], login["password"] = "ana", PASSWORD
            assert login.submit().status_int == 303
        query = {"doctorId": doctor, "date": f"{day:%d/%m/%Y}", "time": time_text, "centerId": center or "",
                 "patientId": patient, **({"typeId": asked} if asked else {})}
        page = self.client.get("/desk/book", params=query)
        form = next(f for f in page.forms.values() if f.action == "/desk/book" and "patientId" in f.fields)
        answer = form.submit(expect_errors=True)
        return answer.status_int, None


# What the property found, one example each

def runs_past_the_grid(slot="30", types="LONG", closed=True):
    """D1 works 09:00-09:40 on a grid of `slot` minutes, offering `types` (LONG: a visit of 40 minutes, on a
    grid of 30 one slot and 10 minutes more); on Tuesday 24/11 a meeting closes 09:30-09:40, when `closed`."""
    return HEADER + "\n".join([
        row("center", "C1", "Centro"), row("speciality", "MG", "Medicina general"),
        row("type", "LONG", "Larga", "MG", slot="40"),
        row("doctor", "D1", "Dr D1", "MG", "C1", "mon-fri", "09:00-09:40", slot, types=types),
        *([row("closed", "", "Reunión", hours="09:30-09:40", first="24/11/2026")] if closed else [])]) + "\n"


def test_a_visit_that_runs_past_the_grids_last_slot_into_a_closure_is_neither_offered_nor_booked(make_api):
    """Hours of 09:00-09:40 by 30 minutes have one slot; a visit of 40 minutes from 09:00 fits the hours, and its
    last 10 minutes, which no slot holds, were not checked: it was offered and booked over the closure."""
    api = make_api(csv=runs_past_the_grid())
    patient = api.new_patient()
    days = "startDate=23/11/2026&endDate=25/11/2026"
    assert [s["date"] for s in api.get(f"/availabilities?specialityId=LONG&{days}").json["data"]] == [
        "23/11/2026", "25/11/2026"]  # on Tuesday the closure takes its last 10 minutes
    refused = api.post("/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "D1", "patientId": patient})
    assert (refused.status_int, refused.json["error"]["reason"]) == (409, "closed")
    with pytest.raises(ClinicError) as desk_refusal:
        book_appointment(api.app.clinic, Visit(patient_id=patient, doctor_id="D1"), day=dt.date(2026, 11, 24),
                         time_text="09:00", source="desk:ana")
    assert desk_refusal.value.extra["reason"] == "closed"
    assert api.post("/appointments", {"date": "25/11/2026", "time": "09:00", "doctorId": "D1",
                                      "patientId": patient}).status_int == 201


def test_a_visit_that_runs_past_the_grids_last_slot_into_another_visit_is_neither_offered_nor_booked(
        make_api, db_path, tmp_path):
    """A visit made at 09:30 when the grid was of 10 minutes stays when the hours become one slot of 30 and 10
    minutes more: a visit of 40 from 09:00 would run into it, which no slot of the new grid shows."""
    api = make_api(csv=runs_past_the_grid(slot="10", types="", closed=False))
    patient = api.new_patient()
    assert api.post("/appointments", {"date": "24/11/2026", "time": "09:30", "doctorId": "D1",
                                      "patientId": patient}).status_int == 201
    seed(db_path, write_csv(tmp_path, runs_past_the_grid(closed=False), "again.csv"))
    days = "startDate=24/11/2026&endDate=25/11/2026"
    assert [s["date"] for s in api.get(f"/availabilities?specialityId=LONG&{days}").json["data"]] == ["25/11/2026"]
    other = api.new_patient(nif=valid_dni(7), phone="600000007")
    refused = api.post("/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "D1", "patientId": other})
    assert (refused.status_int, refused.json["error"]["reason"]) == (409, "taken")


TWO_KINDS_OF_VISIT = HEADER + "\n".join([
    row("center", "C1", "Centro"), row("speciality", "MG", "Medicina general"),
    row("type", "MG-A", "Primera", "MG", slot="30"), row("type", "MG-B", "Revisión", "MG", slot="15"),
    *[row("doctor", doctor, f"Dr {doctor}", "MG", "C1", "mon-fri", "09:00-12:00", "15", types=types)
      for doctor, types in (("D1", "MG-A"), ("D2", "MG-B"), ("D3", "MG-B;MG-A"), ("D4", ""))]]) + "\n"


@pytest.mark.parametrize("doctor, moved", [("D2", False), ("D4", False), ("D3", True)])
def test_a_move_to_another_doctor_who_does_not_offer_the_visits_type_there_is_refused(make_api, doctor, moved):
    """The desk moved a first visit of 30 minutes to a doctor who offers only follow-ups, or no types at all,
    and it kept its type there; a doctor who offers it (not first) takes it with its length."""
    api = make_api(csv=TWO_KINDS_OF_VISIT)
    made = api.post("/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "D1",
                                      "patientId": api.new_patient()}).json["appointmentId"]
    move = {"day": dt.date(2026, 11, 24), "time_text": "10:00", "doctor_id": doctor, "source": "desk:ana"}
    if moved:
        move_appointment(api.app.clinic, made, **move)
    else:
        with pytest.raises(ClinicError) as refusal:
            move_appointment(api.app.clinic, made, **move)
        assert (refusal.value.code, refusal.value.rule, refusal.value.field) == ("INVALID_REQUEST", "type_not_offered",
                                                                                 "doctorId")
    visit = read_appointment(api.app.clinic, made)
    assert (visit["doctor_id"], visit["start"], visit["end"], visit["type_id"]) == (
        (doctor, "10:00", "10:30", "MG-A") if moved else ("D1", "09:00", "09:30", "MG-A"))
