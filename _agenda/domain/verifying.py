"""Reception's side of the web booking ("Por verificar"): the visits a patient confirmed by e-mail whose NIF the page
could not book on (`to_verify`), what was typed beside the record on file with that NIF, and reception's two ends
of each after calling the phone on file: the visit moved onto that record (`match_request`) or refused
(`refuse_request`), each one transaction through the owners' writes. No HTTP here."""

import datetime as dt

from ..values.refusals import invalid
from ..values.fields import numeric_id
from ..storage.events import record_event
from .appointments import set_patient, set_pending, with_cancelled
from .booking import CHANNELS, patient_elsewhere, Span
from .changes import cancelled
from .identity import identities
from .links import forget_links
from .outbox import queue_message
from .patients import block_patient, remove_patient
from .rights import anonymise
from .web_requests import end_request

# The confirmed 'verify' requests reception has not ended, each with its visit held for reception (or cancelled
# meanwhile, by the typed address's link or at the desk: reception still closes it, so that what was typed goes).
OPEN = """SELECT w.id AS request_id, w.appointment_id, w.patient_id AS typed_id, w.typed_nif, w.confirmed_at
FROM web_requests w JOIN appointments a ON a.id = w.appointment_id
WHERE w.case_of = 'verify' AND w.confirmed_at IS NOT NULL AND w.ended_at IS NULL AND a.pending = 'reception'"""
# The live record with a NIF, then its live children (a child booked under a guardian's NIF is matched to one).
ON_FILE = """SELECT id FROM live_patients WHERE nif = ?1 UNION ALL
SELECT c.id FROM live_patients c JOIN live_patients g ON g.id = c.guardian_id WHERE g.nif = ?1 AND c.id != g.id"""
REFUSED = "refused by reception: the patient on file did not ask for it"  # the cancel reason a refusal writes


def verify_count(clinic):
    """How many confirmed web visits wait for reception to verify who booked them (the desk's menu says it)."""
    return clinic.conn().execute(f"SELECT count(*) FROM ({OPEN})").fetchone()[0]


def on_file(conn, nif):
    """[patient id] a request naming `nif` may be matched to: the live record with it first, then its children."""
    return [row[0] for row in conn.execute(ON_FILE, (nif,))] if nif else []


def to_verify(clinic, reader):
    """The confirmed 'verify' requests, soonest visit first: {request_id, appointment_id, visit (its record), typed
    (who the provisional record says, as typed), on_file [identity]: the live record with the typed NIF and its
    children, whose phone reception calls}; every patient shown read through the one door for `reader`."""
    conn = clinic.conn()
    requests = [dict(row) for row in conn.execute(f"{OPEN} ORDER BY a.date, a.time, a.id")]
    if not requests:
        return []
    keys = [request["appointment_id"] for request in requests]
    visits = {visit["id"]: visit for visit in with_cancelled(
        clinic, f"a.id IN ({', '.join('?' * len(keys))})", keys, reader, "search")}
    files = {request["request_id"]: on_file(conn, request["typed_nif"]) for request in requests}
    people = identities(clinic, [request["typed_id"] for request in requests] +
                        [key for keys in files.values() for key in keys], reader, "search")
    return [{**request, "visit": visits.get(request["appointment_id"]), "typed": people.get(request["typed_id"]),
             "on_file": [people[key] for key in files[request["request_id"]] if key in people]}
            for request in requests if request["appointment_id"] in visits]


def open_request(conn, appointment_id):
    """The open 'verify' request of a visit (as OPEN gives it) and the visit's row; refused when the visit has none
    (ended by another receptionist, or never one)."""
    key = numeric_id(appointment_id)
    request = None if key is None else conn.execute(f"{OPEN} AND w.appointment_id = ?", (key,)).fetchone()
    if request is None:
        raise invalid("that visit waits for no verification: another receptionist may have ended it", "verify_ended",
                      "appointmentId")
    return dict(request), dict(conn.execute("SELECT * FROM appointments WHERE id = ?", (key,)).fetchone())


def match_request(clinic, appointment_id, source, patient_id=None):
    """The visit onto the record on file (`patient_id`: that record or one of its children; None: the record with
    the typed NIF), through the door's patient rule (refused, naming the other visit, when that patient is
    elsewhere then); the typed address's links stop, the provisional record goes, the request ends, and the
    patient on file is sent the usual confirmation. The patient's id."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        request, before = open_request(conn, appointment_id)
        if before["status"] == "cancelled":
            raise invalid("that visit was cancelled meanwhile: close the request instead", "verify_cancelled",
                          "appointmentId")
        targets = on_file(conn, request["typed_nif"])
        target = numeric_id(patient_id) if patient_id not in (None, "") else next(iter(targets), None)
        if target is None or target not in targets:
            raise invalid("no record on file with that NIF to match it to: register the patient at the desk, or"
                          " refuse it", "verify_no_record", "patientId")
        span = Span(before["center_id"], before["end_time"], before["busy_until"], None, None)
        elsewhere = patient_elsewhere(clinic, conn, target, dt.date.fromisoformat(before["date"]), before["time"],
                                      span, CHANNELS["desk"], before)
        if elsewhere is not None:
            raise elsewhere
        forget_links(conn, request["typed_id"])
        after = set_patient(conn, before["id"], target, at)
        end_request(conn, before["id"], at, source)
        forget_provisional(clinic, conn, request["typed_id"], at, source)
        record_event(conn, at, source, "appointment.matched", "appointment", before["id"], before=before, after=after)
        queue_message(conn, before["id"], "confirmation", at)
    return target


def refuse_request(clinic, appointment_id, source):
    """The visit cancelled without a message (its slot free again; one cancelled meanwhile only closed), the typed
    address's links stopped, the provisional record's identity gone and the request ended: the patient on file did
    not ask for it."""
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        request, before = open_request(conn, appointment_id)
        forget_links(conn, request["typed_id"])
        set_pending(conn, before["id"], None, at)  # ended: no longer reception's to verify
        if before["status"] != "cancelled":  # cancelled meanwhile: only closed
            cancelled(clinic, conn, before, at, REFUSED, "appointment.refused", source, notice=False)
        end_request(conn, before["id"], at, source)
        forget_provisional(clinic, conn, request["typed_id"], at, source)


def forget_provisional(clinic, conn, patient_id, at, source):
    """Inside a match or a refusal: the provisional record gone when nothing holds it, else (a refused visit kept,
    cancelled, for the clinic's counts) blocked and anonymised at once, as an erasure ends: what was typed about
    someone who may not be its author is kept nowhere."""
    if not remove_patient(conn, patient_id):
        block_patient(conn, patient_id, at, clinic.today())
        anonymise(conn, patient_id, at, source)
