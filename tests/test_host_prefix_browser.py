"""The desk of a clinic reached by a path prefix in headless Chromium (docs/design.md, "A host of clinics"): logged
in at /clinica-a/desk/login, its day loads its stylesheet and script and polls for changes under the prefix, and
nothing it asks for leaves it. Skipped where test_desk_browser.py is."""

from selenium.webdriver.support.ui import WebDriverWait
from webtest.http import StopableWSGIServer

from test_desk_browser import browser, Desk, WAIT  # noqa: F401 (browser: the module's Chromium)
from test_host_prefix import A, folder, provider  # noqa: F401 (the host's folder and app)


def test_the_desk_of_a_prefix_clinic_asks_for_nothing_outside_its_prefix_in_chromium(browser, provider):
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {  # the refresh poll at once, not in 20 s
        "source": "window.setInterval = function (poll) { window.setTimeout(poll, 0); };"})
    server = StopableWSGIServer.create(provider)
    try:
        desk = Desk(browser, server, None, url=f"{server.application_url}{A}")
        desk.log_in()
        assert desk.path().startswith("/desk/day") and desk.status() == 200
        asked = "return performance.getEntriesByType('resource').map(function (e) { return new URL(e.name).pathname; })"
        WebDriverWait(browser, WAIT).until(lambda driver: f"/{A}/desk/version" in driver.execute_script(asked))
        paths = browser.execute_script(asked)
        assert {f"/{A}/desk/desk.css", f"/{A}/desk/desk.js"} <= set(paths)
        assert [path for path in paths if not path.startswith(f"/{A}/desk/")] == []
    finally:
        server.shutdown()
