"""The patients table's one owner ("A patient's columns"): PATIENT_COLUMNS, each column's kind, meaning and what
each stage of an erasure does to it, which drives every other list of a patient's fields; and the only writes to
the table. Who a patient is is read through the one door (identity.py). No HTTP here."""

import functools
from typing import Callable, NamedTuple

from ..values.fields import (all_fields, body_text, child_birth_date, fold, format_date, normalise_nif, optional_phone,
                             parse_email, past_date)
from ..values.refusals import invalid
from ..storage.events import utc_iso, written_row

COLUMN_KINDS = ("identity", "contact", "administrative", "record-keeping")
# What a stage of an erasure does to a column: KEEP it; EMPTY it (NULL); NOW, the stage's moment (UTC); UNTIL, the
# day the retention period ends; FOLDED, the name and surname the stage writes, folded for the search; or "=TEXT",
# that text, "{id}" the patient's id.
KEEP, EMPTY, NOW, UNTIL, FOLDED = "keep", "empty", "now", "until", "folded"
STAGES = ("block", "anonymise")  # an erasure request blocks; the retention run anonymises when the period ends


class Column(NamedTuple):
    """A column of the patients table: what it holds, what each stage of an erasure does to it, and where it goes."""

    name: str  # in the table
    kind: str  # one of COLUMN_KINDS
    meaning: str
    block: str  # what an erasure request's block does to it (a rule above)
    anonymise: str  # what the anonymising does to it, once the retention period ends
    field: str = None  # its name in the API, the desk's forms, the command line and files; None: no one types it
    read: Callable = None  # (fields, today, guarded) -> what the row stores, checked as a new patient's details are
    copy: str = None  # its key in the patient's copy ("A patient's copy"); None: the copy leaves it out
    export: bool = False  # patients.csv carries it under `field`, and import-patients reads it back
    api: str = None  # "both": the caller sends it and reads it under `field`; "sent": sends it, never reads it
    desk: int = 0  # its place in the desk's patient forms; 0: not there
    shape: str = "text"  # how it is typed and shown: text, date (DD/MM/YYYY), nif, phone (the desk dials it), email,
    # language (LANGUAGES), yes_no (YES_NO)
    required: bool = False  # a new patient needs it (a NIF but for a child under a guardian); read first
    inherited: bool = False  # a child under a guardian takes the guardian's when not given, and loses it at her erasure
    shown: str = None  # its key in a patient as the identity door gives them, when not `name`
    headers: tuple = ()  # what else other systems' files head it, folded as `imports.header_key` folds a header

    @property
    def key(self):
        """Its key in a patient as the identity door gives them."""
        return self.shown or self.name


def read_name(fields, today, guarded):
    return body_text(fields, "name", required=True)


def read_surname(fields, today, guarded):
    return body_text(fields, "surname")


def read_birth_date(fields, today, guarded):
    """ISO; required, and under GUARDED_UNDER years ago, for a guarded patient without a NIF."""
    day = past_date(fields, "birthDate", today) if not guarded or body_text(fields, "nif") \
        else child_birth_date(fields, today)
    return day.isoformat() if day else None


def read_nif(fields, today, guarded):
    """Normalised; required but for a guarded patient (a child under a guardian), who may have none."""
    return normalise_nif(body_text(fields, "nif", required=not guarded)) if body_text(fields, "nif") or not guarded \
        else None


def read_phone(fields, today, guarded):
    return body_text(fields, "phone")


def read_phone_e164(fields, today, guarded):
    return optional_phone(fields)


def read_email(fields, today, guarded):
    text = body_text(fields, "email")
    return parse_email(text) if text else None


LANGUAGES = ("es", "en")  # a patient's messages: Spanish (stored as none) unless they choose English
LANGUAGES_READ = {"es": None, "español": None, "espanol": None, "spanish": None, "en": "en", "inglés": "en",
                  "ingles": "en", "english": "en"}  # as a person or a file writes them
YES_NO = {"yes": 1, "no": 0}  # how a choice is typed and written; a file may say it in Spanish or as 1 and 0
YES_NO_READ = {**YES_NO, "si": 1, "sí": 1, "s": 1, "n": 0, "1": 1, "0": 0, "true": 1, "false": 0}


def read_note(fields, today, guarded):
    return body_text(fields, "note")


def read_language(fields, today, guarded):
    """en, or None for Spanish (the default, however written)."""
    text = body_text(fields, "language")
    if text and text.lower() not in LANGUAGES_READ:
        raise invalid(f"language is one of {', '.join(LANGUAGES)}", "language", "language")
    return LANGUAGES_READ[text.lower()] if text else None


def read_messages(fields, today, guarded):
    """1 or 0 as chosen, 1 only with an e-mail; not chosen: 1 once an e-mail is given (they are told so in the first
    message), else None. A stop (0) outlives the e-mail's change or removal."""
    text, email = body_text(fields, "messages"), body_text(fields, "email")
    if text and text.lower() not in YES_NO_READ:
        raise invalid("messages is yes or no", "yes_no", "messages")
    chosen = YES_NO_READ[text.lower()] if text else None
    return 0 if chosen == 0 else 1 if email else None


# The guardian's NIF as clinics head it: "Tutor", "DNI tutor", "DNI del tutor", "NIF de la tutora", "NIE tutor/a"
GUARDIAN_HEADERS = tuple(f"{document}{of}{who}" for document in ("", "nif", "dni", "nie")
                         for of in ("", "de", "del", "dela") for who in ("tutor", "tutora", "tutorlegal"))

PATIENT_COLUMNS = (
    Column("id", "record-keeping", "the patient's number, for ever", KEEP, KEEP, copy="id"),
    Column("name", "identity", "the first name", KEEP, "=Anonimizado", field="name", read=read_name, copy="name",
           export=True, api="both", desk=1, required=True, headers=("nombre",)),
    Column("surname", "identity", "the surnames", KEEP, EMPTY, field="surname", read=read_surname, copy="surname",
           export=True, api="both", desk=2, headers=("surnames", "apellidos")),
    Column("birth_date", "identity", "the birth date, ISO; a child without a NIF has one", KEEP, EMPTY,
           field="birthDate", read=read_birth_date, copy="birthDate", export=True, api="both", desk=5, shape="date",
           headers=("dateofbirth", "fechanacimiento", "fechadenacimiento", "nacimiento", "fnacimiento", "fechanac")),
    Column("nif", "identity", "NIF, NIE or passport, normalised, unique among the live; NULL for a child under a "
           "guardian", KEEP, "=ANON-{id}", field="nif", read=read_nif, copy="nif", export=True, api="both", desk=3,
           shape="nif", required=True, headers=("dni", "nie")),
    Column("phone", "contact", "the phone as given", KEEP, EMPTY, field="phone", read=read_phone, copy="phone",
           export=True, api="both", desk=4, shape="phone", inherited=True, headers=("telephone", "telefono", "movil")),
    Column("phone_e164", "contact", "the phone in E.164, what searches and answers use", KEEP, EMPTY,
           read=read_phone_e164, inherited=True),
    Column("guardian_id", "record-keeping", "the guardian of a child under 14 without a NIF, a patient with one",
           KEEP, KEEP, field="guardianNif", copy="guardianNif", export=True, shown="guardian_nif",
           headers=("guardian", *GUARDIAN_HEADERS)),
    Column("email", "contact", "the e-mail their messages go to; a child under a guardian takes the guardian's unless"
           " given", KEEP, EMPTY, field="email", read=read_email, copy="email", export=True, api="sent", desk=6,
           shape="email", inherited=True, headers=("correo", "correoelectronico", "mail")),
    Column("language", "administrative", "the language of their messages: en; NULL: Spanish", KEEP, EMPTY,
           field="language", read=read_language, copy="language", export=True, desk=7, shape="language",
           headers=("idioma", "lengua")),
    Column("messages", "administrative", "1: they want messages about their own appointments; 0: they stopped them;"
           " NULL: no e-mail given yet", KEEP, EMPTY, field="messages", read=read_messages, copy="messages",
           export=True, desk=8, shape="yes_no", headers=("mensajes", "avisos")),
    Column("note", "administrative", "reception's note on how to deal with them (\"prefiere mañanas\", \"avisar a"
           " su hija\"), shown on their visits; nothing clinical", KEEP, EMPTY, field="note", read=read_note,
           copy="note", export=True, desk=9, headers=("nota", "notas")),
    Column("messages_since", "record-keeping", "when their choice of messages was last set (UTC)", KEEP, KEEP,
           copy="messagesSince"),
    Column("messages_by", "record-keeping", "who set that choice: the desk's user, cli, api, import or link (the "
           "patient)", KEEP, KEEP, copy="messagesBy"),
    Column("created_at", "record-keeping", "when the patient was registered (UTC)", KEEP, KEEP, copy="registeredAt",
           shown="registered_at"),
    Column("blocked_at", "record-keeping", "when an erasure request blocked the record (UTC)", NOW, KEEP,
           copy="blockedAt"),
    Column("erasable_from", "record-keeping", "the ISO day from which it may be anonymised", UNTIL, KEEP,
           copy="erasableFrom"),
    Column("anonymised_at", "record-keeping", "when its identity was replaced (UTC)", KEEP, NOW, copy="anonymisedAt"),
    Column("search", "record-keeping", "name and surname folded for the patient search", KEEP, FOLDED),
)
GIVEN = tuple(column.name for column in PATIENT_COLUMNS if column.read)  # what a patient's details give
TYPED = tuple(column for column in PATIENT_COLUMNS if column.read and column.field)  # what a person types
RECTIFIABLE = tuple(column.field for column in TYPED)  # what a correction takes
DESK_FORM = tuple(sorted((column for column in PATIENT_COLUMNS if column.desk), key=lambda column: column.desk))
DESK_FIELDS = tuple(column.field for column in DESK_FORM)
INHERITED = tuple(column.name for column in PATIENT_COLUMNS if column.inherited)
EXPORTED = tuple(column for column in PATIENT_COLUMNS if column.export)
ERASED = tuple(column.name for column in PATIENT_COLUMNS if column.anonymise not in (KEEP, NOW))  # who they were


def searched_name(name, surname):
    """The patients row's search column for this name and surname ("Patient search")."""
    return fold(f"{name or ''} {surname or ''}")


def patient_fields(fields, today, guarded=False):
    """A patient's details ("Patients") from a JSON body, a form or an imported row ({field: text}), checked and
    normalised: {column: what it stores} for GIVEN, the required read first, every field at fault named. A `guarded`
    patient (under a guardian) may have no NIF while under GUARDED_UNDER, their birth date then required."""
    order = sorted((column for column in PATIENT_COLUMNS if column.read), key=lambda column: not column.required)
    return all_fields({column.name: functools.partial(column.read, fields, today, guarded) for column in order})


def field_text(column, value, blank=""):
    """A column's value as a form or a file holds it: a date as DD/MM/YYYY, a choice as yes or no; nothing as
    `blank`."""
    if value is None or value == "":
        return blank
    if column.shape == "yes_no":
        return next(word for word, bit in YES_NO.items() if bit == value)
    return format_date(value) if column.shape == "date" else value


def typed_of(row):
    """{field: text} of a patients row's TYPED columns, as a correction merges them (None where empty)."""
    return {column.field: field_text(column, row[column.name], None) for column in TYPED}


# The only writes to the patients table, each inside its caller's transaction

def chosen(before, patient, at, source):
    """{messages_since, messages_by}: when and by whom the choice of messages was set, where it changes."""
    if patient.get("messages") == (before["messages"] if before is not None else None):
        return {}
    return {"messages_since": utc_iso(at), "messages_by": source}


# The id a new patient takes: above every one given, a removed one's too ("Patients book themselves").
LAST_ID = ("max((SELECT coalesce(max(id), 0) FROM main.patients),"
           " coalesce((SELECT up_to FROM main.removed_ids WHERE name = 'patients'), 0))")


def insert_patient(conn, patient, at, source):
    """A new patient from `patient_fields`' details (one left out is empty) and a child's guardian_id, registered
    by `source`; the row."""
    patient = {**patient, **chosen(None, patient, at, source)}
    columns = (*GIVEN, "guardian_id", "created_at", "search", "messages_since", "messages_by")
    values = (*(patient.get(name) for name in GIVEN), patient.get("guardian_id"), utc_iso(at),
              searched_name(patient["name"], patient["surname"]), patient.get("messages_since"),
              patient.get("messages_by"))
    return written_row(conn, f"INSERT INTO patients (id, {', '.join(columns)}) VALUES ({LAST_ID} + 1,"
                             f" {', '.join('?' * len(columns))})", values)


def rectify_patient(conn, before, patient, at, source):
    """The patients row `before` with its details replaced by `patient_fields`' (a correction, GDPR art. 16), by
    `source`, her children's inherited columns following hers (`follow_guardian`); (the row written, what followed)."""
    set_by = chosen(before, patient, at, source)
    columns = (*GIVEN, "search", *set_by)
    after = written_row(conn, f"UPDATE patients SET {', '.join(f'{name} = ?' for name in columns)} WHERE id = ?",
                        (*(patient[name] for name in GIVEN), searched_name(patient["name"], patient["surname"]),
                         *set_by.values(), before["id"]))
    return after, follow_guardian(conn, before, after, at, source)


def follow_guardian(conn, before, after, at, source):
    """A guardian's row changed from `before` to `after`: each live child's INHERITED column that held hers takes
    her new one, and a child whose address was hers her choice of messages where it was hers ("Patients without a
    NIF"); {child's id: [the columns that followed]}."""
    followed = {}
    if before["messages"] != after["messages"]:  # first, while a child's address is still the one they shared
        for child, in conn.execute(
                "UPDATE patients SET messages = ?, messages_since = ?, messages_by = ? WHERE guardian_id = ? AND"
                " blocked_at IS NULL AND email IS ? AND messages IS ? RETURNING id",
                (after["messages"], utc_iso(at), source, before["id"], before["email"], before["messages"])).fetchall():
            followed.setdefault(child, []).append("messages")
    for name in (name for name in INHERITED if before[name] != after[name]):
        for child, in conn.execute(
                f"UPDATE patients SET {name} = ? WHERE guardian_id = ? AND blocked_at IS NULL AND {name} IS ?"
                " RETURNING id", (after[name], before["id"], before[name])).fetchall():
            followed.setdefault(child, []).append(name)
    return followed


def sharing_address(conn, patient_id):
    """The live patients whose messages go to this patient's address (themselves, a guardian and her children)."""
    return [row[0] for row in conn.execute(
        "SELECT id FROM live_patients WHERE email = (SELECT email FROM patients WHERE id = ?) ORDER BY id",
        (int(patient_id),))] or [int(patient_id)]


def set_messages(conn, patient_id, messages, at, source):
    """The patient's choice of messages set alone (a message's one-click stop), with when and by whom; the row
    as it was, or None when it was already so."""
    before = conn.execute("SELECT id, messages FROM patients WHERE id = ?", (int(patient_id),)).fetchone()
    if before is None or before["messages"] == messages:
        return None
    conn.execute("UPDATE patients SET messages = ?, messages_since = ?, messages_by = ? WHERE id = ?",
                 (messages, utc_iso(at), source, before["id"]))
    return before


def remove_patient(conn, patient_id):
    """A record a booking of the patients' page made, once its request is released unconfirmed or refused, removed
    when it has nothing else (no visit, child, waiting entry, series or other request): it never was a patient of
    the clinic ("Patients book themselves"). Whether it was removed."""
    return conn.execute(
        "DELETE FROM patients WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM appointments WHERE patient_id = ?1)"
        " AND NOT EXISTS (SELECT 1 FROM patients WHERE guardian_id = ?1)"
        " AND NOT EXISTS (SELECT 1 FROM waitlist WHERE patient_id = ?1)"
        " AND NOT EXISTS (SELECT 1 FROM series WHERE patient_id = ?1)"
        " AND NOT EXISTS (SELECT 1 FROM web_requests WHERE patient_id = ?1 AND appointment_id IS NOT NULL)",
        (int(patient_id),)).rowcount == 1


def stage_values(stage, patient_id, at, until=None):
    """{column: value} a stage of an erasure ("block", "anonymise") writes, by each column's rule; KEEP left out."""
    written, values = {EMPTY: None, NOW: utc_iso(at), UNTIL: until.isoformat() if until else None}, {}
    for column in PATIENT_COLUMNS:
        rule = getattr(column, stage)
        if rule.startswith("="):
            values[column.name] = rule[1:].format(id=patient_id)
        elif rule in written:
            values[column.name] = written[rule]
        elif rule not in (KEEP, FOLDED):
            raise ValueError(f"patients.{column.name} has no rule {rule!r} for the {stage}")
    for column in PATIENT_COLUMNS:  # the name and surname the stage writes, folded
        if getattr(column, stage) == FOLDED:
            values[column.name] = searched_name(values["name"], values["surname"])
    return values


def write_stage(conn, stage, patient_id, at, until=None):
    values = stage_values(stage, patient_id, at, until)
    conn.execute(f"UPDATE patients SET {', '.join(f'{name} = ?' for name in values)} WHERE id = ?",
                 (*values.values(), patient_id))


def block_patient(conn, patient_id, at, until):
    """An erasure request's block: the patient kept, unprocessed, until `until` (a date) (LOPDGDD art. 32)."""
    write_stage(conn, "block", patient_id, at, until)


def anonymise_patient(conn, patient_id, at):
    """The patient's row anonymised, each column as its rule says; the rest of the erasure is rights.anonymise's."""
    write_stage(conn, "anonymise", patient_id, at)


def clear_inherited(conn, guardian_id):
    """At a guardian's erasure, what her live children's rows took from hers (INHERITED) emptied, each column where
    it holds hers still, and a child's messages with the e-mail they went to (a stop kept); the children's ids."""
    hers = {name: f"(SELECT {name} FROM patients WHERE id = ?1)" for name in INHERITED}
    emptied = ", ".join(f"{name} = CASE WHEN {name} = {hers[name]} THEN NULL ELSE {name} END" for name in INHERITED)
    theirs = " OR ".join(f"{name} = {hers[name]}" for name in INHERITED)
    children = [row[0] for row in conn.execute(
        f"UPDATE patients SET {emptied} WHERE guardian_id = ?1 AND blocked_at IS NULL AND ({theirs}) RETURNING id",
        (guardian_id,))]
    conn.execute("UPDATE patients SET messages = NULL WHERE guardian_id = ? AND blocked_at IS NULL AND email IS NULL"
                 " AND messages = 1", (guardian_id,))
    return children


# The staged import's patients ("Imports never hold the clinic"): staged outside the live table, then inserted

STAGED_PATIENTS = (f"CREATE TEMP TABLE staged_patients (line INTEGER PRIMARY KEY, "
                   f"{', '.join(f'{name} TEXT' for name in GIVEN)}, search TEXT NOT NULL, guardian_nif TEXT)")


def stage_patient(conn, line, patient, guardian_nif=None):
    """A patient of `patient_fields` staged from a file's line, with their guardian's NIF when they have one."""
    columns = ("line", *GIVEN, "search", "guardian_nif")
    conn.execute(f"INSERT INTO staged_patients ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                 (line, *(patient[name] for name in GIVEN), searched_name(patient["name"], patient["surname"]),
                  guardian_nif))


def insert_staged_patients(conn, at):
    """Inside the one short commit: the staged patients (but a NIF registered since), those without a
    guardian first, then each child under their guardian, by line, with the guardian's INHERITED unless the row
    gives them (as the desk registers a child, "Patients without a NIF")."""
    given, when = ", ".join(GIVEN), utc_iso(at)
    def chose(messages):
        return (f"CASE WHEN {messages} IS NULL THEN NULL ELSE ?1 END,"
                f" CASE WHEN {messages} IS NULL THEN NULL ELSE 'import' END")
    conn.execute(f"INSERT INTO main.patients (id, {given}, created_at, search, messages_since, messages_by) SELECT"
                 f" {LAST_ID} + row_number() OVER (ORDER BY line), {', '.join(f's.{name}' for name in GIVEN)}, ?1,"
                 f" search, {chose('s.messages')}"
                 " FROM temp.staged_patients s"
                 " WHERE guardian_nif IS NULL AND NOT EXISTS (SELECT 1 FROM main.live_patients p WHERE p.nif = s.nif)"
                 " ORDER BY line", (when,))
    taken = ", ".join(f"coalesce(s.{name}, g.{name})" if name in (*INHERITED, "messages") else f"s.{name}"
                      for name in GIVEN)  # a child takes her e-mail, and her choice of messages with it
    conn.execute(f"INSERT INTO main.patients (id, {given}, created_at, search, guardian_id, messages_since,"
                 f" messages_by) SELECT {LAST_ID} + row_number() OVER (ORDER BY s.line), {taken}, ?1, s.search, g.id,"
                 f" {chose('coalesce(s.messages, g.messages)')}"
                 " FROM temp.staged_patients s JOIN main.live_patients g"
                 " ON g.nif = s.guardian_nif WHERE NOT EXISTS (SELECT 1 FROM main.live_patients p WHERE p.nif = s.nif)"
                 " ORDER BY s.line", (when,))
