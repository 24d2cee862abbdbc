-- Agenda's SQLite schema ("Storage").
--
-- The file is a list of numbered sections. A section headed "-- version N" holds
-- the statements that take a database from version N-1 to version N; `agenda`
-- runs the sections above the database's `PRAGMA user_version` in order, each in
-- one transaction, and then sets user_version to N. A new database runs them all.
-- Never edit a section that has shipped: add a new one below.
--
-- Dates are ISO (YYYY-MM-DD) and times HH:MM so that they sort as text.
-- Nothing is deleted: a cancellation is a status with a time and a reason.

-- version 1

CREATE TABLE IF NOT EXISTS centers (
    id   TEXT PRIMARY KEY,
    name TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS specialities (
    id   TEXT PRIMARY KEY,
    name TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS insurances (
    id   TEXT PRIMARY KEY,
    name TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS doctors (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    speciality_id TEXT NOT NULL REFERENCES specialities (id)
);

-- A doctor with no rows here accepts every insurance ("Availability", "Catalog file").
CREATE TABLE IF NOT EXISTS doctor_insurances (
    doctor_id    TEXT NOT NULL REFERENCES doctors (id),
    insurance_id TEXT NOT NULL REFERENCES insurances (id),
    PRIMARY KEY (doctor_id, insurance_id)
);

-- Weekly working hours of a doctor at a center (NULL center: a single-site clinic).
CREATE TABLE IF NOT EXISTS schedules (
    id           INTEGER PRIMARY KEY,
    doctor_id    TEXT NOT NULL REFERENCES doctors (id),
    center_id    TEXT REFERENCES centers (id),
    weekday      INTEGER NOT NULL CHECK (weekday BETWEEN 0 AND 6),  -- 0 = Monday
    start_time   TEXT NOT NULL,
    end_time     TEXT NOT NULL CHECK (end_time > start_time),
    slot_minutes INTEGER NOT NULL CHECK (slot_minutes BETWEEN 5 AND 480)
);
CREATE INDEX IF NOT EXISTS schedules_by_doctor ON schedules (doctor_id, weekday);

-- Absences and holidays. NULL doctor: everyone; NULL center: every center;
-- NULL hours: the whole day.
CREATE TABLE IF NOT EXISTS closures (
    id         INTEGER PRIMARY KEY,
    doctor_id  TEXT REFERENCES doctors (id),
    center_id  TEXT REFERENCES centers (id),
    date_from  TEXT NOT NULL,
    date_to    TEXT NOT NULL CHECK (date_to >= date_from),
    start_time TEXT,
    end_time   TEXT,
    reason     TEXT NOT NULL DEFAULT ''
);

CREATE TABLE IF NOT EXISTS patients (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    surname    TEXT,
    birth_date TEXT,
    nif        TEXT NOT NULL UNIQUE,
    phone      TEXT,            -- as the caller gave it
    phone_e164 TEXT,            -- what searches and answers use ("Patients")
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS patients_by_phone ON patients (phone_e164);

CREATE TABLE IF NOT EXISTS appointments (
    id            INTEGER PRIMARY KEY,
    patient_id    INTEGER NOT NULL REFERENCES patients (id),
    doctor_id     TEXT NOT NULL REFERENCES doctors (id),
    speciality_id TEXT REFERENCES specialities (id),
    insurance_id  TEXT REFERENCES insurances (id),
    center_id     TEXT REFERENCES centers (id),
    date          TEXT NOT NULL,
    time          TEXT NOT NULL,
    end_time      TEXT NOT NULL CHECK (end_time > time),
    reason        TEXT,
    status        TEXT NOT NULL DEFAULT 'booked'
                  CHECK (status IN ('booked', 'confirmed', 'unanswered', 'cancelled')),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    confirmed_at  TEXT,
    cancelled_at  TEXT,
    cancel_reason TEXT
);
CREATE INDEX IF NOT EXISTS appointments_by_date ON appointments (date, time, doctor_id);
CREATE INDEX IF NOT EXISTS appointments_by_patient ON appointments (patient_id, date);

-- "Booking": the database itself refuses a second live appointment in a doctor's slot.
-- The unique index holds for the same start; the triggers for any overlap.
CREATE UNIQUE INDEX IF NOT EXISTS one_live_appointment_per_slot
    ON appointments (doctor_id, date, time) WHERE status != 'cancelled';

CREATE TRIGGER IF NOT EXISTS no_overlap_on_insert
BEFORE INSERT ON appointments
WHEN NEW.status != 'cancelled' AND EXISTS (
    SELECT 1 FROM appointments
    WHERE doctor_id = NEW.doctor_id AND date = NEW.date AND status != 'cancelled'
      AND time < NEW.end_time AND NEW.time < end_time)
BEGIN
    SELECT RAISE(ABORT, 'SLOT_NOT_AVAILABLE');
END;

CREATE TRIGGER IF NOT EXISTS no_overlap_on_update
BEFORE UPDATE OF doctor_id, date, time, end_time, status ON appointments
WHEN NEW.status != 'cancelled' AND EXISTS (
    SELECT 1 FROM appointments
    WHERE id != NEW.id AND doctor_id = NEW.doctor_id AND date = NEW.date
      AND status != 'cancelled' AND time < NEW.end_time AND NEW.time < end_time)
BEGIN
    SELECT RAISE(ABORT, 'SLOT_NOT_AVAILABLE');
END;

-- "End of a reminder day": one row per closed reminder cycle; the same call twice changes nothing more.
CREATE TABLE IF NOT EXISTS reminder_cycles (
    id                    INTEGER PRIMARY KEY,
    voice_agent_config_id TEXT NOT NULL,
    days                  TEXT NOT NULL,     -- ISO dates joined by commas
    execution_date        TEXT NOT NULL,     -- ISO date or ''
    center_id             TEXT NOT NULL,     -- '' for every center
    policy                TEXT NOT NULL,
    appointment_ids       TEXT NOT NULL,     -- JSON list of the ones acted on
    closed_at             TEXT NOT NULL,
    UNIQUE (voice_agent_config_id, days, execution_date, center_id)
);

-- "Audit": every change, with where it came from and the row before and after.
CREATE TABLE IF NOT EXISTS events (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,                 -- UTC, ISO 8601
    source    TEXT NOT NULL CHECK (source IN ('api', 'cli')),
    action    TEXT NOT NULL,
    entity    TEXT NOT NULL,
    entity_id TEXT,
    before    TEXT,                          -- JSON or NULL
    after     TEXT                           -- JSON or NULL
);

-- version 2

-- What the service remembers about itself for `agenda status`: the signature scheme
-- the caller was last seen using ("Signatures") and the last backup. One row a key, JSON values.
CREATE TABLE IF NOT EXISTS service_state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- version 3

-- Availability reads every live appointment of a few doctors over a fortnight ("Availability").
-- With end_time and status in this index SQLite answers that, and the overlap
-- triggers above, from the index alone, without visiting the table.
CREATE INDEX IF NOT EXISTS appointments_by_doctor_day
    ON appointments (doctor_id, date, time, end_time, status);

-- version 4

-- A doctor who left: no slot is offered on or after this ISO date ("Staff desk").
ALTER TABLE doctors ADD COLUMN retired_from TEXT;

-- Reception's accounts, apart from the caller's secret. password is
-- "scrypt$N$r$p$salt$hash" (hex); five failed logins in a row lock the name until locked_until.
CREATE TABLE IF NOT EXISTS staff (
    name          TEXT PRIMARY KEY,
    password      TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    failed_logins INTEGER NOT NULL DEFAULT 0,
    locked_until  TEXT
);

-- A signed-in desk: the cookie's token is kept only as its SHA-256; csrf is the form token.
CREATE TABLE IF NOT EXISTS desk_sessions (
    token_hash TEXT PRIMARY KEY,
    staff_name TEXT NOT NULL REFERENCES staff (name) ON DELETE CASCADE,
    csrf       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_seen  TEXT NOT NULL
);

-- Changes come from the desk too, as desk:NAME (the receptionist): the events table is
-- rebuilt with that source allowed, every row kept ("Audit").
CREATE TABLE events_v4 (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,                 -- UTC, ISO 8601
    source    TEXT NOT NULL CHECK (source IN ('api', 'cli', 'desk') OR source LIKE 'desk:_%'),
    action    TEXT NOT NULL,
    entity    TEXT NOT NULL,
    entity_id TEXT,
    before    TEXT,                          -- JSON or NULL
    after     TEXT                           -- JSON or NULL
);
INSERT INTO events_v4 SELECT * FROM events;
DROP TABLE events;
ALTER TABLE events_v4 RENAME TO events;

-- version 5

-- Who booked each appointment, kept on its row for the clinic's records ("Appointment records"):
-- the source of its booking event ('api' for the caller's voice agent, 'desk:NAME', 'cli'); the
-- bookings made before this version take it from the audit trail.
ALTER TABLE appointments ADD COLUMN booked_by TEXT;
CREATE INDEX booking_events ON events (entity_id) WHERE action = 'appointment.booked';
UPDATE appointments SET booked_by = (
    SELECT e.source FROM events e
    WHERE e.action = 'appointment.booked' AND e.entity_id = CAST(appointments.id AS TEXT)
    ORDER BY e.id LIMIT 1);
DROP INDEX booking_events;

-- version 6

-- Failed logins, counted per name and per source address, for any name typed, a staff
-- account's or not ("Desk accounts and sessions"): five in a row lock that name from that
-- address until locked_until; no one elsewhere can aim a lock at a receptionist. A row
-- goes when its name logs in from there, when `agenda staff unlock` lifts it, or
-- when it has been quiet for the lock's length.
CREATE TABLE login_failures (
    name         TEXT NOT NULL,
    source       TEXT NOT NULL,
    failures     INTEGER NOT NULL DEFAULT 0,
    locked_until TEXT,
    last_at      TEXT NOT NULL,
    PRIMARY KEY (name, source)
);
CREATE INDEX login_failures_by_time ON login_failures (last_at);
ALTER TABLE staff DROP COLUMN failed_logins;
ALTER TABLE staff DROP COLUMN locked_until;

-- version 7

-- Roles ("Roles"): reception does the day's work, admin also what changes the clinic or reads it
-- whole. The accounts made before roles could do everything, so they become admin.
ALTER TABLE staff ADD COLUMN role TEXT NOT NULL DEFAULT 'admin' CHECK (role IN ('reception', 'admin'));

-- The access record ("Access record"): every read of patients' data by a person or the caller,
-- one row a request, with the patients it showed (ids only, never a name, NIF or phone).
-- reader is 'api', 'desk:NAME' or 'cli:LOGIN'; kind what was read (patient, appointment,
-- search, day, print, export, blocked); allowed 0 for a refused read. Kept 2 years.
CREATE TABLE access_records (
    id      INTEGER PRIMARY KEY,
    at      TEXT NOT NULL,                    -- UTC, ISO 8601
    reader  TEXT NOT NULL,
    kind    TEXT NOT NULL,
    allowed INTEGER NOT NULL DEFAULT 1 CHECK (allowed IN (0, 1))
);
CREATE INDEX access_records_by_time ON access_records (at);
CREATE TABLE access_patients (
    patient_id INTEGER NOT NULL,
    record_id  INTEGER NOT NULL REFERENCES access_records (id),
    PRIMARY KEY (patient_id, record_id)
);
CREATE INDEX access_patients_by_record ON access_patients (record_id);

-- Erasure under the retention law ("Erasure and retention"). An erasure request blocks the
-- patient (LOPDGDD art. 32): the record is kept, unprocessed, until erasable_from (the ISO day
-- the retention period ends), then anonymised. A blocked record gives up its NIF: the unique
-- index skips it, so a new registration with that NIF is a new patient. Routine reads go
-- through live_patients, which leaves blocked records out. The table is rebuilt to drop the
-- NIF's old unique constraint, every row and id kept.
CREATE TABLE patients_v7 (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    surname       TEXT,
    birth_date    TEXT,
    nif           TEXT NOT NULL,
    phone         TEXT,            -- as the caller gave it
    phone_e164    TEXT,            -- what searches and answers use ("Patients")
    created_at    TEXT NOT NULL,
    blocked_at    TEXT,            -- UTC, when an erasure request blocked the record
    erasable_from TEXT,            -- ISO day from which it may be anonymised
    anonymised_at TEXT             -- UTC, when its identity was replaced
);
INSERT INTO patients_v7 (id, name, surname, birth_date, nif, phone, phone_e164, created_at)
    SELECT id, name, surname, birth_date, nif, phone, phone_e164, created_at FROM patients;
DROP TABLE patients;
ALTER TABLE patients_v7 RENAME TO patients;
CREATE UNIQUE INDEX patients_by_nif ON patients (nif) WHERE blocked_at IS NULL;
CREATE INDEX patients_by_phone ON patients (phone_e164) WHERE blocked_at IS NULL;
CREATE INDEX patients_due_for_erasure ON patients (erasable_from) WHERE anonymised_at IS NULL;
CREATE VIEW live_patients AS SELECT * FROM patients WHERE blocked_at IS NULL;

-- version 8

-- A doctor may take different insurances at different centers ("Catalogs"): each list belongs to
-- one center (NULL: a single-site clinic, as in schedules); a doctor with no list at a center
-- takes every insurance there. The lists made before hold at every center where the doctor has
-- hours. The table is rebuilt to add the center to its key.
CREATE TABLE doctor_insurances_v8 (
    doctor_id    TEXT NOT NULL REFERENCES doctors (id),
    center_id    TEXT REFERENCES centers (id),
    insurance_id TEXT NOT NULL REFERENCES insurances (id)
);
INSERT INTO doctor_insurances_v8 (doctor_id, center_id, insurance_id)
    SELECT DISTINCT i.doctor_id, s.center_id, i.insurance_id FROM doctor_insurances i
    JOIN schedules s ON s.doctor_id = i.doctor_id;
INSERT INTO doctor_insurances_v8 (doctor_id, center_id, insurance_id)
    SELECT i.doctor_id, NULL, i.insurance_id FROM doctor_insurances i
    WHERE NOT EXISTS (SELECT 1 FROM schedules s WHERE s.doctor_id = i.doctor_id);
DROP TABLE doctor_insurances;
ALTER TABLE doctor_insurances_v8 RENAME TO doctor_insurances;
CREATE UNIQUE INDEX doctor_insurances_key ON doctor_insurances (doctor_id, coalesce(center_id, ''), insurance_id);

-- version 9

-- Reception's patient search ("Patient search"): name and surname as folded by the clinic's
-- code (lower case, no accents, ñ as n, ü as u, a space before each word), written with every
-- change of a name; agenda_fold is that code, given to every connection Agenda opens.
ALTER TABLE patients ADD COLUMN search TEXT NOT NULL DEFAULT '';
UPDATE patients SET search = agenda_fold(name || ' ' || coalesce(surname, ''));
CREATE INDEX patients_by_search ON patients (search) WHERE blocked_at IS NULL;

-- What happens at the counter ("Attendance"): the desk's own record, beside the caller's status,
-- which it never changes. arrived_at is UTC.
ALTER TABLE appointments ADD COLUMN attendance TEXT CHECK (attendance IN ('arrived', 'seen', 'no_show'));
ALTER TABLE appointments ADD COLUMN arrived_at TEXT;

-- An appointment inside a closure needs a call ("To call"): closures are looked up by their last day.
CREATE INDEX closures_by_end ON closures (date_to);

-- An appointment's and a patient's history, read from the audit trail by the desk ("Audit").
CREATE INDEX events_by_entity ON events (entity, entity_id);

-- version 10

-- A desk form sent after its session ended ("Kept forms"): what was typed, kept on the server for
-- the same staff name for 10 minutes, until they log in again and are offered to send it once more.
-- id_hash is the SHA-256 of the random id the login page carries; fields is JSON [[name, value], ...].
CREATE TABLE kept_forms (
    id_hash    TEXT PRIMARY KEY,
    staff_name TEXT NOT NULL,
    path       TEXT NOT NULL,
    fields     TEXT NOT NULL,
    created_at TEXT NOT NULL
);

-- A "sobrecita" ("Sobrecita"): reception squeezes an urgent patient into a taken or off-grid time.
-- It is marked, and it is the one appointment the database lets overlap: the unique slot index, the
-- overlap triggers and the spans that make a slot taken all leave squeezed appointments out.
ALTER TABLE appointments ADD COLUMN squeezed INTEGER NOT NULL DEFAULT 0 CHECK (squeezed IN (0, 1));
DROP INDEX one_live_appointment_per_slot;
CREATE UNIQUE INDEX one_live_appointment_per_slot
    ON appointments (doctor_id, date, time) WHERE status != 'cancelled' AND squeezed = 0;
DROP INDEX appointments_by_doctor_day;
CREATE INDEX appointments_by_doctor_day ON appointments (doctor_id, date, time, end_time, status, squeezed);
DROP TRIGGER no_overlap_on_insert;
CREATE TRIGGER no_overlap_on_insert
BEFORE INSERT ON appointments
WHEN NEW.status != 'cancelled' AND NEW.squeezed = 0 AND EXISTS (
    SELECT 1 FROM appointments
    WHERE doctor_id = NEW.doctor_id AND date = NEW.date AND status != 'cancelled' AND squeezed = 0
      AND time < NEW.end_time AND NEW.time < end_time)
BEGIN
    SELECT RAISE(ABORT, 'SLOT_NOT_AVAILABLE');
END;
DROP TRIGGER no_overlap_on_update;
CREATE TRIGGER no_overlap_on_update
BEFORE UPDATE OF doctor_id, date, time, end_time, status, squeezed ON appointments
WHEN NEW.status != 'cancelled' AND NEW.squeezed = 0 AND EXISTS (
    SELECT 1 FROM appointments
    WHERE id != NEW.id AND doctor_id = NEW.doctor_id AND date = NEW.date AND status != 'cancelled'
      AND squeezed = 0 AND time < NEW.end_time AND NEW.time < end_time)
BEGIN
    SELECT RAISE(ABORT, 'SLOT_NOT_AVAILABLE');
END;

-- Everyone a clinic sees ("Patients without a NIF"): a child under 14 is registered at the desk
-- under a guardian who is a patient, with no NIF of their own; a visitor gives a passport number,
-- which the NIF column takes. nif is unique when present. The table is rebuilt to let it be NULL,
-- every row and id kept; live_patients also gives each patient's guardian's NIF and name.
DROP VIEW live_patients;
CREATE TABLE patients_v10 (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    surname       TEXT,
    birth_date    TEXT,
    nif           TEXT,
    guardian_id   INTEGER REFERENCES patients (id),
    phone         TEXT,            -- as the caller gave it
    phone_e164    TEXT,            -- what searches and answers use ("Patients")
    created_at    TEXT NOT NULL,
    blocked_at    TEXT,            -- UTC, when an erasure request blocked the record
    erasable_from TEXT,            -- ISO day from which it may be anonymised
    anonymised_at TEXT,            -- UTC, when its identity was replaced
    search        TEXT NOT NULL DEFAULT '',
    CHECK (nif IS NOT NULL OR guardian_id IS NOT NULL)
);
INSERT INTO patients_v10 (id, name, surname, birth_date, nif, phone, phone_e164, created_at, blocked_at,
                          erasable_from, anonymised_at, search)
    SELECT id, name, surname, birth_date, nif, phone, phone_e164, created_at, blocked_at, erasable_from,
           anonymised_at, search FROM patients;
DROP TABLE patients;
ALTER TABLE patients_v10 RENAME TO patients;
CREATE UNIQUE INDEX patients_by_nif ON patients (nif) WHERE blocked_at IS NULL;
CREATE INDEX patients_by_phone ON patients (phone_e164) WHERE blocked_at IS NULL;
CREATE INDEX patients_due_for_erasure ON patients (erasable_from) WHERE anonymised_at IS NULL;
CREATE INDEX patients_by_search ON patients (search) WHERE blocked_at IS NULL;
CREATE INDEX patients_by_guardian ON patients (guardian_id) WHERE guardian_id IS NOT NULL;
CREATE VIEW live_patients AS
    SELECT p.*, g.nif AS guardian_nif, CASE WHEN g.id IS NULL THEN NULL
                                            ELSE g.name || coalesce(' ' || g.surname, '') END AS guardian_name
    FROM patients p LEFT JOIN patients g ON g.id = p.guardian_id
    WHERE p.blocked_at IS NULL;

-- Each doctor's calendar feed ("Calendar feeds"): a secret URL of their coming appointments. The
-- token is all the access it gives; only its SHA-256 is kept, and a new one replaces the old.
CREATE TABLE doctor_feeds (
    doctor_id  TEXT PRIMARY KEY REFERENCES doctors (id),
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);

-- A series of sessions ("Series"): appointments booked together for one patient, every N days,
-- then each its own (moved or cancelled alone). series_id marks them; the desk shows each one's place.
CREATE TABLE series (
    id         INTEGER PRIMARY KEY,
    patient_id INTEGER NOT NULL REFERENCES patients (id),
    doctor_id  TEXT NOT NULL REFERENCES doctors (id),
    every_days INTEGER NOT NULL CHECK (every_days BETWEEN 1 AND 366),
    count      INTEGER NOT NULL CHECK (count BETWEEN 2 AND 60),
    created_at TEXT NOT NULL
);
ALTER TABLE appointments ADD COLUMN series_id INTEGER REFERENCES series (id);
CREATE INDEX appointments_by_series ON appointments (series_id) WHERE series_id IS NOT NULL;

-- The waiting list ("Waiting list"): a patient who wants an earlier slot, with a doctor or a
-- speciality, a center, a window of dates and of times of day, a note. Nothing is reserved: the desk
-- shows which waiting patients a free slot fits, oldest first. An entry ends when it is booked or
-- removed, and when its window has passed.
CREATE TABLE waitlist (
    id            INTEGER PRIMARY KEY,
    patient_id    INTEGER NOT NULL REFERENCES patients (id),
    doctor_id     TEXT REFERENCES doctors (id),
    speciality_id TEXT REFERENCES specialities (id),
    center_id     TEXT REFERENCES centers (id),
    date_from     TEXT NOT NULL,
    date_to       TEXT NOT NULL CHECK (date_to >= date_from),
    time_from     TEXT NOT NULL DEFAULT '00:00',
    time_to       TEXT NOT NULL DEFAULT '24:00',
    note          TEXT,
    created_at    TEXT NOT NULL,
    ended_at      TEXT,
    ended_why     TEXT CHECK (ended_why IN ('booked', 'removed', 'erased')),
    CHECK (doctor_id IS NOT NULL OR speciality_id IS NOT NULL)
);
CREATE INDEX waitlist_waiting ON waitlist (date_to) WHERE ended_at IS NULL;

-- The report reads the appointments booked in a span of weeks ("The clinic at a glance"): with the
-- day and who booked in it, the index answers that alone.
CREATE INDEX appointments_by_creation ON appointments (created_at, date, booked_by);

-- version 11

-- The record of reads, bounded ("Access record"): one row per patient, reader, kind, outcome and UTC
-- day, with how many reads it stands for and the first and last (Unix seconds, UTC), so that a
-- receptionist's hundred searches are one row a day, not one a request; a feed's polls extend one row
-- for as long as they go on. day is the UTC day as a number (20261126) on which the row began. Ids
-- only: the record is not a second copy of the data.
CREATE TABLE access_reads (
    patient_id INTEGER NOT NULL,
    day        INTEGER NOT NULL,
    reader     TEXT NOT NULL,
    kind       TEXT NOT NULL,
    allowed    INTEGER NOT NULL CHECK (allowed IN (0, 1)),
    reads      INTEGER NOT NULL,
    first_at   INTEGER NOT NULL,
    last_at    INTEGER NOT NULL,
    PRIMARY KEY (patient_id, reader, kind, allowed, day)
) WITHOUT ROWID;
INSERT INTO access_reads (patient_id, day, reader, kind, allowed, reads, first_at, last_at)
    SELECT p.patient_id, CAST(strftime('%Y%m%d', r.at) AS INTEGER), r.reader, r.kind, r.allowed, count(*),
           CAST(strftime('%s', min(r.at)) AS INTEGER), CAST(strftime('%s', max(r.at)) AS INTEGER)
    FROM access_records r JOIN access_patients p ON p.record_id = r.id
    GROUP BY p.patient_id, strftime('%Y%m%d', r.at), r.reader, r.kind, r.allowed;
DROP TABLE access_patients;
DROP TABLE access_records;

-- A blocked guardian is no one's guardian in any answer (D34, "A patient's identity"): the view gives
-- a child their guardian's NIF only while the guardian is live. A patient without a NIF and without a
-- guardian (a child whose guardian was erased, moved in from another agenda) may exist when their birth
-- date is known: the table is rebuilt to say so, every row and id kept.
DROP VIEW live_patients;
CREATE TABLE patients_v11 (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    surname       TEXT,
    birth_date    TEXT,
    nif           TEXT,
    guardian_id   INTEGER REFERENCES patients (id),
    phone         TEXT,            -- as the caller gave it
    phone_e164    TEXT,            -- what searches and answers use ("Patients")
    created_at    TEXT NOT NULL,
    blocked_at    TEXT,            -- UTC, when an erasure request blocked the record
    erasable_from TEXT,            -- ISO day from which it may be anonymised
    anonymised_at TEXT,            -- UTC, when its identity was replaced
    search        TEXT NOT NULL DEFAULT '',
    CHECK (nif IS NOT NULL OR guardian_id IS NOT NULL OR birth_date IS NOT NULL)
);
INSERT INTO patients_v11 SELECT id, name, surname, birth_date, nif, guardian_id, phone, phone_e164, created_at,
                                blocked_at, erasable_from, anonymised_at, search FROM patients;
DROP TABLE patients;
ALTER TABLE patients_v11 RENAME TO patients;
CREATE UNIQUE INDEX patients_by_nif ON patients (nif) WHERE blocked_at IS NULL;
CREATE INDEX patients_by_phone ON patients (phone_e164) WHERE blocked_at IS NULL;
CREATE INDEX patients_due_for_erasure ON patients (erasable_from) WHERE anonymised_at IS NULL;
CREATE INDEX patients_by_search ON patients (search) WHERE blocked_at IS NULL;
CREATE INDEX patients_by_guardian ON patients (guardian_id) WHERE guardian_id IS NOT NULL;
CREATE VIEW live_patients AS
    SELECT p.*, g.nif AS guardian_nif
    FROM patients p LEFT JOIN patients g ON g.id = p.guardian_id AND g.blocked_at IS NULL
    WHERE p.blocked_at IS NULL;

-- version 12

-- Visit types ("Visit types"): what a clinic books (a first visit, a follow-up, a physiotherapy
-- session), each of its own length and an optional pause after it (cleaning, notes: the doctor's
-- time, not the patient's), in an area (a speciality); needs lists the categories of room or machine
-- a visit of the type holds (';' between them). A catalog without types reads as today's: each doctor
-- a visit of their grid's length in their speciality.
CREATE TABLE visit_types (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    speciality_id TEXT NOT NULL REFERENCES specialities (id),
    minutes       INTEGER NOT NULL CHECK (minutes BETWEEN 5 AND 480),
    pause         INTEGER NOT NULL DEFAULT 0 CHECK (pause BETWEEN 0 AND 240),
    needs         TEXT NOT NULL DEFAULT ''
);
-- Which types a doctor offers at a center (NULL: a single-site clinic), in order: the first is the
-- doctor's default there.
CREATE TABLE doctor_types (
    doctor_id TEXT NOT NULL REFERENCES doctors (id),
    center_id TEXT REFERENCES centers (id),
    type_id   TEXT NOT NULL REFERENCES visit_types (id),
    position  INTEGER NOT NULL
);
CREATE UNIQUE INDEX doctor_types_key ON doctor_types (doctor_id, coalesce(center_id, ''), type_id);

-- Rooms and machines ("Rooms and machines"): a center's resources, each of a category (box, surgery,
-- ultrasound). A doctor's hours may place the doctor in a room: it is theirs during those hours.
CREATE TABLE resources (
    id        TEXT PRIMARY KEY,
    name      TEXT NOT NULL,
    center_id TEXT REFERENCES centers (id),
    is_room   INTEGER NOT NULL CHECK (is_room IN (0, 1)),
    category  TEXT NOT NULL
);
ALTER TABLE schedules ADD COLUMN room_id TEXT REFERENCES resources (id);

-- An appointment's type, the pause after it, and busy_until: its end plus the pause, the doctor's
-- (and its rooms' and machines') time, which the overlap rule reads (NULL: no pause, its end); the
-- patient's time ends at end_time ("One patient, one place"). overlap_accepted: reception booked it
-- over the same patient's other visit on purpose, audited.
ALTER TABLE appointments ADD COLUMN type_id TEXT REFERENCES visit_types (id);
ALTER TABLE appointments ADD COLUMN pause INTEGER NOT NULL DEFAULT 0 CHECK (pause BETWEEN 0 AND 240);
ALTER TABLE appointments ADD COLUMN busy_until TEXT CHECK (busy_until IS NULL OR busy_until >= end_time);
ALTER TABLE appointments ADD COLUMN overlap_accepted INTEGER NOT NULL DEFAULT 0 CHECK (overlap_accepted IN (0, 1));
DROP INDEX appointments_by_doctor_day;
CREATE INDEX appointments_by_doctor_day ON appointments (doctor_id, date, time, end_time, busy_until, status, squeezed);
CREATE INDEX appointments_by_patient_live ON appointments (patient_id, date, time, end_time)
    WHERE status != 'cancelled';
DROP TRIGGER no_overlap_on_insert;
CREATE TRIGGER no_overlap_on_insert
BEFORE INSERT ON appointments
WHEN NEW.status != 'cancelled' AND NEW.squeezed = 0 AND EXISTS (
    SELECT 1 FROM appointments
    WHERE doctor_id = NEW.doctor_id AND date = NEW.date AND status != 'cancelled' AND squeezed = 0
      AND time < coalesce(NEW.busy_until, NEW.end_time) AND NEW.time < coalesce(busy_until, end_time))
BEGIN
    SELECT RAISE(ABORT, 'SLOT_NOT_AVAILABLE');
END;
DROP TRIGGER no_overlap_on_update;
CREATE TRIGGER no_overlap_on_update
BEFORE UPDATE OF doctor_id, date, time, end_time, busy_until, status, squeezed ON appointments
WHEN NEW.status != 'cancelled' AND NEW.squeezed = 0 AND EXISTS (
    SELECT 1 FROM appointments
    WHERE id != NEW.id AND doctor_id = NEW.doctor_id AND date = NEW.date AND status != 'cancelled'
      AND squeezed = 0 AND time < coalesce(NEW.busy_until, NEW.end_time) AND NEW.time < coalesce(busy_until, end_time))
BEGIN
    SELECT RAISE(ABORT, 'SLOT_NOT_AVAILABLE');
END;

-- What an appointment holds ("Rooms and machines"): each room or machine for its length and pause.
-- The database refuses two live holds of one resource that overlap, as it refuses a doctor's double
-- booking; a cancelled appointment's holds end with it.
CREATE TABLE holds (
    appointment_id INTEGER NOT NULL REFERENCES appointments (id),
    resource_id    TEXT NOT NULL REFERENCES resources (id),
    date           TEXT NOT NULL,
    time           TEXT NOT NULL,
    until          TEXT NOT NULL CHECK (until > time),
    live           INTEGER NOT NULL DEFAULT 1 CHECK (live IN (0, 1)),
    PRIMARY KEY (appointment_id, resource_id)
);
CREATE INDEX holds_by_resource_day ON holds (resource_id, date, time, until) WHERE live = 1;
CREATE TRIGGER no_double_hold_on_insert
BEFORE INSERT ON holds
WHEN NEW.live = 1 AND EXISTS (
    SELECT 1 FROM holds WHERE resource_id = NEW.resource_id AND date = NEW.date AND live = 1
      AND appointment_id != NEW.appointment_id AND time < NEW.until AND NEW.time < until)
BEGIN
    SELECT RAISE(ABORT, 'SLOT_NOT_AVAILABLE');
END;
CREATE TRIGGER no_double_hold_on_update
BEFORE UPDATE OF resource_id, date, time, until, live ON holds
WHEN NEW.live = 1 AND EXISTS (
    SELECT 1 FROM holds WHERE resource_id = NEW.resource_id AND date = NEW.date AND live = 1
      AND appointment_id != NEW.appointment_id AND time < NEW.until AND NEW.time < until)
BEGIN
    SELECT RAISE(ABORT, 'SLOT_NOT_AVAILABLE');
END;
-- A patient may wait for a visit type ("Waiting list"): a slot fits them only where that type fits.
ALTER TABLE waitlist ADD COLUMN type_id TEXT REFERENCES visit_types (id);

CREATE TRIGGER holds_end_with_their_appointment
AFTER UPDATE OF status ON appointments
WHEN NEW.status = 'cancelled'
BEGIN
    UPDATE holds SET live = 0 WHERE appointment_id = NEW.id;
END;

-- version 13
-- A series books what fits when asked ("Series"): it keeps what was asked (its first date and time,
-- how many sessions) so that the same series sent again is the one booked, and the dates asked that
-- it left out, for reception to call (ISO dates, space-separated); `count` is how many it booked.
ALTER TABLE series ADD COLUMN first_date TEXT;
ALTER TABLE series ADD COLUMN first_time TEXT;
ALTER TABLE series ADD COLUMN asked INTEGER;
ALTER TABLE series ADD COLUMN left_out TEXT NOT NULL DEFAULT '';
-- A waiting entry may name the later appointment it would bring forward, and the insurance to book
-- with ("Waiting list"); once booked, `appointment_id` names the appointment it became.
ALTER TABLE waitlist ADD COLUMN appointment_id INTEGER REFERENCES appointments (id);
ALTER TABLE waitlist ADD COLUMN insurance_id TEXT REFERENCES insurances (id);

-- version 14
-- A browser that logged in at the desk ("Login flood"): its cookie's token is kept only as its SHA-256,
-- renewed at each login, with the staff name that last logged in on it. Such a browser keeps a lane of
-- its own through the bound on password checks, lost while `failures` in a row through it reach the
-- lock's count; it goes with that account, or when no login used it for a year.
CREATE TABLE desk_devices (
    token_hash TEXT PRIMARY KEY,
    staff_name TEXT NOT NULL REFERENCES staff (name) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    last_login TEXT NOT NULL,
    failures   INTEGER NOT NULL DEFAULT 0,
    failed_at  TEXT
);
CREATE INDEX desk_devices_by_login ON desk_devices (last_login);

-- version 15
-- A visit holds its doctor's room ("What a visit holds"): a coming visit (not a sobrecita, which shares it)
-- of a doctor whose hours place them in a room holds that room, as any room, for its length and pause. Each
-- coming visit's own room (from today, by the machine's date) is filled in here where it is free then, the
-- lower id first; the rest are listed as conflicts (the desk's rooms page, `agenda status`) for reception
-- to move, and never fail the upgrade.
INSERT INTO holds (appointment_id, resource_id, date, time, until)
SELECT a.id, s.room_id, a.date, a.time, coalesce(a.busy_until, a.end_time)
FROM appointments a JOIN schedules s ON s.doctor_id = a.doctor_id AND s.center_id IS a.center_id
    AND s.weekday = (CAST(strftime('%w', a.date) AS INTEGER) + 6) % 7 AND s.start_time <= a.time AND a.time < s.end_time
WHERE a.status != 'cancelled' AND a.squeezed = 0 AND s.room_id IS NOT NULL AND a.date >= date('now')
    AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.appointment_id = a.id AND h.resource_id = s.room_id)
    AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.resource_id = s.room_id AND h.date = a.date AND h.live = 1
                    AND h.time < coalesce(a.busy_until, a.end_time) AND a.time < h.until)
    -- nor another visit placed in the room then, of a lower id, which takes it first
    AND NOT EXISTS (SELECT 1 FROM schedules t JOIN appointments b ON b.doctor_id = t.doctor_id AND b.date = a.date
                    AND b.center_id IS t.center_id AND t.weekday = s.weekday AND t.start_time <= b.time
                    AND b.time < t.end_time
                    WHERE t.room_id = s.room_id AND b.id < a.id AND b.status != 'cancelled' AND b.squeezed = 0
                      AND b.time < coalesce(a.busy_until, a.end_time) AND a.time < coalesce(b.busy_until, b.end_time));

-- version 16
-- A patient's messages ("A patient's messages"): an optional e-mail, the language of their messages
-- (es or en; NULL: Spanish) and whether they want messages about their own appointments (1: yes, 0: they
-- stopped them; NULL: no e-mail yet), with when that choice was last set (UTC) and by whom (the desk's user,
-- cli, api, import, or link: the patient). Nothing else is ever sent.
ALTER TABLE patients ADD COLUMN email TEXT;
ALTER TABLE patients ADD COLUMN language TEXT CHECK (language IN ('es', 'en'));
ALTER TABLE patients ADD COLUMN messages INTEGER CHECK (messages IN (0, 1));
ALTER TABLE patients ADD COLUMN messages_since TEXT;
ALTER TABLE patients ADD COLUMN messages_by TEXT;

-- version 17
-- The outbox ("A patient's messages"): a change that calls for a message to the patient writes a row here in
-- its own transaction, naming only the appointment and the kind of message (never its text, never a token);
-- the sender renders it when it sends. A rolled-back change leaves none.
CREATE TABLE outbox (
    id             INTEGER PRIMARY KEY,
    appointment_id INTEGER NOT NULL REFERENCES appointments (id),
    kind           TEXT NOT NULL CHECK (kind IN ('confirmation', 'series', 'update', 'notice')),
    created_at     TEXT NOT NULL
);
CREATE INDEX outbox_by_appointment ON outbox (appointment_id, id);

-- version 18
-- The sender ("The sender"): each outbox row now says what became of it. waiting: to send when next_try_at
-- (UTC; NULL: now) comes; held: left unsent by a restore or a promotion, for the admin to release (`agenda
-- mail retry`) or drop; sent, at done_at; stale: a later change made it moot; skipped: nobody to send it to
-- (no e-mail, messages stopped, a blocked patient), why in `error`; failed: it kept failing, why in `error`
-- (never an address). message_id is set before the first try, so that a try repeated after a crash carries
-- the same Message-ID. `slot` is the visit's date and time the message told: a reminder's, from its queueing (a
-- move makes it stale); any other's, from its first try (an update then says what the visit was before).
CREATE TABLE outbox_18 (
    id             INTEGER PRIMARY KEY,
    appointment_id INTEGER NOT NULL REFERENCES appointments (id),
    kind           TEXT NOT NULL CHECK (kind IN ('confirmation', 'series', 'update', 'notice', 'reminder')),
    created_at     TEXT NOT NULL,
    state          TEXT NOT NULL DEFAULT 'waiting'
                   CHECK (state IN ('waiting', 'held', 'sent', 'stale', 'skipped', 'failed')),
    attempts       INTEGER NOT NULL DEFAULT 0,
    next_try_at    TEXT,
    message_id     TEXT,
    done_at        TEXT,
    error          TEXT,
    slot           TEXT CHECK (kind != 'reminder' OR slot IS NOT NULL)
);
INSERT INTO outbox_18 (id, appointment_id, kind, created_at) SELECT id, appointment_id, kind, created_at FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_18 RENAME TO outbox;
CREATE INDEX outbox_by_appointment ON outbox (appointment_id, id);
CREATE INDEX outbox_waiting ON outbox (id) WHERE state = 'waiting';
-- The patient's own links ("The patient's link"): the SHA-256 of a token made for one message or one printed
-- card, about one appointment (or, for 'stop', a message's one-click stop of further messages); the token itself
-- is only in that message or card. A link opens its appointment until the appointment has ended (a stop link,
-- for a year), while the patient is not blocked.
CREATE TABLE patient_links (
    hash           TEXT PRIMARY KEY,
    appointment_id INTEGER NOT NULL REFERENCES appointments (id),
    made_at        TEXT NOT NULL,
    made_for       TEXT NOT NULL CHECK (made_for IN ('message', 'card', 'stop'))
) WITHOUT ROWID;
CREATE INDEX patient_links_by_appointment ON patient_links (appointment_id);
-- Changes come from the patient's own link too, as `patient` ("The patient's link"): the events table is rebuilt
-- with that source allowed, every row kept ("Audit").
CREATE TABLE events_18 (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,                 -- UTC, ISO 8601
    source    TEXT NOT NULL CHECK (source IN ('api', 'cli', 'desk', 'patient') OR source LIKE 'desk:_%'),
    action    TEXT NOT NULL,
    entity    TEXT NOT NULL,
    entity_id TEXT,
    before    TEXT,                          -- JSON or NULL
    after     TEXT                           -- JSON or NULL
);
INSERT INTO events_18 SELECT * FROM events;
DROP TABLE events;
ALTER TABLE events_18 RENAME TO events;
CREATE INDEX events_by_entity ON events (entity, entity_id);
-- What a message to a patient may say of the place and the visit ("What a message says"), optional catalog
-- columns both ways: a center's address and phone (the clinic's, for a patient who must call), and what to bring
-- to a visit of a type. None of them is the caller's (/custom-config leaves them out).
ALTER TABLE centers ADD COLUMN address TEXT;
ALTER TABLE centers ADD COLUMN phone TEXT;
ALTER TABLE visit_types ADD COLUMN bring TEXT;

-- version 19
-- A message once ("The sender"): each outbox row's Message-ID is random, written by the database with the row and
-- never changed, so that a repeat after a crash, a restore or a retry is the same message to a mail program (a
-- row id can be given out again after a restore: nothing is derived from one). message_id holds its left part,
-- 32 hex digits (the sender adds '@' and the domain of --mail-from), or, for a row tried before this version, the
-- whole Message-ID it went with, kept.
UPDATE outbox SET message_id = lower(hex(randomblob(16))) WHERE message_id IS NULL;
CREATE TRIGGER outbox_message_id AFTER INSERT ON outbox WHEN NEW.message_id IS NULL
BEGIN
    UPDATE outbox SET message_id = lower(hex(randomblob(16))) WHERE id = NEW.id;
END;
CREATE TRIGGER outbox_message_id_kept BEFORE UPDATE OF message_id ON outbox
WHEN OLD.message_id IS NOT NULL AND NEW.message_id IS NOT OLD.message_id
BEGIN
    SELECT RAISE(ABORT, 'an outbox row keeps its Message-ID for its whole life');
END;
-- The clinic's own id ("What a message says"): random, made once, so that a visit's calendar UID is unique in the
-- world: here for a database with messages already, else by the sender before its first message (a database
-- copied before then, as a template or a demo, gets its own). told_before: the last outbox row written before this
-- version; a visit a message among them told the patient of keeps the UID it went with (appointment-ID@agenda), so
-- that an update still reaches it.
CREATE TABLE clinic_identity (
    one         INTEGER PRIMARY KEY CHECK (one = 1),
    id          TEXT NOT NULL,
    told_before INTEGER NOT NULL
);
INSERT INTO clinic_identity (one, id, told_before)
SELECT 1, lower(hex(randomblob(16))), max(id) FROM outbox HAVING count(*) > 0;

-- version 20
-- A hold of the doctor's own room ("Rooms and machines"): `own` is 1 when the room held is the one the hours of
-- the visit's doctor place them in at its start (never a sobrecita's: it shares that room or takes another),
-- set by the database as each hold is written. Availability reads only the other holds of a doctor's room, by
-- their own index: the doctor's own visits already take the doctor's time.
ALTER TABLE holds ADD COLUMN own INTEGER NOT NULL DEFAULT 0 CHECK (own IN (0, 1));
UPDATE holds SET own = 1 WHERE EXISTS (
    SELECT 1 FROM appointments a JOIN schedules s ON s.doctor_id = a.doctor_id AND s.center_id IS a.center_id
        AND s.weekday = (CAST(strftime('%w', holds.date) AS INTEGER) + 6) % 7 AND s.start_time <= holds.time
        AND holds.time < s.end_time
    WHERE a.id = holds.appointment_id AND a.squeezed = 0 AND s.room_id = holds.resource_id);
CREATE TRIGGER holds_of_the_doctors_own_room
AFTER INSERT ON holds
WHEN EXISTS (
    SELECT 1 FROM appointments a JOIN schedules s ON s.doctor_id = a.doctor_id AND s.center_id IS a.center_id
        AND s.weekday = (CAST(strftime('%w', NEW.date) AS INTEGER) + 6) % 7 AND s.start_time <= NEW.time
        AND NEW.time < s.end_time
    WHERE a.id = NEW.appointment_id AND a.squeezed = 0 AND s.room_id = NEW.resource_id)
BEGIN
    UPDATE holds SET own = 1 WHERE appointment_id = NEW.appointment_id AND resource_id = NEW.resource_id;
END;
CREATE INDEX holds_of_others ON holds (resource_id, date, time, until) WHERE live = 1 AND own = 0;
-- A visit a catalog reload left outside its doctor's hours ("To call"): listed here by the reload, it needs a
-- call while its doctor's hours still leave it out (read again each time: hours given back, or a move, end it).
CREATE TABLE outside_hours (
    appointment_id INTEGER PRIMARY KEY REFERENCES appointments (id)
);

-- version 21
-- Reception sends a visit's current state on purpose ("What a message says"): a message of its own kind, 'state',
-- bounded to one every few minutes a visit by the one operation that writes it. The table is rebuilt for its
-- CHECK, as version 18 did; its indexes and the Message-ID's triggers (version 19) are made again.
CREATE TABLE outbox_21 (
    id             INTEGER PRIMARY KEY,
    appointment_id INTEGER NOT NULL REFERENCES appointments (id),
    kind           TEXT NOT NULL CHECK (kind IN ('confirmation', 'series', 'update', 'notice', 'reminder', 'state')),
    created_at     TEXT NOT NULL,
    state          TEXT NOT NULL DEFAULT 'waiting'
                   CHECK (state IN ('waiting', 'held', 'sent', 'stale', 'skipped', 'failed')),
    attempts       INTEGER NOT NULL DEFAULT 0,
    next_try_at    TEXT,
    message_id     TEXT,
    done_at        TEXT,
    error          TEXT,
    slot           TEXT CHECK (kind != 'reminder' OR slot IS NOT NULL)
);
INSERT INTO outbox_21 (id, appointment_id, kind, created_at, state, attempts, next_try_at, message_id, done_at, error,
                       slot)
SELECT id, appointment_id, kind, created_at, state, attempts, next_try_at, message_id, done_at, error, slot
FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_21 RENAME TO outbox;
CREATE INDEX outbox_by_appointment ON outbox (appointment_id, id);
CREATE INDEX outbox_waiting ON outbox (id) WHERE state = 'waiting';
CREATE TRIGGER outbox_message_id AFTER INSERT ON outbox WHEN NEW.message_id IS NULL
BEGIN
    UPDATE outbox SET message_id = lower(hex(randomblob(16))) WHERE id = NEW.id;
END;
CREATE TRIGGER outbox_message_id_kept BEFORE UPDATE OF message_id ON outbox
WHEN OLD.message_id IS NOT NULL AND NEW.message_id IS NOT OLD.message_id
BEGIN
    SELECT RAISE(ABORT, 'an outbox row keeps its Message-ID for its whole life');
END;

-- version 22
-- The waiting room ("The waiting room"): the moment reception said "pasa a consulta" (UTC), beside the mark
-- arrived, which stays; "seen" then means finished and keeps it. It lives only beside an arrival: an attendance
-- undone, turned to a no-show or cleared by a move takes it away.
ALTER TABLE appointments ADD COLUMN called_in_at TEXT;
CREATE TRIGGER called_in_only_beside_an_arrival
AFTER UPDATE OF attendance ON appointments
WHEN NEW.called_in_at IS NOT NULL AND coalesce(NEW.attendance, '') NOT IN ('arrived', 'seen')
BEGIN
    UPDATE appointments SET called_in_at = NULL WHERE id = NEW.id;
END;

-- version 23
-- Reception's notes ("Details of a booked visit"): a note of the desk's on a visit ("llamar antes", "trae
-- informes") and an administrative note on the patient ("prefiere mañanas", "avisar a su hija"); nothing clinical.
-- Each is a text of at most 500 characters, emptied when the patient's identity is.
ALTER TABLE appointments ADD COLUMN note TEXT;
ALTER TABLE patients ADD COLUMN note TEXT;

-- version 24
-- Patients book themselves ("Patients book themselves"): a visit booked on the clinic's own page holds its slot as
-- pending until the patient confirms it by the e-mail's link ('email', until pending_until, UTC), then as an
-- ordinary booking, or, when the page could not tell who the patient is, until reception matches it ('reception').
-- A pending visit is left out of the caller's lists; its slot, rooms and machines stay taken for everyone.
ALTER TABLE appointments ADD COLUMN pending TEXT CHECK (pending IN ('email', 'reception'));
ALTER TABLE appointments ADD COLUMN pending_until TEXT CHECK ((pending IS 'email') = (pending_until IS NOT NULL));
CREATE INDEX appointments_pending_until ON appointments (pending_until) WHERE pending = 'email';
-- Each booking asked on the page: the visit it holds (NULL once released), the patient it was booked for, which of
-- the three cases it was ('new': a patient inserted; 'same': the known record, its e-mail the one typed; 'verify':
-- a provisional patient inserted, for reception to match), the NIF typed (only for 'verify', emptied once
-- reception ends it), the language typed (the first message's, whoever the record is; NULL: Spanish), the SHA-256 of the confirmation link's token (the token is only in the message), and keys
-- of the address (IPv6 by /64), the folded e-mail and the NIF (HMAC-SHA256 by `web_key`'s key), so that the
-- bounds count requests without keeping what was typed.
CREATE TABLE web_requests (
    id             INTEGER PRIMARY KEY,
    appointment_id INTEGER REFERENCES appointments (id),
    patient_id     INTEGER REFERENCES patients (id),
    case_of        TEXT NOT NULL CHECK (case_of IN ('new', 'same', 'verify')),
    typed_nif      TEXT CHECK (typed_nif IS NULL OR case_of = 'verify'),
    token_hash     TEXT UNIQUE,
    language       TEXT CHECK (language IS NULL OR language = 'en'),
    address_key    TEXT NOT NULL,
    email_key      TEXT NOT NULL,
    nif_key        TEXT NOT NULL,
    doctor_id      TEXT NOT NULL REFERENCES doctors (id),
    date           TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    confirmed_at   TEXT,
    released_at    TEXT,
    ended_at       TEXT,
    ended_by       TEXT
);
CREATE INDEX web_requests_by_appointment ON web_requests (appointment_id) WHERE appointment_id IS NOT NULL;
CREATE INDEX web_requests_by_patient ON web_requests (patient_id) WHERE patient_id IS NOT NULL;
CREATE INDEX web_requests_by_address ON web_requests (address_key, created_at);
CREATE INDEX web_requests_by_email ON web_requests (email_key, created_at);
CREATE INDEX web_requests_by_nif ON web_requests (nif_key, created_at);
-- The page asks who holds a NIF, blocked records too, and reception's menu counts the requests it has to match:
-- both by an index, so that neither walks a table that grows for years.
CREATE INDEX patients_by_any_nif ON patients (nif);
CREATE INDEX web_requests_to_verify ON web_requests (appointment_id) WHERE case_of = 'verify' AND ended_at IS NULL;
-- The key of the bounds' HMACs: random, made with the page's first request (a database copied before then, as a
-- template or a demo, gets its own), never shown.
CREATE TABLE web_key (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    key BLOB NOT NULL
);
-- The page's first message, 'web': confirm the visit by its link. The outbox is rebuilt for its CHECK, as version 21
-- did; its indexes and the Message-ID's triggers are made again. Changes come from the page too, as `web`: the
-- events table is rebuilt with that source allowed, every row kept ("Audit").
CREATE TABLE outbox_24 (
    id             INTEGER PRIMARY KEY,
    appointment_id INTEGER NOT NULL REFERENCES appointments (id),
    kind           TEXT NOT NULL CHECK (kind IN ('confirmation', 'series', 'update', 'notice', 'reminder', 'state',
                                                 'web')),
    created_at     TEXT NOT NULL,
    state          TEXT NOT NULL DEFAULT 'waiting'
                   CHECK (state IN ('waiting', 'held', 'sent', 'stale', 'skipped', 'failed')),
    attempts       INTEGER NOT NULL DEFAULT 0,
    next_try_at    TEXT,
    message_id     TEXT,
    done_at        TEXT,
    error          TEXT,
    slot           TEXT CHECK (kind != 'reminder' OR slot IS NOT NULL)
);
INSERT INTO outbox_24 (id, appointment_id, kind, created_at, state, attempts, next_try_at, message_id, done_at, error,
                       slot)
SELECT id, appointment_id, kind, created_at, state, attempts, next_try_at, message_id, done_at, error, slot
FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_24 RENAME TO outbox;
CREATE INDEX outbox_by_appointment ON outbox (appointment_id, id);
CREATE INDEX outbox_waiting ON outbox (id) WHERE state = 'waiting';
CREATE TRIGGER outbox_message_id AFTER INSERT ON outbox WHEN NEW.message_id IS NULL
BEGIN
    UPDATE outbox SET message_id = lower(hex(randomblob(16))) WHERE id = NEW.id;
END;
CREATE TRIGGER outbox_message_id_kept BEFORE UPDATE OF message_id ON outbox
WHEN OLD.message_id IS NOT NULL AND NEW.message_id IS NOT OLD.message_id
BEGIN
    SELECT RAISE(ABORT, 'an outbox row keeps its Message-ID for its whole life');
END;
CREATE TABLE events_24 (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,                 -- UTC, ISO 8601
    source    TEXT NOT NULL CHECK (source IN ('api', 'cli', 'desk', 'patient', 'web') OR source LIKE 'desk:_%'),
    action    TEXT NOT NULL,
    entity    TEXT NOT NULL,
    entity_id TEXT,
    before    TEXT,                          -- JSON or NULL
    after     TEXT                           -- JSON or NULL
);
INSERT INTO events_24 SELECT * FROM events;
DROP TABLE events;
ALTER TABLE events_24 RENAME TO events;
CREATE INDEX events_by_entity ON events (entity, entity_id);
-- A visit never confirmed is released: removed with what exists only for it, its holds, links and messages, and
-- its request keeps no link to it. Nothing else is ever removed from the table. An id once given is never given
-- again (the audit trail and the access record name rows by id): the highest removed is kept here, and the owners
-- number a new row above it.
CREATE TABLE removed_ids (
    name  TEXT PRIMARY KEY CHECK (name IN ('appointments', 'patients')),
    up_to INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER appointment_removed BEFORE DELETE ON appointments
BEGIN
    INSERT INTO removed_ids (name, up_to) VALUES ('appointments', OLD.id)
        ON CONFLICT (name) DO UPDATE SET up_to = max(up_to, excluded.up_to);
    DELETE FROM holds WHERE appointment_id = OLD.id;
    DELETE FROM patient_links WHERE appointment_id = OLD.id;
    DELETE FROM outbox WHERE appointment_id = OLD.id;
    DELETE FROM outside_hours WHERE appointment_id = OLD.id;
    UPDATE web_requests SET appointment_id = NULL WHERE appointment_id = OLD.id;
END;
-- A patient removed (a provisional record its released request made, with nothing else) leaves its request.
CREATE TRIGGER patient_removed BEFORE DELETE ON patients
BEGIN
    INSERT INTO removed_ids (name, up_to) VALUES ('patients', OLD.id)
        ON CONFLICT (name) DO UPDATE SET up_to = max(up_to, excluded.up_to);
    UPDATE web_requests SET patient_id = NULL WHERE patient_id = OLD.id;
END;
