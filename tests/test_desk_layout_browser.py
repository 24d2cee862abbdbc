"""The desk laid out in a real browser ("The day as time", "Sobrecita"): headless Chromium at 1280x800 and
768x1024 on the demo clinic's busy Thursday (test_desk_layout.py's, a sobrecita and 15-minute visits), served
by waitress in this process on the frozen clock. Whether a button can be pressed is judged as a finger would:
the element at its centre and near each corner is the button itself, and the card around it does not clip it.
Skipped like test_desk_browser.py where selenium, chromium or chromedriver is missing."""

import base64
import re
import urllib.parse

import pytest
from webtest.http import StopableWSGIServer

from test_desk_browser import PASSWORD, WAIT, By, Desk, WebDriverWait, browser  # noqa: F401 (browser: a fixture)
from test_desk_layout import DEMO_CSV, NORTE_DAY, busy_thursday

SIZES = [(1280, 800), (768, 1024)]
MARTIN_WEEK = "/desk/week?date=26/11/2026&doctorId=MARTIN"
NORTE_WEEK = "/desk/week?date=26/11/2026&centerId=NORTE"

# Is the element where a finger finds it: inside the viewport and the scroller around it, and the element at its
# centre (and near its corners, with `corners`) it or inside it? Labels drawn with pointer-events: none are
# never hit, so they are judged by their box (IN_SIGHT, to a pixel: boxes fall between pixels).
ON_TOP = """
const [element, corners] = arguments, box = element.getBoundingClientRect();
if (!box.width || box.top < 0 || box.left < 0 || box.bottom > innerHeight || box.right > innerWidth) { return false; }
const points = [[box.left + box.width / 2, box.top + box.height / 2]].concat(corners ? [
    [box.left + 2, box.top + 2], [box.right - 2, box.top + 2], [box.left + 2, box.bottom - 2], [box.right - 2, box.bottom - 2]] : []);
return points.every(([x, y]) => { const hit = document.elementFromPoint(x, y); return hit === element || element.contains(hit); });
"""
IN_SIGHT = """
const box = arguments[0].getBoundingClientRect(), timeline = arguments[0].closest('.timeline');
const frame = timeline ? timeline.getBoundingClientRect() : {top: 0, left: 0, bottom: innerHeight, right: innerWidth};
return box.height > 0 && box.top >= Math.max(0, frame.top) - 1 && box.bottom <= Math.min(innerHeight, frame.bottom) + 1;
"""
# Each quick button of the cards: its card scrolled into the middle of the timeline, the button whole inside
# the card's inner box (no overflow clips it) and on top at its centre and corners. [checked, failures].
EVERY_BUTTON = """
const checked = [], failures = [];
for (const button of document.querySelectorAll('article.card form.quick button')) {
  const card = button.closest('article.card'), name = card.querySelector('a.who').textContent.trim() + ' / '
      + button.textContent.trim();
  card.scrollIntoView({block: 'center', inline: 'nearest'});
  const outer = card.getBoundingClientRect(), box = button.getBoundingClientRect();
  const left = outer.left + card.clientLeft, top = outer.top + card.clientTop;
  const whole = box.width > 0 && box.left >= left - 0.5 && box.top >= top - 0.5
      && box.right <= left + card.clientWidth + 0.5 && box.bottom <= top + card.clientHeight + 0.5;
  const points = [[box.left + box.width / 2, box.top + box.height / 2], [box.left + 2, box.top + 2],
      [box.right - 2, box.top + 2], [box.left + 2, box.bottom - 2], [box.right - 2, box.bottom - 2]];
  const covered = points.filter(([x, y]) => {
      const hit = document.elementFromPoint(x, y); return !(hit === button || button.contains(hit)); })
      .map(([x, y]) => { const hit = document.elementFromPoint(x, y);
                         return hit ? (hit.closest('article') || hit).textContent.trim().slice(0, 30) : 'nothing'; });
  checked.push(name);
  if (!whole || covered.length || card.scrollTop || card.scrollLeft) {
    failures.push(name + (whole ? '' : ' clipped by its card') + (covered.length ? ' covered by ' + covered.join(', ') : ''));
  }
}
return [checked, failures];
"""


@pytest.fixture
def thursday(browser, make_api, clock):  # noqa: F811 (browser: test_desk_browser's fixture)
    """(desk, clock): the browser logged in as 'ana' on the demo clinic's busy Thursday at 10:05, at 1280x800."""
    api = make_api(DEMO_CSV, clinic_name="Clínica Sol")
    busy_thursday(api, clock)
    api.app.accounts.add_staff("ana", PASSWORD)
    httpd = StopableWSGIServer.create(api.app, host="127.0.0.1", threads=4)
    assert httpd.wait(), "the server did not start"
    browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
    browser.delete_all_cookies()
    desk = Desk(browser, None, None, url=httpd.application_url.rstrip("/"))
    desk.log_in()
    try:
        yield desk, clock
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        httpd.shutdown()


def show(desk, path, size=(1280, 800)):
    """The page at `path` on a screen of `size` (the page's viewport, not the window around it), the mouse off
    every card (a card under the mouse opens up over its neighbours)."""
    width, height = size
    desk.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    desk.open(path)
    desk.find(By.CSS_SELECTOR, "main")
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    mouse = ActionBuilder(desk.driver)
    mouse.pointer_action.move_to_location(1, 1)
    mouse.perform()


def on_top(desk, element, corners=False):
    return desk.driver.execute_script(ON_TOP, element, corners)


@pytest.mark.parametrize("size", SIZES)
def test_the_day_s_heads_stay_in_sight_scrolled_to_the_afternoon(thursday, size):
    desk, _ = thursday
    show(desk, NORTE_DAY, size)
    evening = desk.find(By.XPATH, "//div[contains(@class, 'tick') and normalize-space()='18:00']")
    desk.driver.execute_script("arguments[0].scrollIntoView({block: 'end'})", evening)
    assert desk.driver.execute_script(IN_SIGHT, evening)  # the afternoon is on the screen
    heads = desk.driver.find_elements(By.CSS_SELECTOR, ".timeline .col-head")
    assert [head.text.split(" (")[0] for head in heads] == [
        "Dra. Carmen Núñez Gil", "Dra. Lucía Martín Pérez", "Dra. Sofía Herrera Campos"]
    assert all(on_top(desk, head) for head in heads)  # which column is whose, still
    assert on_top(desk, desk.find(By.ID, "previous")) and on_top(desk, desk.find(By.ID, "following"))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("path", [NORTE_DAY, MARTIN_WEEK])
def test_no_button_of_a_card_is_clipped_or_covered(thursday, path, size):
    desk, _ = thursday
    show(desk, path, size)
    checked, failures = desk.driver.execute_script(EVERY_BUTTON)
    assert not failures, f"at {size[0]}x{size[1]} on {path}: {failures}"
    assert {"10:00 Irene Molina Fuentes / Llegó", "10:00 Irene Molina Fuentes / No vino",  # the sobrecita
            "10:00 Marta Iglesias Ramos / Llegó", "10:00 Marta Iglesias Ramos / No vino",  # and the visit under it
            "10:15 Pablo Ortega Lin / Llegó"} <= set(checked)  # a 15-minute visit (not begun: no "No vino" yet)


@pytest.mark.parametrize("size", SIZES)
def test_a_day_opens_at_now_with_its_toolbar_in_sight(thursday, size):
    desk, clock = thursday
    clock.set(2026, 11, 26, 17, 40)
    desk.log_in()  # hours idle: the session has ended
    show(desk, NORTE_DAY, size)
    now = desk.find(By.ID, "now")
    WebDriverWait(desk.driver, WAIT).until(lambda driver: driver.execute_script(IN_SIGHT, now))  # opened at now
    assert now.text == "17:40\nahora" or now.text == "17:40 ahora"
    lines = desk.driver.find_elements(By.CSS_SELECTOR, ".timeline .now-line")
    heads = desk.driver.find_elements(By.CSS_SELECTOR, ".timeline .col-head")
    assert all(desk.driver.execute_script(IN_SIGHT, line) for line in lines)
    assert [line.rect["x"] for line in lines] == [head.rect["x"] for head in heads]  # across every column
    for element in (desk.find(By.ID, "date"), desk.find(By.ID, "previous"), desk.find(By.LINK_TEXT, "Hoy"),
                    desk.find(By.ID, "print"), desk.find(By.ID, "q")):
        assert on_top(desk, element, corners=True), element.get_attribute("outerHTML")
    assert desk.driver.execute_script("return window.scrollY") == 0


TEXT_BOX = "const range = document.createRange(); range.selectNodeContents(arguments[0]); " \
    "const box = range.getBoundingClientRect(); return [box.top, box.bottom, box.left, box.right];"


@pytest.mark.parametrize("minute", [0, 2, 7, 13])
def test_the_now_label_never_covers_the_axis_s_times(thursday, minute):
    desk, clock = thursday
    clock.set(2026, 11, 26, 10, minute)
    show(desk, NORTE_DAY)
    label = desk.driver.execute_script(TEXT_BOX, desk.find(By.ID, "now"))
    line = desk.driver.execute_script("return arguments[0].getBoundingClientRect().top",
                                      desk.find(By.CSS_SELECTOR, ".timeline .now-line"))
    for tick in desk.driver.find_elements(By.CSS_SELECTOR, ".timeline .tick"):
        top, bottom, left, right = desk.driver.execute_script(TEXT_BOX, tick)
        assert bottom <= label[0] or label[1] <= top or right <= label[2] or label[3] <= left, tick.text
    assert label[0] - 10 * 4 <= line <= label[1] + 10 * 4  # beside its line: within ten minutes (4 px each)


def test_a_closure_s_reason_is_readable_and_drawn_unlike_no_surgery(thursday):
    desk, _ = thursday
    show(desk, NORTE_DAY)
    closed = desk.find(By.XPATH, "//div[contains(@class, 'closed') and contains(., 'Reunión de equipo')]")
    desk.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", closed)
    top, bottom, left, right = desk.driver.execute_script(TEXT_BOX, closed)
    hit = desk.driver.execute_script("return document.elementFromPoint(arguments[0], arguments[1])",
                                     (left + right) / 2, (top + bottom) / 2)
    assert hit == closed  # its words, not a card over them
    looks = "const style = getComputedStyle(arguments[0]); return [style.backgroundImage, style.borderLeftColor];"
    off = desk.find(By.CSS_SELECTOR, ".timeline .block.off")
    assert desk.driver.execute_script(looks, closed)[0] != desk.driver.execute_script(looks, off)[0]
    assert desk.driver.execute_script(looks, closed)[1] != desk.driver.execute_script(looks, off)[1]


def test_phone_numbers_are_never_broken_at_a_tablet_s_width(thursday):
    desk, _ = thursday
    lines = "const range = document.createRange(); range.selectNodeContents(arguments[0]); " \
        "return new Set(Array.from(range.getClientRects(), box => Math.round(box.top))).size;"
    for path, phones in ((NORTE_DAY, ".timeline .phone"), (NORTE_DAY + "&print=1", "table.print-day td:nth-child(3)")):
        show(desk, path, (768, 1024))
        found = desk.driver.find_elements(By.CSS_SELECTOR, phones)
        assert found and all(desk.driver.execute_script(lines, phone) == 1 for phone in found), path


def test_the_print_button_prints_the_day_and_without_the_script_shows_the_printed_day(thursday):
    desk, _ = thursday
    show(desk, NORTE_DAY)
    desk.driver.execute_script("window.print = function () { window.printedTimes = (window.printedTimes || 0) + 1; };")
    button = desk.find(By.ID, "print")
    button.click()
    assert desk.driver.execute_script("return window.printedTimes") == 1 and desk.path() == NORTE_DAY
    desk.open(button.get_attribute("href")[len(desk.url):])  # what the link opens where no script runs
    headings = [th.text for th in desk.driver.find_elements(By.CSS_SELECTOR, "table.print-day thead tr:first-child th")]
    assert headings[0] == "Clínica Sol · Norte (Av. de la Ilustración 40) · jue 26/11/2026 · Dra. Carmen Núñez Gil (DER)"
    assert not desk.driver.find_elements(By.CSS_SELECTOR, ".timeline")
    desk.click(desk.find(By.ID, "print-back"))
    assert urllib.parse.unquote(desk.path()) == NORTE_DAY and desk.find(By.CSS_SELECTOR, ".timeline")


def test_the_center_s_week_fits_a_tablet_and_its_days_heads_stay(thursday):
    desk, _ = thursday
    show(desk, NORTE_WEEK, (768, 1024))
    days = desk.driver.find_elements(By.CSS_SELECTOR, ".week-grid section.week-day")
    assert [day.find_element(By.CSS_SELECTOR, ".day-head").text for day in days][-1] == "dom 29/11"
    width = desk.driver.execute_script("return document.documentElement.clientWidth")
    assert days[-1].rect["x"] + days[-1].rect["width"] <= width  # Sunday on the screen
    assert desk.driver.execute_script("return document.scrollingElement.scrollWidth") <= width  # nothing beside it
    cards = days[3].find_elements(By.CSS_SELECTOR, "article.card")
    assert len(cards) == 10 and cards[0].text.startswith("09:00 Lucía Moreno Gallardo")
    assert all(card.rect["x"] + card.rect["width"] <= days[3].rect["x"] + days[3].rect["width"] + 0.5 for card in cards)
    desk.driver.execute_script("arguments[0].scrollIntoView({block: 'end'})", cards[-1])
    assert desk.driver.execute_script("return window.scrollY") > 0
    assert on_top(desk, days[3].find_element(By.CSS_SELECTOR, ".day-head a"))  # which day it is, still


NORTE_MONTH = "/desk/month?month=11/2026&centerId=NORTE&typeId=MG-REVISION"


def test_the_month_fits_both_screens_and_prints_on_one_a4_page(thursday):
    """The center's month ("The month at a glance"): at 1280x800 and 768x1024 nothing beside the page, Sunday's
    column whole on the screen; printed by Chromium (print to PDF, A4), one page."""
    desk, _ = thursday
    for width, height in SIZES:
        show(desk, NORTE_MONTH, (width, height))
        cells = desk.driver.find_elements(By.CSS_SELECTOR, "table.month tbody tr:nth-child(2) td")
        assert len(cells) == 7 and cells[-1].find_element(By.CSS_SELECTOR, "a.date").text == "8"
        shown = desk.driver.execute_script("return document.documentElement.clientWidth")
        assert cells[-1].rect["x"] + cells[-1].rect["width"] <= shown, (width, cells[-1].rect)
        assert desk.driver.execute_script("return document.scrollingElement.scrollWidth") <= shown, width
        bars = desk.driver.find_elements(By.CSS_SELECTOR, "table.month td.day .bar")
        assert bars and all(bar.rect["x"] + bar.rect["width"] <= shown for bar in bars)
    pdf = base64.b64decode(desk.driver.execute_cdp_cmd("Page.printToPDF", {
        "paperWidth": 8.27, "paperHeight": 11.69, "preferCSSPageSize": True, "printBackground": True})["data"])
    assert len(re.findall(rb"/Type\s*/Page[^s]", pdf)) == 1


def test_every_word_on_the_day_and_the_week_reads_at_a_contrast_of_4_5(thursday):
    from test_booking_browser import FAINT

    desk, _ = thursday
    for path in (NORTE_DAY, MARTIN_WEEK, NORTE_WEEK):
        show(desk, path)
        assert desk.driver.execute_script(FAINT) == [], path
