"""The month at a glance ("The month at a glance"), through webtest: each day's booked, free and closed time per
doctor, the closures and holidays, the days a visit type fits, the months up to the desk's horizon, the clinic's
zone across a change of the clocks, the page's reading bounded by its doctors, not its days, and the booking
form's first free start of a type up to the horizon. In a real browser at both sizes:
test_desk_layout_browser.py."""

import datetime as dt

import pytest
import webtest

from conftest import valid_dni
from test_desk import PASSWORD, log_in
from _agenda.domain.closures import add_closure

# Three doctors at one center (for the count of statements), one of them on Sundays through the night hours the
# clocks change at, a type of visit of an hour only one of them offers.
NIGHT_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to
center,C1,Centro,,,,,,,,
speciality,MG,Medicina general,,,,,,,,
doctor,ALBA,Alba Ríos,MG,C1,,mon-fri,09:00-12:00,30,,
doctor,BRUNO,Bruno Sanz,MG,C1,,mon;wed,16:00-18:00,30,,
doctor,NOCHE,Nora Che,MG,C1,,sun,01:00-04:00,30,,
"""


def client_of(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    client = webtest.TestApp(api.app)
    assert log_in(client).status_int == 303
    return client


@pytest.fixture
def desk(api):
    return client_of(api)


def words(element):
    return " ".join(element.get_text(" ").split())


def day_cell(page, number):
    """The cell of the month's day `number`."""
    return next(td for td in page.html.select("table.month td.day") if td.select_one("a.date").text == str(number))


def test_a_doctor_s_month_shows_each_day_s_free_booked_and_closed_time_and_opens_the_day(api, desk):
    api.book(api.new_patient(), date="24/11/2026", time="09:30")
    page = desk.get("/desk/month?month=11/2026&doctorId=MARTIN")
    assert "Mes de Lucía Martín · noviembre de 2026" in words(page.html.select_one("nav.days"))
    tuesday = day_cell(page, 24)
    assert words(tuesday) == "24 Centro 1 h 30 libre 30 min citas"
    line = tuesday.select_one("a.doc")
    assert line["href"] == "/desk/day?date=24%2F11%2F2026&centerId=C1&doctorId=MARTIN"
    assert [span["class"] for span in line.select(".bar span")] == [["booked", "w25"], ["free", "w75"], ["shut", "w0"]]
    assert "30 min citas · 1 h 30 libre · 0 min cerrado de 2 h de consulta" in line["title"]
    assert words(day_cell(page, 25)) == "25 cerrado: Vacaciones Centro 0 min libre 0 min citas"  # her holiday
    assert day_cell(page, 25).select_one(".bar .shut")["class"] == ["shut", "w100"]
    saturday = day_cell(page, 28).select_one("a.doc")  # Saturdays at Norte
    assert saturday["href"].endswith("centerId=C2&doctorId=MARTIN") and saturday.select_one(".who").text == "Norte"
    assert day_cell(page, 29).select("a.doc") == []  # no Sunday
    assert "today" in day_cell(page, 23)["class"] and "past" in day_cell(page, 20)["class"]
    first = page.html.select_one("table.month tbody tr")  # November 2026 begins on a Sunday: six weeks, Monday first
    assert [td["class"] for td in first.select("td")] == [["blank"]] * 6 + [["day", "past"]]
    assert len(page.html.select("table.month tbody tr")) == 6
    assert desk.get(line["href"]).status_int == 200


def test_a_center_s_month_marks_its_holiday_its_closures_and_the_days_a_type_fits(api, desk):
    page = desk.get("/desk/month?month=12/2026&centerId=C1&typeId=PED")
    assert words(day_cell(page, 8)).startswith("8 festivo: Inmaculada Javier Ruiz 0 min libre")
    assert "holiday" in day_cell(page, 8)["class"]
    assert [line.select_one(".who").text for line in day_cell(page, 1).select("a.doc")] == ["Javier Ruiz",
                                                                                           "Lucía Martín"]
    assert day_cell(page, 1).select_one("a.date")["href"] == "/desk/day?date=01%2F12%2F2026&centerId=C1"
    fits = [int(td.select_one("a.date").text) for td in page.html.select("td.fits")]
    assert fits == [1, 2, 3, 4, 7, 9, 10, 11, 14, 15, 16, 17, 18, 21, 22, 23, 24, 25, 28, 29, 30, 31]  # not the 8th
    assert "Días en que cabe una visita de Pediatría: 22." in words(page.html.select_one(".month-key"))
    assert "Primer hueco libre: mar 01/12/2026 09:00 · Javier Ruiz · Centro" in words(page.html.select_one(
        ".next-free-found"))  # in the month shown
    norte = desk.get("/desk/month?month=11/2026&centerId=C2")
    assert words(day_cell(norte, 30)).startswith("30 cerrado 16:00–16:30: Obras Carmen Núñez 30 min libre")
    assert "w50" in day_cell(norte, 30).select_one(".bar .shut")["class"]
    english = desk.get("/desk/month?month=12/2026&centerId=C1", headers={"Accept-Language": "en"})
    assert words(day_cell(english, 8)).startswith("8 holiday: Inmaculada")


def test_the_months_reach_the_desk_s_horizon_and_a_wrong_month_is_said(api, desk):
    page = desk.get("/desk/month?doctorId=MARTIN")  # this month, by the clinic's clock
    options = [option["value"] for option in page.html.select("select#month option")]
    assert options[0] == "11/2026" and options[-1] == "05/2028" and len(options) == 19  # 18 months on: 23/05/2028
    last = desk.get("/desk/month?month=05/2028&doctorId=MARTIN")
    assert last.html.find(id="following") is None
    assert last.html.find(id="previous")["href"] == "/desk/month?month=04/2028&doctorId=MARTIN"
    assert "beyond" in day_cell(last, 24)["class"] and "beyond" not in day_cell(last, 23)["class"]
    beyond = desk.get("/desk/month?month=06/2028&doctorId=MARTIN", expect_errors=True)
    assert beyond.status_int == 400 and "Ese mes pasa del horizonte de reserva de la recepción." in beyond.text
    for wrong in ("13/2026", "2026-11", "11/20260"):
        answer = desk.get(f"/desk/month?month={wrong}&centerId=C1", expect_errors=True)
        assert answer.status_int == 400 and "El mes se escribe MM/AAAA, como 03/2027." in answer.text
    assert desk.get("/desk/month?doctorId=NOBODY", expect_errors=True).status_int == 404
    assert desk.get("/desk/month?centerId=NOWHERE", expect_errors=True).status_int == 404
    assert desk.get("/desk/month?centerId=C1&typeId=NOTHING", expect_errors=True).status_int == 404
    gone = desk.get("/desk/month?month=09/2026&centerId=C1")  # a month gone by, to look back, and on
    assert gone.html.find(id="following")["href"] == "/desk/month?month=10/2026&centerId=C1"
    assert gone.html.select_one("select#month option[selected]")["value"] == "09/2026"


def statements(api, desk, address):
    """The SQL statements one load of the page runs on the clinic's connection (the request's thread's)."""
    ran = []
    api.db().set_trace_callback(ran.append)
    try:
        assert desk.get(address).status_int == 200
    finally:
        api.db().set_trace_callback(None)
    return len(ran)


def test_a_month_is_read_in_statements_that_do_not_grow_with_its_days(make_api, clock):
    api = make_api(NIGHT_CSV)
    desk = client_of(api)
    for patient, (day, time) in enumerate([("24/11/2026", "09:00"), ("01/12/2026", "10:00"), ("02/12/2026", "16:00")]):
        api.book(api.new_patient(nif=valid_dni(100 + patient)), date=day, time=time,
                 doctor="BRUNO" if time == "16:00" else "ALBA")
    one = {month: statements(api, desk, f"/desk/month?month={month}&doctorId=ALBA")
           for month in ("02/2027", "03/2027", "04/2027")}  # 28, 31 and 30 days
    center = {month: statements(api, desk, f"/desk/month?month={month}&centerId=C1")
              for month in ("02/2027", "03/2027", "12/2026")}
    typed = {month: statements(api, desk, f"/desk/month?month={month}&centerId=C1&typeId=MG")
             for month in ("02/2027", "03/2027")}
    assert len(set(one.values())) == 1 and len(set(center.values())) == 1 and len(set(typed.values())) == 1, (
        one, center, typed)
    assert one["02/2027"] <= 40 and center["02/2027"] <= 40 and typed["02/2027"] <= 60, (one, center, typed)


def test_the_month_counts_the_hours_the_clinic_s_clock_has_across_a_change_of_the_clocks(make_api, clock):
    api = make_api(NIGHT_CSV)
    desk = client_of(api)
    march = desk.get("/desk/month?month=03/2027&doctorId=NOCHE")
    assert words(day_cell(march, 21)) == "21 Centro 3 h libre 0 min citas"
    assert words(day_cell(march, 28)) == "28 Centro 2 h libre 0 min citas"  # 02:00 to 03:00 never comes that night
    assert day_cell(march, 28)["class"] == ["day"] and [int(td.select_one("a.date").text) for td in
                                                        march.html.select("td.day")] == list(range(1, 32))
    october = desk.get("/desk/month?month=10/2027&doctorId=NOCHE")
    assert words(day_cell(october, 31)) == "31 Centro 3 h libre 0 min citas"  # the repeated hour offered once
    assert day_cell(october, 31).select_one("a.doc")["href"] == (
        "/desk/day?date=31%2F10%2F2027&centerId=C1&doctorId=NOCHE")
    clock.moment = dt.datetime(2027, 2, 28, 23, 30, tzinfo=dt.timezone.utc)  # 1 March, 00:30 in Madrid
    assert log_in(desk).status_int == 303  # months later: a new session
    assert "marzo de 2027" in words(desk.get("/desk/month?doctorId=NOCHE").html.select_one("nav.days"))


def test_the_booking_form_finds_the_first_free_start_of_its_type_up_to_the_horizon(make_api, clock):
    api = make_api(NIGHT_CSV)
    desk = client_of(api)
    add_closure(api.app.clinic, doctor_id="NOCHE", first=dt.date(2026, 11, 29), last=dt.date(2027, 12, 31),
                reason="Excedencia")  # thirteen months away: the next free Sunday night is in January 2028
    slot = "/desk/book?doctorId=NOCHE&date=29/11/2026&time=01:00&centerId=C1"
    page = desk.get(slot)
    assert page.html.find(id="ahead-doctor")["href"] == slot + "&ahead=doctor"
    page = desk.get(slot + "&ahead=doctor")
    assert words(page.html.select_one(".next-free-found")) == (
        "Primer hueco libre: dom 02/01/2028 01:00 · Nora Che · Centro Abrir ese hueco")
    opened = desk.get(page.html.find(id="ahead-open")["href"])
    assert opened.request.url.endswith("/desk/book?doctorId=NOCHE&date=02/01/2028&time=01:00&centerId=C1&typeId=MG")
    assert "Nora Che · 02/01/2028 · 01:00" in words(opened.html.select_one("main"))
    anyone = desk.get(slot + "&ahead=area")  # any doctor of the area from that day on: Alba, the Monday after
    assert words(anyone.html.select_one(".next-free-found")).startswith("Primer hueco libre: lun 30/11/2026 09:00 · "
                                                                       "Alba Ríos · Centro")
    add_closure(api.app.clinic, doctor_id="NOCHE", first=dt.date(2028, 1, 1), last=dt.date(2028, 12, 31))
    none = desk.get(slot + "&ahead=doctor")
    assert words(none.html.select_one(".next-free-found")) == "Ningún hueco libre de este tipo hasta el 23/05/2028."


@pytest.mark.parametrize("doctor_id, center_id", [("MARTIN", None), (None, "C1"), (None, "C2")])
def test_the_month_s_free_time_is_the_free_cells_the_day_draws(api, doctor_id, center_id):
    """One slot decision: each day of the month frees for each doctor exactly the cells the day view offers."""
    from _agenda.domain.month import month_view
    from _agenda.domain.timeline import day_timeline

    clinic = api.app.clinic
    api.book(api.new_patient(), date="02/12/2026", time="09:30")
    add_closure(clinic, doctor_id="RUIZ", first=dt.date(2026, 12, 3), start="09:20", end="09:40", reason="Curso")
    month = month_view(clinic, dt.date(2026, 12, 1), doctor_id, center_id)
    for day, drawn in month.items():
        columns = {}
        for center in ([center_id] if center_id else ["C1", "C2"]):
            for column in day_timeline(clinic, day, center, doctor_id).columns:
                free = sum(block.end - block.start for block in column["blocks"] if block.kind == "free")
                columns[column["doctor_id"]] = columns.get(column["doctor_id"], 0) + free
        assert {counts["id"]: counts["free"] for counts in drawn["doctors"]} == {
            key: minutes for key, minutes in columns.items() if key in {c["id"] for c in drawn["doctors"]}}, day
        assert all(minutes == 0 for key, minutes in columns.items()
                   if key not in {c["id"] for c in drawn["doctors"]}), day
