"""The desk's session and the files every page loads: the login page, logging in and out, a kept form
offered again ("Kept forms"), the refresh poll (`/desk/version`), `desk.css` with the timeline's grid
classes (`grid_rules`, `MOST_COLUMNS`) and `desk.js`."""

import functools
import hmac
import json
import re
import secrets

import bottle

from ..values.fields import clinic_moment
from ..values.refusals import ClinicError
from ..storage.shipped import read_data_file, TEMPLATES
from ..domain.identity import identity
from ..domain.staff import DEVICE_DAYS, LOCK_AFTER, LOCK_MINUTES
from ..words.texts import translator
from ..web.answers import clinic, query_text, rooted, status_of
from .shared import (accounts, catalog_names, changes_version, DESK_COOKIE, desk_error, desk_page, desk_source,
                          DEVICE_COOKIE, form, LOGIN_COOKIE, see_other, set_desk_cookie)


def desk_home():
    see_other("/desk/day")


def desk_login_page(error=None, name="", status=None):
    token = secrets.token_urlsafe(24)
    set_desk_cookie(LOGIN_COOKIE, token)
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
        login = accounts().log_in(name, bottle.request.forms.getunicode("password") or "",
                                  bottle.request.environ.get("REMOTE_ADDR") or "unknown",
                                  bottle.request.get_cookie(DEVICE_COOKIE))
    except ClinicError as error:
        if error.code == "LOGIN_BUSY":
            bottle.response.set_header("Retry-After", "60")
        until = error.extra.get("until")
        until = clinic_moment(until, clinic().tz, "%H:%M")
        return desk_login_page(t(error.code, after=LOCK_AFTER, minutes=LOCK_MINUTES, until=until), name,
                               status_of(error))
    set_desk_cookie(DESK_COOKIE, login.token)
    set_desk_cookie(DEVICE_COOKIE, login.device, max_age=DEVICE_DAYS * 24 * 3600)  # kept after logging out
    bottle.response.delete_cookie(LOGIN_COOKIE, path=rooted("/desk"))
    kept = kept_id(form("kept"))
    see_other(f"/desk/kept/{kept}" if kept else "/desk/day")


def desk_kept(kept):
    """A form sent after its session ended, offered to its sender to send again, once ("Kept forms")."""
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    taken = kept_id(kept) and accounts().take_kept_form(kept, bottle.request.environ["agenda.desk"]["name"])
    if not taken:
        return desk_error(404, t("kept_gone"))
    path, fields = taken
    return desk_page("kept", path=path, fields=fields, shown=kept_shown(t, fields))


NAMED_BY_ID = {"doctorId": "doctors", "centerId": "centers", "insuranceId": "insurances",
               "specialityId": "specialities", "typeId": "types"}


def kept_shown(t, fields):
    """[(label, words)] of a kept form's filled fields as reception reads them: the names of the doctor, center,
    insurance, speciality, visit type and patient (through the one door) its ids stand for, a move's slot spelled
    out; what has no name, as typed."""
    names = {kind: catalog_names(kind) for kind in {*NAMED_BY_ID.values(), "doctors", "centers"}}
    shown = []
    for name, value in fields:
        if not value:
            continue
        words = names[NAMED_BY_ID[name]].get(value, value) if name in NAMED_BY_ID else value
        if name == "patientId":
            words = patient_name(value) or value
        elif name == "slot" and value.count("|") == 3:  # a move's: DD/MM/YYYY|HH:MM|DOCTOR|CENTER
            date, time, doctor, center = value.split("|")
            words = " · ".join(filter(None, (f"{date} {time}", names["doctors"].get(doctor, doctor),
                                             names["centers"].get(center, center))))
        label = t(f"field_{name}")
        shown.append((name if label.startswith("field_") else label, words))
    return shown


def patient_name(patient_id):
    """A patient's name through the one door, the read noted for this receptionist; None for no live patient."""
    try:
        return identity(clinic(), patient_id, desk_source(), "patient")["full_name"]
    except ClinicError:
        return None


def desk_log_out():
    accounts().log_out(bottle.request.get_cookie(DESK_COOKIE))
    bottle.response.delete_cookie(DESK_COOKIE, path=rooted("/desk"))
    see_other("/desk/login")


def desk_version():
    """{"version": N} for the page's refresh poll; it never restarts the session's idle time."""
    bottle.response.content_type = "application/json"
    return json.dumps({"version": changes_version()})


def desk_script():
    bottle.response.content_type = "text/javascript; charset=utf-8"
    return read_data_file(f"{TEMPLATES}/desk.js")


def desk_drag_script():
    """The day's and the week's drag and keys ("Drag to move, and to lengthen"), served like desk.js."""
    bottle.response.content_type = "text/javascript; charset=utf-8"
    return read_data_file(f"{TEMPLATES}/drag.js")


def desk_stylesheet():
    bottle.response.content_type = "text/css; charset=utf-8"
    return read_data_file(f"{TEMPLATES}/desk.css") + grid_rules().encode()


MOST_COLUMNS = 300  # the most doctors a center's day draws side by side (the axis is column 1)


@functools.lru_cache(maxsize=None)
def grid_rules():
    """Where the timeline's items sit, as classes (the CSP allows no inline style): .rN starts at the
    grid's row N (one a minute, after the heading), .hN spans N minutes, .cN is column N; .wN is N% wide (the
    month's bars)."""
    return "\n".join([".r%d{grid-row-start:%d}" % (n, n) for n in range(2, 24 * 60 + 2)]
                     + [".h%d{grid-row-end:span %d}" % (n, n) for n in range(1, 24 * 60 + 1)]
                     + [".c%d{grid-column:%d}" % (n, n) for n in range(1, MOST_COLUMNS + 2)]
                     + [".w%d{width:%d%%}" % (n, n) for n in range(101)]) + "\n"
