"""The patient's link in a real browser, on a phone's screen (390x844): headless Chromium under selenium against
a real waitress on 127.0.0.1, as a patient would use it, with no script of the page's own (it sends none).
Confirm, move, cancel; a late cancellation refused; an ended visit, a wrong token and another visit's token; the
mail itself, with no word broken and its whole button the link.

Skipped, with the reason, where selenium, chromium or chromedriver is missing (CI sets AGENDA_NO_SKIP=1, which
turns that skip into a failure)."""

import datetime as dt

import pytest

from _agenda.domain.links import new_link
from _agenda.patient.messages import written
from _agenda.storage.connections import transaction
from conftest import MADRID, valid_dni
from test_desk_browser import start_chromium, WAIT
from test_patient_link_phone import mail_view

from selenium.webdriver.common.by import By
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.support.ui import WebDriverWait


@pytest.fixture(scope="module")
def phone(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-phone"))
    driver.set_window_size(390, 844)
    try:
        yield driver
    finally:
        driver.quit()


def link(api, appointment_id):
    with transaction(api.db()) as conn:
        return new_link(conn, appointment_id, "message", api.app.clinic.clock())


def shown(phone, text):
    """The page's text once it holds `text` (a page being replaced by the next is read again, not an error)."""
    WebDriverWait(phone, WAIT, ignored_exceptions=(WebDriverException,)).until(
        lambda driver: text in driver.find_element(By.TAG_NAME, "main").text)
    return phone.find_element(By.TAG_NAME, "main").text


def status_of(api, appointment_id):
    return tuple(api.db().execute("SELECT date, time, status FROM appointments WHERE id = ?",
                                  (appointment_id,)).fetchone())


def test_the_patient_confirms_moves_and_cancels_on_a_phone(api, server, phone):
    booked = api.book(api.new_patient(email="ana@example.es"), date="26/11/2026", time="09:00")
    token = link(api, booked)
    phone.get(f"{server}/cita/{token}")
    assert "Hola, Ana:" in shown(phone, "jueves, 26 de noviembre de 2026")
    assert phone.execute_script("return document.documentElement.scrollWidth") <= 390  # no sideways scroll
    phone.find_element(By.XPATH, "//button[text()='Confirmo que iré']").click()
    shown(phone, "Gracias: su cita queda confirmada.")
    assert status_of(api, booked)[2] == "confirmed"
    phone.find_element(By.CSS_SELECTOR, "input[name=slot][value='2026-11-26 10:30']").click()
    phone.find_element(By.XPATH, "//button[text()='Cambiar a otra hora']").click()
    shown(phone, "su cita ha cambiado")
    assert status_of(api, booked) == ("2026-11-26", "10:30", "confirmed")  # the patient chose it: still confirmed
    phone.find_element(By.XPATH, "//button[text()='Anular la cita']").click()
    shown(phone, "¿Seguro que quiere anular su cita")
    phone.find_element(By.XPATH, "//button[text()='Sí, anular la cita']").click()
    shown(phone, "Su cita ha sido anulada.")
    assert status_of(api, booked)[2] == "cancelled"
    phone.get(f"{server}/cita/{token}")
    shown(phone, "Esta cita está anulada.")
    assert not phone.find_elements(By.TAG_NAME, "form")


def test_a_late_cancellation_an_ended_visit_a_wrong_token_and_another_visits_token(api, server, phone, clock):
    ana = api.new_patient(email="ana@example.es")
    eva = api.new_patient(nif=valid_dni(1), name="Eva", email="eva@example.es")
    mine, hers = api.book(ana, date="24/11/2026", time="09:00"), api.book(eva, date="26/11/2026", time="09:00")
    mine_token, hers_token = link(api, mine), link(api, hers)
    clock.moment = dt.datetime(2026, 11, 23, 10, 0, tzinfo=MADRID)  # 23 hours before mine: inside the notice
    phone.get(f"{server}/cita/{mine_token}")
    assert "llame a la clínica" in shown(phone, "Faltan menos de 24 horas")
    assert not phone.find_elements(By.XPATH, "//button[text()='Anular la cita']")
    # my page's form sent to her link: refused, nothing changes
    phone.execute_script("document.forms[0].action = arguments[0]", f"/cita/{hers_token}/anular")
    phone.find_element(By.XPATH, "//button[text()='Confirmo que iré']").click()
    shown(phone, "La página ha caducado")
    assert status_of(api, hers)[2] == "booked" and status_of(api, mine)[2] == "booked"
    phone.get(f"{server}/cita/{'z' * 32}")
    shown(phone, "Este enlace no es válido o la cita ya ha pasado.")
    clock.moment = dt.datetime(2026, 11, 24, 9, 31, tzinfo=MADRID)  # mine has ended
    phone.get(f"{server}/cita/{mine_token}")
    shown(phone, "Este enlace no es válido o la cita ya ha pasado.")


BROKEN_WORDS = """const broken = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.textContent.trim().startsWith("http")) continue;  // an address may break anywhere
    for (const word of node.textContent.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        if (new Set([...range.getClientRects()].map(rect => Math.round(rect.top))).size > 1) broken.push(word[0]);
    }
}
const phone = document.querySelector("a[href^='tel:']");
const lines = phone && new Set([...phone.getClientRects()].map(rect => Math.round(rect.top))).size;
if (lines > 1) broken.push(phone.textContent);
return broken;"""
CORNERS = """const button = document.querySelector("a[href*='/cita/']").closest("td").getBoundingClientRect();
return [[button.left + 2, button.top + 2], [button.right - 2, button.bottom - 2]].map(
    ([x, y]) => document.elementFromPoint(x, y).closest("a") !== null);"""


def test_the_mail_on_a_phone_breaks_no_word_and_its_whole_blue_button_is_the_link(phone, tmp_path):
    """The first message, in Chromium at 390 px: no word (the footer's, the phone's number) is broken across lines,
    only the addresses; a tap anywhere on the blue button, its corners too, is a tap on the link."""
    mail = tmp_path / "mail.html"
    mail.write_text(written(mail_view())["html"], encoding="utf-8")
    phone.get(mail.as_uri())
    assert phone.execute_script("return document.documentElement.scrollWidth") <= 390
    assert phone.execute_script(BROKEN_WORDS) == []
    assert phone.execute_script(CORNERS) == [True, True]
    assert phone.find_element(By.CSS_SELECTOR, "a[href^='tel:']").text == "912 345 678"
