"""Headless Debian chromium through Selenium/WebDriver, shared by the browser suite."""
from __future__ import annotations

import os
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = os.environ.get("SIGMACERT_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SIGMACERT_CHROMEDRIVER", "/usr/bin/chromedriver")


def chrome(profile: str, size: str) -> webdriver.Chrome:
    """A headless chromium with its own profile folder, no network of its own, the browser log kept."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-extensions", "--disable-sync",
                 "--disable-component-update", "--disable-default-apps", "--no-first-run",
                 f"--window-size={size}", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))


# Where screenshots go (gitignored; SIGMACERT_SCREENSHOTS overrides), and the figures' boxes in the page
ROOT = Path(__file__).resolve().parent.parent
SHOTS = Path(os.environ.get("SIGMACERT_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))
BOXES = """return Array.from(document.querySelectorAll('figure svg')).map(s => {
  const r = s.getBoundingClientRect();
  const glyphs = Array.from(s.querySelectorAll('use'))
    .filter(u => (u.getAttribute('xlink:href') || '').includes('-DejaVuSans-'));
  return {id: s.parentElement.id, w: r.width, h: r.height, paths: s.querySelectorAll('path').length,
          glyphs: glyphs.length, drawn: glyphs.filter(u => u.getBBox().width > 0).length};
});"""
