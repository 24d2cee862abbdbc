"""A booked visit lengthened or shortened at the desk ("Drag to move, and to lengthen"): through the one door as the
channel 'desk relength', at its own start, its holds re-derived, unconfirmed, one update to the patient and an event;
refused in the desk's words, changing nothing, where it does not fit (the next visit, the doctor's hours, the
patient's other visit, the machine held); the length form on the appointment's page, through webtest."""

import datetime as dt

import pytest
import webtest

from agenda import ClinicError
from _agenda.domain import booking
from _agenda.domain.changes import change_length
from _agenda.domain.counter import squeeze_in
from _agenda.domain.fitting import why_not_length
from _agenda.domain.booking import Visit

from test_booking import Recorded, unchanged
from test_desk import PASSWORD, log_in
from test_visit_details import actions, booked, clinic, row, updates  # noqa: F401 (clinic: a fixture)

TUESDAY = dt.date(2026, 11, 24)  # the day `booked` books


def holds(api, appointment):
    return [tuple(hold) for hold in api.db().execute(
        "SELECT resource_id, time, until FROM holds WHERE appointment_id = ?", (appointment,))]


def test_a_length_that_fits_goes_through_the_door_unconfirmed_with_one_update_and_its_event(clinic, monkeypatch):
    api, _ = clinic
    appointment = booked(api, confirmed=True)
    recorded = Recorded(booking.CHANNELS)
    monkeypatch.setattr(booking, "CHANNELS", recorded)
    after = change_length(api.app.clinic, appointment, 45, source="desk:ana")
    assert (after["time"], after["end_time"], after["type_id"], after["status"], after["confirmed_at"]) == (
        "09:00", "09:45", "MG-REV", "booked", None)
    assert recorded.asked == ["desk relength"] and updates(api, appointment) == 1
    assert actions(api, appointment)[-1] == ("appointment.length_changed", "desk:ana")
    assert change_length(api.app.clinic, appointment, "45", source="desk:ana")["end_time"] == "09:45"
    assert updates(api, appointment) == 1 and len(actions(api, appointment)) == 2  # the same length: nothing
    assert change_length(api.app.clinic, appointment, 15, source="desk:ana")["end_time"] == "09:15"  # shortened
    assert updates(api, appointment) == 2


def test_a_visit_needing_a_machine_holds_it_for_its_new_length(clinic):
    api, _ = clinic
    appointment = booked(api, kind="MG-ECO")
    assert holds(api, appointment) == [("C1-ECO", "09:00", "09:20")]
    change_length(api.app.clinic, appointment, 45, source="desk:ana")
    assert holds(api, appointment) == [("C1-ECO", "09:00", "09:45")]
    change_length(api.app.clinic, appointment, 15, source="desk:ana")
    assert holds(api, appointment) == [("C1-ECO", "09:00", "09:15")]


def refused(api, db_path, appointment, minutes):
    before = unchanged(db_path)
    with pytest.raises(ClinicError) as refusal:
        change_length(api.app.clinic, appointment, minutes, source="desk:ana")
    assert unchanged(db_path) == before
    return refusal.value.code, refusal.value.rule


def test_a_length_that_does_not_fit_is_refused_each_way_changing_nothing(clinic, db_path):
    api, _ = clinic
    eva = api.new_patient(nif="00000001R", name="Eva")
    into_the_next = booked(api)
    booked(api, time="09:30", patient=eva)
    assert refused(api, db_path, into_the_next, 45) == ("SLOT_NOT_AVAILABLE", "taken")
    at_the_end = booked(api, time="10:45", patient=eva)
    assert refused(api, db_path, at_the_end, 30) == ("SLOT_NOT_AVAILABLE", "off_grid")  # the hours end at 11:00
    with_gil = booked(api, time="10:00", doctor="GIL", patient=eva)
    elsewhere = booked(api, time="09:45", patient=eva)
    assert refused(api, db_path, elsewhere, 30) == ("SLOT_NOT_AVAILABLE", "patient_elsewhere") and with_gil
    scan = booked(api, time="10:00", kind="MG-ECO", patient=api.new_patient(nif="00000002W", name="Iker"))
    booked(api, time="10:30", doctor="GIL", kind="MG-ECO", patient=api.new_patient(nif="00000003A", name="Luz"))
    assert refused(api, db_path, scan, 40) == ("SLOT_NOT_AVAILABLE", "resource_taken")  # the one machine, GIL's then
    for wrong in ("", "treinta", "0", "4", "481", "-15", "30.5"):
        assert refused(api, db_path, into_the_next, wrong) == ("INVALID_REQUEST", "length")


def test_a_sobrecita_keeps_its_length(clinic, db_path):
    api, _ = clinic
    booked(api)
    squeezed = squeeze_in(api.app.clinic, Visit(api.new_patient(nif="00000001R", name="Eva"), "MARTIN",
                                                insurance_id="PRIV"), day=TUESDAY, time_text="09:05", source="desk:ana")
    assert refused(api, db_path, squeezed, 30) == ("INVALID_REQUEST", "squeezed_length")


def length_form(desk, appointment):
    page = desk.get(f"/desk/appointments/{appointment}")
    return page, next(form for form in page.forms.values() if form.action.endswith("/length"))


def test_the_length_form_offers_the_grids_steps_to_the_hours_end_and_changes_it(clinic):
    api, desk = clinic
    appointment = booked(api, time="10:00")
    _, form = length_form(desk, appointment)
    assert [value for value, _, _ in form["minutes"].options] == ["15", "30", "45", "60"] and form["minutes"].value == "15"
    form["minutes"] = "45"
    page = form.submit().follow()
    assert page.html.find(class_="flash").text.startswith("Duración de la cita cambiada a 45 min. ")
    assert row(api, appointment)["end_time"] == "10:45" and "duración cambiada" in page.html.find(
        "h2", string="Historial").find_next("table").text
    assert length_form(desk, appointment)[1]["minutes"].value == "45"


@pytest.mark.parametrize("minutes, words", [("45", "llega a la cita de las 09:30"),
                                            ("60", "llega a la cita de las 09:30"),
                                            ("30", "Esa persona ya tiene otra cita a esa hora.")])
def test_a_length_refused_on_the_form_says_why_beside_it_keeping_what_was_chosen(clinic, db_path, minutes, words):
    api, desk = clinic
    ana = api.new_patient(email="ana@example.com")
    appointment = booked(api, patient=ana)
    booked(api, time="09:30", patient=api.new_patient(nif="00000001R", name="Eva"))
    if minutes == "30":
        booked(api, time="09:15", doctor="GIL", patient=ana)  # her other visit then
    before = unchanged(db_path)
    _, form = length_form(desk, appointment)
    form["minutes"] = minutes
    page = form.submit(expect_errors=True)
    assert page.status_int == 409 and words in page.html.find(class_="error").text, page.html.find(class_="error")
    assert next(form for form in page.forms.values() if form.action.endswith("/length"))["minutes"].value == minutes
    assert next(form for form in page.forms.values() if form.action.endswith("/details"))["reason"].value == \
        "Revisión"  # the visit's details as they are, not emptied by a form that did not send them
    assert unchanged(db_path) == before


def test_a_machine_held_and_the_hours_end_are_said_in_the_desks_words(clinic, db_path):
    api, desk = clinic
    scan = booked(api, time="10:00", kind="MG-ECO")
    booked(api, time="10:30", doctor="GIL", kind="MG-ECO", patient=api.new_patient(nif="00000003A", name="Luz"))
    for minutes, words in (("45", "Ecógrafo"), ("75", "se pasa del horario del médico, que acaba a las 11:00")):
        _, form = length_form(desk, scan)
        form["minutes"].force_value(minutes)  # sent by hand, or by a drag past the hours
        page = form.submit(expect_errors=True)
        assert page.status_int == 409 and words in page.html.find(class_="error").text
    assert holds(api, scan) == [("C1-ECO", "10:00", "10:20")]


def test_the_day_and_a_doctors_week_say_where_a_drop_may_start_a_visit(api):
    """Each column head carries its doctor, day, step and the starts of its grid, a run a center; each card its place
    and length in its classes: what drag.js sends the move and length forms (the week's days at their own centers),
    in a few bytes a column and none a card (a center's busy day stays small)."""
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    log_in(desk)
    booked_at = api.book(api.new_patient(), date="24/11/2026", time="09:30")
    week = desk.get("/desk/week?date=24/11/2026&doctorId=MARTIN").html
    heads = {head["data-date"]: head for head in week.select(".timeline .col-head")}
    assert {head["data-doctor"] for head in heads.values()} == {"MARTIN"} and heads["28/11/2026"]["data-step"] == "30"
    assert heads["28/11/2026"]["data-starts"] == "C2|10:00|10:30|30"  # Saturdays at Norte, from 10:00 to 10:30
    assert heads["24/11/2026"]["data-starts"] == "C1|09:00|10:30|30"
    day = desk.get("/desk/day?date=24/11/2026&centerId=C1").html
    card = day.select_one(".timeline article.card")  # where and how long in its grid classes, which by its link
    assert day.select_one(".timeline")["data-first"] == str(9 * 60) and {"r32", "h30"} <= set(card["class"])
    assert card.select_one("a.who")["href"] == f"/desk/appointments/{booked_at}"
    assert desk.get("/desk/drag.js").content_type == "text/javascript"


def test_a_visit_whose_type_the_doctor_no_longer_offers_there_is_refused_a_length_as_the_form_says(clinic, db_path):
    """The form and the door agree (the holds' state machine found them apart): a visit whose type its doctor stopped
    offering where it is (a catalog reloaded, an import) is refused another length, as a move there would be."""
    api, _ = clinic
    appointment = booked(api)
    with api.app.clinic.db.transaction() as conn:  # the catalog reloaded: Martín no longer offers MG-REV at C1
        conn.execute("DELETE FROM doctor_types WHERE doctor_id = 'MARTIN' AND type_id = 'MG-REV'")
    assert why_not_length(api.app.clinic, appointment, 45)[1].reason == "type_not_offered"
    assert refused(api, db_path, appointment, 45) == ("INVALID_REQUEST", "type_not_offered")
