"""The waiting room as reception follows it ("The waiting room"): a center's day, or one doctor's, by where each
patient is; its marks are the counter's one form (POST /desk/appointments/ID/attendance), back to this page."""

import datetime as dt
import urllib.parse

from ..values.fields import format_date, parse_date
from ..values.refusals import invalid
from ..domain.doctors import doctors_with_hours
from ..domain.waiting_room import STATES, waiting_room
from ..web.answers import clinic, query_text
from .shared import changes_version, desk_centers, desk_page, desk_source

# The buttons of a row in each part of the page, in their order ('' undoes a step), each shown while it is open.
ROW_MARKS = {"in_consultation": ("seen", ""), "waiting": ("in_consultation", ""), "finished": ("",),
             "expected": ("arrived", "in_consultation"), "absent": ("arrived", "in_consultation", "no_show")}


def desk_waiting_room():
    """The waiting room of ?centerId= (the first center) on ?date= (today), one doctor's with ?doctorId=: who
    waits and how long, who is in consultation, who is to come, has not come or has finished, each row's marks."""
    day = parse_date(query_text("date"), "date") if query_text("date") else clinic().today()
    if not 1900 <= day.year <= 2999:
        raise invalid("date must be a year from 1900 to 2999", "year", "date")
    centers = desk_centers()
    center_id = query_text("centerId") or (centers[0]["id"] if centers else None)
    doctor_id = query_text("doctorId") or None
    room = waiting_room(clinic(), day, center_id, doctor_id, reader=desk_source())
    here = room_address(day, center_id, doctor_id)
    return desk_page("waiting", day=day, centers=centers, center_id=center_id, doctor_id=doctor_id,
                     doctors=doctors_with_hours(clinic()), room=room, states=STATES, row_marks=ROW_MARKS, here=here,
                     version=changes_version(), ticking=ticking if day == clinic().today() else str,
                     previous=room_address(day - dt.timedelta(days=1), center_id, doctor_id),
                     following=room_address(day + dt.timedelta(days=1), center_id, doctor_id),
                     today=room_address(clinic().today(), center_id, doctor_id))


def room_address(day, center_id, doctor_id=None):
    """The waiting room's address for a day, a center and perhaps a doctor."""
    query = {"date": format_date(day), "centerId": center_id or "", **({"doctorId": doctor_id} if doctor_id else {})}
    return "/desk/waiting?" + urllib.parse.urlencode(query)


def ticking(minutes):
    """A running wait in minutes, which the desk's script counts on between reloads ("The waiting room")."""
    return f'<span class="tick" data-minutes="{int(minutes)}">{int(minutes)}</span>'
