"""Faults: a killed server and a database that cannot be written.

Bounded and loopback only; every process is started by the test and stopped by its id.
"""

import http.client
import sqlite3
import threading
import time

import pytest

from _agenda.values.fields import text_limit
from conftest import assert_error, days_ahead, send, table_rows, valid_dni

ROUNDS = 5


def test_kill_9_mid_bookings_loses_no_answered_booking(running, db_path):
    """Five times: a stream of bookings, SIGKILL in the middle, a restart; every booking
    answered 201 is there after the restart and the file passes integrity_check ("Storage")."""
    server = running()
    people = [send(server.url, "POST", "/patients", {"name": "P", "nif": valid_dni(900 + n)})[1]["patientId"]
              for n in range(4)]
    answered = []
    for round_number in range(ROUNDS):
        round_answers, stop = [], threading.Event()

        def book_stream(url=server.url, round_number=round_number):
            for n, time_text in enumerate(("09:00", "09:30", "10:00", "10:30") * 2):
                if stop.is_set():
                    return
                day = days_ahead(2 + round_number * 2 + n // 4)
                try:
                    status, payload = send(url, "POST", "/appointments", {
                        "date": day, "time": time_text, "doctorId": "MARTIN", "patientId": people[n % 4]})
                except (OSError, http.client.HTTPException):  # killed under this request: no answer, no promise
                    return
                if status == 201:
                    round_answers.append(payload["appointmentId"])

        booker = threading.Thread(target=book_stream)
        booker.start()
        deadline = time.monotonic() + 60
        while len(round_answers) < 2 + round_number % 3 and booker.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        server.process.kill()  # SIGKILL: no clean-up of any kind
        server.process.wait(timeout=10)
        stop.set()
        booker.join(timeout=30)
        answered += round_answers
        conn = sqlite3.connect(db_path)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            stored = {str(row[0]) for row in conn.execute("SELECT id FROM appointments WHERE status = 'booked'")}
        finally:
            conn.close()
        assert set(answered) <= stored, f"round {round_number}: answered but lost: {set(answered) - stored}"
        server = running()
        for appointment in round_answers:
            assert send(server.url, "GET", f"/appointments/{appointment}")[0] == 200
    assert len(answered) >= ROUNDS * 2
    assert server.terminate() == 0


@pytest.mark.parametrize("fault,pragma", [
    ("read-only", "PRAGMA query_only = ON"),                # SQLite refuses every write: SQLITE_READONLY
    ("disk full", "PRAGMA max_page_count = {page_count}"),  # no page more may be added: SQLITE_FULL
])
def test_a_database_that_cannot_be_written_gives_503_and_keeps_nothing_half_written(api, db_path, fault, pragma):
    patient = api.new_patient()
    reason = "😀" * text_limit("reason")  # the longest reason, 2,000 bytes: one such row a page, and its event
    for time_text in ("09:30", "10:00"):
        api.book(patient, time=time_text, reason=reason)
    conn = api.db()
    conn.execute("VACUUM")  # no free page left to fill, and no page with room for one more such row
    before = table_rows(db_path)
    conn.execute(pragma.format(page_count=conn.execute("PRAGMA page_count").fetchone()[0]))
    booking = {"date": "24/11/2026", "time": "09:00", "doctorId": "MARTIN", "patientId": patient, "reason": reason}
    response = api.post("/appointments", booking)
    assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert response.json["error"]["requestId"]
    assert table_rows(db_path) == before
    conn.execute("PRAGMA query_only = OFF")
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert api.post("/appointments", booking).status_int == 201  # the same booking, once it can be written


# 50 concurrent bookings of one slot and 50 concurrent moves onto one slot: tests/test_concurrency.py
