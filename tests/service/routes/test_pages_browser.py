"""The service page in a real headless browser: Debian chromium driven by Selenium/WebDriver.

Collected only with SIGMACERT_BROWSER=1 (`make test-browser`, tests/conftest.py); a missing chromium,
chromedriver or selenium is a failure, not a skip. Needs:
    apt-get install -y chromium chromium-driver;  pip install -e ".[browser]"
"""
from __future__ import annotations

import base64
import json
import os
import re
import tempfile

import pytest
from browser_fixtures import chrome
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from service_fixtures import Server, cleanup, make_key, make_token


@pytest.fixture(scope="module")
def setup():
    d = tempfile.mkdtemp(prefix="sigmacert-browser-")
    key = make_key(os.path.join(d, "keys"))
    tokens = os.path.join(d, "tokens.txt")
    token = make_token(tokens, "browser")
    srv = Server(d, key, tokens).start()
    driver = chrome(os.path.join(d, "profile"), "1200,1000")
    try:
        yield srv, driver, token, d
    finally:
        driver.quit()
        srv.stop()
        cleanup(d)


def text_of(driver, el_id):
    return driver.find_element(By.ID, el_id).text


def until(driver, fn, timeout=60):
    return WebDriverWait(driver, timeout, poll_frequency=0.25).until(lambda d: fn(d))


def fill(driver, el_id, value):
    el = driver.find_element(By.ID, el_id)
    el.clear()
    el.send_keys(value)


def test_request_watch_browse_and_verify_in_a_browser(setup):
    srv, driver, token, d = setup
    driver.get(srv.url + "/")
    assert "sigmacert" in driver.title
    keyid = srv.http.get("/healthz").json()["keyid"]
    until(driver, lambda dr: keyid in text_of(dr, "issuer-key"))

    # a wrong token is refused with the server's reason on the page
    fill(driver, "token", "sct_wrong")
    for el_id, v in (("steps", "4"), ("epochs", "2"), ("target", "0.3"), ("sigma", "2")):
        fill(driver, el_id, v)
    driver.find_element(By.ID, "submit").click()
    until(driver, lambda dr: "401" in text_of(dr, "error"))

    # request a certificate and watch it finish
    fill(driver, "token", token)
    driver.find_element(By.ID, "submit").click()
    until(driver, lambda dr: text_of(dr, "job-status") == "done", 180)
    jid = text_of(driver, "job-id")
    assert "certified TV <=" in text_of(driver, "job-detail")
    link = driver.find_element(By.ID, "job-download")
    assert link.is_displayed() and link.get_attribute("href").endswith(f"/v1/certificates/{jid}/envelope")

    # the archive lists it
    until(driver, lambda dr: jid in text_of(dr, "archive-body"))
    row = [r for r in driver.find_elements(By.CSS_SELECTOR, "#archive-body tr") if jid in r.text][0]
    assert "done" in row.text and "0.3" in row.text

    # closed-form and exact sigma
    for el_id, v in (("steps", "100"), ("epochs", "10"), ("target", "0.1")):
        fill(driver, el_id, v)
    driver.find_element(By.ID, "lookup").click()
    until(driver, lambda dr: "1.426215" in text_of(dr, "sigma-result") or "pending" in text_of(dr, "sigma-result"), 120)

    # the form asks the dp and tpr questions too: the exact sigma of (1, 1e-5)-DP and of TPR <= 0.002 at FPR 1e-3
    Select(driver.find_element(By.ID, "kind")).select_by_value("dp")
    assert not driver.find_element(By.ID, "target").is_displayed()
    for el_id, v in (("epsilon", "1"), ("delta", "1e-5")):
        fill(driver, el_id, v)
    driver.find_element(By.ID, "lookup").click()
    until(driver, lambda dr: "1.36919" in text_of(dr, "sigma-result") or "pending" in text_of(dr, "sigma-result"), 120)
    Select(driver.find_element(By.ID, "kind")).select_by_value("tpr")
    for el_id, v in (("fpr", "0.001"), ("tpr", "0.002")):
        fill(driver, el_id, v)
    driver.find_element(By.ID, "lookup").click()
    until(driver, lambda dr: "1.645356" in text_of(dr, "sigma-result") or "pending" in text_of(dr, "sigma-result"), 120)
    # and requests a dp certificate: the job's detail names the kind
    Select(driver.find_element(By.ID, "kind")).select_by_value("dp")
    for el_id, v in (("steps", "4"), ("epochs", "2"), ("epsilon", "1"), ("delta", "0.1"), ("sigma", "2")):
        fill(driver, el_id, v)
    driver.find_element(By.ID, "submit").click()
    # the earlier TV job is done too: wait for the page to show the new job's detail, then its status
    until(driver, lambda dr: "(1, 0.1)-DP" in text_of(dr, "job-detail") and text_of(dr, "job-status") == "done", 300)
    Select(driver.find_element(By.ID, "kind")).select_by_value("tv")

    # verify an uploaded certificate file: the real one is accepted, a tampered one rejected
    env = srv.http.get(f"/v1/certificates/{jid}/envelope").content
    good = os.path.join(d, "good.json")
    with open(good, "wb") as f:
        f.write(env)
    driver.find_element(By.ID, "verify-file").send_keys(good)
    until(driver, lambda dr: text_of(dr, "verify-result").startswith("ACCEPT"), 120)
    e = json.loads(env)
    e["payload"] = base64.b64encode(base64.b64decode(e["payload"]).replace(b'"0.3"', b'"0.2"')).decode()
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        json.dump(e, f)
    driver.find_element(By.ID, "verify-file").send_keys(bad)
    until(driver, lambda dr: text_of(dr, "verify-result").startswith("REJECT"), 120)

    # no script errors (the refused request's 401 is the only expected console error)
    errors = [m for m in driver.get_log("browser") if m["level"] == "SEVERE" and "401" not in m["message"]]
    assert not errors, errors


def test_detail_view_shows_live_progress_then_the_report_with_its_plots(setup):
    """The detail view (/#ID): a running job's stage and progress, live, and its Cancel button; a done
    job's download link and its audit report (the server's `sigmacert report` page) with three drawn
    plots. Two screenshots are kept with the report's: artifacts/screenshots/service-detail.png (the
    verdict) and service-detail-plots.png (the frame scrolled to the TV plot)."""
    from browser_fixtures import BOXES, SHOTS
    srv, driver, token, d = setup
    auth = {"Authorization": f"Bearer {token}"}
    # the form takes the scheme: fixed bins, M=4 bins, T=7 iterations (E = 2), whose exact sigma is not
    # the random-allocation one of (4, 2)
    from certifier.numerics.schemes import exact_sigma
    from certifier.params import parse_target
    fixed, random = (exact_sigma(4, 2, parse_target("0.3"), s) for s in ("fixed-bins", "random-allocation"))
    assert fixed != random
    driver.get(srv.url + "/")
    Select(driver.find_element(By.ID, "scheme")).select_by_value("fixed-bins")
    for el_id, v in (("steps", "4"), ("epochs", ""), ("iterations", "7"), ("target", "0.3")):
        fill(driver, el_id, v)
    driver.find_element(By.ID, "lookup").click()
    until(driver, lambda dr: f"exact sigma {fixed}" in text_of(dr, "sigma-result"), 120)

    long = srv.http.post("/v1/certificates", json={"steps": 500, "epochs": 10, "target": "0.1"}, headers=auth).json()
    driver.get(f"{srv.url}/#{long['id']}")
    until(driver, lambda dr: text_of(dr, "job-id") == long["id"])
    fill(driver, "token", token)  # the Cancel button sends it
    # the certifier's own stage (not the worker's "starting"), its percent and the seconds so far
    live = re.compile(r"^(?!starting)\S.* \d+ %, \d+\.\d s$")
    until(driver, lambda dr: text_of(dr, "job-status") == "running" and live.match(text_of(dr, "job-stage")), 120)
    value = float(driver.find_element(By.ID, "job-progress").get_attribute("value"))
    assert 0 <= value <= 100 and f" {int(value + 0.5)} %" in text_of(driver, "job-stage")  # toFixed(0)
    driver.find_element(By.ID, "job-cancel").click()
    until(driver, lambda dr: text_of(dr, "job-status") == "cancelled")

    done = srv.http.post("/v1/certificates", json={"steps": 2, "epochs": 4, "target": "0.2"}, headers=auth).json()
    driver.get(f"{srv.url}/#{done['id']}")
    until(driver, lambda dr: text_of(dr, "job-id") == done["id"] and text_of(dr, "job-status") == "done", 180)
    link = driver.find_element(By.ID, "job-download")
    assert link.get_attribute("href").endswith(f"/v1/certificates/{done['id']}/envelope")
    assert link.get_attribute("download") == f"{done['id']}.json"
    frame = driver.find_element(By.ID, "job-report")
    assert frame.is_displayed() and frame.size["height"] > 400
    driver.switch_to.frame(frame)
    until(driver, lambda dr: dr.find_elements(By.CSS_SELECTOR, "#verdict .word"), 180)
    assert driver.find_element(By.CSS_SELECTOR, "#verdict .word").text == "ACCEPT"
    boxes = driver.execute_script(BOXES)
    assert [b["id"] for b in boxes] == ["plot-tv", "plot-tradeoff", "plot-epsilon"]
    for b in boxes:  # real boxes with drawn paths and glyphs
        assert b["w"] > 300 and b["h"] > 150 and b["paths"] > 20 and b["glyphs"] > 50, b
        assert b["drawn"] > 0.75 * b["glyphs"], b
    SHOTS.mkdir(parents=True, exist_ok=True)
    for name, target in (("service-detail.png", "verdict"), ("service-detail-plots.png", "plot-tv")):
        driver.execute_script(f"document.getElementById('{target}').scrollIntoView()")  # inside the frame
        driver.switch_to.default_content()
        driver.execute_script("document.getElementById('job').scrollIntoView()")
        assert driver.save_screenshot(str(SHOTS / name)) and (SHOTS / name).stat().st_size > 10_000
        driver.switch_to.frame(driver.find_element(By.ID, "job-report"))
    driver.switch_to.default_content()
    errors = [m for m in driver.get_log("browser") if m["level"] == "SEVERE" and "401" not in m["message"]]
    assert not errors, errors  # e.g. a Content-Security-Policy violation of the frame would show here
