"""The day and the week as the server draws them ("The day as time", "Sobrecita"), through webtest: the
center's week shows who (time, patient, doctor), the doctor's week names each day's center, a sobrecita is
drawn beside the visit it was squeezed on, a closure's reason after the cards on it, the "now" label clear
of the axis's words, and the printed day. What only a browser shows: test_desk_layout_browser.py."""

import datetime as dt
import re

import pytest
import webtest
from hypothesis import given, strategies as st

from _agenda.domain.booking import Visit
from _agenda.domain.counter import squeeze_in
from _agenda.domain.timeline import MOST_LANES, NOW_ROWS, TICK_ROWS, in_lanes, now_label_at
from _agenda.domain.changes import book_appointment
from _agenda.domain.closures import add_closure

from conftest import ROOT, valid_dni
from test_desk import PASSWORD, log_in

DEMO_CSV = (ROOT / "seed" / "catalogs.csv").read_text(encoding="utf-8")
# The demo clinic's Thursday: at Norte, Martín 09:00-14:00 (15 min), Núñez 10:00-14:00 and 16:00-18:00 (30 min),
# Herrera 15:00-20:00 (15 min); Martín works at Centro Monday to Wednesday.
THURSDAY = dt.date(2026, 11, 26)
NORTE_DAY = "/desk/day?date=26/11/2026&centerId=NORTE"
PEOPLE = [("Lucía", "Moreno Gallardo"), ("Marta", "Iglesias Ramos"), ("Pablo", "Ortega Lin"), ("Elena", "Vidal Castro"),
          ("Hugo", "Navarro Sanz"), ("Irene", "Molina Fuentes"), ("Jon", "Etxebarria Goñi"), ("Ana", "Gil Sáez"),
          ("Teresa", "Herrero Blanco"), ("Rocío", "Alonso Peña")]
# (doctor, time, visit type, insurance): who of PEOPLE, in order; then Irene squeezed on Marta at 10:00.
BOOKINGS = [("MARTIN", "09:00", "MG-REVISION", None), ("MARTIN", "10:00", "MG-REVISION", None),
            ("MARTIN", "10:15", "MG-REVISION", None), ("MARTIN", "10:30", "MG-PRIMERA", None),
            ("MARTIN", "11:00", "MG-ECO", None), None, ("NUNEZ", "11:00", None, "PRIVADO"),
            ("NUNEZ", "10:00", None, "DKV"), ("HERRERA", "15:00", "MG-REVISION", None),
            ("HERRERA", "17:30", "MG-REVISION", None)]


def busy_thursday(api, clock, hour=10, minute=5):
    """The demo clinic's Thursday at Norte, booked at 07:00 from the desk: 15-minute visits and longer ones, a
    sobrecita on the 10:00 visit, a visit inside a closure of Núñez (11:00-13:00, to call); then the clock at
    hour:minute. {surname: appointment id}."""
    clock.set(2026, 11, 26, 7, 0)
    clinic, booked = api.app.clinic, {}
    for n, ((name, surname), booking) in enumerate(zip(PEOPLE, BOOKINGS)):
        patient = api.new_patient(nif=valid_dni(700 + n), name=name, surname=surname, phone=f"6123456{n:02d}")
        if booking is None:
            booked[surname] = squeeze_in(clinic, Visit(patient, "MARTIN", center_id="NORTE", reason="Urgente"),
                                         day=THURSDAY, time_text="10:00", source="desk:ana")
            continue
        doctor, time_text, kind, insurance = booking
        visit = Visit(patient, doctor, kind, "NORTE", insurance_id=insurance, reason="Revisión")
        booked[surname] = book_appointment(clinic, visit, day=THURSDAY, time_text=time_text, source="desk:ana")
    add_closure(clinic, doctor_id="NUNEZ", first=THURSDAY, start="11:00", end="13:00", reason="Reunión de equipo")
    clock.set(2026, 11, 26, hour, minute)
    return booked


@pytest.fixture
def demo(make_api, clock):
    """(desk client logged in as 'ana', api) on the demo clinic, its Thursday busy, at 10:05."""
    api = make_api(DEMO_CSV, clinic_name="Clínica Sol")
    busy_thursday(api, clock)
    api.app.accounts.add_staff("ana", PASSWORD)
    client = webtest.TestApp(api.app)
    assert log_in(client).status_int == 303
    return client, api


def words(element):
    return " ".join(element.get_text(" ").split())


def test_the_center_s_week_shows_each_appointment_with_its_time_patient_and_doctor(demo):
    desk, api = demo
    week = desk.get("/desk/week?date=24/11/2026&centerId=NORTE")
    days = week.html.select(".week-grid section.week-day")
    assert [words(day.select_one(".day-head")) for day in days] == [
        "lun 23/11", "mar 24/11", "mié 25/11", "jue 26/11", "vie 27/11", "sáb 28/11", "dom 29/11"]
    thursday = days[3]
    assert thursday.select_one(".day-head a")["href"] == NORTE_DAY
    shown = [words(card) for card in thursday.select("article.card")]
    assert shown == [
        "09:00 Lucía Moreno Gallardo Dra. Lucía Martín Pérez reservada",
        "10:00 Marta Iglesias Ramos Dra. Lucía Martín Pérez reservada",
        "10:00 Irene Molina Fuentes Dra. Lucía Martín Pérez ⚡ sobrecita reservada",
        "10:00 Ana Gil Sáez Dra. Carmen Núñez Gil reservada",
        "10:15 Pablo Ortega Lin Dra. Lucía Martín Pérez reservada",
        "10:30 Elena Vidal Castro Dra. Lucía Martín Pérez reservada",
        "11:00 Hugo Navarro Sanz Dra. Lucía Martín Pérez reservada",
        "11:00 Jon Etxebarria Goñi Dra. Carmen Núñez Gil ☎ llamar reservada",
        "15:00 Teresa Herrero Blanco Dra. Sofía Herrera Campos reservada",
        "17:30 Rocío Alonso Peña Dra. Sofía Herrera Campos reservada"]
    assert all(re.fullmatch(r"/desk/appointments/\d+", a["href"]) for a in thursday.select("article.card a.who"))
    assert "Dra. Lucía Martín Pérez 6 citas · 10 libres" in words(thursday)  # what can be offered, per doctor
    assert not any(day.select("article.card") for n, day in enumerate(days) if n != 3)
    assert not thursday.select("a.more")  # all ten drawn
    conn = api.db()
    read = conn.execute("SELECT count(DISTINCT patient_id) FROM access_reads WHERE reader = 'desk:ana' AND kind = 'day'"
                        ).fetchone()[0]
    assert read == 10  # who each one is came through the one door, noted for her


def test_the_doctor_s_week_names_the_center_of_each_day(demo):
    desk, _ = demo
    week = desk.get("/desk/week?date=26/11/2026&doctorId=MARTIN")
    heads = week.html.select(".timeline .col-head")
    assert [words(head.select_one(".name")) for head in heads] == [
        "lun 23/11", "mar 24/11", "mié 25/11", "jue 26/11", "vie 27/11"]
    assert [words(head.select_one(".where")) for head in heads] == [
        "Centro (C/ Mayor 12)"] * 3 + ["Norte (Av. de la Ilustración 40)"] * 2  # the words both centers share left out
    assert heads[3].select_one(".where")["title"] == "Clínica Sol - Norte (Av. de la Ilustración 40)"
    assert "with-places" in week.html.select_one(".timeline")["class"]
    day = desk.get(NORTE_DAY)
    assert not day.html.select(".timeline .col-head .where")  # the day's center is in its toolbar


def test_a_sobrecita_is_drawn_beside_the_visit_it_was_squeezed_on(demo):
    desk, _ = demo
    page = desk.get(NORTE_DAY)
    lanes = {words(card.select_one("a.who")): [c for c in card["class"] if c.startswith("lane")]
             for card in page.html.select(".timeline article.card")}
    assert lanes["10:00 Marta Iglesias Ramos"] == ["lanes2", "lane0"]
    assert lanes["10:00 Irene Molina Fuentes"] == ["lanes2", "lane1"]
    assert all(not found for name, found in lanes.items() if "Marta" not in name and "Irene" not in name)
    card = page.html.find("a", string=re.compile("Irene")).find_parent("article")
    assert [child.name for child in card.find_all(recursive=False)][:2] == ["a", "form"]  # its buttons at the top
    assert card.select_one("form.quick")["action"].endswith("/attendance")


@given(st.lists(st.tuples(st.integers(0, 120), st.sampled_from([10, 15, 20, 30, 45]), st.booleans()),
                min_size=1, max_size=MOST_LANES))
def test_cards_at_one_time_never_share_a_lane(spans):
    cards = [{"id": n, "from": start, "to": start + length, "squeezed": squeezed}
             for n, (start, length, squeezed) in enumerate(spans)]
    in_lanes(cards)
    for card in cards:
        assert 0 <= card["lane"] < card["lanes"] <= MOST_LANES
        for other in cards:
            if other is not card and other["from"] < card["to"] and card["from"] < other["to"]:
                assert other["lane"] != card["lane"] and other["lanes"] == card["lanes"] > 1


def test_a_closure_s_reason_is_drawn_after_the_cards_on_it(demo):
    desk, _ = demo
    page = desk.get(NORTE_DAY)
    row = {words(tick): re.search(r"\br(\d+)\b", " ".join(tick["class"]))[1] for tick in page.html.select(".timeline .tick")}
    closed = [(words(block), [c for c in block["class"] if re.fullmatch(r"r\d+", c)][0])
              for block in page.html.select(".timeline .block.closed")]
    assert closed == [("", f"r{row['11:00']}"), ("11:00 cerrado: Reunión de equipo", f"r{row['11:30']}")]
    # Jon's 30-minute visit at 11:00 covers the closure's first half hour: its words come after it


def test_the_now_label_sits_beside_its_line_below_the_quarter_s_tick_words():
    for now in range(6 * 60, 22 * 60):
        start, quarter = now_label_at(now), now - now % 15
        assert quarter + TICK_ROWS <= start and start + NOW_ROWS <= quarter + 15  # no tick's words under it
        assert abs(start + NOW_ROWS // 2 - now) <= 15 - TICK_ROWS  # beside the line
    assert now_label_at(9 * 60 + 55) == 9 * 60 + 55 - NOW_ROWS // 2  # centred on the line where it can be


def test_the_day_marks_now_with_a_line_and_a_label_on_the_axis(demo):
    desk, _ = demo
    page = desk.get(NORTE_DAY)
    first = min(int(tick.text[:2]) * 60 + int(tick.text[3:]) for tick in page.html.select(".timeline .tick"))
    lines, label = page.html.select(".timeline .now-line"), page.html.select_one(".timeline #now")
    assert [line["class"] for line in lines] == [["now-line", f"c{n}", f"r{10 * 60 + 5 - first + 2}", "h1"]
                                                 for n in (2, 3, 4)]  # across each doctor's column
    assert words(label) == "10:05 ahora"
    assert f"r{now_label_at(10 * 60 + 5) - first + 2}" in label["class"] and "c1" in label["class"]


def test_the_day_has_a_print_button_that_is_a_link_to_the_printed_day(demo):
    desk, _ = demo
    page = desk.get(NORTE_DAY)
    button = page.html.select_one("a#print")
    assert button.text == "Imprimir" and button["href"] == "/desk/day?date=26%2F11%2F2026&centerId=NORTE&print=1"
    assert "printed" in page.html.select_one("section.printed")["class"] and page.html.select(".timeline")
    printed = desk.get(button["href"])
    assert not printed.html.select(".timeline") and "on-screen" in printed.html.select_one("section.printed")["class"]
    assert printed.html.select_one("a#print-back")["href"] == "/desk/day?date=26%2F11%2F2026&centerId=NORTE"
    assert "fill" not in (printed.html.body.get("class") or []) and "fill" in page.html.body["class"]


def test_the_printed_heading_names_the_clinic_once_and_the_insurance_has_its_own_column(demo):
    desk, _ = demo
    tables = desk.get(NORTE_DAY + "&print=1").html.select("table.print-day")
    assert [words(table.thead.tr) for table in tables] == [
        f"Clínica Sol · Norte (Av. de la Ilustración 40) · jue 26/11/2026 · {doctor}" for doctor in (
            "Dra. Carmen Núñez Gil (DER)", "Dra. Lucía Martín Pérez (MG)", "Dra. Sofía Herrera Campos (MG)")]
    assert [words(th) for th in tables[0].select("thead tr:nth-of-type(2) th")] == [
        "Hora", "Paciente", "Teléfono", "Aseguradora", "Motivo", "Tipo de visita", "Estado"]
    assert [[words(td) for td in tr.select("td")] for tr in tables[0].tbody.select("tr")] == [
        ["10:00–10:30", "Ana Gil Sáez", "612 34 56 07", "DKV", "Revisión", "", "reservada"],
        ["11:00–11:30", "Jon Etxebarria Goñi", "612 34 56 06", "PRIVADO", "Revisión", "", "☎ llamar reservada"]]
    typed = [[words(td) for td in tr.select("td")][5] for tr in tables[1].tbody.select("tr")]
    assert typed == ["Revisión", "Revisión", "Revisión", "Revisión", "Primera visita", "Ecografía"]  # named: no colour
    assert tables[1].tbody.select_one("td span.swatch")["class"] == ["swatch", "vt4"]  # MG-REVISION: 5th of the ids


def test_phone_numbers_on_the_day_are_kept_whole(demo):
    desk, _ = demo
    phones = desk.get(NORTE_DAY).html.select(".timeline article.card .phone")
    assert len(phones) == 10 and all(re.fullmatch(r"612 34 56 \d\d", phone.text) for phone in phones)
