"""Restoring from a replica whatever its newest state holds ("Restore drills"): a restore point checked, the walk
back to the latest that passes integrity_check, what an earlier moment loses, and the nightly drill."""

import collections
import datetime as dt
import json
import sqlite3
import time
from pathlib import Path

from .connections import reading
from .copies import check_database_file
from .replication import ReplicaUnreadable, restore_replica

WALK_TRIES, WALK_SECONDS = 30, 300  # how far a restore looks back for a state that passes integrity_check

# The walk's answer: the point found and its restored copy; `exact` when the point after it is known to fail,
# else `later`, the newest point not yet tried between them.
Walk = collections.namedtuple("Walk", "point copy exact later")

# What restoring an earlier state loses, read from a newer one: {appointment id: (action, row after)}, how many
# of each other change (a patient registered, an erasure asked), and why the reading stopped early, if it did.
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


def lost_changes(newer, older):
    """What restoring `older` loses of `newer`: every change newer's events hold after older's last one, read in
    the table's own order and no index (the damage is often an index's), as far as they can be read."""
    appointments, others, error = {}, collections.Counter(), None
    if Path(newer) == Path(older):
        return Lost(appointments, others, error)
    with reading(older) as conn:
        last = conn.execute("SELECT max(id) FROM events").fetchone()[0] or 0
    read = last
    try:
        with reading(newer) as conn:
            for key, action, entity, entity_id, after in conn.execute(
                    "SELECT id, action, entity, entity_id, after FROM events NOT INDEXED WHERE id > ? ORDER BY id",
                    (last,)):
                if entity == "appointment":
                    appointments[entity_id] = (action, json.loads(after or "{}"))
                else:
                    others[action] += 1
                read = key
    except (sqlite3.DatabaseError, ValueError) as error_read:
        error = f"the damaged state could be read only up to event {read}: {error_read}"
    return Lost(appointments, others, error)


def drill(binary, db_path, replica, folder, behind_after):
    """(None, facts) when the replica's newest state restores into `folder`, passes integrity_check, its newest
    event is in the live database unchanged and not `behind_after` seconds older than the live one's; else
    (the problem, facts). The copy is removed."""
    facts = {"bytes": 0, "event": None, "compared": False}
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
        return None, facts
    with reading(db_path) as conn:
        same = conn.execute("SELECT * FROM events WHERE id = ?", (newest["id"],)).fetchone()
        latest = conn.execute("SELECT at FROM events ORDER BY id DESC LIMIT 1").fetchone()
    facts["compared"] = True
    if same is None or tuple(same) != tuple(newest):
        return (f"its newest event {newest['id']} is {'not' if same is None else 'not the same'} in the live "
                f"database {db_path}: the replica is not this database's (a replica path used by two?)"), facts
    behind = (dt.datetime.fromisoformat(latest["at"]) - dt.datetime.fromisoformat(newest["at"])).total_seconds()
    if behind > behind_after:
        return (f"it is {behind / 60:.0f} minutes behind the live database (its newest event {newest['id']}): "
                "Litestream is not shipping; `agenda status` and the service's log say why"), facts
    return None, facts
