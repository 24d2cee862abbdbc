"""Storage: the SQLite file (connections, the one write lock, migrations), the audit trail's events,
the service's own facts, and copies of the file (backup and restore)."""

import datetime as dt
import json
import logging
import os
import re
import sqlite3
import sys
import sysconfig
import threading
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from .values import fold

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


CHECKPOINT_PAGES = 100  # SQLite's own auto-checkpoint, kept small so the write that runs it stays quick ("Storage")


def connect(path, timeout=5.0):
    """The one way to open the database: web, CLI and tests all come through here.

    foreign_keys and busy_timeout are set before any statement; isolation_level=None
    leaves transactions to `transaction()`; check_same_thread is off only so that
    `Database.close()` may close each thread's connection ("Storage").
    """
    conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.create_function("agenda_fold", 1, fold, deterministic=True)  # schema.sql's version 9 uses it
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    conn.execute("PRAGMA synchronous = FULL")  # a booking read back to a patient survives a power cut
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
    return conn


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


def migrate(conn, schema_text=None):
    """Bring the database up to the newest section of schema.sql, in order ("Schema")."""
    if schema_text is None:
        schema_text = read_schema()
    sections = schema_sections(schema_text)
    newest = sections[-1][0] if sections else 0
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > newest:
        raise RuntimeError(
            f"the database is at schema version {current}, newer than this agenda ({newest}): "
            "upgrade agenda before using it")
    if current and any(version > current for version, _ in sections):
        set_aside(conn, current, newest)
    for version, sql in sections:
        if version <= current:
            continue
        run_section(conn, version, sql)
        if current and version in UPGRADE_NOTES:
            note_upgrade(conn, *UPGRADE_NOTES[version])
    return newest


def run_section(conn, version, sql):
    """One section in one transaction, foreign keys off so that a table can be rebuilt (SQLite's
    way to change a column's constraint), and every reference checked before it commits ("Schema")."""
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        # executescript runs the section as written; the BEGIN makes it all or nothing.
        conn.executescript(f"BEGIN IMMEDIATE;\n{sql}\nPRAGMA user_version = {version};")
        broken = conn.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise sqlite3.IntegrityError(f"schema version {version} would leave {len(broken)} broken references")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("PRAGMA foreign_keys = ON")


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


def set_aside(conn, current, newest):
    """Before an upgrade: a checked copy of the database beside it, named with both versions and kept
    (clinic.db.before-schema-4-to-5), so that an upgrade can be undone by hand ("Schema")."""
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    if not path:
        return None  # an in-memory database has nothing to keep
    aside = Path(path).with_name(f"{Path(path).name}.before-schema-{current}-to-{newest}")
    if aside.exists():  # an earlier try of the same upgrade: keep its copy too
        aside = aside.with_name(f"{aside.name}.{dt.datetime.now():{BACKUP_STAMP}}")
    copy_database(conn, aside, check=integrity_checked)
    log.info("upgrading %s from schema %s to %s; the database as it was is kept as %s", path, current, newest, aside)
    return aside


def integrity_checked(path):
    """ValueError unless the SQLite file at path passes integrity_check."""
    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    try:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()
    if problems != ["ok"]:
        raise ValueError("integrity_check failed: " + "; ".join(problems[:5]))


def create_private_file(path):
    """Create the file readable by its owner only, unless it is already there."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def open_database(path):
    """Create (mode 0600) or open the database, in WAL mode, at the newest schema."""
    create_private_file(path)
    conn = connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    migrate(conn)
    return conn


class Database:
    """One SQLite file: a connection per thread (waitress serves from several) and one
    write lock they queue on ("Connections and the write lock")."""

    def __init__(self, path):
        self.path = str(path)
        self.write_lock = threading.Lock()
        self._local = threading.local()
        self._connections = []
        self._guard = threading.Lock()
        open_database(self.path).close()

    def connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path)
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


INSERT_PATIENT = ("INSERT INTO patients (name, surname, birth_date, nif, phone, phone_e164, created_at, search,"
                  " guardian_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


def patient_row(patient, at):
    """The parameters of INSERT_PATIENT for a patient made by patient_fields."""
    return (patient["name"], patient["surname"], patient["birth_date"], patient["nif"], patient["phone"],
            patient["phone_e164"], utc_iso(at), searched_name(patient["name"], patient["surname"]),
            patient.get("guardian_id"))


def searched_name(name, surname):
    """The patients row's search column for this name and surname ("Patient search")."""
    return fold(f"{name or ''} {surname or ''}")


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


def check_database_file(path):
    """The schema version and counts of an agenda database file; ValueError says what is wrong.

    Reads only: integrity_check first, then the schema version, then the tables.
    """
    newest = schema_sections(read_schema())[-1][0]
    try:
        conn = open_read_only(path)
    except sqlite3.Error as error:
        raise ValueError(f"cannot open it: {error}") from None
    try:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise ValueError("integrity_check failed: " + "; ".join(problems[:5]))
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            raise ValueError("it is not an agenda database (schema version 0)")
        if version > newest:
            raise ValueError(f"its schema version {version} is newer than this agenda's ({newest}); "
                             "upgrade agenda first")
        return version, database_counts(conn)
    except sqlite3.DatabaseError as error:
        raise ValueError(f"it is not a readable SQLite database: {error}") from None
    finally:
        conn.close()


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


def backup_database(conn, db_path, target, at, finish=None):
    """Copy conn's database (the file db_path) to target and note it for `agenda status`; (bytes, counts).
    finish(copy) -> (path, bytes), when given, turns the checked copy into the backup kept (sealing it)."""
    if target.resolve() == Path(db_path).resolve():
        raise ValueError(f"{target} is the database itself; give another file or a folder")
    _, counts = copy_database(conn, target)
    kept, size = finish(target) if finish else (target, target.stat().st_size)
    with transaction(conn):
        remember(conn, "last_backup", {"path": str(Path(kept).resolve()), "bytes": size, **counts}, at)
    return size, counts


def rotate_backups(db_path, folder, keep):
    """Delete all but the `keep` newest dated backups of db_path in folder; the paths deleted."""
    pattern = re.compile(re.escape(Path(db_path).stem) + r"-\d{8}-\d{6}(-\d+)?\.db(\.age)?")
    dated = sorted((path for path in Path(folder).iterdir() if pattern.fullmatch(path.name)),
                   key=lambda path: (path.stat().st_mtime, path.name))
    for old in dated[:-keep]:
        old.unlink()
    return dated[:-keep]


def prepare_restore(db_path, src):
    """Check a restore of the backup src over db_path before anything is replaced:
    (src's schema version, src's counts, db_path's counts or None). ValueError says why not.

    The current database leaves WAL mode here: that needs the only connection, so it fails
    while a server has the file open, and it folds the WAL in, so the copy kept aside is whole.
    """
    source, database = Path(src), Path(db_path)
    try:
        version, counts = check_database_file(source)
    except ValueError as error:
        raise ValueError(f"{src} was not restored and nothing changed: {error}") from None
    if database.exists() and database.resolve() == source.resolve():
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


def restore_database(db_path, src, version, counts, at, shown=None):
    """Put a checked copy of src in place of db_path; the files it replaces are kept aside
    (DB.before-restore-STAMP, `at` in the clinic's time), never deleted; the last backup the
    replaced one knew is kept known. Returns the path set aside, or None."""
    database = Path(db_path)
    restoring = database.with_name(f".{database.name}.restoring")
    last_backup = last_backup_of(database)
    try:
        source_conn = open_read_only(src)
        try:
            copy_database(source_conn, restoring)
        finally:
            source_conn.close()
        aside = None
        if database.exists():
            aside = database.with_name(f"{database.name}.before-restore-{at.strftime(BACKUP_STAMP)}")
            for suffix in ("", "-wal", "-shm"):
                if Path(f"{database}{suffix}").exists():
                    os.replace(f"{database}{suffix}", f"{aside}{suffix}")
            litestream_state = database.with_name(f".{database.name}-litestream")  # of the file set aside
            if litestream_state.exists():
                os.replace(litestream_state, aside.with_name(f".{aside.name}-litestream"))
        os.replace(restoring, database)
        fsync_path(database.parent)
    except BaseException:
        restoring.unlink(missing_ok=True)
        raise
    conn = open_database(database)
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
