"""Who checkpoints (docs/design.md, "Checkpoints"): while the service replicates, no connection to its
database checkpoints on its own, the service's or a command's run beside it, wherever that command runs
(a unit with a private /tmp too); without a replica, SQLite's auto-checkpoint at 100 pages, as before."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from _agenda.storage.connections import CHECKPOINT_PAGES, connect
from conftest import ROOT, send
from test_replication import clinic_db, kill_all, litestream_pids, servers, wait_for  # noqa: F401 (fixtures)


def autocheckpoint(db_path):
    conn = connect(db_path)
    try:
        return conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    finally:
        conn.close()


def replicating(server, tmp_path, clinic_db, *args):
    started = server(clinic_db, "--replica", str(tmp_path / "replica"), *args)
    wait_for(lambda: send(started.url, "GET", "/health")[1].get("replica") == "ok", message="Litestream answering")
    return started


def test_a_connection_beside_a_replicating_service_leaves_checkpoints_to_litestream(clinic_db, tmp_path, servers):
    """`connect` is how every command opens the database: beside the service's Litestream it checkpoints never."""
    assert autocheckpoint(clinic_db) == CHECKPOINT_PAGES == 100  # no replica yet
    server = replicating(servers, tmp_path, clinic_db)
    assert autocheckpoint(clinic_db) == 0
    assert server.terminate() == 0  # Litestream stops with it
    assert autocheckpoint(clinic_db) == CHECKPOINT_PAGES


def test_a_litestream_whose_service_is_killed_alone_goes_with_it_and_leaves_no_stale_mark(clinic_db, tmp_path,
                                                                                             servers):
    """The service killed alone (not its unit's whole group): its Litestream is told to stop by the system
    ("Replication"), ships what it can and goes; the system then drops its lock, and checkpoints are the
    connections' own again."""
    server = replicating(servers, tmp_path, clinic_db)
    litestreams = litestream_pids(server)
    assert litestreams and autocheckpoint(clinic_db) == 0
    server.process.kill()
    server.process.wait(timeout=30)
    wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") and "zombie" not in open(f"/proc/{pid}/status").read()
                             .lower() for pid in litestreams), seconds=60, message="its Litestream gone")
    wait_for(lambda: autocheckpoint(clinic_db) == CHECKPOINT_PAGES, seconds=60, message="no stale mark")
    kill_all(server)


def test_a_second_replicating_service_on_one_database_is_refused(clinic_db, tmp_path, servers):
    replicating(servers, tmp_path, clinic_db)
    second = subprocess.run([sys.executable, str(ROOT / "agenda.py"), "run", "--db", str(clinic_db), "--port", "0",
                             "--replica", str(tmp_path / "other")], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "AGENDA_SECRET": "s3cret-s3cret-s3cret"})
    assert second.returncode == 1 and "another `agenda run --replica` already replicates" in second.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="a private /tmp is made with unshare -m, which needs root (CI runs as root)")
def test_a_command_in_another_tmp_namespace_leaves_checkpoints_to_litestream(clinic_db, tmp_path, servers):
    """docs/deploy.md runs the service with PrivateTmp=yes: its Litestream's socket is in a /tmp no timer or
    shell sees. Emulated with a mount namespace in which the service's private folder is another tmpfs."""
    replicating(servers, tmp_path, clinic_db)
    conn = sqlite3.connect(clinic_db)
    socket_path = json.loads(conn.execute("SELECT value FROM service_state WHERE key = 'replica'").fetchone()[0])["socket"]
    conn.close()
    probe = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from _agenda.storage.connections import connect; "
             f"print(connect({str(clinic_db)!r}).execute('PRAGMA wal_autocheckpoint').fetchone()[0])")
    seen = subprocess.run(["unshare", "-m", "sh", "-c", 'mount -t tmpfs tmpfs "$1" && exec "$2" -c "$3"', "sh",
                           os.path.dirname(socket_path), sys.executable, probe],
                          capture_output=True, text=True, timeout=60)
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.strip() == "0"
