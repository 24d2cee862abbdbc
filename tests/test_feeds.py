"""Each doctor's calendar feed (docs/design.md, "Calendar feeds"): a secret, revocable iCalendar address
made by `agenda doctor feed`, served at /feeds/<token>.ics, read back here with the icalendar library;
what an event shows is the clinic's setting, never a NIF or a phone by default."""

import datetime as dt
import logging
import re

import icalendar
import pytest
import webtest
from click.testing import CliRunner

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain.feeds import new_feed, revoke_feed
from _agenda.domain.changes import book_appointment

from conftest import MONDAY, Clock, valid_dni


def cli(db_path, *args):
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})
    return runner.invoke(agenda.cli, list(args), obj={"now": Clock(MONDAY)})


def events_of(body):
    calendar = icalendar.Calendar.from_ical(body)
    return [component for component in calendar.walk("VEVENT")]


def booked_across_the_clock_change(api):
    """MARTIN's appointments on Friday 26/03/2027 and Tuesday 30/03/2027 (Spain's clocks go forward on
    the 28th), one cancelled on Tuesday 24/11/2026, and one of RUIZ's; the live ones' ids."""
    clinic = api.app.clinic
    patient = api.new_patient(name="Ana", surname="García")
    before = book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN", reason="Control de tensión"),
                              day=dt.date(2027, 3, 26), time_text="09:00", source="desk:ana")
    after = book_appointment(clinic, Visit(patient_id=patient, doctor_id="MARTIN"), day=dt.date(2027, 3, 30),
                             time_text="09:00", source="desk:ana")
    api.delete(f"/appointments/{api.book(patient, time='10:00')}")
    api.book(api.new_patient(nif=valid_dni(5)), doctor="RUIZ", insuranceId="PRIV")
    return before, after


def test_a_feed_read_by_icalendar_holds_the_doctors_appointments_at_their_times_across_the_clock_change(api, db_path):
    before, after = booked_across_the_clock_change(api)
    made = cli(db_path, "doctor", "feed", "MARTIN", "--url", "https://agenda.clinicasol.es/")
    assert made.exit_code == 0, made.output
    url = re.search(r"https://agenda\.clinicasol\.es(/feeds/[A-Za-z0-9_-]+\.ics)", made.output)[1]
    token = url.split("/")[2][:-4]
    answer = webtest.TestApp(api.app).get(url)  # no signature, no session: the address is the access
    assert answer.content_type == "text/calendar" and answer.headers["Cache-Control"] == "no-store"
    events = events_of(answer.body)
    assert [str(e["uid"]) for e in events] == [f"appointment-{before}@agenda", f"appointment-{after}@agenda"]
    starts = [e.decoded("dtstart") for e in events]
    assert [(s.date().isoformat(), s.strftime("%H:%M")) for s in starts] == [("2027-03-26", "09:00"),
                                                                            ("2027-03-30", "09:00")]
    assert [s.astimezone(dt.timezone.utc).strftime("%H:%M") for s in starts] == ["08:00", "07:00"]
    assert [e.decoded("dtend") - e.decoded("dtstart") for e in events] == [dt.timedelta(minutes=30)] * 2
    assert [str(e["summary"]) for e in events] == [f"Cita {before}", f"Cita {after}"]
    assert str(events[0]["location"]) == "Centro"
    text = answer.body.decode()
    for private in ("Ana", "García", "12345678Z", "612345678", "+34612345678", "Control de tensi"):
        assert private not in text  # by default: never a name, a NIF, a phone or a reason
    assert "BEGIN:VTIMEZONE" in text and "TZID:Europe/Madrid" in text
    assert token not in api.db().execute("SELECT group_concat(token_hash) FROM doctor_feeds").fetchone()[0]


@pytest.mark.parametrize("shows, summary_has, description", [
    ("names", "Ana García", None), ("reasons", "Ana García", "Motivo: Control de tensión")])
def test_names_and_reasons_only_when_the_clinic_turns_them_on_and_then_each_read_is_recorded(make_api, shows,
                                                                                           summary_has, description):
    api = make_api(feed_shows=shows)
    before, _ = booked_across_the_clock_change(api)
    token = new_feed(api.app.clinic, "MARTIN", "cli")
    first = events_of(webtest.TestApp(api.app).get(f"/feeds/{token}.ics").body)[0]
    assert str(first["summary"]) == f"Cita {before} · {summary_has}"
    assert (str(first["description"]) if "description" in first else None) == description
    reads = api.db().execute("SELECT reader, kind FROM access_reads").fetchall()
    assert ("feed:MARTIN", "feed") in [tuple(row) for row in reads]


def test_a_new_address_ends_the_old_one_and_a_revoked_feed_answers_404(api, caplog):
    booked_across_the_clock_change(api)
    client, clinic = webtest.TestApp(api.app), api.app.clinic
    old = new_feed(clinic, "MARTIN", "cli")
    new = new_feed(clinic, "MARTIN", "cli")
    with caplog.at_level(logging.INFO, logger="agenda.access"):
        assert client.get(f"/feeds/{old}.ics", status=404).text == "no such feed\n"
        assert client.get(f"/feeds/{new}.ics").status_int == 200
    assert "/feeds/....ics" in caplog.text and old not in caplog.text and new not in caplog.text
    assert revoke_feed(clinic, "MARTIN", "cli") and not revoke_feed(clinic, "MARTIN", "cli")
    client.get(f"/feeds/{new}.ics", status=404)
    client.get("/feeds/short.ics", status=404)
    assert [row[0] for row in api.db().execute("SELECT action FROM events WHERE entity = 'doctor'")] == [
        "doctor.feed_made", "doctor.feed_made", "doctor.feed_revoked"]
    refused = client.get(f"/appointments?date=24/11/2026&token={new}", status=401)  # no API route for a token
    assert refused.json["error"]["code"] == "INVALID_SIGNATURE"


def test_agenda_doctor_feeds_lists_who_has_one_and_revoke_ends_it(api, db_path):
    assert "No doctor has a feed" in cli(db_path, "doctor", "feeds").output
    cli(db_path, "doctor", "feed", "MARTIN")
    listed = cli(db_path, "doctor", "feeds")
    assert listed.exit_code == 0 and listed.output.startswith("MARTIN: Lucía Martín, since ")
    assert "feeds/" not in listed.output
    revoked = cli(db_path, "doctor", "feed", "MARTIN", "--revoke")
    assert "ended" in revoked.output and "No doctor has a feed" in cli(db_path, "doctor", "feeds").output
    unknown = cli(db_path, "doctor", "feed", "NOBODY")
    assert unknown.exit_code == 1 and "no doctor" in unknown.output.lower()


def test_an_admin_makes_a_doctors_feed_at_the_desk_and_reception_cannot(api):
    from test_desk import admin_and_reception
    booked_across_the_clock_change(api)
    admin, reception = admin_and_reception(api)
    page = admin.get("/desk/doctors")
    form = page.forms[[f.action for f in page.forms.values()].index("/desk/doctors/MARTIN/feed")]
    made = form.submit("action", value="new")
    url = re.search(r"http://[^/]+(/feeds/[A-Za-z0-9_-]+\.ics)", made.html.find("code").text)[1]
    assert len(events_of(webtest.TestApp(api.app).get(url).body)) == 2
    assert "Calendario en el móvil desde el 23/11/2026 08:00." in admin.get("/desk/doctors").text
    assert url not in admin.get("/desk/doctors").text  # shown once
    csrf = reception.get("/desk/day").html.find("input", attrs={"name": "csrf"})["value"]
    assert reception.post("/desk/doctors/MARTIN/feed", {"csrf": csrf, "action": "revoke"}, status=403)
    webtest.TestApp(api.app).get(url, status=200)
    page = admin.get("/desk/doctors")
    form = page.forms[[f.action for f in page.forms.values()].index("/desk/doctors/MARTIN/feed")]
    form.submit("action", value="revoke")
    webtest.TestApp(api.app).get(url, status=404)


def test_a_feed_polled_day_after_day_is_one_row_a_patient_and_a_pause_starts_another(make_api, clock):
    """A calendar app's polls are a run of reads: one row for each patient while they go on ("Access record"),
    a person's reads a row a day."""
    api = make_api(feed_shows="names")
    booked_across_the_clock_change(api)
    client = webtest.TestApp(api.app)
    token = new_feed(api.app.clinic, "MARTIN", "cli")

    def rows():
        api.app.clinic.access.flush()
        return [tuple(row) for row in api.db().execute(
            "SELECT patient_id, day, reads FROM access_reads WHERE reader = 'feed:MARTIN' ORDER BY day")]
    for _ in range(4 * 7):  # every six hours for a week
        client.get(f"/feeds/{token}.ics")
        clock.moment += dt.timedelta(hours=6)
    assert rows() == [(1, 20261123, 28)]
    clock.moment += dt.timedelta(hours=36)  # the phone was off for two days: a new run
    client.get(f"/feeds/{token}.ics")
    assert rows() == [(1, 20261123, 28), (1, 20261201, 1)]


def test_a_feed_carries_no_control_character_a_calendar_app_would_refuse(make_api):
    """RFC 5545 allows none but a tab in a value: text stored before the text fields' door may hold some."""
    api = make_api(feed_shows="reasons")
    before, _ = booked_across_the_clock_change(api)
    api.db().execute("UPDATE patients SET name = ?, surname = ?", ("Ana\x00\x0b", "García\x1b[2J\nRuiz"))
    api.db().execute("UPDATE appointments SET reason = ? WHERE id = ?", ("Dolor\x07 de\r\ncabeza\x7f", before))
    api.db().commit() if api.db().in_transaction else None
    token = new_feed(api.app.clinic, "MARTIN", "cli")
    body = webtest.TestApp(api.app).get(f"/feeds/{token}.ics").body
    unfolded = body.replace(b"\r\n ", b"").split(b"\r\n")
    assert all(not re.search(rb"[\x00-\x08\x0a-\x1f\x7f]", line) for line in unfolded)
    event = [e for e in events_of(body) if str(e["summary"]).startswith(f"Cita {before}")][0]
    assert str(event["summary"]).endswith("Ana García [2J Ruiz") and str(event["description"]) == \
        "Motivo: Dolor de cabeza"
