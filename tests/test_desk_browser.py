"""The staff desk in a real browser: headless Chromium driven by selenium against a real
`agenda run`, acting as a receptionist would (clicking links and buttons, typing in
fields). The same flows through webtest, with every field and text: test_desk.py.

Skipped, with the reason, where selenium, chromium or chromedriver is missing
(CI sets AGENDA_NO_SKIP=1, which turns that skip into a failure)."""

import base64
import os
import re
import sqlite3

import pytest
from click.testing import CliRunner
from webtest.http import StopableWSGIServer

import agenda
from conftest import CLINIC_CSV, days_ahead, send

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    webdriver = None
_missing = [what for what, there in (("selenium (pip install selenium)", webdriver is not None),
                                     (CHROMIUM, os.access(CHROMIUM, os.X_OK)),
                                     (CHROMEDRIVER, os.access(CHROMEDRIVER, os.X_OK))) if not there]
if _missing:
    pytest.skip(f"a real browser is needed: missing {', '.join(_missing)}", allow_module_level=True)

PASSWORD = "correct horse battery"
WAIT = 10  # seconds: every wait is bounded
# One patient, typed at the desk; none of this may reach the access log.
PATIENT = {"name": "Evarista", "surname": "Quintanilla", "nif": "12345678Z", "phone": "612345678",
           "reason": "Control de tensión"}
PRIVATE = ("Evarista", "Quintanilla", "12345678Z", "12345678z", "612345678", "612 345 678")


def start_chromium(profile):
    """Headless Chromium under chromedriver, with its profile (history, autofill) in `profile`."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", "--window-size=1280,800", "--lang=es-ES", f"--user-data-dir={profile}"):
        options.add_argument(argument)
    options.add_experimental_option("prefs", {"intl.accept_languages": "es-ES,es"})  # the desk's default
    try:
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    except WebDriverException as error:
        raise AssertionError(f"{CHROMIUM} did not start under {CHROMEDRIVER}: {error.msg}") from None
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    ready_renderer(driver)
    return driver


def ready_renderer(driver, tries=12):
    """Wait until a Chromium just started answers: on a busy machine its first renderer may take longer than
    chromedriver's own ten seconds ("Timed out receiving message from renderer"), which is no fault of a page."""
    for attempt in range(tries):
        try:
            driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
            return
        except TimeoutException:
            if attempt == tries - 1:
                raise


def add_staff(db_path, name="ana"):
    """`agenda staff add NAME` typed at the command line (in this process: no interpreter to start)."""
    added = CliRunner().invoke(agenda.cli, ["staff", "add", name, "--db", str(db_path)], input=PASSWORD + "\n")
    assert added.exit_code == 0, added.output


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield driver
    finally:
        driver.quit()


class Desk:
    """One receptionist at the browser, on one running server."""

    def __init__(self, driver, server, db_path, url=None):
        self.driver, self.server, self.url, self.db_path = driver, server, url or server.url, db_path

    # looking and waiting

    def find(self, by, what):
        try:
            return WebDriverWait(self.driver, WAIT).until(seen.presence_of_element_located((by, what)))
        except TimeoutException:
            raise AssertionError(f"no {what} on {self.path()} ({self.status()}):\n{self.text()}") from None

    def text(self):
        return self.driver.find_element(By.TAG_NAME, "body").text

    def status(self):
        """The HTTP status of the page on screen (Navigation Timing's responseStatus)."""
        return self.driver.execute_script("return performance.getEntriesByType('navigation')[0].responseStatus")

    def path(self):
        return self.driver.current_url[len(self.url):]

    def open(self, path):
        self.driver.get(self.url + path)

    def click(self, element):
        """Click what leads to another page, and wait until that page has replaced this one."""
        self.driver.execute_script("window.deskPageBefore = true")  # gone with this document
        element.click()
        WebDriverWait(self.driver, WAIT, ignored_exceptions=(WebDriverException,)).until(
            lambda driver: driver.execute_script(
                "return window.deskPageBefore !== true && document.readyState === 'complete'"))

    def button(self, text, within=None):
        """The button that reads `text` (in `within`, a form, when given)."""
        xpath = f".//button[normalize-space()='{text}']"
        if within is None:
            return self.find(By.XPATH, xpath.lstrip("."))
        return within.find_element(By.XPATH, xpath)

    def type(self, field, value, within=None):
        element = (within or self.driver).find_element(By.NAME, field)
        element.clear()
        element.send_keys(value)

    def flash(self):
        return self.find(By.CSS_SELECTOR, "p.flash").text

    # what a receptionist does

    def log_in(self, name="ana", password=PASSWORD):
        self.open("/desk/login")
        self.type("name", name)
        self.type("password", password)
        self.click(self.button("Entrar"))

    def day(self, date, center="C1"):
        self.open(f"/desk/day?date={date}&centerId={center}")
        return self.find(By.CSS_SELECTOR, ".timeline")

    def free_slot(self, date, time, doctor="MARTIN"):
        """The free block at `time` in `doctor`'s column of the day view."""
        return self.day(date).find_element(By.XPATH, f".//a[contains(@class, 'free') and contains(@href, "
                                                     f"'doctorId={doctor}&') and starts-with(normalize-space(), '{time} ')]")

    def card(self, patient_name):
        """The appointment's card on the time axis on screen."""
        return self.find(By.XPATH, f"//article[contains(@class, 'card')][a[contains(normalize-space(), '{patient_name}')]]")

    def book_free_slot(self, date, time, patient=PATIENT, doctor="MARTIN", doctor_name="Lucía Martín"):
        """From the day view: the free block at `time` in the doctor's column, a new patient, submit."""
        self.click(self.free_slot(date, time, doctor))
        assert "Reservar cita" in self.text() and f"{doctor_name} · {date} · {time}" in self.text()
        form = self.find(By.XPATH, "//h2[normalize-space()='Paciente nuevo']/following-sibling::form[1]")
        for field, value in patient.items():
            if field == "insuranceId":
                Select(form.find_element(By.NAME, field)).select_by_value(value)
            else:
                self.type(field, value, form)
        self.click(self.button("Registrar y reservar", form))

    def open_appointment(self, date, patient_name):
        self.day(date)
        self.click(self.find(By.PARTIAL_LINK_TEXT, patient_name))
        assert self.path().startswith("/desk/appointments/")
        return self.path().rsplit("/", 1)[1]

    def closures(self):
        self.click(self.find(By.XPATH, "//header//a[normalize-space()='Cierres']"))
        return self.find(By.XPATH, "//h2[normalize-space()='Añadir cierre']/following-sibling::form[1]")

    # what the API and the database say

    def day_list(self, date):
        status, answer = send(self.url, "GET", f"/appointments?date={date}")
        assert status == 200, answer
        return answer["data"]

    def free_times(self, date):
        status, answer = send(self.url, "GET", f"/availabilities?doctorId=MARTIN&date={date}")
        assert status == 200, answer
        return [slot["time"] for slot in answer["data"]]

    def rows(self):
        """Every agenda row, but a session's last activity and the service's own notes."""
        conn = sqlite3.connect(self.db_path)
        try:
            tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                     "AND name NOT IN ('service_state', 'desk_sessions')")]
            return {table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in tables}
        finally:
            conn.close()

    def assert_log_keeps_patients_out(self):
        log = self.server.log()
        assert " /desk/" in log  # the flows were logged...
        leaked = [value for value in PRIVATE if value.lower() in log.lower()]
        assert not leaked, f"the access log holds {leaked}:\n{log}"  # ...never a patient's name, NIF or phone


@pytest.fixture
def desk(browser, running, db_path):
    """A fresh server with a staff account 'ana', and the browser with no cookie of any earlier test."""
    add_staff(db_path)
    browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
    browser.delete_all_cookies()
    return Desk(browser, running(), db_path)


def test_booking_a_free_slot_from_the_day_view_for_a_new_patient(desk):
    date = days_ahead(2)
    desk.log_in()
    assert desk.path() == "/desk/day" and desk.status() == 200
    desk.book_free_slot(date, "09:30")
    assert desk.status() == 200 and desk.path().startswith("/desk/day?")
    assert desk.flash() == f"Cita de Evarista Quintanilla reservada el {date} a las 09:30. No se enviará ningún correo: el paciente no tiene correo."
    card = desk.card("Evarista Quintanilla")
    assert card.text.startswith("09:30 Evarista Quintanilla") and "612 34 56 78" in card.text
    assert card.find_element(By.CSS_SELECTOR, ".by").text == "ana"  # who booked it
    listed = desk.day_list(date)
    assert [(a["time"], a["doctorId"], a["patientName"], a["reason"]) for a in listed] == [
        ("09:30", "MARTIN", "Evarista Quintanilla", "Control de tensión")]
    # found again from the day view's search box, by NIF
    desk.type("q", "12345678z", desk.find(By.CSS_SELECTOR, "header form.search"))
    desk.click(desk.button("Buscar"))
    assert desk.path() == "/desk/patients"  # searched by POST: the NIF is in no address and no history
    desk.click(desk.find(By.PARTIAL_LINK_TEXT, "Evarista"))
    assert "12345678Z" in desk.text() and f"{date} 09:30" in desk.text()
    desk.assert_log_keeps_patients_out()


def test_moving_and_cancelling_from_the_appointment_page(desk):
    date = days_ahead(2)
    desk.log_in()
    desk.book_free_slot(date, "09:30")
    appointment_id = desk.open_appointment(date, "Evarista Quintanilla")
    move = desk.find(By.XPATH, f"//form[@action='/desk/appointments/{appointment_id}/move']")
    listed = [option.text.split(" · ")[0] for option in Select(move.find_element(By.NAME, "slot")).options]
    that_day = [text.split()[-1] for text in listed if f" {date} " in text]
    assert that_day == ["09:00", "10:00", "10:30"]  # the free times of that day, not its own; then the days after
    assert len(listed) > 3 and all(" · Centro" in option.text for option in Select(move.find_element(By.NAME, "slot")).options)
    Select(move.find_element(By.NAME, "slot")).select_by_index(listed.index(next(t for t in listed if t.endswith(f"{date} 10:30"))))
    desk.click(desk.button("Mover", move))
    assert desk.flash().startswith("Cita de Evarista") and f"movida al {date} a las 10:30 (Lucía Martín, Centro)." in desk.flash()
    status, moved = send(desk.url, "GET", f"/appointments/{appointment_id}")
    assert status == 200 and (moved["date"], moved["time"]) == (date, "10:30")
    assert "09:30" in desk.free_times(date) and "10:30" not in desk.free_times(date)

    assert desk.open_appointment(date, "Evarista Quintanilla") == appointment_id
    cancel = desk.find(By.XPATH, f"//form[@action='/desk/appointments/{appointment_id}/cancel']")
    desk.type("reason", "llamó para anular", cancel)
    desk.click(desk.button("Anular", cancel))
    assert desk.flash().startswith("Cita de Evarista") and " anulada." in desk.flash()
    assert not desk.driver.find_elements(By.CSS_SELECTOR, ".timeline .card")
    status, answer = send(desk.url, "GET", f"/appointments/{appointment_id}")
    assert status == 410 and answer["error"]["code"] == "APPOINTMENT_PREVIOUSLY_CANCELLED"
    assert desk.day_list(date) == []
    assert "10:30" in desk.free_times(date)
    desk.assert_log_keeps_patients_out()


def add_closure(desk, date):
    """Close Lucía Martín on `date` for a congress, from the closures page."""
    form = desk.closures()
    Select(form.find_element(By.NAME, "doctorId")).select_by_visible_text("Lucía Martín")
    desk.type("dateFrom", date, form)
    desk.type("reason", "Congreso", form)
    desk.click(desk.button("Añadir cierre", form))
    assert desk.flash() == "Cierre guardado."


def test_a_closure_takes_a_doctors_slots_out_of_availability_until_it_is_removed(desk):
    date = days_ahead(3)
    assert desk.free_times(date) == ["09:00", "09:30", "10:00", "10:30"]
    desk.log_in()
    add_closure(desk, date)
    row = desk.find(By.XPATH, "//table//tr[td[normalize-space()='Congreso']]")
    assert "Lucía Martín" in row.text and date in row.text
    assert desk.free_times(date) == []
    assert desk.free_times(days_ahead(4)) == ["09:00", "09:30", "10:00", "10:30"]  # that day only

    desk.closures()
    row = desk.find(By.XPATH, "//table//tr[td[normalize-space()='Congreso']]")
    desk.click(row.find_element(By.LINK_TEXT, "Quitar"))  # asks first, and says what comes back
    assert desk.find(By.TAG_NAME, "h1").text == "¿Quitar el cierre «Congreso»?"
    assert desk.free_times(date) == []  # nothing removed yet
    desk.click(desk.button("Quitar"))
    assert desk.flash() == "Cierre quitado."
    assert not desk.driver.find_elements(By.XPATH, "//table//tr[td[normalize-space()='Congreso']]")
    assert desk.free_times(date) == ["09:00", "09:30", "10:00", "10:30"]


def test_a_closed_day_shows_each_slot_closed_with_its_reason_in_the_day_view(desk):
    date = days_ahead(3)
    desk.log_in()
    add_closure(desk, date)
    desk.open(f"/desk/day?date={date}&centerId=C1")
    assert desk.status() == 200, f"{desk.text()}\n--- the server's log:\n{desk.server.log()[-3000:]}"
    blocks = desk.find(By.CSS_SELECTOR, ".timeline").find_elements(By.CSS_SELECTOR, ".block")
    assert [block.text for block in blocks if "closed" in block.get_attribute("class")] == [
        "09:00 cerrado: Congreso"]  # the doctor's whole morning, drawn as one closed block
    assert not desk.driver.find_elements(By.CSS_SELECTOR, ".timeline a.free")


def test_a_form_sent_without_its_csrf_token_is_refused_and_changes_nothing(desk):
    date = days_ahead(3)
    desk.log_in()
    form = desk.closures()
    before = desk.rows()
    Select(form.find_element(By.NAME, "doctorId")).select_by_visible_text("Lucía Martín")
    desk.type("dateFrom", date, form)
    desk.type("reason", "Congreso", form)
    desk.driver.execute_script("arguments[0].querySelector('input[name=csrf]').remove()", form)
    assert not form.find_elements(By.NAME, "csrf")
    desk.click(desk.button("Añadir cierre", form))
    assert desk.status() == 403
    assert desk.find(By.TAG_NAME, "h1").text == "El formulario ha caducado; vuelve a intentarlo."
    assert desk.rows() == before
    assert desk.free_times(date) == ["09:00", "09:30", "10:00", "10:30"]
    desk.closures()  # still logged in, and no closure listed
    assert not desk.driver.find_elements(By.XPATH, "//table//tr[td[normalize-space()='Congreso']]")


REFUSED = "Nombre o contraseña incorrectos. Tras 5 intentos fallidos el nombre queda bloqueado desde aquí 15 minutos."
LOCKED = re.compile(r"Demasiados intentos fallidos con ese nombre desde aquí: queda bloqueado hasta las \d\d:\d\d\. ")


def test_a_wrong_password_is_refused_and_five_lock_the_name(desk):
    for attempt in range(4):
        desk.log_in(password=f"wrong password {attempt}")
        assert desk.status() == 401 and desk.path() == "/desk/login"
        assert desk.find(By.CSS_SELECTOR, "p.error").text == REFUSED
        assert desk.find(By.NAME, "name").get_attribute("value") == "ana"  # kept as typed
    desk.log_in(password="wrong password 5")
    assert desk.status() == 429 and LOCKED.match(desk.find(By.CSS_SELECTOR, "p.error").text)
    locked = desk.find(By.CSS_SELECTOR, "p.error").text
    desk.log_in()  # the right password, while locked: told so, and until when
    assert desk.status() == 429 and desk.path() == "/desk/login"
    assert desk.find(By.CSS_SELECTOR, "p.error").text == locked
    desk.open("/desk/day")
    assert desk.path() == "/desk/login"


def test_logging_out_from_the_header_ends_the_session(desk):
    desk.log_in()
    assert desk.path() == "/desk/day"
    header = desk.find(By.TAG_NAME, "header")
    assert "ana" in header.text
    desk.click(desk.button("Salir", header))
    assert desk.path() == "/desk/login" and desk.find(By.XPATH, "//button[normalize-space()='Entrar']")
    desk.open(f"/desk/day?date={days_ahead(2)}&centerId=C1")
    assert desk.path() == "/desk/login" and not desk.driver.find_elements(By.TAG_NAME, "header")


def test_a_shared_reception_browser_keeps_no_patient_after_logout(running, db_path, tmp_path):
    """Book a new patient, search them by NIF, log out, close the browser: its history holds no
    NIF and its autofill store none of what was typed about the patient ("Staff desk")."""
    add_staff(db_path)
    profile = tmp_path / "profile"
    driver = start_chromium(profile)
    try:
        desk = Desk(driver, running(), db_path)
        desk.log_in()
        desk.book_free_slot(days_ahead(2), "09:30")
        desk.type("q", "12345678Z", desk.find(By.CSS_SELECTOR, "header form.search"))
        desk.click(desk.button("Buscar"))
        assert "Evarista" in desk.text()
        desk.click(desk.button("Salir", desk.find(By.TAG_NAME, "header")))
        assert desk.path() == "/desk/login"
    finally:
        driver.quit()  # Chromium writes its history and autofill stores as it closes
    stores = {"History": "SELECT url || ' ' || title FROM urls", "Web Data": "SELECT name || ' ' || value FROM autofill"}
    kept = []
    for store, query in stores.items():
        path = profile / "Default" / store
        assert path.exists(), f"Chromium wrote no {store} store: the test would prove nothing"
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            kept += [row[0] for row in conn.execute(query)]
        finally:
            conn.close()
    assert any("/desk/" in line for line in kept)  # the history was written...
    leaked = [line for line in kept for value in (*PRIVATE, "Control de tensi") if value.lower() in line.lower()]
    assert not leaked, leaked  # ...and holds no patient


# The same browser on conftest's test clinic, served by a real waitress on 127.0.0.1 in this process
# on the frozen clock (Monday 23/11/2026 08:00 in Madrid, moved by the test): MARTIN (MG, 30 min)
# at C1 "Centro" mon-fri 09:00-11:00, on holiday 25/11; NUNEZ (MG, 30 min) at C2 "Norte" mon and wed
# 16:00-17:00; RUIZ (PED, 20 min) takes PRIV and SAN.


@pytest.fixture
def clinic_desk(browser, make_api):
    """open(csv=CLINIC_CSV, **settings): (desk, api) on that clinic, staff 'ana', no cookie left."""
    servers = []

    def open_clinic(csv=CLINIC_CSV, **settings):
        api = make_api(csv, **settings)
        api.app.accounts.add_staff("ana", PASSWORD)
        httpd = StopableWSGIServer.create(api.app, host="127.0.0.1", threads=4)
        servers.append(httpd)
        assert httpd.wait(), "the server did not start"
        browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
        browser.delete_all_cookies()
        desk = Desk(browser, None, None, url=httpd.application_url.rstrip("/"))
        desk.log_in()
        return desk, api

    yield open_clinic
    for httpd in servers:
        httpd.shutdown()


def search(desk, text):
    """Search from the page's box (the header's, or the search page's own); the names listed."""
    desk.type("q", text, desk.find(By.CSS_SELECTOR, "form.search"))
    desk.click(desk.button("Buscar", desk.find(By.CSS_SELECTOR, "form.search")))
    return [link.text for link in desk.driver.find_elements(By.CSS_SELECTOR, "ul.found a")]


def test_search_finds_patients_as_reception_types_them(clinic_desk):
    desk, api = clinic_desk()
    for nif, name, surname, phone in (("10000001S", "María", "Gómez Ruiz", "612345601"),
                                      ("10000002Q", "José", "Gomez Alba", "612345602"),
                                      ("10000003V", "Lucía", "GÓMEZ PEÑA", "612345603"),
                                      ("10000004H", "Íñigo", "Ibáñez Núñez", "612345604"),
                                      ("10000005L", "Ana", "Güell Pons", "612345605")):
        api.new_patient(nif=nif, name=name, surname=surname, phone=phone)
    assert desk.driver.execute_script("return document.activeElement.id") == "q"  # focus starts in search
    assert sorted(search(desk, "gomez")) == ["José Gomez Alba", "Lucía GÓMEZ PEÑA", "María Gómez Ruiz"]
    assert sorted(search(desk, "GÓMEZ")) == ["José Gomez Alba", "Lucía GÓMEZ PEÑA", "María Gómez Ruiz"]
    assert search(desk, "lucia gomez") == ["Lucía GÓMEZ PEÑA"]
    assert search(desk, "pena lucía") == ["Lucía GÓMEZ PEÑA"]  # surnames and name in any order
    assert search(desk, "ibanez") == search(desk, "NUÑEZ") == search(desk, "iñi") == ["Íñigo Ibáñez Núñez"]
    assert search(desk, "guell") == ["Ana Güell Pons"]
    assert search(desk, "10000004-h") == search(desk, "612 34 56 04") == ["Íñigo Ibáñez Núñez"]
    assert search(desk, "+34 612-345-605") == ["Ana Güell Pons"]
    assert search(desk, "zarzuela") == [] and "Ningún paciente encontrado." in desk.text()


def test_a_walk_in_now_and_a_follow_up_in_six_months(clinic_desk, clock):
    desk, api = clinic_desk()
    clock.set(2026, 11, 23, 9, 10)
    desk.log_in()  # an hour idle: the session has ended
    desk.day("23/11/2026")
    assert desk.find(By.ID, "now").text == "09:10 ahora"
    martin = "contains(@href, 'doctorId=MARTIN&')"
    assert desk.driver.find_elements(By.XPATH, f"//a[contains(@class, 'free') and {martin} and "
                                               "starts-with(normalize-space(), '09:00 ')]")  # under way: until 09:30
    desk.book_free_slot("23/11/2026", "09:30")  # in twenty minutes: a walk-in, which the caller could not book
    assert desk.flash() == "Cita de Evarista Quintanilla reservada el 23/11/2026 a las 09:30. No se enviará ningún correo: el paciente no tiene correo."
    desk.click(desk.free_slot("24/05/2027", "10:00"))  # a check-up in six months, past the caller's 90 days
    form = desk.find(By.CSS_SELECTOR, "form[action='/desk/book/search']")
    desk.type("q", "quintanilla", form)
    desk.click(desk.button("Buscar", form))
    desk.click(desk.button("Reservar"))
    assert desk.flash() == "Cita de Evarista Quintanilla reservada el 24/05/2027 a las 10:00. No se enviará ningún correo: el paciente no tiene correo."
    listed = api.get("/appointments?nif=12345678Z").json["data"]
    assert sorted((a["date"], a["time"]) for a in listed) == [("23/11/2026", "09:30"), ("24/05/2027", "10:00")]
    assert api.get("/availabilities?doctorId=MARTIN&date=24/05/2027").json["data"] == []  # the caller's horizon


def test_arrival_and_no_show_at_the_counter(clinic_desk, clock):
    desk, api = clinic_desk()
    first = api.book(api.new_patient(), date="23/11/2026", time="09:30")
    second = api.book(api.new_patient(nif="10000001S", name="Pablo", surname="Ortega"), date="23/11/2026",
                      time="10:00")
    clock.set(2026, 11, 23, 9, 35)
    desk.log_in()
    desk.day("23/11/2026")
    desk.click(desk.button("Llegó", desk.card("Ana García")))
    assert "● llegó 09:35" in desk.card("Ana García").text
    pablo = [b.text for b in desk.card("Pablo Ortega").find_elements(By.TAG_NAME, "button")]
    assert pablo == ["Llegó"]  # his visit is at 10:00: a no-show only from then
    clock.set(2026, 11, 23, 10, 2)
    desk.day("23/11/2026")
    desk.click(desk.button("No vino", desk.card("Pablo Ortega")))
    assert "✗ no vino" in desk.card("Pablo Ortega").text
    assert not desk.card("Ana García").find_elements(By.TAG_NAME, "button")  # marked: no quick buttons
    moved = api.put(f"/appointments/{first}", {"newDate": "24/11/2026", "newTime": "09:00"})
    assert moved.status_int == 409 and moved.json["error"]["code"] == "APPOINTMENT_ATTENDED"
    assert api.get(f"/appointments/{first}").json["extraData"]["status"] == "booked"  # the caller's status stays
    desk.click(desk.card("Pablo Ortega").find_element(By.CSS_SELECTOR, "a.who"))
    desk.click(desk.button("Deshacer"))  # a mistake: he was in the waiting room
    desk.day("23/11/2026")
    assert "no vino" not in desk.card("Pablo Ortega").text and second


def test_the_week_of_the_center_and_of_one_doctor(clinic_desk):
    desk, api = clinic_desk()
    api.book(api.new_patient(), date="24/11/2026", time="09:00")
    desk.day("24/11/2026")
    desk.click(desk.find(By.LINK_TEXT, "Semana"))
    tuesday = desk.find(By.XPATH, "(//section[contains(@class, 'week-day')])[2]")
    assert "Lucía Martín\n1 cita · 3 libres" in tuesday.text and "09:00 Ana García\nLucía Martín" in tuesday.text
    desk.click(tuesday.find_element(By.LINK_TEXT, "Lucía Martín"))
    headings = [h.text for h in desk.driver.find_elements(By.CSS_SELECTOR, ".timeline .col-head .name")]
    assert headings == ["lun 23/11", "mar 24/11", "mié 25/11", "jue 26/11", "vie 27/11",
                        "sáb 28/11"]  # she works Saturdays at Norte; no Sunday
    assert desk.card("Ana García").text.startswith("09:00 Ana García")
    desk.click(desk.find(By.ID, "following"))
    assert "30/11/2026" in desk.find(By.CSS_SELECTOR, "nav.days strong").text


def test_a_move_to_another_doctor_of_the_speciality_at_another_center(clinic_desk):
    desk, api = clinic_desk()
    appointment_id = api.book(api.new_patient(), date="24/11/2026", time="09:00")
    desk.open(f"/desk/appointments/{appointment_id}")
    look = desk.find(By.CSS_SELECTOR, "form[method='get']")
    Select(look.find_element(By.NAME, "doctorId")).select_by_visible_text("Carmen Núñez")
    desk.type("date", "01/01/2029", look)
    desk.click(desk.button("Buscar huecos", look))
    assert desk.find(By.CSS_SELECTOR, "p.warning").text.startswith("Carmen Núñez no tiene huecos libres del 01/01/2029")
    look = desk.find(By.CSS_SELECTOR, "form[method='get']")
    desk.type("date", "24/11/2026", look)
    desk.click(desk.button("Buscar huecos", look))
    move = desk.find(By.XPATH, f"//form[@action='/desk/appointments/{appointment_id}/move']")
    options = Select(move.find_element(By.NAME, "slot")).options
    assert options[0].text == "mié 25/11/2026 16:00 · Norte · Carmen Núñez"
    desk.click(desk.button("Mover", move))
    moved = api.get(f"/appointments/{appointment_id}").json
    assert (moved["doctorId"], moved["centerRef"], moved["date"], moved["time"]) == ("NUNEZ", "C2", "25/11/2026",
                                                                                   "16:00")


def test_a_phone_corrected_on_the_patients_page_is_what_the_caller_reads(clinic_desk):
    desk, api = clinic_desk()
    api.new_patient()
    search(desk, "12345678Z")
    desk.click(desk.find(By.PARTIAL_LINK_TEXT, "Ana García"))
    desk.find(By.TAG_NAME, "summary").click()
    edit = desk.find(By.CSS_SELECTOR, "form.grid")
    desk.type("phone", "699 888 777", edit)
    desk.click(desk.button("Guardar", edit))
    assert desk.flash() == "Datos de Ana García guardados."
    assert "699 88 87 77" in desk.text()
    assert api.get("/patients?nif=12345678Z").json["phone"].endswith("699888777")
    api.new_patient(nif="10000001S", name="Pablo", surname="Ortega")
    desk.find(By.TAG_NAME, "summary").click()
    edit = desk.find(By.CSS_SELECTOR, "form.grid")
    desk.type("nif", "10000001-s", edit)  # another patient's NIF: refused in Spanish, what was typed kept
    desk.click(desk.button("Guardar", edit))
    assert desk.status() == 409 and desk.find(By.CSS_SELECTOR, "p.error").text == "Ya hay un paciente con ese NIF."
    assert desk.find(By.NAME, "nif").get_attribute("value") == "10000001-s"
    assert api.get("/patients?nif=12345678Z").json["name"] == "Ana"


def test_appointments_inside_a_new_closure_are_listed_to_call_until_moved(clinic_desk):
    desk, api = clinic_desk()
    appointment_id = api.book(api.new_patient(), date="24/11/2026", time="09:30")
    form = desk.closures()
    Select(form.find_element(By.NAME, "doctorId")).select_by_visible_text("Lucía Martín")
    desk.type("dateFrom", "24/11/2026", form)
    desk.type("reason", "Congreso", form)
    desk.click(desk.button("Añadir cierre", form))
    assert "Ana García" in desk.text()  # what it covers, before it is saved
    desk.click(desk.button("Guardar el cierre"))
    assert desk.flash() == "Cierre guardado."
    desk.click(desk.find(By.XPATH, "//header//a[normalize-space()='Llamar']"))
    row = desk.find(By.XPATH, "//table//tr[td[normalize-space()='Ana García']]")
    assert "24/11/2026 09:30" in row.text and "612 34 56 78" in row.text
    desk.day("24/11/2026")
    assert "☎ llamar" in desk.card("Ana García").text
    assert api.get("/appointments?date=24/11/2026").json["data"] == []  # the reminder agent never calls it
    desk.click(desk.card("Ana García").find_element(By.CSS_SELECTOR, "a.who"))
    desk.click(desk.button("Mover"))  # the first free slot listed: Thursday
    desk.click(desk.find(By.XPATH, "//header//a[normalize-space()='Llamar']"))
    assert not desk.driver.find_elements(By.XPATH, "//table//tr[td[normalize-space()='Ana García']]")
    assert api.get(f"/appointments/{appointment_id}").json["date"] == "26/11/2026"


def test_keys_move_the_day_and_find_the_search(clinic_desk):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    desk, _ = clinic_desk()
    desk.day("24/11/2026")
    body = desk.driver.find_element(By.TAG_NAME, "body")
    desk.driver.execute_script("window.deskPageBefore = true")
    desk.driver.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)  # focus in the empty search: the day moves
    WebDriverWait(desk.driver, WAIT).until(lambda driver: "date=25%2F11%2F2026" in driver.current_url
                                           or "date=25/11/2026" in driver.current_url)
    desk.find(By.NAME, "date").click()
    desk.driver.switch_to.active_element.send_keys("/")  # typed in a field: stays a character
    assert desk.driver.execute_script("return document.activeElement.name") == "date"
    desk.driver.execute_script("document.activeElement.blur()")  # nothing focused: "/" finds the search
    ActionChains(desk.driver).send_keys("/").perform()
    assert desk.driver.execute_script("return document.activeElement.id") == "q" and body


PRINT_CSV = CLINIC_CSV.replace("doctor,MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-11:00,30,,",
                               "doctor,MARTIN,Lucía Martín,MG,C1,,mon-fri,09:00-14:00;16:00-19:00,15,,")


def test_the_printed_day_has_a_page_a_doctor_with_its_heading_and_no_links(clinic_desk):
    desk, api = clinic_desk(PRINT_CSV, clinic_name="Clínica Sol")
    times = [f"{hour:02d}:{minute:02d}" for hour in (9, 10, 11, 12, 13, 16, 17, 18) for minute in (0, 15, 30, 45)]
    for n, time in enumerate(times[:28]):  # a full day of one doctor
        api.book(api.new_patient(nif=f"{20000000 + n:08d}" + "TRWAGMYFPDXBNJZSQVHLCKE"[(20000000 + n) % 23],
                                 name=f"Paciente{n}", surname="Prueba Larga De Apellidos"),
                 date="24/11/2026", time=time)
    api.book(api.new_patient(), date="24/11/2026", time="09:20", doctor="RUIZ", insuranceId="PRIV")
    desk.day("24/11/2026")
    pdf = desk.driver.execute_cdp_cmd("Page.printToPDF", {"paperWidth": 8.27, "paperHeight": 11.69,
                                                          "preferCSSPageSize": True})
    pages = len(re.findall(rb"/Type\s*/Page[^s]", base64.b64decode(pdf["data"])))
    assert pages == 2  # one A4 page a doctor
    desk.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        printed = desk.text()
        headings = [th.text for th in desk.driver.find_elements(By.CSS_SELECTOR, "table.print-day thead tr:first-child th")]
        visible_links = [a for a in desk.driver.find_elements(By.TAG_NAME, "a") if a.is_displayed()]
    finally:
        desk.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    assert headings == ["Clínica Sol · Centro · mar 24/11/2026 · Javier Ruiz (PED)",
                        "Clínica Sol · Centro · mar 24/11/2026 · Lucía Martín (MG)"]
    assert not visible_links and "libre" not in printed and "Salir" not in printed
    assert "09:00–09:15 Paciente0 Prueba Larga De Apellidos 612 34 56 78" in printed


def test_a_six_week_series_with_a_closed_date_books_the_nearest_free_slot(clinic_desk):
    desk, api = clinic_desk()
    api.new_patient()
    desk.click(desk.free_slot("24/11/2026", "09:00"))
    form = desk.find(By.CSS_SELECTOR, "form[action='/desk/book/search']")
    desk.type("q", "12345678Z", form)
    desk.click(desk.button("Buscar", form))
    desk.click(desk.button("Serie de sesiones…"))
    rows = [row.text for row in desk.driver.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert len(rows) == 6 and rows[0] == "1/6 mar 24/11/2026 09:00 libre"
    assert rows[2] == "3/6 mar 08/12/2026 Ese hueco está cerrado. → el más cercano: 09/12/2026 09:00"  # the holiday
    desk.click(desk.button("Reservar las 6 sesiones: donde la hora no está libre, el hueco más cercano"))
    assert desk.flash() == "Serie de 6 citas reservada para Ana García."
    listed = api.get("/appointments?nif=12345678Z").json["data"]
    assert [a["date"] for a in listed] == ["24/11/2026", "01/12/2026", "09/12/2026", "15/12/2026", "22/12/2026",
                                           "29/12/2026"]
    assert "serie 1/6" in desk.card("Ana García").text


def test_a_cancel_lights_the_waiting_patient_on_the_freed_slot_and_books_them(clinic_desk):
    desk, api = clinic_desk()
    taken = api.book(api.new_patient(), date="24/11/2026", time="09:30")
    api.new_patient(nif="10000001S", name="Pablo", surname="Ortega")
    desk.click(desk.find(By.XPATH, "//header//a[normalize-space()='Espera']"))
    form = desk.find(By.CSS_SELECTOR, "form[action='/desk/waitlist']")
    for field, value in {"dateFrom": "24/11/2026", "dateTo": "31/12/2026", "note": "quiere antes"}.items():
        desk.type(field, value, form)
    Select(form.find_element(By.NAME, "doctorId")).select_by_visible_text("Lucía Martín")
    desk.type("q", "pablo orteg", form)
    desk.click(desk.button("Buscar", form))  # by name, as on the booking page; what was typed stays
    form = desk.find(By.CSS_SELECTOR, "form[action='/desk/waitlist']")
    assert "Pablo Ortega" in form.find_element(By.CSS_SELECTOR, "p.chosen").text
    assert form.find_element(By.NAME, "note").get_attribute("value") == "quiere antes"
    desk.click(desk.button("Añadir a la lista de espera", form))
    assert desk.flash() == "Pablo Ortega está en la lista de espera."
    desk.day("24/11/2026")
    assert not desk.driver.find_elements(By.CSS_SELECTOR, ".timeline a.free.waited[href*='time=09:30']")
    desk.click(desk.card("Ana García").find_element(By.CSS_SELECTOR, "a.who"))
    cancel = desk.find(By.XPATH, f"//form[@action='/desk/appointments/{taken}/cancel']")
    desk.type("reason", "no puede venir", cancel)
    desk.click(desk.button("Anular", cancel))
    lit = desk.find(By.CSS_SELECTOR, ".timeline a.free.waited[href*='time=09:30']")
    assert lit.text == "09:30 + libre · 1 en espera"
    desk.click(lit)
    waiting_here = desk.find(By.XPATH, "//h2[normalize-space()='En espera y encajan con este hueco:']"
                                       "/following-sibling::ul[1]")
    assert "Pablo Ortega" in waiting_here.text and "quiere antes" in waiting_here.text
    desk.click(waiting_here.find_element(By.XPATH, ".//button[normalize-space()='Reservar']"))
    assert desk.flash() == "Cita de Pablo Ortega reservada el 24/11/2026 a las 09:30. No se enviará ningún correo: el paciente no tiene correo."
    desk.click(desk.find(By.XPATH, "//header//a[normalize-space()='Espera']"))
    assert "Pablo Ortega" not in desk.text()


def admin_instead(desk, api):
    """Log out 'ana' and log in 'luis', an admin."""
    api.app.accounts.add_staff("luis", PASSWORD, role="admin")
    desk.click(desk.button("Salir", desk.find(By.TAG_NAME, "header")))
    desk.log_in("luis")


def test_the_admins_report_shows_its_charts_and_their_numbers(clinic_desk):
    desk, api = clinic_desk()
    api.book(api.new_patient(), date="24/11/2026", time="09:00")
    admin_instead(desk, api)
    desk.click(desk.find(By.XPATH, "//header//a[normalize-space()='Informe']"))
    images = desk.driver.find_elements(By.CSS_SELECTOR, "section.chart img")
    assert len(images) == 4
    drawn = [desk.driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)
             for img in images]
    assert drawn == [True] * 4  # each SVG loaded and drawn under the desk's CSP, no script needed
    span = desk.find(By.CSS_SELECTOR, "form[action='/desk/report']")
    desk.type("from", "23/11/2026", span)
    desk.type("to", "29/11/2026", span)
    desk.click(desk.button("Ver", span))
    assert "Lucía Martín 18 1 17 6 0 0" in desk.find(By.CSS_SELECTOR, "section.chart table").text


def test_a_feed_made_at_the_desk_is_read_over_http_by_the_icalendar_library(clinic_desk):
    import urllib.request

    import icalendar

    desk, api = clinic_desk()
    api.book(api.new_patient(), date="24/11/2026", time="09:00")
    admin_instead(desk, api)
    desk.click(desk.find(By.XPATH, "//header//a[normalize-space()='Médicos']"))
    feed = desk.find(By.CSS_SELECTOR, "form[action='/desk/doctors/MARTIN/feed']")
    desk.click(desk.button("Crear su calendario (enlace)", feed))
    url = desk.find(By.CSS_SELECTOR, "div.warning code").text
    assert url.startswith(desk.url + "/feeds/") and url.endswith(".ics")
    with urllib.request.urlopen(url, timeout=10) as answer:  # as a phone's calendar app would
        assert answer.headers["Content-Type"] == "text/calendar; charset=utf-8"
        calendar = icalendar.Calendar.from_ical(answer.read())
    event, = calendar.walk("VEVENT")
    assert event.decoded("dtstart").strftime("%d/%m/%Y %H:%M %Z") == "24/11/2026 09:00 CET"
    assert str(event["location"]) == "Centro" and "Ana" not in str(event["summary"])
