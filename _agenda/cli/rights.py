"""The patient's rights at the command line: who saw a patient's data, their copy, rectification,
erasure and the retention run ("Access record", "Erasure and retention", "A patient's copy")."""

import datetime as dt
import json
import os
import re

import click

from ..values.fields import clinic_moment, format_date
from ..values.printing import plural, printable
from ..storage.events import utc_iso
from ..storage.copies import remove_kept_copies
from ..domain.patients import TYPED
from ..domain.registry import register_patient
from ..domain.rights import erasure_preview, patient_copy, rectify, request_erasure, retention_run
from ..words.texts import TEXTS
from ..words.pages import copy_page
from .root import (cli, cli_date, cli_now, cli_reader, cli_zone, clinic_at, db_option,
                  keep_copies_option, setting_option, tz_option)

ACCESS_KINDS = {"patient": "patient page", "appointment": "appointment", "search": "search results",
                "day": "day list", "print": "printed day", "export": "patient's copy",
                "blocked": "blocked record opened", "access": "this record of reads", "preview": "list before a change",
                "change": "notice after a change", "feed": "doctor's calendar feed"}


@cli.command("access-log")
@db_option
@click.option("--patient", "patient_id", required=True, help="The patient's id (the desk shows it).")
@click.option("--since", default=None, help="Only from this day on, DD/MM/YYYY (default: all kept).")
@tz_option
@click.pass_context
def access_log(ctx, db_path, patient_id, since, tz):
    """Who saw one patient's data: a line a day, reader (api, desk:NAME, cli:NAME, feed:DOCTOR) and
    kind: the first and last read that day, how many, allowed or refused.

    Reads are kept two years.

    Example:

    \b
        agenda access-log --patient 42 --since 01/01/2026
    """
    zone, first = cli_zone(tz), cli_date(since, "--since") if since else None
    with clinic_at(ctx, db_path, tz) as clinic:
        records = clinic.access.of_patient(clinic.require_patient(patient_id), first)
    for record in records:
        what = ACCESS_KINDS.get(record["kind"], record["kind"])
        verdict = "allowed" if record["allowed"] else "REFUSED"
        span = clinic_moment(utc_iso(record["first"]), zone) + ("" if record["reads"] == 1 else
                                                              f" to {clinic_moment(utc_iso(record['last']), zone)[-5:]}")
        click.echo(printable(f"{span}  {record['reader']}  {what} x{record['reads']}  {verdict}"))
    if not records:
        click.echo(f"No reads of patient {patient_id} recorded{' since ' + since if since else ''}.")


retention_option = setting_option("retention_years")


def rights_clinic(ctx, db_path, tz, retention_years):
    """clinic_at with the clinic's retention (its option refuses one below the law's minimum)."""
    return clinic_at(ctx, db_path, tz, retention_years=retention_years)


@cli.group()
def patient():
    """One patient: registering them, and their rights: a copy of their data, rectification, erasure.

    Example:

    \b
        agenda patient export 42 --format html --output ana.html
    """


@patient.command("export")
@db_option
@click.argument("patient_id")
@click.option("--format", "form", type=click.Choice(["json", "html"]), default="json", show_default=True,
              help="json for a machine, html for the patient to read (in Spanish).")
@click.option("--output", type=click.Path(dir_okay=False), default=None,
              help="A new file, created readable by its owner only (default: standard output).")
@click.option("--why", default=None, help="For a blocked patient only: the court's or authority's request.")
@tz_option
@click.pass_context
def patient_export(ctx, db_path, patient_id, form, output, why, tz):
    """A patient's copy of their data: details, every appointment (cancelled too), the history of
    changes and who saw them. Recorded in the access record as yours.

    Example:

    \b
        agenda patient export 42 --output ana.json
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        copy = patient_copy(clinic, patient_id, cli_reader(), why)
        text = copy_page(copy, clinic.tz) if form == "html" else json.dumps(copy, ensure_ascii=False, indent=2) + "\n"
    if output is None:
        click.echo(text if form == "html" else printable_json(text), nl=False)
        return
    try:
        descriptor = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise click.ClickException(f"{output} exists; give a new file name (nothing was written)") from None
    except OSError as error:
        raise click.ClickException(f"cannot write {output}: {error.strerror}") from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    click.echo(f"Wrote patient {copy['patient']['id']}'s copy to {output} (readable by you only).", err=True)


def printable_json(text):
    """JSON for a terminal: what a patient typed cannot move the cursor or change colours."""
    return "\n".join(printable(line) for line in text.split("\n"))


def option_of(field):
    """A field's option at the command line: birthDate as --birth-date."""
    return "--" + re.sub(r"[A-Z]", lambda capital: "-" + capital.group().lower(), field)


SHAPE_HINTS = {"date": ", DD/MM/YYYY"}
CHOICES = {"language": ("es", "en"), "yes_no": ("yes", "no")}  # a choice is one of these, never emptied


def patient_options(correcting):
    """An option for each field a patient's details take (patients.TYPED), named and said as the desk says it;
    `correcting`: the right value, "" empties an optional one."""
    def decorate(command):
        for column in reversed(TYPED):
            words = TEXTS[f"field_{column.field}"][1]
            said = ("The right " if correcting else "The ") + (words if words.isupper() else words.lower())
            choices = CHOICES.get(column.shape)
            empties = '; "" empties it.' if correcting and not column.required and not choices else "."
            command = click.option(option_of(column.field), column.field, default=None,
                                   type=click.Choice(choices, case_sensitive=False) if choices else None,
                                   help=said + SHAPE_HINTS.get(column.shape, "") + empties)(command)
        return command
    return decorate


@patient.command("add")
@db_option
@patient_options(correcting=False)
@click.option("--guardian-nif", "guardianNif", default=None,
              help="A child under 14 without a NIF: their guardian's NIF (a registered patient).")
@tz_option
@click.pass_context
def patient_add(ctx, db_path, tz, **given):
    """Register a patient without booking, checked as at the desk: a name and a NIF (or, for a child
    under 14, a guardian's NIF and a birth date); an e-mail turns messages about their own visits on.

    Example:

    \b
        agenda patient add --name Ana --nif 12345678Z --phone "612 34 56 78" --email ana@example.com
    """
    fields = {field: value for field, value in given.items() if value is not None}
    with clinic_at(ctx, db_path, tz) as clinic:
        patient_id = register_patient(clinic, fields, source="cli")
    click.echo(f"Registered patient {patient_id}.")


@patient.command("rectify")
@db_option
@click.argument("patient_id")
@patient_options(correcting=True)
@tz_option
@click.pass_context
def patient_rectify(ctx, db_path, patient_id, tz, **given):
    """Correct a patient's details when they ask (GDPR art. 16), checked as a new patient is;
    the details before and after are kept in the audit trail.

    Example:

    \b
        agenda patient rectify 42 --phone "612 34 56 78" --surname "García Núñez"
    """
    changes = {field: value for field, value in given.items() if value is not None}
    if not changes:
        options = [option_of(column.field) for column in TYPED]
        raise click.UsageError(f"say what to correct: {', '.join(options[:-1])} or {options[-1]}")
    with clinic_at(ctx, db_path, tz) as clinic:
        rectify(clinic, patient_id, changes, "cli")
    click.echo(f"Corrected patient {patient_id}: {', '.join(sorted(changes))}.")


@patient.command("erase")
@db_option
@click.argument("patient_id")
@click.option("--yes", is_flag=True, help="Do not ask; record the request.")
@retention_option
@tz_option
@click.pass_context
def patient_erase(ctx, db_path, patient_id, yes, retention_years, tz):
    """Record a patient's request to erase their data: their coming appointments are cancelled
    and they are blocked (kept, unused, gone from every search) until the retention period
    ends; then `agenda retention run` anonymises them. Prints a notice for the caller platform.

    Example:

    \b
        agenda patient erase 42
    """
    zone = cli_zone(tz)
    with rights_clinic(ctx, db_path, tz, retention_years) as clinic:
        preview = erasure_preview(clinic, patient_id, cli_reader())
        for appointment in preview["cancelled"]:
            click.echo(f"will cancel {appointment['id']}: {format_date(appointment['date'])} {appointment['time']} "
                       f"{printable(appointment['doctor_id'])}")
        click.echo(f"Patient {preview['patient_id']} will be blocked; erasable from "
                   f"{format_date(preview['erasable_from'].isoformat())}.")
        if not yes and not click.confirm("Record the erasure request?"):
            raise click.ClickException("nothing was done")
        done = request_erasure(clinic, patient_id, "cli", cli_reader())
    ending = ("anonymised now: no appointment took place" if done["anonymised"] else
              f"blocked until {format_date(done['erasable_from'].isoformat())}, then anonymised by `agenda retention run`")
    click.echo(f"Recorded the erasure request of patient {done['patient_id']}: "
               f"{len(done['cancelled'])} appointment(s) cancelled; {ending}.")
    click.echo(printable(ERASURE_NOTICE.format(id=done["patient_id"], nif=done["nif"] or "none",
                                               at=clinic_moment(utc_iso(cli_now(ctx)), zone))))


ERASURE_NOTICE = ("\nForward to the caller platform (our processor), which must erase what it holds:\n"
                  "  Erasure request of patient {id} (NIF {nif}) recorded on {at}. Erase this patient's data "
                  "from your systems (call recordings, transcripts, logs) and confirm it to the clinic.")


@cli.group()
def retention():
    """The retention law's clock: anonymise what is due, forget old access records.

    Example:

    \b
        agenda retention run --db /var/lib/agenda/clinic.db
    """


@retention.command("run")
@db_option
@retention_option
@keep_copies_option
@tz_option
@click.pass_context
def retention_run_command(ctx, db_path, retention_years, keep_copies_days, tz):
    """Anonymise every blocked patient whose retention period has ended, remove access records
    older than two years and the copies kept before an upgrade or a restore after
    --keep-copies-days; say what was done. Run it daily (docs/deploy.md has a timer).

    Example:

    \b
        agenda retention run
    """
    with rights_clinic(ctx, db_path, tz, retention_years) as clinic:
        done = retention_run(clinic, "cli")
    anonymised = ", ".join(str(i) for i in done["anonymised"]) or "none"
    click.echo(f"Anonymised {len(done['anonymised'])} patient(s): {anonymised}.")
    click.echo(f"Removed {done['access_removed']:,} access record(s) older than two years.")
    kept_before = cli_now(ctx) - dt.timedelta(days=keep_copies_days)
    for path in remove_kept_copies(db_path, kept_before):
        click.echo(f"Removed {path}, kept more than {plural(keep_copies_days, 'day')} before an upgrade or a restore.")
    if done["waiting"]:
        click.echo(f"{done['waiting']} blocked patient(s) wait for their period to end; the next on "
                   f"{format_date(done['next'].isoformat())}.")
