# The two commands of the README. Both create .venv when it is missing and install the package.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[pii,test,validate]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/twist run

test: $(STAMP)
	$(BIN)/python -m pytest -q

# ruff (lint + import order) with the rules in pyproject's [tool.ruff]; installed by the test extra.
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts

clean:
	rm -rf $(VENV) runs/default
