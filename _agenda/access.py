"""The access record: every read of patients' data by a person or the caller, who, when, which
patients (ids only), what kind, allowed or refused ("Access record")."""

import datetime as dt
import logging
import sqlite3
import threading

from .store import utc_iso

KINDS = ("patient", "appointment", "search", "day", "print", "export", "blocked", "access")
KEEP_DAYS = 2 * 365  # how long a record is kept; the retention run removes older ones
SAME_VIEW = dt.timedelta(minutes=10)  # a view showing nothing new within this long records nothing
FLUSH_EVERY = 1.0  # seconds between two batches of a running service

log = logging.getLogger("agenda")


class AccessRecord:
    """Notes reads into `access_records` (one row a request, with the ids it showed), apart from the
    bookings and never durable alone: at once, or, once `start()`ed, in batches a second apart whose
    last may go with the power, a booking never."""

    def __init__(self, db, clock):
        self.db, self.clock = db, clock
        self.last_seen, self.guard = {}, threading.Lock()
        self.pending, self.flusher, self.stopping = [], None, threading.Event()

    def note(self, reader, kind, patient_ids, allowed=True):
        """Record that `reader` (api, desk:NAME, cli:USER) was shown, or refused, these patients; not
        when it was shown them all in this kind of view a moment ago (a refresh)."""
        ids = frozenset(map(int, patient_ids))
        if not ids:
            return
        at, key = self.clock(), (reader, kind, bool(allowed))
        with self.guard:
            shown, when = self.last_seen.get(key, (None, None))
            if shown is not None and ids <= shown and at - when < SAME_VIEW:
                return
            self.last_seen[key] = (ids, at)
            self.pending.append((at, *key, ids))
        if self.flusher is None:
            self.flush()

    def start(self, every=FLUSH_EVERY):
        """Write what is noted in batches, every `every` seconds, on a thread of its own."""
        self.stopping.clear()
        self.flusher = threading.Thread(target=self.flush_until_stopped, args=(every,), name="access-record",
                                        daemon=True)
        self.flusher.start()

    def stop(self):
        """Stop the batches, writing what is still noted."""
        if self.flusher is not None:
            self.stopping.set()
            self.flusher.join()
            self.flusher = None
        self.flush()

    def flush_until_stopped(self, every):
        while not self.stopping.wait(every):
            try:
                self.flush()
            except sqlite3.Error as error:  # busy or read-only: the batch waits for the next turn
                log.warning("access record not written yet (%s); trying again in %s s", error, every)

    def flush(self):
        """Write every noted read in one transaction (synchronous=NORMAL); kept for the next try if refused."""
        with self.guard:
            batch, self.pending = self.pending, []
        if not batch:
            return
        try:
            with self.db.transaction(durable=False) as conn:  # ids numbered here: the write lock is ours
                first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM access_records").fetchone()[0]
                conn.executemany("INSERT INTO access_records (id, at, reader, kind, allowed) VALUES (?, ?, ?, ?, ?)",
                                 [(first + n, utc_iso(at), reader, kind, int(allowed))
                                  for n, (at, reader, kind, allowed, _) in enumerate(batch)])
                conn.executemany("INSERT INTO access_patients (patient_id, record_id) VALUES (?, ?)",
                                 [(patient_id, first + n) for n, read in enumerate(batch) for patient_id in sorted(read[4])])
        except sqlite3.Error:
            with self.guard:
                self.pending[:0] = batch
            raise

    def of_patient(self, patient_id, since=None):
        """Every access to one patient's data, oldest first: {at, reader, kind, allowed, shown}."""
        self.flush()
        since = utc_iso(dt.datetime.combine(since, dt.time(), dt.timezone.utc)) if since else ""
        rows = self.db.connection().execute(
            "SELECT r.id, r.at, r.reader, r.kind, r.allowed,"
            " (SELECT count(*) FROM access_patients o WHERE o.record_id = r.id) AS shown"
            " FROM access_patients p JOIN access_records r ON r.id = p.record_id"
            " WHERE p.patient_id = ? AND r.at >= ? ORDER BY r.at, r.id", (int(patient_id), since))
        return [{**dict(row), "allowed": bool(row["allowed"])} for row in rows]

    def forget_before(self, moment):
        """Remove the records older than `moment`; how many went."""
        self.flush()
        with self.db.transaction(durable=False) as conn:
            old = "SELECT id FROM access_records WHERE at < ?"
            conn.execute(f"DELETE FROM access_patients WHERE record_id IN ({old})", (utc_iso(moment),))
            return conn.execute("DELETE FROM access_records WHERE at < ?", (utc_iso(moment),)).rowcount

