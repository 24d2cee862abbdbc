"""How the clinic reads and writes what it is given: dates, times, NIFs, phones, ids and date lists ("Lenient
input, strict output", "Patients"), and the one door for text and body fields (`text_field`, "Text fields")."""

import datetime as dt
import re
import unicodedata

import phonenumbers
from stdnum.es import dni, nie

from .refusals import ClinicError, invalid


_DAY_MONTH_YEAR = re.compile(r"(\d{1,2})([/-])(\d{1,2})\2(\d{4})", re.ASCII)


_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})", re.ASCII)


_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", re.ASCII)


def parse_date(text, field):
    """D/M/YYYY, DD/MM/YYYY, DD-MM-YYYY or YYYY-MM-DD to a date ("Lenient input, strict output")."""
    text = text.strip()
    match = _DAY_MONTH_YEAR.fullmatch(text)
    if match:
        day, month, year = int(match[1]), int(match[3]), int(match[4])
    else:
        match = _ISO_DATE.fullmatch(text)
        if not match:
            raise invalid(f"{field} must be a date written DD/MM/YYYY", "date_shape", field)
        year, month, day = (int(part) for part in match.groups())
    try:
        return dt.date(year, month, day)
    except ValueError:
        raise invalid(f"{field} is not a real date", "real_date", field) from None


def parse_time(text, field):
    """H:MM, HH:MM or HH:MM:SS to 'HH:MM'; seconds must be zero ("Lenient input, strict output")."""
    match = _TIME.fullmatch(text.strip())
    if not match:
        raise invalid(f"{field} must be a time written HH:MM", "time_shape", field)
    hours, minutes, seconds = int(match[1]), int(match[2]), int(match[3] or 0)
    if hours > 23 or minutes > 59 or seconds > 59:
        raise invalid(f"{field} is not a real time", "real_time", field)
    if seconds:
        raise invalid(f"{field} must be on the minute (HH:MM)", "whole_minute", field)
    return f"{hours:02d}:{minutes:02d}"


def clinic_moment(stored, zone, shown="%d/%m/%Y %H:%M"):
    """A stored moment (UTC text as the database keeps it, or an aware datetime) as the clinic reads it, in its zone:
    DD/MM/YYYY HH:MM, or as `shown` says ('%H:%M'); '' for none ("Clinic time")."""
    if not stored:
        return ""
    moment = stored if isinstance(stored, dt.datetime) else dt.datetime.fromisoformat(stored)
    return moment.astimezone(zone).strftime(shown)


def format_date(value):
    """An ISO date string (as stored) or a date, written as the caller reads it: DD/MM/YYYY."""
    if isinstance(value, str):
        return f"{value[8:10]}/{value[5:7]}/{value[0:4]}"
    return f"{value.day:02d}/{value.month:02d}/{value.year:04d}"


def months_after(day, months):
    """The same day `months` calendar months on; the month's last day when it is shorter (31/08 + 6 = 28/02)."""
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    last = (dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)).day
    return dt.date(year, month, min(day.day, last))


def fold(text):
    """Text as the patient search compares it ("Patient search"): lower case, accents and marks
    dropped (á, ñ, ü as a, n, u), anything but letters and digits one space, with a space before each word."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", text or "") if not unicodedata.combining(c))
    return " " + " ".join(re.findall(r"[^\W_]+", bare.casefold()))


def minutes_of(hhmm):
    """'HH:MM' to minutes since midnight."""
    return int(hhmm[:2]) * 60 + int(hhmm[3:5])


def hhmm(minutes):
    """Minutes since midnight to 'HH:MM'."""
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


_DNI_SHAPE = re.compile(r"\d{7,8}[A-Z]|\d{8}", re.ASCII)


_NIE_SHAPE = re.compile(r"[XYZ]\d{7}[A-Z]?", re.ASCII)


_OTHER_ID = re.compile(r"[A-Z0-9]{5,20}")


def normalise_nif(text):
    """Trim, upper-case and drop spaces, dots and dashes; check DNI and NIE letters ("Patients").

    A DNI written without its leading zero (1234567L) is padded to eight digits.
    Values of another shape (passports) pass when they are 5 to 20 letters and digits.
    NFKC first, so that fullwidth or other compatibility digits become ASCII and one
    person cannot be stored twice under two spellings of the same NIF.
    """
    nif = re.sub(r"[\s.\-]", "", unicodedata.normalize("NFKC", text)).upper()
    if _DNI_SHAPE.fullmatch(nif):
        nif = nif.zfill(9) if nif[-1].isalpha() else nif
        if not dni.is_valid(nif):
            raise ClinicError("INVALID_NIF", "nif is not a valid DNI: check its digits and letter", field="nif")
    elif _NIE_SHAPE.fullmatch(nif):
        if not nie.is_valid(nif):
            raise ClinicError("INVALID_NIF", "nif is not a valid NIE: check its digits and letter", field="nif")
    elif not _OTHER_ID.fullmatch(nif):
        raise ClinicError("INVALID_NIF", "nif must be a DNI, a NIE or an id of 5 to 20 letters and digits", field="nif")
    return nif


# openapi.json's pattern of every phone field ("Patients"): a Spanish number (nine digits, the first 6 to 9, a
# space, dot or dash between any two, +34 or 0034 before), a number of another country in E.164 (7 to 15
# digits; +34 is Spain's, held to its nine digits), or blank (no phone).
PHONE_PATTERN = (r"^ *((\+34|0034)[ .-]?)?[6-9]([ .-]?[0-9]){8} *$"
                 r"|^ *\+(3[0-35-9]|[1-24-9][0-9])[0-9]{5,13} *$|^ *$")


PHONE_SHAPE = re.compile(PHONE_PATTERN, re.ASCII)


def parse_phone(text, field="phone"):
    """A phone as the caller says it (Spain by default) to E.164 ("Patients"): what phonenumbers reads as a
    real number, else any phone PHONE_PATTERN states, as it is written."""
    found = real_phone(text)
    if found is None and text.strip() and PHONE_SHAPE.fullmatch(text):
        digits = re.sub(r"[^0-9]", "", text)
        found = "+" + digits if text.strip().startswith("+") else "+34" + digits[-9:]
    if found is None and not text.lstrip().startswith("+"):
        found = real_phone("+" + text.strip())  # a '+' sent unencoded in a query string arrives as a space
    if found is None:
        raise ClinicError("INVALID_PHONE", f"{field} is not a valid phone number", field=field)
    return found


def real_phone(text):
    """The E.164 of a number phonenumbers reads as real (region ES), or None."""
    try:
        number = phonenumbers.parse(text, "ES")
    except phonenumbers.NumberParseException:
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164) \
        if phonenumbers.is_valid_number(number) else None


CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # every control but tab, LF and CR


LINE_BREAKS = re.compile(r"[ \t]*[\t\r\n][ \t\r\n]*")  # a spreadsheet's multi-line cell, a tab: one space


TEXT_LIMIT = 100  # the most characters of a text field not in TEXT_LIMITS, as sent (openapi.json's maxLength)


TEXT_LIMITS = {"reason": 500, "note": 500, "q": 200, "dates": 2000, "insurances": 2000, "email": 254}  # 254: SMTP's


def text_limit(field):
    """The most characters a text field takes, as sent, on every channel ("Text fields")."""
    return TEXT_LIMITS.get(field, TEXT_LIMIT)


def text_fault(value, limit):
    """What keeps a text out of every field ("Text fields"): "control_character" (a control character
    but tab, CR and LF), "too_long" (over `limit` characters as sent), or None."""
    if CONTROL_CHARACTERS.search(value):
        return "control_character"
    return "too_long" if len(value) > limit else None


def first_control(text):
    """'U+001B': the first control character `text_fault` finds in a text."""
    return f"U+{ord(CONTROL_CHARACTERS.search(text)[0]):04X}"


def one_line(text):
    """A text as every field stores it: line breaks and tabs one space, trimmed."""
    return LINE_BREAKS.sub(" ", text).strip()


def text_field(value, field, limit=None):
    """A text field as every channel reads it, the one door for text ("Text fields"): refused naming the field
    for a control character or over its limit (`text_limit`), else `one_line`; blank is None."""
    limit = limit or text_limit(field)
    fault = text_fault(value, limit)
    if fault == "control_character":
        raise invalid(f"{field} holds a control character ({first_control(value)}), which no text field takes",
                      "control_character", field)
    if fault == "too_long":
        raise invalid(f"{field} is over {limit} characters", "too_long", field)
    return one_line(value) or None


def body_text(body, name, required=False):
    """A string field of a JSON body through `text_field`; absent, null or blank is None."""
    value = body.get(name)
    if isinstance(value, str):
        value = text_field(value, name)
    elif value is not None:
        raise invalid(f"{name} must be a string", "text", name)
    if not value:
        if required:
            raise invalid(f"{name} is required", "required", name)
        return None
    return value


def body_text_list(body, name):
    """A list of strings of a JSON body, each through `text_field` (TEXT_LIMIT characters an item); blank items
    are dropped."""
    value = body.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise invalid(f"{name} must be a list of strings", "text_list", name)
    return [text for text in (text_field(item, name, TEXT_LIMIT) for item in value) if text]


def all_fields(readers):
    """{name: read()} for each reader; a refusal names every field at fault, not only the first
    (one field's own code when it is the only one, else INVALID_REQUEST)."""
    values, refusals = {}, []
    for name, read in readers.items():
        try:
            values[name] = read()
        except ClinicError as refusal:
            if not refusal.code.startswith("INVALID_"):  # a field's own refusal; anything else stops here
                raise
            if refusal.parts not in [r.parts for r in refusals]:  # a field read twice (phone, phone_e164) said once
                refusals.append(refusal)
    if len(refusals) == 1:
        raise refusals[0]
    if refusals:
        raise invalid("; ".join(refusal.message for refusal in refusals), parts=[p for r in refusals for p in r.parts])
    return values


def optional_date(fields, name):
    text = body_text(fields, name)
    return parse_date(text, name) if text else None


def iso_or_blank(day):
    return day.isoformat() if day else ""


def past_date(fields, name, today):
    day = optional_date(fields, name)
    if day and day > today:
        raise invalid(f"{name} is in the future", "future", name)
    return day


# openapi.json's pattern of an e-mail ("A patient's messages"): its shape only, in ASCII, as mail servers take
# it: dot-separated atoms of letters, digits and the specials RFC 5322 allows, an @, and two or more labels of
# letters, digits and inner dashes; or blank (none). Nothing is looked up.
ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
EMAIL_PATTERN = rf"^ *{ATOM}(\.{ATOM})*@{LABEL}(\.{LABEL})+ *$|^ *$"
EMAIL_SHAPE = re.compile(EMAIL_PATTERN, re.ASCII)


def parse_email(text, field="email"):
    """An e-mail address of EMAIL_PATTERN's shape, its domain in lower case; INVALID_REQUEST else."""
    if not EMAIL_SHAPE.fullmatch(text):
        raise invalid(f"{field} is not an e-mail address", "email", field)
    local, domain = text.strip().rsplit("@", 1)
    return f"{local}@{domain.lower()}"


def optional_phone(fields, name="phone"):
    text = body_text(fields, name)
    return parse_phone(text, name) if text else None


GUARDED_UNDER = 14  # the age from which a Spanish resident has a DNI ("Patients without a NIF")


def child_birth_date(fields, today):
    """The birth date of a patient without a NIF: required, and under GUARDED_UNDER years ago."""
    day = past_date(fields, "birthDate", today)
    if day is None:
        raise invalid("birthDate is required for a patient without a NIF", "child_birth", "birthDate")
    if months_after(day, 12 * GUARDED_UNDER) <= today:
        raise invalid(f"nif is required from the age of {GUARDED_UNDER}", "child_age", "nif")
    return day


def numeric_id(text):
    """A patient or appointment id as the caller writes it, to our integer key; None when it cannot be one."""
    text = ("" if text is None else str(text)).strip()
    return int(text) if re.fullmatch(r"[0-9]{1,18}", text) else None


MAX_DAYS = 62  # dates one range or one reminder close may name ("Lists")


def parse_dates(texts, field):
    """Distinct ISO days from date texts, sorted; blank texts are skipped, and 1 to MAX_DAYS must remain."""
    days = sorted({parse_date(text, field).isoformat() for text in texts if text.strip()})
    if not days:
        raise invalid(f"{field} is required", "required", field)
    if len(days) > MAX_DAYS:
        raise invalid(f"{field} holds more than {MAX_DAYS} days", "too_many_days", field)
    return days
