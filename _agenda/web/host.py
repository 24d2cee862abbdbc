"""Many clinics in one service ("A host of clinics"): each folder under the host's folder is a clinic, named for
the host name it is served at (or for the path prefix it is reached by), with its database, settings file and
secret; a request goes to the app of the clinic its host name, else its path's first part, names. A folder added
is served at the next look, one removed stops being served, and one clinic's faults (a damaged file, a full
disk, a request that hangs) stay its own."""

import logging
import re
import threading
import time
from pathlib import Path

from .answers import json_bytes
from ..values.refusals import ClinicError

log = logging.getLogger("agenda")

CLINIC_DB = "agenda.db"  # a clinic's database in its folder, beside its secret and its settings
CLINIC_SECRET, CLINIC_SETTINGS = "agenda.secret", "agenda.toml"
LOOK_EVERY = 2.0  # seconds between two looks at the host's folder for clinics added or removed
IDLE_AFTER = 600.0  # seconds without a request after which a clinic's app is put away (its connections closed)
HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+")
PREFIX = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")  # a clinic reached by a path prefix: /clinicasol/...


def host_name(environ):
    """The request's host name, lower case, without its port; '' when it names none."""
    host = (environ.get("HTTP_HOST") or "").strip().lower()
    if host.startswith("["):
        return ""  # an address, never a clinic's name
    return host.rsplit(":", 1)[0] if ":" in host else host


def clinic_folders(folder):
    """{name: folder} of the clinics under `folder`: each folder named as a host name, or as a path prefix (a name
    without a dot), that holds a database."""
    found = {}
    for entry in Path(folder).iterdir():
        if entry.is_dir() and clinic_name(entry.name) and (entry / CLINIC_DB).is_file():
            found[entry.name] = entry
    return found


def clinic_name(name):
    """Whether a folder's name is a clinic's: a host name, or a path prefix."""
    return bool(HOST_NAME.fullmatch(name) or PREFIX.fullmatch(name))


def is_prefix(name):
    """Whether a clinic's name is a path prefix (reached at /NAME/ on the host's own name), not a host name."""
    return "." not in name


def passed_over(folder):
    """{entry: why} of what under `folder` is no clinic, for the admin to read; hidden entries (the host's own:
    its replication's marks, the clinics released) left out."""
    found = {}
    for entry in Path(folder).iterdir():
        if entry.name.startswith("."):
            continue
        if not entry.is_dir():
            found[entry.name] = "not a folder"
        elif not clinic_name(entry.name):
            found[entry.name] = ("its name is no host name in small letters (citas.clinicasol.es), nor a path "
                                 "prefix (clinicasol)")
        elif not (entry / CLINIC_DB).is_file():
            found[entry.name] = f"no {CLINIC_DB}: agenda seed CATALOGS.csv --db {entry / CLINIC_DB}"
    return found


class Served:
    """One clinic being served: its app once opened (and the stamp of its files then), the requests it has in
    flight, when it was last asked."""

    def __init__(self, folder):
        self.folder, self.app, self.failed, self.stamp = folder, None, None, None
        self.in_flight, self.asked_at, self.opening = 0, time.monotonic(), threading.Lock()


def stamp(folder):
    """When a clinic's settings file and secret last changed: an open app whose stamp differs is reopened."""
    return tuple(path.stat().st_mtime_ns if path.exists() else None
                 for path in (folder / CLINIC_SETTINGS, folder / CLINIC_SECRET))


class Clinics:
    """The WSGI app of a host: every clinic under `folder`, each app opened by `open_clinic(folder)` when first
    asked for, and put away (`close_clinic`) when idle, removed, or its settings or secret changed; at most `share`
    requests of one clinic in flight at once, so that a clinic whose requests hang leaves threads to the others
    ("A host of clinics")."""

    def __init__(self, folder, open_clinic, close_clinic, share=2, clock=time.monotonic):
        self.folder, self.open_clinic, self.close_clinic = Path(folder), open_clinic, close_clinic
        self.share, self.clock = share, clock
        self.served, self.looked_at, self.guard = {}, None, threading.Lock()

    def look(self, force=False):
        """Take in the clinic folders added since the last look, let go of those removed, put away the idle and
        those whose files changed; a clinic with requests in flight is let be until the next look."""
        now = self.clock()
        with self.guard:
            if not force and self.looked_at is not None and now - self.looked_at < LOOK_EVERY:
                return
            self.looked_at = now
            try:
                found = clinic_folders(self.folder)
            except OSError as error:  # the host's folder unreadable for a moment: serve what is known
                log.error("the host's folder %s cannot be read: %s", self.folder, error)
                return
            for name in found.keys() - self.served.keys():
                self.served[name] = Served(found[name])
                log.info("clinic %s found", name)
            let_go = [(name, "removed: no longer served") for name in self.served if name not in found]
            let_go += [(name, "idle: put away until asked again") for name, one in self.served.items()
                       if name in found and one.app is not None and now - one.asked_at > IDLE_AFTER]
            let_go += [(name, "settings or secret changed: opened again when next asked")
                       for name, one in self.served.items() if name in found and one.app is not None
                       and now - one.asked_at <= IDLE_AFTER and one.stamp != stamp(one.folder)]
            closing = []
            for name, why in let_go:
                one = self.served[name]
                if one.in_flight:
                    continue
                if name not in found:
                    del self.served[name]
                closing.append((name, why, one.app))
                one.app, one.failed = None, None
        for name, why, app in closing:
            log.info("clinic %s %s", name, why)
            if app is not None:
                self.close_clinic(app)

    def close_all(self):
        """Put every clinic's app away (the host stopping)."""
        with self.guard:
            apps, self.served = [one.app for one in self.served.values() if one.app is not None], {}
        for app in apps:
            self.close_clinic(app)

    def app_of(self, one):
        """The clinic's app, opened now if it is not yet; ClinicError when it cannot be served."""
        with one.opening:
            if one.app is None:
                try:
                    one.stamp = stamp(one.folder)
                    one.app = self.open_clinic(one.folder)
                except Exception as error:  # any clinic that cannot open is that clinic's fault only
                    if one.failed != str(error):
                        log.error("clinic %s cannot be served: %s", one.folder.name, error)
                    one.failed = str(error)
                    raise ClinicError("SERVICE_UNAVAILABLE", "this clinic cannot be served right now; its "
                                                             "administrator has been told (the log says why)")
            return one.app

    def entered(self, name):
        """The clinic `name` with one more request in flight, 'busy' when its share is taken, or None."""
        with self.guard:
            one = self.served.get(name)
            if one is None:
                return None
            if one.in_flight >= self.share:
                return "busy"
            one.in_flight, one.asked_at = one.in_flight + 1, self.clock()
            return one

    def named(self, environ):
        """The served clinic a request names: its host name's, else its path's first part's; None for neither."""
        name = host_name(environ)
        if name in self.served and not is_prefix(name):
            return name
        prefix = path_prefix(environ)
        return prefix if prefix in self.served else None

    def __call__(self, environ, start_response):
        self.look()
        name = self.named(environ)
        if name is None and (host_name(environ) or path_prefix(environ)):
            self.look(force=self.looked_at is None or self.clock() - self.looked_at >= 1.0)
            name = self.named(environ)
        one = self.entered(name)
        if one is None:  # as bottle's own 404 for a path no route takes
            return refusal(start_response, {"error": {"code": "NOT_FOUND", "message": "no clinic is served at this "
                                                                                      "host name or path"}}, 404)
        if one == "busy":
            return refusal(start_response, ClinicError("SERVICE_UNAVAILABLE", "this clinic is busy; try again in a "
                                                                              "second"), 503)
        try:
            try:
                app = self.app_of(one)
            except ClinicError as error:
                return refusal(start_response, error, 503)
            if environ.get("REQUEST_METHOD") in ("POST", "PUT", "DELETE") and not may_write(app):
                return refusal(start_response, ClinicError(
                    "SERVICE_UNAVAILABLE", "this clinic is moving to another host, or this host's lease on it "
                                           "lapsed: nothing was changed; retry in a moment"), 503)
            environ["agenda.clinic"] = name  # the access log names it
            if is_prefix(name):
                under_prefix(environ, name)
            answer = app(environ, start_response)
            try:
                return [b"".join(answer)]
            finally:
                if hasattr(answer, "close"):
                    answer.close()
        finally:
            with self.guard:
                one.in_flight -= 1


def path_prefix(environ):
    """The first part of the request's path when it could name a clinic reached by a prefix, else ''."""
    first = environ.get("PATH_INFO", "").split("/", 2)[1:2]
    return first[0] if first and PREFIX.fullmatch(first[0]) else ""


def under_prefix(environ, prefix):
    """The request as its clinic's app reads it, WSGI's way: the prefix moved from PATH_INFO to SCRIPT_NAME, so that
    the app's routes are its own and what it writes (links, redirects, cookies) carries the prefix."""
    environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "").rstrip("/") + "/" + prefix
    environ["PATH_INFO"] = environ["PATH_INFO"][len(prefix) + 1:]


def may_write(app):
    """Whether the clinic's app may take a change now: always, unless its replica says its lease does not hold
    ("Leases")."""
    return getattr(getattr(app, "replica", None), "may_write", lambda: True)()


def refusal(start_response, error, status):
    """A refusal of the host's own (a ClinicError, or an error's JSON), as every answer of the API is: JSON, with
    Retry-After on a 503."""
    body = json_bytes(error.payload() if isinstance(error, ClinicError) else error)
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    start_response(f"{status} {'Not Found' if status == 404 else 'Service Unavailable'}",
                   headers + ([("Retry-After", "1")] if status == 503 else []))
    return [body]
