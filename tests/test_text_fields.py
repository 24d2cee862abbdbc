"""Text read exactly (docs/design.md, "Text fields" and "Files from other systems"): every text field of every
channel (the API, the desk, the command line, the imports) passes one door, `fields.text_field`, which refuses a
control character (but tab, CR and LF) and more characters than the field takes, naming the field, and writes a
line break as one space; a file from another system is read strictly, a quote that never closes refused at the line
where it opens, and then nothing is imported."""

import re
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from hypothesis import given, HealthCheck, settings, strategies as st

import agenda
from _agenda.words.texts import refusal_text, translator
from _agenda.values.refusals import ClinicError
from _agenda.values.fields import text_field, text_limit, TEXT_LIMIT
from _agenda.values.printing import printable
from conftest import Clock, CLINIC_CSV, MONDAY, table_rows, valid_dni
from test_desk import last_form
from test_hostile_requests import TEXT_FIELDS
from test_moving import write
from test_refusals import beside, desk  # noqa: F401 (desk: a logged-in desk, a fixture)

SPANISH = translator("es")
CONTROLS = [chr(code) for code in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)]]
# text of any kind but the controls (and lone surrogates, which JSON refuses before: test_hostile_requests.py)
PLAIN = st.text(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\t\r\n"), max_size=12)
WITH_A_CONTROL = st.tuples(PLAIN, st.sampled_from(CONTROLS), PLAIN).map("".join)


def kept_rows(db_path):
    """The agenda's rows but the access record's (a refused form may still have shown a patient) and the desk's
    sessions (a request touches its own)."""
    return {table: rows for table, rows in table_rows(db_path).items()
            if not table.startswith(("access_", "desk_sessions"))}


def cli(db_path, *args):
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(MONDAY)})


# The door itself

def test_the_door_refuses_every_control_but_tab_cr_and_lf_and_writes_line_breaks_as_one_space():
    for control in CONTROLS:
        with pytest.raises(ClinicError) as refused:
            text_field(f"Ana{control}", "name")
        assert (refused.value.code, refused.value.rule, refused.value.field) == (
            "INVALID_REQUEST", "control_character", "name")
        assert refused.value.message == f"name holds a control character (U+{ord(control):04X}), which no text " \
                                        "field takes"
    assert text_field(" Dolor\r\n  de\tcabeza\n\n", "reason") == "Dolor de cabeza"
    assert text_field(" \t\r\n ", "reason") is None
    assert text_field("x" * TEXT_LIMIT, "name") == "x" * TEXT_LIMIT
    with pytest.raises(ClinicError) as refused:
        text_field("x" * (TEXT_LIMIT + 1), "name")
    assert (refused.value.rule, refused.value.message) == ("too_long", f"name is over {TEXT_LIMIT} characters")
    assert text_limit("reason") == 500 and text_limit("doctorId") == TEXT_LIMIT


# The API

QUERY_FIELDS = [("/patients?nif={}", "nif"), ("/appointments?phone={}", "phone"), ("/appointments?date={}", "date"),
                ("/appointments?nif=12345678Z&centerId={}", "centerId"), ("/availabilities?doctorId={}", "doctorId"),
                ("/availabilities?doctorId=MARTIN&startDate={}", "startDate"),
                ("/appointments/range?dates={}", "dates")]
BODY_FIELDS = [(method, path, field) for (method, path), (_, fields) in TEXT_FIELDS.items() for field in fields]


@pytest.fixture
def booked(api, db_path):
    api.book(api.new_patient())
    return api, table_rows(db_path)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(BODY_FIELDS), text=WITH_A_CONTROL)
def test_a_control_character_in_any_text_field_of_a_body_is_400_naming_the_field(booked, db_path, where, text):
    api, before = booked
    method, path, field = where
    body = TEXT_FIELDS[(method, path)][0]
    answer = api.call(method, path, {**body, field: text})
    assert answer.status_int == 400, answer.text
    assert answer.json["error"] == {"code": "INVALID_REQUEST", "message": answer.json["error"]["message"]}
    assert re.fullmatch(rf"{field} holds a control character \(U\+00[0-9A-F]{{2}}\), which no text field takes",
                        answer.json["error"]["message"])
    items = api.call("POST", "/appointments/end-of-reminder-day", {"date": "24/11/2026", "skipAppointmentIds": [text]})
    assert items.json["error"]["message"].startswith("skipAppointmentIds holds a control character")
    assert table_rows(db_path) == before


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(QUERY_FIELDS), text=WITH_A_CONTROL)
def test_a_control_character_in_any_query_value_is_400_naming_it(booked, db_path, where, text):
    api, before = booked
    url, field = where
    answer = api.get(url.format(quote(text, safe="")))
    assert answer.status_int == 400, answer.text
    assert answer.json["error"]["message"].startswith(f"{field} holds a control character"), answer.text
    assert table_rows(db_path) == before


def test_a_line_break_in_a_reason_or_a_name_is_one_space_through_the_api(api):
    patient = api.new_patient(name="Ana\r\nMaría", surname="García\tLópez")
    appointment = api.book(patient, reason="Dolor\nde cabeza \r\n desde ayer")
    read = api.get(f"/appointments/{appointment}").json
    assert (read["reason"], read["patientName"]) == ("Dolor de cabeza desde ayer", "Ana María García López")


@pytest.mark.parametrize("method, path, field", BODY_FIELDS)
def test_every_text_field_of_a_body_takes_its_limit_and_not_one_character_more(booked, db_path, method, path, field):
    api, before = booked
    body = TEXT_FIELDS[(method, path)][0]
    limit = text_limit(field)
    over = api.call(method, path, {**body, field: " " * limit + "x"})
    assert over.status_int == 400 and over.json["error"]["message"] == f"{field} is over {limit} characters"
    at = api.call(method, path, {**body, field: " " * (limit - len(body[field])) + body[field]})
    assert "is over" not in at.text  # at the limit the field is read as it always was
    assert table_rows(db_path) == before or at.status_int < 300


# The desk

NEW_PATIENT = {"name": "Eva", "surname": "Sanz", "nif": valid_dni(40), "phone": "612345679", "birthDate": "03/04/1990"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from([*NEW_PATIENT]), text=WITH_A_CONTROL, child=st.booleans())
def test_a_control_character_in_a_new_patient_is_said_beside_its_field_and_what_was_typed_stays(
        api, desk, db_path, field, text, child):
    before = kept_rows(db_path)
    form = last_form(desk.get("/desk/book?doctorId=MARTIN&date=24/11/2026&time=09:30&centerId=C1"))
    typed = {**NEW_PATIENT, "reason": "Revisión", field: text}
    for name, value in typed.items():
        form[name] = value
    form["underGuardian"] = child  # the NIF typed is then the guardian's
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 400
    assert beside(refused, field) == refusal_text(SPANISH, ClinicError("INVALID_REQUEST", "", "control_character",
                                                                       field))
    again = last_form(refused)
    assert again[field].value == printable(text).strip() and again["underGuardian"].checked == child
    assert [again[name].value for name in typed if name != field] == [typed[name] for name in typed if name != field]
    assert kept_rows(db_path) == before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["name", "surname", "nif", "phone", "birthDate"]), text=WITH_A_CONTROL)
def test_a_control_character_in_a_patients_correction_is_said_beside_its_field(api, desk, db_path, field, text):
    patient = api.app.clinic.conn().execute("SELECT id FROM patients ORDER BY id LIMIT 1").fetchone()
    patient_id = patient[0] if patient else api.new_patient()
    before = kept_rows(db_path)
    page = desk.get(f"/desk/patients/{patient_id}")
    form = next(form for form in page.forms.values() if form.action == f"/desk/patients/{patient_id}")
    form[field] = text
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 400
    assert beside(refused, field) == refusal_text(SPANISH, ClinicError("INVALID_REQUEST", "", "control_character",
                                                                       field))
    assert kept_rows(db_path) == before


@pytest.mark.parametrize("path, fields, field", [
    ("/desk/appointments/1/cancel", {}, "reason"),
    ("/desk/closures", {"dateFrom": "24/11/2026"}, "reason"),
    ("/desk/waitlist", {"nif": "12345678Z", "doctorId": "MARTIN", "dateFrom": "24/11/2026", "dateTo": "30/11/2026"},
     "note"),
    ("/desk/book", {"doctorId": "MARTIN", "date": "24/11/2026", "time": "09:30", "centerId": "C1", "patientId": "1"},
     "reason"),
])
@pytest.mark.parametrize("control", ["\x00", "\x1b", "\x85"])
def test_every_desk_form_refuses_a_control_character_in_its_words_and_changes_nothing(api, desk, db_path, path,
                                                                                      fields, field, control):
    api.book(api.new_patient(), time="10:00")
    csrf = desk.get("/desk/day").html.find("input", attrs={"name": "csrf"})["value"]
    before = kept_rows(db_path)
    refused = desk.post(path, {"csrf": csrf, **fields, field: f"Por{control} favor"}, expect_errors=True)
    assert refused.status_int == 400
    said = refusal_text(SPANISH, ClinicError("INVALID_REQUEST", "", "control_character", field))
    assert said in re.sub(r"\s+", " ", refused.html.get_text())
    assert kept_rows(db_path) == before


def test_a_line_break_in_a_reason_typed_at_the_desk_is_one_space(api, desk):
    patient = api.new_patient()
    page = desk.get(f"/desk/book?doctorId=MARTIN&date=24/11/2026&time=09:30&centerId=C1&patientId={patient}")
    form = next(form for form in page.forms.values() if "patientId" in form.fields)
    form["reason"] = "Dolor\r\nde cabeza"
    assert form.submit().status_int == 303
    assert api.db().execute("SELECT reason FROM appointments").fetchone()[0] == "Dolor de cabeza"


# The command line's own texts

def test_a_reason_given_on_the_command_line_passes_the_same_door(api, db_path):
    patient = api.new_patient()
    refused = cli(db_path, "book", "--doctor", "MARTIN", "--date", "24/11/2026", "--time", "09:30", "--patient",
                  patient, "--reason", "Dolor\x1b[2J")
    assert refused.exit_code == 2 and "reason holds a control character (U+001B)" in refused.output
    booked = cli(db_path, "book", "--doctor", "MARTIN", "--date", "24/11/2026", "--time", "09:30", "--patient",
                 patient, "--reason", "Dolor\nde cabeza")
    assert booked.exit_code == 0, booked.output
    assert api.db().execute("SELECT reason FROM appointments").fetchone()[0] == "Dolor de cabeza"


# Files from other systems

def patients_text(rows):
    return "name,surname,birthDate,nif,phone\n" + "".join(
        f"{name},Núñez,01/02/1980,{valid_dni(100 + n)},612345678\n" for n, name in enumerate(rows))


def appointments_text(rows):
    return "date,time,duration,doctor,center,nif,name,surname,phone,reason,insurance,status\n" + "".join(
        f"{24 + n // 4}/11/2026,{9 + n % 4 // 2}:{n % 2 * 30:02d},30,MARTIN,C1,{valid_dni(200 + n)},{name},Núñez,"
        f"612345678,Control,,\n" for n, name in enumerate(rows))


def catalogs_text(rows):
    return CLINIC_CSV + "".join(f"center,X{n},{name},,,,,,,,\n" for n, name in enumerate(rows))


IMPORTERS = {  # command, the file's text from the names of its rows, the column of the names (header, number)
    "import-patients": (patients_text, "name", 1),
    "import-appointments": (appointments_text, "name", 7),
    "seed": (catalogs_text, "name", 3),
}
CATALOG_LINES = CLINIC_CSV.count("\n")  # the catalog file's rows follow the test clinic's


def first_line(importer):
    return CATALOG_LINES + 1 if importer == "seed" else 2


@pytest.fixture
def clinic_rows(make_api, db_path):
    make_api().app.clinic.db.close()
    return table_rows(db_path)


@pytest.mark.parametrize("importer", IMPORTERS)
@pytest.mark.parametrize("opened", [0, 7])
def test_a_quote_that_never_closes_is_refused_at_the_line_where_it_opens(importer, opened, clinic_rows, db_path,
                                                                           tmp_path):
    """As an old system wrote it: a name that opens a quote, and 39 lines after it that it would swallow."""
    make, _, _ = IMPORTERS[importer]
    names = [f"Nombre{n}" for n in range(40)]
    names[opened] = '"Íñigo'
    refused = cli(db_path, importer, write(tmp_path / "old.csv", make(names)))
    assert refused.exit_code == 1
    line = first_line(importer) + opened
    assert f'line {line}: a quote (") opens a cell here and never closes' in refused.output, refused.output
    assert "Traceback" not in refused.output and "nothing was" in refused.output
    assert table_rows(db_path) == clinic_rows


@pytest.mark.parametrize("importer", IMPORTERS)
def test_a_quote_closed_with_text_after_it_is_refused_where_it_opens(importer, clinic_rows, db_path, tmp_path):
    make, _, _ = IMPORTERS[importer]
    names = [f"Nombre{n}" for n in range(10)]
    names[2], names[5] = '"Ana', 'Eva"Luisa'  # the quote opened on one line closes three lines later, mid cell
    refused = cli(db_path, importer, write(tmp_path / "old.csv", make(names)))
    line = first_line(importer) + 2
    assert refused.exit_code == 1
    assert f'line {line}: a quote (") opens a cell here and closes on line {line + 3} with text after it' \
           in refused.output, refused.output
    assert table_rows(db_path) == clinic_rows


@pytest.mark.parametrize("importer", IMPORTERS)
def test_a_cell_longer_than_the_api_takes_is_refused_by_line_and_column(importer, clinic_rows, db_path, tmp_path):
    make, field, column = IMPORTERS[importer]
    names = ["Ana", "x" * (text_limit(field) + 1), "Eva", "y" * 3_495]
    refused = cli(db_path, importer, write(tmp_path / "old.csv", make(names)))
    assert refused.exit_code == 1
    line = first_line(importer)
    for n, length in ((1, text_limit(field) + 1), (3, 3_495)):
        assert f"line {line + n}: column {column} ({field}): {length:,} characters, and {field} takes " \
               f"{text_limit(field)} at most" in refused.output, refused.output
    assert table_rows(db_path) == clinic_rows
    done = cli(db_path, importer, write(tmp_path / "fits.csv", make(["Ana", "x" * text_limit(field), "Eva"])))
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize("importer", IMPORTERS)
@pytest.mark.parametrize("control", ["\x00", "\x0b", "\x1b", "\x7f", "\x9c"])
def test_a_control_character_in_a_cell_is_refused_with_its_line_and_field(importer, control, clinic_rows, db_path,
                                                                          tmp_path):
    make, field, column = IMPORTERS[importer]
    refused = cli(db_path, importer, write(tmp_path / "old.csv", make(["Ana", f"Eva{control}", "Luis"])))
    assert refused.exit_code == 1
    assert f"line {first_line(importer) + 1}: column {column} ({field}): a control character " \
           f"(U+{ord(control):04X}), which no text field takes" in refused.output, refused.output
    assert table_rows(db_path) == clinic_rows


def test_a_spreadsheets_multi_line_cells_come_in_as_one_line(clinic_rows, db_path, tmp_path):
    text = ("date;time;doctor;center;nif;name;surname;reason\r\n"
            f'24/11/2026;09:00;MARTIN;C1;{valid_dni(300)};"Ana\r\nMaría";García;"Dolor\r\nde cabeza\r\n"\r\n'
            f'24/11/2026;09:30;MARTIN;C1;{valid_dni(301)};Eva;"Sanz ""la\tpeque"""; Revisión \r\n')
    done = cli(db_path, "import-appointments", write(tmp_path / "citas.csv", text, "cp1252"))
    assert done.exit_code == 0, done.output
    conn = agenda.open_database(db_path)
    try:
        assert [tuple(row) for row in conn.execute(
            "SELECT p.name, p.surname, a.reason FROM appointments a JOIN patients p ON p.id = a.patient_id"
            " ORDER BY a.time")] == [("Ana María", "García", "Dolor de cabeza"),
                                     ("Eva", 'Sanz "la peque"', "Revisión")]
    finally:
        conn.close()

