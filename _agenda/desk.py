"""The staff desk at /desk: its texts (Spanish and English), the plugin that guards every desk page,
the handlers and DESK_ROUTES."""

import datetime as dt
import functools
import hmac
import json
import logging
import secrets
import urllib.parse

import bottle
import phonenumbers

from .values import all_fields, ClinicError, format_date, invalid, parse_date, parse_time
from .store import read_data_file, TEMPLATES
from .staff import LOCK_AFTER, LOCK_MINUTES
from .rights import erasure_preview, patient_copy, request_erasure
from .web import clinic, query_text, raw_header, refusal_for, request_id, status_of

log = logging.getLogger("agenda")


# Every text the desk shows, in Spanish and English ("Staff desk"): one table.
TEXTS = {
    "app": ("Agenda", "Agenda"), "login": ("Entrar", "Log in"), "logout": ("Salir", "Log out"),
    "name": ("Nombre", "Name"), "surname": ("Apellidos", "Surname"), "password": ("Contraseña", "Password"),
    "nif": ("NIF", "NIF"), "phone": ("Teléfono", "Phone"), "birth": ("Nacimiento", "Birth date"),
    "today": ("Hoy", "Today"), "previous": ("Día anterior", "Previous day"), "next": ("Día siguiente", "Next day"),
    "center": ("Centro", "Center"), "all_centers": ("Todos los centros", "All centers"), "show": ("Ver", "Show"),
    "free": ("libre", "free"), "past": ("pasado", "past"), "closed": ("cerrado", "closed"),
    "taken": ("ocupado", "taken"), "beyond_horizon": ("fuera de plazo", "too far ahead"),
    "booked": ("reservada", "booked"), "confirmed": ("✓ confirmada", "✓ confirmed"),
    "unanswered": ("? sin respuesta", "? no answer"), "no_doctors": ("Nadie pasa consulta este día en este centro.",
                                                                    "No doctor sees patients that day at this center."),
    "search": ("Buscar paciente", "Find a patient"), "find": ("Buscar", "Find"),
    "search_hint": ("NIF, teléfono o nombre", "NIF, phone or name"), "no_patients": ("Ningún paciente encontrado.",
                                                                                   "No patient found."),
    "book": ("Reservar", "Book"), "book_title": ("Reservar cita", "Book an appointment"),
    "choose": ("Elegir", "Choose"), "new_patient": ("Paciente nuevo", "New patient"),
    "register_and_book": ("Registrar y reservar", "Register and book"), "reason": ("Motivo", "Reason"),
    "doctor": ("Médico", "Doctor"), "date": ("Fecha", "Date"), "time": ("Hora", "Time"), "status": ("Estado", "Status"),
    "appointment": ("Cita", "Appointment"), "move": ("Mover", "Move"), "move_to": ("Mover a", "Move to"),
    "cancel": ("Anular", "Cancel"), "cancel_reason": ("Motivo de la anulación", "Why it is cancelled"),
    "confirm": ("Marcar confirmada", "Mark confirmed"), "patient": ("Paciente", "Patient"),
    "appointments": ("Citas", "Appointments"), "none": ("Ninguna.", "None."), "back": ("Volver al día", "Back to the day"),
    "closures": ("Cierres", "Closures"), "add_closure": ("Añadir cierre", "Add a closure"),
    "everyone": ("Todos", "Everyone"), "from": ("Desde", "From"), "to": ("Hasta", "To"),
    "hours_from": ("Hora inicio (vacío: todo el día)", "From (blank: whole day)"), "hours_to": ("Hora fin", "To"),
    "remove": ("Quitar", "Remove"), "covers": ("Este cierre cubre estas citas, que habrá que llamar:",
                                              "This closure covers these appointments, which need a call:"),
    "save_anyway": ("Guardar el cierre", "Save the closure"), "doctors": ("Médicos", "Doctors"),
    "hours": ("Horario", "Hours"), "retire": ("Retirar desde", "Retire from"), "retired_from": ("Retirado desde",
                                                                                              "Retired from"),
    "left_to_rebook": ("Citas que quedan por reubicar:", "Appointments left to rebook:"),
    "retire_anyway": ("Retirar", "Retire"), "day": ("Día", "Day"),
    "weekdays": (("lun", "mar", "mié", "jue", "vie", "sáb", "dom"), ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")),
    "booked_done": ("Cita de {patient} reservada el {date} a las {time}.", "{patient} booked on {date} at {time}."),
    "moved_done": ("Cita de {patient} movida al {date} a las {time}.", "{patient}'s appointment moved to {date} at {time}."),
    "cancelled_done": ("Cita de {patient} anulada.", "{patient}'s appointment cancelled."),
    "confirmed_done": ("Cita de {patient} confirmada.", "{patient}'s appointment confirmed."),
    "closure_done": ("Cierre guardado.", "Closure saved."), "closure_removed": ("Cierre quitado.", "Closure removed."),
    "retired_done": ("{doctor} retirado desde el {date}.", "{doctor} retired from {date}."),
    "LOGIN_FAILED": ("Nombre o contraseña incorrectos. Tras {after} intentos fallidos el nombre queda bloqueado "
                     "desde aquí {minutes} minutos.", "Wrong name or password. After {after} failed logins a name is "
                                                      "locked from here for {minutes} minutes."),
    "LOGIN_BUSY": ("Demasiados intentos de entrar en este momento: vuelve a intentarlo en un minuto. Quien ya "
                   "ha entrado sigue trabajando.", "Too many logins right now: try again in a minute. Anyone "
                                                   "already logged in goes on working."),
    "admin_only": ("Esto lo hace la administración de la clínica: pídeselo a quien tenga ese papel.",
                   "This is for the clinic's admins: ask someone with that role."),
    "CSRF": ("El formulario ha caducado; vuelve a intentarlo.", "The form expired; try again."),
    "reason_taken": ("Otra cita acaba de ocupar ese hueco: elige otro.", "Another booking just took that slot: choose another."),
    "reason_off_grid": ("Esa hora no está en la agenda del médico.", "That time is not on the doctor's grid."),
    "reason_outside_hours": ("El médico no pasa consulta a esa hora.", "The doctor does not work at that time."),
    "reason_too_soon": ("Esa hora ya ha pasado o está demasiado cerca.", "That time is past or too soon."),
    "reason_closed": ("Ese hueco está cerrado.", "That slot is closed."),
    "reason_beyond_horizon": ("Esa fecha está demasiado lejos.", "That date is too far ahead."),
    "reason_wrong_center": ("A esa hora el médico está en otro centro.", "At that time the doctor is at another center."),
    "reason_doctor_retired": ("El médico ya no pasa consulta ese día.", "The doctor no longer works that day."),
    "PATIENT_ALREADY_EXISTS": ("Ya hay un paciente con ese NIF.", "A patient with that NIF exists."),
    "APPOINTMENT_PREVIOUSLY_CANCELLED": ("Esa cita ya estaba anulada.", "That appointment was already cancelled."),
    "APPOINTMENT_CANCELLED": ("Esa cita ya estaba anulada.", "That appointment was already cancelled."),
    "APPOINTMENT_ALREADY_CANCELLED": ("Esa cita ya estaba anulada.", "That appointment was already cancelled."),
    "DATABASE_BUSY": ("La agenda está ocupada en este momento: vuelve a intentarlo en unos segundos; no se ha "
                      "guardado nada.", "The agenda is busy right now: try again in a few seconds; nothing was saved."),
    "NOT_REPLICATED": ("Guardado aquí, pero la copia continua aún no lo tiene: avisa al administrador si se repite.",
                       "Saved here, but the continuous copy does not hold it yet: tell the admin if it happens again."),
    "access_title": ("Quién ha visto los datos de {patient}", "Who has seen {patient}'s data"),
    "access_link": ("Quién ha visto sus datos", "Who has seen their data"),
    "access_hint": ("Cada lectura de los datos del paciente, con quién, cuándo y qué; se guardan dos años.",
                    "Every read of the patient's data, by whom, when and what; kept for two years."),
    "reader": ("Quién", "Who"), "what": ("Qué", "What"), "shown_with": ("Con otros", "With others"),
    "allowed": ("permitido", "allowed"), "refused": ("denegado", "refused"),
    "kind_patient": ("ficha del paciente", "patient page"), "kind_appointment": ("cita", "appointment"),
    "kind_search": ("resultado de búsqueda", "search results"), "kind_day": ("lista del día", "day list"),
    "kind_print": ("día impreso", "printed day"), "kind_export": ("copia de sus datos", "copy of their data"),
    "kind_blocked": ("ficha bloqueada abierta", "blocked record opened"),
    "kind_access": ("este registro de lecturas", "this record of reads"),
    "copy_json": ("Copia de sus datos (JSON)", "Copy of their data (JSON)"),
    "copy_html": ("Copia de sus datos (página)", "Copy of their data (page)"),
    "erase": ("Solicitud de supresión", "Erasure request"),
    "erase_title": ("Solicitud de supresión de {patient}", "Erasure request of {patient}"),
    "erase_hint": ("Se anulan sus citas próximas y sus datos quedan bloqueados (guardados, sin usarse, fuera de "
                   "toda búsqueda) hasta el {date}, cuando la ley permite anonimizarlos.",
                   "Their coming appointments are cancelled and their data blocked (kept, unused, out of every "
                   "search) until {date}, when the law allows anonymising them."),
    "erase_now_hint": ("No ha tenido ninguna cita: sus datos se anonimizan ahora.",
                       "They never had an appointment: their data is anonymised now."),
    "erase_cancels": ("Se anularán estas citas (avise al paciente si hace falta):",
                      "These appointments will be cancelled (tell the patient if needed):"),
    "erase_confirm": ("Registrar la solicitud", "Record the request"),
    "erase_notice": ("Avise a la plataforma del asistente telefónico (encargada del tratamiento) de que debe "
                     "suprimir los datos del paciente {id}.", "Tell the voice agent's platform (our processor) "
                     "to erase the data of patient {id}."),
    "erasure_done": ("Solicitud de supresión registrada; {count} cita(s) anulada(s).",
                     "Erasure request recorded; {count} appointment(s) cancelled."),
    "erased_now": ("Datos anonimizados.", "Data anonymised."),
    "erased_blocked": ("Bloqueado hasta el {date}.", "Blocked until {date}."),
    "not_found": ("No existe.", "Not found."), "error": ("Algo ha fallado.", "Something went wrong."),
}


DESK_COOKIE, LOGIN_COOKIE, FLASH_COOKIE = "agenda_desk", "agenda_login", "agenda_flash"
FLASH_CHARS = 240  # a flash message's most characters: quoted, it stays far below a cookie's 4 KB


DESK_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
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


def translator(language):
    """t(key, **values): the text of TEXTS in this language."""
    index = 1 if language == "en" else 0

    def t(key, **values):
        text = TEXTS[key][index] if key in TEXTS else key
        return text.format(**values) if values else text
    return t


@functools.lru_cache(maxsize=None)
def desk_template(name):
    """A template of the desk's, compiled once (bottle's SimpleTemplate)."""
    return bottle.SimpleTemplate(read_data_file(f"{TEMPLATES}/{name}.tpl").decode("utf-8"))


def desk_page(template, status=200, **values):
    """A desk page: the template inside the layout, in the desk's language."""
    desk = bottle.request.environ["agenda.desk"]
    t = translator(desk["lang"])
    flash = bottle.request.get_cookie(FLASH_COOKIE)
    if flash:
        bottle.response.delete_cookie(FLASH_COOKIE, path="/desk")
    values = {"t": t, "desk": desk, "format_date": format_date, "dialled": dialled, "quote": urllib.parse.quote,
              "urlencode": urllib.parse.urlencode, "error": None, **values}
    body = desk_template(template).render(**values)
    bottle.response.status = status
    bottle.response.content_type = "text/html; charset=utf-8"
    return desk_template("layout").render(body=body, flash=urllib.parse.unquote(flash or ""), **values)


def dialled(e164):
    """A phone as reception dials it: Spanish numbers without +34, in groups (612 34 56 78)."""
    try:
        number = phonenumbers.parse(e164 or "")
    except phonenumbers.NumberParseException:
        return e164 or ""
    style = phonenumbers.PhoneNumberFormat.NATIONAL if number.country_code == 34 else \
        phonenumbers.PhoneNumberFormat.INTERNATIONAL
    return phonenumbers.format_number(number, style)


def desk_refusal(error):
    """What a receptionist reads for a refusal: their words for a known one, else its message."""
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    key = f"reason_{error.extra['reason']}" if error.extra.get("reason") else error.code
    return t(key) if key in TEXTS else error.message


def done(message, to):
    """After a change: say what changed (on the next page, in FLASH_CHARS at most) and go back to `to`."""
    secure = bottle.request.environ.get("wsgi.url_scheme") == "https"  # the trusted proxy's, via waitress
    if len(message) > FLASH_CHARS:
        message = message[:FLASH_CHARS - 1] + "…"
    bottle.response.set_cookie(FLASH_COOKIE, urllib.parse.quote(message), path="/desk", httponly=True,
                               samesite="strict", secure=secure, max_age=60)
    see_other(to)


def see_other(path):
    """303 to a path of this server, relative: a client's Host header never goes into it."""
    answer = bottle.response.copy(cls=bottle.HTTPResponse)
    answer.status, answer.body = 303, ""
    answer.set_header("Location", path)
    raise answer


def day_address(date, center_id):
    query = {"date": format_date(date)}
    if center_id:
        query["centerId"] = center_id
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

        def wrapper(*args, **kwargs):
            environ = bottle.request.environ
            request_id()
            for name, value in DESK_HEADERS.items():
                bottle.response.set_header(name, value)
            environ["agenda.desk"] = desk = signed_out(environ)
            try:
                refused = self.admit(desk, open_page) or self.allowed(desk, role, route.rule)
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
    def admit(desk, open_page):
        """None when the request may go on: no X-Signature, a live session (else to the login page),
        the session's CSRF token on a POST; else the refusal's page."""
        request = bottle.request
        if raw_header(request.environ, "X-Signature") is not None:
            return desk_error(400, "a desk page takes no X-Signature: sign in at /desk/login")
        session = accounts().desk_session(request.get_cookie(DESK_COOKIE))
        if session is None and not open_page:
            see_other("/desk/login")
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
            clinic().access.note(f"desk:{desk['name']}", "access", [bottle.request.url_args["patient_id"]], False)
        return desk_error(403, translator(desk["lang"])("admin_only"))


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
    return desk_page("login", status=status or (401 if error else 200), login_token=token, error=error, name=name)


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
        return desk_login_page(t(error.code, after=LOCK_AFTER, minutes=LOCK_MINUTES), name, status_of(error))
    secure = bottle.request.environ.get("wsgi.url_scheme") == "https"  # the trusted proxy's, via waitress
    bottle.response.set_cookie(DESK_COOKIE, token, path="/desk", httponly=True, samesite="strict", secure=secure)
    bottle.response.delete_cookie(LOGIN_COOKIE, path="/desk")
    see_other("/desk/day")


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
    """One center's day for the desk ("Staff desk"): each doctor who works there that day with their
    slots in time order, each in the state `slot_state` gives it (a taken one as its appointment). A
    retired doctor's day shows only the appointments left to rebook."""
    plans = {}
    for doctor, time_text, end_text, (state, detail) in clinic.day_slots(day, center_id):
        plan = plans.setdefault(doctor["doctor_id"], {"id": doctor["doctor_id"], "name": doctor["name"],
                                                      "speciality_id": doctor["speciality_id"], "slots": {}})
        if state != "doctor_retired":
            plan["slots"][time_text] = {"time": time_text, "end": end_text, "state": state, "reason": detail,
                                        "center_id": doctor["center_id"]}
    for appointment in clinic.appointments_on([day.isoformat()], center_id, reader=reader):
        plan = plans.setdefault(appointment["doctor_id"], {
            "id": appointment["doctor_id"], "name": appointment["doctor_name"],
            "speciality_id": appointment["speciality_id"], "slots": {}})
        start, end = appointment["start"], appointment["end"]
        for slot in [s for s in plan["slots"].values() if s["time"] < end and start < s["end"]]:
            del plan["slots"][slot["time"]]  # a slot the appointment overlaps shows the appointment instead
        plan["slots"][start] = {"time": start, "end": end, "state": "booked", "appointment": appointment}
    return sorted(({**plan, "slots": [plan["slots"][key] for key in sorted(plan["slots"])]}
                   for plan in plans.values() if plan["slots"]), key=lambda plan: (plan["name"], plan["id"]))


def desk_day():
    """The day view: one center, its doctors side by side, every slot free, booked, closed or past."""
    day = parse_date(query_text("date"), "date") if query_text("date") else clinic().today()
    if not 1900 <= day.year <= 2999:
        raise invalid("date must be a year from 1900 to 2999")
    centers = desk_centers()
    center_id = query_text("centerId") or (centers[0]["id"] if centers else None)
    plans = day_plan(clinic(), day, clinic().require_center(center_id), reader=desk_source())
    times = sorted({slot["time"] for plan in plans for slot in plan["slots"]})
    cells = {(plan["id"], slot["time"]): slot for plan in plans for slot in plan["slots"]}
    return desk_page("day", day=day, center_id=center_id, centers=centers, plans=plans, times=times, cells=cells,
                     previous=day_address(day - dt.timedelta(days=1), center_id),
                     following=day_address(day + dt.timedelta(days=1), center_id),
                     today=day_address(clinic().today(), center_id))


def desk_book_page(error=None, status=200):
    """Booking a free slot: the slot, a patient search, and a new patient's form."""
    slot = {name: query_text(name) or form(name) for name in ("doctorId", "date", "time", "centerId")}
    doctor = clinic().require_doctor(slot["doctorId"])
    q = form("q") or ""  # a search comes by POST only: what was typed never goes into a URL or the history
    typed = {name: form(name) or "" for name in ("name", "surname", "nif", "phone", "birthDate", "reason")}
    found = clinic().search_patients(q, reader=desk_source()) if q else None
    return desk_page("book", status=status, slot=slot, doctor=doctor, found=found,
                     q=q, typed=typed, error=error)


def desk_book():
    """Book the slot for a patient found, or for a new one registered in the same form."""
    source, slot = desk_source(), {name: form(name) for name in ("doctorId", "date", "time", "centerId")}
    try:
        patient_id = form("patientId") or desk_patient_id(source)
        day = parse_date(slot["date"] or "", "date")
        clinic().book(day=day, time_text=parse_time(slot["time"] or "", "time"), doctor_id=slot["doctorId"],
                      patient_id=patient_id, center_id=slot["centerId"], reason=form("reason"), source=source)
    except ClinicError as error:
        return desk_book_page(desk_refusal(error), status=status_of(error))
    patient = clinic().patient_record(patient_id)
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    full_name = " ".join(part for part in (patient["name"], patient["surname"]) if part)
    done(t("booked_done", patient=full_name, date=format_date(day), time=slot["time"]),
         day_address(day, slot["centerId"]))


def desk_patient_id(source):
    """The new patient of the booking form, registered; the same one when the form comes again (a
    booking refused after the registration, sent once more with another slot)."""
    fields = {name: form(name) for name in ("name", "surname", "nif", "phone", "birthDate")}
    try:
        return clinic().register_patient(fields, source=source)
    except ClinicError as error:
        known = clinic().search_patients(fields["nif"] or "") if error.code == "PATIENT_ALREADY_EXISTS" else []
        if len(known) == 1 and known[0]["name"] == (fields["name"] or "") and \
                str(known[0]["id"]) == error.extra["patientId"]:
            return str(known[0]["id"])
        raise


def desk_appointment(appointment_id, error=None, status=200):
    """One appointment: move it to a free slot of its doctor, cancel it with a reason, confirm it."""
    appointment = clinic().appointment(appointment_id, reader=desk_source())
    day = parse_date(query_text("date") or appointment["date"], "date")
    free = clinic().availability(doctor_id=appointment["doctor_id"], center_id=appointment["center_id"],
                                 first=day, last=day)
    return desk_page("appointment", status=status, appointment=appointment, free=free, day=day, error=error)


def desk_move(appointment_id):
    before = clinic().appointment(appointment_id)
    try:
        day = parse_date(form("date") or "", "date")
        time_text = parse_time(form("time") or "", "time")
        clinic().move(appointment_id, day=day, time_text=time_text, source=desk_source())
    except ClinicError as error:
        return desk_appointment(appointment_id, desk_refusal(error), status_of(error))
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    done(t("moved_done", patient=before["patient_name"], date=format_date(day), time=time_text),
         day_address(day, before["center_id"]))


def desk_cancel(appointment_id):
    before = clinic().appointment(appointment_id)
    clinic().cancel(appointment_id, reason=form("reason") or "cancelled at the desk", source=desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    done(t("cancelled_done", patient=before["patient_name"]), day_address(dt.date.fromisoformat(before["date"]),
                                                                          before["center_id"]))


def desk_confirm(appointment_id):
    before = clinic().appointment(appointment_id)
    clinic().confirm(appointment_id, True, source=desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    done(t("confirmed_done", patient=before["patient_name"]), day_address(dt.date.fromisoformat(before["date"]),
                                                                          before["center_id"]))


def desk_patients():
    """The patient search; the words searched come by POST, never in the address ("Staff desk")."""
    q = form("q") or "" if bottle.request.method == "POST" else ""
    return desk_page("patients", q=q, found=clinic().search_patients(q, reader=desk_source()) if q else None)


def desk_patient(patient_id):
    return desk_page("patient", patient=clinic().patient_record(patient_id, reader=desk_source()))


def desk_patient_access(patient_id):
    """Who has seen this patient's data (admins only): the access record, newest first ("Access record")."""
    patient = clinic().patient_by_id(patient_id)
    clinic().seen(desk_source(), "access", [patient["id"]])
    records = clinic().access_of(patient["id"])[::-1]
    zone = clinic().tz
    for record in records:
        moment = dt.datetime.fromisoformat(record["at"]).astimezone(zone)
        record["when"] = f"{format_date(moment.date())} {moment:%H:%M}"
    return desk_page("access", patient=dict(patient), records=records)


COPY_WORDS = {  # the patient's copy is in Spanish: what a patient reads of the clinic's words
    "statuses": {"booked": "reservada", "confirmed": "confirmada", "unanswered": "sin respuesta al recordatorio",
                 "cancelled": "anulada"},
    "actions": {"patient.created": "alta como paciente", "appointment.booked": "cita reservada",
                "appointment.moved": "cita cambiada de hora", "appointment.cancelled": "cita anulada",
                "appointment.confirmed": "cita confirmada", "appointment.declined": "cita rechazada en el recordatorio",
                "appointment.unanswered": "recordatorio sin respuesta", "appointment.released": "cita liberada "
                "tras el recordatorio sin respuesta", "patient.erasure_requested": "supresión solicitada",
                "patient.blocked_opened": "ficha bloqueada abierta por una autoridad",
                "patient.anonymised": "datos anonimizados"},
    "kinds": {"patient": "su ficha", "appointment": "una cita", "search": "una búsqueda", "day": "la lista del día",
              "print": "el día impreso", "export": "una copia de sus datos", "blocked": "su ficha bloqueada",
              "access": "este registro"},
}


def copy_page(copy, zone):
    """The patient's copy as a page they can read (Spanish), standing alone ("A patient's copy")."""
    def when(utc_text):
        moment = dt.datetime.fromisoformat(utc_text).astimezone(zone)
        return f"{format_date(moment.date())} {moment:%H:%M}"

    def sources(source):
        if source == "api":
            return "el asistente telefónico"
        return "recepción (" + source.split(":", 1)[1] + ")" if source.startswith("desk:") else "administración"
    return desk_template("copy").render(**copy, **COPY_WORDS, generated=copy["generatedAt"], when=when,
                                        day=format_date, sources=sources)


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
    preview = erasure_preview(clinic(), patient_id)
    return desk_page("erase", patient=dict(clinic().patient_by_id(patient_id)), preview=preview,
                     today=clinic().today())


def desk_erase(patient_id):
    """Record the erasure request: the coming appointments cancelled, the patient blocked ("Erasure and retention")."""
    result = request_erasure(clinic(), patient_id, desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    done_text = t("erased_now") if result["anonymised"] else t("erased_blocked",
                                                                 date=format_date(result["erasable_from"]))
    done(t("erasure_done", count=len(result["cancelled"])) + " " + done_text, "/desk/patients")


def desk_closures(error=None, status=200, covered=None):
    typed = {name: form(name) or "" for name in ("doctorId", "centerId", "dateFrom", "dateTo", "start", "end",
                                                 "reason")}
    return desk_page("closures", status=status, closures=clinic().closures(), doctors=clinic().doctors(),
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
        covered = clinic().covered_by(*clinic().closure_fields(**fields))
        if covered and not form("confirmed"):
            return desk_closures(covered=covered)
        clinic().add_closure(**fields, reason=form("reason") or "", source=desk_source())
    except ClinicError as error:
        return desk_closures(desk_refusal(error), status_of(error))
    done(translator(bottle.request.environ["agenda.desk"]["lang"])("closure_done"), "/desk/closures")


def desk_remove_closure(closure_id):
    clinic().remove_closure(closure_id, source=desk_source())
    done(translator(bottle.request.environ["agenda.desk"]["lang"])("closure_removed"), "/desk/closures")


def desk_doctors(error=None, status=200, left=None):
    return desk_page("doctors", status=status, doctors=clinic().doctors(), error=error, left=left,
                     weekdays=translator(bottle.request.environ["agenda.desk"]["lang"])("weekdays"))


def desk_retire(doctor_id):
    """Retire a doctor from a date; the appointments left after it are listed to rebook."""
    try:
        day = parse_date(form("date") or "", "date")
        doctor = clinic().require_doctor(doctor_id)
        left = clinic().appointments_from(doctor_id, day)
        if not form("confirmed"):
            return desk_doctors(left={"doctor": dict(doctor), "date": format_date(day), "appointments": left})
        clinic().retire_doctor(doctor_id, day, source=desk_source())
    except ClinicError as error:
        return desk_doctors(desk_refusal(error), status_of(error))
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    done(t("retired_done", doctor=doctor["name"], date=format_date(day)), "/desk/doctors")


def desk_stylesheet():
    bottle.response.content_type = "text/css; charset=utf-8"
    return read_data_file(f"{TEMPLATES}/desk.css")


DESK = {"desk": True}
ADMIN = {**DESK, "role": "admin"}  # pages and actions for the admin role only ("Roles")


DESK_ROUTES = [  # (method, path, handler, route config)
    ("GET", "/desk", desk_home, {**DESK, "open_page": True}),
    ("GET", "/desk/desk.css", desk_stylesheet, {**DESK, "open_page": True}),
    ("GET", "/desk/login", desk_login_page, {**DESK, "open_page": True}),
    ("POST", "/desk/login", desk_log_in, {**DESK, "open_page": True, "no_change": True}),
    ("POST", "/desk/logout", desk_log_out, {**DESK, "no_change": True}),
    ("GET", "/desk/day", desk_day, DESK),
    ("GET", "/desk/book", desk_book_page, DESK),
    ("POST", "/desk/book", desk_book, DESK),
    ("POST", "/desk/book/search", desk_book_page, {**DESK, "no_change": True}),  # a search by POST: no change
    ("GET", "/desk/appointments/<appointment_id:int>", desk_appointment, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/move", desk_move, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/cancel", desk_cancel, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/confirm", desk_confirm, DESK),
    ("GET", "/desk/patients", desk_patients, DESK),
    ("POST", "/desk/patients", desk_patients, {**DESK, "no_change": True}),
    ("GET", "/desk/patients/<patient_id:int>", desk_patient, DESK),
    ("GET", "/desk/patients/<patient_id:int>/access", desk_patient_access, ADMIN),
    ("GET", "/desk/patients/<patient_id:int>/copy", desk_patient_copy, ADMIN),
    ("GET", "/desk/patients/<patient_id:int>/erase", desk_erase_page, ADMIN),
    ("POST", "/desk/patients/<patient_id:int>/erase", desk_erase, ADMIN),
    ("GET", "/desk/closures", desk_closures, DESK),
    ("POST", "/desk/closures", desk_add_closure, DESK),
    ("POST", "/desk/closures/<closure_id:int>/remove", desk_remove_closure, DESK),
    ("GET", "/desk/doctors", desk_doctors, ADMIN),
    ("POST", "/desk/doctors/<doctor_id>/retire", desk_retire, ADMIN),
]
