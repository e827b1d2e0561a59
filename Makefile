# Quick start: `make synth`, then `make test`. Each target sets up what it needs first:
# a virtualenv with the pinned Python packages and the pinned Node tooling (CDK CLI, Node 22).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
PY_STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
# Node 22 from package.json comes first so jsii (used by aws-cdk-lib) runs on a supported Node.
export PATH := $(CURDIR)/node_modules/.bin:$(BIN):$(PATH)
export CDK_DISABLE_VERSION_CHECK := 1
export CDK_CLI_TELEMETRY := false
PYTEST_ARGS ?=
# checkov pins its own boto3 (==1.35.x), so it gets a virtualenv of its own inside .venv.
CHECKOV_VENV := $(VENV)/checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
REPORTS := reports
BASE ?= origin/main

.PHONY: jumpstart-lock setup synth test lint-templates checkov check change-report typecheck dist docs schema diagram clean

setup: $(PY_STAMP) $(NODE_STAMP) $(CHECKOV_STAMP)

$(PY_STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

$(CHECKOV_STAMP): requirements-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

## synth: synthesize the default app into cdk.out (cdk-nag runs inside), then cfn-lint every template.
synth: setup
	rm -rf cdk.out
	cdk synth --quiet $(if $(CONFIG),-c config=$(CONFIG)) $(if $(PIPELINE),-c pipeline=$(PIPELINE))
	$(MAKE) --no-print-directory lint-templates

lint-templates:
	$(BIN)/python -m tools.lint_templates cdk.out

## checkov: checkov on every template in cdk.out; fails on a finding not skipped with a reason.
checkov: $(CHECKOV_STAMP)
	mkdir -p $(REPORTS)
	$(BIN)/python -m tools.run_checkov cdk.out --checkov $(CHECKOV_VENV)/bin/checkov --json $(REPORTS)/checkov.json

## check: the pull-request verdict: synth (cdk-nag inside) + cfn-lint, then checkov and mypy.
check: synth
	$(MAKE) --no-print-directory checkov
	$(MAKE) --no-print-directory typecheck

## typecheck: mypy, strict on the library (settings in pyproject.toml).
typecheck: $(PY_STAMP)
	$(BIN)/python -m mypy

## dist: the library's wheel in dist/ (Lambda handlers and py.typed inside), for other teams.
dist: $(PY_STAMP)
	rm -rf build dist
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .

## docs: API reference from the docstrings into docs/api/ (not committed).
docs: setup
	rm -rf docs/api
	PDOC_ALLOW_EXEC=1 $(BIN)/python -m pdoc --docformat restructuredtext --no-show-source -o docs/api sagemaker_llm_cdk

## change-report: what this branch changes against BASE (default origin/main) when deployed.
change-report: setup
	$(BIN)/python -m tools.change_report --git-base $(BASE) $(if $(CONFIG),--config $(CONFIG))

## schema: regenerate config/schema.json from the settings model.
schema: $(PY_STAMP)
	$(BIN)/python -c "from sagemaker_llm_cdk.config import write_json_schema; write_json_schema('config/schema.json')"

## diagram: regenerate the README's architecture diagram from the synthesized default app.
diagram: synth
	$(BIN)/python -m tools.diagram cdk.out --readme README.md

## jumpstart-lock: add or refresh MODEL VERSION in REGION in config/jumpstart.lock.yaml from JumpStart's published
## manifest (needs AWS credentials and network, once); commit the diff. Synth reads only the lock file.
jumpstart-lock: $(PY_STAMP)
	@test -n "$(MODEL)" -a -n "$(VERSION)" -a -n "$(REGION)" || { echo "usage: make jumpstart-lock MODEL=<id> VERSION=<v> REGION=<region>" >&2; exit 2; }
	$(BIN)/python -m sagemaker_llm_cdk.jumpstart lock --model-id "$(MODEL)" --version "$(VERSION)" --region "$(REGION)" --lock-file config/jumpstart.lock.yaml

## test: the whole suite.
test: setup
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

clean:
	rm -rf cdk.out build dist .pytest_cache $(REPORTS) docs/api .mypy_cache
