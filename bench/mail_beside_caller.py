r"""The caller beside the patients' messages (bench/README.md, "Messages beside the caller").

Builds the large bench clinic (300,000 appointments), gives 1,000 patients of coming visits an e-mail and a
waiting confirmation each, and serves it with `agenda run` twice: without --smtp, the caller driven at 4
connections for --seconds (the free slots of a speciality, one appointment, a patient by NIF, in turn); then
with --smtp to a real SMTP server on 127.0.0.1 (aiosmtpd, in this process), the caller driven the same way
from the start until the 1,000 messages have arrived. Prints the caller's p50 and p99 each way, and how long
the messages took. Target: the caller's p50 under 50 ms beside the sender.

    .venv/bin/python bench/mail_beside_caller.py                 # about 2 minutes
    .venv/bin/python bench/mail_beside_caller.py --messages 300

Bounded: --seconds alone, and at most --most seconds beside the sender; to 127.0.0.1 only; the servers it
starts are stopped by their process id (and the sender with them); its files are in one temporary folder.
"""

import argparse
import datetime as dt
import socket
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

from aiosmtpd.controller import Controller

import run  # bench/run.py: load_agenda, generate, Process, drive, percentile
from desk_beside_caller import sampled_caller


class Counting:
    """aiosmtpd's handler: counts what arrives."""

    def __init__(self):
        self.count, self.lock = 0, threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.count += 1
        return "250 OK"


def waiting_messages(path, count, today):
    """`count` coming appointments, one a patient, each with an e-mail and a confirmation waiting."""
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT a.id, a.patient_id FROM appointments a WHERE a.status != 'cancelled' AND a.date > ?"
                        " GROUP BY a.patient_id ORDER BY a.id LIMIT ?", (today.isoformat(), count)).fetchall()
    conn.executemany("UPDATE patients SET email = ?, messages = 1 WHERE id = ?",
                     [(f"p{patient}@example.es", patient) for _, patient in rows])
    stamp = dt.datetime.now(dt.timezone.utc).isoformat()
    conn.executemany("INSERT INTO outbox (appointment_id, kind, created_at) VALUES (?, 'confirmation', ?)",
                     [(appointment, stamp) for appointment, _ in rows])
    conn.commit()
    conn.close()
    return len(rows)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000, help="messages waiting when the sender starts")
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds of the caller alone")
    parser.add_argument("--most", type=float, default=300.0, help="at most this long beside the sender")
    options = parser.parse_args()
    run.load_agenda(run.AGENDA_PATH)
    today = dt.date.today()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.db"
        run.generate.build(path, today=today)
        make = sampled_caller(path)
        server = run.agenda_server(path)
        try:
            rate, latencies, failures = run.drive(server.port, make, 4, 10 ** 9, options.seconds)
        finally:
            server.stop()
        alone = run.percentile(latencies, 0.5), run.percentile(latencies, 0.99), rate
        waiting = waiting_messages(path, options.messages, today)
        inbox, port = Counting(), free_port()
        smtp = Controller(inbox, hostname="127.0.0.1", port=port)
        smtp.start()
        try:
            started = time.monotonic()
            server = run.agenda_server(path, ("--smtp", f"smtp+plain://127.0.0.1:{port}", "--mail-from",
                                              "Bench <citas@example.es>", "--public-url", "https://citas.example.es",
                                              "--reminder-hours", "0"))
            beside, failures_beside = [], []
            try:
                while inbox.count < waiting and time.monotonic() - started < options.most:
                    _, latencies, failures = run.drive(server.port, make, 4, 10 ** 9, 2.0)
                    beside += latencies
                    failures_beside += failures
                took = time.monotonic() - started
            finally:
                server.stop()
        finally:
            smtp.stop()
        beside.sort()
        print(f"The caller at 4 connections alone: p50 {alone[0]:.1f} ms, p99 {alone[1]:.1f} ms ({alone[2]:.0f}/s)")
        print(f"Beside the sender: {inbox.count} of {waiting} messages arrived in {took:.0f} s "
              f"({inbox.count / took:.1f}/s, the service's start included); the caller p50 "
              f"{run.percentile(beside, 0.5):.1f} ms, p99 {run.percentile(beside, 0.99):.1f} ms over {len(beside)} "
              f"requests, {len(failures_beside)} not 2xx")
        if failures or failures_beside:
            sys.exit("the caller had answers that were not 2xx")


if __name__ == "__main__":
    main()
