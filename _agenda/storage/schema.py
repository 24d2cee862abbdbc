"""Migrations ("Schema"): schema.sql's sections run in order, once between processes, each in its own
transaction, a checked copy of the database kept aside first; what an upgrade did that the admin should read."""

import fcntl
import logging
import os
import re
import sqlite3
from collections import namedtuple
from contextlib import contextmanager
from pathlib import Path

from .shipped import read_schema, SCHEMA_FILE, schema_sections
from .connections import database_file, schema_version, transaction
from .copies import copy_database, integrity_checked, kept_copy_path, sealed_copy

log = logging.getLogger("agenda")


class SchemaBehind(RuntimeError):
    """The database is at an older schema than the code, and this command does not upgrade it."""


Upgrade = namedtuple("Upgrade", "found newest ran aside")  # versions found, reached, run here; the copy kept


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
