"""Imports that never hold the clinic ("Imports never hold the clinic"): another system's patients, and its
appointments with the patients they bring, read as the file streams, checked and staged outside the live tables (temporary
tables of the importing connection, which no one else sees and no kill leaves behind), then made live
through the appointment door in one short commit. No HTTP here."""

import json
from contextlib import contextmanager
from difflib import get_close_matches
from typing import NamedTuple

from ..values.refusals import ClinicError
from ..values.fields import fold, format_date, normalise_nif, parse_phone
from ..storage.events import record_event
from ..domain.patients import insert_staged_patients, patient_fields, searched_name, stage_patient, STAGED_PATIENTS
from ..domain.slots import busy_spans, overlapping
from ..domain.visits import needs_of
from ..domain.holds import Coming, placement_notes, placements
from ..domain.booking import admit_staged
from .open_formats import appointment_fields, AS_STORED

CHUNK = 2000  # rows staged a statement
MOST_PROBLEMS = 1000  # problems kept to say; every one is counted
COMMIT_MAP = 48 * 1024 * 1024  # the file mapped for the one commit: quicker, and the memory still bounded

STAGE = (
    "CREATE TEMP TABLE staged_appointments (line INTEGER PRIMARY KEY, date TEXT NOT NULL, time TEXT NOT NULL,"
    " end_time TEXT NOT NULL, doctor_id TEXT NOT NULL, center_id TEXT, insurance_id TEXT,"
    f" {''.join(f'{column.name} TEXT, ' for column in AS_STORED)}status TEXT NOT NULL, patient_id INTEGER, nif TEXT,"
    " type_id TEXT, pause INTEGER, busy_until TEXT NOT NULL, holds TEXT)",
    "CREATE INDEX temp.staged_by_doctor_day ON staged_appointments (doctor_id, date, line)",
    STAGED_PATIENTS,
    "CREATE UNIQUE INDEX temp.staged_by_nif ON staged_patients (nif) WHERE nif IS NOT NULL",
)
PRESENT_SAID = 20  # patients already in the agenda named by line; every one is counted


class Imported(NamedTuple):
    """What an import did, or would do: the rows read, appointments and new patients, the first problems
    ("line N: why") and how many there were; the first patients already in the agenda and how many; the first
    rows booked to a child of the NIF's holder and how many."""
    rows: int
    appointments: int
    patients: int
    problems: list
    problem_count: int
    present: list = []
    present_count: int = 0
    notes: list = []
    note_count: int = 0
    conflicts: list = []


class Problems:
    """Every problem counted, the first MOST_PROBLEMS kept, so a file of any length takes the same memory."""

    def __init__(self):
        self.kept, self.count, self.rows = [], 0, 0

    def add(self, line, why):
        self.count += 1
        if len(self.kept) < MOST_PROBLEMS:
            self.kept.append((line, why))

    def said(self):
        """The problems kept, by line: "line N: why"."""
        return [f"line {line}: {why}" for line, why in sorted(self.kept, key=lambda problem: problem[0])]


@contextmanager
def staging(conn):
    """The staging tables on this connection, on disk (never in memory), dropped whatever happens; the
    database read through SQLite's own small cache rather than its memory map meanwhile, so an import's
    reading of the whole clinic does not stay in the process's memory; `mapped()` maps it again for the
    commit, short and hurried."""
    size = conn.execute("PRAGMA mmap_size").fetchone()[0]
    conn.execute("PRAGMA temp_store = FILE")
    conn.execute("PRAGMA mmap_size = 0")
    for statement in STAGE:
        conn.execute(statement)
    try:
        yield lambda: conn.execute(f"PRAGMA mmap_size = {COMMIT_MAP}")
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.staged_appointments")
        conn.execute("DROP TABLE IF EXISTS temp.staged_patients")
        conn.execute(f"PRAGMA mmap_size = {int(size)}")


def import_appointments(clinic, rows, file_name, *, dry_run=False, source="cli"):
    """An old system's appointments (`rows`: (line, {field: text}, [why a cell is refused]), as the file
    streams), all or nothing: checked and staged without the write lock, made live in one short commit
    unless there is any problem or it is a dry run ("Moving in and out"). The Imported, with what the rooms and
    machines say by line (a dry run's read from the staged rows): the holds given other than the file's, and the
    conflicts, visits imported without a room or machine they hold or need, none free then ("What a visit
    holds")."""
    conn, problems, notes, conflicts = clinic.conn(), Problems(), Problems(), []
    with staging(conn) as mapped:
        stage_rows(clinic, conn, rows, problems, notes)
        check_overlaps(conn, problems)
        counts = conn.execute("SELECT (SELECT count(*) FROM staged_appointments),"
                              " (SELECT count(*) FROM staged_patients)").fetchone()
        if not problems.count and dry_run:
            conflicts = staged_placements(clinic, conn)
        if not problems.count and not dry_run:
            at = clinic.clock()
            mapped()
            try:
                with clinic.db.transaction() as conn:
                    conflicts = made_live(clinic, conn, at, source, file_name, counts)
            except ClinicError as error:
                if error.code != "SLOT_NOT_AVAILABLE":
                    raise
                raise ClinicError("SLOT_NOT_AVAILABLE", "a booking made while the file was checked overlaps one of "
                                  "its rows; nothing was imported: run the import again to see which",
                                  reason="taken") from None
    return Imported(problems.rows, counts[0], counts[1], problems.said(), problems.count,
                    notes=notes.said()[:PRESENT_SAID], note_count=notes.count, conflicts=conflicts)


def stage_rows(clinic, conn, rows, problems, notes):
    """Each row checked (its cells, the catalogs, its patient) and staged, CHUNK at a time; a row booked to a
    child of the NIF's holder noted."""
    known = {table: {row[0] for row in conn.execute(f"SELECT id FROM {table}")} for table in ("centers", "insurances")}
    known["doctors"] = dict(conn.execute("SELECT id, speciality_id FROM doctors").fetchall())
    known["resources"] = dict(conn.execute("SELECT id, center_id FROM resources").fetchall())
    known["visit_types"] = {row[0]: (row[1], row[2]) for row in conn.execute(
        "SELECT id, pause, speciality_id FROM visit_types")}
    today, chunk = clinic.today(), []
    for line, fields, faults in rows:
        problems.rows += 1
        for why in faults:
            problems.add(line, why)
        try:
            appointment = appointment_fields(fields, known)
            patient_id, nif, note = staged_patient(conn, fields, today, line)
        except ClinicError as error:
            problems.add(line, error.message)
            continue
        if note:
            notes.add(line, note)
        chunk.append((line, appointment["date"], appointment["time"], appointment["end"], appointment["doctor"],
                      appointment["center"], appointment["insurance"],
                      *(appointment[column.name] for column in AS_STORED), appointment["status"],
                      patient_id, nif, appointment["type"], appointment["pause"], appointment["busy_until"],
                      appointment["holds"]))
        if len(chunk) == CHUNK:
            stage(conn, chunk)
    stage(conn, chunk)


def stage(conn, chunk):
    if chunk:
        conn.executemany(f"INSERT INTO staged_appointments VALUES ({', '.join('?' * len(chunk[0]))})", chunk)
    chunk.clear()


def staged_patient(conn, fields, today, line):
    """(patient id, None, note) of the live patient a row names, by NIF (the holder, or the child of theirs the
    row's name is: `named`), else by name and phone (or, with no phone, name and surname among those without a
    NIF); or (None, NIF, None) of a new patient, staged from its first row. The note says a child was taken."""
    if fields.get("nif", "").strip():
        nif = normalise_nif(fields["nif"])
        family = conn.execute("SELECT id, search, 0 FROM live_patients WHERE nif = ?1 UNION ALL SELECT id, search, 1"
                              " FROM live_patients WHERE guardian_id = (SELECT id FROM live_patients WHERE nif = ?1)"
                              " ORDER BY 3, 1", (nif,)).fetchall()
        if family:
            holder = family[0][0]
            patient_id = named(conn, fields, family, f"patient {holder}")
            if patient_id == holder:
                return holder, None, None
            return patient_id, None, f"a child of the NIF's holder (patient {holder}), booked to that child " \
                                     f"(patient {patient_id})"
        earlier = conn.execute("SELECT line, search FROM staged_patients WHERE nif = ?", (nif,)).fetchone()
        if earlier is None:
            patient = patient_fields(fields, today)
            stage_patient(conn, line, patient)
        else:
            named(conn, fields, [(earlier[0], earlier[1], 0)], f"the new patient of line {earlier[0]}")
        return None, nif, None
    phone = parse_phone(fields["phone"]) if fields.get("phone", "").strip() else None
    name, surname = fields.get("name", "").strip(), fields.get("surname", "").strip()
    if phone:
        found = conn.execute("SELECT id FROM live_patients WHERE phone_e164 = ? AND lower(name) = lower(?)",
                             (phone, name)).fetchall()
    else:  # a child without a NIF or a phone of their own
        found = conn.execute("SELECT id FROM live_patients WHERE nif IS NULL AND lower(name) = lower(?) AND"
                             " lower(coalesce(surname, '')) = lower(?)", (name, surname)).fetchall()
    if len(found) != 1:
        raise ClinicError("INVALID_REQUEST", "no NIF, and no one patient here with that name and phone (or, with no "
                                             "phone, that name and surname): give the patient's NIF",
                          "patient_by_phone", "nif")
    return found[0][0], None, None


def named(conn, fields, family, holder):
    """The key of the NIF's `family` ((key, search, 1 for a child), its holder first, said as `holder`) the row's
    name is, folded as the patient search folds it and never shown: the holder when it is not given or fits
    theirs, else the one child whose it fits; else ClinicError naming them and those near it, by patient id."""
    words = fold(fields.get("name", "")).split()
    if not words:
        return family[0][0]
    surname = fold(fields.get("surname", "")).split()
    first, first_surname = words[0], (surname or words[1:2] or [None])[0]
    said = {key: holder if not child else f"patient {key}" for key, _, child in family}
    children = [key for key, _, child in family if child]
    for fits in (fitting(first, first_surname), near_fitting(words + surname)):  # as written, else in any order
        found = [(key, child) for key, search, child in family if fits(search.split())]
        if len(found) == 1 or (found and not found[0][1]):
            return found[0][0]
        if found:
            raise ClinicError("INVALID_REQUEST", f"the name fits more than one child of the NIF's holder ({holder}): "
                                                 f"{patients_said([key for key, _ in found])}; take the row out and "
                                                 "book it at the desk", "patient_name", "name")
    near = [said[key] for key, search, _ in family if get_close_matches(first, search.split()[:1], 1, 0.75)]
    if first_surname:  # someone of that first name and first surname elsewhere: a child under no guardian, or another
        near += [f"patient {row[0]}" for row in conn.execute(
            "SELECT id FROM live_patients WHERE search >= ?1 AND search < ?1 || '!' ORDER BY id LIMIT 3",
            (f" {first} {first_surname}",))]
    raise ClinicError("INVALID_REQUEST", f"the name fits neither the NIF's holder ({holder}) nor a child of theirs "
                                         f"({patients_said(children) if children else 'none here'})"
                                         f"{'; near it: ' + ', '.join(near) if near else ''}: correct the name, or "
                                         "register the child under the NIF's holder, and import again",
                      "patient_name", "name")


def fitting(first, first_surname):
    """Whether a patient's folded words are the row's first name and (among the rest) its first surname."""
    return lambda words: words[:1] == [first] and (first_surname is None or len(words) == 1
                                                   or first_surname in words[1:])


def near_fitting(row_words):
    """Whether a patient's folded first name and one of their other words are among the row's words, in any
    order ("Núñez Peña, Íñigo" in one cell)."""
    return lambda words: bool(words) and words[0] in row_words and (
        len(words) == 1 or len(row_words) == 1 or bool(set(words[1:]) & (set(row_words) - {words[0]})))


def patients_said(keys):
    """'patient 4', 'patients 4, 7'."""
    return f"patient{'s' if len(keys) > 1 else ''} {', '.join(str(key) for key in keys)}"


def check_overlaps(conn, problems):
    """A problem for each live staged row that a doctor's live appointment, in the agenda or on an earlier
    line, holds taken: the slot decision's rule (`overlapping`, "Slot states"), a doctor's day at a time."""
    key, busy, lines = None, set(), {}
    for line, doctor, day, start, end in conn.execute(
            "SELECT line, doctor_id, date, time, busy_until FROM staged_appointments WHERE status != 'cancelled'"
            " ORDER BY doctor_id, date, line"):
        if (doctor, day) != key:
            key, lines = (doctor, day), {}
            busy = set(busy_spans(conn, [doctor], day, day).get(key, ()))
        clash = overlapping(busy, start, end)
        if clash:
            what = lines.get(clash[0]) or held(conn, (doctor, day), clash[0])
            problems.add(line, f"{format_date(day)} {start} with {doctor} overlaps {what}")
        busy.add(start + end)
        lines.setdefault(start + end, f"line {line}")


def staged_placements(clinic, conn):
    """What the rooms and machines of the staged visits not yet ended would be, [(line, why)], as the import's commit
    chooses them (`placements`, the file's holds first), without writing: what a dry run says."""
    now = clinic.clock().astimezone(clinic.tz)
    visits, given = [], {}
    for row in conn.execute(
            "SELECT s.line, s.doctor_id, s.center_id, s.date, s.time, s.busy_until, coalesce(t.needs, ''), (SELECT"
            " r.room_id FROM main.schedules r WHERE r.doctor_id = s.doctor_id AND r.center_id IS s.center_id AND"
            " r.weekday = (CAST(strftime('%w', s.date) AS INTEGER) + 6) % 7 AND r.start_time <= s.time AND s.time <"
            " r.end_time), s.holds FROM temp.staged_appointments s LEFT JOIN main.visit_types t ON t.id = s.type_id"
            " WHERE s.status != 'cancelled' AND (s.date > ?1 OR (s.date = ?1 AND s.busy_until > ?2))",
            (now.date().isoformat(), f"{now:%H:%M}")):
        visits.append(Coming(*row[:6], needs_of(row[6]), False, row[7], []))
        given[row[0]] = json.loads(row[8] or "[]")
    return placement_notes(placements(conn, visits, given), {line: line for line in given}, given, dry_run=True)


def held(conn, key, span):
    """What holds a doctor's span of a day in the agenda: 'appointment N already in the agenda'."""
    row = conn.execute("SELECT id FROM appointments WHERE doctor_id = ? AND date = ? AND time = ? AND"
                       " coalesce(busy_until, end_time) = ? AND status != 'cancelled' AND squeezed = 0",
                       (*key, span[:5], span[5:])).fetchone()  # a span's end is its busy end (`busy_spans`)
    return f"appointment {row[0]} already in the agenda"


def made_live(clinic, conn, at, source, file_name, counts):
    """Inside the one short commit: the staged patients (but a NIF registered since, whose patient the rows
    take), then the appointments through the door; the import's event. The conflicts, "line N: why"."""
    conn.execute("UPDATE temp.staged_appointments SET patient_id = (SELECT p.id FROM main.live_patients p WHERE"
                 " p.nif = staged_appointments.nif) WHERE patient_id IS NULL")
    insert_staged_patients(conn, at)
    conn.execute("UPDATE temp.staged_appointments SET patient_id = (SELECT p.id FROM main.live_patients p WHERE"
                 " p.nif = staged_appointments.nif) WHERE patient_id IS NULL")
    conflicts = admit_staged(clinic, conn, "temp.staged_appointments", at, source)
    record_event(conn, at, source, "appointments.imported", "appointment", None,
                 after={"file": file_name, "imported": counts[0], "patientsCreated": counts[1]})
    return conflicts



# Patients

def import_patients(clinic, rows, file_name, *, dry_run=False, source="cli"):
    """Another system's patients (`rows` as `import_appointments` takes them), each checked as POST /patients
    checks one ("Patients"); a row with a guardianNif (a guardian in the agenda or on an earlier line), or with
    a birth date under 14 years ago and no guardian, may be a child without a NIF. A patient already here
    (by NIF; a child by name, birth date and guardian, or none given) is reported, never doubled. All or nothing, staged
    without the write lock and made live in one short commit. The Imported."""
    conn, problems, present = clinic.conn(), Problems(), Problems()
    with staging(conn) as mapped:
        today = clinic.today()
        for line, fields, faults in rows:
            problems.rows += 1
            for why in faults:
                problems.add(line, why)
            try:
                stage_row_patient(conn, line, fields, today, present)
            except ClinicError as error:
                problems.add(line, error.message)
        staged = conn.execute("SELECT count(*) FROM staged_patients").fetchone()[0]
        if not problems.count and not dry_run and staged:
            at = clinic.clock()
            mapped()
            with clinic.db.transaction() as conn:
                insert_staged_patients(conn, at)
                record_event(conn, at, source, "patients.imported", "patient", None,
                             after={"file": file_name, "imported": staged, "alreadyPresent": present.count})
    return Imported(problems.rows, 0, staged, problems.said(), problems.count, present.said()[:PRESENT_SAID],
                    present.count)


def stage_row_patient(conn, line, fields, today, present):
    """Stage one row's patient; a patient already here is noted in `present` instead; ClinicError for a row
    that cannot be one."""
    guardian_nif = (fields.get("guardianNif") or "").strip()
    child = not (fields.get("nif") or "").strip() and bool((fields.get("birthDate") or "").strip())
    patient = patient_fields(fields, today, guarded=child or bool(guardian_nif))
    guardian_nif = normalise_nif(guardian_nif) if guardian_nif else None
    if guardian_nif and not conn.execute(
            "SELECT 1 FROM main.live_patients WHERE nif = ?1 UNION ALL SELECT 1 FROM staged_patients WHERE nif = ?1",
            (guardian_nif,)).fetchone():
        raise ClinicError("INVALID_REQUEST", "no patient has the guardian's nif (in the agenda or on an earlier "
                                             "line)", "guardian", "guardianNif")
    here = already_here(conn, "main.live_patients", "id", patient, guardian_nif)
    if here is not None:
        unguarded = guardian_nif and here[1] is None
        present.add(line, f"already in the agenda as patient {here[0]}"
                          f"{' (there without a guardian: give them one at the desk)' if unguarded else ''}, not imported")
        return
    earlier = already_here(conn, "staged_patients", "line", patient, guardian_nif)
    if earlier is not None and patient["nif"]:
        raise ClinicError("INVALID_REQUEST", f"the same nif as line {earlier[0]}", "same_nif", "nif")
    if earlier is not None:
        raise ClinicError("INVALID_REQUEST", f"the same child (name, birth date and guardian, or none given) as line "
                                             f"{earlier[0]}", "same_child", "name")
    stage_patient(conn, line, patient, guardian_nif)


def already_here(conn, table, key, patient, guardian_nif):
    """(`key` (id, line), guardian's NIF) of the patient of `table` (the agenda's live patients, or the file's
    staged so far) this one is, or None: the NIF's holder; for a child without a NIF, the one of the same name
    and surname (as the search folds them), birth date, and guardian, or none given on either side."""
    if patient["nif"]:
        return conn.execute(f"SELECT {key}, guardian_nif FROM {table} WHERE nif = ?", (patient["nif"],)).fetchone()
    return conn.execute(f"SELECT {key}, guardian_nif FROM {table} WHERE nif IS NULL AND search = ? AND birth_date IS ?"
                        " AND (guardian_nif IS ?3 OR guardian_nif IS NULL OR ?3 IS NULL)"
                        " ORDER BY guardian_nif IS ?3 DESC LIMIT 1",
                        (searched_name(patient["name"], patient["surname"]), patient["birth_date"],
                         guardian_nif)).fetchone()
