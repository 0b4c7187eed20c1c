"""The web page in headless Chromium (Debian's chromium + chromium-driver, driven by Selenium).

Opens the page served by the session server, asks the quickstart question against the
quickstart built from ``examples/quickstart/corpus.toml``, and checks the top hit, its score,
source, span and citation, the copy button, and the inspect view. A screenshot of the answer
is saved under the pytest tmp dir and its path printed.
"""

from __future__ import annotations

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait
from serve_support import EXPECTED, TOP_OFFLINE

QUESTION = "can I use this offline"


@pytest.fixture(scope="module")
def browser(chromium: str):
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1200,1000"):
        opts.add_argument(flag)
    # an explicit driver path: Selenium Manager must not try to download one
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"),
                              options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def test_page_asks_the_quickstart_question_and_shows_the_cited_top_hit(
        served, browser, tmp_path_factory: pytest.TempPathFactory) -> None:
    wait = WebDriverWait(browser, 30)
    browser.get(served.url + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    Select(browser.find_element(By.ID, "corpus")).select_by_value("quickstart")
    browser.find_element(By.ID, "question").send_keys(QUESTION)
    browser.find_element(By.ID, "k").clear()
    browser.find_element(By.ID, "k").send_keys("3")
    browser.find_element(By.ID, "ask").click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#hits li.hit")))

    hits = browser.find_elements(By.CSS_SELECTOR, "#hits li.hit")
    assert len(hits) == 3
    top = hits[0]
    citation = top.find_element(By.CSS_SELECTOR, ".citation").text
    assert citation.startswith("urna://sha256:") and citation.endswith("/" + TOP_OFFLINE)
    assert top.find_element(By.CSS_SELECTOR, ".text").text.startswith(
        "to keep that promise for a brand-new user")
    assert top.find_element(By.CSS_SELECTOR, ".source").text == "demo/04-offline-sovereignty.md"
    assert top.find_element(By.CSS_SELECTOR, ".span").text == "span 10\u201311"
    assert top.find_element(By.CSS_SELECTOR, ".score").text == "score 0.3921"  # spec §8.4(c)
    assert "route hybrid" in browser.find_element(By.ID, "status").text

    shot = tmp_path_factory.mktemp("artifacts") / "serve-quickstart.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 0
    print(f"\nscreenshot: {shot}")

    button = top.find_element(By.CSS_SELECTOR, ".copy")
    button.click()
    wait.until(lambda d: button.text in ("Copied", "Copy failed"))
    assert button.text == "Copied"


def test_inspect_view_shows_sections_encodings_and_hashes(served, browser) -> None:
    wait = WebDriverWait(browser, 30)
    browser.get(served.url + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    Select(browser.find_element(By.ID, "corpus")).select_by_value("quickstart-hybrid")
    browser.find_element(By.ID, "tab-inspect").click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#inspect table")))
    text = browser.find_element(By.ID, "inspect").text
    exp = EXPECTED["quickstart-hybrid.urna"]
    assert exp["content_hash"] in text and exp["file_hash"] in text
    for s in exp["inspect"]["sections"]:
        assert s["name"] in text and s["checksum"] in text
    assert "zstd" in text and "raw" in text  # encodings by name
    assert browser.find_element(By.ID, "ask-view").get_attribute("hidden") is not None
