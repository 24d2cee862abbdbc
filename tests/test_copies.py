"""Copies of the clinic a command makes (docs/design.md, "Backups and restore", "Encrypted backups"): no clear
copy outlives a kill; the copies kept before an upgrade or a restore are sealed to the backup recipients,
listed by `agenda status` with their age and removed by `agenda retention run`; a key others can read is
refused. Kills are real: a child process, SIGKILL at the moment the clear copy exists."""

import datetime as dt
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

import agenda
from _agenda.storage.replication import litestream_binary
from _agenda.storage.shipped import read_schema, schema_sections
from _agenda.storage.copies import scratch_folder
from conftest import MONDAY, ROOT, SECRET, Clock, Server, agenda_command, seed, valid_dni, write_csv, CLINIC_CSV

AGE_MAGIC = b"age-encryption.org/v1"
NEWEST = schema_sections(read_schema())[-1][0]


def age_key(tmp_path, name="admin"):
    """A new age identity in a key file, mode 0600 as age-keygen makes it; (key file, recipient)."""
    pyrage = pytest.importorskip("pyrage", reason="pyrage is the `encrypt` extra; '.[test]' installs it")
    identity = pyrage.x25519.Identity.generate()
    key = tmp_path / f"{name}.key"
    key.write_text(f"# public key: {identity.to_public()}\n{identity}\n")
    key.chmod(0o600)
    return key, str(identity.to_public())


def clinic(tmp_path, patients=3, name="clinic.db"):
    """The test clinic with a few patients, written through the library."""
    db_path = tmp_path / name
    seed(db_path, write_csv(tmp_path, CLINIC_CSV))
    conn = agenda.connect(db_path)
    with agenda.transaction(conn):
        for n in range(1, patients + 1):
            conn.execute("INSERT INTO patients (name, surname, nif, created_at) VALUES (?, 'Secreto', ?, 'x')",
                         (f"Paciente{n}", valid_dni(n)))
    conn.close()
    return db_path


def patients(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT count(*) FROM patients").fetchone()[0]
    finally:
        conn.close()


def invoke(db_path, *args, now=MONDAY, **env):
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_BACKUP_RECIPIENTS": None,
                            "AGENDA_KEEP_COPIES_DAYS": None, **env})
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(now)}, catch_exceptions=False)


# A command run in a child process that stops, announcing it, just before or just after one of agenda's
# functions: the moment a test kills it.
PAUSING = """
import sys, time
sys.path.insert(0, {root!r})
import {module} as home
original = home.{name}

def paused(*args, **kwargs):
    if {after}:
        result = original(*args, **kwargs)
    print("PAUSED", flush=True)
    time.sleep(120)
    return result if {after} else original(*args, **kwargs)

home.{name} = paused
import agenda
agenda.cli(sys.argv[1:], prog_name="agenda")
"""


def killed_at(tmp_path, function, after, *args, env=None):
    """Run `agenda ARGS` in a child process paused before (or after) `function` ("module.name"); once it
    says so, look at what it holds open, then SIGKILL it. (its open files, what it printed)."""
    module, name = function.rsplit(".", 1)
    script = tmp_path / "pausing.py"
    script.write_text(PAUSING.format(module=module, name=name, after=after, root=str(ROOT)), encoding="utf-8")
    child_env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    child_env.update(env or {}, PYTHONUNBUFFERED="1")
    process = subprocess.Popen([sys.executable, str(script), *map(str, args)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=child_env, cwd=ROOT)
    try:
        lines, deadline = [], time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.strip() == "PAUSED":
                break
        assert lines and lines[-1].strip() == "PAUSED", "".join(lines)
        fd_folder = f"/proc/{process.pid}/fd"
        held = [os.readlink(f"{fd_folder}/{fd}") for fd in os.listdir(fd_folder)]
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    return held, "".join(lines)


def files_under(folder, db_path):
    """Every file under folder but the database's own (the file, its -wal and -shm)."""
    own = {db_path.name, f"{db_path.name}-wal", f"{db_path.name}-shm"}
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file() and path.name not in own)


def clear_copies(folder, db_path):
    """Every file under folder, but the database itself, that holds a SQLite database in clear."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and path.name not in (db_path.name, f"{db_path.name}-wal", f"{db_path.name}-shm"):
            with open(path, "rb") as file:
                if file.read(16) == b"SQLite format 3\x00":
                    found.append(str(path.relative_to(folder)))
    return found


def test_a_sealed_backup_killed_while_sealing_leaves_no_clear_copy_anywhere(tmp_path):
    """The copy is checked and sealed from memory: at the moment it is sealed the process holds no file but
    the database's own, and killed there it leaves nothing, beside the database or in DEST."""
    db_path = clinic(tmp_path)
    _, recipient = age_key(tmp_path)
    dest = tmp_path / "usb"
    dest.mkdir()
    before = files_under(tmp_path, db_path)
    held, said = killed_at(tmp_path, "_agenda.storage.copies.seal_stream", False, "backup", f"{dest}/", "--db", db_path,
                           env={"AGENDA_BACKUP_RECIPIENTS": recipient})
    ours = [target for target in held if target.startswith(str(tmp_path))]
    assert set(ours) <= {str(db_path), f"{db_path}-wal", f"{db_path}-shm"}, ours
    assert not [target for target in held if "(deleted)" in target or "memfd" in target], held
    assert files_under(tmp_path, db_path) == sorted(before + ["pausing.py"]) and not list(dest.iterdir())
    assert clear_copies(tmp_path, db_path) == []
    made = invoke(db_path, "backup", f"{dest}/", AGENDA_BACKUP_RECIPIENTS=recipient)  # the next night's
    assert made.exit_code == 0 and "Removed" not in made.output, made.output
    (sealed,) = dest.iterdir()
    assert sealed.read_bytes().startswith(AGE_MAGIC) and b"Secreto" not in sealed.read_bytes()


def test_a_restore_killed_midway_leaves_its_copy_only_until_the_next_command_which_says_so(tmp_path):
    """A sealed backup is opened in memory only; the database being put in place is the one clear file a
    restore must write, in a scratch folder beside the database: killed before it is in place, the next
    command removes that folder and says so, and the database is as it was."""
    db_path = clinic(tmp_path)
    key, recipient = age_key(tmp_path)
    assert invoke(db_path, "backup", tmp_path / "monday.db.age", "--encrypt-to", recipient).exit_code == 0
    conn = agenda.connect(db_path)
    with agenda.transaction(conn):
        conn.execute("INSERT INTO patients (name, nif, created_at) VALUES ('Nuevo', ?, 'x')", (valid_dni(40),))
    conn.close()
    held, _ = killed_at(tmp_path, "_agenda.storage.database.copy_database", True, "restore", tmp_path / "monday.db.age",
                        "--identity", key, "--yes", "--db", db_path)
    assert not [target for target in held if "(deleted)" in target], held
    (left,) = [path for path in tmp_path.iterdir() if path.name.startswith(f".{db_path.name}.scratch-")]
    assert clear_copies(tmp_path, db_path) == [f"{left.name}/restoring.db"]  # the only one, and only till...
    assert patients(db_path) == 4  # nothing replaced
    status = invoke(db_path, "status")
    assert status.exit_code == 0, status.output
    assert f"Removed {left}: a clear copy of the clinic left by a command that was killed." in status.stderr
    assert not left.exists() and clear_copies(tmp_path, db_path) == []


def test_a_living_commands_scratch_folder_is_left_alone_and_an_older_versions_leftovers_go(tmp_path):
    db_path = clinic(tmp_path)
    older = tmp_path / ".backup-k3j9x0qa"  # what a killed encrypted backup of an earlier version left
    older.mkdir()
    (older / "backup.db").write_bytes((tmp_path / db_path.name).read_bytes())
    with scratch_folder(db_path) as living:
        (living / "restoring.db").write_bytes(b"SQLite format 3\x00")
        result = invoke(db_path, "day", "24/11/2026")
        assert result.exit_code == 0, result.output
        assert living.exists() and str(living) not in result.output
    assert not living.exists()  # removed by its owner on the way out
    assert not older.exists() and f"Removed {older}: a clear copy" in result.stderr


@pytest.mark.skipif(litestream_binary() is None, reason="litestream is not installed")
def test_a_replica_restore_killed_midway_leaves_its_copy_only_until_the_next_command(tmp_path):
    db_path = clinic(tmp_path, name="primary.db")
    replica = tmp_path / "replica"
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    env.update(AGENDA_SECRET=SECRET, PYTHONUNBUFFERED="1", TMPDIR=str(tmp_path))
    server = Server(agenda_command("run", "--db", str(db_path), "--port", "0", "--replica", str(replica)), env)
    try:
        deadline = time.monotonic() + 120  # Litestream's first files, a minute or more on a busy machine
        while time.monotonic() < deadline and not any(path.is_file() for path in replica.rglob("*")):
            time.sleep(0.2)
    finally:
        assert server.terminate() == 0, server.log()
    target = tmp_path / "clinic.db"
    held, said = killed_at(tmp_path, "_agenda.cli.backups.as_it_is", True, "restore", "--from-replica",
                           replica, "--yes", "--db", target)
    (left,) = [path for path in tmp_path.iterdir() if path.name.startswith(".clinic.db.scratch-")]
    assert clear_copies(left, target) == ["newest.db"] and not target.exists()
    result = invoke(target, "restore", "--from-replica", replica, "--yes")
    assert result.exit_code == 0, result.output
    reminder = result.output.index("point the service at a NEW replica path")  # its old history runs past this state
    assert reminder < result.output.index("Start the service again")
    assert f"Removed {left}: a clear copy" in result.stderr and not left.exists()
    assert patients(target) == 3


def test_restore_refuses_a_key_others_can_read_as_run_refuses_such_a_secret(tmp_path):
    db_path = clinic(tmp_path)
    key, recipient = age_key(tmp_path)
    assert invoke(db_path, "backup", tmp_path / "copy.db.age", "--encrypt-to", recipient).exit_code == 0
    key.chmod(0o644)
    before = db_path.read_bytes()
    refused = invoke(db_path, "restore", tmp_path / "copy.db.age", "--identity", key, "--yes")
    assert refused.exit_code == 1 and "can be read by others (mode 644)" in refused.output
    assert f"chmod 600 {key}" in refused.output and len(refused.output.splitlines()) == 1
    assert db_path.read_bytes() == before and not list(tmp_path.glob("clinic.db.before-*"))


def old_database(tmp_path, version=NEWEST - 1, name="clinic.db"):
    """A database at an older schema with one patient."""
    db_path = tmp_path / name
    conn = agenda.connect(db_path)
    conn.execute("PRAGMA journal_mode = WAL")
    agenda.migrate(conn, read_schema().split(f"-- version {version + 1}")[0])
    with agenda.transaction(conn):
        conn.execute("INSERT INTO patients (name, surname, nif, created_at) VALUES ('Ana', 'Secreto', ?, 'x')",
                     (valid_dni(7),))
    conn.close()
    return db_path


def kept_at(path, moment):
    os.utime(path, (moment.timestamp(), moment.timestamp()))


def test_the_copies_kept_before_an_upgrade_and_a_restore_are_sealed_listed_and_removed_after_30_days(tmp_path):
    db_path = old_database(tmp_path)
    key, recipient = age_key(tmp_path)
    upgraded = invoke(db_path, "migrate", AGENDA_BACKUP_RECIPIENTS=recipient)
    aside = tmp_path / f"clinic.db.before-schema-{NEWEST - 1}-to-{NEWEST}.age"
    assert upgraded.exit_code == 0 and f"kept as {aside}." in upgraded.output, upgraded.output
    assert aside.read_bytes().startswith(AGE_MAGIC) and b"Secreto" not in aside.read_bytes()
    assert aside.stat().st_mode & 0o077 == 0 and clear_copies(tmp_path, db_path) == []
    opened = invoke(tmp_path / "opened.db", "restore", aside, "--identity", key, "--yes")  # the way back, by hand
    assert opened.exit_code == 0 and f"schema version {NEWEST - 1}: `agenda migrate" in opened.output, opened.output
    assert patients(tmp_path / "opened.db") == 1
    assert invoke(db_path, "backup", tmp_path / "monday.db").exit_code == 0
    restored = invoke(db_path, "restore", tmp_path / "monday.db", "--yes", AGENDA_BACKUP_RECIPIENTS=recipient)
    replaced = tmp_path / f"clinic.db.before-restore-{MONDAY:%Y%m%d-%H%M%S}.age"
    assert restored.exit_code == 0 and f"kept as {replaced} (sealed)" in restored.output, restored.output
    assert replaced.read_bytes().startswith(AGE_MAGIC) and clear_copies(tmp_path, db_path) == [
        "monday.db", "opened.db"]  # the backup and the copy asked for; nothing the commands made for themselves
    kept_at(aside, MONDAY - dt.timedelta(days=31))
    kept_at(replaced, MONDAY - dt.timedelta(days=2))
    status = invoke(db_path, "status").output
    assert f"Kept copy:    {aside.name} (kept 31 days ago, sealed; due: `agenda retention run` removes it)" in status
    assert f"Kept copy:    {replaced.name} (kept 2 days ago, sealed; removed by `agenda retention run` after 30 " \
           "days)" in status
    swept = invoke(db_path, "retention", "run")
    assert swept.exit_code == 0 and f"Removed {aside}, kept more than 30 days" in swept.output, swept.output
    assert not aside.exists() and replaced.exists()
    assert invoke(db_path, "retention", "run", AGENDA_KEEP_COPIES_DAYS="1").exit_code == 0
    assert not replaced.exists() and "Kept copy" not in invoke(db_path, "status").output


def test_without_backup_recipients_the_kept_copies_are_clear_and_status_says_so(tmp_path):
    db_path = old_database(tmp_path)
    assert invoke(db_path, "migrate").exit_code == 0
    aside = tmp_path / f"clinic.db.before-schema-{NEWEST - 1}-to-{NEWEST}"
    assert aside.read_bytes().startswith(b"SQLite format 3") and aside.stat().st_mode & 0o077 == 0
    kept_at(aside, MONDAY - dt.timedelta(hours=3))
    assert f"{aside.name} (kept today, NOT sealed;" in invoke(db_path, "status").output
    assert "nothing to do" in invoke(db_path, "migrate").output
    assert len(list(tmp_path.glob("clinic.db.before-*"))) == 1
