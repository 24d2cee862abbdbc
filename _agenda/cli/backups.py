"""Copies of the database at the command line: `agenda backup` (sealed with age when asked) and
`agenda restore` (from a backup or a replica's state) ("Backups and restore", "Encrypted backups")."""

import datetime as dt
import importlib.util
import re
import shlex
import sqlite3
import sys
from pathlib import Path

import click

from ..values.settings import Settings
from ..values.fields import format_date
from ..values.printing import human_size, plural, printable
from ..storage.shipped import newest_version
from ..storage.events import recall
from ..storage.copies import backup_database, backup_target, memory_database, prepare_restore, rotate_backups, scratch_folder
from ..storage.database import AS_IT_IS, Database, restore_database
from ..domain.access import AccessRecord
from ..domain.identity import identities
from ..domain.clinic import Clinic
from ..storage.replication import replica_url, ReplicaUnreadable, restore_points, restore_replica, without_password
from ..storage.replica_restore import (checked_point, integrity_problem, Lost, lost_changes, scratch_replica,
                                      walk_back, WALK_SECONDS, WALK_TRIES)
from ..storage.sealing import identities_of, is_sealed, open_sealed, SealingError
from .root import (cli, cli_date, cli_now, cli_reader, cli_recipients, cli_zone, db_option, describe_counts,
                  existing_database, hold_unsent_messages, need_litestream, recipients_option,
                  refuse_readable_by_others,
                  sweep_left_copies, tz_option)


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
              help="With --from-replica: the state at this clinic time, DD/MM/YYYY HH:MM[:SS], or at a transaction as "
                   "a restore that looked back names it, \"transaction N\" (default: the newest).")
@click.option("--lost-from", "lost_from", default=None,
              help="With --at \"transaction N\" as a restore that looked back prints it: the moment first asked for; "
                   "what the restore loses is listed up to it and after it.")
@click.option("--identity", type=click.Path(dir_okay=False), default=None,
              help="For an encrypted backup: the age identity file (or SSH private key) that opens it, "
                   "readable by its owner only.")
@recipients_option
@click.option("--yes", "-y", is_flag=True, help="Do not ask before replacing the database.")
@tz_option
@click.pass_context
def restore(ctx, db_path, src, replica, moment, lost_from, identity, recipients, yes, tz):
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
        agenda restore --from-replica /mnt/nas/agenda --at "transaction 1394" --lost-from "24/11/2026 10:15"
        agenda restore /mnt/usb/clinic-20261121-030000.db.age --identity /root/agenda-backup.key
    """
    if bool(src) == bool(replica) or (moment and not replica) or (lost_from and not moment):
        raise click.ClickException("give a backup file SRC, or --from-replica URL [--at TIME [--lost-from TIME]] "
                                   "(not both)")
    kept_for = cli_recipients(recipients, "nothing was restored")
    sweep_left_copies(db_path)
    if replica:
        return restore_replica_state(ctx, db_path, replica, (moment, lost_from), yes, tz, kept_for)
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
    held = hold_unsent_messages(db_path)
    if held:
        click.echo(held)
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


def restore_replica_state(ctx, db_path, replica, moments, yes, tz, kept_for):
    """`restore --from-replica`: the newest state (or the one at the moment asked, `moments`' first, the loss
    said up to its second when given) when it passes integrity_check, tried again with the replica's compacted
    files set aside in a scratch copy when it does not; else a walk back to the latest that passes, restored
    only when asked, with what it loses ("Restore drills")."""
    binary, shown = need_litestream("--from-replica"), f"the replica {without_password(replica_url(replica))}"
    (moment, lost_from), listed = moments, lambda: replica_points(binary, replica)
    txid, at = asked_point(moment, tz, listed)
    first = lost_from and (*asked_point(lost_from, tz, listed), lost_from)
    what = f"state at {moment}" if moment else "newest state"
    with scratch_folder(db_path) as folder:
        source, (newest, unread, wanted, problem) = replica, states(binary, replica, folder, txid, at)
        if problem is not None or unread is not None:  # the newest state is needed whole to say what is lost
            retried = set_aside_and_retry(binary, replica, folder, txid, at, what if problem else "newest state",
                                          problem or unread)
            if retried is not None:
                (source, moved), (other, other_unread, other_wanted, other_problem) = retried
                if other is not None and (newest is None or other_unread is None):
                    newest, unread = other, other_unread
                if problem is not None and other_problem is None:
                    wanted, problem = other_wanted, None
                    shown += f" ({plural(len(moved), 'compacted file')} set aside)"
        if problem is None:
            restore_file(ctx, db_path, wanted, shown + (f" at {moment}" if moment else ""), yes, tz, kept_for,
                         from_replica=True)
            for span, newer, lost in walk_losses(binary, (replica, source), folder, wanted, (newest, unread), first):
                show_lost(ctx, db_path, newer, lost, tz, span)
            return None
        click.echo(f"The replica's {what} cannot be restored: {problem}. Restoring it would give the clinic a damaged "
                   "database, so nothing was restored. The replica also holds earlier moments: this looks back over "
                   f"them for the latest that passes the check (at most {WALK_TRIES} tries and {WALK_SECONDS // 60} "
                   "minutes), then says what restoring it would lose.")
        earlier = [point for point in replica_points(binary, replica)  # listed only when a walk back needs them
                   if (at is None or point.at <= at) and (txid is None or point.txid <= txid)]
        for index, walked in enumerate(dict.fromkeys((replica, source))):  # then over the copy, files set aside
            click.echo("Looking back over the scratch copy, its compacted files set aside:\n" if index else "", nl=False)
            found = walk_back(binary, walked, folder, earlier, lambda text: click.echo(text, nl=False),
                              lambda point: f"{moment_text(point.at, tz)} (transaction {point.txid})")
            if found is not None:
                break
        if found is None:
            raise click.ClickException(f"no earlier moment of the replica passes the check either; restore the "
                                       f"newest backup instead ({newest_backup_line(db_path)})")
        asked = first or (moment and (txid, at, moment))
        losses = walk_losses(binary, (replica, source), folder, found.copy, (newest, unread), asked)
        restore_found(ctx, db_path, replica, found, losses, (shown, yes, tz, kept_for, asked and asked[2]))


def restore_found(ctx, db_path, replica, found, losses, options):
    """Say the moment a walk back found and what restoring it loses; restore it only when asked at a terminal,
    else print the command that does."""
    shown, yes, tz, kept_for, asked = options
    when = moment_text(found.point.at, tz)
    command = (f"agenda restore --from-replica {shlex.quote(without_password(replica))} --at "
               f"'transaction {found.point.txid}'{' --lost-from ' + shlex.quote(asked) if asked else ''} "
               f"--db {shlex.quote(str(db_path))}")
    click.echo(("The latest moment that passes is " if found.exact else
                "The latest moment found that passes (the tries ran out: a moment up to transaction "
                f"{found.later.txid} may pass too; give it to --at to try) is ") +
               f"{when} (transaction {found.point.txid}). Restoring it would lose " +
               "; and ".join(loss_words(lost, newer, span) for span, newer, lost in losses) +
               ". The appointments are listed once it is restored, so that reception can phone the patients.")
    if yes or not sys.stdin.isatty():
        hidden = " (with the replica's password where *** stands)" if "***" in command else ""
        raise click.ClickException(f"nothing was restored. To restore that moment{hidden}: {command}")
    click.confirm(f"Restore the state of {when} into {db_path}?", abort=True)
    restore_file(ctx, db_path, found.copy, f"{shown} at {when}", True, tz, kept_for, from_replica=True)
    for span, newer, lost in losses:
        show_lost(ctx, db_path, newer, lost, tz, span)


def states(binary, replica, folder, txid, at, tag=""):
    """(the newest state as it is, damaged or not, or None; why it cannot be restored or fails the check, or None;
    the state asked for when it passes the check, or None; why it does not) of the replica."""
    newest, unread = as_it_is(binary, replica, folder / f"newest{tag}.db")  # read only for what a restore loses
    flaw = unread if newest is None else integrity_problem(newest)
    if txid is not None or at is not None:
        return (newest, flaw, *checked_point(binary, replica, folder / f"wanted{tag}.db", txid, at))
    return newest, flaw, newest if flaw is None else None, flaw


def set_aside_and_retry(binary, replica, folder, txid, at, what, problem):
    """((the scratch copy's URL, the files set aside), its `states`) once the compacted files of a folder
    replica that its lower levels repeat are set aside in a scratch copy of its files; None for a replica that
    is no folder, or has none to set aside."""
    try:
        copied = scratch_replica(replica, folder / "copy")
    except ReplicaUnreadable as error:
        copied, why = None, f"{error}; "
    else:
        kind = re.match(r"\w+://", replica_url(replica))[0]
        needs = {"file://": None, "s3://": "boto3", "sftp://": "asyncssh"}.get(kind, "")
        why = "" if needs is None or needs and importlib.util.find_spec(needs) else (
            f"a replica's files are copied from there with {needs}: pip install 'agenda[replica]'; " if needs else
            f"a {kind} replica is read as it is; ")
    if copied is None:
        if why:
            click.echo(f"({why}to have a damaged compacted file set aside, copy the replica's files into a local "
                       "folder and give that folder to --from-replica.)")
        return None
    names = ", ".join(copied[1][:5]) + (f" and {len(copied[1]) - 5} more" if len(copied[1]) > 5 else "")
    click.echo(f"The replica's {what} cannot be restored as it is: {problem}. Trying again from a scratch copy of "
               f"its files, with {plural(len(copied[1]), 'compacted file')} set aside ({names}): the files they were "
               "compacted from hold the same changes.")
    found = states(binary, copied[0], folder, txid, at, "-set-aside")
    click.echo(f"In that copy the {what} " + ("restores and passes the check." if (found[3] if txid or at else found[1])
                                              is None else "does not pass either."))
    return copied, found


def walk_losses(binary, sources, folder, restored, newest, asked):
    """[(span, newer state, Lost)] of restoring the copy `restored`: from it to the newest state; with a moment
    asked for ((txid, UTC time, as typed)), from it to that moment, and from that moment to the newest state."""
    if not asked:
        return [("after that moment", newest[0], lost_of(newest[0], restored, newest[1]))]
    txid, at, moment = asked
    state, why = None, None
    for replica in dict.fromkeys(sources):  # the replica, then the copy with its compacted files set aside
        try:
            state = restore_replica(binary, replica, folder / "asked.db", at, txid)  # as it is, damaged or not
            break
        except ReplicaUnreadable as error:
            why = f"Litestream could not restore it: {error}"
    return [(f"between that moment and {moment}", state, lost_of(state, restored, why, f"the state at {moment}")),
            (f"after {moment}", newest[0], lost_of(newest[0], state, newest[1]) if state else
             Lost({}, {}, f"the state at {moment} cannot be read ({why})"))]


def loss_words(lost, newer, span):
    """What a restore loses over `span`, in words; a loss that cannot be counted said as unknown, with what
    could be read, never as 'at least 0'."""
    if newer is None or (lost.error and not lost.appointments):
        return f"an unknown number of changes {span}: {lost.error}"
    counted = f"{plural(len(lost.appointments), 'appointment')} booked, moved or cancelled {span}"
    return f"{counted} as far as it could be read, and an unknown number more ({lost.error})" if lost.error else counted


def as_it_is(binary, replica, output):
    """(the replica's newest state restored as it is, damaged or not, None) or (None, why Litestream could not)."""
    try:
        return restore_replica(binary, replica, output), None
    except ReplicaUnreadable as error:
        return None, f"Litestream could not restore it: {error}"


def lost_of(newest, older, unread, what="the newest state"):
    """What restoring `older` loses of the newer state `newest` (`what`); when that cannot be read, that it cannot."""
    if newest is None:
        return Lost({}, {}, f"{what} cannot be read ({unread})")
    return lost_changes(newest, older)


def replica_points(binary, replica):
    """The replica's restore points, newest first; a ClickException when Litestream cannot list them."""
    try:
        return list(reversed(restore_points(binary, replica)))
    except ReplicaUnreadable as error:
        raise click.ClickException(f"nothing was restored: Litestream could not read "
                                   f"{without_password(replica_url(replica))}: {error}") from None


def asked_point(moment, tz, listed):
    """(txid, moment) of --at: `transaction N` as a restore that looked back names it (one of the points listed()
    gives), a clinic time, or neither (the newest)."""
    given = re.fullmatch(r"\s*transaction\s+(\d+)\s*", moment or "", re.IGNORECASE)
    if not given:
        return None, cli_moment(moment, tz) if moment else None
    points = listed()
    if int(given[1]) not in {point.txid for point in points}:
        raise click.ClickException(f"--at {moment!r}: the replica has no such transaction; " + (
            f"its moments run from {points[-1].txid} to {points[0].txid}" if points else "it holds none"))
    return int(given[1]), None


def show_lost(ctx, db_path, newer, lost, tz, span):
    """What a restore to an earlier moment lost over `span`: each appointment whose date, time, doctor or state
    differ (a moved one with both times), with the patient's name and phone read through the identity door from
    the newer state, the read noted in the restored database; the other changes to do again; and how far the
    newer state could be read."""
    if lost.appointments:
        rows = [row for pair in lost.appointments.values() for row in pair if row]
        people = {}
        try:
            clinic = Clinic(Database(newer), Settings(tz=tz), lambda: cli_now(ctx))
            clinic.access = AccessRecord(Database(db_path), clinic.clock)
            people = identities(clinic, [row["patient_id"] for row in rows], cli_reader(), "restore")
        except (sqlite3.Error, ValueError, RuntimeError) as error:
            click.echo(f"(the patients' names cannot be read from the newer state: {error})")
        click.echo(f"Changed {span} ({plural(len(lost.appointments), 'appointment')}); phone these patients:")
        for key, (before, after) in sorted(lost.appointments.items(),
                                           key=lambda item: ((item[1][1] or item[1][0])["date"], item[0])):
            person = people.get((after or before)["patient_id"], {})
            who = " ".join(filter(None, (person.get("full_name") or f"patient {(after or before)['patient_id']}",
                                         person.get("phone"))))
            click.echo(printable(f"  {key}: {visit_words(after or before)} {who}: {change_words(before, after)}"))
    if lost.others:
        click.echo(f"Also changed {span}, to do again: " + ", ".join(
            f"{count} {action}" for action, count in sorted(lost.others.items())) + ".")
    if lost.error:
        click.echo(f"More may have changed {span}: {lost.error}.")


def visit_words(row):
    return f"{format_date(row['date'])} {row['time']} {row['doctor_id']}"


def change_words(before, after):
    """How an appointment differs between the restored agenda (`before`) and the newer state (`after`)."""
    if before is None:
        return f"not in the restored agenda ({after['status']} after that moment)"
    if after is None:
        return f"in the restored agenda ({before['status']}); not in the newer state"
    if (before["date"], before["time"], before["doctor_id"]) != (after["date"], after["time"], after["doctor_id"]):
        return f"in the restored agenda at {visit_words(before)} ({before['status']}); moved since to " \
               f"{visit_words(after)} ({after['status']})"
    return f"{before['status']} in the restored agenda; {after['status']} since"


def moment_text(moment, tz):
    """A UTC moment as `--at` reads it: DD/MM/YYYY HH:MM:SS in the clinic's time."""
    return f"{moment.astimezone(cli_zone(tz)):%d/%m/%Y %H:%M:%S}"


def newest_backup_line(db_path):
    """Where the newest `agenda backup` of db_path is, as the database remembers it, or how to find one."""
    try:
        conn = existing_database(db_path, older=AS_IT_IS)
    except click.ClickException:
        return "this database does not say where: look in the backup folder, e.g. /var/backups/agenda"
    try:
        last, at = recall(conn, "last_backup")
    finally:
        conn.close()
    return f"{last['path']}, of {at}" if last else "none was made from this database: look in the backup folder"
