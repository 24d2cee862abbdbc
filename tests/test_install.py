"""A non-editable install gives a working `agenda` command, schema.sql and openapi.json included.

A top-level module carries no package data, so both ship as data files; this
builds the wheel, installs it into a fresh virtualenv, and runs the installed command
from outside the checkout. No network: the wheel is built without build isolation and
the fresh env borrows this env's dependencies through a .pth file, which comes after
the env's own site-packages, so the installed agenda.py is the one imported.
"""

import os
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


def test_an_installed_wheel_carries_schema_sql_and_runs(tmp_path):
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
    where = run(python, "-c", "import agenda; print(agenda.__file__); print(agenda.schema_path());"
                " print(agenda.data_file_path('openapi.json'))", cwd=work)
    module_file, schema_file, openapi_file = where.split()
    assert all(path.startswith(str(env_dir)) for path in (module_file, schema_file, openapi_file)), where

    agenda_command = env_dir / "bin" / "agenda"
    assert "agenda, version" in run(agenda_command, "--version", cwd=work)
    output = run(agenda_command, "seed", ROOT / "seed" / "catalogs.csv", "--db", work / "clinic.db", cwd=work)
    assert "loaded" in output


def test_the_readme_quick_start_is_two_command_lines_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    run_demo, run_tests = block.strip().splitlines()
    assert "agenda seed seed/catalogs.csv" in run_demo and "agenda run" in run_demo
    assert "pytest" in run_tests
    # CI runs the very line, with skips for a missing tool turned into failures
    ci_line = run_tests.replace(".venv/bin/python -m pytest", "AGENDA_NO_SKIP=1 .venv/bin/python -m pytest")
    assert ci_line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
