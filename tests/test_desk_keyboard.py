"""Booking from the keyboard in a real browser (headless Chromium, as test_desk_browser.py, whose skip rule
and fixtures this file shares): from the day view to a booked visit for a patient already registered, the
visit type and insurance at their defaults, in 15 key presses or fewer, each one a real key sent to the page
and counted (the characters typed into the search are not); the keys walk only the cells where a visit of the
doctor's fits, and each card wears its type's colour. The keys: docs/desk.md."""

from test_desk_browser import browser, clinic_desk, WAIT  # noqa: F401 (fixtures; skipped without a browser)
from conftest import valid_dni

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

MOST_KEYS = 15


class Keyboard:
    """Real key presses sent to whatever has the focus, each counted but the characters of a search."""

    def __init__(self, desk):
        self.desk, self.pressed = desk, []

    def press(self, key, name, shift=False):
        chain = ActionChains(self.desk.driver)
        if shift:
            chain.key_down(Keys.SHIFT).send_keys(key).key_up(Keys.SHIFT)  # one press of a key held with shift
        else:
            chain.send_keys(key)
        chain.perform()
        self.pressed.append(name)

    def press_to_leave(self, key, name):
        """A key that loads another page: pressed, and waited for until that page has replaced this one."""
        driver = self.desk.driver
        driver.execute_script("window.deskPageBefore = true")  # gone with this document
        self.press(key, name)
        WebDriverWait(driver, WAIT).until(lambda d: d.execute_script(
            "return window.deskPageBefore !== true && document.readyState === 'complete'"))
        self.settled()

    def settled(self):
        """Wait until the page has put its focus somewhere: a browser applies `autofocus` at its next
        rendering, which may come after the load on a busy machine."""
        WebDriverWait(self.desk.driver, WAIT).until(lambda d: d.execute_script(
            "return document.activeElement !== null && document.activeElement !== document.body"))

    def type(self, text):
        ActionChains(self.desk.driver).send_keys(text).perform()  # a search's characters: not counted

    def focused(self):
        """(tag, id, text, href) of the element with the focus."""
        return tuple(self.desk.driver.execute_script(
            "var e = document.activeElement; return [e.tagName, e.id, e.textContent.trim(), e.getAttribute('href')]"))


def test_a_patient_is_booked_from_the_day_view_in_fifteen_keys_or_fewer(clinic_desk):  # noqa: F811
    desk, api = clinic_desk()
    patient = api.new_patient(nif="10000001S", name="Evarista", surname="Quintanilla")
    desk.open("/desk/day?centerId=C1")  # Monday 23/11/2026 at 08:00: Javier Ruiz and Lucía Martín, from 09:00
    keys = Keyboard(desk)
    keys.settled()
    assert keys.focused()[1] == "q"  # the page opens in the search box
    keys.press(Keys.ARROW_DOWN, "↓")  # the next free slot: 09:00, the first column's (Javier Ruiz)
    assert keys.focused()[2] == "09:00 + libre" and "doctorId=RUIZ" in keys.focused()[3]
    keys.press("2", "2")  # the second column: Lucía Martín's first free slot
    assert keys.focused()[2] == "09:00 + libre" and "doctorId=MARTIN" in keys.focused()[3]
    keys.press("n", "n")  # her next one
    assert keys.focused()[2] == "09:30 + libre" and "doctorId=MARTIN" in keys.focused()[3]
    keys.press_to_leave(Keys.ENTER, "Intro")  # the booking page, the focus in its search
    assert desk.path().startswith("/desk/book?") and keys.focused()[1] == "q"
    keys.type("quintanilla")
    keys.press_to_leave(Keys.ENTER, "Intro")  # found: the focus on their "Reservar"
    assert keys.focused()[:3] == ("BUTTON", "", "Reservar")
    keys.press_to_leave(Keys.ENTER, "Intro")
    assert desk.flash() == "Cita de Evarista Quintanilla reservada el 23/11/2026 a las 09:30. No se enviará ningún correo: el paciente no tiene correo."
    assert len(keys.pressed) <= MOST_KEYS, keys.pressed
    booked, = api.get("/appointments?nif=10000001S").json["data"]
    assert (booked["patientId"], booked["doctorId"], booked["date"], booked["time"]) == (
        patient, "MARTIN", "23/11/2026", "09:30")
    assert booked["extraData"]["insuranceId"] is None  # the insurance at its default: none asked of her


def test_the_keys_walk_the_free_slots_and_leave_a_search_its_letters(clinic_desk):  # noqa: F811
    desk, api = clinic_desk()
    api.book(api.new_patient(), date="24/11/2026", time="09:30")
    desk.open("/desk/day?date=24/11/2026&centerId=C1")
    keys = Keyboard(desk)
    keys.settled()
    keys.press("n", "n")  # typed in the empty search: a name may start with it
    assert keys.focused()[1] == "q" and desk.driver.execute_script("return document.activeElement.value") == "n"
    keys.press(Keys.BACKSPACE, "⌫")
    keys.press(Keys.ARROW_DOWN, "↓")
    walked = [keys.focused()[2]]
    for key in ("2", "n", "n", "p", Keys.ARROW_UP, Keys.ARROW_DOWN, "1", "n"):
        keys.press(key, key)
        walked.append(keys.focused()[2] + (" MARTIN" if "doctorId=MARTIN" in keys.focused()[3] else " RUIZ"))
    assert walked == ["09:00 + libre", "09:00 + libre MARTIN", "10:00 + libre MARTIN",  # 09:30 is taken
                      "10:30 + libre MARTIN", "10:00 + libre MARTIN", "09:00 + libre MARTIN", "10:00 + libre MARTIN",
                      "09:00 + libre RUIZ", "09:20 + libre RUIZ"]
    desk.open("/desk/book?doctorId=MARTIN&date=24/11/2026&time=10:00&centerId=C1")
    keys.settled()
    assert keys.focused()[1] == "q"
    desk.driver.execute_script("document.activeElement.blur()")  # the focus elsewhere: "/" finds the search here too
    keys.press("/", "/")
    assert keys.focused()[1] == "q" and desk.driver.execute_script("return document.activeElement.value") == ""


def test_a_slot_lost_meanwhile_is_one_key_from_the_next_free_one(clinic_desk):  # noqa: F811
    desk, api = clinic_desk()
    patient = api.new_patient(nif="10000001S", name="Evarista", surname="Quintanilla")
    desk.open("/desk/book?doctorId=MARTIN&date=24/11/2026&time=09:30&centerId=C1")
    keys = Keyboard(desk)
    keys.settled()
    keys.type("quintanilla")
    keys.press_to_leave(Keys.ENTER, "Intro")
    keys.press(Keys.TAB, "⇧Tab", shift=True)  # from their "Reservar" back to the reason
    keys.type("Control")
    api.book(api.new_patient(), date="24/11/2026", time="09:30")  # another receptionist takes the slot meanwhile
    keys.press_to_leave(Keys.ENTER, "Intro")
    assert desk.status() == 409 and keys.focused()[:3] == ("BUTTON", "", "Reservar")  # the first slot offered
    keys.press_to_leave(Keys.ENTER, "Intro")
    assert desk.flash() == "Cita de Evarista Quintanilla reservada el 24/11/2026 a las 09:00. No se enviará ningún correo: el paciente no tiene correo."
    booked, = api.get("/appointments?nif=10000001S").json["data"]
    assert (booked["patientId"], booked["time"], booked["reason"]) == (patient, "09:00", "Control")


def test_the_keys_skip_the_cells_where_no_visit_fits_and_cards_wear_their_types_colour(clinic_desk):  # noqa: F811
    from test_desk_fits import CATALOG
    desk, api = clinic_desk(CATALOG)
    for n, (doctor, surname) in enumerate((("MUNOZ", "Uno"), ("SOLER", "Dos"), ("MARTIN", "Tres")), 1):
        api.book(api.new_patient(nif=valid_dni(n), surname=surname, phone=f"61234560{n}"), date="23/11/2026",
                 time="10:00", doctor=doctor)  # both boxes held 10:00-11:00 by two sessions
    desk.open("/desk/day?centerId=C1")  # Monday 23/11/2026 at 08:00: Muñoz, Prats, Martín, Soler
    keys = Keyboard(desk)
    keys.settled()
    keys.press(Keys.ARROW_DOWN, "↓")  # out of the search, onto the first free cell
    keys.press("2", "2")  # Júlia Prats, the third physiotherapist: her first free cell
    walked = [keys.focused()[2]]
    for _ in range(4):
        keys.press("n", "n")
        walked.append(keys.focused()[2])
    assert walked == ["09:00 + libre", "09:15 + libre · Revisión de fisioterapia",
                      "09:30 + libre · Revisión de fisioterapia", "09:45 + libre · Revisión de fisioterapia",
                      "11:00 + libre"]  # 10:00 to 10:45: no box is free, no visit of hers fits
    assert "typeId=FIS-REV" in desk.driver.execute_script(
        "return document.querySelector('.timeline a[data-slot=\"09:15\"][href*=\"doctorId=PRATS&\"]').href")
    looks = desk.driver.execute_script(
        "return Array.from(document.querySelectorAll('.timeline article.card')).map(function (card) {"
        " var style = getComputedStyle(card); return [card.querySelector('.who').textContent.trim(),"
        " style.backgroundColor, style.borderRightColor]; })")
    colours = {who.split()[-1]: (background, edge) for who, background, edge in looks}
    assert colours["Tres"] != colours["Uno"] == colours["Dos"]  # Martín's untyped visit, and two sessions
    assert colours["Tres"][0] == "rgb(255, 255, 255)" and colours["Uno"][0] == "rgb(253, 224, 197)"
    legend = desk.find(By.CSS_SELECTOR, "ul.legend")
    assert legend.text.split("\n") == ["Revisión de fisioterapia", "Sesión de fisioterapia", "sin tipo"]
    timeline = desk.find(By.CSS_SELECTOR, ".timeline")
    assert legend.rect["y"] + legend.rect["height"] <= timeline.rect["y"]  # above the timeline, not over it


def test_the_waiting_room_calls_in_and_finishes_from_the_keyboard(clinic_desk, clock):  # noqa: F811
    """The waiting room (docs/desk.md): ↓ from the search box reaches the first row's first button, ↓ the next
    row's; Enter presses it, one POST, and the page comes back with the mark."""
    desk, api = clinic_desk()
    first = api.book(api.new_patient(), date="23/11/2026", time="09:00")
    api.book(api.new_patient(nif="10000001S", name="Pablo", surname="Ortega"), date="23/11/2026", time="09:30")
    clock.set(2026, 11, 23, 8, 50)
    desk.log_in()
    desk.open("/desk/waiting?date=23/11/2026&centerId=C1")
    keys = Keyboard(desk)
    keys.settled()
    keys.press(Keys.ARROW_DOWN, "↓")
    assert keys.focused()[:3] == ("BUTTON", "", "Llegó")  # Ana García's row, the first still to come
    keys.press(Keys.ARROW_DOWN, "↓")
    keys.press(Keys.ARROW_UP, "↑")
    assert keys.focused()[:3] == ("BUTTON", "", "Llegó")
    keys.press(Keys.TAB, "Tab")
    assert keys.focused()[:3] == ("BUTTON", "", "Pasa a consulta")
    keys.press_to_leave(Keys.ENTER, "Intro")  # straight in: arrived and called in
    assert desk.flash() == "Ana García: ▶ pasa a consulta."
    keys.press(Keys.ARROW_DOWN, "↓")
    assert keys.focused()[:3] == ("BUTTON", "", "Ha terminado")
    keys.press_to_leave(Keys.ENTER, "Intro")
    assert desk.flash() == "Ana García: ✔ atendido." and len(keys.pressed) == 7
    row = api.db().execute("SELECT attendance, arrived_at, called_in_at FROM appointments WHERE id = ?", (first,))
    assert tuple(row.fetchone()) == ("seen", "2026-11-23T07:50:00+00:00", "2026-11-23T07:50:00+00:00")
