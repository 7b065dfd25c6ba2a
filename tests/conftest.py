"""Collection rules: the browser test is its own suite (`make test-browser`), not a skip in `make test`."""
import os

BROWSER_SUITE = ["service/routes/test_pages_browser.py", "sigmacert/report/test_page_browser.py"]
collect_ignore = [] if os.environ.get("SIGMACERT_BROWSER") == "1" else BROWSER_SUITE
