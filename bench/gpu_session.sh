#!/usr/bin/env bash
# One GPU session on a lent machine (or any GPU box): install the carried wheels and this package, then run the
# stages named in STAGES, each under its own time limit, and pack everything under $OUT.
#
#   GPUTESTS_ARGS / GPUTESTS_K  test paths and -k expression of the gputests stage
#   STAGES    comma-separated, in order, from: gputests, demo, bench, lsp, hacks, timing (bench/timing_agreement.py),
#             zeroconf (bench/bench_zeroconf.py), lspgpu (bench/bench_lsp_gpu.py),
#             spellings (bench/spelling_matrix.py --gpu: each textbook step on each spelling, GPU-verified;
#             spellingsp: the same, one process per step at once, each under SPELLINGS_S; SPELLINGS_STEPS: which),
#             transpose (bench/bench_transpose_spellings.py: the padded transpose tile on each spelling, timed beside
#             its start on a non-square matrix of sides not multiples of 32; TRANSPOSE_S, TRANSPOSE_ARGS),
#             loopspeed (bench/bench_loop_speed.py: htam optimize's time per phase on five kernels, cold and warm
#             cache; LOOPSPEED_S, LOOPSPEED_ARGS, e.g. "--budget 2"),
#             executors (the suite subset under --executor local and dask, compared),
#             space (the family suite's measured-space table; resumes .devcarry/space-table.jsonl when carried;
#             SPACE_FILL=<fill list from htam bench misses> measures those candidates instead of exploring),
#             llmc (bench/bench_llmc.py: the rules engine on llm.c's naive kernels beside the experts; resumes
#             .devcarry/llmc-gpu.jsonl when carried; LLMC_DIR,
#             LLMC_BUDGET, LLMC_TRIALS, LLMC_MINUTES, LLMC_S, LLMC_ARGS),
#             textbook (bench/bench_textbook.py --gpu: unseen textbook kernels, naive beside the authors' version;
#             reads the corpus root (public/ and llmc/) from TEXTBOOK_CORPUS, default .devcarry/corpus; reuses the
#             llmc stage's rows of this session, else a carried .devcarry/llmc-gpu.jsonl; TEXTBOOK_BUDGET, TEXTBOOK_TRIALS,
#             TEXTBOOK_MINUTES, TEXTBOOK_S, TEXTBOOK_ARGS),
#             llmgpu (bench/llm_guidance_gpu.py: the LLM guidance benchmark's correct candidates, packed on the CPU
#             machine by bench/llm_guidance_pack.py into LLMGPU_PACK (default .devcarry/llm-pack), verified and
#             re-timed against their starts in a fresh process; speedups per policy; resumes when its output
#             folder is carried as LLMGPU_PACK/timings.jsonl; LLMGPU_MINUTES, LLMGPU_S, LLMGPU_TRIALS)
#             samples (htam optimize --engine rules on the sample-project look-alikes of
#             tests/fixtures/sample_projects, reduce0 and transposeNaive, each from a work copy with a fresh memory;
#             SAMPLES_S, SAMPLES_BUDGET)
#             probe (bench/probe_timing_refusals.py: why the timer/CUPTI cross-check refused a timing; each job's
#             launch, calibration, timer, CUPTI operations per call, the timer's events of the trials CUPTI recorded
#             and both checks' messages; PROBE_ARGS: jobs FOLDER[:FILE] or FOLDER:step=TRANSFORM_ID and options,
#             default the count_nz privatized candidate, the sigmoid_half start and a control of each; PROBE_S)
#             (default: gputests,demo,bench)
#   OUT       where results go (default: /tmp/htam-gpu-out); $OUT/results.tar.gz holds the run's folders
#   KB_PROBLEMS  problems.jsonl for the KernelBench runner (default: .devcarry/problems.jsonl, else bench/data_paths.py's)
#   plus every HTAM_BENCH_* / HTAM_KB_* variable of bench/run_gpu_bench.sh.
#
# Wheels: pip download them for cp312 into .whl (see the device tool's README) and carry .whl (and .devcarry).
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
OUT="${OUT:-/tmp/htam-gpu-out}"
RUN="$OUT/run"
mkdir -p "$RUN"
export PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
STAGES="${STAGES:-gputests,demo,bench}"
log() { echo "[gpu_session $(date +%H:%M:%S)] $*"; }

if [ -d .whl ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    > "$RUN/pip-wheels.log" 2>&1 || { log "wheel install failed"; tail -5 "$RUN/pip-wheels.log"; }
  export PYTHONPATH="/tmp/site:$REPO:${PYTHONPATH:-}"
else
  export PYTHONPATH="$REPO:${PYTHONPATH:-}"
fi
"$PY" -m pip install -q --no-deps --no-build-isolation --no-index -e . > "$RUN/pip-htam.log" 2>&1 \
  || log "editable install failed (PYTHONPATH still serves the packages)"
export HTAM_CACHE_DIR=/tmp/htam-cache
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  command -v ncu >/dev/null && ncu --version | tail -1
  date -u +%Y-%m-%dT%H:%M:%SZ; } > "$RUN/device.txt" 2>&1
cat "$RUN/device.txt"
HTAM=("$PY" -m htam_core.cli.main)

stage() {  # stage NAME SECONDS COMMAND...
  local name="$1" limit="$2"; shift 2
  log "stage $name (limit ${limit}s)"
  local t=$SECONDS
  timeout --signal=INT --kill-after=20 "$limit" "$@" > "$RUN/$name.log" 2>&1
  local rc=$?
  log "stage $name: exit $rc in $((SECONDS - t)) s"
  tail -4 "$RUN/$name.log"
}

IFS=',' read -ra want <<< "$STAGES"
for s in "${want[@]}"; do
  case "$s" in
    gputests) HTAM_GPU_RESULTS="$RUN/profile_gpu.jsonl" stage gputests "${GPUTESTS_S:-150}" "$PY" -m pytest -q -m gpu \
                -p no:cacheprovider -k "${GPUTESTS_K:-not nothing}" --junitxml "$RUN/gputests.xml" ${GPUTESTS_ARGS:-tests} ;;
    demo) stage demo "${DEMO_S:-120}" "${HTAM[@]}" optimize examples/vector_add.py --kernel add_kernel --engine rules \
            --budget 8 --memory "$RUN/demo-memory.sqlite3" --out "$RUN/demo" --json ;;
    bench) KB="${KB_PROBLEMS:-}"; [ -z "$KB" ] && { [ -f .devcarry/problems.jsonl ] && KB=.devcarry/problems.jsonl \
              || KB="$("$PY" bench/data_paths.py kernelbench)"; }
           HTAM_KB_PROBLEMS="$KB" OUT="$RUN/bench" stage bench "${BENCH_S:-330}" bash bench/run_gpu_bench.sh ;;
    lsp) HTAM_LSP_GPU_LOG="$RUN/lsp-gpu.jsonl" stage lsp "${LSP_S:-120}" "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/lsp ;;
    hacks) stage hacks "${HACKS_S:-90}" "$PY" -m pytest -q -m gpu -p no:cacheprovider --junitxml "$RUN/hacks.xml" \
             tests/verify tests/runtime/test_isolation.py tests/bench/test_cu_launcher.py ;;
    probe) stage probe "${PROBE_S:-170}" "$PY" bench/probe_timing_refusals.py --out "$RUN/probe" ${PROBE_ARGS:-} ;;
    timing) stage timing "${TIMING_S:-240}" "$PY" bench/timing_agreement.py --out "$RUN/timing" ;;
    zeroconf) stage zeroconf "${ZEROCONF_S:-150}" "$PY" bench/bench_zeroconf.py --out "$RUN/zeroconf" ${ZEROCONF_ARGS:-} ;;
    lspgpu) stage lspgpu "${LSPGPU_S:-120}" "$PY" bench/bench_lsp_gpu.py --out "$RUN/lspgpu" ${LSPGPU_ARGS:-} ;;
    loopspeed) stage loopspeed "${LOOPSPEED_S:-600}" "$PY" bench/bench_loop_speed.py --out "$RUN/loopspeed" \
                 --label "$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -1 | tr ' ' '-')-gpu" \
                 --timeout-s 240 ${LOOPSPEED_ARGS:-} ;;
    executors) EXK="${EXEC_KERNELS:-vadd_kernel,transpose_naive,sgemm_naive,block_sum_interleaved,row_sum_serial,layernorm_thread_per_row}"
               for ex in local dask; do
                 stage "exec-$ex" "${EXEC_S:-150}" "${HTAM[@]}" bench suite --suite bench/suite --policies "${EXEC_POLICIES:-htam}" \
                   --kernels "$EXK" --budget "${EXEC_BUDGET:-3}" --trials 20 --executor "$ex" --fresh --max-minutes "${EXEC_MINUTES:-2}" \
                   --out "$RUN/exec-$ex" --work "$RUN/exec-$ex/work"
               done
               "$PY" bench/compare_executors.py "$RUN"/exec-local/*-suite.json "$RUN"/exec-dask/*-suite.json \
                 --out "$RUN/executors" --header "Device: $(head -1 "$RUN/device.txt")" \
                 --header "Date: $(date -u +%Y-%m-%d)" --header "Command: STAGES=executors EXEC_KERNELS=$EXK EXEC_POLICIES=${EXEC_POLICIES:-htam} EXEC_BUDGET=${EXEC_BUDGET:-3} EXEC_MINUTES=${EXEC_MINUTES:-2} bash bench/gpu_session.sh" \
                 > "$RUN/executors.log" 2>&1; tail -3 "$RUN/executors.log" ;;
    space) mkdir -p "$RUN/space"; [ -f .devcarry/space-table.jsonl ] && cp .devcarry/space-table.jsonl "$RUN/space/table.jsonl"
           stage space "${SPACE_S:-450}" "${HTAM[@]}" bench space --manifest bench/families/manifest.json \
             --llmc "${LLMC_DIR:-.devcarry/llmc}" --out "$RUN/space/table.jsonl" --depth "${SPACE_DEPTH:-2}" \
             --max-candidates "${SPACE_CANDIDATES:-4}" --trials "${SPACE_TRIALS:-20}" --max-minutes "${SPACE_MINUTES:-7}" \
             ${SPACE_FILL:+--fill "$SPACE_FILL"} ;;
    llmc) mkdir -p "$RUN/llmc"; [ -f .devcarry/llmc-gpu.jsonl ] && cp .devcarry/llmc-gpu.jsonl "$RUN/llmc/llmc-gpu-$(date -u +%F).jsonl"
          stage llmc "${LLMC_S:-420}" "$PY" bench/bench_llmc.py --llmc "${LLMC_DIR:-.devcarry/llmc}" \
            --budget "${LLMC_BUDGET:-3}" --trials "${LLMC_TRIALS:-20}" --max-minutes "${LLMC_MINUTES:-6.5}" \
            --out "$RUN/llmc" --work /tmp/llmc-work ${LLMC_ARGS:-} ;;
    textbook) TB_ROWS=$(ls "$RUN"/llmc/llmc-gpu-*.jsonl 2>/dev/null | head -1)
              [ -z "$TB_ROWS" ] && [ -f .devcarry/llmc-gpu.jsonl ] && TB_ROWS=.devcarry/llmc-gpu.jsonl
              stage textbook "${TEXTBOOK_S:-460}" "$PY" bench/bench_textbook.py --gpu \
                --corpus "${TEXTBOOK_CORPUS:-.devcarry/corpus}" --budget "${TEXTBOOK_BUDGET:-3}" \
                --trials "${TEXTBOOK_TRIALS:-20}" --max-minutes "${TEXTBOOK_MINUTES:-6.5}" --out "$RUN/textbook" \
                ${TB_ROWS:+--llmc-rows "$TB_ROWS"} ${TEXTBOOK_ARGS:-} ;;
    llmgpu) PACK="${LLMGPU_PACK:-.devcarry/llm-pack}"; mkdir -p "$RUN/llmgpu"
            [ -f "$PACK/timings.jsonl" ] && cp "$PACK/timings.jsonl" "$RUN/llmgpu/timings.jsonl"
            stage llmgpu "${LLMGPU_S:-450}" "$PY" bench/llm_guidance_gpu.py "$PACK" --out "$RUN/llmgpu" \
              --max-minutes "${LLMGPU_MINUTES:-6.5}" --trials "${LLMGPU_TRIALS:-50}" --device "$(head -1 "$RUN/device.txt")" \
              --command "STAGES=llmgpu LLMGPU_PACK=$PACK bash bench/gpu_session.sh" ;;
    spellings) stage spellings "${SPELLINGS_S:-420}" "$PY" bench/spelling_matrix.py --gpu --out "$RUN/spelling-matrix" ;;
    spellingsp) mkdir -p "$RUN/spelling-steps"; log "stage spellingsp: one process per step (limit ${SPELLINGS_S:-300}s)"
                for st in ${SPELLINGS_STEPS:-$(ls tests/fixtures/spellings)}; do
                  timeout --signal=INT --kill-after=20 "${SPELLINGS_S:-300}" "$PY" bench/spelling_matrix.py --gpu \
                    --step "$st" --out "$RUN/spelling-steps/$st" > "$RUN/spelling-steps/$st.log" 2>&1 &
                done; wait; log "stage spellingsp: done" ;;
    transpose) stage transpose "${TRANSPOSE_S:-300}" "$PY" bench/bench_transpose_spellings.py \
                 --out "$RUN/transpose-spellings" ${TRANSPOSE_ARGS:-} ;;
    samples) rm -rf "$RUN/samples-work"; cp -r tests/fixtures/sample_projects "$RUN/samples-work"
             for sk in reduction/Samples/reduction/reduction_kernel.cu:reduce0 transpose/Samples/transpose/transpose.cu:transposeNaive; do
               stage "samples-${sk##*:}" "${SAMPLES_S:-240}" "${HTAM[@]}" optimize "$RUN/samples-work/${sk%%:*}" \
                 --kernel "${sk##*:}" --engine rules --budget "${SAMPLES_BUDGET:-3}" \
                 --memory "$RUN/samples-memory.sqlite3" --out "$RUN/samples-${sk##*:}" --json
             done ;;
    *) log "unknown stage $s" ;;
  esac
done
tar -C "$OUT" -czf "$OUT/results.tar.gz" run && log "packed $OUT/results.tar.gz ($(du -h "$OUT/results.tar.gz" | cut -f1))"
