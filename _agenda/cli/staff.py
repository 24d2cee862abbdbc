"""Reception's accounts at the command line: `agenda staff add|role|password|remove|list|unlock`
("Desk accounts and sessions", "Roles")."""

import sys
from contextlib import contextmanager

import click

from ..values.fields import clinic_moment
from ..values.settings import DEFAULT_TZ
from ..values.printing import printable
from ..domain.staff import Accounts, ROLES
from .root import cli, cli_zone, clinic_at, db_option, tz_option


@contextmanager
def accounts_at(ctx, db_path, tz=DEFAULT_TZ):
    """The staff Accounts over an existing database for one command; a refusal becomes one `Error:` line."""
    with clinic_at(ctx, db_path, tz) as clinic:
        yield Accounts(clinic.db, clinic.settings, clinic.clock)


@cli.group()
def staff():
    """Reception's accounts for the desk (/desk), apart from the caller's secret.

    Example:

    \b
        agenda staff add ana --db /var/lib/agenda/clinic.db
    """


def new_password():
    """A password from a hidden prompt (twice), or the first line of standard input when it is not a terminal."""
    if sys.stdin.isatty():
        return click.prompt("Password (not shown)", hide_input=True, confirmation_prompt=True)
    try:
        return sys.stdin.readline().rstrip("\n")
    except UnicodeDecodeError:
        raise click.ClickException("the password on standard input is not UTF-8 text") from None


role_choice = click.Choice(ROLES, case_sensitive=False)


@staff.command("add")
@db_option
@click.option("--role", type=role_choice, default="reception", show_default=True,
              help="reception: the day's work, closures included; admin: also doctors, exports, erasure, records")
@click.argument("name")
@click.pass_context
def staff_add(ctx, db_path, role, name):
    """Add a staff account with its role; its password from a hidden prompt, or from standard input.

    Example:

    \b
        agenda staff add ana --db /var/lib/agenda/clinic.db
        agenda staff add marta --role admin
    """
    with accounts_at(ctx, db_path) as accounts:
        accounts.add_staff(name, new_password(), source="cli", role=role)
        click.echo(f"Added {name} ({role.lower()}): they log in at /desk.")


@staff.command("role")
@db_option
@click.argument("name")
@click.argument("role", type=role_choice)
@click.pass_context
def staff_set_role(ctx, db_path, name, role):
    """Give a staff account another role: reception or admin.

    Example:

    \b
        agenda staff role ana admin
    """
    with accounts_at(ctx, db_path) as accounts:
        accounts.set_role(name, role, source="cli")
        click.echo(f"{name} is now {role.lower()}; their open desk sessions take it at the next page.")


@staff.command("password")
@db_option
@click.argument("name")
@click.pass_context
def staff_password(ctx, db_path, name):
    """Set a new password (it also ends their sessions and lifts a lock).

    Example:

    \b
        agenda staff password ana
    """
    with accounts_at(ctx, db_path) as accounts:
        accounts.set_staff_password(name, new_password(), source="cli")
        click.echo(f"New password set for {name}; their desk sessions are closed.")


@staff.command("remove")
@db_option
@click.argument("name")
@click.pass_context
def staff_remove(ctx, db_path, name):
    """Remove a staff account and end its sessions.

    Example:

    \b
        agenda staff remove ana
    """
    with accounts_at(ctx, db_path) as accounts:
        accounts.remove_staff(name, source="cli")
        click.echo(f"Removed {name}.")


@staff.command("list")
@db_option
@tz_option
@click.pass_context
def staff_list(ctx, db_path, tz):
    """The staff accounts, when each was added, and where a name is locked from.

    Example:

    \b
        agenda staff list
    """
    zone = cli_zone(tz)
    with accounts_at(ctx, db_path, tz) as accounts:
        for member in accounts.staff():
            locks = "".join(f"  locked from {printable(lock['source'])} until {clinic_moment(lock['locked_until'], zone)}"
                            for lock in member["locks"])
            click.echo(f"{member['name']}  {member['role']}  added {clinic_moment(member['created_at'], zone)}{locks}")


@staff.command("unlock")
@db_option
@click.argument("name")
@click.pass_context
def staff_unlock(ctx, db_path, name):
    """Lift the locks that failed logins put on a name, from every address, keeping its password.

    Example:

    \b
        agenda staff unlock ana
    """
    with accounts_at(ctx, db_path) as accounts:
        lifted = accounts.unlock(name, source="cli")
        click.echo(f"Unlocked {name}: {lifted} address(es) cleared; they can log in at /desk again.")
