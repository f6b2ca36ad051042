# The two set-up commands of the README: `make demo` and `make test`.
# torch goes in first, pinned, and stays a constraint for everything after it:
# an unpinned resolver would otherwise fetch a CUDA build of several GB.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test docs site install clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/transduce demo

# One pytest-xdist worker per core (conftest.py gives each one thread): on the 2-core CI
# machine the suite takes about half as long as in one process. PYTEST_ARGS adds options,
# e.g. `make test PYTEST_ARGS="-n 0 -x"` for one process that stops at the first failure.
# ruff (lint and format, settings in pyproject.toml) checks the tree first.
# The training-outcome tests (marker `outcome`) run in fp32 and bf16 in the first pass, then
# again in fp32 under each narrower CPU kernel PyTorch has here (tests/kernels.py), so a
# machine with AVX-512 also checks what an AVX2 or a plain x86 CPU computes. Only fp32
# there: a CPU whose widest kernel is AVX2 or none has no AVX-512 BF16 or AMX, so
# precision=auto trains in fp32 on it and its own suite skips the bf16 instances; bf16
# under each kernel is measured for the bounds by benchmarks/outcomes/spread.py.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -n auto $(PYTEST_ARGS)
	@for kernel in $$($(BIN)/python tests/kernels.py); do \
		echo "training-outcome tests in fp32 under ATEN_CPU_CAPABILITY=$$kernel"; \
		ATEN_CPU_CAPABILITY=$$kernel TRANSDUCE_TEST_PRECISIONS=fp32 \
			$(BIN)/python -m pytest -q -n auto -m outcome \
			$(PYTEST_ARGS) || exit 1; \
	done

# The documentation site: built strictly (a warning or a broken link fails it) into $(SITE),
# then served on 127.0.0.1. tests/test_docs.py runs `make site` itself, so the suite builds the
# site exactly as users do. The variables silence the notices two plugins print about MkDocs 2,
# which strict mode would count as warnings.
SITE ?= site
MKDOCS := NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs

site:
	$(MKDOCS) build --strict --site-dir $(SITE)

docs: $(STAMP)
	$(MAKE) site
	$(MKDOCS) serve --dev-addr 127.0.0.1:8000

clean:
	rm -rf $(VENV) runs .pytest_cache site
