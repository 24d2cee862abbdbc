"""The access record: every read of patients' data by a person, a feed or the caller: who, which
patients (ids only), what kind, allowed or refused, one row per patient, reader, kind, outcome and day
with how many reads and the first and last ("Access record"). Only `identity.py` notes reads."""

import calendar
import datetime as dt
import logging
import sqlite3
import threading

KINDS = ("patient", "appointment", "search", "day", "preview", "change", "feed", "export", "blocked", "access",
         "message", "link")
KEEP_DAYS = 2 * 365  # how long a record is kept; the retention run removes older ones
RUNS = ("feed",)  # kinds read by a machine again and again: one row a run of reads, not a day
RUN_GAP = 36 * 3600  # seconds without a read that end a run (a phone off for a night does not)
FLUSH_EVERY = 1.0  # seconds between two batches of a running service

log = logging.getLogger("agenda")


def day_number(moment):
    """The UTC day of an aware moment as the record keys it: 20261126."""
    utc = moment.astimezone(dt.timezone.utc)
    return utc.year * 10000 + utc.month * 100 + utc.day


def seconds(moment):
    """Unix seconds of an aware moment."""
    return calendar.timegm(moment.astimezone(dt.timezone.utc).timetuple())


def moment_of(unix_seconds):
    """The aware UTC moment of Unix seconds."""
    return dt.datetime.fromtimestamp(unix_seconds, dt.timezone.utc)


def run_day(conn, key, first):
    """The day of the row a read adds to: its own day, but a feed's read continues the run of reads of
    that patient by that feed that began on an earlier day, when the last of them is less than RUN_GAP old."""
    patient_id, day, reader, kind, allowed = key
    if kind not in RUNS:
        return day
    row = conn.execute("SELECT day FROM access_reads WHERE patient_id = ? AND reader = ? AND kind = ? AND allowed = ?"
                       " AND last_at >= ? ORDER BY day DESC LIMIT 1", (patient_id, reader, kind, allowed,
                                                                       first - RUN_GAP)).fetchone()
    return day if row is None else row[0]


class AccessRecord:
    """Notes reads into `access_reads`, apart from the bookings and never durable alone: at once, or,
    once `start()`ed, in batches a second apart whose last may go with the power, a booking never. Reads
    of one patient by one reader, kind and outcome on one day add up in one row."""

    def __init__(self, db, clock):
        self.db, self.clock = db, clock
        self.guard = threading.Lock()
        self.pending, self.flusher, self.stopping = {}, None, threading.Event()

    def note(self, reader, kind, patient_ids, allowed=True):
        """Count a read by `reader` (api, desk:NAME, cli:LOGIN, feed:DOCTOR) of these patients as `kind`."""
        ids = {int(patient_id) for patient_id in patient_ids}
        if not ids:
            return
        at = self.clock()
        day, when = day_number(at), seconds(at)
        with self.guard:
            for patient_id in ids:
                key = (patient_id, day, reader, kind, int(bool(allowed)))
                reads, first, _ = self.pending.get(key, (0, when, when))
                self.pending[key] = (reads + 1, min(first, when), when)
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
        """Add every noted read to its row in one transaction (synchronous=NORMAL): the day's, or for a
        feed the run's it continues; kept for the next try if refused."""
        with self.guard:
            batch, self.pending = self.pending, {}
        if not batch:
            return
        try:
            with self.db.transaction(durable=False) as conn:
                conn.executemany(
                    "INSERT INTO access_reads (patient_id, day, reader, kind, allowed, reads, first_at, last_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (patient_id, reader, kind, allowed, day) DO UPDATE"
                    " SET reads = reads + excluded.reads, first_at = min(first_at, excluded.first_at),"
                    " last_at = max(last_at, excluded.last_at)",
                    [(key[0], run_day(conn, key, counts[1]), *key[2:], *counts) for key, counts in batch.items()])
        except sqlite3.Error:
            with self.guard:
                for key, (reads, first, last) in batch.items():
                    more, earliest, latest = self.pending.get(key, (0, first, last))
                    self.pending[key] = (reads + more, min(first, earliest), max(last, latest))
            raise

    def of_patient(self, patient_id, since=None, reader=None):
        """One patient's record, oldest first, a row a day (a feed's, a run of days): {day, reader, kind, allowed,
        reads, first, last} (first and last aware UTC moments), read on the day `since` or later, of one
        `reader` when given."""
        self.flush()
        rows = self.db.connection().execute(
            "SELECT day, reader, kind, allowed, reads, first_at, last_at FROM access_reads WHERE patient_id = ?"
            " AND last_at >= ? AND (?3 IS NULL OR reader = ?3) ORDER BY first_at, reader, kind",
            (int(patient_id), seconds(dt.datetime.combine(since, dt.time(), dt.timezone.utc)) if since else 0,
             reader))
        return [{"day": row["day"], "reader": row["reader"], "kind": row["kind"], "allowed": bool(row["allowed"]),
                 "reads": row["reads"], "first": moment_of(row["first_at"]), "last": moment_of(row["last_at"])}
                for row in rows]

    def readers_of(self, patient_id):
        """Who read one patient's data, a row a reader, the latest first: {reader, kinds, days, reads,
        refused, first, last}."""
        self.flush()
        rows = self.db.connection().execute(
            "SELECT reader, group_concat(DISTINCT kind) AS kinds, count(DISTINCT day) AS days, sum(reads) AS reads,"
            " sum(CASE WHEN allowed THEN 0 ELSE reads END) AS refused, min(first_at) AS first_at,"
            " max(last_at) AS last_at FROM access_reads WHERE patient_id = ? GROUP BY reader ORDER BY last_at DESC",
            (int(patient_id),))
        return [{"reader": row["reader"], "kinds": sorted(row["kinds"].split(",")), "days": row["days"],
                 "reads": row["reads"], "refused": row["refused"], "first": moment_of(row["first_at"]),
                 "last": moment_of(row["last_at"])} for row in rows]

    def summary(self, since):
        """The whole record from the day `since` on, summarised: by reader {reader, patients, reads, refused,
        last} and by patient {patient_id, readers, reads, refused, last}, the most read first."""
        self.flush()
        start = seconds(dt.datetime.combine(since, dt.time(), dt.timezone.utc))
        conn = self.db.connection()
        by_reader = [dict(row) for row in conn.execute(
            "SELECT reader, count(DISTINCT patient_id) AS patients, sum(reads) AS reads, sum(CASE WHEN allowed"
            " THEN 0 ELSE reads END) AS refused, max(last_at) AS last_at FROM access_reads WHERE last_at >= ?"
            " GROUP BY reader ORDER BY patients DESC, reader", (start,))]
        by_patient = [dict(row) for row in conn.execute(
            "SELECT patient_id, count(DISTINCT reader) AS readers, sum(reads) AS reads, sum(CASE WHEN allowed"
            " THEN 0 ELSE reads END) AS refused, max(last_at) AS last_at FROM access_reads WHERE last_at >= ?"
            " GROUP BY patient_id ORDER BY readers DESC, reads DESC, patient_id LIMIT 200", (start,))]
        for row in by_reader + by_patient:
            row["last"] = moment_of(row.pop("last_at"))
        return {"by_reader": by_reader, "by_patient": by_patient}

    def forget_before(self, moment):
        """Remove the rows whose last read is older than `moment`; how many went."""
        self.flush()
        with self.db.transaction(durable=False) as conn:
            return conn.execute("DELETE FROM access_reads WHERE last_at < ?", (seconds(moment),)).rowcount
