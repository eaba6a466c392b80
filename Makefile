# One obvious command per task. Each target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt 2>/dev/null | cksum | cut -d' ' -f1)
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1

.PHONY: install web demo demo-loop demo-real test lint bench bench-real openapi examples synth

$(STAMP):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

# The web console (web/dist), rebuilt when its sources or the API document it is typed from change.
WEB_SOURCES := web/package.json web/package-lock.json web/index.html web/tsconfig.json docs/openapi.json \
	$(shell find web/src -name '*.ts' -o -name '*.css' 2>/dev/null | grep -v schema.d.ts)

web/dist/index.html: $(WEB_SOURCES)
	cd web && npm ci --no-audit --no-fund && npm run build

web: web/dist/index.html

demo: install web
	$(BIN)/benchgen demo --out out/demo

demo-loop: install web
	$(BIN)/benchgen demo --loop --out out/demo-loop

# The loop with a real model (SmolLM2-135M-Instruct on this machine's CPU); generation takes most of its time.
demo-real: install web
	$(BIN)/benchgen demo --loop --real --out out/demo-real

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint web
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[bench]'
	$(BIN)/python bench/grader_bench.py
	$(BIN)/python bench/score_bench.py
	$(BIN)/python bench/cold_start_bench.py

# The real loop measured: each step's time and memory, tokens per second,
# and the evaluation's verdict, written to real-loop-bench.json.
bench-real: install
	$(BIN)/python bench/real_loop_bench.py --json real-loop-bench.json

openapi: install
	$(BIN)/python -m benchgen.api.openapi

examples: install
	$(BIN)/benchgen examples generate --out examples

synth: install
	npx --yes aws-cdk@2 synth
