"""The clinic's context (`Clinic`): its database, settings and clock, each channel's window and the look-ups
of what a request names. The operations are module functions taking it ("One domain layer"). No HTTP here."""

import datetime as dt

from ..values.settings import clinic_zone, Settings
from ..values.refusals import ClinicError
from ..values.fields import numeric_id
from .access import AccessRecord
from .slots import booking_window
from .appointments import appointment_row


class Clinic:
    """The clinic over one database, its settings and a clock; the operations taking it read plain data, and
    each change is one BEGIN IMMEDIATE transaction recording an event from `source` ("api", "cli", ...);
    refusals raise ClinicError ("One domain layer")."""

    def __init__(self, db, settings=None, clock=None):
        self.db = db
        self.settings = settings or Settings()
        self.tz = clinic_zone(self.settings.tz)
        self.clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))
        self.access = AccessRecord(db, self.clock)

    def conn(self):
        return self.db.connection()

    def today(self):
        return self.clock().astimezone(self.tz).date()

    def window(self, channel="caller"):
        """When a channel may book now ("Each channel's rules"): the caller's notice and horizon, or
        the desk's (its CLI twins' too), where a cell already begun takes a walk-in until its end; or the
        patients' own page's, inside the caller's: its notice and horizon narrow it ("Patients book themselves")."""
        settings = self.settings
        if channel == "web":
            return booking_window(self.clock(), self.tz, max(settings.web_notice_hours * 60,
                                                             settings.min_notice_minutes),
                                  min(settings.web_horizon_days, settings.horizon_days))
        if channel == "desk":
            return booking_window(self.clock(), self.tz, self.settings.desk_min_notice_minutes,
                                  horizon_months=self.settings.desk_horizon_months, walk_in=True)
        return booking_window(self.clock(), self.tz, self.settings.min_notice_minutes, self.settings.horizon_days)

    # Look-ups: each id the caller names, or its 404

    def require_center(self, center_id):
        if center_id is not None and self.conn().execute(
                "SELECT 1 FROM centers WHERE id = ?", (center_id,)).fetchone() is None:
            raise ClinicError("CENTER_NOT_FOUND", "no center with that centerId")
        return center_id

    def require_doctor(self, doctor_id):
        row = self.conn().execute("SELECT id, name, speciality_id FROM doctors WHERE id = ?",
                                  (doctor_id,)).fetchone()
        if row is None:
            raise ClinicError("DOCTOR_NOT_FOUND", "no doctor with that doctorId")
        return row

    def require_speciality(self, speciality_id):
        if self.conn().execute("SELECT 1 FROM specialities WHERE id = ?", (speciality_id,)).fetchone() is None:
            raise ClinicError("SPECIALITY_NOT_FOUND", "no speciality with that specialityId")

    def require_insurance(self, insurance_id):
        if self.conn().execute("SELECT 1 FROM insurances WHERE id = ?", (insurance_id,)).fetchone() is None:
            raise ClinicError("INSURANCE_NOT_FOUND", "no insurance with that insuranceId")

    def require_patient(self, patient_id):
        """The id (a number) of the live patient with this id (text or number); PATIENT_NOT_FOUND when none."""
        key = numeric_id(patient_id)
        if key is None or self.conn().execute("SELECT 1 FROM live_patients WHERE id = ?", (key,)).fetchone() is None:
            raise ClinicError("PATIENT_NOT_FOUND", "no patient with that patientId")
        return key

    def require_appointment(self, appointment_id, if_cancelled):
        """A live appointment's row: 404 when there is none, `if_cancelled` (code, message) when it was cancelled."""
        return appointment_row(self, appointment_id, if_cancelled)
