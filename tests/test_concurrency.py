"""Racing requests against a real waitress server on 127.0.0.1 ("Booking", "Moving"): 50 at once.

Each test starts its own server on an ephemeral loopback port, sends a bounded number
of requests with a time-out, and stops the server itself.
"""

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import example, given, settings, strategies as st
from webtest.http import StopableWSGIServer

import _agenda.domain.staff
from _agenda.domain.staff import CHECKS_BURST, CHECKS_KEPT, PasswordGate

from conftest import send, sign, valid_dni
from openapi_contract import CONTRACT

RACERS = 50


def race(calls):
    """Start every call at the same moment; return their (status, body) answers."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait(timeout=10)
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls, timeout=60))


def patients(api, count):
    return [api.new_patient(nif=valid_dni(10_000_000 + n), phone=f"6{n:08d}") for n in range(count)]


def test_concurrent_bookings_of_one_slot_give_exactly_one_201(api, server):
    body = {"date": "24/11/2026", "time": "09:30", "doctorId": "MARTIN"}
    answers = race([lambda p=p: send(server, "POST", "/appointments", {**body, "patientId": p})
                    for p in patients(api, RACERS)])
    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] + [409] * (RACERS - 1), answers
    assert all(payload["error"]["code"] == "SLOT_NOT_AVAILABLE" for status, payload in answers if status == 409)
    live = api.db().execute("SELECT count(*) FROM appointments WHERE status != 'cancelled'").fetchone()[0]
    assert live == 1


def test_concurrent_retries_of_one_booking_all_get_the_same_id(api, server):
    body = {"date": "24/11/2026", "time": "10:00", "doctorId": "MARTIN", "patientId": api.new_patient()}
    answers = race([lambda: send(server, "POST", "/appointments", body)] * 12)
    assert {status for status, _ in answers} == {201}
    assert len({payload["appointmentId"] for _, payload in answers}) == 1


def test_concurrent_moves_onto_one_slot_give_exactly_one_winner(api, server):
    people = patients(api, RACERS)
    days = ("24/11/2026", "26/11/2026", "27/11/2026", "30/11/2026", "01/12/2026", "02/12/2026", "03/12/2026",
            "04/12/2026", "07/12/2026", "09/12/2026", "10/12/2026", "11/12/2026", "14/12/2026")
    target = {"newDate": "27/11/2026", "newTime": "09:00"}
    slots = [(day, time_text) for day in days for time_text in ("09:00", "09:30", "10:00", "10:30")
             if (day, time_text) != ("27/11/2026", "09:00")]
    booked = [api.book(person, date=day, time=time_text) for person, (day, time_text) in zip(people, slots)]
    assert len(booked) == RACERS
    answers = race([lambda a=a: send(server, "PUT", f"/appointments/{a}", target) for a in booked])
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] + [409] * (RACERS - 1), answers
    on_target = api.db().execute("SELECT count(*) FROM appointments WHERE date = '2026-11-27' AND time = '09:00'"
                                 " AND status != 'cancelled'").fetchone()[0]
    assert on_target == 1


def test_request_scheme_signs_the_path_and_query_exactly_as_sent_through_waitress(api, server):
    target = "/appointments?date=24%2F11%2F2026&centerId=C1"
    signature = sign(b"", method="GET", target=target)
    request = urllib.request.Request(server + target, headers={"X-Signature": signature})
    with urllib.request.urlopen(request, timeout=20) as response:
        answer = response.read()
        CONTRACT.check("GET", target, response.status, dict(response.headers), answer)
        assert response.status == 200 and json.loads(answer) == {"data": []}
    decoded = "/appointments?date=24/11/2026&centerId=C1"  # what a proxy that re-encodes would forward
    request = urllib.request.Request(server + decoded, headers={"X-Signature": signature})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=20)
    assert refused.value.code == 401
    CONTRACT.check("GET", decoded, 401, dict(refused.value.headers), refused.value.read())


def desk_login(base_url, name, password, answer=False):
    """POST /desk/login as a browser would (the login form's token matched by its cookie): the status, or
    with `answer` (status, Retry-After, page text); the session cookie's value is kept on the function."""
    body = urllib.parse.urlencode({"csrf": "t" * 32, "name": name, "password": password}).encode()
    request = urllib.request.Request(base_url + "/desk/login", data=body, method="POST", headers={
        "Cookie": "agenda_login=" + "t" * 32, "Content-Type": "application/x-www-form-urlencoded"})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            status, headers, text = response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        status, headers, text = error.code, error.headers, error.read().decode()
    return (status, headers.get("Retry-After"), text) if answer else status


def desk_session(base_url, name, password):
    """The desk cookie of a new session (a login that must succeed)."""
    body = urllib.parse.urlencode({"csrf": "t" * 32, "name": name, "password": password}).encode()
    request = urllib.request.Request(base_url + "/desk/login", data=body, method="POST", headers={
        "Cookie": "agenda_login=" + "t" * 32, "Content-Type": "application/x-www-form-urlencoded"})
    try:
        urllib.request.build_opener(NoRedirect).open(request, timeout=30)
    except urllib.error.HTTPError as error:
        assert error.code == 303, error.code
        return [value.split(";")[0] for value in error.headers.get_all("Set-Cookie") if "agenda_desk=" in value][0]
    raise AssertionError("no session")


def desk_get(base_url, path, cookie):
    """GET a desk page with a session cookie: the status."""
    request = urllib.request.Request(base_url + path, headers={"Cookie": cookie})
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_wrong_passwords_in_flight_never_undo_the_lock_and_the_right_one_stays_out(api, threads):
    """Many wrong passwords at once through waitress: the fifth locks the name, no failure in flight
    unlocks it, and the right password is refused while the lock lasts ("Desk accounts and sessions")."""
    api.app.accounts.add_staff("ana", "correct horse battery")
    api.app.accounts.gate = PasswordGate(at_once=8, per_second=100, burst=100)  # every one of them checked
    httpd = StopableWSGIServer.create(api.app, host="127.0.0.1", threads=threads)
    try:
        assert httpd.wait(), "the server did not start"
        url = httpd.application_url.rstrip("/")
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(lambda n: desk_login(url, "ana", f"wrong {n}"), range(40), timeout=120))
            rights = list(pool.map(lambda n: desk_login(url, "ana", "correct horse battery"), range(8), timeout=60))
    finally:
        httpd.shutdown()
    assert sorted(statuses) == [401] * 4 + [429] * 36 and rights == [429] * 8  # four fail, then locked
    locked_until, failures = api.db().execute("SELECT locked_until, failures FROM login_failures").fetchone()
    assert locked_until is not None and failures == 5
    assert api.db().execute("SELECT count(*) FROM events WHERE action = 'staff.locked'").fetchone()[0] == 1


class FrozenClock:
    """A monotonic clock that moves only when told."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize("threads", [1, 4])
def test_a_login_flood_is_refused_at_once_past_the_bound_and_open_sessions_and_the_caller_go_on(api, threads):
    """Logins past the process's bound on password checks are answered 429 with Retry-After, their
    scrypt never run; a receptionist already in and the caller are served meanwhile ("Login flood")."""
    api.app.accounts.add_staff("ana", "correct horse battery")
    clock = FrozenClock()
    api.app.accounts.gate = PasswordGate(clock=clock)  # the defaults, with time standing still
    checked = []
    matches = _agenda.domain.staff.password_matches
    httpd = StopableWSGIServer.create(api.app, host="127.0.0.1", threads=threads)
    try:
        assert httpd.wait(), "the server did not start"
        url = httpd.application_url.rstrip("/")
        session = desk_session(url, "ana", "correct horse battery")
        _agenda.domain.staff.password_matches = lambda *args: checked.append(1) or matches(*args)
        with ThreadPoolExecutor(max_workers=8) as pool:
            flood = [pool.submit(desk_login, url, f"name{n}", "wrong password", True) for n in range(60)]
            desk_day = pool.submit(desk_get, url, "/desk/day", session)
            caller = pool.submit(send, url, "GET", "/availabilities?doctorId=MARTIN&date=24/11/2026")
            answers = [future.result(timeout=120) for future in flood]
            assert desk_day.result(timeout=60) == 200 and caller.result(timeout=60)[0] == 200
        checked_in_flood = len(checked)
        clock.now += 60  # a minute later the bound has room again
        assert desk_login(url, "ana", "correct horse battery") == 303
    finally:
        _agenda.domain.staff.password_matches = matches
        httpd.shutdown()
    refused = [answer for answer in answers if answer[0] == 429]
    assert checked_in_flood == 60 - len(refused) <= CHECKS_BURST - CHECKS_KEPT - 1  # the session's login took one
    assert {answer[0] for answer in answers} <= {401, 429}
    assert all(retry == "60" and "un minuto" in text for _, retry, text in refused)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.floats(min_value=0, max_value=3),
                                st.sampled_from(["enter", "enter", "lane a", "lane b", "leave"])), max_size=80),
       at_once=st.integers(1, 3), per_second=st.integers(1, 5), burst=st.integers(1, 12), kept=st.integers(0, 12))
@example(steps=[(0, "enter"), (0, "enter")], at_once=2, per_second=3, burst=2, kept=0)  # 2/3 s refills 1.999...
def test_the_bound_on_password_checks_holds_at_once_and_per_second(steps, at_once, per_second, burst, kept):
    """Never more than at_once checks running for a stranger (one more for a lane), never more granted over
    any stretch of time than the burst plus the rate times its length, strangers never the kept tokens,
    and after a quiet burst/rate seconds a stranger gets the burst less the kept, the lanes the rest."""
    kept = min(kept, burst)
    clock = FrozenClock()
    gate, running, granted, strangers = PasswordGate(at_once, per_second, burst, clock=clock, kept=kept), 0, [], []
    for pause, action in steps:
        clock.now += pause
        if action != "leave" and gate.enter(None if action == "enter" else action):
            running += 1
            granted.append(clock.now)
            assert running <= at_once + (action != "enter")
            strangers += [clock.now] if action == "enter" else []
        elif action == "leave" and running:
            gate.leave()
            running -= 1
    for times, most in ((granted, burst), (strangers, burst - kept)):
        for first, start in enumerate(times):
            for last in range(first, len(times)):
                assert last - first + 1 <= most + per_second * (times[last] - start) + 1e-9
    for _ in range(running):
        gate.leave()
    clock.now += burst / per_second
    for _ in range(burst - kept):
        assert gate.enter()
        gate.leave()
    assert not gate.enter()
    for lane in range(kept):  # a lane of its own each, its bucket full
        assert gate.enter(("fresh", lane))
        gate.leave()
    assert not gate.enter(("fresh", "another"))
