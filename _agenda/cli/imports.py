"""The clinic's own files read in at the command line: `agenda seed` (the catalog CSV) and `agenda
import-patients` (another system's patient list), each all or nothing ("Catalog file", "Patient import")."""

import csv
import sqlite3
from pathlib import Path

import click

from ..values.fields import format_date
from ..patient.messages import phone_warning
from ..values.printing import plural, printable
from ..storage.shipped import DEMO_CATALOGS, read_data_file
from ..storage.database import open_database
from ..files.catalogs import CATALOG_NOUNS, seed_catalogs, SeedError
from ..files.reading import PatientFileError, patient_rows, read_catalog_file, read_catalog_text
from ..files.staged_import import import_patients
from .root import cli, cli_clinic, cli_now, cli_zone, db_option, refuse_bad_rows, tz_option


LISTED = 20  # the coming appointments a seed names whose room or machine changed; the rest counted


@cli.command()
@db_option
@click.argument("file", type=click.Path(dir_okay=False), required=False)
@click.option("--demo", is_flag=True, help="Load the demo clinic shipped with agenda instead of a FILE.")
@tz_option
@click.pass_context
def seed(ctx, db_path, file, demo, tz):
    """Load centers, specialities, insurances, doctors' hours and closures from a CSV.

    The file (UTF-8 or Windows-1252, header row, ',' or ';' separated) is applied in one transaction:
    every error is reported with its line number and nothing changes; loading the same
    file again changes nothing more. Columns: kind,id,name,speciality,center,insurances,
    days,hours,slot_minutes,date_from,date_to (see the README). Days may be written in
    English or Spanish (mon-fri, lun-vie, lunes;miércoles). A change to what a coming visit
    needs (a doctor's room, a type's needs, a room's center) gives it a free room or machine,
    listed, or is refused naming the visits to move first.

    Example:

    \b
        agenda seed seed/catalogs.csv --db clinic.db
    """
    if demo == bool(file):
        raise click.ClickException("give the catalog CSV to load, or --demo for the demo clinic (not both)")
    if file and not Path(file).is_file():
        raise click.ClickException(f"{file}: no such file; give the path of the catalog CSV")
    file, new = file or "the demo clinic", not Path(db_path).exists()
    try:
        rows = read_catalog_text(read_data_file(DEMO_CATALOGS).decode("utf-8-sig")) if demo else read_catalog_file(file)
        conn = open_database(db_path)
    except SeedError as error:
        raise click.ClickException(f"{file}: nothing was loaded.\n{error}") from None
    except (sqlite3.Error, OSError, RuntimeError) as error:
        raise click.ClickException(f"{db_path}: cannot open the database: {error}") from None
    try:
        summary = seed_catalogs(conn, rows, at=cli_now(ctx), tz=cli_zone(tz))
        unreachable = phone_warning(conn)
    except SeedError as error:
        conn.close()
        if new:  # a database this command made and could not fill: not left behind empty
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        raise click.ClickException(f"{file}: nothing was loaded{'' if not new else ' and no database made'}."
                                   f"\n{error}") from None
    finally:
        conn.close()
    counts = ", ".join(plural(summary[table], noun) for table, noun in CATALOG_NOUNS.items())
    state = "loaded" if summary["changed"] else "already up to date, nothing changed"
    click.echo(f"{file}: {state}. {db_path} now holds {counts}.")
    if unreachable:
        click.echo(f"Warning: {unreachable}", err=True)
    if summary["rederived"]:
        click.echo(f"{plural(len(summary['rederived']), 'coming appointment')} with another room or machine now:")
        click.echo("\n".join(f"  appointment {visit['id']} ({format_date(visit['date'])} {visit['time']},"
                             f" {visit['doctor']}): now holds {', '.join(visit['holds']) or 'none'}"
                             for visit in summary["rederived"][:LISTED]))
        if len(summary["rederived"]) > LISTED:
            click.echo(f"  ... and {len(summary['rederived']) - LISTED:,} more (`agenda day DATE` shows them)")


@cli.command("import-patients")
@db_option
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Check and report; write nothing.")
@tz_option
@click.pass_context
def import_patients_command(ctx, db_path, file, dry_run, tz):
    """Bring in patients from another system's CSV: name,surname,birthDate,nif,phone, and
    optionally email, language (es or en) and messages (yes or no; correo, idioma, mensajes).

    UTF-8 or Latin-1, with a header row; ',' ';' or tab separated. Every row is
    checked as the API checks a new patient (NIF letter, phone, date). Bad rows are
    listed by line and then nothing is imported: all or nothing. A NIF already in
    the agenda is reported and never doubled. An optional guardianNif column (or
    Tutor, DNI tutor, DNI del tutor...) names a child's guardian (in the agenda or on
    an earlier line): a child under 14 may then have no NIF, and is known again by
    name, birth date and guardian, so running the same file twice doubles no one.

    Example:

    \b
        agenda import-patients old-system.csv --dry-run && agenda import-patients old-system.csv
    """
    if not Path(file).is_file():
        raise click.ClickException(f"{file}: no such file; give the path of the patients CSV")
    clinic = cli_clinic(ctx, db_path, tz)
    try:
        imported = import_patients(clinic, patient_rows(file), Path(file).name, dry_run=dry_run)
    except (PatientFileError, csv.Error) as error:
        raise click.ClickException(f"{file}: nothing was imported: {error}") from None
    finally:
        clinic.db.close()
    present, patients = imported.present, imported.patients
    click.echo(f"Checked {imported.rows:,} rows.", err=True)
    for line in present[:20]:
        click.echo(printable(line))
    if imported.present_count > len(present):
        click.echo(f"... and {imported.present_count - len(present):,} more already in the agenda")
    refuse_bad_rows(file, imported.problems, imported.problem_count)
    if dry_run:
        click.echo(f"Dry run: {plural(patients, 'patient')} would be imported; {imported.present_count:,} already "
                   "in the agenda. Nothing was written.")
    else:
        click.echo(f"Imported {plural(patients, 'patient')}; {imported.present_count:,} already in the agenda.")
