#!/usr/bin/env bash
# The LLM engine's end-to-end test against a real local model, without adding the build time to the suite's.
#
#   .ci/local-llm.sh start  PY HTAM   start building llama-cpp-python[server] into its own venv, in the background
#                                     (nice 19), and fetch the small model; returns at once. PY: the interpreter
#                                     that makes the venv; HTAM: the project's `htam` (for `htam llm fetch`).
#   .ci/local-llm.sh finish PY        wait for that build (at most LLM_WAIT_S seconds), then run
#                                     tests/generate/test_llm_local_model.py with PY (the project's interpreter);
#                                     the test skips, saying why, when the build or the model could not be had.
#
# The venv lives in LLM_CACHE (default ~/.cache/htam/llm-ci/venv), so a second run finds it built and only
# checks it. The build uses the portable CPU flags of htam_core/generate/local_model.py (AVX2/FMA/F16C on,
# native tuning, AVX-512 and AMX off). Never fatal: a failed build leaves a log (LLM_CACHE/build.log) and a skip.
set -uo pipefail
CACHE="${LLM_CACHE:-$HOME/.cache/htam/llm-ci}"
VENV="$CACHE/venv"
SPEC="${LLAMA_CPP_SPEC:-llama-cpp-python[server]==0.3.36}"
# the portable CPU flags, and no multimodal (llava/mtmd) library: the test serves a text model only
FLAGS="${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF}"
WAIT_S="${LLM_WAIT_S:-600}"
mkdir -p "$CACHE"

ready() { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import llama_cpp.server.app" 2>/dev/null; }

case "${1:-}" in
start)
  PY="$2"; HTAM="$3"
  if [ -f "$CACHE/build.pid" ] && kill -0 "$(cat "$CACHE/build.pid")" 2>/dev/null && [ ! -f "$CACHE/build.rc" ]; then
    echo "local LLM: a build started earlier is still running (log: $CACHE/build.log)"
    exit 0
  fi
  rm -f "$CACHE/build.rc"
  if ready; then
    echo "local LLM: llama-cpp-python already built in $VENV"
    "$HTAM" llm fetch --model smollm2 >"$CACHE/fetch.log" 2>&1
    echo 0 >"$CACHE/build.rc"
    exit 0
  fi
  echo "local LLM: building $SPEC in the background into $VENV (log: $CACHE/build.log)"
  date -u +%s >"$CACHE/build.start"
  setsid nohup bash -c '
    set -o pipefail
    rc=0
    { [ -x "$0/bin/python" ] || "$1" -m venv "$0"; } && \
      CMAKE_ARGS="$2" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc 2>/dev/null || echo 2)" \
      nice -n 19 "$0/bin/python" -m pip install -q "$3" || rc=$?
    "$4" llm fetch --model smollm2 || { [ "$rc" = 0 ] && rc=1; }
    date -u +%s >"$5/build.end"
    echo "$rc" >"$5/build.rc"
  ' "$VENV" "$PY" "$FLAGS" "$SPEC" "$HTAM" "$CACHE" >"$CACHE/build.log" 2>&1 </dev/null &
  echo $! >"$CACHE/build.pid"
  ;;
finish)
  PY="$2"
  waited=0
  alive() { [ -f "$CACHE/build.pid" ] && kill -0 "$(cat "$CACHE/build.pid")" 2>/dev/null; }
  while [ ! -f "$CACHE/build.rc" ] && [ "$waited" -lt "$WAIT_S" ] && alive; do sleep 5; waited=$((waited + 5)); done
  if [ ! -f "$CACHE/build.rc" ] && ready; then
    echo "local LLM: llama-cpp-python is built in $VENV"
  elif [ ! -f "$CACHE/build.rc" ]; then
    echo "local LLM: no finished build (not started, or not done within LLM_WAIT_S=${WAIT_S} s); the test will skip"
  elif [ "$(cat "$CACHE/build.rc")" != "0" ]; then
    echo "local LLM: the build or the fetch failed (rc $(cat "$CACHE/build.rc"); $CACHE/build.log); the test will skip"
  elif [ -f "$CACHE/build.start" ] && [ -f "$CACHE/build.end" ]; then
    echo "local LLM: built in $(( $(cat "$CACHE/build.end") - $(cat "$CACHE/build.start") )) s; waited ${waited} s after the suite"
  fi
  t0=$(date +%s)
  HTAM_LLM_PYTHON="$VENV/bin/python" "$PY" -m pytest -q -n 0 -rs tests/generate/test_llm_local_model.py
  rc=$?
  echo "local LLM: end-to-end test took $(( $(date +%s) - t0 )) s"
  exit $rc
  ;;
*)
  echo "usage: $0 start PY HTAM | finish PY" >&2
  exit 2
  ;;
esac
