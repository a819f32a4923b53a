# Two commands on a fresh machine: `make run` and `make test`.
# Each creates the virtual environment first if it is missing or out of date.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint bench clean

$(BIN)/.installed: pyproject.toml
	@echo "Setting up $(VENV) and installing the project into it (the first run, or after pyproject.toml changed: about 30 s)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The service on http://$(HOST):$(PORT) (docs at /docs), on hazard.sqlite3 here; on its
# first start it prints a setter token, once. Ctrl-C stops it. `make run PORT=8001`
# (or HOST=0.0.0.0 for every interface) to choose.
run: $(BIN)/.installed
	$(BIN)/hazard serve --host $(HOST) --port $(PORT)

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

bench: $(BIN)/.installed
	$(BIN)/python -m bench.fold

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
