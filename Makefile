# One entry for set-up, demo, tests and benchmarks. Each target installs what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench lint clean

setup: $(STAMP)

# torch is pinned and installed first: an unpinned torch pulls a multi-GB CUDA build (DEVELOPERS.md).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[models,dev]'
	touch $(STAMP)

demo: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash data/demo.sh

test: setup
	$(PY) -m pytest -q

bench: setup
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/run.py

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) demo-out
