"""The booking page in a real browser (docs/design.md, "The booking page"): headless Chromium under selenium against
a real waitress on 127.0.0.1, one session, as a patient would book on a phone (390x844) and on a computer
(1280x800): each step, a form sent blank and its errors, the details, the answer; the message read from the real
SMTP server and its link confirmed. On every page, a cheap accessibility pass: each input labelled, no sideways
scroll, targets of 44 px, text at a contrast of 4.5:1.

Skipped, with the reason, where selenium, chromium or chromedriver is missing (CI sets AGENDA_NO_SKIP=1, which
turns that skip into a failure)."""

import re

import pytest

from _agenda.patient.sender import Mailer, Sender, smtp_server
from conftest import valid_dni
from test_booking_page import CATALOG, PATIENT, WEB
from test_desk_browser import browser, WAIT  # noqa: F401 (browser: one Chromium for the module)
from test_mail import mail_server  # noqa: F401 (the fixture)

from selenium.webdriver.common.by import By
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.support.ui import WebDriverWait

# What a page must hold, read in the browser: [] when it does.
UNLABELLED = """return [...document.querySelectorAll('input:not([type=hidden]), select, textarea')].filter(e =>
    !(e.id && document.querySelector(`label[for="${e.id}"]`)) && !e.closest('label')).map(e => e.name);"""
SMALL = """return [...document.querySelectorAll(`a, button, input:not([type=hidden]):not([type=radio]):not([type=checkbox]),
    select, label.choice, .check label`)].filter(e => e.getBoundingClientRect().height < 44)
    .map(e => e.tagName + ' ' + e.textContent.trim().slice(0, 30));"""
FAINT = """const rgb = text => text.match(/[\\d.]+/g).map(Number);
const lum = c => { const [r, g, b] = c.slice(0, 3).map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
const behind = e => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length < 4 || c[3] > 0) return c; } return [255, 255, 255]; };
return [...document.querySelectorAll('body *')].filter(e => [...e.childNodes].some(n => n.nodeType === 3 &&
    n.textContent.trim())).map(e => { const s = getComputedStyle(e), f = lum(rgb(s.color)), b = lum(behind(e));
    const ratio = (Math.max(f, b) + 0.05) / (Math.min(f, b) + 0.05);
    const large = parseFloat(s.fontSize) >= 24 || parseFloat(s.fontSize) >= 18.66 && parseInt(s.fontWeight) >= 700;
    return ratio < (large ? 3 : 4.5) ? e.tagName + ' ' + e.textContent.trim().slice(0, 30) + ' ' + ratio.toFixed(2)
        : null; }).filter(Boolean);"""


@pytest.fixture
def api(make_api):
    """The test clinic with its booking page on (conftest's `server` serves this one)."""
    return make_api(csv=CATALOG, **WEB)


class Patient:
    """One patient at the browser, on one running server, at one size."""

    def __init__(self, driver, server, width, height):
        self.driver, self.server = driver, server
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.width = width

    def main(self):
        return self.driver.find_element(By.TAG_NAME, "main").text

    def shown(self, text):
        """The page once it holds `text` (a page being replaced by the next is read again, not an error)."""
        try:
            WebDriverWait(self.driver, WAIT, ignored_exceptions=(WebDriverException,)).until(
                lambda driver: text in driver.find_element(By.TAG_NAME, "main").text)
        except TimeoutException:
            raise AssertionError(f"no {text!r} on {self.driver.current_url}:\n{self.main()}") from None
        self.checked()
        return self.main()

    def checked(self):
        """The cheap accessibility pass of the page on screen."""
        run = self.driver.execute_script
        assert run(UNLABELLED) == [], self.main()
        assert run("return document.documentElement.scrollWidth") <= self.width, "a sideways scroll"
        assert run(SMALL) == [] and run(FAINT) == []
        assert run("return document.scripts.length") == 0

    def press(self, text):
        """The link or button that reads `text`."""
        self.driver.find_element(By.XPATH, f"//body//*[self::a or self::button][starts-with(normalize-space(), '{text}')]").click()

    def choose_a_time(self, index):
        self.driver.find_elements(By.CSS_SELECTOR, "label.choice")[index].click()
        self.press({"es": "Seguir", "en": "Continue"}[self.driver.find_element(By.TAG_NAME, "html")
                                                      .get_attribute("lang")])

    def type(self, typed):
        for name, value in typed.items():
            field = self.driver.find_element(By.ID, name)
            field.clear()
            field.send_keys(value)


def confirmation_link(api, mail_server, address):
    """The confirmation link of the message the sender took to the real SMTP server for `address`."""
    sender = Sender(api.app.clinic, Mailer(smtp_server(mail_server.url, ca_file=str(mail_server.ca_file))),
                    "Clínica Sol <citas@clinicasol.es>", WEB["public_url"])
    sender.pass_once()
    bodies = [message.get_body(("plain",)).get_content() for to, message in mail_server.inbox.messages()
              if address in to]
    found = [re.search(r"/reservar/confirmar/([A-Za-z0-9_-]+)", body) for body in bodies]
    assert found and found[-1], bodies
    return found[-1][1]


def book(patient, api, mail_server, typed, time_index, english=False):
    """A patient's whole booking at this size: the steps, a form sent blank, the details, the mail, the link."""
    driver, server = patient.driver, patient.server
    driver.get(f"{server}/reservar")
    patient.shown("¿En qué centro?")
    if english:
        patient.press("English")
        patient.shown("Which center?")
    words = {"es": ("¿Con quién?", "¿Qué tipo de visita?", "Elija día y hora", "Sus datos", "Revise estos datos",
                    "Le hemos enviado un correo", "Confirmar la cita", "su cita queda confirmada"),
             "en": ("With whom?", "What kind of visit?", "Choose a day and time", "Your details", "Please check",
                    "We have sent an e-mail", "Confirm the appointment", "your appointment is confirmed")}[
        "en" if english else "es"]
    patient.press("Centro")
    patient.shown(words[0])
    patient.press("Lucía Martín")
    patient.shown(words[1])
    patient.press("Revisión")
    patient.shown(words[2])
    patient.choose_a_time(time_index)
    patient.shown(words[3])
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    patient.shown(words[4])
    assert driver.find_element(By.ID, "nombre").get_attribute("aria-invalid") == "true"
    patient.type(typed)
    driver.find_element(By.CSS_SELECTOR, "label[for=privacidad]").click()
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    said = patient.shown(words[5])
    assert "•••@example.es" in said and typed["correo"] not in said
    assert "/reservar/" in driver.current_url and typed["nif"] not in driver.current_url
    token = confirmation_link(api, mail_server, typed["correo"])
    driver.get(f"{server}/reservar/confirmar/{token}?idioma={'en' if english else 'es'}")
    patient.shown(words[6])
    patient.press(words[6])
    return patient.shown(words[7])


def test_a_patient_books_on_a_phone_and_on_a_computer_and_confirms_by_the_mail(browser, api, server, mail_server):
    phone = Patient(browser, server, 390, 844)
    book(phone, api, mail_server, PATIENT, 0)
    other = {**PATIENT, "nombre": "Berta", "nif": valid_dni(202), "correo": "berta@example.es"}
    book(Patient(browser, server, 1280, 800), api, mail_server, other, 0, english=True)
    rows = api.db().execute("SELECT time, status, pending FROM appointments ORDER BY time").fetchall()
    assert [tuple(row) for row in rows] == [("09:00", "booked", None), ("09:15", "booked", None)]


def test_on_a_phone_the_button_that_goes_on_stays_in_sight_below_a_long_list_of_times(browser, api, server):
    patient = Patient(browser, server, 390, 844)
    browser.get(f"{server}/reservar?centro=C1&especialidad=MG&medico=MARTIN&tipo=MG-REV")
    patient.shown("Elija día y hora")
    assert browser.execute_script("return document.documentElement.scrollHeight") > 844 * 1.5  # a long list
    browser.find_elements(By.CSS_SELECTOR, "label.choice")[0].click()
    button = browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]")
    top, bottom = browser.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom];",
                                         button)
    assert 0 <= top and bottom <= 844, (top, bottom)  # no scrolling to the list's end to go on
    button.click()
    patient.shown("Sus datos")


def test_with_anyone_a_phone_shows_each_doctors_times_side_by_side_under_their_name(browser, api, server):
    patient = Patient(browser, server, 390, 844)
    browser.get(f"{server}/reservar?centro=C1&especialidad=MG&medico=cualquiera&tipo=MG-REV")
    patient.shown("Elija día y hora")
    groups = browser.execute_script("""return [...document.querySelectorAll('input[name=hueco]')].map(radio =>
        [radio.closest('fieldset').querySelector('legend').textContent.trim(), radio.getBoundingClientRect().top]);""")
    assert {name for name, _ in groups} == {"Lucía Martín", "Pedro García"}  # each time's group names its doctor
    assert len({top for _, top in groups}) <= len(groups) / 2  # two or more times a row, not one a row
