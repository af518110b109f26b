# ostrom — make help lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

VENV    ?= .venv
PY      := $(VENV)/bin/python
OSTROM  := $(VENV)/bin/ostrom
STAMP   := $(VENV)/.installed
WORKERS ?= 2
JOBS    ?= 2

.PHONY: help setup check check-deep test coverage test-slow test-fast lint bench bench-search experiments generate docs site clean mutate mutate-record mutate-code mutate-code-record test-durations

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml scripts/setup.sh
	@bash scripts/setup.sh $(VENV)
	@touch $(STAMP)

setup: $(STAMP) ## create .venv, install the pinned dependencies (and java if missing)

check: $(STAMP) ## model-check the CI models of the manifest with TLC and prove the thresholds
	$(OSTROM) check --workers $(WORKERS) --jobs $(JOBS)
	@# The Z3 theorems for the default parameters and for all values in range: the defaults
	@# prove every theorem (TALLY-1 by the side rule, FG-1 by min_active_agents), the tests
	@# fail if any result changes; `ostrom check-params` prints the details.
	$(VENV)/bin/pytest -q -p no:cacheprovider property_tests/verify/test_thresholds.py \
		-k "defaults or general or safe_parameter_set"

check-deep: $(STAMP) ## model-check every model of the manifest, the large ones included, then mutation-test every spec and every code target in full
	$(OSTROM) check --deep --workers $(WORKERS) --jobs $(JOBS)
	@for s in $(MUTATED_SPECS); do \
		$(OSTROM) mutate --suite $$s --all --check --jobs $(JOBS) --out build/mutate/$$s-full.json || exit 1; \
	done
	$(MAKE) mutate-code

# Spec mutation (docs/checking.md): each spec's suite is models/mutation/SPEC.toml, its
# recorded scores models/mutation/scores.json.  make mutate fails if a sample scores
# below the recorded figure; make mutate-record measures and records them anew.
MUTATED_SPECS ?= Lifecycle Sanctions PBFTReplica PBFT
mutate: $(STAMP) ## the mutation gates (the Hypothesis machines' mutants, the kill matrix, the manifest's mutant models, the spec and code gates), then each spec's seeded sample on its CI models; fails if a score drops below the recorded one
	$(PYTEST) -m mutation
	@for s in $(MUTATED_SPECS); do \
		$(OSTROM) mutate --suite $$s --check --jobs $(JOBS) --out build/mutate/$$s.json || exit 1; \
	done

mutate-record: $(STAMP) ## spec mutation: run each spec's sample and record its score in models/mutation/scores.json
	@for s in $(MUTATED_SPECS); do \
		$(OSTROM) mutate --suite $$s --record --jobs $(JOBS) --out build/mutate/$$s.json; \
	done

# Code mutation (docs/checking.md, "Code mutation"): mutmut over each module of
# models/mutation/code/<target>.toml with the tests that file names; a JSON report per
# module in build/mutate-code/<target>.json.  make mutate-code fails if a full score is
# below the recorded one; make mutate runs each target's seeded sample first (the gate).
mutate-code: $(STAMP) ## code mutation: every mutant of every target module with its tests (hours on 2 cores); fails if a score drops below the recorded one
	$(OSTROM) mutate-code --check --jobs $(JOBS)

mutate-code-record: $(STAMP) ## code mutation: run every target in full and record the scores in models/mutation/code/scores.json
	$(OSTROM) mutate-code --record --jobs $(JOBS)

lint: $(STAMP) ## ruff and mypy
	$(VENV)/bin/ruff check reference property_tests bench
	$(VENV)/bin/ruff format --check reference property_tests bench
	$(VENV)/bin/mypy

# The tests run on two processes (pytest-xdist; PYTEST_WORKERS=0 for one).  --dist loadfile:
# a module runs whole on one worker, because modules share a costly fixture (the TLC rows,
# the crash run) or read in their reachability test what their state machines recorded
# (property_tests/conftest.py refuses another mode).  The PBFT machines' draws do not
# depend on what ran before them in the process (conftest.py fixes Hypothesis's pool of
# local constants), so one and two processes give the same verdicts.
PYTEST_WORKERS ?= 2
PYTEST_RUN := $(VENV)/bin/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile
PYTEST := $(PYTEST_RUN) --hypothesis-profile=$${HYPOTHESIS_PROFILE:-ci}

# make test measures no coverage: coverage.py's tracer doubles the CPU time of the Hypothesis
# machines (110 s against 54 s of user time for the reputation and sanctions modules), which
# would take make test over its budget; make coverage runs the same selection with it.
MAKE_TEST_SELECTION := -m "not slow and not mutation"

test: $(STAMP) lint ## lint, then the test suite (Hypothesis profile ci) but the slow models and the mutation gates (no coverage: make coverage)
	$(PYTEST) $(MAKE_TEST_SELECTION) --durations=15

coverage: $(STAMP) ## make test's suite (no lint) with branch coverage of reference/ostrom, reported per file (about twice make test's time)
	$(PYTEST) $(MAKE_TEST_SELECTION) --cov --cov-report=term:skip-covered

test-slow: $(STAMP) ## the whole test suite, the manifest's slow TLC models and the mutation gates included (no coverage)
	$(PYTEST)

test-fast: $(STAMP) ## the inner loop: Hypothesis profile fast, without the tests marked tlc, venv, system, slow, browser, mutation or budget (no java, no lint, no coverage)
	$(PYTEST_RUN) --hypothesis-profile=$${HYPOTHESIS_PROFILE:-fast} \
		-m "not tlc and not venv and not system and not slow and not browser and not mutation"

bench: $(STAMP) ## benchmarks: TLC, orchestrator, reviewer sortition, Hypothesis, PBFT, EigenTrust, check-params, conformance, the simulation's full paper, forgetting and plasticity experiments (JSON in bench/results/)
	$(PY) bench/run.py

# The evaluation's experiments at full size (ostrom.simulation.experiments.SEEDS), one after
# the other under nice on 2 workers; each writes its committed evidence to evaluation/<name>/
# (runs.csv, meta.json), from which `ostrom docs` generates docs/evaluation.md's tables.
# sanctions runs each horizon as a run of its own (--rounds 500 into evaluation/sanctions,
# --rounds 2000 into evaluation/sanctions2k), so that each horizon's evidence and time is
# committed on its own (docs/evaluation.md has a table for each).
EXPERIMENTS := paper truth bloc sensitivity retrieval plasticity forgetting
experiments: $(STAMP) ## the evaluation's experiments (paper, truth, bloc, sensitivity, retrieval, plasticity, forgetting; sanctions at 500 and at 2,000 rounds): evidence in evaluation/, reports in results/; then `ostrom simulate --tables` and `make generate`
	@for e in $(EXPERIMENTS); do \
		nice -n 10 $(OSTROM) simulate --experiment $$e --jobs 2 --quiet \
			--out results/$$e --evidence evaluation/$$e > /dev/null || exit 1; \
	done
	nice -n 10 $(OSTROM) simulate --experiment sanctions --rounds 500 --jobs 2 --quiet \
		--out results/sanctions --evidence evaluation/sanctions > /dev/null
	nice -n 10 $(OSTROM) simulate --experiment sanctions --rounds 2000 --jobs 2 --quiet \
		--out results/sanctions2k --evidence evaluation/sanctions2k > /dev/null
	$(OSTROM) simulate --tables

bench-search: $(STAMP) ## search p50/p99 at 10k, 100k and 1M artifacts (HTTP and in process), proposals with 4 KiB content, bytes per artifact, purge cost (stores built once and cached in build/search/; the 1M one takes over half an hour)
	$(PY) bench/run.py --only search

.PHONY: vectors
vectors: $(STAMP) ## regenerate the conformance vectors (reference, PBFT recordings, TLC runs) and the manifest (deterministic)
	$(OSTROM) vectors

# Every generated file and block of the repository (ostrom.codegen.registry: the transition
# and parameter tables' renderings, the exit codes, the node's endpoint table, the charts of
# the committed counterexamples, the mutation scores, the mutant registry); `ostrom docs
# --check` writes nothing and names what is stale, `ostrom docs --only kill-matrix` redoes
# the kill matrix (about 2 min).
generate: $(STAMP) ## regenerate every generated file and docs block from its source (ostrom docs; make docs is the same)
	@command -v dot >/dev/null || bash scripts/setup.sh --graphviz
	$(OSTROM) docs

docs: generate ## the same as make generate

site: $(STAMP) ## the documentation site in build/site (MkDocs, --strict, every link checked)
	$(OSTROM) site

clean: ## remove the venv and TLC scratch directories
	rm -rf $(VENV) .tlc build *.egg-info reference/*.egg-info .coverage

test-durations: $(STAMP) ## make test's suite with a JUnit report, then property_tests/durations.json from it: the order in which the workers take the modules, longest first
	@mkdir -p build
	$(PYTEST) $(MAKE_TEST_SELECTION) --junitxml=build/junit.xml
	$(VENV)/bin/python property_tests/durations.py build/junit.xml
