"""A non-editable install gives a working `agenda` command and every file the code reads ("Files that
ship"): the desk's templates and stylesheet as package data, schema.sql, openapi.json and the demo
seed as data files, all by setup.cfg's globs. This builds the wheel, installs it into a fresh
virtualenv, runs the installed command from outside the checkout and renders every page of the desk's
route table, and so every template the package holds, each read from the installed copy. No network: the
wheel is built without build isolation and the fresh env borrows this env's dependencies through a .pth
file, which comes after the env's own site-packages, so the installed agenda.py is the one imported.
"""

import json
import os
import re
import site
import subprocess
import sys
import venv
from pathlib import Path

import edges

ROOT = Path(__file__).resolve().parent.parent


def run(*args, cwd=None):
    result = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": ""})
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_an_installed_wheel_carries_every_file_the_code_reads_and_renders_every_desk_page(tmp_path):
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
        "-w", wheels, ROOT)
    wheel, = wheels.glob("agenda-*.whl")

    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel)
    env_site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").strip())
    (env_site / "borrowed_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    where = run(python, "-c", "import agenda; from _agenda.storage.shipped import data_file_path, schema_path;"
                " print(agenda.__file__); print(schema_path()); print(data_file_path('openapi.json'))", cwd=work)
    module_file, schema_file, openapi_file = where.split()
    assert all(path.startswith(str(env_dir)) for path in (module_file, schema_file, openapi_file)), where

    agenda_command = env_dir / "bin" / "agenda"
    assert "agenda, version" in run(agenda_command, "--version", cwd=work)
    output = run(agenda_command, "seed", "--demo", "--db", work / "clinic.db", cwd=work)  # the installed demo seed
    assert "loaded" in output
    (work / "pages.py").write_text(EVERY_PAGE, encoding="utf-8")
    (work / "pages.json").write_text(json.dumps(list(PAGES.values())), encoding="utf-8")
    said = run(python, "pages.py", env_dir, cwd=work)
    shown = json.loads([line for line in said.splitlines() if line.startswith('{"pages"')][-1])
    assert shown["pages"] == list(PAGES.values())
    unread = {f"_agenda/desk/templates/{name}" for name in edges.TEMPLATES} - set(shown["read"])
    assert not unread, "templates no page rendered: render each once in EVERY_PAGE"
    assert all(path.startswith(str(env_dir)) for path in shown["read"].values()), shown["read"]


def test_every_page_of_the_desk_has_its_address_to_be_rendered_at():
    pages = {route.key for route in edges.DESK_ROUTES if route.method == "GET"}
    assert not pages - set(PAGES), "GET routes of the desk with no address in PAGES"
    assert not set(PAGES) - pages, "addresses in PAGES of no GET route of the desk"


# Each page of the desk (each of its GET routes): the address it is read at from the seeded clinic.
PAGES = {
    ("GET", "/desk"): "/desk",
    ("GET", "/desk/desk.css"): "/desk/desk.css",
    ("GET", "/desk/desk.js"): "/desk/desk.js",
    ("GET", "/desk/drag.js"): "/desk/drag.js",
    ("GET", "/desk/login"): "/desk/login",
    ("GET", "/desk/kept/<kept>"): "/desk/kept/{kept}",
    ("GET", "/desk/version"): "/desk/version",
    ("GET", "/desk/day"): "/desk/day?date={date}&centerId={center}",
    ("GET", "/desk/week"): "/desk/week",
    ("GET", "/desk/month"): "/desk/month",
    ("GET", "/desk/rooms"): "/desk/rooms",
    ("GET", "/desk/calls"): "/desk/calls",
    ("GET", "/desk/waiting"): "/desk/waiting?date={date}&centerId={center}",
    ("GET", "/desk/waitlist"): "/desk/waitlist",
    ("GET", "/desk/book"): "/desk/book?{slot}",
    ("GET", "/desk/appointments/<appointment_id:int>"): "/desk/appointments/{booked}",
    ("GET", "/desk/patients"): "/desk/patients",
    ("GET", "/desk/patients/new"): "/desk/patients/new",
    ("GET", "/desk/patients/<patient_id:int>"): "/desk/patients/{patient}",
    ("GET", "/desk/patients/<patient_id:int>/book"): "/desk/patients/{patient}/book",
    ("GET", "/desk/patients/<patient_id:int>/access"): "/desk/patients/{patient}/access",
    ("GET", "/desk/access"): "/desk/access",
    ("GET", "/desk/patients/<patient_id:int>/copy"): "/desk/patients/{patient}/copy",
    ("GET", "/desk/patients/<patient_id:int>/erase"): "/desk/patients/{patient}/erase",
    ("GET", "/desk/closures"): "/desk/closures",
    ("GET", "/desk/closures/<closure_id:int>/remove"): "/desk/closures/{closure}/remove",
    ("GET", "/desk/doctors"): "/desk/doctors",
    ("GET", "/desk/report"): "/desk/report",
    ("GET", "/desk/verify"): "/desk/verify",
}

# Run by the fresh env's Python: every desk page of pages.json, a series' preview (the one page only a form
# shows), the error page and the API's document, from the installed copy only; then, as JSON, the pages
# rendered and every shipped file read, with where it was read from.
EVERY_PAGE = """
import datetime as dt, json, re, sys
import _agenda, _agenda.storage.shipped, agenda, webtest
from _agenda.domain.availability import availability
from _agenda.domain.booking import Visit
from _agenda.domain.changes import book_appointment
from _agenda.domain.closures import add_closure
from _agenda.domain.doctors import doctors_with_hours
from _agenda.domain.registry import register_patient
assert all(path.startswith(sys.argv[1]) for path in (agenda.__file__, _agenda.__file__)), _agenda.__file__
read, found = {}, _agenda.storage.shipped.data_file_path
def recorded(name):
    read[name] = str(found(name))
    return found(name)
_agenda.storage.shipped.data_file_path = recorded
app = agenda.create_app("clinic.db", "a-long-enough-secret")
clinic, accounts = app.clinic, app.accounts
accounts.add_staff("ana", "correct horse battery", role="admin")
doctor = doctors_with_hours(clinic)[0]
free = availability(clinic, doctor_id=doctor["id"], first=clinic.today() + dt.timedelta(days=2),  # past the link's
                    last=clinic.today() + dt.timedelta(days=30))[0]  # notice, whatever the hour the test runs at
patient = register_patient(clinic, {"name": "Ana", "nif": "12345678Z"}, source="cli")
booked = book_appointment(clinic, Visit(patient, doctor["id"]), day=free.date, time_text=free.time, source="cli")
closure = add_closure(clinic, doctor_id=doctor["id"], first=free.date + dt.timedelta(days=60), reason="Congreso")["id"]
desk = webtest.TestApp(app)
login = desk.get("/desk/login").forms[0]
login["name"], login["password"] = "ana", "correct horse battery"
assert login.submit().status_int == 303
slot = f"doctorId={doctor['id']}&date={free.date_text}&time={free.time}&centerId={free.center_id}"
names = {"date": free.date_text, "center": free.center_id, "slot": slot, "booked": booked, "patient": patient,
         "closure": closure, "kept": accounts.keep_form("ana", "/desk/book", [["patientId", str(patient)]])}
shown = []
for address in json.load(open("pages.json", encoding="utf-8")):
    answer = desk.get(address.format(**names)).maybe_follow()
    assert answer.status_int == 200, address
    assert len(answer.body) > 200 or answer.content_type == "application/json", address
    shown.append(address)
csrf = re.search(r'name="csrf" value="([^"]+)"', desk.get("/desk/day").text)[1]
series = desk.post("/desk/series", {"doctorId": doctor["id"], "date": free.date_text, "time": free.time,
                                    "centerId": free.center_id, "patientId": patient, "n": "1", "unit": "w",
                                    "count": "2", "csrf": csrf})
assert series.status_int == 200 and len(series.body) > 200
assert 'src="data:image/svg+xml' in desk.post(f"/desk/appointments/{booked}/card", {"csrf": csrf}).text
assert desk.get("/desk/nowhere", status=404).status_int == 404
assert webtest.TestApp(app).get("/openapi.json").json["openapi"] == "3.1.0"
from _agenda.domain.links import new_link
from _agenda.words.pages import visit_view
from _agenda.patient.messages import written
from _agenda.domain.appointments import visits_told
with clinic.db.transaction() as conn:
    token, stop = (new_link(conn, booked, made_for, clinic.clock()) for made_for in ("message", "stop"))
patient = webtest.TestApp(app)
for address in (f"/cita/{token}", f"/cita/baja/{stop}", "/cita/cita.css"):
    assert patient.get(address).status_int == 200, address
assert "Su cita" in patient.get("/cita/" + "x" * 32, status=404).text
asked = patient.post(f"/cita/{token}/anular", {"csrf": re.search(r'name="csrf" value="([^"]+)"', patient.get(
    f"/cita/{token}").text)[1]})
assert 'name="seguro"' in asked.text
visit = visit_view(visits_told(clinic.conn(), [booked])[0], clinic.tz)
view = {"kind": "confirmation", "language": None, "clinic": "Clínica", "first_name": "Ana", "visit": visit,
        "series": None, "shows": "doctor", "link": "https://x/cita/t", "stop_link": "https://x/cita/baja/s",
        "first": True, "sequence": 0, "now": visit["starts"], "uids": {visit["id"]: "u@x"}}
assert "<table" in written(view)["html"]
from _agenda.domain.web_requests import new_token
web = webtest.TestApp(agenda.create_app("clinic.db", "a-long-enough-secret", web_booking="on", web_privacy="Datos",
                                        public_url="https://citas.example.es"))
assert "reservar.css" in web.get("/reservar").text and web.get("/reservar/reservar.css").status_int == 200
times = web.get("/reservar?centro=CENTRO&especialidad=MG&medico=MARTIN&tipo=MG-REVISION").forms[0]
times["hueco"] = times.fields["hueco"][0].options[0][0]
details = times.submit().forms[0]
for name, value in {"nombre": "Eva", "apellidos": "Sanz", "nacimiento": "01/02/1990", "nif": "11111111H",
                    "telefono": "612345678", "correo": "eva@example.es", "privacidad": True}.items():
    details[name] = value
assert "eva@example.es" not in details.submit().text
with clinic.db.transaction() as conn:
    token = new_token(conn, conn.execute("SELECT max(id) FROM appointments").fetchone()[0])
assert web.get(f"/reservar/confirmar/{token}").forms[0].method.upper() == "POST"
print(json.dumps({"pages": shown, "read": read}))
"""


def test_the_readme_quick_start_is_two_command_lines_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    run_demo, run_tests = block.strip().splitlines()
    assert "agenda seed seed/catalogs.csv" in run_demo and "agenda run" in run_demo
    assert "pytest" in run_tests
    # CI runs the very line, with skips for a missing tool turned into failures
    ci_line = run_tests.replace(".venv/bin/python -m pytest", "AGENDA_NO_SKIP=1 .venv/bin/python -m pytest")
    assert ci_line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_the_readme_stays_under_16_kb_and_every_doc_it_links_exists():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) < 16_000
    for link in re.findall(r"\]\(([^)#]+)\)", readme):
        assert (ROOT / link).exists(), link
