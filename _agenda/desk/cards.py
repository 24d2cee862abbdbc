"""The appointment's card ("The patient's link"): reception prints it for a patient booked at the counter, with the
patient's own link as a QR code (segno) and as text; a new link for each card."""

import bottle
import segno

from ..domain.appointments import visits_told
from ..domain.identity import identity
from ..domain.links import card_link
from ..web.answers import clinic, rooted
from ..words.texts import translator
from ..words.pages import visit_lines, visit_view
from .shared import desk_page, desk_source


def public_root():
    """Where patients reach /cita: the clinic's --public-url, else this desk's own address, after the clinic's
    prefix if any (said on the card)."""
    configured = clinic().settings.public_url.rstrip("/")
    return configured or "{}://{}".format(*bottle.request.urlparts[:2]) + rooted(""), bool(configured)


def desk_card(appointment_id):
    """POST: a new link for the appointment and its printable card: what the patient's messages say of the visit
    (the day, time, center, its address and what to bring), the link as a QR and as text, the center's phone."""
    token = card_link(clinic(), appointment_id)
    visit = visits_told(clinic().conn(), [appointment_id])[0]
    person = identity(clinic(), visit["patient_id"], desk_source(), "appointment")
    root, configured = public_root()
    address = f"{root}/cita/{token}"
    qr = segno.make(address, error="m").svg_data_uri(scale=5, border=2)
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    settings = clinic().settings
    return desk_page("card", lines=visit_lines(t, visit_view(visit, clinic().tz), settings.mail_shows),
                     name=person["name"], address=address, qr=qr, configured=configured,
                     phone=visit["center_phone"],
                     heading=settings.clinic_name or visit["center_name"] or t("the_clinic"))
