"""The clinic at a glance at the command line: `agenda report`, as text or CSV ("The clinic at a
glance")."""

import datetime as dt

import click

from ..values.fields import format_date
from ..values.printing import printable, sheet_csv
from ..domain.report import clinic_report, share
from .root import cli, cli_date, cli_language, cli_translator, clinic_at, counted, db_option, tz_option


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
    cancellations; per week the reminder answers and who booked; how far ahead patients book. In Spanish
    when LC_ALL, LC_MESSAGES, LANG or LANGUAGE asks for it (the CSV's columns stay English).

    Example:

    \b
        agenda report --from 02/11/2026 --to 29/11/2026 --csv > noviembre.csv
    """
    language = cli_language()
    with clinic_at(ctx, db_path, tz, language=language) as clinic:
        end = cli_date(last, "--to", language) if last else clinic.today() + dt.timedelta(days=13)
        found = clinic_report(clinic, cli_date(first, "--from", language) if first else end - dt.timedelta(days=27),
                              end)
    rows = [(d["id"], monday.isoformat(), *(c[key] for key in ("offered", "booked", "free")),
             share(c["booked"], c["offered"]), c["no_shows"], c["late_cancels"], c["offered_minutes"],
             c["booked_minutes"])
            for d in found["doctors"] for monday, c in sorted(d["weeks"].items())]
    if as_csv:
        return click.echo(sheet_csv(REPORT_COLUMNS, rows), nl=False)
    click.echo(report_text(found, cli_translator(language)))


def report_text(found, t):
    """The report for a terminal, in t's language: a line per doctor, per visit type and per week, then how
    far ahead patients booked."""
    lines = [t("report_doctor", id=d["id"], name=d["name"], **d["totals"]) for d in found["doctors"]]
    lines += [t("report_type", name=kind["name"], visits=counted(t, "count_visits", kind["visits"]),
                minutes=kind["minutes"]) for kind in found["types"]]
    lines += [t("report_week", monday=format_date(monday.isoformat()), **found["reminders"][monday],
                **found["sources"][monday]) for monday in found["weeks"]]
    lines.append(t("report_lead", **found["lead"]))
    return "\n".join(printable(line) for line in lines)
