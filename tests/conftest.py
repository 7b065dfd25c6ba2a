"""Collection rules: the browser test is its own suite (`make test-browser`), not a skip in `make test`."""
import os

collect_ignore = [] if os.environ.get("SIGMACERT_BROWSER") == "1" else ["test_service_browser.py"]
