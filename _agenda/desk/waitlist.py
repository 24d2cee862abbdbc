"""The waiting list at the desk ("Waiting list"): who waits, oldest first, the free slots that fit them, each
carried to the booking form, and a patient put on the list or taken off it."""

import urllib.parse

from ..values.refusals import ClinicError, invalid
from ..values.fields import all_fields, numeric_id, parse_date
from ..domain.waitlist import (add_waiting, end_waiting, free_now, later_appointments, named, NAMED_UNDER, PAGE,
                               waiting, window_text, Wish)
from ..domain.doctors import doctors_with_hours
from ..domain.registry import patient_record, search_patients
from ..web.answers import clinic, query_text, status_of
from .shared import (catalog_names, desk_centers, desk_page, desk_refusal, desk_source, desk_wrong_fields, done,
                     form)


def desk_waitlist(error=None, status=200, wrong=None):
    """The waiting list, oldest first; the free slots of the next two weeks that fit someone waiting, each
    "Reservar" carrying the patient, their entry, type and insurance to the booking form ("Waiting list"); a
    form to add a patient found by a search, with the later appointment the entry would bring forward."""
    entries, page = waiting(clinic()), int(query_text("page")) if (query_text("page") or "").isdigit() else 0
    free = free_now(clinic(), entries)
    shown = entries[page * PAGE:(page + 1) * PAGE]  # only those drawn are read, through the one door
    names = {entry["id"]: entry for entry in named(clinic(), shown + [w for _, fitting in free
                                                                       for w in fitting[:NAMED_UNDER]], desk_source())}
    typed = {name: form(name) or "" for name in ("doctorId", "specialityId", "centerId", "dateFrom", "dateTo",
                                                 "timeFrom", "timeTo", "note", "insuranceId", "appointmentId")}
    try:
        found, chosen = waiting_patient()
    except ClinicError as refusal:  # a search too long: said beside it
        (found, chosen), error, status, wrong = (None, None), desk_refusal(refusal), status_of(refusal), \
            desk_wrong_fields(refusal)
    return desk_page("waitlist", status=status, entries=[names[w["id"]] for w in shown if w["id"] in names],
                     free=[(slot, [names[w["id"]] for w in fitting[:NAMED_UNDER] if w["id"] in names],
                            len(fitting) - NAMED_UNDER) for slot, fitting in free],
                     page=page, pages=-(-len(entries) // PAGE), waiting_count=len(entries), typed=typed,
                     error=error, wrong=wrong or {}, doctors=doctors_with_hours(clinic()),
                     specialities=catalog_names("specialities"), centers=desk_centers(), window_text=window_text,
                     insurances=catalog_names("insurances"), q=form("q") or "", found=found, chosen=chosen,
                     later=later_appointments(clinic(), chosen["id"]) if chosen else [], booking_of=booking_of)


def waiting_patient():
    """(the patients the add form's search found, or None; the patient chosen, or None), through the one door: the
    one a button chose (or ?patientId=), else the only one the search found."""
    chosen = form("patientId") or query_text("patientId")
    if chosen:
        return None, patient_record(clinic(), chosen, reader=desk_source())
    found = search_patients(clinic(), form("q"), reader=desk_source()) if form("q") else None
    return found, found[0] if found and len(found) == 1 else None


def booking_of(slot, entry):
    """The booking form's address for a waiting entry on a free slot: the slot, the patient, the entry, its visit
    type and its insurance, so that reception books without searching again."""
    asked = {"doctorId": slot.doctor_id, "date": slot.date_text, "time": slot.time, "centerId": slot.center_id,
             "patientId": entry["patient_id"], "waitlistId": entry["id"], "typeId": entry["type_id"],
             "insuranceId": entry["insurance_id"]}
    return "/desk/book?" + urllib.parse.urlencode({key: value for key, value in asked.items() if value}, safe="/:")


def desk_add_waiting():
    """Put the patient chosen (found by a search) on the waiting list for a doctor or a speciality, with the
    insurance to book with and the later appointment it would bring forward, when given."""
    try:
        window = all_fields({"patient_id": patient_chosen,
                             "first": lambda: parse_date(form("dateFrom") or "", "dateFrom"),
                             "last": lambda: parse_date(form("dateTo") or "", "dateTo")})
        add_waiting(clinic(), Wish(doctor_id=form("doctorId"),
                                   speciality_id=None if form("doctorId") else form("specialityId"),
                                   center_id=form("centerId"), time_from=form("timeFrom"), time_to=form("timeTo"),
                                   note=form("note"), appointment_id=form("appointmentId"),
                                   insurance_id=form("insuranceId"), **window), source=desk_source())
    except ClinicError as error:
        return desk_waitlist(desk_refusal(error), status_of(error), desk_wrong_fields(error))
    done("/desk/waitlist", ("waiting_added", {}), patient=numeric_id(form("patientId")))


def patient_chosen():
    """The add form's patient, chosen after a search; refused beside the search when none is."""
    if not form("patientId"):
        raise invalid("choose the patient: search by name, NIF or phone", "required", "patientId")
    return form("patientId")


def desk_end_waiting(entry_id):
    end_waiting(clinic(), entry_id, "removed", desk_source())
    done("/desk/waitlist", ("waiting_removed", {}))
