# `make demo` sets up and runs the main job; `make test` runs the tests (ruff, mypy, pytest).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INDEX := https://pypi.org/simple

.PHONY: setup test test-gpu test-fast test-windows test-fleet fleet-setup fleet-deps lint demo bench clean knowledge-check

# The package's bytecode is written at setup, as a wheel's install writes it: otherwise each
# package folder's first __pycache__, made by whichever test imports it first, moves that
# folder's mtime, which the no-op and status stamps read as envforge changing (a fresh
# clone's test_status failed so beside the tests importing envforge's modules for the first time).
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --index-url $(INDEX) -e '.[dev]'
	$(BIN)/python -m compileall -q envforge
	touch $@

lint: setup
	$(BIN)/ruff check envforge tests bench
	$(BIN)/mypy envforge
	$(BIN)/lint-imports --no-logo

# GPU tests need an NVIDIA GPU: they run on the device machine (`make test-gpu`), never in CI.
# Files run in parallel: most of the time is waiting on uv, PyPI, g++ and child Pythons, so
# more workers than this 2-core machine's cores still shorten it (TEST_WORKERS=1: serial).
# Files start in the order tests/conftest.py gives (the longest first), not xdist's (most
# tests first, which left the few long files for last), each to a worker once it is free
# (tests/testing/schedule.py); lint runs beside pytest, its output held until pytest ends,
# and either failing fails the target.
TEST_WORKERS ?= 4
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: setup
	@lint_log="$$(mktemp)"; $(MAKE) --no-print-directory lint >"$$lint_log" 2>&1 & lint_pid=$$!; \
	status=0; $(BIN)/pytest -m "not gpu and not fleet" $(PYTEST_PARALLEL) --durations=20 || status=$$?; \
	lint_status=0; wait $$lint_pid || lint_status=$$?; \
	echo "== lint (ruff, mypy, lint-imports): exit $$lint_status"; cat "$$lint_log"; rm -f "$$lint_log"; \
	[ $$status -eq 0 ] && [ $$lint_status -eq 0 ]

test-gpu:
	$(BIN)/pytest -m gpu

# The Windows lane: the suite (not slow, network or gpu) under a Windows CPython 3.11 in Wine 8,
# the end-to-end Windows tests among them. Wine, its prefix and the wheels are cached in
# ENVFORGE_WINE_CACHE (default ~/.cache/envforge-wine), created from scratch when missing.
test-windows: setup
	bash scripts/wine/lane.sh

test-fast: lint
	$(BIN)/pytest -m "not slow and not network and not gpu and not fleet" $(PYTEST_PARALLEL)

# Three podman containers of a debootstrapped Debian, converged by Ansible from one bundle.
# fleet-deps installs (apt, the venv) and fleet-setup also builds the rootfs: .ci/run installs
# first, then runs the lanes side by side (two apt-get or pip runs at once would collide).
fleet-setup: fleet-deps
	$(BIN)/python -m tests.testing.fleet prepare

fleet-deps: $(VENV)/.fleet-installed

$(VENV)/.fleet-installed: $(VENV)/.installed
	command -v podman >/dev/null && command -v runc >/dev/null && command -v debootstrap >/dev/null \
	  || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap; }
	$(BIN)/python -m pip install -q --index-url $(INDEX) -e '.[fleet]'
	touch $@

test-fleet: fleet-setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -m fleet -p no:cacheprovider

# Every knowledge row names a source; every fetchable artifact's sha256 is its file's (network).
knowledge-check: setup
	$(BIN)/pytest -q tests/knowledge/test_data.py tests/knowledge/test_artifact_hashes.py \
		tests/knowledge/test_single_source.py

demo: setup
	$(BIN)/envforge lock --check specs/theano-cpu.toml || $(BIN)/envforge lock specs/theano-cpu.toml
	$(BIN)/envforge apply specs/theano-cpu.toml --yes
	$(BIN)/envforge verify specs/theano-cpu.toml --report verify-report.md

bench: setup
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
