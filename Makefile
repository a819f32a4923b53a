# Two commands on a fresh machine: `make run` and `make test`.
# Each creates the virtual environment first if it is missing or out of date.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run key test lint bench docs clean

# Two environments in one .venv: what the service needs (`make run`), and on top of it what
# the tests and linters need (`make test`). pip's own output goes to .venv/install.log, and
# is printed only if the install fails: on success the first run prints three lines.
$(BIN)/.installed-run: pyproject.toml
	@echo "Setting up $(VENV) with what the service needs (the first run, or after pyproject.toml changed: about a minute; pip's output goes to $(VENV)/install.log)..."
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --upgrade pip >$(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@$(BIN)/pip install -e . >>$(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $@

$(BIN)/.installed: $(BIN)/.installed-run
	@echo "Adding the test tools to $(VENV) (pytest, hypothesis, schemathesis, playwright, ruff, mypy: about a minute more)..."
	@$(BIN)/pip install -e '.[dev]' >>$(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $@

# The service on http://$(HOST):$(PORT) (docs at /docs), on hazard.sqlite3 here; on its
# first start it prints a setter token, once. Ctrl-C stops it. `make run PORT=8001`
# (or HOST=0.0.0.0 for every interface) to choose.
run: $(BIN)/.installed-run
	$(BIN)/hazard serve --host $(HOST) --port $(PORT)

# The key that signs the log, made before the first start so that the log carries your
# club's name from its first checkpoint: `make key NAME=club.example/hazard`. Without it,
# the first `make run` makes one named hazard.local/ledger.
key: $(BIN)/.installed-run
	$(BIN)/hazard key create$(if $(NAME), --name $(NAME))

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -n auto --maxprocesses 4

bench: $(BIN)/.installed
	$(BIN)/python -m bench.fold

# docs/ as a site in build/site/ (open build/site/index.html), built as the tests build
# it: --strict, so a broken link or a page left out of mkdocs.yml's nav fails.
docs: $(BIN)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
