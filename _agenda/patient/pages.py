"""The patient's own link at /cita ("The patient's link"): `PATIENT_ROUTES`, the one table of its pages. Opening a
link shows one appointment and changes nothing; each action is a POST with the page's own CSRF token, bounded
per link and per address; no staff cookie, no signature, no JavaScript, the desk's CSP."""

import contextlib
import datetime as dt
import hashlib
import hmac
import ipaddress
import logging
import secrets
import urllib.parse

import bottle

from ..values.refusals import ClinicError
from ..storage.shipped import read_data_file, TEMPLATES
from ..domain.links import (days_to_move, done_by_link, first_name, in_notice, link_cancel, link_confirm, link_hash,
                            link_move, link_stop, opened)
from ..domain.staff import Allowance
from ..web.answers import request_id, rooted, rooted_page
from ..words.pages import desk_template
from ..words.texts import translator
from ..words.pages import long_date, plain
from .messages import phone_link

log = logging.getLogger("agenda")
HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none';"
                                                                       " form-action 'self'; base-uri 'none'"}
DONE = {"confirmed": "link_confirmed_done", "cancelled": "link_cancelled_done", "moved": "link_moved_done"}


class Bounds:
    """What strangers and scanners may ask of /cita ("The patient's link"), the login gate's buckets: unknown
    tokens per address (a known token never waits on them), views per link (a scanner's, never the actions'),
    actions per link and per address."""

    def __init__(self):
        self.misses, self.views = Allowance(20, 1 / 60), Allowance(60, 1.0)
        self.by_link, self.by_address = Allowance(10, 1 / 300), Allowance(30, 1 / 20)
        self.key = secrets.token_bytes(32)  # the pages' CSRF tokens: a form outlives no restart

    def csrf(self, token):
        return hmac.new(self.key, link_hash(token).encode(), hashlib.sha256).hexdigest()


BOUNDS = Bounds()
MOVE_DAYS_SHOWN = 5  # the days with free times a page lists to move to


def clinic():
    return bottle.request.app.clinic


def address():
    """The client's address as waitress gives it (a trusted proxy's forwarded one); an IPv6 address by its /64,
    which one client holds whole."""
    text = bottle.request.environ.get("REMOTE_ADDR") or "?"
    if ":" in text:
        with contextlib.suppress(ValueError):
            return str(ipaddress.ip_network(f"{text}/64", strict=False))
    return text


def page(template, status=200, language=None, **values):
    """A page of the link's with the link's headers, in `language` (a patient's page: theirs, "The patient's
    link"), or for a page of no one's (a link that opens nothing, an error) the browser's, Spanish first."""
    language = language or preferred_language()
    for name, value in HEADERS.items():
        bottle.response.set_header(name, value)
    bottle.response.status = status
    t = translator(language)
    head = desk_template("link_head").render(t=t, lang=language)
    return rooted_page(desk_template(template).render(t=t, lang=language, head=head, **values))


def preferred_language():
    for part in bottle.request.environ.get("HTTP_ACCEPT_LANGUAGE", "").split(","):
        tag = part.split(";")[0].strip().lower()[:2]
        if tag in ("es", "en"):
            return tag
    return "es"


def gone(status=404):
    """A token that opens nothing (404), or an address past its bound (429)."""
    return page("link_message", status, key="link_gone" if status == 404 else "link_busy", help=None, back=None)


def opened_or_refusal(token, stop=False):
    """(the appointment the token opens, None), or (None, the refusal's page): 404, or 429 once this address sent
    too many tokens that open nothing."""
    appointment = opened(clinic(), token, stop)
    if appointment is not None:
        return appointment, None
    return None, gone(404 if BOUNDS.misses.take(address()) else 429)


def language_of(appointment):
    """The language of the patient's pages: theirs, Spanish when they chose none."""
    return appointment["language"] or "es"


def person_of(appointment):
    """The patient as their page greets them, read through the one door (the read recorded): the first name (a
    child's page greets her guardian and names the child). Only for a page that shows them."""
    name, guarded = first_name(clinic(), appointment)
    return {"name": None if guarded else plain(name), "child": plain(name) if guarded else None}


def said(appointment, key, status=200, token=None):
    """A short page of the link's, naming no one: what happened, the clinic's phone for help, and the way back to
    the visit."""
    return page("link_message", status, language=language_of(appointment), key=key, back=token,
                help=help_of(translator(language_of(appointment)), appointment))


def help_of(t, appointment):
    """The line of every page that gives the clinic's phone, the one place it does, as a tel: link (HTML): "Need
    help? Call the clinic on 912 345 678.", or without a number when the center has none."""
    phone = plain(appointment["center_phone"])
    return phone_link(t("link_help", phone=t("link_phone", phone=phone) if phone else ""), phone)


def link_page(token):
    """GET: the appointment, the patient's first name only; nothing changes (a scanner may open it)."""
    appointment, refusal = opened_or_refusal(token)
    if refusal is not None:
        return refusal
    if not BOUNDS.views.take(link_hash(token)):
        return gone(429)
    done = DONE.get(done_by_link(clinic(), appointment)) if "hecho" in bottle.request.query else None
    if appointment["status"] == "cancelled":
        return said(appointment, done or "link_cancelled")
    return shown(token, appointment, done)


def shown(token, appointment, done=None, error=None, status=200):
    """The visit's page: who, when and where, and what the patient may do; `done` what they just did, as the visit's
    state says (never the address)."""
    language, settings, person = language_of(appointment), clinic().settings, person_of(appointment)
    t = translator(language)
    starts = appointment["starts"]
    lines = [(t("patient"), person["child"])] if person["child"] else []
    lines += [(t("mail_when"), long_date(t, starts.date())), (t("mail_at"), f"{starts:%H:%M}")]
    for key, label in (("center_name", "mail_where"), ("center_address", "mail_address"), ("bring", "mail_bring")):
        if appointment[key]:
            lines.append((t(label), plain(appointment[key])))
    if settings.mail_shows == "doctor":
        lines.append((t("mail_doctor"), plain(appointment["doctor_name"])))
        if appointment["type_name"]:
            lines.append((t("mail_type"), plain(appointment["type_name"])))
    status_key = "link_pending" if appointment["to_call"] else f"link_{appointment['status']}"
    lines.append((t("link_status"), t(status_key)))
    return page("link", status, language=language, lines=lines, name=person["name"], token=token,
                csrf=BOUNDS.csrf(token), done=done, error=error, appointment=appointment,
                late=not in_notice(clinic(), appointment), hours=settings.cancel_notice_hours,
                help=help_of(t, appointment), moves=move_days(t, appointment),
                clinic_name=plain(settings.clinic_name) or plain(appointment["center_name"]) or t("the_clinic"))


def move_days(t, appointment):
    """([(the day in words, [(slot value, time)])] of the first days with free times to move to, from the day the
    address asks (`desde`, else today) on to the caller's horizon, and the day to ask for more from, or None)."""
    if appointment["to_call"]:
        return [], None
    slots, more = days_to_move(clinic(), appointment, asked_day(), MOVE_DAYS_SHOWN)
    days = {}
    for slot in slots:
        days.setdefault(slot.date, []).append((f"{slot.date} {slot.time}", slot.time))
    return [(long_date(t, day), times) for day, times in days.items()], more


def asked_day():
    """The day the page's "more days" asked to list from, or None (a wrong one is none)."""
    try:
        return dt.date.fromisoformat(bottle.request.query.get("desde") or "")
    except ValueError:
        return None


def link_action(token, action):
    """POST confirm, cancel (after a second POST that says so) or move: the page's CSRF token, within the link's and
    the address's bounds, through the one door as the patient; then back to the page, which says what was done."""
    appointment, refusal = opened_or_refusal(token)
    if refusal is not None:
        return refusal
    if not BOUNDS.by_address.take(address()) or not BOUNDS.by_link.take(link_hash(token)):  # first: whatever follows
        return said(appointment, "link_busy", 429, token)
    if appointment["status"] == "cancelled":
        return said(appointment, "link_cancelled", 409, token)
    if not hmac.compare_digest((bottle.request.forms.getunicode("csrf") or "").encode(), BOUNDS.csrf(token).encode()):
        return said(appointment, "link_expired", 403, token)
    if action == "anular" and not in_notice(clinic(), appointment):
        return shown(token, appointment, error="link_late", status=409)
    if action == "anular" and bottle.request.forms.getunicode("seguro") != "1":
        t = translator(language_of(appointment))
        return page("link_cancel", language=language_of(appointment), token=token, csrf=BOUNDS.csrf(token),
                    when=long_date(t, appointment["starts"].date()), time=f"{appointment['starts']:%H:%M}")
    try:
        done = act(appointment, action)
    except (ClinicError, ValueError) as error:
        key = "link_taken" if isinstance(error, ValueError) or error.code in ("SLOT_NOT_AVAILABLE", "INVALID_REQUEST") \
            else "link_to_call" if error.code == "LINK_TO_CALL" else "link_late"
        return shown(token, appointment, error=key, status=409)
    bottle.redirect(rooted(f"/cita/{token}?") + urllib.parse.urlencode({"hecho": done}), 303)


def act(appointment, action):
    """One action of the patient's through the one door; what was done."""
    if action == "confirmar":
        link_confirm(clinic(), appointment)
        return "confirmed"
    if action == "anular":
        link_cancel(clinic(), appointment)
        return "cancelled"
    day, _, time_text = (bottle.request.forms.getunicode("slot") or "").partition(" ")
    link_move(clinic(), appointment, dt.date.fromisoformat(day), time_text)
    return "moved"


def link_confirm_post(token):
    return link_action(token, "confirmar")


def link_cancel_post(token):
    return link_action(token, "anular")


def link_move_post(token):
    return link_action(token, "cambiar")


def stop_page(token):
    """GET of a message's stop link: a button only (a scanner's GET stops nothing)."""
    appointment, refusal = opened_or_refusal(token, stop=True)
    if refusal is not None:
        return refusal
    if not BOUNDS.views.take(link_hash(token)):
        return gone(429)
    return page("link_stop", language=language_of(appointment), token=token, stopped=False)


def stop_post(token):
    """POST of a message's stop link, by the page's button or a mail program's one-click (RFC 8058): no more
    messages. The token in the address is all it takes, as the one-click POST carries nothing else."""
    appointment, refusal = opened_or_refusal(token, stop=True)
    if refusal is not None:
        return refusal
    if not BOUNDS.by_link.take(link_hash(token)):
        return gone(429)
    link_stop(clinic(), appointment)
    return page("link_stop", language=language_of(appointment), token=token, stopped=True)


def link_stylesheet():
    bottle.response.content_type = "text/css; charset=utf-8"
    bottle.response.set_header("Cache-Control", "max-age=3600")
    return read_data_file(f"{TEMPLATES}/link.css")


def patient_error_page(http_error):
    """Bottle's own errors under /cita (an unknown path, a wrong method): the link's page, never JSON."""
    return page("link_message", http_error.status_code if http_error.status_code in (404, 405) else 404,
                key="link_gone", help=None, back=None)


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
                return page("link_message", 500, key="link_error", help=None, back=None)
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
