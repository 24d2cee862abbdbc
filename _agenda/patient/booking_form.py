"""The booking page's signed hidden fields ("The booking page"): what the patient chose travels in the form itself,
no cookie, each form's fields signed with an HMAC bound to its step and its time, so a changed or stale form is
refused; and the patient's details as typed, read and checked before the one request that books."""

import datetime as dt
import hashlib
import hmac
import json
import secrets
from typing import NamedTuple

from ..values.refusals import ClinicError, invalid
from ..values.fields import normalise_nif, parse_date, parse_email, parse_phone

FORM_MINUTES = 60  # a form of the page's is good this long after it was written
CHOICES = ("centro", "especialidad", "medico", "tipo", "idioma")  # what every signed form carries
SLOT = ("dia", "hora", "medico_hueco")  # and the details' form, the time chosen
SIGNED = {"horas": CHOICES, "datos": CHOICES + SLOT}  # each step's signed fields
TYPED = ("nombre", "apellidos", "nacimiento", "nif", "telefono", "correo", "aseguradora")  # the details' inputs
# The domain's field names of a refusal, as the details' form names its inputs.
INPUT_OF = {"name": "nombre", "surname": "apellidos", "birthDate": "nacimiento", "birth_date": "nacimiento",
            "nif": "nif", "guardianNif": "nif", "phone": "telefono", "email": "correo", "insuranceId": "aseguradora",
            "insurance_id": "aseguradora", "insurance": "aseguradora", "privacy": "privacidad"}
FIELD_OF = {"nombre": "name", "apellidos": "surname", "nacimiento": "birthDate", "nif": "nif", "telefono": "phone",
            "correo": "email"}


class FormRefused(Exception):
    """A signed form that cannot be taken: `why` is "tampered" (a field changed, another step's form, no
    signature) or "expired" (older than FORM_MINUTES)."""

    def __init__(self, why):
        super().__init__(why)
        self.why = why


def form_key(secret):
    """The key the page signs its forms with, from the clinic's secret (none: a key of this process's only)."""
    seed = secret.encode() if secret else secrets.token_bytes(32)
    return hmac.new(seed, b"agenda web booking forms", hashlib.sha256).digest()


def mac(key, step, issued, values):
    """HMAC-SHA256 (hex) of the step's name, the moment written and the step's signed values, in their order."""
    message = json.dumps([step, issued, [values.get(name, "") for name in SIGNED[step]]], ensure_ascii=True)
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def signed(key, step, values, now):
    """The hidden fields of a form of `step`: its values, the moment it was written, and their signature."""
    issued = str(int(now.timestamp()))
    fields = {name: values.get(name) or "" for name in SIGNED[step]}
    return {**fields, "emitido": issued, "firma": mac(key, step, issued, fields)}


def verified(key, step, forms, now):
    """{name: value} of a form of `step` as it was signed; FormRefused when it was changed, is another step's,
    or is older than FORM_MINUTES."""
    values = {name: forms.get(name) or "" for name in SIGNED[step]}
    issued, given = forms.get("emitido") or "", forms.get("firma") or ""
    if not issued.isdigit() or not hmac.compare_digest(given.encode(), mac(key, step, issued, values).encode()):
        raise FormRefused("tampered")
    age = now.timestamp() - int(issued)
    if age > FORM_MINUTES * 60 or age < -60:
        raise FormRefused("expired")
    return values


class Typed(NamedTuple):
    """The patient's details as typed (every one kept to show again), and whether the privacy text was accepted."""
    values: dict
    child: bool
    privacy: bool


def typed(forms):
    """The details' form as typed: each input's text (stripped), the child's box, the privacy box."""
    return Typed({name: (forms.get(name) or "").strip() for name in TYPED}, forms.get("menor") == "1",
                 forms.get("privacidad") == "1")


SHAPES = {"nacimiento": lambda text: parse_date(text, "birthDate"), "nif": normalise_nif, "telefono": parse_phone,
          "correo": parse_email}  # each input's own check, the booking's


def checked(details):
    """The birth date as an ISO day; ClinicError naming every input left blank, the birth date, NIF, phone or
    e-mail not of its shape and the privacy text not accepted, all at once, by the booking's own field names and
    words (the rest the booking checks), so that a patient is not refused twice for what one look could say."""
    parts = [("INVALID_REQUEST", "required", FIELD_OF[name]) for name in TYPED[:-1] if not details.values[name]]
    shaped = {}
    for name, parse in SHAPES.items():
        if details.values[name]:
            try:
                shaped[name] = parse(details.values[name])
            except ClinicError as error:
                parts += error.parts
    birth = shaped.get("nacimiento")
    if not details.privacy:
        parts.append(("INVALID_REQUEST", "web_privacy", "privacy"))
    if parts:
        raise invalid("the booking's details are incomplete", parts=parts)
    return birth.isoformat()


def parsed_slot(text):
    """(day, "HH:MM", doctor id) of a time's radio value "YYYY-MM-DD HH:MM DOCTOR", or None when it is not one."""
    day, _, rest = (text or "").partition(" ")
    time_text, _, doctor = rest.partition(" ")
    try:
        dt.date.fromisoformat(day)
        dt.time.fromisoformat(time_text)
    except ValueError:
        return None
    return (day, time_text, doctor) if len(time_text) == 5 and doctor and " " not in doctor else None
