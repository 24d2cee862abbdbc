"""The outbox (docs/design.md, "A patient's messages"): each change that calls for a message to the patient writes
one row in its own transaction, the appointment and the kind only; an import's and an erasure's changes, and a
change refused and rolled back, write none."""

import datetime as dt

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain.changes import book_appointment, cancel_appointment
from _agenda.domain.counter import squeeze_in
from _agenda.domain.rights import request_erasure
from _agenda.domain.series import book_series
from conftest import valid_dni
from test_moving import cli, write

TUESDAY = dt.date(2026, 11, 24)


def outbox(api):
    return [tuple(row) for row in api.db().execute("SELECT appointment_id, kind FROM outbox ORDER BY id")]


def written_by(api, change):
    """The outbox rows `change` (a function) wrote, and what it answered."""
    before = len(outbox(api))
    answer = change()
    return outbox(api)[before:], answer


def test_each_change_writes_the_message_it_calls_for_and_no_more(api, db_path, tmp_path):
    clinic = api.app.clinic
    ana, eva, leo = api.new_patient(), api.new_patient(nif=valid_dni(1), name="Eva"), \
        api.new_patient(nif=valid_dni(2), name="Leo")
    rows, booked = written_by(api, lambda: api.book(ana))  # the caller's booking
    assert rows == [(int(booked), "confirmation")]
    rows, _ = written_by(api, lambda: api.book(eva, status=409))  # the same slot: refused, rolled back
    assert rows == []
    rows, _ = written_by(api, lambda: api.put(f"/appointments/{booked}", {"newDate": "24/11/2026", "newTime": "09:30"}))
    assert rows == [(int(booked), "update")]
    rows, desk = written_by(api, lambda: book_appointment(clinic, Visit(patient_id=eva, doctor_id="MARTIN"),
                                                          day=TUESDAY, time_text="10:00", source="desk:ana"))
    assert rows == [(int(desk), "confirmation")]
    rows, squeezed = written_by(api, lambda: squeeze_in(clinic, Visit(patient_id=leo, doctor_id="MARTIN"), day=TUESDAY,
                                                        time_text="10:10", source="desk:ana"))
    assert rows == [(int(squeezed), "confirmation")]
    rows, (_, sessions, _) = written_by(api, lambda: book_series(clinic, Visit(patient_id=eva, doctor_id="MARTIN"),
                                                                 first=dt.date(2026, 12, 2), time_text="09:00",
                                                                 every_days=7, count=3, source="desk:ana"))
    assert len(sessions) == 3 and rows == [(int(sessions[0][0]), "series")]  # one message for the series
    rows, _ = written_by(api, lambda: api.delete(f"/appointments/{booked}"))  # the caller cancels
    assert rows == [(int(booked), "notice")]
    rows, _ = written_by(api, lambda: cancel_appointment(clinic, desk, reason="llamó", source="desk:ana"))
    assert rows == [(int(desk), "notice")]
    rows, _ = written_by(api, lambda: api.post("/appointments/confirm",
                                               {"appointmentId": squeezed, "confirmed": False}))
    assert rows == [(int(squeezed), "notice")]  # declined at the reminder call
    rows, imported = written_by(api, lambda: cli(db_path, "import-appointments", write(tmp_path / "old.csv", (
        "date,time,duration,doctor,center,nif,name,phone,reason,insurance,status\n"
        "26/11/2026,09:05,45,MARTIN,C1,12345678Z,,,,,\n"))))
    assert imported.exit_code == 0 and rows == []
    rows, _ = written_by(api, lambda: request_erasure(clinic, eva, "cli", "cli:test"))  # her coming visits cancelled
    assert rows == [] and api.db().execute(
        "SELECT count(*) FROM appointments WHERE patient_id = ? AND status = 'cancelled'", (eva,)).fetchone()[0] >= 3


def test_a_reminder_cycles_release_sends_its_notice(make_api):
    api = make_api(reminder_policy="release")
    booked = api.book(api.new_patient())
    rows, _ = written_by(api, lambda: api.post("/appointments/end-of-reminder-day",
                                               {"voiceAgentConfigId": "va", "date": "24/11/2026"}))
    assert rows == [(int(booked), "notice")]


def test_the_table_holds_no_text_and_no_token(api):
    columns = [row[1] for row in api.db().execute("PRAGMA table_info(outbox)")]
    assert columns == ["id", "appointment_id", "kind", "created_at", "state", "attempts", "next_try_at", "message_id",
                       "done_at", "error", "slot"]  # what became of it; never its text, a token or an address


def test_a_move_to_the_same_date_and_time_writes_no_message(api):
    """A retried PUT finds the visit where it asks to move it: nothing to tell the patient."""
    booked = api.book(api.new_patient())
    move = {"newDate": "24/11/2026", "newTime": "09:30"}
    rows, _ = written_by(api, lambda: api.put(f"/appointments/{booked}", move))
    assert rows == [(int(booked), "update")]
    rows, answer = written_by(api, lambda: api.put(f"/appointments/{booked}", move))  # the retry
    assert answer.status_int == 200 and rows == []


def test_every_row_gets_a_random_message_id_when_written_which_it_keeps(api):
    """Each row's Message-ID is written by the database with the row, of every kind and every writer, unlike any
    other; no later write changes it ("The sender")."""
    clinic = api.app.clinic
    ana = api.new_patient(email="ana@example.es")
    booked = api.book(ana)
    api.put(f"/appointments/{booked}", {"newDate": "24/11/2026", "newTime": "09:30"})
    book_series(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), first=dt.date(2026, 12, 2), time_text="09:00",
                every_days=7, count=2, source="desk:ana")
    api.delete(f"/appointments/{booked}")
    ids = [row[0] for row in api.db().execute("SELECT message_id FROM outbox ORDER BY id")]
    assert len(ids) == 4 and len(set(ids)) == 4 and all(len(found) == 32 and int(found, 16) >= 0 for found in ids)
    api.db().execute("UPDATE outbox SET state = 'held', error = NULL")  # other columns change freely
    assert [row[0] for row in api.db().execute("SELECT message_id FROM outbox ORDER BY id")] == ids
