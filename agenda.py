"""Agenda: a small clinic's appointment agenda as one HTTP service on one SQLite file.

The caller (a voice-agent platform) looks patients up, asks for free slots, books, moves
and cancels appointments and runs reminder cycles through the API of the caller's spec;
reception works at /desk; the admin uses the `agenda` command. This file is the face: the
console script's entry, `python agenda.py`, and the public names (`__all__`). The insides
live in the package `_agenda/` beside it, in folders by room, one module per concern, and whoever
needs one (a test, the bench) imports it from there; docs/architecture.md is their map and
docs/design.md says why things are as they are.
"""

from _agenda import __version__
from _agenda.values.settings import Settings
from _agenda.values.refusals import ClinicError
from _agenda.storage.connections import connect, transaction
from _agenda.storage.schema import migrate
from _agenda.storage.database import Database, open_database
from _agenda.domain.clinic import Clinic
from _agenda.web.api import sign
from _agenda.app import create_app
from _agenda.files.reading import read_catalog_file
from _agenda.files.catalogs import seed_catalogs
from _agenda.cli.root import cli
from _agenda.cli.service import run
# Each command module registers its commands on the one group when imported.
import _agenda.cli.status  # noqa: F401
import _agenda.cli.backups  # noqa: F401
import _agenda.cli.standby  # noqa: F401
import _agenda.cli.imports  # noqa: F401
import _agenda.cli.desk  # noqa: F401
import _agenda.cli.staff  # noqa: F401
import _agenda.cli.waitlist  # noqa: F401
import _agenda.cli.report  # noqa: F401
import _agenda.cli.rights  # noqa: F401
import _agenda.cli.open_formats  # noqa: F401
import _agenda.cli.mail  # noqa: F401
import _agenda.cli.host  # noqa: F401
import _agenda.cli.clinic  # noqa: F401

# The public names: the command, the app, the clinic and its database, the catalog loader and the
# caller's signature. Everything else is an inside: import it from its module in _agenda/.
__all__ = ["Clinic", "ClinicError", "Database", "Settings", "__version__", "cli", "connect", "create_app", "migrate",
           "open_database", "read_catalog_file", "run", "seed_catalogs", "sign", "transaction"]

if __name__ == "__main__":
    cli()
