"""A clinic's replica in S3-compatible object storage (docs/replication.md, "S3-compatible storage"), against
SeaweedFS's real S3 server on loopback (tests/object_store.py): `agenda run` replicates there and acknowledges a
booking only once the store holds it, `agenda restore --from-replica` brings it back, `agenda replica check` drills
it, a CA bundle named for the AWS SDKs does not stop Litestream, and the pinned store grants a new key to one
conditional PUT of many (what a lease in the store will rest on)."""

import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

import agenda
from object_store import CLIENT_ENV
from conftest import days_ahead, EVERY_DAY_CSV, SEEDED_AT, seed, send, Server, agenda_command, SECRET, write_csv
from crash_rounds import wait_for


def test_the_pinned_store_grants_a_new_key_to_one_of_many_conditional_puts(s3):
    leases = f"leases-{os.getpid()}"  # this worker's own keys
    with ThreadPoolExecutor(20) as pool:
        created = list(pool.map(lambda number: s3.put(f"{leases}/clinic-a", f"host {number}".encode(),
                                                      If_None_Match="*")[0], range(20)))
    assert sorted(created) == [200] + [412] * 19
    status, etag = s3.put(f"{leases}/clinic-b", b"generation 1", If_None_Match="*")
    assert status == 200 and etag
    with ThreadPoolExecutor(20) as pool:
        replaced = list(pool.map(lambda number: s3.put(f"{leases}/clinic-b", f"generation {number}".encode(),
                                                       If_Match=etag)[0], range(2, 22)))
    assert sorted(replaced) == [200] + [412] * 19


@pytest.fixture
def replicated(s3, tmp_path, db_path, monkeypatch):
    """(the replica's URL, the environment): the test clinic, a replica in the store, Litestream's keys."""
    seed(db_path, write_csv(tmp_path, EVERY_DAY_CSV), at=SEEDED_AT)
    url = s3.url(f"clinics/{tmp_path.name}-{os.getpid()}/clinic")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AGENDA_", "AWS_"))}
    # A CA bundle named for the AWS SDKs, as on many machines: Litestream 0.5.17 refuses to start with it.
    env.update(CLIENT_ENV, AWS_CA_BUNDLE="/etc/ssl/certs/ca-certificates.crt", AGENDA_SECRET=SECRET,
               AGENDA_MIN_NOTICE="0", PYTHONUNBUFFERED="1")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return url, env


def replicating(db_path, url, env):
    """`agenda run` replicating to `url` with acknowledgement, once its /health says the replica answers (its
    Litestream started and reached the store: a busy machine takes its time)."""
    server = Server(agenda_command("run", "--db", str(db_path), "--port", "0", "--replica", url,
                                   "--ack-after-replication"), env)
    wait_for(lambda: send(server.url, "GET", "/health")[0] == 200, seconds=120, message="the replica answering")
    return server


def test_a_clinic_replicates_to_s3_acknowledges_once_the_store_holds_it_and_restores_from_it(replicated, db_path,
                                                                                            tmp_path):
    url, env = replicated
    server = replicating(db_path, url, env)
    try:
        status, patient = send(server.url, "POST", "/patients", {"name": "Rosa", "nif": "12345678Z"})
        assert status == 201
        status, booked = send(server.url, "POST", "/appointments", {"date": days_ahead(2), "time": "10:00",
                                                                     "doctorId": "MARTIN",
                                                                     "patientId": patient["patientId"]})
        assert status == 201, booked
    finally:
        assert server.terminate() == 0, server.log()
    assert "unable to add custom RootCAs" not in server.log()
    restored = tmp_path / "restored.db"
    result = CliRunner().invoke(agenda.cli, ["restore", "--from-replica", url, "--db", str(restored), "--yes"])
    assert result.exit_code == 0, result.output
    conn = sqlite3.connect(restored)
    try:
        assert conn.execute("SELECT count(*) FROM appointments WHERE status = 'booked'").fetchone() == (1,)
    finally:
        conn.close()


def test_the_nightly_drill_restores_a_clinic_from_s3_and_finds_it_whole(replicated, db_path):
    url, env = replicated
    server = replicating(db_path, url, env)
    try:
        assert send(server.url, "POST", "/patients", {"name": "Rosa", "nif": "12345678Z"})[0] == 201
    finally:
        assert server.terminate() == 0, server.log()
    result = CliRunner().invoke(agenda.cli, ["replica", "check", "--replica", url, "--db", str(db_path)])
    assert result.exit_code == 0, result.output
