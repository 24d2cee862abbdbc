"""A clinic moved between two hosts on loopback sharing SeaweedFS's S3 (docs/design.md, "Leases"): released on A
and adopted on B under live caller writes, every change acknowledged on A is on B; A frozen past its lease while B
adopts refuses changes when it runs again; a host killed in the middle of a release leaves its clinic adoptable."""

import shutil
import signal
import sqlite3
import threading

import pytest
from click.testing import CliRunner

import agenda
from _agenda.storage.host_replication import RELEASING
from _agenda.storage.leases import holder_name, objects_at, read_lease, write_lease
from conftest import valid_dni
from crash_rounds import wait_for
from test_host import A, make_clinic
from test_host_replication import book, CLIENT_ENV, host_send, serving

LEASE = 3  # seconds: short, so that a lapsed lease is waited out quickly


@pytest.fixture
def hosts(s3, tmp_path, monkeypatch):
    """(host A's folder, with the clinic A; host B's folder, empty; the replica base), the store's keys set."""
    for key, value in CLIENT_ENV.items():
        monkeypatch.setenv(key, value)
    first, second = tmp_path / "host-a", tmp_path / "host-b"
    first.mkdir()
    second.mkdir()
    make_clinic(first, A, tmp_path)
    return first, second, s3.url(f"moves/{tmp_path.name}-{id(tmp_path)}")


def clinic_command(*args):
    result = CliRunner().invoke(agenda.cli, ["clinic", *args], env=CLIENT_ENV)
    return result.exit_code, result.output


def prepared(folder, source):
    """The clinic's folder on the new host: its secret and settings copied from the old one, no database."""
    (folder / A).mkdir()
    for name in ("agenda.secret", "agenda.toml"):
        shutil.copy2(source / name, folder / A / name)


def rows_in(db_path, query):
    """What `query` reads in the database at db_path."""
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def patients_in(db_path):
    return {row[0] for row in rows_in(db_path, "SELECT id FROM patients")}


def events_in(db_path):
    """The clinic's audit trail, whole: every change it holds."""
    return rows_in(db_path, "SELECT * FROM events ORDER BY id")


class Writer:
    """A caller registering patients at the clinic A of a host, one after another, until stopped: the ids of
    those acknowledged (201), and how many were refused."""

    def __init__(self, url):
        self.url, self.acknowledged, self.refused, self.stopping = url, set(), 0, threading.Event()
        self.thread = threading.Thread(target=self.write, daemon=True)
        self.thread.start()

    def write(self):
        number = 0
        while not self.stopping.is_set():
            number += 1
            status, answer, _ = host_send(self.url, A, "POST", "/patients", {"name": f"Paciente {number}",
                                                                             "nif": valid_dni(5000 + number)})
            if status == 201:
                self.acknowledged.add(int(answer["patientId"]))
            else:  # refused while it is released (503), or no longer served here (404)
                assert status in (503, 404), answer
                self.refused += 1

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=120)


def test_a_clinic_released_on_one_host_and_adopted_on_another_keeps_every_acknowledged_change(hosts):
    first, second, base = hosts
    old, new = serving(first, base, A, seconds=LEASE), serving(second, base, seconds=LEASE)
    try:
        writer = Writer(old.url)
        wait_for(lambda: len(writer.acknowledged) >= 3, seconds=120, message="changes acknowledged on A")
        code, output = clinic_command("release", A, "--folder", str(first), "--replica", base)
        wait_for(lambda: writer.refused >= 1, seconds=120, message="changes refused on A once released")
        writer.stop()
        assert code == 0, output + old.log()
        assert "Released" in output and host_send(old.url, A, "GET", "/health")[0] in (503, 404)  # 404 once it looked
        wait_for(lambda: host_send(old.url, A, "GET", "/health")[0] == 404, seconds=120, message="A no longer served")
        assert read_lease(objects_at(base), A).released
        prepared(second, next((first / ".released").iterdir()))
        code, output = clinic_command("adopt", A, "--folder", str(second), "--replica", base)
        assert code == 0, output
        assert writer.acknowledged <= patients_in(second / A / "agenda.db")
        wait_for(lambda: host_send(new.url, A, "GET", "/health")[0] == 200, seconds=120, message="B serving A")
        book(new.url, A)
        assert read_lease(objects_at(base), A).generation == 2
    finally:
        for server in (old, new):
            server.terminate()
            server.stop()


def test_a_host_frozen_past_its_lease_refuses_changes_once_another_host_adopted_its_clinic(hosts):
    first, second, base = hosts
    old, new = serving(first, base, A, seconds=LEASE), serving(second, base, seconds=LEASE)
    try:
        booked = int(book(old.url, A)["appointmentId"])
        old.process.send_signal(signal.SIGSTOP)
        prepared(second, first / A)
        code, output = clinic_command("adopt", A, "--folder", str(second), "--replica", base)
        assert code == 0 and "waiting" in output, output
        wait_for(lambda: host_send(new.url, A, "GET", "/health")[0] == 200, seconds=120, message="B serving A")
        old.process.send_signal(signal.SIGCONT)
        status, answer, headers = host_send(old.url, A, "POST", "/patients", {"name": "Eva", "nif": valid_dni(7)})
        assert status == 503 and headers["Retry-After"], answer
        assert host_send(new.url, A, "POST", "/patients", {"name": "Eva", "nif": valid_dni(7)})[0] == 201
        assert rows_in(second / A / "agenda.db", f"SELECT id FROM appointments WHERE id = {booked}") == [(booked,)]
    finally:
        old.process.send_signal(signal.SIGCONT)
        for server in (old, new):
            server.terminate()
            server.stop()


def test_a_host_killed_in_the_middle_of_a_release_leaves_its_clinic_adoptable(hosts):
    first, second, base = hosts
    old = serving(first, base, A, seconds=LEASE)
    try:
        booked = int(book(old.url, A)["appointmentId"])
        (first / A / RELEASING).touch()  # the release begun: changes refused from here
        status, answer, headers = host_send(old.url, A, "POST", "/patients", {"name": "Eva", "nif": valid_dni(8)})
        assert status == 503 and headers["Retry-After"] and "moving" in answer["error"]["message"], answer
    finally:
        old.stop()  # SIGKILL: no last sync, no lease released
    prepared(second, first / A)
    code, output = clinic_command("adopt", A, "--folder", str(second), "--replica", base)
    assert code == 0, output
    assert rows_in(second / A / "agenda.db", f"SELECT id FROM appointments WHERE id = {booked}") == [(booked,)]
    assert read_lease(objects_at(base), A).generation == 2


def test_a_release_or_an_adoption_that_cannot_be_done_is_refused_with_the_fix_and_changes_nothing(tmp_path):
    folder, base = tmp_path / "host", str(tmp_path / "replicas")
    folder.mkdir()
    make_clinic(folder, A, tmp_path)
    for args, words in [(("release", "../etc", "--folder", str(folder)), "no clinic's name"),
                        (("release", "citas.otra.es", "--folder", str(folder)), "holds no agenda.db"),
                        (("release", A, "--folder", str(folder)), "never served with --replica has nothing"),
                        (("adopt", A, "--folder", str(folder)), "this host serves"),
                        (("adopt", "citas.otra.es", "--folder", str(folder)), "agenda.secret is missing")]:
        code, output = clinic_command(*args, "--replica", base)
        assert code == 1 and words in output, (args, output)
    (folder / "citas.otra.es").mkdir()
    (folder / "citas.otra.es" / "agenda.secret").write_text("a secret")
    code, output = clinic_command("adopt", "citas.otra.es", "--folder", str(folder), "--replica", base)
    assert code == 1 and "has no lease at that replica: nothing to adopt" in output, output
    code, output = clinic_command("release", A, "--folder", str(folder), "--replica", "sftp://host/path")
    assert code == 1 and "cannot hold a lease" in output, output
    assert sorted(path.name for path in folder.iterdir()) == [A, "citas.otra.es"]
    assert not (folder / A / RELEASING).exists() and not (folder / "citas.otra.es" / "agenda.db").exists()


def test_a_clinic_whose_host_is_stopped_is_released_through_a_litestream_of_its_own_and_adopted(tmp_path):
    first, second, base = tmp_path / "host-a", tmp_path / "host-b", str(tmp_path / "replicas")
    first.mkdir()
    second.mkdir()
    make_clinic(first, A, tmp_path)
    write_lease(objects_at(base), A, holder_name(first), 1, LEASE)  # as its host left it when it stopped
    expected = events_in(first / A / "agenda.db")
    code, output = clinic_command("release", A, "--folder", str(first), "--replica", base)
    assert code == 0, output
    assert read_lease(objects_at(base), A).released and not (first / A).exists()
    prepared(second, next((first / ".released").iterdir()))
    code, output = clinic_command("adopt", A, "--folder", str(second), "--replica", base)
    assert code == 0 and "waiting" not in output, output
    assert events_in(second / A / "agenda.db") == expected and expected
    lease = read_lease(objects_at(base), A)
    assert (lease.holder, lease.generation, lease.released) == (holder_name(second), 2, False)


def test_an_adoption_cut_short_after_taking_the_lease_is_taken_up_again_from_the_generation_before(tmp_path):
    first, second, base = tmp_path / "host-a", tmp_path / "host-b", str(tmp_path / "replicas")
    first.mkdir()
    second.mkdir()
    make_clinic(first, A, tmp_path)
    write_lease(objects_at(base), A, holder_name(first), 1, LEASE)
    expected = events_in(first / A / "agenda.db")
    assert clinic_command("release", A, "--folder", str(first), "--replica", base)[0] == 0
    prepared(second, next((first / ".released").iterdir()))
    released = read_lease(objects_at(base), A)
    write_lease(objects_at(base), A, holder_name(second), 2, LEASE, etag=released.etag)  # then the adoption died
    code, output = clinic_command("adopt", A, "--folder", str(second), "--replica", base)
    assert code == 0 and "waiting" not in output and "/g1" in output, output
    assert events_in(second / A / "agenda.db") == expected
    assert read_lease(objects_at(base), A).generation == 3
