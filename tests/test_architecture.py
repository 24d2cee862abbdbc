"""docs/architecture.md against the code: every file it names exists; a module is written with its room
(`domain/booking.py`), anything else from the project's top; every name it ties to a Python file is defined there;
every room and every module of `_agenda/` has its row in the map, in the order tests/test_layout.py holds; every
command is named in its module's row; every heading it cites in quotes is design.md's; README.md links to it; it
stays within 260 lines. Each check reads a page's text and says what is wrong, so the last tests feed each one a
wrong page and see it fail."""

import ast
import re

import pytest

import edges
from conftest import ROOT
from test_layout import FOLDERS, LAYERS

PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
DESIGN = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
ROOMS = [folder for folder in FOLDERS if folder]
TOP = {"_agenda", "bench", "docs", "seed", "tests", "tools"}  # the folders of the project's top a path starts with
SUFFIXES = (".py", ".sql", ".json", ".tpl", ".css", ".js", ".md", ".cfg")
CODE = re.compile(r"`([^`\n]+)`")
NAME = r"([A-Z]\w*\.[A-Za-z_]\w*|[A-Za-z_]\w*)(?:\(\))?"  # a name, or Class.name
NAME_IN = re.compile(rf"`{NAME}` (?:in|of|from) `([\w/.]+\.py)`")  # `admit` in `domain/booking.py`
FILES_NAME = re.compile(rf"`([\w/.]+\.py)`'s `{NAME}`")  # `tests/test_install.py`'s `PAGES`


def where(token):
    """The file a path of the page names: a module from _agenda/ by its room (`app.py` alone), anything else from
    the project's top; None for a module written from the top or a path in a folder of neither."""
    first = token.split("/")[0]
    if first in ROOMS or token == "app.py":
        return ROOT / "_agenda" / token
    if first == "_agenda" and token.endswith(".py"):
        return None
    return ROOT / token if "/" not in token or first in TOP else None


def paths(text):
    """Every backticked text of the page that is a path: a file with a known suffix, or a folder (a trailing /)."""
    return [token for token in CODE.findall(text) if re.fullmatch(r"[\w.\-/]+", token) and not token.startswith("/")
            and token.endswith((*SUFFIXES, "/"))]


def missing_paths(text):
    return [token for token in paths(text) if where(token) is None or not where(token).exists()]


def defined(path):
    """The names a Python file defines at its top (in its ifs and trys too), and Class.name of its classes'."""
    names = set()

    def add(body, prefix=""):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(prefix + node.name)
                if isinstance(node, ast.ClassDef) and not prefix:
                    add(node.body, f"{node.name}.")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(prefix + name.id for target in targets for name in ast.walk(target)
                             if isinstance(name, ast.Name))
            elif isinstance(node, (ast.If, ast.Try)):
                add(node.body + node.orelse + getattr(node, "finalbody", []), prefix)
    add(ast.parse(path.read_text(encoding="utf-8")).body)
    return names


def rows(text):
    """(module as written, the rest of its row) of every table row whose first cell is one Python file."""
    found = []
    for line in text.splitlines():
        cells = line.strip().strip("|").split("|")
        first = re.fullmatch(r"\s*`([\w/.]+\.py)`\s*", cells[0]) if line.startswith("|") else None
        if first:
            found.append((first.group(1), "|".join(cells[1:])))
    return found


def ties(text):
    """(name, Python file as written) of every name the page ties to a file: each backticked name in a module's row
    of a table, and, in the prose, `name` in (of, from) `file.py` and `file.py`'s `name`."""
    found = {(match.group(1), module) for module, owns in rows(text) for token in CODE.findall(owns)
             if (match := re.fullmatch(NAME, token))}
    flat = " ".join(text.split())  # a tie may run over a line's end
    found |= {(name, module) for name, module in NAME_IN.findall(flat)}
    found |= {(name, module) for module, name in FILES_NAME.findall(flat)}
    return found


def untied_names(text):
    return sorted(f"{name} in {module}" for name, module in ties(text)
                  if where(module) is None or not where(module).exists() or name not in defined(where(module)))


def section(text, heading):
    """The text under `## heading`, up to the next heading of its level."""
    return text.split(f"\n## {heading}\n", 1)[-1].split("\n## ", 1)[0] if f"\n## {heading}\n" in text else ""


def unmapped(text):
    """What the map of the rooms leaves out or puts out of order: its modules' rows must be test_layout's LAYERS,
    lowest first, each room with its own row."""
    rooms = section(text, "The rooms")
    mapped = [module[:-3].replace("/", ".") for module, _ in rows(rooms)]
    problems = [f"no row for {module}" for module in LAYERS if module not in mapped]
    problems += [f"a row for {module}, no module of _agenda/" for module in mapped if module not in LAYERS]
    if not problems and mapped != LAYERS:
        problems.append(f"rows out of tests/test_layout.py's order: {mapped}")
    return problems + [f"no row for the room {room}/" for room in ROOMS if f"| **`{room}/`" not in rooms]


def unnamed_commands(text):
    """The commands of the group that their module's row does not name as `agenda NAME`."""
    owns = dict(rows(section(text, "The rooms")))
    return sorted(words[0] for words, command in edges.command_lines() if len(words) == 1 and not re.search(
        rf"`agenda {re.escape(words[0])}[` ]", owns.get(f"cli/{command.callback.__module__.split('.')[-1]}.py", "")))


def unknown_headings(text):
    """What the page cites in quotes that is no heading of docs/design.md."""
    headings = {line[3:].strip() for line in DESIGN.splitlines() if line.startswith("## ")}
    return sorted(set(re.findall(r'"([^"]+)"', CODE.sub("", " ".join(text.split())))) - headings)


def unlinked(readme):
    return [] if "](docs/architecture.md)" in readme else ["README.md does not link docs/architecture.md"]


def too_long(text):
    return [f"{text.count(chr(10))} lines"] if text.count("\n") > 260 else []


CHECKS = [missing_paths, untied_names, unmapped, unnamed_commands, unknown_headings, too_long]


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_the_page_agrees_with_the_code(check):
    assert check(PAGE) == []


def test_the_readme_links_the_page():
    assert unlinked(README) == []


def test_the_checks_find_the_rows_paths_and_ties_the_page_holds():
    assert len(rows(section(PAGE, "The rooms"))) == len(LAYERS) > 60
    assert {"_agenda/domain/booking.py", "_agenda/app.py", "tests/test_layout.py", "schema.sql", "openapi.json",
            "_agenda/desk/templates/layout.tpl"} <= {where(token).relative_to(ROOT).as_posix() for token in paths(PAGE)}
    assert ("PATIENT_COLUMNS", "domain/patients.py") in ties(PAGE) and ("admit", "domain/booking.py") in ties(PAGE)


def without(text, piece, instead=""):
    assert piece in text, piece
    return text.replace(piece, instead, 1)


def swapped(text, first, second):
    """The page with the rows of two modules in each other's place."""
    lines = text.splitlines()
    one, two = (next(i for i, line in enumerate(lines) if line.startswith(f"| `{m}`")) for m in (first, second))
    lines[one], lines[two] = lines[two], lines[one]
    return "\n".join(lines)


WRONG = [
    (missing_paths, "the door, `domain/bookings.py`", ["domain/bookings.py"]),
    (missing_paths, "a bare module, `booking.py`", ["booking.py"]),
    (missing_paths, "a module from the top, `_agenda/domain/booking.py`", ["_agenda/domain/booking.py"]),
    (missing_paths, "`tests/test_nowhere.py`, `desk/templates/nowhere.tpl`, `domain/nowhere/`",
     ["tests/test_nowhere.py", "desk/templates/nowhere.tpl", "domain/nowhere/"]),
    (missing_paths, "a room it has not, `models/patient.py`", ["models/patient.py"]),
    (untied_names, "| `domain/booking.py` | `admit`, `admitted`, `Rules.window`, `Rules.windows` |",
     ["Rules.windows in domain/booking.py", "admitted in domain/booking.py"]),
    (untied_names, "`CHANNELS` in\n`domain/slots.py`", ["CHANNELS in domain/slots.py"]),
    (untied_names, "`tests/test_install.py`'s `PAGE`", ["PAGE in tests/test_install.py"]),
    (untied_names, "`admit()` of `domain/door.py`", ["admit in domain/door.py"]),
    (unmapped, without(PAGE, "| `domain/doctors.py` |", "| domain/doctors.py |"), ["no row for domain.doctors"]),
    (unmapped, PAGE.replace("| `app.py` |", "| `app.py` |\n| `domain/models.py` | |"),
     ["a row for domain.models, no module of _agenda/"]),
    (unmapped, swapped(PAGE, "domain/booking.py", "domain/changes.py"), None),
    (unmapped, without(PAGE, "| **`files/`", "| **files/"), ["no row for the room files/"]),
    (unnamed_commands, without(PAGE, "`agenda health`", "health"), ["health"]),
    (unnamed_commands, without(PAGE, "`agenda import-appointments`"), ["import-appointments"]),
    (unknown_headings, 'as ("One door for appointments") says, and ("Schema")', ["One door for appointments"]),
    (too_long, "a line\n" * 261, ["261 lines"]),
]


@pytest.mark.parametrize("check, text, expected", WRONG, ids=lambda value: getattr(value, "__name__", None))
def test_each_check_fails_for_a_wrong_page(check, text, expected):
    found = check(text)
    assert found and (expected is None or found == expected), found


def test_each_check_passes_a_right_piece_and_the_readme_check_fails_without_the_link():
    assert missing_paths("`domain/booking.py`, `app.py`, `schema.sql`, `desk/templates/`, `/desk/day`") == []
    assert untied_names("`admit` in `domain/booking.py`; `Clinic.window` in `domain/clinic.py`") == []
    assert unknown_headings('("One door for an appointment", "Schema"), `source="cli"`') == []
    assert unlinked("[the map](docs/design.md)") and not unlinked("[the way in](docs/architecture.md)")
