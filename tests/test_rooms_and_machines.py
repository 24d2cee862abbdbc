"""Rooms and machines (docs/design.md, "Rooms and machines"): a visit of a type that needs a box or a machine
holds the first free one at the center for its length and pause; a doctor's hours may place them in a room,
which is then theirs; the database itself refuses two live holds of one resource that overlap, and a
cancelled visit's holds end with it; racing requests through a real waitress give one booking; a catalog
loaded again never takes a live appointment's rooms or machines."""

import sqlite3

import pytest
from hypothesis import given, HealthCheck, settings, strategies as st
from webtest.http import StopableWSGIServer

import agenda
from _agenda.domain.booking import admit, Visit
from _agenda.files.catalogs import SeedError
from _agenda.domain.counter import squeeze_in
from _agenda.files.reading import read_catalog_text
from _agenda.domain.changes import cancel_appointment, move_appointment

from conftest import assert_error, send, table_rows
from test_concurrency import race
from test_visit_types import people, row_of, starts, TUESDAY, TYPES_CSV


@pytest.fixture
def typed(make_api):
    return make_api(TYPES_CSV)


def holds(api, live=1):
    return sorted(tuple(row) for row in api.db().execute(
        "SELECT appointment_id, resource_id, date, time, until FROM holds WHERE live = ?", (live,)))


def session(api, patient, doctor, time_text="09:00", day="24/11/2026", type_id="FIS-SES", status=201):
    return api.book(patient, date=day, time=time_text, doctor=doctor, specialityId=type_id, status=status)


def test_a_visit_takes_the_first_free_box_the_next_the_second_and_a_third_is_refused(typed, db_path):
    ana, luis, eva, rosa = people(typed, 4)
    first, second = session(typed, ana, "MUNOZ"), session(typed, luis, "SOTO")
    assert holds(typed) == [(int(first), "C2-BOX1", "2026-11-24", "09:00", "09:45"),
                            (int(second), "C2-BOX2", "2026-11-24", "09:00", "09:45")]  # never Vega's own box
    before = table_rows(db_path)
    third = assert_error(session(typed, eva, "LARA", time_text="09:30", status=409), 409, "SLOT_NOT_AVAILABLE")
    assert third["reason"] == "resource_taken" and "room or machine" in third["message"]
    assert table_rows(db_path) == before
    offered = [s["time"] for s in starts(typed, "specialityId=FIS-SES&doctorId=LARA")]
    assert offered[:2] == ["09:45", "10:00"]  # no box free before 09:45
    assert [s["time"] for s in starts(typed, "doctorId=LARA")][:1] == ["09:45"]  # her default needs a box too
    assert "09:00" in [s["time"] for s in starts(typed, "specialityId=FIS-SES&doctorId=VEGA")]
    vega = session(typed, rosa, "VEGA")  # in her own box: it is the one she holds, as any room
    assert [h for h in holds(typed) if h[0] == int(vega)] == [(int(vega), "C2-BOX0", "2026-11-24", "09:00", "09:45")]


def test_a_doctors_own_room_is_never_taken_by_another_during_her_hours(typed):
    """Vega's box sorts first, and is free: the others' visits still never take it while her hours hold it."""
    first, second, third = people(typed, 3)
    session(typed, first, "MUNOZ", time_text="11:00", type_id="FIS-VAL")
    session(typed, second, "SOTO", time_text="11:00", type_id="FIS-VAL")
    assert {h[1] for h in holds(typed)} == {"C2-BOX1", "C2-BOX2"}
    assert session(typed, third, "LARA", time_text="11:00", type_id="FIS-VAL", status=409).json["error"][
        "reason"] == "resource_taken"
    assert "11:00" not in [s["time"] for s in starts(typed, "specialityId=FIS-VAL&doctorId=LARA")]
    assert "11:00" in [s["time"] for s in starts(typed, "specialityId=FIS-VAL&doctorId=VEGA")]


def test_a_cancelled_visits_holds_end_with_it_and_free_the_box(typed):
    ana, luis, eva = people(typed, 3)
    first = session(typed, ana, "MUNOZ")
    session(typed, luis, "SOTO")
    assert typed.delete(f"/appointments/{first}").status_int == 204
    assert holds(typed, live=0) == [(int(first), "C2-BOX1", "2026-11-24", "09:00", "09:45")]
    third = session(typed, eva, "LARA")
    assert [h[1] for h in holds(typed) if h[0] == int(third)] == ["C2-BOX1"]


def test_a_move_takes_the_boxes_free_where_it_goes_its_own_left_behind(typed):
    ana, luis, eva = people(typed, 3)
    soto = session(typed, ana, "SOTO")  # Box 1
    munoz = session(typed, luis, "MUNOZ")  # Box 2
    move_appointment(typed.app.clinic, munoz, day=TUESDAY, time_text="09:00", doctor_id="LARA", source="desk:ana")
    assert [h[1] for h in holds(typed) if h[0] == int(munoz)] == ["C2-BOX2"]  # its own box, not Soto's
    session(typed, eva, "SOTO", day="25/11/2026")  # Box 1 on Wednesday
    assert typed.put(f"/appointments/{munoz}", {"newDate": "25/11/2026", "newTime": "09:00"}).status_int == 200
    assert [h[1:3] for h in holds(typed) if h[0] == int(munoz)] == [("C2-BOX2", "2026-11-25")]
    assert [h[1] for h in holds(typed) if h[0] == int(soto)] == ["C2-BOX1"]


def test_the_database_refuses_two_live_holds_of_one_resource_that_overlap(typed):
    ana, luis = people(typed, 2)
    first = int(session(typed, ana, "MUNOZ"))
    other = int(typed.book(luis, time="09:00", doctor="GIL", specialityId="MG-REV"))
    conn = typed.db()
    for start, until in (("09:30", "10:00"), ("08:30", "09:15"), ("09:10", "09:20"), ("08:00", "11:00")):
        with pytest.raises(sqlite3.IntegrityError, match="SLOT_NOT_AVAILABLE"):
            with conn:
                conn.execute("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES"
                             " (?, 'C2-BOX1', '2026-11-24', ?, ?)", (other, start, until))
    with conn:  # touching ends, another day, another box: all free
        conn.execute("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES"
                     " (?, 'C2-BOX1', '2026-11-24', '09:45', '10:00')", (other,))
        conn.execute("INSERT INTO holds (appointment_id, resource_id, date, time, until) VALUES"
                     " (?, 'C2-BOX2', '2026-11-24', '09:00', '09:45')", (other,))
    with pytest.raises(sqlite3.IntegrityError, match="SLOT_NOT_AVAILABLE"):
        with conn:  # moved over it
            conn.execute("UPDATE holds SET time = '09:40' WHERE appointment_id = ? AND resource_id = 'C2-BOX1'",
                         (other,))
    with conn:
        conn.execute("UPDATE holds SET live = 0 WHERE appointment_id = ?", (other,))
    with pytest.raises(sqlite3.IntegrityError, match="SLOT_NOT_AVAILABLE"):
        with conn:  # made live again over the first
            conn.execute("UPDATE holds SET live = 1, time = '09:30' WHERE appointment_id = ? AND"
                         " resource_id = 'C2-BOX1'", (other,))
    cancel_appointment(typed.app.clinic, str(first))  # the trigger ends its holds: the box is free to write
    assert holds(typed) == []
    with conn:
        conn.execute("UPDATE holds SET live = 1, time = '09:00' WHERE appointment_id = ? AND"
                     " resource_id = 'C2-BOX1'", (other,))
    assert [h[:2] for h in holds(typed)] == [(other, "C2-BOX1")]


def test_a_sobrecita_shares_the_doctors_room_and_never_takes_a_machine_another_visit_holds(typed):
    ana, luis, eva, rosa = people(typed, 4)
    clinic = typed.app.clinic
    first = session(typed, ana, "VEGA")
    over = squeeze_in(clinic, Visit(patient_id=luis, doctor_id="VEGA"), day=TUESDAY, time_text="09:10",
                      source="desk:ana")
    assert row_of(typed, over)["squeezed"] == 1  # in her box with her: her visit holds it, and no second hold
    assert holds(typed) == [(int(first), "C2-BOX0", "2026-11-24", "09:00", "09:45")]
    typed.book(eva, time="10:00", doctor="GIL", specialityId="MG-ECO")  # the machine, 10:00-10:20
    with pytest.raises(agenda.ClinicError) as refused:
        squeeze_in(clinic, Visit(patient_id=rosa, doctor_id="PAZ"), day=TUESDAY, time_text="10:10", source="desk:ana")
    assert refused.value.extra["reason"] == "resource_taken"
    assert refused.value.held == [("eco", ["Ecógrafo"])]  # what the desk names
    beside = squeeze_in(clinic, Visit(patient_id=rosa, doctor_id="PAZ"), day=TUESDAY, time_text="10:25",
                        source="desk:ana")
    assert [h[1:] for h in holds(typed) if h[0] == int(beside)] == [("C1-ECO", "2026-11-24", "10:25", "10:45")]


def test_a_sobrecita_of_a_doctor_in_no_room_takes_only_a_free_box(typed, db_path):
    """Munoz has no box of his own: with both shared boxes held at 09:00 his sobrecita has no box to go to and
    is refused, naming them (changing nothing); with a box free, it takes that one."""
    ana, luis, eva, rosa = people(typed, 4)
    session(typed, ana, "MUNOZ"), session(typed, luis, "SOTO")
    before = table_rows(db_path)
    with pytest.raises(agenda.ClinicError) as refused:
        squeeze_in(typed.app.clinic, Visit(patient_id=eva, doctor_id="MUNOZ"), day=TUESDAY, time_text="09:10",
                   source="desk:ana")
    assert refused.value.extra["reason"] == "resource_taken"
    assert refused.value.held == [("box", ["Box 1", "Box 2", "Box de Vega"])]  # hers during her hours
    assert table_rows(db_path) == before
    later = squeeze_in(typed.app.clinic, Visit(patient_id=rosa, doctor_id="MUNOZ"), day=TUESDAY, time_text="10:00",
                       source="desk:ana")
    assert [h[1] for h in holds(typed) if h[0] == int(later)] == ["C2-BOX1"]


@pytest.fixture
def waitress(typed):
    servers = []

    def start(threads):
        httpd = StopableWSGIServer.create(typed.app, host="127.0.0.1", threads=threads)
        servers.append(httpd)
        assert httpd.wait(), "the server did not start"
        return httpd.application_url.rstrip("/")

    yield start
    for httpd in servers:
        httpd.shutdown()


@pytest.mark.parametrize("threads", [2, 4])
def test_two_doctors_racing_for_the_one_machine_get_one_booking(typed, waitress, threads):
    url = waitress(threads)
    doctors = ["MARTIN", "GIL"] * threads
    bodies = [{"date": "24/11/2026", "time": "09:00", "doctorId": doctor, "patientId": patient,
               "specialityId": "MG-ECO"} for doctor, patient in zip(doctors, people(typed, len(doctors)))]
    answers = race([lambda body=body: send(url, "POST", "/appointments", body) for body in bodies])
    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] + [409] * (len(bodies) - 1), answers
    winner = next(body["doctorId"] for body, (status, _) in zip(bodies, answers) if status == 201)
    reasons = {(body["doctorId"] == winner, payload["error"]["reason"])
               for body, (status, payload) in zip(bodies, answers) if status == 409}
    assert reasons == {(True, "taken"), (False, "resource_taken")}
    assert sorted(h[1] for h in holds(typed)) == (["C1-CONS", "C1-ECO"] if winner == "MARTIN" else ["C1-ECO"])


def test_a_catalog_that_takes_a_coming_visits_box_gives_it_another_or_is_refused_naming_it(typed, db_path, clock):
    """A reload that takes a coming visit's box (to another category or center, a type needing none, another
    doctor's room then) gives it the free box its visit needs now, in the same transaction; with none free it
    is refused naming the visit, and nothing changes. History keeps what it held."""
    ana, luis, eva, rosa = people(typed, 4)
    kept = session(typed, ana, "MUNOZ", day="25/11/2026")
    past = session(typed, luis, "SOTO", day="24/11/2026")
    clock.set(2026, 11, 25, 8, 0)  # Tuesday's visit is history now
    soto = "doctor,SOTO,Ana Soto,FIS,C2,,mon-fri,09:00-12:00,15,,,,,,FIS-SES;FIS-VAL,"
    assert soto + "\n" in TYPES_CSV
    catalogs = (TYPES_CSV + "room,C2-BOX1,Box 1,,C2,,,,,,,,,camilla,,\n",  # another category
                TYPES_CSV + "room,C2-BOX1,Box 1,,C1,,,,,,,,,box,,\n",  # another center
                TYPES_CSV.replace(soto, soto + "C2-BOX1"))  # another doctor's room in those hours
    for catalog in catalogs:
        moved = agenda.seed_catalogs(typed.db(), read_catalog_text(catalog), at=clock())
        assert [visit["id"] for visit in moved["rederived"]] == [int(kept)]
        assert [h[1] for h in holds(typed) if h[0] == int(kept)] == ["C2-BOX2"]
        assert [h[1] for h in holds(typed) if h[0] == int(past)] == ["C2-BOX1"]  # history keeps what it held
        agenda.seed_catalogs(typed.db(), read_catalog_text(TYPES_CSV), at=clock())
        assert [h[1] for h in holds(typed) if h[0] == int(kept)] == ["C2-BOX2"]  # still what it needs: kept
        with typed.db() as conn:
            conn.execute("UPDATE holds SET resource_id = 'C2-BOX1' WHERE appointment_id = ?", (int(kept),))
    session(typed, eva, "SOTO", day="25/11/2026")  # Box 2 now held at 09:00 too
    session(typed, rosa, "LARA", day="25/11/2026", time_text="09:45")
    before = table_rows(db_path)
    for catalog in catalogs[:2]:  # (Soto placed in Box 1 gives Muñoz's visit hers, Box 2: it fits)
        with pytest.raises(SeedError) as refused:
            agenda.seed_catalogs(typed.db(), read_catalog_text(catalog), at=clock())
        assert [message for _, message in refused.value.problems] == [
            f"this would leave without the room or machine they need: appointment {kept} (25/11/2026 09:00, doctor"
            " MUNOZ). Move them first (agenda move ID), or give the catalog the room or machine back"]  # not {past}
        assert table_rows(db_path) == before
    cancel_appointment(typed.app.clinic, kept)
    done = agenda.seed_catalogs(typed.db(), read_catalog_text(catalogs[0]), at=clock())
    assert done["changed"] and [h[1] for h in holds(typed) if h[0] == int(past)] == ["C2-BOX1"]


OFFERED = {"MARTIN": ("MG-PRI", "MG-REV", "MG-ECO"), "GIL": ("MG-REV", "MG-ECO"), "PAZ": ("MG-ECO",),
           "VEGA": ("FIS-SES", "FIS-VAL"), "MUNOZ": ("FIS-SES", "FIS-VAL"), "SOTO": ("FIS-SES", "FIS-VAL"),
           "LARA": ("FIS-VAL", "FIS-SES")}


def grid(doctor):
    """The doctor's Tuesday grid, as TYPES_CSV declares it."""
    step, last = (20, 11 * 60) if doctor in ("GIL", "PAZ") else (15, 12 * 60 if OFFERED[doctor][0][:3] == "FIS" else 11 * 60)
    return [f"{minute // 60:02d}:{minute % 60:02d}" for minute in range(9 * 60, last, step)]


class Undone(Exception):
    """Raised inside a booking's transaction to roll it back once the door has admitted it."""


def admitted(clinic, doctor, time_text, type_id, patient):
    """Whether the caller's door would book this, and the reason when not; nothing is written."""
    try:
        with clinic.db.transaction() as conn:
            admit(clinic, conn, Visit(patient, doctor, type_id), TUESDAY, time_text, "caller", clinic.clock(), "api")
            raise Undone
    except Undone:
        return None
    except agenda.ClinicError as refused:
        return refused.extra["reason"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(sorted(OFFERED)), st.integers(0, 2), st.integers(0, 11), st.booleans()),
                max_size=14))
def test_what_availability_lists_for_a_type_books_and_nothing_else_does(typed, tries):
    """Whatever was booked and cancelled before: every start the caller is offered for a type books, every
    other start on the doctor's grid is refused with the slot's reason, and no room or machine is held twice
    or taken from a doctor placed in it."""
    conn, clinic = typed.db(), typed.app.clinic
    with conn:
        conn.execute("DELETE FROM holds")
        conn.execute("DELETE FROM outbox")
        conn.execute("DELETE FROM appointments")
    patients = people(typed, 16) if not conn.execute("SELECT 1 FROM patients").fetchone() else [
        str(row[0]) for row in conn.execute("SELECT id FROM patients ORDER BY id")]
    for (doctor, kind, start, cancel), patient in zip(tries, patients):
        answer = typed.post("/appointments", {"date": "24/11/2026", "time": grid(doctor)[start % len(grid(doctor))],
                                              "doctorId": doctor, "patientId": patient,
                                              "specialityId": OFFERED[doctor][kind % len(OFFERED[doctor])]})
        assert answer.status_int in (201, 409), answer.text
        if cancel and answer.status_int == 201:
            cancel_appointment(clinic, answer.json["appointmentId"])
    free = patients[-1]
    for doctor, kinds in OFFERED.items():
        for type_id in kinds:
            listed = {s["time"] for s in starts(typed, f"doctorId={doctor}&specialityId={type_id}")}
            for time_text in grid(doctor):
                reason = admitted(clinic, doctor, time_text, type_id, free)
                assert (reason is None) == (time_text in listed), (doctor, type_id, time_text, reason)
                assert reason in (None, "taken", "resource_taken", "off_grid"), reason
    assert conn.execute("SELECT count(*) FROM holds a JOIN holds b ON a.resource_id = b.resource_id AND a.date = b.date"
                        " AND a.appointment_id < b.appointment_id AND a.time < b.until AND b.time < a.until"
                        " WHERE a.live = 1 AND b.live = 1").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM holds h JOIN appointments a ON a.id = h.appointment_id WHERE"
                        " h.resource_id = 'C2-BOX0' AND h.live = 1 AND a.doctor_id != 'VEGA'").fetchone()[0] == 0
