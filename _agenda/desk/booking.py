"""Booking and what follows: the booking form (a patient found or registered, a sobrecita, a waiting
patient), an appointment's page and its actions (move, length, details, cancel, confirm, attendance, the rest
of a series), and a series."""

import datetime as dt
import functools

import bottle

from ..values.refusals import ClinicError, invalid
from ..values.fields import clinic_moment, all_fields, format_date, minutes_of, parse_date, parse_time
from ..values.printing import masked
from ..domain.patients import DESK_FIELDS, patient_fields
from ..domain.counter import mark_attendance, open_marks, overlapped, squeeze_in
from ..domain.series import book_series, cancel_rest, parse_every, preview_series, series_choices, TAKES
from ..domain.waitlist import fits, named, PAGE, waiting
from ..domain.fitting import lengths, retypes, why_not, why_not_length
from ..words.texts import held_words, mail_reason, TEXTS, translator, why_words
from ..web.answers import clinic, query_text, status_of
from .shared import (catalog_names, day_address, desk_page, desk_refusal, desk_source,
                     desk_wrong_fields, done, first_free_offer, form, new_patient_typed, told_after, who_booked)
from ..domain.appointments import appointment_for_desk, last_insurances, read_appointment
from ..domain.outbox import last_message_id, messages_of, recipient_of, send_state
from ..domain.availability import availability, insurance_lists, types_at
from ..domain.booking import Visit
from ..domain.changes import (book_appointment, cancel_appointment, change_details, change_length,
                              confirm_appointment, move_appointment)
from ..domain.doctors import doctors_with_hours
from ..domain.registry import patient_record, register_patient, registered_as, search_patients

LEFT_SHOWN = 12  # the dates a series left out that its flash names (the cookie is small)


def desk_book_page(error=None, status=200, wrong=None, booked=None, elsewhere=None, patient=None, existing=None,
                   lost=False):
    """Booking a free slot: the slot at its center and its visit type (the doctor's first there by default; where
    the type asked does not fit, the starts of the day where it does), a patient search, and a new patient's form.
    After a refusal: the patient chosen, registered or already holding that NIF (`existing`) shown to book in one
    click; for the patient's other visit then, that visit linked and the choice to book over it; after a slot
    lost (`lost`), the way on (`way_on`)."""
    slot = {name: query_text(name) or form(name) for name in ("doctorId", "date", "time", "centerId", "squeeze",
                                                              "typeId")}
    doctor = clinic().require_doctor(slot["doctorId"])
    kinds, starts, why = visit_types_here(doctor, slot)
    q = form("q") or ""  # a search comes by POST only: what was typed never goes into a URL or the history
    typed = {name: form(name) or "" for name in (*DESK_FIELDS, "reason", "guardianNif", "insuranceId", "underGuardian")}
    typed["insuranceId"] = typed["insuranceId"] or query_text("insuranceId") or ""  # carried from the waiting list
    try:
        found = search_patients(clinic(), q, reader=desk_source()) if q else None
    except ClinicError as refusal:
        found, error, status, wrong = None, desk_refusal(refusal), status_of(refusal), desk_wrong_fields(refusal)
    chosen = patient or query_text("patientId") or form("patientId")  # chosen on their page, or refused with them
    if chosen and not q:
        found = [patient_record(clinic(), chosen, reader=desk_source())]
    offers = way_on(doctor, slot, typed["insuranceId"] or None) if lost and chosen and not q else None
    waitlist_id = query_text("waitlistId") or form("waitlistId")  # the waiting patient, carried from the list
    entry = entry_of(waitlist_id)
    insurances = insurances_here(doctor, slot)
    scope = query_text("ahead")  # "doctor" or "area": the first free start of this type, up to the horizon
    ahead = first_free_offer(slot["typeId"] or doctor["speciality_id"], slot["date"], doctor["id"] if scope ==
                             "doctor" else None) if scope in ("doctor", "area") and not slot["squeeze"] else None
    return desk_page("book", status=status, slot=slot, doctor=doctor, found=found, insurances=insurances, ahead=ahead,
                     usual=usual_insurances(found, insurances, typed["insuranceId"]), q=q, typed=typed, error=error,
                     wrong=wrong or {}, waitlist_id=waitlist_id,
                     entry=entry, waiting_here=[w for w in waiting_for(doctor, slot) if entry is None
                                                or w["id"] != entry["id"]],
                     booked=booked, elsewhere=elsewhere, kinds=kinds, starts=[] if offers else starts, offers=offers,
                     unfit=None if offers or why is None else "" if error else why,
                     existing=found[0] if existing and found else None, focus=first_focus(offers, found, error),
                     center_name=catalog_names("centers").get(slot["centerId"]))


def first_focus(offers, found, error):
    """What the booking page puts the focus on, for the keyboard: the first slot offered after a lost race, the
    first patient found, else the search (unless a refusal is being read)."""
    if offers and (offers["mine"] or offers["others"]):
        return "offer"
    if found:
        return "found"
    return None if error else "search"


def usual_insurances(found, insurances, typed):
    """{patient id: the insurance their booking form starts on}: the one typed, else their latest appointment's
    when the doctor takes it here (none chosen for them otherwise)."""
    if not found or not insurances:
        return {}
    taken, last = {key for key, _ in insurances}, ({} if typed else last_insurances(clinic(), [p["id"] for p in found]))
    return {p["id"]: typed or (last.get(p["id"]) if last.get(p["id"]) in taken else "") for p in found}


def insurances_here(doctor, slot):
    """[(id, name)] of the insurances the doctor takes at the slot's center, by name; None when they take every one."""
    listed = insurance_lists(clinic(), [doctor["id"]]).get((doctor["id"], slot["centerId"]))
    names = catalog_names("insurances")
    return [(key, names.get(key, key)) for key in sorted(listed, key=lambda key: names.get(key, key))] \
        if listed else None


WAY_ON = 6  # the doctor's next free slots offered after a slot is lost


def way_on(doctor, slot, insurance_id):
    """After a slot is refused (another booking took it, a closure came): {"mine": the doctor's next free slots of
    the type chosen from that day on (at most WAY_ON), "others": that time with each other doctor of the speciality
    who offers the type}, only where the insurance chosen is taken (none: only doctors who take every one)."""
    try:
        day, time_text = parse_date(slot["date"] or "", "date"), parse_time(slot["time"] or "", "time")
    except ClinicError:
        return None
    mine = [s for s in availability(clinic(), doctor_id=doctor["id"], speciality_id=slot["typeId"],
                                    first=max(day, clinic().today()), channel="desk")
            if (s.date, s.time) != (day, time_text)]
    others = [s for s in availability(clinic(), speciality_id=slot["typeId"] or doctor["speciality_id"], first=day,
                                      last=day, channel="desk")
              if s.time == time_text and s.doctor_id != doctor["id"]]
    lists = insurance_lists(clinic(), {s.doctor_id for s in mine + others})

    def takes(s):
        listed = lists.get((s.doctor_id, s.center_id))
        return not listed or insurance_id in listed
    return {"mine": [s for s in mine if takes(s)][:WAY_ON], "others": [s for s in others if takes(s)],
            "centers": catalog_names("centers")}


def visit_types_here(doctor, slot):
    """([(type id, its words)] the doctor offers where they work then, the first their default; when the type
    chosen does not fit at the slot's time, the starts of that day (at most 12) where it does and why not, in
    the desk's words ('' when unknown); else [] and None)."""
    try:
        day, time_text = parse_date(slot["date"] or "", "date"), parse_time(slot["time"] or "", "time")
    except ClinicError:
        return [], [], None
    kinds = types_at(clinic(), doctor["id"], slot["centerId"])
    slot["typeId"] = slot["typeId"] if slot["typeId"] in {kind.id for kind in kinds} else (
        kinds[0].id if kinds else None)
    if not slot["typeId"] or slot["squeeze"]:
        return [(kind.id, kind) for kind in kinds], [], None
    free = availability(clinic(), doctor_id=doctor["id"], speciality_id=slot["typeId"], center_id=slot["centerId"],
                        first=day, last=day, channel="desk")
    if any(s.time == time_text for s in free):
        return [(kind.id, kind) for kind in kinds], [], None
    kind = next(kind for kind in kinds if kind.id == slot["typeId"])
    why = why_not(clinic(), doctor["id"], day, time_text, slot["centerId"], kind)
    words = why_words(translator(bottle.request.environ["agenda.desk"]["lang"]), why, kind) if why else ""
    return [(kind.id, kind) for kind in kinds], [s.time for s in free][:12], words


def slot_refusal(error):
    """A refusal in the desk's words; a box or machine taken names what is held then (`error.held`, when the door
    gives it: [(category, [names])]), else says a box or machine is."""
    if error.code == "SLOT_NOT_AVAILABLE" and error.rule == "resource_taken":
        return held_words(translator(bottle.request.environ["agenda.desk"]["lang"]), getattr(error, "held", None))
    return desk_refusal(error)


def booking_refusal(error, slot, type_id, squeezed):
    """A booking's refusal in the desk's words (`slot_refusal`); a visit whose start is free but that does not
    fit says why, asked again of `fitting.why_not`: past the doctor's hours, into their next visit or a closure."""
    if squeezed or error.code != "SLOT_NOT_AVAILABLE" or error.rule not in ("off_grid", "taken", "closed"):
        return slot_refusal(error)
    try:
        day, time_text = parse_date(slot["date"] or "", "date"), parse_time(slot["time"] or "", "time")
        doctor = clinic().require_doctor(slot["doctorId"])
    except ClinicError:
        return desk_refusal(error)
    kinds = types_at(clinic(), doctor["id"], slot["centerId"])
    kind = next((kind for kind in kinds if kind.id == type_id), kinds[0] if kinds else None)
    why = why_not(clinic(), doctor["id"], day, time_text, slot["centerId"], kind) if kind else None
    if why is None or why.reason not in ("past_hours", "runs_into", "runs_into_closed"):
        return desk_refusal(error)
    return why_words(translator(bottle.request.environ["agenda.desk"]["lang"]), why, kind)


def waiting_for(doctor, slot):
    """The first PAGE waiting entries this free slot fits, oldest first: a typed entry's only where its type fits
    whole (none for a sobrecita or a slot not free)."""
    try:
        day, time_text = parse_date(slot["date"] or "", "date"), parse_time(slot["time"] or "", "time")
    except ClinicError:
        return []
    if slot.get("squeeze"):
        return []
    entries = waiting(clinic())
    kinds = sorted({entry["type_id"] for entry in entries if entry["type_id"]}) + [None]  # each type asked fits or not
    free = [s for kind in kinds for s in availability(clinic(), 
        doctor_id=doctor["id"], speciality_id=kind, center_id=slot["centerId"], first=day, last=day, channel="desk")
        if s.time == time_text]
    return named(clinic(), [entry for entry in entries if any(fits(entry, s) for s in free)][:PAGE], desk_source())


def entry_of(waitlist_id):
    """The waiting entry `waitlist_id` names while it waits (with the visit it would bring forward), or None."""
    return next((entry for entry in waiting(clinic()) if str(entry["id"]) == str(waitlist_id)), None) \
        if waitlist_id else None


def desk_book():
    """Book the slot for a patient found, or for a new one registered in the same form: every wrong field of
    the form said at once, before anything is written."""
    source, slot, patient_id = desk_source(), {name: form(name) for name in ("doctorId", "date", "time",
                                                                             "centerId")}, None
    try:
        asked = all_fields({"day": lambda: parse_date(slot["date"] or "", "date"),
                            "time_text": lambda: parse_time(slot["time"] or "", "time"),
                            "reason": lambda: form("reason"),
                            "patient": lambda: form("patientId") or checked_patient(new_patient_typed())})
        patient_id = form("patientId") or desk_patient_id(source)
        after = last_message_id(clinic().conn())
        booking = functools.partial(squeeze_in, clinic()) if form("squeeze") else functools.partial(
            book_appointment, clinic(), waitlist_id=form("waitlistId"))  # the entry ends with it, or nothing is made
        booked = booking(Visit(patient_id, slot["doctorId"], form("typeId"), slot["centerId"],
                               insurance_id=form("insuranceId"), reason=asked["reason"],
                               accept_overlap=bool(form("acceptOverlap"))),
                         day=asked["day"], time_text=asked["time_text"], source=source)
    except ClinicError as error:
        existing = error.extra.get("patientId") if error.code == "PATIENT_ALREADY_EXISTS" else None
        return desk_book_page(booking_refusal(error, slot, form("typeId"), bool(form("squeeze"))),
                              status=status_of(error), wrong=desk_wrong_fields(error),
                              booked=error.extra.get("appointmentId"), elsewhere=error.extra.get("elsewhere"),
                              patient=patient_id or existing, existing=existing, lost=lost_slot(error))
    done(day_address(asked["day"], slot["centerId"]), ("booked_done", {"date": format_date(asked["day"]),
                                                                       "time": asked["time_text"]}),
         told_after(booked, after), patient=int(patient_id))


def lost_slot(error):
    """Whether a booking was refused for its slot (taken in a race, closed meanwhile), not for the patient's other
    visit: the page then offers the way on. A sobrecita has no slot to lose."""
    return error.code == "SLOT_NOT_AVAILABLE" and error.rule != "patient_elsewhere" and not form("squeeze")


def checked_patient(fields):
    """Refuse a new patient's wrong fields (all of them) before anything is written; None."""
    patient_fields(fields, clinic().today(), guarded=bool(fields["guardianNif"]))


def desk_patient_id(source):
    """The new patient of the booking form, registered; the same one when the form comes again (a
    booking refused after the registration, sent once more with another slot)."""
    fields = new_patient_typed()
    try:
        return register_patient(clinic(), fields, source=source)
    except ClinicError as error:
        if error.code == "PATIENT_ALREADY_EXISTS" and registered_as(clinic(), error.extra["patientId"], fields["name"]):
            return error.extra["patientId"]
        raise


def desk_appointment(appointment_id, error=None, status=200, elsewhere=None, wrong=None):
    """One appointment: its details and history; change its details (`wrong`: refused), move it (to another doctor
    of the speciality or center too; over the patient's other visit on purpose, after a refusal that links it), mark
    attendance, cancel it with a reason, confirm it. A cancelled one says when and by whom."""
    appointment = appointment_for_desk(clinic(), appointment_id, reader=desk_source())
    typed = {field: (form(field) if wrong is not None else appointment[name]) or "" for field, name in (
        ("reason", "reason"), ("insuranceId", "insurance_id"), ("typeId", "type_id"), ("note", "note"))}
    doctors = [d for d in doctors_with_hours(clinic()) if d["speciality_id"] == appointment["speciality_id"]
               and not d["retired_from"]] or [dict(clinic().require_doctor(appointment["doctor_id"]))]
    to_doctor = query_text("doctorId") or appointment["doctor_id"]
    first = parse_date(query_text("date"), "date") if query_text("date") else max(
        clinic().today(), dt.date.fromisoformat(appointment["date"]))
    last = first + dt.timedelta(days=13)
    free = [] if appointment["status"] == "cancelled" else availability(clinic(), 
        doctor_id=to_doctor, speciality_id=appointment["type_id"], first=first, last=last, channel="desk")[:40]
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    why = t("why_beyond") if first > clinic().window("desk").last_day else ""
    empty = t("no_free", doctor=clinic().require_doctor(to_doctor)["name"], first=format_date(first),
              last=format_date(last), why=why)
    zone = clinic().tz
    appointment.update(weekday=dt.date.fromisoformat(appointment["date"]).weekday(),
                       arrived_local=clinic_moment(appointment["arrived_at"], zone, "%H:%M"))
    for event in appointment["history"]:
        event["when"] = clinic_moment(event["at"], zone)
        event["who"] = who_booked(t, event["source"])
    person, why = recipient_of(appointment)
    return desk_page("appointment", status=status, appointment=appointment, free=free, first=first,
                     mail_to=masked(person["email"]) if person else t(f"mailwhy_{why}"),
                     doctors=doctors, to_doctor=to_doctor, empty=empty, error=error,
                     insurance_names=catalog_names("insurances"), center_names=catalog_names("centers"),
                     wrong=wrong or {}, typed=typed, accepted=insurance_lists(clinic(), [
                         appointment["doctor_id"]]).get((appointment["doctor_id"], appointment["center_id"])),
                     kinds=list(retypes(clinic(), appointment_id).values()), lengths=length_choices(appointment),
                     doctor_names={d["id"]: d["name"] for d in doctors}, who_booked=who_booked,
                     today=clinic().today().isoformat(), elsewhere=elsewhere, chosen=form("slot"),
                     marks=open_marks(clinic(), appointment["date"], appointment["start"]),
                     overlapped=overlapped(clinic(), appointment) if appointment["overlap_accepted"] else [],
                     messages=[{**message, "when": clinic_moment(message["done_at"] or message["created_at"], zone),
                                "why": mail_reason(message["error"], t),
                                "tried": message["state"] == "held" and message["attempts"] > 0,
                                "retrying": message["state"] == "waiting" and bool(message["attempts"] or message["error"]),
                                "since": clinic_moment(message["created_at"], zone)}
                               for message in messages_of(clinic(), appointment_id)])


def desk_move(appointment_id):
    """Move to the slot chosen: 'DD/MM/YYYY|HH:MM|DOCTOR|CENTER' from the move form's list."""
    before, after = read_appointment(clinic(), appointment_id, None), last_message_id(clinic().conn())
    try:
        parts = (form("slot") or "").split("|")
        if len(parts) != 4:
            raise invalid("time is required", "required", "time")
        day, time_text = parse_date(parts[0], "date"), parse_time(parts[1], "time")
        move_appointment(clinic(), appointment_id, day=day, time_text=time_text, doctor_id=parts[2],
                         center_id=parts[3] or None,
                         source=desk_source(), accept_overlap=bool(form("acceptOverlap")))
    except ClinicError as error:
        return desk_appointment(appointment_id, slot_refusal(error), status_of(error), error.extra.get("elsewhere"))
    now = read_appointment(clinic(), appointment_id, None)
    done(day_address(day, now["center_id"]), ("moved_where_done", {
        "date": format_date(day), "time": time_text, "doctor": catalog_names("doctors").get(now["doctor_id"], ""),
        "center": catalog_names("centers").get(now["center_id"], "")}), told_after(appointment_id, after),
         patient=before["patient_id"])


def desk_cancel(appointment_id):
    before, after = read_appointment(clinic(), appointment_id, None), last_message_id(clinic().conn())
    cancel_appointment(clinic(), appointment_id, reason=form("reason") or "cancelled at the desk", source=desk_source())
    done(day_address(dt.date.fromisoformat(before["date"]), before["center_id"]), ("cancelled_done", {}),
         told_after(appointment_id, after), patient=before["patient_id"])


def desk_send_mail(appointment_id):
    """Reception sends the visit's state now, by e-mail: refused, in the desk's words, when nothing can go."""
    after = last_message_id(clinic().conn())
    try:
        patient = send_state(clinic(), appointment_id, desk_source(), clinic().clock())
    except ClinicError as error:
        return desk_appointment(appointment_id, desk_refusal(error), status_of(error))
    done(f"/desk/appointments/{int(appointment_id)}", told_after(appointment_id, after), patient=patient)


def desk_cancel_rest(appointment_id):
    """Cancel this session of a series and every later one ("Series")."""
    before = read_appointment(clinic(), appointment_id, None)
    gone = cancel_rest(clinic(), appointment_id, form("reason") or "cancelled at the desk", desk_source())
    done(f"/desk/patients/{before['patient_id']}", ("series_rest_done", {"count": len(gone)}),
         patient=before["patient_id"])


def desk_series():
    """A series for the patient chosen: the preview of its dates with the ways to book it that book 2 or more
    (step=preview), then booked the way chosen (take), the dates left out said to call ("Series")."""
    slot = {name: form(name) for name in ("doctorId", "date", "time", "centerId", "patientId")}
    asked = {"n": form("n") or "1", "unit": form("unit") if form("unit") in ("w", "d") else "w",
             "count": form("count") or "6"}
    take = form("take") if form("take") in TAKES else "all" if form("step") == "book" else None
    patient, series, error, status = patient_record(clinic(), slot["patientId"], desk_source()), None, None, 200
    try:
        series = all_fields({"first": lambda: parse_date(slot["date"] or "", "date"),
                             "time_text": lambda: parse_time(slot["time"] or "", "time"),
                             "every_days": lambda: parse_every(asked["n"] + asked["unit"]),
                             "count": lambda: int(asked["count"]) if asked["count"].isdigit() else invalid_count()})
        series.update(doctor_id=slot["doctorId"], center_id=slot["centerId"])
        if take:
            return desk_book_series(series, take, slot, patient)
    except ClinicError as refusal:  # asked badly, or no longer bookable that way: the preview again, if it can
        error, status = desk_refusal(refusal), status_of(refusal)
    try:
        sessions = preview_series(clinic(), patient_id=slot["patientId"], **series) if series else []
    except ClinicError as refusal:
        sessions, error, status = [], error or desk_refusal(refusal), status if error else status_of(refusal)
    return desk_page("series", status=status, slot=slot, asked=asked, patient=patient, sessions=sessions,
                     choices=series_choices(sessions), error=error, doctor=clinic().require_doctor(slot["doctorId"]),
                     typed={"reason": form("reason") or "", "insuranceId": form("insuranceId") or ""})


def desk_book_series(series, take, slot, patient):
    """Book the series the way chosen (TAKES) and go to its first day, saying how many were booked and which dates
    were left out, to call (the first few, when many)."""
    nearest, fits = TAKES[take]
    visit = Visit(slot["patientId"], series["doctor_id"], center_id=series["center_id"],
                  insurance_id=form("insuranceId"), reason=form("reason"))
    _, booked, left = book_series(clinic(), visit, nearest=nearest, fits=fits, source=desk_source(),
                                  **{key: series[key] for key in ("first", "time_text", "every_days", "count")})
    said = [("series_done", {"count": len(booked)})]
    if left:
        shown = ", ".join(format_date(day) for day in left[:LEFT_SHOWN])
        said.append(("series_left_out", {"dates": shown + (f" (+{len(left) - LEFT_SHOWN})" if len(left) > LEFT_SHOWN
                                                           else "")}))
    done(day_address(series["first"], slot["centerId"]), *said, patient=patient["id"])


def invalid_count():
    raise invalid("count must be 2 to 60", "series_count", "count")


def desk_confirm(appointment_id):
    before = read_appointment(clinic(), appointment_id, None)
    confirm_appointment(clinic(), appointment_id, True, source=desk_source())
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


def desk_change_details(appointment_id):
    """Change the visit's reason, insurance, type or note ("Details of a booked visit"), or say why not beside it."""
    after = last_message_id(clinic().conn())
    try:
        now = change_details(clinic(), appointment_id, reason=form("reason"), insurance_id=form("insuranceId"),
                             type_id=form("typeId"), note=form("note"), source=desk_source())
    except ClinicError as error:  # a type that does not fit says why, as the booking page does
        kind, why = retypes(clinic(), appointment_id).get(form("typeId"), (None, None))
        words = why_words(translator(bottle.request.environ["agenda.desk"]["lang"]), why, kind) if why else None
        return desk_appointment(appointment_id, words or slot_refusal(error), status_of(error),
                                error.extra.get("elsewhere"), desk_wrong_fields(error))
    done(f"/desk/appointments/{int(appointment_id)}", ("details_done", {}), told_after(appointment_id, after),
         patient=now["patient_id"])


def desk_change_length(appointment_id):
    """Lengthen or shorten the visit from its start ("Drag to move, and to lengthen"), or say why not beside the
    form: the visit it runs into, the hours it runs past, the box or machine held, the patient's other visit."""
    after = last_message_id(clinic().conn())
    try:
        now = change_length(clinic(), appointment_id, form("minutes") or "", source=desk_source())
    except ClinicError as error:
        minutes = form("minutes") or ""
        kind, why = why_not_length(clinic(), appointment_id, int(minutes)) if error.code == "SLOT_NOT_AVAILABLE" \
            and error.rule in ("taken", "off_grid", "closed", "resource_taken") and minutes.isdigit() else (None, None)
        words = why_words(translator(bottle.request.environ["agenda.desk"]["lang"]), why, kind) if why else None
        return desk_appointment(appointment_id, words or slot_refusal(error), status_of(error),
                                error.extra.get("elsewhere"))  # the details' form as they are
    done(f"/desk/appointments/{int(appointment_id)}", ("length_done", {"minutes": int(form("minutes"))}),
         told_after(appointment_id, after), patient=now["patient_id"])


def length_choices(appointment):
    """([minutes] the length form offers a live visit, the one chosen: the one sent, else its own)."""
    if appointment["status"] == "cancelled":
        return [], ""
    own = minutes_of(appointment["end"]) - minutes_of(appointment["start"])
    return lengths(clinic(), appointment["id"]), form("minutes") or str(own)

