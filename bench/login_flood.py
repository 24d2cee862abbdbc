r"""The desk's logins and the caller's GET /availabilities while the desk's login is flooded
(bench/README.md, "A login flood").

Seeds the demo clinic with four staff accounts, serves it with `agenda run --threads T` on
127.0.0.1, and has each member of staff log in once from her own browser (which keeps the device
cookie it is given, not the session). Then measures GET /availabilities one request at a time for
--seconds at rest, and again while --rate wrong logins a second (a new name each) arrive from other
loopback addresses (127.0.0.2 to 127.0.0.250) from --flooders threads, until both are done;
meanwhile each member of staff logs in again from her browser, one every 1.5 s, trying again every
0.25 s until let in (at most 10 s), and a new PC (no device cookie) tries once after each. Prints,
for each --threads and --rate, the caller's medians, how long each member of staff waited to get
in, what the new PC and the flood were answered, and whether the targets are met (every wait under
2 s, the caller's median under 50 ms).

    .venv/bin/python bench/login_flood.py                  # threads 1 and 4, 25 and 100 logins/s, ~2 min
    .venv/bin/python bench/login_flood.py --agenda /tmp/agenda-before/agenda.py   # another checkout

Bounded: every request has a 10 s timeout, a member of staff's tries end after 10 s, each phase
lasts --seconds, a flood 2 minutes at most, to 127.0.0.1 only; the servers it starts are stopped
by their process id; its files are in one temporary folder.
"""

import argparse
import collections
import http.client
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import run  # bench/run.py: Process, signature

PASSWORD = "correct horse battery"
STAFF = ("ana", "recepcion", "kika", "luis")
STAFF_ADDRESS, NEW_PC_ADDRESS = "127.0.0.1", "127.0.0.251"
WAIT_AT_MOST, TRY_EVERY, FLOOD_AT_MOST = 10.0, 0.25, 120.0
TARGET_WAIT_S, TARGET_P50_MS = 2.0, 50.0


def seeded(agenda_path, folder):
    """A demo clinic with the staff accounts of STAFF; the database's path."""
    db_path = Path(folder) / "clinic.db"
    catalog = Path(agenda_path).parent / "seed" / "catalogs.csv"
    for args, stdin in [(["seed", str(catalog)], None), *((["staff", "add", name], PASSWORD + "\n") for name in STAFF)]:
        subprocess.run([sys.executable, str(agenda_path), *args, "--db", str(db_path)], input=stdin, text=True,
                       check=True, capture_output=True, timeout=120)
    return db_path


def login(port, name, password, source, device=None):
    """POST /desk/login from the loopback address `source` as a browser would, with its device cookie if
    any; (status, {cookie: value} of what the answer sets)."""
    body = urllib.parse.urlencode({"csrf": "t" * 32, "name": name, "password": password})
    cookie = "agenda_login=" + "t" * 32 + (f"; agenda_device={device}" if device else "")
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        connection.request("POST", "/desk/login", body, {"Cookie": cookie,
                                                         "Content-Type": "application/x-www-form-urlencoded"})
        response = connection.getresponse()
        response.read()
        set_cookies = response.msg.get_all("Set-Cookie") or []
        return response.status, dict(value.split(";")[0].split("=", 1) for value in set_cookies)
    except OSError:
        return "timeout", {}
    finally:
        connection.close()


def get(port, path, headers):
    """One GET; (status, seconds)."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        status = response.status
    except OSError:
        status = "timeout"
    finally:
        connection.close()
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


def flood(port, rate, stop, flooders, answers):
    """`rate` wrong logins a second until `stop` is set (FLOOD_AT_MOST s at most), a new name each from
    another loopback address, paced open-loop over `flooders` threads."""
    with ThreadPoolExecutor(max_workers=flooders) as pool:
        started = time.monotonic()
        for n in range(int(rate * FLOOD_AT_MOST)):
            if stop.is_set():
                break
            time.sleep(max(0.0, started + n / rate - time.monotonic()))
            pool.submit(lambda n=n: answers.update([login(port, f"flood{n}", "wrong password",
                                                          f"127.0.0.{n % 249 + 2}")[0]]))


def staff_logins(port, devices, waits, new_pc):
    """Each member of staff logs in from her browser, one every 1.5 s, trying again every TRY_EVERY s until
    let in or WAIT_AT_MOST s have passed (waits[name] = (seconds until let in or None, tries)); between
    them a new PC, with no device cookie, tries once (its answers counted in `new_pc`)."""
    for name in STAFF:
        started, tries = time.monotonic(), 0
        while True:
            tries += 1
            status, cookies = login(port, name, PASSWORD, STAFF_ADDRESS, devices.get(name))
            waited = time.monotonic() - started
            if status == 303 or waited + TRY_EVERY > WAIT_AT_MOST:
                break
            time.sleep(TRY_EVERY)
        waits[name] = (waited if status == 303 else None, tries)
        devices[name] = cookies.get("agenda_device", devices.get(name))
        time.sleep(max(0.0, started + 0.75 - time.monotonic()))
        new_pc.update([login(port, name, PASSWORD, NEW_PC_ADDRESS)[0]])
        time.sleep(max(0.0, started + 1.5 - time.monotonic()))


def one_server(agenda_path, db_path, threads, rate, options):
    server = run.Process([sys.executable, str(agenda_path), "run", "--db", str(db_path), "--port", "0",
                         "--threads", str(threads)], env={"AGENDA_SECRET": run.SECRET})
    try:
        devices, session = {}, None
        for name in STAFF:  # each browser's earlier login: it keeps the device cookie, not the session
            status, cookies = login(server.port, name, PASSWORD, STAFF_ADDRESS)
            assert status == 303 and "agenda_desk" in cookies, status
            devices[name] = cookies.get("agenda_device")  # None from a checkout without devices
            session = session or f"agenda_desk={cookies['agenda_desk']}"
        rest, _ = availability_p50(server.port, options.seconds)
        answers, waits, new_pc, stop = collections.Counter(), {}, collections.Counter(), threading.Event()
        flooding = threading.Thread(target=flood, args=(server.port, rate, stop, options.flooders, answers))
        flooding.start()
        try:
            time.sleep(0.5)
            staff = threading.Thread(target=staff_logins, args=(server.port, devices, waits, new_pc))
            staff.start()
            busy, count = availability_p50(server.port, options.seconds)
            desk_day = get(server.port, "/desk/day", {"Cookie": session})[0]
            staff.join()
        finally:
            stop.set()
            flooding.join()
        return {"rest": rest, "busy": busy, "count": count, "waits": waits, "new_pc": new_pc, "desk_day": desk_day,
                "answers": answers}
    finally:
        server.stop()


def shown_wait(wait):
    seconds, tries = wait
    return (f"> {WAIT_AT_MOST:.0f} s" if seconds is None else f"{seconds * 1000:.0f} ms") + \
        (f" ({tries} tries)" if tries > 1 else "")


def counted(answers):
    return ", ".join(f"{value} × {key}" for key, value in sorted(answers.items(), key=str))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agenda", default=str(run.ROOT / "agenda.py"), metavar="PATH", help="the agenda.py to serve")
    parser.add_argument("--threads", type=int, action="append", help="agenda run --threads (default: 1 and 4)")
    parser.add_argument("--rate", type=float, action="append", help="wrong logins a second (default: 25 and 100)")
    parser.add_argument("--seconds", type=float, default=6.0, help="length of each measuring phase")
    parser.add_argument("--flooders", type=int, default=32, help="threads sending the flood's logins")
    options = parser.parse_args()
    print("| --threads | flood (logins/s) | caller p50 at rest (ms) | caller p50 under flood (ms) | requests | "
          f"staff on their browsers: wait to get in ({', '.join(STAFF)}) | a new PC | open session's /desk/day | "
          "flood answered |")
    print("|---|---|---|---|---|---|---|---|---|")
    missed = []
    for threads in options.threads or [1, 4]:
        for rate in options.rate or [25.0, 100.0]:
            with tempfile.TemporaryDirectory(prefix="agenda-flood-") as folder:
                result = one_server(options.agenda, seeded(options.agenda, folder), threads, rate, options)
            waits = [result["waits"].get(name, (None, 0)) for name in STAFF]
            print(f"| {threads} | {rate:.0f} | {result['rest']:.1f} | {result['busy']:.1f} | {result['count']} | "
                  f"{', '.join(shown_wait(wait) for wait in waits)} | {counted(result['new_pc'])} | "
                  f"{result['desk_day']} | {counted(result['answers'])} |")
            if any(seconds is None or seconds >= TARGET_WAIT_S for seconds, _ in waits):
                missed.append(f"--threads {threads}, {rate:.0f}/s: a member of staff waited {TARGET_WAIT_S:.0f} s "
                              "or more")
            if result["busy"] >= TARGET_P50_MS:
                missed.append(f"--threads {threads}, {rate:.0f}/s: the caller's p50 reached {TARGET_P50_MS:.0f} ms")
    print("\n".join(f"MISSED: {line}" for line in missed) or
          f"Targets met: every member of staff in within {TARGET_WAIT_S:.0f} s, the caller's p50 under "
          f"{TARGET_P50_MS:.0f} ms.")


if __name__ == "__main__":
    main()
