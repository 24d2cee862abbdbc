"""Reception verifies who booked on the web ("Por verificar"): the confirmed web visits whose NIF names a record
the page could not book on, what was typed beside the record on file and its phone to call, and the two ends of
each, matched to that record or refused, back to this page."""

import datetime as dt

from ..values.refusals import ClinicError
from ..domain.verifying import match_request, refuse_request, to_verify
from ..web.answers import clinic, status_of
from .shared import catalog_names, desk_page, desk_refusal, desk_source, done, form


def desk_verify(error=None, status=200, elsewhere=None):
    """The list to verify, soonest visit first; `error`, a refused end in the desk's words (`elsewhere`: the other
    visit of the patient on file it names)."""
    requests = to_verify(clinic(), desk_source())
    for request in requests:
        request["visit"]["weekday"] = dt.date.fromisoformat(request["visit"]["date"]).weekday()
    return desk_page("verify", status=status, requests=requests, error=error, elsewhere=elsewhere,
                     center_names=catalog_names("centers"))


def desk_match(appointment_id):
    """The visit onto the record on file (or the child of it chosen, `patientId`)."""
    try:
        patient = match_request(clinic(), appointment_id, desk_source(), patient_id=form("patientId"))
    except ClinicError as error:
        return desk_verify(desk_refusal(error), status_of(error), error.extra.get("elsewhere"))
    done("/desk/verify", ("verify_matched", {}), patient=patient)


def desk_refuse(appointment_id):
    """The visit refused: cancelled without a message, the provisional record gone."""
    try:
        refuse_request(clinic(), appointment_id, desk_source())
    except ClinicError as error:
        return desk_verify(desk_refusal(error), status_of(error))
    done("/desk/verify", ("verify_refused", {}))
