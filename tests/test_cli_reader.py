"""The command line's reader is the person logged in (docs/design.md, "The command line's reader"):
the login uid the system keeps, else the real uid, named by the system's accounts; never a
variable of the environment. The system's file is injected here; a real `setpriv` runs the CLI as
another uid where the tests run as root."""

import json
import os
import pwd
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import agenda
import _agenda.cli.root
from conftest import MONDAY, Clock, agenda_command

UNSET = "4294967295"  # what /proc/self/loginuid holds when no one logged in (systemd's services)
LIES = {"USER": "mallory", "LOGNAME": "mallory", "SUDO_USER": "mallory", "USERNAME": "mallory"}


def named_uid_other_than(uid):
    """A uid the system's accounts name, other than `uid`, and its name."""
    account = next(account for account in pwd.getpwall() if account.pw_uid != uid)
    return account.pw_uid, account.pw_name


def unnamed_uid(start=54321):
    """A uid no account of this system names."""
    taken = {account.pw_uid for account in pwd.getpwall()}
    return next(uid for uid in range(start, 4294967294) if uid not in taken)


def name_of(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid:{uid}"


def export_reader(db_path, patient, env=None):
    """`agenda patient export PATIENT` in this process; the reader the copy records for this export."""
    result = CliRunner(env={"AGENDA_DB": str(db_path), **(env or {})}).invoke(
        agenda.cli, ["patient", "export", str(patient)], obj={"now": Clock(MONDAY)})
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["accesses"][-1]["reader"]


@pytest.fixture
def loginuid(tmp_path, monkeypatch):
    """write(text or None): what the system's login uid file holds for the CLI (None: no such file)."""
    path = tmp_path / "loginuid"
    monkeypatch.setattr(_agenda.cli.root, "LOGINUID", path)

    def write(text):
        path.unlink(missing_ok=True)
        if text is not None:
            path.write_text(text, encoding="ascii")
    return write


@pytest.mark.parametrize("env", [{}, LIES], ids=["plain", "lying-environment"])
def test_the_reader_is_the_login_uid_the_system_keeps_whatever_the_environment_says(api, db_path, loginuid, env):
    uid, name = named_uid_other_than(os.getuid())
    loginuid(str(uid))
    assert export_reader(db_path, api.new_patient(), env) == f"cli:{name}" != "cli:mallory"


@pytest.mark.parametrize("held", [UNSET, None, "", "not a uid\n", "-1"], ids=["unset", "missing", "empty", "garbage",
                                                                              "negative"])
@pytest.mark.parametrize("env", [{}, LIES], ids=["plain", "lying-environment"])
def test_without_a_login_uid_the_reader_is_the_real_uid(api, db_path, loginuid, held, env):
    loginuid(held)
    assert export_reader(db_path, api.new_patient(), env) == f"cli:{name_of(os.getuid())}"


def test_a_uid_no_account_names_is_recorded_by_its_number(api, db_path, loginuid):
    uid = unnamed_uid()
    loginuid(f"{uid}\n")
    assert export_reader(db_path, api.new_patient(), LIES) == f"cli:uid:{uid}"


# A real process as another uid. setpriv changes the real uid but never the login uid, which the
# kernel keeps from the login on: so what it shows depends on this process's own login uid.

def own_loginuid():
    """This process's login uid, or None when unset or unknown (no login: CI, a service, a container)."""
    try:
        kept = int(Path("/proc/self/loginuid").read_text())
    except (OSError, ValueError):
        return None
    return None if kept >= int(UNSET) else kept


@pytest.fixture
def run_as(api, db_path):
    """run_as(uid, preexec_fn=None): the reader `agenda patient export` records when a real process
    whose real uid is `uid` runs it, in an environment naming someone else, on a copy of the test
    clinic in a folder that uid owns."""
    if os.geteuid() != 0:
        pytest.skip("runs the CLI as another uid with setpriv, which needs root (CI runs as root)")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    patient = api.new_patient()
    folder = Path(tempfile.mkdtemp(prefix="agenda-reader-"))  # pytest's own folders are root's alone
    source, copy = sqlite3.connect(db_path), sqlite3.connect(folder / "clinic.db")
    try:
        source.backup(copy)
    finally:
        source.close()
        copy.close()
    env = {**{key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}, **LIES,
           "HOME": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}

    def run(uid, preexec_fn=None):
        for path in (folder, *folder.iterdir()):
            os.chown(path, uid, uid)
        become = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
        if subprocess.run(become + agenda_command("--version"), env=env, capture_output=True, timeout=60).returncode:
            become = ["setpriv", f"--ruid={uid}", f"--rgid={uid}", "--clear-groups", "--"]  # checkout unreachable
            # to that uid (a folder of mode 700): only the real uid changes, the effective one stays root's, and the
            # rule reads the real one; util-linux 2.38 refuses --rgid without a groups option
        done = subprocess.run(become + agenda_command("patient", "export", str(patient), "--db", str(folder / "clinic.db")),
                              env=env, capture_output=True, text=True, timeout=60, preexec_fn=preexec_fn)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["accesses"][-1]["reader"]
    yield run
    shutil.rmtree(folder)


def test_a_real_process_run_as_another_uid_is_recorded_as_the_person_logged_in(run_as):
    uid = unnamed_uid()
    person = own_loginuid()  # none in CI: then the real uid setpriv gave; in an admin's session, that admin
    assert run_as(uid) == f"cli:{name_of(uid if person is None else person)}"


def test_an_admin_logged_in_then_running_it_as_another_account_is_recorded_as_the_admin(run_as):
    admin, account = named_uid_other_than(0)[0], unnamed_uid()
    probe = subprocess.run(["sh", "-c", f"echo {admin} > /proc/self/loginuid"], capture_output=True, timeout=10)
    if probe.returncode != 0:
        pytest.skip("this process may not set a login uid (it needs CAP_AUDIT_CONTROL and a mutable login uid)")

    def log_in():  # what pam_loginuid does at a login; sudo, su and setpriv then keep it
        Path("/proc/self/loginuid").write_text(str(admin))
    assert run_as(account, preexec_fn=log_in) == f"cli:{name_of(admin)}"
