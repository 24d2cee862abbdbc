"""Every desk action has a CLI twin (docs/design.md, "Staff desk"): book, move, cancel,
confirm, closed add|remove|list, doctor retire, staff add|remove|list|password|unlock; each obeys
the clinic's rules and is recorded with source cli."""

import datetime as dt

import pytest
from click.testing import CliRunner

import agenda
from _agenda.domain.staff import PasswordGate
from _agenda.storage.replication import without_password
from conftest import MONDAY, Clock


@pytest.fixture
def runner(db_path):
    return CliRunner(env={"AGENDA_DB": str(db_path), "AGENDA_SECRET": None, "AGENDA_SECRET_FILE": None})


def invoke(runner, *args, now=MONDAY, **kwargs):
    return runner.invoke(agenda.cli, [str(arg) for arg in args], obj={"now": Clock(now)}, catch_exceptions=False,
                         **kwargs)


def sources(api, entity):
    return [row[0] for row in api.db().execute("SELECT source FROM events WHERE entity = ? ORDER BY id", (entity,))]


def test_book_move_confirm_and_cancel_from_the_command_line(api, runner):
    api.new_patient()
    booked = invoke(runner, "book", "--doctor", "MARTIN", "--date", "24/11/2026", "--time", "09:30",
                    "--nif", "12345678z", "--reason", "Revisión")
    assert booked.exit_code == 0, booked.output
    assert "Booked 1: 24/11/2026 09:30 Lucía Martín (MARTIN) at C1, Ana García +34612345678" in booked.output
    assert invoke(runner, "move", "1", "--date", "24/11/2026", "--time", "10:00").exit_code == 0
    assert "Confirmed 1" in invoke(runner, "confirm", "1").output
    assert "Already confirmed" in invoke(runner, "confirm", "1").output
    cancelled = invoke(runner, "cancel", "1", "--reason", "phoned the front desk")
    assert cancelled.exit_code == 0 and "Cancelled 1: 24/11/2026 10:00" in cancelled.output
    assert sources(api, "appointment") == ["cli"] * 4
    assert api.db().execute("SELECT cancel_reason FROM appointments").fetchone()[0] == "phoned the front desk"


@pytest.mark.parametrize("args, message", [
    (["book", "--doctor", "MARTIN", "--date", "24/11/2026", "--time", "10:07", "--patient", "1"], "not on the doctor's grid"),
    (["book", "--doctor", "MARTIN", "--date", "24/11/2026", "--time", "09:00"], "--patient ID or --nif NIF"),
    (["book", "--doctor", "MARTIN", "--date", "31/02/2026", "--time", "09:00", "--patient", "1"], "not a date"),
    (["book", "--doctor", "NOBODY", "--date", "24/11/2026", "--time", "09:00", "--patient", "1"], "no doctor"),
    (["move", "99", "--date", "24/11/2026", "--time", "09:00"], "no appointment"),
    (["cancel", "abc"], "no appointment"),
    (["closed", "add", "--from", "24/11/2026", "--hours", "11:00-10:00"], "hours need a start and a later end"),
    (["closed", "remove", "99"], "no closure"),
    (["doctor", "retire", "NOBODY", "--from", "01/01/2027"], "no doctor"),
])
def test_a_refusal_is_one_clear_line_and_changes_nothing(api, runner, db_path, args, message):
    api.new_patient()
    from conftest import table_rows
    before = table_rows(db_path)
    result = invoke(runner, *args)
    assert result.exit_code == 1 and message in result.output and result.output.startswith("Error: "), result.output
    assert len(result.output.splitlines()) == 1
    assert table_rows(db_path) == before


def test_closures_are_added_listed_and_removed_and_list_the_bookings_they_cover(api, runner):
    api.book(api.new_patient(), time="09:00")
    added = invoke(runner, "closed", "add", "--doctor", "MARTIN", "--from", "24/11/2026", "--hours", "09:00-10:00",
                   "--reason", "Congreso")
    assert added.exit_code == 0 and "covers 1 booked appointment: call to rebook" in added.output
    assert "24/11/2026 09:00 Lucía Martín" in added.output
    times = [slot["time"] for slot in api.get("/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]
    assert times == ["10:00", "10:30"]
    listed = invoke(runner, "closed", "list").output
    closure_id = next(line.split(":")[0] for line in listed.splitlines() if "Congreso" in line)
    assert "Lucía Martín at every center, 24/11/2026 to 24/11/2026 09:00-10:00: Congreso" in listed
    assert invoke(runner, "closed", "remove", closure_id).exit_code == 0
    times = [slot["time"] for slot in api.get("/availabilities?doctorId=MARTIN&date=24/11/2026").json["data"]]
    assert times == ["09:30", "10:00", "10:30"]
    assert sources(api, "closure") == ["cli", "cli"]


def test_retiring_a_doctor_lists_what_is_left_and_cancels_nothing(api, runner):
    later = api.book(api.new_patient(), date="30/11/2026", time="09:00")
    result = invoke(runner, "doctor", "retire", "MARTIN", "--from", "30/11/2026")
    assert result.exit_code == 0 and "1 appointment left to rebook:" in result.output
    assert f"{later}: 30/11/2026 09:00" in result.output
    assert api.get(f"/appointments/{later}").json["extraData"]["status"] == "booked"
    assert api.get("/availabilities?doctorId=MARTIN&startDate=30/11/2026&endDate=04/12/2026").json["data"] == []
    assert sources(api, "doctor") == ["cli"]


def test_staff_accounts_from_the_command_line(api, runner, clock):
    added = invoke(runner, "staff", "add", "ana", input="correct horse battery\n")
    assert added.exit_code == 0, added.output
    assert "correct horse battery" not in added.output
    assert invoke(runner, "staff", "add", "ana", input="another password\n").exit_code == 1
    assert invoke(runner, "staff", "add", "bad name!", input="correct horse battery\n").exit_code == 1
    assert invoke(runner, "staff", "add", "luis", input="short\n").exit_code == 1  # 8 characters at least
    accounts = api.app.accounts
    token = accounts.log_in("ana", "correct horse battery").token
    stored = api.db().execute("SELECT password FROM staff WHERE name = 'ana'").fetchone()[0]
    assert stored.startswith("scrypt$") and "correct horse" not in stored
    assert "ana  reception  added 23/11/2026 08:00" in invoke(runner, "staff", "list").output
    admin = invoke(runner, "staff", "add", "marta", "--role", "admin", input="correct horse battery\n")
    assert admin.exit_code == 0 and "Added marta (admin)" in admin.output
    assert invoke(runner, "staff", "role", "ana", "ADMIN").exit_code == 0
    assert "ana  admin  added" in invoke(runner, "staff", "list").output
    wrong = invoke(runner, "staff", "role", "ana", "doctor")
    assert wrong.exit_code == 2 and "'reception', 'admin'" in wrong.output.replace("\n", " ")
    assert invoke(runner, "staff", "role", "ana", "reception").exit_code == 0
    assert invoke(runner, "staff", "remove", "marta").exit_code == 0
    assert invoke(runner, "staff", "password", "ana", input="a new long password\n").exit_code == 0
    assert accounts.desk_session(token) is None  # the new password ends the old sessions
    with pytest.raises(agenda.ClinicError):
        accounts.log_in("ana", "correct horse battery")
    token = accounts.log_in("ana", "a new long password").token
    assert invoke(runner, "staff", "remove", "ana").exit_code == 0
    assert accounts.desk_session(token) is None and invoke(runner, "staff", "list").output == ""
    assert invoke(runner, "staff", "remove", "ana").exit_code == 1
    assert sources(api, "staff") == ["cli"] * 7


def test_a_lock_shows_in_the_staff_list_until_it_ends_or_staff_unlock_lifts_it(api, runner, clock):
    invoke(runner, "staff", "add", "ana", input="correct horse battery\n")
    api.app.accounts.gate = PasswordGate(per_second=100, burst=100)  # more logins than the bound allows at once
    for source in ("203.0.113.9", "198.51.100.7"):
        for _ in range(5):
            with pytest.raises(agenda.ClinicError):
                api.app.accounts.log_in("ana", "wrong", source)
    listed = invoke(runner, "staff", "list").output
    assert "locked from 203.0.113.9 until 23/11/2026 08:15" in listed and "from 198.51.100.7" in listed
    assert "locked" not in invoke(runner, "staff", "list", now=MONDAY + dt.timedelta(minutes=16)).output
    with pytest.raises(agenda.ClinicError):
        api.app.accounts.log_in("ana", "correct horse battery", "203.0.113.9")
    unlocked = invoke(runner, "staff", "unlock", "ana")
    assert unlocked.exit_code == 0 and "2 address(es) cleared" in unlocked.output
    assert "locked" not in invoke(runner, "staff", "list").output
    assert api.app.accounts.log_in("ana", "correct horse battery", "203.0.113.9")
    assert sources(api, "staff")[-1] == "cli"
    missing = invoke(runner, "staff", "unlock", "nobody")
    assert missing.exit_code == 1 and "no staff account 'nobody'" in missing.output


def test_the_twins_book_by_the_desks_rules_and_staff_names_ignore_case(api, runner):
    api.new_patient()

    def tuesday_after(days):  # MARTIN works on Tuesdays
        day = (MONDAY + dt.timedelta(days=days)).date()
        return (day + dt.timedelta(days=(1 - day.weekday()) % 7)).strftime("%d/%m/%Y")

    def booking(day, time_text="09:00"):
        return ["book", "--doctor", "MARTIN", "--date", day, "--time", time_text, "--patient", "1"]
    # a follow-up in six months: beyond the caller's 90 days, inside the desk's 18 months
    assert invoke(runner, *booking(tuesday_after(180))).exit_code == 0
    refused = invoke(runner, *booking(tuesday_after(560)))
    assert refused.exit_code == 1 and "beyond the booking horizon (18 months)" in refused.output
    assert invoke(runner, *booking(tuesday_after(560)), env={"AGENDA_DESK_HORIZON": "24"}).exit_code == 0
    noticed = invoke(runner, *booking(tuesday_after(7), "10:00"), env={"AGENDA_DESK_MIN_NOTICE": str(60 * 24 * 30)})
    assert noticed.exit_code == 1 and "minimum notice" in noticed.output
    assert invoke(runner, "staff", "add", "Ana", input="correct horse battery\n").exit_code == 0
    assert invoke(runner, "staff", "add", "ana", input="correct horse battery\n").exit_code == 1
    assert api.app.accounts.log_in(" ANA ", "correct horse battery")


def test_a_replica_url_is_shown_without_its_password():
    assert without_password("sftp://bob:hunter2@nas.local/agenda") == "sftp://bob:***@nas.local/agenda"
    assert without_password("sftp://bob@nas.local/agenda") == "sftp://bob@nas.local/agenda"
    assert without_password("file:///mnt/agenda") == "file:///mnt/agenda"
