# Quota Platform: thin wrappers around the real commands. `make` alone lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# Test processes (pytest-xdist). Most tests wait on real servers and subprocesses, so more workers than cores
# pay: README's "Running the tests" has the measurements. PYTEST_ARGS=-n0 runs the suite in one process.
TEST_WORKERS ?= 3
# mypy's Django plugin imports the settings: read no .env, and DEBUG on so they need no SECRET_KEY.
MYPY := ENV_FILE= DEBUG=true $(BIN)/mypy

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

$(BIN)/.installed: requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11 or newer is needed (found $$($(PYTHON) --version))."; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	@touch $@

install: $(BIN)/.installed ## Create .venv and install everything

.env:
	@$(BIN)/python -c 'import secrets; print("# Written by make run for the embedded default; every variable is in .env.example.\nSECRET_KEY=" + secrets.token_urlsafe(50) + "\nDEBUG=false\nSECURE_HTTPS=false")' > .env
	@echo "Wrote .env for the embedded default (SQLite, in-process counters, a local folder as broker)."

run: install .env ## Serve the platform on embedded defaults (API, admin, worker, beat); PORT=8001 make run for another port
	$(BIN)/python manage.py run_platform

test: install ## Run the whole suite against real PostgreSQL and Redis, in TEST_WORKERS processes
	$(BIN)/python tests/testenv.py $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

lint: install ## ruff check and format check, mypy over apps/ and quota_platform/ (strict on the engine and the SDK)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(MYPY) --strict apps/engine
	$(MYPY) --strict clients/python/src
	$(MYPY) apps quota_platform

fmt: install ## Fix what ruff can fix and format
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install ## Run the benchmarks (see bench/README.md)
	$(BIN)/python tests/testenv.py $(BIN)/python bench/run_all.py

.PHONY: help install run test lint fmt bench
