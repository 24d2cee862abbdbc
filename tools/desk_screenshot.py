"""Screenshots of the staff desk's day and week views, for the docs (docs/screenshots/).

Builds the demo clinic in a temporary folder (`agenda seed --demo`), adds a staff account,
imports a few fictional patients and books them with the CLI (`agenda book`), confirms one,
serves it with `agenda run` on 127.0.0.1 (any free port), logs in with headless Chromium
and saves the day view of a weekday with appointments, that week's view of its center and of
one doctor, the waiting list and the admin's report, each at 1280x800 (a reception screen) and
768x1024 (a tablet). Everything it starts is
bounded in time and stopped by its pid.

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

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WAIT = 10  # seconds, for every page and element
STAFF, PASSWORD = "ana", "demo desk password"
CENTER = "CENTRO"  # the demo clinic's: MARTIN (15 min) mon-wed and RUIZ (20 min) mon-fri work there

# Fictional patients (valid DNI letters, Spanish mobiles): name,surname,birthDate,nif,phone
PATIENTS = """\
name,surname,birthDate,nif,phone
Lucas,Gómez Serrano,14/03/1985,10000001S,612345601
Marta,Iglesias Ramos,02/11/1979,10000002Q,612345602
Pablo,Ortega Lin,23/07/2016,10000003V,612345603
Elena,Vidal Castro,09/01/1962,10000004H,612345604
Hugo,Navarro Sanz,30/05/2019,10000005L,612345605
Irene,Molina Fuentes,17/08/1991,10000006C,612345606
"""
# (doctor, time, patient's NIF, reason); the first one is confirmed. RUIZ takes a list of
# insurances, so the desk's twin asks for one (PRIVADO, the catalog's private patient).
BOOKINGS = [
    ("MARTIN", "09:00", "10000001S", "Revisión analítica"),
    ("MARTIN", "09:30", "10000002Q", "Dolor de espalda"),
    ("MARTIN", "10:15", "10000004H", "Control de tensión"),
    ("RUIZ", "09:00", "10000003V", "Vacuna 8 años"),
    ("RUIZ", "09:40", "10000005L", "Fiebre"),
    ("MARTIN", "11:00", "10000006C", None),
]
SIZES = ((1280, 800), (768, 1024))
# (file name, page, what shows it is drawn): the center's day, its week, one doctor's week
VIEWS = (("day", "/desk/day", ".card"), ("week", "/desk/week", ".week-grid .card"),
         ("doctor-week", "/desk/week", ".card"), ("waitlist", "/desk/waitlist", "h1"),
         ("report", "/desk/report", "section.chart img"))


def insurance(doctor):
    return ["--insurance", "PRIVADO"] if doctor == "RUIZ" else []


def agenda(db, *args, stdin=None, check=True):
    """One `agenda` command on this checkout's agenda.py; its output."""
    done = subprocess.run([sys.executable, str(ROOT / "agenda.py"), *args, "--db", str(db)], check=False,
                          input=stdin, capture_output=True, text=True, timeout=60, cwd=ROOT)
    if check and done.returncode != 0:
        raise SystemExit(f"agenda {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done


def book_a_day(db):
    """Book BOOKINGS on the first Monday-Wednesday from tomorrow the clinic is open; that day."""
    day = dt.date.today() + dt.timedelta(days=1)
    for _ in range(21):
        if day.weekday() <= 2:
            doctor, start, nif, reason = BOOKINGS[0]
            first = agenda(db, "book", "--doctor", doctor, "--date", f"{day:%d/%m/%Y}", "--time", start,
                           "--nif", nif, "--center", CENTER, "--reason", reason, *insurance(doctor), check=False)
            if first.returncode == 0:
                break
        day += dt.timedelta(days=1)
    else:
        raise SystemExit("no open Monday-Wednesday in the next three weeks")
    appointment_id = first.stdout.split()[1].rstrip(":")
    agenda(db, "confirm", appointment_id)
    for doctor, start, nif, reason in BOOKINGS[1:]:
        agenda(db, "book", "--doctor", doctor, "--date", f"{day:%d/%m/%Y}", "--time", start, "--nif", nif,
               "--center", CENTER, *(["--reason", reason] if reason else []), *insurance(doctor))
    return day


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


def screenshots(url, day, folder, lang, profile):
    """Log in, then save the day and week views at each of SIZES into `folder`; the files."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    driver = start_chromium(lang, profile)
    written = []
    try:
        driver.get(url + "/desk/login")
        driver.find_element(By.NAME, "name").send_keys(STAFF)
        driver.find_element(By.NAME, "password").send_keys(PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "form[action='/desk/login'] button[type=submit]").click()
        WebDriverWait(driver, WAIT).until(seen.presence_of_element_located((By.TAG_NAME, "header")))
        folder.mkdir(parents=True, exist_ok=True)
        for name, path, drawn in VIEWS:
            for width, height in SIZES:
                # the page's viewport, not the window around it, is width x height
                driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                       {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
                driver.get(f"{url}{path}?date={day:%d/%m/%Y}&{'doctorId=MARTIN' if 'doctor' in name else 'centerId=' + CENTER}")
                try:
                    WebDriverWait(driver, WAIT).until(seen.presence_of_element_located((By.CSS_SELECTOR, drawn)))
                except TimeoutException:
                    text = driver.find_element(By.TAG_NAME, "body").text
                    raise SystemExit(f"nothing drawn on {path}:\n{text}") from None
                output = folder / f"desk-{name}-{width}x{height}.png"
                if not driver.save_screenshot(str(output)):
                    raise SystemExit(f"chromium could not write {output}")
                written.append(output)
        return written
    finally:
        driver.quit()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "docs" / "screenshots",
                        help="the folder for the PNGs (default: docs/screenshots)")
    parser.add_argument("--lang", choices=("es", "en"), default="es", help="the desk's language (default: es)")
    args = parser.parse_args()
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: apt-get install chromium chromium-driver")
    with tempfile.TemporaryDirectory(prefix="agenda-screenshot-") as folder:
        db = Path(folder) / "clinic.db"
        agenda(db, "seed", "--demo")
        agenda(db, "staff", "add", STAFF, "--role", "admin", stdin=PASSWORD + "\n")  # the report is an admin's
        (Path(folder) / "patients.csv").write_text(PATIENTS, encoding="utf-8")
        agenda(db, "import-patients", str(Path(folder) / "patients.csv"))
        day = book_a_day(db)
        server = Server(db)
        try:
            written = screenshots(server.url, day, args.output.resolve(), args.lang, Path(folder) / "profile")
        finally:
            server.stop()
    for path in written:
        print(f"Wrote {path} ({day:%d/%m/%Y} at {CENTER})")


if __name__ == "__main__":
    main()
