# Two commands on a fresh machine with Python 3.11 and pip: `make demo`, `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# No wheel cache: a CI disk once filled up during setup; the venv alone is ~1.6 GB.
export PIP_NO_CACHE_DIR := 1

.PHONY: setup demo test lint typecheck pytest browser docs clean gpu-check

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The pinned CPU build first: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/hookscope demo

lint: setup
	$(BIN)/ruff check src tests benchmarks examples tools
	$(BIN)/ruff format --check src tests benchmarks examples tools

typecheck: setup
	$(BIN)/mypy

# The documentation site (mkdocs-material + mkdocstrings); --strict: any warning
# (a broken link or anchor, an API object that does not exist) fails the build.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

browser:
	# Headless Chromium for the HTML report test; the test skips with a reason where this fails.
	@command -v chromium >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && \
		(apt-get install -y -qq chromium >/dev/null 2>&1 || \
		 (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) || \
		echo "chromium not installed: the browser test will skip")

pytest: setup
	$(BIN)/python -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

test: setup browser lint typecheck docs pytest

# Every CUDA check and the Monitor overhead on CUDA, one table (< 8 min); exits 0 with
# a "no CUDA device" line on a machine without one.
gpu-check: setup
	$(BIN)/python benchmarks/gpu_check.py

clean:
	rm -rf $(VENV) runs build dist site
