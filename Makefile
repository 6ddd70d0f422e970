# Every target sets up what it needs from nothing: a fresh clone needs only `make run`
# or `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
KNOWLEDGE := build/knowledge/knowledge.json
HOST ?= 127.0.0.1
PORT ?= 8787
PYTEST_ARGS ?=

.PHONY: help venv index run test lint typecheck browser synth deploy bench bench-retrieval bench-pipeline clean

help:
	@echo "make run    - set up, build the sample index, serve chat offline on $(HOST):$(PORT)"
	@echo "make test   - set up (venv, index, Chromium) and run every test"
	@echo "make index | synth | deploy | lint | bench-retrieval | bench-pipeline | clean"

venv: $(STAMP)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

index: $(KNOWLEDGE)
$(KNOWLEDGE): $(STAMP) $(shell find examples/site indexer -type f 2>/dev/null) cdk.json
	$(BIN)/chatguard index examples/site --out build/knowledge

run: $(STAMP) $(KNOWLEDGE)
	$(BIN)/chatguard serve --host $(HOST) --port $(PORT)

# Chromium comes from Debian (a browser download cannot work offline); as root we install it.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# pytest exits 5 when it collected no test: that is a failure here, never a pass.
test: $(STAMP) $(KNOWLEDGE) browser
	$(BIN)/ruff check .
	$(BIN)/pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check . || true

typecheck: $(STAMP)
	$(BIN)/mypy

bench: bench-retrieval bench-pipeline

bench-retrieval: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.retrieval

bench-pipeline: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.pipeline

clean:
	rm -rf build cdk.out test-output .pytest_cache
