"""Everyone a clinic sees (docs/design.md, "Patients without a NIF"): a child under 14 registered at
the desk under a guardian who is a patient, a visitor with a passport number; the NIF unique when
present, and the caller's contract unchanged (by NIF it finds the guardian, by phone the child)."""

import itertools
import json
import sqlite3

import pytest
import webtest
from click.testing import CliRunner
from hypothesis import given, HealthCheck, settings, strategies as st

import agenda
from _agenda.files.staged_import import import_patients
from _agenda.domain.links import new_link, opened
from _agenda.domain.registry import register_patient
from _agenda.domain.rights import rectify
from _agenda.storage.connections import transaction

from conftest import valid_dni
from test_desk import PASSWORD, log_in


@pytest.fixture
def desk(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    client = webtest.TestApp(api.app)
    log_in(client)
    return client


def register(desk, **typed):
    """The booking form's new patient at MARTIN's 09:00 on Tuesday 24/11/2026: the answer."""
    page = desk.get("/desk/book?doctorId=MARTIN&date=24/11/2026&time=09:00&centerId=C1")
    fields = {"csrf": page.html.find("input", attrs={"name": "csrf"})["value"], "doctorId": "MARTIN",
              "date": "24/11/2026", "time": "09:00", "centerId": "C1", **typed}
    return desk.post("/desk/book", fields, expect_errors=True)


def test_a_child_without_a_nif_is_registered_under_a_guardian_and_the_caller_sees_the_guardians_nif(api, desk):
    mother = api.new_patient(name="Ana", surname="García")  # NIF 12345678Z, phone 612345678
    booked = register(desk, name="Pablo", surname="García Ruiz", birthDate="03/04/2019", guardianNif="12345678-z",
                      reason="Vacuna")
    assert booked.status_int == 303, booked.text
    child = api.db().execute("SELECT * FROM patients WHERE name = 'Pablo'").fetchone()
    assert child["nif"] is None and child["guardian_id"] == int(mother) and child["phone_e164"] == "+34612345678"
    listed, = api.get("/appointments?date=24/11/2026").json["data"]
    assert (listed["patientName"], listed["nif"], listed["phone"]) == ("Pablo García Ruiz", "12345678Z", "+34612345678")
    assert api.get("/patients?nif=12345678Z").json["id"] == mother  # by NIF: the guardian
    assert api.get("/appointments?nif=12345678Z").json["data"] == []  # the guardian's own appointments only
    by_phone = api.get("/appointments?phone=612345678").json["data"]
    assert [a["patientName"] for a in by_phone] == ["Pablo García Ruiz"]  # by phone: the child
    found = desk.post("/desk/patients", {"csrf": desk.get("/desk/patients").html.find(
        "input", attrs={"name": "csrf"})["value"], "q": "12345678Z"})
    assert [a.text for a in found.html.select("ul.found a")] == ["Ana García", "Pablo García Ruiz"]
    page = desk.get(f"/desk/patients/{child['id']}")
    assert "sin NIF; tutor: Ana García (12345678Z)" in page.text


@pytest.mark.parametrize("typed, said", [
    ({"birthDate": "03/04/2010", "guardianNif": "12345678Z"}, "NIF: hace falta desde los 14 años"),
    ({"guardianNif": "12345678Z"}, "Nacimiento: hace falta para un menor sin NIF."),
    ({"birthDate": "03/04/2019", "guardianNif": "00000001R"}, "Tutor: no hay ningún paciente con ese NIF"),
    ({"birthDate": "03/04/2019"}, "NIF: falta este dato."),
])
def test_a_patient_without_a_nif_needs_a_guardian_and_to_be_under_14(api, desk, typed, said):
    api.new_patient()
    refused = register(desk, name="Pablo", **typed)
    assert refused.status_int == 400 and refused.html.find("p", class_="error").text.startswith(said)
    assert refused.html.find("input", attrs={"name": "name"})["value"] == "Pablo"  # what was typed, kept
    assert api.db().execute("SELECT count(*) FROM patients").fetchone()[0] == 1


def test_a_visitor_gives_a_passport_number_and_a_nif_stays_unique_when_present(api, desk):
    assert register(desk, name="John", surname="Smith", nif="PA1234567", phone="+33 6 12 34 56 78").status_int == 303
    assert api.get("/patients?nif=pa1234567").json["name"] == "John"
    api.new_patient()
    for n in (1, 2):  # two children without a NIF: NULLs are no duplicates
        register_patient(api.app.clinic, {"name": f"Hijo{n}", "birthDate": "01/01/2020", "guardianNif": "12345678Z"},
                         source="desk:ana")
    assert api.post("/patients", {"name": "Otra", "nif": "12345678Z"}).status_int == 409
    with pytest.raises(sqlite3.IntegrityError), api.app.clinic.db.transaction() as conn:  # neither NIF nor guardian
        conn.execute("INSERT INTO patients (name, created_at) VALUES ('Nadie', '')")
    caller = api.post("/patients", {"name": "Niño", "birthDate": "01/01/2020", "guardianNif": "12345678Z"})
    assert caller.status_int == 400  # the caller's POST /patients still needs a NIF


def test_a_child_gets_a_nif_later_by_rectification(api, desk):
    api.new_patient()
    child = register_patient(api.app.clinic, {"name": "Pablo", "birthDate": "03/04/2019", "guardianNif": "12345678Z"},
                             source="desk:ana")
    page = desk.get(f"/desk/patients/{child}")
    edit = page.forms[[f.action for f in page.forms.values()].index(f"/desk/patients/{child}")]
    edit["phone"] = "699111222"  # no NIF yet: the form saves without one
    assert edit.submit().status_int == 303
    edit = desk.get(f"/desk/patients/{child}").forms[[f.action for f in page.forms.values()].index(
        f"/desk/patients/{child}")]
    edit["nif"] = "00000001R"
    assert edit.submit().status_int == 303
    assert api.get("/patients?nif=00000001R").json["phone"] == "+34699111222"


def test_a_patient_file_brings_children_under_a_guardian_of_the_agenda_or_an_earlier_line(api):
    clinic = api.app.clinic
    rows = [(2, {"name": "Pablo", "birthDate": "03/04/2019", "nif": "", "guardianNif": "00000001R"}, []),
            (3, {"name": "Marta", "nif": "00000001R", "phone": "611000111"}, [])]
    done = import_patients(clinic, iter(rows), "f.csv")
    assert done.problems == ["line 2: no patient has the guardian's nif (in the agenda or on an earlier line)"]
    assert api.db().execute("SELECT count(*) FROM patients").fetchone()[0] == 0  # all or nothing
    done = import_patients(clinic, iter(rows[::-1]), "f.csv")
    assert done.problems == [] and done.patients == 2
    again = import_patients(clinic, iter(rows[::-1]), "f.csv")  # the same file twice: no child doubled
    assert again.patients == 0 and again.present_count == 2
    assert api.db().execute("SELECT count(*) FROM patients").fetchone()[0] == 2
    child = api.db().execute("SELECT p.nif, g.nif FROM patients p JOIN patients g ON g.id = p.guardian_id").fetchone()
    assert tuple(child) == (None, "00000001R")


def correct_at_desk(api, desk, clock, guardian, **typed):
    page = desk.get(f"/desk/patients/{guardian}")
    form = next(form for form in page.forms.values() if form.action == f"/desk/patients/{guardian}")
    for name, value in typed.items():
        form[name] = value
    assert form.submit().status_int == 303


def correct_at_the_command_line(api, desk, clock, guardian, **typed):
    runner = CliRunner(env={"AGENDA_DB": str(api.app.clinic.db.path)})
    done = runner.invoke(agenda.cli, ["patient", "rectify", str(guardian),
                                      *(part for name, value in typed.items() for part in (f"--{name}", value))],
                         obj={"now": clock})
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize("correct", [correct_at_desk, correct_at_the_command_line])
def test_a_guardians_new_address_phone_and_choice_carry_to_her_children_and_end_their_old_links(api, desk, clock,
                                                                                              correct):
    """A child takes her guardian's e-mail, phone and choice of messages, and keeps following them: the
    old address keeps no link to the child's visit (a card handed at the counter stays); a sibling with an e-mail of
    her own keeps it ("Patients without a NIF")."""
    guardian = api.new_patient(email="ana@example.es")
    child = register_patient(api.app.clinic, {"name": "Pablo", "birthDate": "03/04/2019", "guardianNif": "12345678Z"},
                             source="desk:ana")
    sister = register_patient(api.app.clinic, {"name": "Lola", "birthDate": "03/04/2017", "guardianNif": "12345678Z",
                                               "email": "lola@example.es", "phone": "611000111"}, source="desk:ana")
    visit = api.book(child)
    with transaction(api.db()) as conn:
        sent, stop, card = (new_link(conn, visit, made_for, clock()) for made_for in ("message", "stop", "card"))
    browser = webtest.TestApp(api.app)
    assert browser.get(f"/cita/{sent}").status_int == 200
    correct(api, desk, clock, guardian, email="ana.nueva@example.es", phone="699111222", messages="no")
    rows = {row["id"]: row for row in api.db().execute(
        "SELECT id, email, phone_e164, messages FROM patients WHERE guardian_id = ?", (int(guardian),))}
    assert tuple(rows[int(child)])[1:] == ("ana.nueva@example.es", "+34699111222", 0)
    assert tuple(rows[int(sister)])[1:] == ("lola@example.es", "+34611000111", 1)
    assert browser.get(f"/cita/{sent}", expect_errors=True).status_int == 404  # the old address's links end
    assert browser.get(f"/cita/baja/{stop}", expect_errors=True).status_int == 404
    assert browser.get(f"/cita/{card}").status_int == 200
    correct(api, desk, clock, guardian, messages="yes")  # her choice alone: the child's follows, with who set it
    by = api.db().execute("SELECT messages, messages_by FROM patients WHERE id = ?", (int(child),)).fetchone()
    assert by["messages"] == 1 and by["messages_by"] in ("desk:ana", "cli")
    first, then = (json.loads(after)["followed"] for after, in api.db().execute(
        "SELECT after FROM events WHERE action = 'patient.guardian_rectified' ORDER BY id"))
    assert first == ["messages", "phone", "phone_e164", "email"] and then[0] == "messages" and "email" not in then


def test_neither_the_caller_nor_a_file_changes_a_guardian_already_in_the_agenda(api):
    """The channels that could change a guardian's address, besides the desk and the command line: the caller's
    POST /patients refuses her NIF, and a file's line of her is noted as present, her row and her child's unchanged."""
    guardian = api.new_patient(email="ana@example.es")
    register_patient(api.app.clinic, {"name": "Pablo", "birthDate": "03/04/2019", "guardianNif": "12345678Z"},
                     source="desk:ana")
    assert api.post("/patients", {"name": "Ana", "nif": "12345678Z", "email": "otra@example.es"}).status_int == 409
    done = import_patients(api.app.clinic, iter([(2, {"name": "Ana", "nif": "12345678Z", "email": "otra@example.es",
                                                      "messages": "no"}, [])]), "f.csv")
    assert done.patients == 0 and done.present_count == 1
    rows = api.db().execute("SELECT email, messages FROM patients WHERE id = ? OR guardian_id = ?",
                            (int(guardian), int(guardian))).fetchall()
    assert [tuple(row) for row in rows] == [("ana@example.es", 1)] * 2


ADDRESSES, PHONES = ("ana@example.es", "ana@otro.es", ""), ("612345678", "699111222", "")
CHILDREN = itertools.count(100)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(ADDRESSES), st.sampled_from(PHONES), st.sampled_from(("yes", "no", ""))),
                min_size=1, max_size=5))
def test_a_child_who_took_her_guardians_columns_follows_her_every_correction(api, corrections):
    """The property over any corrections of a guardian (each example a guardian and a child of its own): the child
    who took her e-mail, phone and choice holds hers after each, and no link to the child's visit made for an
    address no longer the child's opens."""
    clinic, number = api.app.clinic, next(CHILDREN)
    guardian = register_patient(clinic, {"name": "Ana", "nif": valid_dni(number), "phone": PHONES[0],
                                         "email": ADDRESSES[0]}, source="desk:ana")
    child = register_patient(clinic, {"name": "Pablo", "birthDate": "03/04/2019", "guardianNif": valid_dni(number)},
                             source="desk:ana")
    visit, made = api.book(child, date=("24/11/2026", "26/11/2026")[number % 2],
                           time=("09:00", "09:30", "10:00", "10:30")[number // 2 % 4]), []

    def columns(patient_id):
        return tuple(api.db().execute("SELECT email, phone, phone_e164, messages FROM patients WHERE id = ?",
                                      (patient_id,)).fetchone())
    try:
        for email, phone, messages in corrections:
            with transaction(api.db()) as conn:
                made += [(columns(child)[0], new_link(conn, visit, "message", clinic.clock()))]
            rectify(clinic, guardian, {"email": email, "phone": phone, "messages": messages}, "desk:ana")
            assert columns(child) == columns(guardian)
            address = columns(child)[0]
            assert not [token for sent_to, token in made if sent_to != address and opened(clinic, token) is not None]
    finally:
        api.delete(f"/appointments/{visit}")  # its time, free for the next example
