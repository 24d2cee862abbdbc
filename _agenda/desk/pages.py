"""The desk's templates, compiled once, and the patient's copy as a page of its own ("A patient's copy"),
which the desk and the CLI both write."""

import datetime as dt
import functools

import bottle

from ..values.fields import format_date
from ..storage.shipped import read_data_file, TEMPLATES
from ..domain.patients import TYPED
from .texts import TEXTS


@functools.lru_cache(maxsize=None)
def desk_template(name):
    """A template of the desk's, compiled once (bottle's SimpleTemplate)."""
    return bottle.SimpleTemplate(read_data_file(f"{TEMPLATES}/{name}.tpl").decode("utf-8"))


COPY_WORDS = {  # the patient's copy is in Spanish: what a patient reads of the clinic's words
    "statuses": {"booked": "reservada", "confirmed": "confirmada", "unanswered": "sin respuesta al recordatorio",
                 "cancelled": "anulada"},
    "actions": {"patient.created": "alta como paciente", "appointment.booked": "cita reservada",
                "appointment.moved": "cita cambiada de hora", "appointment.cancelled": "cita anulada",
                "appointment.confirmed": "cita confirmada", "appointment.declined": "cita rechazada en el recordatorio",
                "appointment.unanswered": "recordatorio sin respuesta", "appointment.released": "cita liberada "
                "tras el recordatorio sin respuesta", "patient.erasure_requested": "supresión solicitada",
                "patient.blocked_opened": "ficha bloqueada abierta por una autoridad",
                "patient.anonymised": "datos anonimizados", "appointment.squeezed": "cita urgente añadida (sobrecita)",
                "appointment.arrived": "llegada a la consulta", "appointment.seen": "atendido en consulta",
                "appointment.no_show": "no acudió a la cita", "appointment.attendance_undone": "asistencia corregida",
                "patient.rectified": "datos corregidos", "patient.messages_stopped": "mensajes detenidos"},
    "fields": {"birthDate": "Fecha de nacimiento"},  # else the desk's words (TEXTS' field_NAME)
    "kinds": {"patient": "su ficha", "appointment": "una cita", "search": "una búsqueda", "day": "la lista del día",
              "print": "el día impreso", "export": "una copia de sus datos", "blocked": "su ficha bloqueada",
              "access": "este registro", "preview": "una lista antes de un cambio", "change": "un cambio en su cita",
              "feed": "el calendario de su médico", "message": "un mensaje sobre su cita",
              "link": "su cita, desde el enlace de un mensaje"},
}


def copy_page(copy, zone):
    """The patient's copy as a page they can read (Spanish), standing alone ("A patient's copy")."""
    def when(utc_text):
        moment = dt.datetime.fromisoformat(utc_text).astimezone(zone)
        return f"{format_date(moment.date())} {moment:%H:%M}"

    def sources(source):
        if source == "api":
            return "el asistente telefónico"
        if source.startswith("feed:"):
            return "el calendario de su médico"
        if source in ("link", "patient"):
            return "usted, desde el enlace de un mensaje"
        if source == "mail":
            return "el envío de mensajes de la clínica"
        return "recepción (" + source.split(":", 1)[1] + ")" if source.startswith("desk:") else "administración"

    def shown(column, value):
        if column.shape == "yes_no":
            return {1: "sí", 0: "no"}.get(value, "")
        if column.shape == "language":
            return "inglés" if value == "en" else "español"
        return format_date(value) if column.shape == "date" and value else value or ""
    details = [(COPY_WORDS["fields"].get(column.field) or TEXTS[f"field_{column.field}"][0], column)
               for column in TYPED if column.copy]
    return desk_template("copy").render(**copy, **COPY_WORDS, generated=copy["generatedAt"], when=when,
                                        day=format_date, sources=sources, details=details, shown=shown)
