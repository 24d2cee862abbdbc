"""Connections to the SQLite file ("Connections and the write lock"): `connect`, the one way to open it,
`transaction`, the mark a replicating service holds ("Checkpoints"), private files, read-only readers."""

import fcntl
import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from ..values.fields import fold


MMAP_BYTES = 256 * 1024 * 1024  # a clinic's years of appointments ("Connections and the write lock")


CHECKPOINT_PAGES = 100  # without a replica, SQLite's own auto-checkpoint keeps the WAL small ("Checkpoints")


def connect(path, timeout=5.0, replicated=None):
    """The one way to open the database: web, CLI and tests all come through here.

    foreign_keys and busy_timeout are set before any statement; isolation_level=None leaves transactions
    to `transaction()`; check_same_thread is off only so that `Database.close()` may close each thread's
    connection. A replicated database's connections never checkpoint: Litestream does ("Checkpoints");
    `replicated=None` asks whether the service's Litestream may be running on this file (`litestream_beside`).
    """
    conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.create_function("agenda_fold", 1, fold, deterministic=True)  # schema.sql's version 9 uses it
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    conn.execute("PRAGMA synchronous = FULL")  # a booking read back to a patient survives a power cut
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    if replicated is None:
        replicated = litestream_beside(path)
    conn.execute(f"PRAGMA wal_autocheckpoint = {0 if replicated else CHECKPOINT_PAGES}")
    return conn


def replicating_mark(db_path):
    """The file beside the database that `agenda run --replica` holds a lock on while it, or a Litestream it
    started, lives ("Checkpoints")."""
    database = Path(db_path).resolve()
    return database.with_name(f".{database.name}.replicating")


def litestream_beside(db_path):
    """True while an `agenda run --replica` on this file, or a Litestream it started, lives: the lock it holds
    on `replicating_mark` is seen by every process on the machine (a unit's private /tmp too), and the system
    drops it however they end ("Checkpoints")."""
    try:
        mark = os.open(replicating_mark(db_path), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(mark, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(mark)  # closing drops the shared lock it may have taken
    return False


def hold_replicating_mark(db_path, tries=50):
    """The open file of `replicating_mark`, locked for as long as it (or a child given it) stays open; RuntimeError
    when another process holds it: this database is replicated by another `agenda run` already."""
    path = replicating_mark(db_path)
    create_private_file(path)
    mark = os.open(path, os.O_RDWR)
    for _ in range(tries):  # a command's look at the lock holds it for an instant
        try:
            fcntl.flock(mark, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return mark
        except BlockingIOError:
            time.sleep(0.1)
    os.close(mark)
    raise RuntimeError(f"another `agenda run --replica` already replicates {db_path}: stop it first")


@contextmanager
def transaction(conn):
    """One write transaction, taken with BEGIN IMMEDIATE; commits, or rolls back on error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def schema_version(conn):
    return conn.execute("PRAGMA user_version").fetchone()[0]


def database_file(conn):
    """The path of conn's main database, or '' for one in memory."""
    return conn.execute("PRAGMA database_list").fetchone()[2]


def create_private_file(path):
    """Create the file readable by its owner only, unless it is already there."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def open_read_only(path):
    """A connection that cannot change the file (a backup being checked before a restore)."""
    conn = sqlite3.connect(f"file:{quote(str(Path(path).resolve()))}?mode=ro", uri=True,
                           isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


@contextmanager
def reading(source):
    """A connection that reads `source`: a database file's path, or a connection already open (a copy
    held in memory, `memory_copy`), left open."""
    if isinstance(source, sqlite3.Connection):
        yield source
        return
    conn = open_read_only(source)
    try:
        yield conn
    finally:
        conn.close()
