"""Restore drills (docs/replication.md, "Restore drills"): `agenda replica check` restores the replica into a
private temporary file beside the database, checks it, compares its newest event with the live database,
removes it, prints one line, exits 1 on any problem, and `agenda status` shows the last result."""

import os
import signal
import sqlite3
import subprocess
from pathlib import Path

from conftest import agenda_command, send, valid_dni
from test_restore_walk_back import damage
from test_replication import clinic_db, litestream_pids, servers, wait_for  # noqa: F401 (fixtures)


def check(db_path, replica):
    return subprocess.run(agenda_command("replica", "check", "--replica", str(replica), "--db", str(db_path)),
                          capture_output=True, text=True, timeout=600)


def with_a_patient(servers, clinic_db, replica):
    """The clinic served and replicated, with acknowledgements, once it has registered a patient."""
    server = servers(clinic_db, "--replica", str(replica), "--ack-after-replication")
    wait_for(lambda: send(server.url, "GET", "/health")[0] == 200, message="the replica answers")
    assert send(server.url, "POST", "/patients", {"name": "Ana", "nif": valid_dni(3)})[0] == 201
    return server


def scratch(db_path):
    return [path for path in Path(db_path).parent.iterdir() if ".scratch-" in path.name]


def test_a_drill_beside_the_running_service_passes_removes_its_copy_and_is_shown_in_status(clinic_db, tmp_path,
                                                                                          servers):
    replica = tmp_path / "replica"
    server = with_a_patient(servers, clinic_db, replica)
    status = subprocess.run(agenda_command("status", "--db", str(clinic_db)), capture_output=True, text=True,
                            timeout=60).stdout
    assert "Last drill:   none yet: run `agenda replica check` daily" in status
    done = check(clinic_db, replica)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("replica check ok: file://") and done.stdout.count("\n") == 1
    assert "found unchanged in the live database" in done.stdout
    assert scratch(clinic_db) == []
    status = subprocess.run(agenda_command("status", "--db", str(clinic_db)), capture_output=True, text=True,
                            timeout=60).stdout
    assert "Last drill:" in status and ": ok, newest event" in status


def test_a_drill_of_a_replica_of_another_database_fails_and_says_so(clinic_db, tmp_path, servers):
    replica = tmp_path / "replica"
    server = with_a_patient(servers, clinic_db, replica)
    server.terminate()
    other = tmp_path / "other" / "clinic.db"
    other.parent.mkdir()
    source, conn = sqlite3.connect(clinic_db), sqlite3.connect(other)
    source.backup(conn)
    source.close()
    conn.execute("UPDATE events SET after = '{}' WHERE id = (SELECT max(id) FROM events)")
    conn.commit()
    conn.close()
    os.chmod(other, 0o600)
    done = check(other, replica)
    assert done.returncode == 1
    assert "replica check FAILED" in done.stderr and "not the same in the live database" in done.stderr
    assert scratch(other) == []
    assert "FAILED" in subprocess.run(agenda_command("status", "--db", str(other)), capture_output=True, text=True,
                                      timeout=60).stdout


def test_a_drill_of_a_replica_whose_newest_state_is_damaged_fails_naming_the_restore_that_looks_back(
        clinic_db, tmp_path, servers):
    replica = tmp_path / "replica"
    first = servers(clinic_db, "--replica", str(replica), "--ack-after-replication")
    wait_for(lambda: send(first.url, "GET", "/health")[0] == 200, message="the replica answers")
    assert first.terminate() == 0
    damage(clinic_db)
    second = servers(clinic_db, "--replica", str(replica), "--ack-after-replication")
    wait_for(lambda: send(second.url, "GET", "/health")[0] == 200, message="the replica answers again")
    assert send(second.url, "POST", "/patients", {"name": "Ana", "nif": valid_dni(3)})[0] == 201
    done = check(clinic_db, replica)
    assert done.returncode == 1
    assert "fails the check: integrity_check failed" in done.stderr and "restore --from-replica" in done.stderr
    assert scratch(clinic_db) == []


def test_a_drill_of_a_replica_that_stopped_shipping_fails_saying_how_far_behind_it_is(clinic_db, tmp_path, servers):
    replica = tmp_path / "replica"
    server = with_a_patient(servers, clinic_db, replica)
    server.terminate()
    for later, behind_after, said in (("+12 seconds", "5", "is 12 seconds behind"),  # never "0 minutes"
                                      ("+1 hour", "300", "is 60 minutes behind")):
        conn = sqlite3.connect(clinic_db)  # changed here, later on, and never shipped
        conn.execute("INSERT INTO events (at, source, action, entity, entity_id) SELECT "
                     f"strftime('%Y-%m-%dT%H:%M:%S+00:00', at, '{later}'), 'cli', 'test.later', 'test', '1' "
                     "FROM events WHERE action != 'test.later' ORDER BY id DESC LIMIT 1")
        conn.commit()
        conn.close()
        done = subprocess.run(agenda_command("replica", "check", "--replica", str(replica), "--db", str(clinic_db),
                                             "--behind-after", behind_after), capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 1 and f"{said} the live database" in done.stderr, done.stderr


def test_a_drill_fails_while_the_services_litestream_does_not_ship_though_its_replica_restores(clinic_db, tmp_path,
                                                                                                servers):
    """/health answers 503 when the service's Litestream cannot ship (its disk full, or, here, stopped): the drill
    asks it as /health does and fails, though the replica it restores is sound and seconds old."""
    replica = tmp_path / "replica"
    server = with_a_patient(servers, clinic_db, replica)
    litestream, = litestream_pids(server)
    os.kill(litestream, signal.SIGSTOP)
    try:
        done = check(clinic_db, replica)
    finally:
        os.kill(litestream, signal.SIGCONT)
    assert done.returncode == 1, done.stdout
    assert "replica check FAILED" in done.stderr and "does not ship to the replica now" in done.stderr
    assert "/health answers 503" in done.stderr
