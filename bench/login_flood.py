r"""The caller's GET /availabilities while the desk's login is flooded (bench/README.md, "A login flood").

Seeds the demo clinic with one staff account, serves it with `agenda run --threads T` on
127.0.0.1, measures GET /availabilities one request at a time for --seconds at rest, then again
while --rate logins a second (wrong passwords, a new name each) arrive from --flooders threads;
prints the medians and what the logins were answered, for each --threads given.

    .venv/bin/python bench/login_flood.py                      # threads 1 and 4, 100 logins/s, about 1 minute
    .venv/bin/python bench/login_flood.py --agenda /tmp/agenda-before/agenda.py   # another checkout

Bounded: every request has a 10 s timeout, each phase lasts --seconds, to 127.0.0.1 only; the
servers it starts are stopped by their process id; its files are in one temporary folder.
"""

import argparse
import collections
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import run  # bench/run.py: Process, signature

PASSWORD = "correct horse battery"


def seeded(agenda_path, folder):
    """A demo clinic with the staff account `bench`; the database's path."""
    db_path = Path(folder) / "clinic.db"
    catalog = Path(agenda_path).parent / "seed" / "catalogs.csv"
    for args, stdin in ((["seed", str(catalog)], None), (["staff", "add", "bench"], PASSWORD + "\n")):
        subprocess.run([sys.executable, str(agenda_path), *args, "--db", str(db_path)], input=stdin, text=True,
                       check=True, capture_output=True, timeout=120)
    return db_path


def login(port, name, password, timeout=10):
    """POST /desk/login as a browser would; (status, the Set-Cookie of a session or None)."""
    body = urllib.parse.urlencode({"csrf": "t" * 32, "name": name, "password": password}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/desk/login", data=body, method="POST", headers={
        "Cookie": "agenda_login=" + "t" * 32, "Content-Type": "application/x-www-form-urlencoded"})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, None
    except urllib.error.HTTPError as error:
        cookies = [value.split(";")[0] for value in error.headers.get_all("Set-Cookie") or [] if "agenda_desk=" in value]
        return error.code, cookies[0] if cookies else None
    except OSError:
        return "timeout", None


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def get(port, path, headers, timeout=10):
    """One GET; (status, seconds)."""
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers),
                                    timeout=timeout) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except OSError:
        status = "timeout"
    return status, time.perf_counter() - started


def availability_p50(port, seconds):
    """The median of GET /availabilities (one doctor, 14 days) sent one at a time for `seconds`, in ms."""
    path = "/availabilities?doctorId=MARTIN&startDate={0}&endDate={1}".format(
        *(time.strftime("%d/%m/%Y", time.localtime(time.time() + days * 86400)) for days in (1, 14)))
    headers = {"X-Signature": run.signature("GET", path, b"")}
    times, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        status, took = get(port, path, headers)
        assert status == 200, status
        times.append(took * 1000)
    return statistics.median(times), len(times)


def flood(port, rate, seconds, flooders, answers):
    """`rate` logins a second for `seconds`, paced open-loop over `flooders` threads."""
    with ThreadPoolExecutor(max_workers=flooders) as pool:
        started = time.monotonic()
        for n in range(int(rate * seconds)):
            time.sleep(max(0.0, started + n / rate - time.monotonic()))
            pool.submit(lambda n=n: answers.update([login(port, f"flood{n}", "wrong password")[0]]))


def one_server(agenda_path, db_path, threads, options):
    server = run.Process([sys.executable, str(agenda_path), "run", "--db", str(db_path), "--port", "0",
                         "--threads", str(threads)], env={"AGENDA_SECRET": run.SECRET})
    try:
        status, session = login(server.port, "bench", PASSWORD)
        assert status == 303 and session, status
        rest, _ = availability_p50(server.port, options.seconds)
        answers = collections.Counter()
        flooding = threading.Thread(target=flood, args=(server.port, options.rate, options.seconds + 1,
                                                        options.flooders, answers))
        flooding.start()
        time.sleep(0.5)
        busy, count = availability_p50(server.port, options.seconds)
        desk_day = get(server.port, "/desk/day", {"Cookie": session})[0]
        flooding.join()
        return rest, busy, count, desk_day, answers
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agenda", default=str(run.ROOT / "agenda.py"), metavar="PATH", help="the agenda.py to serve")
    parser.add_argument("--threads", type=int, action="append", help="agenda run --threads (default: 1 and 4)")
    parser.add_argument("--rate", type=float, default=100.0, help="logins a second during the flood")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each measuring phase")
    parser.add_argument("--flooders", type=int, default=32, help="threads sending the flood's logins")
    options = parser.parse_args()
    print(f"| --threads | p50 at rest (ms) | p50 under {options.rate:.0f} logins/s (ms) | requests | "
          "open session's /desk/day | logins answered |")
    print("|---|---|---|---|---|---|")
    for threads in options.threads or [1, 4]:
        with tempfile.TemporaryDirectory(prefix="agenda-flood-") as folder:
            rest, busy, count, desk_day, answers = one_server(options.agenda, seeded(options.agenda, folder),
                                                              threads, options)
        print(f"| {threads} | {rest:.1f} | {busy:.1f} | {count} | {desk_day} | "
              f"{', '.join(f'{key}: {value}' for key, value in sorted(answers.items(), key=str))} |")


if __name__ == "__main__":
    main()
