r"""A clinic moved between two hosts (docs/design.md, "Leases"): a clinic of about 100 MB (bench/generate.py's)
served by `agenda host serve --replica` on host A, released there and adopted by host B, both on loopback with
SeaweedFS's S3 (tests/object_store.py); the time from the release until B answers for it, and each part; and
the CPU a lease's renewal costs a host.

    .venv/bin/python bench/move.py                  # about two minutes, most of it building the clinic
    .venv/bin/python bench/move.py --db /tmp/big.db # a clinic built before (bench/generate.py)

Bounded: the processes it starts are stopped by their process id, to 127.0.0.1 only, its files in one temporary
folder.
"""

import argparse
import hashlib
import hmac
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(HERE)]

import object_store  # noqa: E402  (tests/object_store.py: SeaweedFS on loopback)
from fleet import get, SECRET, start  # noqa: E402
from generate import build  # noqa: E402

NAME = "citas.clinica-grande.es"


def agenda(*args, env):
    began = time.monotonic()
    result = subprocess.run([sys.executable, str(ROOT / "agenda.py"), *args], capture_output=True, text=True,
                            env=env, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"agenda {args[0]} {args[1]} failed:\n{result.stdout}{result.stderr}")
    return time.monotonic() - began


def served(port, name, seconds=600):
    """Seconds until the host at `port` answers /health 200 for the clinic `name`."""
    began = time.monotonic()
    while get(port, name, "/health") != 200:
        if time.monotonic() - began > seconds:
            raise SystemExit(f"{name} not served within {seconds} s")
        time.sleep(0.1)
    return time.monotonic() - began


def acknowledged(port, name):
    """Seconds until a new patient at the clinic `name` is acknowledged (its replica holds it)."""
    body = json.dumps({"name": "Rosa Prueba", "nif": "12345678Z"}).encode()
    signature = hmac.new(SECRET.encode(), b"POST\n/patients\n" + body, hashlib.sha256).hexdigest()
    began = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    connection.request("POST", "/patients", body=body, headers={"Host": name, "X-Signature": signature,
                                                                "Content-Type": "application/json"})
    answer = connection.getresponse()
    answer.read()
    connection.close()
    if answer.status not in (200, 201):
        raise SystemExit(f"the change was not acknowledged: {answer.status}")
    return time.monotonic() - began


def renewal_cost(base, clinics=50, rounds=4):
    """Milliseconds of this process's CPU one lease renewal takes (boto3's conditional PUT)."""
    from _agenda.storage.leases import Holder, objects_at
    holder = Holder(objects_at(base), "bench", 30)
    for number in range(clinics):
        holder.take(f"c{number}.bench.test")
    began = time.process_time()
    for _ in range(rounds):
        for number in range(clinics):
            holder.renew(f"c{number}.bench.test")
    return (time.process_time() - began) * 1000 / (clinics * rounds)


def clinic_folder(host, db):
    place = host / NAME
    place.mkdir(parents=True)
    shutil.copy(db, place / "agenda.db")
    (place / "agenda.secret").write_text(SECRET)
    (place / "agenda.secret").chmod(0o600)
    (place / "agenda.toml").write_text("min_notice_minutes = 0\n")
    return place


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="a clinic's database built before (else one is built now)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        db = Path(options.db) if options.db else folder / "big.db"
        if not options.db:
            build(db)
        (folder / "store").mkdir()
        store = object_store.started(folder / "store")
        env = {**{key: value for key, value in os.environ.items() if not key.startswith(("AGENDA_", "AWS_"))},
               **object_store.CLIENT_ENV, "PYTHONUNBUFFERED": "1"}
        base = store.url(f"bench-move-{os.getpid()}")
        os.environ.update(object_store.CLIENT_ENV)
        cost = renewal_cost(store.url(f"bench-leases-{os.getpid()}"))
        print(f"a lease renewed: {cost:.1f} ms of CPU (300 open clinics, a renewal each every 10 s: "
              f"{cost * 30 / 1000:.1%} of a core)")
        clinic_folder(folder / "a", db)
        (folder / "b").mkdir()
        print(f"a clinic of {db.stat().st_size / 1e6:.0f} MB")
        hosts = []
        try:
            for host in ("a", "b"):
                hosts.append(start([sys.executable, str(ROOT / "agenda.py"), "host", "serve", str(folder / host),
                                    "--port", "0", "--replica", base], env))
            first, second = hosts[0][1], hosts[1][1]
            print(f"host A replicating it: /health 200 after {served(first, NAME):.1f} s, a first change "
                  f"acknowledged (the whole file shipped first) after {acknowledged(first, NAME):.1f} s more")
            began = time.monotonic()
            release = agenda("clinic", "release", NAME, "--folder", str(folder / "a"), "--replica", base, env=env)
            aside = next((folder / "a" / ".released").iterdir())
            clinic = folder / "b" / NAME
            clinic.mkdir()
            for name in ("agenda.secret", "agenda.toml"):
                shutil.copy2(aside / name, clinic / name)
            adopt = agenda("clinic", "adopt", NAME, "--folder", str(folder / "b"), "--replica", base, env=env)
            answering = served(second, NAME)
            print(f"moved in {time.monotonic() - began:.1f} s: release {release:.1f} s, adopt (restore, check, lease) "
                  f"{adopt:.1f} s, until host B answers for it {answering:.1f} s")
        finally:
            for process, _ in hosts:
                process.terminate()
            for process, _ in hosts:
                process.wait(60)
            object_store.stop(folder / "store")


if __name__ == "__main__":
    main()
