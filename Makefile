# Every target bootstraps .venv from pyproject.toml on a fresh machine; nothing is
# installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench export node-deps clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

## demo: run the sandbox and an example end to end (see README)
demo: $(STAMP)
	$(PY) -m practiceflow.demo

## lint: ruff (lint + format check) and mypy --strict on src/
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

## test: lint, then the whole pytest suite (bytecode cached even where the environment
## says not to: the suite starts the CLI in a subprocess many times), in two worker
## processes (the machine's two cores; a test file stays on one worker, so a module's
## fixtures, such as the n8n build, run once)
test: lint
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n 2 --dist loadfile

## bench: benchmarks that print figures (not tests)
bench: $(STAMP)
	$(PY) bench/report.py

## export: regenerate every committed connector from the modules
export: $(STAMP)
	$(VENV)/bin/practiceflow export zapier --out connectors/zapier
	$(VENV)/bin/practiceflow export openapi --out connectors/openapi
	$(VENV)/bin/practiceflow export n8n --out connectors/n8n

## node-deps: install the connectors' Node packages from their lockfiles
node-deps:
	@command -v npm >/dev/null || { echo "npm is missing: install Node.js 20+ with npm"; exit 1; }
	cd connectors/zapier && npm ci --ignore-scripts --no-audit --no-fund
	cd connectors/n8n && npm ci --ignore-scripts --no-audit --no-fund

clean:
	rm -rf $(VENV) dist build .mypy_cache .ruff_cache .pytest_cache
