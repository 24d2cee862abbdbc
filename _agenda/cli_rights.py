"""The patient's rights at the command line: who saw a patient's data (the access record)."""

import click

from .values import printable
from .cli import cli, clinic_time, cli_date, cli_zone, db_option, tz_option
from .cli_desk import clinic_at

ACCESS_KINDS = {"patient": "patient page", "appointment": "appointment", "search": "search results",
                "day": "day list", "print": "printed day", "export": "patient's copy",
                "blocked": "blocked record opened", "access": "this record of reads"}


@cli.command("access-log")
@db_option
@click.option("--patient", "patient_id", required=True, help="The patient's id (the desk shows it).")
@click.option("--since", default=None, help="Only from this day on, DD/MM/YYYY (default: all kept).")
@tz_option
@click.pass_context
def access_log(ctx, db_path, patient_id, since, tz):
    """Who saw one patient's data: when, who (api, desk:NAME, cli:LOGIN), what, allowed or refused.

    Reads are kept two years. Each line also says how many patients the
    read showed at once (a search or a day list shows several).

    Example:

    \b
        agenda access-log --patient 42 --since 01/01/2026
    """
    zone, first = cli_zone(tz), cli_date(since, "--since") if since else None
    with clinic_at(ctx, db_path, tz) as clinic:
        records = clinic.access_of(patient_id, first)
    for record in records:
        what = ACCESS_KINDS.get(record["kind"], record["kind"])
        others = f" (with {record['shown'] - 1} other(s))" if record["shown"] > 1 else ""
        verdict = "allowed" if record["allowed"] else "REFUSED"
        click.echo(printable(f"{clinic_time(record['at'], zone)}  {record['reader']}  {what}{others}  {verdict}"))
    if not records:
        click.echo(f"No reads of patient {patient_id} recorded{' since ' + since if since else ''}.")
