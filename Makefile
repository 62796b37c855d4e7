# Two commands do all the set-up: `make demo` and `make test`. Both create .venv with python3.11
# and install the project with its extras in one pip command (so the resolver keeps bpy's numpy<2
# pin), re-installing only when pyproject.toml changes.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
EXTRAS := baselines,render,faiss,distributed,zenodo,exchange,docs,dev
STAMP := $(VENV)/.installed

.PHONY: venv test check demo lint bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

# Test files are spread over TEST_WORKERS pytest-xdist workers, whole files each (module fixtures are
# made once), in collection order (the longest first: conftest.py); TEST_WORKERS=0 runs in this
# process (for pdb). docs/architecture.md, "Tests".
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

# Everything but the GPU tests: what CI runs (.ci/run) and the README names.
test: $(STAMP)
	$(BIN)/python -m pytest -m "not gpu" $(XDIST) $(PYTEST_ARGS)

# The fast tier for the edit-test loop: no Blender, no browser, no environment builds, nothing slow.
check: $(STAMP)
	$(BIN)/python -m pytest -m "not blender and not slow and not browser and not env and not gpu" $(XDIST) $(PYTEST_ARGS)

demo: $(STAMP)
	$(BIN)/ident3d demo $(DEMO_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check ident3d render baselines leaderboard tests benchmarks
	$(BIN)/basedpyright  # every import resolves statically ([tool.basedpyright] in pyproject.toml)

bench: $(STAMP)
	$(BIN)/python -m benchmarks.report

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
