"""The desk's twins at the command line, every staff action for scripts and an admin without a
browser: the day sheet (`day`), `book` (a sobrecita, a series), `move`, `cancel`, `confirm`, closures
(`closed`) and doctors (`doctor retire`, their calendar feeds)."""

import functools

import click

from ..values.refusals import ClinicError
from ..values.fields import clinic_moment, format_date
from ..values.printing import plural, printable, sheet_csv
from ..domain.counter import squeeze_in
from ..domain.feeds import feeds, new_feed, revoke_feed
from ..domain.series import book_series, NEAREST_DAYS, parse_every, preview_series
from .root import (cli, cli_date, cli_language, cli_now, cli_reader, cli_text, cli_time, cli_translator,
                  cli_zone, clinic_at, counted, db_option, desk_rules_options, tz_option)
from ..domain.appointments import live_appointments, read_appointment
from ..domain.availability import clinic_centers
from ..domain.booking import Visit
from ..domain.changes import book_appointment, cancel_appointment, confirm_appointment, move_appointment
from ..domain.closures import add_closure, coming_closures, remove_closure
from ..domain.doctors import retire_doctor
from ..domain.registry import find_patient


def day_sheet(clinic, day, center_id=None, t=None):
    """A day's live appointments, each doctor's together, by time: what `agenda day` prints (recorded)."""
    try:
        appointments = live_appointments(clinic, cli_reader(), days=[day.isoformat()], center_id=center_id)
    except ClinicError:
        t = t or cli_translator("en")
        known = ", ".join(center["id"] for center in clinic_centers(clinic)) or t("cli_no_centers")
        raise click.ClickException(t("cli_no_center", center=center_id, known=known)) from None
    return sorted(appointments, key=lambda a: (a["doctor_name"], a["doctor_id"], a["start"]))


@cli.command()
@db_option
@click.argument("date", required=False)
@click.option("--center", "center_id", default=None, help="Only this center's appointments (its id).")
@click.option("--csv", "as_csv", is_flag=True, help="Comma-separated values, for a spreadsheet.")
@tz_option
@click.pass_context
def day(ctx, db_path, date, center_id, as_csv, tz):
    """The day sheet: each doctor's appointments with time, patient, phone, status, arrival, reason.

    DATE as the clinic writes it, DD/MM/YYYY (default: today). Cancelled
    appointments are left out; status is booked, confirmed or unanswered, then
    who arrived (and when), was seen or did not come. In Spanish when LC_ALL,
    LC_MESSAGES, LANG or LANGUAGE asks for it (the CSV's columns stay English).

    Example:

    \b
        agenda day 23/11/2026 --center CENTRO --csv > monday.csv
    """
    language = cli_language()
    zone = cli_zone(tz, language)
    when = cli_date(date, "", language) if date else cli_now(ctx).astimezone(zone).date()
    with clinic_at(ctx, db_path, tz, language=language) as clinic:
        rows = day_sheet(clinic, when, center_id, cli_translator(language))
    click.echo(day_sheet_csv(rows) if as_csv else day_sheet_text(rows, when, center_id, zone, cli_translator(language)),
               nl=False)


def day_sheet_csv(rows):
    return sheet_csv(["date", "time", "end", "doctor_id", "doctor", "center", "patient", "phone", "reason", "status",
                      "type", "holds"],
                     ([format_date(row["date"]), row["start"], row["end"], row["doctor_id"], row["doctor_name"],
                       row["center_id"], row["patient_name"], row["phone"], row["reason"], row["status"],
                       row["type_name"], row["holds"]] for row in rows))


def what_it_is(row):
    """An appointment's type, the pause after it and what it holds, for a terminal: '' when it has none."""
    parts = [row["type_name"] or "", f"+{row['pause']} min" if row["pause"] else "", row["holds"] or ""]
    return " · ".join(part for part in parts if part)


def attendance_words(row, zone, t):
    """What happened at the counter, for the day sheet: 'arrived 09:52', 'seen', 'no-show', or ''."""
    if row["attendance"] == "arrived" and row["arrived_at"]:
        return t("sheet_arrived", time=clinic_moment(row["arrived_at"], zone, "%H:%M"))
    return t(f"sheet_{row['attendance']}") if row["attendance"] in ("seen", "no_show") else ""


def day_sheet_text(rows, when, center_id, zone, t):
    """The day sheet for a terminal in t's language: every value made printable, so each appointment keeps
    its one line; a column of arrivals and no-shows when the day has any."""
    where = t("sheet_center", center=printable(center_id)) if center_id else t("sheet_all_centers")
    lines = [f"{t('weekday_names')[when.weekday()]} {format_date(when)}, {where}: "
             f"{counted(t, 'count_appointments', len(rows))}"]
    width = max((len(printable(row["patient_name"])) for row in rows), default=0)
    status_width = max(len(t(f"sheet_{status}")) for status in ("booked", "confirmed", "unanswered"))
    marks = [attendance_words(row, zone, t) for row in rows]
    mark_width = max(map(len, marks), default=0)
    doctor = None
    for row, mark in zip(rows, marks):
        if row["doctor_id"] != doctor:
            doctor = row["doctor_id"]
            lines.append(f"\n{printable(row['doctor_name'])} ({printable(doctor)})")
        center = f"  [{printable(row['center_id'])}]" if row["center_id"] and not center_id else ""
        what = f"  ({printable(what_it_is(row))})" if what_it_is(row) else ""
        attended = f"{mark:<{mark_width}}  " if mark_width else ""
        lines.append(f"  {row['start']}  {printable(row['patient_name']):<{width}}  {printable(row['phone']):<13}  "
                     f"{t('sheet_' + row['status']):<{status_width}}  {attended}{printable(row['reason']) or '-'}"
                     f"{what}{center}")
    return "\n".join(lines) + "\n"


def appointment_line(a):
    """One appointment on one line of a terminal."""
    what = f" ({what_it_is(a)})" if what_it_is(a) else ""
    return printable(f"{a['id']}: {format_date(a['date'])} {a['start']}{what} {a['doctor_name']} "
                     f"({a['doctor_id']}){' at ' + a['center_id'] if a['center_id'] else ''}, {a['patient_name']} "
                     f"{a['phone'] or ''}{' (squeezed in)' if a.get('squeezed') else ''}").rstrip()


@cli.command()
@db_option
@click.option("--doctor", "doctor_id", required=True, help="The doctor's id.")
@click.option("--date", "date_text", required=True, help="The day, DD/MM/YYYY.")
@click.option("--time", "time_text", required=True, help="The slot's start, HH:MM.")
@click.option("--patient", "patient_id", default=None, help="The patient's id (or give --nif).")
@click.option("--nif", default=None, help="The patient's NIF, when the id is not at hand.")
@click.option("--center", "center_id", default=None, help="The center (where the doctor works then).")
@click.option("--reason", default=None, callback=cli_text, help="Why the patient comes.")
@click.option("--insurance", "insurance_id", default=None,
              help="The patient's insurance (required when the doctor takes only some).")
@click.option("--type", "type_id", default=None,
              help="The visit type (its id; default: the doctor's first there, or one slot of their grid).")
@click.option("--accept-overlap", is_flag=True,
              help="Book it over the same patient's other visit on purpose (recorded); never with --squeeze.")
@click.option("--squeeze", is_flag=True,
              help="A sobrecita: an urgent patient at a taken or off-grid time of the doctor's hours, marked.")
@click.option("--every", default=None, help="A series: a session every 1w, 2w, 10d... (with --count).")
@click.option("--count", type=click.IntRange(2, 60), default=None, help="How many sessions in the series.")
@click.option("--nearest", is_flag=True,
              help="In a series, take the nearest free slot (that day or the 7 after) where the time asked is not.")
@click.option("--what-fits", is_flag=True,
              help="In a series, book the dates that fit and list the others to call (else a date with no slot "
                   "books nothing).")
@click.option("--dry-run", is_flag=True, help="In a series, print each date's slot and book nothing.")
@tz_option
@desk_rules_options
@click.pass_context
def book(ctx, db_path, doctor_id, date_text, time_text, patient_id, nif, center_id, reason, insurance_id, type_id,
         accept_overlap, squeeze, every, count, nearest, what_fits, dry_run, tz, desk_min_notice, desk_horizon):
    """Book a free slot for a patient, by the desk's rules (a walk-in now, up to 18 months ahead); with
    --squeeze, squeeze an urgent patient in at any time of the doctor's hours; with --every and --count,
    a series of sessions, booked together only when every date is free (or --nearest, or --what-fits:
    the dates that fit, numbered over those, the others listed to call).

    Example:

    \b
        agenda book --doctor MARTIN --date 24/11/2026 --time 09:30 --nif 12345678Z --reason Revisión
        agenda book --doctor MUNOZ --date 25/11/2026 --time 09:30 --nif 12345678Z --type FIS-VALORACION
        agenda book --doctor MARTIN --date 24/11/2026 --time 09:40 --nif 12345678Z --squeeze --reason Urgente
        agenda book --doctor MUNOZ --date 25/11/2026 --time 09:30 --nif 12345678Z --every 1w --count 16 --dry-run
        agenda book --doctor MUNOZ --date 10/12/2026 --time 09:30 --nif 12345678Z --every 1w --count 8 --what-fits
    """
    day, start = cli_date(date_text, "--date"), cli_time(time_text, "--time")
    if (every is None) != (count is None) or (every and squeeze):
        raise click.ClickException("a series needs both --every and --count, and is never squeezed in")
    if accept_overlap and (squeeze or every):
        raise click.ClickException("--accept-overlap is for one ordinary booking: never a sobrecita nor a series")
    with clinic_at(ctx, db_path, tz, desk_min_notice_minutes=desk_min_notice,
                   desk_horizon_months=desk_horizon) as clinic:
        if patient_id is None:
            if nif is None:
                raise click.ClickException("give the patient: --patient ID or --nif NIF")
            patient_id = find_patient(clinic, nif, cli_reader())["id"]
        if every:
            return book_series_here(clinic, patient_id=patient_id, doctor_id=doctor_id, first=day, time_text=start,
                                    every_days=parse_every(every), count=count, center_id=center_id,
                                    insurance_id=insurance_id, reason=reason, nearest=nearest, fits=what_fits,
                                    dry_run=dry_run,
                                    speciality_id=type_id)
        booking = functools.partial(squeeze_in, clinic) if squeeze else functools.partial(book_appointment, clinic)
        booked = booking(Visit(patient_id, doctor_id, type_id, center_id, insurance_id=insurance_id, reason=reason,
                               accept_overlap=accept_overlap), day=day, time_text=start, source="cli")
        click.echo(f"Booked {appointment_line(read_appointment(clinic, booked, cli_reader(), 'change'))}")


def book_series_here(clinic, *, dry_run, **series):
    """The series' preview, a line a date; then, unless a dry run, the series booked (or why not) and the dates
    it left out, to call."""
    sessions = preview_series(clinic, **{key: series[key] for key in ("doctor_id", "first", "time_text",
                                                                      "every_days", "count", "center_id",
                                                                      "speciality_id", "patient_id")})
    for n, session in enumerate(sessions, 1):
        slot = session.slot or session.nearest
        said = "free" if session.slot else f"{session.reason}; nearest " + (
            f"{slot.date_text} {slot.time}" if slot else f"none within {NEAREST_DAYS} days")
        click.echo(f"{n:2d}/{len(sessions)} {format_date(session.day.isoformat())} {series['time_text']}: {said}")
    if dry_run:
        return click.echo("Dry run: nothing booked.")
    visit = Visit(series["patient_id"], series["doctor_id"], series["speciality_id"], series["center_id"],
                  insurance_id=series["insurance_id"], reason=series["reason"])
    series_id, booked, left = book_series(clinic, visit, source="cli", **{
        key: series[key] for key in ("first", "time_text", "every_days", "count", "nearest", "fits")})
    click.echo(f"Booked series {series_id}: {plural(len(booked), 'appointment')} "
               f"({', '.join(appointment_id for appointment_id, _ in booked)}).")
    if left:
        click.echo(f"Left out, to call the patient: {', '.join(format_date(day) for day in left)}.")


@cli.command()
@db_option
@click.argument("appointment_id")
@click.option("--date", "date_text", required=True, help="The new day, DD/MM/YYYY.")
@click.option("--time", "time_text", required=True, help="The new start, HH:MM.")
@click.option("--doctor", "doctor_id", default=None, help="Another doctor of the same speciality.")
@click.option("--center", "center_id", default=None, help="Another center of the doctor's.")
@click.option("--accept-overlap", is_flag=True,
              help="Move it over the same patient's other visit on purpose (recorded).")
@tz_option
@desk_rules_options
@click.pass_context
def move(ctx, db_path, appointment_id, date_text, time_text, doctor_id, center_id, accept_overlap, tz,
         desk_min_notice, desk_horizon):
    """Move an appointment to another free slot, by the desk's rules, keeping its visit type and length; it
    is no longer confirmed.

    Example:

    \b
        agenda move 123 --date 25/11/2026 --time 10:00
    """
    day, start = cli_date(date_text, "--date"), cli_time(time_text, "--time")
    with clinic_at(ctx, db_path, tz, desk_min_notice_minutes=desk_min_notice,
                   desk_horizon_months=desk_horizon) as clinic:
        move_appointment(clinic, appointment_id, day=day, time_text=start, doctor_id=doctor_id, center_id=center_id,
                         source="cli", accept_overlap=accept_overlap)
        click.echo(f"Moved {appointment_line(read_appointment(clinic, appointment_id, cli_reader(), 'change'))}")


@cli.command()
@db_option
@click.argument("appointment_id")
@click.option("--reason", default="cancelled by the clinic", show_default=True, callback=cli_text,
              help="Why it is cancelled.")
@tz_option
@click.pass_context
def cancel(ctx, db_path, appointment_id, reason, tz):
    """Cancel an appointment; its slot is free again (nothing is deleted).

    Example:

    \b
        agenda cancel 123 --reason "the patient phoned the front desk"
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        line = appointment_line(read_appointment(clinic, appointment_id, cli_reader(), 'change'))
        cancel_appointment(clinic, appointment_id, reason=reason, source="cli")
        click.echo(f"Cancelled {line}")


@cli.command()
@db_option
@click.argument("appointment_id")
@tz_option
@click.pass_context
def confirm(ctx, db_path, appointment_id, tz):
    """Mark an appointment confirmed (the patient said they will come).

    Example:

    \b
        agenda confirm 123
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        state = confirm_appointment(clinic, appointment_id, True, source="cli")
        click.echo(f"{'Already confirmed' if state == 'already_confirmed' else 'Confirmed'} "
                   f"{appointment_line(read_appointment(clinic, appointment_id, cli_reader(), 'change'))}")


@cli.group()
def closed():
    """Holidays and absences: list, add and remove closures; their slots leave availability at once.

    Example:

    \b
        agenda closed add --from 24/12/2026 --to 26/12/2026 --reason Navidad
    """


@closed.command("list")
@db_option
@tz_option
@click.pass_context
def closed_list(ctx, db_path, tz):
    """The closures from today on: id, who, where, days, hours, reason.

    Example:

    \b
        agenda closed list --db /var/lib/agenda/clinic.db
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        for c in coming_closures(clinic):
            hours = f" {c['start_time']}-{c['end_time']}" if c["start_time"] else ""
            click.echo(printable(f"{c['id']}: {c['doctor_name'] or 'everyone'} at {c['center_id'] or 'every center'}, "
                                 f"{format_date(c['date_from'])} to {format_date(c['date_to'])}{hours}: {c['reason']}"))


@closed.command("add")
@db_option
@click.option("--doctor", "doctor_id", default=None, help="The doctor's id (default: everyone).")
@click.option("--center", "center_id", default=None, help="The center (default: every center).")
@click.option("--from", "first", required=True, help="The first day, DD/MM/YYYY.")
@click.option("--to", "last", default=None, help="The last day (default: the first).")
@click.option("--hours", default=None, help="Only these hours, HH:MM-HH:MM (default: the whole day).")
@click.option("--reason", default="", callback=cli_text, help="Why: a holiday, a course, an absence.")
@tz_option
@click.pass_context
def closed_add(ctx, db_path, doctor_id, center_id, first, last, hours, reason, tz):
    """Close a doctor or everyone, at a center or all, for days or hours; lists the bookings it covers.

    Example:

    \b
        agenda closed add --doctor MARTIN --from 30/11/2026 --hours 09:00-11:00 --reason Congreso
    """
    start = end = None
    if hours:
        start_text, _, end_text = hours.partition("-")
        start, end = cli_time(start_text, "--hours"), cli_time(end_text, "--hours")
    with clinic_at(ctx, db_path, tz) as clinic:
        added = add_closure(clinic, reader=cli_reader(), doctor_id=doctor_id, center_id=center_id,
                            first=cli_date(first, "--from"),
                            last=cli_date(last, "--to") if last else None, start=start, end=end,
                            reason=reason, source="cli")
        click.echo(f"Added closure {added['id']}; it covers {plural(len(added['covered']), 'booked appointment')}"
                   f"{': call to rebook' if added['covered'] else '.'}")
        for appointment in added["covered"]:
            click.echo(f"  {appointment_line(appointment)}")


@closed.command("remove")
@db_option
@click.argument("closure_id")
@tz_option
@click.pass_context
def closed_remove(ctx, db_path, closure_id, tz):
    """Remove a closure (one typed on the wrong date): its slots are offered again.

    Example:

    \b
        agenda closed remove 12
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        remove_closure(clinic, closure_id, source="cli")
        click.echo(f"Removed closure {closure_id}.")


@cli.group()
def doctor():
    """Doctors: retire one who leaves (no slot offered from a date on); each one's calendar feed.

    Example:

    \b
        agenda doctor retire RUIZ --from 01/01/2027
    """


@doctor.command("feed")
@db_option
@click.argument("doctor_id")
@click.option("--revoke", is_flag=True, help="End the doctor's feed: its address answers 404 from now on.")
@click.option("--url", "public_url", default="https://AGENDA-HOST", envvar="AGENDA_PUBLIC_URL", show_envvar=True,
              help="The address the clinic's proxy serves Agenda at, to print the whole feed address.")
@click.pass_context
def doctor_feed(ctx, db_path, doctor_id, revoke, public_url):
    """Make a secret calendar address of DOCTOR_ID's coming appointments (iCalendar), for their
    phone's calendar; run it again to make a new one (the old one stops), --revoke to end it.

    The address is all the access it gives: give it to the doctor only. What each event
    shows is `agenda run --feed-shows` (by default the time, center and number, never a
    NIF or a phone). `agenda doctor feeds` lists the doctors who have one.

    Example:

    \b
        agenda doctor feed MARTIN --url https://agenda.clinicasol.es
    """
    with clinic_at(ctx, db_path) as clinic:
        if revoke:
            done = revoke_feed(clinic, doctor_id, "cli")
            click.echo(f"{doctor_id}'s feed {'ended: its address answers 404' if done else 'did not exist'}.")
            return
        token = new_feed(clinic, doctor_id, "cli")
    click.echo(f"{doctor_id}'s calendar feed (any earlier address of it no longer works):\n"
               f"  {public_url.rstrip('/')}/feeds/{token}.ics\n"
               "Give it to the doctor only: whoever has it reads the agenda it shows.")


@doctor.command("feeds")
@db_option
@click.pass_context
def doctor_feeds(ctx, db_path):
    """List the doctors who have a calendar feed, and since when (never the address).

    Example:

    \b
        agenda doctor feeds
    """
    with clinic_at(ctx, db_path) as clinic:
        listed, zone = feeds(clinic), clinic.tz
    for doctor_id, name, made in listed:
        click.echo(printable(f"{doctor_id}: {name}, since {clinic_moment(made, zone)}"))
    if not listed:
        click.echo("No doctor has a feed; make one with `agenda doctor feed DOCTOR`.")


@doctor.command("retire")
@db_option
@click.argument("doctor_id")
@click.option("--from", "first", required=True, help="The first day the doctor no longer sees patients.")
@tz_option
@click.pass_context
def doctor_retire(ctx, db_path, doctor_id, first, tz):
    """Offer no slot of DOCTOR_ID from a date on; lists the appointments left after it, to rebook.

    They are never cancelled by this: call each patient and move or cancel it.

    Example:

    \b
        agenda doctor retire RUIZ --from 01/01/2027
    """
    with clinic_at(ctx, db_path, tz) as clinic:
        left = retire_doctor(clinic, doctor_id, cli_date(first, "--from"), source="cli", reader=cli_reader())
        click.echo(f"{doctor_id} offers no slot from {first} on; {plural(len(left), 'appointment')} left to rebook"
                   f"{':' if left else '.'}")
        for appointment in left:
            click.echo(f"  {appointment_line(appointment)}")
