"""A non-editable install gives a working `agenda` command and every file the code reads ("Files that
ship"): the desk's templates and stylesheet as package data, schema.sql, openapi.json and the demo
seed as data files, all by setup.cfg's globs. This builds the wheel, installs it into a fresh
virtualenv, runs the installed command from outside the checkout and renders every desk page. No network: the wheel is built without build isolation and
the fresh env borrows this env's dependencies through a .pth file, which comes after
the env's own site-packages, so the installed agenda.py is the one imported.
"""

import os
import re
import site
import subprocess
import sys
import venv
from pathlib import Path

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
    where = run(python, "-c", "import agenda; from _agenda.store import data_file_path, schema_path; print(agenda.__file__);"
                " print(schema_path()); print(data_file_path('openapi.json'))", cwd=work)
    module_file, schema_file, openapi_file = where.split()
    assert all(path.startswith(str(env_dir)) for path in (module_file, schema_file, openapi_file)), where

    agenda_command = env_dir / "bin" / "agenda"
    assert "agenda, version" in run(agenda_command, "--version", cwd=work)
    output = run(agenda_command, "seed", "--demo", "--db", work / "clinic.db", cwd=work)  # the installed demo seed
    assert "loaded" in output
    (work / "pages.py").write_text(EVERY_PAGE, encoding="utf-8")
    rendered = run(python, "pages.py", env_dir, cwd=work).split()
    assert rendered[-1] == "rendered" and len(rendered) == 18, rendered


# Run by the fresh env's Python: every desk page and the API's document, from the installed copy only.
EVERY_PAGE = """
import datetime as dt, sys
import _agenda, agenda, webtest
assert all(path.startswith(sys.argv[1]) for path in (agenda.__file__, _agenda.__file__)), _agenda.__file__
app = agenda.create_app("clinic.db", "a-long-enough-secret")
clinic, accounts = app.clinic, app.accounts
accounts.add_staff("ana", "correct horse battery", role="admin")
doctor = clinic.doctors()[0]
free = clinic.availability(doctor_id=doctor["id"], last=clinic.today() + dt.timedelta(days=30))[0]
patient = clinic.register_patient({"name": "Ana", "nif": "12345678Z"}, source="cli")
booked = clinic.book(day=free.date, time_text=free.time, doctor_id=doctor["id"], patient_id=patient, source="cli")
desk = webtest.TestApp(app)
login = desk.get("/desk/login").forms[0]
login["name"], login["password"] = "ana", "correct horse battery"
assert login.submit().status_int == 303
slot = f"doctorId={doctor['id']}&date={free.date_text}&time={free.time}&centerId={free.center_id}"
for page in ["/desk/login", f"/desk/day?date={free.date_text}&centerId={free.center_id}", f"/desk/book?{slot}",
             f"/desk/appointments/{booked}", "/desk/patients", f"/desk/patients/{patient}", "/desk/closures",
             f"/desk/patients/{patient}/access", f"/desk/patients/{patient}/copy", f"/desk/patients/{patient}/erase",
             "/desk/doctors", "/desk/week", "/desk/rooms", "/desk/calls", "/desk/waitlist", "/desk/report", "/desk/desk.css"]:
    answer = desk.get(page)
    assert answer.status_int == 200 and len(answer.body) > 200, page
    print(page)
assert desk.get("/desk/nowhere", status=404).status_int == 404
assert webtest.TestApp(app).get("/openapi.json").json["openapi"] == "3.1.0"
print("rendered")
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
