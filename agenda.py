"""Agenda: a small clinic's appointment agenda as one HTTP service on one SQLite file.

The caller (a voice-agent platform) looks patients up, asks for free slots, books, moves
and cancels appointments and runs reminder cycles through the API of the caller's spec;
reception works at /desk; the admin uses the `agenda` command. This file is the face: the
console script's entry, `python agenda.py`, and the names others import. The insides live
in the package `_agenda/` beside it, one module per concern; docs/design.md opens with
their map ("Where things live") and says why things are as they are.
"""

from _agenda import __version__
from _agenda.values import (FORMULA_STARTS, ClinicError, Settings, hhmm, minutes_of, parse_date, plural,
                            printable, sheet_csv)
from _agenda.store import (CHECKPOINT_PAGES, INSERT_PATIENT, MMAP_BYTES, Database, connect,
                           data_file_path, database_counts, migrate, open_database, read_schema, schema_path,
                           schema_sections, searched_name, transaction, utc_iso)
from _agenda.slots import booking_window, free_slots, slot_grid, slot_state, slots_clear_of
from _agenda.staff import Accounts, password_matches
from _agenda.clinic import Clinic
from _agenda.web import json_refusing_channel, STATUS_ERROR_CODES
from _agenda.api import sign
from _agenda.app import create_app
from _agenda.replication import litestream_binary, without_password
from _agenda.imports import CATALOG_TABLES, read_catalog_file, seed_catalogs
from _agenda.cli import cli
from _agenda.cli_service import run
# Each command module registers its commands on the one group when imported.
import _agenda.cli_backups  # noqa: F401
import _agenda.cli_imports  # noqa: F401
import _agenda.cli_desk  # noqa: F401
import _agenda.cli_staff  # noqa: F401
import _agenda.cli_waitlist  # noqa: F401
import _agenda.cli_report  # noqa: F401
import _agenda.cli_rights  # noqa: F401
import _agenda.cli_moving  # noqa: F401

__all__ = ["Accounts", "CATALOG_TABLES", "CHECKPOINT_PAGES", "Clinic", "ClinicError", "Database", "FORMULA_STARTS",
           "INSERT_PATIENT", "MMAP_BYTES", "STATUS_ERROR_CODES", "Settings", "__version__", "booking_window", "cli", "connect",
           "create_app", "data_file_path", "database_counts", "free_slots", "hhmm", "json_refusing_channel",
           "litestream_binary", "migrate", "minutes_of", "open_database", "parse_date", "password_matches", "plural",
           "printable", "read_catalog_file", "read_schema", "run", "schema_path", "schema_sections", "searched_name",
           "seed_catalogs",
           "sheet_csv", "sign", "slot_grid", "slot_state", "slots_clear_of", "transaction", "utc_iso", "without_password"]

if __name__ == "__main__":
    cli()
