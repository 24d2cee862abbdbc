"""The clinic's settings: `Settings`, the one list of what a clinic may tune (each field's default, check, help and
option, "Configuration and CLI"), what reads it from a clinic's file and from the environment, and what configures
it: the signature schemes, reminder policies, the time zone, retention, what a feed shows, the desk's networks.
Imports nothing of Agenda's."""

import dataclasses
import difflib
import ipaddress
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
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


WEB_BOOKING = ("off", "on")  # the patients' booking page ("Patients book themselves")
WEB_VISITS = ("all", "first")
ORIGIN = re.compile(r"https://[a-z0-9.-]+(:[0-9]{1,5})?")
WEB_ITEM = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?")


def web_offer_items(text):
    """The items of --web-offer (`doctor` or `doctor/type`, commas between them); ValueError naming a wrong one."""
    items = [part.strip() for part in text.split(",") if part.strip()]
    for item in items:
        if not WEB_ITEM.fullmatch(item):
            raise ValueError(f"{item!r} is not a doctor's id or a doctor/type pair (try garcia, lopez/primera)")
    return items


def frame_ancestors(text):
    """The https origins that may frame the page; ValueError naming one that is not one."""
    origins = text.replace(",", " ").split()
    for origin in origins:
        if not ORIGIN.fullmatch(origin.lower().rstrip("/")):
            raise ValueError(f"{origin!r} is not a site's https address (try https://www.clinicasol.es)")
    return tuple(origin.lower().rstrip("/") for origin in origins)


def web_color(text):
    if not re.fullmatch(r"#[0-9a-fA-F]{6}", text):
        raise ValueError(f"{text!r} is not a colour #RRGGBB (try #0b5cad)")


def web_needs(settings, relay):
    """ValueError saying what the patients' page needs once on: the clinic's privacy information, its public
    address and a mail relay (`relay`: whether the service sends mail)."""
    if settings.web_booking != "on":
        return
    if not settings.web_privacy.strip():
        raise ValueError("the web booking needs the clinic's privacy information: give it with --web-privacy "
                         "(or web_privacy in the clinic's file)")
    if not settings.public_url:
        raise ValueError("the web booking needs the address patients reach the service at: give it with "
                         "--public-url (https://citas.clinicasol.es)")
    if not relay:
        raise ValueError("the web booking confirms each booking by e-mail: give the clinic's mail relay with --smtp "
                         "(or turn it off with --web-booking off)")


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


def setting(default, option, help, *, choices=(), within=(None, None), refusal="", check=None, example=None,
            metavar=None):
    """A field of Settings with its entry in the list: its option on `agenda run` (its environment variable is
    AGENDA_ and the option's name in capitals), its help, and its check: one of `choices`, a whole number
    `within` (low, high; None: no bound), or `check` (raising ValueError); `refusal` says what it must be; an
    `example` of a free text; `metavar`, what -h calls its value."""
    return dataclasses.field(default=default, metadata={
        "option": option, "help": help, "choices": choices, "within": within, "refusal": refusal, "check": check,
        "example": example, "metavar": metavar})


def variable(field):
    """The environment variable of a setting: AGENDA_MIN_NOTICE for --min-notice."""
    return "AGENDA_" + field.metadata["option"].removeprefix("--").upper().replace("-", "_")


def within_words(low, high, unit):
    return f"{low} to {high} {unit}" if high is not None else f"{low} {unit} or more"


@dataclass(frozen=True)
class Settings:
    """What a clinic may tune, and the one home of each setting's default, check, option and help ("Configuration
    and CLI"): `agenda run` has an option and a variable for each, a clinic's file a key (`settings_given`)."""

    tz: str = setting(DEFAULT_TZ, "--tz", "The clinic's time zone, for 'today' and 'now'.", check=clinic_zone,
                      example="Atlantic/Canary")
    signature_scheme: str = setting(
        "request", "--signature-scheme",
        "What the caller signs: the whole request; only the body (weaker: one signature of an empty body opens "
        "every GET and DELETE); or either, while setting up an integration.",
        choices=SIGNATURE_SCHEMES, refusal=f"signature scheme must be one of {', '.join(SIGNATURE_SCHEMES)}")
    min_notice_minutes: int = setting(60, "--min-notice", "Minutes between now and the first slot offered.",
                                      within=(0, None), refusal="minimum notice must be 0 minutes or more")
    horizon_days: int = setting(90, "--horizon", "Days ahead that may be booked.", within=(1, None),
                                refusal="booking horizon must be at least 1 day")
    reminder_policy: str = setting(
        "flag", "--reminder-policy", "What closing a reminder day does to unconfirmed appointments.",
        choices=REMINDER_POLICIES, refusal=f"reminder policy must be one of {', '.join(REMINDER_POLICIES)}")
    max_body_bytes: int = setting(
        64 * 1024, "--max-body-bytes",
        "The largest body a request may carry, in bytes; a larger one is refused (413) before it is read. Under "
        "`agenda host` and its nginx, 65536 at most.",
        within=(1024, 1024 * 1024), refusal="the body limit must be 1024 to 1048576 bytes")
    desk_idle_minutes: int = setting(
        30, "--desk-idle-minutes", "Minutes without a request after which a desk session ends (log in again).",
        within=(1, 24 * 60), refusal="the desk's idle time must be 1 to 1440 minutes")
    retention_years: int = setting(
        5, "--retention-years", "Years a record is kept after the patient's last appointment (5 at least).",
        within=(RETENTION_YEARS_AT_LEAST, None),
        refusal=f"clinical records are kept at least {RETENTION_YEARS_AT_LEAST} years from each episode "
                "(Ley 41/2002, art. 17): give a retention of 5 years or more")
    desk_min_notice_minutes: int = setting(
        0, "--desk-min-notice",
        "Minutes between now and the first slot reception may book (0: a walk-in now, into the slot under way "
        "until its end).", within=(0, None), refusal="the desk's minimum notice must be 0 minutes or more")
    desk_horizon_months: int = setting(18, "--desk-horizon", "Calendar months ahead that reception may book.",
                                       within=(1, 120), refusal="the desk's booking horizon must be 1 to 120 months")
    clinic_name: str = setting("", "--clinic-name",
                               "The clinic's name, at the top of every printed page of the desk and in its messages.",
                               example="Clínica Sol")
    feed_shows: str = setting(
        "time", "--feed-shows",
        "What each event of a doctor's calendar feed shows: the time, center and number only; with the patient's "
        "name; with the name and the reason (health data then leaves for a calendar provider).",
        choices=FEED_SHOWS, refusal=f"a feed shows one of {', '.join(FEED_SHOWS)}")
    arrival_window_minutes: int = setting(
        120, "--arrival-window",
        "Minutes before a visit's start from which the desk may mark the patient arrived, on its day (a no-show "
        "only from its start).", within=(0, 24 * 60), refusal="the arrival window must be 0 to 1440 minutes")
    desk_network: str = setting(
        "", "--desk-network",
        "The clinic's own address ranges (e.g. 192.168.1.0/24), as the service sees them: a new PC there logs in "
        "to the desk during a flood of logins from elsewhere.", check=desk_networks, example="192.168.1.0/24",
        metavar="RANGES")
    mail_shows: str = setting(
        "place", "--mail-shows",
        "place: the clinic, center, date and time only; doctor: the practitioner and the visit's type too (a name "
        "can say more than it should to whoever reads the mail).",
        choices=MAIL_SHOWS, refusal=f"a message shows one of {', '.join(MAIL_SHOWS)}")
    cancel_notice_hours: int = setting(
        24, "--cancel-notice",
        "Hours before a visit until which the patient's own link may cancel or move it; later, the page asks them "
        "to call the clinic.", within=(0, 30 * 24), refusal="the cancellation notice must be 0 to 720 hours")
    reminder_hours: int = setting(48, "--reminder-hours", "Hours before a visit its reminder goes (0: no reminders).",
                                  within=(0, 14 * 24),
                                  refusal="a reminder goes 0 (none) to 336 hours before the visit")
    public_url: str = setting(
        "", "--public-url",
        "The address patients reach the service at (https://citas.clinicasol.es): their links start with it.",
        example="https://citas.clinicasol.es", metavar="URL")

    web_booking: str = setting(
        "off", "--web-booking",
        "on: patients book themselves on the clinic's own page (/reservar), confirming by e-mail; needs "
        "--public-url, --web-privacy and a mail relay (--smtp).", choices=WEB_BOOKING,
        refusal=f"the web booking is one of {', '.join(WEB_BOOKING)}")
    web_offer: str = setting(
        "", "--web-offer",
        "What the page offers: empty, every doctor's every visit type; else doctors (every type of theirs) and "
        "doctor/type pairs, commas between them.", check=web_offer_items, example="garcia, lopez/primera",
        metavar="ITEMS")
    web_visits: str = setting(
        "all", "--web-visits", "all: anyone books on the page; first: only patients the clinic has not seen yet "
        "(a known patient's request goes to reception).", choices=WEB_VISITS,
        refusal=f"the page's visits are one of {', '.join(WEB_VISITS)}")
    web_horizon_days: int = setting(30, "--web-horizon", "Days ahead the page offers.", within=(1, 366),
                                    refusal="the page's horizon must be 1 to 366 days")
    web_notice_hours: int = setting(24, "--web-notice", "Hours between now and the first time the page offers.",
                                    within=(0, 30 * 24), refusal="the page's notice must be 0 to 720 hours")
    web_confirm_minutes: int = setting(
        15, "--web-confirm-minutes",
        "Minutes a booking on the page holds its slot until the patient confirms it by the e-mail's link.",
        within=(5, 24 * 60), refusal="the time to confirm must be 5 to 1440 minutes")
    web_pending_per_day: int = setting(
        3, "--web-pending-per-day", "Pending (unconfirmed) web bookings a doctor may have on one day at once.",
        within=(1, 1000), refusal="the pending web bookings a doctor and day must be 1 to 1000")
    web_pending_ceiling: int = setting(
        30, "--web-pending-ceiling", "Pending (unconfirmed) web bookings the whole clinic may have at once.",
        within=(1, 100_000), refusal="the clinic's pending web bookings must be 1 to 100000")
    web_frame_ancestors: str = setting(
        "", "--web-frame-ancestors",
        "The clinic's site that may show the page in a frame (its https address; spaces between several); empty: "
        "none.", check=frame_ancestors, example="https://www.clinicasol.es", metavar="ORIGINS")
    web_privacy: str = setting(
        "", "--web-privacy",
        "The clinic's privacy information for the page (GDPR art. 13: who keeps the data, why, for how long, whom "
        "to write to), in its own words; required with --web-booking on.",
        example="Clínica Sol SL trata sus datos para gestionar su cita; se conservan 5 años; escriba a "
                "dpo@clinicasol.es", metavar="TEXT")
    web_color: str = setting("#0b5cad", "--web-color", "The page's accent colour, #RRGGBB.", check=web_color,
                             example="#2a7a3b", metavar="COLOUR")

    def __post_init__(self):
        for field in dataclasses.fields(self):
            check_setting(field, getattr(self, field.name))


def listed(settings):
    """{name: field} of Settings' fields; TypeError naming one declared without its entry in the list."""
    for field in dataclasses.fields(settings):
        if "option" not in field.metadata:
            raise TypeError(f"Settings.{field.name} has no option, help or check: declare it with setting(default, "
                            "option, help, ...)")
    return {field.name: field for field in dataclasses.fields(settings)}


SETTINGS = listed(Settings)


def check_setting(field, value):
    """ValueError saying what the setting `field` must be, when `value` is not one it may take."""
    if type(value) is not field.type:
        raise ValueError(f"{field.name} must be {'a whole number' if field.type is int else 'text'}, not {value!r}")
    low, high = field.metadata["within"]
    choices = field.metadata["choices"]
    if choices and value not in choices or low is not None and value < low or high is not None and value > high:
        raise ValueError(field.metadata["refusal"])
    if field.metadata["check"]:
        field.metadata["check"](value)


def settings_in_file(path):
    """The settings a clinic's file gives (TOML, its keys Settings' fields: `clinic_name = "Clínica Sol"`), each
    checked on its own; ValueError naming the file, the key and the fix ("A clinic is a folder")."""
    try:
        with open(path, "rb") as file:
            given = tomllib.load(file)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not TOML ({error}); write one setting a line: clinic_name = \"Clínica Sol\"") from None
    for key, value in given.items():
        field = SETTINGS.get(key)
        if field is None:
            close = difflib.get_close_matches(key, SETTINGS, n=1)
            raise ValueError(f"{path}: unknown setting {key!r}; the settings are: {', '.join(SETTINGS)}"
                             + (f"; did you mean {close[0]}?" if close else ""))
        if type(value) is not field.type:
            raise ValueError(f"{path}: {key} must be {'a whole number' if field.type is int else 'text in quotes'}, "
                             f"not {value!r}")
        try:
            check_setting(field, value)
        except ValueError as error:
            raise ValueError(f"{path}: {key} = {value!r}: {error}") from None
    return given


def settings_in_environment(environ):
    """The settings the environment gives by their variables (AGENDA_MIN_NOTICE=30; an empty one gives nothing),
    each checked; ValueError naming the variable and the fix."""
    given = {}
    for field in SETTINGS.values():
        name, text = variable(field), environ.get(variable(field))
        if not text:
            continue
        try:
            value = int(text) if field.type is int else text
        except ValueError:
            raise ValueError(f"{name}={text!r}: give a whole number, e.g. {name}={field.default}") from None
        try:
            check_setting(field, value)
        except ValueError as error:
            raise ValueError(f"{name}={text!r}: {error}") from None
        given[field.name] = value
    return given


def settings_given(path=None, environ=None, options=None):
    """{field: value} of what a clinic is given, the strongest first: `options` (the command line's, checked by
    their reader), the keys of its file at `path` (when it is there), the environment's variables; what none gives
    is Settings' default ("Configuration and CLI")."""
    in_file = settings_in_file(path) if path is not None and Path(path).is_file() else {}
    return {**settings_in_environment(environ or {}), **in_file, **(options or {})}
