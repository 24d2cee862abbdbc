"""Copies of the file ("Backups and restore", "Encrypted backups"): checked, compact, sealed or in memory;
backups and their rotation; copies kept beside the database; scratch folders; a restore's checks before it."""

import datetime as dt
import fcntl
import io
import os
import re
import secrets
import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from .sealing import seal_stream
from .shipped import newest_version
from .connections import (connect, create_private_file, database_file, open_read_only, reading, schema_version,
                          transaction)
from .events import database_counts, recall, remember


def integrity_checked(source):
    """ValueError unless the database (a file's path, or a connection to a copy in memory) passes
    integrity_check."""
    with reading(source) as conn:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    if problems != ["ok"]:
        raise ValueError("integrity_check failed: " + "; ".join(problems[:5]))


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
