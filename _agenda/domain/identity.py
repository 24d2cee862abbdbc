"""One door for a patient's identity ("A patient's identity"): every name, surname, NIF, phone and birth
date Agenda shows, a guardian's too, is read here and nowhere else; blocked patients are left out, as
patients and as guardians, and every read, allowed or refused, is noted in the access record here."""

import json

from ..values.refusals import ClinicError
from ..values.fields import numeric_id
from ..storage.events import record_event
from .patients import PATIENT_COLUMNS

# The patient's own columns the door gives (PATIENT_COLUMNS): all but the guardian, joined only while live, and
# the search's folded name.
SHOWN = tuple(column for column in PATIENT_COLUMNS if column.name not in ("guardian_id", "search"))
# Who a patient is, with their guardian while the guardian is live: the one query of identity.
IDENTITY = f"""SELECT {', '.join(f'p.{column.name}' for column in SHOWN)}, g.id AS guardian_id,
       g.name AS guardian_first, g.surname AS guardian_surname, g.nif AS guardian_nif
FROM patients p LEFT JOIN patients g ON g.id = p.guardian_id AND g.blocked_at IS NULL
WHERE p.id IN (SELECT value FROM json_each(?1)) AND (p.blocked_at IS NULL OR ?2)"""


def full_name_sql(table):
    """`full_name` as SQL over a patients row `table`."""
    return (f"CASE WHEN coalesce({table}.name, '') = '' THEN nullif({table}.surname, '')"
            f" WHEN coalesce({table}.surname, '') = '' THEN {table}.name ELSE {table}.name || ' ' || {table}.surname END")


# Who a patient is, written by SQLite beside the row that names them (a list of hundreds, or the caller's one
# read, is then one statement): `identity_of`'s keys as SQL over the live patient `p` (live_patients) and their
# live guardian `g`, joined by GUARDIAN_JOIN. A query that uses them passes its rows to `noted`.
GUARDIAN_JOIN = "LEFT JOIN patients g ON g.id = p.guardian_id AND g.blocked_at IS NULL"
IDENTITY_SQL = {"full_name": full_name_sql("p"),
                "shown_nif": "CASE WHEN coalesce(p.nif, '') != '' THEN p.nif ELSE g.nif END",
                "phone_e164": "p.phone_e164",
                "guardian_name": f"CASE WHEN g.id IS NULL THEN NULL ELSE {full_name_sql('g')} END",
                "email": "p.email", "messages": "p.messages", "note": "p.note"}


def identity_fields(words):
    """json_object's arguments for who a patient is in a shape's words ({word: key of `identity_of`})."""
    return ", ".join(f"'{word}', {IDENTITY_SQL[key]}" for word, key in words.items())


def noted(clinic, rows, reader, kind):
    """Note the read of what rows written with `identity_fields` showed: each row's patient (its first value)
    and live guardian (its second, `g.id`), as `identities` notes them."""
    clinic.access.note(reader, kind, {row[0] for row in rows} | {row[1] for row in rows if row[1] is not None})


def full_name(name, surname):
    """Name and surname, or whichever there is, or None."""
    return " ".join(part for part in (name, surname) if part) or None


def identity_of(row):
    """A patient as Agenda shows them: `nif` their own, `shown_nif` theirs or their live guardian's (a child
    is found and called by it), `phone` in E.164 when it could be read, else as typed."""
    guardian = full_name(row["guardian_first"], row["guardian_surname"]) if row["guardian_id"] else None
    return {**{column.key: row[column.name] for column in SHOWN}, "full_name": full_name(row["name"], row["surname"]),
            "shown_nif": row["nif"] or row["guardian_nif"], "phone": row["phone_e164"] or row["phone"],
            "guardian_id": row["guardian_id"], "guardian_name": guardian, "guardian_nif": row["guardian_nif"]}


def identities(clinic, patient_ids, reader, kind):
    """{id: identity} of the live patients among `patient_ids` (the blocked left out), each with their
    live guardian's name and NIF; the read noted for `reader` as `kind`, the guardians shown included."""
    keys = sorted({key for key in map(numeric_id, patient_ids) if key is not None})
    if not keys:
        return {}
    found = {row["id"]: identity_of(row) for row in clinic.conn().execute(IDENTITY, (json.dumps(keys), 0))}
    shown = set(found) | {person["guardian_id"] for person in found.values() if person["guardian_id"]}
    clinic.access.note(reader, kind, shown)
    return found


def identity(clinic, patient_id, reader, kind):
    """One live patient's identity, the read noted; PATIENT_NOT_FOUND when there is none, or they are blocked."""
    found = identities(clinic, [patient_id], reader, kind).get(numeric_id(patient_id))
    if found is None:
        raise ClinicError("PATIENT_NOT_FOUND", "no patient with that patientId")
    return found


def refused(clinic, reader, kind, patient_ids):
    """Note a read of these patients refused to `reader` (a role that may not, a blocked record without a reason)."""
    clinic.access.note(reader, kind, [key for key in map(numeric_id, patient_ids) if key is not None], allowed=False)


def opened(clinic, patient_id, reader, why):
    """A patient's identity, blocked ones too: opening a blocked record is an explicit act for a court or an
    authority, its reason in the audit trail and the read noted as `blocked`; refused, and noted, without one."""
    key = numeric_id(patient_id)
    rows = [] if key is None else clinic.conn().execute(IDENTITY, (json.dumps([key]), 1)).fetchall()
    if not rows:
        raise ClinicError("PATIENT_NOT_FOUND", "no patient with that patientId")
    person = identity_of(rows[0])
    if person["blocked_at"] is None:
        return identity(clinic, key, reader, "export")
    why = (why or "").strip()
    if not why:
        refused(clinic, reader, "blocked", [key])
        raise ClinicError("PATIENT_BLOCKED", f"patient {key} is blocked since an erasure request (erasable "
                          f"from {person['erasable_from']}); opening it is for a court or an authority: say why")
    with clinic.db.transaction() as conn:
        record_event(conn, clinic.clock(), "cli" if reader.startswith("cli") else reader, "patient.blocked_opened",
                     "patient", key, after={"why": why[:500]})
    clinic.access.note(reader, "blocked", {key} | ({person["guardian_id"]} if person["guardian_id"] else set()))
    return person


def with_identities(clinic, records, reader, kind):
    """Appointment records (dicts with patient_id) with who the patient is: patient_name, nif (theirs or their
    guardian's), phone (E.164); the read noted. Records of a patient not shown are left out."""
    found = identities(clinic, [record["patient_id"] for record in records], reader, kind)
    return [{**record, "patient_name": person["full_name"], "nif": person["shown_nif"], "phone": person["phone_e164"],
             "guardian_name": person["guardian_name"]}
            for record in records if (person := found.get(record["patient_id"])) is not None]
