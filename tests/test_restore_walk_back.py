"""A restore never leaves the clinic empty-handed (docs/replication.md, "When the replica's newest state is
damaged"): when the replica's newest state fails integrity_check, `agenda restore --from-replica` says so,
walks back to the latest moment that passes, restores it only when asked (`--at`), and lists the appointments
it loses, to phone; `agenda standby promote` refuses a damaged copy. The damage is made as a faulty
checkpoint makes it: an index that misses a row, which Litestream then ships page for page."""

import datetime as dt
import re
import sqlite3
import subprocess
import time

from conftest import agenda_command, send, valid_dni
from test_replication import clinic_db, kill_all, servers, wait_for  # noqa: F401 (fixtures)


def damage(db_path):
    """An events row the index events_by_entity does not know: integrity_check then fails, as after the race."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        hidden = conn.execute("SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema "
                              "WHERE name = 'events_by_entity'").fetchone()
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("DELETE FROM sqlite_schema WHERE name = 'events_by_entity'")
    finally:
        conn.close()
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("INSERT INTO events (at, source, action, entity, entity_id) VALUES "
                     "('2026-01-01T00:00:00+00:00', 'cli', 'test.damage', 'test', '1')")
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("INSERT INTO sqlite_schema VALUES (?, ?, ?, ?, ?)", hidden)
    finally:
        conn.close()
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok"
    finally:
        conn.close()


def book(server, patient, hour):
    day = (dt.date.today() + dt.timedelta(days=1)).strftime("%d/%m/%Y")
    status, answer = send(server.url, "POST", "/appointments",
                          {"date": day, "time": f"{hour:02d}:00", "doctorId": "MARTIN", "patientId": patient})
    assert status == 201, answer
    return int(answer["appointmentId"])


def test_a_damaged_newest_state_is_refused_and_the_latest_sound_moment_restored_with_what_it_loses(
        clinic_db, tmp_path, servers):
    replica = tmp_path / "replica"
    first = servers(clinic_db, "--replica", str(replica), "--ack-after-replication")
    wait_for(lambda: send(first.url, "GET", "/health")[0] == 200, message="the replica answers")
    _, answer = send(first.url, "POST", "/patients", {"name": "Ana", "surname": "Ruiz", "nif": valid_dni(7),
                                                       "phone": "+34600111222"})
    patient = answer["patientId"]
    kept = [book(first, patient, hour) for hour in (9, 10, 11)]
    assert first.terminate() == 0  # Litestream ships the last changes as it stops
    time.sleep(1.1)  # the next moment of the replica is a second later: `--at` tells them apart
    damage(clinic_db)
    second = servers(clinic_db, "--replica", str(replica), "--ack-after-replication")
    wait_for(lambda: send(second.url, "GET", "/health")[0] == 200, message="the replica answers again")
    lost = [book(second, patient, hour) for hour in (12, 13)]
    kill_all(second)

    restored = tmp_path / "restored.db"
    refused = subprocess.run(agenda_command("restore", "--from-replica", str(replica), "--db", str(restored), "-y"),
                             capture_output=True, text=True, timeout=600)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1, said
    assert "cannot be restored: integrity_check failed" in said and "looks back" in said
    assert "passes" in said and "Restoring it would lose 2 appointments" in said
    assert not restored.exists()  # nothing restored without being asked
    command = re.search(r"To restore that moment: (agenda restore .*)", said)[1]
    at = re.search(r'--at "([^"]+)"', command)[1]

    done = subprocess.run(agenda_command("restore", "--from-replica", str(replica), "--at", at, "--db", str(restored),
                                         "-y"), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    conn = sqlite3.connect(restored)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert [row[0] for row in conn.execute("SELECT id FROM appointments ORDER BY id")] == kept
        reads = conn.execute("SELECT reader, kind FROM access_reads WHERE patient_id = ?", (patient,)).fetchall()
    finally:
        conn.close()
    assert "phone these patients" in done.stdout
    listed = [line for line in done.stdout.splitlines() if "Ana Ruiz" in line]
    assert [int(line.split(":")[0]) for line in listed] == lost and all("+34600111222" in line for line in listed)
    assert [kind for _, kind in reads] == ["restore"]  # the names were read through the identity door


def test_standby_promote_refuses_a_damaged_copy_and_names_the_restore_that_looks_back(clinic_db):
    damage(clinic_db)
    refused = subprocess.run(agenda_command("standby", "promote", "--db", str(clinic_db)), capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode == 1
    assert "was not promoted: integrity_check failed" in refused.stderr and "--from-replica" in refused.stderr
    assert "--at" in refused.stderr


def test_a_standby_reports_a_failed_periodic_check_of_its_copy_in_its_log_and_status(clinic_db, tmp_path, servers):
    replica, copy = tmp_path / "replica", tmp_path / "standby.db"
    first = servers(clinic_db, "--replica", str(replica), "--ack-after-replication")
    wait_for(lambda: send(first.url, "GET", "/health")[0] == 200, message="the replica answers")
    standby = subprocess.Popen(agenda_command("standby", "--replica", str(replica), "--db", str(copy),
                                              "--check-every", "1"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    try:
        checked = tmp_path / "standby.db.check"
        wait_for(lambda: checked.is_file() and '"problem": null' in checked.read_text(), seconds=120,
                 message="a first check that passes")
        assert first.terminate() == 0
        damage(clinic_db)
        second = servers(clinic_db, "--replica", str(replica), "--ack-after-replication")
        wait_for(lambda: send(second.url, "GET", "/health")[0] == 200, message="the replica answers again")
        book(second, send(second.url, "POST", "/patients", {"name": "Eva", "nif": valid_dni(9)})[1]["patientId"], 9)
        wait_for(lambda: "integrity_check failed" in checked.read_text(), seconds=120, message="a check that fails")
    finally:
        standby.terminate()
        log = standby.communicate(timeout=60)[0]
    assert "the copy fails its check" in log
    status = subprocess.run(agenda_command("status", "--db", str(copy)), capture_output=True, text=True, timeout=60)
    assert "Standby:" in status.stdout and "FAILED: integrity_check failed" in status.stdout, status.stdout + status.stderr
