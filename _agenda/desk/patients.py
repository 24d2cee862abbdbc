"""A patient at the desk: the search, their page (details to correct, appointments), booking for them,
and for admins: who has read their data ("Access record"), their copy and their erasure ("Erasure and
retention")."""

import datetime as dt
import json

import bottle

from ..values.refusals import ClinicError
from ..values.fields import clinic_moment, format_date, parse_date
from ..domain.patients import DESK_FIELDS, DESK_FORM, field_text, LANGUAGES
from ..domain.identity import identity
from ..domain.rights import erasure_preview, patient_copy, rectify, request_erasure
from ..words.pages import copy_page
from ..web.answers import clinic, query_text, status_of
from .shared import (desk_page, desk_refusal, desk_source, desk_wrong_fields, dialled, done, form, new_patient_typed)
from ..domain.appointments import cancelled_of
from ..domain.availability import availability
from ..domain.doctors import doctors_with_hours
from ..domain.registry import patient_record, register_patient, search_patients


def desk_patients():
    """The patient search; the words searched come by POST, never in the address ("Staff desk")."""
    q = form("q") or "" if bottle.request.method == "POST" else ""
    try:
        found = search_patients(clinic(), q, reader=desk_source()) if q else None
    except ClinicError as error:
        return desk_page("patients", status=status_of(error), q=q, found=None, wrong=desk_wrong_fields(error))
    return desk_page("patients", q=q, found=found)


def desk_new_patient(error=None, status=200, wrong=None):
    """A new patient's form, to register them without booking (a child under a guardian's NIF too); after a
    refusal, what was typed, each wrong field named."""
    typed = {name: (form(name) or "") if error else "" for name in (*DESK_FIELDS, "guardianNif", "underGuardian")}
    return desk_page("patient_new", status=status, typed=typed, error=error, wrong=wrong or {})


def desk_register_patient():
    """Register the patient of the form, then show their page; a NIF already registered is refused."""
    try:
        patient_id = register_patient(clinic(), new_patient_typed(), source=desk_source())
    except ClinicError as error:
        return desk_new_patient(desk_refusal(error), status_of(error), desk_wrong_fields(error))
    done(f"/desk/patients/{int(patient_id)}", ("patient_registered", {}), patient=int(patient_id))


def desk_patient(patient_id, error=None, status=200, wrong=None):
    """A patient: their details (to correct), their coming, past and cancelled appointments, book for them."""
    patient = patient_record(clinic(), patient_id, reader=desk_source())
    typed = {name: form(name) or "" for name in DESK_FIELDS} if error else {
        column.field: dialled(value) if column.shape == "phone" else field_text(column, value)
        for column in DESK_FORM for value in [patient[column.key]]}
    shown = {column.field: field_text(column, patient[column.key]) or (LANGUAGES[0] if column.shape == "language"
                                                                       else "") for column in DESK_FORM}
    return desk_page("patient", status=status, patient=patient, typed=typed, shown=shown, error=error, wrong=wrong or {},
                     cancelled=cancelled_of(clinic(), patient["id"], desk_source()), today=clinic().today().isoformat())


def desk_patient_book(patient_id):
    """Book for this patient: a doctor and a first day, then the doctor's next free slots to choose from."""
    patient = patient_record(clinic(), patient_id, reader=desk_source())
    doctors = [d for d in doctors_with_hours(clinic()) if not d["retired_from"]]
    doctor_id = query_text("doctorId") or (doctors[0]["id"] if doctors else None)
    first = parse_date(query_text("date"), "date") if query_text("date") else clinic().today()
    free = availability(clinic(), doctor_id=doctor_id, first=first, last=first + dt.timedelta(days=13),
                        channel="desk")[:40] if doctor_id else []
    return desk_page("patient_book", patient=patient, doctors=doctors, doctor_id=doctor_id, first=first, free=free)


def desk_correct_patient(patient_id):
    """Correct a patient's details, checked as a new patient is; a NIF another patient holds is refused."""
    try:
        rectify(clinic(), patient_id, {name: form(name) or "" for name in DESK_FIELDS}, desk_source())
    except ClinicError as error:
        return desk_patient(patient_id, desk_refusal(error), status_of(error), desk_wrong_fields(error))
    done(f"/desk/patients/{int(patient_id)}", ("patient_saved", {}), patient=int(patient_id))


def desk_patient_access(patient_id):
    """Who has seen this patient's data (admins only): a row a reader, the latest first; a reader's days a
    click away (?reader=) ("Access record")."""
    patient = identity(clinic(), patient_id, desk_source(), "access")
    reader = query_text("reader")
    days = clinic().access.of_patient(patient["id"], reader=reader)[::-1] if reader else None
    return desk_page("access", patient=patient, readers=clinic().access.readers_of(patient["id"]), reader=reader,
                     days=days, when=lambda moment: clinic_moment(moment, clinic().tz))


def desk_patient_copy(patient_id):
    """The patient's copy as a download (admins only): ?format=json, else the page ("A patient's copy")."""
    copy = patient_copy(clinic(), patient_id, desk_source())
    as_json = bottle.request.query.get("format") == "json"
    name = f"paciente-{copy['patient']['id']}.{'json' if as_json else 'html'}"
    bottle.response.set_header("Content-Disposition", f'attachment; filename="{name}"')
    if as_json:
        bottle.response.content_type = "application/json; charset=utf-8"
        return json.dumps(copy, ensure_ascii=False, indent=2)
    bottle.response.content_type = "text/html; charset=utf-8"
    return copy_page(copy, clinic().tz)


def desk_erase_page(patient_id):
    """What an erasure request would do, to confirm (admins only)."""
    preview = erasure_preview(clinic(), patient_id, desk_source())
    return desk_page("erase", patient=preview["patient"], preview=preview, today=clinic().today())


def desk_erase(patient_id):
    """Record the erasure request: the coming appointments cancelled, the patient blocked ("Erasure and retention")."""
    result = request_erasure(clinic(), patient_id, desk_source(), desk_source())
    done("/desk/patients", ("erasure_done", {"count": len(result["cancelled"])}),
         ("erased_now", {}) if result["anonymised"] else
         ("erased_blocked", {"date": format_date(result["erasable_from"])}))
