r"""The caller beside a flood of web bookings from many addresses (bench/README.md, "A booking page flood").

Builds the large bench clinic (300,000 appointments) and serves it with `agenda run` (its threads on one core, as
always) with the booking page on and a mail relay on 127.0.0.1 (aiosmtpd, in this process, counting what arrives).
Drives the caller at 4 connections (the free slots of a speciality, one appointment, a patient by NIF, in turn) for
--seconds alone, then for --seconds while a flood (a process of its own) tries --rate bookings a second on the page
as a browser makes them (a week's times, the details' form, the booking: three requests), paced open-loop, each from
another loopback address (127.0.0.2 to 127.0.0.250) with another name, NIF and e-mail, over the page's centers,
specialities, doctors and weeks. Prints the caller's p50 and p99 each way and their ratio (during over alone, in
this one run), and what the flood was answered. Twice over: with the page's bounds as shipped (most of the flood
refused once the clinic's ceiling is reached), and with them out of reach (--web-pending-ceiling and
--web-pending-per-day raised: every booking written and its message sent). Targets, as beside the desk's pages:
the caller's p50 under 50 ms and p99 under 500 ms during the flood.

    .venv/bin/python bench/web_flood.py                  # about 2 minutes
    .venv/bin/python bench/web_flood.py --seconds 20 --rate 30

Bounded: each phase --seconds, every request a 30 s timeout, to 127.0.0.1 only; the servers it starts are stopped
by their process id; its files are in one temporary folder.
"""

import argparse
import collections
import concurrent.futures
import datetime as dt
import html.parser
import http.client
import itertools
import multiprocessing
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

from aiosmtpd.controller import Controller

import run  # bench/run.py: load_agenda, generate, Process, drive, percentile
from desk_beside_caller import sampled_caller
from mail_beside_caller import Counting, free_port

WEB = ("--web-booking", "on", "--public-url", "https://citas.example.es", "--web-privacy",
       "Clínica Bench trata sus datos para gestionar su cita.", "--mail-from", "Bench <citas@example.es>")
OUT_OF_REACH = ("--web-pending-ceiling", "100000", "--web-pending-per-day", "1000")
TARGET_P50_MS, TARGET_P99_MS = 50.0, 500.0


class Forms(html.parser.HTMLParser):
    """The forms of a page: [{action, fields: {name: value}, slots: [values of the radio `hueco`]}], and its links."""

    def __init__(self, text):
        super().__init__()
        self.forms, self.links = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"action": attrs.get("action", ""), "fields": {}, "slots": []})
        elif tag == "a" and attrs.get("href", "").startswith("/reservar?"):
            self.links.append(attrs["href"])
        elif tag == "input" and self.forms:
            if attrs.get("type") == "hidden":
                self.forms[-1]["fields"][attrs.get("name")] = attrs.get("value") or ""
            elif attrs.get("name") == "hueco":
                self.forms[-1]["slots"].append(attrs.get("value"))


def exchange(port, method, path, body=None, source="127.0.0.1"):
    """One request from the loopback address `source`: (status, text)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        headers = {"Content-Type": "application/x-www-form-urlencoded"} if body is not None else {}
        connection.request(method, path, urllib.parse.urlencode(body) if body is not None else None, headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode("utf-8", "replace")
    except OSError:
        return "timeout", ""
    finally:
        connection.close()


def times_addresses(port, most=60):
    """The addresses of the page's week of times, each center, speciality and doctor's (or anyone's) reached from
    /reservar by its links as a patient would (at most `most` pages read), those offering a time first."""
    seen, waiting, found = set(), ["/reservar"], []
    while waiting and len(seen) < most:
        address = waiting.pop(0)
        seen.add(address)
        status, text = exchange(port, "GET", address)
        page = Forms(text)
        form = next((form for form in page.forms if form["action"].endswith("/reservar/datos")), None)
        if form is not None:
            found.append((not form["slots"], address))
        elif status == 200:
            waiting += [link for link in page.links if "idioma=en" not in link and link not in seen
                        and len(link) > len(address)]  # onward, never back
    if not found:
        raise SystemExit("the booking page offered no week of times")
    return [address for _, address in sorted(found)]


def book(port, addresses, number, source):
    """One booking as a browser makes it, of the page's times for the `number`th address and week: the answers'
    statuses (times, details, booking; fewer when a step stops it)."""
    address, week = addresses[number % len(addresses)], number // len(addresses) % 5
    status, text = exchange(port, "GET", f"{address}&semana={dt.date.today() + dt.timedelta(days=7 * week)}",
                            source=source)
    form = next((form for form in Forms(text).forms if form["action"].endswith("/reservar/datos")), None)
    if status != 200 or form is None or not form["slots"]:
        return (status,)
    slot = form["slots"][number % len(form["slots"])]
    details, text = exchange(port, "POST", "/reservar/datos", {**form["fields"], "hueco": slot}, source)
    forms = Forms(text).forms
    if details != 200 or not forms:
        return status, details
    typed = {"nombre": "Flood", "apellidos": f"Bench {number}", "nacimiento": "01/02/1990",
             "nif": f"{number % 10 ** 8:08d}{run.LETTERS[number % 10 ** 8 % 23]}", "telefono": f"6{number % 10 ** 8:08d}",
             "correo": f"flood{number}@example.es", "privacidad": "1"}
    booked, _ = exchange(port, "POST", "/reservar/enviar", {**forms[0]["fields"], **typed}, source)
    return status, details, booked


def flood(port, addresses, stop, rate, flooders, results):
    """In a process of its own (its parsing never takes the load driver's interpreter): `rate` bookings a second,
    paced open-loop over `flooders` threads until `stop` is set, each from the next loopback address; what they
    were answered, counted, into `results`."""
    answers, lock, started = collections.Counter(), threading.Lock(), time.monotonic()

    def one(number):
        answered = book(port, addresses, number, f"127.0.0.{number % 249 + 2}")
        with lock:
            answers[answered] += 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=flooders) as pool:
        for number in itertools.count(10_000_000):
            if stop.is_set():
                break
            time.sleep(max(0.0, started + (number - 10_000_000) / rate - time.monotonic()))
            pool.submit(one, number)
    results.put(dict(answers))


def caller_figures(port, make, seconds):
    rate, latencies, failures = run.drive(port, make, 4, 10 ** 9, seconds)
    if failures:
        raise SystemExit(f"the caller had {len(failures)} non-2xx answers: {sorted(set(failures))[:5]}")
    return run.percentile(latencies, 0.5), run.percentile(latencies, 0.99), rate


def one_run(path, make, smtp_port, extra, options):
    """(the caller alone, the caller during the flood, the flood's answers) on one server."""
    server = run.agenda_server(path, (*WEB, "--smtp", f"smtp+plain://127.0.0.1:{smtp_port}", *extra))
    try:
        addresses = times_addresses(server.port)
        alone = caller_figures(server.port, make, options.seconds)
        stop, results = multiprocessing.Event(), multiprocessing.Queue()
        flooding = multiprocessing.Process(target=flood, args=(server.port, addresses, stop, options.rate,
                                                               options.flooders, results))
        flooding.start()
        try:
            time.sleep(1.0)
            during = caller_figures(server.port, make, options.seconds)
        finally:
            stop.set()
            answers = collections.Counter(results.get(timeout=120))
            flooding.join(timeout=60)
            if flooding.is_alive():
                flooding.terminate()
        return alone, during, answers
    finally:
        server.stop()


def answered(answers):
    """What the flood's bookings were answered: the booking's status (or the step that stopped it), counted."""
    said = collections.Counter()
    for statuses, count in answers.items():
        said[f"booking {statuses[2]}" if len(statuses) == 3 else f"step {len(statuses)} {statuses[-1]}"] += count
    return ", ".join(f"{count} × {what}" for what, count in sorted(said.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds of each phase")
    parser.add_argument("--rate", type=float, default=10.0, help="bookings a second the flood tries (3 requests each)")
    parser.add_argument("--flooders", type=int, default=16, help="threads the flood sends them from")
    options = parser.parse_args()
    run.load_agenda(run.AGENDA_PATH)
    inbox, smtp_port = Counting(), free_port()
    smtp = Controller(inbox, hostname="127.0.0.1", port=smtp_port)
    smtp.start()
    missed = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "big.db"
            run.generate.build(path, today=dt.date.today())
            make = sampled_caller(path)
            for name, extra in (("bounds as shipped", ()), ("bounds out of reach", OUT_OF_REACH)):
                arrived = inbox.count
                alone, during, answers = one_run(path, make, smtp_port, extra, options)
                ratio = during[0] / alone[0]
                print(f"{name}: the caller alone p50 {alone[0]:.1f} ms, p99 {alone[1]:.1f} ms ({alone[2]:.0f}/s); "
                      f"during the flood p50 {during[0]:.1f} ms, p99 {during[1]:.1f} ms ({during[2]:.0f}/s); p50 "
                      f"ratio {ratio:.2f}, p99 ratio {during[1] / alone[1]:.2f}", flush=True)
                print(f"    the flood: {sum(answers.values())} bookings tried ({answered(answers)}); "
                      f"{inbox.count - arrived} messages arrived meanwhile", flush=True)
                if during[0] > TARGET_P50_MS or during[1] > TARGET_P99_MS:
                    missed.append(f"{name}: the caller's p50 {during[0]:.1f} ms, p99 {during[1]:.1f} ms")
    finally:
        smtp.stop()
    print("\n".join(f"MISSED: {line}" for line in missed) or
          f"Targets met: the caller's p50 under {TARGET_P50_MS:.0f} ms and p99 under {TARGET_P99_MS:.0f} ms.")


if __name__ == "__main__":
    main()
