"""The rooms of `_agenda/` (docs/design.md, "Where things live"): imports run one way, from the CLI
down to values; the clinic's operations speak no HTTP; no module passes 500 lines (but the table of
words) and no function 60; agenda.py is only the face."""

import ast
from pathlib import Path

import pytest

import agenda
import edges
from conftest import ROOT

PACKAGE = ROOT / "_agenda"
# Lowest first: a module may import only modules before it. desk_shared holds what every desk page
# shares, each desk handler module above it imports no other, and desk.py's route table imports them
# all. replication and imports sit beside the app, over the clinic and storage; cli holds the one group
# and what its commands share, and each cli_*.py above it registers its commands on that group,
# importing no other cli_*.py. The command modules are those the group's commands live in; the desk's
# handler modules, those its route table's handlers live in. The storage modules run from the files that
# ship up to the database the service holds: an upgrade keeps a copy first, so copies sit below schema,
# and opening a database upgrades it, so schema sits below database.
COMMANDS = edges.command_modules()
DESK_HANDLERS = sorted({route.handler.__module__.split(".")[-1] for route in edges.DESK_ROUTES})
VALUES = ["settings", "refusals", "fields", "printing"]
STORAGE = ["shipped", "connections", "events", "copies", "schema", "database"]
LAYERS = [*VALUES, "sealing", *STORAGE, "patients", "access", "identity", "slots", "appointments", "clinic", "visits",
          "holds", "availability", "staff", "booking", "changes", "registry", "closures", "reminders", "doctors",
          "fitting", "counter", "series", "waitlist", "rights", "feeds", "report", "timeline", "texts", "pages",
          "charts", "answers", "serving", "api", "desk_shared", *DESK_HANDLERS, "desk", "feed_web", "app",
          "replication", "replica_restore", "catalogs", "imports", "moving", "staged_import",
          "cli", *COMMANDS]
DOMAIN = [*VALUES, "sealing", *STORAGE, "patients", "access", "identity", "slots", "appointments", "clinic", "visits",
          "holds", "availability", "staff", "booking", "changes", "registry", "closures", "reminders", "doctors",
          "fitting", "counter", "series", "waitlist", "rights", "feeds", "report", "timeline", "texts"]


def own_imports(path):
    """The _agenda modules a module imports, by name."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("_agenda."):
            found.add(node.module.split(".", 1)[1])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".", 1)[1] for alias in node.names if alias.name.startswith("_agenda.")}
    return found - {"__init__"}


def test_every_module_of_the_package_has_its_place_in_the_layers():
    assert sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__") == sorted(LAYERS)


@pytest.mark.parametrize("module", LAYERS)
def test_a_module_imports_only_the_modules_below_it(module):
    above = set(LAYERS[LAYERS.index(module):])
    imported = own_imports(PACKAGE / f"{module}.py")
    assert not imported & above, f"_agenda/{module}.py imports {sorted(imported & above)}, which stand above it"


def test_every_command_lives_in_a_command_module_that_agenda_py_registers():
    assert sorted(path.stem for path in PACKAGE.glob("cli_*.py")) == COMMANDS  # each holds a command, none elsewhere
    assert set(COMMANDS) <= own_imports(ROOT / "agenda.py")


@pytest.mark.parametrize("module", COMMANDS)
def test_a_command_module_imports_no_other_command_module(module):
    assert not own_imports(PACKAGE / f"{module}.py") & set(COMMANDS)


def test_every_desk_module_is_the_shared_one_or_a_handler_module():
    assert sorted(path.stem for path in PACKAGE.glob("desk_*.py")) == sorted(["desk_shared", *DESK_HANDLERS])
    assert all(module.startswith("desk_") for module in DESK_HANDLERS), DESK_HANDLERS  # no handler elsewhere


@pytest.mark.parametrize("module", DESK_HANDLERS)
def test_a_desk_handler_module_imports_no_other_handler_module(module):
    assert not own_imports(PACKAGE / f"{module}.py") & set(DESK_HANDLERS)


def test_the_check_would_see_an_import_upward(tmp_path):
    upward = tmp_path / "clinic.py"
    upward.write_text("from .answers import clinic\nfrom _agenda.api import sign\nimport _agenda.desk\n")
    assert own_imports(upward) == {"answers", "api", "desk"}


@pytest.mark.parametrize("module", DOMAIN)
def test_the_clinics_operations_speak_no_http(module):
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert not imported & {"bottle", "waitress", "click", "http", "webob"}


LONGER = {"texts.py": 900}  # the one module that may pass 500 lines, up to 900: the table of every word of the desk


@pytest.mark.parametrize("path", [ROOT / "agenda.py", *sorted(PACKAGE.glob("*.py"))], ids=lambda path: path.name)
def test_no_module_passes_500_lines_and_no_function_60(path):
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= LONGER.get(path.name, 500)
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60]
    assert not long


# What a user of the package, the bench and the tools need: the command, the app, the clinic and its
# database, the catalog loader, the caller's signature. A new public name is a choice made here.
PUBLIC = {"__version__", "cli", "run", "create_app", "Clinic", "Settings", "ClinicError", "Database", "open_database",
          "connect", "transaction", "migrate", "read_catalog_file", "seed_catalogs", "sign"}


def test_agenda_py_is_the_face_and_exports_the_public_names_only():
    tree = ast.parse((ROOT / "agenda.py").read_text(encoding="utf-8"))
    assert not [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    assert set(agenda.__all__) == PUBLIC and len(agenda.__all__) == len(PUBLIC)
    assert not [name for name in agenda.__all__ if name.isupper()]  # no internal constant
    assert {name for name in vars(agenda) if not name.startswith("_")} == PUBLIC - {"__version__"}
    assert agenda.cli.commands.keys() >= {"run", "seed", "day", "book", "staff", "closed"}


def test_the_tests_the_bench_and_the_tools_take_only_public_names_from_the_face():
    used = set()
    for path in [*ROOT.glob("tests/*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("tools/*.py")]:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        imports = [alias for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        if 'import_module("agenda")' in source or any(alias.name == "agenda" and not alias.asname for alias in imports):
            used |= {(path.name, node.attr) for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                     and isinstance(node.value, ast.Name) and node.value.id == "agenda"}
        used |= {(path.name, alias.name) for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module == "agenda" for alias in node.names}
    assert not {(name, attr) for name, attr in used if attr not in PUBLIC | {"__all__", "__file__"}}
