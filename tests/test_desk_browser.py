"""The staff desk in a real browser: headless Chromium driven by selenium against a real
`agenda run`, acting as a receptionist would (clicking links and buttons, typing in
fields). The same flows through webtest, with every field and text: test_desk.py.

Skipped, with the reason, where selenium, chromium or chromedriver is missing
(CI sets AGENDA_NO_SKIP=1, which turns that skip into a failure)."""

import os
import sqlite3
import subprocess

import pytest

from conftest import agenda_command, days_ahead, send

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
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
    return driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield driver
    finally:
        driver.quit()


class Desk:
    """One receptionist at the browser, on one running server."""

    def __init__(self, driver, server, db_path):
        self.driver, self.server, self.url, self.db_path = driver, server, server.url, db_path

    # looking and waiting

    def find(self, by, what):
        return WebDriverWait(self.driver, WAIT).until(seen.presence_of_element_located((by, what)))

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

    def day(self, date):
        self.open(f"/desk/day?date={date}&centerId=C1")
        return self.find(By.CSS_SELECTOR, "table.day")

    def book_free_slot(self, date, time, patient=PATIENT):
        """From the day view: '+ libre' at `time` in MARTIN's column, a new patient, submit."""
        table = self.day(date)
        column = [cell.text for cell in table.find_elements(By.CSS_SELECTOR, "thead th")].index(
            "Lucía Martín (MG)") + 1
        row = table.find_element(By.XPATH, f".//tbody/tr[th[normalize-space()='{time}']]")
        cell = row.find_element(By.XPATH, f"./*[{column}]")
        self.click(cell.find_element(By.LINK_TEXT, "+ libre"))
        assert "Reservar cita" in self.text() and f"Lucía Martín · {date} · {time}" in self.text()
        form = self.find(By.XPATH, "//h2[normalize-space()='Paciente nuevo']/following-sibling::form[1]")
        for field, value in patient.items():
            self.type(field, value, form)
        self.click(self.button("Registrar y reservar", form))

    def open_appointment(self, date, patient_name):
        self.day(date)
        self.click(self.find(By.LINK_TEXT, patient_name))
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
            return {table: conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall() for table in tables}
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
    subprocess.run(agenda_command("staff", "add", "ana", "--db", str(db_path)), input=PASSWORD + "\n",
                   text=True, check=True, capture_output=True, timeout=60)
    browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
    browser.delete_all_cookies()
    return Desk(browser, running(), db_path)


def test_booking_a_free_slot_from_the_day_view_for_a_new_patient(desk):
    date = days_ahead(2)
    desk.log_in()
    assert desk.path() == "/desk/day" and desk.status() == 200
    desk.book_free_slot(date, "09:30")
    assert desk.status() == 200 and desk.path().startswith("/desk/day?")
    assert desk.flash() == f"Cita de Evarista Quintanilla reservada el {date} a las 09:30."
    cell = desk.find(By.XPATH, "//tbody/tr[th[normalize-space()='09:30']]/td[contains(@class, 'booked')]")
    assert "Evarista Quintanilla" in cell.text and "612 34 56 78" in cell.text
    listed = desk.day_list(date)
    assert [(a["time"], a["doctorId"], a["patientName"], a["reason"]) for a in listed] == [
        ("09:30", "MARTIN", "Evarista Quintanilla", "Control de tensión")]
    # found again from the day view's search box, by NIF
    desk.type("q", "12345678z", desk.find(By.CSS_SELECTOR, ".toolbar form.search"))
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
    assert [option.text for option in Select(move.find_element(By.NAME, "time")).options] == [
        "09:00", "10:00", "10:30"]  # the free times of that day, not its own
    Select(move.find_element(By.NAME, "time")).select_by_visible_text("10:30")
    desk.click(desk.button("Mover", move))
    assert desk.flash().startswith("Cita de Evarista") and f"movida al {date} a las 10:30." in desk.flash()
    status, moved = send(desk.url, "GET", f"/appointments/{appointment_id}")
    assert status == 200 and (moved["date"], moved["time"]) == (date, "10:30")
    assert "09:30" in desk.free_times(date) and "10:30" not in desk.free_times(date)

    assert desk.open_appointment(date, "Evarista Quintanilla") == appointment_id
    cancel = desk.find(By.XPATH, f"//form[@action='/desk/appointments/{appointment_id}/cancel']")
    desk.type("reason", "llamó para anular", cancel)
    desk.click(desk.button("Anular", cancel))
    assert desk.flash().startswith("Cita de Evarista") and desk.flash().endswith(" anulada.")
    assert not desk.driver.find_elements(By.CSS_SELECTOR, "td.booked")
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
    desk.click(desk.button("Quitar", row))
    assert desk.flash() == "Cierre quitado."
    assert not desk.driver.find_elements(By.XPATH, "//table//tr[td[normalize-space()='Congreso']]")
    assert desk.free_times(date) == ["09:00", "09:30", "10:00", "10:30"]


def test_a_closed_day_shows_each_slot_closed_with_its_reason_in_the_day_view(desk):
    date = days_ahead(3)
    desk.log_in()
    add_closure(desk, date)
    desk.open(f"/desk/day?date={date}&centerId=C1")
    assert desk.status() == 200, f"{desk.text()}\n--- the server's log:\n{desk.server.log()[-3000:]}"
    cells = desk.find(By.CSS_SELECTOR, "table.day").find_elements(By.CSS_SELECTOR, "tbody td")
    assert [cell.text for cell in cells] == ["░ cerrado: Congreso"] * 4
    assert not desk.driver.find_elements(By.LINK_TEXT, "+ libre")


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


def test_a_wrong_password_is_refused_and_five_lock_the_name(desk):
    for attempt in range(5):
        desk.log_in(password=f"wrong password {attempt}")
        assert desk.status() == 401 and desk.path() == "/desk/login"
        assert desk.find(By.CSS_SELECTOR, "p.error").text == REFUSED
        assert desk.find(By.NAME, "name").get_attribute("value") == "ana"  # kept as typed
    desk.log_in()  # the right password, while locked: the same words, so a lock tells no one the name exists
    assert desk.status() == 401 and desk.path() == "/desk/login"
    assert desk.find(By.CSS_SELECTOR, "p.error").text == REFUSED
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
    subprocess.run(agenda_command("staff", "add", "ana", "--db", str(db_path)), input=PASSWORD + "\n",
                   text=True, check=True, capture_output=True, timeout=60)
    profile = tmp_path / "profile"
    driver = start_chromium(profile)
    try:
        desk = Desk(driver, running(), db_path)
        desk.log_in()
        desk.book_free_slot(days_ahead(2), "09:30")
        desk.type("q", "12345678Z", desk.find(By.CSS_SELECTOR, ".toolbar form.search"))
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
