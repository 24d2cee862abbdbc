"""A patient's e-mail, the language of their messages and whether they want them (docs/design.md, "A patient's
messages"): given by the caller, at the desk (registering without booking too), at the command line and in
another system's file; checked for shape only; when and by whom the choice was set, kept; the export, the
patient's copy and the caller's answers each carry what they should and no more."""

import csv
import io
import json

import pytest
import webtest
from click.testing import CliRunner

import agenda
from _agenda.storage.events import utc_iso
from conftest import valid_dni
from test_desk import PASSWORD, log_in


def row_of(api, patient_id):
    return dict(api.db().execute("SELECT * FROM patients WHERE id = ?", (patient_id,)).fetchone())


def form_to(page, action):
    return next(form for form in page.forms.values() if form.action == action)


def patients_count(api):
    return api.db().execute("SELECT count(*) FROM patients").fetchone()[0]


def test_the_caller_may_send_an_email_and_never_reads_it_back(api, clock):
    patient = api.new_patient(email="Ana.Garcia@EXAMPLE.com")
    row = row_of(api, patient)
    assert row["email"] == "Ana.Garcia@example.com"  # the domain as mail servers read it; the rest as typed
    assert (row["language"], row["messages"], row["messages_by"]) == (None, 1, "api")  # on once given; Spanish
    assert row["messages_since"] == utc_iso(clock.moment)
    found = api.get("/patients?nif=12345678Z").json
    assert "email" not in json.dumps(found) and "example.com" not in json.dumps(found)
    without = api.new_patient(nif=valid_dni(2))
    assert (row_of(api, without)["email"], row_of(api, without)["messages"]) == (None, None)


@pytest.mark.parametrize("email", ["ana", "ana@", "ana@localhost", "ana @example.com", "a" * 250 + "@example.com", 42])
def test_an_address_of_the_wrong_shape_is_refused_naming_email_and_registers_no_one(api, email):
    before = patients_count(api)
    answer = api.post("/patients", {"name": "Ana", "nif": "12345678Z", "email": email})
    assert answer.status_int == 400 and answer.json["error"]["code"] == "INVALID_REQUEST"
    assert "email" in answer.json["error"]["message"]
    assert patients_count(api) == before


def test_reception_registers_a_patient_without_booking_and_the_wrong_address_is_said_with_what_was_typed(api, clock):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    before = patients_count(api)
    form = form_to(desk.get("/desk/patients").click(href="/desk/patients/new"), "/desk/patients/new")
    form["name"], form["nif"], form["email"], form["language"] = "Rosa", valid_dni(7), "rosa@ejemplo", "en"
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 400 and patients_count(api) == before
    assert "Correo electrónico: no es una dirección de correo" in refused.text
    kept = form_to(refused, "/desk/patients/new")
    assert (kept["name"].value, kept["email"].value, kept["language"].value) == ("Rosa", "rosa@ejemplo", "en")
    kept["email"] = "rosa@ejemplo.es"
    page = kept.submit().maybe_follow()
    assert "Rosa: dado de alta." in page.text and "rosa@ejemplo.es" in page.text and "Inglés" in page.text
    rosa, = api.db().execute("SELECT id FROM patients WHERE nif = ?", (valid_dni(7),)).fetchone()
    assert {key: row_of(api, rosa)[key] for key in ("email", "language", "messages", "messages_by")} == {
        "email": "rosa@ejemplo.es", "language": "en", "messages": 1, "messages_by": "desk:ana"}
    clock.set(2026, 11, 23, 8, 5)
    correct = form_to(page, f"/desk/patients/{rosa}")
    correct["messages"] = "no"  # she asked for no more messages
    correct.submit().maybe_follow()
    after = row_of(api, rosa)
    assert (after["messages"], after["messages_by"]) == (0, "desk:ana")
    assert after["messages_since"] == utc_iso(clock.moment)
    correct = form_to(desk.get(f"/desk/patients/{rosa}"), f"/desk/patients/{rosa}")
    correct["email"] = "rosa@otro.es"
    correct.submit().maybe_follow()
    assert (row_of(api, rosa)["email"], row_of(api, rosa)["messages"]) == ("rosa@otro.es", 0)  # still stopped
    assert row_of(api, rosa)["messages_since"] == after["messages_since"]  # the choice did not change


def test_the_command_line_registers_and_corrects_as_the_desk_does(api, db_path, clock):
    runner = CliRunner(env={"AGENDA_DB": str(db_path)})
    added = runner.invoke(agenda.cli, ["patient", "add", "--name", "Luis", "--nif", valid_dni(9), "--email",
                                       "luis@example.com", "--language", "en"], obj={"now": clock})
    assert added.exit_code == 0 and added.output.startswith("Registered patient "), added.output
    luis = int(added.output.split()[2].rstrip("."))
    assert (row_of(api, luis)["messages"], row_of(api, luis)["messages_by"]) == (1, "cli")
    again = runner.invoke(agenda.cli, ["patient", "add", "--name", "Luis", "--nif", valid_dni(9)], obj={"now": clock})
    assert again.exit_code == 1 and "a patient with that nif exists" in again.output, again.output
    wrong = runner.invoke(agenda.cli, ["patient", "rectify", str(luis), "--email", "luis"], obj={"now": clock})
    assert wrong.exit_code == 1 and "email" in wrong.output and row_of(api, luis)["email"] == "luis@example.com"
    stopped = runner.invoke(agenda.cli, ["patient", "rectify", str(luis), "--messages", "no"], obj={"now": clock})
    assert stopped.exit_code == 0, stopped.output
    assert (row_of(api, luis)["messages"], row_of(api, luis)["messages_by"]) == (0, "cli")
    assert "--email" in runner.invoke(agenda.cli, ["patient", "rectify", "-h"]).output


def test_another_systems_file_brings_them_and_the_export_takes_them_back(api, db_path, tmp_path, clock):
    listed = tmp_path / "pacientes.csv"
    listed.write_text("Nombre,DNI,Correo electrónico,Idioma,Mensajes\n"
                      f"Eva,{valid_dni(11)},eva@example.com,EN,no\n"
                      f"Blas,{valid_dni(12)},blas@example.com,,\n"
                      f"Olga,{valid_dni(13)},,,\n", encoding="utf-8")
    runner = CliRunner(env={"AGENDA_DB": str(db_path)})
    done = runner.invoke(agenda.cli, ["import-patients", str(listed)], obj={"now": clock})
    assert done.exit_code == 0, done.output
    rows = {row["name"]: row for row in map(dict, api.db().execute("SELECT * FROM patients"))}
    assert [rows["Eva"][key] for key in ("email", "language", "messages", "messages_by")] == [
        "eva@example.com", "en", 0, "import"]
    assert [rows["Blas"][key] for key in ("language", "messages", "messages_by")] == [None, 1, "import"]
    assert [rows["Olga"][key] for key in ("email", "messages", "messages_by")] == [None, None, None]
    out = tmp_path / "out"
    assert runner.invoke(agenda.cli, ["export", str(out)], obj={"now": clock}).exit_code == 0
    exported = {row["name"]: row for row in csv.DictReader(io.StringIO((out / "patients.csv").read_text("utf-8")))}
    assert {key: exported["Eva"][key] for key in ("email", "language", "messages")} == {
        "email": "eva@example.com", "language": "en", "messages": "no"}
    bad = tmp_path / "malos.csv"
    bad.write_text(f"name,nif,email\nIris,{valid_dni(14)},iris@\n", encoding="utf-8")
    refused = runner.invoke(agenda.cli, ["import-patients", str(bad)], obj={"now": clock})
    assert refused.exit_code != 0 and "email" in refused.output
    assert not api.db().execute("SELECT 1 FROM patients WHERE name = 'Iris'").fetchone()


def test_the_patients_copy_says_their_address_and_their_choice_with_when_and_by_whom(api, db_path, clock):
    patient = api.new_patient(email="ana@example.com")
    runner = CliRunner(env={"AGENDA_DB": str(db_path)})
    copy = json.loads(runner.invoke(agenda.cli, ["patient", "export", patient], obj={"now": clock}).output)
    details = copy["patient"]
    assert (details["email"], details["messages"], details["messagesBy"]) == ("ana@example.com", 1, "api")
    assert details["messagesSince"] and "language" in details


def test_a_child_takes_her_guardians_address_and_choice_and_loses_both_at_her_erasure(api, db_path, clock):
    guardian = api.new_patient(email="mum@example.com")
    runner = CliRunner(env={"AGENDA_DB": str(db_path)})
    added = runner.invoke(agenda.cli, ["patient", "add", "--name", "Pablo", "--birth-date", "03/04/2019",
                                       "--guardian-nif", "12345678Z", "--phone", "622000111"], obj={"now": clock})
    assert added.exit_code == 0, added.output
    child = int(added.output.split()[2].rstrip("."))
    assert [row_of(api, child)[key] for key in ("email", "messages", "phone")] == ["mum@example.com", 1, "622000111"]
    erased = runner.invoke(agenda.cli, ["patient", "erase", guardian, "--yes"], obj={"now": clock})
    assert erased.exit_code == 0, erased.output
    after = row_of(api, child)
    assert (after["email"], after["messages"], after["phone"]) == (None, None, "622000111")  # her own phone stays


def test_a_stop_outlives_the_address_and_a_yes_goes_with_it(api, db_path, clock):
    runner = CliRunner(env={"AGENDA_DB": str(db_path)})
    stopped, keeps = api.new_patient(email="eva@example.com"), api.new_patient(nif=valid_dni(21), email="iker@ex.es")
    def rectify(*args):
        return runner.invoke(agenda.cli, ["patient", "rectify", *args], obj={"now": clock})

    assert rectify(stopped, "--messages", "NO").exit_code == 0
    assert rectify(stopped, "--email", "").exit_code == 0 and rectify(keeps, "--email", "").exit_code == 0
    assert (row_of(api, stopped)["messages"], row_of(api, keeps)["messages"]) == (0, None)
    emptied = rectify(stopped, "--messages", "")
    assert emptied.exit_code == 2 and row_of(api, stopped)["messages"] == 0  # a choice is yes or no, never emptied
    assert rectify(keeps, "--language", "fr").exit_code == 2


def test_spanish_is_stored_as_none_so_saving_an_untouched_page_changes_nothing(api, clock):
    patient = api.new_patient(email="ana@example.com")
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    before = row_of(api, patient)
    form_to(desk.get(f"/desk/patients/{patient}"), f"/desk/patients/{patient}").submit().maybe_follow()
    after = row_of(api, patient)
    assert [after[key] for key in ("language", "messages", "messages_since", "email")] == [
        None, 1, before["messages_since"], "ana@example.com"]


def test_the_copy_page_says_the_choice_in_words_with_when_and_by_whom(api, db_path, clock):
    patient = api.new_patient(email="ana@example.com")
    runner = CliRunner(env={"AGENDA_DB": str(db_path)})
    assert runner.invoke(agenda.cli, ["patient", "rectify", patient, "--language", "EN"],
                         obj={"now": clock}).exit_code == 0
    page = runner.invoke(agenda.cli, ["patient", "export", patient, "--format", "html"], obj={"now": clock}).output
    assert "inglés" in page and ">sí<" in page and "Su elección de mensajes" in page
    assert "el asistente telefónico" in page


def test_an_imported_child_takes_her_guardians_address_and_choice_with_when_and_by_whom(api, db_path, tmp_path, clock):
    api.new_patient(email="mum@example.com")
    listed = tmp_path / "hijos.csv"
    listed.write_text("Nombre,Nacimiento,DNI,DNI tutor\nPablo,03/04/2019,,12345678Z\n", encoding="utf-8")
    done = CliRunner(env={"AGENDA_DB": str(db_path)}).invoke(agenda.cli, ["import-patients", str(listed)],
                                                              obj={"now": clock})
    assert done.exit_code == 0, done.output
    pablo = dict(api.db().execute("SELECT * FROM patients WHERE name = 'Pablo'").fetchone())
    assert [pablo[key] for key in ("email", "messages", "messages_by")] == ["mum@example.com", 1, "import"]
    assert pablo["messages_since"] == utc_iso(clock.moment)
