"""Every file the code reads, by its path from the project's top, and how it is found and read in a checkout,
an install and agenda.pyz ("Files that ship"); schema.sql's sections and the newest version they reach."""

import os
import re
import sys
import sysconfig
from pathlib import Path


# Every file the code reads, by its path from the project's top: the same tree in a checkout, in an
# install (the package's own files beside it; the rest under <prefix>/share/agenda, by setup.cfg's
# globs) and in agenda.pyz ("Files that ship").
SCHEMA_FILE = "schema.sql"
OPENAPI_FILE = "openapi.json"
DEMO_CATALOGS = "seed/catalogs.csv"
TEMPLATES = "_agenda/desk/templates"
_TOP = Path(__file__).resolve().parent.parent.parent
_SECTION = re.compile(r"^-- version (\d+)\s*$", re.MULTILINE)


def data_file_path(name):
    """Where a shipped file is on disk: under the project's top (a checkout; the package's own files in
    an install), else under <prefix>/share/agenda (an install's data files)."""
    candidates = [_TOP / name]
    for scheme in (None, f"{os.name}_user"):
        try:
            data = sysconfig.get_path("data", scheme) if scheme else sysconfig.get_path("data")
        except KeyError:
            continue
        candidates.append(Path(data) / "share" / "agenda" / name)
    candidates.append(Path(sys.prefix) / "share" / "agenda" / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise RuntimeError(f"{name} not found; looked in: {', '.join(map(str, candidates))}")


def schema_path():
    return data_file_path(SCHEMA_FILE)


def read_data_file(name):
    """The bytes of a shipped file: from disk, or from inside agenda.pyz (the one-file build)."""
    loader = globals().get("__loader__")
    if loader is not None and type(loader).__name__ == "zipimporter":
        return loader.get_data(os.path.join(loader.archive, name))
    return data_file_path(name).read_bytes()


def read_schema():
    return read_data_file(SCHEMA_FILE).decode("utf-8")


def schema_sections(text):
    """[(version, sql), ...] in order, from the '-- version N' headings of schema.sql."""
    marks = list(_SECTION.finditer(text))
    sections = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        sections.append((int(mark[1]), text[mark.end():end]))
    versions = [version for version, _ in sections]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"{SCHEMA_FILE} sections must be numbered 1, 2, 3, ... in order")
    return sections


def newest_version(schema_text=None):
    sections = schema_sections(schema_text if schema_text is not None else read_schema())
    return sections[-1][0] if sections else 0
