"""What the caller's integrator and the clinic's admin are told: a way to debug signatures,
refusals that say why, and commands that catch the usual mistakes."""

import datetime as dt
import re
import socket
import subprocess

import pytest
from click.testing import CliRunner

import agenda
from _agenda.values.printing import plural
from conftest import MONDAY, SECRET, Clock, agenda_command, assert_error, write_csv

SEMICOLON_CSV = """\
kind;id;name;speciality;center;insurances;days;hours;slot_minutes;date_from;date_to
center;C1;Centro;;;;;;;;
speciality;MG;Medicina general;;;;;;;;
insurance;PRIV;Privado;;;;;;;;
insurance;SAN;Sanitas;;;;;;;;
doctor;GIL;Ana Gil;MG;C1;"PRIV;SAN";lunes;"09:00-10:00;16:00-17:00";30;;
doctor;ROS;Eva Ros;MG;C1;;lun-vie;10:00-11:00;30;;
"""


@pytest.fixture
def runner(db_path):
    return CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": SECRET, "AGENDA_SECRET_FILE": None})


def invoke(runner, *args, now=MONDAY, **kwargs):
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(now)}, catch_exceptions=False,
                         **kwargs)


# agenda sign

def signatures_printed(output):
    """{scheme: hex signature} as `agenda sign` prints them."""
    return dict(re.findall(r"(\w+) scheme signs[^\n]*\n[^\n]*\n  hex +(\w+)", output))


def test_sign_prints_the_exact_bytes_and_signatures_the_server_takes(api, runner, tmp_path):
    body = b'{"name": "Ana", "nif": "12345678Z"}\n'
    (tmp_path / "patient.json").write_bytes(body)
    result = invoke(runner, "sign", "post", "/patients", "--body", tmp_path / "patient.json")
    assert result.exit_code == 0, result.output
    assert 'POST\\n/patients\\n{"name": "Ana", "nif": "12345678Z"}\\n' in result.output  # escaped, newline shown
    assert "ends with a newline" in result.output and SECRET not in result.output
    printed = signatures_printed(result.output)
    assert api.post("/patients", raw=body, signature=printed["request"]).status_int == 201
    assert api.post("/patients", raw=body, signature=printed["body"]).status_int == 401  # not the default scheme
    base64_line = re.search(r"request scheme signs[^\n]*\n[^\n]*\n[^\n]*\n  base64 +(\S+)", result.output)[1]
    assert api.get("/patients?nif=12345678Z", signature=base64_line).status_int == 401  # another request


@pytest.mark.parametrize("target, warned", [("https://clinic.example/custom-config", "full URL"),
                                            ("/patients?nif=Ibáñez 1", "percent-encoded")])
def test_sign_warns_of_the_usual_mistakes(runner, target, warned):
    result = invoke(runner, "sign", "GET", target)
    assert result.exit_code == 0 and warned in result.output


def test_sign_reads_the_stored_secret_as_run_does_and_refuses_without_one(db_path, tmp_path):
    bare = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})
    refused = bare.invoke(agenda.cli, ["sign", "GET", "/custom-config"])
    assert refused.exit_code == 1 and "agenda secret set" in refused.output
    bare.invoke(agenda.cli, ["secret", "set"], input=SECRET + "\n")
    signed = bare.invoke(agenda.cli, ["sign", "GET", "/custom-config"])
    assert agenda.sign(SECRET, b"GET\n/custom-config\n").hex() in signed.output


# A refused signature is logged with why, never with the signature, the secret or the query

@pytest.mark.parametrize("signature, why", [
    (None, "no X-Signature header"), ("zz-not-a-signature!", "neither hex nor base64"),
    ("ab" * 20, "hex of the wrong length (40 digits"), ("c2hvcnQ=", "base64 of the wrong length"),
    ("0" * 64, "it matches no scheme"), ("body", "signed with the 'body' scheme"),
])
def test_a_refused_signature_is_logged_with_why(api, caplog, signature, why):
    with caplog.at_level("WARNING", logger="agenda"):
        assert_error(api.get("/patients?nif=12345678Z", signature=signature), 401, "INVALID_SIGNATURE")
    line, = [record.getMessage() for record in caplog.records if "signature refused" in record.getMessage()]
    assert why in line and "tried request" in line and "body 0 bytes" in line and "query 13 bytes" in line
    assert "12345678Z" not in line and SECRET not in line and "/patients" in line
    if signature and signature != "body":
        assert signature not in line


# agenda status

def test_status_counts_signed_requests_per_scheme_in_clinic_time_and_flags_an_old_backup(make_api, runner,
                                                                                          tmp_path, clock):
    api = make_api(signature_scheme="auto")
    for _ in range(3):
        api.get("/custom-config", signature="request")
    api.get("/custom-config", signature="body")  # a first sighting is noted at once
    invoke(runner, "backup", tmp_path / "nightly.db", now=MONDAY)
    output = invoke(runner, "status", now=MONDAY + dt.timedelta(days=2)).output
    assert "signs whole requests (3 requests, last 23/11/2026 08:00; 1 request signed the body alone)" in output
    assert "23/11/2026 08:00 to" in output and "more than a day ago" in output  # Madrid time, not UTC
    assert "more than a day ago" not in invoke(runner, "status", now=MONDAY + dt.timedelta(hours=3)).output


# Catalog files as clinics make them

def test_seed_reads_a_semicolon_file_with_quoted_lists_and_spanish_days(runner, db_path, tmp_path):
    result = invoke(runner, "seed", write_csv(tmp_path, SEMICOLON_CSV))
    assert result.exit_code == 0, result.output
    assert "1 center, 1 speciality, 2 insurances, 2 doctors" in result.output
    conn = agenda.connect(db_path)
    assert conn.execute("SELECT count(*) FROM schedules WHERE doctor_id = 'GIL'").fetchone()[0] == 2
    assert conn.execute("SELECT count(*) FROM schedules WHERE doctor_id = 'ROS'").fetchone()[0] == 5
    assert conn.execute("SELECT count(*) FROM doctor_insurances WHERE doctor_id = 'GIL'").fetchone()[0] == 2


def test_a_header_that_fails_says_what_separator_and_columns_were_found(runner, tmp_path):
    result = invoke(runner, "seed", write_csv(tmp_path, "tipo;id;nombre\ncenter;C1;Centro\n"))
    assert result.exit_code == 1
    assert "';' as the separator" in result.output and "['tipo', 'id', 'nombre']" in result.output


def test_seed_demo_loads_the_demo_clinic_shipped_with_agenda(runner, db_path):
    result = invoke(runner, "seed", "--demo")
    assert result.exit_code == 0 and "the demo clinic: loaded" in result.output, result.output
    assert agenda.connect(db_path).execute("SELECT count(*) FROM doctors").fetchone()[0] >= 5
    assert invoke(runner, "seed").exit_code == 1
    assert "already up to date" in invoke(runner, "seed", "--demo").output


def test_counts_read_as_english():
    assert [plural(n, noun) for n, noun in ((1, "patient"), (2, "patient"), (1_234, "appointment"),
                                                   (3, "speciality"), (0, "day"))] == [
        "1 patient", "2 patients", "1,234 appointments", "3 specialities", "0 days"]


def test_a_port_in_use_fails_before_the_serving_banner(db_path, tmp_path):
    agenda.open_database(db_path).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = subprocess.run(agenda_command("run", "--db", str(db_path), "--port", str(taken.getsockname()[1])),
                                capture_output=True, text=True, timeout=60,
                                env={"AGENDA_SECRET": SECRET, "PATH": "/usr/bin:/bin"})
    assert result.returncode == 1, result.stderr
    assert "cannot listen" in result.stderr and "serving" not in result.stderr and "Traceback" not in result.stderr
