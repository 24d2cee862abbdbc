"""Schemathesis hooks for tests/test_schemathesis.py (loaded with SCHEMATHESIS_HOOKS).

- before_call: signs every request over the exact bytes sent. The signature is made by a
  requests auth hook, which runs after requests has prepared the body and the URL.
- flatmap_body: lets about half the generated new patients carry a real DNI, and half
  the bookings and moves a slot that the fuzz clinic really has, so that sequences go
  past 400 and 409 into move, confirm and cancel. Drawn through Hypothesis, so a replayed
  case draws the same values.
"""

import datetime as dt
import hashlib
import hmac
import os

import requests
import schemathesis
from hypothesis import strategies as st

DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


class Signer(requests.auth.AuthBase):
    """X-Signature, scheme `request` (D5): METHOD, path with query, and body, as sent."""

    def __init__(self, secret):
        self.secret = secret.encode("utf-8")

    def __call__(self, prepared):
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


def real_slots():
    """(date, time) of MARTIN's hours in the fuzz clinic: every day, 08:00 to 20:00, 15 minutes."""
    tomorrow = dt.date.today() + dt.timedelta(days=1)
    days = st.integers(0, 80).map(lambda n: (tomorrow + dt.timedelta(days=n)).strftime("%d/%m/%Y"))
    times = st.integers(8 * 4, 20 * 4 - 1).map(lambda quarter: f"{quarter // 4:02d}:{quarter % 4 * 15:02d}")
    return st.tuples(days, times)


@schemathesis.hook
def flatmap_body(context, body):
    label = context.operation.label if context.operation is not None else ""
    if not isinstance(body, dict):
        return st.just(body)
    if label == "POST /patients":
        real = real_dnis().map(lambda nif: {**body, "nif": nif})
    elif label == "POST /appointments":
        real = real_slots().map(lambda slot: {**body, "date": slot[0], "time": slot[1], "doctorId": "MARTIN"})
    elif label == "PUT /appointments/{appointmentId}":
        real = real_slots().map(lambda slot: {**body, "newDate": slot[0], "newTime": slot[1]})
    else:
        return st.just(body)
    return st.one_of(st.just(body), real)
