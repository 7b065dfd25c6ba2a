# sigmacert: `make demo` and `make test` bootstrap a fresh .venv themselves.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
EXTRAS  ?= test

.PHONY: install demo test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/sigmacert sigma --steps 100 --epochs 10 --target 0.1
	$(BIN)/sigmacert tv --steps 100 --epochs 10 --sigma 1.426215

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python benchmarks/bench_sigma.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
