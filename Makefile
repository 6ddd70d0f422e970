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

.PHONY: help venv index run test lint typecheck browser synth deploy bench bench-retrieval bench-pipeline bench-cold bench-flood clean

help:
	@echo "make run    - set up, build the sample index, serve chat offline on $(HOST):$(PORT)"
	@echo "make test   - set up (venv, index, Chromium) and run every test"
	@echo "make index | synth | deploy | lint | bench-retrieval | bench-pipeline | bench-cold | bench-flood | clean"

venv: $(STAMP)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

index: $(KNOWLEDGE)
$(KNOWLEDGE): $(STAMP) $(shell find examples/site indexer -type f -not -path "*/__pycache__/*" 2>/dev/null) steps/lib/tokens.py steps/lib/hashing_embedder.py steps/lib/knowledge.py cdk.json
	$(BIN)/chatguard index examples/site --out build/knowledge

run: $(STAMP) $(KNOWLEDGE)
	$(BIN)/chatguard serve --host $(HOST) --port $(PORT)

# Chromium comes from Debian (a browser download cannot work offline); as root we install it.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# pytest exits 5 when it collected no test: that is a failure here, never a pass.
test: $(STAMP) $(KNOWLEDGE) browser lint typecheck
	$(BIN)/pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The CDK CLI is pinned in package.json and installed locally (npm ci), never globally.
# The app runs with the venv's python3 first on PATH (cdk.json says `python3 infra/app.py`).
CDK := node_modules/.bin/cdk
CDK_ENV := PATH="$(CURDIR)/$(BIN):$$PATH" JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1
CDK_ARGS ?=
$(CDK): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# Offline: no AWS credentials, no Docker (Lambda wheels come from PyPI via pip, cached in build/).
synth: $(STAMP) $(KNOWLEDGE) $(CDK)
	$(CDK_ENV) $(CDK) synth --quiet --no-notices $(CDK_ARGS)

# Deploys exactly what `make synth` wrote to cdk.out (both stacks; edge first).
deploy: synth
	$(CDK_ENV) $(CDK) deploy --all --app cdk.out --no-notices $(CDK_ARGS)

bench: bench-retrieval bench-pipeline bench-cold bench-flood

bench-retrieval: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.retrieval

bench-pipeline: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.pipeline

# Each step's import and first-invocation CPU in a fresh interpreter, with and without
# bytecode, and the modelled cold first message (docs/benchmarks.md, "Cold path").
bench-cold: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.cold

# Discrete-event simulation of the ledger's day item under a flood (docs/scaling.md).
bench-flood: $(STAMP)
	$(BIN)/python -m tests.bench.flood

clean:
	rm -rf build cdk.out test-output .pytest_cache
