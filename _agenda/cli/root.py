"""The command line's root: the one click group, the option decorators and helpers every command module shares
(the clinic's clock and zone, dates and times, opening the database and the Clinic, who reads at the command
line, an import's bad rows, the secret's file, Litestream). Commands live in this folder's other modules, each
named for its job."""

import datetime as dt
import os
import pwd
import shutil
import signal
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import click

from .. import __version__
from ..values.settings import check_setting, clinic_zone, DEFAULT_TZ, Settings, SETTINGS, variable
from ..values.refusals import ClinicError
from ..values.fields import parse_date, parse_time, text_field
from ..values.printing import plural, printable
from ..storage.sealing import recipients_of, SealingError
from ..storage.copies import KEEP_COPIES_DAYS, sweep_scratch
from ..storage.schema import SchemaBehind
from ..storage.database import AS_IT_IS, Database, open_database, REFUSE
from ..storage.connections import schema_version, transaction
from ..domain.clinic import Clinic
from ..domain.outbox import hold_unsent
from ..words.texts import refusal_text, translator
from ..storage.replication import litestream_binary
from ..storage.replica_restore import noted_drill
from ..patient.sender import Mailer, smtp_server


# The variables that name the language a command speaks, strongest first ("Configuration and CLI").
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")
LANGUAGES = ("es", "en")


def cli_language(environ=None):
    """'es' or 'en': the language the environment asks for, read from its variables, never through `locale`
    (a machine may have no Spanish locale installed; see docs/design.md, "Configuration and CLI")."""
    environ = os.environ if environ is None else environ
    named = next((environ[name] for name in LOCALE_VARIABLES if environ.get(name)), "")
    if named.split(".")[0].split("@")[0] in ("C", "POSIX"):
        return "en"
    wished = [entry[:2] for entry in environ.get("LANGUAGE", "").split(":") if entry[:2] in LANGUAGES]
    return wished[0] if wished else "es" if named.startswith("es") else "en"


def cli_translator(language=None):
    """t(key, **values): a text of the desk's table (texts.TEXTS) in the command line's language."""
    return translator(language or cli_language())


def counted(t, key, count):
    """'1 cita', '3 citas': a count with its noun, from a TEXTS entry of (one, many) in each language."""
    return t(key)[0 if count == 1 else 1].format(count=count)


CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


DEFAULTS = Settings()  # every option's default for a setting comes from Settings alone
MESSAGES_HELD_FROM = 18  # the schema whose outbox says what became of each message


def db_option(function):
    """--db: the SQLite file, from AGENDA_DB too."""
    return click.option("--db", "db_path", envvar="AGENDA_DB", default="agenda.db", show_default=True,
                        type=click.Path(dir_okay=False), help="The SQLite file [env: AGENDA_DB].")(function)


class WholeSetting(click.IntRange):
    """A whole-number setting's option type: its range shown in -h, a wrong number refused in Settings' words."""

    def __init__(self, field):
        super().__init__(*field.metadata["within"])
        self.field = field

    def convert(self, value, param, ctx):
        number = click.INT.convert(value, param, ctx)
        try:
            check_setting(self.field, number)
        except ValueError as error:
            self.fail(str(error), param, ctx)
        return number


class ClinicSetting(click.Option):
    """A setting's option of `agenda run`: -h shows its variable, which is read with the clinic's file
    (`settings_given`), under it, not by click."""

    def value_from_envvar(self, ctx):
        return None


def setting_option(name, dest=None, cls=click.Option):
    """The option of the setting `name` from its entry in Settings' list: its name, type, default, variable and
    help ("Configuration and CLI"); `dest`, its parameter's name (the option's by default)."""
    field = SETTINGS[name]
    choices = field.metadata["choices"]
    kind = click.Choice(choices) if choices else WholeSetting(field) if field.type is int else click.STRING
    keyed = f"  [file key: {name}]" if cls is ClinicSetting else ""
    return click.option(field.metadata["option"], *[dest] if dest else [], cls=cls, type=kind, default=field.default,
                        show_default=field.default != "", envvar=variable(field), show_envvar=True,
                        metavar=field.metadata["metavar"], help=field.metadata["help"] + keyed)


def setting_options(*names):
    """The options of these settings, from Settings' list, for a command that reads them from click alone."""
    def decorate(function):
        for name in reversed(names):
            function = setting_option(name)(function)
        return function
    return decorate


def clinic_setting_options(function):
    """Every setting's option, for `agenda run`: each named as its field, its key in the clinic's file, its
    variable read under that file (`settings_given`)."""
    for name in reversed(SETTINGS):
        function = setting_option(name, name, ClinicSetting)(function)
    return function


# --desk-min-notice and --desk-horizon: reception's rules, for `agenda run` and the desk's twins (`agenda book`,
# `agenda move`), apart from the caller's ("Each channel's rules").
desk_rules_options = setting_options("desk_min_notice_minutes", "desk_horizon_months")


def proxy_options(function):
    """--trusted-proxy, --trusted-proxy-headers and --channel-timeout: how waitress takes requests, for `agenda
    run` and `agenda host serve`."""
    for option in reversed((
            click.option("--trusted-proxy", default=None, envvar="AGENDA_TRUSTED_PROXY",
                         help="Address of the reverse proxy whose forwarding headers to trust (e.g. 127.0.0.1)."),
            click.option("--trusted-proxy-headers", default="x-forwarded-for x-forwarded-proto", show_default=True,
                         envvar="AGENDA_TRUSTED_PROXY_HEADERS", help="Which of the proxy's headers to trust."),
            click.option("--channel-timeout", default=60, show_default=True, type=click.IntRange(1, 3600),
                         envvar="AGENDA_CHANNEL_TIMEOUT", help="Seconds before an idle connection is closed."))):
        function = option(function)
    return function


def waitress_options(max_body_bytes, host, port, threads, channel_timeout, trusted_proxy, trusted_proxy_headers):
    """waitress's adjustments for these options: a body over the clinic's limit refused before it is read, the
    proxy's headers trusted from it alone."""
    options = {"host": host, "port": port, "threads": threads, "channel_timeout": channel_timeout,
               "max_request_body_size": max_body_bytes + 1, "ident": "agenda",
               "asyncore_use_poll": True}  # poll(), not select(): a host holds more than 1024 files ("A host of clinics")
    if trusted_proxy:
        options.update(trusted_proxy=trusted_proxy, trusted_proxy_headers=trusted_proxy_headers,
                       clear_untrusted_proxy_headers=True)
    return options


tz_option = setting_option("tz")


def cli_zone(tz, language="en"):
    """The clinic's ZoneInfo, or a ClickException naming a good one."""
    try:
        return clinic_zone(tz)
    except ValueError:
        raise click.ClickException(translator(language)("cli_unknown_zone", tz=tz, good=DEFAULT_TZ)) from None


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


def existing_database(db_path, older=REFUSE, seal_for=None, language="en"):
    """The agenda database at db_path, which must exist (a typo must not make an empty one), once what a
    killed command left beside it is removed (and said); at an older schema refused naming `agenda
    migrate`, unless `older` says otherwise (database.open_database)."""
    if not Path(db_path).is_file():
        raise click.ClickException(translator(language)("cli_no_database", db=db_path))
    sweep_left_copies(db_path)
    try:
        return open_database(db_path, older, seal_for)
    except SchemaBehind as error:
        raise click.ClickException(f"{db_path}: {error}") from None
    except (sqlite3.Error, OSError, RuntimeError, SealingError) as error:
        raise click.ClickException(f"{db_path}: cannot open the database: {error}") from None


def sweep_left_copies(db_path):
    """Remove the clear copies killed commands left beside the database, saying so on stderr."""
    for path in sweep_scratch(db_path):
        click.echo(f"Removed {path}: a clear copy of the clinic left by a command that was killed.", err=True)


def refuse_readable_by_others(path, what):
    """A ClickException when others may read the file at `path` (a secret, a key), naming the fix."""
    mode = Path(path).stat().st_mode
    if mode & 0o077:
        raise click.ClickException(f"{path} can be read by others (mode {mode & 0o777:o}); it holds {what}: "
                                   f"run: chmod 600 {path}")


class Recipient(click.ParamType):
    """An age recipient as given (age1..., an SSH public key, or a file of them); from the environment,
    several are separated by commas (an SSH key holds spaces)."""
    name = "recipient"
    envvar_list_splitter = ","

    def convert(self, value, param, ctx):
        return value.strip()


def recipients_option(function):
    """--encrypt-to: the clinic's backup recipients, from AGENDA_BACKUP_RECIPIENTS too."""
    return click.option("--encrypt-to", "recipients", multiple=True, type=Recipient(), metavar="RECIPIENT",
                        envvar="AGENDA_BACKUP_RECIPIENTS", show_envvar=True,
                        help="Seal with age to this recipient (age1..., an SSH public key, or a file of them); "
                             "repeatable; in the environment, comma-separated. Needs pip install "
                             "'agenda[encrypt]'.")(function)


def keep_copies_option(function):
    """--keep-copies-days: how long a copy kept before an upgrade or a restore stays, from
    AGENDA_KEEP_COPIES_DAYS too."""
    return click.option("--keep-copies-days", default=KEEP_COPIES_DAYS, show_default=True,
                        type=click.IntRange(1, None), envvar="AGENDA_KEEP_COPIES_DAYS", show_envvar=True,
                        help="Days a copy kept before an upgrade or a restore stays beside the database; "
                             "`agenda retention run` then removes it.")(function)


def smtp_options(function):
    """Where the clinic's mail goes out, from AGENDA_SMTP* too: the server, the password's file, a CA."""
    for option in reversed((
            click.option("--smtp", "smtp_url", envvar="AGENDA_SMTP", show_envvar=True, metavar="URL",
                         help="The clinic's SMTP server: smtp://USER@HOST:587 (STARTTLS), smtps://USER@HOST:465 "
                              "(TLS), or smtp+plain://localhost:25 (a relay on this machine)."),
            click.option("--smtp-password-file", envvar="AGENDA_SMTP_PASSWORD_FILE", show_envvar=True,
                         type=click.Path(dir_okay=False, exists=True),
                         help="A file only its owner reads (chmod 600) holding the SMTP user's password."),
            click.option("--smtp-ca", envvar="AGENDA_SMTP_CA", show_envvar=True, type=click.Path(dir_okay=False,
                         exists=True), help="The certificate authority the server's certificate is checked "
                                            "against (default: the system's)."),
            click.option("--mail-from", envvar="AGENDA_MAIL_FROM", show_envvar=True, metavar="ADDRESS",
                         help="Who the messages come from, e.g. 'Clínica Sol <citas@clinicasol.es>'.")),):
        function = option(function)
    return function


# Where a message's links lead, what it says, when a reminder goes, from AGENDA_* too.
message_options = setting_options("public_url", "mail_shows", "reminder_hours")


def mailer_of(smtp_url, password_file, ca_file):
    """The Mailer for --smtp, the password read from its file (refused when others may read it)."""
    if not smtp_url:
        raise click.ClickException("no SMTP server: give --smtp smtp://USER@HOST:587 (or AGENDA_SMTP)")
    password = None
    if password_file:
        refuse_readable_by_others(password_file, "the SMTP password")
        password = Path(password_file).read_text(encoding="utf-8").strip()
    try:
        return Mailer(smtp_server(smtp_url, password, ca_file))
    except ValueError as error:
        raise click.ClickException(str(error)) from None


def sender_address(mail_from):
    if not mail_from or "@" not in mail_from:
        raise click.ClickException("who do the messages come from? give --mail-from 'Clínica <citas@example.es>' "
                                   "(or AGENDA_MAIL_FROM)")
    return mail_from


def hold_unsent_messages(db_path):
    """After a restore or a promotion: the messages not yet sent wait for the admin (`agenda mail retry`), as the
    machine before may have sent them ("The sender"). A line saying how many, or None."""
    conn = open_database(db_path, AS_IT_IS)
    try:
        if schema_version(conn) < MESSAGES_HELD_FROM:
            return None
        with transaction(conn):
            held = hold_unsent(conn)
    finally:
        conn.close()
    return (f"{held} message(s) to patients not yet sent are held: the machine before may have sent them. See "
            f"`agenda mail status`; `agenda mail retry` sends them.") if held else None


def secret_file_option(function):
    return click.option(
        "--secret-file", envvar="AGENDA_SECRET_FILE", default=None, type=click.Path(dir_okay=False),
        help="Where `agenda secret set` keeps the secret [env: AGENDA_SECRET_FILE; "
             "default: the database's name with .secret].")(function)


def read_secret_file(path):
    """The stored secret, refused when others may read the file."""
    refuse_readable_by_others(path, "the shared secret")
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise click.ClickException(f"{path} is empty; store the secret with: agenda secret set")
    return value


def secret_file_path(db_path, secret_file):
    return Path(secret_file) if secret_file else Path(db_path).with_suffix(".secret")


def need_litestream(what):
    binary = litestream_binary()
    if binary is None:
        raise click.ClickException(f"{what} needs Litestream: pip install 'agenda[replica]'")
    return binary


def lowest_priority():
    """This process at the lowest CPU and I/O priority, where the system allows it (a drill beside the service)."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    except OSError:
        pass
    if shutil.which("ionice"):  # util-linux: the idle I/O class
        subprocess.run(["ionice", "-c3", "-p", str(os.getpid())], capture_output=True, timeout=10)


@contextmanager
def stopped_cleanly():
    """SIGTERM as an exit within: a drill's copy is removed on the way out."""
    stopped = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, stopped)


def drilled(ctx, binary, db_path, url, behind_after):
    """A restore drill of db_path's replica, noted in it (`noted_drill`), on the CLI's clock: (the problem or None,
    the facts, '' or words saying the result could not be kept); a killed drill's scratch folder removed first."""
    if Path(db_path).is_file():
        sweep_left_copies(db_path)
    verdict, facts, unkept = noted_drill(binary, db_path, url, behind_after, cli_now(ctx))
    return verdict, facts, f" (not noted for `agenda status`: {unkept})" if unkept else ""


def cli_recipients(values, doing="nothing was done"):
    """The age recipients of --encrypt-to, or None when none is given; a ClickException saying why not."""
    values = [value for value in values if value]
    if not values:
        return None
    try:
        return recipients_of(values)
    except SealingError as error:
        raise click.ClickException(f"{doing}: {error}") from None


def cli_date(text, option, language="en"):
    """The date written DD/MM/YYYY (or ISO), or a ClickException in the language asked naming the option."""
    try:
        return parse_date(text, option)
    except ClinicError:
        said = translator(language)("cli_not_a_date", text=text)
        raise click.ClickException(f"{option} {said}" if option else said) from None


def cli_time(text, option):
    try:
        return parse_time(text, option)
    except ClinicError:
        raise click.ClickException(f"{option} {text!r} is not a time; write it as HH:MM, e.g. 09:30") from None


def cli_text(ctx, param, value):
    """A click callback: a text option read as every text field is (`text_field`: one line, no control
    character, within the field's limit; "Text fields"); blank is None."""
    try:
        return None if value is None else text_field(value, param.name)
    except ClinicError as error:
        raise click.BadParameter(f"{error.message}: write it on one line, without control characters") from None


def describe_counts(counts):
    return (f"{plural(counts['appointments'], 'appointment')} ({counts['live_appointments']:,} not cancelled), "
            f"{plural(counts['patients'], 'patient')}")


def cli_clinic(ctx, db_path, tz=DEFAULT_TZ, *, language="en", **rules):
    """The Clinic over an existing database, on the CLI's clock ("Clinic time"); rules: Settings' fields."""
    existing_database(db_path, language=language).close()
    try:
        return Clinic(Database(db_path), Settings(tz=tz, **rules), lambda: cli_now(ctx))
    except ValueError as error:
        raise click.ClickException(str(error)) from None


@contextmanager
def clinic_at(ctx, db_path, tz=DEFAULT_TZ, *, language="en", **rules):
    """The Clinic over an existing database for one command; a refusal becomes one `Error:` line, in Spanish
    the desk's words for it (texts.refusal_text), in English the clinic's own."""
    clinic = cli_clinic(ctx, db_path, tz, language=language, **rules)
    try:
        yield clinic
    except ClinicError as error:
        said = error.message if language == "en" else refusal_text(translator(language), error)
        raise click.ClickException(said) from None
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


def refuse_bad_rows(file, problems, count=None):
    """An import's bad rows on stderr (the first 50 of `count`, all of `problems` by default), then the one
    Error: line; nothing when none."""
    count = len(problems) if count is None else count
    if not count:
        return
    for line in problems[:50]:
        click.echo(printable(line), err=True)
    if count > 50:
        click.echo(f"... and {count - 50:,} more bad rows", err=True)
    raise click.ClickException(f"{file}: {plural(count, 'bad row')}; "
                               "nothing was imported. Fix them and run the import again.")
