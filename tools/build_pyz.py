"""Build agenda.pyz: Agenda and its pure-Python dependencies in one file, with zipapp.

Run it with a Python where Agenda is installed (its dependencies are copied from
there, so no network is needed):

    .venv/bin/python tools/build_pyz.py            # writes ./agenda.pyz

The result runs on any Python 3.11+ with nothing installed:

    python3 agenda.pyz seed seed/catalogs.csv --db clinic.db

Data that Agenda never reads (phonenumbers' geocoding and carrier tables, type
stubs, caches) is left out, which takes the file from about 60 MB to a few MB.
"""

import argparse
import configparser
import re
import shutil
import sys
import tempfile
import zipapp
from importlib import metadata
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent
LEFT_OUT = re.compile(r"(^|/)(__pycache__|[^/]+\.dist-info|[^/]+\.egg-info)/|\.pyi$|^\.\./|^bin/"
                      r"|^phonenumbers/(geodata|carrierdata|tzdata)/")
NATIVE = re.compile(r"\.(so|pyd|dylib)$")
MAIN = 'import agenda\n\nagenda.cli(prog_name="agenda")\n'


def requirement_names():
    """The distributions setup.cfg's install_requires names (markers and versions dropped)."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    lines = config["options"]["install_requires"].strip().splitlines()
    return [re.match(r"[A-Za-z0-9._-]+", line.strip())[0] for line in lines if line.strip()]


def with_dependencies(names):
    """Each named distribution and, recursively, what it requires (extras left out)."""
    seen, queue = {}, list(names)
    while queue:
        name = queue.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen[key] = metadata.distribution(name)
        for requirement in seen[key].requires or []:
            if "extra ==" not in requirement:
                queue.append(re.match(r"[A-Za-z0-9._-]+", requirement)[0])
    return seen


def copy_distribution(distribution, staging):
    copied = 0
    for file in distribution.files or []:
        relative = file.as_posix()
        if LEFT_OUT.search(relative):
            continue
        if NATIVE.search(relative):
            raise SystemExit(f"{distribution.metadata['Name']} is not pure Python ({relative}); "
                             "it cannot go into a zipapp")
        source = Path(distribution.locate_file(file))
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied += 1
    return copied


def shipped_files():
    """Agenda's own files by setup.cfg's own rules, so the one-file build ships what a wheel ships: the
    module, the package's modules and package data, and the data files (globs from the project's top)."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    names = [f"{module}.py" for module in config["options"]["py_modules"].split()]
    for package in find_packages(str(ROOT), include=config["options.packages.find"]["include"].split()):
        patterns = ["*.py", *config["options.package_data"].get(package, "").split()]
        names += [path for pattern in patterns for path in sorted((ROOT / package.replace(".", "/")).glob(pattern))]
    names += [path for patterns in config["options.data_files"].values() for pattern in patterns.split()
              for path in sorted(ROOT.glob(pattern))]
    return [Path(name).relative_to(ROOT).as_posix() if Path(name).is_absolute() else name for name in names]


def build(output):
    with tempfile.TemporaryDirectory() as folder:
        staging = Path(folder)
        for key, distribution in sorted(with_dependencies(requirement_names()).items()):
            count = copy_distribution(distribution, staging)
            print(f"  {distribution.metadata['Name']} {distribution.version}: {count} files")
        for name in shipped_files():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, staging / name)
        (staging / "__main__.py").write_text(MAIN, encoding="utf-8")
        zipapp.create_archive(staging, output, interpreter="/usr/bin/env python3", compressed=True)
    return output


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default="agenda.pyz", help="where to write it (default: agenda.pyz)")
    output = Path(parser.parse_args().output)
    try:
        build(output)
    except metadata.PackageNotFoundError as error:
        sys.exit(f"{error.name} is not installed in this Python; run this with the Python Agenda is "
                 "installed in, e.g. .venv/bin/python tools/build_pyz.py")
    print(f"Wrote {output} ({output.stat().st_size / 1e6:.1f} MB). Try: python3 {output} --version")


if __name__ == "__main__":
    main()
