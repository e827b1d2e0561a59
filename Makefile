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

.PHONY: setup synth test lint-templates schema clean

setup: $(PY_STAMP) $(NODE_STAMP)

$(PY_STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

## synth: synthesize the default app into cdk.out (cdk-nag runs inside), then cfn-lint every template.
synth: setup
	rm -rf cdk.out
	cdk synth --quiet $(if $(CONFIG),-c config=$(CONFIG))
	$(MAKE) --no-print-directory lint-templates

lint-templates:
	$(BIN)/python -m tools.lint_templates cdk.out

## schema: regenerate config/schema.json from the settings model.
schema: $(PY_STAMP)
	$(BIN)/python -c "from sagemaker_llm_cdk.config import write_json_schema; write_json_schema('config/schema.json')"

## test: the whole suite.
test: setup
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

clean:
	rm -rf cdk.out build dist .pytest_cache
