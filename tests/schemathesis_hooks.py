"""Schemathesis hooks for tests/test_schemathesis.py (loaded with SCHEMATHESIS_HOOKS).

- before_call: signs every request that schemathesis authenticates, over the exact bytes
  sent. schemathesis.toml gives the `signature` scheme the placeholder SIGN_ME as its key,
  so schemathesis knows the requests it authenticates (`ignored_auth` then probes without
  it and with a wrong one); a requests auth hook, which runs after requests has prepared
  the body and the URL, puts the real signature in place of the placeholder only. A request
  sent without the header, or with another value, goes as it is, to be refused with 401.
- flatmap_body: lets about half the generated new patients carry a real DNI, phone and
  birth date, and half the bookings and moves a slot that the fuzz clinic really has, so
  that sequences go past 400 and 409 into move, confirm and cancel. Only a body that
  openapi.json allows is changed: a body generated to break it (negative_data_rejection
  wants it refused) is sent as it is. Drawn through Hypothesis, so a replayed case draws
  the same values.
- positive_data_refused_only_for_what_no_schema_states: a check that narrows the 400s that
  schemathesis.toml lets a request the schema allows get, to the codes and messages of the
  rules no schema can state (a checksum, a date in the future).
- a_booked_appointment_is_never_404: an appointmentId the server gave out (in the path or
  in the confirm body) is never answered 404; cancelled is 410 or 409, never gone.
"""

import datetime as dt
import hashlib
import hmac
import os

import requests
import schemathesis
from hypothesis import strategies as st

from openapi_contract import CONTRACT

DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


SIGN_ME = "SIGN_ME"  # [auth.openapi.signature] in schemathesis.toml


class Signer(requests.auth.AuthBase):
    """X-Signature, scheme `request` (design.md, "Signatures"): METHOD, path with query, and
    body, as sent; only in place of the placeholder."""

    def __init__(self, secret):
        self.secret = secret.encode("utf-8")

    def __call__(self, prepared):
        if prepared.headers.get("X-Signature") != SIGN_ME:
            return prepared
        body = prepared.body or b""
        if isinstance(body, str):
            body = body.encode("latin-1")  # what http.client does with a str body
        message = prepared.method.encode() + b"\n" + prepared.path_url.encode("latin-1") + b"\n" + body
        prepared.headers["X-Signature"] = hmac.new(self.secret, message, hashlib.sha256).hexdigest()
        return prepared


SIGNER = Signer(os.environ["AGENDA_SECRET"])


@schemathesis.hook
def before_call(context, case, kwargs):
    kwargs["auth"] = SIGNER


def real_dnis():
    return st.integers(10_000_000, 99_999_999).map(lambda number: f"{number}{DNI_LETTERS[number % 23]}")


def real_patients():
    """nif, phone and birthDate that design.md's "Patients" accepts: a DNI with its letter, a
    Spanish mobile, a birth date before today."""
    phones = st.integers(0, 999_999).map(lambda number: f"612{number:06d}")
    births = st.dates(dt.date(1920, 1, 1), dt.date.today() - dt.timedelta(days=1)).map(
        lambda day: day.strftime("%d/%m/%Y"))
    return st.fixed_dictionaries({"nif": real_dnis(), "phone": phones, "birthDate": births})


def real_slots():
    """(date, time) of MARTIN's hours in the fuzz clinic: every day, 08:00 to 20:00, 15 minutes."""
    tomorrow = dt.date.today() + dt.timedelta(days=1)
    days = st.integers(0, 80).map(lambda n: (tomorrow + dt.timedelta(days=n)).strftime("%d/%m/%Y"))
    times = st.integers(8 * 4, 20 * 4 - 1).map(lambda quarter: f"{quarter // 4:02d}:{quarter % 4 * 15:02d}")
    return st.tuples(days, times)


BODY_SCHEMAS = {"POST /patients": "NewPatient", "POST /appointments": "NewAppointment",
                "PUT /appointments/{appointmentId}": "Move"}


@schemathesis.hook
def flatmap_body(context, body):
    label = context.operation.label if context.operation is not None else ""
    if label not in BODY_SCHEMAS or not isinstance(body, dict) or CONTRACT.validate(
            f"/components/schemas/{BODY_SCHEMAS[label]}", body):
        return st.just(body)
    if label == "POST /patients":
        real = real_patients().map(lambda fields: {**body, **fields})
    elif label == "POST /appointments":
        real = real_slots().map(lambda slot: {**body, "date": slot[0], "time": slot[1], "doctorId": "MARTIN"})
    else:
        real = real_slots().map(lambda slot: {**body, "newDate": slot[0], "newTime": slot[1]})
    return st.one_of(st.just(body), real)


# The only refusals a request that openapi.json allows may get: rules no schema can state
# (schemathesis.toml lets positive_data_acceptance take a 400 on four operations; this check
# narrows that 400 to these codes and messages, each part of a message naming several fields).
# A phone is not among them: openapi.json states the phone's pattern, and the server takes every phone it matches.
UNSTATABLE = {
    "INVALID_NIF": ("check its digits and letter",),  # a DNI's or NIE's letter: a checksum
    "INVALID_REQUEST": ("is in the future", "is not a real date", "check its digits and letter",
                        "doctorId or specialityId is required",
                        "endDate is before startDate", "date (day list) or nif or phone (patient search) is required"),
}


@schemathesis.check
def positive_data_refused_only_for_what_no_schema_states(ctx, response, case):
    """A 400 to a request the schema allows names only a rule of UNSTATABLE."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    error = response.json().get("error", {})
    needles = UNSTATABLE.get(error.get("code"), ())
    parts = str(error.get("message", "")).split("; ")
    if not all(any(needle in part for needle in needles) for part in parts):
        raise AssertionError(f"{case.operation.label}: a request openapi.json allows was refused for a rule it "
                             f"could state: {error}")
    return None


BOOKED = set()  # every appointmentId a 201 of POST /appointments gave out in this run


@schemathesis.check
def a_booked_appointment_is_never_404(ctx, response, case):
    """No id the server gave out is later unknown to it (appointments are never deleted)."""
    label = case.operation.label
    if label == "POST /appointments" and response.status_code == 201:
        BOOKED.add(str(response.json()["appointmentId"]))
        return None
    if response.status_code != 404:
        return None
    if label == "POST /appointments/confirm":
        asked = case.body.get("appointmentId") if isinstance(case.body, dict) else None
    else:
        asked = (case.path_parameters or {}).get("appointmentId")
    if asked is not None and str(asked) in BOOKED:
        raise AssertionError(f"{label}: 404 for appointment {asked}, which POST /appointments booked")
    return None
