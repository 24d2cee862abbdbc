"""What Agenda prints, safely ("What Agenda prints"): counts in words (`plural`), text fit for one line of a
terminal (`printable`), and sheets a spreadsheet shows and never runs (`sheet_cell`, `sheet_csv`)."""

import csv
import io
import re


def plural(count, noun):
    """'1 patient', '2 patients', '1,234 appointments', '3 specialities'."""
    if count == 1:
        return f"1 {noun.replace(' and ', ' or ')}"
    return " and ".join(f"{count:,} {word[:-1] + 'ies' if word.endswith('y') and word[-2] not in 'aeiou' else word + 's'}"
                        for word in noun.split(" and ")).replace(f" and {count:,} ", " and ")


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet run a cell ("What Agenda prints")


def printable(value):
    """Text fit for one line of a terminal: escapes, newlines and direction overrides become spaces."""
    return _UNPRINTABLE.sub(" ", "" if value is None else str(value))


def sheet_cell(value):
    """A cell a spreadsheet shows and never runs: text that would start a formula gets a leading '."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def sheet_value(cell):
    """A cell `sheet_cell` wrote, read back as it was: the ' before a formula's first character dropped."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS) else cell


def sheet_csv(header, rows):
    """The one CSV writer for sheets people open: every cell quoted and neutralised ("What Agenda prints")."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(header)
    writer.writerows([sheet_cell(value) for value in row] for row in rows)
    return out.getvalue()


def masked(address):
    """An e-mail address partly hidden, as the desk says where a message goes: its first letter and its domain."""
    local, _, domain = (address or "").rpartition("@")
    return f"{local[:1]}•••@{domain}" if local else "•••"


def waited_words(waited):
    """A wait in words: '5 min', '3 h', '2 days'."""
    minutes = int(waited.total_seconds() // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h" if minutes < 48 * 60 else plural(
        minutes // 1440, "day")


def human_size(size):
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
