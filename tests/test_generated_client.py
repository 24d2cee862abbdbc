"""A Python client generated from the served openapi.json drives the caller's whole flow.

openapi-python-client (PyPI, the `test` extra) writes the client once per module from
`GET /openapi.json` of a real `agenda run`, offline, with no post hooks (no formatter to
run) and --fail-on-warning, so a part of the document it cannot read fails here. Each test
then runs the flow through it against `agenda run --signature-scheme request` and `body`,
signing every request in an httpx event hook over the exact bytes sent (design.md, "Signatures").
"""

import datetime as dt
import hashlib
import hmac
import importlib
import json
import os
import pkgutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import EVERY_DAY_CSV, SECRET, Server, agenda_command, days_ahead, valid_dni, write_csv

try:
    import openapi_python_client  # noqa: F401  (run as python -m openapi_python_client; brings httpx)
except ImportError as error:  # the test extra installs it; a bare environment says why it skips
    pytest.skip(f"openapi-python-client is not installed ({error}); pip install '.[test]'",
                allow_module_level=True)

PACKAGE = "agenda_client"


def signer(scheme, secret=SECRET):
    """An httpx request hook: X-Signature over the request as it leaves ("Signatures")."""

    def sign(request):
        body = request.read()
        message = body if scheme == "body" else (
            request.method.encode() + b"\n" + request.url.raw_path + b"\n" + body)
        request.headers["X-Signature"] = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()

    return sign


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The generated package, imported, every module of it: the package (its Client), its
    models, its types and its operations by name. Written from the document a real server
    serves, once for the module."""
    folder = tmp_path_factory.mktemp("generated_client")
    db_path = folder / "agenda.db"
    subprocess.run(agenda_command("seed", str(write_csv(folder, EVERY_DAY_CSV)), "--db", str(db_path)),
                   check=True, capture_output=True, timeout=60)
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    env.update(AGENDA_SECRET=SECRET, PYTHONUNBUFFERED="1")
    server = Server(agenda_command("run", "--db", str(db_path), "--port", "0"), env)
    try:
        config = folder / "config.json"
        config.write_text(json.dumps({"package_name_override": PACKAGE, "post_hooks": []}), encoding="utf-8")
        result = subprocess.run(
            [sys.executable, "-m", "openapi_python_client", "generate", "--url", server.url + "/openapi.json",
             "--meta", "none", "--config", str(config), "--output-path", str(folder / PACKAGE),
             "--fail-on-warning"],
            capture_output=True, text=True, timeout=300, cwd=folder)
    finally:
        server.terminate()
        server.stop()
    assert result.returncode == 0, result.stdout + result.stderr
    sys.path.insert(0, str(folder))
    try:
        package = importlib.import_module(PACKAGE)
        # every module, so that code the generator wrote wrong fails here and not in use
        modules = {name: importlib.import_module(name) for _, name, _ in
                   pkgutil.walk_packages(package.__path__, PACKAGE + ".")}
        operations = {name.rsplit(".", 1)[1]: module for name, module in modules.items()
                      if name.startswith(PACKAGE + ".api.") and hasattr(module, "sync_detailed")}
        yield SimpleNamespace(package=package, models=modules[PACKAGE + ".models"],
                              types=modules[PACKAGE + ".types"], operations=operations)
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_the_generated_client_has_every_operation(generated):
    assert set(generated.operations) == {"health", "get_open_api", "get_custom_config", "find_patient", "create_patient",
                          "get_availabilities", "list_appointments", "book_appointment",
                          "list_appointments_range", "get_appointment", "move_appointment",
                          "cancel_appointment", "confirm_appointment", "end_reminder_day"}


@pytest.mark.parametrize("scheme", ["request", "body"])
def test_the_callers_whole_flow_through_the_generated_client(generated, running, scheme):
    api, models = generated.operations, generated.models
    server = running("--signature-scheme", scheme)

    def client(signed_as=scheme):
        return generated.package.Client(base_url=server.url, raise_on_unexpected_status=True, timeout=20.0,
                                    httpx_args={"event_hooks": {"request": [signer(signed_as)]}})

    def call(operation, status, **arguments):
        with client() as caller:
            response = api[operation].sync_detailed(client=caller, **arguments)
        assert response.status_code == status, (operation, response.content)
        return response.parsed

    # the other scheme is refused: the server takes only the one it was started with
    other = "body" if scheme == "request" else "request"
    with client(other) as caller:
        refused = api["get_custom_config"].sync_detailed(client=caller)
    assert refused.status_code == 401 and refused.parsed.error.code.value == "INVALID_SIGNATURE"

    # catalogs
    config = call("get_custom_config", 200)
    assert [(doctor.id, doctor.speciality) for doctor in config.doctors.data] == [("MARTIN", "MG")]
    assert [center.id for center in config.centers.data] == ["C1"]

    # a new patient, looked up by NIF
    nif = valid_dni(31_415_926)
    with client() as caller:
        missing = api["find_patient"].sync_detailed(client=caller, nif=nif)
    assert missing.status_code == 404 and missing.parsed.error.code.value == "PATIENT_NOT_FOUND"
    created = call("create_patient", 201, body=models.NewPatient(
        name="Ana", nif=nif, surname="García López", birth_date="01/02/1980", phone="612 34 56 78"))
    patient = call("find_patient", 200, nif=nif)
    assert (patient.id, patient.name, patient.birth_date, patient.phone) == (
        created.patient_id, "Ana", "01/02/1980", "+34612345678")

    # availability, then the booking of its first slot
    first_day, second_day = days_ahead(2), days_ahead(3)
    slots = call("get_availabilities", 200, doctor_id="MARTIN", start_date=first_day, end_date=second_day).data
    assert [slot.time for slot in slots] == ["09:00", "09:30", "10:00", "10:30"] * 2
    slot = slots[0]
    booked = call("book_appointment", 201, body=models.NewAppointment(
        date=slot.date, time=slot.time, doctor_id=slot.doctor_id, patient_id=created.patient_id,
        speciality_id=slot.speciality_id, center_id=slot.center_id, reason="Revisión"))
    appointment_id = booked.appointment_id
    appointment = call("get_appointment", 200, appointment_id=appointment_id)
    assert (appointment.date, appointment.time, appointment.patient_id, appointment.center_ref) == (
        first_day, "09:00", created.patient_id, "C1")
    assert appointment.extra_data.status.value == "booked"

    # the day list and the range
    assert [item.appointment_id for item in call("list_appointments", 200, date=first_day).data] == [appointment_id]
    ranged = call("list_appointments_range", 200, dates=f"{first_day},,{second_day}").data
    assert [item.appointment_id for item in ranged] == [appointment_id]

    # moved to the next day, the id kept
    moved = call("move_appointment", 200, appointment_id=appointment_id,
                 body=models.Move(new_date=second_day, new_time="10:30"))
    assert moved.appointment_id == appointment_id
    assert call("list_appointments", 200, date=first_day).data == []

    # the reminder: confirmed, found by NIF and by phone
    assert call("confirm_appointment", 200, body=models.Confirmation(
        appointment_id=appointment_id, confirmed=True)).status.value == "confirmed"
    for search in ({"nif": nif}, {"phone": "+34612345678"}):
        found = call("list_appointments", 200, **search).data
        assert [(item.appointment_id, item.date, item.time, item.extra_data.status.value) for item in found] == [
            (appointment_id, second_day, "10:30", "confirmed")]

    # the cycle closed: a confirmed appointment is not touched; the same call again is "repeated"
    today = dt.date.today().strftime("%d/%m/%Y")
    reminder = models.ReminderDayEnd(voice_agent_config_id=f"reminders-{scheme}", date=second_day,
                                     dates=[second_day, ""], execution_date=today, center_id="C1",
                                     skip_appointment_ids=[])
    closed = call("end_reminder_day", 200, body=reminder)
    assert (closed.status, closed.processed, closed.repeated) == ("ok", 0, generated.types.UNSET)
    again = call("end_reminder_day", 200, body=reminder)
    assert (again.processed, again.repeated) == (0, True)

    # cancelled: gone from the lists, and 410 to read
    assert call("cancel_appointment", 204, appointment_id=appointment_id) is None
    gone = call("get_appointment", 410, appointment_id=appointment_id)
    assert gone.error.code.value == "APPOINTMENT_PREVIOUSLY_CANCELLED"
    assert call("list_appointments", 200, nif=nif).data == []
    assert "Traceback" not in server.log()
