# rackcron developer commands. `make test` and `make run` work on a fresh machine
# with Python >= 3.11 and make: they create .venv and install the project first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
RUN_DB := $(CURDIR)/.run/rackcron.db

.PHONY: install test test-fast check lint format proto run screenshots bench bench-deps bench-scale soak clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The tiers below run on parallel pytest-xdist workers (TEST_WORKERS=0: no workers, one process);
# --dist loadgroup keeps each xdist_group (tests/support/marks.py) on one worker.
TEST_WORKERS ?= 3
PARALLEL = -n $(TEST_WORKERS) --dist loadgroup

## test-fast: the edit loop, under a minute on 2 cores: unit tests and the fast integration
##            tests, on SQLite (no PostgreSQL, browser, child-process or other slow test)
test-fast: $(STAMP)
	$(BIN)/python -m pytest $(PARALLEL) -m "not slow and not repo and not postgres"

## test: the whole suite but the repository checks (PostgreSQL tests run when
##       RACKCRON_TEST_POSTGRES_URL is set)
test: $(STAMP)
	$(BIN)/python -m pytest $(PARALLEL) -m "not repo"

## check: the repository checks (tests marked repo): mypy on the service's signatures,
##        citations, the wheel, the docs' examples, the docs' map, the tests' layout
check: $(STAMP)
	$(BIN)/python -m pytest $(PARALLEL) -m repo

## lint: ruff lint and format check, the layer rule (import contracts in pyproject.toml, and
##       scripts/check_cycles.py),
##       and mypy, strict, over the package ([tool.mypy] in pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/check_cycles.py
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## screenshots: the console's pages, of the example fleet and of a generated 500-rack fleet, at
##              1280x800 and 390x844, into docs/screenshots/ (needs chromium and chromium-driver)
screenshots: $(STAMP)
	$(BIN)/python scripts/screenshots.py

## proto: regenerate wire/proto/ from schemas/proto/ (checked in; a unit test fails when stale)
proto: $(STAMP)
	$(BIN)/python scripts/gen_proto.py

## run: a fresh SQLite store: validate and apply examples/fleet, then serve it with the
##      built-in simulated rack controllers until Ctrl-C (RUN_ARGS="--stop-after 60s" to stop)
run: $(STAMP)
	rm -f $(RUN_DB) $(RUN_DB)-wal $(RUN_DB)-shm
	mkdir -p $(dir $(RUN_DB))
	$(BIN)/rackcron validate examples/fleet
	$(BIN)/rackcron apply examples/fleet --auto-approve --summary --database-url sqlite:///$(RUN_DB)
	$(BIN)/rackcron schedules list --database-url sqlite:///$(RUN_DB)
	$(BIN)/rackcron serve --database-url sqlite:///$(RUN_DB) --poll-interval 2s \
		--sim-duration POWER_RESET=8s --sim-duration POWER_ON=2s --sim-duration POWER_OFF=2s \
		--http-listen 127.0.0.1:9464 $(RUN_ARGS)

## bench: the benchmark scripts (peers installed with the bench extra)
bench: bench-deps
	$(BIN)/python bench/timing.py
	$(BIN)/python bench/plan.py
	$(BIN)/python bench/dispatch.py
	$(BIN)/python bench/grpc.py
	$(BIN)/python bench/console.py
	$(BIN)/python bench/rollout.py
	$(BIN)/python bench/flood.py
	$(BIN)/python bench/slow_readers.py
	$(BIN)/python bench/controller_memory.py

bench-deps: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'

## bench-scale: every stage at fleet scale, both shapes at their full sizes (long)
bench-scale: bench-deps
	$(BIN)/python bench/scale.py --shape wide
	$(BIN)/python bench/scale.py --shape many

## soak: rackcron serve over examples/fleet for ten minutes (memory, health, errors)
soak: bench-deps
	$(BIN)/python bench/soak.py

clean:
	rm -rf $(VENV) .run .pytest_cache .ruff_cache .mypy_cache .hypothesis
