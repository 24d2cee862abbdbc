"""`agenda host`: many clinics served by one process, each a folder named for its host name ("A host of
clinics"): serve them all, and see them all in one table."""

import functools
import logging
import sqlite3
from pathlib import Path

import click

from .. import __version__
from ..values.printing import plural
from ..values.settings import desk_networks, settings_in_file
from ..storage.connections import open_read_only, schema_version
from ..storage.shipped import newest_version
from ..storage.database import UPGRADE
from ..storage.leases import Holder, holder_name, LEASE_SECONDS, objects_at
from ..storage.host_replication import close_replica, ClinicReplica, HostReplicator, open_replica
from ..domain.outbox import outbox_counts
from ..web.serving import CORES, log_to_stderr, serve_until_stopped, stop_logging
from ..web.host import CLINIC_DB, CLINIC_SETTINGS, clinic_folders, Clinics, passed_over
from ..app import create_app
from .root import (cli, DEFAULTS, existing_database, human_size, need_litestream, proxy_options, read_secret_file,
                   secret_file_path, waitress_options)

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


def host_folder(folder):
    """The host's folder, refused with the fix when it is not there."""
    if not Path(folder).is_dir():
        raise click.ClickException(f"{folder}: no such folder; make it (a folder a clinic inside, named for its "
                                   "host name), or name the one that holds the clinics")
    return Path(folder)


def open_clinic(folder, hosting=None):
    """A clinic folder's app, upgraded and started as `agenda run` starts one, leased and replicated when
    `hosting` (the host's replicator and leases) is given; ValueError and the like when its database, secret,
    settings or lease cannot be served."""
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
    replica = open_replica(*hosting, folder.name, folder) if hosting else None
    try:
        app = create_app(str(db_path), secret, replica=replica, after_write=replica and replica.sync, **settings)
    except BaseException:
        if replica is not None:
            close_replica(replica)
        raise
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
def host_status(folder):
    """Every clinic under FOLDER in one table: schema, messages waiting and failed, disk; exit 1 on any in trouble.

    Example:

    \b
        agenda host status /srv/clinics
    """
    host_folder(folder)
    newest, troubled, clinics = newest_version(), 0, sorted(clinic_folders(folder).items())
    click.echo(f"{'clinic':40} {'schema':>8} {'waiting':>8} {'failed':>7} {'disk':>9}  state")
    for name, path in clinics:
        row, trouble, note = clinic_row(path, newest)
        troubled += bool(trouble)
        click.echo(f"{name:40} {row}  {trouble or note or 'ok'}")
    for name, why in sorted(passed_over(folder).items()):
        click.echo(f"{name:40} not served: {why}")
    if not clinics:
        raise click.ClickException(f"{folder} holds no clinic: a clinic is a folder named for its host name, with "
                                   f"{CLINIC_DB} in it (agenda host -h)")
    click.echo(f"{plural(troubled, 'clinic')} in trouble" if troubled else "every clinic ok")
    raise SystemExit(1 if troubled else 0)


def clinic_row(path, newest):
    """(the table's columns, what is wrong or '', a note or '') for one clinic folder."""
    db_path, size = path / CLINIC_DB, sum(part.stat().st_size for part in path.glob(CLINIC_DB + "*"))
    unknown = f"{'?':>8} {'?':>8} {'?':>7} {human_size(size):>9}"
    try:
        read_secret_file(secret_file_path(db_path, None)) if secret_file_path(db_path, None).is_file() else None
        if (path / CLINIC_SETTINGS).is_file():
            settings_in_file(path / CLINIC_SETTINGS)
    except click.ClickException as error:
        return unknown, f"its secret: {error.message}", ""
    except ValueError as error:
        return unknown, f"a wrong setting: {error}", ""
    trouble = "" if secret_file_path(db_path, None).is_file() else f"no secret: agenda secret set --db {db_path}"
    try:
        conn = open_read_only(str(db_path))
        try:
            version = schema_version(conn)
        finally:
            conn.close()
        counts = mail_counts(db_path) if version == newest else {}
    except (sqlite3.Error, OSError) as error:
        return unknown, f"cannot be read: {error}", ""
    note = f"schema {version}, upgraded to {newest} when first served" if version < newest else ""
    return (f"{version:>8} {counts.get('waiting', 0):>8} {counts.get('failed', 0):>7} {human_size(size):>9}",
            trouble, note)


def mail_counts(db_path):
    """{state: how many} of a clinic's messages."""
    conn = open_read_only(str(db_path))
    try:
        return outbox_counts(conn)
    finally:
        conn.close()


# nginx for a host (docs/deploy.md's proxy, once for every clinic): what every server shares, at the http level.
NGINX_SHARED = """# Written by `agenda host nginx`: write it again after adding or removing a clinic, then reload nginx.
log_format agenda_host_noquery '$remote_addr $host [$time_local] "$request_method $uri" $status $request_time';
limit_conn_zone $binary_remote_addr zone=agenda_host_perip:10m;
limit_req_zone $binary_remote_addr zone=agenda_host_logins:10m rate=10r/m;
limit_req_zone $binary_remote_addr zone=agenda_host_links:10m rate=60r/m;
map $request_id $agenda_host_request_id {
    "~^(?<first16>[0-9a-f]{16})" $first16;
}
"""
# What every clinic's server does with a request but the desk: the caller's API, the feeds, the patients' links.
NGINX_LOCATIONS = """client_header_timeout 10s;
client_body_timeout 10s;
send_timeout 10s;
client_max_body_size 64k;
limit_conn agenda_host_perip 32;
error_page 413 @payload_too_large;
location @payload_too_large {{
    default_type application/json;
    return 413 '{{"error":{{"code":"PAYLOAD_TOO_LARGE","message":"the body is over 65536 bytes"}}}}';
}}
error_page 503 @too_many_connections;
location @too_many_connections {{
    default_type application/json;
    add_header X-Request-Id $agenda_host_request_id always;
    return 503 '{{"error":{{"code":"SERVICE_UNAVAILABLE","message":"too many requests at once from this address; retry","requestId":"$agenda_host_request_id"}}}}';
}}
proxy_set_header Host $host;
proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
proxy_set_header X-Forwarded-Proto $scheme;
location /feeds/ {{ access_log off; proxy_pass http://{upstream}; }}
location /cita/ {{ access_log off; limit_req zone=agenda_host_links burst=30 nodelay; proxy_pass http://{upstream}; }}
location / {{ proxy_pass http://{upstream}; proxy_request_buffering on; proxy_read_timeout 30s; }}
"""
NGINX_TLS = """server {{
    listen 80;
    server_name {name};
    return 301 https://$host$request_uri;
}}
server {{
    listen 443 ssl;
    server_name {name};
    ssl_certificate     {certificates}/{name}/fullchain.pem;
    ssl_certificate_key {certificates}/{name}/privkey.pem;
    ssl_protocols       TLSv1.2 TLSv1.3;
    add_header Strict-Transport-Security "max-age=31536000" always;
    access_log {logs}/agenda-host.access.log agenda_host_noquery;
    include {locations};
    location /desk {{
{allow}        deny all;
        proxy_pass http://{upstream};
    }}
    location = /desk/login {{
{allow}        deny all;
        limit_req zone=agenda_host_logins burst=5 nodelay;
        proxy_pass http://{upstream};
    }}
}}
"""
# A clinic without its certificate yet: its name on port 80 only, for `certbot --nginx -d NAME`.
NGINX_PLAIN = """server {{
    listen 80;
    server_name {name};
    location / {{ return 404; }}
}}
"""


@host.command("nginx")
@click.argument("folder", type=click.Path(file_okay=False))
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--upstream", default="127.0.0.1:8080", show_default=True, help="Where `agenda host serve` listens.")
@click.option("--certificates", default="/etc/letsencrypt/live", show_default=True,
              help="The folder holding a folder of certificates a clinic, named for it (certbot's).")
@click.option("--logs", default="/var/log/nginx", show_default=True, help="The folder of nginx's access log.")
def host_nginx(folder, out, upstream, certificates, logs):
    """Write nginx's sites for every clinic under FOLDER into OUT: agenda-host.conf and agenda-locations.conf.

    Each clinic gets a server at its name: the API, feeds and patients' links for
    everyone, the desk only for its desk_network (agenda.toml). A clinic whose
    certificate is not in --certificates yet gets its name on port 80 only, for
    `certbot --nginx -d NAME`; write the sites again after it, and reload nginx.

    Example:

    \b
        agenda host nginx /srv/clinics /etc/nginx/agenda && sudo nginx -t && sudo systemctl reload nginx
    """
    host_folder(folder)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    locations = out / "agenda-locations.conf"
    locations.write_text(NGINX_LOCATIONS.format(upstream=upstream), encoding="utf-8")
    servers, waiting, closed, wrong = [NGINX_SHARED], [], [], []
    for name, path in sorted(clinic_folders(folder).items()):
        try:
            settings = settings_in_file(path / CLINIC_SETTINGS) if (path / CLINIC_SETTINGS).is_file() else {}
        except ValueError as error:
            wrong.append(f"{name}: left out, a wrong setting: {error}")
            continue
        networks = desk_networks(settings.get("desk_network", ""))
        closed += [] if networks else [name]
        allow = "".join(f"        allow {network};\n" for network in networks)
        if (Path(certificates) / name / "fullchain.pem").is_file():
            servers.append(NGINX_TLS.format(name=name, certificates=certificates, logs=logs, locations=locations,
                                            upstream=upstream, allow=allow))
        else:
            servers.append(NGINX_PLAIN.format(name=name))
            waiting.append(name)
    (out / "agenda-host.conf").write_text("\n".join(servers), encoding="utf-8")
    click.echo(f"Wrote {out / 'agenda-host.conf'}: {plural(len(servers) - 1, 'clinic')}; include it in nginx's http "
               "block, then: sudo nginx -t && sudo systemctl reload nginx")
    for name in waiting:
        click.echo(f"{name}: no certificate yet, port 80 only: sudo certbot --nginx -d {name}, then write again")
    for name in closed:
        click.echo(f"{name}: its desk is closed to every address: set desk_network in its {CLINIC_SETTINGS}")
    for line in wrong:
        click.echo(line, err=True)
    if wrong:
        raise SystemExit(1)
