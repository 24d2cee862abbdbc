"""Patients book themselves (docs/design.md, "Patients book themselves"): a booking of the clinic's own page is one
of three cases with one answer, held as pending through the one door as the channel `web` until the patient
confirms it by the e-mail's link, or released; the caller's lists leave it out while its slot stays taken."""

import datetime as dt
import re

import pytest

from _agenda.domain.web_booking import (confirm_booking, confirm_view, request_booking, web_offer, web_times,
                                        WebAsk)
from _agenda.domain.web_requests import new_token
from _agenda.domain import booking
from _agenda.domain.appointments import remove_appointment
from _agenda.domain.links import card_link, opened
from _agenda.domain.outbox import send_state
from _agenda.domain.patients import block_patient
from _agenda.values.refusals import ClinicError

from conftest import valid_dni
from test_booking import Recorded
from test_visit_types import TYPES_CSV

WEB = {"web_booking": "on", "web_privacy": "Clínica Sol trata sus datos para su cita.",
       "public_url": "https://citas.example.es"}
ADDRESS = "2001:db8:1:2::17"


def ask(**changes):
    """A booking asked on the page: Martín, Tuesday 24/11/2026 at 09:00, by a new adult patient."""
    fields = dict(center_id="C1", speciality_id="MG", doctor_id="MARTIN", type_id=None, day="2026-11-24",
                  time="09:00", name="Rosa", surname="Vidal", birth_date="1985-03-02", nif=valid_dni(501),
                  child=False, phone="611222333", email="rosa@example.es", insurance_id=None, language="es")
    return WebAsk(**{**fields, **changes})


@pytest.fixture
def web(make_api):
    return make_api(**WEB)


def pending_of(api, appointment_id):
    return api.db().execute("SELECT pending, pending_until, booked_by, status FROM appointments WHERE id = ?",
                            (int(appointment_id),)).fetchone()


def last_request(api):
    return api.db().execute("SELECT * FROM web_requests ORDER BY id DESC LIMIT 1").fetchone()


def token_for(api, appointment_id):
    """The confirmation link's token, as the sender makes it when it writes the message."""
    with api.app.clinic.db.transaction() as conn:
        return new_token(conn, appointment_id)


def test_the_page_books_through_the_one_door_as_the_channel_web(web, monkeypatch):
    recorded = Recorded(booking.CHANNELS)
    monkeypatch.setattr(booking, "CHANNELS", recorded)
    request_booking(web.app.clinic, ask(), ADDRESS)
    assert recorded.asked == ["web"]


def test_a_new_patient_s_booking_holds_its_slot_pending_and_queues_the_page_s_message(web):
    assert request_booking(web.app.clinic, ask(), ADDRESS) == "r•••@example.es"
    request = last_request(web)
    assert request["case_of"] == "new" and request["typed_nif"] is None
    visit = pending_of(web, request["appointment_id"])
    assert (visit["pending"], visit["booked_by"], visit["status"]) == ("email", "web", "booked")
    assert visit["pending_until"] == "2026-11-23T07:15:00+00:00"  # now (08:00 Madrid) and 15 minutes
    patient = web.db().execute("SELECT name, nif, email FROM patients WHERE id = ?", (request["patient_id"],)).fetchone()
    assert tuple(patient) == ("Rosa", valid_dni(501), "rosa@example.es")
    assert [row[0] for row in web.db().execute("SELECT kind FROM outbox WHERE appointment_id = ?",
                                               (request["appointment_id"],))] == ["web"]
    assert web.book(web.new_patient(), status=409).json["error"]["code"] == "SLOT_NOT_AVAILABLE"
    assert "09:00" not in [slot["time"] for slot in web.get(
        "/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]  # its slot is offered to no one


CALLER_LISTS = ["/appointments?date=24/11/2026", "/appointments/range?dates=24/11/2026",
                f"/appointments?nif={valid_dni(501)}", "/appointments?phone=611222333",
                f"/appointments?nif={valid_dni(501)}&date=24/11/2026"]


@pytest.mark.parametrize("pending", ["email", "reception"])
@pytest.mark.parametrize("url", CALLER_LISTS, ids=["day list", "days", "by nif", "by phone", "by nif on a day"])
def test_each_caller_list_and_look_up_leaves_a_pending_visit_out_and_shows_it_once_confirmed(web, url, pending):
    request_booking(web.app.clinic, ask(), ADDRESS)
    request = last_request(web)
    if pending == "reception":  # known to the page, not to the clinic: a provisional record the NIF looks up
        web.db().execute("UPDATE web_requests SET case_of = 'verify' WHERE id = ?", (request["id"],))
        assert confirm_booking(web.app.clinic, token_for(web, request["appointment_id"])) == "confirmed"
    assert pending_of(web, request["appointment_id"])["pending"] == pending
    assert web.get(url).json["data"] == []
    web.db().execute("UPDATE appointments SET pending = NULL, pending_until = NULL")
    assert [a["appointmentId"] for a in web.get(url).json["data"]] == [str(request["appointment_id"])]


def test_the_end_of_a_reminder_day_leaves_a_pending_visit_alone(make_api):
    web = make_api(**WEB, reminder_policy="release")
    request_booking(web.app.clinic, ask(), ADDRESS)
    closed = web.post("/appointments/end-of-reminder-day", {"voiceAgentConfigId": "va", "date": "24/11/2026"})
    assert closed.json["processed"] == 0
    assert pending_of(web, last_request(web)["appointment_id"])["status"] == "booked"


def test_confirmed_by_the_link_it_becomes_a_booking_once_and_the_link_says_so_after(web):
    request_booking(web.app.clinic, ask(), ADDRESS)
    appointment_id = last_request(web)["appointment_id"]
    token = token_for(web, appointment_id)
    assert confirm_view(web.app.clinic, token) == {"date": "2026-11-24", "time": "09:00", "end": "09:30",
                                                   "center": "Centro", "doctor": None, "state": "pending"}
    assert confirm_booking(web.app.clinic, token) == "confirmed"
    assert tuple(pending_of(web, appointment_id))[:2] == (None, None)
    assert confirm_booking(web.app.clinic, token) == "already"
    assert confirm_view(web.app.clinic, token)["state"] == "confirmed"
    assert [row[0] for row in web.db().execute("SELECT kind FROM outbox WHERE appointment_id = ? ORDER BY id",
                                               (appointment_id,))] == ["web", "confirmation"]
    assert [a["appointmentId"] for a in web.get("/appointments?date=24/11/2026").json["data"]] == [str(appointment_id)]
    assert confirm_view(web.app.clinic, "x" * 32) is None and confirm_booking(web.app.clinic, None) == "expired"


def test_unconfirmed_in_time_the_next_booking_by_any_channel_releases_it_and_its_new_patient(web, clock):
    request_booking(web.app.clinic, ask(), ADDRESS)
    request = last_request(web)
    token = token_for(web, request["appointment_id"])
    clock.moment += dt.timedelta(minutes=15)
    other = web.new_patient(nif=valid_dni(502))
    assert web.book(other)  # the door's transaction released the hold first: the caller books the slot
    assert web.db().execute("SELECT count(*) FROM appointments WHERE id = ?",
                            (request["appointment_id"],)).fetchone()[0] == 0
    assert web.db().execute("SELECT count(*) FROM patients WHERE id = ?", (request["patient_id"],)).fetchone()[0] == 0
    released = last_request(web)
    assert released["appointment_id"] is None and released["released_at"] is not None
    assert confirm_view(web.app.clinic, token)["state"] == "expired"
    assert confirm_booking(web.app.clinic, token) == "expired"


def test_a_known_patient_with_the_e_mail_typed_is_booked_on_their_record_and_nothing_of_it_changes(web):
    known = web.new_patient(nif=valid_dni(501), name="Rosa María", email="Rosa@Example.es")
    before = dict(web.db().execute("SELECT * FROM patients WHERE id = ?", (int(known),)).fetchone())
    request_booking(web.app.clinic, ask(name="Otra", phone="699000111", email="rosa@example.es"), ADDRESS)
    request = last_request(web)
    assert (request["case_of"], request["patient_id"]) == ("same", int(known))
    assert dict(web.db().execute("SELECT * FROM patients WHERE id = ?", (int(known),)).fetchone()) == before


@pytest.mark.parametrize("known", [{"email": "otra@example.es"}, {}], ids=["another e-mail", "no e-mail"])
def test_a_known_nif_with_other_contact_details_books_a_provisional_record_for_reception(web, known):
    patient = web.new_patient(nif=valid_dni(501), **known)
    before = dict(web.db().execute("SELECT * FROM patients WHERE id = ?", (int(patient),)).fetchone())
    assert request_booking(web.app.clinic, ask(), ADDRESS) == "r•••@example.es"
    request = last_request(web)
    assert (request["case_of"], request["typed_nif"]) == ("verify", valid_dni(501))
    provisional = web.db().execute("SELECT name, nif, birth_date, email FROM patients WHERE id = ?",
                                   (request["patient_id"],)).fetchone()
    assert tuple(provisional) == ("Rosa", None, "1985-03-02", "rosa@example.es")
    assert dict(web.db().execute("SELECT * FROM patients WHERE id = ?", (int(patient),)).fetchone()) == before
    assert confirm_booking(web.app.clinic, token_for(web, request["appointment_id"])) == "confirmed"
    assert pending_of(web, request["appointment_id"])["pending"] == "reception"


def test_a_known_patient_elsewhere_then_becomes_verify_and_the_answer_is_the_same(web):
    known = web.new_patient(nif=valid_dni(501), email="rosa@example.es")
    web.book(known, doctor="RUIZ", time="09:00")
    assert request_booking(web.app.clinic, ask(), ADDRESS) == "r•••@example.es"
    assert last_request(web)["case_of"] == "verify"
    assert web.db().execute("SELECT count(*) FROM appointments WHERE patient_id = ?", (int(known),)).fetchone()[0] == 1


def test_a_child_is_always_verified_under_the_guardian_s_nif(web):
    request_booking(web.app.clinic, ask(child=True, name="Leo", birth_date="2020-05-05"), ADDRESS)
    request = last_request(web)
    assert (request["case_of"], request["typed_nif"]) == ("verify", valid_dni(501))


def test_the_page_refuses_when_off_and_names_every_wrong_field_at_once(api, web):
    with pytest.raises(ClinicError) as closed:
        request_booking(api.app.clinic, ask(), ADDRESS)
    assert closed.value.code == "WEB_CLOSED"
    with pytest.raises(ClinicError) as wrong:
        request_booking(web.app.clinic, ask(nif="123", email="no", birth_date=""), ADDRESS)
    assert {part[2] for part in wrong.value.parts} == {"nif", "email", "birthDate"}
    assert web.db().execute("SELECT count(*) FROM web_requests").fetchone()[0] == 0


def test_the_offer_and_the_times_follow_the_settings(make_api):
    web = make_api(**WEB, web_offer="MARTIN")
    offer = web_offer(web.app.clinic)
    assert [doctor["id"] for doctor in offer["doctors"]] == ["MARTIN"]
    assert [center["id"] for center in offer["centers"]] == ["C1", "C2"]
    week = dict(web_times(web.app.clinic, center_id="C1", speciality_id="MG", doctor_id=None, type_id=None,
                          week_start=dt.date(2026, 11, 23)))
    assert week["2026-11-23"] == []  # inside the page's 24 hours of notice
    assert week["2026-11-24"][0] == ("09:00", "MARTIN")
    assert week["2026-11-25"] == []  # Martín's holiday
    assert web_times(web.app.clinic, center_id="C1", speciality_id="MG", doctor_id=None, type_id=None,
                     week_start="23/11/2026") == list(week.items())  # the week as the page's form gives it
    with pytest.raises(ClinicError) as wrong:
        web_times(web.app.clinic, center_id="C1", speciality_id="MG", doctor_id=None, type_id=None, week_start="x")
    assert wrong.value.field == "week"


def test_the_caller_booking_the_same_patient_at_a_time_the_page_holds_is_refused_not_taken_for_a_retry(web):
    known = web.new_patient(nif=valid_dni(501), email="rosa@example.es")
    request_booking(web.app.clinic, ask(), ADDRESS)
    assert last_request(web)["case_of"] == "same"
    assert web.book(known, status=409).json["error"]["code"] == "SLOT_NOT_AVAILABLE"  # not the page's pending visit


def test_a_blocked_record_is_verified_and_one_registered_again_since_is_the_live_record_s(web):
    erased = web.new_patient(nif=valid_dni(501), email="rosa@example.es")
    with web.app.clinic.db.transaction() as conn:  # an erasure's block: kept, its NIF too, until the period ends
        block_patient(conn, int(erased), web.app.clinic.clock(), dt.date(2031, 11, 23))
    request_booking(web.app.clinic, ask(time="10:00"), ADDRESS)
    assert last_request(web)["case_of"] == "verify"  # a blocked record is no one the page books on
    again = web.new_patient(nif=valid_dni(501), email="rosa@example.es")
    request_booking(web.app.clinic, ask(), ADDRESS)
    assert (last_request(web)["case_of"], last_request(web)["patient_id"]) == ("same", int(again))


def test_every_booking_and_every_record_the_page_looked_at_is_in_the_access_record_as_web(web):
    known = web.new_patient(nif=valid_dni(501), email="otra@example.es")
    request_booking(web.app.clinic, ask(), ADDRESS)
    provisional = last_request(web)["patient_id"]
    for patient in (int(known), provisional):
        assert [(read["reader"], read["kind"]) for read in web.app.clinic.access.of_patient(patient, reader="web")] \
            == [("web", "web")], patient


def test_a_released_request_s_patient_with_another_visit_stays_and_no_id_is_given_again(web, clock):
    known = web.new_patient(nif=valid_dni(503))
    request_booking(web.app.clinic, ask(), ADDRESS)
    kept = last_request(web)
    web.book(str(kept["patient_id"]), doctor="RUIZ", time="09:40")  # the caller found the new patient and booked them
    request_booking(web.app.clinic, ask(time="09:30", nif=valid_dni(502), email="eva@example.es"), ADDRESS)
    gone = last_request(web)  # the highest visit and patient ids
    clock.moment += dt.timedelta(minutes=15)
    booked = web.book(known, time="10:00")  # the door releases both first
    rows = {row[0] for row in web.db().execute("SELECT id FROM patients")}
    assert kept["patient_id"] in rows and gone["patient_id"] not in rows
    assert int(booked) > gone["appointment_id"]  # the released visit's id was not given again
    assert int(web.new_patient(nif=valid_dni(504))) > gone["patient_id"]


def test_only_a_visit_the_page_holds_is_ever_removed(web):
    booked = web.book(web.new_patient())
    with pytest.raises(ValueError, match="never removed"), web.app.clinic.db.transaction() as conn:
        remove_appointment(conn, booked)
    assert pending_of(web, booked)["status"] == "booked"


def test_reception_cannot_send_a_visit_s_state_while_the_patient_has_not_confirmed_it(web):
    request_booking(web.app.clinic, ask(), ADDRESS)
    appointment_id = last_request(web)["appointment_id"]
    with pytest.raises(ClinicError) as refused:  # its link would let them confirm a visit still to be released
        send_state(web.app.clinic, appointment_id, "desk:ana", web.app.clinic.clock())
    assert refused.value.rule == "mail_pending"
    assert confirm_booking(web.app.clinic, token_for(web, appointment_id)) == "confirmed"
    send_state(web.app.clinic, appointment_id, "desk:ana", web.app.clinic.clock())


def test_no_link_of_the_patient_s_opens_a_visit_the_page_holds_until_it_is_confirmed(web):
    request_booking(web.app.clinic, ask(), ADDRESS)
    appointment_id = last_request(web)["appointment_id"]
    card = card_link(web.app.clinic, appointment_id)  # a card printed at the counter meanwhile
    assert opened(web.app.clinic, card) is None
    assert confirm_booking(web.app.clinic, token_for(web, appointment_id)) == "confirmed"
    assert opened(web.app.clinic, card)["id"] == appointment_id


def test_the_offer_names_doctors_whole_or_by_type_and_the_page_books_only_those(make_api):
    web = make_api(TYPES_CSV, **WEB, web_offer="MARTIN/MG-REV, VEGA")
    offer = web_offer(web.app.clinic)
    assert {doctor["id"]: [kind["id"] for kind in doctor["types"]] for doctor in offer["doctors"]} == {
        "MARTIN": ["MG-REV"], "VEGA": ["FIS-SES", "FIS-VAL"]}
    assert [s["id"] for s in offer["specialities"]] == ["FIS", "MG"] and [c["id"] for c in offer["centers"]] == [
        "C1", "C2"]
    martin = dict(web_times(web.app.clinic, center_id="C1", speciality_id="MG", doctor_id=None, type_id="MG-REV",
                            week_start=dt.date(2026, 11, 24)))
    assert {doctor for times in martin.values() for _, doctor in times} == {"MARTIN"}  # not Gil, who offers it too
    with pytest.raises(ClinicError) as refused:  # a type of Martín's the page does not offer
        request_booking(web.app.clinic, ask(type_id="MG-PRI"), ADDRESS)
    assert refused.value.code == "SLOT_NOT_AVAILABLE"
    request_booking(web.app.clinic, ask(type_id="MG-REV", time="09:15"), ADDRESS)
    assert web.db().execute("SELECT type_id, end_time FROM appointments").fetchone()[:] == ("MG-REV", "09:30")


GROWING = ("appointments", "patients")  # the tables that grow with the clinic's years


def walked_whole(conn, statements):
    """(plan, statement) of each statement run that walks a table of GROWING whole, by EXPLAIN QUERY PLAN over the
    statements as SQLite ran them (the trace gives them with their values)."""
    found = []
    for sql in statements:
        if not sql.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE", "WITH")):
            continue
        aliases = {f" {word}" for table in GROWING for word in re.findall(rf"\b{table}\s+(\w+)", sql)}
        for row in conn.execute("EXPLAIN QUERY PLAN " + sql):
            if row[3].startswith("SCAN ") and any(row[3] == f"SCAN {name.strip()}" for name in {*GROWING, *aliases}):
                found.append((row[3], sql[:160]))
    return found


def test_neither_a_page_s_booking_nor_the_caller_s_walks_the_appointments_or_the_patients_whole(web, clock):
    """The page's release runs in every booking of every channel, and its look-up of a NIF in each of its own: by
    an index each, so that a flood of the page's bookings never costs the caller what the clinic's years weigh."""
    known = web.new_patient(nif=valid_dni(600))
    conn, statements = web.app.clinic.db.connection(), []
    conn.set_trace_callback(statements.append)
    try:
        request_booking(web.app.clinic, ask(), ADDRESS)  # a new patient
        request_booking(web.app.clinic, ask(time="09:30", nif=valid_dni(600), email="x@example.es"), "203.0.113.9")
        clock.moment += dt.timedelta(minutes=20)
        web.book(known, time="10:00")  # the caller's, which releases both
    finally:
        conn.set_trace_callback(None)
    assert [row[0] for row in web.db().execute("SELECT pending FROM appointments")] == [None]
    assert walked_whole(conn, statements) == []


def test_the_page_offers_only_what_the_caller_would_be_offered_whatever_its_own_horizon_and_notice(make_api):
    """The page's own horizon and notice narrow the caller's window, never widen it: a caller's horizon of 2 days
    and notice of 48 hours hold against the page's 30 days and 24 hours."""
    web = make_api(**WEB, web_offer="MARTIN", horizon_days=2, min_notice_minutes=48 * 60)
    week = dict(web_times(web.app.clinic, center_id="C1", speciality_id="MG", doctor_id=None, type_id=None,
                          week_start=dt.date(2026, 11, 23)))
    assert week["2026-11-24"] == []  # inside the caller's 48 hours, though past the page's 24
    assert [day for day, times in week.items() if times and day > "2026-11-25"] == []  # past the caller's 2 days
    with pytest.raises(ClinicError) as refused:
        request_booking(web.app.clinic, ask(day="2026-11-24", time="09:00"), ADDRESS)
    assert refused.value.code == "SLOT_NOT_AVAILABLE"
