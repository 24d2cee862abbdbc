"""`agenda host`: many clinics served by one process, each a folder named for its host name ("A host of
clinics"): serve them all, see them all in one table, and drill every clinic's replica."""

import datetime as dt
import functools
import logging
import os
import resource
import signal
import sqlite3
import threading
from pathlib import Path

import click

from .. import __version__
from ..values.printing import human_size, plural, waited_words
from ..values.settings import Settings, settings_given, web_needs
from ..storage.connections import open_read_only, schema_version
from ..storage.events import recall, remember
from ..storage.shipped import newest_version
from ..storage.database import UPGRADE
from ..storage.replication import (BEHIND_AFTER, duration, last_shipped, litestream_call, unshipped_for,
                                   without_password)
from ..storage.leases import (clinic_url, generation_url, Holder, holder_name, LEASE_SECONDS, objects_at,
                              read_lease)
from ..storage.host_replication import close_replica, ClinicReplica, HostReplicator, open_replica, replica_sync_for
from ..domain.outbox import outbox_counts
from ..web.serving import CORES, log_to_stderr, serve_until_stopped, stop_logging
from ..web.host import CLINIC_DB, CLINIC_SETTINGS, clinic_folders, Clinics, passed_over
from ..patient.sender import passes_until_stopped
from ..patient.host_sender import host_clinics, HostSender
from ..web.proxy_sites import NGINX_LOCATIONS, proxy_sites
from ..app import create_app
from .root import (cli, cli_now, DEFAULTS, drilled, existing_database, lowest_priority, mailer_of,
                   need_litestream, proxy_options, read_secret_file, secret_file_path, sender_address, smtp_options,
                   stopped_cleanly, waitress_options)

log = logging.getLogger("agenda")


@cli.group()
def host():
    """Many clinics served by one process, each in a folder of its own.

    A clinic's folder is named for its host name (citas.clinicasol.es), or for a
    path prefix on the host's own name (clinicasol: /clinicasol/), and holds
    agenda.db, its secret in agenda.secret and its settings in agenda.toml.

    Example:

    \b
        agenda host serve /srv/clinics --port 8080
    """


def host_folder(folder):
    """The host's folder, refused with the fix when it is not there."""
    if not Path(folder).is_dir():
        raise click.ClickException(f"{folder}: no such folder; make it (a folder a clinic inside, named for its "
                                   "host name), or name the one that holds the clinics")
    return Path(folder)


def all_files_allowed():
    """The soft limit of open files raised to the hard one: a host holds a few files a clinic open, and systemd's
    soft limit would refuse a host of some hundreds of clinics ("A host of clinics")."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def open_clinic(folder, hosting=None):
    """A clinic folder's app, upgraded and started as `agenda run` starts one, leased and replicated when
    `hosting` (the host's replicator and leases) is given; ValueError and the like when its database, secret,
    settings or lease cannot be served."""
    db_path = folder / CLINIC_DB
    settings = settings_given(folder / CLINIC_SETTINGS, os.environ)  # as `agenda run --db FOLDER/agenda.db` reads it
    web_needs(Settings(**settings), relay=True)  # the host's sender is a unit of its own, `agenda host mail`
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
    replica = open_replica(*hosting, folder.name, folder) if hosting else None
    try:
        app = create_app(str(db_path), secret, replica=replica, after_write=replica and replica.sync, **settings)
    except BaseException:
        if replica is not None:
            close_replica(replica)
        raise
    if replica is not None:  # where `agenda host status` asks for its lag, as `agenda run` notes it
        with app.clinic.db.transaction() as conn:
            remember(conn, "replica", {"url": clinic_url(without_password(replica.replicator.base), folder.name),
                                       "socket": replica.socket_path, "behind_after": replica.behind_after},
                     dt.datetime.now(dt.timezone.utc))
    app.clinic.access.start()
    return app


def close_clinic(app):
    """Put a clinic's app away: its reads written down, its connections closed, its replication stopped."""
    app.clinic.access.stop()
    app.clinic.db.close()
    if isinstance(app.replica, ClinicReplica):
        close_replica(app.replica)


def start_hosting(folder, replica, lease_seconds):
    """(the host's replicator, its leases), both started, for `--replica`; a ClickException saying why not."""
    binary = need_litestream("--replica")
    try:
        leases = Holder(objects_at(replica), holder_name(folder), lease_seconds)
        replicator = HostReplicator(binary, folder, replica)
    except RuntimeError:
        raise click.ClickException(f"another `agenda host serve --replica` already serves {folder}: stop it "
                                   "first (one host a folder)") from None
    except (ValueError, OSError, ImportError) as error:
        raise click.ClickException(f"cannot replicate: {error}") from None
    leases.start()
    replicator.start()
    return replicator, leases


@host.command("serve")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--host", "address", default="127.0.0.1", show_default=True, envvar="AGENDA_HOST", show_envvar=True,
              help="Address to listen on; keep 127.0.0.1 behind a reverse proxy (nginx passes the Host header).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
              envvar="AGENDA_PORT", show_envvar=True,
              help="Port to listen on (0: any free port, logged at start).")
@click.option("--threads", default=16, show_default=True, type=click.IntRange(2, 128),
              envvar="AGENDA_THREADS", show_envvar=True,
              help="waitress worker threads for all the clinics together.")
@click.option("--share", default=8, show_default=True, type=click.IntRange(1, 127),
              envvar="AGENDA_HOST_SHARE", show_envvar=True,
              help="Requests of one clinic in flight at once (a lone `agenda run` serves 4); more are answered 503 "
                   "with Retry-After, so a clinic whose requests hang leaves threads to the others.")
@click.option("--cores", type=click.Choice(CORES), default="one", show_default=True,
              envvar="AGENDA_CORES", show_envvar=True,
              help="Keep the threads on one core (docs/design.md 'One core'), or let them run on every core.")
@click.option("--replica", default=None, envvar="AGENDA_REPLICA", show_envvar=True,
              help="Replicate every clinic to its own path under this base (s3://bucket/prefix?endpoint=... or a "
                   "folder), each under a lease, each change answered once its replica holds it.")
@click.option("--lease-seconds", default=LEASE_SECONDS, show_default=True, type=click.IntRange(3, 3600),
              envvar="AGENDA_LEASE_SECONDS", show_envvar=True,
              help="How long a clinic's lease holds unrenewed (docs/design.md 'Leases').")
@proxy_options
@click.pass_context
def host_serve(ctx, folder, address, port, threads, share, cores, replica, lease_seconds, trusted_proxy,
               trusted_proxy_headers, channel_timeout):
    """Serve every clinic folder under FOLDER, each at its own host name.

    A folder added is served within seconds, without a restart; one removed stops
    being served. A clinic that cannot be served (no secret, a damaged database, a
    wrong setting) answers 503 and is named in the log; the others go on.

    With --replica, one Litestream copies every clinic to BASE/NAME/gN (N its
    lease's generation), and a change is answered only once its replica holds it
    while this host's lease on the clinic holds; a clinic whose replica or lease
    fails answers 503 to changes, the others go on.

    Example:

    \b
        agenda host serve /srv/clinics --port 8080 --replica s3://clinics/eu1?region=eu-west-1
    """
    host_folder(folder)
    all_files_allowed()
    if share >= threads:
        raise click.ClickException(f"--share {share} would let one clinic take all {threads} threads: give "
                                   f"--share below --threads")
    serve, writer = (ctx.obj or {}).get("serve") or serve_until_stopped, log_to_stderr()
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    hosting = start_hosting(folder, replica, lease_seconds) if replica else None
    clinics = Clinics(folder, functools.partial(open_clinic, hosting=hosting), close_clinic, share=share)
    clinics.look(force=True)
    try:
        serve(clinics, on_listening=lambda url: click.echo(
            f"Agenda {__version__} serving {plural(len(clinics.served), 'clinic')} of {folder} on {url}", err=True),
              cores=cores, **waitress_options(DEFAULTS.max_body_bytes, address, port, threads, channel_timeout,
                                              trusted_proxy, trusted_proxy_headers))
    except OSError as error:
        raise click.ClickException(f"cannot listen on {address}:{port}: {error}") from None
    finally:
        clinics.close_all()
        for part in reversed(hosting or ()):
            part.stop()
        stop_logging(writer)


@host.command("status")
@click.argument("folder", type=click.Path(file_okay=False))
@click.pass_context
def host_status(ctx, folder):
    """Every clinic under FOLDER in one table: schema, messages waiting and failed, disk, how far its replica lags
    and its last drill; exit 1 on any in trouble.

    A clinic is in trouble when it cannot be served, when its replica is behind
    (nothing shipped for its service's --replica-behind-after, 5 minutes by
    default), or when its last drill (`agenda host drill`) failed or is more than
    two days old. The lag is `?` where its service's Litestream cannot be asked.

    Example:

    \b
        agenda host status /srv/clinics
    """
    host_folder(folder)
    newest, troubled, clinics, now = newest_version(), 0, sorted(clinic_folders(folder).items()), cli_now(ctx)
    click.echo(f"{'clinic':40} {'schema':>8} {'waiting':>8} {'failed':>7} {'disk':>9} {'lag':>7} {'last drill':>14}"
               "  state")
    for name, path in clinics:
        row, trouble, note = clinic_row(path, newest, now)
        troubled += bool(trouble)
        click.echo(f"{name:40} {row}  {trouble or note or 'ok'}")
    for name, why in sorted(passed_over(folder).items()):
        click.echo(f"{name:40} not served: {why}")
    if not clinics:
        raise no_clinics(folder)
    click.echo(f"{plural(troubled, 'clinic')} in trouble" if troubled else "every clinic ok")
    raise SystemExit(1 if troubled else 0)


def no_clinics(folder):
    return click.ClickException(f"{folder} holds no clinic: a clinic is a folder named for its host name, with "
                                f"{CLINIC_DB} in it (agenda host -h)")


def clinic_row(path, newest, now):
    """(the table's columns, what is wrong or '', a note or '') for one clinic folder."""
    db_path, size = path / CLINIC_DB, sum(part.stat().st_size for part in path.glob(CLINIC_DB + "*"))
    unknown = f"{'?':>8} {'?':>8} {'?':>7} {human_size(size):>9} {'?':>7} {'?':>14}"
    try:
        read_secret_file(secret_file_path(db_path, None)) if secret_file_path(db_path, None).is_file() else None
        settings_given(path / CLINIC_SETTINGS, os.environ)
    except click.ClickException as error:
        return unknown, f"its secret: {error.message}", ""
    except ValueError as error:
        return unknown, f"a wrong setting: {error}", ""
    troubles = [] if secret_file_path(db_path, None).is_file() else [f"no secret: agenda secret set --db {db_path}"]
    try:
        conn = open_read_only(str(db_path))
        try:
            version = schema_version(conn)
            lag, drill, wrong, note = replica_cells(conn, db_path, now)
        finally:
            conn.close()
        counts = mail_counts(db_path) if version == newest else {}
    except (sqlite3.Error, OSError) as error:
        return unknown, f"cannot be read: {error}", ""
    note = f"schema {version}, upgraded to {newest} when first served" if version < newest else note
    return (f"{version:>8} {counts.get('waiting', 0):>8} {counts.get('failed', 0):>7} {human_size(size):>9} "
            f"{lag:>7} {drill:>14}", "; ".join(troubles + wrong), note)


DRILL_STALE = dt.timedelta(days=2)  # `agenda host drill` runs nightly: two nights missed is trouble


def replica_cells(conn, db_path, now):
    """(lag, last drill, [what is wrong], a note or '') of one clinic: the lag as its serving process's Litestream
    tells it (the control socket it noted, a second at most), the last drill as the clinic's database keeps it
    ("A host of clinics")."""
    replica, started = recall(conn, "replica")
    checked, checked_at = recall(conn, "replica_check")
    lag, wrong, note = "-", [], ""
    if replica:
        waited = replica_lag(replica, started, db_path, now)
        lag = "?" if waited is None else f"{waited:.0f} s" if waited < 120 else waited_words(
            dt.timedelta(seconds=waited))
        note = "its Litestream does not answer: not replicating now" if waited is None else ""
        if waited is not None and waited > replica.get("behind_after", BEHIND_AFTER):
            wrong.append(f"replica BEHIND: nothing shipped for {duration(waited)}; the service's log says why")
    if not checked:
        if replica and now - dt.datetime.fromisoformat(started) > DRILL_STALE:
            wrong.append("no drill in two days of replicating: agenda host drill FOLDER --replica URL")
        return lag, "none", wrong, note
    age = now - dt.datetime.fromisoformat(checked_at)
    if not checked["ok"]:
        wrong.append(f"last drill FAILED: {checked['problem']}")
    elif age > DRILL_STALE:
        wrong.append(f"last drill {waited_words(age)} ago: check the nightly `agenda host drill`")
    return lag, f"{'ok' if checked['ok'] else 'FAILED'} {waited_words(max(age, dt.timedelta()))}", wrong, note


def replica_lag(replica, started, db_path, now):
    """Seconds the replica may trail the clinic's last change (since Litestream last shipped to it: it ships every
    second, changes or not), from the Litestream noted in the `replica` fact; None when it does not answer."""
    try:
        _, listed = litestream_call(replica["socket"], "GET", "/list", timeout=1)
    except (OSError, KeyError):
        return None
    shipped = last_shipped(listed, str(Path(db_path).resolve()))
    return max(0.0, unshipped_for(shipped, dt.datetime.fromisoformat(started), now))


def mail_counts(db_path):
    """{state: how many} of a clinic's messages."""
    conn = open_read_only(str(db_path))
    try:
        return outbox_counts(conn)
    finally:
        conn.close()


def clinic_replica(base, name):
    """Where the host's replica `base` (a folder or a URL, its query kept) holds the clinic `name`'s: its lease's
    generation's path, base/name/gN ("Leases"), or base/name for a clinic replicated without a lease."""
    try:
        lease = read_lease(objects_at(base), name)
    except ValueError:  # sftp and the like hold no lease
        lease = None
    return generation_url(base, name, lease.generation) if lease else clinic_url(base, name)


@host.command("drill")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--replica", "base", default=None, envvar="AGENDA_REPLICA",
              help="The host's replica, each clinic's under it by its name: a folder, file://, sftp:// or s3:// "
                   "[env: AGENDA_REPLICA].")
@click.option("--behind-after", "behind_after", default=BEHIND_AFTER, show_default=True,
              type=click.IntRange(5, 86400), envvar="AGENDA_REPLICA_BEHIND_AFTER", show_envvar=True,
              help="Seconds a replica's newest event may trail its clinic's live database's before its drill fails.")
@click.pass_context
def host_drill(ctx, folder, base, behind_after):
    """A restore drill of every clinic under FOLDER, one after another: one line a clinic, exit 1 if any failed.

    Each clinic's replica (REPLICA/NAME) is restored into a private scratch folder
    beside its database, checked and compared with it as `agenda replica check`
    does, and removed, at the lowest CPU and I/O priority. Each result and its time
    are kept in the clinic's database: `agenda host status` shows them.

    Example:

    \b
        agenda host drill /srv/clinics --replica 's3://agenda-replicas/host1?region=eu-south-2'
    """
    host_folder(folder)
    if not base:
        raise click.ClickException("give the host's replica, the one each clinic is replicated under by its name: "
                                   "--replica URL (or AGENDA_REPLICA)")
    clinics = sorted(clinic_folders(folder).items())
    if not clinics:
        raise no_clinics(folder)
    binary, failed = need_litestream("host drill"), []
    lowest_priority()
    with stopped_cleanly():
        for name, path in clinics:
            verdict, facts, noted = drilled(ctx, binary, path / CLINIC_DB, clinic_replica(base, name), behind_after)
            failed += [name] if verdict else []
            click.echo(f"{name}: " + (f"FAILED: {verdict}" if verdict else (
                f"ok, restored and checked ({human_size(facts['bytes'])}, newest event {facts['event']}, "
                f"{facts['seconds']:.0f} s)")) + noted)
    for name, why in sorted(passed_over(folder).items()):
        click.echo(f"{name}: not drilled: {why}")
    if failed:
        raise click.ClickException(
            f"{plural(len(failed), 'clinic')} of {len(clinics)} failed the drill: {', '.join(failed)}; its line "
            "says why; drill one again with agenda replica check --replica REPLICA/NAME --db FOLDER/NAME/agenda.db")
    click.echo(f"every clinic's replica restored and checked: {plural(len(clinics), 'clinic')}")


@host.command("nginx")
@click.argument("folder", type=click.Path(file_okay=False))
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--upstream", default="127.0.0.1:8080", show_default=True, help="Where `agenda host serve` listens.")
@click.option("--certificates", default="/etc/letsencrypt/live", show_default=True,
              help="The folder holding a folder of certificates a clinic, named for it (certbot's).")
@click.option("--logs", default="/var/log/nginx", show_default=True, help="The folder of nginx's access log.")
@click.option("--prefix-host", metavar="NAME", help="The host name the clinics whose folder is a path prefix "
              "(clinicasol) are reached at, https://NAME/clinicasol/; its certificate in --certificates too.")
def host_nginx(folder, out, upstream, certificates, logs, prefix_host):
    """Write nginx's sites for every clinic under FOLDER into OUT: agenda-host.conf and agenda-locations.conf.

    Each clinic gets a server at its name: the API, feeds and patients' links for
    everyone, the desk only for its desk_network (agenda.toml). The clinics whose
    folder is a path prefix share one server, at --prefix-host, each under its
    prefix. A name whose certificate is not in --certificates yet gets port 80 only,
    for `certbot --nginx -d NAME`; write the sites again after it, and reload nginx.

    Example:

    \b
        agenda host nginx /srv/clinics /etc/nginx/agenda && sudo nginx -t && sudo systemctl reload nginx
        agenda host nginx /srv/clinics /etc/nginx/agenda --prefix-host agenda.provider.es
    """
    host_folder(folder)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    where = {"certificates": certificates, "logs": logs, "locations": out / "agenda-locations.conf",
             "upstream": upstream}
    where["locations"].write_text(NGINX_LOCATIONS.format(upstream=upstream), encoding="utf-8")
    sites, written, notes, wrong = proxy_sites(folder, where, prefix_host)
    (out / "agenda-host.conf").write_text(sites, encoding="utf-8")
    click.echo(f"Wrote {out / 'agenda-host.conf'}: {plural(written, 'clinic')}; include it in nginx's http "
               "block, then: sudo nginx -t && sudo systemctl reload nginx")
    for line in notes:
        click.echo(line)
    for line in wrong:
        click.echo(line, err=True)
    if wrong:
        raise SystemExit(1)


@host.command("mail")
@click.argument("folder", type=click.Path(file_okay=False))
@smtp_options
@click.option("--once", is_flag=True, help="One pass over every clinic: send what is due now, then stop.")
@click.option("--every", default=5.0, show_default=True, type=click.FloatRange(0.5, 3600),
              help="Seconds between two passes.")
@click.pass_context
def host_mail(ctx, folder, smtp_url, smtp_password_file, smtp_ca, mail_from, once, every):
    """Send the patients' messages of every clinic under FOLDER: one sender for the host.

    Each clinic's messages go under its own lock (never beside an `agenda mail
    send` of the same clinic), From the host's address under the clinic's name
    (clinic_name in its agenda.toml), with links to its public_url, else to
    https://HOST-NAME. A clinic whose files did not change is looked at again
    each minute, for the reminders that fall due.

    Example:

    \b
        agenda host mail /srv/clinics --smtp smtp://citas@relay.proveedor.es:587 --mail-from citas@proveedor.es
    """
    host_folder(folder)
    mailer, told = mailer_of(smtp_url, smtp_password_file, smtp_ca), set()
    sender = HostSender(lambda: host_clinics(folder, told), mailer, sender_address(mail_from), lambda: cli_now(ctx),
                        sync_for=functools.partial(replica_sync_for, folder))
    if once:
        done = sender.pass_once()
        click.echo(", ".join(f"{count} {state}" for state, count in sorted(done.items())) or "nothing to send")
        return
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    stopping = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stopping.set())
    click.echo(f"Sending the messages of the clinics of {folder} every {every:g} s", err=True)
    passes_until_stopped(sender.pass_once, stopping, every)
