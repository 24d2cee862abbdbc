"""The database as commands and the service hold it: `open_database` at this agenda's schema ("Schema"),
`Database` (a connection per thread, the one write lock, "Connections and the write lock"), and a restore that
puts a checked copy in its place ("Backups and restore")."""

import datetime as dt
import os
import threading
from contextlib import contextmanager
from pathlib import Path

from .shipped import newest_version
from .connections import connect, create_private_file, reading, schema_version, transaction
from .events import recall, record_event, remember
from .copies import copy_database, fsync_path, keep_replaced, last_backup_of, scratch_folder
from .schema import migrate, SchemaBehind


REFUSE, UPGRADE, AS_IT_IS = "refuse", "upgrade", "as it is"  # what open_database does with an older schema


def open_database(path, older=REFUSE, seal_for=None, replicated=None):
    """Create (mode 0600) or open the database in WAL mode. A new one gets the newest schema; one at an
    older schema is refused (SchemaBehind, naming `agenda migrate`), upgraded (UPGRADE: `agenda run` and
    `agenda migrate`, the copy kept first sealed for `seal_for`) or opened AS_IT_IS (a backup) ("Schema")."""
    create_private_file(path)
    conn = connect(path, replicated=replicated)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        version, newest = schema_version(conn), newest_version()
        if version == 0 or (older == UPGRADE and version < newest):
            migrate(conn, seal_for=seal_for)
        elif version > newest:
            raise RuntimeError(f"the database is at schema version {version}, newer than this agenda ({newest}): "
                               "upgrade agenda before using it")
        elif version < newest and older == REFUSE:
            raise SchemaBehind(f"the database is at schema version {version}, older than this agenda's ({newest}): "
                               f"upgrade it first with `agenda migrate --db {path}` (starting the service does too)")
    except BaseException:
        conn.close()
        raise
    return conn


class Database:
    """One SQLite file: a connection per thread (waitress serves from several) and one
    write lock they queue on ("Connections and the write lock")."""

    def __init__(self, path, replicated=None):
        self.path, self.replicated = str(path), replicated
        self.write_lock = threading.Lock()
        self._local = threading.local()
        self._connections = []
        self._guard = threading.Lock()
        open_database(self.path, replicated=replicated).close()

    def connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path, replicated=self.replicated)
            with self._guard:
                self._connections.append(conn)
        return conn

    @contextmanager
    def transaction(self, durable=True):
        """`transaction()` on this thread's connection, once this process's other writers are done;
        `durable=False` commits without waiting for the disk (the access record's, "Access record")."""
        conn = self.connection()
        with self.write_lock:
            if not durable:
                conn.execute("PRAGMA synchronous = NORMAL")
            try:
                with transaction(conn):
                    yield conn
            finally:
                if not durable:
                    conn.execute("PRAGMA synchronous = FULL")

    def close(self):
        with self._guard:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()


def restore_database(db_path, src, version, counts, at, shown=None, seal_for=None):
    """Put a checked copy of src (a path, or a connection to a copy in memory) in place of db_path; the
    database it replaces is kept aside (DB.before-restore-STAMP, `at` in the clinic's time; sealed for
    `seal_for`, the backup recipients, when given), never deleted; the last backup the replaced one
    knew is kept known. Returns the path kept aside, or None."""
    database = Path(db_path)
    last_backup = last_backup_of(database)
    with scratch_folder(database) as folder:
        restoring = folder / "restoring.db"
        with reading(src) as source_conn:
            copy_database(source_conn, restoring)
        aside = keep_replaced(database, at, seal_for) if database.exists() else None
        os.replace(restoring, database)
        fsync_path(database.parent)
    conn = open_database(database, older=AS_IT_IS)  # `agenda migrate` or `agenda run` upgrades an older one
    try:
        with transaction(conn):
            record_event(conn, at, "cli", "database.restored", "database", None,
                         after={"from": shown or str(Path(src).resolve()), "keptAside": str(aside) if aside else None,
                                "schemaVersion": version, **counts})
            restored, restored_at = recall(conn, "last_backup")
            if last_backup[0] and (not restored_at or restored_at < last_backup[1]):
                remember(conn, "last_backup", last_backup[0], dt.datetime.fromisoformat(last_backup[1]))
    finally:
        conn.close()
    return aside
