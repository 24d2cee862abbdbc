"""Every text the desk shows, in Spanish and English, in one table ("Staff desk"), and the refusals
of the clinic read in the desk's language. No HTTP here."""

import re

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
    # the day as time, the week, the counter
    "week": ("Semana", "Week"), "doctor_week": ("Semana de {doctor}", "{doctor}'s week"),
    "center_week": ("Semana del centro", "The center's week"), "all_doctors": ("Todos los médicos", "All doctors"),
    "minutes": ("{minutes} min", "{minutes} min"), "now": ("ahora", "now"), "off": ("sin consulta", "no surgery"),
    "retired": ("retirado", "retired"), "elsewhere": ("en otro centro", "at another center"),
    "arrived": ("● llegó {time}", "● arrived {time}"), "seen": ("✔ atendido", "✔ seen"),
    "no_show": ("✗ no vino", "✗ did not come"), "to_call": ("☎ llamar", "☎ to call"),
    "mark_arrived": ("Llegó", "Arrived"), "mark_seen": ("Atendido", "Seen"), "mark_no_show": ("No vino", "No-show"),
    "undo": ("Deshacer", "Undo"), "attendance": ("Asistencia", "Attendance"),
    "by_agent": ("asistente telefónico", "voice agent"), "by_cli": ("administración", "admin"),
    "booked_by": ("Reservada por", "Booked by"), "free_count": ("libres", "free"),
    "booked_count": ("citas", "appointments"), "calls": ("Llamar", "To call"),
    "calls_title": ("Citas que hay que llamar", "Appointments that need a call"),
    "calls_hint": ("Citas dentro de un cierre o tras la retirada de su médico: el asistente telefónico no las "
                   "recuerda. Salen de esta lista cuando se mueven o se anulan.",
                   "Appointments inside a closure or after their doctor's retirement: the voice agent does not "
                   "remind them. They leave this list once moved or cancelled."),
    "why_closed": ("cierre", "closure"), "why_retired": ("médico retirado", "doctor retired"),
    "attendance_done": ("{patient}: {mark}.", "{patient}: {mark}."), "attendance_undone": ("{patient}: deshecho.",
                                                                                         "{patient}: undone."),
    "insurance": ("Aseguradora", "Insurance"), "choose_insurance": ("Elige la aseguradora", "Choose the insurance"),
    "event_appointment.booked": ("reservada", "booked"), "event_appointment.imported": ("importada", "imported"),
    "event_appointment.moved": ("movida", "moved"), "event_appointment.confirmed": ("confirmada", "confirmed"),
    "event_appointment.cancelled": ("anulada", "cancelled"), "event_appointment.declined": ("rechazada por el paciente",
                                                                                          "declined by the patient"),
    "event_appointment.released": ("liberada sin respuesta", "released, no answer"),
    "event_appointment.unanswered": ("sin respuesta", "no answer"), "event_appointment.arrived": ("llegó", "arrived"),
    "event_appointment.seen": ("atendido", "seen"), "event_appointment.no_show": ("no vino", "did not come"),
    "event_appointment.attendance_undone": ("asistencia deshecha", "attendance undone"),
    "event_patient.erasure_requested": ("supresión pedida", "erasure requested"),
    "kept_notice": ("La sesión había caducado. Lo que escribiste se guarda 10 minutos: entra de nuevo para enviarlo.",
                    "Your session had ended. What you typed is kept for 10 minutes: log in again to send it."),
    "kept_title": ("Lo que escribiste antes de entrar de nuevo", "What you typed before logging in again"),
    "kept_hint": ("Revísalo y envíalo; nada se ha guardado todavía.", "Check it and send it; nothing was saved yet."),
    "kept_send": ("Enviar", "Send"), "kept_discard": ("Descartar", "Discard"),
    "kept_gone": ("Ese formulario ya no está guardado (se guarda 10 minutos, para quien lo escribió).",
                  "That form is no longer kept (it is kept 10 minutes, for whoever typed it)."),
    "squeeze_title": ("Sobrecita", "Squeeze in"), "squeeze": ("sobrecita", "squeeze in"),
    "squeeze_hint": ("Una cita urgente a cualquier hora de su consulta, aunque esté ocupada o fuera de la rejilla. "
                     "Queda marcada y el asistente telefónico nunca la ofrece.",
                     "An urgent visit at any time of the doctor's hours, even taken or off the grid. It is marked, "
                     "and the voice agent never offers it."),
    "squeezed": ("⚡ sobrecita", "⚡ squeezed in"), "event_appointment.squeezed": ("sobrecita", "squeezed in"),
    "nif_any": ("NIF, NIE o pasaporte", "NIF, NIE or passport"),
    "guardian_nif": ("NIF del tutor (menor de 14 sin NIF)", "Guardian's NIF (a child under 14 without one)"),
    "under_guardian": ("sin NIF; tutor: {name} ({nif})", "no NIF; guardian: {name} ({nif})"),
    "field_guardianNif": ("NIF del tutor", "Guardian's NIF"),
    "feed_new": ("Crear su calendario (enlace)", "Make their calendar feed"),
    "feed_renew": ("Nuevo enlace (el anterior deja de funcionar)", "New address (the old one stops)"),
    "feed_revoke": ("Anular el calendario", "End the feed"),
    "feed_since": ("Calendario en el móvil desde el {when}.", "Calendar feed since {when}."),
    "feed_made": ("Enlace del calendario de {doctor}: dáselo solo a esa persona (quien lo tenga ve su agenda). "
                  "No se vuelve a mostrar.", "{doctor}'s calendar address: give it to them only (whoever has it "
                  "sees their agenda). It is not shown again."),
    "series": ("Serie de sesiones…", "Series of sessions…"), "series_title": ("Serie de sesiones", "Series of sessions"),
    "series_from": ("desde el {date} a las {time}", "from {date} at {time}"), "series_every": ("Cada", "Every"),
    "weeks": ("semanas", "weeks"), "days": ("días", "days"), "series_count": ("Sesiones", "Sessions"),
    "series_preview": ("Ver las fechas", "Show the dates"),
    "series_nearest": ("el más cercano: {date} {time}", "the nearest: {date} {time}"),
    "series_none": ("ningún hueco ese día ni el siguiente", "no free slot that day or the next"),
    "series_take_nearest": ("Reservar el hueco más cercano donde la hora no está libre",
                            "Book the nearest free slot where the time is not free"),
    "series_book": ("Reservar las {count} sesiones", "Book the {count} sessions"),
    "series_done": ("Serie de {count} citas reservada para {patient}.", "A series of {count} booked for {patient}."),
    "series_place": ("serie {place}/{count}", "series {place}/{count}"),
    "series_rest": ("Anular esta y las siguientes de la serie", "Cancel this and the rest of the series"),
    "series_rest_done": ("{count} citas de la serie de {patient} anuladas.", "{count} of {patient}'s series cancelled."),
    "waitlist": ("Espera", "Waiting"), "waitlist_title": ("Lista de espera", "Waiting list"),
    "free_now": ("Huecos libres que encajan con alguien en espera", "Free slots that fit someone waiting"),
    "waiting_now": ("Esperando, por orden de llegada", "Waiting, oldest first"),
    "waiting_add": ("Añadir a la lista de espera", "Add to the waiting list"), "since": ("Desde", "Since"),
    "note": ("Nota", "Note"), "any_doctor": ("(por especialidad)", "(by speciality)"),
    "speciality": ("Especialidad", "Speciality"), "time_from": ("Desde la hora", "From (time)"),
    "time_to": ("Hasta la hora", "To (time)"),
    "waiting_added": ("{patient} está en la lista de espera.", "{patient} is on the waiting list."),
    "waiting_removed": ("Quitado de la lista de espera.", "Removed from the waiting list."),
    "waited": ("⌛ {count} en espera", "⌛ {count} waiting"),
    "waiting_for_slot": ("En espera y encajan con este hueco:", "Waiting, and this slot fits them:"),
    "WAITLIST_NOT_FOUND": ("Esa persona ya no está en la lista de espera.", "That entry is no longer waiting."),
    "patients_nav": ("Pacientes", "Patients"), "no_slots": ("Ninguno.", "None."),
    "nobody_waiting": ("Nadie espera.", "No one is waiting."),
    "duration": ("Duración", "Duration"), "history": ("Historial", "History"), "when": ("Cuándo", "When"),
    "cancelled": ("✗ anulada", "✗ cancelled"), "cancelled_on": ("Anulada el {when} por {who}: {reason}",
                                                                  "Cancelled on {when} by {who}: {reason}"),
    "coming": ("Próximas", "Coming"), "past_appointments": ("Pasadas", "Past"),
    "cancelled_appointments": ("Anuladas", "Cancelled"), "edit": ("Corregir datos", "Correct details"),
    "save": ("Guardar", "Save"), "patient_saved": ("Datos de {patient} guardados.", "{patient}'s details saved."),
    "book_for": ("Reservar cita para este paciente", "Book for this patient"),
    "next_free": ("Próximos huecos libres", "Next free slots"),
    "no_free": ("{doctor} no tiene huecos libres del {first} al {last}{why}.",
                "{doctor} has no free slot from {first} to {last}{why}."),
    "why_beyond": (" (más allá del plazo de reserva)", " (beyond the booking horizon)"),
    "from_date": ("A partir del", "From"), "look": ("Buscar huecos", "Find slots"),
    "remove_closure_title": ("¿Quitar el cierre «{reason}»?", "Remove the closure “{reason}”?"),
    "remove_closure_hint": ("Sus huecos vuelven a ofrecerse en cuanto se quita.",
                            "Its slots are offered again as soon as it goes."),
    "keep": ("No, dejarlo", "No, keep it"), "print": ("Imprimir", "Print"),
    "clinic": ("Clínica", "Clinic"), "go_to_day": ("Ver el día", "See the day"),
    # refusals of the clinic in the desk's words ("Staff desk"): by code, then by the message's rule
    "INVALID_NIF": ("El NIF no es válido: revisa sus números y la letra.", "The NIF is not valid: check its digits "
                                                                          "and letter."),
    "INVALID_PHONE": ("El teléfono no es válido.", "The phone is not valid."),
    "INSURANCE_REQUIRED": ("Este médico atiende solo algunas aseguradoras: elige una.",
                           "This doctor takes only some insurances: choose one."),
    "INSURANCE_NOT_ACCEPTED": ("Este médico no atiende esa aseguradora en ese centro.",
                               "This doctor does not take that insurance at that center."),
    "APPOINTMENT_NOT_TODAY": ("Esa cita es de un día posterior: márcala el día de la cita.",
                              "That appointment is on a later day: mark it on its day."),
    "APPOINTMENT_NOT_FOUND": ("Esa cita no existe.", "No such appointment."),
    "PATIENT_NOT_FOUND": ("Ese paciente no existe.", "No such patient."),
    "DOCTOR_NOT_FOUND": ("Ese médico no existe.", "No such doctor."),
    "CENTER_NOT_FOUND": ("Ese centro no existe.", "No such center."),
    "CLOSURE_NOT_FOUND": ("Ese cierre ya no existe.", "That closure no longer exists."),
    "LOGIN_LOCKED": ("Demasiados intentos fallidos con ese nombre desde aquí: queda bloqueado hasta las {until}. "
                     "La administración puede desbloquearlo (agenda staff unlock).",
                     "Too many failed logins with that name from here: it is locked until {until}. An admin can "
                     "unlock it (agenda staff unlock)."),
    "field_date": ("Fecha", "Date"), "field_time": ("Hora", "Time"), "field_name": ("Nombre", "Name"),
    "field_birthDate": ("Nacimiento", "Birth date"), "field_dateFrom": ("Desde", "From"),
    "field_dateTo": ("Hasta", "To"), "field_start": ("Hora inicio", "From"), "field_end": ("Hora fin", "To"),
    "field_nif": ("NIF", "NIF"), "field_phone": ("Teléfono", "Phone"), "field_surname": ("Apellidos", "Surname"),
    "field_reason": ("Motivo", "Reason"), "field_doctorId": ("Médico", "Doctor"), "field_centerId": ("Centro", "Center"),
    "field_insuranceId": ("Aseguradora", "Insurance"), "field_patientId": ("Paciente", "Patient"),
    "rule_date_shape": ("{field}: escribe la fecha como DD/MM/AAAA.", "{field}: write the date as DD/MM/YYYY."),
    "rule_real_date": ("{field}: esa fecha no existe.", "{field}: that date does not exist."),
    "rule_time_shape": ("{field}: escribe la hora como HH:MM.", "{field}: write the time as HH:MM."),
    "rule_real_time": ("{field}: esa hora no existe.", "{field}: that time does not exist."),
    "rule_required": ("{field}: falta este dato.", "{field}: this is required."),
    "rule_future": ("{field}: no puede ser una fecha futura.", "{field}: cannot be in the future."),
    "rule_year": ("La fecha debe ser de un año entre 1900 y 2999.", "The date must be in a year from 1900 to 2999."),
    "rule_last_day": ("El último día es anterior al primero.", "The last day is before the first."),
    "rule_hours": ("Las horas necesitan un inicio y un fin posterior, o ninguna para días enteros.",
                   "Hours need a start and a later end, or neither for whole days."),
    "rule_speciality": ("Ese médico es de otra especialidad.", "That doctor is of another speciality."),
    "rule_guardian": ("Tutor: no hay ningún paciente con ese NIF; regístralo antes.",
                      "Guardian: no patient has that NIF; register them first."),
    "rule_child_age": ("NIF: hace falta desde los 14 años (o un NIE o pasaporte).",
                       "NIF: required from the age of 14 (or a NIE or passport)."),
    "rule_child_birth": ("Nacimiento: hace falta para un menor sin NIF.",
                         "Birth date: required for a child without a NIF."),
    "rule_doctor_or_speciality": ("Elige un médico o una especialidad (uno de los dos).",
                                  "Choose a doctor or a speciality (one of them)."),
    "rule_window": ("Las fechas: la última, hoy o después, y no antes de la primera.",
                    "The dates: the last one today or later, and not before the first."),
    "rule_times_of_day": ("Las horas: la de fin, después de la de inicio.", "The times: the end after the start."),
    "rule_other": ("No se ha podido guardar: revisa los datos.", "Nothing was saved: check what was typed."),
}


# The rules behind INVALID_REQUEST's messages (values.py, clinic.py), each to its text's key.
MESSAGE_RULES = [
    (re.compile(r"give a doctor or a speciality()"), "rule_doctor_or_speciality"),
    (re.compile(r"the window must end today or later, after it starts()"), "rule_window"),
    (re.compile(r"the times of day need a start and a later end()"), "rule_times_of_day"),
    (re.compile(r"no patient has the guardian's nif()"), "rule_guardian"),
    (re.compile(r"nif is required from the age of \d+()"), "rule_child_age"),
    (re.compile(r"(\w+) is required for a patient without a NIF"), "rule_child_birth"),
    (re.compile(r"(\w+) must be a date written DD/MM/YYYY"), "rule_date_shape"),
    (re.compile(r"(\w+) is not a real date"), "rule_real_date"),
    (re.compile(r"(\w+) must be (?:a time written HH:MM|on the minute \(HH:MM\))"), "rule_time_shape"),
    (re.compile(r"(\w+) is not a real time"), "rule_real_time"),
    (re.compile(r"(\w+) is required"), "rule_required"),
    (re.compile(r"(\w+) is in the future"), "rule_future"),
    (re.compile(r"date must be a year from 1900 to 2999()"), "rule_year"),
    (re.compile(r"the last day is before the first()"), "rule_last_day"),
    (re.compile(r"hours need a start and a later end()"), "rule_hours"),
    (re.compile(r"the new doctor is of another speciality()"), "rule_speciality"),
]


def refusal_text(t, error):
    """A refusal of the clinic (ClinicError) in the desk's language: a slot's reason, the code's own text,
    or each part of an INVALID_REQUEST by its rule; never the English of the API."""
    if error.extra.get("reason") and f"reason_{error.extra['reason']}" in TEXTS:
        return t(f"reason_{error.extra['reason']}")
    if error.code in TEXTS:
        return t(error.code)
    parts = []
    for part in error.message.split("; "):
        rule = next(((pattern.match(part), key) for pattern, key in MESSAGE_RULES if pattern.match(part)), None)
        if rule is None:
            parts.append(t("rule_other"))
            continue
        field = rule[0].group(1)
        parts.append(t(rule[1], field=t(f"field_{field}") if f"field_{field}" in TEXTS else field))
    return " ".join(dict.fromkeys(parts))


def translator(language):
    """t(key, **values): the text of TEXTS in this language."""
    index = 1 if language == "en" else 0

    def t(key, **values):
        text = TEXTS[key][index] if key in TEXTS else key
        return text.format(**values) if values else text
    return t
