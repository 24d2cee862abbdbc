"""The `agenda` command line ("Configuration and CLI") and the catalog seed ("Catalog file"), through click's CliRunner.

`agenda run` takes its serve function from the click context object, so these tests
never open a socket.
"""

import re
import sqlite3
from pathlib import Path

import click
import pytest
import webtest
from click.testing import CliRunner

import agenda
from _agenda.files.catalogs import CATALOG_TABLES
import edges
from conftest import CLINIC_CSV, SECRET, sign, table_rows, write_csv
from openapi_contract import checked

DEMO_CSV = Path(__file__).resolve().parent.parent / "seed" / "catalogs.csv"


@pytest.fixture
def runner(db_path):
    return CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None})


def invoke(runner, *args, obj=None, **kwargs):
    return runner.invoke(agenda.cli, list(args), obj=obj, catch_exceptions=False, **kwargs)


def catalog(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return {table: conn.execute(sql).fetchall() for table, sql in CATALOG_TABLES.items()}
    finally:
        conn.close()


def count(db_path, table):
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


EVERY_COMMAND = [list(words) for words, _ in edges.command_lines()]  # the group, each command, each subgroup's


def test_the_admin_commands_are_all_there():
    assert {" ".join(command) for command in EVERY_COMMAND} >= {
        "run", "seed", "backup", "restore", "day", "import-patients", "secret set", "status"}


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=" ".join)
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_every_command_has_help_ending_in_an_example(runner, command, flag):
    result = invoke(runner, *command, flag)
    assert result.exit_code == 0
    assert result.output.index("Usage:") == 0
    description = result.output.split("\nOptions:")[0].rstrip().splitlines()
    assert "Example:" in [line.strip() for line in description]
    assert description[-1].strip().startswith("agenda "), description[-1]


def test_the_group_tells_its_version_once(runner):
    result = invoke(runner, "--version")
    assert result.exit_code == 0 and result.output.strip() == f"agenda, version {agenda.__version__}"
    assert all("--version" not in invoke(runner, *command, "-h").output for command in EVERY_COMMAND if command)


@pytest.mark.parametrize("args,message", [
    (["seed", "nope.csv"], "no such file"),
    (["import-patients", "nope.csv"], "no such file"),
    (["restore", "nope.db"], "no such file"),
    (["backup", "copy.db"], "no such database"),
    (["status"], "no such database"),
    (["day", "24/13/2026"], "not a date"),
])
def test_user_mistakes_are_one_clear_message_and_exit_1(runner, tmp_path, args, message):
    result = runner.invoke(agenda.cli, args)
    assert result.exit_code == 1, result.output
    assert message in result.output and result.output.startswith("Error: ")
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1


# agenda seed ("Catalog file")

def test_seed_loads_the_demo_clinic(runner, db_path):
    result = invoke(runner, "seed", str(DEMO_CSV))
    assert result.exit_code == 0, result.output
    assert "loaded" in result.output and "2 centers" in result.output
    tables = catalog(db_path)
    assert len(tables["centers"]) >= 2 and len(tables["specialities"]) >= 3
    centers_by_doctor = {}
    for doctor_id, center_id, *_ in tables["schedules"]:
        centers_by_doctor.setdefault(doctor_id, set()).add(center_id)
    assert any(len(centers) >= 2 for centers in centers_by_doctor.values())  # a doctor at two centers
    assert tables["doctor_insurances"]                                     # a doctor with an insurance list
    assert any(row[0] is None and row[1] is None for row in tables["closures"])   # a holiday
    assert any(row[0] is not None for row in tables["closures"])                  # an absence
    assert ("NUNEZ", "Dra. Carmen Núñez Gil", "DER") in tables["doctors"]         # UTF-8 kept


def test_seeding_the_same_file_twice_changes_nothing_more(runner, db_path):
    invoke(runner, "seed", str(DEMO_CSV))
    tables, events = catalog(db_path), count(db_path, "events")
    result = invoke(runner, "seed", str(DEMO_CSV))
    assert result.exit_code == 0 and "nothing changed" in result.output
    assert catalog(db_path) == tables and count(db_path, "events") == events


def test_seed_records_an_event_from_the_cli(runner, db_path):
    invoke(runner, "seed", str(DEMO_CSV))
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT source, action FROM events").fetchall() == [("cli", "catalog.seeded")]


def test_a_bad_catalog_names_every_bad_line_and_changes_nothing(runner, db_path, tmp_path):
    invoke(runner, "seed", str(write_csv(tmp_path, CLINIC_CSV, "good.csv")))
    before = catalog(db_path)
    bad = write_csv(tmp_path, (
        "kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to\n"
        "center,C3,Sur,,,,,,,,\n"                                        # line 2: fine alone
        "sala,R1,Sala,,,,,,,,\n"                                         # line 3: unknown kind
        "doctor,NEW,Nuevo,MG,C1,,mon-fri,9-14,15,,\n"                    # line 4: bad hours
        "doctor,OTHER,Otro,MG,C1,,someday,09:00-10:00,15,,\n"            # line 5: bad days
        "closed,,Festivo,,,,,,,31/02/2027,\n"                            # line 6: impossible date
        "doctor,THIRD,Tercero,MG,C1,,mon,09:00-10:00,seven,,\n"          # line 7: bad slot
    ), "bad.csv")
    result = runner.invoke(agenda.cli, ["seed", str(bad)])
    assert result.exit_code == 1
    for line in (3, 4, 5, 6, 7):
        assert f"line {line}:" in result.output
    assert "line 2:" not in result.output and "nothing was loaded" in result.output
    assert catalog(db_path) == before


def test_references_to_unknown_catalog_ids_are_refused_with_their_line(runner, db_path, tmp_path):
    bad = write_csv(tmp_path, (
        "kind,id,name,speciality,center,insurances,days,hours,slot_minutes\n"
        "speciality,MG,Medicina,,,,,,\n"
        "doctor,A,Ana,XX,,,mon,09:00-10:00,15\n"
        "doctor,B,Bea,MG,,NOPE,mon,09:00-10:00,15\n"
        "closed,GHOST,Ausencia,,,,,,\n"
    ), "refs.csv")
    result = runner.invoke(agenda.cli, ["seed", str(bad)])
    assert result.exit_code == 1
    assert "line 3: speciality 'XX'" in result.output and "line 4: insurance 'NOPE'" in result.output
    assert "line 5:" in result.output
    assert not db_path.exists()  # nothing loaded, and no empty database left for `agenda run`


def test_overlapping_or_inconsistent_doctor_rows_are_refused(runner, db_path, tmp_path):
    overlap = write_csv(tmp_path, (
        "kind,id,name,speciality,center,insurances,days,hours,slot_minutes\n"
        "center,C1,Centro,,,,,,\ncenter,C2,Norte,,,,,,\nspeciality,MG,Medicina,,,,,,\n"
        "doctor,A,Ana,MG,C1,,mon-wed,09:00-12:00,15\n"
        "doctor,A,Ana,MG,C2,,wed,11:00-13:00,15\n"
    ), "overlap.csv")
    result = runner.invoke(agenda.cli, ["seed", str(overlap)])
    assert result.exit_code == 1 and "overlap on wed" in result.output
    differing = write_csv(tmp_path, (
        "kind,id,name,speciality,center,insurances,days,hours,slot_minutes\n"
        "center,C1,Centro,,,,,,\ncenter,C2,Norte,,,,,,\nspeciality,MG,Medicina,,,,,,\n"
        "doctor,A,Ana,MG,C1,,mon,09:00-12:00,15\n"
        "doctor,A,Ana López,MG,C2,,tue,09:00-12:00,15\n"
        "doctor,B,Bea,MG,,,tue,09:00-12:00,15\n"
    ), "differ.csv")
    result = runner.invoke(agenda.cli, ["seed", str(differing)])
    assert result.exit_code == 1
    assert "line 6: doctor A: name differs from line 5" in result.output
    assert "line 7: doctor B: center is required" in result.output
    assert not db_path.exists()


def test_seeding_again_updates_in_place_and_removes_nothing_else(runner, db_path, tmp_path):
    invoke(runner, "seed", str(write_csv(tmp_path, CLINIC_CSV, "first.csv")))
    update = write_csv(tmp_path, (
        "kind,id,name,speciality,center,insurances,days,hours,slot_minutes\n"
        "doctor,RUIZ,Javier Ruiz Ortega,PED,C1,SAN,tue,12:00-13:00,30\n"
    ), "update.csv")
    result = invoke(runner, "seed", str(update))
    assert result.exit_code == 0 and "loaded" in result.output
    tables = catalog(db_path)
    assert ("RUIZ", "Javier Ruiz Ortega", "PED") in tables["doctors"]
    assert [row for row in tables["schedules"] if row[0] == "RUIZ"] == [("RUIZ", "C1", 1, "12:00", "13:00", 30, None)]
    assert [row for row in tables["doctor_insurances"] if row[0] == "RUIZ"] == [("RUIZ", "C1", "SAN")]
    assert len([row for row in tables["schedules"] if row[0] == "MARTIN"]) == 6   # untouched
    assert len(tables["closures"]) == 3


def test_seed_of_a_missing_file_is_a_clear_error(runner):
    result = runner.invoke(agenda.cli, ["seed", "no-such-file.csv"])
    assert result.exit_code == 1 and "no such file" in result.output
    assert "Traceback" not in result.output


def test_seed_reads_a_file_saved_by_a_spreadsheet_with_a_bom_and_extra_columns(runner, db_path, tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffKind,ID,Name,Notes\r\nspeciality,PED,Pediatría,ignored\r\n".encode("utf-8"))
    assert invoke(runner, "seed", str(path)).exit_code == 0
    assert catalog(db_path)["specialities"] == [("PED", "Pediatría")]


# agenda run ("Signatures", "Configuration and CLI")

class FakeServe:
    def __init__(self):
        self.calls = []

    def __call__(self, app, on_listening=None, **options):
        self.calls.append((app, options))


@pytest.fixture
def clinic_db(db_path, tmp_path):
    """The test clinic's database, as `agenda seed` leaves it."""
    agenda.open_database(db_path).close()
    seed_result = CliRunner().invoke(agenda.cli, ["seed", str(write_csv(tmp_path, CLINIC_CSV)), "--db", str(db_path)])
    assert seed_result.exit_code == 0, seed_result.output
    return db_path


def test_run_refuses_a_database_that_does_not_exist_and_names_the_fix(runner, db_path):
    serve = FakeServe()
    result = runner.invoke(agenda.cli, ["run", "--db", "typo.db"], obj={"serve": serve}, env={"AGENDA_SECRET": SECRET})
    assert result.exit_code == 1 and "typo.db: no such database" in result.output and "agenda seed" in result.output
    assert serve.calls == [] and not Path("typo.db").exists()


def test_run_warns_when_the_database_has_no_doctors(runner, db_path, caplog):
    agenda.open_database(db_path).close()
    serve = FakeServe()
    with caplog.at_level("WARNING", logger="agenda"):
        result = runner.invoke(agenda.cli, ["run"], obj={"serve": serve}, env={"AGENDA_SECRET": SECRET})
    assert result.exit_code == 0 and "has no doctors" in caplog.text
    assert "nothing can be booked" in invoke(runner, "status").output


def test_run_refuses_to_start_without_a_secret(runner, clinic_db):
    serve = FakeServe()
    result = runner.invoke(agenda.cli, ["run"], obj={"serve": serve})
    assert result.exit_code == 1 and "AGENDA_SECRET" in result.output
    assert serve.calls == []


def test_run_serves_on_loopback_8080_by_default_with_the_secret_from_the_environment(runner, clinic_db):
    serve = FakeServe()
    result = runner.invoke(agenda.cli, ["run"], obj={"serve": serve}, env={"AGENDA_SECRET": SECRET})
    assert result.exit_code == 0, result.output
    (app, options), = serve.calls
    assert (options["host"], options["port"], options["threads"]) == ("127.0.0.1", 8080, 4)
    assert app.clinic.settings.signature_scheme == "request"
    client = webtest.TestApp(checked(app))
    assert client.get("/health").json == {"status": "ok", "replica": "off"}
    assert client.get("/custom-config", expect_errors=True).status_int == 401
    assert client.get("/custom-config", headers={"X-Signature": sign(b"", SECRET, "GET", "/custom-config")}).status_int == 200
    assert SECRET not in result.output


def test_run_takes_its_settings_from_options_and_environment(runner, tmp_path):
    serve = FakeServe()
    other_db = tmp_path / "other.db"
    agenda.open_database(other_db).close()
    result = runner.invoke(agenda.cli, ["run", "--host", "0.0.0.0", "--port", "9001", "--threads", "2",
                                        "--trusted-proxy", "127.0.0.1", "--horizon", "30",
                                        "--channel-timeout", "15"],
                           obj={"serve": serve},
                           env={"AGENDA_SECRET": SECRET, "AGENDA_DB": str(other_db),
                                "AGENDA_REMINDER_POLICY": "release", "AGENDA_MIN_NOTICE": "0"})
    assert result.exit_code == 0, result.output
    (app, options), = serve.calls
    assert (options["host"], options["port"], options["threads"]) == ("0.0.0.0", 9001, 2)
    assert options["trusted_proxy"] == "127.0.0.1" and options["clear_untrusted_proxy_headers"] is True
    assert options["trusted_proxy_headers"] == "x-forwarded-for x-forwarded-proto"
    assert options["channel_timeout"] == 15
    settings = app.clinic.settings
    assert (settings.reminder_policy, settings.min_notice_minutes, settings.horizon_days) == ("release", 0, 30)


def test_run_refuses_bad_settings_with_a_clear_message(runner, clinic_db):
    result = runner.invoke(agenda.cli, ["run", "--tz", "Mars/Olympus"], obj={"serve": FakeServe()},
                           env={"AGENDA_SECRET": SECRET})
    assert result.exit_code == 1 and "time zone" in result.output
    result = runner.invoke(agenda.cli, ["run", "--reminder-policy", "delete"], obj={"serve": FakeServe()},
                           env={"AGENDA_SECRET": SECRET})
    assert result.exit_code == 2 and "delete" in result.output


def test_run_insecure_development_mode_warns_loudly(runner, clinic_db):
    serve = FakeServe()
    result = runner.invoke(agenda.cli, ["run", "--insecure-no-signature"], obj={"serve": serve})
    assert result.exit_code == 0 and "WARNING" in result.output
    (app, _), = serve.calls
    assert webtest.TestApp(checked(app)).get("/custom-config").status_int == 200


# docs/deploy.md: every agenda command line in a recipe parses as written

def recipe_command_lines():
    text = (Path(__file__).resolve().parent.parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    for line in text.splitlines():
        for part in re.split(r"&&|\|", line):
            found = re.search(r"(?:/opt/agenda/bin/agenda|agenda\.pyz)\s+(.*)", part)
            if found and not found[1].startswith("wherever"):
                yield found[1].split("2>&1")[0].split()


RECIPES = list(recipe_command_lines())


def test_the_recipes_use_the_admin_commands():
    assert {words[0] for words in RECIPES} >= {"run", "seed", "secret", "status", "backup"}


@pytest.mark.parametrize("words", RECIPES, ids=" ".join)
def test_every_recipe_command_line_parses(words):
    command, args, name = agenda.cli, list(words), "agenda"
    while isinstance(command, click.Group):
        name = args.pop(0)
        command = command.commands[name]
    command.make_context(name, args)  # raises on an unknown command or option


def test_run_warns_that_a_secret_on_the_command_line_is_seen_by_every_user(runner, clinic_db):
    """`ps` shows a process's arguments to every user: a secret given with --secret is warned about on
    stderr, one read from the environment or the stored file is not."""
    on_line = runner.invoke(agenda.cli, ["run", "--secret", SECRET], obj={"serve": FakeServe()})
    assert on_line.exit_code == 0 and "visible to every user" in on_line.stderr
    assert SECRET not in on_line.stderr
    from_env = runner.invoke(agenda.cli, ["run"], obj={"serve": FakeServe()}, env={"AGENDA_SECRET": SECRET})
    assert from_env.exit_code == 0 and "visible to every user" not in from_env.stderr


def test_seed_reads_a_spanish_spreadsheets_windows_1252_file_and_says_the_days_in_spanish_too(tmp_path, db_path):
    sheet = tmp_path / "catalogo.csv"
    sheet.write_bytes(("kind;id;name;speciality;center;insurances;days;hours;slot_minutes\n"
                       "speciality;PED;Pediatría;;;;;;\n"
                       "doctor;NUNEZ;Carmen Núñez;PED;;;lun-vie;09:00-10:00;30\n").encode("cp1252"))
    loaded = CliRunner().invoke(agenda.cli, ["seed", str(sheet), "--db", str(db_path)])
    assert loaded.exit_code == 0, loaded.output
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT name FROM doctors").fetchall() == [("Carmen Núñez",)]
    conn.close()
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("kind,id,name,speciality,days,hours\nspeciality,MG,General,,,\n"
                     "doctor,X,Ana,MG,lunes-domingox,09:00-10:00\n", encoding="utf-8")
    refused = CliRunner().invoke(agenda.cli, ["seed", str(wrong), "--db", str(db_path)])
    assert refused.exit_code == 1 and "line 3" in refused.output
    assert "lun mar mié jue vie sáb dom" in refused.output and "mon tue wed" in refused.output


def test_a_failed_seed_leaves_no_empty_database_and_an_existing_one_as_it_was(tmp_path, db_path):
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("kind,id,name,speciality\ndoctor,X,Ana,NOPE\n", encoding="utf-8")
    refused = CliRunner().invoke(agenda.cli, ["seed", str(wrong), "--db", str(db_path)])
    assert refused.exit_code == 1 and "no database made" in refused.output
    assert list(tmp_path.glob(f"{db_path.name}*")) == []  # `agenda run` will not find an empty clinic
    assert CliRunner().invoke(agenda.cli, ["seed", str(write_csv(tmp_path, CLINIC_CSV)), "--db", str(db_path)]
                              ).exit_code == 0
    before = table_rows(db_path)
    again = CliRunner().invoke(agenda.cli, ["seed", str(wrong), "--db", str(db_path)])
    assert again.exit_code == 1 and "no database made" not in again.output
    assert db_path.is_file() and table_rows(db_path) == before
