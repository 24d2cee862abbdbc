"""The clinic at a glance at the command line: `agenda report`, as text or CSV ("The clinic at a
glance")."""

import datetime as dt

import click

from .values import format_date, plural, printable, sheet_csv
from .report import clinic_report, share
from .cli import cli, cli_date, clinic_at, db_option, tz_option


REPORT_COLUMNS = ("doctor", "week", "offered", "booked", "free", "filledPercent", "noShows", "lateCancellations",
                  "offeredMinutes", "bookedMinutes")


@cli.command()
@db_option
@click.option("--from", "first", default=None, help="The first day, DD/MM/YYYY (default: four weeks before --to).")
@click.option("--to", "last", default=None, help="The last day, DD/MM/YYYY (default: two weeks from today).")
@click.option("--csv", "as_csv", is_flag=True, help="Each doctor's weeks as comma-separated values, for a spreadsheet.")
@tz_option
@click.pass_context
def report(ctx, db_path, first, last, as_csv, tz):
    """The clinic at a glance: per doctor and week the slots offered, booked and free, no-shows and late
    cancellations; per week the reminder answers and who booked; how far ahead patients book.

    Example:

    \b
        agenda report --from 02/11/2026 --to 29/11/2026 --csv > noviembre.csv
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        end = cli_date(last, "--to") if last else clinic.today() + dt.timedelta(days=13)
        found = clinic_report(clinic, cli_date(first, "--from") if first else end - dt.timedelta(days=27), end)
    rows = [(d["id"], monday.isoformat(), *(c[key] for key in ("offered", "booked", "free")),
             share(c["booked"], c["offered"]), c["no_shows"], c["late_cancels"], c["offered_minutes"],
             c["booked_minutes"])
            for d in found["doctors"] for monday, c in sorted(d["weeks"].items())]
    if as_csv:
        return click.echo(sheet_csv(REPORT_COLUMNS, rows), nl=False)
    for d in found["doctors"]:
        c = d["totals"]
        click.echo(printable(f"{d['id']} {d['name']}: {c['booked']}/{c['offered']} booked ({c['filled']}%), "
                             f"{c['free']} free, {c['no_shows']} no-shows, {c['late_cancels']} late cancellations; "
                             f"{c['booked_minutes']} of {c['offered_minutes']} minutes booked"))
    for kind in found["types"]:
        click.echo(printable(f"{kind['name']}: {plural(kind['visits'], 'visit')}, {kind['minutes']} minutes"))
    for monday in found["weeks"]:
        answers, who = found["reminders"][monday], found["sources"][monday]
        click.echo(f"Week of {format_date(monday.isoformat())}: reminders " + ", ".join(
            f"{count} {key}" for key, count in answers.items()) + f"; booked by the voice agent {who['agent']}, "
            f"by reception {who['desk']}")
    click.echo("Booked ahead: " + ", ".join(f"{key.replace('_', ' ')} {count}" for key, count in found["lead"].items()))
