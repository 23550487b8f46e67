# `make demo` and `make test` work on a fresh clone with only Python installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-latest lint bench docs docs-figures clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/jaxlean bench --quick compile memory solver

lint: $(STAMP)
	$(BIN)/ruff check jaxlean tests examples

QUICK_XLA_FLAGS := --xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false
PYTEST := -m pytest -q -n auto --dist worksteal --durations=10

# The suite compiles the same HLO programs as a user's run, with XLA's CPU backend told to
# compile quickly: LLVM at optimisation level 0 and XLA's older loop emitters in place of
# its fusion emitters (a small program compiles in about half the time; see
# docs/manual/setup.md); `make test-latest` uses those of them its XLA knows. XLA_FLAGS
# given by the caller come after ours and win.
# Compiled programs are kept in .cache/test-xla/ (tests/xla_cache.py; JAX's key includes
# XLA_FLAGS and jaxlib's version), so a second run loads them; the run ends with the
# cache's hits and misses. JAXLEAN_TEST_XLA_CACHE=off runs without it.
test: lint
	XLA_FLAGS="$(QUICK_XLA_FLAGS) $$XLA_FLAGS" $(BIN)/python $(PYTEST)

# The same suite on the newest Python >= 3.12 on this machine (scripts/newest_python.sh)
# with the newest jax, jaxlib, optax, equinox and orbax-checkpoint pyproject.toml allows,
# in a second environment; it is made again when that Python changes.
LATEST_VENV := .venv-latest
LATEST_BIN := $(LATEST_VENV)/bin
LATEST_PACKAGES := jax jaxlib optax equinox orbax-checkpoint

test-latest:
	@python=$$(scripts/newest_python.sh) || exit $$?; \
	version='import sys; print(sys.version)'; \
	if [ "$$($(LATEST_BIN)/python -c "$$version" 2>/dev/null)" != "$$($$python -c "$$version")" ]; then \
		echo "creating $(LATEST_VENV) with $$python"; \
		rm -rf $(LATEST_VENV) && $$python -m venv $(LATEST_VENV); \
	fi
	$(LATEST_BIN)/python -m pip install --quiet --upgrade pip
	$(LATEST_BIN)/python -m pip install --quiet --upgrade --upgrade-strategy eager \
		-e ".[dev]" $(LATEST_PACKAGES)
	@$(LATEST_BIN)/python -c 'import sys; from importlib.metadata import version; \
		print("Python", sys.version.split()[0], *(f"{p} {version(p)}" for p in sys.argv[1:]), \
		sep=", ")' $(LATEST_PACKAGES)
	@$(LATEST_BIN)/python -m pip index versions jax 2>/dev/null | head -1 \
		| sed 's/^/newest on the package index: /'
	$(LATEST_BIN)/ruff check jaxlean tests examples
	# The quick-compile flags this XLA knows (an XLA_FLAGS entry it does not know is fatal;
	# jaxlib 0.12 has no fusion-emitter switch). The suite's cache is on here as in `make
	# test` (its own directory per jax and jaxlib version): JAX 0.12 stores programs with host
	# callbacks and a loaded one calls the loading process's callbacks (tests/compile/
	# test_cache_truth.py checks it). JAXLEAN_TEST_XLA_CACHE=off runs without it.
	@flags="$(QUICK_XLA_FLAGS)"; \
	probe='import jax.numpy as jnp; jnp.zeros(1).block_until_ready()'; \
	if ! XLA_FLAGS="$$flags" JAX_PLATFORMS=cpu $(LATEST_BIN)/python -c "$$probe" >/dev/null 2>&1; \
	then flags="--xla_backend_optimization_level=0"; fi; \
	echo "XLA_FLAGS=\"$$flags $$XLA_FLAGS\""; \
	XLA_FLAGS="$$flags $$XLA_FLAGS" \
		$(LATEST_BIN)/python $(PYTEST)

# The documentation site (mkdocs.yml, docs/) into site/, with the `docs` extra (mkdocs,
# mkdocstrings, matplotlib); --strict: a broken link or anchor, a page missing from the nav or
# a public name without a docstring fails the build. tests/test_docs.py runs every page's
# code; `make docs-figures` draws the pages' figures again into docs/*/figures/.
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-figures: $(DOCS_STAMP)
	MPLBACKEND=Agg $(BIN)/python tests/test_docs.py --figures

bench: $(STAMP)
	$(BIN)/jaxlean bench --out bench-results

clean:
	rm -rf $(VENV) $(LATEST_VENV) bench-results .pytest_cache .cache/test-xla
