"""The clinic's own booking page at /reservar ("The booking page"): `BOOKING_ROUTES`, its one route table. The
patient chooses center, speciality, doctor or anyone, the visit's type and a time (GET pages: a choice is no one's
data), then types their details (POST, each form's hidden fields signed: no cookie, so it works in a frame); the
booking waits for the link of the e-mail it sends (GET shows, POST confirms). No JavaScript, no patient's data in
an address."""

import datetime as dt
import ipaddress
import logging
import re
import urllib.parse

import bottle

from ..values.refusals import ClinicError
from ..storage.shipped import read_data_file, TEMPLATES
from ..domain import web_booking
from ..domain.availability import catalog_lists
from ..web.answers import rooted_page, status_of
from ..words.pages import desk_template, long_date, plain
from ..words.texts import refusal_fields, refusal_text, translator
from .booking_form import (FormRefused, INPUT_OF, checked, parsed_slot, signed, typed, verified)
from .pages import preferred_language

log = logging.getLogger("agenda")
ANYONE = "cualquiera"
STEPS = ("centro", "especialidad", "medico", "tipo")  # what the patient chooses, in order, each by its id
ANCESTOR = re.compile(r"(?:https?://)?(?:\*\.)?[a-z0-9.-]+(?::\d{1,5})?|'self'", re.IGNORECASE)  # a CSP source
COLOR = re.compile(r"#[0-9a-fA-F]{6}")
SHARED_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def clinic():
    return bottle.request.app.clinic


def frame_ancestors(setting):
    """The CSP's frame-ancestors of the `web_frame_ancestors` setting: the sites named (only what a CSP source
    may be), or 'none'."""
    sources = [part for part in re.split(r"[\s,]+", setting or "") if ANCESTOR.fullmatch(part)]
    return " ".join(sources) or "'none'"


def headers():
    """The page's headers: the link's, but framed only by the sites the clinic names (then no X-Frame-Options)."""
    ancestors = frame_ancestors(clinic().settings.web_frame_ancestors)
    for name, value in SHARED_HEADERS.items():
        bottle.response.set_header(name, value)
    bottle.response.set_header("Content-Security-Policy", f"default-src 'self'; frame-ancestors {ancestors};"
                                                         " form-action 'self'; base-uri 'none'")
    if ancestors == "'none'":
        bottle.response.set_header("X-Frame-Options", "DENY")


def language():
    """The page's language: the switch's (`idioma`, in the address or the form), else the browser's."""
    asked = bottle.request.params.getunicode("idioma") or ""
    return asked if asked in ("es", "en") else preferred_language()


def page(template, status=200, lang=None, switch=None, **values):
    """A page of the booking's, in `lang`, with the clinic's name; `switch`, the address of this page in the other
    language (None: no switch)."""
    lang = lang or language()
    headers()
    bottle.response.status = status
    t, settings = translator(lang), clinic().settings
    name = plain(settings.clinic_name) or t("the_clinic")
    head = desk_template("booking_head").render(t=t, lang=lang, clinic_name=name, switch=switch)
    chosen = desk_template("booking_summary").render(summary=values.get("summary"))
    return rooted_page(desk_template(template).render(t=t, lang=lang, head=head, chosen=chosen, **values))


TITLES = {"web_sent": "web_sent_title", "web_confirmed": "web_confirm_title", "web_already": "web_confirm_title"}


def said(key, status, lang=None, again=False, **values):
    """A short page: what happened (`key`), and the way to book again when `again`."""
    return page("booking_message", status, lang=lang, key=key, values=values, again=again,
                title=TITLES.get(key, "web_title"))


def closed():
    return said("web_closed", 404)


def is_open():
    return clinic().settings.web_booking == "on"


# Choosing: center, speciality, doctor, type and a week's times, each a GET page (nothing changes)

def choices():
    """The choices in the address, checked against the offer: (offer, the choices resolved (a step with one
    option chosen for the patient), (the first step still to choose, its options) or None, whether the address
    asked that step something the offer does not hold)."""
    offer = web_booking.web_offer(clinic())
    asked = {name: bottle.request.query.getunicode(name) or "" for name in STEPS}
    chosen, steps = {}, (("centro", centers_of), ("especialidad", specialities_of), ("medico", doctors_of),
                         ("tipo", types_of))
    for name, options_of in steps:
        options = options_of(offer, chosen)
        if name == "tipo" and not options:
            chosen[name] = ""
            continue
        ids = [option["id"] for option in options]
        if asked[name] in ids:
            chosen[name] = asked[name]
        elif len(ids) == 1:
            chosen[name] = ids[0]
        else:
            return offer, chosen, (name, options), bool(asked[name])
    return offer, chosen, None, False


def centers_of(offer, chosen):
    return offer["centers"]


def specialities_of(offer, chosen):
    held = {doctor["speciality_id"] for doctor in offer["doctors"] if chosen["centro"] in doctor["center_ids"]}
    return [speciality for speciality in offer["specialities"] if speciality["id"] in held]


def doctors_of(offer, chosen):
    doctors = [doctor for doctor in offer["doctors"] if chosen["centro"] in doctor["center_ids"]
               and doctor["speciality_id"] == chosen["especialidad"]]
    return doctors if len(doctors) < 2 else [{"id": ANYONE, "name": None}] + doctors


def types_of(offer, chosen):
    """The visit types of the doctor chosen, or of any of them for anyone; each once."""
    found = {}
    for doctor in doctors_of(offer, chosen):
        if chosen["medico"] in (ANYONE, doctor["id"]):
            for kind in doctor.get("types") or ():
                found.setdefault(kind["id"], kind)
    return list(found.values())


def address_of(values, **more):
    """/reservar with these choices (and `idioma`) in its query, blanks left out."""
    query = {name: value for name, value in {**values, **more}.items() if value}
    return "/reservar" + ("?" + urllib.parse.urlencode(query) if query else "")


def booking_start():
    """GET /reservar: the next thing to choose, or the week's times once all is chosen."""
    if not is_open():
        return closed()
    try:
        offer, chosen, step, wrong = choices()
    except ClinicError as error:
        if error.code == "WEB_CLOSED":
            return closed()
        raise
    lang = language()
    if step is not None:
        name, options = step
        if not options:  # the offer holds nothing
            return closed()
        links = [(option.get("name") or translator(lang)("web_anyone"),
                  address_of({**kept(chosen), name: option["id"], "idioma": lang}), option.get("minutes"))
                 for option in options]
        return page("booking_choose", 400 if wrong else 200, lang=lang, step=name, links=links,
                    wrong=wrong, summary=summary(offer, chosen, lang), back=back_link(name, lang),
                    switch=address_of({**asked_choices(), "idioma": other(lang)}))
    return times_page(offer, chosen, lang, week_asked())


def asked_choices():
    return {name: bottle.request.query.getunicode(name) or "" for name in STEPS + ("semana",)}


def back_link(step, lang):
    """The address of the step before this one: the choices asked before it, the last of them left out; None when
    the patient chose nothing yet (a step with one option is chosen for them)."""
    asked = asked_choices()
    before = [name for name in STEPS[:STEPS.index(step) if step in STEPS else len(STEPS)] if asked[name]]
    if not before:
        return None
    return address_of({name: asked[name] for name in before[:-1]}, idioma=lang)


def kept(chosen):
    return {name: value for name, value in chosen.items() if value}


def other(lang):
    return "en" if lang == "es" else "es"


def summary(offer, chosen, lang):
    """[(label, what was chosen)] so far, in words."""
    t, names = translator(lang), catalog(offer)
    labels = {"centro": "center", "especialidad": "web_speciality", "medico": "web_doctor", "tipo": "web_type"}
    return [(t(labels[name]), t("web_anyone") if value == ANYONE else names.get((name, value), value))
            for name, value in chosen.items() if value]


def catalog(offer):
    """{(choice, id): name} of everything the offer names."""
    names = {("centro", center["id"]): center["name"] for center in offer["centers"]}
    names.update({("especialidad", item["id"]): item["name"] for item in offer["specialities"]})
    for doctor in offer["doctors"]:
        names[("medico", doctor["id"])] = doctor["name"]
        names.update({("tipo", kind["id"]): kind["name"] for kind in doctor.get("types") or ()})
    return names


def week_asked():
    """The first day of the week asked for (`semana`), or None."""
    try:
        return dt.date.fromisoformat(bottle.request.query.get("semana") or "")
    except ValueError:
        return None


def weeks(asked):
    """(the week's first day, the previous week's or None, the next's or None): weeks from today up to the web's
    horizon; a day outside them is the first week."""
    today = clinic().today()
    last = today + dt.timedelta(days=clinic().settings.web_horizon_days)
    start = asked if asked and today <= asked <= last and (asked - today).days % 7 == 0 else today
    before, after = start - dt.timedelta(days=7), start + dt.timedelta(days=7)
    return start, before if before >= today else None, after if after <= last else None


def times_page(offer, chosen, lang, asked, error=None, status=200):
    """The week's free times of what was chosen, as radios in a form that carries the choices signed."""
    t, names = translator(lang), catalog(offer)
    start, before, after = weeks(asked)
    found = web_booking.web_times(clinic(), center_id=chosen["centro"], speciality_id=chosen["especialidad"],
                                  doctor_id=None if chosen["medico"] == ANYONE else chosen["medico"],
                                  type_id=chosen["tipo"] or None, week_start=start)
    days = [(long_date(t, dt.date.fromisoformat(str(day))),
             [(f"{day} {time_text} {doctor}", time_text, names.get(("medico", doctor)) if chosen["medico"] == ANYONE
               else None) for time_text, doctor in times]) for day, times in found if times]
    base = {**kept(chosen), "idioma": lang}
    return page("booking_times", status, lang=lang, days=days, error=error, summary=summary(offer, chosen, lang),
                first=short_date(t, start), last=short_date(t, start + dt.timedelta(days=6)),
                before=address_of(base, semana=before and before.isoformat()) if before else None,
                after=address_of(base, semana=after.isoformat()) if after else None,
                hidden=signed(form_key(), "horas", {**chosen, "idioma": lang}, clinic().clock()),
                back=back_link("semana", lang),
                switch=address_of({**asked_choices(), "idioma": other(lang)}))


def short_date(t, day):
    """'23 de noviembre' / '23 November'."""
    return t("web_day_month", day=day.day, month=t("month_names")[day.month - 1])


def form_key():
    return bottle.request.app.booking_key


# The details: a POST with the choices and the time signed; then the one request that books

def chosen_in(values):
    return {name: values[name] for name in STEPS}


def form_or_refusal(step):
    """(the signed values of this step's form, None) or (None, the refusal's page)."""
    if not is_open():
        return None, closed()
    try:
        if cross_site():
            raise FormRefused("tampered")
        return verified(form_key(), step, posted(), clinic().clock()), None
    except FormRefused as refused:
        status = 400 if refused.why == "tampered" else 403
        return None, said(f"web_form_{refused.why}", status, again=True)


def cross_site():
    """Whether the browser says another site sent this POST (`Sec-Fetch-Site`): a signed form is no one's, so a page
    elsewhere could post it from its visitors' addresses; the page's own forms, framed or not, are same-origin."""
    return bottle.request.get_header("Sec-Fetch-Site", "").strip().lower() == "cross-site"


def posted():
    """The POST's fields as text; FormRefused ("tampered") when its body is not UTF-8, as no form of the page's
    writes it."""
    try:
        return bottle.request.forms.decode()
    except UnicodeDecodeError:
        raise FormRefused("tampered") from None


def details_start():
    """POST /reservar/datos: the time chosen (still free), then the details' form."""
    values, refusal = form_or_refusal("horas")
    if refusal is not None:
        return refusal
    lang, slot = values["idioma"] or "es", parsed_slot(bottle.request.forms.getunicode("hueco"))
    offer = web_booking.web_offer(clinic())
    if slot is None or not still_free(values, slot):
        week = nearest_week(slot[0]) if slot else None
        return times_page(offer, chosen_in(values), lang, week, error="web_taken" if slot else "web_no_slot",
                          status=409 if slot else 400)
    day, time_text, doctor = slot
    return details_page(offer, {**values, "dia": day, "hora": time_text, "medico_hueco": doctor}, lang)


def still_free(values, slot):
    day, time_text, doctor = slot
    found = web_booking.web_times(clinic(), center_id=values["centro"], speciality_id=values["especialidad"],
                                  doctor_id=None if values["medico"] == ANYONE else values["medico"],
                                  type_id=values["tipo"] or None, week_start=dt.date.fromisoformat(day))
    return any(str(found_day) == day and (time_text, doctor) in [tuple(pair) for pair in times]
               for found_day, times in found)


def nearest_week(day_text):
    """The first day of the page's week that holds this day."""
    today = clinic().today()
    day = dt.date.fromisoformat(day_text)
    return today + dt.timedelta(days=max(0, (day - today).days) // 7 * 7)


INPUTS = [  # (name, label, type, autocomplete, hint) of the details' inputs, in order
    ("nombre", "web_name", "text", "given-name", "web_name_hint"),
    ("apellidos", "web_surname", "text", "family-name", None),
    ("nacimiento", "web_birth", "text", "bday", "web_birth_hint"),
    ("nif", "web_nif", "text", "off", "web_nif_hint"),
    ("telefono", "web_phone", "tel", "tel", None),
    ("correo", "web_email", "email", "email", "web_email_hint"),
]


def details_page(offer, values, lang, details=None, error=None, status=200):
    """The details' form: what was chosen, each input with its label, a refusal's words beside each field it
    names and all of them at the top, what was typed kept."""
    t, names = translator(lang), catalog(offer)
    named = refusal_fields(t, error) if error else {}
    fields = {INPUT_OF[field]: words for field, words in named.items() if field in INPUT_OF}
    general = " ".join(words for field, words in named.items() if field not in INPUT_OF) or (
        refusal_text(t, error) if error and not named else None)
    when = (long_date(t, dt.date.fromisoformat(values["dia"])), values["hora"])
    chosen = summary(offer, chosen_in(values), lang)
    if values["medico"] == ANYONE:
        chosen.append((t("web_doctor"), names.get(("medico", values["medico_hueco"]), "")))
    insurances, none = insurances_for(values)
    details = details or typed({})
    return page("booking_details", status, lang=lang, summary=chosen, when=when, typed=details.values,
                child=details.child, accepted=details.privacy, fields=fields, inputs=INPUTS,
                general=general, insurances=insurances, none=none, back=address_of(
                    {**kept(chosen_in(values)), "semana": nearest_week(values["dia"]).isoformat(), "idioma": lang}),
                privacy=clinic().settings.web_privacy, hidden=signed(form_key(), "datos", values, clinic().clock()))


def insurances_for(values):
    """([(id, name)] of the insurances the time's doctor takes at its center, every one when they take any; whether
    a patient without one (private) may book with them)."""
    lists = catalog_lists(clinic())
    names = {row["id"]: row["name"] for row in lists["insurances"]}
    only = next((doctor["insurances"].get(values["centro"]) for doctor in lists["doctors"]
                 if doctor["id"] == values["medico_hueco"]), None)
    return [(key, names[key]) for key in only or names if key in names], not only


def booking_post():
    """POST /reservar/enviar: the details checked, then the one request; the answer names the masked address."""
    values, refusal = form_or_refusal("datos")
    if refusal is not None:
        return refusal
    lang, details = values["idioma"] or "es", typed(posted())
    offer = web_booking.web_offer(clinic())
    try:
        birth = checked(details)
        masked = web_booking.request_booking(clinic(), ask_of(values, details, birth, lang),
                                             client_address())
    except ClinicError as error:
        return booking_refused(offer, values, lang, details, error)
    return said("web_sent", 200, lang=lang, email=masked, minutes=clinic().settings.web_confirm_minutes)


def client_address():
    """The address the bounds count the booking by, as waitress gives it; said in the log when it is a proxy's on this
    machine that waitress was not told to trust, as every patient would then be one address ("The booking page")."""
    address = bottle.request.environ.get("REMOTE_ADDR") or ""
    try:
        local = ipaddress.ip_address(address).is_loopback
    except ValueError:
        local = False
    if local and bottle.request.get_header("X-Forwarded-For"):
        log.warning("the booking page counts every patient as the proxy's one address: start agenda with"
                    " --trusted-proxy (AGENDA_TRUSTED_PROXY) naming it")
    return address


def ask_of(values, details, birth, lang):
    typed_values = details.values
    return web_booking.WebAsk(
        center_id=values["centro"], speciality_id=values["especialidad"],
        doctor_id=values["medico_hueco"] or None, type_id=values["tipo"] or None, day=values["dia"],
        time=values["hora"], name=typed_values["nombre"], surname=typed_values["apellidos"], birth_date=birth,
        nif=typed_values["nif"], child=details.child, phone=typed_values["telefono"], email=typed_values["correo"],
        insurance_id=typed_values["aseguradora"] or None, language=lang)


def booking_refused(offer, values, lang, details, error):
    """A booking refused: closed (404), busy (429), the time taken meanwhile (that week's other times), else the
    form again with each field's words."""
    if error.code == "WEB_CLOSED":
        return closed()
    if error.code == "WEB_BUSY":
        return said("web_busy", 429, lang=lang)
    if error.code == "SLOT_NOT_AVAILABLE" and error.field in (None, "time", "date", "slot", "doctorId"):
        return times_page(offer, chosen_in(values), lang, nearest_week(values["dia"]), error="web_taken", status=409)
    status = status_of(error)
    return details_page(offer, values, lang, details, error, status if 400 <= status < 500 else 400)


# The e-mail's link: GET shows the visit to confirm (a scanner may open it), POST confirms

def confirm_page(token):
    view = web_booking.confirm_view(clinic(), token)
    if view is None:
        return said("web_link_gone", 404)
    if view["state"] != "pending":
        return said("web_already" if view["state"] == "confirmed" else "web_request_expired", 200,
                    again=view["state"] != "confirmed")
    t = translator(language())
    lines = [(t("mail_when"), long_date(t, dt.date.fromisoformat(str(view["date"])))), (t("mail_at"), view["time"]),
             (t("mail_where"), plain(view["center"]))]
    if view.get("doctor"):
        lines.append((t("mail_doctor"), plain(view["doctor"])))
    return page("booking_confirm", lines=lines, token=token, switch=f"/reservar/confirmar/{token}?idioma="
                                                                      f"{other(language())}")


def confirm_post(token):
    if cross_site():  # another site's button: the page to confirm, changing nothing
        answer = confirm_page(token)
        bottle.response.status = 403
        return answer
    done = web_booking.confirm_booking(clinic(), token)
    key = {"confirmed": "web_confirmed", "already": "web_already"}.get(done, "web_request_expired")
    return said(key, 200, again=key == "web_request_expired")


def booking_stylesheet():
    """The page's stylesheet, the clinic's colour first (`web_color`), with the text on it black or white,
    whichever reads better."""
    bottle.response.content_type = "text/css; charset=utf-8"
    bottle.response.set_header("Cache-Control", "max-age=300")
    color = clinic().settings.web_color if COLOR.fullmatch(clinic().settings.web_color or "") else "#0b5cad"
    on, text = on_color(color)
    return (f":root {{ --accent: {color}; --on-accent: {on}; --accent-text: {text}; }}\n".encode()
            + read_data_file(f"{TEMPLATES}/booking.css"))


def luminance(color):
    channels = [int(color[index:index + 2], 16) / 255 for index in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(first, second):
    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def on_color(color):
    """(the text on the colour: white or near-black, whichever contrasts more; the colour as text on white when it
    reads at 4.5:1, else the page's dark ink)."""
    on = "#ffffff" if contrast(color, "#ffffff") >= contrast(color, "#111111") else "#111111"
    return on, color if contrast(color, "#ffffff") >= 4.5 else "#1d2733"


def booking_error_page(http_error):
    """Bottle's own errors under /reservar (an unknown path, a wrong method): the booking's page, never JSON."""
    return said("web_gone", http_error.status_code if http_error.status_code in (404, 405) else 404)


TOKEN = "<token:re:[A-Za-z0-9_-]{1,100}>"
BOOKING = {"patient": True}  # the link's plugin: a request id, a crash as a page
BOOKING_ROUTES = [  # (method, path, handler, route config)
    ("GET", "/reservar/reservar.css", booking_stylesheet, {**BOOKING, "no_change": True}),
    ("GET", "/reservar", booking_start, BOOKING),
    ("POST", "/reservar/datos", details_start, {**BOOKING, "no_change": True}),
    ("POST", "/reservar/enviar", booking_post, BOOKING),
    ("GET", f"/reservar/confirmar/{TOKEN}", confirm_page, BOOKING),
    ("POST", f"/reservar/confirmar/{TOKEN}", confirm_post, BOOKING),
]
