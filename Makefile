# One entry for set-up, demo, tests and benchmarks. Each target installs what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup browser demo test test-all bench lint docs docs-images clean

setup: $(STAMP)

# torch is pinned and installed first: an unpinned torch pulls a multi-GB CUDA build (DEVELOPERS.md).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[models,dev,web,llm,spark,docs]'
	touch $(STAMP)

demo: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash data/demo.sh

# The review page's tests drive Debian's Chromium. As root with apt-get (CI), install it; elsewhere
# without it those tests skip, saying so (and fail under CI=true).
browser:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "no Chromium (apt-get install chromium): the browser tests will skip"; fi

# The fast lane: everything but the tests marked slow (model loads, real data sets, big files),
# on $(WORKERS) workers, each test file on one of them (module fixtures built once).
WORKERS ?= 2
test: setup browser
	$(PY) -m pytest -q -m "not slow" -n $(WORKERS) --dist loadfile

# Everything, the slow real-data tests too, on the same workers: what CI runs.
test-all: setup browser
	$(PY) -m pytest -q -n $(WORKERS) --dist loadfile

bench: setup
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/run.py

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# The review page's screenshots in docs/img/ (review-800.png, review-1366.png), taken again by the
# browser test: it writes them there only with GOLDMINE_UPDATE_DOCS_IMAGES=1.
docs-images: setup browser
	GOLDMINE_UPDATE_DOCS_IMAGES=1 $(PY) -m pytest -q tests/test_web_review.py -k fits

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) demo-out site
