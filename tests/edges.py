"""What the service serves and the CLI runs, read from the code, never kept by hand: every route of the
route tables the app mounts, each classed by how it lets a request in; every command line of the `agenda`
group; every file of the package's templates folder. The tests ask of each what it must show."""

import re
from pathlib import Path
from typing import NamedTuple

import bottle
import click

import _agenda.app
import agenda

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted(path.name for path in (ROOT / "_agenda" / "desk" / "templates").iterdir() if path.is_file())


def door(config):
    """How a route lets a request in, read from its table's markers: "cookie" (the desk's session), "signature"
    (the caller's) or "neither" (a desk page open before login, an API route marked public, a feed's token, the
    patient's link's token)."""
    if config.get("desk"):
        return "neither" if config.get("open_page") else "cookie"
    return "neither" if config.get("public") or config.get("feed") or config.get("patient") else "signature"


class Route(NamedTuple):
    method: str
    rule: str
    handler: object
    config: dict
    table: str

    @property
    def key(self):
        """(method, rule) with a wildcard's regular expression left out: ("GET", "/feeds/<token>.ics")."""
        return self.method, re.sub(r"<(\w+):re:[^>]*>", r"<\1>", self.rule)

    @property
    def door(self):
        return door(self.config)


def route_tables():
    """{name: table} of every route table create_app mounts: the *_ROUTES it imports."""
    return {name: table for name, table in vars(_agenda.app).items() if name.endswith("_ROUTES")}


ROUTES = [Route(method, rule, handler, config, name) for name, table in route_tables().items()
          for method, rule, handler, config in table]
DESK_ROUTES = [route for route in ROUTES if route.config.get("desk")]
API_ROUTES = [route for route in ROUTES if route.table == "API_ROUTES"]


def _router():
    router = bottle.Router()
    for index, route in enumerate(ROUTES):
        router.add(route.rule, route.method, index)
    return router


ROUTER = _router()


def route_of(method, url):
    """The Route that answers `method url` (a query left out)."""
    index, _ = ROUTER.match({"PATH_INFO": url.split("?")[0], "REQUEST_METHOD": method})
    return ROUTES[index]


def example_path(route):
    """A path this route, and no other before it, answers: each wildcard filled with "1", else a long word."""
    for filler in ("1", "a" * 32):
        path = re.sub(r"<[^>]*>", filler, route.rule)
        try:
            if route_of(route.method, path) is route:
                return path
        except bottle.HTTPError:
            pass
    raise AssertionError(f"no example path for {route.method} {route.rule}: teach example_path one")


def command_lines(group=agenda.cli, words=()):
    """(words, command) of the group itself and of every command under it, a subgroup's own commands too."""
    yield words, group
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from command_lines(command, (*words, name))
        else:
            yield (*words, name), command


def command_modules():
    """The modules of _agenda that hold the group's commands, by name."""
    return sorted({command.callback.__module__.split(".")[-1] for words, command in command_lines() if words})
