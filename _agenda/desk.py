"""The staff desk at /desk: its texts (Spanish and English), the plugin that guards every desk page,
the handlers and DESK_ROUTES."""

import datetime as dt
import functools
import hmac
import html
import json
import logging
import re
import secrets
import urllib.parse

import bottle
import phonenumbers

from .values import all_fields, ClinicError, format_date, hhmm, invalid, parse_date, parse_time
from .store import read_data_file, TEMPLATES
from .staff import LOCK_AFTER, LOCK_MINUTES
from .counter import mark_attendance, squeeze_in, to_call
from .series import book_series, cancel_rest, parse_every, preview_series
from .waitlist import add_waiting, end_waiting, fits, free_now, named, waiting, window_text
from .identity import identity, refused
from .feeds import feeds, new_feed, revoke_feed
from .rights import erasure_preview, patient_copy, RECTIFIABLE, rectify, request_erasure
from .texts import refusal_fields, refusal_text, TEXTS, translator
from .pages import copy_page, desk_template
from .slots import Slot
from .report import clinic_report
from .charts import report_charts
from .timeline import center_week, day_timeline, doctor_week, local_time, week_days
from .web import clinic, query_text, raw_header, refusal_for, request_id, status_of

log = logging.getLogger("agenda")


DESK_COOKIE, LOGIN_COOKIE, FLASH_COOKIE = "agenda_desk", "agenda_login", "agenda_flash"
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
        bottle.response.delete_cookie(FLASH_COOKIE, path="/desk")
        flash = flash_text(flash, t, desk)
    values = {"t": t, "desk": desk, "format_date": format_date, "dialled": dialled, "quote": urllib.parse.quote,
              "urlencode": urllib.parse.urlencode, "error": None, "nif_of": functools.partial(nif_of, t), "wrong": {},
              **values}
    values["wrong_note"] = functools.partial(field_note, values["wrong"])
    body = desk_template(template).render(**values)
    bottle.response.status = status
    bottle.response.content_type = "text/html; charset=utf-8"
    return desk_template("layout").render(body=body, flash=flash, **values)


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
    secure = bottle.request.environ.get("wsgi.url_scheme") == "https"  # the trusted proxy's, via waitress
    payload = urllib.parse.quote(json.dumps({"said": said, "patient": patient}, separators=(",", ":")))
    if len(payload) <= FLASH_BYTES:
        bottle.response.set_cookie(FLASH_COOKIE, payload, path="/desk", httponly=True, samesite="strict",
                                   secure=secure, max_age=60)
    see_other(to)


def flash_text(cookie, t, desk):
    """The words of a flash cookie, the patient it names read through the one door for this receptionist;
    '' for a cookie that is not one of ours."""
    try:
        payload = json.loads(urllib.parse.unquote(cookie))
        said, patient = payload["said"], payload["patient"]
        name = "" if patient is None or desk["name"] is None else \
            identity(clinic(), patient, desk_source(), "change")["full_name"] or ""
        return " ".join(t(key, **values, patient=name) for key, values in said if key in TEXTS)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, ClinicError):
        return ""


def see_other(path):
    """303 to a path of this server, relative: a client's Host header never goes into it."""
    answer = bottle.response.copy(cls=bottle.HTTPResponse)
    answer.status, answer.body = 303, ""
    answer.set_header("Location", path)
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
    """A form field, read with getunicode; blank is None."""
    return (bottle.request.forms.getunicode(name) or "").strip() or None


# Desk handlers: read the form, call the clinic with the receptionist as the source, show the page.

def desk_home():
    see_other("/desk/day")


def desk_login_page(error=None, name="", status=None):
    token = secrets.token_urlsafe(24)
    secure = bottle.request.environ.get("wsgi.url_scheme") == "https"  # the trusted proxy's, via waitress
    bottle.response.set_cookie(LOGIN_COOKIE, token, path="/desk", httponly=True, samesite="strict", secure=secure)
    return desk_page("login", status=status or (401 if error else 200), login_token=token, error=error, name=name,
                     kept=kept_id(form("kept") or query_text("kept")))


def kept_id(text):
    """A kept form's id as keep_form makes it, or None."""
    return text if text and re.fullmatch(r"[A-Za-z0-9_-]{16,64}", text) else None


def desk_log_in():
    """Log in: the login form's token must match its cookie (CSRF before a session exists)."""
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    given, expected = form("csrf") or "", bottle.request.get_cookie(LOGIN_COOKIE) or ""
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        return desk_error(403, t("CSRF"))
    name = form("name") or ""
    try:
        token, _ = accounts().log_in(name, bottle.request.forms.getunicode("password") or "",
                                     bottle.request.environ.get("REMOTE_ADDR") or "unknown")
    except ClinicError as error:
        if error.code == "LOGIN_BUSY":
            bottle.response.set_header("Retry-After", "60")
        until = error.extra.get("until")
        until = f"{dt.datetime.fromisoformat(until).astimezone(clinic().tz):%H:%M}" if until else ""
        return desk_login_page(t(error.code, after=LOCK_AFTER, minutes=LOCK_MINUTES, until=until), name,
                               status_of(error))
    secure = bottle.request.environ.get("wsgi.url_scheme") == "https"  # the trusted proxy's, via waitress
    bottle.response.set_cookie(DESK_COOKIE, token, path="/desk", httponly=True, samesite="strict", secure=secure)
    bottle.response.delete_cookie(LOGIN_COOKIE, path="/desk")
    kept = kept_id(form("kept"))
    see_other(f"/desk/kept/{kept}" if kept else "/desk/day")


def desk_kept(kept):
    """A form sent after its session ended, offered to its sender to send again, once ("Kept forms")."""
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    taken = kept_id(kept) and accounts().take_kept_form(kept, bottle.request.environ["agenda.desk"]["name"])
    if not taken:
        return desk_error(404, t("kept_gone"))
    path, fields = taken
    return desk_page("kept", path=path, fields=fields)


def desk_log_out():
    accounts().log_out(bottle.request.get_cookie(DESK_COOKIE))
    bottle.response.delete_cookie(DESK_COOKIE, path="/desk")
    see_other("/desk/login")


def accounts():
    """The staff accounts of the app serving this request."""
    return bottle.request.app.accounts


def desk_centers():
    return clinic().centers()


def day_plan(clinic, day, center_id=None, reader=None):
    """One center's day as the desk draws it ("The day as time"): for each doctor, their blocks and cards
    (`timeline.day_timeline`), the free ones exactly those `slot_state` lets the desk book."""
    return [{"id": column["doctor_id"], "name": column["name"], "speciality_id": column["speciality_id"],
             "slots": [{"time": block.time, "state": block.kind, "center_id": block.center_id}
                       for block in column["blocks"] if block.kind == "free"]}
            for column in day_timeline(clinic, day, center_id, reader=reader).columns]


def asked_day():
    """The day a page shows: ?date=, else today; a year out of reason is a refusal."""
    day = parse_date(query_text("date"), "date") if query_text("date") else clinic().today()
    if not 1900 <= day.year <= 2999:
        raise invalid("date must be a year from 1900 to 2999", "year", "date")
    return day


def now_minute(day):
    """The minute of the clinic's clock when `day` is today, else None."""
    now = clinic().clock().astimezone(clinic().tz)
    return now.hour * 60 + now.minute if now.date() == day else None


def timeline_html(timeline, day, center_id, headings, now=None):
    """The timeline partial: columns under `headings` (a text for each), the axis, and a line at `now`; a free
    block that fits someone waiting says how many ("Waiting list")."""
    entries = waiting(clinic())

    def waited(column, block):
        slot = Slot(column["day"], format_date(column["day"]), block.time, "", 0, column["doctor_id"], column["name"],
                    column["speciality_id"], block.center_id)
        return sum(fits(entry, slot) for entry in entries)
    return desk_template("timeline").render(
        timeline=timeline, day=day, center_id=center_id, headings=headings, now=now, hhmm=hhmm, waited=waited,
        t=translator(bottle.request.environ["agenda.desk"]["lang"]), desk=bottle.request.environ["agenda.desk"],
        format_date=format_date, dialled=dialled, urlencode=urllib.parse.urlencode, who_booked=who_booked,
        today=clinic().today().isoformat(), last_day=clinic().window("desk").last_day.isoformat())


def who_booked(t, source):
    """The mark of who booked an appointment: the voice agent, a receptionist's name, or the admin."""
    if source == "api":
        return t("by_agent")
    return source.split(":", 1)[1] if source and source.startswith("desk:") else t("by_cli")


def desk_day():
    """The day view: one center's doctors (or one doctor) on one time axis, now marked ("The day as time")."""
    day, centers = asked_day(), desk_centers()
    center_id = query_text("centerId") or (centers[0]["id"] if centers else None)
    doctor_id = query_text("doctorId")
    timeline = day_timeline(clinic(), day, clinic().require_center(center_id), doctor_id, reader=desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    headings = [f"{c['name']} ({c['speciality_id']}) · " + ", ".join(t("minutes", minutes=m) for m in c["slot_minutes"])
                for c in timeline.columns]
    return desk_page("day", day=day, center_id=center_id, centers=centers, doctor_id=doctor_id,
                     doctors=clinic().doctors(), timeline=timeline, version=changes_version(),
                     drawn=timeline_html(timeline, day, center_id, headings, now_minute(day)),
                     previous=day_address(day - dt.timedelta(days=1), center_id, doctor_id),
                     following=day_address(day + dt.timedelta(days=1), center_id, doctor_id),
                     today=day_address(clinic().today(), center_id, doctor_id),
                     center_name=next((c["name"] for c in centers if c["id"] == center_id), ""),
                     clinic_name=clinic().settings.clinic_name or t("app"))


def desk_week():
    """A week: one doctor's days side by side on the time axis (?doctorId=), else the center's days as counts."""
    day, centers = asked_day(), desk_centers()
    doctor_id, center_id = query_text("doctorId"), query_text("centerId") or (centers[0]["id"] if centers else None)
    monday = week_days(day)[0]
    around = {"previous": monday - dt.timedelta(days=7), "following": monday + dt.timedelta(days=7)}
    links = {name: "/desk/week?" + urllib.parse.urlencode({"date": format_date(each), **(
        {"doctorId": doctor_id} if doctor_id else {"centerId": center_id or ""})}) for name, each in around.items()}
    if doctor_id is None:
        return desk_page("week", day=monday, centers=centers, center_id=clinic().require_center(center_id),
                         doctors=clinic().doctors(), doctor=None, week=center_week(clinic(), center_id, day),
                         version=changes_version(), **links)
    timeline = doctor_week(clinic(), doctor_id, day, reader=desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    headings = [f"{t('weekdays')[c['day'].weekday()]} {c['day']:%d/%m}" for c in timeline.columns]  # the year is above
    return desk_page("week", day=monday, centers=centers, center_id=center_id, doctors=clinic().doctors(),
                     doctor=clinic().require_doctor(doctor_id), week=None, version=changes_version(),
                     drawn=timeline_html(timeline, None, None, headings), **links)


def changes_version():
    """A number that grows with every change to the agenda: the newest event's id."""
    return clinic().conn().execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]


def desk_version():
    """{"version": N} for the page's refresh poll; it never restarts the session's idle time."""
    bottle.response.content_type = "application/json"
    return json.dumps({"version": changes_version()})


def desk_script():
    bottle.response.content_type = "text/javascript; charset=utf-8"
    return read_data_file(f"{TEMPLATES}/desk.js")


def desk_book_page(error=None, status=200, wrong=None, booked=None):
    """Booking a free slot: the slot, a patient search, and a new patient's form."""
    slot = {name: query_text(name) or form(name) for name in ("doctorId", "date", "time", "centerId", "squeeze")}
    doctor = clinic().require_doctor(slot["doctorId"])
    q = form("q") or ""  # a search comes by POST only: what was typed never goes into a URL or the history
    typed = {name: form(name) or "" for name in ("name", "surname", "nif", "phone", "birthDate", "reason",
                                                 "guardianNif")}
    found = clinic().search_patients(q, reader=desk_source()) if q else None
    if query_text("patientId") and not q:  # booking for a patient chosen on their page
        found = [clinic().patient_record(query_text("patientId"), reader=desk_source())]
    listed = clinic().insurance_lists([doctor["id"]]).get((doctor["id"], slot["centerId"]))
    names = {i["id"]: i["name"] for i in clinic().catalogs()["insurances"]}
    insurances = [(key, names.get(key, key)) for key in sorted(listed, key=lambda key: names.get(key, key))] \
        if listed else None
    return desk_page("book", status=status, slot=slot, doctor=doctor, found=found, insurances=insurances,
                     q=q, typed={**typed, "insuranceId": form("insuranceId") or ""}, error=error, wrong=wrong or {},
                     waiting_here=waiting_for(doctor, slot), waitlist_id=query_text("waitlistId") or form("waitlistId"),
                     booked=booked)


def waiting_for(doctor, slot):
    """The waiting entries this free slot fits, oldest first (none for a sobrecita or a slot not free)."""
    try:
        day, time_text = parse_date(slot["date"] or "", "date"), parse_time(slot["time"] or "", "time")
    except ClinicError:
        return []
    free = [s for s in clinic().availability(doctor_id=doctor["id"], center_id=slot["centerId"], first=day, last=day,
                                             channel="desk") if s.time == time_text]
    if not free or slot.get("squeeze"):
        return []
    return named(clinic(), [entry for entry in waiting(clinic()) if fits(entry, free[0])], desk_source())


def desk_book():
    """Book the slot for a patient found, or for a new one registered in the same form."""
    source, slot = desk_source(), {name: form(name) for name in ("doctorId", "date", "time", "centerId")}
    try:
        day, time_text = parse_date(slot["date"] or "", "date"), parse_time(slot["time"] or "", "time")
        patient_id = form("patientId") or desk_patient_id(source)
        booking = functools.partial(squeeze_in, clinic()) if form("squeeze") else functools.partial(
            clinic().book, waitlist_id=form("waitlistId"))  # the entry ends with the booking, or nothing is made
        booking(day=day, time_text=time_text, doctor_id=slot["doctorId"], patient_id=patient_id,
                center_id=slot["centerId"], reason=form("reason"), insurance_id=form("insuranceId"), source=source)
    except ClinicError as error:
        return desk_book_page(desk_refusal(error), status=status_of(error), wrong=desk_wrong_fields(error),
                              booked=error.extra.get("appointmentId"))
    done(day_address(day, slot["centerId"]), ("booked_done", {"date": format_date(day), "time": time_text}),
         patient=int(patient_id))


def desk_patient_id(source):
    """The new patient of the booking form, registered; the same one when the form comes again (a
    booking refused after the registration, sent once more with another slot)."""
    fields = {name: form(name) for name in ("name", "surname", "nif", "phone", "birthDate", "guardianNif")}
    try:
        return clinic().register_patient(fields, source=source)
    except ClinicError as error:
        if error.code == "PATIENT_ALREADY_EXISTS" and clinic().registered_as(error.extra["patientId"], fields["name"]):
            return error.extra["patientId"]
        raise


def desk_appointment(appointment_id, error=None, status=200):
    """One appointment: its details and history; move it (to another doctor of the speciality or center
    too), mark attendance, cancel it with a reason, confirm it. A cancelled one says when and by whom."""
    appointment = clinic().appointment_for_desk(appointment_id, reader=desk_source())
    doctors = [d for d in clinic().doctors() if d["speciality_id"] == appointment["speciality_id"]
               and not d["retired_from"]] or [dict(clinic().require_doctor(appointment["doctor_id"]))]
    to_doctor = query_text("doctorId") or appointment["doctor_id"]
    first = parse_date(query_text("date"), "date") if query_text("date") else max(
        clinic().today(), dt.date.fromisoformat(appointment["date"]))
    last = first + dt.timedelta(days=13)
    free = [] if appointment["status"] == "cancelled" else clinic().availability(
        doctor_id=to_doctor, first=first, last=last, channel="desk")[:40]
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    why = t("why_beyond") if first > clinic().window("desk").last_day else ""
    empty = t("no_free", doctor=clinic().require_doctor(to_doctor)["name"], first=format_date(first),
              last=format_date(last), why=why)
    zone = clinic().tz
    appointment.update(weekday=dt.date.fromisoformat(appointment["date"]).weekday(),
                       arrived_local=local_time(clinic(), appointment))
    for event in appointment["history"]:
        event["when"] = f"{dt.datetime.fromisoformat(event['at']).astimezone(zone):%d/%m/%Y %H:%M}"
        event["who"] = who_booked(t, event["source"])
    return desk_page("appointment", status=status, appointment=appointment, free=free, first=first,
                     doctors=doctors, to_doctor=to_doctor, empty=empty, error=error,
                     insurance_names=catalog_names("insurances"), center_names=catalog_names("centers"),
                     doctor_names={d["id"]: d["name"] for d in doctors}, who_booked=who_booked,
                     today=clinic().today().isoformat())


def catalog_names(kind):
    """{id: name} of the clinic's centers, insurances or specialities."""
    table = {"centers": "centers", "insurances": "insurances", "specialities": "specialities"}[kind]
    return {row["id"]: row["name"] for row in clinic().conn().execute(f"SELECT id, name FROM {table}")}


def desk_move(appointment_id):
    """Move to the slot chosen: 'DD/MM/YYYY|HH:MM|DOCTOR|CENTER' from the move form's list."""
    before = clinic().appointment(appointment_id, None)
    try:
        parts = (form("slot") or "").split("|")
        if len(parts) != 4:
            raise invalid("time is required", "required", "time")
        day, time_text = parse_date(parts[0], "date"), parse_time(parts[1], "time")
        clinic().move(appointment_id, day=day, time_text=time_text, doctor_id=parts[2], center_id=parts[3] or None,
                      source=desk_source())
    except ClinicError as error:
        return desk_appointment(appointment_id, desk_refusal(error), status_of(error))
    done(day_address(day, parts[3] or None), ("moved_done", {"date": format_date(day), "time": time_text}),
         patient=before["patient_id"])


def desk_cancel(appointment_id):
    before = clinic().appointment(appointment_id, None)
    clinic().cancel(appointment_id, reason=form("reason") or "cancelled at the desk", source=desk_source())
    done(day_address(dt.date.fromisoformat(before["date"]), before["center_id"]), ("cancelled_done", {}),
         patient=before["patient_id"])


def desk_cancel_rest(appointment_id):
    """Cancel this session of a series and every later one ("Series")."""
    before = clinic().appointment(appointment_id, None)
    gone = cancel_rest(clinic(), appointment_id, form("reason") or "cancelled at the desk", desk_source())
    done(f"/desk/patients/{before['patient_id']}", ("series_rest_done", {"count": len(gone)}),
         patient=before["patient_id"])


def desk_series():
    """A series for the patient chosen: the preview of its dates (step=preview), then booked (step=book)."""
    slot = {name: form(name) for name in ("doctorId", "date", "time", "centerId", "patientId")}
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    asked = {"n": form("n") or "1", "unit": form("unit") if form("unit") in ("w", "d") else "w",
             "count": form("count") or "6"}
    try:
        series = all_fields({"first": lambda: parse_date(slot["date"] or "", "date"),
                             "time_text": lambda: parse_time(slot["time"] or "", "time"),
                             "every_days": lambda: parse_every(asked["n"] + asked["unit"]),
                             "count": lambda: int(asked["count"]) if asked["count"].isdigit() else invalid_count()})
        series.update(doctor_id=slot["doctorId"], center_id=slot["centerId"])
        patient = clinic().patient_record(slot["patientId"], reader=desk_source())
        if form("step") == "book":
            _, booked = book_series(clinic(), patient_id=slot["patientId"], insurance_id=form("insuranceId"),
                                    reason=form("reason"), nearest=bool(form("nearest")), source=desk_source(), **series)
            return done(day_address(series["first"], slot["centerId"]), ("series_done", {"count": len(booked)}),
                        patient=patient["id"])
        sessions, error = preview_series(clinic(), **series), None
    except ClinicError as refusal:
        sessions, error, patient = [], desk_refusal(refusal), clinic().patient_record(slot["patientId"], desk_source())
    return desk_page("series", status=400 if error and not sessions else 200, slot=slot, asked=asked, patient=patient,
                     sessions=sessions, error=error, doctor=clinic().require_doctor(slot["doctorId"]),
                     typed={"reason": form("reason") or "", "insuranceId": form("insuranceId") or ""})


def invalid_count():
    raise invalid("count must be 2 to 60", "series_count", "count")


def desk_confirm(appointment_id):
    before = clinic().appointment(appointment_id, None)
    clinic().confirm(appointment_id, True, source=desk_source())
    done(day_address(dt.date.fromisoformat(before["date"]), before["center_id"]), ("confirmed_done", {}),
         patient=before["patient_id"])


def desk_attendance(appointment_id):
    """Mark what happened at the counter (arrived, seen, no_show; blank undoes) and go back to the day."""
    mark = form("mark")
    after = mark_attendance(clinic(), appointment_id, mark, desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    moment = dt.datetime.fromisoformat(after["arrived_at"]) if after["arrived_at"] else clinic().clock()
    moment = moment.astimezone(clinic().tz)
    said = ("attendance_undone", {}) if mark is None else \
        ("attendance_done", {"mark": t(mark, time=f"{moment:%H:%M}")})
    done(form("back") if (form("back") or "").startswith("/desk/") else
         day_address(dt.date.fromisoformat(after["date"]), after["center_id"]), said, patient=after["patient_id"])


def desk_waitlist(error=None, status=200):
    """The waiting list, oldest first; the free slots of the next two weeks that fit someone waiting
    ("Waiting list"); a form to add a patient."""
    entries = named(clinic(), waiting(clinic()), desk_source())
    typed = {name: form(name) or "" for name in ("nif", "doctorId", "specialityId", "centerId", "dateFrom", "dateTo",
                                                 "timeFrom", "timeTo", "note")}
    return desk_page("waitlist", status=status, entries=entries, free=free_now(clinic(), entries), typed=typed,
                     error=error, doctors=clinic().doctors(), specialities=catalog_names("specialities"),
                     centers=desk_centers(), window_text=window_text)


def desk_add_waiting():
    """Put a patient (found by NIF) on the waiting list for a doctor or a speciality."""
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    try:
        window = all_fields({"first": lambda: parse_date(form("dateFrom") or "", "dateFrom"),
                             "last": lambda: parse_date(form("dateTo") or "", "dateTo")})
        patient = clinic().find_patient(form("nif") or "", reader=desk_source())
        add_waiting(clinic(), patient_id=patient["id"], doctor_id=form("doctorId"),
                    speciality_id=None if form("doctorId") else form("specialityId"), center_id=form("centerId"),
                    time_from=form("timeFrom"), time_to=form("timeTo"), note=form("note"), source=desk_source(),
                    **window)
    except ClinicError as error:
        return desk_waitlist(desk_refusal(error), status_of(error))
    done("/desk/waitlist", ("waiting_added", {}), patient=patient["id"])


def desk_end_waiting(entry_id):
    end_waiting(clinic(), entry_id, "removed", desk_source())
    done("/desk/waitlist", ("waiting_removed", {}))


def desk_report():
    """The clinic at a glance for admins: the weeks asked (by default the two past and the two coming),
    charts and tables."""
    last = parse_date(query_text("to"), "to") if query_text("to") else clinic().today() + dt.timedelta(days=13)
    first = parse_date(query_text("from"), "from") if query_text("from") else last - dt.timedelta(days=27)
    report = clinic_report(clinic(), first, last)
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    return desk_page("report", report=report, charts=report_charts(report, t), first=first, last=last)


def desk_calls():
    """The appointments that need a call, from today on, soonest first ("To call")."""
    return desk_page("calls", appointments=to_call(clinic(), reader=desk_source()))


def desk_patients():
    """The patient search; the words searched come by POST, never in the address ("Staff desk")."""
    q = form("q") or "" if bottle.request.method == "POST" else ""
    return desk_page("patients", q=q, found=clinic().search_patients(q, reader=desk_source()) if q else None)


def desk_patient(patient_id, error=None, status=200, wrong=None):
    """A patient: their details (to correct), their coming, past and cancelled appointments, book for them."""
    patient = clinic().patient_record(patient_id, reader=desk_source())
    typed = {name: form(name) or "" for name in RECTIFIABLE} if error else {
        "name": patient["name"], "surname": patient["surname"] or "", "nif": patient["nif"],
        "phone": dialled(patient["phone"]), "birthDate": format_date(patient["birth_date"]) if patient["birth_date"] else ""}
    return desk_page("patient", status=status, patient=patient, typed=typed, error=error, wrong=wrong or {},
                     cancelled=clinic().cancelled_of(patient["id"], desk_source()), today=clinic().today().isoformat())


def desk_patient_book(patient_id):
    """Book for this patient: a doctor and a first day, then the doctor's next free slots to choose from."""
    patient = clinic().patient_record(patient_id, reader=desk_source())
    doctors = [d for d in clinic().doctors() if not d["retired_from"]]
    doctor_id = query_text("doctorId") or (doctors[0]["id"] if doctors else None)
    first = parse_date(query_text("date"), "date") if query_text("date") else clinic().today()
    free = clinic().availability(doctor_id=doctor_id, first=first, last=first + dt.timedelta(days=13),
                                 channel="desk")[:40] if doctor_id else []
    return desk_page("patient_book", patient=patient, doctors=doctors, doctor_id=doctor_id, first=first, free=free)


def desk_correct_patient(patient_id):
    """Correct a patient's details, checked as a new patient is; a NIF another patient holds is refused."""
    try:
        rectify(clinic(), patient_id, {name: form(name) or "" for name in RECTIFIABLE}, desk_source())
    except ClinicError as error:
        return desk_patient(patient_id, desk_refusal(error), status_of(error), desk_wrong_fields(error))
    done(f"/desk/patients/{int(patient_id)}", ("patient_saved", {}), patient=int(patient_id))


def desk_patient_access(patient_id):
    """Who has seen this patient's data (admins only): a row a reader, the latest first; a reader's days a
    click away (?reader=) ("Access record")."""
    patient = identity(clinic(), patient_id, desk_source(), "access")
    reader = query_text("reader")
    days = clinic().access.of_patient(patient["id"], reader=reader)[::-1] if reader else None
    return desk_page("access", patient=patient, readers=clinic().access.readers_of(patient["id"]), reader=reader,
                     days=days, when=functools.partial(local_moment, clinic().tz))


def local_moment(zone, moment):
    """DD/MM/YYYY HH:MM of an aware moment in the clinic's zone."""
    local = moment.astimezone(zone)
    return f"{format_date(local.date())} {local:%H:%M}"


def desk_access():
    """The record of reads of the last 30 days (?days=), summarised by reader and by patient, ids only (admins)."""
    days = int(query_text("days")) if (query_text("days") or "").isdigit() else 30
    summary = clinic().access.summary(clinic().today() - dt.timedelta(days=min(days, 3650)))
    return desk_page("access_summary", summary=summary, days=days, when=functools.partial(local_moment, clinic().tz))


def desk_patient_copy(patient_id):
    """The patient's copy as a download (admins only): ?format=json, else the page ("A patient's copy")."""
    copy = patient_copy(clinic(), patient_id, desk_source())
    as_json = bottle.request.query.get("format") == "json"
    name = f"paciente-{copy['patient']['id']}.{'json' if as_json else 'html'}"
    bottle.response.set_header("Content-Disposition", f'attachment; filename="{name}"')
    if as_json:
        bottle.response.content_type = "application/json; charset=utf-8"
        return json.dumps(copy, ensure_ascii=False, indent=2)
    bottle.response.content_type = "text/html; charset=utf-8"
    return copy_page(copy, clinic().tz)


def desk_erase_page(patient_id):
    """What an erasure request would do, to confirm (admins only)."""
    preview = erasure_preview(clinic(), patient_id, desk_source())
    return desk_page("erase", patient=preview["patient"], preview=preview, today=clinic().today())


def desk_erase(patient_id):
    """Record the erasure request: the coming appointments cancelled, the patient blocked ("Erasure and retention")."""
    result = request_erasure(clinic(), patient_id, desk_source(), desk_source())
    done("/desk/patients", ("erasure_done", {"count": len(result["cancelled"])}),
         ("erased_now", {}) if result["anonymised"] else
         ("erased_blocked", {"date": format_date(result["erasable_from"])}))


def desk_closures(error=None, status=200, covered=None):
    typed = {name: form(name) or "" for name in ("doctorId", "centerId", "dateFrom", "dateTo", "start", "end",
                                                 "reason")}
    return desk_page("closures", status=status, closures=clinic().closures(), doctors=clinic().doctors(),
                     center_names=catalog_names("centers"),
                     centers=desk_centers(), typed=typed, error=error, covered=covered)


def desk_add_closure():
    """Add a closure; when it covers booked appointments they are listed first, and saved on confirmation."""
    try:
        fields = all_fields({
            "doctor_id": lambda: form("doctorId"), "center_id": lambda: form("centerId"),
            "first": lambda: parse_date(form("dateFrom") or "", "dateFrom"),
            "last": lambda: parse_date(form("dateTo"), "dateTo") if form("dateTo") else None,
            "start": lambda: parse_time(form("start"), "start") if form("start") else None,
            "end": lambda: parse_time(form("end"), "end") if form("end") else None})
        covered = clinic().covered_by(*clinic().closure_fields(**fields), reader=desk_source())
        if covered and not form("confirmed"):
            return desk_closures(covered=covered)
        clinic().add_closure(**fields, reason=form("reason") or "", source=desk_source())
    except ClinicError as error:
        return desk_closures(desk_refusal(error), status_of(error))
    done("/desk/closures", ("closure_done", {}))


def desk_remove_closure_page(closure_id):
    """Ask before a closure goes: its slots are offered again at once."""
    closure = next((c for c in clinic().closures(since=dt.date(1900, 1, 1)) if c["id"] == int(closure_id)), None)
    if closure is None:
        raise ClinicError("CLOSURE_NOT_FOUND", "no closure with that id")
    return desk_page("remove_closure", closure=closure, center_names=catalog_names("centers"))


def desk_remove_closure(closure_id):
    clinic().remove_closure(closure_id, source=desk_source())
    done("/desk/closures", ("closure_removed", {}))


def desk_doctors(error=None, status=200, left=None, made=None):
    zone = clinic().tz
    with_feeds = {doctor_id: dt.datetime.fromisoformat(at).astimezone(zone) for doctor_id, _, at in feeds(clinic())}
    return desk_page("doctors", status=status, doctors=clinic().doctors(), error=error, left=left, made=made,
                     center_names=catalog_names("centers"), with_feeds=with_feeds,
                     weekdays=translator(bottle.request.environ["agenda.desk"]["lang"])("weekdays"))


def desk_doctor_feed(doctor_id):
    """Make a doctor's calendar feed (its address shown on this page only, once) or end it ("Calendar feeds")."""
    if form("action") == "revoke":
        revoke_feed(clinic(), doctor_id, desk_source())
        return desk_doctors()
    token = new_feed(clinic(), doctor_id, desk_source())
    parts = bottle.request.urlparts  # the address as this admin reached Agenda, through the trusted proxy
    return desk_doctors(made={"doctor": clinic().require_doctor(doctor_id)["name"],
                              "url": f"{parts.scheme}://{parts.netloc}/feeds/{token}.ics"})


def desk_retire(doctor_id):
    """Retire a doctor from a date; the appointments left after it are listed to rebook."""
    try:
        day = parse_date(form("date") or "", "date")
        doctor = clinic().require_doctor(doctor_id)
        left = clinic().appointments_from(doctor_id, day, desk_source())
        if not form("confirmed"):
            return desk_doctors(left={"doctor": dict(doctor), "date": format_date(day), "appointments": left})
        clinic().retire_doctor(doctor_id, day, source=desk_source())
    except ClinicError as error:
        return desk_doctors(desk_refusal(error), status_of(error))
    done("/desk/doctors", ("retired_done", {"doctor": doctor["name"], "date": format_date(day)}))


def desk_stylesheet():
    bottle.response.content_type = "text/css; charset=utf-8"
    return read_data_file(f"{TEMPLATES}/desk.css") + grid_rules().encode()


@functools.lru_cache(maxsize=None)
def grid_rules():
    """Where the timeline's items sit, as classes (the CSP allows no inline style): .rN starts at the
    grid's row N (one a minute, after the heading), .hN spans N minutes, .cN is column N."""
    return "\n".join([".r%d{grid-row-start:%d}" % (n, n) for n in range(2, 24 * 60 + 2)]
                     + [".h%d{grid-row-end:span %d}" % (n, n) for n in range(1, 24 * 60 + 1)]
                     + [".c%d{grid-column:%d}" % (n, n) for n in range(1, 60)]) + "\n"


DESK = {"desk": True}
ADMIN = {**DESK, "role": "admin"}  # pages and actions for the admin role only ("Roles")


DESK_ROUTES = [  # (method, path, handler, route config)
    ("GET", "/desk", desk_home, {**DESK, "open_page": True}),
    ("GET", "/desk/desk.css", desk_stylesheet, {**DESK, "open_page": True}),
    ("GET", "/desk/login", desk_login_page, {**DESK, "open_page": True}),
    ("POST", "/desk/login", desk_log_in, {**DESK, "open_page": True, "no_change": True}),
    ("POST", "/desk/logout", desk_log_out, {**DESK, "no_change": True}),
    ("GET", "/desk/kept/<kept>", desk_kept, DESK),
    ("GET", "/desk/desk.js", desk_script, {**DESK, "open_page": True}),
    ("GET", "/desk/version", desk_version, {**DESK, "passive": True}),  # the refresh poll: idle time untouched
    ("GET", "/desk/day", desk_day, DESK),
    ("GET", "/desk/week", desk_week, DESK),
    ("GET", "/desk/calls", desk_calls, DESK),
    ("GET", "/desk/waitlist", desk_waitlist, DESK),
    ("POST", "/desk/waitlist", desk_add_waiting, DESK),
    ("POST", "/desk/waitlist/<entry_id:int>/remove", desk_end_waiting, DESK),
    ("GET", "/desk/book", desk_book_page, DESK),
    ("POST", "/desk/book", desk_book, DESK),
    ("POST", "/desk/book/search", desk_book_page, {**DESK, "no_change": True}),  # a search by POST: no change
    ("GET", "/desk/appointments/<appointment_id:int>", desk_appointment, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/move", desk_move, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/cancel", desk_cancel, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/confirm", desk_confirm, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/cancel-rest", desk_cancel_rest, DESK),
    ("POST", "/desk/series", desk_series, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/attendance", desk_attendance, DESK),
    ("GET", "/desk/patients", desk_patients, DESK),
    ("POST", "/desk/patients", desk_patients, {**DESK, "no_change": True}),
    ("GET", "/desk/patients/<patient_id:int>", desk_patient, DESK),
    ("POST", "/desk/patients/<patient_id:int>", desk_correct_patient, DESK),
    ("GET", "/desk/patients/<patient_id:int>/book", desk_patient_book, DESK),
    ("GET", "/desk/patients/<patient_id:int>/access", desk_patient_access, ADMIN),
    ("GET", "/desk/access", desk_access, ADMIN),
    ("GET", "/desk/patients/<patient_id:int>/copy", desk_patient_copy, ADMIN),
    ("GET", "/desk/patients/<patient_id:int>/erase", desk_erase_page, ADMIN),
    ("POST", "/desk/patients/<patient_id:int>/erase", desk_erase, ADMIN),
    ("GET", "/desk/closures", desk_closures, DESK),
    ("POST", "/desk/closures", desk_add_closure, DESK),
    ("GET", "/desk/closures/<closure_id:int>/remove", desk_remove_closure_page, DESK),
    ("POST", "/desk/closures/<closure_id:int>/remove", desk_remove_closure, DESK),
    ("GET", "/desk/doctors", desk_doctors, ADMIN),
    ("GET", "/desk/report", desk_report, ADMIN),
    ("POST", "/desk/doctors/<doctor_id>/retire", desk_retire, ADMIN),
    ("POST", "/desk/doctors/<doctor_id>/feed", desk_doctor_feed, ADMIN),
]
