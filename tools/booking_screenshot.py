"""Screenshots of the clinic's booking page, for the docs (docs/screenshots/).

Builds the demo clinic in a temporary folder (`agenda seed --demo`), serves it in this process with its booking
page on (waitress on 127.0.0.1, any free port, the real clock), and books as a patient in headless Chromium at
390x844 (a phone) and 1280x800 (a computer): the center, the speciality, the visit's type, the week's times, the
details, the details sent blank (each field's words), the answer, the confirmation link's page and its answer.
The link's token is made as the sender makes it when it builds the message. Everything it starts is bounded in
time and stopped.

    .venv/bin/python tools/booking_screenshot.py [-o docs/screenshots] [--lang es|en]

Needs selenium, /usr/bin/chromium and /usr/bin/chromedriver (Debian's packages).
"""

import secrets
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from desk_screenshot import screenshot_options, start_chromium, WAIT  # noqa: E402 (tools/ is this script's own)
SIZES = ((390, 844), (1280, 800))
PRIVACY = ("Responsable: Clínica Sol SL, C/ Mayor 12, 28013 Madrid. Finalidad: gestionar su cita y las siguientes. "
           "Base: su petición y la prestación de asistencia sanitaria. Conservación: 5 años desde la última visita. "
           "Derechos: acceso, rectificación, supresión y los demás, escribiendo a dpo@clinicasol.es; puede reclamar "
           "ante la AEPD.")
SETTINGS = {"web_booking": "on", "web_privacy": PRIVACY, "public_url": "https://citas.clinicasol.es",
            "clinic_name": "Clínica Sol", "web_notice_hours": 24}
# (file name, the link pressed before it (None: none), what shows it is drawn)
STEPS = (("center", None, ".options"), ("speciality", "Clínica Sol - Centro", ".options"),
         ("type", "Medicina general", ".options"), ("times", "Revisión", "form fieldset"))
PATIENT = {"nombre": "Marta", "apellidos": "Iglesias Ramos", "nacimiento": "02/11/1979", "nif": "10000002Q",
           "telefono": "612345602", "correo": "marta.iglesias@example.es"}


def served(db):
    """The demo clinic's app with its booking page, on waitress in a thread; (its URL, the app, the server)."""
    import waitress
    import agenda

    app = agenda.create_app(db, secrets.token_hex(32), **SETTINGS)
    server = waitress.create_server(app, host="127.0.0.1", port=0, threads=4)
    threading.Thread(target=server.run, daemon=True).start()
    return f"http://127.0.0.1:{server.effective_port}", app, server


class Phone:
    """The page in headless Chromium; pages saved as PNGs at the size set."""

    def __init__(self, url, folder, lang, profile):
        self.driver = start_chromium(lang, profile)
        self.url, self.folder, self.written = url, folder, []

    def until(self, css):
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        try:
            return WebDriverWait(self.driver, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, css))
        except TimeoutException:
            raise SystemExit(f"no {css} on {self.driver.current_url}:\n"
                             + self.driver.execute_script("return document.body.innerText")) from None

    def size(self, width, height):
        self.width, self.height = width, height
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def press(self, text):
        from selenium.webdriver.common.by import By

        self.driver.find_element(By.XPATH, f"//main//*[self::a or self::button][starts-with(normalize-space(), "
                                           f"'{text}')]").click()

    def submit(self, drawn):
        from selenium.webdriver.common.by import By

        self.driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        self.until(drawn)

    def save(self, name):
        """The whole page at this width (a long form is saved whole), named booking-NAME-WxH.png."""
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": self.width, "height": max(self.height, height), "deviceScaleFactor": 1, "mobile": False})
        output = self.folder / f"booking-{name}-{self.width}x{self.height}.png"
        if not self.driver.save_screenshot(str(output)):
            raise SystemExit(f"chromium could not write {output}")
        self.size(self.width, self.height)
        self.written.append(output)


def book(phone, app, lang):
    """One booking through every step at the size set, each step saved."""
    from selenium.webdriver.common.by import By
    from _agenda.domain.web_requests import new_token

    phone.driver.get(f"{phone.url}/reservar?idioma={lang}")
    for name, pressed, drawn in STEPS:
        if pressed:
            phone.press(pressed)
        phone.until(drawn)
        phone.save(name)
    phone.driver.find_elements(By.CSS_SELECTOR, "label.choice")[0].click()
    phone.submit("#nombre")
    phone.save("details")
    phone.submit("#errores")
    phone.save("errors")
    for name, value in PATIENT.items():
        phone.driver.find_element(By.ID, name).send_keys(value)
    phone.driver.find_element(By.CSS_SELECTOR, "label[for=privacidad]").click()
    phone.submit(".said")
    phone.save("sent")
    with app.clinic.db.transaction() as conn:
        visit = conn.execute("SELECT max(id) FROM appointments WHERE pending = 'email'").fetchone()[0]
        token = new_token(conn, visit)
    phone.driver.get(f"{phone.url}/reservar/confirmar/{token}?idioma={lang}")
    phone.until("main form")
    phone.save("confirm")
    phone.submit(".said")
    phone.save("confirmed")


def main():
    args = screenshot_options(__doc__.split("\n\n")[0], "the page")
    args.output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="agenda-booking-screenshot-") as folder:
        db = Path(folder) / "clinic.db"
        subprocess.run([sys.executable, str(ROOT / "agenda.py"), "seed", "--demo", "--db", str(db)], check=True,
                       capture_output=True, timeout=60, cwd=ROOT)
        url, app, server = served(db)
        phone = Phone(url, args.output.resolve(), args.lang, Path(folder) / "profile")
        try:
            for width, height in SIZES:
                phone.size(width, height)
                book(phone, app, args.lang)
        finally:
            phone.driver.quit()
            server.close()
            app.clinic.db.close()
    for path in phone.written:
        print(f"Wrote {path}")


if __name__ == "__main__":
    main()
