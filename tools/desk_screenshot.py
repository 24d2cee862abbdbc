"""Screenshots of the staff desk, for the docs (docs/screenshots/).

Builds the demo clinic in a temporary folder (`agenda seed --demo`), adds a staff account,
imports a few fictional patients and books them with the CLI (`agenda book`: a first visit, a
sobrecita, a physiotherapy session in its box at NORTE, one confirmed, one on the waiting list to
bring forward), serves it with `agenda run` on 127.0.0.1 (any free port), logs in with headless
Chromium and saves, at 1280x800 (a reception screen) and 768x1024 (a tablet): the day of a Monday
or Wednesday with appointments at CENTRO, that week at the center and of one doctor, the rooms at
NORTE, the center's month a week on (the days a first visit fits), the waiting list, the web bookings to verify
(two booked on the clinic's page the next day: one not yet confirmed, one to verify), the admin's report,
and the keyboard's path (the day with `↓` on its next free slot; the booking page after a search, on the
found patient's "Reservar"), and a drag (a card held over the next visit's time, then refused there). The day is the
first from tomorrow, or today before 08:30 (the clinic's time), when its 09:00 patient is also
marked arrived. Everything it starts is bounded in time and stopped by its pid.

    .venv/bin/python tools/desk_screenshot.py [-o docs/screenshots] [--lang es|en]

Needs selenium, /usr/bin/chromium and /usr/bin/chromedriver (Debian's packages).
"""

import argparse
import datetime as dt
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WAIT = 10  # seconds, for every page and element
STAFF, PASSWORD = "ana", "demo desk password"
CLINIC_TZ = ZoneInfo("Europe/Madrid")  # the CLI's default --tz
# The demo clinic's: MARTIN (15 min) mon-wed and RUIZ (20 min) mon-fri at CENTRO; MUNOZ (physiotherapy,
# 45 min, a box) mon, wed and fri at NORTE: a Monday or a Wednesday has all three.
CENTER, ROOMS_CENTER, WEEKDAYS = "CENTRO", "NORTE", (0, 2)

# Fictional patients (valid DNI letters, Spanish mobiles): name,surname,birthDate,nif,phone
PATIENTS = """\
name,surname,birthDate,nif,phone
Lucas,Gómez Serrano,14/03/1985,10000001S,612345601
Marta,Iglesias Ramos,02/11/1979,10000002Q,612345602
Pablo,Ortega Lin,23/07/2016,10000003V,612345603
Elena,Vidal Castro,09/01/1962,10000004H,612345604
Hugo,Navarro Sanz,30/05/2019,10000005L,612345605
Irene,Molina Fuentes,17/08/1991,10000006C,612345606
Daniel,Romero Pascual,05/04/1977,10000007K,612345607
Carmen,Delgado Prieto,21/12/1958,10000008E,612345608
Sara,Benítez Lozano,11/06/1994,10000009T,612345609
"""
FIRST = ("MARTIN", "09:00", "10000001S", "Revisión analítica")  # confirmed; arrived when the day is today
# (doctor, center, time, patient's NIF, reason, more options) on the day. RUIZ takes a list of insurances,
# so he is booked with one (PRIVADO, the catalog's private patient).
BOOKINGS = [
    ("MARTIN", CENTER, "09:30", "10000002Q", "Dolor de espalda", ["--type", "MG-PRIMERA"]),  # 30 minutes
    ("MARTIN", CENTER, "10:15", "10000004H", "Control de tensión", []),
    ("MARTIN", CENTER, "10:25", "10000008E", "Urgente: mareo", ["--squeeze"]),  # a sobrecita over 10:15
    ("RUIZ", CENTER, "09:00", "10000003V", "Vacuna 8 años", ["--insurance", "PRIVADO"]),
    ("RUIZ", CENTER, "09:40", "10000005L", "Fiebre", ["--insurance", "PRIVADO"]),
    ("MARTIN", CENTER, "11:00", "10000006C", None, []),
    ("MUNOZ", ROOMS_CENTER, "09:30", "10000007K", "Lumbalgia", ["--type", "FIS-SESION"]),  # a box held
    ("HERRERA", ROOMS_CENTER, "16:00", "10000002Q", "Ecografía abdominal", ["--type", "MG-ECO"]),  # the machine
]
# (days after the day, doctor, time, patient's NIF, reason, more options): the rest of the center's week,
# each skipped where it does not fit (a holiday; MARTIN is at NORTE on Thursdays)
WEEK = [
    (1, "RUIZ", "10:00", "10000005L", "Revisión", ["--insurance", "PRIVADO"]),
    (1, "MARTIN", "09:15", "10000009T", "Analítica", []),
    (2, "RUIZ", "09:20", "10000003V", "Tos", ["--insurance", "PRIVADO"]),
    (2, "MARTIN", "12:30", "10000004H", "Resultados", ["--type", "MG-PRIMERA"]),
]
# her visit two weeks on, on the waiting list to bring forward to a morning of the day or the next
LATER = ("MARTIN", 14, "12:00", "10000006C")
# Booked on the clinic's page with RUIZ, the first day after the day that takes them: (time, name, surname, NIF,
# e-mail, confirmed): a new patient who has not yet confirmed by the mail, and Sara's NIF typed with another
# address, confirmed, so waiting for reception ("por verificar")
WEB = (("11:00", "Nuria", "Campos Gil", "10000010R", "nuria.campos@example.es", False),
       ("12:00", "Sara", "Benítez", "10000009T", "s.benitez@example.es", True))
KEYBOARD_SEARCH = "benitez"  # Sara Benítez Lozano, found on the booking page
DRAGGED = ("Marta", "10:15")  # her first visit at 09:30, dragged onto Elena's 10:15 with MARTIN: refused
SIZES = ((1280, 800), (768, 1024))
# (file name, page and its query, what shows it is drawn); {day} is the day's DD/MM/YYYY
VIEWS = (("day", f"/desk/day?date={{day}}&centerId={CENTER}", ".timeline .card"),
         ("week", f"/desk/week?date={{day}}&centerId={CENTER}", ".week-grid .card"),
         ("doctor-week", "/desk/week?date={day}&doctorId=MARTIN", ".timeline .card"),
         ("month", f"/desk/month?month={{month}}&centerId={CENTER}&typeId=MG-PRIMERA", "table.month .bar"),
         ("rooms", f"/desk/rooms?date={{day}}&centerId={ROOMS_CENTER}", "section.resource table"),
         ("waiting", f"/desk/waiting?date={{day}}&centerId={CENTER}", "section.room"),
         ("waitlist", "/desk/waitlist", "h1"),
         ("verify", "/desk/verify", "main form"),
         ("report", "/desk/report", "section.chart img"),
         ("appointment", "/desk/appointments/1", "dl"),
         ("patient", "/desk/patients/1", "dl"),
         ("patient-new", "/desk/patients/new", "form.grid"))


def agenda(db, *args, stdin=None, check=True):
    """One `agenda` command on this checkout's agenda.py; its output."""
    done = subprocess.run([sys.executable, str(ROOT / "agenda.py"), *args, "--db", str(db)], check=False,
                          input=stdin, capture_output=True, text=True, timeout=60, cwd=ROOT)
    if check and done.returncode != 0:
        raise SystemExit(f"agenda {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done


def first_day(db):
    """Book FIRST on the first Monday or Wednesday the clinic is open, from today before 08:30 (the clinic's
    time: all its visits still ahead) else from tomorrow, and confirm it; that day."""
    now = dt.datetime.now(CLINIC_TZ)
    day = now.date() + dt.timedelta(days=0 if now.time() < dt.time(8, 30) else 1)
    doctor, start, nif, reason = FIRST
    for _ in range(21):
        if day.weekday() in WEEKDAYS:
            first = agenda(db, "book", "--doctor", doctor, "--date", f"{day:%d/%m/%Y}", "--time", start,
                           "--nif", nif, "--center", CENTER, "--reason", reason, check=False)
            if first.returncode == 0:
                agenda(db, "confirm", booked_id(first))
                return day
        day += dt.timedelta(days=1)
    raise SystemExit("no open Monday or Wednesday in the next three weeks")


def booked_id(done):
    """The appointment's id in `agenda book`'s answer ("Booked 12: ..." or "Reservada 12: ...")."""
    return done.stdout.split()[1].rstrip(":")


def book_a_day(db):
    """FIRST and BOOKINGS on first_day(), WEEK after it, and LATER on the waiting list to bring forward;
    that day."""
    day = first_day(db)
    for doctor, center, start, nif, reason, more in BOOKINGS:
        agenda(db, "book", "--doctor", doctor, "--date", f"{day:%d/%m/%Y}", "--time", start, "--nif", nif,
               "--center", center, *(["--reason", reason] if reason else []), *more)
    for days, doctor, start, nif, reason, more in WEEK:
        agenda(db, "book", "--doctor", doctor, "--date", f"{day + dt.timedelta(days=days):%d/%m/%Y}", "--time",
               start, "--nif", nif, "--center", CENTER, "--reason", reason, *more, check=False)
    doctor, days, start, nif = LATER
    later = day + dt.timedelta(days=days)
    booked = agenda(db, "book", "--doctor", doctor, "--date", f"{later:%d/%m/%Y}", "--time", start, "--nif", nif,
                    "--center", CENTER, "--reason", "Resultados")
    agenda(db, "waitlist", "add", "--nif", nif, "--brings-forward", booked_id(booked), "--from", f"{day:%d/%m/%Y}",
           "--to", f"{day + dt.timedelta(days=1):%d/%m/%Y}", "--times", "10:00-11:00",
           "--center", CENTER, "--note", "Prefiere por la mañana")
    return day


def book_on_the_web(db, day):
    """WEB, as the clinic's page books them (its rules, in this process, the page on), on the first day after
    `day` that takes both; the confirmed one's link confirmed as its patient would."""
    import agenda
    from _agenda.domain.web_booking import WebAsk, confirm_booking, request_booking
    from _agenda.domain.web_requests import new_token
    from _agenda.values.refusals import ClinicError

    app = agenda.create_app(db, secrets.token_hex(32), web_booking="on", web_privacy="Clínica Sol SL.",
                            public_url="https://citas.clinicasol.es", web_notice_hours=0)
    try:
        for days in range(1, 8):
            try:
                for start, name, surname, nif, email, confirmed in WEB:
                    ask = WebAsk(CENTER, "PED", "RUIZ", None, f"{day + dt.timedelta(days=days)}", start, name,
                                 surname, "2012-04-12", nif, False, "611222333", email, "PRIVADO", "es")
                    request_booking(app.clinic, ask, "203.0.113.7")
                    if confirmed:
                        with app.clinic.db.transaction() as conn:
                            visit = conn.execute("SELECT max(id) FROM appointments WHERE pending = 'email'")
                            token = new_token(conn, visit.fetchone()[0])
                        confirm_booking(app.clinic, token)
                return
            except ClinicError as error:  # a day the page does not offer: the next
                if error.code not in ("SLOT_NOT_AVAILABLE", "INVALID_REQUEST"):
                    raise
        raise SystemExit("no day in the week after the day takes the page's bookings")
    finally:
        app.clinic.db.close()


class Server:
    """`agenda run --port 0` as a child process; its URL from the log, stopped by its pid."""

    def __init__(self, db):
        env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
        env.update(AGENDA_SECRET=secrets.token_hex(32), PYTHONUNBUFFERED="1")
        self.lines = []
        self.process = subprocess.Popen([sys.executable, str(ROOT / "agenda.py"), "run", "--db", str(db),
                                         "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, env=env, cwd=ROOT)
        threading.Thread(target=lambda: self.lines.extend(self.process.stdout), daemon=True).start()
        deadline, self.url = time.monotonic() + 20, None
        while self.url is None and time.monotonic() < deadline and self.process.poll() is None:
            found = [re.search(r"listening on (http://127\.0\.0\.1:\d+)", line) for line in list(self.lines)]
            self.url = next((match[1] for match in found if match), None)
            time.sleep(0.05)
        if self.url is None:
            self.stop()
            raise SystemExit("agenda run did not start:\n" + "".join(self.lines))

    def stop(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def start_chromium(lang, profile):
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", "--hide-scrollbars", "--window-size=1280,1024", f"--lang={lang}",
                     f"--user-data-dir={profile}"):
        options.add_argument(argument)
    options.add_experimental_option("prefs", {"intl.accept_languages": lang})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(WAIT)
    return driver


class Desk:
    """The desk in headless Chromium, logged in as STAFF; pages opened at a size and saved as PNGs."""

    def __init__(self, url, folder, lang, profile):
        from selenium.webdriver.common.by import By

        self.url, self.folder, self.written = url, folder, []
        self.driver = start_chromium(lang, profile)
        try:
            self.driver.get(url + "/desk/login")
            self.driver.find_element(By.NAME, "name").send_keys(STAFF)
            self.driver.find_element(By.NAME, "password").send_keys(PASSWORD)
            self.driver.find_element(By.CSS_SELECTOR, "form[action='/desk/login'] button[type=submit]").click()
            self.until(lambda d: d.find_elements(By.TAG_NAME, "header"), "the desk after logging in")
        except BaseException:
            self.driver.quit()
            raise

    def until(self, seen, what):
        """Wait for seen(driver) to be true, else stop saying what was awaited and what the page shows."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        try:
            return WebDriverWait(self.driver, WAIT).until(seen)
        except TimeoutException:
            text = self.driver.execute_script("return document.body ? document.body.innerText : ''")
            raise SystemExit(f"no {what} on {self.driver.current_url}:\n{text}") from None

    def size(self, width, height):
        # the page's viewport, not the window around it, is width x height
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def open(self, path, drawn):
        from selenium.webdriver.common.by import By

        self.driver.get(self.url + path)
        self.until(lambda d: d.find_elements(By.CSS_SELECTOR, drawn), drawn)

    def press(self, key, leaves=False):
        """One key sent to whatever has the focus (as tests/test_desk_keyboard.py does); with leaves, waited
        for until the page it loads has replaced this one."""
        from selenium.webdriver.common.action_chains import ActionChains

        if leaves:
            self.driver.execute_script("window.deskPageBefore = true")  # gone with this document
        ActionChains(self.driver).send_keys(key).perform()
        if leaves:
            self.left()

    def left(self):
        """Wait until the page marked with window.deskPageBefore has been replaced by the next one."""
        self.until(lambda d: d.execute_script(
            "return window.deskPageBefore !== true && document.readyState === 'complete'"), "next page")

    def focused(self, script, what):
        """Wait until `script` (JavaScript over `e`, the focused element) is true."""
        self.until(lambda d: d.execute_script(f"var e = document.activeElement; return !!e && ({script})"), what)

    def save(self, name, width, height):
        output = self.folder / f"desk-{name}-{width}x{height}.png"
        if not self.driver.save_screenshot(str(output)):
            raise SystemExit(f"chromium could not write {output}")
        self.written.append(output)


def mark_arrived(desk, day):
    """On today's day view, FIRST's patient marked arrived (the desk offers it from 2 hours before)."""
    from selenium.webdriver.common.by import By

    desk.open(f"/desk/day?date={day:%d/%m/%Y}&centerId={CENTER}", ".timeline .card")
    name = next(" ".join(row.split(",")[:2]) for row in PATIENTS.splitlines() if FIRST[2] in row)
    arrive = desk.driver.find_elements(By.XPATH, f"//article[contains(@class, 'card')][.//a[contains(., '{name}')]]"
                                                 "//button[@name='mark'][@value='arrived']")
    if arrive:
        desk.driver.execute_script("window.deskPageBefore = true; arguments[0].click()", arrive[0])
        desk.left()


def keyboard_path(desk, day, width, height):
    """The day with `↓` on its next free slot; Enter; the booking page after a search, on "Reservar"."""
    from selenium.webdriver.common.keys import Keys

    desk.open(f"/desk/day?date={day:%d/%m/%Y}&centerId={CENTER}", ".timeline .card")
    desk.focused("e.id === 'q'", "focus in the day's search")
    desk.press(Keys.ARROW_DOWN)
    desk.focused("e.classList.contains('free')", "free slot focused by ↓")
    desk.save("keyboard-day", width, height)
    desk.press(Keys.ENTER, leaves=True)
    desk.focused("e.id === 'q' && location.pathname === '/desk/book'", "focus in the booking page's search")
    desk.press(KEYBOARD_SEARCH)  # a search's characters
    desk.press(Keys.ENTER, leaves=True)
    desk.focused("e.tagName === 'BUTTON' && e.closest('form')", "found patient's button focused")
    desk.save("keyboard-book", width, height)


# How far down a card's centre goes for a drop at a time: a minute is a row of the grid, a tick spans 15 of them.
DROP_AT = r"""
const [card, time] = arguments, grid = card.closest('.timeline'), tick = grid.querySelector('.tick').getBoundingClientRect();
const from = Number(grid.dataset.first) + Number(/(?:^|\s)r(\d+)(?:\s|$)/.exec(card.className)[1]) - 2;
return Math.round((Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5)) - from) * tick.height / 15);
"""


def drag_path(desk, day, width, height):
    """The day with a 30-minute card dragged onto the time of the visit after it (its outline, and the line under
    the timeline saying where), then dropped there: refused, in the desk's words at the card."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    desk.open(f"/desk/day?date={day:%d/%m/%Y}&centerId={CENTER}", ".timeline .stretch")  # drag.js has run
    card = desk.driver.find_element(By.XPATH, f"//article[contains(@class, 'card')][.//a[contains(., '{DRAGGED[0]}')]]")
    down = desk.driver.execute_script(DROP_AT, card, DRAGGED[1])
    ActionChains(desk.driver, duration=100).click_and_hold(card).move_by_offset(0, down // 2).move_by_offset(
        0, down - down // 2).perform()
    desk.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".drag-ghost"), "the dragged card's outline")
    desk.save("drag", width, height)
    ActionChains(desk.driver).release().perform()
    desk.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".drag-refusal"), "the refusal at the card")
    desk.save("drag-refused", width, height)


def screenshots(url, day, folder, lang, profile):
    """Log in, then save VIEWS and the keyboard's path at each of SIZES into `folder`; the files."""
    folder.mkdir(parents=True, exist_ok=True)
    desk = Desk(url, folder, lang, profile)
    try:
        if day == dt.datetime.now(CLINIC_TZ).date():
            mark_arrived(desk, day)
        for name, path, drawn in VIEWS:
            for width, height in SIZES:
                desk.size(width, height)
                desk.open(path.format(day=f"{day:%d/%m/%Y}", month=f"{day + dt.timedelta(days=7):%m/%Y}"), drawn)
                desk.save(name, width, height)
        for width, height in SIZES:
            desk.size(width, height)
            keyboard_path(desk, day, width, height)
            drag_path(desk, day, width, height)
        return desk.written
    finally:
        desk.driver.quit()


def screenshot_options(description, pages):
    """A screenshot tool's options (-o, --lang for `pages`), once Chromium and its driver are found."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "docs" / "screenshots",
                        help="the folder for the PNGs (default: docs/screenshots)")
    parser.add_argument("--lang", choices=("es", "en"), default="es", help=f"{pages}' language (default: es)")
    args = parser.parse_args()
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: apt-get install chromium chromium-driver")
    return args


def main():
    args = screenshot_options(__doc__.split("\n\n")[0], "the desk")
    with tempfile.TemporaryDirectory(prefix="agenda-screenshot-") as folder:
        db = Path(folder) / "clinic.db"
        agenda(db, "seed", "--demo")
        agenda(db, "staff", "add", STAFF, "--role", "admin", stdin=PASSWORD + "\n")  # the report is an admin's
        (Path(folder) / "patients.csv").write_text(PATIENTS, encoding="utf-8")
        agenda(db, "import-patients", str(Path(folder) / "patients.csv"))
        day = book_a_day(db)
        book_on_the_web(db, day)
        server = Server(db)
        try:
            written = screenshots(server.url, day, args.output.resolve(), args.lang, Path(folder) / "profile")
        finally:
            server.stop()
    for path in written:
        print(f"Wrote {path} ({day:%d/%m/%Y} at {CENTER}, rooms at {ROOMS_CENTER})")


if __name__ == "__main__":
    main()
