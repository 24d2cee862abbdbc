"""Moving in and out at the command line: `agenda export DIR` and `agenda import-appointments FILE`
("Moving in and out")."""

import csv
from pathlib import Path

import click

from ..values.refusals import ClinicError
from ..values.printing import plural
from ..files.reading import PatientFileError
from ..files.open_formats import appointment_rows, EXPORT_FILES, export_agenda
from ..files.staged_import import import_appointments
from .root import cli, cli_clinic, cli_reader, clinic_at, db_option, refuse_bad_rows, tz_option


@cli.command("export")
@db_option
@click.argument("folder", type=click.Path(file_okay=False))
@tz_option
@click.pass_context
def export(ctx, db_path, folder, tz):
    """Write the whole agenda into FOLDER in open formats Agenda itself reads back.

    catalogs.csv (for `agenda seed`), patients.csv (for `agenda import-patients`),
    appointments.csv (for `agenda import-appointments`: past, future and cancelled) and
    events.jsonl (the audit trail, one JSON object a line). Every file is created readable
    by its owner only and never overwrites one; a cell a spreadsheet would run starts
    with ' and the importers take it off. Patients blocked after an erasure request are
    left out. The export is recorded in the access record as yours.

    Example:

    \b
        agenda export /root/agenda-export-2026-11-24 --db /var/lib/agenda/clinic.db
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        written = export_agenda(clinic, folder, cli_reader())
    for name in EXPORT_FILES:
        click.echo(f"{Path(folder) / name}: {plural(written[name], 'row' if name.endswith('.csv') else 'event')}")
    if written["blocked"]:
        click.echo(f"{plural(written['blocked'], 'blocked patient')} left out (erasure requested), with the "
                   f"{plural(written['events_left_out'], 'event')} about them left out of events.jsonl: keep this "
                   "database, or a backup of it, until `agenda retention run` can anonymise them.")


@cli.command("import-appointments")
@db_option
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Check and report; write nothing.")
@tz_option
@click.pass_context
def import_appointments_command(ctx, db_path, file, dry_run, tz):
    """Bring in an old system's appointments, all or nothing, so a clinic can switch on a Monday.

    Columns by name (Spanish names too): date,time,duration,doctor,center,nif,name,
    surname,phone,reason,insurance,status,type,pause,holds. UTF-8 or Windows-1252; ','
    ';' or tab. A
    patient is found by NIF (else by name and phone) or created from the row; a row under
    a guardian's NIF with a child's name is booked to that child and said; a name that is
    neither the holder's nor a child's, an unknown doctor, center or insurance, a room of
    another center, a type of another area and an overlap with the same doctor are listed
    by line, and then nothing is imported. A coming visit is given the room and machine
    its type needs; one that finds none free is imported and listed as a conflict.

    Example:

    \b
        agenda import-appointments citas.csv --dry-run && agenda import-appointments citas.csv
    """
    if not Path(file).is_file():
        raise click.ClickException(f"{file}: no such file; give the path of the appointments CSV")
    clinic = cli_clinic(ctx, db_path, tz)
    try:
        imported = import_appointments(clinic, appointment_rows(file), Path(file).name, dry_run=dry_run)
    except (PatientFileError, csv.Error) as error:
        raise click.ClickException(f"{file}: nothing was imported: {error}") from None
    except ClinicError as error:
        raise click.ClickException(f"{file}: nothing was imported: {error.message}") from None
    finally:
        clinic.db.close()
    for line in imported.notes:
        click.echo(line)
    if imported.note_count > len(imported.notes):
        click.echo(f"... and {imported.note_count - len(imported.notes):,} more booked to a child of the NIF's holder")
    refuse_bad_rows(file, imported.problems, imported.problem_count)
    done = "would be imported" if dry_run else "imported"
    children = f" ({plural(imported.note_count, 'row')} booked to a child of the NIF's holder)" if imported.note_count \
        else ""
    click.echo(f"{'Dry run: ' if dry_run else ''}{plural(imported.appointments, 'appointment')} {done}, "
               f"{plural(imported.patients, 'new patient')}{children}.{' Nothing was written.' if dry_run else ''}")
    if imported.conflicts:
        click.echo(f"Rooms and machines, {plural(len(imported.conflicts), 'line')} (a visit without what it needs "
                   "is listed on the rooms page and by `agenda status`: move it at the desk):")
        click.echo("\n".join(f"  line {line}: {why}" for line, why in imported.conflicts))
