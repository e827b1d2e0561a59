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
# Context for the app: CONFIG and PIPELINE as -c config=/-c pipeline=, plus anything in CONTEXT
# (e.g. CONTEXT="-c purchase=chat-p5e-2027q1"). DEPLOY_ARGS / DIFF_ARGS go to cdk deploy / cdk diff.
CONTEXT ?=
CDK_CONTEXT = $(if $(CONFIG),-c config=$(CONFIG)) $(if $(PIPELINE),-c pipeline=$(PIPELINE)) $(CONTEXT)
DEPLOY_ARGS ?=
DIFF_ARGS ?=

.PHONY: prices jumpstart-lock setup synth-setup synth synth-app diff deploy preflight test test-fast lint-templates lint-python format checkov guard check check-tools change-report typecheck dist dist-client docs reference links site schema diagram clean

## setup: everything (.venv, node_modules, the checkov venv); synth-setup: what a synth needs (no checkov).
setup: synth-setup $(CHECKOV_STAMP)

synth-setup: $(PY_STAMP) $(NODE_STAMP)

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
## The log shows one cdk-nag summary per pack and rule; every finding is in reports/nag-findings.{json,md}.
## On GitHub Actions the summary and the cost table are added to the job summary ($GITHUB_STEP_SUMMARY).
## CDK's built-in template validator (CloudFormationValidatePlugin) is off here: cfn-lint validates every
## template right after, in every target region (docs/performance.md); CFN_VALIDATE=1 runs it as well.
## A bare `cdk synth` (no make) keeps CDK's default: the built-in validator runs.
CFN_VALIDATE ?=
CDK_VALIDATION_FLAG = $(if $(CFN_VALIDATE),,--no-validation)
## The app prints the cdk-nag summary and the cost table for a synth only (cdk ls and cdk diff stay quiet; the tables
## are in cdk.out/synth-summary.md either way): the Makefile says so explicitly (stacks/synth_output.py).
SYNTH_SUMMARY = -c sagemaker-llm-cdk:summary=1
synth: synth-setup
	$(MAKE) --no-print-directory synth-app
	$(MAKE) --no-print-directory lint-templates

## synth-app: only the app's synth into a fresh cdk.out (cdk-nag inside); `synth` and `check` run it once.
synth-app: synth-setup
	rm -rf cdk.out $(REPORTS)/nag-findings.json $(REPORTS)/nag-findings.md $(REPORTS)/synth-summary.md
	@echo "cdk synth --quiet $(CDK_VALIDATION_FLAG) $(CDK_CONTEXT) $(SYNTH_SUMMARY)"
	@status=0; cdk synth --quiet $(CDK_VALIDATION_FLAG) $(CDK_CONTEXT) $(SYNTH_SUMMARY) || status=$$?; \
	  mkdir -p $(REPORTS); \
	  for f in nag-findings.json nag-findings.md synth-summary.md; do if [ -f cdk.out/$$f ]; then cp cdk.out/$$f $(REPORTS)/; fi; done; \
	  if [ -n "$${GITHUB_STEP_SUMMARY:-}" ] && [ -f cdk.out/synth-summary.md ]; then cat cdk.out/synth-summary.md >> "$$GITHUB_STEP_SUMMARY"; fi; \
	  exit $$status

## preflight: what would make a deploy of CONFIG (default config/default.yaml) fail, before CloudFormation starts.
## Synthesizes the app, checks offline, then read-only against AWS when credentials resolve.
## REGION=us-east-1 picks the region, OFFLINE=1 makes no AWS call; exits 1 on a blocker. Needs no checkov.
preflight: synth-setup
	$(BIN)/python -m sagemaker_llm_cdk.preflight --config $(or $(CONFIG),config/default.yaml) $(if $(REGION),--region $(REGION)) $(if $(OFFLINE),--offline) $(PREFLIGHT_ARGS)

## prices: rewrite the shipped price table (constructs/sagemaker_llm_cdk/operations/prices.json) from the AWS
## Price List API: one GetProducts query per region and usage (needs credentials with pricing:GetProducts).
## A figure the API does not give keeps its previous value and date; the synth log says how old the table is.
prices: synth-setup
	$(BIN)/python -m sagemaker_llm_cdk.operations.pricing refresh

## diff: synth (checks included), then compare cdk.out with what is deployed (needs credentials; without them it
## says, in one line, how to compare offline: `make change-report`).
diff: synth
	@echo "cdk diff --app cdk.out $(DIFF_ARGS)"
	@status=0; cdk diff --app cdk.out $(DIFF_ARGS) || status=$$?; \
	  if [ $$status -ne 0 ]; then $(BIN)/python stacks/synth_output.py --offline-diff-hint; fi; exit $$status

## deploy: `make check` (the synth with cdk-nag, cfn-lint, checkov, the Guard registry, mypy and ruff), then preflight
## that cdk.out against the account (read-only; it stops on a blocker, or when no credentials resolve), then deploy
## exactly that cdk.out, every stack.
## CDK still asks before security-relevant changes; pass DEPLOY_ARGS="--require-approval never" only on purpose.
deploy: check
	$(if $(PIPELINE),,$(BIN)/python -m sagemaker_llm_cdk.preflight --config $(or $(CONFIG),config/default.yaml) --cdk-out cdk.out --require-live $(if $(REGION),--region $(REGION)))
	cdk deploy --app cdk.out --all $(DEPLOY_ARGS)

lint-templates:
	$(BIN)/python -m tools.lint_templates cdk.out

## checkov: checkov on every template in cdk.out; fails on a finding not skipped with a reason.
checkov: $(CHECKOV_STAMP)
	mkdir -p $(REPORTS)
	$(BIN)/python -m tools.run_checkov cdk.out --checkov $(CHECKOV_VENV)/bin/checkov --json $(REPORTS)/checkov.json

## guard: AWS's Guard rules registry (cfn-guard; NIST 800-53 rev 5, CIS, Well-Architected security) over the templates
## of every shipped config, pipeline file and example (synthesized into cdk.out.guard/); fails on a failure
## without a reason in tools/guard/reasons.yaml and on a stale reason (docs/security.md).
guard: $(PY_STAMP)
	$(BIN)/python -m tools.cfn_guard --shipped cdk.out.guard

## check: the pull-request verdict: one synth (cdk-nag inside), then cfn-lint, checkov, mypy and ruff over that cdk.out,
## and the Guard registry over every shipped app (`make guard`),
## each once over every template, in parallel (independent of each other; each log is printed whole, in turn).
## The change report reads the same cdk.out (`make change-report`, the PR workflow's --head-dir cdk.out).
## `python benchmarks/check.py` times it warm, phase by phase.
CHECK_JOBS ?= 3
check: synth-setup $(CHECKOV_STAMP)
	$(MAKE) --no-print-directory synth-app
	$(MAKE) --no-print-directory -j$(CHECK_JOBS) --output-sync=target check-tools

check-tools: lint-templates checkov guard typecheck lint-python

## lint-python: over every Python file of the repository, ruff's rules (pyproject.toml: pycodestyle, pyflakes, isort,
## pyupgrade, bugbear, simplify) and its layout (`ruff format --check`; `make format` applies it); then the house rules:
## the package layers and no import cycle (tools/import_graph.py), no module over 600 lines and no function over 120
## (tools/sizes.py; the few left are on its list, which only shrinks).
lint-python: $(PY_STAMP)
	$(BIN)/ruff check --no-cache --quiet .
	$(BIN)/ruff format --no-cache --check --quiet .
	$(BIN)/python -m tools.import_graph
	$(BIN)/python -m tools.sizes

## format: ruff's layout and its safe fixes over the repository (what lint-python checks).
format: $(PY_STAMP)
	$(BIN)/ruff check --no-cache --quiet --fix .
	$(BIN)/ruff format --no-cache --quiet .

## typecheck: mypy, strict on the library (settings in pyproject.toml), and on each Lambda function as its asset lays it out.
typecheck: $(PY_STAMP)
	$(BIN)/python -m mypy
	$(BIN)/python -m tools.typecheck_lambda

## dist: the library's sdist and wheel in dist/ (Lambda handlers and py.typed inside), as a release builds them;
## other teams `pip install dist/sagemaker_llm_cdk-<version>-py3-none-any.whl`.
dist: $(PY_STAMP)
	rm -rf build dist
	$(BIN)/python -m build --outdir dist .

## dist-client: the client-only distribution sagemaker-llm-client (clients/pyproject.toml: the boto3-only client
## modules, built from the same source files; needs boto3 only) as a wheel in dist/.
dist-client: $(PY_STAMP)
	rm -rf clients/build
	$(BIN)/python -m build --wheel --outdir dist clients

## docs: the config reference (docs/config-reference.md, committed) and the API reference from the docstrings
## into docs/api/ (not committed); CI's docs job then runs `make links` and fails on a broken link.
docs: synth-setup reference
	rm -rf docs/api
	PDOC_ALLOW_EXEC=1 $(BIN)/python -m tools.build_site --api docs/api

## reference: docs/config-reference.md from the settings models (the schemas `make schema` writes come from the same
## models); tests/config/test_config_reference.py fails when the committed page differs.
reference: synth-setup
	$(BIN)/python -m tools.config_reference docs/config-reference.md

## links: relative links and #anchors of README.md, CONTRIBUTING.md, SECURITY.md and docs/**/*.md (offline).
links: $(PY_STAMP)
	$(BIN)/python -m tools.check_links

## site: what GitHub Pages serves (the release workflow publishes it): the pages as HTML and docs/api, into site/.
site: docs
	$(BIN)/python -m tools.build_site site

## change-report: what this branch changes against BASE (default origin/main) when deployed.
## HEAD_DIR=cdk.out compares with the cdk.out `make check` just wrote instead of synthesizing again (as the PR workflow does).
change-report: synth-setup
	$(BIN)/python -m tools.change_report --git-base $(BASE) $(if $(CONFIG),--config $(CONFIG)) $(if $(HEAD_DIR),--head-dir $(HEAD_DIR))

## schema: regenerate the configs' JSON Schemas from the settings models: config/schema.json (a whole config),
## config/schema.layer.json (a file that extends or is extended: nothing required, $delete/$replace allowed),
## config/pipeline.schema.json (the delivery pipeline's file).
schema: synth-setup
	$(BIN)/python -m tools.schemas config

## diagram: regenerate the architecture diagram (docs/architecture.md) from the synthesized default app.
diagram: synth
	$(BIN)/python -m tools.diagram cdk.out --readme docs/architecture.md

## jumpstart-lock: add or refresh MODEL VERSION in REGION in config/jumpstart.lock.yaml from JumpStart's published
## manifest (needs AWS credentials and network, once); commit the diff. Synth reads only the lock file.
jumpstart-lock: $(PY_STAMP)
	@test -n "$(MODEL)" -a -n "$(VERSION)" -a -n "$(REGION)" || { echo "usage: make jumpstart-lock MODEL=<id> VERSION=<v> REGION=<region>" >&2; exit 2; }
	$(BIN)/python -m sagemaker_llm_cdk.hosting.jumpstart lock --model-id "$(MODEL)" --version "$(VERSION)" --region "$(REGION)" --lock-file config/jumpstart.lock.yaml

## test: the whole suite on two workers, a test module per work unit (its module fixtures built once), the longest
## first (tests/conftest.py), so no worker idles at the end.
test: setup
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

## test-fast: the tests that build no CDK app (settings, handlers, tools, clients), property tests drawing a tenth of
## their examples (tests/support/properties.py): about a minute on two cores (docs/testing.md has the figures).
## Each run checks the marks: a test that synthesizes without the synth mark fails (tests/conftest.py).
test-fast: synth-setup
	SAGEMAKER_LLM_CDK_TEST_FAST=1 $(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder \
	  -m "not synth and not cli and not wheel and not docs" $(PYTEST_ARGS)

clean:
	rm -rf cdk.out cdk.out.guard build dist .pytest_cache $(REPORTS) docs/api site clients/build .mypy_cache
