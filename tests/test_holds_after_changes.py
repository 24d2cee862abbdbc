"""A visit holds what it needs after any change (docs/design.md, "What a visit holds"): a catalog reload that
takes a doctor's room away or adds a need gives the coming visits what they need now, or is refused naming
them; a type's area never changes under the doctors offering it; an import honours a type's needs without a
`holds` column, refuses a room of another center or a type of another area by line, and leaves the unchanged
catalog loadable; a move to where the doctor does not offer the visit's type is refused by every channel; a
typed waiting entry is offered only where its type fits; the upgrade that starts holding doctors' rooms fills
in what fits and lists the rest."""

import re
from pathlib import Path

import pytest
import webtest
from click.testing import CliRunner

import agenda
from _agenda.domain.waitlist import Wish
from _agenda.domain.booking import Visit
from _agenda.files.catalogs import SeedError
from _agenda.domain.holds import unheld
from _agenda.files.reading import read_catalog_text
from _agenda.storage.shipped import newest_version, read_schema

from conftest import assert_error, Clock, table_rows, valid_dni
from test_desk import log_in, PASSWORD
from test_visit_types import people, TUESDAY, TYPES_CSV

VEGA = "doctor,VEGA,Rosa Vega,FIS,C2,,mon-fri,09:00-12:00,15,,,,,,FIS-SES;FIS-VAL,C2-BOX0\n"
FIRST = "type,MG-PRI,Primera visita,MG,,,,,30,,,10,,,,\n"
SATURDAY = "28/11/2026"


@pytest.fixture
def typed(make_api):
    api = make_api(TYPES_CSV)
    api.app.accounts.add_staff("ana", PASSWORD)
    return api


def holds_of(api, appointment_id):
    return [row[0] for row in api.db().execute("SELECT resource_id FROM holds WHERE appointment_id = ? AND live = 1"
                                               " ORDER BY resource_id", (int(appointment_id),))]


def session(api, patient, doctor, time_text="09:00", type_id="FIS-SES", status=201):
    return api.book(patient, date="24/11/2026", time=time_text, doctor=doctor, specialityId=type_id, status=status)


def reload(api, clock, text):
    return agenda.seed_catalogs(api.db(), read_catalog_text(text), at=clock())


def cli(api, clock, *args):
    runner = CliRunner(env={"AGENDA_DB": str(api.app.clinic.db.path), "AGENDA_SECRET": None})
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(clock.moment)})


def test_a_reload_taking_a_doctors_room_leaves_her_visits_a_box_or_is_refused_naming_them(typed, db_path, clock):
    """Vega's sessions hold her own box as any room; a catalog without her `room` leaves each holding a box,
    so a fourth session at once is never booked on three boxes; a catalog that takes the box from the center
    too, with both shared boxes held then, is refused naming her visit, and nothing changes."""
    ana, luis, eva, rosa = people(typed, 4)
    vega = session(typed, ana, "VEGA")
    assert holds_of(typed, vega) == ["C2-BOX0"]
    roomless = TYPES_CSV.replace(VEGA, VEGA.replace("C2-BOX0", ""))
    assert reload(typed, clock, roomless)["rederived"] == [] and holds_of(typed, vega) == ["C2-BOX0"]
    session(typed, luis, "MUNOZ"), session(typed, eva, "SOTO")
    assert session(typed, rosa, "LARA", status=409).json["error"]["reason"] == "resource_taken"
    reload(typed, clock, TYPES_CSV)  # her room back
    assert holds_of(typed, vega) == ["C2-BOX0"]
    elsewhere = roomless.replace("room,C2-BOX0,Box de Vega,,C2,", "room,C2-BOX0,Box de Vega,,C1,")
    before = table_rows(db_path)
    with pytest.raises(SeedError) as refused:
        reload(typed, clock, elsewhere)
    assert f"appointment {vega} (24/11/2026 09:00, doctor VEGA)" in str(refused.value)
    assert "Move them first" in str(refused.value)
    line = 1 + elsewhere.splitlines().index(next(row for row in elsewhere.splitlines() if row.startswith("room,C2-BOX0")))
    assert refused.value.problems[0][0] == line  # the box's own row, which took it away
    assert table_rows(db_path) == before
    held = typed.db().execute("SELECT count(*) FROM holds WHERE resource_id LIKE 'C2-BOX%' AND live = 1").fetchone()[0]
    assert held == 3


def test_a_type_that_gains_a_need_gives_its_booked_visits_the_machine_or_is_refused(typed, db_path, clock):
    """A first visit that needed no machine is loaded again needing the ultrasound: its coming visits take it,
    so another doctor's scan at that time is refused; when the machine is held then, the reload is refused."""
    ana, luis = people(typed, 2)
    revision = typed.book(ana, date="24/11/2026", time="09:00", doctor="MARTIN", specialityId="MG-PRI")
    assert holds_of(typed, revision) == ["C1-CONS"]  # her own room
    needing = TYPES_CSV.replace(FIRST, FIRST.replace(",10,,,,\n", ",10,eco,,,\n"))
    assert needing != TYPES_CSV
    reload(typed, clock, needing)
    assert holds_of(typed, revision) == ["C1-CONS", "C1-ECO"]
    refused = typed.book(luis, date="24/11/2026", time="09:00", doctor="PAZ", specialityId="MG-ECO", status=409)
    assert refused.json["error"]["reason"] == "resource_taken"
    reload(typed, clock, TYPES_CSV)
    assert holds_of(typed, revision) == ["C1-CONS"]  # it needs no machine again: it holds none
    scan = typed.book(luis, date="24/11/2026", time="09:00", doctor="PAZ", specialityId="MG-ECO")
    before = table_rows(db_path)
    with pytest.raises(SeedError) as refused:
        reload(typed, clock, needing)
    assert f"appointment {revision} (24/11/2026 09:00, doctor MARTIN)" in str(refused.value)
    assert table_rows(db_path) == before and holds_of(typed, scan) == ["C1-ECO"]


def test_a_seed_lists_the_visits_whose_room_or_machine_changed(typed, clock):
    vega = session(typed, people(typed, 1)[0], "VEGA")
    elsewhere = TYPES_CSV.replace(VEGA, VEGA.replace("C2-BOX0", "")).replace("room,C2-BOX0,Box de Vega,,C2,",
                                                                              "room,C2-BOX0,Box de Vega,,C1,")
    done = cli(typed, clock, "seed", _write(typed, elsewhere))
    assert done.exit_code == 0, done.output
    assert f"1 coming appointment with another room or machine now:\n  appointment {vega} (24/11/2026 09:00, VEGA):" \
           " now holds C2-BOX1" in done.output


def _write(api, text):
    path = Path(api.app.clinic.db.path).parent / "catalog.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_types_area_never_changes_under_the_doctors_offering_it(typed, db_path, clock):
    before = table_rows(db_path)
    alone = "kind,id,name,speciality,slot_minutes,needs\ntype,FIS-VAL,Valoración,MG,30,box\n"  # that row only
    with pytest.raises(SeedError) as refused:
        reload(typed, clock, alone)
    assert str(refused.value) == ("line 2: type 'FIS-VAL': doctors LARA, MUNOZ, SOTO, VEGA offer it, and it would be"
                                  " of an area not theirs: take it from their rows first")
    assert table_rows(db_path) == before


def appointments_file(tmp_path, rows, header="date,time,duration,doctor,center,nif,name,type,holds"):
    path = tmp_path / "citas.csv"
    path.write_text(header + "\n" + "".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def test_an_import_honours_a_types_needs_and_refuses_a_room_or_type_that_does_not_belong(typed, tmp_path, clock):
    """Sessions of a type needing a box, from a file without `holds`, hold the boxes (the fourth at once, none
    free, is imported and listed); a row holding another center's machine or of a type of another area is
    refused by line; and the clinic's unchanged catalog loads again afterwards."""
    rows = [f"25/11/2026,10:00,45,{doctor},C2,{valid_dni(600 + n)},P{n},FIS-SES" for n, doctor in
            enumerate(("VEGA", "MUNOZ", "SOTO", "LARA"))]
    path = appointments_file(tmp_path, rows, header="date,time,duration,doctor,center,nif,name,type")
    before = table_rows(typed.app.clinic.db.path)
    tried = cli(typed, clock, "import-appointments", path, "--dry-run")  # says it all, writes nothing
    assert tried.exit_code == 0 and "Nothing was written" in tried.output, tried.output
    assert "line 4: 25/11/2026 10:00: no room or machine it needs" in tried.output
    assert table_rows(typed.app.clinic.db.path) == before
    done = cli(typed, clock, "import-appointments", path)
    assert done.exit_code == 0, done.output
    assert "Rooms and machines, 1 line" in done.output
    assert "line 4: 25/11/2026 10:00: no room or machine it needs" in done.output
    held = sorted(row[0] for row in typed.db().execute("SELECT resource_id FROM holds WHERE live = 1"))
    assert held == ["C2-BOX0", "C2-BOX1", "C2-BOX2"]  # never one box twice
    assert len(unheld(typed.db(), clock().astimezone(typed.app.clinic.tz))) == 1
    assert cli(typed, clock, "seed", _write(typed, TYPES_CSV)).exit_code == 0  # the unchanged catalog loads
    before = table_rows(typed.app.clinic.db.path)
    wrong = [f"26/11/2026,09:00,20,MARTIN,C1,{valid_dni(700)},Ana,MG-ECO,C1-ECO",
             f"26/11/2026,09:00,45,MUNOZ,C2,{valid_dni(701)},Eva,FIS-SES,C1-ECO",
             f"26/11/2026,10:00,30,GIL,C1,{valid_dni(702)},Luis,FIS-VAL,"]
    refused = cli(typed, clock, "import-appointments", appointments_file(tmp_path, wrong))
    assert refused.exit_code == 1
    assert "line 3: holds 'C1-ECO', a room or machine of center C1, not of the appointment's (C2)" in refused.output
    assert "line 4: type 'FIS-VAL' is of area FIS, not the doctor's (MG)" in refused.output
    assert "line 2" not in refused.output
    assert table_rows(typed.app.clinic.db.path) == before


def test_a_move_to_where_the_doctor_does_not_offer_the_visits_type_is_refused_by_every_channel(typed, clock):
    """Martín offers a first visit at Centro and only follow-ups at Norte on Saturdays: moving her first visit
    there is refused at the desk and by `agenda move`, in words; once Centro withdraws the type from her, the
    caller's move there is refused, 409 type_not_offered."""
    patient = people(typed, 1)[0]
    first = typed.book(patient, date="24/11/2026", time="09:00", doctor="MARTIN", specialityId="MG-PRI")
    moved = cli(typed, clock, "move", first, "--date", SATURDAY, "--time", "10:00", "--center", "C2")
    assert moved.exit_code == 1 and "does not offer the appointment's visit type at that center" in moved.output
    desk = webtest.TestApp(typed.app)
    log_in(desk)
    csrf = re.search(r'name="csrf" value="([^"]+)"', desk.get(f"/desk/appointments/{first}").text).group(1)
    answer = desk.post(f"/desk/appointments/{first}/move", {"csrf": csrf, "slot": f"{SATURDAY}|10:00|MARTIN|C2"},
                       status="*")  # a slot set by hand: the form lists only what fits
    shown = answer.follow().text if answer.status_int in (302, 303) else answer.text
    assert "no ofrece el tipo de visita de esta cita" in shown
    row = typed.db().execute("SELECT date, time, center_id FROM appointments WHERE id = ?", (int(first),)).fetchone()
    assert tuple(row) == ("2026-11-24", "09:00", "C1")
    martin = "doctor,MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-11:00,15,,,,,,MG-PRI;MG-REV;MG-ECO,C1-CONS\n"
    reload(typed, clock, TYPES_CSV.replace(martin, martin.replace("MG-PRI;", "")))  # withdrawn at Centro
    answer = typed.put(f"/appointments/{first}", {"newDate": "25/11/2026", "newTime": "09:00"})
    assert assert_error(answer, 409, "SLOT_NOT_AVAILABLE")["reason"] == "type_not_offered"


def test_a_typed_waiting_entry_is_offered_only_where_its_type_fits(typed, clock):
    """Someone waiting for a physiotherapy session is named on a free slot's booking page only where a session
    fits (a physiotherapist's free start with a box free), never on a general practitioner's."""
    from _agenda.domain.waitlist import add_waiting
    from _agenda.words.texts import TEXTS
    patient, ana, luis = people(typed, 3)
    add_waiting(typed.app.clinic, Wish(patient_id=patient, type_id="FIS-SES", first=TUESDAY, last=TUESDAY),
                source="desk:ana")
    desk = webtest.TestApp(typed.app)
    log_in(desk)
    heading = TEXTS["waiting_for_slot"][0]

    def offered(doctor, center, time_text="09:00"):
        return heading in desk.get(f"/desk/book?doctorId={doctor}&date=24/11/2026&time={time_text}&centerId={center}"
                                   ).text
    assert offered("MUNOZ", "C2")
    assert not any(offered(doctor, "C1") for doctor in ("MARTIN", "GIL", "PAZ", "RUIZ"))
    session(typed, ana, "SOTO"), session(typed, luis, "LARA")  # both shared boxes held at 09:00
    assert not offered("MUNOZ", "C2") and offered("VEGA", "C2")  # Vega has her own box


def test_the_upgrade_that_holds_doctors_rooms_fills_in_what_fits_and_lists_the_rest(typed, clock):
    """A database from before doctors' rooms were held: the upgrade gives each coming visit of a doctor in a
    room that room where it is free then; a visit whose room another visit holds is listed (the rooms page,
    `agenda status`), and the upgrade never fails. History is left as it was."""
    day = "2030-11-26"  # a Tuesday after any clock: the upgrade reads the machine's date
    conn = typed.db()
    with conn:
        for number, (doctor, time_text, end, held) in enumerate((
                ("VEGA", "09:00", "09:45", None), ("VEGA", "10:00", "10:45", None),
                ("MUNOZ", "10:00", "10:45", "C2-BOX0"), ("VEGA", "09:00", "09:45", None)), 1):
            patient = people(typed, 1)[0] if number == 1 else conn.execute("SELECT max(id) FROM patients").fetchone()[0]
            when = "2020-11-24" if number == 4 else day  # the last one is history
            conn.execute("INSERT INTO appointments (id, patient_id, doctor_id, speciality_id, center_id, date, time,"
                         " end_time, busy_until, type_id, created_at, updated_at) VALUES (?, ?, ?, 'FIS', 'C2', ?, ?,"
                         " ?, ?, 'FIS-SES', 'x', 'x')", (100 + number, patient, doctor, when, time_text, end, end))
            if held:
                conn.execute("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES (?, ?, ?, ?,"
                             " ?)", (100 + number, held, when, time_text, end))
        # Gil in Martín's room after her: her visit booked before her hours were shortened runs into his
        conn.execute("INSERT INTO schedules (doctor_id, center_id, weekday, start_time, end_time, slot_minutes,"
                     " room_id) VALUES ('GIL', 'C1', 1, '11:00', '12:00', 20, 'C1-CONS')")
        for number, (doctor, time_text, end) in ((10, ("MARTIN", "10:45", "11:15")), (11, ("GIL", "11:00", "11:20"))):
            conn.execute("INSERT INTO appointments (id, patient_id, doctor_id, speciality_id, center_id, date, time,"
                         " end_time, created_at, updated_at) VALUES (?, 1, ?, 'MG', 'C1', ?, ?, ?, 'x', 'x')",
                         (100 + number, doctor, day, time_text, end))
        conn.execute("PRAGMA user_version = 14")
    upgraded = re.split(r"\n-- version (?:1[6-9]|[2-9][0-9])\s*\n", read_schema())[0]  # the sections up to 15's
    assert agenda.migrate(conn, upgraded) == 15  # never fails, whatever it finds
    conn.execute(f"PRAGMA user_version = {newest_version()}")  # what the later sections made was made at the start
    assert holds_of(typed, 101) == ["C2-BOX0"] and holds_of(typed, 102) == [] and holds_of(typed, 104) == []
    assert holds_of(typed, 110) == ["C1-CONS"] and holds_of(typed, 111) == []  # the lower id first
    now = clock().astimezone(typed.app.clinic.tz)
    assert {visit.id for visit in unheld(conn, now)} == {102, 103, 110, 111}  # Vega's room held by Muñoz's then;
    status = cli(typed, clock, "status")  # Martín's visit runs into Gil's hours in her room, and his finds it held
    assert "4 coming appointments without the room or machine they need" in status.output, status.output
    desk = webtest.TestApp(typed.app)
    log_in(desk)
    rooms = desk.get("/desk/rooms?date=26/11/2030&centerId=C2").html.find(id="unplaced")
    assert [a["href"] for a in rooms.find_all("a")] == ["/desk/appointments/102", "/desk/appointments/103"]  # C2
    assert "Citas de este día sin la sala o la máquina que necesitan" in rooms.text and "Rosa Vega" in rooms.text
    assert desk.get("/desk/rooms?date=27/11/2030&centerId=C2").html.find(id="unplaced") is None  # that day's only


def test_a_sobrecita_at_the_desk_of_a_doctor_in_no_room_with_every_box_held_is_refused_naming_them(typed, db_path):
    """Muñoz has no box of his own: with both shared boxes held, the desk's sobrecita says which are in use and
    books nothing."""
    ana, luis = people(typed, 2)
    session(typed, ana, "MUNOZ"), session(typed, luis, "SOTO")
    typed.new_patient(nif=valid_dni(9), phone="600000099")
    desk = webtest.TestApp(typed.app)
    log_in(desk)
    page = desk.get("/desk/book?doctorId=MUNOZ&date=24/11/2026&time=09:10&squeeze=1&centerId=C2")
    search = next(form for form in page.forms.values() if form.action == "/desk/book/search")
    search["q"] = valid_dni(9)
    found = search.submit()
    form = next(form for form in found.forms.values() if form.action == "/desk/book" and "patientId" in form.fields)
    before = [table_rows(db_path)[table] for table in ("appointments", "holds")]
    said = form.submit(expect_errors=True)
    assert " ".join(said.html.select_one("p.error").text.split()) == (
        "A esa hora no queda box libre para esa visita (en uso: Box 1, Box 2, Box de Vega).")
    assert [table_rows(db_path)[table] for table in ("appointments", "holds")] == before


def test_a_room_changed_under_a_doctor_reaches_her_sobrecita_and_never_leaves_her_placed_elsewhere(typed, db_path,
                                                                                                   clock):
    """Vega's box made a consultation room: her sobrecita, which held nothing while it shared her box, now takes
    a free box and is listed; a room row alone moving her box to another center is refused, naming her."""
    from _agenda.domain.counter import squeeze_in
    ana, luis = people(typed, 2)
    vega = session(typed, ana, "VEGA")
    over = squeeze_in(typed.app.clinic, Visit(patient_id=luis, doctor_id="VEGA"), day=TUESDAY, time_text="09:10",
                      source="desk:ana")
    assert holds_of(typed, over) == []
    consulting = TYPES_CSV.replace("room,C2-BOX0,Box de Vega,,C2,,,,,,,,,box,,",
                                   "room,C2-BOX0,Box de Vega,,C2,,,,,,,,,consulta,,")
    moved = reload(typed, clock, consulting)
    assert {visit["id"] for visit in moved["rederived"]} == {int(vega), int(over)}
    assert holds_of(typed, vega) == ["C2-BOX0", "C2-BOX1"] and holds_of(typed, over) == ["C2-BOX2"]
    assert unheld(typed.db(), clock().astimezone(typed.app.clinic.tz)) == []
    before = table_rows(db_path)
    with pytest.raises(SeedError) as refused:
        reload(typed, clock, "kind,id,name,center,category\nroom,C2-BOX0,Box de Vega,C1,box\n")
    assert str(refused.value) == ("line 2: C2-BOX0: doctors VEGA work in it; it must stay a room of their center"
                                  " (take it from their rows first)")
    assert table_rows(db_path) == before


def test_an_import_row_over_a_visit_with_a_pause_names_that_visit(typed, tmp_path, clock):
    """A row overlapping a booked visit that has a pause (its busy end past its end) is refused by line, naming
    the appointment; the check read the visit's end and found none (a 500)."""
    first = typed.book(people(typed, 1)[0], date="24/11/2026", time="09:00", doctor="MARTIN", specialityId="MG-PRI")
    row = f"24/11/2026,09:30,15,MARTIN,C1,{valid_dni(800)},Ana,MG-REV,"
    refused = cli(typed, clock, "import-appointments", appointments_file(tmp_path, [row]))
    assert refused.exit_code == 1
    assert f"line 2: 24/11/2026 09:30 with MARTIN overlaps appointment {first} already in the agenda" in refused.output


def test_a_reload_leaving_a_booked_visit_outside_its_doctors_hours_puts_it_on_the_list_to_call(api, clock):
    """Martín's 10:30 visit, and a reload ending her hours at 10:00: the visit stayed as if nothing happened, off
    the list to call, and the caller's reminder agent would confirm it. Now it is to call, as a closure's visits
    are, and the caller's day list leaves it out; hours that hold it again take it off the list."""
    from conftest import CLINIC_CSV
    from _agenda.domain.counter import to_call
    late, early = api.book(api.new_patient(), time="10:30"), api.book(api.new_patient(nif=valid_dni(1)), time="09:00")
    shorter = CLINIC_CSV.replace("MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-11:00", "MARTIN,Lucía Martín,MG,C1,,"
                                 "mon-fri,09:00-10:00")
    assert shorter != CLINIC_CSV
    reload(api, clock, shorter)
    assert [str(a["id"]) for a in to_call(api.app.clinic, "desk:test")] == [late]
    assert [a["appointmentId"] for a in api.get("/appointments?date=24/11/2026").json["data"]] == [early]
    reload(api, clock, CLINIC_CSV)
    assert to_call(api.app.clinic, "desk:test") == []
