"""Replication with Litestream beside the service: supervision, acknowledgements, the replica's position."""

import collections
import contextlib
import ctypes
import datetime as dt
import http.client
import json
import logging
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
import urllib.parse

from ..values.refusals import ClinicError
from .connections import connect, create_private_file, hold_replicating_mark, replicating_mark
from .copies import check_database_file

log = logging.getLogger("agenda")


LITESTREAM_SYNC_SECONDS = 10  # how long --ack-after-replication waits for the replica before a 503
STOP_SECONDS = 5  # how long a stopping Litestream may take to ship its last changes
BEHIND_AFTER = 300  # seconds without a shipment after which the replica is said to be behind
DOWN_AFTER = 30  # seconds Litestream may be down before the service checkpoints its WAL itself ("Checkpoints")
CHECKPOINT_EVERY = 5  # seconds between those passive checkpoints while Litestream stays down


def litestream_binary():
    """The litestream executable: AGENDA_LITESTREAM, else the one `pip install 'agenda[replica]'`
    put beside this Python, else on PATH; None when there is none."""
    candidates = [os.environ.get("AGENDA_LITESTREAM"), str(Path(sysconfig.get_path("scripts")) / "litestream"),
                  str(Path(sys.executable).parent / "litestream"), shutil.which("litestream")]
    return next((path for path in candidates if path and os.access(path, os.X_OK)), None)


def without_password(url):
    """A replica URL fit for a log or a status line: its password, whatever it holds ('@', ':', '%'),
    replaced by *** ("Replication")."""
    return redactor(url)(url)


def url_secrets(url):
    """What in a replica URL is secret: its password as written and as decoded, read with
    urllib.parse; everything from the user's ':' to the last '@' of the host part; and the pieces
    of those between '@' and ':' (a parser's error may quote only one)."""
    secrets = set()
    scheme, found, rest = url.partition("://")
    if found:
        userinfo = rest.split("/", 1)[0].rpartition("@")[0] or rest.rpartition("@")[0]
        if ":" in userinfo:
            written = userinfo.partition(":")[2]
            secrets |= {written, urllib.parse.unquote(written)}
    try:
        password = urllib.parse.urlsplit(url).password
    except ValueError:
        password = None
    if password:
        secrets |= {password, urllib.parse.unquote(password)}
    secrets |= {piece for secret in list(secrets) for piece in re.split(r"[@:]", secret) if len(piece) >= 4}
    return sorted((secret for secret in secrets if secret), key=len, reverse=True)


def redactor(url):
    """A function that takes any text (a log line, a status) and hides this replica URL's password
    in it, and any user:password@ Litestream might print."""
    secrets = url_secrets(url)

    def redact(text):
        for secret in secrets:
            text = text.replace(secret, "***")
        return re.sub(r"(\w+://[^/:@\s]+):[^\s]*@", r"\1:***@", text)
    return redact


def replica_url(target):
    """A replica as Litestream names it: a folder becomes file:///its/absolute/path."""
    if re.match(r"(file|sftp|s3|gs|abs|webdav|nats)://", target):
        return target
    return "file://" + str(Path(target).expanduser().resolve())


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a child gets when the thread that started it ends
PRCTL = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None) if sys.platform.startswith("linux") else None
STARTED_BY = "AGENDA_REPLICATOR"  # in a Litestream's environment: the pid of the `agenda run` that started it


def dies_with(parent):
    """A preexec_fn: the child is sent SIGTERM (it ships what it can, then exits) when `parent`, the process
    starting it, dies however it dies, SIGKILL too ("Replication")."""
    def arm():
        if PRCTL is not None:
            PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signal.SIGTERM)
    return arm


def litestream_environment():
    """This process's environment as Litestream should have it: a CA bundle named for the AWS SDKs
    (AWS_CA_BUNDLE), which Litestream 0.5.17 refuses at its start, handed over as Go's SSL_CERT_FILE instead
    ("S3-compatible storage" in docs/replication.md)."""
    env = dict(os.environ)
    bundle = env.pop("AWS_CA_BUNDLE", None)
    if bundle:
        env.setdefault("SSL_CERT_FILE", bundle)
    return env


def start_child(command, mark):
    """`command` started holding the open file `mark`, its output a text pipe, its environment naming this
    process, and dying with it (`dies_with`)."""
    return subprocess.Popen(command, umask=0o077, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", pass_fds=(mark,), env={**litestream_environment(), STARTED_BY: str(os.getpid())},
                            preexec_fn=dies_with(os.getpid()))


def orphans_holding(mark):
    """Pids of the Litestreams that hold the file `mark` open while the `agenda run` that started them is gone
    (their parent is no longer the pid it wrote in their environment)."""
    target, found = os.path.realpath(mark), []
    for entry in (name for name in os.listdir("/proc") if name.isdigit()):
        try:
            started_by = re.search(rb"(?:^|\0)" + STARTED_BY.encode() + rb"=(\d+)\0",
                                   Path(f"/proc/{entry}/environ").read_bytes())
            parent = int(Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[1])
            if started_by and parent != int(started_by[1]) and any(
                    os.readlink(f"/proc/{entry}/fd/{fd}") == target for fd in os.listdir(f"/proc/{entry}/fd")):
                found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


def take_replicating_mark(db_path, waited=STOP_SECONDS, tries=50):
    """The replicating mark held (`hold_replicating_mark`); a Litestream left holding it by an `agenda run` that
    died is given `waited` seconds to ship and exit, then killed; RuntimeError while a living run holds it."""
    try:
        return hold_replicating_mark(db_path, tries)
    except RuntimeError:
        orphans = orphans_holding(replicating_mark(db_path))
        if not orphans:
            raise
    deadline = time.monotonic() + waited
    for pid in orphans:
        log.warning("a Litestream (pid %s) outlived the `agenda run` that started it and holds the replication "
                    "lock: stopping it", pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in orphans):
        time.sleep(0.1)
    for pid in orphans:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return hold_replicating_mark(db_path, tries)


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a unix socket: Litestream's control socket."""

    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def litestream_call(socket_path, method, path, body=None, timeout=LITESTREAM_SYNC_SECONDS + 5):
    """(status, JSON answer) of a request to Litestream's control socket; OSError when it is not there."""
    connection = UnixHTTPConnection(socket_path, timeout)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body),
                           headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        text = answer.read()
    finally:
        connection.close()
    try:
        return answer.status, json.loads(text or b"{}")
    except ValueError:
        return answer.status, {"error": text.decode("utf-8", "replace")}


def private_folder():
    """A new folder only this user can enter (0700, a random name made atomically), short enough to
    hold a unix socket (108 bytes): Litestream's config and control socket ("Replication")."""
    folder = tempfile.mkdtemp(prefix="agenda-litestream-")
    if len(folder) > 80:  # a long TMPDIR: /tmp holds it instead, just as privately
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="agenda-litestream-", dir="/tmp")
    return folder


class Replicator:
    """Litestream replicating the database while `agenda run` serves ("Replication"): started
    with it, restarted with backoff when it dies (an unreachable replica never stops bookings),
    stopped on shutdown after a last sync; its output goes to the log."""

    def __init__(self, binary, db_path, url, key_path=None, host_key=None, sync_interval="1s",
                 behind_after=BEHIND_AFTER, down_after=DOWN_AFTER):
        self.binary, self.db_path, self.url = binary, str(Path(db_path).resolve()), replica_url(url)
        self.mark = take_replicating_mark(self.db_path)  # every Litestream holds it too: no one checkpoints
        self.folder = private_folder()  # the config names a key; the socket answers /sync
        self.socket_path = str(Path(self.folder) / "control.sock")
        self.config = Path(self.folder) / "litestream.yml"
        replica = {"url": self.url, "sync-interval": sync_interval, **({"key-path": key_path} if key_path else {}),
                   **({"host-key": host_key} if host_key else {})}
        self.config.write_text(json.dumps({  # JSON is YAML: no YAML library needed
            "socket": {"enabled": True, "path": self.socket_path},
            "dbs": [{"path": self.db_path, "replica": replica}]}), encoding="utf-8")
        os.chmod(self.config, 0o600)
        self.process, self.stopping, self.thread, self.failed_at = None, threading.Event(), None, None
        self.behind_after, self.started_at = behind_after, dt.datetime.now(dt.timezone.utc)
        self.down_after, self.down_since = down_after, None  # since when Litestream has not run steadily
        self.cores = os.sched_getaffinity(0) if hasattr(os, "sched_setaffinity") else None  # before serving pins

    def start(self):
        self.thread = threading.Thread(target=self.supervise, name="litestream", daemon=True)
        self.thread.start()

    def supervise(self, backoff=1.0):
        while not self.stopping.is_set():
            started = time.monotonic()
            if self.cores:  # a child takes this thread's cores: Litestream off the service's one ("One core")
                with contextlib.suppress(OSError):  # a sandbox that forbids it pinned nothing either
                    os.sched_setaffinity(0, self.cores)
            self.process = start_child([self.binary, "replicate", "-config", str(self.config)], self.mark)
            log.info("litestream started (pid %s), replicating to %s", self.process.pid, without_password(self.url))
            self.started()
            log_litestream(self.process.stdout, redactor(self.url))
            code = self.process.wait()
            if self.stopping.is_set():
                return
            ran = time.monotonic() - started
            if self.down_since is None or ran > 5:  # a Litestream that keeps failing at its start stays down
                self.down_since = time.monotonic()
            backoff = 1.0 if ran > 60 else min(backoff * 2, 60.0)
            log.warning("litestream stopped (exit %s); bookings go on; restarting it in %.0f s", code, backoff)
            self.wait_down(backoff)

    def started(self):
        """Called each time Litestream has been started (again)."""

    def wait_down(self, seconds):
        """Wait `seconds` for Litestream's restart; once it has been down `down_after` seconds, checkpoint the
        WAL passively every few seconds meanwhile, so that it stays bounded ("Checkpoints")."""
        until = time.monotonic() + seconds
        while not self.stopping.wait(max(0.0, min(CHECKPOINT_EVERY, until - time.monotonic()))):
            if time.monotonic() - self.down_since >= self.down_after:
                self.checkpoint()
            if time.monotonic() >= until:
                return

    def checkpoint(self):
        passive_checkpoint(self.db_path)

    def stop(self, timeout=STOP_SECONDS):
        """Stop Litestream: on SIGTERM it ships what it has not yet shipped, then exits; one that cannot
        finish in `timeout` seconds (an unreachable replica) is killed, and the log says so."""
        self.stopping.set()
        if self.process is not None and self.process.poll() is None:
            shipped = self.last_shipment()
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                log.warning("litestream could not ship its last changes in %d s and was stopped: what changed "
                            "after %s is in %s but not yet in the replica; the next `agenda run --replica` ships "
                            "it", timeout, shipped, self.db_path)
        if self.thread is not None:
            self.thread.join(timeout=2)
        shutil.rmtree(self.folder, ignore_errors=True)
        os.close(self.mark)

    def last_shipment(self):
        """When Litestream last shipped to the replica, as its control socket says; or 'its start'."""
        try:
            _, listed = litestream_call(self.socket_path, "GET", "/list", timeout=1)
        except OSError:
            return "its start"
        entry = next((db for db in listed.get("databases", []) if db.get("path") == self.db_path), {})
        return entry.get("last_sync_at") or "its start"

    def sync(self, timeout=LITESTREAM_SYNC_SECONDS):
        """Wait until everything committed so far is in the replica; ClinicError NOT_REPLICATED (503)
        when it cannot be."""
        status, answer = replica_sync(self.socket_path, self.db_path, timeout)
        if status != 200:
            self.failed_at = time.monotonic()
            log.warning("a change is not acknowledged: the replica did not confirm it (%s)", answer.get("error", status))
            raise ClinicError("NOT_REPLICATED", "saved here but not yet in the replica; retry: a retried "
                                                     "change is not made twice")
        self.failed_at = None

    def state(self):
        """What /health says of the replica ("Replication"): 'ok' when
        Litestream's socket answers, the last acknowledgement held (asked again, briefly, when it
        did not) and it shipped lately; 'behind' when it has not for `behind_after` seconds; else
        'starting' or 'not answering'."""
        try:
            _, listed = litestream_call(self.socket_path, "GET", "/list", timeout=1)
        except OSError:
            return "starting" if self.failed_at is None else "not answering"
        if self.failed_at is not None:
            try:
                self.sync(timeout=2)
            except ClinicError:
                return "not answering"
        last = last_shipped(listed, self.db_path)
        return "behind" if unshipped_for(last, self.started_at, dt.datetime.now(dt.timezone.utc)) > \
            self.behind_after else "ok"


def passive_checkpoint(db_path):
    """One passive checkpoint by the service, while Litestream is down: it never waits for a reader or
    a writer ("Checkpoints")."""
    try:
        conn = connect(db_path, replicated=True)
        try:
            busy, frames, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as error:
        log.warning("litestream is down and the WAL could not be checkpointed: %s", error)
        return
    if frames > 0:
        log.info("litestream is down: the service checkpointed %d of %d WAL pages itself", done, frames)


def replica_sync(socket_path, db_path, timeout=LITESTREAM_SYNC_SECONDS):
    """Ask the running Litestream to ship everything committed so far and wait: (200, answer) once the replica
    holds it, else (status or 0, {"error": why})."""
    try:
        return litestream_call(socket_path, "POST", "/sync", {"path": str(Path(db_path).resolve()), "wait": True,
                                                                "timeout": timeout}, timeout=timeout + 5)
    except OSError as error:
        return 0, {"error": str(error)}


def log_litestream(stream, redact):
    """Litestream's output into the log, the replica's password hidden (`redactor`), its warnings
    and errors as warnings (but its complaint of no database, a host's Litestream starting empty)."""
    for line in stream:
        text = redact(re.sub(r"^time=\S+ ", "", line.rstrip()))
        trouble = re.search(r"level=(WARN|ERROR)", text) and "no databases specified" not in text  # a host's start
        log.log(logging.WARNING if trouble else logging.INFO, "litestream: %s", text)


def last_shipped(listed, db_path):
    """When Litestream's /list says it last shipped db_path to the replica, or None."""
    entry = next((db for db in listed.get("databases", []) if db.get("path") == db_path), {})
    last = entry.get("last_sync_at")
    return dt.datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", last.replace("Z", "+00:00"))) if last else None


def unshipped_for(last, started, now):
    """Seconds since the replica last took a shipment (since Litestream started, when it never did).
    Litestream ships every second, changes or not, while the replica can be written ("Replication")."""
    return (now - (last or started)).total_seconds()


def replica_position(socket_path, db_path, now, started, behind_after=BEHIND_AFTER):
    """What `agenda status` says of the replica: its transaction id and how long since the last
    shipment, from the running Litestream, and in words when it is behind; or why it cannot say."""
    try:
        _, listed = litestream_call(socket_path, "GET", "/list", timeout=2)
        _, txid = litestream_call(socket_path, "GET", "/txid?" + urllib.parse.urlencode({"path": db_path}),
                                  timeout=2)
    except OSError:
        return "Litestream is not running (`agenda run --replica` starts it)"
    last = last_shipped(listed, db_path)
    position = f"transaction {txid.get('txid', '?')}; " + (
        f"last shipped {unshipped_for(last, started, now):.0f} s ago" if last else
        "nothing shipped yet since Litestream started")
    waited = unshipped_for(last, started, now)
    if waited > behind_after:
        position += (f". BEHIND: nothing has reached the replica for {duration(waited)}; bookings go on here "
                     "but are not copied: check that the replica's path or server can be written (the service's "
                     "log has Litestream's own words)")
    return position


def duration(seconds):
    """A span in words: seconds up to two minutes, then minutes."""
    return f"{seconds:.0f} seconds" if seconds < 120 else f"{seconds / 60:.0f} minutes"


class ReplicaUnreadable(RuntimeError):
    """Litestream could not read the replica; the message is its own words, the password hidden."""


Point = collections.namedtuple("Point", "txid at")  # a moment the replica can be restored to: its last transaction


def restore_points(binary, replica):
    """The replica's restore points, oldest first, as Litestream lists its files (`litestream ltx`): one per
    distinct last transaction, with when it was written (UTC); ReplicaUnreadable when it cannot be read."""
    result = subprocess.run([binary, "ltx", "-level", "all", "-json", replica_url(replica)], capture_output=True,
                            text=True, timeout=300, env=litestream_environment())
    listed = "\n".join(line for line in result.stdout.splitlines() if not line.startswith("time="))  # its log
    try:  # lines, such as an sftp replica's "host key not verified", come on the same output as the list
        files = json.loads(listed) if result.returncode == 0 else None
    except ValueError:
        files = None
    if not isinstance(files, list):
        raise ReplicaUnreadable(redactor(replica_url(replica))(
            (result.stderr or result.stdout).strip() or "litestream ltx gave no list"))
    points = {}
    for file in files:
        txid, at = int(file["max_txid"], 16), dt.datetime.fromisoformat(file["timestamp"].replace("Z", "+00:00"))
        points[txid] = min(points.get(txid, at), at)
    return [Point(txid, at) for txid, at in sorted(points.items())]


def restore_replica(binary, replica, output, moment=None, txid=None, background=False, timeout=3600):
    """The replica's newest state, or its state at `moment` (UTC) or at transaction `txid`, restored by Litestream
    into `output` (0600 from its first byte); `background` runs it at the lowest CPU and I/O priority;
    ReplicaUnreadable when it cannot, or not within `timeout` seconds."""
    command = [binary, "restore", "-o", str(output)]
    if moment is not None:
        command += ["-timestamp", moment.strftime("%Y-%m-%dT%H:%M:%SZ")]
    if txid is not None:
        command += ["-txid", f"{txid:016x}"]
    if background and shutil.which("ionice"):  # util-linux: the idle I/O class
        command = ["ionice", "-c3", *command]
    try:
        result = subprocess.run(command + [replica_url(replica)], capture_output=True, text=True, timeout=timeout,
                                umask=0o077, preexec_fn=(lambda: os.nice(19)) if background else None,
                                env=litestream_environment())
    except subprocess.TimeoutExpired:
        raise ReplicaUnreadable(f"Litestream took more than {timeout:.0f} s") from None
    if result.returncode != 0 or not Path(output).is_file():
        raise ReplicaUnreadable(redactor(replica_url(replica))((result.stderr or result.stdout).strip() or "no output"))
    os.chmod(output, 0o600)
    return Path(output)



def check_standby(copy):
    """integrity_check of a standby's copy (read only), its result kept in COPY.check for `agenda status`
    and a failure logged as a warning ("Restore drills")."""
    try:
        check_database_file(copy)
        problem = None
    except ValueError as error:
        problem = str(error)
    result = Path(f"{copy}.check")
    partial = result.with_name(f".{result.name}.partial")
    partial.unlink(missing_ok=True)
    create_private_file(partial)
    partial.write_text(json.dumps({"at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                   "problem": problem}), encoding="utf-8")
    os.replace(partial, result)
    if problem:
        log.warning("standby: the copy fails its check (%s); do not promote it: `agenda restore --from-replica` "
                    "looks back for the latest moment that passes", problem)
    else:
        log.info("standby: the copy passes its check")


def standby_checked(db_path):
    """(when, problem or None) of a standby's last check of its copy at db_path, or None where it is no standby."""
    try:
        kept = json.loads(Path(f"{db_path}.check").read_text(encoding="utf-8"))
        return dt.datetime.fromisoformat(kept["at"]), kept.get("problem")
    except (OSError, ValueError, KeyError):
        return None
