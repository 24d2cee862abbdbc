"""The desk's templates, compiled once; the patient's copy as a page of its own ("A patient's copy"), which the
desk and the CLI both write; and a visit as a patient reads it, in a message, on their link's page and their card."""

import datetime as dt
import functools
import re

import bottle

from ..values.fields import clinic_moment, format_date
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
                "patient.rectified": "datos corregidos", "patient.messages_stopped": "mensajes detenidos",
                "appointment.retyped": "tipo de visita cambiado", "appointment.reason_changed": "motivo cambiado",
                "appointment.insurance_changed": "aseguradora cambiada",
                "appointment.note_changed": "nota de recepción cambiada",
                "appointment.length_changed": "duración cambiada"},
    "fields": {"birthDate": "Fecha de nacimiento", "note": "Nota de recepción"},  # else the desk's words (TEXTS' field_NAME)
    "kinds": {"patient": "su ficha", "appointment": "una cita", "search": "una búsqueda", "day": "la lista del día",
              "print": "el día impreso", "export": "una copia de sus datos", "blocked": "su ficha bloqueada",
              "access": "este registro", "preview": "una lista antes de un cambio", "change": "un cambio en su cita",
              "feed": "el calendario de su médico", "message": "un mensaje sobre su cita",
              "link": "su cita, desde el enlace de un mensaje"},
}


def copy_page(copy, zone):
    """The patient's copy as a page they can read (Spanish), standing alone ("A patient's copy")."""
    def when(utc_text):
        return clinic_moment(utc_text, zone)

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


# A visit as a patient reads it: in their messages, on their link's page, on the card the desk prints

CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")  # what no header, calendar value or line may hold


def plain(text):
    """One line of a patient's or the catalog's words, every run of control characters one space."""
    return " ".join(CONTROL.sub(" ", text or "").split())


def long_date(t, day):
    """'martes, 1 de diciembre de 2026' / 'Tuesday 1 December 2026'."""
    return t("long_date", weekday=t("day_names")[day.weekday()], day=day.day, month=t("month_names")[day.month - 1],
             year=day.year)


def visit_lines(t, visit, shows, notice=False):
    """[(label, value)] of one visit: the day, the time, the center and its address, what to bring (not for a
    cancelled visit); the practitioner and the visit's type when the clinic shows them."""
    lines = [(t("mail_when"), long_date(t, visit["starts"].date())), (t("mail_at"), f"{visit['starts']:%H:%M}")]
    if visit.get("center_name"):
        lines.append((t("mail_where"), plain(visit["center_name"])))
    if visit.get("center_address"):
        lines.append((t("mail_address"), plain(visit["center_address"])))
    if visit.get("bring") and not notice:
        lines.append((t("mail_bring"), plain(visit["bring"])))
    if shows == "doctor":
        lines += [(t("mail_doctor"), plain(visit["doctor_name"]))] + (
            [(t("mail_type"), plain(visit["type_name"]))] if visit.get("type_name") else [])
    return lines


def visit_view(row, zone):
    """A visit as a message shows it, from an appointments row with its doctor's, center's and type's names."""
    day = dt.date.fromisoformat(row["date"])
    return {"id": row["id"], "status": row["status"], "center_name": row["center_name"],
            "center_address": row["center_address"], "center_phone": row["center_phone"], "bring": row["bring"],
            "doctor_name": row["doctor_name"], "type_name": row["type_name"],
            "starts": dt.datetime.combine(day, dt.time.fromisoformat(row["time"]), tzinfo=zone),
            "ends": dt.datetime.combine(day, dt.time.fromisoformat(row["end_time"]), tzinfo=zone)}
