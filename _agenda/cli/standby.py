"""A copy following the replica at the command line: `agenda standby` (a read-only copy kept within seconds of
the primary), `standby promote`, and `agenda replica check`, the restore drill ("Replication", "Restore drills")."""

import logging
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import click

from ..values.printing import human_size
from ..storage.copies import check_database_file
from ..storage.database import AS_IT_IS, open_database
from ..web.serving import log_to_stderr, stop_logging
from ..storage.replication import (BEHIND_AFTER, check_standby, litestream_environment, log_litestream, redactor,
                                   replica_url, without_password)
from ..storage.replica_restore import integrity_problem
from .root import (cli, drilled, db_option, describe_counts, hold_unsent_messages, lowest_priority,
                   need_litestream, stopped_cleanly)


log = logging.getLogger("agenda")


@cli.group(invoke_without_command=True)
@db_option
@click.option("--replica", default=None, envvar="AGENDA_REPLICA",
              help="The replica to follow: a folder, file://, sftp:// or s3:// [env: AGENDA_REPLICA].")
@click.option("--check-every", default=600, show_default=True, type=click.IntRange(1, 86400),
              envvar="AGENDA_STANDBY_CHECK_EVERY", show_envvar=True,
              help="Seconds between integrity checks of the copy; a failure is logged and shown by `agenda status`.")
@click.pass_context
def standby(ctx, db_path, replica, check_every):
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
    binary = need_litestream("standby")
    writer = log_to_stderr()
    try:
        follow_replica(binary, replica, Path(db_path).resolve(), check_every)
    finally:
        stop_logging(writer)


def follow_replica(binary, replica, copy, check_every=600, backoff=1.0):
    """Litestream's follow mode into `copy` until SIGTERM, started afresh (with backoff) if it stops; the copy
    checked every `check_every` seconds (`check_standby`)."""
    stopping = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    try:
        while not stopping.is_set():
            for leftover in (copy, *(Path(f"{copy}{suffix}") for suffix in ("-txid", "-wal", "-shm"))):
                Path(leftover).unlink(missing_ok=True)  # follow mode starts from no file
            process = subprocess.Popen([binary, "restore", "-f", "-follow-interval", "1s", "-o", str(copy),
                                        replica_url(replica)], umask=0o077, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, errors="replace", env=litestream_environment())
            log.info("standby: following %s into %s (litestream pid %s)", without_password(replica_url(replica)),
                     copy, process.pid)
            threading.Thread(target=log_litestream, args=(process.stdout, redactor(replica_url(replica))),
                             daemon=True).start()
            checked = time.monotonic() - check_every + min(check_every, 60)  # the first check a minute in at most
            while process.poll() is None and not stopping.wait(0.5):
                if time.monotonic() - checked >= check_every and copy.is_file():
                    check_standby(copy)
                    checked = time.monotonic()
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
    problem = integrity_problem(copy)
    if problem is not None:
        raise click.ClickException(
            f"{db_path} was not promoted: {problem}. The standby's copy is damaged; rebuild this machine's agenda "
            "from the replica's latest moment that passes the check instead: agenda restore --from-replica REPLICA "
            f"--db {db_path}.restored (it looks back and names the moment to give as --at)")
    try:
        version, counts = check_database_file(copy)
        Path(f"{copy}-txid").unlink(missing_ok=True)
        Path(f"{copy}.check").unlink(missing_ok=True)  # no longer a standby: its checks are history
        open_database(copy, older=AS_IT_IS).close()
    except (ValueError, sqlite3.Error) as error:
        raise click.ClickException(f"{db_path} was not promoted: {error}") from None
    click.echo(f"Promoted {db_path}: {describe_counts(counts)}. Now serve it, replicating to a new place:\n"
               f"  agenda run --db {db_path} --replica NEW_REPLICA")
    held = hold_unsent_messages(db_path)
    if held:
        click.echo(held)


@cli.group()
def replica():
    """Check the replica Litestream keeps off the machine (docs/replication.md).

    Example:

    \b
        agenda replica check --replica /mnt/nas/agenda --db /var/lib/agenda/clinic.db
    """


@replica.command("check")
@db_option
@click.option("--replica", "url", default=None, envvar="AGENDA_REPLICA",
              help="The replica to check: a folder, file://, sftp:// or s3:// [env: AGENDA_REPLICA].")
@click.option("--behind-after", "behind_after", default=BEHIND_AFTER, show_default=True,
              type=click.IntRange(5, 86400), envvar="AGENDA_REPLICA_BEHIND_AFTER", show_envvar=True,
              help="Seconds the replica's newest event may trail the live database's before the drill fails.")
@click.pass_context
def replica_check(ctx, db_path, url, behind_after):
    """A restore drill: restore the replica's newest state into a private temporary file, check it, compare it
    with the live database, remove it; one line, and exit 1 on any problem.

    Runs at the lowest CPU and I/O priority beside the service. The copy lies in a
    folder only this user can enter beside --db, removed even when the drill is
    stopped. Its newest event must be in the live database unchanged (the replica
    trails it by a second or so), and no older than the live one's by --behind-after.
    The result and its time are in `agenda status`;
    docs/deploy.md runs it daily with an alert.

    Example:

    \b
        agenda replica check --replica sftp://agenda@nas.local/volume1/agenda --db /var/lib/agenda/clinic.db
    """
    if not url:
        raise click.ClickException("give the replica to check: --replica URL (or AGENDA_REPLICA)")
    binary = need_litestream("replica check")
    lowest_priority()
    with stopped_cleanly():
        verdict, facts, noted = drilled(ctx, binary, db_path, url, behind_after)
    line = f"replica check {'ok' if verdict is None else 'FAILED'}: {without_password(replica_url(url))}: " + (
        verdict or f"restored and checked ({human_size(facts['bytes'])}, newest event {facts['event']} "
                   f"{'found unchanged in the live database' if facts['compared'] else 'not compared: no live database here'})")
    if verdict is not None:
        raise click.ClickException(line + noted)
    click.echo(line + noted)

