"""Series of sessions (docs/design.md, "Series"): one patient every N weeks or days, previewed date by
date (the nearest free slot of that day and the 7 after offered where the time asked is not), booked
together in one transaction (every date, or when asked what fits, the others listed to call), then each
its own; "cancel the rest of the series". Through the clinic, the CLI and the desk."""

import datetime as dt

import pytest
import webtest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain.series import book_series, cancel_rest, parse_every, preview_series, series_choices, TAKES
from _agenda.domain.appointments import read_appointment
from _agenda.domain.changes import book_appointment
from _agenda.domain.closures import add_closure

from conftest import MONDAY, Clock, valid_dni
from test_desk import PASSWORD, log_in

TUESDAY = dt.date(2026, 11, 24)  # weekly from here, the third Tuesday is 08/12, a national holiday
SERIES = {"doctor_id": "MARTIN", "first": TUESDAY, "time_text": "09:00", "every_days": 7, "count": 6}


def dates_of(api, where="1"):
    return [tuple(row) for row in api.db().execute(
        f"SELECT date, time, series_id FROM appointments WHERE status != 'cancelled' AND {where} ORDER BY date")]


@pytest.mark.parametrize("text, days", [("1w", 7), ("2W", 14), ("10d", 10), ("1 s", 7)])
def test_every_reads_weeks_and_days(text, days):
    assert parse_every(text) == days


@pytest.mark.parametrize("text", ["", "w", "0w", "1m", "100d", "1w2"])
def test_every_refuses_what_is_not_weeks_or_days(text):
    with pytest.raises(agenda.ClinicError):
        parse_every(text)


def test_the_preview_offers_the_nearest_free_slot_where_the_time_is_not_free(api):
    clinic = api.app.clinic
    other = api.new_patient(nif="00000001R")
    api.book(other, date="01/12/2026", time="09:00")  # the second date's 09:00 is taken
    sessions = preview_series(clinic, **SERIES)
    assert [s.day.isoformat() for s in sessions] == ["2026-11-24", "2026-12-01", "2026-12-08", "2026-12-15",
                                                     "2026-12-22", "2026-12-29"]
    assert [s.slot.time if s.slot else None for s in sessions] == ["09:00", None, None, "09:00", "09:00", "09:00"]
    assert [(s.reason, s.nearest.date_text, s.nearest.time) for s in sessions if s.slot is None] == [
        ("taken", "01/12/2026", "09:30"),  # that day, the closest time
        ("closed", "09/12/2026", "09:00")]  # the holiday: the next day


def test_the_preview_for_a_patient_keeps_clear_of_their_other_visits(api):
    """The patient sees the pediatrician at 09:00 on the second date: that date is not free for them, and its
    nearest slot is clear of that visit; the series books around it through the door."""
    clinic, patient = api.app.clinic, api.new_patient()
    api.book(patient, date="01/12/2026", time="09:00", doctor="RUIZ", insuranceId="PRIV")
    assert [s.slot is not None for s in preview_series(clinic, **SERIES)][:2] == [True, True]  # for no one: free
    sessions = preview_series(clinic, patient_id=patient, **SERIES)
    assert [(s.reason, s.nearest.date_text, s.nearest.time) for s in sessions if s.slot is None] == [
        ("patient_elsewhere", "01/12/2026", "09:30"), ("closed", "09/12/2026", "09:00")]
    _, booked, _ = booked_series(clinic, patient, nearest=True, source="desk:ana", **SERIES)
    assert ("2026-12-01", "09:30") in [row[:2] for row in dates_of(api, "doctor_id = 'MARTIN'")]
    assert len(booked) == 6


def test_a_series_is_booked_whole_or_not_at_all_and_each_session_is_then_its_own(api):
    clinic, patient = api.app.clinic, api.new_patient()
    with pytest.raises(agenda.ClinicError) as refused:
        booked_series(clinic, patient, source="desk:ana", **SERIES)
    assert refused.value.code == "SLOT_NOT_AVAILABLE" and "08/12/2026" in refused.value.message
    assert dates_of(api) == [] and api.db().execute("SELECT count(*) FROM series").fetchone()[0] == 0
    series_id, booked, left = booked_series(clinic, patient, nearest=True, source="desk:ana", **SERIES)
    assert booked_series(clinic, patient, nearest=True, source="desk:ana", **SERIES)[0] == series_id
    assert left == []
    assert len(dates_of(api)) == 6  # sent twice (a double click): the same series, nothing booked again
    assert [(d, t) for d, t, _ in dates_of(api)] == [
        ("2026-11-24", "09:00"), ("2026-12-01", "09:00"), ("2026-12-09", "09:00"), ("2026-12-15", "09:00"),
        ("2026-12-22", "09:00"), ("2026-12-29", "09:00")]
    assert {s for _, _, s in dates_of(api)} == {series_id}
    records = [read_appointment(clinic, appointment_id) for appointment_id, _ in booked]
    assert [(r["series_place"], r["series_count"]) for r in records] == [(n, 6) for n in range(1, 7)]
    listed = api.get("/appointments?nif=12345678Z").json["data"]  # the caller sees plain appointments
    assert len(listed) == 6 and all(set(a["extraData"]) == {"status", "specialityId", "insuranceId", "duration"}
                                    for a in listed)
    assert api.put(f"/appointments/{booked[1][0]}", {"newDate": "02/12/2026", "newTime": "10:00"}).status_int == 200
    assert cancel_rest(clinic, booked[3][0], "stopped the treatment", "desk:ana") == [b[0] for b in booked[3:]]
    assert [(d, t) for d, t, _ in dates_of(api)] == [("2026-11-24", "09:00"), ("2026-12-02", "10:00"),
                                                     ("2026-12-09", "09:00")]
    events = [row[0] for row in api.db().execute("SELECT action FROM events WHERE entity IN ('series', 'appointment')")]
    assert events.count("appointment.booked") == 6 and events.count("series.booked") == 1


def test_agenda_book_every_previews_and_refuses_a_series_with_a_date_not_free_unless_nearest(api, db_path):
    api.new_patient()
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})
    args = ["book", "--doctor", "MARTIN", "--date", "24/11/2026", "--time", "09:00", "--nif", "12345678Z",
            "--every", "1w", "--count", "4"]
    dry = runner.invoke(agenda.cli, args + ["--dry-run"], obj={"now": Clock(MONDAY)})
    assert dry.exit_code == 0 and dry.output.splitlines() == [
        " 1/4 24/11/2026 09:00: free", " 2/4 01/12/2026 09:00: free",
        " 3/4 08/12/2026 09:00: closed; nearest 09/12/2026 09:00", " 4/4 15/12/2026 09:00: free",
        "Dry run: nothing booked."]
    refused = runner.invoke(agenda.cli, args, obj={"now": Clock(MONDAY)})
    assert refused.exit_code == 1 and "not free on 08/12/2026" in refused.output and dates_of(api) == []
    booked = runner.invoke(agenda.cli, args + ["--nearest"], obj={"now": Clock(MONDAY)})
    assert booked.exit_code == 0 and "Booked series 1: 4 appointments" in booked.output
    assert len(dates_of(api)) == 4


def test_the_desk_previews_a_series_books_it_and_cancels_the_rest(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    patient = api.new_patient()
    api.book(patient, date="15/12/2026", time="09:00", doctor="RUIZ", insuranceId="PRIV")  # the pediatrician
    page = desk.get(f"/desk/book?doctorId=MARTIN&date=24/11/2026&time=09:00&centerId=C1&patientId={patient}")
    chosen = page.forms[[f.action for f in page.forms.values()].index("/desk/book")]
    preview = desk.post("/desk/series", {**dict(chosen.submit_fields()), "step": "preview"})  # its formaction
    assert preview.html.h1.text == "Serie de sesiones"
    rows = [" ".join(tr.get_text(" ").split()) for tr in preview.html.select("tbody tr")]
    assert rows[0] == "1/6 mar 24/11/2026 09:00 libre"
    assert rows[3].startswith("4/6 mar 15/12/2026 Esa persona ya tiene otra cita a esa hora. → el más cercano: "
                              "15/12/2026 09:30"), rows[3]
    assert rows[2].startswith("3/6 mar 08/12/2026 Ese hueco está cerrado. → el más cercano: 09/12/2026 09:00")
    book = preview.forms[len(preview.forms) - 1]
    assert [" ".join(b.text.split()) for b in preview.html.select("form.series-book button")] == [
        "Reservar las 6 sesiones: donde la hora no está libre, el hueco más cercano",
        "Reservar las 4 que caben; 2 para llamar"]  # never "Reservar las 6 sesiones" at 09:00: 08/12 is closed
    done = book.submit("take", value="nearest")
    assert done.follow().html.find("p", class_="flash").text == "Serie de 6 citas reservada para Ana García."
    card = desk.get("/desk/day?date=01/12/2026&centerId=C1").html.select_one(".card")
    assert "serie 2/6" in card.text
    appointment_id = card.select_one("a.who")["href"].rsplit("/", 1)[1]
    page = desk.get(f"/desk/appointments/{appointment_id}")
    cancel = page.forms[[f.action for f in page.forms.values()].index(f"/desk/appointments/{appointment_id}/cancel")]
    cancel["reason"] = "deja el tratamiento"
    gone = desk.post(f"/desk/appointments/{appointment_id}/cancel-rest", dict(cancel.submit_fields()))
    assert gone.follow().html.find("p", class_="flash").text == "5 citas de la serie de Ana García anuladas."
    assert [(d, t) for d, t, _ in dates_of(api)] == [("2026-11-24", "09:00"), ("2026-12-15", "09:00")]  # + RUIZ's


@pytest.mark.parametrize("asked, said", [({"count": "abc"}, "Sesiones: de 2 a 60."), ({"count": "61"}, "Sesiones: de 2 a 60."),
                                         ({"n": "0"}, "Cada: un número de semanas o de días")])
def test_a_series_asked_badly_is_refused_in_spanish_and_books_nothing(api, asked, said):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    patient = api.new_patient()
    csrf = desk.get("/desk/day").html.find("input", attrs={"name": "csrf"})["value"]
    fields = {"csrf": csrf, "doctorId": "MARTIN", "date": "24/11/2026", "time": "09:00", "centerId": "C1",
              "patientId": patient, "n": "1", "unit": "w", "count": "6", "step": "book", **asked}
    refused = desk.post("/desk/series", fields, expect_errors=True)
    assert refused.status_int == 400 and refused.html.find("p", class_="error").text.startswith(said)
    assert dates_of(api) == []


CHRISTMAS = {"doctor_id": "MARTIN", "first": dt.date(2026, 12, 1), "time_text": "09:00", "every_days": 7, "count": 8}


def booked_series(clinic, patient, doctor_id, **asked):
    """`book_series` of the patient's Visit with that doctor, as a series and its preview are asked here."""
    return book_series(clinic, Visit(patient, doctor_id), **asked)


def closed_for_christmas(clinic):
    """MARTIN away from 21/12/2026 to 03/01/2027; 08/12 is the catalog's holiday."""
    add_closure(clinic, doctor_id="MARTIN", first=dt.date(2026, 12, 21), last=dt.date(2027, 1, 3), reason="Navidad")


def test_the_nearest_is_looked_for_within_the_seven_days_after_and_never_taken_twice(api):
    clinic = api.app.clinic
    closed_for_christmas(clinic)
    sessions = preview_series(clinic, **{**CHRISTMAS, "first": dt.date(2026, 12, 15), "count": 4})
    assert [(s.day.isoformat(), s.slot and s.slot.time, s.reason, s.nearest and (s.nearest.date_text, s.nearest.time))
            for s in sessions] == [("2026-12-15", "09:00", None, None),
                                   ("2026-12-22", None, "closed", None),  # closed through the 29th: none within 7 days
                                   ("2026-12-29", None, "closed", ("04/01/2027", "09:00")),  # the 6th day after
                                   ("2027-01-05", "09:00", None, None)]
    daily = preview_series(clinic, doctor_id="MARTIN", first=dt.date(2026, 12, 7), time_text="09:00", every_days=1,
                           count=3)  # 08/12 is a holiday: its nearest is not the 09/12 09:00 of the third session
    assert [(s.slot or s.nearest).time for s in daily] == ["09:00", "09:30", "09:00"]
    assert [(s.slot or s.nearest).date_text for s in daily] == ["07/12/2026", "09/12/2026", "09/12/2026"]


def test_a_series_over_christmas_books_what_fits_numbered_over_those_and_lists_the_rest(api):
    clinic, patient = api.app.clinic, api.new_patient()
    closed_for_christmas(clinic)
    series_id, booked, left = booked_series(clinic, patient, fits=True, source="desk:ana", **CHRISTMAS)
    assert left == [dt.date(2026, 12, 8), dt.date(2026, 12, 22), dt.date(2026, 12, 29)]
    assert [(d, t) for d, t, _ in dates_of(api)] == [("2026-12-01", "09:00"), ("2026-12-15", "09:00"),
                                                     ("2027-01-05", "09:00"), ("2027-01-12", "09:00"),
                                                     ("2027-01-19", "09:00")]
    records = [read_appointment(clinic, appointment_id) for appointment_id, _ in booked]
    assert [(r["series_place"], r["series_count"]) for r in records] == [(n, 5) for n in range(1, 6)]  # "3/5"
    again = booked_series(clinic, patient, fits=True, source="desk:ana", **CHRISTMAS)  # a double click
    assert again == (series_id, [(a, None) for a, _ in booked], left) and len(dates_of(api)) == 5
    other = api.new_patient(nif=valid_dni(3), name="Eva")
    _, more, rest = booked_series(clinic, other, nearest=True, fits=True, source="desk:ana",
                                **{**CHRISTMAS, "time_text": "10:00"})
    assert rest == [dt.date(2026, 12, 22)] and len(more) == 7
    assert ("2026-12-09", "10:00") in [(d, t) for d, t, s in dates_of(api, "patient_id = 2")]
    with pytest.raises(agenda.ClinicError) as whole:
        booked_series(clinic, other, nearest=True, source="desk:ana", **CHRISTMAS)
    assert "not free on 22/12/2026" in whole.value.message and len(dates_of(api)) == 12


@pytest.fixture
def two_patients(api):
    return api.new_patient(), api.new_patient(nif=valid_dni(7), name="Otra")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(2, 7), taken=st.sets(st.integers(0, 6)), closed=st.sets(st.integers(0, 6)),
       take=st.sampled_from(sorted(TAKES)))
def test_a_series_books_exactly_the_dates_that_fit_or_nothing(api, two_patients, count, taken, closed, take):
    clinic, (patient, other) = api.app.clinic, two_patients
    with clinic.db.transaction() as conn:
        for table in ("outbox", "holds", "appointments", "series"):
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DELETE FROM closures WHERE reason = 'prueba'")
        conn.executemany("INSERT INTO closures (doctor_id, date_from, date_to, reason) VALUES ('MARTIN', ?, ?, 'prueba')",
                         [((TUESDAY + dt.timedelta(weeks=n)).isoformat(),) * 2 for n in closed])
    dates = [TUESDAY + dt.timedelta(weeks=n) for n in range(count)]
    for n in taken & set(range(count)) - closed - {2}:  # the third Tuesday, 08/12, is a holiday
        book_appointment(clinic, Visit(patient_id=other, doctor_id="MARTIN"), day=dates[n], time_text="09:00",
                         source="desk:ana")
    fitting = [day for n, day in enumerate(dates) if n not in taken | closed | {2}]
    others = set(dates_of(api))
    choices = series_choices(preview_series(clinic, **{**SERIES, "count": count}))
    assert all(booked >= 2 and booked + left == count for _, booked, left in choices)
    nearest, fits = TAKES[take]
    try:
        _, booked, left = booked_series(clinic, patient, nearest=nearest, fits=fits, source="desk:ana",
                                      **{**SERIES, "count": count})
    except agenda.ClinicError as refused:
        assert refused.code == "SLOT_NOT_AVAILABLE" and set(dates_of(api)) == others
        assert nearest or len(fitting) < (2 if fits else count)
        return
    mine = [(dt.date.fromisoformat(d), t) for d, t, _ in dates_of(api, f"patient_id = {patient}")]
    assert [day for day, time in mine if time == "09:00" and day in dates] == fitting
    assert len(mine) == len(booked) == count - len(left) >= 2 and (fits or not left)
    assert nearest or [day for day, _ in mine] == fitting
    assert all(any(0 <= (day - asked).days <= 7 for asked in dates) for day, _ in mine)
    assert len(set(mine)) == len(mine) and not set(mine) & {(dt.date.fromisoformat(d), t) for d, t, _ in others}
    records = sorted((read_appointment(clinic, appointment_id) for appointment_id, _ in booked),
                     key=lambda r: (r["date"], r["start"]))
    assert [(r["series_place"], r["series_count"]) for r in records] == [(n, len(mine)) for n in range(1, len(mine) + 1)]


def test_the_desk_offers_only_ways_that_book_and_says_the_dates_left_out_to_call(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    patient = api.new_patient()
    closed_for_christmas(api.app.clinic)
    csrf = desk.get("/desk/day").html.find("input", attrs={"name": "csrf"})["value"]
    fields = {"csrf": csrf, "doctorId": "MARTIN", "date": "01/12/2026", "time": "09:00", "centerId": "C1",
              "patientId": patient, "n": "1", "unit": "w", "count": "8", "step": "preview"}
    preview = desk.post("/desk/series", fields)
    assert [" ".join(b.text.split()) for b in preview.html.select("form.series-book button")] == [
        "Reservar 7 (donde la hora no está libre, el hueco más cercano); 1 para llamar",
        "Reservar las 5 que caben; 3 para llamar"]
    assert "Reservar las 8 sesiones" not in preview.text
    booked = preview.forms[len(preview.forms) - 1].submit("take", value="fits")
    assert booked.follow().html.find("p", class_="flash").text == (
        "Serie de 5 citas reservada para Ana García. Sin hueco, para llamar: 08/12/2026, 22/12/2026, 29/12/2026.")
    card = desk.get("/desk/day?date=05/01/2027&centerId=C1").html.select_one(".card")
    assert "serie 3/5" in card.text
    none_fit = desk.post("/desk/series", {**fields, "date": "22/12/2026", "count": "2", "patientId": patient})
    assert none_fit.html.select("form.series-book") == [] and "Así no caben ni dos sesiones" in none_fit.text
    stale = desk.post("/desk/series", {**fields, "date": "15/12/2026", "count": "3", "step": "book"},
                      expect_errors=True)  # "all", sent by hand over a closed date: refused, the preview again
    assert stale.status_int == 409 and stale.html.select("form.series-book button")
    assert len(dates_of(api)) == 5


def test_agenda_book_every_what_fits_books_the_dates_that_fit_and_lists_the_others(api, db_path):
    api.new_patient()
    closed_for_christmas(api.app.clinic)
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})
    args = ["book", "--doctor", "MARTIN", "--date", "15/12/2026", "--time", "09:00", "--nif", "12345678Z",
            "--every", "1w", "--count", "4"]
    refused = runner.invoke(agenda.cli, args + ["--nearest"], obj={"now": Clock(MONDAY)})
    assert refused.exit_code == 1 and "not free on 22/12/2026; no free slot within 7 days" in refused.output
    booked = runner.invoke(agenda.cli, args + ["--nearest", "--what-fits"], obj={"now": Clock(MONDAY)})
    assert booked.exit_code == 0, booked.output
    assert booked.output.splitlines()[1:] == [
        " 2/4 22/12/2026 09:00: closed; nearest none within 7 days",
        " 3/4 29/12/2026 09:00: closed; nearest 04/01/2027 09:00", " 4/4 05/01/2027 09:00: free",
        "Booked series 1: 3 appointments (1, 2, 3).", "Left out, to call the patient: 22/12/2026."]
    assert [d for d, _, _ in dates_of(api)] == ["2026-12-15", "2027-01-04", "2027-01-05"]
    assert "--what-fits" in runner.invoke(agenda.cli, ["book", "-h"]).output
