"""The reference chat page in a real headless Chromium (the OS package, driven by Selenium through the
system chromedriver: nothing is downloaded) against ``cometa serve --offline``: type a question, wait for
the streamed answer, find the citation links, and no console errors, at desktop and phone widths.

``COMETA_UPDATE_SCREENSHOTS=1`` also writes the screenshots to ``docs/img/`` (the README shows them)."""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._paths import REPO
from tests.app.frontends.conftest import API_KEY

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
QUESTION = (
    "my mom has a mass on her pancreas and her CA 19 9 came back really high, is the whipple pointless?"
)


@pytest.fixture
def browser() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver")
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("no chromium/chromedriver (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _screenshot(driver: Any, path: Path, width: int, height: int, mobile: bool) -> None:
    """The whole page at a device width (CDP: beyond the viewport), written to ``path``."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
    )
    full = driver.execute_script("return document.documentElement.scrollHeight")
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"captureBeyondViewport": True, "clip": {"x": 0, "y": 0, "width": width, "height": full, "scale": 1}},
    )
    path.write_bytes(base64.b64decode(shot["data"]))


@pytest.mark.parametrize(
    ("width", "height", "mobile", "name"), [(1280, 900, False, "desktop"), (390, 844, True, "phone")]
)
def test_a_question_typed_in_the_page_gets_a_cited_answer(
    server: str, browser: Any, tmp_path: Path, width: int, height: int, mobile: bool, name: str
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    assert httpx.get(server + "/", timeout=10).status_code == 200
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
    )
    browser.get(server + "/")
    box = browser.find_element(By.ID, "question")
    assert browser.switch_to.active_element == box  # keyboard first: the question box has the focus
    # The server wants a key: open "API key" from the keyboard, type it, close it again.
    summary = browser.find_element(By.CSS_SELECTOR, "#key-box summary")
    summary.send_keys(Keys.ENTER)
    browser.find_element(By.ID, "api-key").send_keys(API_KEY)
    summary.send_keys(Keys.ENTER)
    box.click()
    box.send_keys(QUESTION)
    box.send_keys(Keys.ENTER)  # Enter asks; no mouse
    WebDriverWait(browser, 120).until(ec.text_to_be_present_in_element((By.ID, "status"), "Done."))

    links = browser.find_elements(
        By.CSS_SELECTOR, "#citations .card a[href^='https://pubmed.ncbi.nlm.nih.gov/']"
    )
    assert links, browser.find_element(By.ID, "result").text
    inline = browser.find_elements(By.CSS_SELECTOR, "#answer a[href^='https://pubmed.ncbi.nlm.nih.gov/']")
    assert inline and inline[0].text.startswith("[")
    cards = browser.find_elements(By.CSS_SELECTOR, "#citations .card")
    assert all(c.find_element(By.CSS_SELECTOR, ".title").text for c in cards)
    verdict = browser.find_element(By.ID, "verdict")
    assert verdict.is_displayed() and "quoted" in verdict.text  # offline, no LLM: said in plain words
    # Usable at this width: nothing wider than the screen.
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")

    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors

    shot = tmp_path / f"chat-{name}.png"
    _screenshot(browser, shot, width, height, mobile)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("COMETA_UPDATE_SCREENSHOTS") == "1":
        shutil.copy(shot, REPO / "docs" / "img" / shot.name)
