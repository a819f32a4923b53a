# Two commands on a fresh machine: `make run` and `make test`.
# Each creates the virtual environment first if it is missing or out of date.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The service on http://127.0.0.1:8000 (docs at /docs), on hazard.sqlite3 here; on its
# first start it prints a setter token, once. Ctrl-C stops it.
run: $(BIN)/.installed
	$(BIN)/hazard serve

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

bench: $(BIN)/.installed
	$(BIN)/python -m bench.fold

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
