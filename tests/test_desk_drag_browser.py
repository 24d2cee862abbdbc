"""A drag and the form do the same ("Drag to move, and to lengthen"): in headless Chromium, one list of cases is done on
Tuesday by dragging cards of the day view (or their lower edge), and on Wednesday, booked alike, by the appointment
page's forms; after each case the two days hold the same visits, events and messages, and a refusal reads the same
words at the card as on the form's page. Then the keys do it on a focused card, on the day and on a doctor's week
(another day's column). Skipped like test_desk_browser.py where selenium, chromium or chromedriver is missing."""

import pytest
from webtest.http import StopableWSGIServer

from test_desk_browser import PASSWORD, WAIT, By, Desk, Select, WebDriverWait, browser  # noqa: F401 (a fixture)
from test_visit_details import CATALOG

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

DRAGGED, FORMED = "24/11/2026", "25/11/2026"  # Tuesday's visits are dragged, Wednesday's the same by the forms
TAKEN = "Otra cita acaba de ocupar ese hueco: elige otro."
RUNS_INTO = "La visita (45 min) llega a la cita de las 10:00: no cabe antes."
# (what, whose visit, doctor, time or None, minutes or None, the refusal's words or None: done)
CASES = [("a free time", "Ana", "MARTIN", "10:45", None, None),
         ("a taken time", "Ana", "MARTIN", "09:30", None, TAKEN),
         ("another doctor", "Ana", "GIL", "10:30", None, None),
         ("lengthened into the next visit", "Eva", None, None, 45, RUNS_INTO),
         ("shortened", "Luz", None, None, 15, None)]

# Where a card's centre goes for a drop at `time` in `doctor`'s column, and its lower edge for `minutes`, as
# (dx, dy) in pixels: a minute is a row of the grid, a tick spans 15 of them.
OFFSET = r"""
const [card, doctor, time, minutes] = arguments, grid = card.closest('.timeline');
const tick = grid.querySelector('.tick').getBoundingClientRect(), px = tick.height / 15, box = card.getBoundingClientRect();
const rows = letter => Number(new RegExp('(?:^|\\s)' + letter + '(\\d+)(?:\\s|$)').exec(card.className)[1]);
const from = Number(grid.dataset.first) + rows('r') - 2, length = rows('h');
if (minutes) { return [0, Math.round((minutes - length) * px)]; }
const head = [...grid.querySelectorAll('.col-head')].find(h => h.dataset.doctor === doctor).getBoundingClientRect();
const at = Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5));
return [Math.round(head.left + head.width / 2 - (box.left + box.width / 2)), Math.round((at - from) * px)];
"""


@pytest.fixture
def two_days(browser, make_api):  # noqa: F811 (browser: test_desk_browser's fixture)
    """(desk, api, {(day, patient name): appointment id}): Ana at 09:00, Eva at 09:30 (follow-ups of 15 minutes) and
    Luz at 10:00 (a first visit, 30 and 10 of pause) with MARTIN on Tuesday and on Wednesday; GIL free."""
    api = make_api(csv=CATALOG)
    api.app.accounts.add_staff("ana", PASSWORD)
    patients = {name: api.new_patient(nif=nif, name=name) for name, nif in (
        ("Ana", "12345678Z"), ("Eva", "00000001R"), ("Luz", "00000002W"))}
    visits = {(day, name): api.book(patients[name], date=day, time=time, specialityId=kind, insuranceId="PRIV")
              for day in (DRAGGED, FORMED)
              for name, time, kind in (("Ana", "09:00", "MG-REV"), ("Eva", "09:30", "MG-REV"), ("Luz", "10:00", "MG-PRI"))}
    httpd = StopableWSGIServer.create(api.app, host="127.0.0.1", threads=4)
    assert httpd.wait(), "the server did not start"
    browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
    desk = Desk(browser, None, None, url=httpd.application_url.rstrip("/"))
    desk.log_in()
    yield desk, api, visits
    httpd.shutdown()


def outcome(api, day):
    """Each visit of the day, by patient: where and how long it is, its state, its events and its messages."""
    iso = "-".join(reversed(day.split("/")))
    return sorted((row["patient_id"], row["doctor_id"], row["center_id"], row["time"], row["end_time"], row["busy_until"],
                   row["status"], row["type_id"],
                   tuple(e[0] for e in api.db().execute("SELECT action FROM events WHERE entity = 'appointment' AND"
                                                        " entity_id = ? ORDER BY id", (str(row["id"]),))),
                   tuple(o[0] for o in api.db().execute("SELECT kind FROM outbox WHERE appointment_id = ? ORDER BY id",
                                                        (row["id"],))))
                  for row in api.db().execute("SELECT * FROM appointments WHERE date = ?", (iso,)))


def day_drawn(desk, day):
    """The day view, once drag.js has given each card its lower edge."""
    desk.day(day)
    desk.find(By.CSS_SELECTOR, ".timeline .stretch")


def dragged(desk, card, doctor, time, minutes):
    """Drag the card (by its lower edge, for `minutes`) as a hand would, in steps; the words said at it, if any."""
    dx, dy = desk.driver.execute_script(OFFSET, card, doctor, time, minutes)
    appointment = card.find_element(By.CSS_SELECTOR, "a.who").get_attribute("href").rsplit("/", 1)[1]
    held = desk.driver.find_element(By.CSS_SELECTOR, f".stretch[data-for='{appointment}']") if minutes else card
    desk.driver.execute_script("window.deskPageBefore = true")  # gone with this document, when it reloads
    ActionChains(desk.driver, duration=100).click_and_hold(held).move_by_offset(dx // 2, dy // 2).move_by_offset(
        dx - dx // 2, dy - dy // 2).release().perform()
    return settled(desk)


def settled(desk):
    """After a drop or a key: the refusal said at the card, or None once the view has reloaded."""
    return WebDriverWait(desk.driver, WAIT).until(lambda driver: driver.execute_script(
        "const said = document.querySelector('.drag-refusal');"
        "if (said) { return [said.textContent]; }"
        "return window.deskPageBefore !== true && document.readyState === 'complete' ? [null] : null;"))[0]


def formed(desk, appointment, doctor, time, minutes):
    """The same by the appointment's page: its length form, or its move form (another doctor's list looked up; a
    taken time, which the list never offers, sent as a list read before another visit took it would); the words of
    the refusal page, if any."""
    desk.open(f"/desk/appointments/{appointment}")
    if minutes:
        form = desk.find(By.CSS_SELECTOR, "form[action$='/length']")
        Select(form.find_element(By.NAME, "minutes")).select_by_value(str(minutes))
        desk.click(desk.button("Cambiar duración", form))
    else:
        if doctor != "MARTIN":
            look = desk.find(By.CSS_SELECTOR, "form[method='get']")
            Select(look.find_element(By.NAME, "doctorId")).select_by_value(doctor)
            desk.click(desk.button("Buscar huecos", look))
        form = desk.find(By.CSS_SELECTOR, "form[action$='/move']")
        value = f"{FORMED}|{time}|{doctor}|C1"
        desk.driver.execute_script("const [select, value] = arguments; if (![...select.options].some(o => o.value =="
                                   " value)) { select.add(new Option(value, value)); } select.value = value;",
                                   form.find_element(By.NAME, "slot"), value)
        desk.click(desk.button("Mover", form))
    refused = desk.driver.find_elements(By.CSS_SELECTOR, "p.error")
    return " ".join(refused[0].text.split()) if refused else None


def test_a_drag_and_the_form_move_lengthen_and_refuse_alike(two_days):
    desk, api, visits = two_days
    assert outcome(api, DRAGGED) == outcome(api, FORMED)
    for what, name, doctor, time, minutes, refusal in CASES:
        day_drawn(desk, DRAGGED)
        card = desk.card(name)
        said = dragged(desk, card, doctor, time, minutes)
        assert said == refusal, (what, said)
        if refusal:  # the card went back where it was
            assert desk.card(name).get_attribute("class") == card.get_attribute("class")
        else:
            assert desk.flash(), what
        assert formed(desk, visits[(FORMED, name)], doctor, time, minutes) == refusal, what
        assert outcome(api, DRAGGED) == outcome(api, FORMED), what
    moved = api.db().execute("SELECT doctor_id, time, end_time FROM appointments WHERE id = ?",
                             (visits[(DRAGGED, "Ana")],)).fetchone()
    assert tuple(moved) == ("GIL", "10:30", "10:45")
    assert api.db().execute("SELECT end_time, busy_until FROM appointments WHERE id = ?",
                            (visits[(DRAGGED, "Luz")],)).fetchone()[:] == ("10:15", "10:25")


def test_the_keys_move_a_focused_card_and_change_its_length_saying_each_step(two_days):
    desk, api, visits = two_days
    day_drawn(desk, DRAGGED)
    luz = desk.card("Luz")
    drawn = luz.rect["height"]
    ActionChains(desk.driver).move_to_element(luz).perform()
    assert luz.rect["height"] >= drawn  # a hovered card grows to its words, never shrinks from under the pointer
    news = desk.find(By.ID, "drag-news")
    assert news.get_attribute("aria-live") == "polite"
    desk.card("Eva").find_element(By.CSS_SELECTOR, "a.who").send_keys("m", Keys.ARROW_DOWN, Keys.ARROW_RIGHT)
    assert news.text == "Mover a las 09:45 · Pedro Gil (MG) · 15 min. Intro para mover, Esc para dejarla."
    desk.driver.execute_script("window.deskPageBefore = true")
    desk.driver.switch_to.active_element.send_keys(Keys.ENTER)
    assert settled(desk) is None and "09:45" in desk.flash()
    assert tuple(api.db().execute("SELECT doctor_id, time FROM appointments WHERE id = ?",
                                  (visits[(DRAGGED, "Eva")],)).fetchone()) == ("GIL", "09:45")
    desk.card("Ana").find_element(By.CSS_SELECTOR, "a.who").send_keys("d", Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    assert desk.find(By.ID, "drag-news").text == ("Duración 45 min, hasta las 09:45. Intro para cambiarla, Esc para"
                                                  " dejarla.")
    desk.driver.execute_script("window.deskPageBefore = true")
    desk.driver.switch_to.active_element.send_keys(Keys.ENTER)
    assert settled(desk) is None and "45 min" in desk.flash()
    desk.card("Luz").find_element(By.CSS_SELECTOR, "a.who").send_keys("d", Keys.ARROW_UP, Keys.ESCAPE)
    assert desk.find(By.ID, "drag-news").text == "Cita sin cambios." and not desk.driver.find_elements(
        By.CSS_SELECTOR, ".drag-ghost")
    assert [tuple(row) for row in api.db().execute(
        "SELECT time, end_time FROM appointments WHERE id IN (?, ?) ORDER BY id",
        (visits[(DRAGGED, "Ana")], visits[(DRAGGED, "Luz")]))] == [("09:00", "09:45"), ("10:00", "10:30")]
    desk.open("/desk/week?date=24/11/2026&doctorId=MARTIN")  # her week: a column a day
    desk.find(By.CSS_SELECTOR, ".timeline .stretch")
    desk.card("Luz").find_element(By.CSS_SELECTOR, "a.who").send_keys("m", Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
    assert desk.find(By.ID, "drag-news").text.startswith("Mover a las 10:00 · jue 26/11.")  # Wednesday is full then
    desk.driver.execute_script("window.deskPageBefore = true")
    desk.driver.switch_to.active_element.send_keys(Keys.ENTER)
    assert settled(desk) is None and tuple(api.db().execute(
        "SELECT date, time, end_time, busy_until FROM appointments WHERE id = ?", (visits[(DRAGGED, "Luz")],)).fetchone()
    ) == ("2026-11-26", "10:00", "10:30", "10:40")  # two days on, its length and pause kept
