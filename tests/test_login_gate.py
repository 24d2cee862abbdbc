"""Who gets to a password check when logins pour in (docs/design.md, "Login flood"): the bound on checks,
the lanes of known browsers and of the clinic's network through it, and the refusals that cost no scrypt
and no write, all with clocks that move only when told; then through the desk, a flood from elsewhere
that keeps strangers out and lets a member of staff on her own browser in."""

import datetime as dt
import hashlib

import pytest
import webtest

from agenda import ClinicError, Settings
from _agenda.domain import staff
from _agenda.domain.staff import (Allowance, CHECKS_AT_ONCE, CHECKS_BURST, CHECKS_KEPT, LANE_BURST, LOCK_AFTER,
                                  PasswordGate)

from conftest import table_rows
from test_concurrency import FrozenClock
from test_desk import log_in, PASSWORD


def spent_by_strangers(gate):
    """Let strangers take every token they may: what is left is the trusted lanes' alone."""
    taken = 0
    while gate.enter():
        gate.leave()
        taken += 1
    return taken


def test_strangers_spend_the_bucket_but_not_the_kept_tokens_which_a_lane_still_takes():
    clock = FrozenClock()
    gate = PasswordGate(clock=clock)
    assert spent_by_strangers(gate) == CHECKS_BURST - CHECKS_KEPT
    for lane in ("ana's browser", "kika's browser", "recepcion's browser", "the clinic's PC"):
        assert gate.enter(("device", lane))  # a lane gets through while strangers are refused
        gate.leave()
    assert not gate.enter() and not gate.enter(("device", "one more"))  # the whole bound is spent
    clock.now += 0.5  # one token back, at 2 a second: a lane's, not a stranger's
    assert not gate.enter()
    assert gate.enter(("device", "one more"))


def test_a_lane_has_a_small_bucket_of_its_own_and_spent_it_is_a_stranger():
    clock = FrozenClock()
    gate = PasswordGate(clock=clock, kept=CHECKS_BURST)  # every token kept: strangers get none
    for _ in range(LANE_BURST):
        assert gate.enter(("device", "a"))
        gate.leave()
    assert not gate.enter(("device", "a"))  # one browser cannot spend the others' tokens
    assert gate.enter(("device", "b"))
    gate.leave()
    clock.now += 20  # a lane's token a 20 seconds
    assert gate.enter(("device", "a"))
    gate.leave()
    assert not gate.enter(("device", "a"))


def test_strangers_run_at_most_two_checks_at_once_and_a_lane_one_more():
    gate = PasswordGate(clock=FrozenClock())
    for _ in range(CHECKS_AT_ONCE):
        assert gate.enter()
    assert not gate.enter()  # strangers' checks at once
    assert gate.enter(("device", "a"))  # a lane's, beside them
    assert not gate.enter(("device", "b"))
    gate.leave()
    assert not gate.enter() and gate.enter(("device", "b"))
    for _ in range(CHECKS_AT_ONCE + 1):
        gate.leave()
    with pytest.raises(ValueError):
        gate.leave()


@pytest.fixture
def accounts(api):
    """The test app's accounts with ana, recepcion and kika, their gate on a clock that stands still."""
    for name in ("ana", "recepcion", "kika"):
        api.app.accounts.add_staff(name, PASSWORD)
    api.app.accounts.gate = PasswordGate(clock=FrozenClock())
    return api.app.accounts


def refused(accounts, *args, code):
    with pytest.raises(ClinicError) as raised:
        accounts.log_in(*args)
    assert raised.value.code == code
    return raised.value


class Watched:
    """The statements a login runs on this thread's connection and the scrypts it asks for."""

    def __init__(self, accounts, monkeypatch):
        self.statements, self.checks = [], []
        accounts.db.connection().set_trace_callback(self.statements.append)
        real = staff.password_matches
        monkeypatch.setattr(staff, "password_matches", lambda *args: self.checks.append(1) or real(*args))

    def writes(self):
        return [statement for statement in self.statements
                if statement.split()[0].upper() in ("BEGIN", "INSERT", "UPDATE", "DELETE", "REPLACE")]


def test_a_refused_login_runs_no_scrypt_and_writes_nothing(api, accounts, db_path, monkeypatch):
    device = accounts.log_in("ana", PASSWORD, "192.0.2.10").device
    accounts.gate = PasswordGate(clock=FrozenClock(), per_second=100, burst=100)
    for _ in range(LOCK_AFTER):
        with pytest.raises(ClinicError):
            accounts.log_in("kika", "wrong password", "203.0.113.9")
    accounts.gate = PasswordGate(clock=FrozenClock())
    spent_by_strangers(accounts.gate)
    before, watched = table_rows(db_path), Watched(accounts, monkeypatch)
    refused(accounts, "ana", PASSWORD, "198.51.100.7", code="LOGIN_BUSY")  # a stranger, past the bound
    refused(accounts, "kika", PASSWORD, "203.0.113.9", code="LOGIN_LOCKED")  # locked from there
    refused(accounts, "kika", PASSWORD, "203.0.113.9", device, code="LOGIN_LOCKED")  # a lane does not lift it
    refused(accounts, "nobody", "wrong", "198.51.100.7", "a forged device", code="LOGIN_BUSY")
    assert watched.checks == [] and watched.writes() == []
    assert table_rows(db_path) == before
    assert accounts.log_in("kika", PASSWORD, "192.0.2.10", device)  # her lock is from 203.0.113.9 only


def test_a_browser_earns_its_device_at_a_login_renewed_at_every_login_its_hash_alone_kept(api, accounts, clock):
    first = accounts.log_in("ana", PASSWORD, "192.0.2.10", None)
    rows = api.db().execute("SELECT token_hash, staff_name, created_at, last_login FROM desk_devices").fetchall()
    assert [tuple(row)[:2] for row in rows] == [(hashlib.sha256(first.device.encode()).hexdigest(), "ana")]
    clock.moment += dt.timedelta(days=2)
    second = accounts.log_in("kika", PASSWORD, "192.0.2.10", first.device)  # the same browser, another name
    (token_hash, name, created_at, last_login), = api.db().execute(
        "SELECT token_hash, staff_name, created_at, last_login FROM desk_devices").fetchall()
    assert token_hash == hashlib.sha256(second.device.encode()).hexdigest() and second.device != first.device
    assert name == "kika" and created_at == rows[0]["created_at"] < last_login
    assert accounts.known_device(first.device, clock()) is None  # the old token opens no lane
    third = accounts.log_in("ana", PASSWORD, "192.0.2.10", "a token made up")  # an unknown token: a new device
    assert api.db().execute("SELECT count(*) FROM desk_devices").fetchone()[0] == 2
    accounts.remove_staff("kika")  # the browser she last logged in on goes with her account
    assert [tuple(row) for row in api.db().execute("SELECT staff_name FROM desk_devices")] == [("ana",)]
    clock.moment += dt.timedelta(days=366)
    assert accounts.known_device(third.device, clock()) is None  # a year without a login
    fourth = accounts.log_in("ana", PASSWORD, "192.0.2.10", third.device)
    assert [row[0] for row in api.db().execute("SELECT token_hash FROM desk_devices")] == [
        hashlib.sha256(fourth.device.encode()).hexdigest()]  # the forgotten one gone, a new one made


def test_a_known_browser_is_let_in_while_strangers_are_refused(accounts):
    devices = {name: accounts.log_in(name, PASSWORD, "192.0.2.10").device for name in ("ana", "recepcion", "kika")}
    spent_by_strangers(accounts.gate)
    refused(accounts, "ana", PASSWORD, "192.0.2.10", code="LOGIN_BUSY")  # her own address, but no cookie
    for name, device in devices.items():
        assert accounts.log_in(name, PASSWORD, "192.0.2.10", device)


def test_five_failures_in_a_row_through_a_browser_take_its_lane_for_15_minutes(api, accounts, clock):
    """A stolen device cookie gives a few guesses, never a session, and then no lane; a name's lock stays
    per source address, the lane's or not."""
    device = accounts.log_in("ana", PASSWORD, "192.0.2.10").device
    accounts.gate = PasswordGate(clock=FrozenClock(), burst=100, kept=100, lane_burst=100)  # lanes only, roomy
    for name in ("ana", "recepcion", "kika", "nobody"):
        refused(accounts, name, "wrong password", "203.0.113.9", device, code="LOGIN_FAILED")
    device = accounts.log_in("ana", PASSWORD, "192.0.2.10", device).device  # a login clears the count
    for name in ("ana", "recepcion", "kika", "nobody"):
        refused(accounts, name, "wrong password", "203.0.113.9", device, code="LOGIN_FAILED")
    refused(accounts, "luis", "wrong password", "203.0.113.9", device, code="LOGIN_FAILED")  # the fifth
    refused(accounts, "ana", PASSWORD, "192.0.2.10", device, code="LOGIN_BUSY")  # no lane now
    clock.moment += dt.timedelta(minutes=16)
    device = accounts.log_in("ana", PASSWORD, "192.0.2.10", device).device
    for _ in range(LOCK_AFTER):
        with pytest.raises(ClinicError):
            accounts.log_in("kika", "wrong password", "203.0.113.9", device)
    assert [lock["source"] for lock in accounts.staff()[1]["locks"]] == ["203.0.113.9"]  # kika, from there only


def test_the_clinics_network_has_a_lane_for_a_new_pc(make_api):
    accounts = make_api(desk_network="192.168.1.0/24, 10.0.0.7").app.accounts
    accounts.add_staff("ana", PASSWORD)
    accounts.gate = PasswordGate(clock=FrozenClock())
    spent_by_strangers(accounts.gate)
    assert accounts.log_in("ana", PASSWORD, "192.168.1.23")
    assert accounts.log_in("ana", PASSWORD, "10.0.0.7")
    for elsewhere in ("192.168.2.1", "10.0.0.8", "unknown", "::1"):
        refused(accounts, "ana", PASSWORD, elsewhere, code="LOGIN_BUSY")
    with pytest.raises(ValueError, match="192.168.1.0/33"):
        Settings(desk_network="192.168.1.0/33")


def from_address(api, address):
    return webtest.TestApp(api.app, extra_environ={"REMOTE_ADDR": address})


def test_a_flood_from_elsewhere_lets_staff_on_their_own_browsers_in_and_keeps_the_rest_out(api, accounts):
    reception = {name: from_address(api, "192.0.2.10") for name in ("ana", "recepcion", "kika")}
    for name, browser in reception.items():
        assert log_in(browser, name=name).status_int == 303
        page = browser.get("/desk/day")
        page.forms[0 if page.forms[0].action == "/desk/logout" else 1].submit()  # logged out, the device kept
        assert "agenda_desk" not in browser.cookies and "agenda_device" in browser.cookies
    answers = [log_in(from_address(api, f"203.0.113.{n % 200 + 1}"), name=f"guess{n}", password="wrong").status_int
               for n in range(100)]
    assert answers.count(429) >= 100 - CHECKS_BURST
    for name, browser in reception.items():
        assert log_in(browser, name=name).status_int == 303, name
    new_pc = log_in(from_address(api, "192.0.2.11"), name="ana")
    assert new_pc.status_int == 429 and new_pc.headers["Retry-After"] == "60"
    assert "navegador" in new_pc.text  # the page says a browser that logged in before gets through


def test_the_device_cookie_is_the_desks_and_lasts_a_year(api, accounts):
    answer = log_in(webtest.TestApp(api.app))
    cookie, = [value for value in answer.headers.getall("Set-Cookie") if value.startswith("agenda_device=")]
    assert "HttpOnly" in cookie and "Path=/desk" in cookie and "samesite=strict" in cookie.lower()
    assert f"Max-Age={365 * 24 * 3600}" in cookie and "Secure" not in cookie


def test_an_allowance_keeps_a_bounded_map_however_many_keys_a_stranger_makes_up():
    """Past `kept` keys the full buckets and then the least lately spent are forgotten, down to half: each take
    stays cheap, and the latest spent are kept."""
    clock = FrozenClock()
    allowance = Allowance(3, 1 / 60, clock=clock, kept=100)
    for number in range(10_000):
        assert allowance.take(f"stranger {number}")
        assert len(allowance.buckets) <= 101
    for _ in range(3):
        assert allowance.take("latest")
    assert not allowance.take("latest")  # spent, and remembered as spent
