"""A host's clinics replicated by one Litestream, each to its own path, each acknowledged only while the host's
lease on it holds ("A host replicates its clinics", "Leases")."""

import datetime as dt
import json
import logging
import os
import threading
import time
from pathlib import Path

from ..values.refusals import ClinicError
from .connections import litestream_beside
from .leases import generation_url
from .replication import (BEHIND_AFTER, DOWN_AFTER, litestream_call, LITESTREAM_SYNC_SECONDS, passive_checkpoint,
                          private_folder, replica_sync, replica_url, Replicator, take_replicating_mark,
                          without_password)

log = logging.getLogger("agenda")

RELEASING = "agenda.releasing"  # in a clinic's folder: `agenda clinic release` under way, its changes refused
HOST_STATE = ".agenda-host.json"  # in the host's folder: the running host's pid and Litestream's control socket


class HostReplicator(Replicator):
    """One Litestream for every clinic a host serves, supervised as `agenda run`'s is: started with no database,
    each clinic added (`add`) through its control socket when opened and taken off (`remove`) when put away, and
    every clinic added again after a restart."""

    def __init__(self, binary, folder, base, behind_after=BEHIND_AFTER, down_after=DOWN_AFTER):
        self.binary, self.url, self.db_path, self.base = binary, without_password(base), None, base
        self.mark = take_replicating_mark(Path(folder).resolve() / "host", tries=5)  # one host a folder
        self.folder = private_folder()
        self.socket_path = str(Path(self.folder) / "control.sock")
        self.config = Path(self.folder) / "litestream.yml"
        self.config.write_text(json.dumps({"socket": {"enabled": True, "path": self.socket_path}, "dbs": []}),
                               encoding="utf-8")
        os.chmod(self.config, 0o600)
        self.process, self.stopping, self.thread, self.failed_at = None, threading.Event(), None, None
        self.behind_after, self.started_at = behind_after, dt.datetime.now(dt.timezone.utc)
        self.down_after, self.down_since = down_after, None
        self.cores = os.sched_getaffinity(0) if hasattr(os, "sched_setaffinity") else None
        self.clinics, self.guard = {}, threading.Lock()  # db path: (replica URL, its replicating mark)
        state = Path(folder) / HOST_STATE
        state.unlink(missing_ok=True)
        state.write_text(json.dumps({"pid": os.getpid(), "socket": self.socket_path}), encoding="utf-8")
        self.state_file = state

    def started(self):
        threading.Thread(target=self.register_all, name="litestream-register", daemon=True).start()

    def register_all(self, timeout=60):
        """Every clinic added to the Litestream just started, once its control socket answers."""
        until = time.monotonic() + timeout
        while time.monotonic() < until and not self.stopping.is_set():
            try:
                litestream_call(self.socket_path, "GET", "/list", timeout=2)
                break
            except OSError:
                time.sleep(0.1)
        with self.guard:
            clinics = {path: url for path, (url, _) in self.clinics.items()}
        for path, url in clinics.items():
            self.register(path, url)

    def register(self, db_path, url):
        try:
            status, answer = litestream_call(self.socket_path, "POST", "/register",
                                             {"path": db_path, "replica_url": url}, timeout=30)
        except OSError as error:
            status, answer = 0, {"error": str(error)}
        if status != 200:
            log.warning("litestream could not take %s yet (%s); it is added when Litestream starts again",
                        db_path, answer.get("error", status))
        return status == 200

    def add(self, db_path, url):
        """Replicate the clinic at db_path to `url` from now on (its replicating mark held while it is)."""
        db_path = str(Path(db_path).resolve())
        mark = take_replicating_mark(db_path)
        with self.guard:
            self.clinics[db_path] = (url, mark)
        self.register(db_path, url)

    def remove(self, db_path, timeout=10):
        """Stop replicating the clinic at db_path, after Litestream's last sync of it."""
        db_path = str(Path(db_path).resolve())
        with self.guard:
            _, mark = self.clinics.pop(db_path, (None, None))
        try:
            litestream_call(self.socket_path, "POST", "/unregister", {"path": db_path, "timeout": timeout},
                            timeout=timeout + 5)
        except OSError as error:
            log.warning("litestream could not let go of %s: %s", db_path, error)
        if mark is not None:
            os.close(mark)

    def checkpoint(self):
        """Each clinic's passive checkpoint while Litestream stays down ("Checkpoints")."""
        with self.guard:
            paths = list(self.clinics)
        for path in paths:
            passive_checkpoint(path)

    def stop(self, timeout=5):
        super().stop(timeout)
        with self.guard:
            marks, self.clinics = [mark for _, mark in self.clinics.values()], {}
        for mark in marks:
            os.close(mark)
        self.state_file.unlink(missing_ok=True)


class ClinicReplica:
    """One clinic of a host as its app sees replication: `sync` acknowledges a change once the host's Litestream
    shipped it and while the host's lease on the clinic holds and no release is under way; `state` for /health."""

    def __init__(self, replicator, leases, name, folder, behind_after=BEHIND_AFTER):
        self.replicator, self.leases, self.name, self.folder = replicator, leases, name, Path(folder)
        self.db_path, self.socket_path = str((self.folder / "agenda.db").resolve()), replicator.socket_path
        self.failed_at, self.behind_after, self.started_at = None, behind_after, dt.datetime.now(dt.timezone.utc)

    def may_write(self):
        """Whether the host may take and acknowledge this clinic's changes now: its lease holds, no release is under
        way, and its folder is still where it was served from (a release moves it away, "Leases")."""
        return (self.leases.valid(self.name) and not (self.folder / RELEASING).exists()
                and (self.folder / "agenda.db").exists())

    def sync(self, timeout=LITESTREAM_SYNC_SECONDS):
        """Wait until the replica holds every change so far, then check the lease: ClinicError (503) when either
        fails ("Leases": a change is acknowledged only if it reached the replica while the lease held)."""
        Replicator.sync(self, timeout)
        if not self.may_write():
            raise ClinicError("NOT_REPLICATED", "saved here, but this clinic is moving to another host (or this "
                                                "host's lease on it lapsed); retry in a moment")

    def state(self):
        """As `Replicator.state`; 'not leased' when this host may not take the clinic's changes, 'starting' until
        Litestream has taken it in."""
        if not self.may_write():
            return "not leased"
        try:
            _, listed = litestream_call(self.socket_path, "GET", "/list", timeout=1)
        except OSError:
            listed = {}
        if not any(db.get("path") == self.db_path for db in listed.get("databases", [])):
            return "starting"
        return Replicator.state(self)


def open_replica(replicator, leases, name, folder):
    """The clinic `name` at `folder` leased by this host and replicated to its lease generation's path: its
    ClinicReplica; LeaseRefused when another host holds it."""
    lease = leases.take(name)
    try:
        replicator.add(Path(folder) / "agenda.db", replica_url(generation_url(replicator.base, name,
                                                                              lease.generation)))
    except BaseException:
        leases.drop(name)  # not served: its lease lapses
        raise
    return ClinicReplica(replicator, leases, name, folder, replicator.behind_after)


def close_replica(replica):
    """Stop replicating the clinic (Litestream's last sync first); its lease lapses, unreleased."""
    replica.replicator.remove(replica.db_path)
    replica.leases.drop(replica.name)


def running_host(folder):
    """(pid, Litestream's control socket) of the `agenda host serve` replicating `folder`, or None when none
    holds its replicating mark."""
    if not litestream_beside(Path(folder).resolve() / "host"):
        return None
    try:
        state = json.loads((Path(folder) / HOST_STATE).read_text(encoding="utf-8"))
        return state["pid"], state["socket"]
    except (OSError, ValueError, KeyError):
        return None


def replica_sync_for(folder, db_path):
    """While the host serving `folder` replicates the clinic at db_path (it holds the clinic's replicating mark): a
    function true once the clinic's replica holds every change so far, for its sender ("A host of clinics"); else
    None (no host replicating it: nothing to wait for)."""
    running = running_host(folder)
    if running is None or not litestream_beside(db_path):
        return None
    path = str(Path(db_path).resolve())
    return lambda: shipped(running[1], path)


def shipped(socket_path, db_path, timeout=LITESTREAM_SYNC_SECONDS):
    """Whether the running host's Litestream shipped every change of db_path so far."""
    status, _ = replica_sync(socket_path, db_path, timeout)
    return status == 200
