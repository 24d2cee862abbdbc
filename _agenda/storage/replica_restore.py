"""Restoring from a replica whatever its newest state holds ("Restore drills"): a restore point checked, the walk
back to the latest that passes integrity_check, what an earlier moment loses, and the nightly drill."""

import asyncio
import collections
import datetime as dt
import os
import re
import shutil
import sqlite3
import time
import urllib.parse
from pathlib import Path

from .connections import reading, transaction
from .copies import check_database_file, scratch_folder
from .events import recall, remember
from .database import AS_IT_IS, open_database
from .leases import s3_client
from .replication import duration, litestream_call, replica_url, ReplicaUnreadable, restore_replica

WALK_TRIES, WALK_SECONDS = 30, 300  # how far a restore looks back for a state that passes integrity_check

# The walk's answer: the point found and its restored copy; `exact` when the point after it is known to fail,
# else `later`, the newest point not yet tried between them.
Walk = collections.namedtuple("Walk", "point copy exact later")

# What restoring an earlier state loses, read from a newer one: {appointment id: (row before, row after)}, how
# many of each other change (a patient registered, an erasure asked), and why the reading stopped early, if it did.
Lost = collections.namedtuple("Lost", "appointments others error")


def integrity_problem(path):
    """None when the copy at `path` passes integrity_check, else what failed, in a line."""
    try:
        check_database_file(path)
    except ValueError as error:
        return str(error)
    return None


def checked_point(binary, replica, output, txid=None, moment=None, timeout=3600):
    """(the restored copy, None) when the replica's state (newest, at `txid` or at `moment`) restores and passes
    integrity_check; else (None, why): a state Litestream cannot restore fails like a damaged one."""
    try:
        copy = restore_replica(binary, replica, output, moment, txid, timeout=timeout)
    except ReplicaUnreadable as error:
        return None, f"Litestream could not restore it: {error}"
    problem = integrity_problem(copy)
    if problem is not None:
        copy.unlink()
        return None, problem
    return copy, None


def covered(first, last, ranges):
    """Whether the (min, max) transaction ranges hold every transaction from first to last."""
    reach = first - 1
    for low, high in sorted(ranges):
        if low > reach + 1:
            break
        reach = max(reach, high)
    return reach >= last


def set_aside_compacted(root, aside):
    """Move out of the folder replica at `root` into `aside` every compacted LTX file (level 1 and up, snapshots
    too) whose transactions the files kept at lower levels hold too; the files moved ("Restore drills")."""
    files = collections.defaultdict(list)
    for path in Path(root, "ltx").glob("*/*.ltx"):
        found = re.fullmatch(r"([0-9a-f]{16})-([0-9a-f]{16})\.ltx", path.name)
        if found and path.parent.name.isdigit():
            files[int(path.parent.name)].append((int(found[1], 16), int(found[2], 16), path))
    kept, moved = [(low, high) for low, high, _ in files.pop(0, [])], []
    for level in sorted(files):
        for low, high, path in files[level]:
            if covered(low, high, kept):
                target = Path(aside) / str(level) / path.name
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
                moved.append(f"ltx/{level}/{path.name}")
        kept += [(low, high) for low, high, path in files[level] if path.exists()]
    return moved


def scratch_replica(replica, folder):
    """(the URL of a local copy of the replica's files in `folder`, a folder's, an S3 store's or an sftp server's,
    with its compacted files that its lower levels repeat set aside, and those files); None for another kind of
    replica, or when none is set aside: a damaged compacted file is then restored from the files it was made of."""
    url, copy = replica_url(replica), Path(folder) / "replica"
    mask = os.umask(0o077)  # the replica's files hold the clinic: 0600 from the start
    try:
        if url.startswith("file://") and Path(url[len("file://"):], "ltx").is_dir():
            shutil.copytree(url[len("file://"):], copy, symlinks=True, copy_function=shutil.copyfile)
        elif not (url.startswith("s3://") and copied_from_s3(url, copy)
                  or url.startswith("sftp://") and copied_from_sftp(url, copy)):
            return None
    finally:
        os.umask(mask)
    moved = set_aside_compacted(copy, Path(folder) / "set-aside")
    return ("file://" + str(copy), moved) if moved else None


def copied_from_s3(url, copy):
    """Whether the files of the S3 replica at `url` (Litestream's URL: s3://BUCKET/PATH?endpoint=&region=
    &forcePathStyle=) were copied into the folder `copy`, with boto3 and the AWS_* settings Litestream reads too
    ("S3-compatible storage" in docs/replication.md); False without boto3 (`pip install 'agenda[replica]'`)."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        return False
    try:
        return s3_files(url, copy)
    except (BotoCoreError, ClientError, OSError) as error:
        raise ReplicaUnreadable(f"its files could not be copied from S3: {error}") from None


def copied_from_sftp(url, copy):
    """Whether the files of the sftp replica at `url` were copied into the folder `copy`, with asyncssh: the
    password in the URL, or the key and host key the service replicates with (AGENDA_REPLICA_KEY,
    AGENDA_REPLICA_HOST_KEY); False without asyncssh (`pip install 'agenda[replica]'`)."""
    try:
        import asyncssh
    except ImportError:
        return False
    parts = urllib.parse.urlsplit(url)
    key, host_key = os.environ.get("AGENDA_REPLICA_KEY"), os.environ.get("AGENDA_REPLICA_HOST_KEY", "").split()
    if host_key and not re.match(r"(ssh|ecdsa|sk)-", host_key[0]):
        host_key = host_key[1:]  # as ssh-keyscan prints it: the host's name first
    try:  # the server's key as given, else the user's known_hosts: never any machine posing as the server
        trusted = {"known_hosts": ([asyncssh.import_public_key(" ".join(host_key[:2]))], [], [])} if host_key else {}
    except (ValueError, asyncssh.Error) as error:
        raise ReplicaUnreadable(f"AGENDA_REPLICA_HOST_KEY is no public key ({error}): give it as ssh-keyscan "
                                "prints it") from None

    async def fetch():
        async with asyncssh.connect(
                parts.hostname, port=parts.port or 22, username=urllib.parse.unquote(parts.username or ""),
                password=urllib.parse.unquote(parts.password) if parts.password else None,
                client_keys=[key] if key else None, agent_path=None, **trusted) as conn:
            async with conn.start_sftp_client() as sftp:
                await sftp.get(parts.path.rstrip("/") + "/ltx", str(copy / "ltx"), recurse=True)
    copy.mkdir(parents=True, exist_ok=True)
    try:
        asyncio.run(asyncio.wait_for(fetch(), 600))
    except (OSError, asyncssh.Error, asyncio.TimeoutError) as error:
        raise ReplicaUnreadable(f"its files could not be copied over sftp: {error}") from None
    return Path(copy, "ltx").is_dir()


def s3_files(url, copy):
    client, bucket, prefix = s3_client(url)
    prefix += "/"
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            level = re.fullmatch(r"(\d{4})/([0-9a-f]{16}-[0-9a-f]{16}\.ltx)", item["Key"][len(prefix):])
            if level:  # Litestream's S3 layout, LEVEL/FILE, as its folder layout has it: ltx/LEVEL/FILE
                target = copy / "ltx" / str(int(level[1])) / level[2]
                target.parent.mkdir(parents=True, exist_ok=True)
                client.download_file(bucket, item["Key"], str(target))
    return Path(copy, "ltx").is_dir()


def walk_back(binary, replica, folder, points, echo, label, tries=WALK_TRIES, seconds=WALK_SECONDS):
    """A Walk to the latest of `points` (newest first; the first known to fail) that passes, or None: a few one by
    one, then in doubling steps until one passes, then halving the gap to the last that failed (the damage is a
    moment: what comes after it fails). Bounded in tries and time; each try said through echo(text, label(point))."""
    deadline, failed, passed = time.monotonic() + seconds, 0, None

    def probe(index):
        echo(f"  trying {label(points[index])}: ")
        left = max(1.0, deadline - time.monotonic())
        copy, problem = checked_point(binary, replica, folder / f"point-{points[index].txid}.db",
                                      txid=points[index].txid, timeout=left)
        echo((problem or "passes") + "\n")
        return copy

    step, index = 1, 1
    while passed is None and index < len(points) and tries > 0 and time.monotonic() < deadline:
        tries -= 1
        copy = probe(index)
        if copy is not None:
            passed = (index, copy)
        else:
            failed, step = index, step * 2 if index >= 3 else 1
            index = len(points) - 1 if index < len(points) - 1 and index + step >= len(points) else index + step
    if passed is None:
        return None
    while passed[0] - failed > 1 and tries > 0 and time.monotonic() < deadline:
        tries -= 1
        middle = (failed + passed[0]) // 2
        copy = probe(middle)
        if copy is not None:
            passed[1].unlink()
            passed = (middle, copy)
        else:
            failed = middle
    exact = passed[0] - failed == 1
    return Walk(points[passed[0]], passed[1], exact, None if exact else points[failed + 1])


def appointments_read(path):
    """({id: row} of the appointments at `path`, read in the table's own order and no index (the damage is often
    an index's), as far as they can be read; why the reading stopped early, or None)."""
    rows, error = {}, None
    try:
        with reading(path) as conn:
            for row in conn.execute(f"SELECT {', '.join(COMPARED)}, patient_id FROM appointments NOT INDEXED "
                                    "ORDER BY id"):
                rows[row["id"]] = dict(row)
    except sqlite3.DatabaseError as error_read:
        error = (f"its appointments could be read only up to {max(rows, default=0)}: {error_read}" if rows else
                 f"its appointments cannot be read: {error_read}")
    return rows, error


COMPARED = ("id", "date", "time", "doctor_id", "status")  # what a patient was told of a visit


def lost_changes(newer, older):
    """What restoring `older` loses of `newer`: {id: (row in older or None, row in newer or None)} of every
    appointment whose date, time, doctor or state differ between them (one booked and cancelled after older
    left out: nobody to phone), how many of each other change newer's events hold after older's last one, and
    how far newer could be read."""
    appointments, others = {}, collections.Counter()
    if Path(newer) == Path(older):
        return Lost(appointments, others, None)
    before, _ = appointments_read(older)
    after, error = appointments_read(newer)
    readable = max(after, default=0) if error else None
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if readable is not None and key > readable:
            break
        if old is None and new["status"] == "cancelled":
            continue
        if old is None or new is None or any(old[name] != new[name] for name in COMPARED):
            appointments[key] = (old, new)
    with reading(older) as conn:
        last = conn.execute("SELECT max(id) FROM events").fetchone()[0] or 0
    try:
        with reading(newer) as conn:
            for (action,) in conn.execute("SELECT action FROM events NOT INDEXED WHERE id > ? AND entity != "
                                          "'appointment' ORDER BY id", (last,)):
                others[action] += 1
    except sqlite3.DatabaseError as error_read:
        error = error or f"its other changes could not all be read: {error_read}"
    return Lost(appointments, others, error)


def drill(binary, db_path, replica, folder, behind_after, now=None):
    """(None, facts) when the service's Litestream ships (asked as /health asks), the replica's newest state
    restores into `folder`, passes integrity_check, and its newest event is in the live database unchanged, no
    event written `behind_after` seconds before the drill missing from it; else (the problem, facts). The copy
    is removed."""
    facts, started = {"bytes": 0, "event": None, "compared": False}, now or dt.datetime.now(dt.timezone.utc)
    refused = not_shipping(db_path)
    try:
        copy = restore_replica(binary, replica, folder / "drill.db", background=True)
    except ReplicaUnreadable as error:
        return f"Litestream could not restore it: {error}", facts
    try:
        facts["bytes"] = copy.stat().st_size
        problem = integrity_problem(copy)
        if problem is not None:
            return f"its newest state fails the check: {problem}; `agenda restore --from-replica` looks back", facts
        with reading(copy) as conn:
            newest = conn.execute("SELECT * FROM events ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        copy.unlink(missing_ok=True)
    facts["event"] = newest["id"] if newest else None
    if newest is None or not Path(db_path).is_file():
        return refused, facts
    facts["compared"] = True
    return compared_with_live(db_path, newest, started, behind_after) or refused, facts


def noted_drill(binary, db_path, replica, behind_after, now):
    """`drill` of db_path's replica in a scratch folder beside it, removed after, and its result kept in the live
    database as the fact `replica_check` (`agenda status`, `agenda host status`): (the problem or None, the facts
    and the seconds it took, why the result could not be kept or None) ("Restore drills")."""
    started = time.monotonic()
    try:
        with scratch_folder(db_path) as folder:
            verdict, facts = drill(binary, db_path, replica, folder, behind_after, now)
    except (sqlite3.Error, OSError) as error:  # the live database, or the folder beside it, cannot be read
        verdict, facts = f"the drill could not run here: {error}", {"bytes": 0, "event": None, "compared": False}
    facts["seconds"] = round(time.monotonic() - started, 1)
    if not Path(db_path).is_file():
        return verdict, facts, None
    try:
        conn = open_database(db_path, older=AS_IT_IS)
        try:
            conn.execute("PRAGMA synchronous = NORMAL")  # no disk flush under the write lock at idle I/O priority
            with transaction(conn):
                remember(conn, "replica_check", {"ok": verdict is None, "problem": verdict, **facts}, now)
        finally:
            conn.close()
    except (sqlite3.Error, OSError, RuntimeError) as error:
        return verdict, facts, str(error)
    return verdict, facts, None


def not_shipping(db_path, timeout=5):
    """Why the Litestream of the service replicating db_path cannot ship now, as /health would find it (a sync
    asked on its control socket), or None: it ships, or its socket cannot be reached from here."""
    try:
        with reading(db_path) as conn:
            replica, _ = recall(conn, "replica")
    except sqlite3.Error:
        return None
    if not replica or not Path(replica.get("socket", "")).exists():
        return None
    try:
        status, answer = litestream_call(replica["socket"], "POST", "/sync", {
            "path": str(Path(db_path).resolve()), "wait": True, "timeout": timeout}, timeout=timeout + 1)
    except (FileNotFoundError, ConnectionRefusedError):  # no Litestream listens there any more: the service stopped
        return None
    except OSError as error:
        status, answer = 0, {"error": str(error) or type(error).__name__}
    if status == 200:
        return None
    return (f"the service's Litestream does not ship to the replica now ({answer.get('error', status)}): with "
            "--ack-after-replication /health answers 503 and changes are refused; the service's log says why")


def compared_with_live(db_path, newest, started, behind_after):
    """Why the replica's newest event `newest` shows it is not this database's, or is behind it: a live event
    written `behind_after` seconds before `started` is not in it, or the live newest is that much newer; or None."""
    with reading(db_path) as conn:
        same = conn.execute("SELECT * FROM events WHERE id = ?", (newest["id"],)).fetchone()
        latest = conn.execute("SELECT at FROM events ORDER BY id DESC LIMIT 1").fetchone()
        missing, first = conn.execute("SELECT count(*), min(at) FROM events WHERE id > ?", (newest["id"],)).fetchone()
    if same is None or tuple(same) != tuple(newest):
        return (f"its newest event {newest['id']} is {'not' if same is None else 'not the same'} in the live "
                f"database {db_path}: the replica is not this database's (a replica path used by two?)")
    at = dt.datetime.fromisoformat(newest["at"])
    behind = max((dt.datetime.fromisoformat(latest["at"]) - at).total_seconds(),
                 (started - dt.datetime.fromisoformat(first)).total_seconds() if first else 0.0)
    if behind > behind_after:
        return (f"it is {duration(behind)} behind the live database ({missing:,} events not in it after its newest, "
                f"{newest['id']}): Litestream is not shipping; `agenda status` and the service's log say why")
    return None

