"""Leases: which host serves a clinic, an object beside its replica written only by conditional PUT; a host
acknowledges a clinic's changes only while its own clock says its lease holds ("Leases")."""

import collections
import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import logging
import os
import threading
import time
import urllib.parse
from pathlib import Path

from .connections import create_private_file

log = logging.getLogger("agenda")

LEASE_SECONDS = 30  # how long a lease holds from the moment its holder asked to write it
LEASE_FILE = "lease.json"

Lease = collections.namedtuple("Lease", "holder generation seconds expires released etag")


class LeaseRefused(RuntimeError):
    """The lease is another's, or changed since it was read: the conditional write was refused."""


def margin_of(seconds):
    """How long before its lease ends a holder stops acknowledging: a fifth of it, at least a second ("Leases")."""
    return max(1.0, seconds / 5)


def clinic_url(base, *parts):
    """The URL (or folder) `parts` under a replica base: s3://bucket/prefix?query keeps its query last."""
    if "://" not in base:
        return str(Path(base).expanduser().resolve().joinpath(*parts))
    split = urllib.parse.urlsplit(base)
    path = "/".join([split.path.rstrip("/"), *parts])
    return urllib.parse.urlunsplit(split._replace(path=path))


def s3_client(url):
    """(boto3's client, bucket, key prefix) for Litestream's S3 URL (s3://BUCKET/PATH?endpoint=&region=
    &forcePathStyle=), with the AWS_* settings Litestream reads too."""
    import boto3
    from botocore.config import Config
    parts = urllib.parse.urlsplit(url)
    given = {key.lower(): value for key, value in urllib.parse.parse_qsl(parts.query)}
    endpoint = given.get("endpoint")
    client = boto3.client("s3", region_name=given.get("region") or None, endpoint_url=(
        endpoint if endpoint is None or "://" in endpoint else "https://" + endpoint), config=Config(
        s3={"addressing_style": "path" if given.get("forcepathstyle") == "true" else "auto"},
        retries={"max_attempts": 2}, connect_timeout=5, read_timeout=10))
    return client, parts.netloc, parts.path.strip("/")


class S3Objects:
    """Objects of an S3-compatible store, each written only if it is absent (If-None-Match: *) or still as read
    (If-Match: its ETag)."""

    def __init__(self, base):
        self.client, self.bucket, self.prefix = s3_client(base)

    def key(self, name):
        return "/".join(part for part in (self.prefix, name) if part)

    def read(self, name):
        """(bytes, etag) of the object, or (None, None) when there is none."""
        from botocore.exceptions import ClientError
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.key(name))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return None, None
            raise OSError(f"the store could not be read: {error}") from None
        return answer["Body"].read(), answer["ETag"]

    def write(self, name, body, etag=None):
        """The new ETag of the object written; LeaseRefused when it is there (etag None) or changed."""
        from botocore.exceptions import BotoCoreError, ClientError
        condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            return self.client.put_object(Bucket=self.bucket, Key=self.key(name), Body=body, **condition)["ETag"]
        except ClientError as error:
            if error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (409, 412):
                raise LeaseRefused("the lease changed since it was read") from None
            raise OSError(f"the store could not be written: {error}") from None
        except BotoCoreError as error:
            raise OSError(f"the store could not be reached: {error}") from None


class FolderObjects:
    """Files in a folder (a replica base on a disk or a NAS) written under an exclusive lock, with the same
    conditions as S3Objects; the ETag is the content's hash."""

    def __init__(self, base):
        self.root = Path(base[len("file://"):] if base.startswith("file://") else base).expanduser()

    def read(self, name):
        try:
            body = (self.root / name).read_bytes()
        except FileNotFoundError:
            return None, None
        return body, hashlib.sha256(body).hexdigest()

    def write(self, name, body, etag=None):
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = path.with_name(f".{path.name}.lock")
        create_private_file(lock)
        with open(lock, "r+b") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            if self.read(name)[1] != etag:
                raise LeaseRefused("the lease changed since it was read")
            partial = path.with_name(f".{path.name}.partial")
            partial.unlink(missing_ok=True)
            create_private_file(partial)
            partial.write_bytes(body)
            os.replace(partial, path)
        return hashlib.sha256(body).hexdigest()


def objects_at(base):
    """Where leases are kept for a replica base: an S3 store, or a folder; ValueError for a replica that cannot be
    written conditionally (sftp, webdav and the like)."""
    if base.startswith("s3://"):
        return S3Objects(base)
    if base.startswith("file://") or "://" not in base:
        return FolderObjects(base)
    raise ValueError(f"{base.split('://')[0]}:// cannot hold a lease (no conditional write): replicate a host to "
                     "s3:// or a folder")


def read_lease(objects, name):
    """The clinic's lease as the store holds it, or None."""
    body, etag = objects.read(f"{name}/{LEASE_FILE}")
    if body is None:
        return None
    kept = json.loads(body)
    return Lease(kept["holder"], kept["generation"], kept["seconds"], kept["expires"], kept["released"], etag)


def write_lease(objects, name, holder, generation, seconds, released=False, etag=None):
    """The lease written if it is still as read (`etag`; None: only if there is none); LeaseRefused else."""
    expires = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=seconds)).isoformat(timespec="seconds")
    body = json.dumps({"holder": holder, "generation": generation, "seconds": seconds, "expires": expires,
                       "released": released, "write": os.urandom(8).hex()}).encode()  # each write a new ETag
    return Lease(holder, generation, seconds, expires, released, objects.write(f"{name}/{LEASE_FILE}", body, etag))


def generation_url(base, name, generation):
    """Where the clinic's replica of that lease generation lives: {base}/{name}/g{generation}."""
    return clinic_url(base, name, f"g{generation}")


class Holder:
    """This host's leases: taken when a clinic is opened, renewed in the background a third of the way through,
    valid by this process's monotonic clock until `margin_of` before they end ("Leases")."""

    def __init__(self, objects, holder, seconds=LEASE_SECONDS, clock=time.monotonic):
        self.objects, self.holder, self.seconds, self.clock = objects, holder, seconds, clock
        self.held, self.guard, self.stopping, self.thread = {}, threading.Lock(), threading.Event(), None

    def take(self, name):
        """The clinic's lease, created (generation 1) or renewed when this host holds it; LeaseRefused when
        another holds it or it was released (only `agenda clinic adopt` takes a released lease)."""
        lease = read_lease(self.objects, name)
        if lease is None:
            return self.written(name, 1, None)
        if lease.holder != self.holder or lease.released:
            raise LeaseRefused(f"its lease is {'released by' if lease.released else 'held by'} {lease.holder} "
                               f"(generation {lease.generation}): agenda clinic adopt {name}")
        return self.written(name, lease.generation, lease.etag)

    def written(self, name, generation, etag):
        asked = self.clock()
        lease = write_lease(self.objects, name, self.holder, generation, self.seconds, etag=etag)
        with self.guard:
            self.held[name] = (lease, asked + self.seconds - margin_of(self.seconds))
        return lease

    def renew(self, name):
        """Renew the lease held; forget it (LeaseRefused) when it is no longer this host's."""
        with self.guard:
            lease, _ = self.held[name]
        try:
            return self.written(name, lease.generation, lease.etag)
        except LeaseRefused:
            self.drop(name)
            log.error("clinic %s: its lease changed in the store (released, or taken by another host); its "
                      "changes are refused here", name)
            raise

    def valid(self, name):
        """Whether this host may acknowledge the clinic's changes now."""
        with self.guard:
            held = self.held.get(name)
        return held is not None and self.clock() < held[1]

    def generation(self, name):
        with self.guard:
            return self.held[name][0].generation

    def drop(self, name):
        """Forget the clinic's lease (it lapses; it is not released)."""
        with self.guard:
            self.held.pop(name, None)

    def start(self):
        self.thread = threading.Thread(target=self.keep, name="leases", daemon=True)
        self.thread.start()

    def keep(self):
        while not self.stopping.wait(self.seconds / 3):
            with self.guard:
                names = list(self.held)
            for name in names:
                with contextlib.suppress(LeaseRefused, KeyError):
                    try:
                        self.renew(name)
                    except OSError as error:  # the store unreachable: the lease runs out here, changes refused
                        log.warning("clinic %s: its lease could not be renewed: %s", name, error)

    def stop(self):
        self.stopping.set()


def waited_out(objects, name, sleep=time.sleep, clock=time.monotonic, mine=None):
    """The clinic's lease once no one holds it: released, this host's own (`mine`: an adoption cut short, the
    clinic not served here), or left unchanged for its whole length by this process's clock (its holder, by its
    own, stopped acknowledging before); LeaseRefused when there is none or it changed meanwhile."""
    lease = read_lease(objects, name)
    if lease is None:
        raise LeaseRefused(f"{name} has no lease at that replica: nothing to adopt")
    if lease.released or lease.holder == mine:
        return lease
    until = clock() + lease.seconds
    while clock() < until:
        sleep(min(1.0, max(0.0, until - clock())))
        now = read_lease(objects, name)
        if now is None or now.etag != lease.etag:
            raise LeaseRefused(f"{name}'s lease was renewed by {now.holder if now else 'no one'} meanwhile: its "
                               "host still serves it; release it there (agenda clinic release)")
    return lease


def holder_name(folder):
    """This host's name as a lease holds it: the machine's name and the host's folder."""
    return f"{os.uname().nodename}:{Path(folder).resolve()}"


