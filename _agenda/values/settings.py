"""The clinic's settings: `Settings` (every default and what it may be tuned to, "Configuration and CLI"), and
what configures it: the signature schemes, reminder policies, the time zone, retention, what a feed shows, the
desk's networks. Imports nothing of Agenda's."""

import dataclasses
import ipaddress
import tomllib
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


SIGNATURE_SCHEMES = ("request", "body", "auto")  # the default first; docs/design.md, "Signatures"


REMINDER_POLICIES = ("flag", "release", "keep")


DEFAULT_TZ = "Europe/Madrid"


RETENTION_YEARS_AT_LEAST = 5  # Ley 41/2002 art. 17: clinical documentation kept at least five years


# What a doctor's calendar feed shows of each appointment ("Calendar feeds"): the time, center and
# number only; with the patient's name; with the name and the reason.
FEED_SHOWS = ("time", "names", "reasons")


# What a message to a patient names besides the clinic, center, date and time ("What a message says"): the
# place only, or the doctor and the visit's type too.
MAIL_SHOWS = ("place", "doctor")


@dataclass(frozen=True)
class Settings:
    """What the clinic may tune ("Configuration and CLI"), and the one home of its defaults: `agenda run`
    has an option for each of the first five; the body limit and the desk's idle time are set by code."""

    tz: str = DEFAULT_TZ
    signature_scheme: str = "request"
    min_notice_minutes: int = 60
    horizon_days: int = 90
    reminder_policy: str = "flag"
    max_body_bytes: int = 64 * 1024
    desk_idle_minutes: int = 30
    retention_years: int = 5
    desk_min_notice_minutes: int = 0
    desk_horizon_months: int = 18
    clinic_name: str = ""
    feed_shows: str = "time"
    arrival_window_minutes: int = 120  # the desk marks an arrival from this long before the visit, on its day
    desk_network: str = ""  # the clinic's own addresses, whose logins keep a lane of their own ("Login flood")
    mail_shows: str = "place"  # MAIL_SHOWS: what a message and the patient's link name
    cancel_notice_hours: int = 24  # the patient's link cancels or moves a visit up to this long before it
    reminder_hours: int = 48  # a reminder goes this long before a visit; 0: none ("The sender")
    public_url: str = ""  # where patients reach /cita (https://citas.clinic.es): their links start with it

    def __post_init__(self):
        if self.signature_scheme not in SIGNATURE_SCHEMES:
            raise ValueError(f"signature scheme must be one of {', '.join(SIGNATURE_SCHEMES)}")
        if self.feed_shows not in FEED_SHOWS:
            raise ValueError(f"a feed shows one of {', '.join(FEED_SHOWS)}")
        if self.mail_shows not in MAIL_SHOWS:
            raise ValueError(f"a message shows one of {', '.join(MAIL_SHOWS)}")
        if not 0 <= self.cancel_notice_hours <= 30 * 24:
            raise ValueError("the cancellation notice must be 0 to 720 hours")
        if not 0 <= self.reminder_hours <= 14 * 24:
            raise ValueError("a reminder goes 0 (none) to 336 hours before the visit")
        if self.reminder_policy not in REMINDER_POLICIES:
            raise ValueError(f"reminder policy must be one of {', '.join(REMINDER_POLICIES)}")
        if self.min_notice_minutes < 0:
            raise ValueError("minimum notice must be 0 minutes or more")
        if self.horizon_days < 1:
            raise ValueError("booking horizon must be at least 1 day")
        if self.desk_min_notice_minutes < 0:
            raise ValueError("the desk's minimum notice must be 0 minutes or more")
        if not 1 <= self.desk_horizon_months <= 120:
            raise ValueError("the desk's booking horizon must be 1 to 120 months")
        if not 0 <= self.arrival_window_minutes <= 24 * 60:
            raise ValueError("the arrival window must be 0 to 1440 minutes")
        if self.max_body_bytes < 1024:
            raise ValueError("body limit must be at least 1024 bytes")
        if self.desk_idle_minutes < 1:
            raise ValueError("the desk's idle time must be at least 1 minute")
        if self.retention_years < RETENTION_YEARS_AT_LEAST:
            raise ValueError(f"clinical records are kept at least {RETENTION_YEARS_AT_LEAST} years from each episode "
                             "(Ley 41/2002, art. 17): give a retention of 5 years or more")
        clinic_zone(self.tz)
        desk_networks(self.desk_network)


def desk_networks(text):
    """The address ranges named in `text` (e.g. "192.168.1.0/24 10.0.0.7", commas or spaces between them);
    ValueError naming the one that is not a range."""
    networks = []
    for part in text.replace(",", " ").split():
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{part!r} is not an address range (try 192.168.1.0/24)") from None
    return tuple(networks)


def clinic_zone(name):
    """The ZoneInfo of a time zone name; ValueError naming a good one when it is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (try {DEFAULT_TZ})") from None


def settings_in_file(path):
    """The Settings a clinic's file gives (TOML, its keys Settings' fields: `clinic_name = "Clínica Sol"`), each
    checked on its own; ValueError naming the file, the key and the fix ("A clinic is a folder")."""
    try:
        with open(path, "rb") as file:
            given = tomllib.load(file)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not TOML ({error}); write one setting a line: clinic_name = \"Clínica Sol\"") from None
    fields = {field.name: field for field in dataclasses.fields(Settings)}
    for key, value in given.items():
        field = fields.get(key)
        if field is None:
            raise ValueError(f"{path}: unknown setting {key!r}; the settings are: {', '.join(fields)}")
        kind = type(field.default)
        if type(value) is not kind:
            raise ValueError(f"{path}: {key} must be {'a whole number' if kind is int else 'text in quotes'}, "
                             f"not {value!r}")
        try:
            Settings(**{key: value})
        except ValueError as error:
            raise ValueError(f"{path}: {key} = {value!r}: {error}") from None
    return given
