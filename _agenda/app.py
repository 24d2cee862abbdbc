"""The app that assembles both edges: `create_app` installs the hooks once and mounts both route tables."""

import logging

import bottle

from .values.settings import Settings
from .storage.shipped import OPENAPI_FILE, read_data_file
from .storage.database import Database
from .domain.staff import Accounts
from .domain.clinic import Clinic
from .web.answers import AfterChange, with_access_log
from .web.api import API_ROUTES, ApiPlugin, api_error_page, note_signatures, SCHEME_WARNINGS
from .desk.routes import DESK_ROUTES
from .desk.shared import desk_error_page, DeskPlugin
from .web.calendar_feeds import FEED_ROUTES
from .patient.pages import patient_error_page, PATIENT_ROUTES, PatientPlugin
from .patient.booking_form import form_key
from .patient.booking_page import booking_error_page, BOOKING_ROUTES

log = logging.getLogger("agenda")


def json_error_page(http_error):
    """Bottle's own errors (an unknown route, a wrong method, a crash): a page under /desk, /cita and /reservar,
    else the caller's JSON ("Errors")."""
    if bottle.request.path.startswith("/desk"):
        return desk_error_page(http_error)
    if bottle.request.path.startswith("/cita"):
        return patient_error_page(http_error)
    if bottle.request.path == "/reservar" or bottle.request.path.startswith("/reservar/"):
        return booking_error_page(http_error)
    return api_error_page(http_error)


def create_app(db_path, secret=None, *, insecure=False, now=None, after_write=None, replica=None, **options):
    """The WSGI app over the SQLite file at db_path; its Clinic is `app.clinic`, its staff `app.accounts`.

    secret: the caller's shared secret ("Signatures"); None is refused unless insecure=True, a development
    mode that checks no signature. now: the clock, a function returning an aware datetime ("Clinic time").
    after_write: called before any change of either edge is answered ("Replication"). replica: what
    /health reports of replication (its `state()`), or None. options: the fields of Settings.
    """
    settings = Settings(**options)
    if not secret and not insecure:
        raise ValueError("a shared secret is required (AGENDA_SECRET); "
                         "only a development server may run without one")
    if not secret:
        log.warning("SIGNATURES ARE OFF: anyone who reaches this server can read and change the agenda")
    elif settings.signature_scheme in SCHEME_WARNINGS:
        log.warning(SCHEME_WARNINGS[settings.signature_scheme])
    app = bottle.Bottle()
    db = Database(db_path, replicated=replica is not None)
    app.clinic, app.accounts = Clinic(db, settings, now), Accounts(db, settings, now)
    app.openapi, app.replica, app.acknowledged = read_data_file(OPENAPI_FILE), replica, after_write is not None
    app.booking_key = form_key(secret)  # the booking page's signed forms ("The booking page")
    app.default_error_handler = json_error_page
    app.install(ApiPlugin(secret or None, settings,
                          on_signatures=lambda counts: note_signatures(db, app.clinic.clock, counts)))
    app.install(DeskPlugin())
    app.install(PatientPlugin())
    app.install(AfterChange(after_write))  # installed last: inside both edges' plugins
    for method, path, handler, config in API_ROUTES + DESK_ROUTES + FEED_ROUTES + PATIENT_ROUTES \
            + BOOKING_ROUTES:
        app.route(path, method, handler, **config)
    app.wsgi = with_access_log(app.wsgi)  # Bottle.__call__ calls self.wsgi
    return app
