"""Reception's side of the web booking (docs/design.md, "Por verificar"), through webtest: a confirmed booking whose
NIF names a record on file waits on the list with what was typed beside that record and its phone, counted in the
menu; reception matches it to that record (or that guardian's child) or refuses it, each once, in words, with CSRF;
and every card, row and page marks a pending visit and the channel "web"."""

import datetime as dt
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
import webtest
from hypothesis import event, HealthCheck, settings, strategies as st
from hypothesis.stateful import initialize, invariant, rule, RuleBasedStateMachine

import agenda

from _agenda.domain.changes import cancel_appointment
from _agenda.domain.links import new_link
from _agenda.domain.registry import register_patient
from _agenda.domain.web_booking import confirm_booking, request_booking, WebAsk
from _agenda.domain.web_requests import new_token
from _agenda.domain.verifying import match_request, on_file, refuse_request, to_verify, verify_count
from _agenda.values.refusals import ClinicError

from conftest import Api, CLINIC_CSV, Clock, MONDAY, SECRET, seed, table_rows, valid_dni, write_csv

PASSWORD = "correct horse battery"
WEB = {"web_booking": "on", "web_privacy": "Clínica Sol trata sus datos para su cita.",
       "public_url": "https://citas.example.es"}
ADDRESS = "203.0.113.7"
KNOWN = valid_dni(501)


def ask(**changes):
    """A booking asked on the page: Martín, Tuesday 24/11/2026 at 09:00, as Rosa Vidal with the NIF on file."""
    fields = dict(center_id="C1", speciality_id="MG", doctor_id="MARTIN", type_id=None, day="2026-11-24",
                  time="09:00", name="Rosa", surname="Vidal", birth_date="1985-03-02", nif=KNOWN, child=False,
                  phone="699111222", email="rosa.vidal@example.es", insurance_id=None, language="es")
    return WebAsk(**{**fields, **changes})


@pytest.fixture
def web(make_api):
    api = make_api(**WEB)
    api.app.accounts.add_staff("ana", PASSWORD)
    return api


def desk_of(api):
    """A logged-in reception client and its CSRF token."""
    client = webtest.TestApp(api.app)
    form = client.get("/desk/login").forms[0]
    form["name"], form["password"] = "ana", PASSWORD
    form.submit()
    return client, re.search(r'name="csrf" value="([^"]+)"', client.get("/desk/day").text)[1]


def asked(api, **changes):
    """A web booking asked (not confirmed); its web_requests row."""
    request_booking(api.app.clinic, ask(**changes), ADDRESS)
    return api.db().execute("SELECT * FROM web_requests ORDER BY id DESC LIMIT 1").fetchone()


def confirmed(api, **changes):
    """A web booking asked and confirmed by its link, as the patient would; its web_requests row."""
    request = asked(api, **changes)
    with api.app.clinic.db.transaction() as conn:
        token = new_token(conn, request["appointment_id"])
    assert confirm_booking(api.app.clinic, token) == "confirmed"
    return request


def known_patient(api, **extra):
    return api.new_patient(nif=KNOWN, name="Rosa María", surname="Vidal Soler", phone="611000501",
                           email="rosa@example.es", **extra)


def row(api, table, key):
    found = api.db().execute(f"SELECT * FROM {table} WHERE id = ?", (int(key),)).fetchone()
    return None if found is None else dict(found)


def typed_kept(api):
    """What the page's booking typed (Rosa Vidal's phone, e-mail, birth date, a live record of her) still kept."""
    everything = "\n".join(str(tuple(each)) for table in ("patients", "events", "web_requests")
                           for each in api.db().execute(f"SELECT * FROM {table}"))
    live = [row[0] for row in api.db().execute("SELECT id FROM live_patients WHERE name = 'Rosa' AND surname = 'Vidal'")]
    return [typed for typed in ("699111222", "+34699111222", "rosa.vidal@example.es", "1985-03-02") if typed in
            everything] + live


def test_a_confirmed_request_waits_on_the_list_with_what_was_typed_and_the_record_on_files_phone(web):
    known = known_patient(web)
    request = asked(web)
    client, _ = desk_of(web)
    assert "/desk/verify" not in client.get("/desk/day").text  # waiting for the patient's e-mail: not reception's yet
    assert "No hay reservas por verificar." in client.get("/desk/verify").text
    confirmed_request = confirmed(web, time="09:30")
    menu = client.get("/desk/day").html.select_one("a.to-verify")
    assert menu is not None and menu.select_one(".count").text == "1"
    page = client.get("/desk/verify")
    listed = page.html.select_one(f"#verify-{confirmed_request['appointment_id']}")
    typed, on_file = listed.select_one("td.typed").text, listed.select_one("td.on-file").text
    assert "Rosa Vidal" in typed and KNOWN in typed and "699 11 12 22" in typed and "rosa.vidal@example.es" in typed
    assert "Rosa María Vidal Soler" in on_file and KNOWN in on_file and "611 00 05 01" in on_file
    assert listed.select_one('td.on-file a[href="tel:+34611000501"]') is not None
    assert f"#verify-{request['appointment_id']}" not in page.text
    web.app.clinic.access.flush()
    read = {row[0] for row in web.db().execute("SELECT patient_id FROM access_reads WHERE reader = 'desk:ana'")}
    assert {int(known), confirmed_request["patient_id"]} <= read


def test_matching_moves_the_visit_onto_the_record_on_file_and_the_typed_address_s_link_stops(web):
    known = known_patient(web)
    before = row(web, "patients", known)
    request = confirmed(web)
    visit = request["appointment_id"]
    with web.app.clinic.db.transaction() as conn:
        token = new_link(conn, visit, "message", web.app.clinic.clock())  # the confirmation sent to the typed address
    assert webtest.TestApp(web.app).get(f"/cita/{token}").status_int == 200
    client, csrf = desk_of(web)
    answer = client.post(f"/desk/verify/{visit}/match", {"csrf": csrf, "patientId": str(known)})
    assert answer.status_int == 303 and answer.headers["Location"].endswith("/desk/verify")
    assert "Cita pasada a la ficha de Rosa María Vidal Soler." in answer.follow().text
    after = row(web, "appointments", visit)
    assert (after["patient_id"], after["pending"], after["pending_until"], after["status"]) == (int(known), None,
                                                                                                 None, "booked")
    assert typed_kept(web) == []  # the provisional record, holding nothing, is gone
    assert web.db().execute("SELECT count(*) FROM patients WHERE id = ?", (request["patient_id"],)).fetchone()[0] == 0
    assert row(web, "patients", known) == before  # nothing of the record on file changed
    ended = row(web, "web_requests", request["id"])
    assert ended["ended_at"] and ended["ended_by"] == "desk:ana" and ended["typed_nif"] is None
    assert webtest.TestApp(web.app).get(f"/cita/{token}", expect_errors=True).status_int == 404
    assert [kind for (kind,) in web.db().execute("SELECT kind FROM outbox WHERE appointment_id = ? ORDER BY id",
                                                 (visit,))] == ["web", "confirmation", "confirmation"]
    assert web.db().execute("SELECT source FROM events WHERE action = 'appointment.matched' AND entity_id = ?",
                            (str(visit),)).fetchone()[0] == "desk:ana"
    assert [a["appointmentId"] for a in web.get("/appointments?date=24/11/2026").json["data"]] == [str(visit)]
    assert "No hay reservas por verificar." in client.get("/desk/verify").text


def test_refusing_cancels_without_a_message_and_keeps_nothing_a_stranger_typed(web):
    known = known_patient(web)
    request = confirmed(web)
    visit = request["appointment_id"]
    client, csrf = desk_of(web)
    answer = client.post(f"/desk/verify/{visit}/refuse", {"csrf": csrf})
    assert "Reserva web rechazada" in answer.follow().text
    after = row(web, "appointments", visit)
    assert after["status"] == "cancelled" and after["patient_id"] == request["patient_id"]
    assert [kind for (kind,) in web.db().execute("SELECT kind FROM outbox WHERE appointment_id = ? ORDER BY id",
                                                 (visit,))] == ["web", "confirmation"]  # no notice
    provisional = row(web, "patients", request["patient_id"])
    assert provisional["blocked_at"] and provisional["anonymised_at"]
    assert typed_kept(web) == []
    assert row(web, "patients", known)["name"] == "Rosa María"
    assert web.book(web.new_patient(nif=valid_dni(502))) is not None  # the slot is free again
    assert web.db().execute("SELECT source FROM events WHERE action = 'appointment.refused' AND entity_id = ?",
                            (str(visit),)).fetchone()[0] == "desk:ana"


def test_a_request_ends_once_and_a_second_receptionist_reads_why_in_words(web):
    known_patient(web)
    visit = confirmed(web)["appointment_id"]
    client, csrf = desk_of(web)
    client.post(f"/desk/verify/{visit}/refuse", {"csrf": csrf})
    for action in ("refuse", "match"):
        page = client.post(f"/desk/verify/{visit}/{action}", {"csrf": csrf}, expect_errors=True)
        assert page.status_int == 400 and "Esa cita ya no está por verificar" in page.text, action
    assert client.post(f"/desk/verify/{visit}/refuse", {"csrf": "wrong"}, expect_errors=True).status_int == 403


def test_matching_is_refused_in_words_when_the_patient_on_file_is_elsewhere_then_and_nothing_changes(web):
    known = known_patient(web)
    other = web.book(known, doctor="RUIZ", insurance_id="PRIV")  # Tuesday 09:00 with Ruiz
    visit = confirmed(web)["appointment_id"]
    before = row(web, "appointments", visit)
    client, csrf = desk_of(web)
    page = client.post(f"/desk/verify/{visit}/match", {"csrf": csrf}, expect_errors=True)
    assert page.status_int == 409
    assert page.html.select_one(f'p.error a[href="/desk/appointments/{other}"]') is not None
    assert row(web, "appointments", visit) == before
    assert f"verify-{visit}" in page.text  # still on the list


def test_a_record_reception_did_not_find_by_that_nif_is_never_matched(web):
    known_patient(web)
    stranger = web.new_patient(nif=valid_dni(503))
    visit = confirmed(web)["appointment_id"]
    client, csrf = desk_of(web)
    page = client.post(f"/desk/verify/{visit}/match", {"csrf": csrf, "patientId": str(stranger)}, expect_errors=True)
    assert page.status_int == 400 and "Ninguna ficha con ese NIF a la que pasar la cita" in page.text
    assert row(web, "appointments", visit)["pending"] == "reception"


def test_an_unknown_nif_s_request_is_only_refused_and_a_child_s_is_matched_to_her_guardian_s_child(web, clock):
    guardian = known_patient(web)
    child = register_patient(web.app.clinic, {"name": "Lía", "surname": "Vidal", "birthDate": "03/04/2019",
                                              "guardianNif": KNOWN}, source="desk:ana")
    stranger = confirmed(web, nif=valid_dni(504), child=True, name="Nadie", birth_date="2018-01-01")  # a child under a NIF no one has
    for_child = confirmed(web, child=True, name="Lía", birth_date="2019-04-03", time="09:30")
    client, csrf = desk_of(web)
    page = client.get("/desk/verify")
    assert "Ninguna ficha activa tiene ese NIF." in page.html.select_one(f"#verify-{stranger['appointment_id']}").text
    offered = page.html.select(f"#verify-{for_child['appointment_id']} input[name=patientId]")
    assert [each["value"] for each in offered] == [str(guardian), str(child)]
    client.post(f"/desk/verify/{for_child['appointment_id']}/match", {"csrf": csrf, "patientId": str(child)})
    assert row(web, "appointments", for_child["appointment_id"])["patient_id"] == int(child)


def test_every_card_row_and_page_marks_a_pending_visit_and_the_channel_web(web):
    known_patient(web)
    waiting = asked(web, nif=valid_dni(505), email="otro@example.es")["appointment_id"]
    to_verify = confirmed(web, time="09:30")["appointment_id"]
    client, _ = desk_of(web)
    until = "Pendiente de confirmar por el paciente hasta 08:15"  # 08:00 in Madrid and 15 minutes
    day = client.get("/desk/day?date=24/11/2026&centerId=C1")
    cards = {card.select_one("a.who")["href"]: card for card in day.html.select(".timeline article.card")}
    assert until in cards[f"/desk/appointments/{waiting}"].text and "pending" in cards[
        f"/desk/appointments/{waiting}"]["class"]
    assert "Por verificar" in cards[f"/desk/appointments/{to_verify}"].text
    assert "el paciente, en la web" in cards[f"/desk/appointments/{waiting}"].text
    printed = client.get("/desk/day?date=24/11/2026&centerId=C1&print=1").html.select("table.print-day tbody tr")
    assert any(until in each.text for each in printed) and any("Por verificar" in each.text for each in printed)
    week = client.get("/desk/week?date=24/11/2026&centerId=C1").html.select(".week-day article.card.pending")
    assert len(week) == 2 and until in " ".join(card.text for card in week)
    doctor_week = client.get("/desk/week?date=24/11/2026&doctorId=MARTIN").text
    assert until in doctor_week and "Por verificar" in doctor_week
    page = client.get(f"/desk/appointments/{waiting}")
    assert until in page.text and "el paciente, en la web" in page.text
    assert f"/desk/appointments/{waiting}/confirm" not in page.text  # the patient's to confirm, not reception's
    page = client.get(f"/desk/appointments/{to_verify}")
    assert page.html.select_one('a[href="/desk/verify"]') is not None
    patient = web.db().execute("SELECT patient_id FROM appointments WHERE id = ?", (waiting,)).fetchone()[0]
    assert until in client.get(f"/desk/patients/{patient}").text


def test_a_visit_past_its_time_reads_as_released_not_pending_on_the_next_page(web, clock):
    visit = asked(web, nif=valid_dni(506), email="x@example.es")["appointment_id"]
    client, _ = desk_of(web)
    clock.moment += dt.timedelta(minutes=16)
    web.book(web.new_patient(nif=valid_dni(507)), time="10:00")  # any booking's transaction releases it
    assert f"/desk/appointments/{visit}" not in client.get("/desk/day?date=24/11/2026&centerId=C1").text


# As a property: reception's two ends, interleaved with the page's bookings naming a record on file, its child, another
# record or no one, each either end a request whole or change nothing; the menu counts what the list shows; what was
# typed outlives no request; the records on file never change.

class VerifyMachine(RuleBasedStateMachine):
    """Bookings on the page confirmed by their links, and reception's matches (to the record, to its child, to
    another) and refusals, in any order, on a clinic with a guardian, her child and another patient on file."""

    @initialize()
    def clinic(self):
        self.folder = tempfile.mkdtemp()
        path = Path(self.folder) / "agenda.db"
        seed(path, write_csv(Path(self.folder), CLINIC_CSV))
        self.api = Api(agenda.create_app(path, SECRET, now=Clock(MONDAY), **WEB))
        self.clinic = self.api.app.clinic
        self.guardian = int(known_patient(self.api))
        self.child = int(register_patient(self.clinic, {"name": "Lía", "surname": "Vidal", "birthDate": "03/04/2019",
                                                        "guardianNif": KNOWN}, source="desk:ana"))
        self.other = int(self.api.new_patient(nif=valid_dni(520), name="Otro"))
        self.on_file = {key: row(self.api, "patients", key) for key in (self.guardian, self.child, self.other)}
        self.asked, self.ended = [], set()

    def teardown(self):
        self.clinic.db.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @rule(nif=st.sampled_from([KNOWN, valid_dni(520), valid_dni(521)]), child=st.booleans(),
          slot=st.sampled_from([(day, time) for day in ("2026-11-24", "2026-11-26", "2026-11-27")
                                for time in ("09:00", "09:30", "10:00", "10:30")]))
    def book_and_confirm(self, nif, child, slot):
        n = len(self.asked)
        try:
            request_booking(self.clinic, ask(nif=nif, child=child, day=slot[0], time=slot[1], name=f"Prov{n}",
                                             birth_date="2019-01-01" if child else "1985-03-02",
                                             email=f"prov{n}@example.es"), f"203.0.113.{n}")
        except ClinicError as refusal:
            assert refusal.code in ("SLOT_NOT_AVAILABLE", "WEB_BUSY"), refusal.code
            return
        request = dict(self.api.db().execute("SELECT * FROM web_requests ORDER BY id DESC LIMIT 1").fetchone())
        with self.clinic.db.transaction() as conn:
            token = new_token(conn, request["appointment_id"])
        assert confirm_booking(self.clinic, token) == "confirmed"
        self.asked.append(request)

    @rule(day=st.sampled_from(["24/11/2026", "26/11/2026", "27/11/2026"]), time=st.sampled_from(["09:00", "09:20"]),
          who=st.sampled_from(["guardian", "child"]))
    def the_caller_books_one_on_file_elsewhere(self, day, time, who):
        answer = self.api.post("/appointments", {"date": day, "time": time, "doctorId": "RUIZ", "insuranceId": "PRIV",
                                                 "patientId": str(getattr(self, who))})
        assert answer.status_int in (201, 409), answer.text

    @rule(data=st.data(), to=st.sampled_from(["record", "child", "other", "default"]))
    def match(self, data, to):
        self.end(data, lambda visit: match_request(self.clinic, visit, "desk:ana", patient_id={
            "record": self.guardian, "child": self.child, "other": self.other, "default": None}[to]))

    @rule(data=st.data())
    def cancelled_meanwhile(self, data):
        """Reception (or the typed address's link) cancels a visit asked, ended or not."""
        if self.asked:
            try:
                cancel_appointment(self.clinic, data.draw(st.sampled_from(self.asked))["appointment_id"],
                                   source="desk:ana")
            except ClinicError as refusal:
                assert refusal.code in ("APPOINTMENT_ALREADY_CANCELLED", "APPOINTMENT_NOT_FOUND"), refusal.code  # closed

    @rule(data=st.data())
    def refuse(self, data):
        self.end(data, lambda visit: refuse_request(self.clinic, visit, "desk:ana"))

    def end(self, data, action):
        """One of reception's ends on a visit asked: ended whole, or refused with nothing changed."""
        if not self.asked:
            return
        request = data.draw(st.sampled_from(self.asked))
        before, targets = table_rows(self.clinic.db.path), on_file(self.api.db(), request["typed_nif"])
        try:
            action(request["appointment_id"])
        except ClinicError as refusal:
            event(f"reception refused in words: {refusal.rule}")
            assert table_rows(self.clinic.db.path) == before
            return
        event("reception ended a request")
        assert request["case_of"] == "verify" and request["id"] not in self.ended
        self.ended.add(request["id"])
        ended = row(self.api, "web_requests", request["id"])
        visit = row(self.api, "appointments", request["appointment_id"])
        assert ended["ended_at"] and ended["typed_nif"] is None and visit["pending"] is None
        assert visit["status"] == "cancelled" or visit["patient_id"] in targets  # the NIF's record, or its child

    @invariant()
    def the_menu_counts_the_list_and_nothing_typed_outlives_its_request(self):
        if not hasattr(self, "api"):
            return
        listed = to_verify(self.clinic, "cli:test")
        assert verify_count(self.clinic) == len(listed) == len([
            request for request in self.asked if request["case_of"] == "verify" and request["id"] not in self.ended])
        live = {name for (name,) in self.api.db().execute("SELECT name FROM live_patients")}
        assert not live & {f"Prov{n}" for n, request in enumerate(self.asked) if request["id"] in self.ended}
        assert {key: row(self.api, "patients", key) for key in self.on_file} == self.on_file


VerifyMachine.TestCase.settings = settings(max_examples=int(os.environ.get("AGENDA_VERIFY_EXAMPLES", "12")),
                                           stateful_step_count=10, deadline=None,
                                           suppress_health_check=[HealthCheck.too_slow])
TestReceptionEndsEachRequestWholeOrNotAtAll = VerifyMachine.TestCase


def test_a_request_whose_visit_was_cancelled_meanwhile_stays_listed_until_reception_closes_it_and_its_typing_goes(web):
    known_patient(web)
    request = confirmed(web)
    visit = request["appointment_id"]
    with web.app.clinic.db.transaction() as conn:
        token = new_link(conn, visit, "message", web.app.clinic.clock())  # the confirmation's link, typed address's
    patient = webtest.TestApp(web.app)
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', patient.get(f"/cita/{token}").text)[1]
    patient.post(f"/cita/{token}/anular", {"csrf": csrf, "seguro": "1"})  # whoever typed it cancels it by the link
    assert row(web, "appointments", visit)["status"] == "cancelled"
    client, csrf = desk_of(web)
    listed = client.get("/desk/verify").html.select_one(f"#verify-{visit}")
    assert listed is not None and "anulada" in listed.text
    assert not listed.select(f'form[action="/desk/verify/{visit}/match"]')  # nothing to match: only to close
    page = client.post(f"/desk/verify/{visit}/match", {"csrf": csrf}, expect_errors=True)
    assert page.status_int == 400 and row(web, "web_requests", request["id"])["ended_at"] is None
    client.post(f"/desk/verify/{visit}/refuse", {"csrf": csrf})
    assert typed_kept(web) == [] and row(web, "web_requests", request["id"])["typed_nif"] is None
    assert [kind for (kind,) in web.db().execute("SELECT kind FROM outbox WHERE appointment_id = ? ORDER BY id",
                                                 (visit,))].count("notice") == 1  # the link's own, no second one
