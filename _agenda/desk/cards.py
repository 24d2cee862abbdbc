"""The appointment's card ("The patient's link"): reception prints it for a patient booked at the counter, with the
patient's own link as a QR code (segno) and as text; a new link for each card."""

import datetime as dt

import bottle
import segno

from ..domain.appointments import visits_told
from ..domain.identity import identity
from ..domain.links import card_link
from ..web.answers import clinic
from .shared import desk_page, desk_source


def public_root():
    """Where patients reach /cita: the clinic's --public-url, else this desk's own address (said on the card)."""
    configured = clinic().settings.public_url.rstrip("/")
    return configured or "{}://{}".format(*bottle.request.urlparts[:2]), bool(configured)


def desk_card(appointment_id):
    """POST: a new link for the appointment and its printable card: the day, time and center, the link as a QR."""
    token = card_link(clinic(), appointment_id)
    visit = visits_told(clinic().conn(), [appointment_id])[0]
    person = identity(clinic(), visit["patient_id"], desk_source(), "appointment")
    root, configured = public_root()
    address = f"{root}/cita/{token}"
    qr = segno.make(address, error="m").svg_data_uri(scale=5, border=2)
    return desk_page("card", visit=visit, name=person["name"], address=address, qr=qr, configured=configured,
                     shows=clinic().settings.mail_shows, clinic_name=clinic().settings.clinic_name,
                     weekday=lambda text: dt.date.fromisoformat(text).weekday())
