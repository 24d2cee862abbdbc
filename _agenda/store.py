"""Storage: the SQLite file (connections, the one write lock, migrations), the audit trail's events,
the service's own facts, and copies of the file (backup and restore)."""

import datetime as dt
import fcntl
import io
import json
import logging
import os
import re
import secrets
import shutil
import sqlite3
import sys
import sysconfig
import tempfile
import threading
import time
from collections import namedtuple
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from .fields import fold
from .sealing import open_sealed, seal_stream

log = logging.getLogger("agenda")

# Every file the code reads, by its path from the project's top: the same tree in a checkout, in an
# install (the package's own files beside it; the rest under <prefix>/share/agenda, by setup.cfg's
# globs) and in agenda.pyz ("Files that ship").
SCHEMA_FILE = "schema.sql"
OPENAPI_FILE = "openapi.json"
DEMO_CATALOGS = "seed/catalogs.csv"
TEMPLATES = "_agenda/templates"
_TOP = Path(__file__).resolve().parent.parent
_SECTION = re.compile(r"^-- version (\d+)\s*$", re.MULTILINE)


def data_file_path(name):
    """Where a shipped file is on disk: under the project's top (a checkout; the package's own files in
    an install), else under <prefix>/share/agenda (an install's data files)."""
    candidates = [_TOP / name]
    for scheme in (None, f"{os.name}_user"):
        try:
            data = sysconfig.get_path("data", scheme) if scheme else sysconfig.get_path("data")
        except KeyError:
            continue
        candidates.append(Path(data) / "share" / "agenda" / name)
    candidates.append(Path(sys.prefix) / "share" / "agenda" / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise RuntimeError(f"{name} not found; looked in: {', '.join(map(str, candidates))}")


def schema_path():
    return data_file_path(SCHEMA_FILE)


def read_data_file(name):
    """The bytes of a shipped file: from disk, or from inside agenda.pyz (the one-file build)."""
    loader = globals().get("__loader__")
    if loader is not None and type(loader).__name__ == "zipimporter":
        return loader.get_data(os.path.join(loader.archive, name))
    return data_file_path(name).read_bytes()


def read_schema():
    return read_data_file(SCHEMA_FILE).decode("utf-8")


def schema_sections(text):
    """[(version, sql), ...] in order, from the '-- version N' headings of schema.sql."""
    marks = list(_SECTION.finditer(text))
    sections = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        sections.append((int(mark[1]), text[mark.end():end]))
    versions = [version for version, _ in sections]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"{SCHEMA_FILE} sections must be numbered 1, 2, 3, ... in order")
    return sections


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


class SchemaBehind(RuntimeError):
    """The database is at an older schema than the code, and this command does not upgrade it."""


Upgrade = namedtuple("Upgrade", "found newest ran aside")  # versions found, reached, run here; the copy kept


def schema_version(conn):
    return conn.execute("PRAGMA user_version").fetchone()[0]


def newest_version(schema_text=None):
    sections = schema_sections(schema_text if schema_text is not None else read_schema())
    return sections[-1][0] if sections else 0


def migrate(conn, schema_text=None, seal_for=None):
    """Bring the database up to the newest section of schema.sql, in order; the newest version ("Schema")."""
    return upgrade(conn, schema_text, seal_for).newest


def upgrade(conn, schema_text=None, seal_for=None):
    """Run the sections above the database's version, once between processes: under the upgrade lock,
    a copy kept first (sealed for `seal_for`, the backup recipients, when given), then each section in
    its own write transaction, which reads the version again ("Schema")."""
    sections = schema_sections(read_schema() if schema_text is None else schema_text)
    newest = sections[-1][0] if sections else 0
    with upgrade_lock(conn):
        found = schema_version(conn)
        if found > newest:
            raise RuntimeError(f"the database is at schema version {found}, newer than this agenda ({newest}): "
                               "upgrade agenda before using it")
        aside = set_aside(conn, found, newest, seal_for) if 0 < found < newest else None
        ran = []
        for version, sql in sections:
            if version > found and run_section(conn, version, sql):
                ran.append(version)
                if found and version in UPGRADE_NOTES:
                    note_upgrade(conn, *UPGRADE_NOTES[version])
    return Upgrade(found, newest, ran, aside)


def database_file(conn):
    """The path of conn's main database, or '' for one in memory."""
    return conn.execute("PRAGMA database_list").fetchone()[2]


@contextmanager
def upgrade_lock(conn):
    """Held while one process upgrades a database file: a lock (flock) on the folder that holds it, which
    the system drops when the process ends however it ends; nothing to hold for a database in memory."""
    path = database_file(conn)
    if not path:
        yield
        return
    folder = os.open(Path(path).parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        yield
    finally:
        os.close(folder)  # closing drops the lock


def run_section(conn, version, sql):
    """One section in one write transaction that first reads the version again (False, nothing done:
    another process ran it), foreign keys off so that a table can be rebuilt (SQLite's way to change a
    column's constraint), every reference checked before it commits ("Schema")."""
    conn.execute("PRAGMA foreign_keys = OFF")  # not within a transaction: SQLite ignores it there
    try:
        with transaction(conn):
            if schema_version(conn) >= version:
                return False
            for statement in sql_statements(sql):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version}")
            broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise sqlite3.IntegrityError(f"schema version {version} would leave {len(broken)} broken references")
        return True
    finally:
        conn.execute("PRAGMA foreign_keys = ON")


_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)


def sql_statements(sql):
    """The statements of a schema section one by one, each ending at the first ';' that completes it
    (sqlite3.complete_statement: a trigger's body, a string or a comment may hold ';')."""
    statements, start = [], 0
    for found in re.finditer(";", sql):
        if sqlite3.complete_statement(sql[start:found.end()]):
            statements.append(sql[start:found.end()])
            start = found.end()
    if _COMMENTS.sub("", sql[start:]).strip():
        raise RuntimeError(f"a {SCHEMA_FILE} section ends with a statement without its ';': {sql[start:][:60]!r}")
    return statements


# What an upgrade to a version did that the admin should read: (query, words for its answer).
UPGRADE_NOTES = {
    7: ("SELECT group_concat(name, ', ') FROM (SELECT name FROM staff ORDER BY name)",
        "staff accounts made before roles are now admin: {}; `agenda staff role NAME reception` for those "
        "who only do the day's work (docs/design.md, \"Roles\")"),
}


def note_upgrade(conn, query, words):
    """Log what an upgrade did, when the query finds anything."""
    found = conn.execute(query).fetchone()[0]
    if found:
        log.warning(words.format(found))


def set_aside(conn, current, newest, seal_for=None):
    """Before an upgrade: a checked copy of the database beside it, named with both versions and kept
    (clinic.db.before-schema-4-to-5, or .age sealed for `seal_for`), so that an upgrade can be undone
    by hand ("Schema")."""
    path = database_file(conn)
    if not path:
        return None  # an in-memory database has nothing to keep
    aside = kept_copy_path(path, f"before-schema-{current}-to-{newest}", bool(seal_for))
    if seal_for:
        sealed_copy(conn, aside, seal_for, check=integrity_checked)
    else:
        copy_database(conn, aside, check=integrity_checked)
    log.info("upgrading %s from schema %s to %s; the database as it was is kept as %s", path, current, newest, aside)
    return aside


def integrity_checked(source):
    """ValueError unless the database (a file's path, or a connection to a copy in memory) passes
    integrity_check."""
    with reading(source) as conn:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    if problems != ["ok"]:
        raise ValueError("integrity_check failed: " + "; ".join(problems[:5]))


def create_private_file(path):
    """Create the file readable by its owner only, unless it is already there."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


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


def utc_iso(moment):
    """An aware datetime as ISO text in UTC, to the second (how times are stored)."""
    return moment.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


_STORED_JSON = json.JSONEncoder(ensure_ascii=False)  # events and service_state


def record_event(conn, at, source, action, entity, entity_id, before=None, after=None):
    """Every change leaves a row saying when, from where, what, and the rows around it ("Audit")."""
    conn.execute(
        "INSERT INTO events (at, source, action, entity, entity_id, before, after)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (utc_iso(at), source, action, entity, None if entity_id is None else str(entity_id),
         None if before is None else _STORED_JSON.encode(before),
         None if after is None else _STORED_JSON.encode(after)))


def remember(conn, key, value, at):
    """Keep one fact about the service for `agenda status` (scheme seen, last backup)."""
    conn.execute(
        "INSERT INTO service_state (key, value, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (key, _STORED_JSON.encode(value), utc_iso(at)))


def recall(conn, key):
    """(value, updated_at) of a fact kept by `remember`, or (None, None)."""
    row = conn.execute("SELECT value, updated_at FROM service_state WHERE key = ?", (key,)).fetchone()
    return (None, None) if row is None else (json.loads(row["value"]), row["updated_at"])


def database_counts(conn):
    """What an admin checks a copy by: patients, appointments (live ones too), doctors."""
    return dict(conn.execute(
        "SELECT (SELECT count(*) FROM patients) AS patients,"
        " (SELECT count(*) FROM appointments) AS appointments,"
        " (SELECT count(*) FROM appointments WHERE status != 'cancelled') AS live_appointments,"
        " (SELECT count(*) FROM doctors) AS doctors,"
        " (SELECT count(*) FROM centers) AS centers").fetchone())


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


def check_database_file(source):
    """The schema version and counts of an agenda database (a file's path, or a connection to a copy in
    memory); ValueError says what is wrong. Reads only: integrity_check first, then the schema version,
    then the tables."""
    newest = newest_version()
    try:
        with reading(source) as conn:
            problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            if problems != ["ok"]:
                raise ValueError("integrity_check failed: " + "; ".join(problems[:5]))
            version = schema_version(conn)
            if version == 0:
                raise ValueError("it is not an agenda database (schema version 0)")
            if version > newest:
                raise ValueError(f"its schema version {version} is newer than this agenda's ({newest}); "
                                 "upgrade agenda first")
            return version, database_counts(conn)
    except sqlite3.DatabaseError as error:
        raise ValueError(f"it is not a readable SQLite database: {error}") from None


def memory_copy(conn):
    """A compact copy of conn's database (VACUUM INTO: one read transaction, so the service may go on
    writing, and no page a deletion freed) held in this process's memory only, in SQLite's memdb: nothing
    of it on any disk, gone with the process however it ends ("Encrypted backups")."""
    name = f"file:/agenda-copy-{os.getpid()}-{secrets.token_hex(8)}?vfs=memdb"
    copy = sqlite3.connect(name, uri=True, isolation_level=None, check_same_thread=False)  # holds it while open
    copy.row_factory = sqlite3.Row
    try:
        # a connection of its own, opened with URIs on, so that VACUUM INTO reads `name` as the memdb
        source = sqlite3.connect(f"file:{quote(str(Path(database_file(conn)).resolve()))}", uri=True)
        try:
            source.execute("VACUUM INTO ?", (name,))
        finally:
            source.close()
    except BaseException:
        copy.close()
        raise
    return copy


def memory_database(data):
    """A database held in memory only, from the bytes of a database file (a sealed backup opened), a
    writable buffer: a WAL file's header is marked rollback in it, as memory holds no WAL."""
    if bytes(data[:16]) == b"SQLite format 3\x00" and bytes(data[18:20]) == b"\x02\x02":
        data[18:20] = b"\x01\x01"
    copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    copy.row_factory = sqlite3.Row
    try:
        copy.deserialize(data)
    except BaseException:
        copy.close()
        raise
    return copy


def sealed_copy(conn, target, recipients, check=None):
    """A copy of conn's database, checked (`check`: check_database_file) and sealed to `recipients` into
    the new file target (0600); the clear copy only ever in this process's memory ("Encrypted
    backups"). Returns (what the check returns, bytes written)."""
    copy = memory_copy(conn)
    try:
        checked = (check or check_database_file)(copy)
        plain = io.BytesIO(copy.serialize())
    finally:
        copy.close()  # the serialized bytes alone stay in memory while they are sealed
    return checked, seal_stream(plain, target, recipients)


def fsync_path(path):
    """Flush a file, or a folder's entries after a rename, to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def copy_database(conn, dest, check=None):
    """A consistent, compact copy of conn's database at dest, mode 0600, placed atomically.

    VACUUM INTO writes a temporary file beside dest from one read transaction (so a
    server may go on writing), the copy must pass `check` (check_database_file: its
    integrity, version and tables), then it is flushed and renamed over dest. Returns
    what the check returns: the copy's schema version and counts.
    """
    check = check or check_database_file
    dest = Path(dest)
    temporary = dest.with_name(f".{dest.name}.{os.getpid()}.partial")
    temporary.unlink(missing_ok=True)
    create_private_file(temporary)
    try:
        conn.execute("VACUUM INTO ?", (str(temporary),))
        checked = check(temporary)
        fsync_path(temporary)
        os.replace(temporary, dest)
        fsync_path(dest.parent)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return checked


BACKUP_STAMP = "%Y%m%d-%H%M%S"


def backup_target(db_path, dest, at, suffix=".db"):
    """Where a backup goes: DEST itself, or, when DEST is a folder (or ends in '/'), a new file
    in it named after the database and `at` (clinic-20261121-030000.db)."""
    target = Path(dest)
    if not (target.is_dir() or str(dest).endswith(("/", os.sep))):
        return target
    target.mkdir(parents=True, exist_ok=True)
    stem, stamp = Path(db_path).stem, at.strftime(BACKUP_STAMP)  # `at` in the clinic's time
    target, serial = target / f"{stem}-{stamp}{suffix}", 1
    while target.exists():
        serial += 1
        target = target.with_name(f"{stem}-{stamp}-{serial}{suffix}")
    return target


def backup_database(conn, db_path, target, at, seal_for=None):
    """Copy conn's database (the file db_path) as it is to target, or sealed for `seal_for` (the clear
    copy in memory only), and note it for `agenda status`; (bytes, counts)."""
    if target.resolve() == Path(db_path).resolve():
        raise ValueError(f"{target} is the database itself; give another file or a folder")
    if seal_for:
        (_, counts), size = sealed_copy(conn, target, seal_for)
    else:
        _, counts = copy_database(conn, target)
        size = target.stat().st_size
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'service_state'").fetchone():  # since version 2
        with transaction(conn):
            remember(conn, "last_backup", {"path": str(Path(target).resolve()), "bytes": size, **counts}, at)
    return size, counts


def rotate_backups(db_path, folder, keep):
    """Delete all but the `keep` newest dated backups of db_path in folder; the paths deleted."""
    pattern = re.compile(re.escape(Path(db_path).stem) + r"-\d{8}-\d{6}(-\d+)?\.db(\.age)?")
    dated = sorted((path for path in Path(folder).iterdir() if pattern.fullmatch(path.name)),
                   key=lambda path: (path.stat().st_mtime, path.name))
    for old in dated[:-keep]:
        old.unlink()
    return dated[:-keep]


# Copies kept beside the database ("Backups and restore"): before an upgrade or a restore, listed by
# `agenda status` and removed by `agenda retention run` after KEEP_COPIES_DAYS.
KEEP_COPIES_DAYS = 30
_KEPT = re.compile(r"\.before-(schema-\d+-to-\d+|restore-\d{8}-\d{6})(\.\d{8}-\d{6}(-\d+)?)?(\.age)?")


def kept_copy_path(db_path, label, sealed):
    """A free name for a copy kept beside the database: clinic.db.before-LABEL (.age when sealed), a
    stamp added when an earlier copy has that name."""
    database = Path(db_path)
    base = database.with_name(f"{database.name}.{label}")
    candidate, serial = base, 1
    while any(Path(f"{candidate}{suffix}").exists() for suffix in ("", ".age")):
        stamp = f"{dt.datetime.now():{BACKUP_STAMP}}" + (f"-{serial}" if serial > 1 else "")
        candidate, serial = base.with_name(f"{base.name}.{stamp}"), serial + 1
    return Path(f"{candidate}.age") if sealed else candidate


def kept_copies(db_path):
    """The copies kept beside the database before an upgrade or a restore, oldest first:
    [(path, kept at (aware UTC, the file's time), sealed)]."""
    database = Path(db_path).resolve()
    found = [(path, dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc), path.name.endswith(".age"))
             for path in database.parent.iterdir()
             if path.name.startswith(database.name) and _KEPT.fullmatch(path.name[len(database.name):])
             and path.is_file()]
    return sorted(found, key=lambda kept: (kept[1], kept[0].name))


def remove_kept_copies(db_path, kept_before):
    """Delete the copies kept before `kept_before` (an aware datetime), with a renamed database's -wal,
    -shm and Litestream state; the paths deleted."""
    removed = []
    for path, kept_at, _ in kept_copies(db_path):
        if kept_at < kept_before:
            for companion in (Path(f"{path}-wal"), Path(f"{path}-shm"), path.with_name(f".{path.name}-litestream")):
                if companion.is_dir():
                    shutil.rmtree(companion)
                else:
                    companion.unlink(missing_ok=True)
            path.unlink()
            removed.append(path)
    return removed


# Scratch folders: where a command puts a clear file it cannot keep in memory (a database being
# restored, Litestream's restore), beside the database and named with the command's process id.
_SCRATCH = re.compile(r"\.(?P<db>.+)\.scratch-(?P<pid>\d+)-\w+")
_LEFT_BY_OLDER = re.compile(r"\.(backup|restore|replica)-\w{8}")  # what earlier versions' temporary folders hold


@contextmanager
def scratch_folder(db_path):
    """A new folder beside the database (0700) for the clear files of this command, removed when it
    ends, and by `sweep_scratch` if it is killed; locked (flock) while its process lives ("Backups and
    restore")."""
    database = Path(db_path).resolve()
    folder = Path(tempfile.mkdtemp(prefix=f".{database.name}.scratch-{os.getpid()}-", dir=database.parent))
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(descriptor)


def sweep_scratch(db_path):
    """Remove the scratch folders of this database whose command is gone (killed: a process id no longer
    running and no lock on the folder), and the clear copies earlier versions left in .backup-*,
    .restore-* and .replica-* folders; the paths removed."""
    database = Path(db_path).resolve()
    removed = []
    for path in database.parent.iterdir() if database.parent.is_dir() else ():
        scratch = _SCRATCH.fullmatch(path.name)
        mine = scratch and scratch["db"] == database.name and not process_running(int(scratch["pid"]))
        if (mine or _LEFT_BY_OLDER.fullmatch(path.name)) and path.is_dir() and not path.is_symlink() \
                and not locked(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def process_running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def locked(folder):
    """Whether a living process holds the folder's lock (a scratch folder's owner)."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False


def prepare_restore(db_path, src):
    """Check a restore of the backup src (a path, or a connection to a copy in memory) over db_path
    before anything is replaced: (src's schema version, src's counts, db_path's counts or None).
    ValueError says why not.

    The current database leaves WAL mode here: that needs the only connection, so it fails
    while a server has the file open, and it folds the WAL in, so the copy kept aside is whole.
    """
    database = Path(db_path)
    try:
        version, counts = check_database_file(src)
    except ValueError as error:
        raise ValueError(f"{src} was not restored and nothing changed: {error}") from None
    if not isinstance(src, sqlite3.Connection) and database.exists() and database.resolve() == Path(src).resolve():
        raise ValueError(f"{src} is the database itself; give a backup")
    if not database.is_file():
        return version, counts, None
    current = connect(database, timeout=0.2)
    try:
        current_counts = database_counts(current)
        if current.execute("PRAGMA journal_mode = DELETE").fetchone()[0] != "delete":
            raise sqlite3.OperationalError("database is locked")
    except sqlite3.OperationalError as error:
        if "locked" in str(error) or "busy" in str(error):
            raise ValueError(f"{db_path} is in use, probably by the running service: stop it first "
                             "(sudo systemctl stop agenda), then restore") from None
        raise ValueError(f"{db_path}: cannot open the database: {error}") from None
    except sqlite3.DatabaseError:
        current_counts = None
    finally:
        current.close()
    return version, counts, current_counts


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


def keep_replaced(database, at, seal_for=None):
    """Keep the database a restore replaces beside it: renamed (with its -wal, -shm and Litestream
    state), or sealed for `seal_for` and the clear files left for the restore to replace; its path."""
    label = f"before-restore-{at.strftime(BACKUP_STAMP)}"
    aside = kept_copy_path(database, label, bool(seal_for))
    if seal_for:
        current = connect(database)
        try:
            sealed_copy(current, aside, seal_for, check=integrity_checked)
        finally:
            current.close()
        for leftover in (Path(f"{database}-wal"), Path(f"{database}-shm")):
            leftover.unlink(missing_ok=True)  # empty: the restore's check folded the log in
        shutil.rmtree(database.with_name(f".{database.name}-litestream"), ignore_errors=True)
        return aside
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{database}{suffix}").exists():
            os.replace(f"{database}{suffix}", f"{aside}{suffix}")
    os.utime(aside)  # kept from now: its age counts from the restore
    litestream_state = database.with_name(f".{database.name}-litestream")  # of the file set aside
    if litestream_state.exists():
        os.replace(litestream_state, aside.with_name(f".{aside.name}-litestream"))
    return aside


def last_backup_of(database):
    """(value, at) of the last backup a database file knew, or (None, None)."""
    if not database.is_file():
        return None, None
    conn = open_read_only(database)
    try:
        return recall(conn, "last_backup")
    except sqlite3.Error:
        return None, None
    finally:
        conn.close()


def written_row(conn, sql, params):
    """The row that an INSERT, or an UPDATE of one row, wrote, as the statement itself
    returns it ("Audit": the event's `after`)."""
    (row,) = conn.execute(f"{sql} RETURNING *", params).fetchall()
    return dict(row)
