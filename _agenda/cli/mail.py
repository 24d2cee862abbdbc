"""`agenda mail`: the patients' messages ("The sender"): send them (as `agenda run --smtp` does beside the
service), see what waits on the admin, release it, and send a test."""

import logging
import os
import signal
import threading

import click

from ..values.settings import Settings
from ..values.refusals import ClinicError
from ..values.fields import clinic_moment, format_date, parse_email
from ..values.printing import plural
from ..storage.database import Database
from ..storage.replication import replica_sync
from ..domain.clinic import Clinic
from ..domain.outbox import outbox_counts, release, waiting_on_admin
from ..words.texts import mail_reason
from ..patient.sender import Deferred, public_address, Refused, send_test, Sender, sender_lock, Unreachable
from .root import (cli, cli_now, cli_zone, clinic_at, db_option, existing_database, mailer_of,
                   message_options, sender_address, setting_option, smtp_options, tz_option)


@cli.group()
def mail():
    """The patients' messages: confirmations, updates, notices and reminders by e-mail.

    `agenda run --smtp URL` sends them beside the service; these commands send them
    alone, show what waits on the admin, release it, and test the server.

    Example:

    \b
        agenda mail status --db /var/lib/agenda/clinic.db
    """


@mail.command("send")
@db_option
@tz_option
@smtp_options
@message_options
@setting_option("clinic_name")
@click.option("--once", is_flag=True, help="One pass: send what is due now, then stop.")
@click.option("--every", default=5.0, show_default=True, type=click.FloatRange(0.5, 3600),
              help="Seconds between two passes.")
@click.option("--replica-socket", hidden=True, envvar="AGENDA_REPLICA_SOCKET",
              help="Litestream's control socket: a message goes once the replica holds its change.")
@click.pass_context
def mail_send(ctx, db_path, tz, smtp_url, smtp_password_file, smtp_ca, mail_from, public_url, mail_shows,
              reminder_hours, clinic_name, once, every, replica_socket):
    """Send the patients' messages as they are due, until stopped (SIGTERM or Ctrl-C).

    Each message is written when it goes, from the appointment as it is then: one
    that a later change made moot is dropped; a patient blocked or without messages
    gets none. A message begun when SIGTERM comes is finished first. A server that
    refuses for a while is tried again after a growing wait; a message refused for
    good is marked failed and `agenda mail status` lists it.

    The server, the sender's address and the links' address come from the options
    or, as a service sets them, from AGENDA_SMTP, AGENDA_SMTP_PASSWORD_FILE,
    AGENDA_MAIL_FROM and AGENDA_PUBLIC_URL.

    Example:

    \b
        agenda mail send --db /var/lib/agenda/clinic.db --once
    """
    mailer = mailer_of(smtp_url, smtp_password_file, smtp_ca)
    try:
        public_address(public_url)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    from_address = sender_address(mail_from)
    existing_database(db_path).close()
    settings = Settings(tz=tz, clinic_name=clinic_name, mail_shows=mail_shows, reminder_hours=reminder_hours)
    sync = (lambda: replica_sync(replica_socket, db_path)[0] == 200) if replica_socket else None
    only = only_sender(db_path)  # taken last: every refusal above leaves it to another sender
    clinic = None
    try:
        clinic = Clinic(Database(db_path, replicated=replica_socket is not None), settings, lambda: cli_now(ctx))
        sender = Sender(clinic, mailer, from_address, public_url, sync=sync)
        if once:
            done = sender.pass_once()
            click.echo(", ".join(f"{count} {state}" for state, count in sorted(done.items())) or "nothing to send")
            return
        logging.basicConfig(level=logging.INFO, format="%(message)s")  # counts only: `agenda run` logs each line
        stopping = threading.Event()
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, lambda *_: stopping.set())
        click.echo(f"Sending the patients' messages from {db_path} every {every:g} s", err=True)
        parent = os.environ.get("AGENDA_SENDER_PARENT")  # set by `agenda run`: its sender ends with it
        sender.until_stopped(stopping, every, alive=lambda: parent is None or os.getppid() == int(parent))
    finally:
        if clinic is not None:
            clinic.db.close()
        os.close(only)


def only_sender(db_path):
    """The one sender of a database ("The sender"), as `sender_lock` takes it; a ClickException when another
    sender holds it."""
    descriptor = sender_lock(db_path)
    if descriptor is None:
        raise click.ClickException(f"another `agenda mail send` is sending {db_path}'s messages (perhaps beside "
                                   "`agenda run --smtp`): one sender at a time, so that no message goes twice")
    return descriptor


@mail.command("status")
@db_option
@tz_option
@click.pass_context
def mail_status(ctx, db_path, tz):
    """How many messages are sent, waiting, stale, skipped, held and failed, and
    which wait on the admin, each with why and its appointment: held after a restore
    or a promotion (those tried before it may have gone already), failed after every
    try, or waiting on a server that refused them.

    Example:

    \b
        agenda mail status --db /var/lib/agenda/clinic.db
    """
    zone = cli_zone(tz)
    with clinic_at(ctx, db_path, tz) as clinic:
        counts, waiting = outbox_counts(clinic.conn()), waiting_on_admin(clinic)
    click.echo("Messages: " + ", ".join(f"{count} {state}" for state, count in counts.items()))
    for row in waiting:
        click.echo(f"  {row['id']}  {message_line(row, zone)}")
    if any(row["state"] != "waiting" for row in waiting):
        click.echo("Release them with `agenda mail retry` (all) or `agenda mail retry ID ...`; one made moot since is "
                   "dropped, not sent; one sent again carries its Message-ID, so mail programs show it once.")


def message_line(row, zone):
    """One message waiting on the admin, in words: state, kind, its appointment (number, day, time, doctor, center;
    never who), when written, tries, why."""
    state = "held, may have gone already" if row["state"] == "held" and row["attempts"] else row["state"]
    where = f"{row['doctor_id']}{' at ' + row['center_id'] if row['center_id'] else ''}"
    why = f": {mail_reason(row['error'])}" if row["error"] else ""
    return (f"{state}  {row['kind']} about appointment {row['appointment_id']} ({format_date(row['date'])} "
            f"{row['time']}, {where}), written {clinic_moment(row['created_at'], zone)}, {plural(row['attempts'], 'try')}"
            f"{why}")


@mail.command("retry")
@db_option
@tz_option
@click.argument("ids", nargs=-1, type=click.IntRange(1, None))
@click.pass_context
def mail_retry(ctx, db_path, tz, ids):
    """Send the held and failed messages again (these IDS, else all of them).

    Example:

    \b
        agenda mail retry 12 13 --db /var/lib/agenda/clinic.db
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        count = release(clinic, list(ids) or None)
    click.echo(f"{count} message(s) released: the sender sends them on its next pass." if count else
               "No held or failed message" + (" with those ids." if ids else "."))


@mail.command("test")
@db_option
@tz_option
@smtp_options
@setting_option("clinic_name")
@click.option("--language", type=click.Choice(("es", "en")), default="es", show_default=True)
@click.argument("address")
@click.pass_context
def mail_test(ctx, db_path, tz, smtp_url, smtp_password_file, smtp_ca, mail_from, clinic_name, language, address):
    """Send ADDRESS a test message through the clinic's SMTP server: it says only
    that the clinic's mail reaches that address.

    Example:

    \b
        agenda mail test recepcion@clinicasol.es --smtp smtps://citas@mail.clinicasol.es
    """
    try:
        to_address = parse_email(address, "ADDRESS")
    except ClinicError as error:
        raise click.BadParameter(error.message, param_hint="ADDRESS") from None
    mailer = mailer_of(smtp_url, smtp_password_file, smtp_ca)
    try:
        send_test(mailer, sender_address(mail_from), to_address, language, clinic_name, cli_now(ctx))
    except (Refused, Deferred, Unreachable) as error:
        raise click.ClickException(f"the test message was not sent: {mail_reason(str(error))}") from None
    click.echo(f"Sent a test message to {to_address}.")
