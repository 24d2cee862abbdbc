"""The patient's own link at /cita ("The patient's link"): `PATIENT_ROUTES`, the one table of its pages. Opening a
link shows one appointment and changes nothing; each action is a POST with the page's own CSRF token, bounded
per link and per address; no staff cookie, no signature, no JavaScript, the desk's CSP."""

import datetime as dt
import hashlib
import hmac
import logging
import secrets
import urllib.parse

import bottle

from ..values.refusals import ClinicError
from ..storage.shipped import read_data_file, TEMPLATES
from ..domain.links import (first_name, in_notice, link_cancel, link_confirm, link_hash, link_move, link_stop,
                            move_choices, opened)
from ..domain.staff import Allowance
from ..web.answers import request_id
from ..desk.pages import desk_template
from ..desk.texts import translator
from .messages import long_date, plain

log = logging.getLogger("agenda")
HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none';"
                                                                       " form-action 'self'; base-uri 'none'"}
DONE = {"confirmed": "link_confirmed_done", "cancelled": "link_cancelled_done", "moved": "link_moved_done"}


class Bounds:
    """What strangers and scanners may ask of /cita ("The patient's link"): views and wrong tokens per address,
    actions per link and per address; a view never spends a link's own allowance."""

    def __init__(self):
        self.views, self.misses = Allowance(60, 1.0), Allowance(20, 1 / 60)
        self.by_link, self.by_address = Allowance(10, 1 / 300), Allowance(30, 1 / 20)
        self.key = secrets.token_bytes(32)  # the pages' CSRF tokens: a form outlives no restart

    def csrf(self, token):
        return hmac.new(self.key, link_hash(token).encode(), hashlib.sha256).hexdigest()


BOUNDS = Bounds()


def clinic():
    return bottle.request.app.clinic


def address():
    return bottle.request.remote_addr or "?"


def page(template, status=200, language=None, **values):
    """A page of the link's, in the patient's language (else the browser's), with the link's headers."""
    language = language or preferred_language()
    for name, value in HEADERS.items():
        bottle.response.set_header(name, value)
    bottle.response.status = status
    t = translator(language)
    head = desk_template("link_head").render(t=t, lang=language)
    return desk_template(template).render(t=t, lang=language, head=head, **values)


def preferred_language():
    for part in bottle.request.environ.get("HTTP_ACCEPT_LANGUAGE", "").split(","):
        tag = part.split(";")[0].strip().lower()[:2]
        if tag in ("es", "en"):
            return tag
    return "es"


def gone(status=404):
    return page("link_message", status, key="link_gone" if status == 404 else "link_busy")


def found(token, stop=False):
    """The appointment the token opens, or None once a wrong token from this address was counted."""
    appointment = opened(clinic(), token, stop)
    if appointment is None:
        BOUNDS.misses.take(address())
    return appointment


def link_page(token):
    """GET: the appointment, the patient's first name only; nothing changes (a scanner may open it)."""
    if not BOUNDS.views.take(address()) or BOUNDS.misses.tokens(address(), BOUNDS.misses.clock()) < 1:
        return gone(429)
    appointment = found(token)
    if appointment is None:
        return gone()
    person = person_of(appointment)
    if appointment["status"] == "cancelled":
        return page("link_message", language=person["language"], key="link_cancelled")
    done = bottle.request.query.get("hecho")
    return shown(token, appointment, person, DONE.get(done))


def person_of(appointment):
    name, language = first_name(clinic(), appointment)
    return {"name": plain(name), "language": language}


def shown(token, appointment, person, done=None, error=None, status=200):
    t, settings = translator(person["language"]), clinic().settings
    starts = appointment["starts"]
    lines = [(t("mail_when"), long_date(t, starts.date())), (t("mail_at"), f"{starts:%H:%M}")]
    for key, label in (("center_name", "mail_where"), ("center_address", "mail_address"), ("bring", "mail_bring")):
        if appointment[key]:
            lines.append((t(label), plain(appointment[key])))
    if settings.mail_shows == "doctor":
        lines.append((t("mail_doctor"), plain(appointment["doctor_name"])))
        if appointment["type_name"]:
            lines.append((t("mail_type"), plain(appointment["type_name"])))
    lines.append((t("link_status"), t(f"link_{appointment['status']}")))
    choices = move_choices(clinic(), appointment) if not appointment["to_call"] else []
    return page("link", status, language=person["language"], lines=lines, name=person["name"], token=token,
                csrf=BOUNDS.csrf(token), done=done, error=error, appointment=appointment,
                late=not in_notice(clinic(), appointment), hours=settings.cancel_notice_hours,
                phone=t("link_phone", phone=plain(appointment["center_phone"])) if appointment["center_phone"] else "",
                clinic_name=plain(settings.clinic_name) or t("the_clinic"), choices=[
                    (f"{slot.date} {slot.time}", f"{long_date(t, dt.date.fromisoformat(str(slot.date)))}, {slot.time}")
                    for slot in choices[:40]])


def link_action(token, action):
    """POST confirm, cancel or move: the page's CSRF token, within the link's and the address's bounds, through
    the one door as the patient; then back to the page, which says what was done."""
    if not BOUNDS.by_address.take(address()) or BOUNDS.misses.tokens(address(), BOUNDS.misses.clock()) < 1:
        return gone(429)
    appointment = found(token)
    if appointment is None or appointment["status"] == "cancelled":
        return gone()
    person = person_of(appointment)
    if not hmac.compare_digest((bottle.request.forms.getunicode("csrf") or "").encode(), BOUNDS.csrf(token).encode()):
        return page("link_message", 403, language=person["language"], key="link_expired")
    if not BOUNDS.by_link.take(link_hash(token)):
        return page("link_message", 429, language=person["language"], key="link_busy")
    try:
        if action == "confirmar":
            link_confirm(clinic(), appointment)
            done = "confirmed"
        elif action == "anular":
            link_cancel(clinic(), appointment)
            done = "cancelled"
        else:
            day, _, time_text = (bottle.request.forms.getunicode("slot") or "").partition(" ")
            link_move(clinic(), appointment, dt.date.fromisoformat(day), time_text)
            done = "moved"
    except (ClinicError, ValueError) as error:
        key = "link_taken" if isinstance(error, ValueError) or error.code in ("SLOT_NOT_AVAILABLE", "INVALID_REQUEST") \
            else "link_to_call" if error.code == "LINK_TO_CALL" else "link_late"
        return shown(token, appointment, person, error=key, status=409)
    if done == "cancelled":
        return page("link_message", language=person["language"], key="link_cancelled_done")
    bottle.redirect(f"/cita/{token}?" + urllib.parse.urlencode({"hecho": done}), 303)


def link_confirm_post(token):
    return link_action(token, "confirmar")


def link_cancel_post(token):
    return link_action(token, "anular")


def link_move_post(token):
    return link_action(token, "cambiar")


def stop_page(token):
    """GET of a message's stop link: a button only (a scanner's GET stops nothing)."""
    if not BOUNDS.views.take(address()):
        return gone(429)
    appointment = found(token, stop=True)
    if appointment is None:
        return gone()
    return page("link_stop", language=person_of(appointment)["language"], token=token, stopped=False)


def stop_post(token):
    """POST of a message's stop link, by the page's button or a mail program's one-click (RFC 8058): no more
    messages. The token in the address is all it takes, as the one-click POST carries nothing else."""
    if not BOUNDS.by_address.take(address()):
        return gone(429)
    appointment = found(token, stop=True)
    if appointment is None:
        return gone()
    link_stop(clinic(), appointment)
    return page("link_stop", language=person_of(appointment)["language"], token=token, stopped=True)


def link_stylesheet():
    bottle.response.content_type = "text/css; charset=utf-8"
    bottle.response.set_header("Cache-Control", "max-age=3600")
    return read_data_file(f"{TEMPLATES}/link.css")


def patient_error_page(http_error):
    """Bottle's own errors under /cita (an unknown path, a wrong method): the link's page, never JSON."""
    return page("link_message", http_error.status_code if http_error.status_code in (404, 405) else 404,
                key="link_gone")


class PatientPlugin:
    """Wraps every /cita route: a request id, and a crash as the link's own page, never a staff cookie or a trace."""

    name, api = "patient", 2

    def apply(self, callback, route):
        if not route.config.get("patient"):
            return callback

        def wrapper(*args, **kwargs):
            request_id()
            try:
                return callback(*args, **kwargs)
            except bottle.HTTPResponse:
                raise
            except Exception:
                log.exception("request %s failed", request_id())
                return page("link_message", 500, key="link_gone")
        return wrapper


TOKEN = "<token:re:[A-Za-z0-9_-]{1,100}>"
PATIENT = {"patient": True}
PATIENT_ROUTES = [  # (method, path, handler, route config)
    ("GET", "/cita/cita.css", link_stylesheet, {**PATIENT, "no_change": True}),
    ("GET", f"/cita/baja/{TOKEN}", stop_page, PATIENT),
    ("POST", f"/cita/baja/{TOKEN}", stop_post, PATIENT),
    ("GET", f"/cita/{TOKEN}", link_page, PATIENT),
    ("POST", f"/cita/{TOKEN}/confirmar", link_confirm_post, PATIENT),
    ("POST", f"/cita/{TOKEN}/anular", link_cancel_post, PATIENT),
    ("POST", f"/cita/{TOKEN}/cambiar", link_move_post, PATIENT),
]
