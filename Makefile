# HTAM kernel assistant: the two commands of the README.
#   make demo  -> install, then run the main job on the bundled example
#   make test  -> install with test extras, then run every test (Python, then the VS Code extension)
#   make test-fast -> the quick tier while you work: lint and the fast Python tests, a few minutes on 2 cores
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# CPU machines: the CPU build of torch (a GPU machine with its own torch keeps it: TORCH_SPEC=)
TORCH_SPEC ?= torch==2.13.0
OUT    ?= htam-out

.PHONY: install install-test demo test test-fast test-python test-extension lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

install: $(BIN)/python
	@if [ -n "$(TORCH_SPEC)" ] && ! $(BIN)/python -c "import torch" 2>/dev/null; then \
	  echo "installing $(TORCH_SPEC)"; $(BIN)/python -m pip install -q "$(TORCH_SPEC)"; fi
	$(BIN)/python -m pip install -q -e .

install-test: install
	$(BIN)/python -m pip install -q -e '.[test]'

demo: install
	mkdir -p $(OUT)
	$(BIN)/htam kernels examples/vector_add.py
	$(BIN)/htam profile examples/vector_add.py --kernel add_kernel
	$(BIN)/htam suggest examples/vector_add.py --kernel add_kernel --memory $(OUT)/memory.sqlite3
	$(BIN)/htam optimize examples/vector_add.py --kernel add_kernel --engine rules --budget 8 \
	  --memory $(OUT)/memory.sqlite3 --out $(OUT)/vector_add

lint: install-test
	$(BIN)/ruff check .

# The full Python suite, spread over the machine's cores (pytest-xdist; PYTEST_WORKERS=0 runs it in one process).
PYTEST_WORKERS ?= auto
test-python: install-test lint
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS)

# The quick tier: no editor, no GPU, no nvcc compile loops (marker slow), cross products sampled (HTAM_TEST_TIER).
test-fast: install-test lint
	HTAM_TEST_TIER=fast $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m "not slow and not editor and not gpu"

# The extension's checks, then its end-to-end test in code-server + headless Chromium against this venv's server.
test-extension: install-test
	HTAM_E2E=1 HTAM_E2E_PYTHON=$(abspath $(BIN)/python) bash vscode-extension/scripts/ci.sh

test: test-python test-extension

clean:
	rm -rf $(VENV) $(OUT) build *.egg-info
