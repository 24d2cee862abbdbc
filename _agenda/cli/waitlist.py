"""The waiting list at the command line: `agenda waitlist add|list|remove` ("Waiting list")."""

import click

from ..values.fields import format_date
from ..values.printing import printable
from ..domain.waitlist import add_waiting, end_waiting, free_now, named, waiting, window_text, Wish
from .root import cli, cli_date, cli_reader, cli_text, clinic_at, db_option, tz_option
from ..domain.registry import find_patient


@cli.group()
def waitlist():
    """The waiting list: patients who want an earlier slot; `agenda waitlist list` shows the free
    slots that fit them, oldest first. Nothing is booked without a person.

    Example:

    \b
        agenda waitlist add --nif 12345678Z --doctor MARTIN --from 24/11/2026 --to 31/12/2026 --times 09:00-12:00
    """


@waitlist.command("add")
@db_option
@click.option("--nif", required=True, help="The patient's NIF.")
@click.option("--doctor", "doctor_id", default=None, help="The doctor wanted (or give --speciality).")
@click.option("--speciality", "speciality_id", default=None, help="Any doctor of this speciality.")
@click.option("--center", "center_id", default=None, help="Only at this center.")
@click.option("--from", "first", required=True, help="The first day that suits, DD/MM/YYYY.")
@click.option("--to", "last", required=True, help="The last day that suits, DD/MM/YYYY.")
@click.option("--times", default=None, help="The times of day that suit, as 09:00-12:00 (any when left out).")
@click.option("--note", default=None, callback=cli_text, help="What reception should know when calling.")
@click.option("--insurance", "insurance_id", default=None, help="The insurance to book with (its id).")
@click.option("--brings-forward", "appointment_id", default=None,
              help="The patient's later appointment (its id) this entry would bring forward: booked from the list, "
                   "that one moves (its doctor, type and insurance the defaults).")
@tz_option
@click.pass_context
def waitlist_add(ctx, db_path, nif, doctor_id, speciality_id, center_id, first, last, times, note, insurance_id,
                 appointment_id, tz):
    """Put a patient on the waiting list for a doctor or a speciality, or to bring one of their later
    appointments forward.

    Example:

    \b
        agenda waitlist add --nif 12345678Z --speciality FIS --from 24/11/2026 --to 15/01/2027
        agenda waitlist add --nif 12345678Z --brings-forward 123 --from 24/11/2026 --to 11/12/2026
    """
    start, _, end = (times or "").partition("-")
    with clinic_at(ctx, db_path, tz) as clinic:
        patient = find_patient(clinic, nif, reader=cli_reader())
        entry = add_waiting(clinic, Wish(patient["id"], cli_date(first, "--from"), cli_date(last, "--to"),
                                         doctor_id=doctor_id, speciality_id=speciality_id, center_id=center_id,
                                         time_from=start.strip() or None, time_to=end.strip() or None, note=note,
                                         insurance_id=insurance_id, appointment_id=appointment_id), source="cli")
    click.echo(f"Waiting list entry {entry}: patient {patient['id']}"
               f"{f', to bring appointment {appointment_id} forward' if appointment_id else ''}.")


@waitlist.command("list")
@db_option
@tz_option
@click.pass_context
def waitlist_list(ctx, db_path, tz):
    """Everyone waiting, oldest first, then the free slots of the next two weeks that fit someone.

    Example:

    \b
        agenda waitlist list
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        entries = named(clinic, waiting(clinic), cli_reader())
        free = free_now(clinic, entries)
    for entry in entries:
        click.echo(printable(f"{entry['id']}: {entry['patient_name']} {entry['phone'] or ''}, "
                             f"{entry['doctor_id'] or entry['speciality_id']}"
                             f"{' at ' + entry['center_id'] if entry['center_id'] else ''}, {window_text(entry)}"
                             f"{forward_text(entry)}"
                             f"{' (' + entry['note'] + ')' if entry['note'] else ''}"))
    if not entries:
        click.echo("No one is waiting.")
    for slot, fitting in free:
        click.echo(f"Free {slot.date_text} {slot.time} {slot.doctor_id}: fits "
                   + ", ".join(str(entry["id"]) for entry in fitting))


def forward_text(entry):
    """', brings forward 12 (DD/MM/YYYY HH:MM)' for an entry naming a live later appointment, else ''."""
    if not entry["forward_date"]:
        return ""
    return f", brings forward {entry['appointment_id']} ({format_date(entry['forward_date'])} {entry['forward_time']})"


@waitlist.command("remove")
@db_option
@click.argument("entry_id")
@click.pass_context
def waitlist_remove(ctx, db_path, entry_id):
    """Take an entry off the waiting list.

    Example:

    \b
        agenda waitlist remove 3
    """
    with clinic_at(ctx, db_path) as clinic:
        end_waiting(clinic, entry_id, "removed", "cli")
    click.echo(f"Removed waiting list entry {entry_id}.")
