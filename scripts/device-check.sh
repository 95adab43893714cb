#!/usr/bin/env bash
# The one prepared script for a lent GPU machine (H200, issue 15). It runs a packed build: that machine has no
# Open MPI, OpenBLAS or cmake dependencies, so build and pack here first:
#   cmake --preset release -DFACTORYBENCH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a && cmake --build --preset release
#   scripts/device-pack.sh build/release .device     (../shared/device/pack.sh, plus adam_bench, compressed)
# then, in one device run with carry [".device"]:  bash scripts/device-check.sh .device/build
# It runs the GPU test executables directly (no ctest there), our GPU figures, and the PyTorch anchors of the
# same work (scripts/torch_anchors.py, with the machine's torch) in the same session, and prints a table of
# figure, anchor and ratio. It keeps to a budget (FB_DEVICE_BUDGET_S, default 540 s, under the device tool's
# 600 s a command): every step's timeout is cut to what is left, and steps that no longer fit are recorded as
# not run. The figures and their anchors come first, then the GPU tests (code that may not have run on a GPU
# yet, the likeliest to hang), then the NCCL and health smoke. Logs go to FB_DEVICE_LOG_DIR (default
# /tmp/fb-device-check, emptied first: a rerun on a warm machine never shows the last run's figures); where
# the device tool sets $OUT (at most 8 files come back from it), the table, rewritten after every part, and
# one tarball of every log are copied there, so a run cut short still returns what it has.
# Usage: scripts/device-check.sh [--dry-run] [BUILD_DIR]   (default .device/build)
#   --dry-run: check the build and list what would run, without a GPU; exit 0 when everything is there.
# Exit: 0 done (see the table), 1 a GPU test failed or timed out, 2 no build to run (a dry run: something
# missing), 77 no GPU here (nothing measured).
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
BUILD_DIR=${1:-.device/build}
LOG=${FB_DEVICE_LOG_DIR:-/tmp/fb-device-check}
# A folder of an earlier run (it has its table) is emptied; any other non-empty folder is refused.
if [ -d "$LOG" ] && [ -n "$(ls -A "$LOG" 2>/dev/null)" ]; then
  if [ -e "$LOG/table.md" ]; then
    find "$LOG" -mindepth 1 -delete
  else
    echo "device-check: FB_DEVICE_LOG_DIR $LOG holds other files; give an empty or new folder" >&2
    exit 2
  fi
fi
mkdir -p "$LOG"
TABLE="$LOG/table.md"
: >"$TABLE"
# The budget: every step gets min(its own timeout, what is left less a margin for the table).
BUDGET=${FB_DEVICE_BUDGET_S:-540}
DEADLINE=$((SECONDS + BUDGET))
NOT_RUN=()
# fits NAME SECONDS: sets STEP_TIMEOUT to the timeout to use, or returns 1 (and records NAME as not run) when
# under 10 s is left. Call it in this shell, not in $(...) or a pipe, so that NOT_RUN keeps the name.
STEP_TIMEOUT=0
fits() {
  local left=$((DEADLINE - SECONDS - 15))
  if [ "$left" -lt 10 ]; then
    NOT_RUN+=("$1")
    return 1
  fi
  STEP_TIMEOUT=$(($2 < left ? $2 : left))
}
# What comes back from the device machine: $LOG/table.md and $LOG/device-check-logs.tar.gz.
save_logs() {
  [ -n "${OUT:-}" ] && [ "$OUT" != "$LOG" ] || return 0
  mkdir -p "$OUT" && cp "$TABLE" "$OUT/table.md" &&
    tar -czf "$OUT/device-check-logs.tar.gz" -C "$LOG" --exclude=device-check-logs.tar.gz . 2>/dev/null || true
}
# One table row: cells joined with " | ".
row() {
  local line="|" cell
  for cell in "$@"; do line+=" $cell |"; done
  echo "$line" | tee -a "$TABLE"
}

FB="$BUILD_DIR/tools/factorybench"
if [ ! -x "$FB" ]; then
  echo "device-check: no build at $FB. Build with CUDA here and pack it (../shared/device/pack.sh build/release" \
    ".device), then run: scripts/device-check.sh .device/build" >&2
  exit 2
fi
# A packed build brings env.sh (library path, Open MPI relocation); a plain build dir needs nothing.
FB_LD_PATH=""
if [ -f "$BUILD_DIR/../env.sh" ]; then . "$BUILD_DIR/../env.sh"; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
with_libs() { LD_LIBRARY_PATH="$FB_LD_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }

# The GPU test executables: packed in BUILD_DIR/gpu, or in BUILD_DIR/tests of a plain build.
GPU_TESTS=()
for t in "$BUILD_DIR"/gpu/*_test "$BUILD_DIR"/tests/*_test; do
  [ -x "$t" ] || continue
  if [[ $(basename "$t") =~ cuda|nccl|gpu ]]; then GPU_TESTS+=("$t"); fi
done
BENCH_DIR="$BUILD_DIR/bench"
TORCH_PY=${TORCH_PYTHON:-}
if [ -z "$TORCH_PY" ]; then
  for p in /opt/torch/.venv/bin/python3 python3; do
    if command -v "$p" >/dev/null && "$p" -c "import torch" 2>/dev/null; then TORCH_PY=$p; break; fi
  done
fi

gpu_reason=""
if ! command -v nvidia-smi >/dev/null; then
  gpu_reason="nvidia-smi not found"
elif ! nvidia-smi -L >"$LOG/nvidia-smi-L.txt" 2>&1; then
  gpu_reason="nvidia-smi -L: $(head -n1 "$LOG/nvidia-smi-L.txt")"
fi

if [ "$DRY" = 1 ] || [ -n "$gpu_reason" ]; then
  echo "== device-check plan for $BUILD_DIR"
  echo "factorybench: $FB"
  echo "GPU test executables (${#GPU_TESTS[@]}): $(for t in "${GPU_TESTS[@]}"; do basename "$t"; done | paste -sd' ')"
  for b in adam_bench; do
    if [ -x "$BENCH_DIR/$b" ]; then echo "bench: $BENCH_DIR/$b"; else echo "bench: $b not in $BENCH_DIR (its rows read n/a)"; fi
  done
  echo "torch anchors: ${TORCH_PY:-no python with torch here (anchor cells read n/a)}"
  if [ "$DRY" = 1 ]; then
    row "check" "factorybench" "anchor, same session" "ratio"
    row "---" "---" "---" "---"
    row "(dry run: nothing measured)" "-" "-" "-"
    save_logs
  fi
  missing=0
  [ ${#GPU_TESTS[@]} -gt 0 ] || { echo "device-check: no GPU test executables in $BUILD_DIR" >&2; missing=1; }
  [ -x "$BENCH_DIR/adam_bench" ] || { echo "device-check: no adam_bench in $BENCH_DIR (pack with scripts/device-pack.sh)" >&2; missing=1; }
  if [ -n "$gpu_reason" ] && [ "$DRY" = 0 ]; then
    echo "device-check: no GPU here ($gpu_reason): nothing measured" >&2
    exit 77
  fi
  exit $((missing ? 2 : 0))
fi

timeout -k 5 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv |
  tee "$LOG/nvidia-smi.csv"
with_libs timeout -k 5 30 "$FB" --version | tee "$LOG/version.txt"
with_libs timeout -k 5 60 "$FB" info --backend cuda -o "$LOG/info.json" >"$LOG/info.log" 2>&1 ||
  echo "info failed (see $LOG/info.log)"

field() {  # FILE EXPR over d (the report) and r (its results): a value, or n/a
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['results']; print($2)" "$1" 2>/dev/null || echo n/a
}
train_field() {  # FILE EXPR over r (the first result)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['results'][0]; print($2)" "$1" 2>/dev/null || echo n/a
}
# A figure of a result that passed its own check, else FAILED with the result's error.
checked() {  # FILE FORMAT METRIC
  field "$1" "('$2' % r[0]['metrics']['$3']['value']) if r[0]['status'] == 'ok' else 'FAILED (' + str(r[0]['error']) + ')'"
}
# step NAME SECONDS CMD...: runs CMD under the budget (with the packed libraries); 124 when it timed out.
step() {
  local name=$1 want=$2
  shift 2
  fits "$name" "$want" || { echo "== $name: not run (budget spent)" >&2; return 125; }
  with_libs timeout -k 5 "$STEP_TIMEOUT" "$@"
}

declare -A OURS
for k in gemm_bf16 gemm_fp8_e4m3 attention attention_mla attention_fp8 adam adam_gbs copy step mfu engine breakdown \
  mixtral_mfu mixtral_breakdown; do OURS[$k]=n/a; done
failed=()
skipped=()
GPU_TESTS_RUN=0
ANCHORS="$LOG/anchors.jsonl"
: >"$ANCHORS"
anchor() {  # NAME_PREFIX: the value of the first anchor whose name starts with it, or n/a
  python3 -c "
import json, sys
for line in open(sys.argv[1]):
    a = json.loads(line)
    if a['anchor'].startswith(sys.argv[2]) and 'value' in a:
        print(a['value']); break
else:
    print('n/a')" "$ANCHORS" "$1" 2>/dev/null || echo n/a
}
anchor_note() {
  python3 -c "
import json, sys
for line in open(sys.argv[1]):
    a = json.loads(line)
    if a['anchor'].startswith(sys.argv[2]) and 'value' in a:
        print(a.get('note', '')); break" "$ANCHORS" "$1" 2>/dev/null
}
ratio() {  # A B: A / B to 2 places, or -
  python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2" 2>/dev/null || echo -
}
SMOKE_COLLECTIVE="not run"
SMOKE_HEALTH="not run"
# The whole table from what is known so far; rewritten (and saved) after every part.
render_table() {
  : >"$TABLE"
  local t copy_frac torch_step commit
  commit=$(field "$LOG/info.json" "d['tool']['git_commit']")
  copy_frac=$(anchor_note "torch AdamW" | sed -n 's/fraction of copy \([0-9.]*\)/\1/p')
  torch_step=$(anchor "torch eager step")
  row "check" "factorybench" "anchor, same session" "ratio"
  row "---" "---" "---" "---"
  row "build (commit), device" "$commit" "$(tail -n +2 "$LOG/nvidia-smi.csv" 2>/dev/null | head -n1)" "-"
  t=$(anchor "torch.matmul bf16")
  row "GEMM bf16 8192^3, autotune 8 (TFLOP/s)" "${OURS[gemm_bf16]}" "torch.matmul $t" "$(ratio "${OURS[gemm_bf16]}" "$t")"
  t=$(anchor "torch._scaled_mm fp8")
  row "GEMM fp8 e4m3 8192^3, autotune 8 (TFLOP/s)" "${OURS[gemm_fp8_e4m3]}" "torch._scaled_mm $t" "$(ratio "${OURS[gemm_fp8_e4m3]}" "$t")"
  t=$(anchor "torch SDPA cudnn")
  row "attention fwd+bwd causal s8192 32/8 heads d128 (TFLOP/s)" "${OURS[attention]}" "torch SDPA cuDNN $t" "$(ratio "${OURS[attention]}" "$t")"
  t=$(anchor "torch SDPA flash")
  row "attention fwd+bwd, vs FlashAttention backend (TFLOP/s)" "${OURS[attention]}" "torch SDPA flash $t" "$(ratio "${OURS[attention]}" "$t")"
  row "attention MLA deepseek-v3 tp8 s4096, q/k 192 v 128 (TFLOP/s)" "${OURS[attention_mla]}" "-" "-"
  row "attention fp8 e4m3 causal s8192 32/8 heads d128 (TFLOP/s)" "${OURS[attention_fp8]}" \
    "ours bf16 ${OURS[attention]}" "$(ratio "${OURS[attention_fp8]}" "${OURS[attention]}")"
  t=$(anchor "torch copy 1 GiB")
  row "device copy 1 GiB, read+write (GB/s)" "${OURS[copy]}" "torch copy_ $t" "$(ratio "${OURS[copy]}" "$t")"
  row "Adam bf16 512 Mi params, fraction of copy bandwidth" "${OURS[adam]} (${OURS[adam_gbs]} GB/s)" \
    "torch AdamW fused fp32 ${copy_frac:-n/a}" "$(ratio "${OURS[adam]}" "${copy_frac:-n/a}")"
  row "train llama3-8b --layers 4 seq 8192 bf16 (s/step, MFU; attention engine)" "${OURS[step]} s, MFU ${OURS[mfu]}; ${OURS[engine]}" \
    "torch eager ${torch_step} s" "$(ratio "$torch_step" "${OURS[step]}") (torch time / ours)"
  row "its breakdown (s per step, profiled warm-up step)" "${OURS[breakdown]}" "-" "-"
  row "train mixtral-8x7b --layers 2 bf16 MFU" "${OURS[mixtral_mfu]}" "-" "-"
  row "its breakdown (s per step)" "${OURS[mixtral_breakdown]}" "-" "-"
  row "GPU tests run directly (${GPU_TESTS_RUN} of ${#GPU_TESTS[@]} executables)" \
    "${#failed[@]} failed${failed[*]:+ (${failed[*]})}, ${#skipped[@]} with skipped tests${skipped[*]:+ (${skipped[*]})}" \
    "0 failed, 0 skipped" "-"
  row "NCCL 1-GPU smoke (--op all --check --inplace)" "$SMOKE_COLLECTIVE" "exit 0" "-"
  row "health --expect-gpu H200" "$SMOKE_HEALTH" "exit 0, pass" "-"
  [ ${#NOT_RUN[@]} -eq 0 ] || row "not run (budget of ${BUDGET} s spent)" "${NOT_RUN[*]}" "-" "-"
  save_logs
}
render_table >/dev/null

# --- our figures: each result's own check decides (a failed check is FAILED, never a figure) ---
for d in bf16 fp8_e4m3; do
  step "gemm-$d" 150 "$FB" gemm --backend cuda --dtype "$d" --m 8192 --n 8192 --k 8192 --autotune 8 --iters 50 \
    --warmup 10 -o "$LOG/gemm-$d.json" >"$LOG/gemm-$d.log" 2>&1
  OURS[gemm_$d]=$(checked "$LOG/gemm-$d.json" "%.1f" tflops)
done
# Attention through the CLI: Llama 3 8B's layer (32/8 heads, d 128) at s 8192, cuDNN, sampled fp64 check.
step attention 120 "$FB" attention --backend cuda --engine cudnn --seq 8192 -n 20 -w 5 -o "$LOG/attention.json" \
  >"$LOG/attention.log" 2>&1
OURS[attention]=$(checked "$LOG/attention.json" "%.1f" tflops)
# MLA's unequal head dims (q/k 192, v 128; DeepSeek-V3's 128 heads over TP 8), where cuDNN supports them.
step attention-mla 90 "$FB" attention --backend cuda --engine cudnn --model deepseek-v3 --tp 8 --seq 4096 -n 10 -w 3 \
  -o "$LOG/attention-mla.json" >"$LOG/attention-mla.log" 2>&1
OURS[attention_mla]=$(checked "$LOG/attention-mla.json" "%.1f" tflops)
[ "${OURS[attention_mla]}" = n/a ] && OURS[attention_mla]="n/a: $(tail -n1 "$LOG/attention-mla.log" 2>/dev/null)"
# cuDNN's fp8 SDPA at the same layer, scales calibrated by one untimed pass, checked at fp8's tolerance.
step attention-fp8 90 "$FB" attention --backend cuda --engine cudnn --dtype fp8_e4m3 --seq 8192 -n 10 -w 3 \
  -o "$LOG/attention-fp8.json" >"$LOG/attention-fp8.log" 2>&1
OURS[attention_fp8]=$(checked "$LOG/attention-fp8.json" "%.1f" tflops)
[ "${OURS[attention_fp8]}" = n/a ] && OURS[attention_fp8]="n/a: $(tail -n1 "$LOG/attention-fp8.log" 2>/dev/null)"
render_table >/dev/null
if [ -x "$BENCH_DIR/adam_bench" ]; then
  step adam_bench 150 "$BENCH_DIR/adam_bench" >"$LOG/adam-bench.log" 2>&1
  cat "$LOG/adam-bench.log"
  OURS[adam]=$(grep -v "sum of squares" "$LOG/adam-bench.log" | sed -n 's/.*fraction \([0-9.]*\).*/\1/p' | head -n1)
  OURS[adam_gbs]=$(grep -v "sum of squares" "$LOG/adam-bench.log" | sed -n 's/.* \([0-9.]*\) GB\/s (28.*/\1/p' | head -n1)
  OURS[copy]=$(sed -n 's/.*copy \([0-9.]*\) GB\/s read+write.*/\1/p' "$LOG/adam-bench.log" | head -n1)
  : "${OURS[adam]:=n/a}" "${OURS[adam_gbs]:=n/a}" "${OURS[copy]:=n/a}"
  # The bench replays sampled elements on the host reference after timing; a figure without it is no figure.
  grep -q "^adam check: " "$LOG/adam-bench.log" || OURS[adam]="FAILED check (${OURS[adam]})"
else
  OURS[adam]="n/a: no adam_bench in $BENCH_DIR"
fi
train_figures() {  # FILE PREFIX: step time, MFU, engine and breakdown of a train report, or FAILED
  local status
  status=$(train_field "$1" "r['status'] if r['status'] == 'ok' else 'FAILED (' + str(r['error']) + ')'")
  if [ "$status" != ok ]; then
    OURS[${2}mfu]=$status
    return
  fi
  OURS[${2}step]=$(train_field "$1" "'%.4f' % r['metrics']['step_time_s']['value']")
  OURS[${2}mfu]=$(train_field "$1" "'%.3f' % r['metrics']['mfu']['value']")
  OURS[${2}engine]=$(train_field "$1" "r['params']['attention_engine']")
  OURS[${2}breakdown]=$(train_field "$1" "', '.join('%s %.4f' % (k, v) for k, v in sorted(r['extra']['breakdown'].items(), key=lambda kv: -kv[1]) if v > 0)")
}
step train-llama3-8b 150 "$FB" train --backend cuda --model llama3-8b --layers 4 --dtype bf16 --steps 6 \
  --warmup-steps 2 -o "$LOG/train-llama3-8b.json" >"$LOG/train-llama3-8b.log" 2>&1
tail -n 15 "$LOG/train-llama3-8b.log" 2>/dev/null
train_figures "$LOG/train-llama3-8b.json" ""
step train-mixtral 120 "$FB" train --backend cuda --model mixtral-8x7b --layers 2 --dtype bf16 --steps 5 \
  --warmup-steps 2 -o "$LOG/train-mixtral.json" >"$LOG/train-mixtral.log" 2>&1
train_figures "$LOG/train-mixtral.json" mixtral_
render_table >/dev/null

# --- PyTorch anchors, same session ---
if [ -n "$TORCH_PY" ]; then
  echo "== PyTorch anchors ($TORCH_PY)"
  if fits anchors 240; then
    PYTHONUNBUFFERED=1 timeout -k 5 "$STEP_TIMEOUT" "$TORCH_PY" scripts/torch_anchors.py >"$ANCHORS" 2>"$LOG/anchors.log"
    cat "$ANCHORS"
  fi
else
  echo "== no python with torch here: anchors n/a"
fi
render_table >/dev/null

# --- the GPU tests, run directly: the code most likely to hang on its first GPU run goes after the figures ---
echo "== GPU tests, run directly (${#GPU_TESTS[@]} executables)"
for t in "${GPU_TESTS[@]}"; do
  name=$(basename "$t")
  step "$name" "${GPU_TEST_TIMEOUT:-60}" "$t" --gtest_brief=1 >"$LOG/$name.log" 2>&1
  rc=$?
  [ "$rc" -eq 125 ] && continue
  GPU_TESTS_RUN=$((GPU_TESTS_RUN + 1))
  if [ "$rc" -eq 0 ]; then
    echo "pass $name"
    if grep -q "SKIPPED" "$LOG/$name.log"; then skipped+=("$name"); fi
  else
    echo "FAIL $name (exit $rc$([ "$rc" -eq 124 ] && echo ': timed out')): $(grep -m3 -E 'Failure|FAILED|error' "$LOG/$name.log" | paste -sd' ')"
    failed+=("$name")
  fi
done
render_table >/dev/null

# --- collective, health, telemetry smoke (issues 4, 9) ---
step collective 150 "$FB" collective --backend cuda --op all --check --inplace -b 8 -e 256M -f 8 -n 10 -w 3 \
  -o "$LOG/collective-nccl.json" >"$LOG/collective-nccl.txt" 2>&1
rc=$?
[ "$rc" -eq 125 ] || SMOKE_COLLECTIVE="exit $rc"
step health 120 "$FB" health --backend cuda --expect-gpu H200 --checkpoint-dir /tmp -o "$LOG/health.json" \
  >"$LOG/health.log" 2>&1
rc=$?
[ "$rc" -eq 125 ] || SMOKE_HEALTH="exit $rc, $(field "$LOG/health.json" "d['summary']['health']['verdict']")"

echo
echo "== summary table ($TABLE)"
render_table >/dev/null
cat "$TABLE"
# Skipped tests are in the table (on one GPU the multi-GPU ones skip); a failed or timed-out one fails the run.
[ ${#failed[@]} -eq 0 ]
