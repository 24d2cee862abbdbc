"""The rooms of `_agenda/` (docs/design.md, "Where things live"): imports run one way, from the CLI
down to values; the clinic's operations speak no HTTP; no module passes 500 lines (but the table of
words) and no function 60; agenda.py is only the face."""

import ast

import pytest

import agenda
import edges
from conftest import ROOT

PACKAGE = ROOT / "_agenda"
# The package's folders, lowest first, and each folder's modules, lowest first: a module may import only
# modules before it, in its own folder or a folder below. values import nothing of Agenda's; storage runs
# from the files that ship up to the database the service holds (an upgrade keeps a copy first, so copies
# sit below schema, and opening a database upgrades it, so schema sits below database); the domain's
# operations take the clinic; files are the clinic's own files in and out; web holds what both edges share,
# the caller's API and the feeds; in desk, shared.py holds what every page shares, each handler module above
# it imports no other, and routes.py's table imports them all; app.py assembles the edges; in cli, root.py
# holds the one group and what its commands share, and each command module registers its commands on that
# group, importing no other. The command modules are those the group's commands live in; the desk's handler
# modules, those its route table's handlers live in.
COMMANDS = edges.command_modules()
DESK_HANDLERS = sorted({route.handler.__module__.split(".")[-1] for route in edges.DESK_ROUTES})
FOLDERS = {
    "values": ["settings", "refusals", "fields", "printing"],
    "storage": ["sealing", "shipped", "connections", "events", "copies", "schema", "database", "replication",
                "leases", "host_replication", "replica_restore"],
    "domain": ["patients", "access", "identity", "slots", "appointments", "clinic", "visits", "holds", "availability",
               "staff", "outbox", "web_requests", "booking", "changes", "links", "registry", "closures", "reminders", "doctors", "fitting", "counter",
               "series", "waitlist", "rights", "feeds", "report", "timeline", "month", "waiting_room",
               "web_booking", "verifying"],
    "files": ["catalogs", "reading", "open_formats", "staged_import"],
    "web": ["answers", "serving", "api", "calendar_feeds", "host", "proxy_sites"],
    "words": ["patient_texts", "texts", "pages"],
    "desk": ["charts", "shared", *DESK_HANDLERS, "routes"],
    "patient": ["messages", "sender", "host_sender", "pages", "booking_form", "booking_page"],
    "": ["app"],
    "cli": ["root", *COMMANDS],
}
LAYERS = [f"{folder}.{module}" if folder else module for folder, modules in FOLDERS.items() for module in modules]
DOMAIN = [module for module in LAYERS if module.split(".")[0] in ("values", "domain")]
FACE = "agenda"  # agenda.py, above every module of the package: none imports it


def module_path(module):
    return PACKAGE / (module.replace(".", "/") + ".py")


def own_imports(path, package="_agenda"):
    """The _agenda modules a module imports, by their dotted path within _agenda ("domain.clinic"), and FACE when it
    imports agenda.py: every import anywhere in it, inside a function too, and importlib's by a constant name;
    `package`, the dotted package the module at `path` lives in, resolves its relative imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            names = [str(node.args[0].value)]
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join(base + ([node.module] if node.module else []))
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found |= {name.split(".", 1)[1] for name in names
                  if name.startswith("_agenda.") and module_path(name.split(".", 1)[1]).exists()}
        found |= {FACE for name in names if name.split(".")[0] == FACE}
    return found


def package_of(module):
    return ".".join(["_agenda", *module.split(".")[:-1]])


def test_every_module_of_the_package_has_its_place_in_its_folder():
    found = sorted(path.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".")
                   for path in PACKAGE.rglob("*.py") if path.stem != "__init__")
    assert found == sorted(LAYERS)
    assert sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py")) == sorted(filter(None, FOLDERS))


@pytest.mark.parametrize("module", LAYERS)
def test_a_module_imports_only_the_modules_below_it(module):
    above = {*LAYERS[LAYERS.index(module):], FACE}
    imported = own_imports(module_path(module), package_of(module))
    assert not imported & above, f"_agenda/{module} imports {sorted(imported & above)}, which stand above it"


def test_every_command_lives_in_a_command_module_that_agenda_py_registers():
    assert sorted(path.stem for path in (PACKAGE / "cli").glob("*.py")) == sorted(["__init__", "root", *COMMANDS])
    assert {f"cli.{module}" for module in COMMANDS} <= own_imports(ROOT / "agenda.py", "")


@pytest.mark.parametrize("module", COMMANDS)
def test_a_command_module_imports_no_other_command_module(module):
    assert not own_imports(module_path(f"cli.{module}"), "_agenda.cli") & {f"cli.{other}" for other in COMMANDS}


def test_every_desk_module_is_shared_a_handler_module_or_the_routes():
    assert sorted(path.stem for path in (PACKAGE / "desk").glob("*.py")) == sorted(
        ["__init__", "charts", "shared", "routes", *DESK_HANDLERS])
    assert all(route.handler.__module__.startswith("_agenda.desk.") for route in edges.DESK_ROUTES)


@pytest.mark.parametrize("module", DESK_HANDLERS)
def test_a_desk_handler_module_imports_no_other_handler_module(module):
    assert not own_imports(module_path(f"desk.{module}"), "_agenda.desk") & {f"desk.{other}" for other in DESK_HANDLERS}


def test_the_check_would_see_an_import_upward(tmp_path):
    upward = tmp_path / "clinic.py"
    upward.write_text("from ..web.answers import clinic\nfrom _agenda.web.api import sign\nimport _agenda.desk.routes\n"
                      "from .changes import cancelled\nfrom ..desk import views\n")
    assert own_imports(upward, "_agenda.domain") == {"web.answers", "web.api", "desk.routes", "domain.changes",
                                                     "desk.views"}
    lazy = tmp_path / "later.py"  # inside functions and classes, and importlib's
    lazy.write_text("import importlib\ndef send():\n    import agenda\n    from ..cli import root\n"
                    "class Later:\n    def run(self):\n        from agenda import cli\n"
                    "        return importlib.import_module('_agenda.app')\n")
    assert own_imports(lazy, "_agenda.domain") == {FACE, "cli.root", "app"}


@pytest.mark.parametrize("module", DOMAIN)
def test_the_clinics_operations_speak_no_http(module):
    tree = ast.parse(module_path(module).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert not imported & {"bottle", "waitress", "click", "http", "webob"}


LONGER = {"texts.py": 900}  # the one module that may pass 500 lines, up to 900: the table of every word of the desk


@pytest.mark.parametrize("path", [ROOT / "agenda.py", *sorted(PACKAGE.rglob("*.py"))],
                         ids=lambda path: path.relative_to(ROOT).as_posix())
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
