"""What every desk page shares: the plugin that guards each desk route (`DeskPlugin`), the page in the
desk's language (`desk_page`, `desk_error`), the form's fields, the flash after a change (`done`), redirects,
the refusal's words, and the small readers more than one page uses."""

import datetime as dt
import functools
import hmac
import html
import json
import logging
import urllib.parse

import bottle
import phonenumbers

from ..values.refusals import ClinicError
from ..values.fields import clinic_moment, format_date, parse_date, text_field
from ..values.printing import masked, printable
from ..storage.events import latest_event_id
from ..domain.patients import DESK_FIELDS, DESK_FORM, LANGUAGES, YES_NO
from ..domain.identity import identity, refused
from ..domain.outbox import change_message, recipient_of, told_of
from ..words.texts import refusal_fields, refusal_text, TEXTS, translator
from ..words.pages import desk_template
from ..web.answers import clinic, raw_header, refusal_for, request_id, rooted, rooted_page, status_of
from ..domain.availability import catalog_names as names_of, clinic_centers
from ..domain.month import next_free
from ..domain.verifying import verify_count

log = logging.getLogger("agenda")


DESK_COOKIE, LOGIN_COOKIE, FLASH_COOKIE = "agenda_desk", "agenda_login", "agenda_flash"
DEVICE_COOKIE = "agenda_device"  # a browser that logged in, kept after logging out ("Login flood")
FLASH_BYTES = 1024  # a flash cookie holds keys, numbers and an id only: far below a cookie's 4 KB


DESK_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self';"
                               " base-uri 'none'",
    "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
}


def desk_language(environ):
    """'en' when the browser puts English before Spanish, else 'es' (the default)."""
    for part in environ.get("HTTP_ACCEPT_LANGUAGE", "").split(","):
        tag = part.split(";")[0].strip().lower()
        if tag[:2] in ("es", "en"):
            return tag[:2]
    return "es"


def signed_out(environ):
    """What a desk page knows of its reader before the session is read: the language only."""
    return {"lang": desk_language(environ), "name": None, "role": None, "csrf": None}


def desk_page(template, status=200, **values):
    """A desk page: the template inside the layout, in the desk's language."""
    desk = bottle.request.environ["agenda.desk"]
    t = translator(desk["lang"])
    flash = bottle.request.get_cookie(FLASH_COOKIE)
    if flash:
        bottle.response.delete_cookie(FLASH_COOKIE, path=rooted("/desk"))
        flash = flash_text(flash, t, desk)
    values = {"t": t, "desk": desk, "format_date": format_date, "dialled": dialled, "quote": urllib.parse.quote,
              "pending": functools.partial(pending_words, t), "to_verify": verify_count(clinic()) if desk["name"] else 0,
              "urlencode": urllib.parse.urlencode, "error": None, "nif_of": functools.partial(nif_of, t), "wrong": {},
              "patient_form": DESK_FORM, "choices": functools.partial(field_choices, t), **values}
    values["wrong_note"] = functools.partial(field_note, values["wrong"])
    values["patient_inputs"] = lambda typed: desk_template("patient_fields").render(**{**values, "typed": typed})
    body = desk_template(template).render(**values)
    bottle.response.status = status
    bottle.response.content_type = "text/html; charset=utf-8"
    return rooted_page(desk_template("layout").render(body=body, flash=flash, **values))


def field_choices(t, column):
    """The options of a patient's field typed by choosing, [(value, words)], the default first (for messages, none
    chosen: on once an e-mail is given); [] for text."""
    if column.shape == "language":
        return [(code, t(f"language_{code}")) for code in LANGUAGES]
    if column.shape == "yes_no":
        return [("", t("choice_unset")), *((word, t(f"choice_{word}")) for word in YES_NO)]
    return []


def dialled(e164):
    """A phone as reception dials it: Spanish numbers without +34, in groups (612 34 56 78)."""
    try:
        number = phonenumbers.parse(e164 or "")
    except phonenumbers.NumberParseException:
        return e164 or ""
    style = phonenumbers.PhoneNumberFormat.NATIONAL if number.country_code == 34 else \
        phonenumbers.PhoneNumberFormat.INTERNATIONAL
    return phonenumbers.format_number(number, style)


def nif_of(t, patient):
    """A patient's NIF as the desk shows it: their own, or their guardian's, said so."""
    if patient.get("nif") or not patient.get("guardian_nif"):
        return patient.get("nif") or ""
    return t("under_guardian", name=patient["guardian_name"], nif=patient["guardian_nif"])


def desk_refusal(error):
    """What a receptionist reads for a refusal, in the desk's language ("Staff desk")."""
    return refusal_text(translator(bottle.request.environ["agenda.desk"]["lang"]), error)


def desk_wrong_fields(error):
    """{field: words} of a refusal in the desk's language, to show beside each field of its form."""
    return refusal_fields(translator(bottle.request.environ["agenda.desk"]["lang"]), error)


def field_note(wrong, name):
    """A template's note beside the field `name`: the words of the refusal that concerns it, or nothing."""
    return f'<span class="wrong">{html.escape(wrong[name])}</span>' if name in wrong else ""


def done(to, *said, patient=None):
    """After a change: say what changed on the next page and go back to `to`. `said` is (key of TEXTS,
    {name: short value}) pairs; `patient` an id whose name the next page reads through the one door, so
    the cookie holds nothing about a patient ("Staff desk")."""
    payload = urllib.parse.quote(json.dumps({"said": said, "patient": patient}, separators=(",", ":")))
    if len(payload) <= FLASH_BYTES:
        set_desk_cookie(FLASH_COOKIE, payload, max_age=60)
    see_other(to)


def set_desk_cookie(name, value, **more):
    """A cookie of the desk's: under /desk (after the clinic's prefix, if any), HttpOnly, SameSite=Strict, Secure
    when the request came over TLS (the trusted proxy's word, via waitress)."""
    bottle.response.set_cookie(name, value, path=rooted("/desk"), httponly=True, samesite="strict",
                               secure=bottle.request.environ.get("wsgi.url_scheme") == "https", **more)


def flash_text(cookie, t, desk):
    """The words of a flash cookie, the patient it names read through the one door for this receptionist;
    '' for a cookie that is not one of ours."""
    try:
        payload = json.loads(urllib.parse.unquote(cookie))
        said, patient = payload["said"], payload["patient"]
        person = None if patient is None or desk["name"] is None else \
            identity(clinic(), patient, desk_source(), "change")
        name = (person or {}).get("full_name") or ""
        return " ".join(mail_told(t, person, **values) if key == "mail_told" else t(key, **values, patient=name)
                        for key, values in said if key in TEXTS or key == "mail_told" and person)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, ClinicError):
        return ""


def told_after(appointment_id, after):
    """The flash's pair saying what the patient is sent about a change just made: the message it wrote after outbox
    row `after`, read when the page shows it (ids only in the cookie: "Staff desk")."""
    return "mail_told", {"appointment": int(appointment_id), "after": int(after)}


def mail_told(t, person, appointment, after):
    """Whether a change's message goes to the patient and where (the address partly hidden), or why not; and that no
    reminder follows a visit already inside the reminder hours ("What a message says")."""
    conn, settings = clinic().conn(), clinic().settings
    visit = conn.execute("SELECT patient_id, date, time, status, pending FROM appointments WHERE id = ?",
                         (appointment,)).fetchone()
    message = change_message(conn, appointment, after)
    if visit is None or message is None:
        return t("mail_nothing_new")
    if visit["pending"] == "email" and message["kind"] != "notice":  # its confirmation, when it comes, tells
        return t("mail_goes_not", why=t("mailwhy_pending_email"))
    person, why = recipient_of(person) if person["id"] == visit["patient_id"] else (None, "blocked")
    if person is None or message["kind"] == "notice" and not told_of(conn, message):
        return t("mail_goes_not", why=t(f"mailwhy_{why or 'never_told'}"))
    starts = dt.datetime.fromisoformat(f"{visit['date']}T{visit['time']}").replace(tzinfo=clinic().tz)
    soon = visit["status"] != "cancelled" and settings.reminder_hours and \
        starts - clinic().clock() <= dt.timedelta(hours=settings.reminder_hours)
    return t("mail_goes", address=masked(person["email"])) + (
        " " + t("mail_no_reminder", hours=settings.reminder_hours) if soon else "")


def see_other(path):
    """303 to a path of this app's, relative (after the clinic's prefix, if any): a client's Host header never
    goes into it."""
    answer = bottle.response.copy(cls=bottle.HTTPResponse)
    answer.status, answer.body = 303, ""
    answer.set_header("Location", rooted(path))
    raise answer


def day_address(date, center_id, doctor_id=None):
    query = {"date": format_date(date)}
    if center_id:
        query["centerId"] = center_id
    if doctor_id:
        query["doctorId"] = doctor_id
    return "/desk/day?" + urllib.parse.urlencode(query)


class DeskPlugin:
    """Wraps every desk route: the session cookie, CSRF on every POST, no X-Signature, safe headers,
    HTML answers in the desk's language ("Staff desk")."""

    name = "desk"
    api = 2

    def apply(self, callback, route):
        if not route.config.get("desk"):
            return callback
        open_page, role = route.config.get("open_page", False), route.config.get("role")
        passive = route.config.get("passive", False)

        def wrapper(*args, **kwargs):
            environ = bottle.request.environ
            request_id()
            for name, value in DESK_HEADERS.items():
                bottle.response.set_header(name, value)
            environ["agenda.desk"] = desk = signed_out(environ)
            try:
                refused = self.admit(desk, open_page, passive) or self.allowed(desk, role, route.rule)
                return refused if refused is not None else callback(*args, **kwargs)
            except bottle.HTTPResponse:
                raise  # a redirect
            except Exception as error:
                refusal = refusal_for(error)
                if refusal is None:
                    log.exception("request %s failed", request_id())
                    return desk_error(500, translator(desk["lang"])("error"))
                return desk_error(status_of(refusal), desk_refusal(refusal))
        return wrapper

    @staticmethod
    def admit(desk, open_page, passive=False):
        """None when the request may go on: no X-Signature, a live session (else to the login page),
        the session's CSRF token on a POST; else the refusal's page."""
        request = bottle.request
        if raw_header(request.environ, "X-Signature") is not None:
            return desk_error(400, "a desk page takes no X-Signature: sign in at /desk/login")
        session, ended = accounts().session_or_ended(request.get_cookie(DESK_COOKIE), touch=not passive)
        if session is None and not open_page:
            see_other(kept_for_login(ended) or "/desk/login")
        desk.update(session or {})
        if request.method == "POST" and not open_page and not hmac.compare_digest(
                (request.forms.getunicode("csrf") or "").encode(), desk["csrf"].encode()):
            return desk_error(403, translator(desk["lang"])("CSRF"))
        return None


    @staticmethod
    def allowed(desk, role, rule):
        """None when the session's role may use the route; else the 403 page, the refusal recorded ("Roles")."""
        if role is None or desk["role"] == role:
            return None
        accounts().refuse(desk["name"], f"{bottle.request.method} {rule}", f"desk:{desk['name']}")
        if "patient_id" in bottle.request.url_args:  # a patient's data refused: in the access record too
            refused(clinic(), f"desk:{desk['name']}", "access", [bottle.request.url_args["patient_id"]])
        return desk_error(403, translator(desk["lang"])("admin_only"))


def kept_for_login(ended):
    """The login page's address that carries a form sent after its session ended ("Kept forms"), when
    it was sent with that session's own CSRF token; else None."""
    request = bottle.request
    if ended is None or request.method != "POST" or request.path == "/desk/logout" or not hmac.compare_digest(
            (request.forms.getunicode("csrf") or "").encode(), ended["csrf"].encode()):
        return None
    fields = [[name, value] for name, value in request.forms.decode().allitems() if name != "csrf"]
    return "/desk/login?" + urllib.parse.urlencode({"kept": accounts().keep_form(ended["name"], request.path, fields)})


def desk_error_page(http_error):
    """Bottle's own errors under /desk (an unknown page, a crash) as a page, with the desk's headers."""
    environ = bottle.request.environ
    environ.setdefault("agenda.desk", signed_out(environ))
    for name, value in DESK_HEADERS.items():
        bottle.response.set_header(name, value)
    if http_error.status_code >= 500:
        log.error("request %s failed: %s", request_id(), http_error.exception)
    t = translator(environ["agenda.desk"]["lang"])
    return desk_error(http_error.status_code, t("not_found") if http_error.status_code == 404 else t("error"))


def desk_error(status, message):
    return desk_page("error", status=status, message=message)


def desk_source():
    return f"desk:{bottle.request.environ['agenda.desk']['name']}"


def form(name):
    """A form field, read with getunicode, through `text_field`; blank is None. After a field is refused, the
    page drawn again reads every field as typed, made printable, to keep it beside its refusal ("Text fields")."""
    typed, environ = bottle.request.forms.getunicode(name) or "", bottle.request.environ
    if environ.get("agenda.form_refused"):
        return printable(typed).strip() or None
    try:
        return text_field(typed, name)
    except ClinicError:
        environ["agenda.form_refused"] = True
        raise


def accounts():
    """The staff accounts of the app serving this request."""
    return bottle.request.app.accounts


def desk_centers():
    return clinic_centers(clinic())


def catalog_names(kind):
    """{id: name} of the clinic's centers, insurances, specialities, doctors or visit types."""
    return names_of(clinic(), kind)


def who_booked(t, source):
    """The mark of who booked an appointment: the voice agent, a receptionist's name, or the admin."""
    if source == "api":
        return t("by_agent")
    if source == "patient":
        return t("by_link")
    if source == "web":
        return t("by_web")
    return source.split(":", 1)[1] if source and source.startswith("desk:") else t("by_cli")


def pending_words(t, record):
    """What a visit still pending says on a card, a row or its page ("Patients book themselves"): waiting for the patient's
    e-mail until a time of the clinic's clock, or for reception to verify who booked it; '' when not pending."""
    if record.get("pending") == "email":
        return t("pending_email", time=clinic_moment(record.get("pending_until"), clinic().tz, "%H:%M"))
    return t("pending_reception") if record.get("pending") == "reception" else ""


def changes_version():
    """A number that grows with every change to the agenda: the newest event's id."""
    return latest_event_id(clinic().conn())


def new_patient_typed():
    """The booking form's new patient as typed; the NIF is the guardian's when "underGuardian" is ticked (a child
    under 14 without one: see docs/design.md, 'Patients without a NIF')."""
    fields = {name: form(name) for name in (*DESK_FIELDS, "guardianNif")}
    if form("underGuardian") and not fields["guardianNif"]:
        fields["guardianNif"], fields["nif"] = fields["nif"], None
    return fields


def first_free_offer(type_or_area, from_text=None, doctor_id=None, center_id=None):
    """The first free start of a visit type (or area) from the day `from_text` (else today) up to the desk's
    horizon, with this doctor (None: any who offers it): {"slot", "center": its name, "address": its booking
    page}, or {"until": the horizon's last day} when there is none ("The month at a glance")."""
    try:
        first = max(parse_date(from_text, "date"), clinic().today()) if from_text else clinic().today()
    except ClinicError:
        first = clinic().today()
    found = next_free(clinic(), first, doctor_id=doctor_id, speciality_id=type_or_area, center_id=center_id)
    if found is None:
        return {"until": format_date(clinic().window("desk").last_day)}
    return {"slot": found, "center": catalog_names("centers").get(found.center_id, found.center_id or ""),
            "address": "/desk/book?" + urllib.parse.urlencode({
                "doctorId": found.doctor_id, "date": found.date_text, "time": found.time,
                "centerId": found.center_id or "", "typeId": type_or_area}, safe="/:")}
