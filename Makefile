# `make demo` sets up and runs the main job; `make test` runs the tests (ruff, mypy, pytest).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INDEX := https://pypi.org/simple

.PHONY: setup test test-fast lint demo bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --index-url $(INDEX) -e '.[dev]'
	touch $@

lint: setup
	$(BIN)/ruff check envforge tests bench
	$(BIN)/mypy envforge

test: lint
	$(BIN)/pytest

test-fast: lint
	$(BIN)/pytest -m "not slow and not network"

demo: setup
	$(BIN)/envforge lock specs/theano-cpu.toml

bench: setup
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
