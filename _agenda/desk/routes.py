"""The staff desk at /desk: `DESK_ROUTES`, the one table of its pages for the edge, and who may use each
(`ADMIN`). The handlers live in this folder's modules by job, over what they share in shared.py: each reads
the form, calls the clinic with the receptionist as the source, and shows the page."""

from .session import (desk_drag_script, desk_home, desk_kept, desk_log_in, desk_log_out, desk_login_page,
                      desk_script, desk_stylesheet, desk_version)
from .views import desk_calls, desk_day, desk_month, desk_rooms, desk_week
from .booking import (desk_appointment, desk_attendance, desk_book, desk_book_page,
                           desk_cancel, desk_cancel_rest, desk_change_details, desk_change_length, desk_send_mail,
                           desk_confirm, desk_move, desk_series)
from .waitlist import desk_add_waiting, desk_end_waiting, desk_waitlist
from .patients import (desk_correct_patient, desk_erase, desk_erase_page, desk_new_patient, desk_patient,
                       desk_patient_access, desk_patient_book, desk_patient_copy, desk_patients, desk_register_patient)
from .cards import desk_card
from .waiting_room import desk_waiting_room
from .verifying import desk_match, desk_refuse, desk_verify
from .clinic import (desk_access, desk_add_closure, desk_closures, desk_doctor_feed, desk_doctors,
                          desk_remove_closure, desk_remove_closure_page, desk_report, desk_retire)


DESK = {"desk": True}
ADMIN = {**DESK, "role": "admin"}  # pages and actions for the admin role only ("Roles")


DESK_ROUTES = [  # (method, path, handler, route config)
    ("GET", "/desk", desk_home, {**DESK, "open_page": True}),
    ("GET", "/desk/desk.css", desk_stylesheet, {**DESK, "open_page": True}),
    ("GET", "/desk/login", desk_login_page, {**DESK, "open_page": True}),
    ("POST", "/desk/login", desk_log_in, {**DESK, "open_page": True, "no_change": True}),
    ("POST", "/desk/logout", desk_log_out, {**DESK, "no_change": True}),
    ("GET", "/desk/kept/<kept>", desk_kept, DESK),
    ("GET", "/desk/desk.js", desk_script, {**DESK, "open_page": True}),
    ("GET", "/desk/drag.js", desk_drag_script, DESK),  # the day's and the week's: after the login
    ("GET", "/desk/version", desk_version, {**DESK, "passive": True}),  # the refresh poll: idle time untouched
    ("GET", "/desk/day", desk_day, DESK),
    ("GET", "/desk/week", desk_week, DESK),
    ("GET", "/desk/month", desk_month, DESK),
    ("GET", "/desk/rooms", desk_rooms, DESK),
    ("GET", "/desk/calls", desk_calls, DESK),
    ("GET", "/desk/waiting", desk_waiting_room, DESK),
    ("GET", "/desk/waitlist", desk_waitlist, DESK),
    ("POST", "/desk/waitlist", desk_add_waiting, DESK),
    ("POST", "/desk/waitlist/search", desk_waitlist, {**DESK, "no_change": True}),  # the add form's search: no change
    ("POST", "/desk/waitlist/<entry_id:int>/remove", desk_end_waiting, DESK),
    ("GET", "/desk/book", desk_book_page, DESK),
    ("POST", "/desk/book", desk_book, DESK),
    ("POST", "/desk/book/search", desk_book_page, {**DESK, "no_change": True}),  # a search by POST: no change
    ("GET", "/desk/appointments/<appointment_id:int>", desk_appointment, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/move", desk_move, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/details", desk_change_details, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/length", desk_change_length, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/cancel", desk_cancel, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/confirm", desk_confirm, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/card", desk_card, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/cancel-rest", desk_cancel_rest, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/mail", desk_send_mail, DESK),
    ("POST", "/desk/series", desk_series, DESK),
    ("POST", "/desk/appointments/<appointment_id:int>/attendance", desk_attendance, DESK),
    ("GET", "/desk/patients", desk_patients, DESK),
    ("POST", "/desk/patients", desk_patients, {**DESK, "no_change": True}),
    ("GET", "/desk/patients/new", desk_new_patient, DESK),
    ("POST", "/desk/patients/new", desk_register_patient, DESK),
    ("GET", "/desk/patients/<patient_id:int>", desk_patient, DESK),
    ("POST", "/desk/patients/<patient_id:int>", desk_correct_patient, DESK),
    ("GET", "/desk/patients/<patient_id:int>/book", desk_patient_book, DESK),
    ("GET", "/desk/patients/<patient_id:int>/access", desk_patient_access, ADMIN),
    ("GET", "/desk/access", desk_access, ADMIN),
    ("GET", "/desk/patients/<patient_id:int>/copy", desk_patient_copy, ADMIN),
    ("GET", "/desk/patients/<patient_id:int>/erase", desk_erase_page, ADMIN),
    ("POST", "/desk/patients/<patient_id:int>/erase", desk_erase, ADMIN),
    ("GET", "/desk/closures", desk_closures, DESK),
    ("POST", "/desk/closures", desk_add_closure, DESK),
    ("GET", "/desk/closures/<closure_id:int>/remove", desk_remove_closure_page, DESK),
    ("POST", "/desk/closures/<closure_id:int>/remove", desk_remove_closure, DESK),
    ("GET", "/desk/doctors", desk_doctors, ADMIN),
    ("GET", "/desk/report", desk_report, ADMIN),
    ("POST", "/desk/doctors/<doctor_id>/retire", desk_retire, ADMIN),
    ("POST", "/desk/doctors/<doctor_id>/feed", desk_doctor_feed, ADMIN),
    ("GET", "/desk/verify", desk_verify, DESK),
    ("POST", "/desk/verify/<appointment_id:int>/match", desk_match, DESK),
    ("POST", "/desk/verify/<appointment_id:int>/refuse", desk_refuse, DESK),
]
