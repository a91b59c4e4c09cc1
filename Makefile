# The README's two commands, `make demo` and `make test`, do all set-up.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup demo test lint proto crds manifests bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/mchub demo

test: setup lint
	$(BIN)/pytest -q -p no:cacheprovider

lint: setup
	$(BIN)/buf lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

proto: setup
	$(BIN)/python hack/gen_proto.py

crds: setup
	$(BIN)/python hack/gen_crds.py

bench: setup
	$(BIN)/python bench/hub_fanout.py

clean:
	rm -rf $(VENV) mchub-data .pytest_cache .mypy_cache .ruff_cache
