"""A restore never leaves the clinic empty-handed (docs/replication.md, "When the replica's newest state is
damaged"): when the replica's newest state fails integrity_check, `agenda restore --from-replica` says so,
walks back to the latest moment that passes, restores it only when asked (`--at`), and lists the appointments
it loses, to phone; `agenda standby promote` refuses a damaged copy. The damage is made as a faulty
checkpoint makes it: an index that misses a row, which Litestream then ships page for page."""

import datetime as dt
import re
import shlex
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import click
import pytest

from _agenda.cli import backups as cli_backups
from _agenda.storage import replica_restore
from _agenda.storage.replication import Point, ReplicaUnreadable
from _agenda.storage.database import open_database
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
    lost = [book(second, patient, 12)]
    asked = dt.datetime.fromtimestamp(int(time.time()) + 1, dt.timezone.utc)  # between the two lost bookings
    time.sleep(max(0.0, asked.timestamp() + 0.3 - time.time()))
    lost.append(book(second, patient, 13))
    kill_all(second)

    restored = tmp_path / "restored.db"
    refused = subprocess.run(agenda_command("restore", "--from-replica", str(replica), "--db", str(restored), "-y"),
                             capture_output=True, text=True, timeout=600)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1, said
    assert "cannot be restored: integrity_check failed" in said and "looks back" in said
    assert "passes" in said and "Restoring it would lose 2 appointments" in said
    assert not restored.exists()  # nothing restored without being asked
    command = shlex.split(re.search(r"To restore that moment: (agenda restore .*)", said)[1])
    assert command[command.index("--at") + 1].startswith("transaction ")

    done = subprocess.run(agenda_command(*command[1:], "-y"), capture_output=True, text=True, timeout=600)
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

    # asked for a moment between the two lost bookings, which fails too: two losses, each with its list
    moment = f"{asked.astimezone(ZoneInfo('Europe/Madrid')):%d/%m/%Y %H:%M:%S}"
    again = tmp_path / "again.db"
    refused = subprocess.run(agenda_command("restore", "--from-replica", str(replica), "--at", moment, "--db",
                                            str(again), "-y"), capture_output=True, text=True, timeout=600)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1, said
    assert f"1 appointment booked, moved or cancelled between that moment and {moment}; and 1 appointment " \
           f"booked, moved or cancelled after {moment}" in said, said
    command = shlex.split(re.search(r"To restore that moment: (agenda restore .*)", said)[1])
    assert command[command.index("--lost-from") + 1] == moment
    done = subprocess.run(agenda_command(*command[1:], "-y"), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    parts = done.stdout.split(f"Changed after {moment}")
    assert f"Changed between that moment and {moment} (1 appointment)" in parts[0] and len(parts) == 2
    assert [int(line.split(":")[0]) for line in parts[0].splitlines() if "Ana Ruiz" in line] == lost[:1]
    assert [int(line.split(":")[0]) for line in parts[1].splitlines() if "Ana Ruiz" in line] == lost[1:]


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


# The walk back and what a restore loses, driven without Litestream: which restore points restore, and which
# of those pass integrity_check, are simulated.

def listed(count):
    start = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.timezone.utc)
    return [Point(txid, start + dt.timedelta(seconds=txid)) for txid in range(count, 0, -1)]  # newest first


def simulate(monkeypatch, passes, unreadable=()):
    """replica_restore.checked_point as if the point `txid` restored (a file naming it) and passed when passes(txid);
    the txids tried, in order."""
    tried = []

    def checked(binary, replica, output, txid=None, moment=None, timeout=3600):
        tried.append(txid)
        if txid in unreadable:
            return None, "Litestream could not restore it: ltx checksum mismatch"
        if not passes(txid):
            return None, "integrity_check failed"
        Path(output).write_text(str(txid))
        return Path(output), None

    monkeypatch.setattr(replica_restore, "checked_point", checked)
    return tried


def walked(tmp_path, points, **bounds):
    return replica_restore.walk_back("litestream", "replica", tmp_path, points, lambda text: None, str, **bounds)


def test_the_walk_back_finds_the_latest_sound_moment_however_far_back_the_damage_is(monkeypatch, tmp_path):
    tried = simulate(monkeypatch, lambda txid: txid <= 1000)  # a day of moments, damaged from 1001 on
    found = walked(tmp_path, listed(4000))
    assert found.point.txid == 1000 and found.exact and found.copy.read_text() == "1000"
    assert len(tried) <= replica_restore.WALK_TRIES
    assert [path.name for path in tmp_path.iterdir()] == ["point-1000.db"]  # the copies that passed before: gone


def test_the_walk_back_goes_on_past_a_moment_litestream_cannot_restore(monkeypatch, tmp_path):
    simulate(monkeypatch, lambda txid: txid <= 6, unreadable={8})
    assert walked(tmp_path, listed(10)).point.txid == 6


def test_a_walk_back_out_of_tries_says_which_later_moments_it_did_not_try(monkeypatch, tmp_path):
    simulate(monkeypatch, lambda txid: txid <= 1000)
    found = walked(tmp_path, listed(4000), tries=16)
    assert not found.exact and found.point.txid < 1000 < found.later.txid + 1


def test_a_walk_back_that_finds_nothing_says_so(monkeypatch, tmp_path):
    simulate(monkeypatch, lambda txid: False)
    assert walked(tmp_path, listed(50)) is None


def copy_of(db_path, target):
    source, copy = sqlite3.connect(db_path), sqlite3.connect(target)
    source.backup(copy)
    source.close()
    copy.close()
    return target


def test_what_a_restore_loses_is_exactly_the_appointments_that_differ_a_moved_one_with_both_times(api, db_path,
                                                                                                 tmp_path):
    """The list to phone: every appointment whose date, time, doctor or state differ between the moment restored
    and the newer state, and no other; one booked and cancelled after the moment is not in it (nobody to phone);
    read past a damaged index; a newer state that cannot be read says so, never a count of 0."""
    patient = api.new_patient()
    kept, moved, cancelled = (api.book(patient, time=at) for at in ("09:00", "09:30", "10:00"))
    older = copy_of(db_path, tmp_path / "older.db")
    booked = api.book(patient, time="10:30")
    api.delete(f"/appointments/{api.book(patient, date='26/11/2026')}")  # booked and cancelled after: nobody to phone
    api.put(f"/appointments/{moved}", {"newDate": "26/11/2026", "newTime": "10:00"})
    api.delete(f"/appointments/{cancelled}")
    api.post("/patients", {"name": "Eva", "nif": valid_dni(5)})
    newer = copy_of(db_path, tmp_path / "newer.db")
    damage(newer)  # an events row the index misses: read all the same
    lost = replica_restore.lost_changes(newer, older)
    assert sorted(lost.appointments) == sorted(int(key) for key in (booked, moved, cancelled)) and lost.error is None
    before, after = lost.appointments[int(moved)]
    assert (before["time"], after["time"]) == ("09:30", "10:00")
    assert lost.appointments[int(booked)][0] is None
    assert (lost.appointments[int(cancelled)][0]["status"], lost.appointments[int(cancelled)][1]["status"]) == \
        ("booked", "cancelled")
    assert int(kept) not in lost.appointments and lost.others["patient.created"] == 1
    words = [cli_backups.change_words(*lost.appointments[int(moved)])]
    assert "at 24/11/2026 09:30 MARTIN" in words[0] and "moved since to 26/11/2026 10:00 MARTIN" in words[0]
    newer.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4080)  # damaged beyond reading
    unread = replica_restore.lost_changes(newer, older)
    assert unread.appointments == {} and "cannot be read" in unread.error
    said = cli_backups.loss_words(unread, newer, "after that moment")
    assert "an unknown number of changes after that moment" in said and "at least 0" not in said


def test_restoring_a_named_moment_does_not_need_the_newest_state_to_be_readable(monkeypatch, tmp_path):
    """The command the walk back prints: when Litestream cannot restore the newest state at all, the named
    moment is restored all the same, and the admin is told what cannot be said of the loss."""
    points = listed(10)

    def newest(binary, replica, output, moment=None, txid=None, **options):
        raise ReplicaUnreadable("ltx checksum mismatch")

    restored, shown = [], []
    simulate(monkeypatch, lambda txid: True)
    monkeypatch.setattr(cli_backups, "checked_point", replica_restore.checked_point)
    monkeypatch.setattr(cli_backups, "restore_replica", newest)
    monkeypatch.setattr(cli_backups, "need_litestream", lambda what: "litestream")
    monkeypatch.setattr(cli_backups, "replica_points", lambda binary, replica: points)
    monkeypatch.setattr(cli_backups, "restore_file",
                        lambda ctx, db_path, src, *args, **kw: restored.append(Path(src).read_text()))
    monkeypatch.setattr(cli_backups, "show_lost", lambda ctx, db_path, newer, lost, tz, span: shown.append(lost))
    cli_backups.restore_replica_state(None, tmp_path / "clinic.db", str(tmp_path / "replica"),
                                      ("transaction 6", None), True, "Europe/Madrid", None)
    assert restored == ["6"]
    assert "the newest state cannot be read" in shown[0].error


def test_a_transaction_the_replica_does_not_have_is_refused(tmp_path):
    with pytest.raises(click.ClickException, match="no such transaction; its moments run from 1 to 10"):
        cli_backups.asked_point("transaction 0", "Europe/Madrid", lambda: listed(10))


def test_a_restore_of_the_newest_state_or_a_clinic_time_never_needs_the_replicas_list():
    def unlisted():
        raise AssertionError("litestream ltx asked for a plain restore")
    assert cli_backups.asked_point(None, "Europe/Madrid", unlisted) == (None, None)
    assert cli_backups.asked_point("24/11/2026 10:15", "Europe/Madrid", unlisted)[0] is None
    assert cli_backups.asked_point("transaction 6", "Europe/Madrid", lambda: listed(10)) == (6, None)


def damage_index_leaf(db_path, index):
    """8 bytes over the header of a leaf page of `index`, as a disk damages a page: SQLite then reads the file
    until a query walks that index, and answers 'database disk image is malformed'."""
    conn = sqlite3.connect(db_path)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (page,), = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (index,))
    finally:
        conn.close()
    with open(db_path, "r+b") as file:
        while True:
            file.seek((page - 1) * page_size)
            header = file.read(12)
            if header[0] == 0x0A:  # a leaf of an index b-tree; else an interior page: follow its first child
                break
            assert header[0] == 0x02, header
            file.seek((page - 1) * page_size + 12)
            page = int.from_bytes(file.read(4), "big")
        file.seek((page - 1) * page_size)
        file.write(b"\xff" * 8)


def test_status_of_a_damaged_standby_says_failed_do_not_promote_it_never_a_traceback(api, db_path, tmp_path):
    patient = api.new_patient()
    for hour in (9, 10):
        api.book(patient, time=f"{hour:02d}:00")
    api.app.clinic.db.close()
    copy = tmp_path / "standby.db"
    source, target = sqlite3.connect(db_path), sqlite3.connect(copy)
    source.backup(target)
    source.close()
    target.execute("PRAGMA journal_mode = DELETE")
    target.close()
    (tmp_path / "standby.db.check").write_text('{"at": "2026-11-23T08:00:00+00:00", "problem": null}')
    damage_index_leaf(copy, "appointments_by_date")
    status = subprocess.run(agenda_command("status", "--db", str(copy)), capture_output=True, text=True, timeout=60)
    assert "Traceback" not in status.stderr, status.stderr
    assert status.returncode == 0, status.stderr
    standby = next(line for line in status.stdout.splitlines() if line.startswith("Standby:"))
    assert "FAILED: reading it fails (database disk image is malformed)" in standby and "do not promote it" in standby
    (tmp_path / "standby.db.check").unlink()  # the same file as a primary: a refusal naming the restore
    primary = subprocess.run(agenda_command("status", "--db", str(copy)), capture_output=True, text=True, timeout=60)
    assert primary.returncode == 1 and "Traceback" not in primary.stderr, primary.stderr
    assert "cannot be read whole (database disk image is malformed)" in primary.stderr
    assert "agenda restore" in primary.stderr


def test_a_scratch_copy_sets_aside_only_the_compacted_files_its_lower_levels_repeat(tmp_path):
    """The replica itself is never changed; in the copy (its files 0600), a compacted file goes aside only when
    the files kept below it hold every one of its transactions; a kind of replica Agenda cannot copy gets none (an S3
    and an sftp replica's copies: tests/test_crash_restore.py)."""
    replica = tmp_path / "replica"
    names = {0: [(3, 3), (4, 4), (5, 5), (6, 6)], 1: [(1, 2), (3, 4), (5, 6)], 2: [(1, 4)], 9: [(1, 6)]}
    for level, ranges in names.items():
        (replica / "ltx" / str(level)).mkdir(parents=True)
        for low, high in ranges:
            (replica / "ltx" / str(level) / f"{low:016x}-{high:016x}.ltx").write_bytes(b"LTX1")
    before = sorted(path.relative_to(replica) for path in replica.rglob("*.ltx"))
    url, moved = replica_restore.scratch_replica(str(replica), tmp_path / "scratch")
    # level 1's 1-2 stays (level 0 no longer holds 1 and 2), so level 2's 1-4 and the snapshot are repeated too
    assert sorted(moved) == ["ltx/1/0000000000000003-0000000000000004.ltx",
                             "ltx/1/0000000000000005-0000000000000006.ltx",
                             "ltx/2/0000000000000001-0000000000000004.ltx", "ltx/9/0000000000000001-0000000000000006.ltx"]
    copy = Path(url.removeprefix("file://"))
    assert all(path.stat().st_mode & 0o077 == 0 for path in copy.rglob("*.ltx"))
    assert sorted(path.relative_to(replica) for path in replica.rglob("*.ltx")) == before
    assert replica_restore.scratch_replica("gs://bucket/agenda", tmp_path / "other") is None
