"""A pending visit holds its slot against every channel and is never in the caller's lists (docs/design.md,
"Patients book themselves"): a state machine interleaves bookings of the patients' page (new, known and verified
patients), the caller's and the desk's bookings of the same slots, confirmations by the link and the clock. After
each step, read from the tables: the caller's day list is exactly the live visits the page does not hold; a visit
held and not expired overlaps no other live visit of its doctor and is offered to no one; a visit whose time has
passed is released by the next transaction of the door, a patient it alone made with it."""

import datetime as dt
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import invariant, rule, RuleBasedStateMachine

import agenda
from _agenda.domain.booking import Visit
from _agenda.domain.changes import book_appointment
from _agenda.domain.web_booking import confirm_booking, request_booking
from _agenda.domain.web_requests import new_token
from _agenda.values.refusals import ClinicError

from conftest import Api, CLINIC_CSV, Clock, MONDAY, SECRET, seed, valid_dni, write_csv
from test_web_booking import ask, WEB

SLOTS = (("MARTIN", "MG", "09:00", "09:30"), ("MARTIN", "MG", "09:30", "10:00"), ("RUIZ", "PED", "09:00", "09:20"),
         ("RUIZ", "PED", "09:20", "09:40"))
DAY = "2026-11-24"
KNOWN = 3  # patients the clinic knows, each with an e-mail; the page's others are new


class PendingMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="pending-"))
        db_path = self.folder / "agenda.db"
        seed(db_path, write_csv(self.folder, CLINIC_CSV))
        self.clock = Clock(MONDAY)
        self.app = agenda.create_app(db_path, SECRET, now=self.clock, **WEB, web_pending_per_day=50)
        self.api = Api(self.app)
        self.known = [self.api.new_patient(nif=valid_dni(900 + n), phone=f"6000000{n:02d}",
                                           email=f"k{n}@example.es") for n in range(KNOWN)]
        self.made = []  # (appointment id, token)

    def teardown(self):
        self.app.clinic.db.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def conn(self):
        return self.app.clinic.db.connection()

    def held(self, doctor, start, end):
        """Whether a visit the page holds, not expired, takes part of this doctor's span on the day."""
        return self.conn().execute(
            "SELECT 1 FROM appointments WHERE pending = 'email' AND pending_until > ? AND doctor_id = ? AND date = ?"
            " AND time < ? AND ? < end_time AND status != 'cancelled'",
            (agenda_now(self.clock), doctor, DAY, end, start)).fetchone() is not None

    @rule(slot=st.sampled_from(SLOTS), who=st.integers(0, KNOWN + 2), own_email=st.booleans())
    def book_on_the_page(self, slot, who, own_email):
        doctor, speciality, start, _ = slot
        nif, email = (valid_dni(900 + who), f"k{who}@example.es" if own_email else f"x{who}@example.es") \
            if who < KNOWN else (valid_dni(950 + who), f"n{who}@example.es")
        try:
            request_booking(self.app.clinic, ask(doctor_id=doctor, speciality_id=speciality, time=start, nif=nif,
                                                 email=email), f"198.51.100.{who}")
        except ClinicError as refusal:
            assert refusal.code in ("SLOT_NOT_AVAILABLE", "WEB_BUSY"), refusal.code
            return
        appointment_id = self.conn().execute("SELECT max(appointment_id) FROM web_requests").fetchone()[0]
        with self.app.clinic.db.transaction() as conn:
            self.made.append((appointment_id, new_token(conn, appointment_id)))

    @rule(slot=st.sampled_from(SLOTS), who=st.integers(0, KNOWN - 1))
    def the_caller_books(self, slot, who):
        doctor, _, start, end = slot
        held = self.held(doctor, start, end)
        answer = self.api.post("/appointments", {"date": "24/11/2026", "time": start, "doctorId": doctor,
                                                 "patientId": self.known[who]})
        assert answer.status_int in (201, 409), answer.text
        assert not (held and answer.status_int == 201), "the caller booked a slot the page holds"

    @rule(slot=st.sampled_from(SLOTS), who=st.integers(0, KNOWN - 1))
    def the_desk_books(self, slot, who):
        doctor, _, start, end = slot
        held = self.held(doctor, start, end)
        try:
            book_appointment(self.app.clinic, Visit(self.known[who], doctor, insurance_id="PRIV"),
                             day=dt.date.fromisoformat(DAY), time_text=start, source="desk:ana")
        except ClinicError:
            return
        assert not held, "the desk booked a slot the page holds"

    @rule(data=st.data())
    def the_patient_confirms(self, data):
        if self.made:
            _, token = data.draw(st.sampled_from(self.made))
            assert confirm_booking(self.app.clinic, token) in ("confirmed", "already", "expired")

    @rule(minutes=st.integers(1, 20))
    def time_passes(self, minutes):
        if self.clock.moment + dt.timedelta(minutes=minutes) < MONDAY + dt.timedelta(minutes=55):
            self.clock.moment += dt.timedelta(minutes=minutes)

    @invariant()
    def the_caller_lists_every_live_visit_but_those_the_page_holds(self):
        listed = {int(a["appointmentId"]) for a in self.api.get("/appointments?date=24/11/2026").json["data"]}
        live = {row[0] for row in self.conn().execute(
            "SELECT id FROM appointments WHERE date = ? AND status != 'cancelled' AND pending IS NULL", (DAY,))}
        assert listed == live

    @invariant()
    def a_held_visit_overlaps_nothing_and_is_offered_to_no_one(self):
        for doctor, start, end in self.conn().execute(
                "SELECT doctor_id, time, end_time FROM appointments WHERE pending = 'email' AND pending_until > ?",
                (agenda_now(self.clock),)).fetchall():
            assert self.conn().execute(
                "SELECT count(*) FROM appointments WHERE doctor_id = ? AND date = ? AND status != 'cancelled' AND"
                " time < ? AND ? < end_time", (doctor, DAY, end, start)).fetchone()[0] == 1
            offered = self.api.get(f"/availabilities?doctorId={doctor}&date=24/11/2026").json["data"]
            assert start not in {slot["time"] for slot in offered}

    @invariant()
    def a_released_request_leaves_no_patient_it_alone_made(self):
        assert self.conn().execute(
            "SELECT count(*) FROM web_requests r JOIN patients p ON p.id = r.patient_id WHERE r.released_at IS NOT"
            " NULL AND r.case_of != 'same' AND NOT EXISTS (SELECT 1 FROM appointments a WHERE a.patient_id = p.id)"
            ).fetchone()[0] == 0


def agenda_now(clock):
    return clock().astimezone(dt.timezone.utc).isoformat(timespec="seconds")


PendingMachine.TestCase.settings = settings(max_examples=20, stateful_step_count=15, deadline=None,
                                            suppress_health_check=[HealthCheck.too_slow])
TestAPendingVisitHoldsItsSlot = PendingMachine.TestCase
