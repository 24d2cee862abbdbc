"""Catalogs and imports: the seed CSV (centers, specialities, insurances, doctors, closures) and patient
files from other systems."""

import bisect
import csv
import io
import itertools
import re
from pathlib import Path

from .values import (ClinicError, first_control, one_line, parse_date, parse_time, plural, sheet_value, text_fault,
                     text_limit)
from .store import record_event, transaction


CATALOG_COLUMNS = ("kind", "id", "name", "speciality", "center", "insurances", "days", "hours",
                   "slot_minutes", "date_from", "date_to")


WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6,  # and in Spanish:
            "lun": 0, "mar": 1, "mie": 2, "mié": 2, "jue": 3, "vie": 4, "sab": 5, "sáb": 5, "dom": 6,
            "lunes": 0, "martes": 1, "miercoles": 2, "miércoles": 2, "jueves": 3, "viernes": 4, "sabado": 5,
            "sábado": 5, "domingo": 6}


CATALOG_TABLES = {  # what a seed may change, in the order a snapshot reads it
    "centers": "SELECT id, name FROM centers ORDER BY id",
    "specialities": "SELECT id, name FROM specialities ORDER BY id",
    "insurances": "SELECT id, name FROM insurances ORDER BY id",
    "doctors": "SELECT id, name, speciality_id FROM doctors ORDER BY id",
    "doctor_insurances": "SELECT doctor_id, center_id, insurance_id FROM doctor_insurances ORDER BY 1, 2, 3",
    "schedules": "SELECT doctor_id, center_id, weekday, start_time, end_time, slot_minutes FROM schedules"
                 " ORDER BY 1, 2, 3, 4",
    "closures": "SELECT doctor_id, center_id, date_from, date_to, start_time, end_time, reason"
                " FROM closures ORDER BY 1, 2, 3, 4, 5",
}


CATALOG_NOUNS = {"centers": "center", "specialities": "speciality", "insurances": "insurance", "doctors": "doctor",
                 "doctor_insurances": "doctor insurance", "schedules": "schedule", "closures": "closure"}


class SeedError(Exception):
    """A catalog file that cannot be applied, or a file that cannot be read; `problems` are (line, message) pairs."""

    def __init__(self, problems):
        self.problems = sorted(problems)
        super().__init__("\n".join(f"line {line}: {message}" for line, message in self.problems))


class _NothingChanged(Exception):
    pass


def parse_days(text):
    days = set()
    for part in re.split(r"[;\s]+", text.strip().lower()):
        if not part:
            continue
        first, _, last = part.partition("-")
        if first not in WEEKDAYS or (last and last not in WEEKDAYS):
            raise ValueError(f"days: {part!r} is not a weekday: write mon tue wed thu fri sat sun or lun mar mié "
                             f"jue vie sáb dom (or the whole names), a ';' between days, ranges like mon-fri or lun-vie")
        start, stop = WEEKDAYS[first], WEEKDAYS[last or first]
        if stop < start:
            raise ValueError(f"days: {part!r} runs backwards")
        days.update(range(start, stop + 1))
    if not days:
        raise ValueError("days is required (like mon-fri or mon;wed;fri)")
    return sorted(days)


def parse_hours(text, required=True):
    ranges = []
    for part in re.split(r"[;\s]+", text.strip()):
        if not part:
            continue
        start, sep, end = part.partition("-")
        try:
            start, end = parse_time(start, "hours"), parse_time(end, "hours")
        except ClinicError:
            sep = ""
        if not sep:
            raise ValueError(f"hours: {part!r} is not a range like 09:00-14:00")
        if end <= start:
            raise ValueError(f"hours: {part!r} ends before it starts")
        ranges.append((start, end))
    if required and not ranges:
        raise ValueError("hours is required (like 09:00-14:00;16:00-19:00)")
    return ranges


def parse_slot_minutes(text):
    if not text:
        return 15
    if not text.isdigit() or not 5 <= int(text) <= 480:
        raise ValueError(f"slot_minutes: {text!r} must be a whole number of minutes from 5 to 480")
    return int(text)


def read_catalog_file(path):
    """[(line number, row dict), ...] of a "Catalog file" CSV (UTF-8 or Windows-1252); columns by name,
    extra columns ignored."""
    text, _ = decode_text_file(Path(path).read_bytes())  # UTF-8, else as a Spanish spreadsheet saves it
    return read_catalog_text(text)


CSV_SEPARATORS = {",": "','", ";": "';'", "\t": "a tab"}


def read_catalog_text(text):
    """read_catalog_file's rows from the text of the file. The separator is the header's: ','
    or ';' (a Spanish spreadsheet's CSV) or a tab; a cell holding ';' lists is then quoted. Each
    cell is read as `read_cells` reads it; SeedError lists every cell refused, by line and column."""
    separator = max(CSV_SEPARATORS, key=text.split("\n", 1)[0].count)
    records = csv_records(text, delimiter=separator)
    found = [name.strip().lower() for name in (records[0][1] if records else [])]
    if "kind" not in found:
        raise SeedError([(1, f"the header row must name the columns {','.join(CATALOG_COLUMNS)}; it was read "
                             f"with {CSV_SEPARATORS[separator]} as the separator and has the columns "
                             f"{found or 'none'}")])
    fields = [name if name in CATALOG_COLUMNS else None for name in found]
    rows, problems = read_cells(records[1:], fields, records[0][1])
    if problems:
        raise SeedError(problems)
    return rows


def csv_records(text, **form):
    """[(line, cells)] of every record of a CSV text (`form`: csv's dialect or format parameters), each at the
    line where it starts, read strictly: SeedError at the line where a quote opens that never closes, or
    that closes with text after it in its cell ("Files from other systems")."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True, **form)
    records, end = [], 0
    try:
        for cells in reader:
            records.append((end + 1, cells))
            end = reader.line_num
    except csv.Error as error:
        raise SeedError([quote_problem(text, end + 1, reader.dialect) or (end + 1, f"not a readable CSV: {error}")]) \
            from None
    return records


def quote_problem(text, first, dialect):
    """(line, why) of the quoted cell that breaks the record starting at line `first`: where it opens, and
    that it never closes or closes with text after it; None when no quoted cell breaks it."""
    starts = list(itertools.accumulate((len(line) for line in io.StringIO(text, newline="")), initial=0))
    quote, separator = re.escape(dialect.quotechar), re.escape(dialect.delimiter)
    quoted = re.compile(f"{quote}[^{quote}]*(?:{quote}{quote}[^{quote}]*)*{quote}")
    unquoted, space = re.compile(f"[^{separator}\r\n]*"), re.compile(" *" if dialect.skipinitialspace else "")
    position = starts[first - 1]
    while position < len(text):
        position = space.match(text, position).end()
        if text.startswith(dialect.quotechar, position):
            opened, cell = bisect.bisect_right(starts, position), quoted.match(text, position)
            if cell is None:
                return opened, (f"a quote ({dialect.quotechar}) opens a cell here and never closes: the rest of the "
                                "file would be read as that one cell; close the quote or remove it")
            if cell.end() < len(text) and text[cell.end()] not in (dialect.delimiter, "\r", "\n"):
                return opened, (f"a quote ({dialect.quotechar}) opens a cell here and closes on line "
                                f"{bisect.bisect_right(starts, cell.end())} with text after it; a quote inside a "
                                f"quoted cell is written twice ({dialect.quotechar * 2})")
            position = cell.end()
        else:
            position = unquoted.match(text, position).end()
        position += 1
    return None


def read_cells(records, fields, header):
    """([(line, {field: text})], problems) of CSV records: the cells of the columns `fields` names (None for
    a column left out), each as a spreadsheet wrote it (`sheet_value`) through the text fields' rule ("Text
    fields"): one line, and no control character nor more characters than the same field takes through the API;
    problems are (line, "column N (header): why") of the cells refused. Blank records are left out."""
    rows, problems = [], []
    for line, cells in records:
        row = {}
        for column, (field, cell) in enumerate(zip(fields, cells), 1):
            if field is None:
                continue
            fault = text_fault(cell, text_limit(field))
            if fault is not None:
                problems.append((line, f"column {column} ({header[column - 1].strip()}): " + (
                    f"{len(cell):,} characters, and {field} takes {text_limit(field):,} at most" if fault == "too_long"
                    else f"a control character ({first_control(cell)}), which no text field takes")))
            row[field] = one_line(sheet_value(cell.strip()))
        if any(row.values()):
            rows.append((line, row))
    return rows, problems


def _snapshot(conn):
    return {table: [tuple(row) for row in conn.execute(sql)] for table, sql in CATALOG_TABLES.items()}


def parse_catalog(rows):
    """Read catalog rows into what seed_catalogs applies; problems are (line, message)."""
    problems = []
    simple = {"center": {}, "speciality": {}, "insurance": {}}
    doctors, closures = {}, []
    for line, row in rows:
        kind = row.get("kind", "").lower()
        try:
            if kind in simple:
                if not row.get("id") or not row.get("name"):
                    raise ValueError(f"a {kind} row needs id and name")
                simple[kind][row["id"]] = row["name"]
            elif kind == "doctor":
                if not row.get("id") or not row.get("name") or not row.get("speciality"):
                    raise ValueError("a doctor row needs id, name and speciality")
                insurances = {item.strip() for item in row.get("insurances", "").split(";") if item.strip()}
                entry = {"line": line, "name": row["name"], "speciality": row["speciality"],
                         "center": row.get("center") or None, "insurances": tuple(sorted(insurances)),
                         "days": parse_days(row.get("days", "")), "hours": parse_hours(row.get("hours", "")),
                         "slot_minutes": parse_slot_minutes(row.get("slot_minutes", ""))}
                doctors.setdefault(row["id"], []).append(entry)
            elif kind == "closed":
                if not row.get("date_from"):
                    raise ValueError("a closed row needs date_from (DD/MM/YYYY)")
                first = parse_date(row["date_from"], "date_from")
                last = parse_date(row["date_to"], "date_to") if row.get("date_to") else first
                if last < first:
                    raise ValueError("date_to is before date_from")
                for start, end in parse_hours(row.get("hours", ""), required=False) or [(None, None)]:
                    closures.append((line, row.get("id") or None, row.get("center") or None,
                                     first.isoformat(), last.isoformat(), start, end, row.get("name", "")))
            else:
                raise ValueError(f"kind must be one of center, speciality, insurance, doctor, closed;"
                                 f" got {row.get('kind', '')!r}")
        except ClinicError as error:
            problems.append((line, error.message))
        except ValueError as error:
            problems.append((line, str(error)))
    for doctor_id, entries in doctors.items():
        problems += doctor_disagreements(doctor_id, entries)
    return simple, doctors, closures, problems


def doctor_disagreements(doctor_id, entries):
    """A doctor's rows must agree on name and speciality, and, at one center, on insurances (each
    center may have its own list: "Catalogs")."""
    problems = []
    for field in ("name", "speciality"):
        if len({entry[field] for entry in entries}) > 1:
            problems.append((entries[-1]["line"], f"doctor {doctor_id}: {field} differs from line {entries[0]['line']}"))
    first_at = {}
    for entry in entries:
        first = first_at.setdefault(entry["center"], entry)
        if entry["insurances"] != first["insurances"]:
            problems.append((entry["line"], f"doctor {doctor_id}: insurances at {entry['center'] or 'the clinic'} "
                                            f"differ from line {first['line']} (one list per center)"))
    return problems


def _exists(conn, table, key):
    return conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (key,)).fetchone() is not None


def _apply_doctor(conn, doctor_id, entries):
    """Upsert one doctor and replace their hours at the centers named; returns problems."""
    first = entries[0]
    problems = []
    if not _exists(conn, "specialities", first["speciality"]):
        problems.append((first["line"], f"speciality {first['speciality']!r} is not in the catalog"))
    for entry in entries:
        problems += [(entry["line"], f"insurance {insurance_id!r} is not in the catalog")
                     for insurance_id in entry["insurances"] if not _exists(conn, "insurances", insurance_id)]
        if entry["center"] and not _exists(conn, "centers", entry["center"]):
            problems.append((entry["line"], f"center {entry['center']!r} is not in the catalog"))
    if problems:
        return problems
    conn.execute("INSERT INTO doctors (id, name, speciality_id) VALUES (?, ?, ?)"
                 " ON CONFLICT (id) DO UPDATE SET name = excluded.name, speciality_id = excluded.speciality_id",
                 (doctor_id, first["name"], first["speciality"]))
    for center in {entry["center"] for entry in entries}:
        conn.execute("DELETE FROM schedules WHERE doctor_id = ? AND center_id IS ?", (doctor_id, center))
        conn.execute("DELETE FROM doctor_insurances WHERE doctor_id = ? AND center_id IS ?", (doctor_id, center))
    conn.executemany("INSERT OR IGNORE INTO doctor_insurances (doctor_id, center_id, insurance_id) VALUES (?, ?, ?)",
                     [(doctor_id, entry["center"], insurance_id) for entry in entries
                      for insurance_id in entry["insurances"]])
    for entry in entries:
        conn.executemany(
            "INSERT INTO schedules (doctor_id, center_id, weekday, start_time, end_time, slot_minutes)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(doctor_id, entry["center"], weekday, start, end, entry["slot_minutes"])
             for weekday in entry["days"] for start, end in entry["hours"]])
    overlap = conn.execute(
        "SELECT a.weekday, a.start_time, a.end_time, b.start_time, b.end_time"
        " FROM schedules a JOIN schedules b ON a.doctor_id = b.doctor_id AND a.weekday = b.weekday"
        " AND a.id < b.id AND a.start_time < b.end_time AND b.start_time < a.end_time"
        " WHERE a.doctor_id = ? LIMIT 1", (doctor_id,)).fetchone()
    if overlap:
        day = next(name for name, number in WEEKDAYS.items() if number == overlap[0])
        problems.append((first["line"], f"doctor {doctor_id}: hours {overlap[1]}-{overlap[2]} and "
                                        f"{overlap[3]}-{overlap[4]} overlap on {day}"))
    return problems


def _apply_closure(conn, line, doctor_id, center_id, first, last, start, end, reason):
    """Add a closure, or update the reason of the same one; returns problems."""
    if doctor_id and not _exists(conn, "doctors", doctor_id):
        return [(line, f"doctor {doctor_id!r} is not in the catalog")]
    if center_id and not _exists(conn, "centers", center_id):
        return [(line, f"center {center_id!r} is not in the catalog")]
    same = conn.execute("SELECT id FROM closures WHERE doctor_id IS ? AND center_id IS ? AND date_from = ?"
                        " AND date_to = ? AND start_time IS ? AND end_time IS ?",
                        (doctor_id, center_id, first, last, start, end)).fetchone()
    if same:
        conn.execute("UPDATE closures SET reason = ? WHERE id = ?", (reason, same["id"]))
    else:
        conn.execute("INSERT INTO closures (doctor_id, center_id, date_from, date_to, start_time, end_time, reason)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?)", (doctor_id, center_id, first, last, start, end, reason))
    return []


def seed_catalogs(conn, rows, *, at, source="cli"):
    """Apply catalog rows in one transaction: all or nothing ("Catalog file").

    References are checked against the database inside the transaction even when the
    file already has problems, so one run reports every bad line. Returns a summary;
    `changed` is False when the file held nothing new (the transaction is then rolled
    back and no event is recorded).
    """
    simple, doctors, closures, problems = parse_catalog(rows)
    try:
        with transaction(conn):
            before = _snapshot(conn)
            for kind, table in (("center", "centers"), ("speciality", "specialities"), ("insurance", "insurances")):
                conn.executemany(f"INSERT INTO {table} (id, name) VALUES (?, ?)"
                                 " ON CONFLICT (id) DO UPDATE SET name = excluded.name", simple[kind].items())
            has_centers = conn.execute("SELECT 1 FROM centers LIMIT 1").fetchone() is not None
            for doctor_id, entries in doctors.items():
                problems.extend(_apply_doctor(conn, doctor_id, entries))
                problems.extend((entry["line"], f"doctor {doctor_id}: center is required when the clinic has centers")
                                for entry in entries if has_centers and entry["center"] is None)
            for closure in closures:
                problems.extend(_apply_closure(conn, *closure))
            if problems:
                raise SeedError(problems)
            after = _snapshot(conn)
            summary = {table: len(table_rows) for table, table_rows in after.items()}
            if after == before:
                raise _NothingChanged()
            record_event(conn, at, source, "catalog.seeded", "catalog", None, after=summary)
    except _NothingChanged:
        return {"changed": False, **summary}
    return {"changed": True, **summary}


PATIENT_COLUMN_NAMES = {  # a header, lower case without spaces, dashes or underscores: our field
    "name": "name", "nombre": "name", "surname": "surname", "surnames": "surname", "apellidos": "surname",
    "birthdate": "birthDate", "dateofbirth": "birthDate", "fechanacimiento": "birthDate",
    "fechadenacimiento": "birthDate", "nif": "nif", "dni": "nif", "nie": "nif",
    "phone": "phone", "telephone": "phone", "telefono": "phone", "teléfono": "phone", "movil": "phone",
    "móvil": "phone", "guardiannif": "guardianNif", "niftutor": "guardianNif", "nifdeltutor": "guardianNif",
}


class PatientFileError(Exception):
    """A patient file that cannot be read at all (not one bad row: those are listed)."""


def decode_text_file(raw):
    """Text from a CSV exported by another system: UTF-8 (with or without BOM), else
    Windows-1252, else Latin-1, which reads any byte."""
    for encoding in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            return raw.decode(encoding), encoding
        except UnicodeDecodeError:
            continue


HEADER_CHARS = 1000  # a patient file's header row is shorter: longer, the file is refused before sniffing


def read_patient_file(path):
    """[(line, {field: text})] from a patients CSV with a header (',' ';' or tab separated)."""
    return read_table_file(path, PATIENT_COLUMN_NAMES, ("name", "nif"), "name,surname,birthDate,nif,phone",
                           "a patient file")


def read_table_file(path, column_names, required, example, what):
    """[(line, {field: text})] from a CSV another system wrote (UTF-8 or Windows-1252; ',' ';' or tab):
    columns by `column_names` (a header folded: lower case, no spaces, dashes or underscores), each
    cell as `sheet_cell` would have written it read back; PatientFileError when it cannot be read."""
    text, _ = decode_text_file(Path(path).read_bytes())
    if not text.strip():
        raise PatientFileError(f"the file is empty; it needs a header row: {example}")
    header_line = text.split("\n", 1)[0]
    if len(header_line) > HEADER_CHARS:
        raise PatientFileError(f"the first line is {len(header_line):,} characters long; {what} starts with "
                               f"a short header row such as {example}")
    try:
        dialect = csv.Sniffer().sniff(header_line, delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    try:  # the sniffed separator; quotes as every spreadsheet writes them (a quote in a quoted cell doubled)
        (_, header), *records = csv_records(text, delimiter=dialect.delimiter,
                                            skipinitialspace=dialect.skipinitialspace)
    except SeedError as error:
        raise PatientFileError(f"{error}") from None
    fields = [column_names.get(re.sub(r"[\s_\-]", "", name).lower()) for name in header]
    missing = [name for name in required if name not in fields]
    if missing:
        raise PatientFileError(f"the header has no {' and no '.join(missing)} column; it reads {header}; "
                               f"name it {example}")
    rows, problems = read_cells(records, fields, header)
    if problems:
        shown = "\n".join(f"line {line}: {why}" for line, why in problems[:20])
        raise PatientFileError(f"{plural(len(problems), 'cell')} cannot be read:\n{shown}" +
                               (f"\n... and {len(problems) - 20:,} more" if len(problems) > 20 else ""))
    return rows
