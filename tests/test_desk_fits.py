"""The desk offers only what fits ("Staff desk", "Visit types", "Rooms and machines", "Each channel's rules"),
through webtest: a day's cell is free only where a type its doctor offers there fits whole, by the caller's
own decision (the default, else the first of the doctor's types that fits, named on the cell), and the keys
walk what the server drew; a booking page that cannot place a visit says why (the box held, named; past the
doctor's hours; into the next visit); reception takes a walk-in into the cell under way until its end, the
caller's window unchanged; each visit is drawn in its type's colour, with a legend, and a visit booked over
the same patient's other one on purpose is marked. The same in a real browser: test_desk_keyboard.py."""

import datetime as dt

import pytest
import webtest

from _agenda.values.refusals import ClinicError
import _agenda.desk.booking
from _agenda.domain.booking import Visit
from _agenda.domain.changes import book_appointment
from conftest import MADRID, valid_dni
from test_desk import PASSWORD, log_in

# Three physiotherapists share two boxes at C1: a session of 45 minutes and 15 of pause, or a short review of
# 15, each needs a box; PRATS offers both (the session first), the others the session only. MARTIN has no
# types: one 30-minute cell of his grid, as before types.
CATALOG = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to,pause,needs,category,types,room
center,C1,Centro,,,,,,,,,,,,,
speciality,FIS,Fisioterapia,,,,,,,,,,,,,
speciality,MG,Medicina general,,,,,,,,,,,,,
type,FIS-SES,Sesión de fisioterapia,FIS,,,,,45,,,15,box,,,
type,FIS-REV,Revisión de fisioterapia,FIS,,,,,15,,,,box,,,
room,BOX1,Box 1,,C1,,,,,,,,,box,,
room,BOX2,Box 2,,C1,,,,,,,,,box,,
doctor,MUNOZ,Andrés Muñoz,FIS,C1,,mon-fri,09:00-13:00,15,,,,,,FIS-SES,
doctor,SOLER,Marta Soler,FIS,C1,,mon-fri,09:00-13:00,15,,,,,,FIS-SES,
doctor,PRATS,Júlia Prats,FIS,C1,,mon-fri,09:00-13:00,15,,,,,,FIS-SES;FIS-REV,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-11:00,30,,,,,,,
"""
TUESDAY, DAY = dt.date(2026, 11, 24), "/desk/day?date=24/11/2026&centerId=C1"
QUARTERS = [f"{hour:02d}:{minute:02d}" for hour in range(9, 13) for minute in (0, 15, 30, 45)]


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


def book(api, doctor, time, kind=None, n=1, **more):
    """A visit booked at the desk's door on Tuesday for the n-th patient (made when first asked); its id."""
    patient = api.app.clinic.conn().execute("SELECT id FROM patients WHERE nif = ?", (valid_dni(n),)).fetchone()
    patient = patient[0] if patient else api.new_patient(nif=valid_dni(n), phone=f"6000000{n:02d}")
    return book_appointment(api.app.clinic, Visit(patient, doctor, kind, **more), day=TUESDAY, time_text=time,
                            source="desk:ana")


def cells(page, doctor):
    """{time: (what the cell says, its visit type)} of the doctor's cells drawn free: links the keys walk."""
    return {a["data-slot"]: (" ".join(a.text.split()), a.get("data-type", ""))
            for a in page.html.select(".timeline a[data-slot]") if f"doctorId={doctor}&" in a["href"]}


def cell(page, doctor, time):
    return next(a for a in page.html.select(f".timeline a[data-slot='{time}']") if f"doctorId={doctor}&" in a["href"])


def blocks(page, kind):
    """The words of the blocks of a kind (unfit, past, ...) on the time axis."""
    return [" ".join(b.text.split()) for b in page.html.select(f".timeline .block.{kind}")]


def listed(api, doctor, kind=None):
    query = f"doctorId={doctor}&date=24/11/2026" + (f"&specialityId={kind}" if kind else "")
    return [slot["time"] for slot in api.get(f"/availabilities?{query}").json["data"]]


def test_a_third_physiotherapist_has_no_free_cell_while_both_boxes_are_held(clinic_api, desk):
    book(clinic_api, "MUNOZ", "10:00", n=1)
    book(clinic_api, "SOLER", "10:00", n=2)  # both boxes held 10:00-11:00 (45 minutes and 15 of pause)
    page = desk.get(DAY)
    prats = cells(page, "PRATS")
    session = [time for time in QUARTERS if time < "09:15" or "11:00" <= time <= "12:00"]
    assert [time for time, (_, kind) in prats.items() if kind == "FIS-SES"] == session == listed(
        clinic_api, "PRATS")  # the default type: as the caller lists it
    assert {time: words for time, (words, kind) in prats.items() if kind != "FIS-SES"} == {
        time: f"{time} + libre · Revisión de fisioterapia" for time in ("09:15", "09:30", "09:45", "12:15", "12:30",
                                                                       "12:45")}  # the next type that fits, named
    assert listed(clinic_api, "PRATS", "FIS-REV") == [t for t in QUARTERS if not "10:00" <= t < "11:00"]
    assert "10:00" not in prats and "10:00 no cabe ninguna visita" in blocks(page, "unfit")
    assert "typeId=FIS-REV" in cell(page, "PRATS", "09:15")["href"]  # the booking page opens on the type that fits
    assert "typeId=FIS-SES" in cell(page, "PRATS", "09:00")["href"]


def test_a_session_is_not_offered_just_before_a_booked_visit_it_would_run_into(clinic_api, desk):
    book(clinic_api, "MUNOZ", "10:15", n=1)
    book(clinic_api, "PRATS", "10:15", "FIS-REV", n=2)
    page = desk.get(DAY)
    munoz = cells(page, "MUNOZ")
    assert [time for time in munoz if time < "11:15"] == ["09:00", "09:15"]  # 09:30 to 10:00 run into 10:15
    assert list(munoz) == listed(clinic_api, "MUNOZ")
    assert "09:30 no cabe ninguna visita" in blocks(page, "unfit")
    prats = cells(page, "PRATS")
    assert prats["10:00"] == ("10:00 + libre · Revisión de fisioterapia", "FIS-REV")  # 15 minutes fit before it
    assert prats["09:15"] == ("09:15 + libre", "FIS-SES")  # a session and its pause end at 10:15: it fits whole


def test_a_doctor_without_types_has_a_free_cell_of_the_grid_as_before(clinic_api, desk):
    book(clinic_api, "MARTIN", "09:30", n=1)
    martin = cells(desk.get(DAY), "MARTIN")
    assert martin == {"09:00": ("09:00 + libre", ""), "10:00": ("10:00 + libre", ""), "10:30": ("10:30 + libre", "")}
    assert list(martin) == listed(clinic_api, "MARTIN")


def test_the_keys_walk_only_what_the_server_drew_free(clinic_api, desk):
    book(clinic_api, "MUNOZ", "10:00", n=1)
    book(clinic_api, "SOLER", "10:00", n=2)
    page = desk.get(DAY)
    for unfit in page.html.select(".timeline .block.unfit"):
        assert unfit.name == "div" and not unfit.has_attr("data-slot") and not unfit.has_attr("href")
    assert all(a.name == "a" and "free" in a["class"] for a in page.html.select("[data-slot]"))
    script = desk.get("/desk/desk.js").text
    assert 'querySelectorAll(".timeline a[data-slot]")' in script and "a.free" not in script


def test_the_booking_page_says_why_a_visit_does_not_fit(clinic_api, desk):
    book(clinic_api, "MUNOZ", "10:00", n=1)
    book(clinic_api, "SOLER", "10:00", n=2)
    book(clinic_api, "PRATS", "11:30", "FIS-REV", n=3)

    def why(doctor, time, kind, **headers):
        page = desk.get(f"/desk/book?doctorId={doctor}&date=24/11/2026&time={time}&centerId=C1&typeId={kind}",
                        headers=headers)
        return " ".join(page.html.select_one("p.warning.why").text.split())

    boxes = why("PRATS", "10:00", "FIS-SES")
    assert boxes.startswith("Ese tipo de visita no cabe a esa hora. A esa hora no queda box libre para esa visita "
                            "(en uso: Box 1, Box 2). Cabe a las: 09:00")
    assert why("PRATS", "11:00", "FIS-SES").startswith(
        "Ese tipo de visita no cabe a esa hora. La visita (45 min y 15 min de pausa) llega a la cita de las 11:30: "
        "no cabe antes.")
    assert why("MUNOZ", "12:30", "FIS-SES").startswith(
        "Ese tipo de visita no cabe a esa hora. La visita (45 min y 15 min de pausa) se pasa del horario del médico, "
        "que acaba a las 13:00.")
    assert why("PRATS", "10:00", "FIS-SES", **{"Accept-Language": "en"}).startswith(
        "That visit type does not fit at that time. No box is free for that visit then (in use: Box 1, Box 2). "
        "It fits at: 09:00")


def booking_form(desk, doctor, time, kind):
    page = desk.get(f"/desk/book?doctorId={doctor}&date=24/11/2026&time={time}&centerId=C1&typeId={kind}")
    search = next(form for form in page.forms.values() if form.action == "/desk/book/search")
    search["q"] = valid_dni(9)
    found = search.submit()
    return next(form for form in found.forms.values() if form.action == "/desk/book" and "patientId" in form.fields)


def test_a_booking_refused_says_what_is_held_or_past_the_hours_the_callers_answer_unchanged(clinic_api, desk,
                                                                                           monkeypatch):
    clinic_api.new_patient(nif=valid_dni(9), phone="600000099")
    refused = booking_form(desk, "MUNOZ", "12:30", "FIS-SES").submit(expect_errors=True)
    assert refused.status_int == 409 and " ".join(refused.html.select_one("p.error").text.split()) == (
        "La visita (45 min y 15 min de pausa) se pasa del horario del médico, que acaba a las 13:00.")
    form = booking_form(desk, "PRATS", "10:00", "FIS-SES")
    book(clinic_api, "MUNOZ", "10:00", n=1)
    book(clinic_api, "SOLER", "10:00", n=2)  # both boxes taken while reception filled the form in
    said = form.submit(expect_errors=True)
    assert said.status_int == 409 and " ".join(said.html.select_one("p.error").text.split()) == (
        "A esa hora no queda box libre para esa visita (en uso: Box 1, Box 2).")
    bare = ClinicError("SLOT_NOT_AVAILABLE", "that slot is not free", reason="resource_taken")  # a race's answer
    monkeypatch.setattr(_agenda.desk.booking, "book_appointment", lambda *args, **kwargs: (_ for _ in ()).throw(bare))
    assert " ".join(form.submit(expect_errors=True).html.select_one("p.error").text.split()) == (
        "A esa hora no queda libre un box o máquina que necesita esa visita.")
    monkeypatch.undo()
    caller = clinic_api.post("/appointments", {"date": "24/11/2026", "time": "10:00", "doctorId": "PRATS",
                                               "patientId": clinic_api.new_patient(), "specialityId": "FIS-SES"})
    assert caller.status_int == 409 and set(caller.json["error"]) == {"code", "message", "reason"}
    assert caller.json["error"]["reason"] == "resource_taken"


def test_a_walk_in_takes_the_cell_under_way_while_it_fits_the_callers_window_unchanged(clinic_api, desk, clock):
    book(clinic_api, "MUNOZ", "10:45", n=1)
    clock.moment = dt.datetime(2026, 11, 24, 10, 0, 4, tzinfo=MADRID)  # the 10:00 cells began 4 seconds ago
    log_in(desk)  # two hours idle: the session had ended
    page = desk.get(DAY)
    assert cells(page, "MARTIN")["10:00"] == ("10:00 + libre", "")
    assert "10:00" in cells(page, "PRATS") and "10:00" not in cells(page, "MUNOZ")  # a session runs into 10:45
    assert cells(page, "PRATS")["10:00"] == ("10:00 + libre", "FIS-SES")
    window = clinic_api.app.clinic.window("desk")
    assert window.walk_in and not clinic_api.app.clinic.window("caller").walk_in
    assert "10:00" not in listed(clinic_api, "MARTIN")  # the caller's hour of notice, as before
    caller = clinic_api.post("/appointments", {"date": "24/11/2026", "time": "10:00", "doctorId": "MARTIN",
                                               "patientId": clinic_api.new_patient()})
    assert caller.json["error"]["reason"] == "too_soon"
    form = desk.get(cell(page, "MARTIN", "10:00")["href"]).forms
    new = form[len(form) - 1]
    new["name"], new["nif"], new["phone"] = "Eva", valid_dni(50), "600000050"
    assert new.submit().status_int == 303
    made = clinic_api.db().execute("SELECT time, end_time, booked_by FROM appointments WHERE doctor_id = 'MARTIN'"
                                   ).fetchall()
    assert [tuple(row) for row in made] == [("10:00", "10:30", "desk:ana")]
    clock.moment = dt.datetime(2026, 11, 24, 10, 14, 59, tzinfo=MADRID)
    assert "10:00" in cells(desk.get(DAY), "PRATS")  # until its end
    clock.moment = dt.datetime(2026, 11, 24, 10, 15, 0, tzinfo=MADRID)
    assert "10:00" not in cells(desk.get(DAY), "PRATS")  # a cell of 15 minutes: ended, past for everyone
    with pytest.raises(ClinicError) as ended:
        book(clinic_api, "PRATS", "10:00", n=2)
    assert ended.value.rule == "too_soon"


def test_each_visit_is_drawn_in_its_types_colour_with_a_legend(clinic_api, desk):
    book(clinic_api, "MUNOZ", "09:00", n=1)
    book(clinic_api, "PRATS", "09:00", "FIS-REV", n=2)
    book(clinic_api, "MARTIN", "09:00", n=3)
    page = desk.get(DAY)
    colours = {card.select_one(".who")["href"]: [c for c in card["class"] if c.startswith("vt")]
               for card in page.html.select(".timeline article.card")}
    assert sorted(colours.values()) == [[], ["vt0"], ["vt1"]]  # FIS-REV, FIS-SES: by sorted id; untyped: neutral
    assert page.html.select_one(".timeline article.card.vt1 .kind").text.startswith("Sesión de fisioterapia")
    legend = [(item.select_one(".swatch")["class"][1], " ".join(item.text.split()))
              for item in page.html.select("ul.legend li")]
    assert legend == [("vt0", "Revisión de fisioterapia"), ("vt1", "Sesión de fisioterapia"), ("vt-none", "sin tipo")]
    css = desk.get("/desk/desk.css").text
    assert all(f".vt{n} {{ --vt:" in css for n in range(8)) and ".vt-none" in css
    printed = css[css.rindex("@media print"):]
    assert "border-style: dashed" in printed and "border-style: dotted" in printed  # grey print tells them apart


def test_a_visit_booked_over_the_patients_other_visit_is_marked_and_links_it(clinic_api, desk):
    other = book(clinic_api, "MARTIN", "10:00", n=1)
    over = book(clinic_api, "PRATS", "10:00", "FIS-REV", n=1, accept_overlap=True)
    card = next(card for card in desk.get(DAY).html.select(".timeline article.card")
                if card.select_one(".who")["href"] == f"/desk/appointments/{over}")
    assert "overlap" in card["class"] and card.select_one(".overlap-mark").text == "Solapa con otra cita del paciente"
    plain = next(card for card in desk.get(DAY).html.select(".timeline article.card")
                 if card.select_one(".who")["href"] == f"/desk/appointments/{other}")
    assert plain.select_one(".overlap-mark") is None
    note = desk.get(f"/desk/appointments/{over}").html.select_one("p.overlap-note")
    assert note.select_one(".overlap-mark").text == "Solapa con otra cita del paciente"
    assert note.select_one(f'a[href="/desk/appointments/{other}"]').text == (
        "Ver su otra cita (24/11/2026 10:00, Lucía Martín)")
    assert desk.get(f"/desk/appointments/{other}").html.select_one("p.overlap-note") is None
