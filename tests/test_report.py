"""The clinic at a glance (docs/design.md, "The clinic at a glance"): per doctor and week the slots
offered, booked and free, no-shows and late cancellations; reminder answers and who booked by week; how
far ahead patients book. The admin's page (SVG charts with their tables) and `agenda report`."""

import base64
import datetime as dt
import re
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain.counter import mark_attendance
from _agenda.domain.report import clinic_report
from _agenda.domain.changes import book_appointment

from conftest import MONDAY, Clock, valid_dni
from test_desk import admin_and_reception

WEEK = dt.date(2026, 11, 23)


@pytest.fixture
def a_week(api, clock):
    """Monday 23/11's week: three bookings of the voice agent and one of the desk; a confirmation; on
    Tuesday a no-show; on Wednesday a cancellation of Thursday's, less than a day before."""
    clinic = api.app.clinic
    ana = api.new_patient()
    first = api.book(ana, time="09:00")
    api.book(api.new_patient(nif=valid_dni(1)), time="09:30")
    late = api.book(api.new_patient(nif=valid_dni(2)), date="26/11/2026", time="10:00")
    book_appointment(clinic, Visit(patient_id=ana, doctor_id="MARTIN"), day=dt.date(2026, 11, 24), time_text="10:30",
                     source="desk:ana")
    api.post("/appointments/confirm", {"appointmentId": first, "confirmed": True})
    clock.set(2026, 11, 24, 9, 45)
    mark_attendance(clinic, first, "no_show", "desk:ana")
    clock.set(2026, 11, 25, 12, 0)
    api.delete(f"/appointments/{late}")
    return api


def test_the_report_counts_a_week_as_the_clinic_lived_it(a_week):
    found = clinic_report(a_week.app.clinic, WEEK, WEEK + dt.timedelta(days=6))
    assert found["weeks"] == [WEEK]
    by_id = {d["id"]: d for d in found["doctors"]}
    # MARTIN: 4 slots a weekday but her holiday on Wednesday, and 2 on Saturday at Norte
    assert by_id["MARTIN"]["weeks"][WEEK] == {"offered": 18, "booked": 3, "free": 15, "no_shows": 1, "late_cancels": 1,
                                                  "offered_minutes": 540, "booked_minutes": 90}
    assert by_id["MARTIN"]["totals"]["filled"] == 17
    assert by_id["RUIZ"]["totals"]["offered"] == 15 and by_id["NUNEZ"]["totals"]["offered"] == 4
    assert found["reminders"][WEEK] == {"confirmed": 1, "declined": 0, "unanswered": 0, "released": 0}
    assert found["sources"][WEEK] == {"agent": 3, "desk": 1}
    assert found["lead"] == {"same_day": 0, "week": 4, "month": 0, "quarter": 0, "later": 0}


def test_a_report_is_at_most_half_a_year_and_ends_after_it_starts(api):
    for first, last in ((WEEK, WEEK - dt.timedelta(days=1)), (WEEK, WEEK + dt.timedelta(days=200))):
        with pytest.raises(agenda.ClinicError):
            clinic_report(api.app.clinic, first, last)


def svg_of(img):
    assert img["src"].startswith("data:image/svg+xml;base64,")
    return base64.b64decode(img["src"].split(",", 1)[1]).decode("utf-8")


def assert_nothing_runs(svg):
    """No script in a chart: no <script> element (pygal writes one of its own), no event handler, no link."""
    elements = list(ET.fromstring(svg).iter())
    assert [e.tag for e in elements if e.tag.rsplit("}", 1)[-1].lower() == "script"] == []
    assert [name for e in elements for name in e.attrib if re.search(r"^on|href$", name.rsplit("}", 1)[-1], re.I)] == []
    assert not re.search(r"<script|javascript:|window\.pygal", svg, re.IGNORECASE)


def test_pygal_alone_writes_a_script_into_a_chart_and_ours_never_do(api):
    """pygal with js=[] still writes its config in a <script>: the check above would see it."""
    import pygal
    from _agenda.desk.charts import OPTIONS, report_charts
    from _agenda.words.texts import translator
    bare = pygal.Bar(**OPTIONS)
    bare.add("a", [1])
    with pytest.raises(AssertionError):
        assert_nothing_runs(bare.render(is_unicode=True))
    report = clinic_report(api.app.clinic, WEEK, WEEK + dt.timedelta(days=6))
    for uri in report_charts(report, translator("en")).values():
        assert_nothing_runs(base64.b64decode(uri.split(",", 1)[1]).decode("utf-8"))


def test_the_admins_page_draws_each_chart_as_svg_with_its_numbers_beside_it(a_week):
    admin, reception = admin_and_reception(a_week)
    page = admin.get("/desk/report?from=23/11/2026&to=29/11/2026")
    images = page.html.select("section.chart img")
    assert [img["alt"] for img in images] == ["Ocupación de cada médico (%)", "Respuestas a los recordatorios, por semana",
                                              "Quién reserva, por semana", "Con cuánta antelación se reserva"]
    for img in images:
        svg = svg_of(img)
        ET.fromstring(svg)  # a whole SVG document
        assert img["alt"] in svg
        assert_nothing_runs(svg)
    first_table = [" ".join(tr.get_text(" ").split()) for tr in page.html.select("section.chart")[0].select("tbody tr")]
    assert "Lucía Martín 18 3 15 17 1 1 540 90" in first_table
    assert "img-src 'self' data:" in page.headers["Content-Security-Policy"]
    assert reception.get("/desk/report", status=403)


def test_agenda_report_prints_the_weeks_and_writes_them_for_a_spreadsheet(a_week, db_path):
    runner = CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})
    args = ["report", "--from", "23/11/2026", "--to", "29/11/2026"]
    text = runner.invoke(agenda.cli, args, obj={"now": Clock(MONDAY)})
    assert text.exit_code == 0, text.output
    assert "MARTIN Lucía Martín: 3/18 booked (17%), 15 free, 1 no-shows, 1 late cancellations; 90 of 540 minutes " \
           "booked" in text.output and "Medicina general: 3 visits, 90 minutes" in text.output
    assert "Week of 23/11/2026: reminders 1 confirmed, 0 declined, 0 unanswered, 0 released; booked by the voice " \
           "agent 3, by reception 1" in text.output
    sheet = runner.invoke(agenda.cli, args + ["--csv"], obj={"now": Clock(MONDAY)})
    lines = sheet.output.splitlines()
    assert lines[0] == ('"doctor","week","offered","booked","free","filledPercent","noShows","lateCancellations",'
                        '"offeredMinutes","bookedMinutes"')
    assert '"MARTIN","2026-11-23","18","3","15","17","1","1","540","90"' in lines
    assert re.search(r"late cancellations", text.output)


def test_a_week_with_no_mark_and_no_cancellation_counts_zeros(api):
    api.book(api.new_patient())
    martin = {d["id"]: d for d in clinic_report(api.app.clinic, WEEK, WEEK)["doctors"]}["MARTIN"]
    assert martin["weeks"][WEEK] == {"offered": 18, "booked": 1, "free": 17, "no_shows": 0, "late_cancels": 0,
                                      "offered_minutes": 540, "booked_minutes": 30}
