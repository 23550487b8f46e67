# `make demo` and `make test` work on a fresh clone with only Python installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/jaxlean bench --quick compile memory solver

lint: $(STAMP)
	$(BIN)/ruff check jaxlean tests examples

test: lint
	$(BIN)/python -m pytest -q -n auto --dist worksteal --durations=10

bench: $(STAMP)
	$(BIN)/jaxlean bench --out bench-results

clean:
	rm -rf $(VENV) bench-results .pytest_cache
