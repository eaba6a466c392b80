# One obvious command per task. Each target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt 2>/dev/null | cksum | cut -d' ' -f1)
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1

.PHONY: install demo demo-loop test lint bench openapi examples synth

$(STAMP):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/benchgen demo --out out/demo

demo-loop: install
	$(BIN)/benchgen demo --loop --out out/demo-loop

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[bench]'
	$(BIN)/python bench/grader_bench.py
	$(BIN)/python bench/score_bench.py
	$(BIN)/python bench/cold_start_bench.py

openapi: install
	$(BIN)/python -m benchgen.api.openapi

examples: install
	$(BIN)/benchgen examples generate --out examples

synth: install
	npx --yes aws-cdk@2 synth
