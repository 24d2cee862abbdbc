"""The agenda as reception reads it: the day and the week on one time axis ("The day as time"), their
timeline partial, the month at a glance ("The month at a glance"), and the appointments that need a call
("To call")."""

import datetime as dt
import functools
import html
import os
import re
import urllib.parse

import bottle

from ..values.refusals import invalid
from ..values.fields import format_date, hhmm, parse_date
from ..domain.counter import overlaps, to_call
from ..domain.waitlist import fits, waiting
from ..words.texts import translator
from ..words.pages import desk_template
from ..domain.slots import Slot
from ..domain.visits import resources_day
from ..domain.holds import unheld
from ..domain.timeline import (NOW_ROWS, center_week, day_timeline, doctor_week, legend, now_label_at,
                       week_days)
from ..web.answers import clinic, query_text
from .shared import (catalog_names, changes_version, day_address, desk_centers, desk_page, desk_source, dialled,
                     first_free_offer, pending_words, who_booked)
from ..domain.appointments import live_appointments
from ..domain.doctors import doctors_with_hours
from ..domain.availability import is_visit_type
from ..domain.month import month_view, month_weeks, reachable_months
from ..values.fields import months_after


def day_plan(clinic, day, center_id=None, reader=None):
    """One center's day as the desk draws it ("The day as time"): for each doctor, their free cells
    (`timeline.day_timeline`), exactly the starts where a visit they offer there fits, and its type."""
    return [{"id": column["doctor_id"], "name": column["name"], "speciality_id": column["speciality_id"],
             "slots": [{"time": block.time, "state": block.kind, "center_id": block.center_id,
                        "type_id": block.type_id} for block in column["blocks"] if block.kind == "free"]}
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


def timeline_html(timeline, day, center_id, headings, now=None, places=None):
    """The timeline partial: columns under `headings` (a text for each, and a place under each when `places`), the
    axis, and a line at `now`; a free block that fits someone waiting says how many ("Waiting list")."""
    entries = waiting(clinic())

    def waited(column, block):
        slot = Slot(column["day"], format_date(column["day"]), block.time, "", 0, column["doctor_id"], column["name"],
                    column["speciality_id"], block.center_id)
        return sum(fits(entry, slot) for entry in entries)
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    return desk_template("timeline").render(
        timeline=timeline, day=day, center_id=center_id, headings=headings, now=now, hhmm=hhmm, waited=waited, t=t,
        desk=bottle.request.environ["agenda.desk"], format_date=format_date, dialled=dialled, urlencode=urllib.parse.urlencode, who_booked=who_booked,
        today=clinic().today().isoformat(), last_day=clinic().window("desk").last_day.isoformat(), places=places,
        now_label_at=now_label_at, now_rows=NOW_ROWS, escape=html.escape, pending=functools.partial(pending_words, t))


def without(prefix, name):
    """A center's name without the words it begins with that its heading already says (the clinic's name, or
    those every center's name begins with): "Clínica Sol - Norte" is "Norte"; the whole name when nothing is left."""
    if not prefix or not name.startswith(prefix):
        return name
    return name[len(prefix):].lstrip(" -–—·:,") or name


def shared_words(names):
    """The whole words every one of these names begins with ('' for one name or none)."""
    shared = os.path.commonprefix(names) if len(names) > 1 else ""
    return shared[:shared.rfind(" ") + 1]


def desk_day():
    """The day view: one center's doctors (or one doctor) on one time axis, now marked ("The day as time"); with
    ?print=1, the printed day on the screen (the print button without JavaScript)."""
    day, centers = asked_day(), desk_centers()
    center_id = query_text("centerId") or (centers[0]["id"] if centers else None)
    doctor_id, printing = query_text("doctorId"), bool(query_text("print"))
    timeline = day_timeline(clinic(), day, clinic().require_center(center_id), doctor_id, reader=desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    headings = [f"{c['name']} ({c['speciality_id']}) · " + ", ".join(t("minutes", minutes=m) for m in c["slot_minutes"])
                for c in timeline.columns]
    clinic_name = clinic().settings.clinic_name or t("app")
    center_name = next((c["name"] for c in centers if c["id"] == center_id), "")
    here = day_address(day, center_id, doctor_id)
    return desk_page("day", day=day, center_id=center_id, centers=centers, doctor_id=doctor_id,
                     doctors=doctors_with_hours(clinic()), timeline=timeline, version=changes_version(),
                     drawn=None if printing else timeline_html(timeline, day, center_id, headings, now_minute(day)),
                     previous=day_address(day - dt.timedelta(days=1), center_id, doctor_id),
                     following=day_address(day + dt.timedelta(days=1), center_id, doctor_id),
                     today=day_address(clinic().today(), center_id, doctor_id), here=here, printing=printing,
                     print_address=here + "&print=1", fill=not printing, legend=drawn_legend(timeline, center_id),
                     printed_heading=f"{clinic_name} · {without(clinic_name, center_name)}")


def drawn_legend(timeline, center_id=None):
    """The colours of the visit types a timeline draws or offers, named ("The day as time")."""
    return legend(clinic(), [card for column in timeline.columns for card in column["cards"]],
                  {column["doctor_id"] for column in timeline.columns}, center_id)


def desk_week():
    """A week: one doctor's days side by side on the time axis (?doctorId=), each day's center named, else the
    center's days, a column a day of its appointments ("The day as time")."""
    day, centers = asked_day(), desk_centers()
    doctor_id, center_id = query_text("doctorId"), query_text("centerId") or (centers[0]["id"] if centers else None)
    monday = week_days(day)[0]
    around = {"previous": monday - dt.timedelta(days=7), "following": monday + dt.timedelta(days=7)}
    links = {name: "/desk/week?" + urllib.parse.urlencode({"date": format_date(each), **(
        {"doctorId": doctor_id} if doctor_id else {"centerId": center_id or ""})}) for name, each in around.items()}
    if doctor_id is None:
        week = center_week(clinic(), center_id, day, reader=desk_source())
        return desk_page("week", day=monday, centers=centers, center_id=clinic().require_center(center_id),
                         doctors=doctors_with_hours(clinic()), doctor=None, version=changes_version(), week=week,
                         legend=legend(clinic(), [card for each in week for card in each["cards"]],
                                       {counts["id"] for each in week for counts in each["doctors"]}, center_id),
                         **links)
    timeline = doctor_week(clinic(), doctor_id, day, reader=desk_source())
    t = translator(bottle.request.environ["agenda.desk"]["lang"])
    headings = [f"{t('weekdays')[c['day'].weekday()]} {c['day']:%d/%m}" for c in timeline.columns]  # the year is above
    names = {c["id"]: c["name"] for c in centers}
    short = short_names(names)
    places = [[(names.get(each, each), short.get(each, each)) for each in c["centers"]] for c in timeline.columns]
    return desk_page("week", day=monday, centers=centers, center_id=center_id, doctors=doctors_with_hours(clinic()),
                     doctor=clinic().require_doctor(doctor_id), week=None, version=changes_version(), fill=True,
                     drawn=timeline_html(timeline, None, None, headings, places=places),
                     legend=drawn_legend(timeline), **links)


def desk_rooms():
    """A center's rooms and machines on a day ("Rooms and machines"): who each room is for, and the visits each
    holds, by time, who the patients are through the one door; first, the day's visits there not yet ended that
    hold other than they need ("What a visit holds"), by id, to move (`agenda status` counts every day's)."""
    day, centers = asked_day(), desk_centers()
    center_id = clinic().require_center(query_text("centerId") or (centers[0]["id"] if centers else None))
    resources = resources_day(clinic().conn(), center_id, day)
    held = sorted({key for resource in resources for key in resource["held"]})
    records = {a["id"]: a for a in live_appointments(clinic(), desk_source(), "day", ids=held)} if held else {}
    unplaced = [visit for visit in unheld(clinic().conn(), clinic().clock().astimezone(clinic().tz),
                                          day=day.isoformat(), started=True)
                if visit.center_id == center_id]  # moved in, or from before rooms were held: to move
    return desk_page("rooms", day=day, centers=centers, center_id=center_id, resources=resources, records=records,
                     unplaced=unplaced, doctor_names=catalog_names("doctors"),
                     previous=rooms_address(day - dt.timedelta(days=1), center_id),
                     following=rooms_address(day + dt.timedelta(days=1), center_id))


def rooms_address(day, center_id):
    return "/desk/rooms?" + urllib.parse.urlencode({"date": format_date(day), "centerId": center_id or ""})


def desk_calls():
    """The appointments that need a call, from today on, soonest first ("To call"), and the pairs of one
    patient's visits that overlap (ids and times: each links to its page) ("One patient, one place")."""
    pairs, count = overlaps(clinic())
    return desk_page("calls", appointments=to_call(clinic(), reader=desk_source()), overlaps=pairs,
                     overlap_count=count)


def asked_month():
    """The first day of the month a page shows: ?month=MM/YYYY, else this one; one after the desk's horizon's
    month is refused, naming it."""
    text, last = query_text("month"), clinic().window("desk").last_day
    if text is None:
        return clinic().today().replace(day=1)
    match = re.fullmatch(r"(\d{1,2})/(\d{4})", text)
    if not match or not 1 <= int(match[1]) <= 12 or not 1900 <= int(match[2]) <= 2999:
        raise invalid("month must be MM/YYYY, as 03/2027", "month", "month")
    first = dt.date(int(match[2]), int(match[1]), 1)
    if first > last:
        raise invalid(f"the desk books up to {last:%m/%Y}", "month_horizon", "month")
    return first


def month_address(first, doctor_id, center_id, type_id):
    return "/desk/month?" + urllib.parse.urlencode({"month": f"{first:%m/%Y}", **(
        {"doctorId": doctor_id} if doctor_id else {"centerId": center_id or ""}), **(
        {"typeId": type_id} if type_id else {})}, safe="/")


def desk_month():
    """A month at a glance, a doctor's (?doctorId=) or a center's: each day's free and booked time per doctor, its
    closures, and with ?typeId= the days a visit of that type fits; a day opens the day ("The month at a glance")."""
    first, centers = asked_month(), desk_centers()
    doctor_id, type_id = query_text("doctorId"), query_text("typeId")
    center_id = None if doctor_id else clinic().require_center(query_text("centerId") or (
        centers[0]["id"] if centers else None))
    if type_id is not None and not is_visit_type(clinic(), type_id):
        clinic().require_speciality(type_id)  # a clinic without types asks by area
    month, reachable, last_day = month_view(clinic(), first, doctor_id, center_id, type_id), reachable_months(clinic()), \
        clinic().window("desk").last_day
    following = months_after(first, 1)
    return desk_page(
        "month", first=first, month=month, weeks=month_weeks(first), centers=centers, center_id=center_id,
        doctor=clinic().require_doctor(doctor_id) if doctor_id else None, doctors=doctors_with_hours(clinic()),
        types=sorted((catalog_names("types") or catalog_names("specialities")).items(), key=lambda item: item[1]),
        type_id=type_id, reachable=reachable if first in reachable else [first] + reachable, today=clinic().today(),
        last_day=last_day, day_address=day_address, span=span, share=share, version=changes_version(),
        clinic_name=clinic().settings.clinic_name or "", center_name=catalog_names("centers").get(center_id, ""),
        places=short_names({c["id"]: c["name"] for c in centers}),
        ahead=first_free_offer(type_id, format_date(first), doctor_id, center_id) if type_id else None,
        previous=month_address(months_after(first, -1), doctor_id, center_id, type_id),
        following=month_address(following, doctor_id, center_id, type_id) if following <= last_day else None)


def short_names(names):
    """{center id: its name without the words every center's name begins with} ("The day as time")."""
    shared = shared_words(list(names.values()))
    return {key: without(shared, name) for key, name in names.items()}


def span(minutes):
    """Minutes as the month says them: "45 min", "2 h", "2 h 30"."""
    hours, rest = divmod(minutes, 60)
    return f"{minutes} min" if not hours else f"{hours} h" + (f" {rest:02d}" if rest else "")


def share(part, whole):
    """A part's whole percent of `whole` (0 to 100), for a bar's width class."""
    return 0 if not whole else max(0, min(100, round(part * 100 / whole)))
