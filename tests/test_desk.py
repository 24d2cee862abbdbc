"""The staff desk at /desk (docs/design.md, "Staff desk"), through webtest: accounts and
sessions, CSRF, the day view and every action, each obeying the clinic's rules and recorded
as an event from desk:NAME. The same flows in a real browser: test_desk_browser.py."""

import datetime as dt
import json
import re
import sqlite3
import urllib.parse

import pytest
import webtest

import _agenda.desk.shared
import _agenda.domain.patients
from agenda import ClinicError
from _agenda.domain.booking import Visit
from _agenda.domain.staff import PasswordGate
from _agenda.values.fields import TEXT_LIMIT
from _agenda.domain.changes import book_appointment
from _agenda.domain.registry import register_patient

import edges
from conftest import SECRET, assert_error, table_rows, valid_dni

PASSWORD = "correct horse battery"
GUARDED = [route for route in edges.DESK_ROUTES if route.door == "cookie"]  # every desk route past the login


@pytest.fixture
def desk(api):
    api.app.accounts.add_staff("ana", PASSWORD)
    return webtest.TestApp(api.app)


def log_in(client, name="ana", password=PASSWORD, **headers):
    page = client.get("/desk/login", headers=headers)
    form = page.forms[0]
    form["name"], form["password"] = name, password
    return form.submit(headers=headers, expect_errors=True)


def admin_and_reception(api):
    """Two logged-in desk clients of the test app: 'luis', an admin, and 'ana', reception."""
    api.app.accounts.add_staff("luis", PASSWORD, role="admin")
    api.app.accounts.add_staff("ana", PASSWORD)
    admin, reception = webtest.TestApp(api.app), webtest.TestApp(api.app)
    log_in(admin, name="luis")
    log_in(reception)
    return admin, reception


def last_form(page):
    return page.forms[len(page.forms) - 1]


def events(api, action):
    return [tuple(row) for row in api.db().execute("SELECT source, entity_id FROM events WHERE action = ?", (action,))]


def slots(api, query):
    return {(s["date"], s["time"], s["doctorId"]) for s in api.get(f"/availabilities?{query}").json["data"]}


def test_every_desk_page_needs_a_login_and_the_api_never_takes_the_desk_cookie(api, desk):
    for route in GUARDED:
        answer = desk.request(edges.example_path(route), method=route.method, expect_errors=True)
        assert answer.status_int == 303 and answer.headers["Location"].endswith("/desk/login"), route.key
    assert log_in(desk).status_int == 303
    assert desk.get("/desk/day").status_int == 200
    assert_error(api.call("GET", "/custom-config", signature=None,
                          headers={"Cookie": f"agenda_desk={desk.cookies['agenda_desk']}"}), 401, "INVALID_SIGNATURE")


def test_a_desk_page_never_takes_an_x_signature(api, desk):
    from conftest import sign
    answer = desk.get("/desk/day", headers={"X-Signature": sign(b"", SECRET, "GET", "/desk/day")}, expect_errors=True)
    assert answer.status_int == 400 and answer.content_type == "text/html"
    log_in(desk)
    assert desk.get("/desk/day", headers={"X-Signature": "0" * 64}, expect_errors=True).status_int == 400


def test_the_session_cookie_and_every_page_are_guarded(api, desk):
    answer = log_in(desk, **{"X-Forwarded-Proto": "https"})  # from no trusted proxy: plain HTTP still
    cookie, = [value for value in answer.headers.getall("Set-Cookie") if value.startswith("agenda_desk=")]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and "Path=/desk" in cookie
    page = desk.get("/desk/day")
    assert page.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Frame-Options"] == "DENY"
    secure_app = webtest.TestApp(api.app, extra_environ={"wsgi.url_scheme": "https"})
    secure_cookie, = [value for value in log_in(secure_app).headers.getall("Set-Cookie")
                      if value.startswith("agenda_desk=")]
    assert "; Secure" in secure_cookie
    assert "Secure" not in cookie  # plain HTTP on loopback: a Secure cookie would never come back


def from_address(api, address):
    return webtest.TestApp(api.app, extra_environ={"REMOTE_ADDR": address})


def test_five_wrong_passwords_lock_the_name_from_that_address_only_for_15_minutes(api, desk, clock):
    attacker, reception = from_address(api, "203.0.113.9"), from_address(api, "192.0.2.10")
    api.app.accounts.gate = PasswordGate(per_second=100, burst=100)  # the logins of a minute, in a moment
    for _ in range(4):
        refused = log_in(attacker, password="wrong password")
        assert refused.status_int == 401 and "incorrectos" in refused.text
    unknown = log_in(attacker, name="nobody", password="wrong password")
    assert unknown.status_int == 401 and "incorrectos" in unknown.text  # the same words for an unknown name
    fifth = log_in(attacker, password="wrong password")
    assert fifth.status_int == 429 and "bloqueado hasta las 08:15" in fifth.text
    locked = log_in(attacker)  # the right password, while locked: told so, and until when
    assert locked.status_int == 429 and "bloqueado hasta las 08:15" in locked.text
    for _ in range(5):  # a name no one has is locked alike: the words tell no one which names exist
        other = log_in(attacker, name="nobody", password="wrong password")
    assert other.status_int == 429 and other.html.find("p", class_="error").text == \
        locked.html.find("p", class_="error").text
    assert events(api, "staff.locked") == [("desk", "ana")]
    assert log_in(reception).status_int == 303  # the lock cannot be aimed at ana: she logs in from reception
    clock.moment += dt.timedelta(minutes=16)
    assert log_in(attacker).status_int == 303


def test_an_unknown_name_costs_the_same_work_as_a_staff_name(api, desk):
    """A wrong password runs the same statements for any name, so time tells no one which names exist."""
    api.app.accounts.add_staff("bea", PASSWORD)
    statements = []
    api.app.accounts.db.connection().set_trace_callback(statements.append)
    work = {}
    for name in ("ana", "nobody", "bea", "someone.else"):
        statements.clear()
        assert log_in(desk, name=name, password="wrong password").status_int == 401
        work[name] = [re.sub(r"'[^']*'|\b\d+\b", "?", statement) for statement in statements]
    api.app.accounts.db.connection().set_trace_callback(None)
    assert any(statement.startswith("BEGIN") for statement in work["ana"])  # the failure was written
    assert work["ana"] == work["nobody"] == work["bea"] == work["someone.else"]


def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(api, desk, db_path):
    api.app.accounts.add_staff("luis", PASSWORD, role="admin")
    log_in(desk, name="luis")  # an admin: every form is theirs to send, so the token alone refuses it
    api.book(api.new_patient())
    before = table_rows(db_path)
    fields = {"doctorId": "MARTIN", "date": "24/11/2026", "time": "09:00", "name": "Eva", "nif": "11111111H",
              "dateFrom": "24/11/2026", "patientId": "1", "confirmed": "1"}  # what a form of each would carry
    for route in [route for route in GUARDED if route.method == "POST"]:
        for token in (None, "forged"):
            answer = desk.post(edges.example_path(route), {**fields, **({"csrf": token} if token else {})},
                               expect_errors=True)
            assert answer.status_int == 403, route.key
    assert table_rows(db_path) == before
    login_page = desk.get("/desk/login")
    assert desk.post("/desk/login", {"name": "ana", "password": PASSWORD, "csrf": "forged"},
                     expect_errors=True).status_int == 403
    assert login_page.status_int == 200


def test_idle_sessions_expire_and_logging_out_ends_the_session(api, desk, clock):
    log_in(desk)
    clock.moment += dt.timedelta(minutes=29)
    assert desk.get("/desk/day").status_int == 200  # activity keeps it alive
    clock.moment += dt.timedelta(minutes=31)
    assert desk.get("/desk/day", expect_errors=True).status_int == 303
    log_in(desk)
    page = desk.get("/desk/day")
    page.forms[0 if page.forms[0].action == "/desk/logout" else 1].submit()
    assert desk.get("/desk/day", expect_errors=True).status_int == 303


def book_from_the_day_view(desk, time="09:30", **patient):
    day = desk.get("/desk/day?date=24/11/2026&centerId=C1")
    link = day.html.find("a", href=re.compile(rf"doctorId=MARTIN.*time={time}"))
    form = last_form(desk.get(link["href"]))  # the new patient's form
    for name, value in {"name": "Eva", "surname": "Ros", "nif": "11111111H", "phone": "622222222",
                        "reason": "Control", **patient}.items():
        form[name] = value
    return form.submit(expect_errors=True)


def test_booking_a_free_slot_from_the_day_view_reaches_the_api_as_an_event_of_the_receptionist(api, desk):
    log_in(desk)
    answer = book_from_the_day_view(desk)
    assert answer.status_int == 303 and "/desk/day?date=24%2F11%2F2026&centerId=C1" in answer.headers["Location"]
    day = answer.follow()
    assert "Cita de Eva Ros reservada el 24/11/2026 a las 09:30." in day.text and "622 22 22 22" in day.text
    listed = api.get("/appointments?date=24/11/2026").json["data"]
    assert [(a["time"], a["patientName"], a["reason"]) for a in listed] == [("09:30", "Eva Ros", "Control")]
    assert events(api, "appointment.booked") == [("desk:ana", listed[0]["appointmentId"])]
    assert events(api, "patient.created") == [("desk:ana", listed[0]["patientId"])]


def test_bad_input_on_a_form_names_the_field_keeps_what_was_typed_and_changes_nothing(api, desk, db_path):
    log_in(desk)
    before = table_rows(db_path)
    answer = book_from_the_day_view(desk, nif="12345678A", phone="12")
    assert answer.status_int == 400
    assert "nif" in answer.text and "phone" in answer.text  # each field's message
    form = last_form(answer)
    assert (form["name"].value, form["nif"].value, form["phone"].value) == ("Eva", "12345678A", "12")
    assert table_rows(db_path) == before


def test_two_receptionists_booking_one_slot_get_one_booking_and_one_clear_message(api, desk):
    other = webtest.TestApp(api.app)
    api.app.accounts.add_staff("luis", PASSWORD)
    log_in(desk)
    log_in(other, name="luis")
    first = last_form(desk.get("/desk/book?doctorId=MARTIN&date=24/11/2026&time=10:00&centerId=C1"))
    second = last_form(other.get("/desk/book?doctorId=MARTIN&date=24/11/2026&time=10:00&centerId=C1"))
    first["name"], first["nif"] = "Eva", "11111111H"
    second["name"], second["nif"] = "Jon", "22222222J"
    assert first.submit().status_int == 303
    refused = second.submit(expect_errors=True)
    assert refused.status_int == 409 and "Otra cita acaba de ocupar ese hueco" in refused.text
    assert last_form(refused)["name"].value == "Jon"
    assert len(api.get("/appointments?date=24/11/2026").json["data"]) == 1


def test_move_confirm_and_cancel_from_the_appointment_page(api, desk):
    log_in(desk)
    appointment_id = api.book(api.new_patient())
    page = desk.get(f"/desk/appointments/{appointment_id}")
    move = next(form for form in page.forms.values() if form.action.endswith("/move"))
    move["slot"] = "24/11/2026|10:30|MARTIN|C1"
    assert "movida al 24/11/2026 a las 10:30" in move.submit().follow().text
    assert api.get(f"/appointments/{appointment_id}").json["time"] == "10:30"
    page = desk.get(f"/desk/appointments/{appointment_id}")
    next(form for form in page.forms.values() if form.action.endswith("/confirm")).submit()
    assert api.get(f"/appointments/{appointment_id}").json["extraData"]["status"] == "confirmed"
    page = desk.get(f"/desk/appointments/{appointment_id}")
    cancel = next(form for form in page.forms.values() if form.action.endswith("/cancel"))
    cancel["reason"] = "llamó para anular"
    cancel.submit()
    assert_error(api.get(f"/appointments/{appointment_id}"), 410, "APPOINTMENT_PREVIOUSLY_CANCELLED")
    assert [row[0] for row in api.db().execute("SELECT source FROM events WHERE entity = 'appointment'"
                                               " ORDER BY id")] == ["api", "desk:ana", "desk:ana", "desk:ana"]
    assert api.db().execute("SELECT cancel_reason FROM appointments").fetchone()[0] == "llamó para anular"


def test_a_closure_lists_what_it_covers_before_it_is_saved_and_its_slots_leave_availability(api, desk):
    log_in(desk)
    api.book(api.new_patient(), time="09:00")
    page = desk.get("/desk/closures")
    form = last_form(page)
    form["doctorId"], form["dateFrom"], form["reason"] = "MARTIN", "24/11/2026", "Congreso"
    preview = form.submit()
    assert "Este cierre cubre estas citas" in preview.text and "Ana García" in preview.text
    assert ("24/11/2026", "09:30", "MARTIN") in slots(api, "doctorId=MARTIN&date=24/11/2026")  # not saved yet
    last_form(preview).submit().follow()
    assert slots(api, "doctorId=MARTIN&date=24/11/2026") == set()
    listed = desk.get("/desk/closures")
    assert "Congreso" in listed.text
    asked = desk.get(listed.html.find("a", href=re.compile(r"/desk/closures/\d+/remove$"))["href"])
    assert "¿Quitar el cierre «Congreso»?" in asked.text  # asked first: one click does not remove it
    assert ("24/11/2026", "09:30", "MARTIN") not in slots(api, "doctorId=MARTIN&date=24/11/2026")
    next(form for form in asked.forms.values() if form.action.endswith("/remove")).submit()
    assert ("24/11/2026", "09:30", "MARTIN") in slots(api, "doctorId=MARTIN&date=24/11/2026")
    assert [source for source, _ in events(api, "closure.added") + events(api, "closure.removed")] == [
        "desk:ana", "desk:ana"]


def test_retiring_a_doctor_lists_the_appointments_left_and_offers_nothing_after(api, desk):
    api.app.accounts.set_role("ana", "admin")
    log_in(desk)
    later = api.book(api.new_patient(), date="26/11/2026", time="09:00")
    page = desk.get("/desk/doctors")
    form = next(form for form in page.forms.values() if form.action == "/desk/doctors/MARTIN/retire")
    form["date"] = "26/11/2026"
    preview = form.submit()
    assert "Citas que quedan por reubicar" in preview.text and f"/desk/appointments/{later}" in preview.text
    next(form for form in preview.forms.values() if "confirmed" in form.fields).submit().follow()
    assert slots(api, "doctorId=MARTIN&startDate=26/11/2026&endDate=30/11/2026") == set()
    assert slots(api, "doctorId=MARTIN&date=24/11/2026")
    assert api.get(f"/appointments/{later}").json["extraData"]["status"] == "booked"  # never cancelled silently
    refused = assert_error(api.post("/appointments", {"date": "27/11/2026", "time": "09:00", "doctorId": "MARTIN",
                                                      "patientId": "1"}), 409, "SLOT_NOT_AVAILABLE")
    assert refused["reason"] == "doctor_retired"


def test_reception_does_the_days_work_and_only_an_admin_reaches_the_doctors(api, desk, db_path):
    """A reception account books, closes and searches; the doctors' hours and retirement are an admin's:
    hidden from reception and refused by the server (403, recorded), whatever the page sent ("Roles")."""
    log_in(desk)  # ana is reception, the default
    day = desk.get("/desk/day")
    assert 'href="/desk/closures"' in day.text and 'href="/desk/doctors"' not in day.text
    assert desk.get("/desk/closures").status_int == 200
    csrf = day.html.find("input", attrs={"name": "csrf"})["value"]
    before = table_rows(db_path)
    refused = [desk.get("/desk/doctors", expect_errors=True),
               desk.post("/desk/doctors/MARTIN/retire", {"csrf": csrf, "date": "26/11/2026", "confirmed": "1"},
                         expect_errors=True)]
    assert [page.status_int for page in refused] == [403, 403]
    assert all("administración" in page.text for page in refused)
    assert api.db().execute("SELECT retired_from FROM doctors WHERE id = 'MARTIN'").fetchone()[0] is None
    recorded = api.db().execute("SELECT source, entity_id, after FROM events WHERE action = 'staff.refused'")
    assert [(source, name, json.loads(after)["refused"]) for source, name, after in recorded] == [
        ("desk:ana", "ana", "GET /desk/doctors"), ("desk:ana", "ana", "POST /desk/doctors/<doctor_id>/retire")]
    assert {table: rows for table, rows in table_rows(db_path).items() if table != "events"} == {
        table: rows for table, rows in before.items() if table != "events"}
    api.app.accounts.set_role("ana", "admin")  # the same session takes the new role at its next page
    assert 'href="/desk/doctors"' in desk.get("/desk/day").text and desk.get("/desk/doctors").status_int == 200


def search(desk, query, page="/desk/patients"):
    """The search form of a desk page, filled and sent."""
    form, = [form for form in desk.get(page).forms.values() if "q" in form.fields]
    form["q"] = query
    return form.submit()


def test_a_patients_page_and_the_search_by_nif_phone_or_name(api, desk):
    log_in(desk)
    patient = api.new_patient()
    api.book(patient)
    for query in ("12345678z", "612 345 678", "garcía", "Ana"):
        found = search(desk, query)
        assert f"/desk/patients/{patient}" in found.text, query
    page = desk.get(f"/desk/patients/{patient}")
    assert "12345678Z" in page.text and "24/11/2026 09:00" in page.text
    assert len(re.findall(r"/desk/patients/\d", search(desk, "%").text)) == 0  # a LIKE wildcard finds nobody


def test_what_reception_types_about_a_patient_stays_out_of_addresses_and_the_browser_memory(api, desk):
    """A shared reception browser keeps no patient: searches go by POST (no NIF in an address or the
    history), and no field about a patient lets the browser remember what was typed ("Staff desk")."""
    log_in(desk)
    patient = api.new_patient()
    slot = "/desk/book?doctorId=MARTIN&date=24/11/2026&time=10:00&centerId=C1"
    for page in ("/desk/day?date=24/11/2026", "/desk/patients", slot):
        form, = [form for form in desk.get(page).forms.values() if "q" in form.fields]
        assert form.method.upper() == "POST", page
        form["q"] = "12345678Z"
        found = form.submit()
        assert found.status_int == 200 and "12345678Z" not in found.request.url, page
        assert f"/desk/patients/{patient}" in found.text or "12345678Z" in found.text, page
    assert not re.search(r"/desk/patients/\d", desk.get("/desk/patients?q=12345678Z").text)  # an address searches nothing
    for page in (slot, "/desk/patients", f"/desk/appointments/{api.book(patient)}"):
        html = desk.get(page).html
        for field in html.find_all("input", attrs={"name": ["q", "name", "surname", "nif", "phone", "birthDate",
                                                            "reason"]}):
            assert field.get("autocomplete") == "off", (page, field)
        assert all(form.get("autocomplete") == "off" for form in html.find_all("form") if form.find("input", attrs={
            "name": ["q", "nif", "reason"]})), page


def test_the_desk_speaks_english_to_an_english_browser(api, desk):
    english = {"Accept-Language": "en-GB,en;q=0.9,es;q=0.5"}
    assert "Log in" in desk.get("/desk/login", headers=english).text
    assert "Entrar" in desk.get("/desk/login", headers={"Accept-Language": "es-ES,es"}).text
    assert "Entrar" in desk.get("/desk/login").text  # Spanish by default
    log_in(desk, **english)
    assert "Previous day" in desk.get("/desk/day", headers=english).text


def test_an_unknown_desk_page_is_html_and_an_unknown_api_path_json(api, desk):
    log_in(desk)
    page = desk.get("/desk/nothing-here", expect_errors=True)
    assert page.status_int == 404 and page.content_type == "text/html"
    assert_error(api.get("/nothing-here"), 404, "NOT_FOUND")


def test_a_login_holds_no_write_lock_while_it_checks_the_password_and_locks_read_like_unknown_names(api, desk):
    """scrypt runs outside the write transaction, so a stream of logins never holds up a booking;
    a locked name answers exactly as an unknown one (docs/design.md, "Desk accounts and sessions")."""
    from _agenda.domain import staff
    seen = []
    real = staff.password_matches

    def spy(stored, password):
        seen.append(api.app.clinic.db.write_lock.locked())
        return real(stored, password)

    staff.password_matches = spy
    api.app.accounts.gate = PasswordGate(per_second=100, burst=100)  # 13 logins at once: no "try in a minute"
    try:
        for _ in range(6):
            log_in(desk, password="wrong password")
            unknown = log_in(desk, name="nobody", password="wrong password")
        locked = log_in(desk)
    finally:
        staff.password_matches = real
    assert seen and not any(seen)
    assert unknown.status_int == locked.status_int == 429
    assert unknown.html.find("p", class_="error").text == locked.html.find("p", class_="error").text


def test_redirects_are_relative_and_ids_in_links_are_encoded(api, desk):
    answer = desk.get("/desk", headers={"Host": "evil.example"}, expect_errors=True)
    assert answer.status_int == 303 and answer.headers["Location"] == "/desk/day"
    log_in(desk)
    day = desk.get("/desk/day?date=24/11/2026&centerId=C1")
    assert "doctorId=MARTIN&amp;date=24/11/2026&amp;time=09:00&amp;centerId=C1" in day.text
    assert desk.get("/desk/day?date=31/12/9999", expect_errors=True).status_int == 400


def test_a_busy_database_is_a_try_again_page_on_the_desk_never_a_500(api, desk, db_path, monkeypatch):
    """The same mapping as the API's 503 ("Errors"): the receptionist reads that nothing was saved."""
    log_in(desk)
    before = table_rows(db_path)

    def locked(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(_agenda.domain.patients, "written_row", locked)  # the new patient, the booking's first write
    answer = book_from_the_day_view(desk)
    assert answer.status_int == 503 and "vuelve a intentarlo" in answer.text and "no se ha guardado nada" in answer.text
    assert "Algo ha fallado" not in answer.text
    monkeypatch.setattr(_agenda.desk.shared, "clinic_centers", locked)
    assert desk.get("/desk/day?date=24/11/2026&centerId=C1", expect_errors=True).status_int == 503
    assert table_rows(db_path) == before


def test_under_acknowledgement_a_desk_change_is_confirmed_only_once_the_hook_holds_it(make_api, db_path):
    """--ack-after-replication's hook runs once for every desk change (not for a login) before the
    receptionist is told it is done; when it cannot hold it, the page says it is saved here only."""
    held, failing = [], []

    def hook():
        held.append(len(table_rows(db_path)["appointments"]))
        if failing:
            raise ClinicError("NOT_REPLICATED", "saved here but not yet in the replica")

    api = make_api(after_write=hook)
    api.app.accounts.add_staff("ana", PASSWORD)
    desk = webtest.TestApp(api.app)
    assert log_in(desk).status_int == 303 and held == []  # a login is not the clinic's change
    assert book_from_the_day_view(desk).status_int == 303 and held == [1]  # the booking was held, then answered
    failing.append(True)
    answer = book_from_the_day_view(desk, time="10:00", nif=valid_dni(22), phone="633333333")
    assert answer.status_int == 503 and "Guardado aquí" in answer.text and "copia continua" in answer.text
    assert held == [1, 2] and len(api.get("/appointments?date=24/11/2026").json["data"]) == 2  # saved here
    day = desk.get("/desk/day?date=24/11/2026&centerId=C1")
    form = last_form(desk.get(day.html.find("a", href=re.compile(r"doctorId=MARTIN.*time=10:30"))["href"]))
    form["name"], form["nif"] = "Leo", valid_dni(33)
    other = register_patient(api.app.clinic, {"name": "Ada", "nif": valid_dni(44)}, source="cli")
    book_appointment(api.app.clinic, Visit(patient_id=other, doctor_id="MARTIN"), day=dt.date(2026, 11, 24),
                     time_text="10:30", source="cli")
    refused = form.submit(expect_errors=True)  # the slot went meanwhile
    assert refused.status_int == 409 and held == [1, 2]  # a refusal: nothing to hold


def test_the_day_view_past_the_horizon_offers_nothing_it_would_refuse(api, desk):
    """The desk's day comes from the same slot rules as the API ("Slot states"), by the desk's own horizon
    (18 months): a follow-up in six months is free, a date beyond it shows its slots as too far ahead,
    never as free slots that refuse when clicked."""
    log_in(desk)
    far = desk.get("/desk/day?date=01/06/2028&centerId=C1")  # a Thursday, 19 months ahead
    assert "fuera de plazo" in far.text and not far.html.find_all("a", href=re.compile(r"/desk/book\?"))
    follow_up = desk.get("/desk/day?date=01/06/2027&centerId=C1")  # beyond the caller's 90 days
    assert follow_up.html.find_all("a", href=re.compile(r"/desk/book\?"))
    assert api.get("/availabilities?doctorId=MARTIN&startDate=01/06/2027").json["data"] == []


def test_a_patient_with_a_very_long_name_is_confirmed_and_cancelled_with_a_bounded_cookie(api, desk):
    """The flash message after a change names the patient on the next page, read through the one door: the
    cookie holds no patient's data and stays small, however long the name."""
    log_in(desk)
    name = ("Ñandú Ü" * 20)[:TEXT_LIMIT]  # the longest name taken, each of its characters 6 or 9 bytes once quoted
    for nif, action in (("12345678Z", "confirm"), (valid_dni(7), "cancel")):
        appointment = api.book(api.new_patient(nif=nif, name=name), time="09:00" if action == "confirm" else "10:00")
        page = desk.get(f"/desk/appointments/{appointment}")
        form, = [form for form in page.forms.values() if form.action.endswith(f"/{action}")]
        if action == "cancel":
            form["reason"] = "a petición del paciente"
        answer = form.submit()
        assert answer.status_int == 303, answer.text
        cookie = answer.headers["Set-Cookie"]
        assert "and" not in cookie.split(";")[0].lower() and len(cookie) < 300
        shown = answer.follow().html.find(class_="flash").get_text()
        assert shown.startswith("Cita de Ñandú") and ("García " + ("confirmada." if action == "confirm"
                                                                  else "anulada.")) in shown
        status, = api.db().execute("SELECT status FROM appointments WHERE id = ?", (appointment,)).fetchone()
        assert status == ("confirmed" if action == "confirm" else "cancelled")
