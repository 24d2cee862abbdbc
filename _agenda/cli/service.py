"""The service at the command line: `agenda run` (the API and the desk under waitress, Litestream
beside them), its shared secret (`secret set`) and `sign`."""

import base64
import dataclasses
import datetime as dt
import logging
import os
import re
import sqlite3
import sys
from pathlib import Path

import click

from .. import __version__
from ..values.settings import check_setting, Settings, SETTINGS, settings_given, variable, web_needs
from ..values.printing import plural
from ..storage.sealing import SealingError
from ..storage.connections import connect, create_private_file, schema_version, transaction
from ..storage.events import remember
from ..storage.schema import upgrade
from ..storage.database import AS_IT_IS, UPGRADE
from ..web.serving import CORES, log_to_stderr, serve_until_stopped, stop_logging
from ..web.api import BODYLESS_METHODS, SCHEME_WARNINGS, sign, signed_messages, SIGNED_SCHEMES
from ..app import create_app
from ..storage.replication import BEHIND_AFTER, DOWN_AFTER, litestream_binary, Replicator, without_password
from ..patient.messages import phone_warning
from ..patient.sender import public_address, SenderProcess
from .root import (cli, cli_recipients, clinic_setting_options, db_option, existing_database, mailer_of, proxy_options,
                   read_secret_file, recipients_option, secret_file_option, secret_file_path, sender_address,
                   smtp_options, waitress_options)


log = logging.getLogger("agenda")


def settings_file_option(function):
    """--settings: the clinic's settings file, from AGENDA_SETTINGS too."""
    return click.option(
        "--settings", "settings_file", envvar="AGENDA_SETTINGS", show_envvar=True, type=click.Path(dir_okay=False),
        help="The clinic's settings (TOML, a key a setting below: clinic_name = \"Clínica Sol\"); an option given "
             "here wins over it, it over a setting's variable [default: the database's name with .toml, when "
             "there: FOLDER/agenda.toml for FOLDER/agenda.db, as `agenda host` reads it].")(function)


@cli.command()
@db_option
@settings_file_option
@click.option("--secret", envvar="AGENDA_SECRET", default=None,
              help="The caller's shared secret [env: AGENDA_SECRET]; better: `agenda secret set`.")
@secret_file_option
@click.option("--insecure-no-signature", is_flag=True,
              help="Development only: serve without checking signatures.")
@click.option("--host", default="127.0.0.1", show_default=True, envvar="AGENDA_HOST",
              help="Address to listen on; keep 127.0.0.1 behind a reverse proxy.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), envvar="AGENDA_PORT",
              help="Port to listen on (0: any free port, logged at start).")
@click.option("--threads", default=4, show_default=True, type=click.IntRange(1, 64), envvar="AGENDA_THREADS",
              help="waitress worker threads, one SQLite connection each: 4 keep the caller answering while "
                   "reception opens its heaviest pages (docs/design.md, 'Nothing stalls the caller').")
@click.option("--cores", type=click.Choice(CORES), default="one", show_default=True, envvar="AGENDA_CORES",
              show_envvar=True,
              help="Keep the service's threads on one core (faster: the interpreter serves one thread at a time, "
                   "docs/design.md 'One core'), or let them run on every core.")
@proxy_options
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
@click.option("--litestream-down-after", default=DOWN_AFTER, show_default=True, type=click.IntRange(1, 3600),
              envvar="AGENDA_LITESTREAM_DOWN_AFTER", show_envvar=True,
              help="Seconds Litestream may be down (restarting; a replica unreachable at its start) before the "
                   "service checkpoints the WAL itself, passively, until Litestream is back (docs/replication.md).")
@recipients_option
@smtp_options
@clinic_setting_options
@click.pass_context
def run(ctx, db_path, settings_file, secret, secret_file, insecure_no_signature, host, port, threads, cores,
        trusted_proxy, trusted_proxy_headers, channel_timeout, replica, replica_key, replica_host_key,
        ack_after_replication, replica_behind_after, litestream_down_after, recipients, smtp_url, smtp_password_file,
        smtp_ca, mail_from, **given):
    """Serve the API and the staff desk with waitress (127.0.0.1:8080 unless told otherwise).

    The secret comes from AGENDA_SECRET, else from the file `agenda secret set`
    wrote. Refuses to start without one, unless --insecure-no-signature is given
    for development. Logs one line per request (never a query string, NIF, phone
    or name) and stops cleanly on SIGTERM or Ctrl-C. With --replica, Litestream
    copies every change off the machine as it happens (docs/replication.md). With
    --smtp, `agenda mail send` sends the patients' messages beside it. A
    database at an older schema is upgraded first, as `agenda migrate` does.

    Each of the clinic's settings (--tz and those after it) comes from its
    option, else the clinic's settings file (--settings; FOLDER/agenda.toml beside
    FOLDER/agenda.db), else its AGENDA_* variable, else its default.

    Example:

    \b
        agenda secret set --db clinic.db && agenda run --db clinic.db --replica /mnt/nas/agenda
        agenda run --db /srv/clinics/citas.clinicasol.es/agenda.db --horizon 60
    """
    check_the_start(ctx, db_path, ack_after_replication and not replica)
    settings = served_settings(ctx, db_path, settings_file, given, relay=bool(smtp_url))
    secret = secret_to_serve(db_path, secret, secret_file, insecure_no_signature, settings.signature_scheme)
    kept_for = cli_recipients(recipients, "cannot start")
    mail = sender_settings(db_path, settings, smtp_url, smtp_password_file, smtp_ca, mail_from) if smtp_url else None
    serve, writer = (ctx.obj or {}).get("serve") or serve_until_stopped, log_to_stderr()
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # the access log's durations say it once
    replicator = sender = None
    try:
        existing_database(db_path, older=UPGRADE, seal_for=kept_for).close()
        replicator = start_replication(db_path, replica, replica_key, replica_host_key,
                                       replica_behind_after, litestream_down_after) if replica else None
        try:
            app = create_app(db_path, secret, insecure=insecure_no_signature, **dataclasses.asdict(settings),
                             replica=replicator, after_write=replicator.sync if ack_after_replication else None)
        except (ValueError, RuntimeError, sqlite3.Error, OSError) as error:
            raise click.ClickException(f"cannot start: {error}") from None
        app.clinic.access.start()
        sender = started_sender(mail, replicator.socket_path if ack_after_replication else None, app.clinic.conn())
        if not app.clinic.conn().execute("SELECT 1 FROM doctors LIMIT 1").fetchone():
            log.warning("%s has no doctors: no slot can be offered; load the catalogs with `agenda seed`", db_path)
        try:
            serve(app, on_listening=lambda url: click.echo(f"Agenda {__version__} serving {db_path} on {url}", err=True),
                  cores=cores, **waitress_options(app.clinic.settings.max_body_bytes, host, port, threads,
                                                  channel_timeout, trusted_proxy, trusted_proxy_headers))
        except OSError as error:
            raise click.ClickException(f"cannot listen on {host}:{port}: {error}") from None
        finally:
            app.clinic.access.stop()
            app.clinic.db.close()
    finally:
        for beside in (sender, replicator):
            if beside is not None:
                beside.stop()
        stop_logging(writer)


def served_settings(ctx, db_path, settings_file, options, relay=False):
    """The clinic's Settings for `run`: an option given on the command line over its settings file (--settings,
    else the database's name with .toml when there) over the environment over the defaults ("Configuration and
    CLI"); a ClickException naming the option, file, key or variable, and the fix; or what the patients' page needs,
    when on (`relay`: a mail relay is given)."""
    if settings_file and not Path(settings_file).is_file():
        raise click.ClickException(f"{settings_file}: no such settings file; name the clinic's agenda.toml with "
                                   "--settings (or AGENDA_SETTINGS), or leave it out")
    given = {name: value for name, value in options.items()
             if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE}
    for name, value in given.items():
        try:
            check_setting(SETTINGS[name], value)
        except ValueError as error:
            raise click.ClickException(f"{SETTINGS[name].metadata['option']} {value!r}: {error}") from None
    try:
        settings = Settings(**settings_given(settings_file or Path(db_path).with_suffix(".toml"), os.environ, given))
        web_needs(settings, relay)
    except ValueError as error:
        raise click.ClickException(f"cannot start: {error}") from None
    return settings


def started_sender(mail, replica_socket, conn):
    """`agenda mail send` started beside the service with `mail`'s settings, or None without --smtp; a center
    without a phone warned of."""
    if mail is None:
        return None
    if phone_warning(conn):
        log.warning("%s", phone_warning(conn))
    sender = SenderProcess({**mail, **({"AGENDA_REPLICA_SOCKET": replica_socket} if replica_socket else {})})
    sender.start()
    return sender


def sender_settings(db_path, settings, smtp_url, password_file, ca_file, mail_from):
    """The environment of `agenda mail send` beside the service, the clinic's `settings` its own, each checked
    first (a wrong one stops the start, not the sender later)."""
    mailer_of(smtp_url, password_file, ca_file)
    sender_address(mail_from)
    try:
        public_address(settings.public_url)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    given = {"AGENDA_DB": str(Path(db_path).resolve()), "AGENDA_SMTP": smtp_url,
             "AGENDA_SMTP_PASSWORD_FILE": password_file and str(Path(password_file).resolve()),
             "AGENDA_SMTP_CA": ca_file and str(Path(ca_file).resolve()), "AGENDA_MAIL_FROM": mail_from}
    given.update({variable(SETTINGS[name]): str(getattr(settings, name))
                  for name in ("tz", "clinic_name", "mail_shows", "reminder_hours", "public_url")})
    return {name: value for name, value in given.items() if value is not None}


def check_the_start(ctx, db_path, ack_without_replica):
    """`run`'s refusals and warnings before anything is opened."""
    if not Path(db_path).is_file():
        raise click.ClickException(f"{db_path}: no such database; create it with `agenda seed CATALOGS.csv --db "
                                   f"{db_path}` (or `agenda seed --demo`), or give its path with --db or AGENDA_DB")
    if ack_without_replica:
        raise click.ClickException("--ack-after-replication waits for a replica: give --replica URL too")
    if ctx.get_parameter_source("secret") is click.core.ParameterSource.COMMANDLINE:
        click.echo("Warning: --secret on the command line is visible to every user of this machine (ps, "
                   "/proc); keep it with `agenda secret set`, or in AGENDA_SECRET from a file only root reads "
                   "(docs/deploy.md).", err=True)


@cli.command()
@db_option
@recipients_option
def migrate(db_path, recipients):
    """Bring the database to this agenda's schema, keeping a copy of it as it was first.

    `agenda run` does the same as it starts; every other command refuses a database
    at an older schema until one of them has. Two at once upgrade it once between
    them. The copy, DB.before-schema-N-to-M beside it (sealed to --encrypt-to or
    AGENDA_BACKUP_RECIPIENTS when given), is listed by `agenda status` and removed
    by `agenda retention run` after 30 days.

    Example:

    \b
        agenda migrate --db /var/lib/agenda/clinic.db
    """
    kept_for = cli_recipients(recipients, "nothing was upgraded")
    conn = existing_database(db_path, older=AS_IT_IS)
    try:
        done = upgrade(conn, seal_for=kept_for)
    except (sqlite3.Error, OSError, ValueError, RuntimeError, SealingError) as error:
        raise click.ClickException(f"{db_path}: the upgrade stopped at schema version {schema_version(conn)}: "
                                   f"{error}") from None
    finally:
        conn.close()
    if not done.ran:
        click.echo(f"{db_path} is at schema version {done.newest}, this agenda's: nothing to do.")
        return
    kept = f"; the database as it was is kept as {done.aside}" if done.aside else ""
    click.echo(f"Upgraded {db_path} from schema version {done.found} to {done.newest}{kept}.")


def start_replication(db_path, replica, key_path, host_key=None, behind_after=BEHIND_AFTER, down_after=DOWN_AFTER):
    """Litestream replicating db_path to `replica` beside the service, noted for `agenda status` and for
    every command run beside it (which then leaves checkpoints to Litestream, "Checkpoints")."""
    binary = litestream_binary()
    if binary is None:
        raise click.ClickException("--replica needs Litestream: pip install 'agenda[replica]' (or set "
                                   "AGENDA_LITESTREAM to the litestream executable)")
    try:
        replicator = Replicator(binary, db_path, replica, key_path, host_key, behind_after=behind_after,
                                down_after=down_after)
    except (RuntimeError, OSError) as error:
        raise click.ClickException(f"cannot start: {error}") from None
    conn = connect(db_path, replicated=True)
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
