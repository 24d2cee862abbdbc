"""Many clinics in one service ("A host of clinics"): each folder under the host's folder is a clinic, named for
the host name it is served at, with its database, settings file and secret; a request goes to the app of the
clinic its host name names. A folder added is served at the next look, one removed stops being served, and one
clinic's faults (a damaged file, a full disk, a request that hangs) stay its own."""

import logging
import re
import threading
import time
from pathlib import Path

from .answers import json_bytes
from ..values.refusals import ClinicError

log = logging.getLogger("agenda")

CLINIC_DB = "agenda.db"  # a clinic's database in its folder; its secret is agenda.secret, its settings agenda.toml
CLINIC_SETTINGS = "agenda.toml"
LOOK_EVERY = 2.0  # seconds between two looks at the host's folder for clinics added or removed
IDLE_AFTER = 600.0  # seconds without a request after which a clinic's app is put away (its connections closed)
HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+")


def host_name(environ):
    """The request's host name, lower case, without its port; '' when it names none."""
    host = (environ.get("HTTP_HOST") or "").strip().lower()
    if host.startswith("["):
        return ""  # an address, never a clinic's name
    return host.rsplit(":", 1)[0] if ":" in host else host


def clinic_folders(folder):
    """{host name: folder} of the clinics under `folder`: each folder named as a host name that holds a database."""
    found = {}
    for entry in Path(folder).iterdir():
        if entry.is_dir() and HOST_NAME.fullmatch(entry.name) and (entry / CLINIC_DB).is_file():
            found[entry.name] = entry
    return found


class Served:
    """One clinic being served: its app once opened, the requests it has in flight, when it was last asked."""

    def __init__(self, folder):
        self.folder, self.app, self.failed = folder, None, None
        self.in_flight, self.asked_at, self.opening = 0, time.monotonic(), threading.Lock()


class Clinics:
    """The WSGI app of a host: every clinic under `folder`, each app opened by `open_clinic(folder)` when first
    asked for and put away when idle or removed; at most `share` requests of one clinic in flight at once, so that
    a clinic whose requests hang leaves threads to the others ("A host of clinics")."""

    def __init__(self, folder, open_clinic, close_clinic, share=2, clock=time.monotonic):
        self.folder, self.open_clinic, self.close_clinic = Path(folder), open_clinic, close_clinic
        self.share, self.clock = share, clock
        self.served, self.looked_at, self.guard = {}, None, threading.Lock()

    def look(self, force=False):
        """Take in the clinic folders added since the last look, let go of those removed, put away the idle."""
        now = self.clock()
        with self.guard:
            if not force and self.looked_at is not None and now - self.looked_at < LOOK_EVERY:
                return
            self.looked_at = now
            found = clinic_folders(self.folder)
            for name in found.keys() - self.served.keys():
                self.served[name] = Served(found[name])
                log.info("clinic %s found", name)
            leaving = [name for name in self.served if name not in found]
            idle = [name for name, one in self.served.items()
                    if one.app is not None and not one.in_flight and now - one.asked_at > IDLE_AFTER]
            gone = {name: self.served.pop(name) for name in leaving if not self.served[name].in_flight}
            put_away = [self.served[name] for name in idle if name not in gone]
        for name, one in gone.items():
            log.info("clinic %s removed: no longer served", name)
            self.put_away(one)
        for one in put_away:
            self.put_away(one)

    def put_away(self, one):
        with one.opening:
            app, one.app, one.failed = one.app, None, None
        if app is not None:
            self.close_clinic(app)

    def app_of(self, one):
        """The clinic's app, opened now if it is not yet; ClinicError when it cannot be served."""
        if one.app is None:
            with one.opening:
                if one.app is None:
                    try:
                        one.app = self.open_clinic(one.folder)
                    except Exception as error:  # any clinic that cannot open is that clinic's fault only
                        if one.failed != str(error):
                            log.error("clinic %s cannot be served: %s", one.folder.name, error)
                        one.failed = str(error)
                        raise ClinicError("SERVICE_UNAVAILABLE", "this clinic cannot be served right now; its "
                                                                 "administrator has been told (the log says why)")
        return one.app

    def __call__(self, environ, start_response):
        self.look()
        name = host_name(environ)
        one = self.served.get(name)
        if one is None and name:
            self.look(force=self.looked_at is None or self.clock() - self.looked_at >= 1.0)
            one = self.served.get(name)
        if one is None:  # as bottle's own 404 for a path no route takes
            return refusal(start_response, {"error": {"code": "NOT_FOUND",
                                                      "message": "no clinic is served at this host name"}}, 404)
        with self.guard:
            if one.in_flight >= self.share:
                busy = True
            else:
                busy, one.in_flight, one.asked_at = False, one.in_flight + 1, self.clock()
        if busy:
            return refusal(start_response, ClinicError("SERVICE_UNAVAILABLE", "this clinic is busy; try again in a "
                                                                              "second"), 503)
        try:
            try:
                app = self.app_of(one)
            except ClinicError as error:
                return refusal(start_response, error, 503)
            environ["agenda.clinic"] = name  # the access log names it
            answer = app(environ, start_response)
            try:
                return [b"".join(answer)]
            finally:
                if hasattr(answer, "close"):
                    answer.close()
        finally:
            with self.guard:
                one.in_flight -= 1


def refusal(start_response, error, status):
    """A refusal of the host's own (a ClinicError, or an error's JSON), as every answer of the API is: JSON, with
    Retry-After on a 503."""
    body = json_bytes(error.payload() if isinstance(error, ClinicError) else error)
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    start_response(f"{status} {'Not Found' if status == 404 else 'Service Unavailable'}",
                   headers + ([("Retry-After", "1")] if status == 503 else []))
    return [body]
