"""The patients' page's bounds (docs/design.md, "Patients book themselves"): per address (IPv6 by /64), per e-mail
and per NIF, on bookings waiting for their confirmation and on messages sent in a day; the clinic's ceiling; the
cap a doctor and day. Each counted in SQL by keyed hashes, never what was typed; none of them ever refuses the
caller, nor a patient who already holds a link."""

import datetime as dt
import itertools

import pytest

from _agenda.domain.web_booking import confirm_booking, request_booking, web_times
from _agenda.domain.web_requests import address_text, BOUNDS
from _agenda.values.refusals import ClinicError

from conftest import valid_dni
from test_web_booking import ask, last_request, token_for, WEB

# Martín's free times the page offers, Tuesday to the next Tuesday (Wednesday is his holiday)
TIMES = [(day, time_text) for day in ("2026-11-24", "2026-11-26", "2026-11-27", "2026-11-30", "2026-12-01")
         for time_text in ("09:00", "09:30", "10:00", "10:30")]
LOOSE = {"web_pending_per_day": 10}


def asker():
    """ask() for a new slot and patient each call, with what `fixed` names kept."""
    numbers = itertools.count(1)

    def next_ask(**fixed):
        n = next(numbers)
        day, time_text = TIMES[n - 1]
        return ask(**{"day": day, "time": time_text, "nif": valid_dni(600 + n), "email": f"p{n}@example.es",
                      **fixed})
    return next_ask


def busy(clinic, asked, address):
    with pytest.raises(ClinicError) as refused:
        request_booking(clinic, asked, address)
    assert refused.value.code == "WEB_BUSY"


def test_an_ipv6_address_counts_by_its_64_and_an_ipv4_one_whole():
    assert address_text("2001:db8:1:2:aaaa::1") == address_text("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert address_text("2001:db8:1:3::1") != address_text("2001:db8:1:2::1")
    assert address_text("::ffff:192.0.2.7") == address_text("192.0.2.7") == "192.0.2.7"


def test_bookings_waiting_from_one_64_are_bounded_and_another_64_is_not_held_back(make_api):
    web, next_ask = make_api(**WEB, **LOOSE), asker()
    per_address = next(bound for bound in BOUNDS if bound.column == "address_key").pending
    for n in range(per_address):
        request_booking(web.app.clinic, next_ask(), f"2001:db8:1:2::{n + 1:x}")
    busy(web.app.clinic, next_ask(), "2001:db8:1:2:ffff::1")
    request_booking(web.app.clinic, next_ask(), "2001:db8:1:3::1")


@pytest.mark.parametrize("same", ["email", "nif"])
def test_bookings_waiting_for_one_e_mail_or_one_nif_are_bounded_whatever_the_address(make_api, same):
    web, next_ask = make_api(**WEB, **LOOSE), asker()
    fixed = {"email": "Rosa@Example.es"} if same == "email" else {"nif": valid_dni(501)}
    bound = next(bound for bound in BOUNDS if bound.column == f"{same}_key")
    for n in range(bound.pending):
        request_booking(web.app.clinic, next_ask(**(fixed if n == 0 or same == "nif" else
                                                   {"email": "rosa@example.ES"})), f"198.51.100.{n}")
    busy(web.app.clinic, next_ask(**fixed), "203.0.113.9")


def test_messages_in_a_day_are_bounded_though_each_was_confirmed_and_a_confirmation_never_is(make_api, clock):
    web, next_ask = make_api(**WEB, **LOOSE), asker()
    daily = next(bound for bound in BOUNDS if bound.column == "email_key").daily
    tokens = []
    for n in range(daily):
        request_booking(web.app.clinic, next_ask(email="rosa@example.es"), f"198.51.100.{n}")
        tokens.append(token_for(web, last_request(web)["appointment_id"]))
        if n < daily - 1:
            assert confirm_booking(web.app.clinic, tokens[-1]) == "confirmed"
    busy(web.app.clinic, next_ask(email="rosa@example.es"), "203.0.113.9")
    assert confirm_booking(web.app.clinic, tokens[-1]) == "confirmed"  # a link held is never refused
    clock.moment += dt.timedelta(days=1)
    request_booking(web.app.clinic, next_ask(email="rosa@example.es"), "203.0.113.9")  # a day later


def test_the_clinic_s_ceiling_holds_the_page_and_never_the_caller(make_api):
    web, next_ask = make_api(**WEB, **LOOSE, web_pending_ceiling=2), asker()
    for n in range(2):
        request_booking(web.app.clinic, next_ask(), f"198.51.100.{n}")
    busy(web.app.clinic, next_ask(), "203.0.113.9")
    assert web.book(web.new_patient(), date="01/12/2026", time="10:30")  # the caller books as ever
    assert confirm_booking(web.app.clinic, token_for(web, last_request(web)["appointment_id"])) == "confirmed"
    request_booking(web.app.clinic, next_ask(), "203.0.113.9")  # one confirmed: room again


def test_a_doctor_s_day_at_its_cap_is_offered_no_more_and_refused(make_api):
    web = make_api(**WEB, web_pending_per_day=2)
    for n, time_text in enumerate(("09:00", "09:30")):
        request_booking(web.app.clinic, ask(time=time_text, nif=valid_dni(700 + n), email=f"c{n}@example.es"),
                        f"198.51.100.{n}")
    week = dict(web_times(web.app.clinic, center_id="C1", speciality_id="MG", doctor_id="MARTIN", type_id=None,
                          week_start=dt.date(2026, 11, 24)))
    assert week["2026-11-24"] == [] and week["2026-11-26"]
    with pytest.raises(ClinicError) as refused:  # not offered: the page offers other times
        request_booking(web.app.clinic, ask(time="10:00", nif=valid_dni(702), email="c2@example.es"), "203.0.113.9")
    assert refused.value.rule == "taken"
    request_booking(web.app.clinic, ask(day="2026-11-26", nif=valid_dni(702), email="c2@example.es"), "203.0.113.9")


def test_what_the_bounds_count_keeps_nothing_typed(make_api):
    web = make_api(**WEB)
    request_booking(web.app.clinic, ask(), "2001:db8:1:2::17")
    row = dict(last_request(web))
    kept = " ".join(str(value) for value in row.values())
    for typed in ("rosa", "2001:db8", valid_dni(501), "611222333"):
        assert typed not in kept.lower()
    assert all(len(row[key]) == 64 for key in ("address_key", "email_key", "nif_key"))
