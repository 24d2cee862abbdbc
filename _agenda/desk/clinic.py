"""The clinic as a whole: closures, doctors (retiring one, calendar feeds), the report and the summary
of who read patients' data; which of them only an admin reaches is said in `DESK_ROUTES`."""

import datetime as dt

import bottle

from ..values.refusals import ClinicError
from ..values.fields import clinic_moment, all_fields, format_date, parse_date, parse_time
from ..domain.feeds import feeds, new_feed, revoke_feed
from ..words.texts import translator
from ..domain.report import clinic_report
from .charts import report_charts
from ..web.answers import clinic, query_text, rooted, status_of
from .shared import (catalog_names, desk_centers, desk_page, desk_refusal, desk_source, done, form)
from ..domain.closures import add_closure, closure_fields, coming_closures, covered_by, remove_closure
from ..domain.doctors import appointments_from, doctors_with_hours, retire_doctor


def desk_closures(error=None, status=200, covered=None):
    typed = {name: form(name) or "" for name in ("doctorId", "centerId", "dateFrom", "dateTo", "start", "end",
                                                 "reason")}
    return desk_page("closures", status=status, closures=coming_closures(clinic()),
                     doctors=doctors_with_hours(clinic()),
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
        covered = covered_by(clinic(), *closure_fields(clinic(), **fields), reader=desk_source())
        if covered and not form("confirmed"):
            return desk_closures(covered=covered)
        add_closure(clinic(), **fields, reason=form("reason") or "", source=desk_source())
    except ClinicError as error:
        return desk_closures(desk_refusal(error), status_of(error))
    done("/desk/closures", ("closure_done", {}))


def desk_remove_closure_page(closure_id):
    """Ask before a closure goes: its slots are offered again at once."""
    closure = next((c for c in coming_closures(clinic(), since=dt.date(1900, 1, 1)) if c["id"] == int(closure_id)),
                   None)
    if closure is None:
        raise ClinicError("CLOSURE_NOT_FOUND", "no closure with that id")
    return desk_page("remove_closure", closure=closure, center_names=catalog_names("centers"))


def desk_remove_closure(closure_id):
    remove_closure(clinic(), closure_id, source=desk_source())
    done("/desk/closures", ("closure_removed", {}))


def desk_doctors(error=None, status=200, left=None, made=None):
    zone = clinic().tz
    with_feeds = {doctor_id: clinic_moment(at, zone) for doctor_id, _, at in feeds(clinic())}
    return desk_page("doctors", status=status, doctors=doctors_with_hours(clinic()), error=error, left=left, made=made,
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
                              "url": f"{parts.scheme}://{parts.netloc}{rooted('/feeds/')}{token}.ics"})


def desk_retire(doctor_id):
    """Retire a doctor from a date; the appointments left after it are listed to rebook."""
    try:
        day = parse_date(form("date") or "", "date")
        doctor = clinic().require_doctor(doctor_id)
        left = appointments_from(clinic(), doctor_id, day, desk_source())
        if not form("confirmed"):
            return desk_doctors(left={"doctor": dict(doctor), "date": format_date(day), "appointments": left})
        retire_doctor(clinic(), doctor_id, day, source=desk_source())
    except ClinicError as error:
        return desk_doctors(desk_refusal(error), status_of(error))
    done("/desk/doctors", ("retired_done", {"doctor": doctor["name"], "date": format_date(day)}))


def desk_report():
    """The clinic at a glance for admins: the weeks asked (by default the two past and the two coming),
    charts and tables."""
    last = parse_date(query_text("to"), "to") if query_text("to") else clinic().today() + dt.timedelta(days=13)
    first = parse_date(query_text("from"), "from") if query_text("from") else last - dt.timedelta(days=27)
    report = clinic_report(clinic(), first, last)
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    return desk_page("report", report=report, charts=report_charts(report, t), first=first, last=last)


def desk_access():
    """The record of reads of the last 30 days (?days=), summarised by reader and by patient, ids only (admins)."""
    days = int(query_text("days")) if (query_text("days") or "").isdigit() else 30
    summary = clinic().access.summary(clinic().today() - dt.timedelta(days=min(days, 3650)))
    return desk_page("access_summary", summary=summary, days=days, when=lambda moment: clinic_moment(moment, clinic().tz))
