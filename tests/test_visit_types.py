"""Visit types (docs/design.md, "Visit types"): the catalog declares a clinic's types (a length, a pause after,
the rooms and machines they need) and which a doctor offers at each center; `agenda export` writes them and
`agenda seed` reads them back, in ',' or ';' and UTF-8 or Windows-1252, refusing each mistake by its line. The
caller books them through the spec's own fields: /custom-config lists them among the specialities, availability
by a type's id offers the starts on each doctor's grid where its whole length and pause fit, by an area's id or
a doctor alone each doctor's default type; a booking takes the type asked, and a move keeps the appointment's
own length and type, whatever made it."""

import csv
import datetime as dt
import io
import sqlite3

import pytest
from click.testing import CliRunner

import agenda
from _agenda.domain.booking import Visit
from _agenda.files.catalogs import CATALOG_TABLES, SeedError
from _agenda.domain.counter import squeeze_in
from _agenda.files.reading import read_catalog_text
from _agenda.domain.changes import move_appointment

from conftest import MONDAY, Clock, assert_error, table_rows, valid_dni, write_csv
from test_moving import cli, write

TUESDAY = dt.date(2026, 11, 24)

# Two centers. MARTIN (15-minute grid, in her own consulting room at Centro) offers a first visit of 30 minutes
# and a 10-minute pause, a follow-up of 15 and an ultrasound scan of 20 that needs the one machine; at Norte on
# Saturdays only the follow-up. GIL (20-minute grid) and PAZ share the machine. RUIZ declares no types. Four
# physiotherapists at Norte: VEGA is placed in a box of her own; the other three share two boxes.
TYPES_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to,pause,needs,category,types,room
center,C1,Centro,,,,,,,,,,,,,
center,C2,Norte,,,,,,,,,,,,,
speciality,MG,Medicina general,,,,,,,,,,,,,
speciality,FIS,Fisioterapia,,,,,,,,,,,,,
speciality,PED,Pediatría,,,,,,,,,,,,,
insurance,PRIV,Privado,,,,,,,,,,,,,
type,MG-PRI,Primera visita,MG,,,,,30,,,10,,,,
type,MG-REV,Revisión,MG,,,,,15,,,,,,,
type,MG-ECO,Ecografía,MG,,,,,20,,,,eco,,,
type,FIS-SES,Sesión de fisioterapia,FIS,,,,,45,,,,box,,,
type,FIS-VAL,Valoración,FIS,,,,,30,,,,box,,,
room,C1-CONS,Consulta 1,,C1,,,,,,,,,consulta,,
machine,C1-ECO,Ecógrafo,,C1,,,,,,,,,eco,,
room,C2-BOX0,Box de Vega,,C2,,,,,,,,,box,,
room,C2-BOX1,Box 1,,C2,,,,,,,,,box,,
room,C2-BOX2,Box 2,,C2,,,,,,,,,box,,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-11:00,15,,,,,,MG-PRI;MG-REV;MG-ECO,C1-CONS
doctor,MARTIN,Lucía Martín,MG,C2,,sat,10:00-11:00,15,,,,,,MG-REV,
doctor,GIL,Pedro Gil,MG,C1,,mon-fri,09:00-11:00,20,,,,,,MG-REV;MG-ECO,
doctor,PAZ,Elena Paz,MG,C1,,mon-fri,09:00-11:00,20,,,,,,MG-ECO,
doctor,RUIZ,Javier Ruiz,PED,C1,,mon-fri,09:00-10:00,20,,,,,,,
doctor,VEGA,Rosa Vega,FIS,C2,,mon-fri,09:00-12:00,15,,,,,,FIS-SES;FIS-VAL,C2-BOX0
doctor,MUNOZ,Andrés Muñoz,FIS,C2,,mon-fri,09:00-12:00,15,,,,,,FIS-SES;FIS-VAL,
doctor,SOTO,Ana Soto,FIS,C2,,mon-fri,09:00-12:00,15,,,,,,FIS-SES;FIS-VAL,
doctor,LARA,Eva Lara,FIS,C2,,mon-fri,09:00-12:00,15,,,,,,FIS-VAL;FIS-SES,
closed,,Inmaculada,,,,,,,08/12/2026,,,,,,
"""


def without_types(text):
    """The same clinic written as before types: no type, room or machine rows, no types or room cells."""
    rows = list(csv.DictReader(io.StringIO(text)))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows({**row, "types": "", "room": ""} for row in rows if row["kind"] not in ("type", "room", "machine"))
    return out.getvalue()


def as_spanish_sheet(text):
    """The same file as a Spanish spreadsheet saves it: ';' between cells, Windows-1252."""
    out = io.StringIO()
    csv.writer(out, delimiter=";", lineterminator="\r\n").writerows(csv.reader(io.StringIO(text)))
    return out.getvalue().encode("cp1252")


def catalogs_of(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return {table: conn.execute(sql).fetchall() for table, sql in CATALOG_TABLES.items()}
    finally:
        conn.close()


@pytest.fixture
def typed(make_api):
    return make_api(TYPES_CSV)


def people(api, count):
    return [api.new_patient(nif=valid_dni(100 + n), phone=f"61{n:07d}") for n in range(count)]


def starts(api, query, day="24/11/2026"):
    answer = api.get(f"/availabilities?{query}&date={day}")
    assert answer.status_int == 200, answer.text
    return answer.json["data"]


def row_of(api, appointment_id):
    return api.db().execute("SELECT * FROM appointments WHERE id = ?", (appointment_id,)).fetchone()


# The catalog file

def test_a_catalog_with_types_rooms_and_machines_travels_out_and_back_the_same(typed, db_path, tmp_path):
    conn = typed.db()
    assert conn.execute("SELECT * FROM visit_types WHERE id = 'MG-PRI'").fetchone()[1:] == (
        "Primera visita", "MG", 30, 10, "", None)  # nothing to bring
    assert [tuple(row) for row in conn.execute("SELECT center_id, type_id FROM doctor_types WHERE doctor_id = 'MARTIN'"
                                                " ORDER BY center_id, position")] == [
        ("C1", "MG-PRI"), ("C1", "MG-REV"), ("C1", "MG-ECO"), ("C2", "MG-REV")]
    assert {tuple(row) for row in conn.execute("SELECT DISTINCT doctor_id, room_id FROM schedules WHERE room_id"
                                                " IS NOT NULL")} == {("MARTIN", "C1-CONS"), ("VEGA", "C2-BOX0")}
    assert conn.execute("SELECT is_room, category FROM resources WHERE id = 'C1-ECO'").fetchone()[:] == (0, "eco")
    before = catalogs_of(db_path)
    out = tmp_path / "export"
    assert cli(db_path, "export", out).exit_code == 0
    exported = (out / "catalogs.csv").read_text(encoding="utf-8")
    assert '"type","MG-PRI","Primera visita","MG"' in exported and '"machine","C1-ECO"' in exported
    again = tmp_path / "again.db"
    loaded = cli(again, "seed", out / "catalogs.csv", "--db", again)
    assert loaded.exit_code == 0, loaded.output
    assert "5 visit types, 15 offered types, 5 rooms and machines" in loaded.output
    assert catalogs_of(again) == before
    assert cli(again, "seed", out / "catalogs.csv", "--db", again).exit_code == 0  # loaded again: nothing changes
    assert catalogs_of(again) == before


def test_a_spanish_spreadsheets_file_with_types_loads_the_same(typed, db_path, tmp_path):
    sheet = tmp_path / "catalogo.csv"
    sheet.write_bytes(as_spanish_sheet(TYPES_CSV))
    assert b';"MG-PRI;MG-REV;MG-ECO";C1-CONS' in sheet.read_bytes()  # a list in a cell is quoted
    other = tmp_path / "other.db"
    loaded = cli(other, "seed", sheet, "--db", other)
    assert loaded.exit_code == 0, loaded.output
    assert catalogs_of(other) == catalogs_of(db_path)
    assert catalogs_of(other)["visit_types"][0] == ("FIS-SES", "Sesión de fisioterapia", "FIS", 45, 0, "box", None)
    wrong = tmp_path / "mal.csv"
    wrong.write_bytes(as_spanish_sheet(TYPES_CSV + "type,MG-LARGA,Revisión larga,MG,,,,,cuarenta,,,,,,,\n"))
    refused = cli(other, "seed", wrong, "--db", other)
    assert refused.exit_code == 1 and f"line {BASE_LINES + 1}: slot_minutes: 'cuarenta'" in refused.output


BASE_LINES = len(TYPES_CSV.splitlines())


@pytest.mark.parametrize("rows, bad, said", [
    (["type,T1,Tipo,XX,,,,,30,,,,,,,"], 1, "speciality 'XX' is not in the catalog"),
    (["type,T1,Tipo,MG,,,,,treinta,,,,,,,"], 1, "slot_minutes: 'treinta' must be a whole number"),
    (["type,T1,Tipo,MG,,,,,,,,,,,,"], 1, "slot_minutes is required"),
    (["type,T1,Tipo,MG,,,,,30,,,diez,,,,"], 1, "pause: 'diez' must be a whole number"),
    (["type,T1,Tipo,MG,,,,,110,,,15,,,,", "doctor,NEW,Ana Nueva,MG,C1,,mon,09:00-11:00,15,,,,,,T1,"], 2,
     "type 'T1' (110 + 15 minutes) is longer than any of the hours there"),
    (["doctor,NEW,Ana Nueva,MG,C1,,mon,09:00-11:00,15,,,,,,NOPE,"], 1, "type 'NOPE' is not in the catalog"),
    (["doctor,NEW,Ana Nueva,MG,C1,,mon,09:00-11:00,15,,,,,,FIS-SES,"], 1,
     "type 'FIS-SES' is of area FIS, not the doctor's MG"),
    (["doctor,NEW,Ana Nueva,MG,C2,,mon,09:00-11:00,15,,,,,,MG-ECO,"], 1, "needs a eco, and center 'C2' has none"),
    (["doctor,NEW,Ana Nueva,MG,C1,,mon,09:00-11:00,15,,,,,,,NOPE"], 1, "room 'NOPE' is not a room of center 'C1'"),
    (["doctor,NEW,Ana Nueva,MG,C1,,mon,09:00-11:00,15,,,,,,,C1-ECO"], 1, "room 'C1-ECO' is not a room"),
    (["doctor,NEW,Ana Nueva,MG,C1,,mon,09:00-11:00,15,,,,,,,C2-BOX1"], 1, "room 'C2-BOX1' is not a room of center 'C1'"),
    (["doctor,NEW,Ana Nueva,MG,C1,,sat,09:00-11:00,15,,,,,,,C1-CONS",
      "doctor,NEW,Ana Nueva,MG,C1,,fri,10:45-12:00,15,,,,,,,C1-CONS"], 2,
     "room C1-CONS: doctors MARTIN and NEW would be in it at the same time"),
    (["type,T1,Tipo,MG,,,,,30,,,,,,,", "doctor,NEW,Ana Nueva,MG,C1,,mon,09:00-10:00,15,,,,,,T1;MG-REV,",
      "doctor,NEW,Ana Nueva,MG,C1,,tue,09:00-10:00,15,,,,,,MG-REV;T1,"], 3,
     "doctor NEW: types at C1 differ from line"),
    (["type,PED,Vacuna,PED,,,,,15,,,,,,,"], 1, "type 'PED': an area (speciality) has that id"),
    (["room,C1-BOX,Box,,C9,,,,,,,,,box,,"], 1, "center 'C9' is not in the catalog"),
    (["machine,C1-RX,Rayos,,,,,,,,,,,rx,,"], 1, "machine C1-RX: center is required"),
    (["room,C1-BOX,Box,,C1,,,,,,,,,,,"], 1, "a room row needs id, name and category"),
])
def test_each_mistake_is_refused_by_its_line_and_nothing_changes(typed, db_path, tmp_path, rows, bad, said):
    before = table_rows(db_path)
    with pytest.raises(SeedError) as refused:
        agenda.seed_catalogs(typed.db(), read_catalog_text(TYPES_CSV + "\n".join(rows) + "\n"), at=MONDAY)
    assert any(line == BASE_LINES + bad and said in message for line, message in refused.value.problems), \
        refused.value.problems
    assert table_rows(db_path) == before


def test_the_command_names_the_line_and_a_length_off_the_grid_is_allowed(typed, db_path, tmp_path):
    bad = write(tmp_path / "bad.csv", TYPES_CSV + "doctor,NEW,Ana Nueva,MG,C1,,mon,09:00-11:00,15,,,,,,NOPE,\n")
    refused = cli(db_path, "seed", bad)
    assert refused.exit_code == 1 and f"line {BASE_LINES + 1}: doctor NEW: type 'NOPE' is not in the catalog" \
        in refused.output
    fine = write(tmp_path / "fine.csv", TYPES_CSV + "type,MG-25,Informe,MG,,,,,25,,,,,,,\n"
                 "doctor,NEW,Ana Nueva,MG,C1,,sat,09:00-10:00,15,,,,,,MG-25,\n"
                 "type,MG-60,Larga,MG,,,,,50,,,10,,,,\n"  # length and pause fill her hour exactly
                 "doctor,LONG,Luis Largo,MG,C1,,sat,09:00-10:00,30,,,,,,MG-60,\n")
    loaded = cli(db_path, "seed", fine)
    assert loaded.exit_code == 0, loaded.output
    free = starts(typed, "specialityId=MG-25", day="28/11/2026")
    assert [(s["time"], s["duration"]) for s in free] == [("09:00", 25), ("09:15", 25), ("09:30", 25)]
    assert [s["time"] for s in starts(typed, "specialityId=MG-60", day="28/11/2026")] == ["09:00"]


# The caller's catalog

def test_custom_config_adds_the_types_to_the_specialities_and_leaves_the_doctors_as_they_were(typed, make_api,
                                                                                             tmp_path):
    config = typed.get("/custom-config").json
    specialities = {entry["id"]: entry["name"] for entry in config["specialities"]["data"]}
    assert specialities == {
        "MG": "Medicina general", "FIS": "Fisioterapia", "PED": "Pediatría",
        "MG-PRI": "Primera visita (Medicina general, 30 min)", "MG-REV": "Revisión (Medicina general, 15 min)",
        "MG-ECO": "Ecografía (Medicina general, 20 min)", "FIS-SES": "Sesión de fisioterapia (Fisioterapia, 45 min)",
        "FIS-VAL": "Valoración (Fisioterapia, 30 min)"}
    typed.app.clinic.db.close()
    (tmp_path / "agenda.db").unlink()
    plain = make_api(without_types(TYPES_CSV)).get("/custom-config").json
    assert config["doctors"] == plain["doctors"] and config["centers"] == plain["centers"]
    assert {"id": "MARTIN", "name": "Lucía Martín", "speciality": "MG", "idCenter": "C2"} in config["doctors"]["data"]
    assert [entry["id"] for entry in plain["specialities"]["data"]] == ["FIS", "MG", "PED"]


# Availability

def test_a_types_starts_are_where_its_whole_length_and_pause_fit_on_each_doctors_grid(typed):
    free = starts(typed, "specialityId=MG-PRI")
    assert {s["doctorId"] for s in free} == {"MARTIN"}  # the only doctor offering it
    assert [s["time"] for s in free] == ["09:00", "09:15", "09:30", "09:45", "10:00", "10:15"]  # 10:15 + 40 = 10:55
    assert {(s["duration"], s["specialityId"], s["centerId"]) for s in free} == {(30, "MG-PRI", "C1")}
    first = typed.book(people(typed, 1)[0], time="09:15", specialityId="MG-PRI")  # 09:15-09:45, her pause to 09:55
    assert (row_of(typed, first)["end_time"], row_of(typed, first)["busy_until"]) == ("09:45", "09:55")
    assert [s["time"] for s in starts(typed, "specialityId=MG-PRI&doctorId=MARTIN")] == ["10:00", "10:15"]
    assert [s["time"] for s in starts(typed, "specialityId=MG-REV&doctorId=MARTIN")] == [
        "09:00", "10:00", "10:15", "10:30", "10:45"]  # not 09:45: her pause
    both = starts(typed, "specialityId=MG-REV")
    assert {s["doctorId"] for s in both} == {"MARTIN", "GIL"}
    assert [s["time"] for s in both if s["doctorId"] == "GIL"] == ["09:00", "09:20", "09:40", "10:00", "10:20", "10:40"]
    assert {(s["duration"], s["specialityId"]) for s in both} == {(15, "MG-REV")}


def test_by_an_area_or_a_doctor_alone_each_doctor_offers_their_default_type(typed):
    by_area = starts(typed, "specialityId=MG")
    assert {(s["doctorId"], s["duration"], s["specialityId"]) for s in by_area} == {
        ("MARTIN", 30, "MG"), ("GIL", 15, "MG"), ("PAZ", 20, "MG")}  # each their first type, under their area
    assert [s["time"] for s in by_area if s["doctorId"] == "MARTIN"] == [s["time"] for s in starts(
        typed, "specialityId=MG-PRI")]
    alone = starts(typed, "doctorId=MARTIN")
    assert alone == [s for s in by_area if s["doctorId"] == "MARTIN"]
    saturday = starts(typed, "doctorId=MARTIN", day="28/11/2026")  # at Norte her first type is the follow-up
    assert [(s["time"], s["duration"], s["centerId"]) for s in saturday] == [
        ("10:00", 15, "C2"), ("10:15", 15, "C2"), ("10:30", 15, "C2"), ("10:45", 15, "C2")]
    ruiz = starts(typed, "doctorId=RUIZ")  # no types: one slot of his grid, as before
    assert [(s["time"], s["duration"], s["specialityId"]) for s in ruiz] == [
        ("09:00", 20, "PED"), ("09:20", 20, "PED"), ("09:40", 20, "PED")]
    assert starts(typed, "specialityId=PED") == ruiz
    assert starts(typed, "specialityId=FIS-SES&doctorId=MARTIN") == []  # not hers
    assert_error(typed.get("/availabilities?specialityId=NOPE"), 404, "SPECIALITY_NOT_FOUND")


# Booking

def test_a_booking_takes_the_type_asked_or_the_doctors_default(typed):
    ana, luis, eva, pilar, rosa = people(typed, 5)
    first = typed.book(ana, time="09:00", specialityId="MG-PRI")
    follow_up = typed.book(luis, time="09:45", specialityId="MG-REV")
    default = typed.book(eva, time="10:15")
    by_area = typed.book(pilar, time="10:00", doctor="GIL", specialityId="MG")
    spans = {key: tuple(row_of(typed, key)[field] for field in ("time", "end_time", "busy_until", "type_id", "pause"))
             for key in (first, follow_up, default, by_area)}
    assert spans == {first: ("09:00", "09:30", "09:40", "MG-PRI", 10), follow_up: ("09:45", "10:00", "10:00", "MG-REV", 0),
                     default: ("10:15", "10:45", "10:55", "MG-PRI", 10), by_area: ("10:00", "10:15", "10:15", "MG-REV", 0)}
    seen = typed.get(f"/appointments/{first}").json
    assert seen["extraData"]["duration"] == 30 and seen["extraData"]["visitTypeId"] == "MG-PRI"
    assert seen["extraData"]["specialityId"] == "MG"  # its area, as before
    listed = {a["appointmentId"]: a["extraData"] for a in typed.get("/appointments?date=24/11/2026").json["data"]}
    assert (listed[follow_up]["duration"], listed[follow_up]["visitTypeId"]) == (15, "MG-REV")
    assert_error(typed.post("/appointments", {"date": "24/11/2026", "time": "09:30", "doctorId": "MARTIN",
                                              "patientId": rosa, "specialityId": "MG-REV"}),
                 409, "SLOT_NOT_AVAILABLE")  # her pause after the first visit


@pytest.mark.parametrize("doctor, date, type_id", [
    ("MARTIN", "24/11/2026", "FIS-SES"),  # another area's
    ("MARTIN", "28/11/2026", "MG-PRI"),  # hers at Centro, not at Norte on Saturdays
    ("RUIZ", "24/11/2026", "MG-REV"),  # he declares no types
])
def test_a_type_the_doctor_does_not_offer_there_is_a_400_naming_specialityid(typed, db_path, doctor, date, type_id):
    patient = people(typed, 1)[0]
    before = table_rows(db_path)
    answer = typed.post("/appointments", {"date": date, "time": "10:00" if date == "28/11/2026" else "09:00",
                                          "doctorId": doctor, "patientId": patient, "specialityId": type_id})
    assert "specialityId" in assert_error(answer, 400, "INVALID_REQUEST")["message"]
    assert table_rows(db_path) == before


def test_a_type_that_would_run_past_the_hours_or_into_another_visit_is_refused(typed):
    ana, luis = people(typed, 2)
    late = assert_error(typed.post("/appointments", {"date": "24/11/2026", "time": "10:30", "doctorId": "MARTIN",
                                                     "patientId": ana, "specialityId": "MG-PRI"}), 409,
                        "SLOT_NOT_AVAILABLE")
    assert late["reason"] == "off_grid" and "10 after" in late["message"]  # 10:30 + 30 + 10 > 11:00
    typed.book(luis, time="09:30", specialityId="MG-REV")
    assert assert_error(typed.post("/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "MARTIN",
                                                     "patientId": ana, "specialityId": "MG-PRI"}), 409,
                        "SLOT_NOT_AVAILABLE")["reason"] == "taken"  # 09:00-09:40 runs into 09:30


# Moving keeps what the appointment is

def test_a_move_keeps_the_appointments_own_type_length_and_pause(typed):
    ana, luis = people(typed, 2)
    first = typed.book(ana, time="09:00", specialityId="MG-PRI")
    moved = typed.put(f"/appointments/{first}", {"newDate": "25/11/2026", "newTime": "10:15"})
    assert moved.status_int == 200, moved.text
    row = row_of(typed, first)
    assert (row["date"], row["time"], row["end_time"], row["busy_until"], row["type_id"], row["pause"]) == (
        "2026-11-25", "10:15", "10:45", "10:55", "MG-PRI", 10)
    assert typed.get(f"/appointments/{first}").json["extraData"]["visitTypeId"] == "MG-PRI"
    assert assert_error(typed.put(f"/appointments/{first}", {"newDate": "25/11/2026", "newTime": "10:30"}),
                        409, "SLOT_NOT_AVAILABLE")["reason"] == "off_grid"  # its pause would pass 11:00
    follow_up = typed.book(luis, date="25/11/2026", time="09:30", specialityId="MG-REV")
    assert typed.put(f"/appointments/{follow_up}", {"newDate": "25/11/2026", "newTime": "10:45"}).status_int == 409
    assert typed.put(f"/appointments/{follow_up}", {"newDate": "25/11/2026", "newTime": "10:00"}).status_int == 200
    assert (row_of(typed, follow_up)["end_time"], row_of(typed, follow_up)["type_id"]) == ("10:15", "MG-REV")


def test_a_moved_imported_hour_keeps_its_hour_and_a_moved_sobrecita_stays_one(typed, db_path, tmp_path):
    ana, luis = people(typed, 2)
    imported = cli(db_path, "import-appointments", write(tmp_path / "citas.csv", (
        "date,time,duration,doctor,center,nif,name,phone,reason,insurance,status\n"
        f"24/11/2026,09:00,60,MARTIN,C1,{valid_dni(100)},,,Primera visita,,\n")))
    assert imported.exit_code == 0, imported.output
    hour = str(typed.db().execute("SELECT id FROM appointments").fetchone()[0])
    assert typed.put(f"/appointments/{hour}", {"newDate": "26/11/2026", "newTime": "09:30"}).status_int == 200
    row = row_of(typed, hour)
    assert (row["time"], row["end_time"], row["type_id"]) == ("09:30", "10:30", None)  # not her default's 30
    assert typed.get(f"/appointments/{hour}").json["extraData"]["duration"] == 60
    squeezed = squeeze_in(typed.app.clinic, Visit(patient_id=luis, doctor_id="MARTIN"), day=TUESDAY, time_text="10:05",
                          source="desk:ana")
    before = row_of(typed, squeezed)
    assert (before["squeezed"], before["end_time"], before["type_id"]) == (1, "10:35", "MG-PRI")
    move_appointment(typed.app.clinic, squeezed, day=TUESDAY, time_text="10:10", source="desk:ana")
    after = row_of(typed, squeezed)
    assert (after["squeezed"], after["time"], after["end_time"], after["busy_until"], after["type_id"]) == (
        1, "10:10", "10:40", "10:50", "MG-PRI")
    assert typed.put(f"/appointments/{squeezed}", {"newDate": "25/11/2026", "newTime": "09:00"}).status_int == 200
    assert tuple(row_of(typed, squeezed)[field] for field in ("squeezed", "end_time")) == (1, "09:30")
    assert "09:00" in [s["time"] for s in starts(typed, "doctorId=MARTIN", day="25/11/2026")]  # it takes no slot


def test_a_booking_sent_again_is_the_one_made_only_when_it_asks_the_same_type(make_api):
    api = make_api(TYPES_CSV)
    patient, = people(api, 1)
    first = api.book(patient, time="09:00", doctor="MARTIN", specialityId="MG-PRI")
    assert api.book(patient, time="09:00", doctor="MARTIN", specialityId="MG-PRI", status=201) == first
    assert api.book(patient, time="09:00", doctor="MARTIN", specialityId="MG", status=201) == first  # its area
    assert api.book(patient, time="09:00", doctor="MARTIN", status=201) == first  # no type asked
    other = api.book(patient, time="09:00", doctor="MARTIN", specialityId="MG-REV", status=409)
    assert other.json["error"]["reason"] == "taken"  # not the first visit answered as if it were a follow-up


def test_an_exported_typed_clinic_comes_back_with_its_types_pauses_and_holds(make_api, tmp_path, clock):
    """agenda export, then seed, import-patients and import-appointments into a new database: every
    appointment's type, pause and busy end, and every room and machine it holds, as they were; a file whose
    rows hold one box twice at once is refused by line."""
    api = make_api(TYPES_CSV)
    ana, luis, eva = people(api, 3)
    api.book(ana, time="09:00", doctor="MARTIN", specialityId="MG-PRI")
    api.book(luis, time="09:00", doctor="MUNOZ", specialityId="FIS-SES")
    api.book(eva, time="10:00", doctor="GIL", specialityId="MG-ECO")
    gone = api.book(eva, time="11:00", doctor="SOTO", specialityId="FIS-VAL")
    api.delete(f"/appointments/{gone}")
    out, new = tmp_path / "out", tmp_path / "new.db"

    def run(db, *args):
        done = CliRunner(env={"AGENDA_DB": str(db), "AGENDA_SECRET": None}).invoke(
            agenda.cli, [str(arg) for arg in args], obj={"now": Clock(clock.moment)})
        return done
    assert run(api.app.clinic.db.path, "export", out).exit_code == 0
    for step in (("seed", out / "catalogs.csv"), ("import-patients", out / "patients.csv"),
                 ("import-appointments", out / "appointments.csv")):
        assert run(new, *step).exit_code == 0, (step, run(new, *step).output)

    def typed_rows(path):
        conn = sqlite3.connect(path)
        try:
            return (sorted(conn.execute("SELECT date, time, end_time, doctor_id, type_id, pause, busy_until, status"
                                        " FROM appointments")),
                    sorted(conn.execute("SELECT a.doctor_id, h.resource_id, h.date, h.time, h.until FROM holds h"
                                        " JOIN appointments a ON a.id = h.appointment_id WHERE h.live = 1")))
        finally:
            conn.close()
    before, after = typed_rows(api.app.clinic.db.path), typed_rows(new)
    assert after == before and len(before[1]) == 3  # Martín's room, the box and the machine
    twice = tmp_path / "twice.csv"
    twice.write_text("date,time,duration,doctor,center,nif,name,type,holds\n"
                     f"25/11/2026,09:00,45,MUNOZ,C2,{valid_dni(501)},Rosa,FIS-SES,C2-BOX1\n"
                     f"25/11/2026,09:30,30,SOTO,C2,{valid_dni(502)},Pilar,FIS-VAL,C2-BOX1\n"
                     f"25/11/2026,09:15,30,LARA,C2,{valid_dni(503)},Inés,FIS-VAL,\n"
                     f"25/11/2026,11:00,30,VEGA,C2,{valid_dni(504)},Luz,FIS-VAL,C2-BOX2\n", encoding="utf-8")
    done = run(new, "import-appointments", twice)
    assert done.exit_code == 0, done.output  # coherent rows that clash: imported, each given what it needs
    assert "line 3: 25/11/2026 09:30: no room or machine it needs is free then" in done.output  # in time order
    assert "line 5: 25/11/2026 11:00: holds C2-BOX0, not the file's C2-BOX2, as its visit needs" in done.output
    conn = sqlite3.connect(new)
    assert sorted(conn.execute("SELECT a.doctor_id, h.resource_id FROM holds h JOIN appointments a ON a.id ="
                               " h.appointment_id WHERE a.date = '2026-11-25'")) == [("LARA", "C2-BOX2"),
                                                                                     ("MUNOZ", "C2-BOX1"),
                                                                                     ("VEGA", "C2-BOX0")]
    conn.close()
    listed = run(new, "status")
    assert "1 coming appointment without the room or machine it needs" in listed.output, listed.output
