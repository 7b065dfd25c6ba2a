# sigmacert: `make demo` and `make test` bootstrap a fresh .venv themselves.
# `make demo` installs what the demo needs (the core and the `report` extra: matplotlib);
# `make test` adds every other extra (torch, jax, dask, ...). Each has its own stamp, so
# `make demo` then `make test` installs the rest, and a changed pyproject.toml reinstalls.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test
DEMO_EXTRAS ?= report
EXTRAS  ?= test,train,service,torch,jax,report,atlas,bench,pld,release
# torch==2.13.0 must be the CPU build: take it from the machine's wheel folder when there is one
PIP_FIND := $(if $(wildcard /opt/wheels/torch-*),--find-links /opt/wheels,)
PIP     := $(BIN)/python -m pip install --progress-bar off --disable-pip-version-check $(PIP_FIND)
say     = @printf '\n== %s\n' "$(1)"

.PHONY: install install-demo demo test bench reproduce clean example-opacus release-demo

$(BIN)/python:
	$(call say,make: creating $(VENV) with $(PY))
	$(PY) -m venv $(VENV)
	$(call say,make: upgrading pip in $(VENV))
	$(BIN)/python -m pip install --progress-bar off --disable-pip-version-check --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(call say,make: installing sigmacert with the extra [$(DEMO_EXTRAS)] (the core and matplotlib: what the demo needs))
	$(PIP) -e ".[$(DEMO_EXTRAS)]"
	touch $(DEMO_STAMP)
	$(call say,make: installed; the commands are in $(BIN)/ (or: source $(BIN)/activate))

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(call say,make: installing sigmacert with every extra [$(EXTRAS)] (torch and jax and dask: several minutes))
	$(PIP) -e ".[$(EXTRAS)]"
	touch $(TEST_STAMP) $(DEMO_STAMP)
	$(call say,make: installed; the commands are in $(BIN)/ (or: source $(BIN)/activate))

RELEASE_STAMP := $(VENV)/.installed-release
$(RELEASE_STAMP): pyproject.toml | $(BIN)/python
	$(call say,make: installing sigmacert with the extras [report,train,release] (the release demo))
	$(PIP) -e ".[report,train,release]"
	touch $(RELEASE_STAMP)

install-demo: $(DEMO_STAMP)
install: $(TEST_STAMP)

# The main job end to end on the default cell: find sigma, certify it with a fresh key
# (the private key lives in a temporary folder and is deleted), show the certificate, verify
# it independently, and write its audit report. Kept in $(DEMO_OUT)/ (gitignored): the
# certificate, the public key and the report, whose path is the last line printed.
M ?= 100
E ?= 10
LAMBDA ?= 0.1
DEMO_OUT ?= demo-out
demo: install-demo
	$(call say,demo 1/5: the closed-form and the exact sigma for M=$(M) E=$(E) lambda=$(LAMBDA))
	$(BIN)/sigmacert sigma --steps $(M) --epochs $(E) --target $(LAMBDA)
	@mkdir -p "$(DEMO_OUT)" && d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	printf '\n== %s\n' "demo 2/5: a fresh Ed25519 key (the private key stays in a temporary folder), then certify" && \
	$(BIN)/sigmacert keygen -o "$$d/keys" && cp "$$d/keys/public.pem" "$(DEMO_OUT)/public.pem" && \
	$(BIN)/sigmacert certify --steps $(M) --epochs $(E) --target $(LAMBDA) --key "$$d/keys/private.pem" -o "$(DEMO_OUT)/cert.json" --force && \
	printf '\n== %s\n' "demo 3/5: what the certificate claims (reading is not verifying)" && \
	$(BIN)/sigmacert show "$(DEMO_OUT)/cert.json" && \
	printf '\n== %s\n' "demo 4/5: the independent verifier replays it" && \
	$(BIN)/sigmacert-verify "$(DEMO_OUT)/cert.json" --key "$(DEMO_OUT)/public.pem" && \
	printf '\n== %s\n' "demo 5/5: the audit report (open it in a browser)" && \
	$(BIN)/sigmacert report "$(DEMO_OUT)/cert.json" --key "$(DEMO_OUT)/public.pem" -o "$(DEMO_OUT)/report.html" --force

# The suite runs in TEST_JOBS processes (pytest-xdist), one test file per process at a time, so a
# file's module fixtures are built once; TEST_JOBS=1 runs it in one process.
TEST_JOBS ?= 2
test: install
	$(call say,make test: ruff and the test suite ($(TEST_JOBS) processes) and then the sympy proofs)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest $(if $(filter 1,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile) --durations=25
	$(BIN)/python -m proofs

# Opacus 1.6 trains a small MLP on scikit-learn's digits (offline) at the sigma of a committed
# certificate, verified first by the independent verifier; writes the release to $(OUT).
CERT ?= artifacts/certificates/M100_E10.json
OUT  ?= build/opacus-digits
example-opacus: install
	$(BIN)/python examples/opacus_digits.py --certificate $(CERT) --key artifacts/keys/public.pem -o $(OUT)
	$(BIN)/python examples/opacus_digits.py --epsilon 1 --delta 1e-5 --steps 100 --epochs 10 -o $(OUT)

# A release a stranger can check (docs/release.md): train digits at the committed certificate, seal it with
# a fresh ECDSA release key and a model card, check it with OpenSSF's model_signing and sigmacert-verify
# --release, show that one changed byte is rejected, archive the certificate in a local log, and write the
# report with the release binding and the log inclusion. Kept in $(RELEASE_OUT)/ (gitignored).
RELEASE_OUT ?= demo-out/release
release-demo: $(RELEASE_STAMP)
	@rm -rf "$(RELEASE_OUT)" && mkdir -p "$(RELEASE_OUT)" && d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	printf '\n== %s\n' "release 1/6: an ECDSA P-256 release key and an Ed25519 log key (private halves in a temporary folder)" && \
	$(BIN)/sigmacert keygen --kind ecdsa-p256 -o "$$d/release" && $(BIN)/sigmacert keygen -o "$$d/log" >/dev/null && \
	cp "$$d/release/public.pem" "$(RELEASE_OUT)/release-public.pem" && cp "$$d/log/public.pem" "$(RELEASE_OUT)/log-public.pem" && \
	printf '\n== %s\n' "release 2/6: train digits at $(CERT) (verified first), seal the directory with a model card" && \
	$(BIN)/sigmacert train --certificate $(CERT) --key artifacts/keys/public.pem --dataset digits \
	  -o "$(RELEASE_OUT)/model" --seed-opening "$$d/seed-opening.json" --release "$$d/release/private.pem" --card && \
	printf '\n== %s\n' "release 3/6: OpenSSF model signing checks every file (model_signing verify key, offline)" && \
	$(BIN)/model_signing verify key --public_key "$(RELEASE_OUT)/release-public.pem" \
	  --signature "$(RELEASE_OUT)/model/model.sig" "$(RELEASE_OUT)/model" && \
	printf '\n== %s\n' "release 4/6: sigmacert-verify --release: files, manifest signature, run = claim, certificate replay, card" && \
	$(BIN)/sigmacert-verify --release "$(RELEASE_OUT)/model" --key "$(RELEASE_OUT)/release-public.pem" --key artifacts/keys/public.pem && \
	printf '\n== %s\n' "release 5/6: one byte of model.npy changed: rejected with its reason" && \
	cp -r "$(RELEASE_OUT)/model" "$$d/tampered" && printf '\001' | dd of="$$d/tampered/model.npy" bs=1 seek=200 conv=notrunc 2>/dev/null && \
	if $(BIN)/sigmacert-verify --release "$$d/tampered" --key "$(RELEASE_OUT)/release-public.pem" --key artifacts/keys/public.pem; \
	  then echo "release-demo: the tampered release was accepted" >&2; exit 1; else echo "(rejected, as it must be)"; fi && \
	printf '\n== %s\n' "release 6/6: archive the certificate in a local log, prove its inclusion offline, write the report" && \
	$(BIN)/sigmacert log append "$(RELEASE_OUT)/log" $(CERT) --key "$$d/log/private.pem" && \
	$(BIN)/sigmacert log proof "$(RELEASE_OUT)/log" $(CERT) -o "$(RELEASE_OUT)/log-proof.json" && \
	$(BIN)/sigmacert-verify --log-proof "$(RELEASE_OUT)/log-proof.json" --key "$(RELEASE_OUT)/log-public.pem" && \
	$(BIN)/sigmacert report "$(RELEASE_OUT)/model/certificate.json" --key artifacts/keys/public.pem \
	  --key "$(RELEASE_OUT)/log-public.pem" --release "$(RELEASE_OUT)/model" --release-key "$(RELEASE_OUT)/release-public.pem" \
	  --log-proof "$(RELEASE_OUT)/log-proof.json" -o "$(RELEASE_OUT)/report.html" --quiet

bench: install-demo
	$(BIN)/python benchmarks/bench_sigma.py
	$(BIN)/python benchmarks/bench_certify.py

# Regenerates docs/reproduction.md: every checkable number of the paper, ours beside theirs.
reproduce: install-demo
	$(BIN)/python benchmarks/reproduce.py -o docs/reproduction.md

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache

# The service page (sigmacert serve, GET /) and the audit report file in a real headless
# browser: Debian chromium driven by Selenium through chromedriver; screenshots and the printed
# report go to artifacts/screenshots/. Not part of `make test`; needs, once:
#   apt-get install -y chromium chromium-driver
.PHONY: test-browser
test-browser: install
	$(PIP) -e ".[browser]"
	SIGMACERT_BROWSER=1 $(BIN)/python -m pytest tests/service/routes/test_pages_browser.py tests/sigmacert/report/test_page_browser.py
