"""Who checkpoints (docs/design.md, "Checkpoints"): while the service replicates, no connection to its
database checkpoints on its own, the service's or a command's run beside it; without a replica, SQLite's
auto-checkpoint at 100 pages, as before."""

from _agenda.store import CHECKPOINT_PAGES, connect
from conftest import send
from test_replication import clinic_db, servers, wait_for  # noqa: F401 (fixtures)


def autocheckpoint(db_path):
    conn = connect(db_path)
    try:
        return conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    finally:
        conn.close()


def test_a_connection_beside_a_replicating_service_leaves_checkpoints_to_litestream(clinic_db, tmp_path, servers):
    """`connect` is how every command opens the database: beside the service's Litestream it checkpoints never."""
    assert autocheckpoint(clinic_db) == CHECKPOINT_PAGES == 100  # no replica yet
    server = servers(clinic_db, "--replica", str(tmp_path / "replica"))
    wait_for(lambda: send(server.url, "GET", "/health")[1].get("replica") == "ok", message="Litestream answering")
    assert autocheckpoint(clinic_db) == 0
    assert server.terminate() == 0  # Litestream stops with it, and its socket's folder goes
    assert autocheckpoint(clinic_db) == CHECKPOINT_PAGES

