"""The service's state at the command line: `agenda status` (what the agenda holds and how it runs) and `agenda
health` (a running service's /health, as the health timer reads it)."""

import datetime as dt
import json
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path

import click

from ..values.fields import clinic_moment, format_date
from ..values.printing import human_size, plural, waited_words
from ..storage.connections import open_read_only, schema_version
from ..storage.events import database_counts, recall
from ..storage.copies import KEEP_COPIES_DAYS, kept_copies
from ..domain.holds import unheld
from ..domain.appointments import count_by_status
from ..domain.counter import overlapping_pairs
from ..domain.reminders import last_cycle
from ..domain.outbox import mail_summary
from ..words.texts import mail_reason
from ..web.api import SIGNED_SCHEMES
from ..storage.replication import BEHIND_AFTER, replica_position, standby_checked
from .root import (cli, cli_now, cli_zone, db_option, existing_database, keep_copies_option,
                  secret_file_option, secret_file_path, tz_option)


def signature_advice(seen, tz):
    """What `agenda status` says of the schemes the caller signed with ({scheme: (count, last UTC time)}):
    never the weaker scheme when the caller uses the stronger one ("The caller's scheme")."""
    request_count, request_last = seen.get("request", (0, None))
    body_count, body_last = seen.get("body", (0, None))
    if request_last:
        also = f"; {plural(body_count, 'request')} signed the body alone" if body_count else ""
        return (f"the caller signs whole requests ({plural(request_count, 'request')}, last "
                f"{clinic_moment(request_last, tz)}{also}): the default scheme, `request`, the stronger one; keep it")
    if body_last:
        return (f"the caller signs only bodies ({plural(body_count, 'request')}, last {clinic_moment(body_last, tz)}): "
                "under --signature-scheme body one captured signature of an empty body opens every GET and "
                "DELETE (docs/security.md); ask the caller to sign requests")
    return "no signed request seen yet"


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


STATUS_NAMES = ("booked", "confirmed", "unanswered")


def status_lines(conn, db_path, now, tz, keep_days=KEEP_COPIES_DAYS):
    """(label, text) of what `agenda status` shows of the database."""
    counts = database_counts(conn)
    by_status, cycle = count_by_status(conn), last_cycle(conn)
    last_backup, backup_at = recall(conn, "last_backup")
    size = sum(Path(f"{db_path}{suffix}").stat().st_size for suffix in ("", "-wal")
               if Path(f"{db_path}{suffix}").exists())
    version = schema_version(conn)
    catalogs = f"{plural(counts['centers'], 'center')}, {plural(counts['doctors'], 'doctor')}"
    lines = [
        ("Database", f"{Path(db_path).resolve()} ({human_size(size)}, schema version {version})"),
        ("Catalogs", catalogs if counts["doctors"] else catalogs + ": nothing can be booked; load the catalogs "
                                                                   "with `agenda seed FILE`"),
        ("Patients", f"{counts['patients']:,}"),
        ("Appointments", f"{counts['appointments']:,}: " + ", ".join(
            f"{by_status.get(name, 0):,} {name}" for name in STATUS_NAMES + ("cancelled",))),
        ("Reminders", "no reminder cycle closed yet" if not cycle else
         f"last cycle closed {clinic_moment(cycle['closed_at'], tz)} for "
         f"{', '.join(format_date(day) for day in cycle['days'].split(','))}"
         f"{' at ' + cycle['center_id'] if cycle['center_id'] else ''}: "
         f"{len(json.loads(cycle['appointment_ids']))} handled ({cycle['policy']})"),
        ("Signatures", signature_advice(signatures_seen(conn), tz)),
        ("Mail", mail_line(conn, now, tz)),
    ]
    overlapping = overlapping_pairs(conn, now.astimezone(tz).date().isoformat())
    if overlapping:
        lines.append(("Overlaps", f"{plural(overlapping, 'pair')} of one patient's coming visits overlap (moved in "
                                  "from another system): the desk lists them under 'Llamar'"))
    unplaced = len(unheld(conn, now.astimezone(tz), started=True))  # under way too
    if unplaced:
        lines.append(("Holds", f"{plural(unplaced, 'coming appointment')} without the room or machine "
                               f"{'it needs' if unplaced == 1 else 'they need'} (moved in, or from before rooms were"
                               " held): the desk's rooms page lists each day's; move them there"))
    replica, started = recall(conn, "replica")
    if replica:
        position = replica_position(replica["socket"], str(Path(db_path).resolve()), now,
                                    dt.datetime.fromisoformat(started), replica.get("behind_after", BEHIND_AFTER))
        lines.append(("Replica", f"{replica['url']}: {position}"))
    drilled, drilled_at = recall(conn, "replica_check")
    if drilled:
        lines.append(("Last drill", f"{clinic_moment(drilled_at, tz)}: " + (
            f"ok, newest event {drilled['event']}" if drilled["ok"] else f"FAILED: {drilled['problem']}") + (
            "; more than a day ago: check the daily drill" if now - dt.datetime.fromisoformat(drilled_at) >
            dt.timedelta(days=1, hours=1) else "")))
    elif replica:
        lines.append(("Last drill", "none yet: run `agenda replica check` daily (docs/deploy.md, step 7)"))
    lines += [("Kept copy", kept_copy_line(path, kept_at, sealed, now, keep_days))
              for path, kept_at, sealed in kept_copies(db_path)]
    if not last_backup:
        lines.append(("Last backup", "none yet: run `agenda backup FOLDER --keep 14`"))
    else:
        stale = now - dt.datetime.fromisoformat(backup_at) > dt.timedelta(days=1)
        lines.append(("Last backup", f"{clinic_moment(backup_at, tz)} to {last_backup['path']} "
                                     f"({human_size(last_backup['bytes'])})"
                                     + ("; more than a day ago: check the nightly backup" if stale else "")))
    return lines


def mail_line(conn, now, tz):
    """What `agenda status` says of the patients' messages ("The sender"): how many wait and since when, those on
    the admin, and the server's last refusal in words."""
    counts, oldest, (refusal, refused_at) = mail_summary(conn)
    if not any(counts.values()):
        return "no message to a patient written yet"
    parts = [f"{counts['sent']:,} sent"]
    if counts["waiting"]:
        waited = now - dt.datetime.fromisoformat(oldest)
        parts.append(f"{counts['waiting']:,} waiting, the oldest written {clinic_moment(oldest, tz)} ("
                     f"{waited_words(waited)} ago)")
    on_admin = [f"{counts[state]:,} {state}" for state in ("held", "failed") if counts[state]]
    if on_admin:
        parts.append(" and ".join(on_admin) + ": `agenda mail status` lists them, `agenda mail retry` releases them")
    if refusal and (counts["waiting"] or on_admin):
        parts.append(f"last refusal {clinic_moment(refused_at, tz)}: {mail_reason(refusal)}")
    return "; ".join(parts)


def kept_copy_line(path, kept_at, sealed, now, keep_days):
    """What `agenda status` says of a copy kept before an upgrade or a restore."""
    days = (now - kept_at).days
    age = "today" if days < 1 else f"{plural(days, 'day')} ago"
    gone = ("due: `agenda retention run` removes it" if days >= keep_days else
            f"removed by `agenda retention run` after {keep_days} days")
    return f"{path.name} (kept {age}, {'sealed' if sealed else 'NOT sealed'}; {gone})"


@cli.command()
@db_option
@secret_file_option
@keep_copies_option
@tz_option
@click.pass_context
def status(ctx, db_path, secret_file, keep_copies_days, tz):
    """What the agenda holds and how it runs: file, counts, reminders, signatures, backups, and the
    copies kept beside the database before an upgrade or a restore.

    Times are the clinic's (--tz).

    Example:

    \b
        agenda status --db /var/lib/agenda/clinic.db
    """
    zone = cli_zone(tz)
    checked = standby_checked(db_path)
    # a standby's copy is Litestream's to write: read it only, never in WAL mode or upgraded (docs/replication.md)
    conn = open_read_only(db_path) if checked else existing_database(db_path)
    try:
        lines = status_lines(conn, db_path, cli_now(ctx), zone, keep_copies_days)
    except sqlite3.DatabaseError as error:  # a damaged file: said, never a traceback
        lines, checked = unreadable_lines(db_path, error, checked)
    finally:
        conn.close()
    stored = secret_file_path(db_path, secret_file)
    if stored.is_file():
        mode = stored.stat().st_mode & 0o777
        lines.append(("Secret", f"stored in {stored} (mode {mode:o}{', readable by others!' if mode & 0o077 else ''})"))
    else:
        lines.append(("Secret", "no stored secret; AGENDA_SECRET or `agenda secret set` gives one"))
    if checked:
        lines.append(("Standby", f"copy checked {checked[0].astimezone(zone):%d/%m/%Y %H:%M}: " + (
            f"FAILED: {checked[1]}; do not promote it" if checked[1] else "it passes")))
    for label, text in lines:
        click.echo(f"{label + ':':<14}{text}")


def unreadable_lines(db_path, error, checked):
    """(lines, the standby's check) of `agenda status` on a file SQLite cannot read whole: a standby's copy FAILED,
    whatever its last check said; a primary's a ClickException naming the restore."""
    if not checked:
        raise click.ClickException(f"{db_path} cannot be read whole ({error}): the file is damaged; `agenda restore` "
                                   "a backup, or `agenda restore --from-replica URL`, which looks back for the latest "
                                   "moment that passes the check")
    problem = (f"reading it fails ({error}); `agenda restore --from-replica` looks back for the latest moment "
               "that passes")
    return [("Database", f"{Path(db_path).resolve()}: cannot be read whole")], (dt.datetime.now(dt.timezone.utc),
                                                                                 problem)


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
