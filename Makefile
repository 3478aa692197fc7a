# Two commands do everything on a fresh machine:
#   make demo   creates .venv, installs textveil, builds the default embeddings (once), sanitises a sample
#   make test   installs the test dependencies and runs the whole suite
# Both are idempotent: a stamp file records the last install, the embeddings are cached.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TEXTVEIL := $(VENV)/bin/textveil
INSTALLED := $(VENV)/.stamp-install
TEST_INSTALLED := $(VENV)/.stamp-test
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test embeddings bench bench-sweep clean

demo: embeddings
	$(TEXTVEIL) sanitize examples/sample.txt --mechanism emp --epsilon 20 --seed 7

test: $(TEST_INSTALLED) embeddings
	$(PY) -m pytest -q

embeddings: $(INSTALLED)
	$(TEXTVEIL) embeddings build

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# torch first, pinned: the CPU wheel of 2.13.0 is on this machine; any other version pulls CUDA.
$(INSTALLED): pyproject.toml | $(PY)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e .
	touch $@

$(TEST_INSTALLED): $(INSTALLED)
	$(PY) -m pip install -q -e ".[test]"
	touch $@

bench: $(INSTALLED)
	$(PY) benchmarks/bench_sanitize.py

# paper 001's sweep (C50 risk, BBC utility) with every stage timed; needs ../shared/data
bench-sweep: $(INSTALLED)
	$(PY) benchmarks/bench_sweep.py

clean:
	rm -rf $(VENV) build *.egg-info
