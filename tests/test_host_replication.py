"""A host replicates each of its clinics (docs/design.md, "A host replicates its clinics", "Leases"), against
SeaweedFS's real S3 server on loopback (tests/object_store.py): one Litestream for the host, each clinic to its own
path under the base, each change answered once its replica holds it and while the host's lease on the clinic
holds; a lease is written only by conditional PUT, one writer of many wins."""

import json
import os
import sqlite3
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

import agenda
from _agenda.storage.connections import hold_replicating_mark
from _agenda.storage.host_replication import open_replica, replica_sync_for
from _agenda.storage.leases import (FolderObjects, generation_url, Holder, LeaseRefused, margin_of, objects_at,
                                    read_lease, waited_out, write_lease)
from object_store import CLIENT_ENV
from conftest import agenda_command, days_ahead, Server, sign
from crash_rounds import wait_for
from test_host import A, B, make_clinic, Moment, SECRETS


def host_send(url, host, method, path, body=None):
    """(status, JSON answer, headers) of one signed request to the clinic `host` of a host at `url`."""
    raw = b"" if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=raw if body is not None else None, method=method, headers={
        "Host": host, "Content-Type": "application/json", "X-Signature": sign(raw, SECRETS[host], method, path)})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read() or b"{}"), answer.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}"), error.headers


def host_env(**more):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AGENDA_", "AWS_"))}
    return {**env, **CLIENT_ENV, "PYTHONUNBUFFERED": "1", **more}


def serving(folder, base, *names, seconds=30):
    """`agenda host serve FOLDER --replica BASE`, once each of `names` answers /health 200 (leased, replicating)."""
    server = Server(agenda_command("host", "serve", str(folder), "--port", "0", "--replica", base,
                                   "--lease-seconds", str(seconds)), host_env())
    for name in names:
        wait_for(lambda: host_send(server.url, name, "GET", "/health")[0] == 200, seconds=120,
                 message=f"{name} replicating")
    return server


def book(url, host, time="10:00"):
    """A patient and an appointment booked at the clinic `host`: the appointment's answer."""
    status, patient, _ = host_send(url, host, "POST", "/patients", {"name": "Rosa", "nif": "12345678Z"})
    assert status in (200, 201), patient
    status, booked, _ = host_send(url, host, "POST", "/appointments", {
        "date": days_ahead(2), "time": time, "doctorId": "MARTIN", "patientId": patient["patientId"]})
    assert status == 201, booked
    return booked


def restored_appointments(url, tmp_path, label):
    """The booked appointments' ids in the replica at `url`, restored by `agenda restore --from-replica`."""
    restored = tmp_path / f"restored-{label}.db"
    result = CliRunner().invoke(agenda.cli, ["restore", "--from-replica", url, "--db", str(restored), "--yes"],
                                env=CLIENT_ENV)
    assert result.exit_code == 0, result.output
    conn = sqlite3.connect(restored)
    try:
        return {row[0] for row in conn.execute("SELECT id FROM appointments WHERE status = 'booked'")}
    finally:
        conn.close()


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    """The store's keys for the test's own reads of it (the store takes any)."""
    for key, value in CLIENT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def hosted(s3, tmp_path):
    """(the host's folder with clinics A and B, the replica base in the store for this test)."""
    folder = tmp_path / "clinics"
    folder.mkdir()
    for name in (A, B):
        make_clinic(folder, name, tmp_path)
    return folder, s3.url(f"hosts/{tmp_path.name}-{os.getpid()}")


def test_a_host_replicates_each_clinic_to_its_own_path_and_acknowledges_each_change_there(hosted, tmp_path):
    folder, base = hosted
    make_clinic(folder, "citas.clinica-c.es", tmp_path)  # served, never asked for: not replicated yet
    server = serving(folder, base, A, B)
    try:
        booked = {name: int(book(server.url, name)["appointmentId"]) for name in (A, B)}
        shipped = replica_sync_for(folder, folder / A / "agenda.db")  # what the host's sender waits on
        assert shipped is not None and shipped()
        assert replica_sync_for(folder, folder / "citas.clinica-c.es" / "agenda.db") is None
    finally:
        assert server.terminate() == 0, server.log()
    assert replica_sync_for(folder, folder / A / "agenda.db") is None  # no host replicating it
    for name in (A, B):
        assert booked[name] in restored_appointments(generation_url(base, name, 1), tmp_path, name)
        lease = read_lease(objects_at(base), name)
        assert lease.generation == 1 and lease.holder.endswith(str(folder.resolve())) and not lease.released
    result = CliRunner().invoke(agenda.cli, ["host", "status", str(folder)])
    assert result.exit_code == 0 and "not served" not in result.output, result.output  # the host's own marks


def race(objects, name, write, writers=16):
    """How many of `writers` threads running write(objects, name, number) at once were granted their write."""
    def one(number):
        try:
            write(objects, name, number)
            return 1
        except LeaseRefused:
            return 0
    with ThreadPoolExecutor(writers) as pool:
        return sum(pool.map(one, range(writers)))


@pytest.mark.parametrize("where", ["s3", "folder"])
def test_a_lease_is_created_and_taken_over_by_exactly_one_of_many_hosts(where, request, tmp_path):
    base = request.getfixturevalue("s3").url(f"leases/{tmp_path.name}-{os.getpid()}") if where == "s3" else \
        str(tmp_path / "replicas")
    objects = objects_at(base)
    assert isinstance(objects, FolderObjects) == (where == "folder")
    assert race(objects, A, lambda objects, name, number: write_lease(objects, name, f"host {number}", 1, 30)) == 1
    first = read_lease(objects, A)
    assert race(objects, A, lambda objects, name, number: write_lease(
        objects, name, f"host {number}", 2, 30, etag=first.etag)) == 1
    assert read_lease(objects, A).generation == 2


def test_a_lease_holds_by_its_holders_own_clock_until_a_margin_before_it_ends_and_no_other_host_takes_it(tmp_path):
    clock, objects = Moment(), objects_at(str(tmp_path / "replicas"))
    mine = Holder(objects, "host a", seconds=30, clock=clock)
    assert mine.take(A).generation == 1 and mine.valid(A)
    clock.now += 30 - margin_of(30) - 0.01
    assert mine.valid(A)
    clock.now += 0.02
    assert not mine.valid(A)  # the lease itself still has its margin to run: no one else may take it yet
    with pytest.raises(LeaseRefused, match="held by host a"):
        Holder(objects, "host b", seconds=30, clock=clock).take(A)
    mine.renew(A)
    assert mine.valid(A) and read_lease(objects, A).generation == 1
    lease = read_lease(objects, A)
    write_lease(objects, A, "host b", 2, 30, etag=lease.etag)  # taken after it lapsed
    with pytest.raises(LeaseRefused):
        mine.renew(A)
    assert not mine.valid(A)


def test_a_lease_is_taken_over_only_once_released_or_left_unchanged_for_its_whole_length(tmp_path):
    clock, objects = Moment(), objects_at(str(tmp_path / "replicas"))
    held = write_lease(objects, A, "host a", 4, 10)

    def renewed_meanwhile(seconds):
        clock.now += seconds
        if clock.now > 1005:
            write_lease(objects, A, "host a", 4, 10, etag=read_lease(objects, A).etag)
    with pytest.raises(LeaseRefused, match="renewed by host a"):
        waited_out(objects, A, sleep=renewed_meanwhile, clock=clock)
    clock.now, slept = 1000.0, []
    assert waited_out(objects, A, sleep=lambda seconds: (slept.append(seconds), clock.__setattr__(
        "now", clock.now + seconds)), clock=clock).generation == 4
    assert sum(slept) >= 10
    write_lease(objects, A, "host a", 4, 10, released=True, etag=read_lease(objects, A).etag)
    assert waited_out(objects, A, sleep=pytest.fail, clock=clock).released
    assert held.generation == 4


def test_a_second_host_on_the_same_folder_or_a_replica_that_cannot_hold_a_lease_is_refused(tmp_path):
    folder = tmp_path / "clinics"
    folder.mkdir()
    mark = hold_replicating_mark(folder.resolve() / "host")  # as a running host holds it
    try:
        result = CliRunner().invoke(agenda.cli, ["host", "serve", str(folder), "--replica", str(tmp_path / "r")])
        assert result.exit_code == 1 and "already serves" in result.output, result.output
    finally:
        os.close(mark)
    result = CliRunner().invoke(agenda.cli, ["host", "serve", str(folder), "--replica", "sftp://host/path"])
    assert result.exit_code == 1 and "sftp:// cannot hold a lease" in result.output, result.output


def test_a_clinic_that_cannot_be_replicated_is_not_leased_on(tmp_path):
    class Refusing:
        base = str(tmp_path / "replicas")

        def add(self, db_path, url):
            raise RuntimeError("another process replicates it")
    leases = Holder(objects_at(Refusing.base), "host a", seconds=30)
    with pytest.raises(RuntimeError):
        open_replica(Refusing(), leases, A, tmp_path / A)
    assert not leases.valid(A) and A not in leases.held  # not renewed: it lapses for another host to adopt


def test_a_clinic_whose_folder_a_release_moved_away_takes_no_change_even_before_the_host_looks_again(tmp_path):
    """The release moves the clinic's folder aside after releasing its lease; until the host's next look its app is
    still open on the moved file: its changes are refused from the move on, whatever the host's clock says."""
    from types import SimpleNamespace
    from _agenda.storage.host_replication import ClinicReplica, RELEASING
    folder = tmp_path / A
    folder.mkdir()
    (folder / "agenda.db").write_bytes(b"")
    still_leased = SimpleNamespace(valid=lambda name: True)  # the host has not yet tried to renew
    replica = ClinicReplica(SimpleNamespace(socket_path=str(tmp_path / "none.sock")), still_leased, A, folder)
    assert replica.may_write()
    (folder / RELEASING).write_text("")
    assert not replica.may_write()
    (folder / RELEASING).unlink()
    folder.rename(tmp_path / "released")
    assert not replica.may_write() and replica.state() == "not leased"
