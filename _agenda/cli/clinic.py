"""`agenda clinic`: a clinic of a host moved to another host, losing nothing acknowledged: released on the old host
(its changes refused, its replica holding the last, its lease given up) and adopted on the new one (restored from
its replica, its lease taken with the next generation) ("Leases")."""

import datetime as dt
import os
import shutil
import time
from pathlib import Path

import click

from ..storage.leases import (generation_url, holder_name, LeaseRefused, objects_at, read_lease, waited_out,
                              write_lease)
from ..storage.host_replication import RELEASING, running_host, shipped
from ..storage.replication import Replicator, ReplicaUnreadable, restore_points, without_password
from ..storage.replica_restore import checked_point
from ..web.host import HOST_NAME
from .root import cli, need_litestream

RELEASED = ".released"  # under the host's folder: the folders of clinics released from this host
SYNC_SECONDS = 60  # how long a release waits for the replica to hold the clinic's last change


@cli.group()
def clinic():
    """One clinic of a host, moved to another host without losing a change.

    On the old host, `agenda clinic release NAME`; copy its agenda.secret and
    agenda.toml to the new host's folder NAME; there, `agenda clinic adopt NAME`.
    Both take the host's folder and the replica base `agenda host serve
    --replica` replicates to (docs/design.md, "Leases").

    Example:

    \b
        agenda clinic release citas.clinicasol.es --folder /srv/clinics --replica s3://clinics/eu1
    """


def host_options(command):
    command = click.option("--replica", required=True, envvar="AGENDA_REPLICA", show_envvar=True,
                           help="The replica base the hosts replicate to (as `agenda host serve --replica`).")(command)
    return click.option("--folder", required=True, type=click.Path(file_okay=False), envvar="AGENDA_HOST_FOLDER",
                        show_envvar=True, help="This host's folder of clinics (as `agenda host serve FOLDER`).")(command)


def clinic_place(folder, name):
    """The clinic's folder under the host's, its name checked as a host name."""
    if not HOST_NAME.fullmatch(name):
        raise click.ClickException(f"{name!r} is no clinic's name: give its host name in small letters, as its "
                                   "folder is named (citas.clinicasol.es)")
    return Path(folder) / name


def leases_at(replica):
    try:
        return objects_at(replica)
    except (ValueError, ImportError) as error:
        raise click.ClickException(f"{error}") from None


@clinic.command("release")
@click.argument("name")
@host_options
def release(name, folder, replica):
    """Give up the clinic NAME on this host, for another host to adopt it.

    Its changes are refused from now (503 with Retry-After), its replica is made
    to hold its last change, its lease is released, and its folder is moved to
    FOLDER/.released/ (the host stops serving it within seconds).

    Example:

    \b
        agenda clinic release citas.clinicasol.es --folder /srv/clinics --replica s3://clinics/eu1
    """
    place = clinic_place(folder, name)
    if not (place / "agenda.db").is_file():
        raise click.ClickException(f"{place} holds no agenda.db: name a clinic served from {folder} "
                                   "(agenda host status FOLDER lists them)")
    objects, holder = leases_at(replica), holder_name(folder)
    lease = read_lease(objects, name)
    if lease is None or lease.holder != holder or lease.released:
        raise click.ClickException(f"{name}'s lease is not this host's ({describe(lease)}): release it on the host "
                                   f"that holds it; a clinic never served with --replica has nothing to release")
    (place / RELEASING).touch()
    try:
        last_change_shipped(place / "agenda.db", generation_url(replica, name, lease.generation), folder)
        released = released_lease(objects, name, holder)
    except click.ClickException:
        (place / RELEASING).unlink(missing_ok=True)
        raise
    aside = Path(folder) / RELEASED / f"{name}-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}"
    aside.parent.mkdir(mode=0o700, exist_ok=True)
    os.replace(place, aside)
    click.echo(f"Released {name} (generation {released.generation}): its replica holds its last change, and it "
               f"is no longer served here; its folder is now {aside}.\nOn the new host: copy {aside}/agenda.secret "
               f"(and agenda.toml) into FOLDER/{name}/, then: agenda clinic adopt {name} --folder FOLDER "
               f"--replica {without_password(replica)}")


def describe(lease):
    if lease is None:
        return "it has none"
    return f"{'released by' if lease.released else 'held by'} {lease.holder}, generation {lease.generation}"


def last_change_shipped(db_path, url, folder, seconds=SYNC_SECONDS):
    """The replica at `url` made to hold every change of db_path: by the running host's Litestream when it
    replicates the clinic, else by a Litestream started for it; a ClickException when it cannot."""
    host = running_host(folder)
    if host is not None and shipped(host[1], db_path):
        return
    try:
        replicator = Replicator(need_litestream("a release"), db_path, url)
    except RuntimeError as error:
        raise click.ClickException(f"the replica could not be made to hold the last change: {error}; the clinic "
                                   "takes changes again; try again in a moment") from None
    replicator.start()
    try:
        until = time.monotonic() + seconds
        while not shipped(replicator.socket_path, replicator.db_path, timeout=5):
            if time.monotonic() > until:
                raise click.ClickException(f"the replica at {without_password(url)} did not take the clinic's last "
                                           f"change in {seconds} s (is it reachable?); the clinic takes changes "
                                           "again here")
            time.sleep(0.5)
    finally:
        replicator.stop()


def released_lease(objects, name, holder, tries=5):
    """The clinic's lease released, read again as often as the running host renews it meanwhile."""
    for _ in range(tries):
        lease = read_lease(objects, name)
        if lease is None or lease.holder != holder or lease.released:
            raise click.ClickException(f"{name}'s lease changed during the release ({describe(lease)}): nothing "
                                       "was released")
        try:
            return write_lease(objects, name, holder, lease.generation, lease.seconds, released=True,
                               etag=lease.etag)
        except LeaseRefused:
            continue
    raise click.ClickException(f"{name}'s lease kept changing: try the release again")


@clinic.command("adopt")
@click.argument("name")
@host_options
def adopt(name, folder, replica):
    """Serve on this host the clinic NAME that another host released (or that
    lapsed there: its lease unrenewed for its whole length, the old host gone).

    FOLDER/NAME must hold its agenda.secret (and agenda.toml) copied from the old
    host, and no database. The clinic is restored from its replica, checked, and
    its lease taken with the next generation; the host serves it within seconds
    and replicates it to a path of its own.

    Example:

    \b
        agenda clinic adopt citas.clinicasol.es --folder /srv/clinics --replica s3://clinics/eu1
    """
    place = clinic_place(folder, name)
    if (place / "agenda.db").exists():
        raise click.ClickException(f"{place}/agenda.db is there already: this host serves {name}")
    if not (place / "agenda.secret").is_file():
        raise click.ClickException(f"{place}/agenda.secret is missing: copy the clinic's agenda.secret (and "
                                   f"agenda.toml) from the old host's folder into {place} first")
    objects, binary = leases_at(replica), need_litestream("an adoption")
    lease, holder = read_lease(objects, name), holder_name(folder)
    if lease is not None and not lease.released and lease.holder != holder:
        click.echo(f"{name} is {describe(lease)}: waiting {lease.seconds} s for it to lapse", err=True)
    try:
        lease = waited_out(objects, name, mine=holder)
    except LeaseRefused as error:
        raise click.ClickException(str(error)) from None
    scratch = place / ".adopting"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(mode=0o700)
    try:
        adopted(name, place, objects, binary, replica, lease, holder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def newest_generation(binary, replica, name, generation, output):
    """(URL, the restored copy or None, why not) of the clinic's newest generation that holds anything: the
    lease's own, or, when nothing was ever replicated there (an adoption cut short before its host served the
    clinic), the one before it."""
    url = generation_url(replica, name, generation)
    copy, why = checked_point(binary, url, output)
    if copy is None and generation > 1:
        try:
            empty = not restore_points(binary, url)
        except ReplicaUnreadable:
            empty = False
        if empty:
            return newest_generation(binary, replica, name, generation - 1, output)
    return url, copy, why


def adopted(name, place, objects, binary, replica, lease, holder):
    """Restore the clinic from its lease generation's replica, take the next generation, put its database in
    place; a ClickException (nothing taken) when the copy fails its check or the lease was taken meanwhile."""
    url, copy, why = newest_generation(binary, replica, name, lease.generation, place / ".adopting" / "agenda.db")
    if copy is None:
        raise click.ClickException(f"the replica at {without_password(url)} cannot be restored whole ({why}): "
                                   f"nothing was taken; `agenda restore --from-replica URL --db FILE` looks back for "
                                   "the latest moment that passes")
    try:
        taken = write_lease(objects, name, holder, lease.generation + 1, lease.seconds, etag=lease.etag)
    except LeaseRefused:
        raise click.ClickException(f"{name}'s lease was taken by another host meanwhile "
                                   f"({describe(read_lease(objects, name))}): nothing was taken here") from None
    os.replace(copy, place / "agenda.db")
    click.echo(f"Adopted {name} (generation {taken.generation}): restored from {without_password(url)}; this "
               f"host serves it within seconds and replicates it to "
               f"{without_password(generation_url(replica, name, taken.generation))}")
