# Two commands on a fresh machine: `make run` and `make test`. Both set up what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The live commons chat of the fidelity proof and the recorder's tests: a venv of its own
# (requirements-record.txt says why)
RECORD_VENV := .venv-record
RECORD_STAMP := $(RECORD_VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test unit browser bench lint setup venvs browser-deps pg-deps bytecode clean connect-bundle fixtures-recorders

setup: $(STAMP) bytecode

$(STAMP): pyproject.toml benchmarks/pyproject.toml requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -e . -e benchmarks
	touch $(STAMP)

$(RECORD_STAMP): pyproject.toml requirements.txt requirements-record.txt
	$(PYTHON) -m venv $(RECORD_VENV)
	$(RECORD_VENV)/bin/pip install --quiet -r requirements-record.txt
	$(RECORD_VENV)/bin/pip install --quiet --no-deps -e .
	touch $(RECORD_STAMP)

# The package's own modules as bytecode, as pip writes it for every package it installs:
# an editable install gets none, and where PYTHONDONTWRITEBYTECODE is set (as some CI
# images do) Python never writes it, so every start compiled them again:
# ~0.1 s of CPU on the way to the list, beside the index build. A module edited since is
# compiled in memory as before (stale bytecode is never used).
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q src

# Debian's Chromium: Playwright cannot download its own browser here. The tests drive its
# headless shell, the browser Playwright itself runs headless (tests/browser/conftest.py
# says why); the full browser is for `--headed` runs and the screenshots.
BROWSER_PACKAGES := chromium chromium-headless-shell fonts-liberation
browser-deps:
	@if ! dpkg -s $(BROWSER_PACKAGES) >/dev/null 2>&1; then \
	  echo "installing $(BROWSER_PACKAGES) with apt-get"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(BROWSER_PACKAGES) >/dev/null; \
	fi
	@command -v chromium-headless-shell >/dev/null 2>&1 || { echo "chromium-headless-shell is still missing: browser tests cannot run" >&2; exit 1; }

# Debian's PostgreSQL server: the review-store tests start throwaway servers of their own
# on loopback (tests/pg.py), as the postgres account when run as root.
pg-deps:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  echo "installing postgresql with apt-get"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null; \
	fi
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "PostgreSQL's initdb is still missing: the review-store tests cannot run" >&2; exit 1; }

run: $(STAMP) bytecode
	$(BIN)/trajectory-review serve traces --host $(HOST) --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check src tests app.py scripts benchmarks examples
	$(BIN)/ruff format --check src tests app.py scripts benchmarks examples
	$(BIN)/mypy

# Unit tests first, browser tests in their own session (Playwright's sync loop and
# shiny's in-process test server do not share a process well). Both on two workers, a
# test file per worker (module fixtures start one app per file); more workers than
# cores made timing-bound browser checks miss their deadlines.
XDIST := -n 2 --dist loadfile
# the two venvs are set up side by side (pip waits on the network most of the time)
venvs:
	@$(MAKE) --no-print-directory -j2 $(STAMP) $(RECORD_STAMP)

test: venvs browser-deps pg-deps bytecode
	$(BIN)/ruff check src tests app.py scripts benchmarks examples
	$(BIN)/mypy
	$(BIN)/pytest -q $(XDIST) --durations=10 --ignore=tests/browser
	$(BIN)/pytest -q $(XDIST) --durations=10 tests/browser

unit: venvs pg-deps bytecode
	$(BIN)/pytest -q $(XDIST) --durations=10 --ignore=tests/browser

browser: venvs browser-deps bytecode
	$(BIN)/pytest -q $(XDIST) --durations=10 tests/browser

# the reviewers step drives Chromium, as the browser tests do
bench: $(STAMP) bytecode browser-deps
	$(BIN)/trajectory-review bench --yes

# The Posit Connect bundle: the app's files only (scripts/connect_bundle.py), and its
# manifest. Deploy with `rsconnect deploy manifest build/connect/manifest.json ...`.
connect-bundle: $(STAMP)
	$(BIN)/python scripts/connect_bundle.py build/connect
	$(BIN)/rsconnect write-manifest shiny build/connect --overwrite

# Re-record the other recorders' fixtures (tests/data/recorders/): each library in a venv
# of its own (their OpenTelemetry pins clash), against the scripted model on 127.0.0.1.
# Not part of `make test`: the recorded spans are committed.
RECORDERS_VENVS := .venv-recorders
fixtures-recorders:
	@$(PYTHON) scripts/record_other_recorders.py --list | while read name req; do \
	  v=$(RECORDERS_VENVS)/$$req; \
	  [ -x $$v/bin/python ] || { $(PYTHON) -m venv $$v && \
	    $$v/bin/pip install --quiet -r scripts/recorders/$$req.txt; } || exit 1; \
	  $$v/bin/python scripts/record_other_recorders.py $$name || exit 1; \
	done

clean:
	rm -rf $(VENV) $(RECORD_VENV) $(RECORDERS_VENVS) bench-data .pytest_cache
