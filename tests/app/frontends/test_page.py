"""The reference chat page in a real headless Chromium (the OS package, driven by Selenium through the
system chromedriver: nothing is downloaded) against ``cometa serve --offline``: type a question, wait for
the streamed answer, find the citation links, and no console errors, at desktop and phone widths.

``COMETA_UPDATE_SCREENSHOTS=1`` also writes the screenshots to ``docs/img/`` (docs/api.md shows them)."""

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


def test_the_api_docs_render_offline_under_their_policy(server: str, browser: Any) -> None:
    """Issue 30: Swagger UI from this origin renders the operations, and the browser reports nothing
    refused (a script or style the policy blocks is a SEVERE console entry)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server + "/docs")
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock"))
    paths = {e.text for e in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert {"/ask", "/v1/chat/completions"} <= paths, paths
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def test_an_urgent_question_shows_the_guidance_first_and_alone(server: str, browser: Any) -> None:
    """Urgent first (issue 28): the real service, an emergency typed in the page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server + "/")
    browser.find_element(By.CSS_SELECTOR, "#key-box summary").click()
    browser.find_element(By.ID, "api-key").send_keys(API_KEY)
    box = browser.find_element(By.ID, "question")
    box.send_keys("my baby is 5 weeks old and has a fever of 38.4, should I give paracetamol?", Keys.ENTER)
    WebDriverWait(browser, 60).until(ec.text_to_be_present_in_element((By.ID, "status"), "Done."))
    urgent = browser.find_element(By.ID, "urgent")
    assert urgent.is_displayed() and urgent.get_attribute("role") == "alert"
    assert "Get help now" in urgent.text and "emergency" in urgent.text
    assert not browser.find_element(By.ID, "answer").is_displayed()
    assert not browser.find_elements(By.CSS_SELECTOR, "#citations .card")
    # Above everything else in the result: the first thing read.
    first = browser.execute_script("return document.getElementById('result').firstElementChild.id")
    assert first == "urgent"
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


# --- the page's rendering of what an offline server cannot produce: a verdict, disagreement, hostile text ---

SCRIPTED = [
    ("stage", {"stage": "retrieve", "status": "started"}),
    ("evidence", {"documents": [], "passages": []}),
    ("token", {"delta": "Exercise ", "index": 0}),
    ("token", {"delta": "helps [PMID:111].", "index": 1}),
    (
        "answer",
        {
            "answer": "Exercise helps [PMID:111]. Dosing differs [PMID:222].",
            "mode": "llm",
            "citations": [
                {
                    "pmid": "111",
                    "title": "Trial <img src=x onerror=alert(1)>",
                    "year": 2020,
                    "publication_types": ["Journal Article", "Randomized Controlled Trial"],
                    "url": "javascript:alert(1)",
                    "pmcid": "PMC1",
                    "notices": [
                        {
                            "type": "expression_of_concern",
                            "pmid": "999",
                            "text": "An expression of concern <img src=y onerror=alert(2)> was published.",
                        }
                    ],
                },
                {
                    "pmid": "222",
                    "title": "A review",
                    "year": 2019,
                    "publication_types": [],
                    "doc_class": "D2",
                    "notices": [
                        {
                            "type": "update",
                            "pmid": "333",
                            "text": "A newer version of this review exists: PMID 333.",
                        }
                    ],
                },
            ],
        },
    ),
    (
        "judge",
        {
            "note": "The sources disagree on how much exercise.",
            "pairs": [
                {
                    "a": "PMID 111",
                    "b": "PMID 222",
                    "classification": "DIVERGENT",
                    "divergence_topic": "dosing",
                }
            ],
        },
    ),
    (
        "done",
        {
            "request_id": "r1",
            "warnings": ["degraded: 1 of 3 PubMed searches failed (NCBI partly unavailable)"],
            "mode": "llm",
            "evidence_verdict": {
                "verdict": "weak",
                "reasons": ["One small trial supports it."],
                "signals": {
                    "documents": 1,
                    "dense_top": 0.5,
                    "rerank_top": None,
                    "tier": "strict",
                    "coverage": 0.5,
                    "absent_terms": 0,
                },
            },
        },
    ),
]


@pytest.fixture
def scripted_page() -> Iterator[str]:
    """The real page files in front of a scripted ``/ask/stream``."""
    import json

    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    from app.frontends import web_root
    from tests._procs import serve_in_thread

    types = {"index.html": "text/html", "chat.js": "text/javascript", "chat.css": "text/css"}

    async def page(request: Any) -> Response:
        name = request.path_params.get("name", "index.html")
        return Response(web_root().joinpath(name).read_bytes(), media_type=types[name])

    async def stream(request: Any) -> Response:
        body = "".join(f"id: {i}\nevent: {n}\ndata: {json.dumps(d)}\n\n" for i, (n, d) in enumerate(SCRIPTED))
        return Response(body, media_type="text/event-stream")

    routes = [Route("/", page), Route("/ui/{name}", page), Route("/ask/stream", stream, methods=["POST"])]
    with serve_in_thread(Starlette(routes=routes)) as base:
        yield base


def test_the_page_shows_verdict_disagreement_and_warnings_and_never_runs_server_text(
    scripted_page: str, browser: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(scripted_page + "/")
    browser.find_element(By.ID, "question").send_keys("Does exercise help?", Keys.ENTER)
    WebDriverWait(browser, 30).until(ec.text_to_be_present_in_element((By.ID, "status"), "Done."))

    verdict = browser.find_element(By.ID, "verdict").text
    assert "Evidence: weak" in verdict and "One small trial supports it." in verdict
    disagreement = browser.find_element(By.ID, "disagreement").text
    assert "how much exercise" in disagreement and "PMID 111 and PMID 222 differ on dosing" in disagreement
    notes = browser.find_element(By.ID, "notes").text
    assert "PubMed could not be fully searched" in notes
    answer = browser.find_element(By.ID, "answer")
    assert answer.text == "Exercise helps [1]. Dosing differs [2]."  # the checked answer replaced the tokens
    cards = browser.find_elements(By.CSS_SELECTOR, "#citations .card")
    assert "Trial <img src=x onerror=alert(1)>" in cards[0].text  # shown as text, never parsed as HTML
    assert (
        "2020 · Randomized Controlled Trial" in cards[0].text and "2019 · Review (full text)" in cards[1].text
    )
    # PubMed's notices on each source's card, as text.
    notices = [[n.text for n in c.find_elements(By.CSS_SELECTOR, ".notice")] for c in cards]
    assert notices == [
        ["An expression of concern <img src=y onerror=alert(2)> was published."],
        ["A newer version of this review exists: PMID 333."],
    ]
    hrefs = [a.get_attribute("href") for a in cards[0].find_elements(By.TAG_NAME, "a")]
    assert hrefs == ["https://pubmed.ncbi.nlm.nih.gov/111/", "https://pmc.ncbi.nlm.nih.gov/articles/PMC1/"]
    assert not browser.find_elements(By.CSS_SELECTOR, "#result img")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
