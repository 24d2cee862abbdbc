"""Files from other systems, read ("Files from other systems"): the catalog CSV's rows, and patient and
appointment lists as they stream, each cell through the text fields' rule, strictly."""

import bisect
import codecs
import csv
import io
import itertools
import re
import unicodedata
from pathlib import Path

from ..values.fields import first_control, one_line, text_fault, text_limit
from ..values.printing import plural, sheet_value
from ..domain.patients import PATIENT_COLUMNS
from .catalogs import CATALOG_COLUMNS, SeedError


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
    if separator == ";":
        refuse_unquoted_lists(records)
    fields = [name if name in CATALOG_COLUMNS else None for name in found]
    rows, problems = read_cells(records[1:], fields, records[0][1])
    if problems:
        raise SeedError(problems)
    return rows


def refuse_unquoted_lists(records):
    """SeedError, once for the file, when rows of a ';' catalog have more cells than its header: a list written
    without quotes (mon;wed;fri) splits into cells of its own and moves every column after it."""
    columns = len(records[0][1])
    over = [line for line, cells in records[1:] if len(cells) > columns]
    if over:
        lines = ", ".join(map(str, over[:10])) + (f" and {len(over) - 10:,} more" if len(over) > 10 else "")
        raise SeedError([(over[0], f"{plural(len(over), 'line')} ({lines}) {'has' if len(over) == 1 else 'have'} "
                                   f"more cells than the header's {columns} columns: with ';' as the separator, a "
                                   "cell holding a ';' list (days mon;wed;fri, hours 09:00-14:00;16:00-19:00, "
                                   'insurances PRIV;SAN) must be quoted ("mon;wed;fri"), as a spreadsheet saves it; '
                                   "or save the file with ',' as the separator")])


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
    """([(line, {field: text})], problems) of CSV records, each read by `read_record`. Blank records are left out."""
    rows, problems = [], []
    for line, cells in records:
        row, faults = read_record(cells, fields, header)
        problems += [(line, why) for why in faults]
        if any(row.values()):
            rows.append((line, row))
    return rows, problems


def read_record(cells, fields, header):
    """({field: text}, [why]) of one CSV record: the cells of the columns `fields` names (None for a column left
    out), each as a spreadsheet wrote it (`sheet_value`) through the text fields' rule ("Text fields"): one line,
    and no control character nor more characters than the same field takes through the API; each refused cell
    as "column N (header): why"."""
    row, faults = {}, []
    for column, (field, cell) in enumerate(zip(fields, cells), 1):
        if field is None:
            continue
        fault = text_fault(cell, text_limit(field))
        if fault is not None:
            faults.append(f"column {column} ({header[column - 1].strip()}): " + (
                f"{len(cell):,} characters, and {field} takes {text_limit(field):,} at most" if fault == "too_long"
                else f"a control character ({first_control(cell)}), which no text field takes"))
        row[field] = one_line(sheet_value(cell.strip()))
    return row, faults


# A header, folded (`header_key`): our field; each column patients.csv carries, by its field and its other headers.
PATIENT_COLUMN_NAMES = {header: column.field for column in PATIENT_COLUMNS if column.export
                        for header in (column.field, *column.headers)}
PATIENT_EXAMPLE = ",".join(column.field for column in PATIENT_COLUMNS if column.export and column.read)


def header_key(name):
    """A column's header folded to look it up: case, accents, spaces, dots, dashes, underscores and slashes
    aside ("DNI del Tutor/a" and "dni_tutora" read alike)."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return re.sub(r"[\s_\-./]", "", bare).casefold()


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


def patient_rows(path):
    """The records of a patients CSV with a header (',' ';' or tab separated) as it streams (`table_rows`)."""
    return table_rows(path, PATIENT_COLUMN_NAMES, ("name", "nif"), PATIENT_EXAMPLE,
                      "a patient file")


def read_table_file(path, column_names, required, example, what):
    """[(line, {field: text})] from a CSV another system wrote, all read (`table_rows`); PatientFileError when
    it cannot be read, listing its refused cells."""
    rows, problems = [], []
    for line, row, faults in table_rows(path, column_names, required, example, what):
        rows.append((line, row))
        problems += [(line, why) for why in faults]
    if problems:
        shown = "\n".join(f"line {line}: {why}" for line, why in problems[:20])
        raise PatientFileError(f"{plural(len(problems), 'cell')} cannot be read:\n{shown}" +
                               (f"\n... and {len(problems) - 20:,} more" if len(problems) > 20 else ""))
    return rows


def table_rows(path, column_names, required, example, what):
    """The records of a CSV another system wrote (UTF-8 or Windows-1252; ',' ';' or tab), read as the file
    streams, so a file of any length takes the same memory: (line, {field: text}, [why a cell is refused]) for
    each record that is not blank, columns by `column_names` (a header as `header_key` folds it). PatientFileError, before the first record, for a file that cannot be read at all; as it
    streams, at a quote that never closes ("Files from other systems")."""
    encoding = file_encoding(path)
    with open(path, encoding=encoding, newline="") as file:
        header_line = file.readline(HEADER_CHARS + 1).rstrip("\r\n")
    if not header_line.strip():
        raise PatientFileError(f"the file is empty; it needs a header row: {example}")
    if len(header_line) > HEADER_CHARS:
        raise PatientFileError(f"the first line is more than {HEADER_CHARS:,} characters long; {what} starts with "
                               f"a short header row such as {example}")
    try:
        dialect = csv.Sniffer().sniff(header_line, delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    header = next(csv.reader([header_line], delimiter=dialect.delimiter, skipinitialspace=dialect.skipinitialspace))
    folded = {header_key(name): field for name, field in column_names.items()}
    fields = [folded.get(header_key(name)) for name in header]
    missing = [name for name in required if name not in fields]
    if missing:
        raise PatientFileError(f"the header has no {' and no '.join(missing)} column; it reads {header}; "
                               f"name it {example}")
    return streamed(path, encoding, dialect, fields, header)


def streamed(path, encoding, dialect, fields, header):
    """table_rows' records after the header, as the file streams."""
    with open(path, encoding=encoding, newline="") as file:
        reader = csv.reader(file, strict=True, delimiter=dialect.delimiter, skipinitialspace=dialect.skipinitialspace)
        next(reader)
        end = reader.line_num
        try:
            for cells in reader:
                line, end = end + 1, reader.line_num
                row, faults = read_record(cells, fields, header)
                if any(row.values()) or faults:
                    yield line, row, faults
        except csv.Error as error:
            text = Path(path).read_bytes().decode(encoding)  # only to say where: the file's own text
            where = quote_problem(text, end + 1, reader.dialect) or (end + 1, f"not a readable CSV: {error}")
            raise PatientFileError(f"line {where[0]}: {where[1]}") from None


def file_encoding(path, chunk=1 << 16):
    """The encoding a file is in, read a piece at a time: UTF-8 (with or without BOM), else Windows-1252,
    else Latin-1, which reads any byte."""
    for encoding in ("utf-8-sig", "cp1252"):
        decoder = codecs.getincrementaldecoder(encoding)()
        try:
            with open(path, "rb") as file:
                while piece := file.read(chunk):
                    decoder.decode(piece)
                decoder.decode(b"", final=True)
            return encoding
        except UnicodeDecodeError:
            continue
    return "latin-1"
