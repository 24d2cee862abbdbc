"""Visit types, rooms and machines at the front desk (webtest) and its command-line twins (CliRunner)
("Visit types", "Rooms and machines", "One patient, one place"): the booking page offers a doctor's types
and where the chosen one fits, books it with its length and holds; a patient's other visit then is linked
and may be accepted on purpose, booking or moving; the rooms page shows what each room holds, and the day
draws a visit's pause."""

import pytest
import webtest

from test_desk import PASSWORD, log_in

CATALOG = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to,pause,needs,category,types,room
center,C1,Centro,,,,,,,,,,,,,
speciality,MG,Medicina general,,,,,,,,,,,,,
speciality,FIS,Fisioterapia,,,,,,,,,,,,,
type,MG-REV,Revisión,MG,,,,,15,,,,,,,
type,MG-PRI,Primera visita,MG,,,,,30,,,,,,,
type,FIS-SES,Sesión de fisioterapia,FIS,,,,,45,,,15,box,,,
room,BOX1,Box 1,,C1,,,,,,,,,box,,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-12:00,15,,,,,,MG-REV;MG-PRI,
doctor,MUNOZ,Andrés Muñoz,FIS,C1,,mon-fri,09:00-12:00,15,,,,,,FIS-SES,
"""
TUESDAY = "24/11/2026"


@pytest.fixture
def clinic_api(make_api):
    api = make_api(csv=CATALOG)
    api.app.accounts.add_staff("ana", PASSWORD)
    return api


@pytest.fixture
def desk(clinic_api):
    client = webtest.TestApp(clinic_api.app)
    assert log_in(client).status_int == 303
    return client


def book_page(desk, doctor, time, **extra):
    query = "&".join(f"{key}={value}" for key, value in {"doctorId": doctor, "date": TUESDAY, "time": time,
                                                          "centerId": "C1", **extra}.items())
    return desk.get(f"/desk/book?{query}")


def book_form(page):
    """The form that books the slot for the patient the search found."""
    return next(form for form in page.forms.values() if form.action == "/desk/book" and "patientId" in form.fields)


def found(desk, page, query="12345678Z"):
    search = next(form for form in page.forms.values() if form.action.startswith("/desk/book/search"))
    search["q"] = query
    return search.submit()


def live(clinic_api):
    return clinic_api.db().execute("SELECT doctor_id, time, end_time, type_id, busy_until, overlap_accepted"
                                   " FROM appointments WHERE status != 'cancelled' ORDER BY id").fetchall()


def test_the_booking_page_offers_the_doctors_types_and_books_the_one_chosen_with_its_length(clinic_api, desk):
    clinic_api.new_patient()
    page = book_page(desk, "MARTIN", "09:00")
    options = [(o["value"], " ".join(o.text.split())) for o in page.html.select("select[name=typeId] option")]
    assert options == [("MG-REV", "Revisión · 15 min"), ("MG-PRI", "Primera visita · 30 min")]
    assert page.html.select_one("select[name=typeId] option[selected]")["value"] == "MG-REV"  # the first, by default
    chosen = found(desk, book_page(desk, "MARTIN", "09:00", typeId="MG-PRI"))
    form = book_form(chosen)
    assert form["typeId"].value == "MG-PRI"
    assert form.submit().status_int == 303
    assert [tuple(row) for row in live(clinic_api)] == [("MARTIN", "09:00", "09:30", "MG-PRI", "09:30", 0)]


def test_where_the_type_does_not_fit_the_page_offers_the_starts_where_it_does(clinic_api, desk):
    clinic_api.book(clinic_api.new_patient(), date=TUESDAY, time="09:30", specialityId="MG-REV")
    page = book_page(desk, "MARTIN", "09:15", typeId="MG-PRI")  # 30 minutes from 09:15 meet the 09:30 visit
    warning = page.html.select_one("p.warning")
    assert warning is not None and "no cabe" in warning.text
    starts = [a.text for a in warning.select("a")]
    assert "09:15" not in starts and starts[:3] == ["09:00", "09:45", "10:00"]
    assert "typeId=MG-PRI" in warning.select_one("a")["href"] and "time=09:00" in warning.select_one("a")["href"]
    assert book_page(desk, "MARTIN", "09:15", typeId="MG-REV").html.select_one("p.warning") is None  # 15 fit


def test_a_patients_other_visit_is_linked_and_reception_may_book_over_it_on_purpose(clinic_api, desk):
    patient = clinic_api.new_patient()
    other = clinic_api.book(patient, date=TUESDAY, time="09:00")
    page = found(desk, book_page(desk, "MUNOZ", "09:00"))
    refused = book_form(page).submit(expect_errors=True)
    assert refused.status_int == 409
    alert = refused.html.select_one("p.error")
    assert "otra cita" in alert.text and alert.select_one(f'a[href="/desk/appointments/{other}"]') is not None
    assert len(live(clinic_api)) == 1  # nothing made
    again = book_form(refused)
    assert again["acceptOverlap"].value is None  # not ticked for them
    again["acceptOverlap"] = True
    assert again.submit().status_int == 303
    rows = live(clinic_api)
    assert [(row[0], row[3], row[5]) for row in rows] == [("MARTIN", "MG-REV", 0), ("MUNOZ", "FIS-SES", 1)]


def test_the_rooms_page_shows_what_each_room_holds_and_the_day_draws_the_pause(clinic_api, desk):
    clinic_api.book(clinic_api.new_patient(), date=TUESDAY, time="10:00", doctor="MUNOZ")
    rows = live(clinic_api)
    assert [tuple(row[:5]) for row in rows] == [("MUNOZ", "10:00", "10:45", "FIS-SES", "11:00")]
    rooms = desk.get(f"/desk/rooms?date={TUESDAY}&centerId=C1")
    box = rooms.html.select_one("#resource-BOX1")
    held = [" ".join(td.text.split()) for td in box.select("tbody td")]
    assert held == ["10:00–11:00", "Sesión de fisioterapia", "Andrés Muñoz", "Ana García"]
    assert "Libre todo el día" in desk.get("/desk/rooms?date=25/11/2026&centerId=C1").text
    day = desk.get(f"/desk/day?date={TUESDAY}&centerId=C1")
    pause, = day.html.select(".timeline .block.pause")
    assert "h15" in pause["class"] and "pausa" in pause.text
    card, = day.html.select(".timeline article.card")
    assert "Sesión de fisioterapia · Box 1" in " ".join(card.text.split())


def test_a_move_onto_the_patients_other_visit_is_refused_linked_and_may_be_accepted(clinic_api, desk):
    patient = clinic_api.new_patient()
    other = clinic_api.book(patient, date=TUESDAY, time="09:00", doctor="MUNOZ")
    moving = clinic_api.book(patient, date=TUESDAY, time="11:00")
    page = desk.get(f"/desk/appointments/{moving}?date={TUESDAY}")
    form = next(f for f in page.forms.values() if f.action.endswith("/move"))
    form["slot"] = f"{TUESDAY}|09:15|MARTIN|C1"
    refused = form.submit(expect_errors=True)
    assert refused.status_int == 409
    assert refused.html.select_one(f'p.error a[href="/desk/appointments/{other}"]') is not None
    again = next(f for f in refused.forms.values() if f.action.endswith("/move"))
    assert again["slot"].value == f"{TUESDAY}|09:15|MARTIN|C1"  # the slot chosen kept
    again["acceptOverlap"] = True
    assert again.submit().status_int == 303
    assert [tuple(row) for row in live(clinic_api)] == [("MUNOZ", "09:00", "09:45", "FIS-SES", "10:00", 0),
                                                        ("MARTIN", "09:15", "09:30", "MG-REV", "09:30", 1)]
    assert clinic_api.put(f"/appointments/{moving}", {"newDate": TUESDAY, "newTime": "09:30"}).json[
        "error"]["reason"] == "patient_elsewhere"  # a move asks again: the caller may not keep the overlap


def test_the_command_line_books_and_moves_over_a_patients_other_visit_only_when_told(clinic_api, clock):
    import agenda
    from click.testing import CliRunner
    from conftest import Clock
    patient = clinic_api.new_patient()
    clinic_api.book(patient, date=TUESDAY, time="09:00", doctor="MUNOZ")
    runner = CliRunner(env={"AGENDA_DB": str(clinic_api.app.clinic.db.path), "AGENDA_SECRET": None})

    def agenda_cli(*args):
        return runner.invoke(agenda.cli, list(args), obj={"now": Clock(clock.moment)})
    book = ("book", "--doctor", "MARTIN", "--date", TUESDAY, "--time", "09:30", "--patient", patient,
            "--type", "MG-PRI")
    refused = agenda_cli(*book)
    assert refused.exit_code == 1 and "another appointment then" in refused.output and len(live(clinic_api)) == 1
    booked = agenda_cli(*book, "--accept-overlap")
    assert booked.exit_code == 0 and "Primera visita" in booked.output, booked.output
    moved_id = clinic_api.db().execute("SELECT max(id) FROM appointments").fetchone()[0]
    refused = agenda_cli("move", str(moved_id), "--date", TUESDAY, "--time", "09:15")
    assert refused.exit_code == 1 and "another appointment then" in refused.output
    moved = agenda_cli("move", str(moved_id), "--date", TUESDAY, "--time", "09:15", "--accept-overlap")
    assert moved.exit_code == 0 and "09:15" in moved.output and "Primera visita" in moved.output, moved.output
    assert tuple(live(clinic_api)[-1]) == ("MARTIN", "09:15", "09:45", "MG-PRI", "09:45", 1)
