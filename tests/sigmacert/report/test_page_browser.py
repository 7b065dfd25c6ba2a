"""The audit report file in a real headless browser (Debian chromium through Selenium/WebDriver).

Collected only with SIGMACERT_BROWSER=1 (`make test-browser`, tests/conftest.py); a missing chromium,
chromedriver or selenium is a failure, not a skip. The screenshots and the printed PDF are kept in
artifacts/screenshots/ (gitignored; SIGMACERT_SCREENSHOTS overrides the folder).
"""
from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from browser_fixtures import BOXES, SHOTS, chrome
from selenium.webdriver.common.by import By

ROOT = Path(__file__).resolve().parents[3]
CERT = ROOT / "artifacts" / "certificates" / "M100_E10.json"
KEY = ROOT / "artifacts" / "keys" / "public.pem"


def report(cert: Path, out: Path) -> int:
    """`sigmacert report` as a user runs it; returns its exit status."""
    return subprocess.run([sys.executable, "-m", "sigmacert", "report", str(cert), "--key", str(KEY), "-o", str(out),
                           "--quiet"], capture_output=True, text=True).returncode


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    d = chrome(str(tmp_path_factory.mktemp("profile")), "1100,900")
    try:
        yield d
    finally:
        d.quit()


def full_page_screenshot(driver, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.set_window_size(1100, 900)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1100, min(height + 100, 16000))
    path = SHOTS / name
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 10_000
    return path


def test_report_renders_its_plots_and_prints(driver, tmp_path):
    out = tmp_path / "M100_E10.html"
    assert report(CERT, out) == 0
    driver.get(out.as_uri())
    assert driver.title.startswith("sigmacert report: ACCEPT")
    assert driver.find_element(By.CSS_SELECTOR, "#verdict .word").text == "ACCEPT"
    boxes = driver.execute_script(BOXES)
    assert [b["id"] for b in boxes] == ["plot-tv", "plot-tradeoff", "plot-epsilon"]
    for b in boxes:  # laid out as real boxes, with drawn paths and glyphs (inline <use> references resolve)
        assert b["w"] > 400 and b["h"] > 200 and b["paths"] > 20 and b["glyphs"] > 50, b
        assert b["drawn"] > 0.75 * b["glyphs"], b  # spaces are glyphs with an empty box
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe  # e.g. a Content-Security-Policy violation would be logged here
    full_page_screenshot(driver, "report-M100_E10.png")
    pdf = base64.b64decode(driver.print_page())
    (SHOTS / "report-M100_E10.pdf").write_bytes(pdf)
    pages = pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages")
    assert pdf.startswith(b"%PDF") and 2 <= pages <= 8, pages


def test_rejected_report_says_reject(driver, tmp_path):
    env = json.loads(CERT.read_bytes())
    env["signatures"][0]["sig"] = base64.b64encode(bytes(64)).decode()
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(env))
    out = tmp_path / "tampered.html"
    assert report(bad, out) == 1
    driver.get(out.as_uri())
    verdict = driver.find_element(By.ID, "verdict")
    assert verdict.find_element(By.CLASS_NAME, "word").text == "REJECT" and "bad-signature" in verdict.text
    assert verdict.value_of_css_property("border-top-color") == "rgba(179, 38, 30, 1)"  # the red banner
    assert driver.execute_script("return document.querySelectorAll('svg').length") == 0
    full_page_screenshot(driver, "report-rejected.png")
