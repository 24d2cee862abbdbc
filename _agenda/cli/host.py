"""`agenda host`: many clinics served by one process, each a folder named for its host name ("A host of
clinics"): serve them all, and see them all in one table."""

import logging
import sqlite3
from pathlib import Path

import click

from .. import __version__
from ..values.printing import plural
from ..values.settings import Settings, settings_in_file
from ..storage.connections import open_read_only, schema_version
from ..storage.shipped import newest_version
from ..storage.database import Database, UPGRADE
from ..domain.clinic import Clinic
from ..domain.outbox import outbox_counts
from ..web.serving import CORES, log_to_stderr, serve_until_stopped, stop_logging
from ..web.host import CLINIC_DB, CLINIC_SETTINGS, clinic_folders, Clinics
from ..app import create_app
from .root import cli, existing_database, human_size, read_secret_file, secret_file_path

log = logging.getLogger("agenda")


@cli.group()
def host():
    """Many clinics served by one process, each in a folder of its own.

    A clinic's folder, under the host's folder, is named for the host name its
    caller and its desk reach it at (citas.clinicasol.es) and holds agenda.db, its
    shared secret in agenda.secret (`agenda secret set --db FOLDER/agenda.db`) and,
    optionally, its settings in agenda.toml (clinic_name = "Clínica Sol").

    Example:

    \b
        agenda host serve /srv/clinics --port 8080
    """


def open_clinic(folder, replica=None):
    """A clinic folder's app, upgraded and started as `agenda run` starts one; ValueError and the like when its
    database, secret or settings cannot be served."""
    db_path = folder / CLINIC_DB
    settings = settings_in_file(folder / CLINIC_SETTINGS) if (folder / CLINIC_SETTINGS).is_file() else {}
    secret_path = secret_file_path(db_path, None)
    if not secret_path.is_file():
        raise ValueError(f"{secret_path} is missing: agenda secret set --db {db_path}")
    try:
        secret = read_secret_file(secret_path)
    except click.ClickException as error:
        raise ValueError(error.message) from None
    try:
        existing_database(str(db_path), older=UPGRADE).close()
    except click.ClickException as error:
        raise ValueError(error.message) from None
    app = create_app(str(db_path), secret, replica=replica, **settings)
    app.clinic.access.start()
    return app


def close_clinic(app):
    """Put a clinic's app away: its reads written down, its connections closed."""
    app.clinic.access.stop()
    app.clinic.db.close()


@host.command("serve")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--host", "address", default="127.0.0.1", show_default=True, envvar="AGENDA_HOST",
              help="Address to listen on; keep 127.0.0.1 behind a reverse proxy (nginx passes the Host header).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), envvar="AGENDA_PORT",
              help="Port to listen on (0: any free port, logged at start).")
@click.option("--threads", default=16, show_default=True, type=click.IntRange(2, 128), envvar="AGENDA_THREADS",
              help="waitress worker threads for all the clinics together.")
@click.option("--share", default=8, show_default=True, type=click.IntRange(1, 127), envvar="AGENDA_HOST_SHARE",
              help="Requests of one clinic in flight at once (a lone `agenda run` serves 4); more are answered 503 "
                   "with Retry-After, so a clinic whose requests hang leaves threads to the others.")
@click.option("--cores", type=click.Choice(CORES), default="one", show_default=True, envvar="AGENDA_CORES",
              help="Keep the threads on one core (docs/design.md 'One core'), or let them run on every core.")
@click.pass_context
def host_serve(ctx, folder, address, port, threads, share, cores):
    """Serve every clinic folder under FOLDER, each at its own host name.

    A folder added is served within seconds, without a restart; one removed stops
    being served. A clinic that cannot be served (no secret, a damaged database, a
    wrong setting) answers 503 and is named in the log; the others go on.

    Example:

    \b
        agenda host serve /srv/clinics --port 8080
    """
    if share >= threads:
        raise click.ClickException(f"--share {share} would let one clinic take all {threads} threads: give "
                                   f"--share below --threads")
    serve, writer = (ctx.obj or {}).get("serve") or serve_until_stopped, log_to_stderr()
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    clinics = Clinics(folder, open_clinic, close_clinic, share=share)
    clinics.look(force=True)
    try:
        serve(clinics, on_listening=lambda url: click.echo(
            f"Agenda {__version__} serving {plural(len(clinics.served), 'clinic')} of {folder} on {url}", err=True),
              cores=cores, host=address, port=port, threads=threads, ident="agenda")
    except OSError as error:
        raise click.ClickException(f"cannot listen on {address}:{port}: {error}") from None
    finally:
        for one in list(clinics.served.values()):
            clinics.put_away(one)
        stop_logging(writer)


@host.command("status")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
def host_status(folder):
    """Every clinic under FOLDER in one table: schema, messages waiting and failed, disk; exit 1 on any in trouble.

    Example:

    \b
        agenda host status /srv/clinics
    """
    newest = newest_version()
    troubled = 0
    click.echo(f"{'clinic':40} {'schema':>8} {'waiting':>8} {'failed':>7} {'disk':>9}  state")
    for name, path in sorted(clinic_folders(folder).items()):
        row, trouble = clinic_row(path, newest)
        troubled += bool(trouble)
        click.echo(f"{name:40} {row}  {trouble or 'ok'}")
    click.echo(f"{plural(troubled, 'clinic')} in trouble" if troubled else "every clinic ok")
    raise SystemExit(1 if troubled else 0)


def clinic_row(path, newest):
    """(the table's columns, what is wrong or '') for one clinic folder."""
    db_path, size = path / CLINIC_DB, sum(part.stat().st_size for part in path.glob(CLINIC_DB + "*"))
    trouble = "" if secret_file_path(db_path, None).is_file() else "no secret: agenda secret set"
    try:
        if (path / CLINIC_SETTINGS).is_file():
            settings_in_file(path / CLINIC_SETTINGS)
        conn = open_read_only(str(db_path))
        try:
            version = schema_version(conn)
        finally:
            conn.close()
        counts = mail_counts(db_path) if version == newest else {}
    except (ValueError, sqlite3.Error, OSError) as error:
        return f"{'?':>8} {'?':>8} {'?':>7} {human_size(size):>9}", f"cannot be read: {error}"
    if version < newest and not trouble:
        trouble = f"schema {version} behind {newest}: upgraded when first served"
    return (f"{version:>8} {counts.get('waiting', 0):>8} {counts.get('failed', 0):>7} {human_size(size):>9}",
            trouble)


def mail_counts(db_path):
    """{state: how many} of a clinic's messages."""
    database = Database(str(db_path))
    try:
        return outbox_counts(Clinic(database, Settings(), None))
    finally:
        database.close()
