"""Staff accounts: passwords (scrypt), the login lock and desk sessions, apart from the clinic's operations."""

import collections
import datetime as dt
import hashlib
import hmac
import ipaddress
import json
import os
import re
import secrets
import threading
import time

from ..values.settings import desk_networks, Settings
from ..values.refusals import ClinicError, invalid
from ..storage.events import record_event, utc_iso

LOCK_AFTER, LOCK_MINUTES = 5, 15  # failed logins in a row, and how long they lock a name from a source
CHECKS_AT_ONCE, CHECKS_PER_SECOND, CHECKS_BURST = 2, 2, 10  # password checks across the process
CHECKS_KEPT = 4  # of the burst, the tokens only a trusted lane may take ("Login flood")
LANE_BURST, LANE_PER_SECOND = 3, 1 / 20  # a trusted lane's own bucket: 3 checks, then one every 20 s
LANES_KEPT = 1000  # lanes remembered before those with a full bucket are forgotten
DEVICE_DAYS = 365  # a browser that logged in keeps its lane this long without another login
SESSION_HOURS = 12  # a desk session ends after this long, however busy
KEPT_MINUTES = 10  # a form sent after its session ended is kept this long ("Kept forms")
ROLES = ("reception", "admin")  # what a staff account may do at the desk ("Roles")
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 14, 8, 1


def hash_password(password):
    """scrypt with a salt of its own, as staff.password stores it."""
    if len(password) < 8:
        raise invalid("a password needs 8 characters or more", "password_length", "password")
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def password_matches(stored, password):
    _, n, r, p, salt, digest = stored.split("$")
    tried = hashlib.scrypt(password.encode("utf-8", "replace"), salt=bytes.fromhex(salt), n=int(n), r=int(r),
                           p=int(p), dklen=32)
    return hmac.compare_digest(tried.hex(), digest)


DUMMY_PASSWORD = "scrypt$16384$8$1$" + "00" * 16 + "$" + "00" * 32  # an unknown name costs one scrypt too


def staff_role(role):
    """One of ROLES, given in any case."""
    role = (role or "").strip().lower()
    if role not in ROLES:
        raise invalid(f"a staff role is {' or '.join(ROLES)}", "staff_role", "role")
    return role


class Allowance:
    """A token bucket for each key (a lane, an address, a link): `burst` at most, refilled at `per_second`; a key
    not seen lately has a full one; past `kept` keys, the full ones and then the least lately spent are forgotten
    ("Login flood")."""

    def __init__(self, burst, per_second, clock=time.monotonic, kept=LANES_KEPT):
        self.burst, self.per_second, self.clock, self.kept = burst, per_second, clock, kept
        self.buckets, self.lock = {}, threading.Lock()

    def tokens(self, key, now):
        """The tokens in `key`'s bucket at `now`."""
        if len(self.buckets) > self.kept:
            self.prune(now)
        tokens, at = self.buckets.get(key, (self.burst, now))
        return min(self.burst, tokens + (now - at) * self.per_second)

    def prune(self, now):
        """Forget the full buckets, then the least lately spent, down to half of `kept`: a prune now and then,
        however many keys a stranger makes up."""
        self.buckets = {name: (tokens, at) for name, (tokens, at) in self.buckets.items()
                        if tokens + (now - at) * self.per_second < self.burst}
        for name in list(self.buckets)[:max(0, len(self.buckets) - self.kept // 2)]:
            del self.buckets[name]

    def spent(self, key, left, now):
        self.buckets.pop(key, None)  # the latest spent last: the least lately spent are forgotten first
        self.buckets[key] = (left, now)

    def take(self, key):
        """True and one token spent from `key`'s bucket, or False when it is empty."""
        with self.lock:
            now = self.clock()
            left = self.tokens(key, now)
            if left < 1 - 1e-9:
                return False
            self.spent(key, left - 1, now)
            return True


class PasswordGate:
    """The process's bound on password checks, one bucket of `burst` refilled at `per_second` for every
    check, with fairness on top ("Login flood"): a stranger may take neither the last `kept` tokens nor
    more than `at_once` running checks; a trusted lane (a device, a clinic address) may take them, one more
    check at once, within a small bucket of its own. Past the bound a login is refused at once."""

    def __init__(self, at_once=CHECKS_AT_ONCE, per_second=CHECKS_PER_SECOND, burst=CHECKS_BURST,
                 clock=time.monotonic, kept=CHECKS_KEPT, lane_burst=LANE_BURST, lane_per_second=LANE_PER_SECOND):
        self.at_once, self.per_second, self.burst, self.kept, self.clock = at_once, per_second, burst, kept, clock
        self.lanes = Allowance(lane_burst, lane_per_second, clock)
        self.lock, self.running, self.tokens, self.filled_at = threading.Lock(), 0, float(burst), clock()

    def enter(self, lane=None):
        """True and a check counted, or False when the bound is reached for a stranger (lane None) or for
        `lane`, whose own bucket spent makes it a stranger; a True is ended by leave()."""
        with self.lock:
            now = self.clock()
            self.tokens = min(self.burst, self.tokens + (now - self.filled_at) * self.per_second)
            self.filled_at = now
            own = self.lanes.tokens(lane, now) if lane is not None else 0
            trusted = own >= 1 - 1e-9  # 2/3 * 3 is 1.999...8
            floor, slots = (0, self.at_once + 1) if trusted else (self.kept, self.at_once)
            if self.tokens < floor + 1 - 1e-9 or self.running >= slots:
                return False
            self.tokens, self.running = self.tokens - 1, self.running + 1
            if trusted:
                self.lanes.spent(lane, own - 1, now)
            return True

    def leave(self):
        with self.lock:
            if self.running < 1:
                raise ValueError("leave() without enter()")
            self.running -= 1


def forget_ended_sessions(conn, at, idle_minutes):
    """Delete the desk sessions that ended longer than KEPT_MINUTES ago (kept until then for "Kept forms")."""
    conn.execute("DELETE FROM desk_sessions WHERE last_seen < ? OR created_at < ?",
                 (utc_iso(at - dt.timedelta(minutes=idle_minutes + KEPT_MINUTES)),
                  utc_iso(at - dt.timedelta(hours=SESSION_HOURS, minutes=KEPT_MINUTES))))


def forget_kept_forms(conn, at):
    """Delete the forms kept longer than KEPT_MINUTES ("Kept forms")."""
    conn.execute("DELETE FROM kept_forms WHERE created_at < ?", (utc_iso(at - dt.timedelta(minutes=KEPT_MINUTES)),))


def token_hash(token):
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


Login = collections.namedtuple("Login", "token csrf device")  # what a login gives the browser


def locked(until):
    """The refusal of a name locked from this source until `until` (UTC)."""
    return ClinicError("LOGIN_LOCKED", f"the name is locked from here until {until} after {LOCK_AFTER} failures",
                       until=until)


def failures_of(conn, name, source):
    """The login_failures row of a name from a source, or None."""
    return conn.execute("SELECT failures, locked_until FROM login_failures WHERE name = ? AND source = ?",
                        (name, source)).fetchone()


def is_locked(failed, at):
    """Whether a login_failures row (or None) locks its name from its source at `at`."""
    return failed is not None and failed["locked_until"] is not None and failed["locked_until"] > utc_iso(at)


def keep_device(conn, device, token, name, at):
    """The browser that just logged in as `name` keeps its lane under a new token (its row, when `device`,
    else a new one), its failures cleared; devices unused for DEVICE_DAYS are forgotten."""
    now = utc_iso(at)
    conn.execute("DELETE FROM desk_devices WHERE last_login < ?", (utc_iso(at - dt.timedelta(days=DEVICE_DAYS)),))
    if device is None or not conn.execute(
            "UPDATE desk_devices SET token_hash = ?, staff_name = ?, last_login = ?, failures = 0, failed_at = NULL"
            " WHERE token_hash = ?", (token_hash(token), name, now, device["token_hash"])).rowcount:
        conn.execute("INSERT INTO desk_devices (token_hash, staff_name, created_at, last_login) VALUES (?, ?, ?, ?)",
                     (token_hash(token), name, now, now))


def staff_name(name):
    """A staff account's name: 1 to 40 letters, digits, dots, dashes or underscores."""
    name = (name or "").strip().lower()
    if not re.fullmatch(r"[a-z0-9._-]{1,40}", name):
        raise invalid("a staff name is 1 to 40 letters, digits, dots, dashes or underscores", "staff_name", "name")
    return name


class Accounts:
    """Staff accounts over one database, its settings (the desk's idle time, the clinic's network) and a
    clock: passwords, the login lock, the browsers that logged in and desk sessions ("Desk accounts and
    sessions", "Login flood"). Every change is one transaction with its event."""

    def __init__(self, db, settings=None, clock=None, gate=None):
        self.db = db
        self.settings = settings or Settings()
        self.clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))
        self.gate = gate or PasswordGate()
        self.networks = desk_networks(self.settings.desk_network)

    def conn(self):
        return self.db.connection()

    def add_staff(self, name, password, source="cli", role="reception"):
        """A new account with its role: reception (the day's work) or admin (everything)."""
        name, role = staff_name(name), staff_role(role)
        at = self.clock()
        with self.db.transaction() as conn:
            if conn.execute("SELECT 1 FROM staff WHERE name = ?", (name,)).fetchone():
                raise ClinicError("STAFF_ALREADY_EXISTS", f"there is already a staff account {name!r}")
            conn.execute("INSERT INTO staff (name, password, role, created_at) VALUES (?, ?, ?, ?)",
                         (name, hash_password(password), role, utc_iso(at)))
            record_event(conn, at, source, "staff.added", "staff", name, after={"role": role})

    def set_role(self, name, role, source="cli"):
        """Give an account another role; its open sessions take it at their next page."""
        role, at = staff_role(role), self.clock()
        with self.db.transaction() as conn:
            row = self.require_staff(name)
            conn.execute("UPDATE staff SET role = ? WHERE name = ?", (role, row["name"]))
            record_event(conn, at, source, "staff.role_set", "staff", row["name"], before={"role": row["role"]},
                         after={"role": role})

    def set_staff_password(self, name, password, source="cli"):
        """A new password; the account's sessions end and its lock is lifted."""
        at = self.clock()
        with self.db.transaction() as conn:
            name = self.require_staff(name)["name"]
            conn.execute("UPDATE staff SET password = ? WHERE name = ?", (hash_password(password), name))
            conn.execute("DELETE FROM login_failures WHERE name = ?", (name,))
            conn.execute("DELETE FROM desk_sessions WHERE staff_name = ?", (name,))
            record_event(conn, at, source, "staff.password_set", "staff", name)

    def remove_staff(self, name, source="cli"):
        at = self.clock()
        with self.db.transaction() as conn:
            name = self.require_staff(name)["name"]
            conn.execute("DELETE FROM staff WHERE name = ?", (name,))  # and, by cascade, its sessions
            record_event(conn, at, source, "staff.removed", "staff", name)

    def require_staff(self, name):
        row = self.conn().execute("SELECT * FROM staff WHERE name = ?", ((name or "").strip().lower(),)).fetchone()
        if row is None:
            raise ClinicError("STAFF_NOT_FOUND", f"no staff account {name!r}")
        return row

    def staff(self, at=None):
        """Every account with the sources its name is locked from at `at` (now by default)."""
        at = utc_iso(at or self.clock())
        members = [dict(row) for row in self.conn().execute("SELECT name, role, created_at FROM staff ORDER BY name")]
        for member in members:
            member["locks"] = [dict(row) for row in self.conn().execute(
                "SELECT source, locked_until FROM login_failures WHERE name = ? AND locked_until > ?"
                " ORDER BY locked_until", (member["name"], at))]
        return members

    def unlock(self, name, source="cli"):
        """Lift every lock and count of failures on a staff name, from every source; how many there were."""
        at = self.clock()
        with self.db.transaction() as conn:
            name = self.require_staff(name)["name"]
            lifted = conn.execute("DELETE FROM login_failures WHERE name = ?", (name,)).rowcount
            record_event(conn, at, source, "staff.unlocked", "staff", name)
        return lifted

    def log_in(self, name, password, source="unknown", device=None):
        """A Login for the right password: a new session's token and csrf, and the browser's new device token
        (replacing `device`). Refused before any password check or write: LOGIN_LOCKED for a name locked from
        this source, LOGIN_BUSY past the gate; else LOGIN_FAILED, the same work for any name ("Login flood")."""
        at, name, source = self.clock(), (name or "").strip().lower()[:100], source[:100]
        failed = failures_of(self.conn(), name, source)
        if is_locked(failed, at):
            raise locked(failed["locked_until"])
        known = self.known_device(device, at)
        if not self.gate.enter(self.lane(known, source, at)):
            raise ClinicError("LOGIN_BUSY", "too many logins right now: try again in a minute")
        try:
            row = self.conn().execute("SELECT password FROM staff WHERE name = ?", (name,)).fetchone()
            checked = row["password"] if row else DUMMY_PASSWORD
            matches = password_matches(checked, password) and row is not None
        finally:
            self.gate.leave()
        login = Login(secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(32))
        with self.db.transaction() as conn:
            granted = self.settle_login(conn, (name, source, known), checked if matches else None, at, login)
        if isinstance(granted, str):
            raise locked(granted)
        if not granted:
            raise ClinicError("LOGIN_FAILED", "wrong name or password, or the name is locked from here for "
                                              f"{LOCK_MINUTES} minutes after {LOCK_AFTER} failures")
        return login

    def known_device(self, device, at):
        """The desk_devices row of the browser's device token, unless unknown or unused for DEVICE_DAYS."""
        if not device:
            return None
        return self.conn().execute("SELECT token_hash, failures, failed_at FROM desk_devices WHERE token_hash = ?"
                                   " AND last_login >= ?", (token_hash(device),
                                                            utc_iso(at - dt.timedelta(days=DEVICE_DAYS)))).fetchone()

    def lane(self, device, source, at):
        """The gate's lane of a login: its known device's, unless LOCK_AFTER failures in a row through it, the
        last under LOCK_MINUTES ago; else its source's, when in the clinic's network; else None, a stranger."""
        quiet_since = utc_iso(at - dt.timedelta(minutes=LOCK_MINUTES))
        if device is not None and (device["failures"] < LOCK_AFTER or device["failed_at"] < quiet_since):
            return "device", device["token_hash"]
        try:
            address = ipaddress.ip_address(source)
        except ValueError:
            return None
        return ("network", source) if any(address in network for network in self.networks) else None

    def settle_login(self, conn, who, matched, at, login):
        """Inside the login's write transaction: a name locked from this source stays locked and counts
        nothing (its lock's end returned); the password that matched, still the account's, opens a session
        and keeps the device (True); else a failure counts, for the name and the device (False, or the lock's end)."""
        name, source, device = who
        now = utc_iso(at)
        conn.execute("DELETE FROM login_failures WHERE last_at < ? AND (locked_until IS NULL OR locked_until < ?)",
                     (utc_iso(at - dt.timedelta(minutes=LOCK_MINUTES)), now))
        failed = failures_of(conn, name, source)
        if is_locked(failed, at):
            return failed["locked_until"]
        password = conn.execute("SELECT password FROM staff WHERE name = ?", (name,)).fetchone()
        if matched is not None and password is not None and password["password"] == matched:
            conn.execute("DELETE FROM login_failures WHERE name = ? AND source = ?", (name, source))
            conn.execute("INSERT INTO desk_sessions (token_hash, staff_name, csrf, created_at, last_seen)"
                         " VALUES (?, ?, ?, ?, ?)", (token_hash(login.token), name, login.csrf, now, now))
            keep_device(conn, device, login.device, name, at)
            forget_ended_sessions(conn, at, self.settings.desk_idle_minutes)
            return True
        failures = (failed["failures"] if failed is not None and failed["locked_until"] is None else 0) + 1
        locked_until = utc_iso(at + dt.timedelta(minutes=LOCK_MINUTES)) if failures >= LOCK_AFTER else None
        conn.execute("INSERT INTO login_failures (name, source, failures, locked_until, last_at) VALUES (?, ?, ?, ?, ?)"
                     " ON CONFLICT (name, source) DO UPDATE SET failures = excluded.failures,"
                     " locked_until = excluded.locked_until, last_at = excluded.last_at",
                     (name, source, failures, locked_until, now))
        if device is not None:  # failures in a row through one browser, restarted after LOCK_MINUTES quiet
            conn.execute("UPDATE desk_devices SET failures = CASE WHEN failed_at < ? THEN 1 ELSE failures + 1 END,"
                         " failed_at = ? WHERE token_hash = ?",
                         (utc_iso(at - dt.timedelta(minutes=LOCK_MINUTES)), now, device["token_hash"]))
        if locked_until is not None and password is not None:
            record_event(conn, at, "desk", "staff.locked", "staff", name, after={"source": source})
        return locked_until or False

    def ended_at(self, session):
        """When a desk session ends (or ended): idle too long, or too old, whichever comes first."""
        return min(dt.datetime.fromisoformat(session["last_seen"]) + dt.timedelta(minutes=self.settings.desk_idle_minutes),
                   dt.datetime.fromisoformat(session["created_at"]) + dt.timedelta(hours=SESSION_HOURS))

    def desk_session(self, token, touch=True):
        """{"name", "role", "csrf"} of a live session, its idle time restarted (unless not `touch`); None when
        unknown or idle too long."""
        return self.session_or_ended(token, touch)[0]

    def session_or_ended(self, token, touch=True):
        """(the live session as desk_session gives it, None) or, for a session that ended by idling or age
        less than KEPT_MINUTES ago, (None, {"name", "csrf"} it had), however many requests came since (a
        refresh of another tab); (None, None) for a token unknown or long ended ("Kept forms")."""
        if not token:
            return None, None
        at = self.clock()
        row = self.conn().execute("SELECT desk_sessions.*, staff.role FROM desk_sessions JOIN staff ON name = staff_name"
                                  " WHERE token_hash = ?", (token_hash(token),)).fetchone()
        if row is None:
            return None, None
        ended = self.ended_at(row)
        if ended < at:  # kept, unusable, until the next login clears the long ended
            kept = at - ended <= dt.timedelta(minutes=KEPT_MINUTES)
            return None, {"name": row["staff_name"], "csrf": row["csrf"]} if kept else None
        idle = at - dt.datetime.fromisoformat(row["last_seen"])
        if touch and idle > dt.timedelta(minutes=1):  # written down once a minute at most, not at every page
            with self.db.transaction() as conn:
                conn.execute("UPDATE desk_sessions SET last_seen = ? WHERE token_hash = ?",
                             (utc_iso(at), row["token_hash"]))
        return {"name": row["staff_name"], "role": row["role"], "csrf": row["csrf"]}, None

    def keep_form(self, name, path, fields):
        """Keep a form `name` sent to `path` after their session ended, for KEPT_MINUTES ("Kept forms");
        the random id that takes it back."""
        kept, at = secrets.token_urlsafe(18), self.clock()
        with self.db.transaction() as conn:
            forget_kept_forms(conn, at)
            conn.execute("INSERT INTO kept_forms (id_hash, staff_name, path, fields, created_at) VALUES (?, ?, ?, ?, ?)",
                         (token_hash(kept), name, path, json.dumps(fields), utc_iso(at)))
        return kept

    def take_kept_form(self, kept, name):
        """(path, [[field, value], ...]) of the form kept under `kept` for `name`, once and within
        KEPT_MINUTES; None otherwise (another name's is left where it is)."""
        cutoff = utc_iso(self.clock() - dt.timedelta(minutes=KEPT_MINUTES))
        with self.db.transaction() as conn:
            row = conn.execute("SELECT * FROM kept_forms WHERE id_hash = ?", (token_hash(kept),)).fetchone()
            conn.execute("DELETE FROM kept_forms WHERE created_at < ? OR (id_hash = ? AND staff_name = ?)",
                         (cutoff, token_hash(kept), name))
        if row is None or row["staff_name"] != name or row["created_at"] < cutoff:
            return None
        return row["path"], json.loads(row["fields"])

    def refuse(self, name, what, source):
        """Record that `name` was refused `what` (a page or an action) for their role."""
        at = self.clock()
        with self.db.transaction() as conn:
            record_event(conn, at, source, "staff.refused", "staff", name, after={"refused": what})

    def log_out(self, token):
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM desk_sessions WHERE token_hash = ?", (token_hash(token or ""),))
            forget_kept_forms(conn, self.clock())
