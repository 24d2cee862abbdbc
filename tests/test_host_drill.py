"""A host's nightly drill and its replicas in `agenda host status` (docs/design.md, "A host of clinics"; docs/
replication.md, "Restore drills"): `agenda host drill` restores every clinic's replica (REPLICA/NAME) in turn, a
clinic that fails is named and the others are still drilled, each result is kept in the clinic's database; `agenda
host status` shows each clinic's replica lag (from the Litestream its service noted) and last drill, and exits 1
for a replica behind, a failed drill or one more than two days old."""

import datetime as dt
import os
import re
import sqlite3

from click.testing import CliRunner

import agenda
from _agenda.cli.host import clinic_replica
from _agenda.storage.leases import clinic_url, objects_at, write_lease
from _agenda.storage.connections import transaction
from _agenda.storage.events import recall, remember
from _agenda.storage.replication import litestream_binary, replica_sync, Replicator
from object_store import CLIENT_ENV
from crash_rounds import wait_for
from test_host import make_clinic

A, B, C, D = "citas.clinica-a.es", "citas.clinica-b.es", "citas.clinica-c.es", "citas.clinica-d.es"


def replicating(db_path, url):
    """A real Litestream replicating db_path to `url`, once the replica holds every change made so far."""
    replicator = Replicator(litestream_binary(), db_path, url)
    replicator.start()
    wait_for(lambda: replica_sync(replicator.socket_path, replicator.db_path, 5)[0] == 200, seconds=120,
             message=f"{url} holding the clinic")
    return replicator


def fact(db_path, key):
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    try:
        return recall(conn, key)
    finally:
        conn.close()


def note(db_path, key, value, at):
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        with transaction(conn):
            remember(conn, key, value, at)
    finally:
        conn.close()


def status(folder, now):
    result = CliRunner().invoke(agenda.cli, ["host", "status", str(folder)], obj={"now": lambda: now})
    return result.exit_code, {line.split()[0]: line for line in result.output.splitlines()[1:]}


def test_a_clinic_replica_is_its_name_under_the_hosts_replica_with_the_query_kept(tmp_path):
    assert clinic_replica(str(tmp_path), A) == f"{tmp_path}/{A}"  # replicated without a lease
    assert clinic_url("s3://bucket/host1?endpoint=http://127.0.0.1:8333&forcePathStyle=true", A) == (
        f"s3://bucket/host1/{A}?endpoint=http://127.0.0.1:8333&forcePathStyle=true")
    assert clinic_url("s3://bucket?region=eu-south-2", A) == f"s3://bucket/{A}?region=eu-south-2"
    assert clinic_replica("sftp://agenda:p%40ss@nas.local/volume1/host/", A) == (
        f"sftp://agenda:p%40ss@nas.local/volume1/host/{A}")


def test_a_leased_clinics_drill_reads_its_leases_generation(tmp_path):
    """A host's clinic replicates to its lease's generation's path: the drill restores from there, not the one before."""
    objects = objects_at(str(tmp_path))
    lease = write_lease(objects, A, "host-a", 1, 30)
    write_lease(objects, A, "host-b", 2, 30, etag=lease.etag)
    assert clinic_replica(str(tmp_path), A) == f"{tmp_path}/{A}/g2"


def test_the_host_drill_restores_every_clinic_from_s3_names_one_without_a_replica_and_status_shows_it(
        s3, tmp_path, monkeypatch):
    for key, value in CLIENT_ENV.items():
        monkeypatch.setenv(key, value)
    folder, base = tmp_path / "clinics", s3.url(f"hosts/{tmp_path.name}-{os.getpid()}")
    folder.mkdir()
    for name in (A, B, C):
        make_clinic(folder, name, tmp_path)
    for name in (A, C):  # B, between them, has no replica: its drill fails and C's still runs
        replicating(folder / name / "agenda.db", clinic_replica(base, name)).stop()
    (folder / "Citas.Mayusculas.es").mkdir()
    result = CliRunner().invoke(agenda.cli, ["host", "drill", str(folder), "--replica", base])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{A}: ok, restored and checked") and lines[2].startswith(f"{C}: ok, restored"), lines
    assert lines[1].startswith(f"{B}: FAILED: Litestream could not restore it"), lines
    assert "Citas.Mayusculas.es: not drilled: its name is no host name" in result.output
    assert f"1 clinic of 3 failed the drill: {B}; " in result.output and "agenda replica check" in result.output
    assert [fact(folder / name / "agenda.db", "replica_check")[0]["ok"] for name in (A, B, C)] == [True, False, True]
    drilled_at = max(dt.datetime.fromisoformat(fact(folder / name / "agenda.db", "replica_check")[1])
                     for name in (A, B, C))  # the last of them: each has been drilled 5 h before the first status
    code, rows = status(folder, drilled_at + dt.timedelta(hours=5))
    assert code == 1 and rows["1"].startswith("1 clinic in trouble"), rows
    assert rows[A].endswith("  ok") and " ok 5 h " in rows[A] and "  - " in rows[A], rows[A]
    assert " FAILED 5 h " in rows[B] and "last drill FAILED: Litestream could not restore it" in rows[B], rows[B]
    code, rows = status(folder, drilled_at + dt.timedelta(days=2, hours=1))
    assert code == 1 and "last drill 2 days ago: check the nightly `agenda host drill`" in rows[C], rows[C]


def test_host_status_shows_each_replicas_lag_and_fails_for_one_behind(tmp_path):
    folder = tmp_path / "clinics"
    folder.mkdir()
    for name in (A, B, C, D):
        make_clinic(folder, name, tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where B's replica's folder should be\n")
    shipping = replicating(folder / A / "agenda.db", str(tmp_path / "replica" / A))
    stuck = Replicator(litestream_binary(), folder / B / "agenda.db", str(blocker / B))  # it can never ship
    stuck.start()
    try:
        now = dt.datetime.now(dt.timezone.utc)
        note(folder / A / "agenda.db", "replica", {"url": "file:///r/a", "socket": shipping.socket_path}, now)
        note(folder / B / "agenda.db", "replica", {"url": "file:///r/b", "socket": stuck.socket_path},
             now - dt.timedelta(hours=1))  # its Litestream started an hour ago and has shipped nothing since
        note(folder / C / "agenda.db", "replica", {"url": "file:///r/c", "socket": str(tmp_path / "gone.sock")}, now)
        note(folder / D / "agenda.db", "replica", {"url": "file:///r/d", "socket": str(tmp_path / "gone.sock")},
             now - dt.timedelta(days=3))  # replicated for three days, never drilled
        wait_for(lambda: stuck.state() != "starting", seconds=120, message="B's Litestream answering")
        code, rows = status(folder, now)
    finally:
        shipping.stop()
        stuck.stop()
    assert code == 1, rows
    assert re.search(r" \d+ s +none  ok$", rows[A]), rows[A]
    assert " 60 min " in rows[B] and "replica BEHIND: nothing shipped for 60 minutes" in rows[B], rows[B]
    assert "  ?  " in rows[C] and rows[C].endswith("its Litestream does not answer: not replicating now"), rows[C]
    assert rows[D].endswith("no drill in two days of replicating: agenda host drill FOLDER --replica URL"), rows[D]
    assert rows["2"].startswith("2 clinics in trouble"), rows


def test_host_drill_needs_the_hosts_replica_and_a_clinic_and_sweeps_what_a_killed_drill_left(tmp_path):
    result = CliRunner().invoke(agenda.cli, ["host", "drill", str(tmp_path)], env={"AGENDA_REPLICA": ""})
    assert result.exit_code == 1 and "give the host's replica" in result.output and "--replica URL" in result.output
    result = CliRunner().invoke(agenda.cli, ["host", "drill", str(tmp_path), "--replica", str(tmp_path / "r")])
    assert result.exit_code == 1 and "holds no clinic" in result.output
    folder = tmp_path / "clinics"
    folder.mkdir()
    make_clinic(folder, A, tmp_path)
    left = folder / A / f".agenda.db.scratch-{2 ** 22 + 7}-killed"  # a drill killed with SIGKILL: no such process
    left.mkdir()
    (left / "drill.db").write_bytes(b"a clear copy of the clinic")
    result = CliRunner().invoke(agenda.cli, ["host", "drill", str(folder), "--replica", str(tmp_path / "none")])
    assert result.exit_code == 1 and f"{A}: FAILED: Litestream could not restore it" in result.output
    assert not left.exists() and [path.name for path in (folder / A).iterdir() if ".scratch-" in path.name] == []
