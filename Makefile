# sigmacert: `make demo` and `make test` bootstrap a fresh .venv themselves.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
EXTRAS  ?= test,train,service,torch,jax,report,atlas
# torch==2.13.0 must be the CPU build: take it from the machine's wheel folder when there is one
PIP_FIND := $(if $(wildcard /opt/wheels/torch-*),--find-links /opt/wheels,)

.PHONY: install demo test bench reproduce clean example-opacus

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q $(PIP_FIND) -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

# The main job end to end on the default cell: find sigma, certify it with a fresh key
# (the private key lives in a temporary folder and is deleted), show the certificate, verify
# it independently, and write its audit report. Kept in $(DEMO_OUT)/ (gitignored): the
# certificate, the public key and the report, whose path is the last line printed.
M ?= 100
E ?= 10
LAMBDA ?= 0.1
DEMO_OUT ?= demo-out
demo: install
	$(BIN)/sigmacert sigma --steps $(M) --epochs $(E) --target $(LAMBDA)
	@mkdir -p "$(DEMO_OUT)" && d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(BIN)/sigmacert keygen -o "$$d/keys" && cp "$$d/keys/public.pem" "$(DEMO_OUT)/public.pem" && \
	$(BIN)/sigmacert certify --steps $(M) --epochs $(E) --target $(LAMBDA) --key "$$d/keys/private.pem" -o "$(DEMO_OUT)/cert.json" && \
	$(BIN)/sigmacert show "$(DEMO_OUT)/cert.json" && \
	$(BIN)/sigmacert-verify "$(DEMO_OUT)/cert.json" --key "$(DEMO_OUT)/public.pem" && \
	$(BIN)/sigmacert report "$(DEMO_OUT)/cert.json" --key "$(DEMO_OUT)/public.pem" -o "$(DEMO_OUT)/report.html"

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest
	$(BIN)/python -m proofs

# Opacus 1.6 trains a small MLP on scikit-learn's digits (offline) at the sigma of a committed
# certificate, verified first by the independent verifier; writes the release to $(OUT).
CERT ?= artifacts/certificates/M100_E10.json
OUT  ?= build/opacus-digits
example-opacus: install
	$(BIN)/python examples/opacus_digits.py --certificate $(CERT) --key artifacts/keys/public.pem -o $(OUT)
	$(BIN)/python examples/opacus_digits.py --epsilon 1 --delta 1e-5 --steps 100 --epochs 10 -o $(OUT)

bench: install
	$(BIN)/python benchmarks/bench_sigma.py
	$(BIN)/python benchmarks/bench_certify.py

# Regenerates docs/reproduction.md: every checkable number of the paper, ours beside theirs.
reproduce: install
	$(BIN)/python benchmarks/reproduce.py -o docs/reproduction.md

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache

# The service page (sigmacert serve, GET /) and the audit report file in a real headless
# browser: Debian chromium driven by Selenium through chromedriver; screenshots and the printed
# report go to artifacts/screenshots/. Not part of `make test`; needs, once:
#   apt-get install -y chromium chromium-driver
.PHONY: test-browser
test-browser: install
	$(BIN)/python -m pip install -q -e ".[browser]"
	SIGMACERT_BROWSER=1 $(BIN)/python -m pytest tests/service/test_service_browser.py tests/sigmacert/report/test_report_browser.py
