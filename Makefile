# Every target bootstraps what it needs on a fresh machine; nothing is installed by hand.
#
# Python packages come from the lockfile (uv.lock, made by uv): `.venv` holds exactly the
# locked versions of the package and its dev extras. pyproject.toml keeps open ranges for
# people who install the wheel; `make lock` refreshes the lock within those ranges.
# The machine parts the tests use (PostgreSQL server binaries, Debian's chromium) come from
# .ci/system-deps, which does nothing when they are present.
PYTHON ?= python3
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV ?= .venv
PY = $(VENV)/bin/python
STAMP = $(VENV)/.installed
# uv never downloads an interpreter of its own: the machine's python3 is the one we use.
export UV_PYTHON_DOWNLOADS := never
export UV_LINK_MODE := copy

.PHONY: demo test cassettes test-connectors test-variants test-faults test-latest lint lock bench export node-deps system-deps clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# --locked: the lock must agree with pyproject.toml (else: run `make lock`), and the venv
# gets exactly what it pins.
.venv/.installed: uv.lock pyproject.toml | $(UV)
	UV_PROJECT_ENVIRONMENT=.venv $(UV) sync --locked --all-extras --python $(PYTHON) --quiet
	touch $@

# The newest releases allowed by pyproject.toml's ranges, no lock: see a breaking release
# before the lock is bumped.
.venv-latest/.installed: pyproject.toml | $(UV)
	rm -rf .venv-latest
	$(UV) venv --quiet --python $(PYTHON) .venv-latest
	$(UV) pip install --quiet --python .venv-latest/bin/python --upgrade -e '.[dev]'
	touch $@

## system-deps: PostgreSQL server binaries and Debian's chromium, when missing
system-deps:
	@bash .ci/system-deps

## demo: run the sandbox and an example end to end (see README)
demo: $(STAMP) system-deps
	$(PY) -m practiceflow.demo

## lint: ruff (lint + format check) and mypy --strict on src/
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

## test: lint, then the whole pytest suite in two worker processes (the machine's two
## cores; a test file stays on one worker, so a module's fixtures run once). Bytecode is
## cached even where the environment says not to: the suite starts the CLI many times.
test: lint system-deps
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n 2 --dist loadfile -m "not products" $(PYTEST_ARGS)

## cassettes: record every shipped action and trigger against the sandbox (default and
## hostile presets) into tests/cassettes/, replayed by the conformance run of make test
cassettes: $(STAMP)
	$(PY) tests/conformance/record.py

## test-connectors: the exports inside the platforms' own products (Zapier's CLI on Node 22
## from the pinned PyPI wheel, n8n 2.8.4 on Node 20 with a PostgreSQL database); too heavy
## for make test's time
test-connectors: $(STAMP) system-deps
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -m products tests/export $(PYTEST_ARGS)

LIST_VARIANTS := from practiceflow.sandbox.variants import single_variants as s; \
  print(','.join(t + '=' + a for t, a in s()))
## test-variants: the promise tests (marked `variants`: write safety, each trigger's poll,
## the example recipes, kill -9) under EVERY single answer of every open question the
## sandbox plays (src/practiceflow/sandbox/variants.py), plus the hostile preset and a
## seeded random mix. `make test` runs the same tests under default and hostile only.
test-variants: $(STAMP) system-deps
	PRACTICEFLOW_TEST_VARIANTS="$$($(PY) -c "$(LIST_VARIANTS)"),hostile,random:$${SEED:-23}" \
	  PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n 2 --dist loadfile -m variants $(PYTEST_ARGS)

## test-faults: the machine's and the operator's faults at the issue's sizes (`make test`
## runs the same files smaller): two drivers on one store with slow writes over 100 events,
## the state file deleted, replaced, full or read-only, a database restart under a worker,
## 104 runs killed or stopped and their recipe edited under them, 500 events over ten
## minutes with serve killed or stopped 10 times (every event ran once or is listed missing),
## a fleet replica killed in a burst of 1,000 events, 60 fuzzed cases a test, the canary scan
## with its variants, serve killed three times under a run that goes on
FAULT_TESTS := tests/reliability/test_two_drivers.py tests/reliability/test_state_file_gone.py \
  tests/reliability/test_store_faults.py tests/fleet/test_fleet_db_restart.py \
  tests/cli/test_read_only_state.py tests/cli/test_state_path_resolved.py \
  tests/cli/test_full_disk_at_start.py tests/reliability/test_no_input_is_a_bug.py \
  tests/triggers/test_receiver_any_json.py tests/runner/test_run_lease.py \
  tests/versions/test_edit_while_waiting.py tests/reliability/test_fuzz.py \
  tests/runner/test_restarts_complete.py tests/runner/test_operator_kills.py \
  tests/reliability/test_canary_scan.py tests/fleet/test_fleet_kill.py
test-faults: $(STAMP) system-deps
	PRACTICEFLOW_RELIABILITY_FULL=1 PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q $(FAULT_TESTS) $(PYTEST_ARGS)

## test-latest: the same suite on a throw-away venv of the newest releases (not in CI)
test-latest:
	$(MAKE) test VENV=.venv-latest \
	  PYTEST_ARGS="--deselect tests/test_lockfile.py::test_the_test_venv_holds_exactly_the_locked_versions"

## lock: refresh uv.lock to the newest releases pyproject.toml allows
lock: | $(UV)
	$(UV) lock --upgrade --python $(PYTHON)

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
	rm -rf .venv .venv-latest $(TOOLS) dist build .mypy_cache .ruff_cache .pytest_cache
