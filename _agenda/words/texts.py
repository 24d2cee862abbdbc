"""Every text the desk shows, in Spanish and English, in one table ("Staff desk"), and the refusals
of the clinic read in the desk's language by their code, rule and field. No HTTP here."""

from .patient_texts import PATIENT_TEXTS


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
    "register": ("Dar de alta", "Register"), "patient_registered": ("{patient}: dado de alta.", "{patient}: registered."),
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
                   "ha entrado sigue trabajando, y en un navegador desde el que ya se entró antes se entra sin "
                   "esperar.", "Too many logins right now: try again in a minute. Anyone already logged in goes "
                               "on working, and a browser that logged in here before gets in without waiting."),
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
    "kind_preview": ("lista antes de un cambio", "list before a change"),
    "kind_change": ("aviso tras un cambio", "notice after a change"),
    "kind_feed": ("calendario del médico", "doctor's calendar feed"),
    "reads": ("Veces", "Reads"), "days_read": ("Días", "Days"), "first_read": ("Primera", "First"),
    "last_read": ("Última", "Last"), "refused_reads": ("Denegadas", "Refused"),
    "access_nav": ("Lecturas", "Reads"),
    "access_summary_title": ("Quién ha visto datos de pacientes (últimos {days} días)",
                             "Who has seen patients' data (last {days} days)"),
    "access_summary_hint": ("Resumen del registro de lecturas: solo números de paciente; el detalle, en cada "
                            "paciente.", "The record of reads, summarised: patient numbers only; the detail is "
                            "on each patient's page."),
    "by_reader": ("Por persona", "By reader"), "by_patient": ("Por paciente", "By patient"),
    "patients_read": ("Pacientes", "Patients"), "readers_count": ("Personas", "Readers"),
    "patient_number": ("Paciente nº", "Patient no."), "reader_days": ("Lecturas de {reader}, día a día",
                                                                      "{reader}'s reads, day by day"),
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
    # the month at a glance ("The month at a glance")
    "month": ("Mes", "Month"), "doctor_month": ("Mes de {doctor}", "{doctor}'s month"),
    "center_month": ("Mes del centro", "The center's month"), "month_of": ("{month} de {year}", "{month} {year}"),
    "previous_month": ("Mes anterior", "Previous month"), "next_month": ("Mes siguiente", "Next month"),
    "month_any_type": ("Cualquier tipo", "Any type"), "holiday": ("festivo", "holiday"),
    "month_fits": ("cabe", "fits"), "month_booked": ("citas", "booked"), "month_free": ("libre", "free"),
    "month_closed": ("cerrado", "closed"), "month_worked": ("de {hours} de consulta", "of {hours} of surgery"),
    "month_fits_days": ("Días en que cabe una visita de {type}: {count}.", "Days a visit of {type} fits: {count}."),
    "month_hint": ("Cada día: tiempo con citas, libre y cerrado de cada médico. Un día abre su agenda.",
                   "Each day: each doctor's booked, free and closed time. A day opens its agenda."),
    "rule_month": ("El mes se escribe MM/AAAA, como 03/2027.", "Write the month as MM/YYYY, as 03/2027."),
    "rule_month_horizon": ("Ese mes pasa del horizonte de reserva de la recepción.",
                           "That month is beyond reception's booking horizon."),
    "field_month": ("Mes", "Month"), "field_ahead": ("Primer hueco libre", "First free slot"),
    "next_free_type": ("Primer hueco libre de este tipo:", "First free slot of this type:"),
    "next_free_doctor": ("con este médico", "with this doctor"),
    "next_free_area": ("con cualquier médico", "with any doctor"),
    "next_free_none": ("Ningún hueco libre de este tipo hasta el {date}.", "No free slot of this type until {date}."),
    "next_free_found": ("Primer hueco libre: {when} · {doctor} · {center}", "First free slot: {when} · {doctor} · {center}"),
    "next_free_open": ("Abrir ese hueco", "Open that slot"),
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
    "event_appointment.mailed": ("enviada por correo por recepción", "sent by e-mail by reception"),
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
    "series_none": ("ningún hueco ese día ni en los 7 siguientes", "no free slot that day or the 7 after"),
    "series_take_nearest": ("Reservar las {count} sesiones: donde la hora no está libre, el hueco más cercano",
                            "Book the {count} sessions: where the time is not free, the nearest free slot"),
    "series_take_all": ("Reservar las {count} sesiones", "Book the {count} sessions"),
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
    "waited": ("{count} en espera", "{count} waiting"),
    "waiting_for_slot": ("En espera y encajan con este hueco:", "Waiting, and this slot fits them:"),
    "WAITLIST_NOT_FOUND": ("Esa persona ya no está en la lista de espera.", "That entry is no longer waiting."),
    "WAITLIST_ALREADY_BOOKED": ("Esa persona ya tiene cita desde la lista de espera; no se ha reservado otra.",
                                "That entry was already booked; nothing more was booked."),
    "see_booked": ("Ver la cita", "See the appointment"),
    "patients_nav": ("Pacientes", "Patients"), "no_slots": ("Ninguno.", "None."),
    "nobody_waiting": ("Nadie espera.", "No one is waiting."),
    "report": ("Informe", "Report"), "no_shows": ("no vinieron", "no-shows"), "report_title": ("La clínica de un vistazo", "The clinic at a glance"),
    "report_weeks": ("Citas / huecos ofrecidos, por semana", "Booked / slots offered, by week"),
    "offered": ("ofrecidos", "offered"), "late_cancels": ("anuladas con menos de un día", "cancelled a day or less before"),
    "chart_filled": ("Ocupación de cada médico (%)", "How full each doctor is (%)"),
    "chart_reminders": ("Respuestas a los recordatorios, por semana", "Reminder answers, by week"),
    "chart_sources": ("Quién reserva, por semana", "Who books, by week"),
    "chart_lead": ("Con cuánta antelación se reserva", "How far ahead patients book"),
    "reminder_confirmed": ("confirmadas", "confirmed"), "reminder_declined": ("rechazadas", "declined"),
    "reminder_unanswered": ("sin respuesta", "no answer"), "reminder_released": ("liberadas", "released"),
    "by_desk": ("recepción", "reception"), "lead_same_day": ("el mismo día", "same day"),
    "lead_week": ("1 a 7 días", "1-7 days"), "lead_month": ("8 a 30 días", "8-30 days"),
    "lead_quarter": ("31 a 90 días", "31-90 days"), "lead_later": ("más de 90 días", "over 90 days"),
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
    # refusals of the clinic in the desk's words ("Staff desk"): by code (CODE), by rule (rule_RULE) or a slot's
    # reason (reason_REASON), each field named by field_FIELD; see refusal_key
    "INVALID_REQUEST": ("No se ha podido guardar: revisa los datos.", "Nothing was saved: check what was typed."),
    "INVALID_NIF": ("El NIF no es válido: hay que revisar sus números y la letra.",
                    "The NIF is not valid: check its digits and letter."),
    "INVALID_PHONE": ("El teléfono no es válido.", "The phone is not valid."),
    "INSURANCE_REQUIRED": ("Este médico atiende solo algunas aseguradoras: hay que elegir una.",
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
    "SPECIALITY_NOT_FOUND": ("Esa especialidad no existe.", "No such speciality."),
    "INSURANCE_NOT_FOUND": ("Esa aseguradora no existe.", "No such insurance."),
    "FEED_NOT_FOUND": ("Ese calendario no existe.", "No such calendar feed."),
    "LINK_TO_CALL": ("La clínica llamará por esta cita: no se confirma desde el enlace.",
                     "The clinic will call about this appointment: it is not confirmed by the link."),
    "LINK_TOO_LATE": ("Falta poco para la cita: para anularla o cambiarla, hay que llamar a la clínica.",
                      "The appointment is too near: to cancel or move it, call the clinic."),
    "LINK_SQUEEZED": ("Una cita urgente añadida por la clínica la cambia la clínica.",
                      "An urgent visit added by the clinic is moved by the clinic."),
    "STAFF_NOT_FOUND": ("No hay ninguna cuenta con ese nombre.", "No staff account has that name."),
    "STAFF_ALREADY_EXISTS": ("Ya hay una cuenta con ese nombre.", "A staff account with that name exists."),
    "PATIENT_BLOCKED": ("Ese paciente está bloqueado tras una solicitud de supresión.",
                        "That patient is blocked since an erasure request."),
    "APPOINTMENT_ATTENDED": ("El paciente ya llegó o fue atendido en esa cita: deshaz antes la asistencia.",
                             "The patient arrived or was seen for that appointment: undo the attendance first."),
    "SLOT_NOT_AVAILABLE": ("Ese hueco no está libre: elige otro.", "That slot is not free: choose another."),
    "INVALID_JSON": ("Lo enviado no se entiende.", "What was sent cannot be read."),
    "INVALID_SIGNATURE": ("Falta la firma de la petición o no es válida.",
                          "The request's signature is missing or wrong."),
    "NOT_FOUND": ("Esa página no existe.", "No such page."),
    "METHOD_NOT_ALLOWED": ("Eso no se puede hacer aquí.", "That cannot be done here."),
    "PAYLOAD_TOO_LARGE": ("Lo enviado es demasiado largo.", "What was sent is too long."),
    "HEADERS_TOO_LARGE": ("La petición es demasiado larga.", "The request is too long."),
    "UNSUPPORTED_MEDIA_TYPE": ("Lo enviado no tiene el formato esperado.",
                               "What was sent is not in the expected format."),
    "INTERNAL_ERROR": ("Algo ha fallado; queda anotado para revisarlo.", "Something went wrong; it is logged."),
    "NOT_IMPLEMENTED": ("Eso no está disponible.", "That is not available."),
    "SERVICE_UNAVAILABLE": ("La agenda no responde en este momento: vuelve a intentarlo en unos segundos.",
                            "The agenda does not answer right now: try again in a few seconds."),
    "LOGIN_LOCKED": ("Demasiados intentos fallidos con ese nombre desde aquí: queda bloqueado hasta las {until}. "
                     "La administración puede desbloquearlo (agenda staff unlock).",
                     "Too many failed logins with that name from here: it is locked until {until}. An admin can "
                     "unlock it (agenda staff unlock)."),
    "field_date": ("Fecha", "Date"), "field_time": ("Hora", "Time"), "field_name": ("Nombre", "Name"),
    "field_email": ("Correo electrónico", "E-mail"), "field_language": ("Idioma de sus mensajes", "Language of messages"),
    "field_messages": ("Mensajes sobre sus citas", "Messages about their visits"),
    "language_es": ("Español", "Spanish"), "language_en": ("Inglés", "English"),
    "choice_yes": ("Sí", "Yes"), "choice_no": ("No", "No"),
    "choice_unset": ("Sí, al dar un correo", "Yes, once an e-mail is given"),
    "field_birthDate": ("Nacimiento", "Birth date"), "field_dateFrom": ("Desde", "From"),
    "field_dateTo": ("Hasta", "To"), "field_start": ("Hora inicio", "From"), "field_end": ("Hora fin", "To"),
    "field_nif": ("NIF", "NIF"), "field_phone": ("Teléfono", "Phone"), "field_surname": ("Apellidos", "Surname"),
    "field_reason": ("Motivo", "Reason"), "field_doctorId": ("Médico", "Doctor"), "field_centerId": ("Centro", "Center"),
    "field_insuranceId": ("Aseguradora", "Insurance"), "field_patientId": ("Paciente", "Patient"),
    "field_specialityId": ("Especialidad", "Speciality"), "field_appointmentId": ("Cita", "Appointment"),
    "field_newDate": ("Nueva fecha", "New date"), "field_newTime": ("Nueva hora", "New time"),
    "field_dates": ("Fechas", "Dates"), "field_startDate": ("Desde", "From"), "field_endDate": ("Hasta", "To"),
    "field_from": ("Desde", "From"), "field_to": ("Hasta", "To"), "field_confirmed": ("Confirmada", "Confirmed"),
    "field_timeFrom": ("Desde la hora", "From (time)"), "field_timeTo": ("Hasta la hora", "To (time)"),
    "field_count": ("Sesiones", "Sessions"), "field_every": ("Cada", "Every"), "field_center": ("Centro", "Center"),
    "field_duration": ("Duración", "Duration"), "field_doctor": ("Médico", "Doctor"),
    "field_insurance": ("Aseguradora", "Insurance"), "field_status": ("Estado", "Status"),
    "field_type": ("Tipo de visita", "Visit type"), "field_pause": ("Pausa", "Pause"),
    "field_holds": ("Salas y máquinas", "Rooms and machines"),
    "field_password": ("Contraseña", "Password"), "field_role": ("Papel", "Role"),
    "field_date_from": ("Desde", "From"), "field_date_to": ("Hasta", "To"), "field_hours": ("Horario", "Hours"),
    "field_executionDate": ("Fecha de la llamada", "Execution date"),
    "field_voiceAgentConfigId": ("Asistente telefónico", "Voice agent"),
    "field_skipAppointmentIds": ("Citas que no se tocan", "Appointments left alone"),
    "rule_date_shape": ("{field}: la fecha se escribe DD/MM/AAAA.", "{field}: write the date as DD/MM/YYYY."),
    "rule_real_date": ("{field}: esa fecha no existe.", "{field}: that date does not exist."),
    "rule_time_shape": ("{field}: escribe la hora como HH:MM.", "{field}: write the time as HH:MM."),
    "rule_real_time": ("{field}: esa hora no existe.", "{field}: that time does not exist."),
    "rule_whole_minute": ("{field}: escribe la hora sin segundos (HH:MM).",
                          "{field}: write the time without seconds (HH:MM)."),
    "rule_text": ("{field}: debe ser un texto.", "{field}: must be text."),
    "rule_text_list": ("{field}: debe ser una lista de textos.", "{field}: must be a list of texts."),
    "rule_too_many_days": ("{field}: 62 días como mucho.", "{field}: 62 days at most."),
    "rule_flag": ("{field}: falta, y es sí o no.", "{field}: required, yes or no."),
    "rule_email": ("{field}: no es una dirección de correo (nombre@dominio.es).",
                   "{field}: not an e-mail address (name@domain.com)."),
    "rule_language": ("{field}: elige español o inglés.", "{field}: choose es (Spanish) or en."),
    "rule_yes_no": ("{field}: sí o no.", "{field}: yes or no."),
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
    "rule_series_count": ("Sesiones: de 2 a 60.", "Sessions: 2 to 60."),
    "rule_series_every": ("Cada: un número de semanas o de días (de 1 a 99).", "Every: a number of weeks or days (1 to 99)."),
    "rule_report_weeks": ("El informe abarca medio año como mucho.", "A report covers half a year at most."),
    "rule_not_in_series": ("Esa cita no es de una serie.", "That appointment is not part of a series."),
    "rule_attendance_mark": ("Esa asistencia no existe: llegó, atendido o no vino.",
                             "No such attendance: arrived, seen or no-show."),
    "rule_reception_only": ("Solo recepción puede hacerlo.", "Only reception may do that."),
    "rule_date_or_search": ("Indica una fecha (lista del día), o un NIF o un teléfono (búsqueda de paciente).",
                            "Give a date (day list), or a NIF or a phone (patient search)."),
    "rule_date_or_dates": ("Falta la fecha o las fechas.", "A date or dates are required."),
    "rule_no_body": ("Esta petición no lleva datos: envíala sin ellos.", "This request carries no body: send none."),
    "rule_content_length": ("La longitud de la petición no es un número.", "The request's length is not a number."),
    "rule_password_length": ("{field}: 8 caracteres como mínimo.", "{field}: 8 characters or more."),
    "rule_staff_role": ("{field}: reception (recepción) o admin (administración).",
                        "{field}: reception or admin."),
    "rule_staff_name": ("{field}: de 1 a 40 letras, números, puntos, guiones o guiones bajos.",
                        "{field}: 1 to 40 letters, digits, dots, dashes or underscores."),
    "rule_empty_folder": ("Esa carpeta ya tiene ficheros de una exportación: elige una vacía.",
                          "That folder already holds an export's files: choose an empty one."),
    "more_waiting": ("y {count} más esperan este hueco: reservar", "and {count} more wait for this slot: book"),
    "page_of": ("Página {page} de {pages}.", "Page {page} of {pages}."),
    "previous_page": ("Anteriores", "Previous"), "next_page": ("Siguientes", "Next"),
    "rule_import_changed": ("El catálogo o un paciente cambió mientras se comprobaba la importación: repítela.",
                            "The catalogs or a patient changed while the import was checked: run it again."),
    "rule_same_nif": ("{field}: el mismo NIF que una fila anterior del fichero.",
                      "{field}: the same NIF as an earlier row of the file."),
    "offered_minutes": ("Minutos ofrecidos", "Minutes offered"), "booked_minutes": ("Minutos reservados",
                                                                                    "Minutes booked"),
    "report_types": ("Minutos reservados por tipo de visita", "Minutes booked by visit type"),
    "visit_type": ("Tipo de visita", "Visit type"), "visits": ("Visitas", "Visits"),
    "overlaps_title": ("Visitas del mismo paciente que se solapan ({count})", "One patient's visits that overlap ({count})"),
    "overlaps_hint": ("Llegaron con la historia de otro sistema: llama para mover una de cada par.",
                      "They came with another system's history: call to move one of each pair."),
    "rule_type_not_offered": ("Ese médico no ofrece el tipo de visita de esta cita ahí: elige otro médico u otro "
                              "centro.", "That doctor does not offer this appointment's visit type there: choose "
                                         "another doctor or center."),
    "reason_patient_elsewhere": ("Esa persona ya tiene otra cita a esa hora.", "That patient has another "
                                                                             "appointment then."),
    "reason_type_not_offered": ("El médico ya no ofrece el tipo de visita de esta cita donde trabaja a esa hora.",
                                "The doctor no longer offers this appointment's visit type where they work then."),
    "reason_resource_taken": ("A esa hora no queda libre un box o máquina que necesita esa visita.",
                              "No box or machine that visit needs is free then."),
    "see_other_visit": ("Ver su otra cita ({date} {time}, {doctor})", "See the other appointment ({date} {time}, "
                                                                       "{doctor})"),
    "accept_overlap": ("Reservar igualmente, aunque se solape con su otra cita (queda registrado)",
                       "Book it anyway, over the other appointment (recorded)"),
    "change_type": ("Cambiar", "Change"),
    "type_does_not_fit": ("Ese tipo de visita no cabe a esa hora.", "That visit type does not fit at that time."),
    "type_fits_at": ("Cabe a las:", "It fits at:"),
    "type_fits_nowhere": ("Ese día no cabe a ninguna hora.", "It fits at no time that day."),
    # why a visit does not fit, in the clinic's words ("Staff desk"), and what the day draws of it
    "why_visit": ("La visita ({minutes} min", "The visit ({minutes} min"),
    "why_pause": (" y {minutes} min de pausa", " and a {minutes}-minute pause"),
    "why_past_hours": ("{visit}) se pasa del horario del médico, que acaba a las {ends}.",
                       "{visit}) runs past the doctor's hours, which end at {ends}."),
    "why_runs_into": ("{visit}) llega a la cita de las {at}: no cabe antes.",
                      "{visit}) runs into the visit at {at}: it does not fit before it."),
    "why_runs_into_closed": ("{visit}) llega a un cierre del médico o del centro.",
                             "{visit}) runs into a closure of the doctor or the center."),
    "why_held": ("A esa hora no queda {category} libre para esa visita (en uso: {names}).",
                 "No {category} is free for that visit then (in use: {names})."),
    "unfit": ("no cabe ninguna visita", "no visit fits"),
    "legend": ("Tipos de visita", "Visit types"), "no_type": ("sin tipo", "no type"),
    "overlap_mark": ("Solapa con otra cita del paciente", "Overlaps the patient's other appointment"),
    "overlap_gone": ("(reservada a propósito sobre otra cita, que ya no solapa)",
                     "(booked on purpose over another appointment, which no longer overlaps)"),
    "pause": ("pausa", "pause"),
    "rooms_nav": ("Salas", "Rooms"), "rooms_title": ("Salas y máquinas", "Rooms and machines"),
    "rooms_none": ("Este centro no tiene salas ni máquinas en el catálogo.", "This center has no rooms or machines in "
                                                                          "the catalog."),
    "room": ("sala", "room"), "machine": ("máquina", "machine"), "rooms_placed": ("Consulta de", "Doctors here"),
    "rooms_free": ("Libre todo el día.", "Free all day."),
    "rooms_held": ("Ocupada por una cita", "Held by an appointment"),
    "rooms_unplaced": ("Citas de este día sin la sala o la máquina que necesitan (traídas de otro sistema o de"
                       " antes): muévelas", "Appointments of this day without the room or machine they need (moved"
                       " in, or from before): move them"),
    "rooms_unplaced_visit": ("Cita {id}", "Appointment {id}"),
    # the day and the week laid out (headers that stay, the center's week of people, printing)
    "more_cards": ("+{count} más: ver el día", "+{count} more: see the day"),
    "field_print": ("Imprimir", "Print"),
    "rule_search_length": ("Busca con 10 palabras y 200 caracteres como mucho: el nombre, el NIF o el teléfono.",
                           "Search with 10 words and 200 characters at most: the name, the NIF or the phone."),
    "rule_export_folder": ("No se pudo escribir en esa carpeta: no se ha exportado nada.",
                           "That folder could not be written: nothing was exported."),
    "rule_minutes": ("{field}: un número de minutos.", "{field}: a number of minutes."),
    "rule_duration_range": ("{field}: de 1 a 480 minutos, acabando el mismo día.",
                            "{field}: 1 to 480 minutes, ending the same day."),
    "rule_catalog": ("{field}: no está en los catálogos (agenda seed los carga).",
                     "{field}: not in the catalogs (agenda seed loads them)."),
    "rule_type_area": ("{field}: ese tipo de visita es de otra área que la del médico.",
                       "{field}: that visit type is of another area than the doctor's."),
    "rule_holds_center": ("{field}: esa sala o máquina es de otro centro que el de la cita.",
                          "{field}: that room or machine is of another center than the appointment's."),
    "rule_status_word": ("{field}: reservada, confirmada, sin respuesta o anulada.",
                         "{field}: booked, confirmed, unanswered or cancelled."),
    "rule_patient_by_phone": ("Sin NIF, y ningún paciente único con ese nombre y teléfono: indica su NIF.",
                              "No NIF, and no one patient with that name and phone: give their NIF."),
    "rule_patient_name": ("{field}: no es el del titular del NIF ni el de un solo menor a su cargo: corrígelo, o "
                          "registra al menor con ese tutor.",
                          "{field}: neither the NIF's holder's nor that of exactly one child of theirs: correct it, or "
                          "register the child under that guardian."),
    # every text field, on every channel ("Text fields")
    "rule_control_character": ("{field}: lleva un carácter de control, que no se ve; bórralo y escríbelo de nuevo.",
                               "{field}: holds a control character, which does not show; delete it and type it again."),
    "rule_too_long": ("{field}: es demasiado largo; acórtalo.", "{field}: too long; shorten it."),
    "field_q": ("Búsqueda", "Search"), "field_note": ("Nota (nada clínico)", "Note (nothing clinical)"), "field_csrf": ("Formulario", "Form"),
    "field_kept": ("Formulario guardado", "Kept form"), "field_action": ("Acción", "Action"),
    "field_back": ("Página de vuelta", "Page to go back to"), "field_mark": ("Asistencia", "Attendance"),
    "field_n": ("Cada", "Every"), "field_unit": ("Semanas o días", "Weeks or days"), "field_step": ("Paso", "Step"),
    # booking from the keyboard, a lost race's way on, the booking form's marks and names
    "keys_hint": ("Teclado: ↓ (desde la búsqueda vacía) o n, el siguiente hueco libre; ↑ o p, el anterior; 1–9, el "
                  "primero de esa columna; Intro lo abre; / busca; ← → cambian de día.",
                  "Keys: ↓ (from the empty search) or n, the next free slot; ↑ or p, the one before; 1–9, the first "
                  "of that column; Enter opens it; / searches; ← → change the day."),
    "book_title_at": ("Reservar cita en {center}", "Book an appointment at {center}"),
    "required_mark": ("obligatorio", "required"),
    "nif_or_guardian": ("NIF, NIE o pasaporte (o NIF del tutor)", "NIF, NIE or passport (or the guardian's NIF)"),
    "under_guardian_box": ("Es el NIF de su tutor: un menor de 14 años sin NIF",
                           "It is the guardian's NIF: a child under 14 without one"),
    "existing_patient": ("Es {name}: ver su ficha", "It is {name}: see their page"),
    "way_on_mine": ("Siguientes huecos libres de {doctor}:", "{doctor}'s next free slots:"),
    "way_on_others": ("A la misma hora con otro médico:", "The same time with another doctor:"),
    "way_on_none": ("Ninguno en las dos semanas siguientes.", "None in the next two weeks."),
    "moved_where_done": ("Cita de {patient} movida al {date} a las {time} ({doctor}, {center}).",
                         "{patient}'s appointment moved to {date} at {time} ({doctor}, {center})."),
    "field_underGuardian": ("Menor sin NIF", "Child without a NIF"),
    "field_nearest": ("El hueco más cercano", "The nearest slot"), "field_slot": ("Hueco", "Slot"),
    "field_squeeze": ("Sobrecita", "Squeeze-in"), "field_waitlistId": ("Lista de espera", "Waiting list"),
    # a series books what fits; arrival from a while before; the waiting list's search and the visit it brings forward
    "series_take_fits": ("Reservar las {count} que caben; {left} para llamar",
                         "Book the {count} that fit; {left} to call"),
    "series_take_nearest-fits": ("Reservar {count} (donde la hora no está libre, el hueco más cercano); {left} para "
                                 "llamar", "Book {count} (where the time is not free, the nearest free slot); {left} "
                                 "to call"),
    "series_no_way": ("Así no caben ni dos sesiones: prueba otra hora, otro día o menos sesiones.",
                      "Not even two sessions fit like this: try another time, another day or fewer sessions."),
    "series_left_out": ("Sin hueco, para llamar: {dates}.", "No slot, to call: {dates}."),
    "field_take": ("Cómo reservar la serie", "How to book the series"),
    "brings_forward": ("adelanta su cita del {date} {time}", "brings forward their visit of {date} {time}"),
    "brings_forward_which": ("Adelanta su cita", "Brings forward their visit"),
    "brings_forward_none": ("ninguna: una cita nueva", "none: a new visit"),
    "brings_forward_book": ("Adelantar su cita a este hueco", "Bring their visit forward to this slot"),
    "brings_forward_note": ("Se moverá su cita del {date} {time} a este hueco: la misma cita, no otra.",
                            "Their visit of {date} {time} moves to this slot: the same visit, not another."),
    "other_patient": ("Otro paciente", "Another patient"),
    "rule_brings_forward": ("{field}: debe ser una cita de ese paciente, de hoy en adelante.",
                            "{field}: must be a visit of that patient, from today on."),
    "rule_brings_forward_area": ("{field}: esa cita es de otra especialidad.",
                                 "{field}: that visit is of another speciality."),
    "rule_arrival_window": ("Aún es pronto: la llegada se marca desde un rato antes de la hora de la cita.",
                            "Too early: an arrival is marked from a while before the visit's time."),
    "rule_no_show_before_start": ("Aún no es la hora de la cita: «No vino» se marca desde su hora.",
                                  "The visit's time has not come: a no-show is marked from then."),
    "field_reader": ("Quién leyó", "Reader"), "field_days": ("Días", "Days"), "field_page": ("Página", "Page"),
    "field_acceptOverlap": ("Reservar igualmente", "Book it anyway"), "field_typeId": ("Tipo de visita", "Visit type"),
    # the command line's day sheet and report, and what they refuse ("Configuration and CLI")
    "cli_not_a_date": ("{text!r} no es una fecha; escríbela como DD/MM/AAAA, p. ej. 24/11/2026",
                       "{text!r} is not a date; write it as DD/MM/YYYY, e.g. 24/11/2026"),
    "cli_no_database": ("{db}: no existe esa base de datos; indica su ruta con --db o AGENDA_DB",
                        "{db}: no such database; give its path with --db or AGENDA_DB"),
    "cli_unknown_zone": ("zona horaria desconocida {tz!r} (prueba {good})", "unknown time zone {tz!r} (try {good})"),
    "cli_no_center": ("no hay ningún centro {center!r}; los centros son: {known}",
                      "no center {center!r}; the centers are: {known}"),
    "cli_no_centers": ("ninguno", "none"),
    "weekday_names": (("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"),
                      ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")),
    "count_appointments": (("{count} cita", "{count} citas"), ("{count:,} appointment", "{count:,} appointments")),
    "count_free": (("{count} libre", "{count} libres"), ("{count:,} free", "{count:,} free")),
    "count_visits": (("{count} visita", "{count} visitas"), ("{count:,} visit", "{count:,} visits")),
    "sheet_all_centers": ("todos los centros", "all centers"), "sheet_center": ("centro {center}", "center {center}"),
    "sheet_booked": ("reservada", "booked"), "sheet_confirmed": ("confirmada", "confirmed"),
    "sheet_unanswered": ("sin respuesta", "unanswered"), "sheet_arrived": ("llegó {time}", "arrived {time}"),
    "sheet_seen": ("atendido", "seen"), "sheet_no_show": ("no vino", "no-show"),
    "report_doctor": ("{id} {name}: reservadas {booked} de {offered} ({filled} %), libres {free}, no vinieron "
                      "{no_shows}, anuladas con menos de un día {late_cancels}; minutos reservados {booked_minutes} "
                      "de {offered_minutes}", "{id} {name}: {booked}/{offered} booked ({filled}%), {free} free, {no_shows} "
                      "no-shows, {late_cancels} late cancellations; {booked_minutes} of {offered_minutes} minutes "
                      "booked"),
    "report_type": ("{name}: {visits}, {minutes} minutos", "{name}: {visits}, {minutes} minutes"),
    "report_week": ("Semana del {monday}: respuestas a los recordatorios: confirmadas {confirmed}, rechazadas "
                    "{declined}, sin respuesta {unanswered}, liberadas {released}; reservadas por el asistente "
                    "telefónico {agent}, por recepción {desk}", "Week of {monday}: reminders {confirmed} confirmed, {declined} declined, "
                    "{unanswered} unanswered, {released} released; booked by the voice agent {agent}, by reception "
                    "{desk}"),
    "report_lead": ("Reservadas con antelación de: el mismo día {same_day}, hasta una semana {week}, hasta un mes "
                    "{month}, hasta tres meses {quarter}, más {later}", "Booked ahead: same day {same_day}, week "
                    "{week}, month {month}, quarter {quarter}, later {later}"),
    "rule_same_child": ("{field}: el mismo menor (nombre, nacimiento y tutor) que una fila anterior del fichero.",
                        "{field}: the same child (name, birth date and guardian) as an earlier row of the file."),
    # What became of a message, by its why (outbox `error`: a reason, then `{detail}`, the server's code): the words
    # `agenda mail status`, `agenda status` and the desk say, each with what to do ("The sender").
    "mailwhy_ended": ("la cita ya pasó", "the visit has ended"),
    "mailwhy_cancelled": ("la cita se anuló antes del envío", "the visit was cancelled before it went"),
    "mailwhy_told_later": ("lo comunica un mensaje posterior", "a later message tells it"),
    "mailwhy_pending_email": ("se le dirá cuando confirme la cita por el correo", "told once they confirm by e-mail"),
    "mailwhy_never_told": ("no se le había avisado de la cita", "the patient was never told of the visit"),
    "mailwhy_moved": ("la cita cambió", "the visit moved"),
    "mailwhy_to_call": ("la cita está en la lista de llamadas pendientes", "the visit is on the list to call"),
    "mailwhy_recipient_refused": ("el servidor rechazó la dirección del paciente{detail}: compruebe su correo",
        "the server refused the patient's address{detail}: check their e-mail"),
    "mailwhy_recipient_deferred": ("el servidor del paciente pide reintentar más tarde{detail}; se reintentará automáticamente",
        "the patient's mail server asks to try later{detail}; it is tried again by itself"),
    "mailwhy_message_refused": ("el servidor rechazó el mensaje{detail}: el registro del servidor indica el motivo",
        "the server refused the message{detail}: its log says why"),
    "mailwhy_server_busy": ("el servidor pide reintentar más tarde{detail}; se reintentará automáticamente",
        "the server asks to try later{detail}; it is tried again by itself"),
    "mailwhy_login_refused": ("el servidor rechazó el usuario o la contraseña de la clínica{detail}: revise el usuario"
        " de --smtp (smtp://USUARIO@SERVIDOR) y la contraseña de --smtp-password-file",
        "the server refused the clinic's login{detail}: check the user in --smtp (smtp://USER@HOST) and the password"
        " in --smtp-password-file"),
    "mailwhy_login_needed": ("el servidor exige usuario y contraseña{detail}: ponga smtp://USUARIO@SERVIDOR y --smtp-password-file",
        "the server asks for a login{detail}: give smtp://USER@HOST and --smtp-password-file"),
    "mailwhy_sender_refused": ("el servidor rechazó la dirección de la clínica{detail}: --mail-from debe ser una que"
        " ese usuario pueda usar", "the server refused the clinic's sender address{detail}: --mail-from must be one"
        " that login may send as"),
    "mailwhy_clinic_refused": ("el servidor rechazó la conexión de la clínica{detail}: revise --smtp y el registro del"
        " servidor", "the server refused the clinic's connection{detail}: check --smtp and the server's log"),
    "mailwhy_no_login": ("el servidor no admite autenticación: quite USUARIO@ de --smtp, o use el puerto que"
        " los pide (587 con smtp://, 465 con smtps://)", "the server offers no login: drop USER@ from --smtp, or use"
        " the port that asks for one (587 with smtp://, 465 with smtps://)"),
    "mailwhy_no_starttls": ("el servidor no ofrece STARTTLS: en el puerto 465 use smtps://SERVIDOR:465; smtp:// (587)"
        " lo exige", "the server offers no STARTTLS: for port 465 use smtps://HOST:465; smtp:// (587) requires it"),
    "mailwhy_certificate": ("no se confía en el certificado del servidor{detail}: indique --smtp-ca FICHERO con la CA que lo"
        " firmó, o el nombre del servidor tal como figura en su certificado", "the server's certificate is not"
        " trusted{detail}: give --smtp-ca FILE with the CA that signed it, or the server's name as its certificate"
        " says it"),
    "mailwhy_tls_mismatch": ("Error de TLS{detail}: smtps:// habla TLS desde el principio (puerto 465), smtp:// pide"
        " STARTTLS (puerto 587): el esquema debe ir con el puerto", "TLS failed{detail}: smtps:// speaks TLS from"
        " the start (port 465), smtp:// asks STARTTLS (port 587): match the scheme to the port"),
    "mailwhy_connection_refused": ("nadie contesta en ese puerto: revise el servidor y el puerto de --smtp, y que el"
        " servidor esté en marcha", "nothing answers at that port: check the host and port in --smtp and that the"
        " server runs"),
    "mailwhy_unknown_host": ("no se encuentra el nombre del servidor: revise --smtp y el DNS de esta máquina",
        "the server's name does not resolve: check --smtp and this machine's DNS"),
    "mailwhy_no_answer": ("el servidor no contestó a tiempo: ¿está en marcha? (smtp:// al puerto 465 se queda esperando:"
        " use smtps:// ahí)", "the server did not answer in time: is it up? (smtp:// to port 465 waits for ever:"
        " use smtps:// there)"),
    "mailwhy_unreachable": ("no se pudo llegar al servidor{detail}: revise --smtp y la red",
        "the server could not be reached{detail}: check --smtp and the network"),
    "message_when": ("Enviado / escrito",
        "Sent / written"),
    "link_more_days": ("Ver más días",
        "More days"),
    "mail_before": ("Antes",
        "Before"),
    "why_cancelled by the caller": ("anulada en la llamada",
        "cancelled on the call"),
    "why_cancelled by the patient": ("anulada desde su enlace",
        "cancelled from their link"),
    "why_declined at reminder": ("rechazada en el recordatorio",
        "declined at the reminder"),
    "why_erasure requested": ("supresión de datos pedida",
        "erasure requested"),
    # The waiting room ("The waiting room")
    "waiting_nav": ("Llegadas", "Arrivals"), "waiting_title": ("Sala de espera", "Waiting room"),
    "waiting_hint": ("Quién ha llegado y cuánto espera, quién está en consulta y quién ha terminado. La página se "
                     "pone al día sola.", "Who has arrived and how long they wait, who is in consultation and who "
                     "has finished. The page keeps itself up to date."),
    "room_in_consultation": ("En consulta ({count})", "In consultation ({count})"),
    "room_waiting": ("En espera ({count})", "Waiting ({count})"),
    "room_expected": ("Por llegar ({count})", "Still to come ({count})"),
    "room_absent": ("No ha venido ({count})", "Has not come ({count})"),
    "room_finished": ("Han terminado ({count})", "Finished ({count})"),
    "room_empty": ("Nadie.", "No one."),
    "in_consultation": ("▶ pasa a consulta", "▶ called in"),
    "event_appointment.in_consultation": ("pasa a consulta", "called in"),
    "mark_in_consultation": ("Pasa a consulta", "Call in"),
    "mark_finished": ("Ha terminado", "Finished"),
    "arrived_at_time": ("llegó a las {time}", "arrived at {time}"),
    "visit_at": ("cita a las {time}", "visit at {time}"),
    "waits_now": ("espera {minutes} min", "waiting {minutes} min"),
    "waited_for": ("esperó {minutes} min", "waited {minutes} min"),
    "past_its_time": ("{minutes} min pasada su hora", "{minutes} min past their time"),
    "punctuality_late": ("con retraso ({minutes} min)", "late ({minutes} min)"),
    "punctuality_on_time": ("puntual", "on time"),
    "punctuality_early": ("adelantado ({minutes} min)", "early ({minutes} min)"),
    "inside_since": ("en consulta desde las {time} · {minutes} min", "in consultation since {time} · {minutes} min"),
    "called_in_at": ("pasó a consulta a las {time}", "called in at {time}"),
    "not_come": ("no ha venido", "has not come"),
    # A booked visit's details changed at the desk ("Details of a booked visit")
    "details": ("Datos de la cita", "Visit details"), "details_done": ("Datos de la cita guardados.",
                                                                       "Visit details saved."),
    "visit_note": ("Nota de recepción", "Reception's note"), "patient_note": ("Nota del paciente", "Patient's note"),
    "note_help": ("Solo lo administrativo (llamar antes, trae informes): nada clínico.",
                  "Administrative only (call first, brings reports): nothing clinical."),
    "no_insurance": ("Ninguna", "None"), "type_kept": ("{type} (la de ahora)", "{type} (as now)"),
    "retype_help": ("Otro tipo cambia la duración, deja la cita sin confirmar y avisa al paciente; solo se ofrecen "
                    "los que caben a esa hora.", "Another type changes the length, unconfirms the visit and tells the "
                    "patient; only those that fit at that time are offered."),
    "event_appointment.retyped": ("tipo de visita cambiado", "visit type changed"),
    "event_appointment.reason_changed": ("motivo cambiado", "reason changed"),
    "event_appointment.insurance_changed": ("aseguradora cambiada", "insurance changed"),
    "event_appointment.note_changed": ("nota de recepción cambiada", "reception's note changed"),
    "rule_squeezed_type": ("Una sobrecita conserva su tipo de visita: anúlala y haz otra.",
                           "A squeezed-in visit keeps its type: cancel it and squeeze in another."),
    "rule_type_not_here": ("Ese médico no ofrece ese tipo de visita en ese centro.",
                           "That doctor does not offer that visit type at that center."),
    # the patients' booking page ("Patients book themselves"): web-domain's words
    "WEB_CLOSED": ("La clínica no da citas por internet.", "The clinic does not take bookings online."),
    "WEB_BUSY": ("Ahora mismo hay demasiadas reservas esperando confirmación: inténtelo de nuevo más tarde.",
                 "Too many bookings are waiting for confirmation right now: please try again later."),
    "event_appointment.web_released": ("reserva web no confirmada: liberada", "web booking not confirmed: released"),
    "event_appointment.web_confirmed": ("reserva web confirmada por el paciente",
                                        "web booking confirmed by the patient"),
    # Reception's side of the web booking ("Por verificar"), and a web booking's marks on the desk
    "by_web": ("el paciente, en la web", "the patient, on the web"), "pending_reception": ("Por verificar", "To verify"),
    "pending_email": ("Pendiente de confirmar por el paciente hasta {time}", "Waiting for the patient to confirm until {time}"),
    "verify_title": ("Reservas web por verificar", "Web bookings to verify"),
    "verify_hint": ("Se dio el NIF de una ficha con otros datos de contacto (o para un menor). Llama al teléfono de la ficha: "
                    "si es esa persona, pasa la cita a su ficha; si no la pidió, recházala (se anula sin avisar a nadie).",
                    "The NIF of a record on file was given with other contact details (or for a child). Call the record's "
                    "phone: if it is that person, move the visit to their record; if not, refuse it (no one is told)."),
    "verify_none": ("No hay reservas por verificar.", "No booking waits to be verified."),
    "verify_typed": ("Lo que escribió en la web", "What was typed on the web"), "verify_on_file": ("Ficha con ese NIF", "Record with that NIF"),
    "verify_no_record": ("Ninguna ficha activa tiene ese NIF.", "No live record has that NIF."),
    "verify_match": ("Es esta persona: pasar la cita a su ficha", "It is this person: move the visit to their record"),
    "verify_refuse": ("No la pidió: rechazar", "They did not ask for it: refuse"),
    "verify_close": ("Cerrar y borrar lo que escribió", "Close it and erase what was typed"),
    "rule_verify_cancelled": ("Esa cita se anuló entretanto: ciérrala en su lugar.", "That visit was cancelled meanwhile: close it instead."),
    "verify_matched": ("Cita pasada a la ficha de {patient}.", "Visit moved to {patient}'s record."),
    "verify_refused": ("Reserva web rechazada: la cita queda anulada.", "Web booking refused: the visit is cancelled."),
    "event_appointment.matched": ("reserva web verificada por recepción", "web booking verified by reception"),
    "event_appointment.refused": ("reserva web rechazada por recepción", "web booking refused by reception"),
    "rule_verify_ended": ("Esa cita ya no está por verificar: otra persona de recepción la ha resuelto.",
                          "That visit no longer waits to be verified: another receptionist ended it."),
    "rule_verify_no_record": ("Ninguna ficha con ese NIF a la que pasar la cita: dé de alta al paciente o rechace la reserva.",
                              "No record has that NIF to move the visit to: register the patient, or refuse the booking."),
    "mail_subject_web": ("Confirme su cita: {date}, {time}", "Confirm your appointment: {date}, {time}"),
    "mail_lead_web": ("Ha pedido esta cita en {clinic}. Para reservarla, confírmela antes de las {until}; si no,"
                      " quedará libre para otra persona:", "You asked for this appointment at {clinic}. To book it,"
                      " confirm it before {until}; otherwise it is freed for someone else:"),
    "mail_link_web": ("Para confirmar la cita:", "To confirm the appointment:"),
    "mail_button_web": ("Confirmar la cita", "Confirm the appointment"),
    "mail_ignore_web": ("Si no ha pedido usted esta cita, no haga nada: no se reservará.",
                        "If you did not ask for this appointment, do nothing: it will not be booked."),
    "field_week": ("Semana", "Week"),
    "rule_mail_pending": ("Esta cita espera a que el paciente la confirme por correo: aún no se le envía nada más.",
                          "This visit waits for the patient's confirmation by e-mail: nothing else is sent yet."),
    # drag to move, and to lengthen ("Drag to move, and to lengthen")
    "event_appointment.length_changed": ("duración cambiada", "length changed"),
    "rule_length": ("La duración va en minutos enteros, de 5 a 480.", "The length is whole minutes, 5 to 480."),
    "rule_squeezed_length": ("Una sobrecita conserva su duración: anúlala y haz otra.",
                             "A squeezed-in visit keeps its length: cancel it and squeeze in another."),
    "length": ("Duración", "Length"), "field_minutes": ("Duración", "Length"),
    "length_change": ("Cambiar duración", "Change length"),
    "length_help": ("Desde su hora de inicio, en los pasos de la agenda del médico: la cita queda sin confirmar y se "
                    "avisa al paciente.", "From its start, in the steps of the doctor's grid: the visit is unconfirmed"
                    " and the patient is told."),
    "length_done": ("Duración de la cita cambiada a {minutes} min.", "The visit's length changed to {minutes} min."),
    "drag_hint": ("Ratón: arrastra una cita a otra hora o médico, o su borde inferior para cambiar su duración. "
                  "Teclado, sobre una cita: m mueve (↑ ↓ ← →) y d cambia la duración (↑ ↓); Intro lo hace, Esc lo "
                  "deja.", "Mouse: drag a visit to another time or doctor, or its lower edge to change its length. "
                  "Keys, on a visit: m moves it (↑ ↓ ← →) and d changes its length (↑ ↓); Enter does it, Esc leaves "
                  "it."),
    "drag_to": ("Mover a las {time} · {column}. Intro para mover, Esc para dejarla.",
                "Move to {time} · {column}. Enter to move, Esc to leave it."),
    "drag_length": ("Duración {minutes} min, hasta las {ends}. Intro para cambiarla, Esc para dejarla.",
                    "Length {minutes} min, until {ends}. Enter to change it, Esc to leave it."),
    "drag_sending": ("Un momento…", "One moment…"), "drag_left": ("Cita sin cambios.", "Visit unchanged."),
    **PATIENT_TEXTS,  # what reaches a patient: words/patient_texts.py
}


def refusal_key(code, rule):
    """The TEXTS key of a refusal's words: its code's when it has no rule, a slot's reason (reason_REASON),
    else its rule (rule_RULE). Never the English message ("Staff desk")."""
    if rule is None:
        return code
    return f"reason_{rule}" if code == "SLOT_NOT_AVAILABLE" else f"rule_{rule}"


def part_text(t, code, rule, field):
    """One part of a refusal (code, rule, field) in the desk's language, the field named by its field_ words."""
    key = refusal_key(code, rule)
    words = t(key if key in TEXTS else code if code in TEXTS else "error")
    return words.replace("{field}", t(f"field_{field}") if f"field_{field}" in TEXTS else field or "")


def refusal_text(t, error):
    """A refusal of the clinic (ClinicError) in the desk's language: each of its parts' words, once."""
    return " ".join(dict.fromkeys(part_text(t, *part) for part in error.parts))


def refusal_fields(t, error):
    """{field: words} for each field a refusal concerns, to show beside it in a form."""
    found = {}
    for code, rule, field in error.parts:
        if field:
            found.setdefault(field, []).append(part_text(t, code, rule, field))
    return {field: " ".join(dict.fromkeys(words)) for field, words in found.items()}


def why_words(t, why, kind):
    """Why a visit of `kind` does not fit at a start (`fitting.Why`) in the clinic's words: the box or machine
    held, named; past the doctor's hours; into another visit or a closure; else the slot's reason."""
    visit = t("why_visit", minutes=kind.minutes) + (t("why_pause", minutes=kind.pause) if kind.pause else "")
    if why.reason == "resource_taken":
        return held_words(t, why.held)
    if why.reason in ("past_hours", "runs_into", "runs_into_closed"):
        return t(f"why_{why.reason}", visit=visit, ends=why.ends or "", at=why.at or "")
    return t(f"reason_{why.reason}" if f"reason_{why.reason}" in TEXTS else "SLOT_NOT_AVAILABLE")


def held_words(t, held):
    """What is held then, [(category, [names])], in the clinic's words; without it, that a box or machine is."""
    said = [t("why_held", category=category, names=", ".join(names)) for category, names in held or () if names]
    return " ".join(said) or t("reason_resource_taken")


def mail_reason(error, t=None):
    """A message's why (outbox `error`: a reason, then the server's code or the error's name) in the words of `t` (a
    translator; English by default), with what to do ("The sender"); a why kept before reasons were, as it is."""
    reason, _, detail = (error or "").partition(" ")
    if f"mailwhy_{reason}" not in TEXTS:
        return error or ""
    return (t or translator("en"))(f"mailwhy_{reason}", detail=f" ({detail})" if detail else "")


def translator(language):
    """t(key, **values): the text of TEXTS in this language."""
    index = 1 if language == "en" else 0

    def t(key, **values):
        text = TEXTS[key][index] if key in TEXTS else key
        return text.format(**values) if values else text
    return t
