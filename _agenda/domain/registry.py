"""Patients at the clinic's doors ("A patient's identity", "Patient search"): found by NIF, registered,
searched as reception types them, and a patient's record with their appointments. No HTTP here."""

from ..values.refusals import ClinicError, invalid
from ..values.fields import fold, normalise_nif, numeric_id, parse_phone
from ..storage.events import record_event
from .patients import INHERITED, insert_patient, patient_fields
from .identity import identities, identity
from .appointments import live_appointments
from .booking import channel_of

SEARCH_WORDS, SEARCH_CHARS = 10, 200  # the most a patient search takes ("Nothing stalls the caller")


def quietly(parse, text):
    try:
        return parse(text)
    except ClinicError:
        return None


def find_patient(clinic, nif_text, reader):
    """The patient with this NIF, through the one door: the read noted for `reader` ("A patient's identity")."""
    row = clinic.conn().execute("SELECT id FROM live_patients WHERE nif = ?", (normalise_nif(nif_text),)).fetchone()
    if row is None:
        raise ClinicError("PATIENT_NOT_FOUND", "no patient with that nif")
    return identity(clinic, row["id"], reader, "patient")


def register_patient(clinic, fields, source="api"):
    """A new patient from name, surname, birthDate, nif, phone texts; its id. A known NIF is a 409. At the
    desk, a guardianNif names a guardian, and a child under 14 under them needs no NIF of their own."""
    guardian_nif = fields.get("guardianNif") if channel_of(source) == "desk" else None
    patient = patient_fields(fields, clinic.today(), guarded=bool(guardian_nif))
    at = clinic.clock()
    with clinic.db.transaction() as conn:
        existing = patient["nif"] and conn.execute("SELECT id FROM live_patients WHERE nif = ?",
                                                   (patient["nif"],)).fetchone()
        if existing:
            raise ClinicError("PATIENT_ALREADY_EXISTS", "a patient with that nif exists", field="nif",
                              patientId=str(existing["id"]))
        if guardian_nif:
            guardian = conn.execute(f"SELECT id, {', '.join(INHERITED)}, messages FROM live_patients WHERE nif = ?",
                                    (quietly(normalise_nif, guardian_nif),)).fetchone()
            if guardian is None:
                raise invalid("no patient has the guardian's nif", "guardian", "guardianNif")
            patient.update(guardian_id=guardian["id"],
                           **{name: guardian[name] if patient[name] is None else patient[name]
                              for name in (*INHERITED, "messages")})  # her e-mail, and her choice with it
        row = insert_patient(conn, patient, at, source)
        record_event(conn, at, source, "patient.created", "patient", row["id"], after=row)
    return str(row["id"])


def registered_as(clinic, patient_id, name):
    """Whether the live patient with this id was registered with this name (a registration sent again)."""
    return clinic.conn().execute("SELECT 1 FROM live_patients WHERE id = ? AND name = ?",
                               (numeric_id(patient_id), (name or "").strip())).fetchone() is not None


def search_patients(clinic, text, reader):
    """Patients by NIF, phone or name (up to 20), best matches first, through the one door (the read noted
    for `reader`)."""
    keys = patients_matching(clinic, (text or "").strip())
    found = identities(clinic, keys, reader, "search")
    return [found[key] for key in keys if key in found]


def patients_matching(clinic, text):
    """The ids of the patients as reception types them ("Patient search"): a NIF (separators or none, a
    child's by their live guardian's) or a phone (any format) exactly; else every word, folded, within the
    name and surnames, in any order."""
    if not text:
        return []
    if len(text) > SEARCH_CHARS or len(text.split()) > SEARCH_WORDS:
        raise invalid(f"a search takes at most {SEARCH_WORDS} words and {SEARCH_CHARS} characters",
                      "search_length", "q")
    found = []
    for where, value in (("nif = ?1 OR guardian_nif = ?1", quietly(normalise_nif, text)),
                         ("phone_e164 = ?1", quietly(parse_phone, text))):
        if value:
            found += [row[0] for row in clinic.conn().execute(
                f"SELECT id FROM live_patients WHERE {where} ORDER BY nif IS NULL, id LIMIT 20", (value,))]
    words = fold(text).split()
    if not found and words:
        found = [row[0] for row in clinic.conn().execute(
            "SELECT id FROM live_patients WHERE " + " AND ".join(["search LIKE ?"] * len(words))
            + " ORDER BY search, id LIMIT 20", ["%" + word + "%" for word in words])]
    return list(dict.fromkeys(found))


def patient_record(clinic, patient_id, reader):
    """A patient and their live appointments, the coming ones first, then the past, through the one door
    (the read noted for `reader`)."""
    patient = identity(clinic, clinic.require_patient(patient_id), reader, "patient")
    appointments = live_appointments(clinic, patient_ids=[patient["id"]])
    today = clinic.today().isoformat()
    coming = [a for a in appointments if a["date"] >= today]
    return {**patient, "appointments": coming + [a for a in appointments if a["date"] < today][::-1]}
