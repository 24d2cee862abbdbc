"""The command line in the clinic's language ("Configuration and CLI"): `agenda day` and `agenda report`, and
what they refuse, in Spanish when the environment asks for it, in English otherwise, from the desk's table of
texts; the CSVs' columns stay as they are. Each test pins the variables it means (CliRunner(env=...))."""

import datetime as dt

import pytest
from click.testing import CliRunner

import agenda
from _agenda.cli.root import cli_language
from _agenda.domain.counter import mark_attendance
from conftest import MONDAY, Clock, valid_dni

SPANISH = {"LANG": "es_ES.UTF-8", "LC_ALL": None, "LC_MESSAGES": None, "LANGUAGE": None}
ENGLISH = {"LANG": "en_GB.UTF-8", "LC_ALL": None, "LC_MESSAGES": None, "LANGUAGE": None}


def invoke(db_path, env, *args, now=MONDAY):
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, **env})
    return runner.invoke(agenda.cli, list(args), obj={"now": Clock(now)}, catch_exceptions=False)


@pytest.mark.parametrize("environ,language", [
    ({}, "en"), ({"LANG": "es_ES.UTF-8"}, "es"), ({"LANG": "es"}, "es"), ({"LANG": "en_US.UTF-8"}, "en"),
    ({"LANG": "es_ES.UTF-8", "LC_ALL": "C"}, "en"), ({"LANG": "es_ES.UTF-8", "LC_ALL": "C.UTF-8"}, "en"),
    ({"LANG": "es_ES.UTF-8", "LC_ALL": "POSIX"}, "en"), ({"LANG": "es_ES.UTF-8", "LC_ALL": ""}, "es"),
    ({"LANG": "en_US.UTF-8", "LC_MESSAGES": "es_MX.UTF-8"}, "es"), ({"LC_ALL": "es_AR", "LC_MESSAGES": "en_US"}, "es"),
    ({"LANG": "es_ES.UTF-8", "LC_MESSAGES": "en_GB"}, "en"),
    ({"LANG": "en_US.UTF-8", "LANGUAGE": "es:en"}, "es"), ({"LANG": "es_ES.UTF-8", "LANGUAGE": "en:es"}, "en"),
    ({"LANG": "en_US.UTF-8", "LANGUAGE": "fr:es_ES:en"}, "es"), ({"LANG": "es_ES.UTF-8", "LANGUAGE": "fr"}, "es"),
    ({"LANGUAGE": "es"}, "es"), ({"LC_ALL": "C", "LANGUAGE": "es"}, "en"), ({"LANG": "de_DE.UTF-8"}, "en"),
])
def test_the_language_comes_from_the_environment_in_the_usual_order(environ, language):
    assert cli_language(environ) == language


def a_day_at_the_counter(make_api, clock):
    """Tuesday 24/11: Ana arrived at 08:52 for MARTIN's 09:00, José did not come to 09:30, Luis is still to come
    to RUIZ's 09:00."""
    api = make_api()
    ana = api.new_patient(nif=valid_dni(1), name="Ana", surname="García", phone="612345678")
    jose = api.new_patient(nif=valid_dni(2), name="José", surname="Núñez", phone="699111222")
    luis = api.new_patient(nif=valid_dni(3), name="Luis", surname=None, phone=None)
    arrived = api.book(ana, time="09:00", reason="Revisión")
    missed = api.book(jose, time="09:30", reason="Dolor")
    api.post("/appointments/confirm", {"appointmentId": missed, "confirmed": True})
    api.book(luis, time="09:00", doctor="RUIZ", reason=None)
    clock.set(2026, 11, 24, 8, 52)
    mark_attendance(api.app.clinic, arrived, "arrived", "desk:ana")
    clock.set(2026, 11, 24, 9, 45)
    mark_attendance(api.app.clinic, missed, "no_show", "desk:ana")
    return dt.datetime(2026, 11, 24, 9, 45, tzinfo=clock.moment.tzinfo)


def test_the_day_sheet_speaks_spanish_and_shows_who_arrived_and_who_did_not_come(make_api, clock, db_path):
    now = a_day_at_the_counter(make_api, clock)
    lines = invoke(db_path, SPANISH, "day", "24/11/2026", now=now).output.splitlines()
    assert lines[0] == "martes 24/11/2026, todos los centros: 3 citas"
    martin = lines.index("Lucía Martín (MARTIN)")
    assert lines[martin + 1].split() == ["09:00", "Ana", "García", "+34612345678", "reservada", "llegó", "08:52",
                                         "Revisión", "[C1]"]
    assert lines[martin + 2].split() == ["09:30", "José", "Núñez", "+34699111222", "confirmada", "no", "vino",
                                         "Dolor", "[C1]"]
    assert lines[lines.index("Javier Ruiz (RUIZ)") + 1].split() == ["09:00", "Luis", "reservada", "-", "[C1]"]
    # the columns stay aligned: each reason starts where the others do
    starts = {line.index(reason) for line, reason in ((lines[martin + 1], "Revisión"), (lines[martin + 2], "Dolor"))}
    assert len(starts) == 1
    one = invoke(db_path, SPANISH, "day", "24/11/2026", "--center", "C2", now=now).output
    assert one == "martes 24/11/2026, centro C2: 0 citas\n"


def test_the_day_sheet_in_english_shows_the_same_day_in_english(make_api, clock, db_path):
    now = a_day_at_the_counter(make_api, clock)
    lines = invoke(db_path, ENGLISH, "day", "24/11/2026", now=now).output.splitlines()
    assert lines[0] == "Tuesday 24/11/2026, all centers: 3 appointments"
    martin = lines.index("Lucía Martín (MARTIN)")
    assert lines[martin + 1].split()[4:7] == ["booked", "arrived", "08:52"]
    assert lines[martin + 2].split()[4:6] == ["confirmed", "no-show"]


def test_lc_all_c_overrides_a_spanish_lang(make_api, clock, db_path):
    now = a_day_at_the_counter(make_api, clock)
    output = invoke(db_path, {**SPANISH, "LC_ALL": "C"}, "day", "24/11/2026", now=now).output
    assert output.startswith("Tuesday 24/11/2026, all centers: 3 appointments")
    assert invoke(db_path, {**ENGLISH, "LANGUAGE": "es:en"}, "day", "24/11/2026", now=now).output.startswith(
        "martes 24/11/2026")


def test_the_day_sheets_csv_keeps_its_columns_and_values_in_spanish(make_api, clock, db_path):
    now = a_day_at_the_counter(make_api, clock)
    spanish = invoke(db_path, SPANISH, "day", "24/11/2026", "--csv", now=now).output
    assert spanish == invoke(db_path, ENGLISH, "day", "24/11/2026", "--csv", now=now).output
    assert spanish.startswith('"date","time","end","doctor_id","doctor","center","patient","phone","reason",'
                              '"status","type","holds"')


@pytest.mark.parametrize("args,said", [
    (("day", "31/02/2026"), "Error: '31/02/2026' no es una fecha; escríbela como DD/MM/AAAA, p. ej. 24/11/2026"),
    (("day", "24/11/2026", "--center", "XX"), "Error: no hay ningún centro 'XX'; los centros son: C1, C2"),
    (("day", "--tz", "Mars/Base"), "Error: zona horaria desconocida 'Mars/Base' (prueba Europe/Madrid)"),
    (("report", "--to", "mañana"), "Error: --to 'mañana' no es una fecha; escríbela como DD/MM/AAAA"),
    (("report", "--from", "30/11/2026", "--to", "23/11/2026"), "Error: El último día es anterior al primero."),
    (("report", "--from", "01/01/2026", "--to", "31/12/2026"), "Error: El informe abarca medio año como mucho."),
])
def test_what_day_and_report_refuse_is_said_in_spanish(api, db_path, args, said):
    result = invoke(db_path, SPANISH, *args)
    assert result.exit_code == 1 and result.output.startswith(said), result.output


def test_a_missing_database_is_said_in_spanish(tmp_path):
    result = invoke(tmp_path / "no.db", SPANISH, "report")
    assert result.exit_code == 1
    assert result.output == f"Error: {tmp_path / 'no.db'}: no existe esa base de datos; indica su ruta con --db o " \
                            "AGENDA_DB\n"


def test_the_report_speaks_spanish_and_its_csv_keeps_its_columns(make_api, clock, db_path):
    now = a_day_at_the_counter(make_api, clock)
    args = ("report", "--from", "23/11/2026", "--to", "29/11/2026")
    lines = invoke(db_path, SPANISH, *args, now=now).output.splitlines()
    martin = next(line for line in lines if line.startswith("MARTIN "))
    assert martin == ("MARTIN Lucía Martín: reservadas 2 de 18 (11 %), libres 16, no vinieron 1, anuladas con menos "
                      "de un día 0; minutos reservados 60 de 540")
    assert "Medicina general: 2 visitas, 60 minutos" in lines and "Pediatría: 1 visita, 20 minutos" in lines
    assert lines[-2] == ("Semana del 23/11/2026: respuestas a los recordatorios: confirmadas 1, rechazadas 0, sin "
                         "respuesta 0, liberadas 0; reservadas por el asistente telefónico 3, por recepción 0")
    assert lines[-1].startswith("Reservadas con antelación de: el mismo día 0, hasta una semana 3,")
    english = invoke(db_path, ENGLISH, *args, now=now).output
    assert "MARTIN Lucía Martín: 2/18 booked (11%), 16 free, 1 no-shows" in english
    assert "Pediatría: 1 visit, 20 minutes" in english and "Booked ahead: same day 0, week 3," in english
    assert invoke(db_path, SPANISH, *args, "--csv", now=now).output == invoke(db_path, ENGLISH, *args, "--csv",
                                                                              now=now).output
