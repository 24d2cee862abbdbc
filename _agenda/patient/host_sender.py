"""One sender for a host's clinics ("A host of clinics"): each pass walks the clinic folders and sends what each
clinic's outbox holds, one clinic at a time, each under that clinic's own sender lock, so that no message goes twice
and one clinic's server refusing it never holds another's messages."""

import logging
import os
import time
from email.utils import formataddr, parseaddr

from ..values.settings import Settings, settings_given
from ..storage.database import Database
from ..domain.clinic import Clinic
from ..web.host import CLINIC_DB, CLINIC_SETTINGS, clinic_folders, is_prefix
from .sender import Sender, sender_lock

log = logging.getLogger("agenda")

LOOK_AGAIN_AFTER = 60.0  # seconds after which a clinic whose files did not change is looked at again (reminders)


def files_stamp(db_path):
    """What changes when a clinic's database is written: its file's and its WAL's size and time."""
    stamp = []
    for path in (db_path, f"{db_path}-wal"):
        try:
            status = os.stat(path)
            stamp.append((status.st_size, status.st_mtime_ns))
        except FileNotFoundError:
            stamp.append(None)
    return tuple(stamp)


def clinic_from(host_from, clinic_name):
    """The From of a clinic's messages on a host: the host's address under the clinic's own name, when it has one."""
    name, address = parseaddr(host_from)
    return formataddr((clinic_name or name, address))


def host_clinics(folder, told):
    """{name: (db path, settings)} of the clinics under a host's folder; a clinic whose settings file is wrong, or a
    prefix clinic without its public_url, is left out, and said once in `told` (a set kept between passes)."""
    found = {}
    for name, path in clinic_folders(folder).items():
        try:
            settings = settings_given(path / CLINIC_SETTINGS, os.environ)  # as the host serves the clinic
        except ValueError as error:
            settings, why = None, str(error)
        else:
            why = None if settings.get("public_url") or not is_prefix(name) else (
                f"{path / CLINIC_SETTINGS}: set public_url (https://HOST/{name}), where its patients' links lead")
        if why:
            if why not in told:
                told.add(why)
                log.error("mail for %s waits: %s", name, why)
            continue
        found[name] = (path / CLINIC_DB, settings)
    return found


class HostSender:
    """Sends the messages of every clinic under a host's folder. `clinics()` gives {host name: (db path, settings
    dict)}, as `host_clinics` does; `mailer` is the host's SMTP server; a clinic's links start with its `public_url`,
    else with https:// and its host name; `sync_for(db path)`, while the host replicates that clinic, says when its
    replica holds every change (a message goes only then)."""

    def __init__(self, clinics, mailer, host_from, now, clock=time.monotonic, sync_for=lambda db_path: None):
        self.clinics, self.mailer, self.host_from, self.now, self.clock = clinics, mailer, host_from, now, clock
        self.sync_for = sync_for  # db path: a function true once its replica holds every change, or None
        self.looked = {}  # host name: (files' stamp after its pass, when), so an unchanged clinic waits its turn
        self.paused = {}  # host name: (paused_until, pauses) after its server refused that clinic itself
        self.failing = {}  # host name: why its last pass failed, said once until it changes or the clinic mends

    def pass_once(self, stopping=None):
        """Every clinic due a look, one at a time; {state: how many} over all of them, and 'busy' for a clinic
        another sender holds."""
        done = {}
        for name, (db_path, settings) in sorted(self.clinics().items()):
            if stopping is not None and stopping.is_set():
                break
            stamp, looked = files_stamp(db_path), self.looked.get(name)
            if looked and looked[0] == stamp and self.clock() - looked[1] < LOOK_AGAIN_AFTER:
                continue
            try:
                counts = self.send_for(name, db_path, settings, stopping)
            except Exception as error:  # one clinic's fault (a damaged file, a schema behind) is its own
                if self.failing.get(name) != str(error):
                    log.exception("mail for %s: the pass failed; it is tried again each minute", name)
                self.failing[name], counts = str(error), {"clinic failed": 1}
            else:
                self.failing.pop(name, None)
            self.looked[name] = (files_stamp(db_path), self.clock())
            for state, count in counts.items():
                done[state] = done.get(state, 0) + count
        return done

    def send_for(self, name, db_path, settings, stopping):
        """One clinic's pass, under its sender lock; {'busy': 1} when another sender holds it."""
        lock = sender_lock(db_path)
        if lock is None:
            return {"busy": 1}
        clinic = None
        try:
            values = Settings(**settings)
            clinic = Clinic(Database(db_path), values, self.now)
            sender = Sender(clinic, self.mailer, clinic_from(self.host_from, values.clinic_name),
                            values.public_url or f"https://{name}", sync=self.sync_for(db_path))
            sender.paused_until, sender.pauses = self.paused.get(name, (None, 0))
            counts = sender.pass_once(stopping)
            self.paused[name] = (sender.paused_until, sender.pauses)
            return counts
        finally:
            if clinic is not None:
                clinic.db.close()
            os.close(lock)
