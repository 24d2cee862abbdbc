"""The front desk's day as reception works it, through webtest ("The day as time", "Attendance",
"To call", "Each channel's rules"): the time axis, the week, the counter's marks, the list to call,
the patient's and the appointment's pages, the refresh poll and the desk's words in Spanish.
The same in a real browser: test_desk_browser.py."""

import datetime as dt
import re

import pytest
import webtest

from test_desk import PASSWORD, events, log_in


@pytest.fixture
def desk(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    client = webtest.TestApp(api.app)
    assert log_in(client).status_int == 303
    return client


def words(element):
    """An element's text as one line, its parts apart."""
    return " ".join(element.get_text(" ").split())


def flash_of(answer):
    """The message a change leaves for the next page."""
    return answer.follow().html.find("p", class_="flash").text


def cards(page):
    """Each card on the time axis: (its CSS classes, its text in one line)."""
    return [(card["class"], " ".join(card.text.split())) for card in page.html.select(".timeline article.card")]


def free_blocks(page, doctor):
    return [" ".join(a.text.split()) for a in page.html.select(".timeline a.free") if f"doctorId={doctor}&" in a["href"]]


def test_the_day_draws_each_doctor_on_one_time_axis_with_its_own_grid(api, desk):
    api.book(api.new_patient(), date="24/11/2026", time="09:30")
    page = desk.get("/desk/day?date=24/11/2026&centerId=C1")
    heads = [" ".join(h.text.split()) for h in page.html.select(".timeline .col-head .name")]
    assert heads == ["Javier Ruiz (PED) · 20 min", "Lucía Martín (MG) · 30 min"]
    assert free_blocks(page, "MARTIN") == ["09:00 + libre", "10:00 + libre", "10:30 + libre"]
    assert free_blocks(page, "RUIZ") == ["09:00 + libre", "09:20 + libre", "09:40 + libre"]  # its own 20 minutes
    (classes, text), = cards(page)
    assert "booked" in classes and text.startswith("09:30 Ana García reservada") and "asistente telefónico" in text
    assert "h30" in classes  # it spans its 30 minutes on the axis, a row a minute...
    assert ".h30{grid-row-end:span30}" in desk.get("/desk/desk.css").text.replace(" ", "")  # ...as the CSS says
    ticks = [t.text for t in page.html.select(".timeline .tick")]
    assert ticks[0] == "09:00" and ticks[-1] == "10:45"
    assert page.html.find(id="now") is None  # not today: no line at now


def test_the_day_opens_at_now_and_offers_a_walk_in_into_the_slot_under_way_until_its_end(api, desk, clock):
    clock.set(2026, 11, 23, 9, 10)
    log_in(desk)
    page = desk.get("/desk/day?date=23/11/2026&centerId=C1")
    assert page.html.find(id="now").text == "09:10 ahora"
    assert free_blocks(page, "MARTIN") == ["09:00 + libre", "09:30 + libre", "10:00 + libre", "10:30 + libre"]
    caller = api.get("/availabilities?doctorId=MARTIN&date=23/11/2026").json["data"]
    assert [slot["time"] for slot in caller] == ["10:30"]  # the caller's hour of notice
    clock.set(2026, 11, 23, 9, 30)  # the 09:00 slot has ended: past
    page = desk.get("/desk/day?date=23/11/2026&centerId=C1")
    assert free_blocks(page, "MARTIN") == ["09:30 + libre", "10:00 + libre", "10:30 + libre"]
    assert "09:00 pasado" in " ".join(page.html.select_one(".timeline").text.split())


def test_the_doctor_filter_and_who_booked(api, desk):
    api.book(api.new_patient(), date="24/11/2026", time="09:00", doctor="RUIZ", insuranceId="PRIV")
    page = desk.get("/desk/day?date=24/11/2026&centerId=C1")
    form = page.forms[[f.action for f in page.forms.values()].index("/desk/day")]
    form["doctorId"] = "MARTIN"
    filtered = form.submit()
    assert [" ".join(h.text.split()) for h in filtered.html.select(".timeline .col-head .name")] == [
        "Lucía Martín (MG) · 30 min"]
    slot = desk.get("/desk/book?doctorId=MARTIN&date=24/11/2026&time=10:00&centerId=C1")
    new = slot.forms[len(slot.forms) - 1]
    for field, value in {"name": "Eva", "surname": "Sanz", "nif": "11111111H", "phone": "612000111"}.items():
        new[field] = value
    new.submit()
    by = [" ".join(span.text.split()) for span in desk.get("/desk/day?date=24/11/2026&centerId=C1").html.select(".card .by")]
    assert by == ["asistente telefónico", "ana"]


def test_marking_arrival_seen_and_no_show_is_the_desks_own_record(api, desk, clock):
    first = api.book(api.new_patient(), date="23/11/2026", time="09:30")
    later = api.book(api.new_patient(nif="10000001S"), date="24/11/2026", time="09:30")
    clock.set(2026, 11, 23, 9, 27)
    log_in(desk)
    csrf = desk.get("/desk/day").html.find("input", attrs={"name": "csrf"})["value"]
    arrived = desk.post(f"/desk/appointments/{first}/attendance", {"csrf": csrf, "mark": "arrived"})
    assert flash_of(arrived) == "Ana García: ● llegó 09:27."
    assert "● llegó 09:27" in cards(desk.get("/desk/day?date=23/11/2026&centerId=C1"))[0][1]
    seen = desk.post(f"/desk/appointments/{first}/attendance", {"csrf": csrf, "mark": "seen"})
    assert flash_of(seen) == "Ana García: ✔ atendido."
    undone = desk.post(f"/desk/appointments/{first}/attendance", {"csrf": csrf, "mark": ""})
    assert flash_of(undone) == "Ana García: deshecho."
    assert api.get(f"/appointments/{first}").json["extraData"] == {
        "status": "booked", "specialityId": "MG", "insuranceId": None, "duration": 30}
    tomorrow = desk.post(f"/desk/appointments/{later}/attendance", {"csrf": csrf, "mark": "no_show"},
                         expect_errors=True)
    assert tomorrow.status_int == 409 and "márcala el día de la cita" in tomorrow.text  # in Spanish, not the API's English
    odd = desk.post(f"/desk/appointments/{first}/attendance", {"csrf": csrf, "mark": "late"}, expect_errors=True)
    assert odd.status_int == 400
    assert [source for source, _ in events(api, "appointment.arrived")] == ["desk:ana"]
    assert events(api, "appointment.seen") == [("desk:ana", str(first))]
    assert events(api, "appointment.attendance_undone") == [("desk:ana", str(first))]


def test_the_week_of_a_center_counts_and_draws_its_appointments_and_of_a_doctor_draws(api, desk):
    api.book(api.new_patient(), date="24/11/2026", time="09:30")
    week = desk.get("/desk/week?date=26/11/2026&centerId=C1")
    days = [words(section) for section in week.html.select(".week-grid section.week-day")]
    assert days[1] == "mar 24/11 Javier Ruiz 0 citas · 3 libres Lucía Martín 1 cita · 3 libres" \
        " 09:30 Ana García Lucía Martín reservada"
    assert days[2] == "mié 25/11 Javier Ruiz 0 citas · 3 libres Lucía Martín 0 citas · 0 libres"  # her holiday
    assert days[6] == "dom 29/11 sin consulta"
    doctor = desk.get("/desk/week?date=26/11/2026&doctorId=MARTIN")
    heads = [h.text for h in doctor.html.select(".timeline .col-head .name")]
    assert heads[0] == "lun 23/11" and heads[-1] == "sáb 28/11"  # Saturday at Norte; no Sunday
    assert "cerrado: Vacaciones" in " ".join(doctor.html.select_one(".timeline").text.split())
    assert desk.get("/desk/week?date=26/11/2026&doctorId=NOBODY", expect_errors=True).status_int == 404


def test_a_closure_puts_its_appointments_on_the_list_to_call_until_each_is_moved(api, desk):
    booked = api.book(api.new_patient(), date="24/11/2026", time="09:30")
    csrf = desk.get("/desk/closures").html.find("input", attrs={"name": "csrf"})["value"]
    fields = {"csrf": csrf, "doctorId": "MARTIN", "dateFrom": "24/11/2026", "reason": "Congreso", "confirmed": "1"}
    assert flash_of(desk.post("/desk/closures", fields)) == "Cierre guardado."
    calls = desk.get("/desk/calls")
    assert [words(tr) for tr in calls.html.select("tbody tr")] == [
        "24/11/2026 09:30 Lucía Martín Ana García 612 34 56 78 Revisión"]
    assert "to-call" in cards(desk.get("/desk/day?date=24/11/2026&centerId=C1"))[0][0]
    assert api.get("/appointments?date=24/11/2026").json["data"] == []
    assert "☎ llamar" in " ".join(desk.get(f"/desk/appointments/{booked}").html.find("dl").text.split())
    desk.post(f"/desk/appointments/{booked}/move", {"csrf": csrf, "slot": "26/11/2026|09:00|MARTIN|C1"})
    assert desk.get("/desk/calls").html.select("tbody tr") == []


def test_the_patients_page_corrects_details_and_lists_every_appointment(api, desk, clock):
    patient = api.new_patient()
    api.new_patient(nif="10000001S", name="Pablo")
    gone = api.book(patient, date="24/11/2026", time="09:00")
    api.delete(f"/appointments/{gone}")
    api.book(patient, date="24/11/2026", time="10:00")
    page = desk.get(f"/desk/patients/{patient}")
    headings = [h.text for h in page.html.find_all("h2")]
    assert headings == ["Próximas", "Pasadas", "Anuladas"]
    assert "24/11/2026 09:00" in page.html.find_all("ul")[-1].text
    edit = page.forms[[f.action for f in page.forms.values()].index(f"/desk/patients/{patient}")]
    edit["phone"], edit["birthDate"] = "+34 699 888 777", "31/02/1980"
    refused = edit.submit(expect_errors=True)
    assert refused.status_int == 400 and refused.html.find("p", class_="error").text.startswith("Nacimiento")
    assert refused.html.find("input", attrs={"name": "phone"})["value"] == "+34 699 888 777"  # kept as typed
    edit = refused.forms[[f.action for f in refused.forms.values()].index(f"/desk/patients/{patient}")]
    edit["birthDate"], edit["nif"] = "01/02/1980", "10000001S"
    taken = edit.submit(expect_errors=True)
    assert taken.status_int == 409 and taken.html.find("p", class_="error").text == "Ya hay un paciente con ese NIF."
    edit = taken.forms[[f.action for f in taken.forms.values()].index(f"/desk/patients/{patient}")]
    edit["nif"] = "12345678Z"
    assert flash_of(edit.submit()) == "Datos de Ana García guardados."
    assert api.get("/patients?nif=12345678Z").json["phone"] == "+34699888777"
    assert [source for source, _ in events(api, "patient.rectified")] == ["desk:ana"]


def test_a_cancelled_appointments_page_says_when_by_whom_and_why(api, desk):
    booked = api.book(api.new_patient(), date="24/11/2026", time="09:00", insuranceId="SAN")
    api.delete(f"/appointments/{booked}")
    page = desk.get(f"/desk/appointments/{booked}")
    warning = page.html.find("p", class_="warning").text
    assert warning.startswith("Anulada el 23/11/2026 08:00 por asistente telefónico")
    details = " ".join(page.html.find("dl").text.split())
    for shown in ("Centro", "Lucía Martín (MG)", "12345678Z", "09:00–09:30", "Sanitas"):
        assert shown in details
    assert not [f for f in page.forms.values() if f.action.startswith("/desk/appointments/")]  # nothing left to do
    history = [words(tr) for tr in page.html.select("table:not(.messages) tbody tr")]
    assert [row.split(" ", 2)[2] for row in history] == ["asistente telefónico reservada",
                                                         "asistente telefónico anulada"]


def test_the_refresh_poll_reads_a_version_and_never_keeps_the_session_alive(api, desk, clock):
    before = desk.get("/desk/version").json["version"]
    api.book(api.new_patient(), date="24/11/2026", time="09:00")
    assert desk.get("/desk/version").json["version"] > before
    assert desk.get("/desk/day").html.body["data-version"] == str(desk.get("/desk/version").json["version"])
    for _ in range(4):  # polled every few seconds for 32 minutes, nothing else done
        clock.moment += dt.timedelta(minutes=8)
        assert desk.get("/desk/version", expect_errors=True).status_int in (200, 401, 303)
    assert desk.get("/desk/day").status_int == 303  # the session ended at its idle time all the same


def test_the_desk_asks_for_an_insurance_where_the_doctor_has_a_list(api, desk):
    patient = api.new_patient()
    page = desk.get(f"/desk/book?doctorId=RUIZ&date=24/11/2026&time=09:00&centerId=C1&patientId={patient}")
    chosen = page.forms[[f.action for f in page.forms.values()].index("/desk/book")]
    assert [value for value, _, _ in chosen.fields["insuranceId"][0].options] == ["", "PRIV", "SAN"]
    missing = chosen.submit(expect_errors=True)
    assert missing.status_int == 400 and "aseguradoras" in missing.html.find("p", class_="error").text
    refused = desk.post("/desk/book", {**{k: v for k, v in chosen.submit_fields()}, "insuranceId": "DKV"},
                        expect_errors=True)
    assert refused.status_int == 409 and "no atiende" in refused.html.find("p", class_="error").text
    chosen["insuranceId"] = "PRIV"
    chosen.submit()
    assert api.get("/appointments?date=24/11/2026").json["data"][0]["extraData"]["insuranceId"] == "PRIV"


def test_the_insurance_starts_on_the_one_of_the_patients_latest_visit_where_the_doctor_takes_it(api, desk):
    """Reception books a returning patient with the insurance they came with last time: one key fewer a field."""
    returning, new, elsewhere = api.new_patient(), api.new_patient(nif="00000001R"), api.new_patient(nif="00000002W")
    api.book(returning, date="24/11/2026", time="09:00", doctor="RUIZ", insuranceId="PRIV")
    api.book(returning, date="26/11/2026", time="09:00", doctor="RUIZ", insuranceId="SAN")  # the latest
    api.book(elsewhere, date="24/11/2026", time="09:30", doctor="MARTIN", insuranceId="DKV")  # RUIZ does not take it

    def starts_on(patient):
        page = desk.get(f"/desk/book?doctorId=RUIZ&date=27/11/2026&time=09:00&centerId=C1&patientId={patient}")
        chosen = page.forms[[f.action for f in page.forms.values()].index("/desk/book")]
        return chosen, chosen.fields["insuranceId"][0].value

    assert [starts_on(patient)[1] for patient in (returning, new, elsewhere)] == ["SAN", "", ""]
    chosen, _ = starts_on(returning)
    chosen.submit()
    assert api.get("/appointments?date=27/11/2026").json["data"][0]["extraData"]["insuranceId"] == "SAN"
    kept = desk.post("/desk/book", {**dict(starts_on(returning)[0].submit_fields()), "insuranceId": "PRIV",
                                    "time": "09:20", "reason": "x" * 5000}, expect_errors=True)
    assert kept.status_int == 400 and "PRIV" in [option["value"] for option in kept.html.select(
        "select[name=insuranceId] option[selected]")]  # what reception chose is kept after a refusal


def test_every_refusal_on_the_desk_is_in_spanish(api, desk):
    csrf = desk.get("/desk/closures").html.find("input", attrs={"name": "csrf"})["value"]
    bad = desk.post("/desk/closures", {"csrf": csrf, "dateFrom": "31/02/2027"}, expect_errors=True)
    error = bad.html.find("p", class_="error").text
    assert bad.status_int == 400 and "Desde" in error and not re.search(r"\b(is|must|not a)\b", error)
    assert bad.html.find("input", attrs={"name": "dateFrom"})["value"] == "31/02/2027"
    book = desk.post("/desk/book", {"csrf": csrf, "doctorId": "MARTIN", "date": "24/11/2026", "time": "09:00",
                                    "centerId": "C1", "name": "Eva", "nif": "12345678A"}, expect_errors=True)
    error = book.html.find("p", class_="error").text
    assert book.status_int == 400 and "NIF" in error and "valid" not in error


def test_removing_a_closure_asks_first(api, desk):
    csrf = desk.get("/desk/closures").html.find("input", attrs={"name": "csrf"})["value"]
    desk.post("/desk/closures", {"csrf": csrf, "doctorId": "MARTIN", "dateFrom": "26/11/2026", "reason": "Navidad"})
    closure_id = api.db().execute("SELECT max(id) FROM closures").fetchone()[0]
    asked = desk.get(f"/desk/closures/{closure_id}/remove")
    assert asked.html.h1.text == "¿Quitar el cierre «Navidad»?" and "Lucía Martín · Todos los centros" in asked.text
    assert api.db().execute("SELECT count(*) FROM closures WHERE id = ?", (closure_id,)).fetchone()[0] == 1
    assert flash_of(asked.forms[len(asked.forms) - 1].submit()) == "Cierre quitado."
    assert desk.get(f"/desk/closures/{closure_id}/remove", expect_errors=True).status_int == 404


def test_the_printed_day_has_a_table_a_doctor_under_its_heading(api, desk):
    api.book(api.new_patient(), date="24/11/2026", time="09:30")
    page = desk.get("/desk/day?date=24/11/2026&centerId=C1")
    tables = page.html.select("section.printed table.print-day")
    assert [words(t.thead.tr) for t in tables] == [
        "Agenda · Centro · mar 24/11/2026 · Javier Ruiz (PED)", "Agenda · Centro · mar 24/11/2026 · Lucía Martín (MG)"]
    assert words(tables[1].tbody) == "09:30–10:00 Ana García 612 34 56 78 Revisión reservada"
    assert not tables[0].find("a") and not tables[1].find("a")


def csrf_of(page):
    return page.html.find("input", attrs={"name": "csrf"})["value"]


def test_a_form_sent_after_the_session_ended_is_kept_for_its_sender_across_the_login(api, desk, clock, db_path):
    """"Kept forms": on the server, for the same staff name, 10 minutes; never in an address."""
    api.app.accounts.add_staff("bea", PASSWORD)
    page = desk.get("/desk/book?doctorId=MARTIN&date=24/11/2026&time=09:00&centerId=C1")
    typed = {"csrf": csrf_of(page), "doctorId": "MARTIN", "date": "24/11/2026", "time": "09:00", "centerId": "C1",
             "name": "Evarista", "surname": "Quintanilla", "nif": "12345678Z", "phone": "612345678",
             "reason": "Control de tensión"}
    clock.moment += dt.timedelta(minutes=31)  # the session ends while she types
    sent = desk.post("/desk/book", typed)
    assert sent.status_int == 303 and sent.headers["Location"].startswith("/desk/login?kept=")
    assert not [v for v in ("Evarista", "12345678Z", "612345678") if v in sent.headers["Location"]]
    assert api.db().execute("SELECT count(*) FROM appointments").fetchone()[0] == 0  # nothing booked yet
    login = sent.follow()
    assert "Lo que escribiste se guarda 10 minutos" in login.text
    kept = login.forms[0]["kept"].value
    other = webtest.TestApp(api.app)  # bea, with the same address, gets nothing and leaves it for ana
    assert log_in(other, name="bea").status_int == 303
    assert other.get(f"/desk/kept/{kept}", expect_errors=True).status_int == 404
    form = login.forms[0]
    form["name"], form["password"] = "ana", PASSWORD
    back = form.submit()
    assert back.headers["Location"] == f"/desk/kept/{kept}"
    offered = back.follow()
    assert "Quintanilla" in offered.text and "Control de tensión" in offered.text
    booked = offered.forms[len(offered.forms) - 1].submit()
    assert flash_of(booked) == "Cita de Evarista Quintanilla reservada el 24/11/2026 a las 09:00. No se enviará ningún correo: el paciente no tiene correo."
    assert desk.get(f"/desk/kept/{kept}", expect_errors=True).status_int == 404  # once only
    assert api.db().execute("SELECT count(*) FROM kept_forms").fetchone()[0] == 0


def test_a_kept_form_is_gone_after_ten_minutes_and_a_forged_one_is_never_kept(api, desk, clock):
    page = desk.get("/desk/closures")
    clock.moment += dt.timedelta(minutes=31)
    forged = desk.post("/desk/closures", {"csrf": "forged", "dateFrom": "26/11/2026"})
    assert forged.headers["Location"] == "/desk/login"  # not its session's token: nothing kept
    log_in(desk)
    page = desk.get("/desk/closures")
    clock.moment += dt.timedelta(minutes=31)
    sent = desk.post("/desk/closures", {"csrf": csrf_of(page), "dateFrom": "26/11/2026", "reason": "Congreso"})
    kept = sent.headers["Location"].split("kept=")[1]
    clock.moment += dt.timedelta(minutes=11)
    login = desk.get(f"/desk/login?kept={kept}")
    form = login.forms[0]
    form["name"], form["password"] = "ana", PASSWORD
    gone = form.submit().follow(expect_errors=True)
    assert gone.status_int == 404 and "ya no está guardado" in gone.text
    assert api.db().execute("SELECT count(*) FROM kept_forms").fetchone()[0] == 0
    assert api.db().execute("SELECT count(*) FROM closures WHERE reason = 'Congreso'").fetchone()[0] == 0


def test_a_form_outlives_the_other_tabs_that_reach_the_server_after_the_session_ended(api, desk, clock):
    """Another tab's refresh poll and a page reloaded there come first; the form sent after them is kept."""
    page = desk.get("/desk/closures")
    clock.moment += dt.timedelta(minutes=31)  # the session ends
    assert desk.get("/desk/version", expect_errors=True).status_int == 303  # the other tab's poll
    assert desk.get("/desk/day", expect_errors=True).headers["Location"] == "/desk/login"  # and a reload
    clock.moment += dt.timedelta(minutes=5)
    sent = desk.post("/desk/closures", {"csrf": csrf_of(page), "dateFrom": "26/11/2026", "reason": "Congreso"})
    assert sent.headers["Location"].startswith("/desk/login?kept=")
    clock.moment += dt.timedelta(minutes=6)  # ended 11 minutes ago: no longer kept
    late = desk.post("/desk/closures", {"csrf": csrf_of(page), "dateFrom": "27/11/2026", "reason": "Tarde"})
    assert late.headers["Location"] == "/desk/login"
    assert desk.get("/desk/day", expect_errors=True).headers["Location"] == "/desk/login"  # the session stays ended
    log_in(desk)
    assert api.db().execute("SELECT count(*) FROM desk_sessions").fetchone()[0] == 1  # the ended one cleared
