"""The command line's root: the one click group, the option decorators and helpers every command
module shares (the clinic's clock and zone, dates and times, opening the database and the Clinic, who
reads at the command line, an import's bad rows). Commands live in cli_*.py, each named for its job."""

import datetime as dt
import os
import pwd
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import click

from . import __version__
from .values import (clinic_zone, ClinicError, DEFAULT_TZ, format_date, parse_date, parse_time, plural, printable,
                     Settings)
from .store import Database, open_database
from .clinic import Clinic


CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


DEFAULTS = Settings()  # every option's default for a setting comes from Settings alone


def db_option(function):
    """--db: the SQLite file, from AGENDA_DB too."""
    return click.option("--db", "db_path", envvar="AGENDA_DB", default="agenda.db", show_default=True,
                        type=click.Path(dir_okay=False), help="The SQLite file [env: AGENDA_DB].")(function)


def desk_rules_options(function):
    """--desk-min-notice and --desk-horizon: reception's rules, for `agenda run` and the desk's twins
    (`agenda book`, `agenda move`), apart from the caller's ("Each channel's rules")."""
    function = click.option("--desk-min-notice", default=DEFAULTS.desk_min_notice_minutes, show_default=True,
                            type=click.IntRange(0, None), envvar="AGENDA_DESK_MIN_NOTICE", show_envvar=True,
                            help="Minutes between now and the first slot reception may book (0: a walk-in "
                                 "now; a slot already begun is past).")(function)
    return click.option("--desk-horizon", default=DEFAULTS.desk_horizon_months, show_default=True,
                        type=click.IntRange(1, 120), envvar="AGENDA_DESK_HORIZON", show_envvar=True,
                        help="Calendar months ahead that reception may book.")(function)


def tz_option(function):
    return click.option("--tz", default=DEFAULTS.tz, show_default=True, envvar="AGENDA_TZ",
                        help="The clinic's time zone, for 'today' and 'now' [env: AGENDA_TZ].")(function)


def cli_zone(tz):
    """The clinic's ZoneInfo, or a ClickException naming a good one."""
    try:
        return clinic_zone(tz)
    except ValueError as error:
        raise click.ClickException(str(error)) from None


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="agenda", help="Show the version and exit.")
def cli():
    """Agenda: a small clinic's appointment agenda, served to a voice agent over HTTP.

    Every option may also come from an AGENDA_* environment variable (see each
    command's -h). A first run, on the demo clinic:

    \b
    Example:
        agenda seed seed/catalogs.csv --db clinic.db
        agenda secret set --db clinic.db
        agenda run --db clinic.db
    """


def cli_now(ctx):
    """Now, from the clock a test put in the context object, else the real one ("Clinic time")."""
    clock = (ctx.obj or {}).get("now")
    return clock() if clock else dt.datetime.now(dt.timezone.utc)


def existing_database(db_path):
    """The agenda database at db_path, which must exist: a typo must not make an empty one."""
    if not Path(db_path).is_file():
        raise click.ClickException(f"{db_path}: no such database; give its path with --db or AGENDA_DB")
    try:
        return open_database(db_path)
    except (sqlite3.Error, OSError, RuntimeError) as error:
        raise click.ClickException(f"{db_path}: cannot open the database: {error}") from None


def cli_date(text, option):
    try:
        return parse_date(text, option)
    except ClinicError:
        raise click.ClickException(f"{option} {text!r} is not a date; write it as DD/MM/YYYY, e.g. 24/11/2026") from None


def cli_time(text, option):
    try:
        return parse_time(text, option)
    except ClinicError:
        raise click.ClickException(f"{option} {text!r} is not a time; write it as HH:MM, e.g. 09:30") from None


def clinic_time(utc_text, tz):
    """A stored UTC time as the clinic reads it: DD/MM/YYYY HH:MM, local."""
    moment = dt.datetime.fromisoformat(utc_text).astimezone(tz)
    return f"{format_date(moment.date())} {moment:%H:%M}"


def human_size(size):
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024


def describe_counts(counts):
    return (f"{plural(counts['appointments'], 'appointment')} ({counts['live_appointments']:,} not cancelled), "
            f"{plural(counts['patients'], 'patient')}")


def cli_clinic(ctx, db_path, tz=DEFAULT_TZ, **rules):
    """The Clinic over an existing database, on the CLI's clock ("Clinic time"); rules: Settings' fields."""
    existing_database(db_path).close()
    try:
        return Clinic(Database(db_path), Settings(tz=tz, **rules), lambda: cli_now(ctx))
    except ValueError as error:
        raise click.ClickException(str(error)) from None


@contextmanager
def clinic_at(ctx, db_path, tz=DEFAULT_TZ, **rules):
    """The Clinic over an existing database for one command; a refusal becomes one `Error:` line."""
    clinic = cli_clinic(ctx, db_path, tz, **rules)
    try:
        yield clinic
    except ClinicError as error:
        raise click.ClickException(error.message) from None
    finally:
        clinic.db.close()


# The login uid Linux keeps for a session (set once at login, kept across sudo and su); tests point
# this at a file of their own. UNSET_LOGINUID is (uid_t)-1: no login, as for a service systemd starts.
LOGINUID = Path("/proc/self/loginuid")
UNSET_LOGINUID = 4294967295


def login_uid():
    """The uid of the person logged in: the login uid the system keeps, else the real uid."""
    try:
        kept = int(LOGINUID.read_text(encoding="ascii").strip())
    except (OSError, ValueError):  # no such file (not Linux, no audit), or not a number
        kept = UNSET_LOGINUID
    return kept if 0 <= kept < UNSET_LOGINUID else os.getuid()


def cli_reader():
    """Who reads at the command line, for the access record: cli:NAME, the person logged in by the
    system's account name, or cli:uid:N for a uid without one; never an environment variable
    (docs/design.md, "The command line's reader")."""
    uid = login_uid()
    try:
        return f"cli:{pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"cli:uid:{uid}"


def refuse_bad_rows(file, problems):
    """An import's bad rows on stderr (the first 50), then the one Error: line; nothing when none."""
    if not problems:
        return
    for line in problems[:50]:
        click.echo(printable(line), err=True)
    if len(problems) > 50:
        click.echo(f"... and {len(problems) - 50:,} more bad rows", err=True)
    raise click.ClickException(f"{file}: {plural(len(problems), 'bad row')}; "
                               "nothing was imported. Fix them and run the import again.")
